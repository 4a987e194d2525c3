"""Linear algebra: matmul and its special cases (mm, bmm, mv, dot, vdot), the fused
add-multiply forms (addmm, addmv, baddbmm, addbmm), outer, einsum, tensordot, kron,
and the norms behind ``ember.linalg`` (vector_norm, matrix_norm, norm, vecdot).

Names, signatures, shape rules, dtype rules and error messages follow PyTorch. Unlike
elementwise ops, matrix products do not promote: both operands must have the same
dtype (RuntimeError otherwise, in PyTorch's words).

Primitives with kernels per device: ``bmm`` (the one a new device must supply), ``mm``,
``matmul``, ``dot``, ``vdot``, ``mv``, the add-multiply forms, ``einsum`` and the two norms.
Every product except ``bmm`` also has a composite written with ``bmm`` and views, so a
device that implements only ``bmm`` gets them all.
"""
from __future__ import annotations

import builtins
import math
import numbers

from .. import _dtype as D
from .._dispatch import declare
from .._tensor import Tensor, _wrap_dim
from ._meta import same_device, broadcast_shapes, check_tensor, meta_cache

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "inner", "vdot", "outer", "ger", "addmm", "addmv", "baddbmm",
           "addbmm", "addr", "einsum", "tensordot", "kron", "chain_matmul"]

_CACHE_LIMIT = 4096

# C++ scalar type names, as PyTorch's "expected m1 and m2 to have the same dtype" message prints them
_CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
              "int8": "signed char", "uint8": "unsigned char", "int16": "short int", "int32": "int",
              "int64": "long int", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _cpp(d):
    return _CPP_NAMES.get(d.name, d.name)


def _tn(d):
    return D.torch_name(d)


def _key(device, t, dtype):
    return (device.type, t._layout.name, dtype)


def _check_pair(op, a, b, names=("input", "other")):
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}(): argument '{names[0]}' (position 1) must be Tensor, not {type(a).__name__}")
    if not isinstance(b, Tensor):
        raise TypeError(f"{op}(): argument '{names[1]}' (position 2) must be Tensor, not {type(b).__name__}")


# ---------------------------------------------------------------- shape checks shared by the metas
def _mm_check(m1, m2, s1, s2):
    """mm of shapes s1 (n, k) and s2 (k2, m) with dtype check; returns (n, m)."""
    if s1[1] != s2[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s1[0]}x{s1[1]} and {s2[0]}x{s2[1]})")
    if m1._dtype is not m2._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_cpp(m1._dtype)} != "
                           f"{_cpp(m2._dtype)}")
    return (s1[0], s2[1])


def _dot_check(a, b):
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_tn(a._dtype)} and "
                           f"{_tn(b._dtype)}")
    if a._shape[0] != b._shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a._shape[0]}] and src [{b._shape[0]}] to "
                           f"have the same number of elements, but got {a._shape[0]} and {b._shape[0]} elements "
                           f"respectively")


def _mv_check(mat_shape, vec_shape, rows, dtypes):
    """size / dtype checks of mv / addmv; ``dtypes`` = (input, mat, vec) as addmv reports them."""
    if mat_shape[1] != vec_shape[0] or rows != mat_shape[0]:
        raise RuntimeError(f"size mismatch, got input ({rows}), mat ({mat_shape[0]}x{mat_shape[1]}), vec "
                           f"({vec_shape[0]})")
    if not (dtypes[0] is dtypes[1] is dtypes[2]):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_tn(dtypes[0])}, "
                           f"{_tn(dtypes[1])}, and {_tn(dtypes[2])}")


def _bmm_check(b1, b2, s1, s2):
    if b1._dtype is not b2._dtype:
        raise RuntimeError(f"expected scalar type {_tn(b1._dtype)} but found {_tn(b2._dtype)}")
    if s2[0] != s1[0] or s2[1] != s1[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{s1[0]}, {s1[2]}] "
                           f"but got: [{s2[0]}, {s2[1]}].")
    return (s1[0], s1[1], s2[2])


# ---------------------------------------------------------------- matmul
_matmul_cache = meta_cache()


def _matmul_shape(a, b):
    """matmul's result shape by PyTorch's rules (the checks of the op each case reduces to)."""
    da, db = len(a._shape), len(b._shape)
    sa, sb = a._shape, b._shape
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        _dot_check(a, b)
        return ()
    if da == 2 and db == 1:
        _mv_check(sa, sb, sa[0], (b._dtype, a._dtype, b._dtype))
        return (sa[0],)
    if da == 1 and db == 2:
        return (_mm_check(a, b, (1, sa[0]), sb)[1],)
    if da == 2 and db == 2:
        return _mm_check(a, b, sa, sb)
    if da >= 3 and db in (1, 2):
        rows = math.prod(sa[:-1])
        if db == 1:
            _mv_check((rows, sa[-1]), sb, rows, (b._dtype, a._dtype, b._dtype))
            return sa[:-1]
        _mm_check(a, b, (rows, sa[-1]), sb)
        return sa[:-1] + (sb[-1],)
    # batched: broadcast the batch dims, then one bmm
    n = sa[-2] if da >= 2 else None
    m = sb[-1] if db >= 2 else None
    k, k2 = sa[-1], (sb[-2] if db >= 2 else sb[-1])
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    B = math.prod(batch)
    _bmm_check(a, b, (B, n or 1, k), (B, k2, m or 1))
    return batch + ((n,) if n is not None else ()) + ((m,) if m is not None else ())


def _matmul_meta(self, other):
    try:
        ck = (self._dtype, other._dtype, self._shape, other._shape, self._device, other._device, self._layout,
              other._layout)
        return _matmul_cache[ck]
    except KeyError:
        pass
    except AttributeError:
        ck = None
    if ck is None:
        _check_pair("matmul", self, other)
    device = same_device(self, other)
    shape = _matmul_shape(self, other)
    lay_t = other if other._layout is not self._layout and self._layout.name == "strided" else self  # dense @ sparse
    r = device, _key(device, lay_t, self._dtype), shape, self._dtype
    if len(_matmul_cache) > _CACHE_LIMIT:
        _matmul_cache.clear()
    _matmul_cache[ck] = r
    return r


def _shares_storage(out, *operands):
    st = out.untyped_storage()
    return any(t.untyped_storage() is st for t in operands)


def _matmul_composite(self, other, *, out):
    """matmul with views and one bmm (any device with a bmm kernel)."""
    a, b = self, other
    if a.dim() == 1 and b.dim() == 1:
        return dot(a, b, out=out)
    if a.dim() == 1:
        a = a.unsqueeze(0)
    if b.dim() == 1:
        b = b.unsqueeze(-1)
    batch = broadcast_shapes(a._shape[:-2], b._shape[:-2])
    n, k = a._shape[-2:]
    m = b._shape[-1]
    B = math.prod(batch)
    a3 = a.expand(batch + (n, k)).reshape(B, n, k)
    b3 = b.expand(batch + (k, m)).reshape(B, k, m)
    if out.is_contiguous() and out._dtype is a3._dtype and not _shares_storage(out, a3, b3):
        bmm(a3, b3, out=out.view(B, n, m))        # straight into out: no temporary and no copy
        return
    r = bmm(a3, b3)
    out.copy_(r.view(out._shape))


_matmul = declare("matmul(Tensor self, Tensor other) -> Tensor", _matmul_meta, composite=_matmul_composite,
                  doc="Matrix product with PyTorch's broadcasting rules.")


def matmul(input, other, *, out=None):
    """Matrix product of two tensors (matches torch.matmul).

    1-D @ 1-D: dot product (0-dim); 2-D @ 2-D: matrix product; 1-D @ 2-D: a 1 is
    prepended then removed; 2-D @ 1-D: matrix-vector product; N-D (N > 2): batched
    matrix product whose batch dims broadcast, 1-D operands being promoted to
    matrices and the added dim removed afterwards. Both operands must have the same
    dtype (integer dtypes are supported; float16 / bfloat16 accumulate in float32).

    RuntimeError, in PyTorch's words: 0-dim operands ("both arguments to matmul need
    to be at least 1D"), mismatched inner sizes ("mat1 and mat2 shapes cannot be
    multiplied (2x3 and 4x5)", "size mismatch, got input (2), mat (2x3), vec (4)",
    "Expected size for first two dimensions of batch2 tensor to be: ..."), batch dims
    that do not broadcast, or different dtypes.
    """
    return _matmul(input, other, out=out)


# ---------------------------------------------------------------- mm / bmm / mv / dot / vdot
_mm_cache = meta_cache()


def _mm_meta(self, mat2):
    try:
        ck = (self._dtype, mat2._dtype, self._shape, mat2._shape, self._device, mat2._device, self._layout,
              mat2._layout)
        return _mm_cache[ck]
    except KeyError:
        pass
    except AttributeError:
        ck = None
    if ck is None:
        _check_pair("mm", self, mat2, ("input", "mat2"))
    device = same_device(self, mat2)
    if self.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    shape = _mm_check(self, mat2, self._shape, mat2._shape)
    lay_t = mat2 if mat2._layout is not self._layout and self._layout.name == "strided" else self   # dense @ sparse
    r = device, _key(device, lay_t, self._dtype), shape, self._dtype
    if len(_mm_cache) > _CACHE_LIMIT:
        _mm_cache.clear()
    _mm_cache[ck] = r
    return r


def _mm_composite(self, mat2, *, out):
    bmm(self.unsqueeze(0), mat2.unsqueeze(0), out=out.unsqueeze(0))


mm = declare("mm(Tensor self, Tensor mat2) -> Tensor", _mm_meta, composite=_mm_composite,
             doc="Matrix product of an (n, k) and a (k, m) matrix -> (n, m) (matches torch.mm). Same dtype "
                 "required; RuntimeError \"self must be a matrix\", \"mat2 must be a matrix\", \"mat1 and mat2 "
                 "shapes cannot be multiplied (2x3 and 4x5)\", \"expected m1 and m2 to have the same dtype, but "
                 "got: float != double\".")


def _bmm_meta(self, mat2):
    _check_pair("bmm", self, mat2, ("input", "mat2"))
    device = same_device(self, mat2)
    if self.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    shape = _bmm_check(self, mat2, self._shape, mat2._shape)
    return device, _key(device, self, self._dtype), shape, self._dtype


bmm = declare("bmm(Tensor self, Tensor mat2) -> Tensor", _bmm_meta,
              doc="Batched matrix product: (b, n, k) @ (b, k, m) -> (b, n, m), no broadcasting (matches "
                  "torch.bmm). Same dtype required; RuntimeError \"batch1 must be a 3D tensor\", \"Expected size "
                  "for first two dimensions of batch2 tensor to be: [b, k] but got: [...]\". The primitive "
                  "product a new device implements; the other products have composites built on it.")


def _mv_meta(self, vec):
    _check_pair("mv", self, vec, ("input", "vec"))
    device = same_device(self, vec)
    if self.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self.dim()}, {vec.dim()}")
    _mv_check(self._shape, vec._shape, self._shape[0], (vec._dtype, self._dtype, vec._dtype))
    return device, _key(device, self, self._dtype), (self._shape[0],), self._dtype


def _mv_composite(self, vec, *, out):
    mm(self, vec.unsqueeze(1), out=out.unsqueeze(1))


mv = declare("mv(Tensor self, Tensor vec) -> Tensor", _mv_meta, composite=_mv_composite,
             doc="Matrix-vector product (n, k) @ (k,) -> (n,) (matches torch.mv). RuntimeError \"size mismatch, "
                 "got input (n), mat (nxk), vec (k2)\" or for other dims / dtypes, as PyTorch.")


def _dot_meta(self, tensor):
    _check_pair("dot", self, tensor, ("input", "tensor"))
    device = same_device(self, tensor)
    _dot_check(self, tensor)
    return device, _key(device, self, self._dtype), (), self._dtype


def _dot_composite(self, tensor, *, out):
    mm(self.unsqueeze(0), tensor.unsqueeze(1), out=out.unsqueeze(0).unsqueeze(0))


dot = declare("dot(Tensor self, Tensor tensor) -> Tensor", _dot_meta, composite=_dot_composite,
              doc="Dot product of two 1-D tensors of the same size and dtype -> 0-dim (matches torch.dot). "
                  "RuntimeError \"1D tensors expected, but got 2D and 1D tensors\", \"dot : expected both vectors "
                  "to have same dtype, but found Float and Double\", \"inconsistent tensor size, ...\".")


def _vdot_composite(self, other, *, out):
    from ._linalg_composites import conj
    dot(conj(self), other, out=out)


vdot = declare("vdot(Tensor self, Tensor other) -> Tensor", _dot_meta, composite=_vdot_composite,
               doc="Dot product conjugating the first vector: sum(conj(self) * other) (matches torch.vdot). "
                   "Same checks as ``dot``.")


def inner(input, other, *, out=None):
    """Inner product over the last dims (matches torch.inner): a scalar operand multiplies;
    otherwise ``tensordot(input, other, ([-1], [-1]))`` with shape input.shape[:-1] + other.shape[:-1].
    RuntimeError "inner() the last dimension must match on both input tensors but got shapes [...] and [...]"."""
    _check_pair("inner", input, other)
    if input.dim() == 0 or other.dim() == 0:
        from ._elementwise import mul
        return mul(input, other, out=out)
    if input._shape[-1] != other._shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"[{', '.join(map(str, input._shape))}] and [{', '.join(map(str, other._shape))}]")
    return tensordot(input, other, ([-1], [-1]), out=out)


def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors: (n,) x (m,) -> (n, m), dtypes promoted as for ``mul``
    (matches torch.outer / torch.ger). RuntimeError "outer: Expected 1-D argument self, but got 2-D"."""
    _check_pair("outer", input, vec2, ("input", "vec2"))
    if input.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.dim()}-D")
    if vec2.dim() != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    from ._elementwise import mul
    return mul(input.unsqueeze(1), vec2, out=out)


ger = outer


# ---------------------------------------------------------------- add-multiply forms
def _expand_check(shape, target):
    """PyTorch's expand message when ``shape`` does not broadcast to ``target``."""
    if len(shape) > len(target):
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for i, s in enumerate(shape):
        if s != 1 and s != target[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + i]}) must match the existing size "
                               f"({s}) at non-singleton dimension {lead + i}.  Target sizes: "
                               f"[{', '.join(map(str, target))}].  Tensor sizes: [{', '.join(map(str, shape))}]")


def _scalar_checks(dtype, **scalars):
    for name, v in scalars.items():
        if isinstance(v, complex) and not dtype.is_complex:
            raise RuntimeError(f"For non-complex input tensors, argument {name} must not be a complex number.")
        if dtype is D.bool and not isinstance(v, (builtins.bool, int)):
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")


def _addmm_meta(self, mat1, mat2, beta=1, alpha=1):
    check_tensor(self, "addmm")
    _check_pair("addmm", mat1, mat2, ("mat1", "mat2"))
    device = same_device(self, mat1, mat2)
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.dim() != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.dim()}-D tensor")
    if mat1._dtype is not mat2._dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_tn(mat1._dtype)} and "
                           f"{_tn(mat2._dtype)}")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tn(self._dtype)} and "
                           f"{_tn(mat2._dtype)}")
    shape = _mm_check(mat1, mat2, mat1._shape, mat2._shape)
    _expand_check(self._shape, shape)
    _scalar_checks(self._dtype, beta=beta, alpha=alpha)
    return device, _key(device, self, self._dtype), shape, self._dtype


def _addmm_composite(self, mat1, mat2, *, beta=1, alpha=1, out):
    _add_scaled(out, self, mm(mat1, mat2), beta, alpha)


def _add_scaled(out, input, prod, beta, alpha):
    """out = beta * input + alpha * prod (beta == 0: input ignored, NaN included), with ember ops;
    beta / alpha are cast to the result dtype first (truncated for integers), as the kernels do."""
    from ._elementwise import mul, add
    from ._linalg_composites import scalar_for
    a, b = scalar_for(alpha, out._dtype), scalar_for(beta, out._dtype)
    if a != 1:
        prod = mul(prod, a)
    if beta == 0:
        out.copy_(prod)
    else:
        out.copy_(add(prod, input if b == 1 else mul(input, b)))


_addmm = declare("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                 _addmm_meta, composite=_addmm_composite, inplace=True,
                 doc="beta * self + alpha * (mat1 @ mat2).")


def _inplace_shape_check(self, shape):
    if self._shape != tuple(shape):
        raise RuntimeError(f"Bad in-place call: input tensor size [{', '.join(map(str, self._shape))}] and output "
                           f"tensor size [{', '.join(map(str, shape))}] should match")


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` (matches torch.addmm).

    mat1 (n, k), mat2 (k, m); ``input`` broadcasts to (n, m). All three must have the
    same dtype. With ``beta=0`` the input is ignored (NaN / inf in it do not propagate).
    For integer dtypes beta and alpha are truncated to integers, as PyTorch does.
    RuntimeError as ``mm`` for shapes and dtypes, and PyTorch's expand message when
    ``input`` does not broadcast.
    """
    return _addmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    """In-place ``addmm``; RuntimeError "Bad in-place call: ..." unless self has the result's shape."""
    _, _, shape, _ = _addmm_meta(self, mat1, mat2, beta, alpha)
    _inplace_shape_check(self, shape)
    return _addmm.inplace(self, mat1, mat2, beta=beta, alpha=alpha)


def _addmv_meta(self, mat, vec, beta=1, alpha=1):
    check_tensor(self, "addmv")
    _check_pair("addmv", mat, vec, ("mat", "vec"))
    device = same_device(self, mat, vec)
    if mat.dim() != 2 or vec.dim() != 1 or self.dim() > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {self.dim()}, {mat.dim()}, {vec.dim()}")
    rows = self._shape[0] if self._shape and self._shape[0] != 1 else mat._shape[0]
    _mv_check(mat._shape, vec._shape, rows, (self._dtype, mat._dtype, vec._dtype))
    _scalar_checks(self._dtype, beta=beta, alpha=alpha)
    return device, _key(device, self, self._dtype), (mat._shape[0],), self._dtype


def _addmv_composite(self, mat, vec, *, beta=1, alpha=1, out):
    _add_scaled(out, self, mv(mat, vec), beta, alpha)


_addmv = declare("addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                 _addmv_meta, composite=_addmv_composite, inplace=True, doc="beta * self + alpha * (mat @ vec).")


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)`` (matches torch.addmv). mat (n, m), vec (m,),
    input broadcastable to (n,); same dtype for all three. RuntimeError as ``mv``."""
    return _addmv(input, mat, vec, beta=beta, alpha=alpha, out=out)


def addmv_(self, mat, vec, *, beta=1, alpha=1):
    """In-place ``addmv``."""
    _, _, shape, _ = _addmv_meta(self, mat, vec, beta, alpha)
    _inplace_shape_check(self, shape)
    return _addmv.inplace(self, mat, vec, beta=beta, alpha=alpha)


def _baddbmm_meta(self, batch1, batch2, beta=1, alpha=1):
    check_tensor(self, "baddbmm")
    _check_pair("baddbmm", batch1, batch2, ("batch1", "batch2"))
    device = same_device(self, batch1, batch2)
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    shape = _bmm_check(batch1, batch2, batch1._shape, batch2._shape)
    if self._dtype is not batch1._dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_cpp(self._dtype)}, batch1: "
                           f"{_cpp(batch1._dtype)}, batch2: {_cpp(batch2._dtype)}")
    _expand_check(self._shape, shape)
    _scalar_checks(self._dtype, beta=beta, alpha=alpha)
    return device, _key(device, self, self._dtype), shape, self._dtype


def _baddbmm_composite(self, batch1, batch2, *, beta=1, alpha=1, out):
    _add_scaled(out, self, bmm(batch1, batch2), beta, alpha)


_baddbmm = declare("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
                   "Tensor", _baddbmm_meta, composite=_baddbmm_composite, inplace=True,
                   doc="beta * self + alpha * bmm(batch1, batch2).")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)`` (matches torch.baddbmm). batch1 (b, n, k),
    batch2 (b, k, m), input broadcastable to (b, n, m); same dtype. RuntimeError as ``bmm``."""
    return _baddbmm(input, batch1, batch2, beta=beta, alpha=alpha, out=out)


def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place ``baddbmm``."""
    _, _, shape, _ = _baddbmm_meta(self, batch1, batch2, beta, alpha)
    _inplace_shape_check(self, shape)
    return _baddbmm.inplace(self, batch1, batch2, beta=beta, alpha=alpha)


def _addbmm_meta(self, batch1, batch2, beta=1, alpha=1):
    check_tensor(self, "addbmm")
    _check_pair("addbmm", batch1, batch2, ("batch1", "batch2"))
    device = same_device(self, batch1, batch2)
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    s1, s2 = batch1._shape, batch2._shape
    if s1[0] != s2[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {s1[0]} and {s2[0]}")
    if s1[2] != s2[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({s1[1]}x{s1[2]} and {s2[1]}x{s2[2]})")
    if batch1._dtype is not batch2._dtype:
        raise RuntimeError(f"expected scalar type {_tn(batch1._dtype)} but found {_tn(batch2._dtype)}")
    if self._dtype is not batch2._dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tn(self._dtype)} and "
                           f"{_tn(batch2._dtype)}")
    shape = (s1[1], s2[2])
    _expand_check(self._shape, shape)
    _scalar_checks(self._dtype, beta=beta, alpha=alpha)
    return device, _key(device, self, self._dtype), shape, self._dtype


def _addbmm_composite(self, batch1, batch2, *, beta=1, alpha=1, out):
    # sum_b batch1[b] @ batch2[b] == (n, b*k) @ (b*k, m): one mm, no reduction op needed
    b, n, k = batch1._shape
    m = batch2._shape[2]
    prod = mm(batch1.permute(1, 0, 2).reshape(n, b * k), batch2.reshape(b * k, m))
    _add_scaled(out, self, prod, beta, alpha)


_addbmm = declare("addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                  _addbmm_meta, composite=_addbmm_composite, inplace=True,
                  doc="beta * self + alpha * sum_b batch1[b] @ batch2[b].")


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]`` (matches torch.addbmm); result (n, m)."""
    return _addbmm(input, batch1, batch2, beta=beta, alpha=alpha, out=out)


def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place ``addbmm``."""
    _, _, shape, _ = _addbmm_meta(self, batch1, batch2, beta, alpha)
    _inplace_shape_check(self, shape)
    return _addbmm.inplace(self, batch1, batch2, beta=beta, alpha=alpha)


def _addr_scalar_checks(dtype, beta, alpha):
    """PyTorch's checks on addr's scalars against the result dtype."""
    for name, scalar in (("beta", beta), ("alpha", alpha)):
        if isinstance(scalar, bool) and dtype is not D.bool:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if not (dtype.is_floating_point or dtype.is_complex) and not isinstance(scalar, numbers.Integral):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` (matches torch.addr); dtypes promote as for ``add``;
    ``input`` broadcasts to (n, m) and is ignored when beta is 0.

    Bool tensors give ``(beta and input) or (alpha and outer(vec1, vec2))`` with beta / alpha read
    as truth values, as PyTorch's. RuntimeError "Boolean beta only supported for Boolean results."
    and "For integral input tensors, argument alpha must not be a floating point number." as PyTorch's.
    """
    from ._elementwise import mul, add, logical_or
    dtype = D.result_type(input, vec1, vec2)
    _addr_scalar_checks(dtype, beta, alpha)
    prod = outer(vec1, vec2)
    _expand_check(input._shape, prod._shape)
    if dtype is D.bool:
        if not alpha:
            prod = prod.logical_and(prod.new_zeros(()))
        if not beta:
            return _finish(prod, out)
        return logical_or(prod, input, out=out)
    if alpha != 1:
        prod = mul(prod, alpha)
    if beta == 0:
        return _finish(prod.to(dtype), out)
    return add(prod, input if beta == 1 else mul(input, beta), out=out)


def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    """In-place :func:`addr`: self must be 2-D of shape (len(vec1), len(vec2)); RuntimeError when
    the result dtype cannot be cast to self's (matches torch.Tensor.addr_)."""
    if self.dim() != 2:
        raise RuntimeError(f"2D tensor expected, got {self.dim()}D tensor for input")
    if vec1.dim() == 1 and vec2.dim() == 1 and self._shape != (vec1._shape[0], vec2._shape[0]):
        raise RuntimeError(f"size mismatch, input: {list(self._shape)}, v1: {list(vec1._shape)}, "
                           f"v2: {list(vec2._shape)}")
    return addr(self, vec1, vec2, beta=beta, alpha=alpha, out=self)


def chain_matmul(*matrices, out=None):
    """Product of 2-D matrices left to right (matches the deprecated torch.chain_matmul)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more input tensors")
    r = matrices[0] if len(matrices) > 1 else matrices[0].clone()
    for m in matrices[1:]:
        r = mm(r, m)
    return _finish(r, out)


def _finish(r, out):
    """``r`` itself, or ``r`` copied into a user's ``out=`` (checked and resized as structured ops do)."""
    if out is None:
        return r
    from ._copy import copy_
    from .._factory import check_out
    check_out(_matmul._op, out, r._shape, r._dtype, r._device)
    copy_(out, r)
    return out


def _conj(x):
    """The complex conjugate (via ``Tensor.conj`` once an op module provides it)."""
    if not x._dtype.is_complex:
        return x
    conj = getattr(Tensor, "conj", None)
    if conj is None:
        raise NotImplementedError("conj is not available: no op module defines Tensor.conj yet")
    return conj(x)


# ---------------------------------------------------------------- einsum
def _parse_einsum(equation, shapes):
    """Check ``equation`` against operand ``shapes``; return (inputs, output, sizes, ell_shape).

    inputs: per operand a list of labels ('.' marks the ellipsis); output likewise.
    """
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->", 1)
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    base = 0
    inputs = []
    for t in terms:
        labels, i = [], 0
        while i < len(t):
            c = t[i]
            if t.startswith("...", i):
                if "." in labels:
                    raise RuntimeError("einsum(): found '.' for operand %d that is not part of any ellipsis"
                                       % len(inputs))
                labels.append(".")
                i += 3
                continue
            if not (c.isascii() and c.isalpha()):
                raise RuntimeError(f"einsum(): invalid subscript given at index {base + i} in the equation string, "
                                   f"subscripts must be in [a-zA-Z]")
            labels.append(c)
            i += 1
        inputs.append(labels)
        base += len(t) + 1
    if len(inputs) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(inputs) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    sizes, ell = {}, ()
    for n, (labels, shape) in enumerate(zip(inputs, shapes)):
        nlab = len(labels) - ("." in labels)
        if "." in labels:
            if nlab > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlab}) is more than the "
                                   f"number of dimensions ({len(shape)}) for operand {n}")
        elif nlab != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlab}) does not match the "
                               f"number of dimensions ({len(shape)}) for operand {n} and no ellipsis was given")
        d = 0
        seen = {}
        for lab in labels:
            if lab == ".":
                k = len(shape) - nlab
                ell = broadcast_shapes(ell, shape[d:d + k])
                d += k
                continue
            s = shape[d]
            d += 1
            if lab in seen and seen[lab] != s:
                raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand {n} but the sizes don't "
                                   f"match, {s} != {seen[lab]}")
            seen[lab] = s
            prev = sizes.get(lab)
            if prev is None or prev == 1:
                sizes[lab] = s
            elif s != 1 and s != prev:
                raise RuntimeError(f"einsum(): subscript {lab} has size {s} for operand {n} which does not broadcast "
                                   f"with previously seen size {prev}")
    if rhs is None:
        counts = {}
        for labels in inputs:
            for lab in labels:
                counts[lab] = counts.get(lab, 0) + 1
        out = (["."] if "." in counts else []) + sorted(l for l, c in counts.items() if c == 1 and l != ".")
    else:
        out, i = [], 0
        while i < len(rhs):
            if rhs.startswith("...", i):
                out.append(".")
                i += 3
                continue
            c = rhs[i]
            if not (c.isascii() and c.isalpha()):
                raise RuntimeError(f"einsum(): invalid subscript given at index {len(lhs) + 2 + i} in the equation "
                                   f"string, subscripts must be in [a-zA-Z]")
            if c in out:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   f"operand")
            out.append(c)
            i += 1
    return inputs, out, sizes, ell


def _einsum_meta(equation, tensors):
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): expected Tensor as element {i} in argument 1, but got {type(t).__name__}")
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    device = same_device(*tensors)
    inputs, out, sizes, ell = _parse_einsum(equation, [t._shape for t in tensors])
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not dt:
            raise RuntimeError(f"expected scalar type {_tn(dt)} but found {_tn(t._dtype)}")
    shape = []
    for lab in out:
        shape.extend(ell if lab == "." else (sizes[lab],))
    out_dt = dt
    if len(tensors) == 1 and (dt is D.bool or not (dt.is_floating_point or dt.is_complex)):
        in_labels = set(inputs[0])
        if in_labels - set(out) or len(inputs[0]) != len(set(inputs[0])):
            out_dt = D.int64      # a pure reduction sums, and sum promotes integers to int64
    return device, _key(device, tensors[0], out_dt), tuple(shape), out_dt


_einsum = declare("einsum(str equation, Tensor[] tensors) -> Tensor", _einsum_meta,
                  doc="Einstein summation over the operands.")


def einsum(*args, out=None):
    """Einstein summation (matches torch.einsum).

    ``einsum("ij,jk->ik", a, b)`` or ``einsum("ij,jk->ik", [a, b])``; subscripts are
    letters [a-zA-Z], ``...`` stands for broadcast batch dims, the output defaults to
    the labels seen once, in alphabetical order. Labelled dims of size 1 broadcast.
    Operands must share one dtype ("expected scalar type Float but found Double").
    RuntimeError in PyTorch's words for malformed equations and mismatched sizes.
    The sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is accepted too.
    """
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, or at least one "
                        "operand and its subscripts list")
    eq = args[0]
    if isinstance(eq, Tensor):          # sublist format
        ops, subs = list(args[0::2]), list(args[1::2])
        if len(subs) == len(ops):
            out_sub = None
        else:
            out_sub = ops.pop() if not isinstance(ops[-1], Tensor) else None
        letters = lambda sub: "".join("..." if s is Ellipsis else
                                      (chr(ord("a") + s) if s < 26 else chr(ord("A") + s - 26)) for s in sub)
        eq = ",".join(letters(s) for s in subs) + ("" if out_sub is None else "->" + letters(out_sub))
        operands = ops
    else:
        operands = list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    return _einsum(eq, operands, out=out)


# ---------------------------------------------------------------- tensordot, kron
def _as_dims(v, n, name):
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, int):
        v = [v]
    return [_wrap_dim(d, n) for d in v]


def tensordot(a, b, dims=2, out=None):
    """Contract ``a`` and ``b`` over ``dims`` (matches torch.tensordot).

    ``dims`` is an int n (the last n dims of ``a`` with the first n of ``b``), a pair of
    dim lists, or a 0-dim / 1-D tensor. Result shape: a's free dims then b's free dims.
    Same dtype required ("both inputs should have same dtype"); RuntimeError "contracted
    dimensions need to match, but first has size 2 in dim 0 and second has size 3 in dim 0".
    Built from permute, reshape and ``mm`` (works on every device with ``mm``).
    """
    _check_pair("tensordot", a, b, ("a", "b"))
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, builtins.bool) or isinstance(dims, float):
        raise RuntimeError(f"tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
                           f"containing two lists, but got dims={dims}")
    if isinstance(dims, numbers.Integral):
        n = int(dims)
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
        if n > a.dim() or n > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
        da, db = list(range(a.dim() - n, a.dim())), list(range(n))
    else:
        if not isinstance(dims, (list, tuple)) or len(dims) != 2:
            raise RuntimeError(f"tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
                               f"containing two lists, but got dims={dims}")
        if isinstance(dims[0], int) and isinstance(dims[1], int) and not isinstance(dims[0], builtins.bool):
            raise TypeError("tensordot(): argument 'dims_self' (position 3) must be tuple of ints, not int")
        da, db = _as_dims(dims[0], a.dim(), "dims_a"), _as_dims(dims[1], b.dim(), "dims_b")
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    for dl in (da, db):
        if len(set(dl)) != len(dl):
            dup = next(d for d in dl if dl.count(d) > 1)
            raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    if a._dtype is not b._dtype:
        raise RuntimeError("both inputs should have same dtype")
    for x, y in zip(da, db):
        if a._shape[x] != b._shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._shape[x]} in dim {x} "
                               f"and second has size {b._shape[y]} in dim {y}")
    same_device(a, b)
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    ks = math.prod(a._shape[d] for d in da)
    sa = [a._shape[d] for d in fa]
    sb = [b._shape[d] for d in fb]
    am = a.permute(fa + da).reshape(math.prod(sa), ks)
    bm = b.permute(db + fb).reshape(ks, math.prod(sb))
    return _finish(mm(am, bm).view(tuple(sa + sb)), out)


def kron(input, other, *, out=None):
    """Kronecker product (matches torch.kron): for a of shape (a0, ..., an) and b of shape
    (b0, ..., bn) (the shorter padded with leading 1s) the result has shape (a0*b0, ..., an*bn)
    and dtype ``result_type(a, b)``. Built from broadcasting ``mul`` and reshape."""
    _check_pair("kron", input, other)
    n = builtins.max(input.dim(), other.dim())
    a, b = input, other
    while a.dim() < n:
        a = a.unsqueeze(0)
    while b.dim() < n:
        b = b.unsqueeze(0)
    # a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...] -> (a0, b0, a1, b1, ...)
    av = a.reshape(tuple(x for s in a._shape for x in (s, 1)))
    bv = b.reshape(tuple(x for s in b._shape for x in (1, s)))
    from ._elementwise import mul
    shape = tuple(x * y for x, y in zip(a._shape, b._shape))
    return _finish(mul(av, bv).reshape(shape), out)


# ---------------------------------------------------------------- Tensor methods and operators
def _rmatmul(self, other):
    return matmul(other, self)


def _imatmul(self, other):
    """``a @= b`` rebinds ``a`` to ``a @ b`` (a new tensor), as Python's fallback does for
    torch.Tensor, which defines no in-place ``@=``; so shapes may change, as in PyTorch."""
    return matmul(self, other)


def _bind():
    T = Tensor
    for name in ("matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "addmm_", "addmv",
                 "addmv_", "baddbmm", "baddbmm_", "addbmm", "addbmm_", "addr", "addr_", "kron"):
        setattr(T, name, globals()[name])
    T.__matmul__ = matmul
    T.__rmatmul__ = _rmatmul
    T.__imatmul__ = _imatmul


_bind()

from .. import linalg as _linalg_namespace  # noqa: E402,F401  (declares the norms; makes ember.linalg importable)


def _install_composites():
    """einsum's and the norms' composites (``_linalg_composites``; the norms are declared in ember.linalg)."""
    from .._dispatch import ops
    from ._linalg_composites import COMPOSITES
    for name, fn in COMPOSITES.items():
        ops[name].composite = fn


_install_composites()
