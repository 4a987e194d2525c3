"""``ember.linalg``: norms and products of linear algebra (matches torch.linalg).

``vector_norm``, ``matrix_norm`` and ``norm`` are ops with kernels per device (declared
here, when ember is imported); ``matmul`` and ``vecdot`` are the products of
``ember._ops._linalg``. The decompositions, solvers and matrix functions (det, inv, solve,
cholesky, qr, eigh, svd, lu, ...) come from ``_linalg_api`` (ops declared in
``_linalg_decomp``). Names, signatures, result dtypes and error messages follow
torch.linalg.
"""
from __future__ import annotations

import builtins
import math
import numbers

from . import _dtype as D
from ._dispatch import declare
from ._tensor import Tensor, _wrap_dim
from ._ops._meta import broadcast_shapes, check_tensor, reduce_dims, reduced_shape
from ._ops._linalg import matmul, _check_pair, _conj, _finish, _key, _tn

from . import _linalg_api
from ._linalg_api import *  # noqa: F401,F403 - the decompositions, solvers and matrix functions

__all__ = ["vector_norm", "matrix_norm", "norm", "vecdot", "matmul"] + _linalg_api.__all__


def _norm_dtype_checks(op, x, dtype):
    dt = x._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. Got {_tn(dt)}")
    if dtype is None:
        return dt
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"linalg.{op}: dtype should be floating point or complex, but got {_tn(dtype)}")
    if dt.is_complex and not dtype.is_complex:
        raise RuntimeError(f"linalg.{op}: dtype should be complex for complex inputs, but got {_tn(dtype)}")
    if not dt.is_complex and dtype.is_complex:
        raise RuntimeError(f"linalg.{op}: dtype should be real for real inputs, but got {_tn(dtype)}")
    if D.promote_types(dt, dtype) is not dtype:
        raise RuntimeError(f"linalg.{op}: the dtype of the input ({_tn(dt)}) should be convertible without "
                           f"narrowing to the specified dtype ({_tn(dtype)})")
    return dtype


def _ord_str(o):
    if o == math.inf:
        return "inf"
    if o == -math.inf:
        return "-inf"
    return str(int(o)) if float(o).is_integer() else str(o)


def _vector_norm_meta(self, ord=2, dim=None, keepdim=False, dtype=None):
    check_tensor(self, "linalg_vector_norm")
    if isinstance(ord, Tensor):
        ord = ord.item()
    if not isinstance(ord, numbers.Real) or isinstance(ord, builtins.bool):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    compute = _norm_dtype_checks("vector_norm", self, dtype)
    if isinstance(dim, int):
        dim = (dim,)
    dims = reduce_dims(self, dim)
    if ord < 0 or ord == math.inf:
        if dim is None or dim == ():
            if self.numel() == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_str(ord)} norm on an empty tensor "
                                   f"because the operation does not have an identity")
        else:
            for d in dims:
                if self._shape and self._shape[d] == 0:
                    raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_str(ord)} norm on the "
                                       f"dimension {d}because this dimension is empty and the operation does not "
                                       f"have an identity")
    shape = reduced_shape(self._shape, dims, keepdim)
    return self._device, _key(self._device, self, compute), shape, compute.to_real


_vector_norm = declare("linalg_vector_norm(Tensor self, Scalar ord=2, int[]? dim=None, bool keepdim=False, *, "
                       "ScalarType? dtype=None) -> Tensor", _vector_norm_meta, doc="Vector p-norm.")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector ``ord``-norm of ``x`` over ``dim`` (all dims when None; matches torch.linalg.vector_norm).

    ord: any real; inf -> max |x|, -inf -> min |x|, 0 -> number of non-zeros,
    otherwise (sum |x|^ord)^(1/ord). Result dtype: the real dtype of ``x`` (or of
    ``dtype``, in which the computation then runs); float16 / bfloat16 accumulate in
    float32. RuntimeError for integer inputs, a narrowing ``dtype``, or an inf / negative
    ord over an empty dim; IndexError for a dim out of range.
    """
    if isinstance(ord, Tensor):
        ord = ord.item()
    if isinstance(dim, list):
        dim = tuple(dim)
    elif isinstance(dim, int):
        dim = (dim,)
    return _vector_norm(x, ord, dim, keepdim, dtype=dtype, out=out)


_MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def _matrix_norm_meta(self, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    check_tensor(self, "linalg_matrix_norm")
    if self.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    compute = _norm_dtype_checks("matrix_norm", self, dtype)
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim)) if isinstance(dim, (tuple, list)) else dim}")
    d0, d1 = _wrap_dim(dim[0], self.dim()), _wrap_dim(dim[1], self.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif isinstance(ord, builtins.bool) or not isinstance(ord, numbers.Real) or ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_str(ord) if isinstance(ord, numbers.Real) else ord} "
                           f"not supported.")
    if ord in ("nuc", 2, -2) and compute in (D.float16, D.bfloat16):
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {_tn(compute)}")
    shape = reduced_shape(self._shape, (d0, d1), keepdim)
    return self._device, _key(self._device, self, compute), shape, compute.to_real


_matrix_norm = declare("linalg_matrix_norm(Tensor self, Scalar ord=\"fro\", int[] dim=[-2, -1], bool keepdim=False, "
                       "*, ScalarType? dtype=None) -> Tensor", _matrix_norm_meta, doc="Matrix norm.")


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm of ``A`` (or of each matrix of a batch) over the two dims ``dim``
    (matches torch.linalg.matrix_norm).

    ord: 'fro' (Frobenius), 'nuc' (sum of singular values), inf / -inf (max / min
    absolute row sum), 1 / -1 (max / min absolute column sum), 2 / -2 (largest /
    smallest singular value). Result dtype: the real dtype of ``A`` (or ``dtype``).
    RuntimeError for fewer than 2 dims, an unsupported order, integer inputs, equal
    dims, and float16 / bfloat16 with the SVD-based orders.
    """
    if isinstance(ord, Tensor):
        ord = ord.item()
    return _matrix_norm(A, ord, tuple(dim) if isinstance(dim, list) else dim, keepdim, dtype=dtype, out=out)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector or matrix norm (matches torch.linalg.norm).

    ord None: the 2-norm of the flattened input (dim None), a vector 2-norm (one dim)
    or the Frobenius norm (two dims). With ``ord`` and no ``dim`` the input must be
    1-D (vector norm) or 2-D (matrix norm); a string ``ord`` always means a matrix norm.
    RuntimeError "linalg.norm: If dim is not specified but ord is, the input must be 1D
    or 2D. Got 3D." and the errors of ``vector_norm`` / ``matrix_norm``.
    """
    check_tensor(A, "linalg_norm")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                               f"[{', '.join(map(str, dim))}]")
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype, out=out)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (dim is None and A.dim() == 2):
        if isinstance(ord, str) and dim is not None and len(dim) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype, out=out)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim`` (matches torch.linalg.vecdot): sum(conj(x) * y, dim),
    the other dims broadcast. Same floating / complex dtype required. Built from ``matmul``."""
    _check_pair("linalg_vecdot", x, y, ("x", "y"))
    if x._dtype is not y._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_tn(x._dtype)} and y of type {_tn(y._dtype)} instead")
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{_tn(x._dtype)}")
    shape = broadcast_shapes(x._shape, y._shape)
    d = _wrap_dim(dim, len(shape))
    xb = x.expand(shape).movedim(d, -1)
    yb = y.expand(shape).movedim(d, -1)
    r = matmul(_conj(xb).unsqueeze(-2), yb.unsqueeze(-1))
    return _finish(r.squeeze((-2, -1)), out)
