"""Named result tuples of the ops that return several tensors (matches torch.return_types).

``ember.max(t, dim=1)`` returns ``ember.return_types.max(values=..., indices=...)``: a
tuple (unpacks, indexes, compares like one) whose fields are also attributes. The repr
is PyTorch's::

    ember.return_types.max(
    values=tensor([2, 5]),
    indices=tensor([2, 2]))

PyTorch's are C struct sequences; ours are ``collections.namedtuple`` subclasses, so
they also have ``_fields`` / ``_asdict`` / ``_replace``.
"""
from __future__ import annotations

import collections

__all__ = ["max", "min", "aminmax", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax",
           "cummin", "slogdet", "qr", "svd", "geqrf", "lu_unpack", "triangular_solve", "linalg_slogdet",
           "linalg_inv_ex", "linalg_solve_ex", "linalg_cholesky_ex", "linalg_qr", "linalg_eigh", "linalg_eig",
           "linalg_svd", "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu", "linalg_lstsq", "linalg_ldl_factor", "linalg_ldl_factor_ex", "frexp", "histogram", "histogramdd"]


def _make(name, fields):
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__,
                               "__doc__": f"The result of ``ember.{name}``: a named tuple ({', '.join(fields)})."})
    cls.__qualname__ = name
    return cls


max = _make("max", ["values", "indices"])            # noqa: A001 - PyTorch's name
min = _make("min", ["values", "indices"])            # noqa: A001
aminmax = _make("aminmax", ["min", "max"])
sort = _make("sort", ["values", "indices"])
topk = _make("topk", ["values", "indices"])
kthvalue = _make("kthvalue", ["values", "indices"])
median = _make("median", ["values", "indices"])
nanmedian = _make("nanmedian", ["values", "indices"])
mode = _make("mode", ["values", "indices"])
cummax = _make("cummax", ["values", "indices"])
cummin = _make("cummin", ["values", "indices"])

# linear algebra (ember.linalg and the top-level decompositions)
slogdet = _make("slogdet", ["sign", "logabsdet"])
qr = _make("qr", ["Q", "R"])
svd = _make("svd", ["U", "S", "V"])
geqrf = _make("geqrf", ["a", "tau"])
lu_unpack = _make("lu_unpack", ["P", "L", "U"])
triangular_solve = _make("triangular_solve", ["solution", "cloned_coefficient"])
linalg_slogdet = _make("linalg_slogdet", ["sign", "logabsdet"])
linalg_inv_ex = _make("linalg_inv_ex", ["inverse", "info"])
linalg_solve_ex = _make("linalg_solve_ex", ["result", "info"])
linalg_cholesky_ex = _make("linalg_cholesky_ex", ["L", "info"])
linalg_qr = _make("linalg_qr", ["Q", "R"])
linalg_eigh = _make("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_eig = _make("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_svd = _make("linalg_svd", ["U", "S", "Vh"])
linalg_lu_factor = _make("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = _make("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = _make("linalg_lu", ["P", "L", "U"])
linalg_lstsq = _make("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
linalg_ldl_factor = _make("linalg_ldl_factor", ["LD", "pivots"])
linalg_ldl_factor_ex = _make("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
frexp = _make("frexp", ["mantissa", "exponent"])
histogram = _make("histogram", ["hist", "bin_edges"])
histogramdd = _make("histogramdd", ["hist", "bin_edges"])
