"""scipy.sparse fast paths at (cpu, sparse_coo, float32 / float64).

Registered at the exact key, so they win over the device-generic kernels (ANY, sparse_coo, ANY)
by the dispatcher's resolution order; each was measured faster in benchmarks/bench_sparse.py.

- ``sparse::mm``: scipy's CSR x dense product. The CSR structure (row pointers, column indices
  and, for an uncoalesced tensor, the permutation that sorts entries by row) is built once per
  indices tensor and cached on the sparse tensor; each call only gathers the values (no copy
  when coalesced) and runs the product.
- ``sparse::coalesce`` (2-D, no dense dims): scipy's COO -> CSR conversion, a counting sort by row
  that sums duplicates, then ``sum_duplicates`` sorting each row; about 2x faster than the
  generic unique + index_add (a full sort of the linear index) on cpu.
"""
from __future__ import annotations

import ember
import numpy as np
import scipy.sparse as sps

from ._tensor import make_sparse

_FLOATS = None


def _csr_parts(s):
    """(indices tensor, indptr, cols, perm or None) for ``s``, cached on the tensor."""
    idx = s._sp_indices
    hit = s.__dict__.get("_sp_csr")
    if hit is not None and hit[0] is idx:
        return hit
    rows_cols = idx.numpy()
    rows, cols = rows_cols[0], rows_cols[1]
    n = s._shape[0]
    perm = None
    if not s._sp_coalesced and rows.size > 1 and np.any(rows[1:] < rows[:-1]):
        perm = np.argsort(rows, kind="stable")
        rows, cols = rows[perm], cols[perm]
    counts = np.bincount(rows, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    itype = np.int32 if max(n, s._shape[1], rows.size) < 2 ** 31 - 1 else np.int64
    hit = (idx, indptr.astype(itype), np.ascontiguousarray(cols, dtype=itype), perm)
    s.__dict__["_sp_csr"] = hit
    return hit


def mm_scipy(self, mat2):
    """sparse (n, k) @ dense (k, m) on cpu through scipy.sparse's CSR product."""
    from ._kernels import check_bounds
    if self._sp_indices._shape[1] == 0:
        return ember.zeros((self._shape[0], mat2._shape[1]), dtype=self._dtype)
    if "_sp_csr" not in self.__dict__:
        check_bounds(self._sp_indices, self._shape)
    vals = self._sp_values
    hit = self.__dict__.get("_sp_csr_matrix")
    if hit is not None and hit[0] is vals and hit[1] == vals._version and hit[2] is self._sp_indices:
        a = hit[3]
    else:
        _, indptr, cols, perm = _csr_parts(self)
        data = vals.detach().numpy()
        if perm is not None:
            data = data[perm]
        # the matrix aliases the values' memory when no permutation was needed; the version check
        # rebuilds it after an in-place write either way
        a = sps.csr_matrix((data, cols, indptr), shape=self._shape, copy=False)
        self.__dict__["_sp_csr_matrix"] = (vals, vals._version, self._sp_indices, a)
    out = a @ (mat2.detach() if mat2._requires_grad else mat2).numpy()
    return ember.from_numpy(np.ascontiguousarray(out))


def coalesce_scipy(self):
    """Coalesce a 2-D sparse matrix (no dense dims) on cpu: scipy's COO -> CSR conversion (a counting
    sort by row that sums duplicates) and ``sum_duplicates`` (sorts each row); other shapes use the
    device-generic kernel."""
    from ._kernels import check_bounds, coalesce_raw
    idx = self._sp_indices
    if idx._shape[0] != 2 or len(self._shape) != 2 or idx._shape[1] <= 1:
        return coalesce_raw(self)
    check_bounds(idx, self._shape)
    ind = idx.numpy()
    vals = self._sp_values.detach().numpy()
    m = sps.coo_matrix((vals, (ind[0], ind[1])), shape=self._shape).tocsr()
    m.sum_duplicates()
    rows = np.repeat(np.arange(self._shape[0], dtype=np.int64), np.diff(m.indptr))
    new_idx = np.stack([rows, m.indices.astype(np.int64, copy=False)])
    return make_sparse(ember.from_numpy(new_idx), ember.from_numpy(np.ascontiguousarray(m.data, dtype=vals.dtype)),
                       self._shape, True)


def register(lib, layout):
    """Register the scipy kernels of sparse::mm and sparse::coalesce for cpu float32 / float64 at ``layout``."""
    floats = [ember.float32, ember.float64]
    lib.impl("sparse::mm", mm_scipy, device="cpu", layout=layout, dtypes=floats)
    lib.impl("sparse::coalesce", coalesce_scipy, device="cpu", layout=layout, dtypes=floats)
