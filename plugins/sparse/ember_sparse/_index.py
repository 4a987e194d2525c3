"""Shared pieces of the sparse COO kernels: constants, dim wrapping, and the int64 index helpers.

``sparse_sizes``, ``linear_index``, ``unravel``, ``check_bounds``, ``gather_at`` (all built from dense ember
ops, so they run on every device), plus the small private helpers (``_coo``, ``_vals``, ``_check_sparse``,
``_key``, ...) that ``_sparse_ops`` and ``_core_ops`` use. Split out of ``_kernels``.
"""
from __future__ import annotations

import math

import ember

from ._tensor import SparseCOOTensor

I64 = ember.int64
LAYOUT = "sparse_coo"


def _wrap_dim(dim, ndim):
    """``dim`` in [-ndim, ndim) made non-negative; IndexError in PyTorch's words otherwise."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _sp():
    return ember.ops.sparse


def _is_sp(x):
    return isinstance(x, SparseCOOTensor)


def _key(t):
    return t._device, (t._device.type, LAYOUT, t._dtype)


# ================================================================ index helpers (int64, no autograd)
def sparse_sizes(s):
    """The sizes of the sparse dims of ``s`` (the leading sparse_dim entries of its shape)."""
    return s._shape[:s._sp_indices._shape[0]]


def linear_index(indices, sizes):
    """Row-major linear index (nnz,) of the sparse ``indices`` (k, nnz) into ``sizes`` (k ints)."""
    k, nnz = indices._shape
    if k == 0:
        return ember.zeros(nnz, dtype=I64, device=indices.device)
    lin = indices[0]
    for d in range(1, k):
        lin = lin * sizes[d] + indices[d]
    return lin


def unravel(lin, sizes):
    """Inverse of ``linear_index``: (k, nnz) int64 indices of the linear indices ``lin``."""
    k = len(sizes)
    if k == 0:
        return ember.zeros((0, lin.numel()), dtype=I64, device=lin.device)
    if k == 1:
        return lin.unsqueeze(0)
    rows = []
    r = lin
    for d in range(k - 1, 0, -1):
        rows.append(ember.remainder(r, sizes[d]))
        r = ember.floor_divide(r, sizes[d])
    rows.append(r)
    return ember.stack(rows[::-1])


def check_bounds(indices, sizes):
    """PyTorch's RuntimeError for a negative or out-of-bounds index (one reduction per row)."""
    k, nnz = indices._shape
    if not nnz or not k:
        return
    lo = indices.amin(1).tolist()
    hi = indices.amax(1).tolist()
    for d in range(k):
        if lo[d] < 0:
            raise RuntimeError(f"found negative index {lo[d]} for dim {d}")
        if hi[d] >= sizes[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {sizes[d]} but found "
                               f"index {hi[d]}")


def gather_at(g, indices):
    """The entries of ``g`` (dense, or sparse with the same sparse dims) at the sparse ``indices``
    (k, nnz): a dense (nnz,) + dense-dims tensor (zeros where a sparse ``g`` has no entry).
    Built from differentiable ops (double backward works)."""
    k, nnz = indices._shape
    sizes = tuple(g._shape[:k])
    dense = tuple(g._shape[k:])
    if _is_sp(g):
        if g._sp_indices is indices:
            return _sp().values(g)
        if g.sparse_dim() != k:
            g = g.to_dense()
        else:
            gc = g.coalesce()
            gl = linear_index(gc._sp_indices, sizes)
            gv = _sp().values(gc)
            if gl.numel() == 0 or nnz == 0:
                return ember.zeros((nnz,) + dense, dtype=g._dtype, device=g._device)
            il = linear_index(indices, sizes)
            pos = ember.searchsorted(gl, il).clamp(max=gl.numel() - 1)
            hit = (gl.index_select(0, pos) == il).to(g._dtype)
            return gv.index_select(0, pos) * hit.view((nnz,) + (1,) * len(dense))
    flat = g.reshape((math.prod(sizes),) + dense)
    return flat.index_select(0, linear_index(indices, sizes))


def _coo(indices, values, shape, coalesced=False):
    """A sparse tensor through the differentiable ``sparse::coo_tensor`` op (no checks)."""
    return _sp().coo_tensor(indices, values, list(shape), coalesced)


def _vals(s):
    """``s``'s values through the differentiable ``sparse::values`` op (no coalesced check)."""
    return _sp().values(s)


def _check_sparse(x, op, what="self"):
    if not _is_sp(x):
        layout = getattr(getattr(x, "_layout", None), "name", type(x).__name__)
        raise RuntimeError(f"{op} expected sparse coordinate tensor layout but got "
                           f"{'Strided' if layout == 'strided' else layout}")
