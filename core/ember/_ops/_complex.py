"""Complex numbers: the real <-> complex views and the functions built on them (matches torch's
view_as_real, view_as_complex, real, imag, conj, conj_physical, resolve_conj, resolve_neg, angle,
polar, complex).

Views, not copies: a complex tensor of shape S, strides st and storage offset o is, read as its
real dtype, a tensor of shape S + (2,), strides 2*st + (1,) and offset 2*o over the same storage
(``view_as_real``); ``real`` / ``imag`` select element 0 / 1 of that last dim, so writing
``z.real`` writes ``z``. ``view_as_complex`` is the inverse and needs a last dim of size 2 and
stride 1 and even strides / offset elsewhere (PyTorch's rules and messages).

``conj`` is eager: PyTorch's ``conj`` returns a lazy view with the conjugate bit set (an
optimisation); ember's returns ``conj_physical`` (a new tensor) for complex input and ``input``
itself otherwise, so ``is_conj()`` is always False and ``resolve_conj`` / ``resolve_neg`` return
their input -- what PyTorch gives after resolving. Every function here is written with ember ops
and these views, so every device gets it, and autograd follows from the pieces: the only backward
written here is the views' (``view_as_real``'s gradient is ``view_as_complex(grad)`` and back),
recorded through ``RECORD_DTYPE_VIEW``, a seam ``ember.autograd`` fills at import time.
"""
from __future__ import annotations

import math

from .. import _dtype as D
from .._grad_state import STATE
from .._tensor import Tensor

__all__ = ["view_as_real", "view_as_complex", "real", "imag", "conj", "conj_physical", "conj_physical_",
           "resolve_conj", "resolve_neg", "angle", "polar", "complex"]

#: seam: ``fn(kind, src, out)`` records the backward of a dtype view (kind "view_as_real" or
#: "view_as_complex") of ``src``; filled by ``ember.autograd`` (``_complex_autograd``)
RECORD_DTYPE_VIEW = [None]

_REAL_OF = {"complex64": "float32", "complex128": "float64"}
_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def _dtype_view(src, shape, stride, offset, dtype, kind):
    """A view of ``src``'s storage read as ``dtype`` (element units of ``dtype``), recorded for autograd."""
    t = src.detach()        # an alias sharing storage and version counter, not recording
    t._shape, t._stride, t._offset, t._dtype = tuple(shape), tuple(stride), offset, dtype
    t._native = None
    t._base = src if src._base is None else src._base
    if src._requires_grad and STATE.check and RECORD_DTYPE_VIEW[0] is not None:
        RECORD_DTYPE_VIEW[0](kind, src, t)
    return t


def _check_tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def view_as_real(input):
    """A real view of a complex tensor: shape ``input.shape + (2,)`` (real, imaginary), dtype the real
    dtype (complex64 -> float32, complex128 -> float64), sharing storage (matches torch.view_as_real).

    :raises RuntimeError: "view_as_real is only supported for complex tensors" for other dtypes.
    """
    _check_tensor(input, "view_as_real")
    if not input._dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    real_dtype = getattr(D, _REAL_OF[input._dtype.name])
    return _dtype_view(input, input._shape + (2,), tuple(2 * s for s in input._stride) + (1,), 2 * input._offset,
                       real_dtype, "view_as_real")


def view_as_complex(input):
    """A complex view of a float32 / float64 tensor whose last dim (size 2, stride 1) holds (real, imaginary):
    shape ``input.shape[:-1]``, sharing storage (matches torch.view_as_complex).

    :raises RuntimeError: for another dtype, a last dim not of size 2 or not of stride 1, an odd stride
        elsewhere or an odd storage offset (PyTorch's messages).
    """
    _check_tensor(input, "view_as_complex")
    name = input._dtype.name
    if name == "float16":
        raise NotImplementedError("view_as_complex: ember has no complex32 (ComplexHalf) dtype for a float16 tensor")
    if name not in _COMPLEX_OF:
        raise RuntimeError(f"view_as_complex is only supported for half, float and double tensors, but got a tensor of "
                           f"scalar type: {_scalar_name(input)}")
    if not input._shape or input._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in input._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _dtype_view(input, input._shape[:-1], tuple(s // 2 for s in input._stride[:-1]), input._offset // 2,
                       getattr(D, _COMPLEX_OF[name]), "view_as_complex")


def real(input):
    """The real part: for a complex tensor a real-dtype view sharing its storage (``view_as_real(x)[..., 0]``);
    ``input`` itself for other dtypes (matches torch.real)."""
    _check_tensor(input, "real")
    if not input._dtype.is_complex:
        return input
    return view_as_real(input).select(-1, 0)


def imag(input):
    """The imaginary part of a complex tensor: a real-dtype view sharing its storage (``view_as_real(x)[..., 1]``;
    matches torch.imag).

    :raises RuntimeError: "imag is not implemented for tensors with non-complex dtypes." otherwise.
    """
    _check_tensor(input, "imag")
    if not input._dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return view_as_real(input).select(-1, 1)


def _flip_imag(input):
    from ._elementwise import mul
    from ._creation import tensor
    sign = tensor([1.0, -1.0], dtype=getattr(D, _REAL_OF[input._dtype.name]), device=input._device)
    return view_as_complex(mul(view_as_real(input), sign))


def conj_physical(input):
    """The complex conjugate as a new tensor (a contiguous copy for complex input; ``input`` itself for real
    dtypes, whose conjugate is themselves). Matches torch.conj_physical; differentiable (gradient
    ``grad.conj()``)."""
    _check_tensor(input, "conj_physical")
    if not input._dtype.is_complex:
        return input
    return _flip_imag(input)


def conj_physical_(input):
    """In-place :func:`conj_physical`: negates the imaginary part of ``input`` (nothing for real dtypes)."""
    if input._dtype.is_complex:
        imag(input).neg_()
    return input


def conj(input):
    """The complex conjugate (matches torch.conj's values).

    Eager, unlike PyTorch's lazy conjugate view: a complex input gives ``conj_physical(input)``, a new
    tensor (so writing it does not write ``input``, and ``is_conj()`` is False); a real input is
    returned as is, as PyTorch does.
    """
    _check_tensor(input, "conj")
    return conj_physical(input) if input._dtype.is_complex else input


def resolve_conj(input):
    """``input`` itself: ember's ``conj`` is eager, so no tensor carries a conjugate bit (torch.resolve_conj)."""
    _check_tensor(input, "resolve_conj")
    return input


def resolve_neg(input):
    """``input`` itself: ember has no lazy negative bit (torch.resolve_neg)."""
    _check_tensor(input, "resolve_neg")
    return input


def angle(input):
    """The argument (phase) in radians: ``atan2(imag, real)`` for complex input (real result dtype); for real
    input pi where x < 0, 0 elsewhere, NaN kept (integers computed in the default float dtype). Matches
    torch.angle; its gradient at z = 0 is 0, as PyTorch's."""
    from ._elementwise import atan2, lt, isnan, where
    _check_tensor(input, "angle")
    if input._dtype.is_complex:
        return atan2(imag(input), real(input))
    x = input if (input._dtype.is_floating_point) else input.to(D.get_default_dtype())
    r = where(lt(x, 0), math.pi, 0.0).to(x._dtype)
    return where(isnan(x), x, r)


def complex(real, imag, *, out=None):
    """A complex tensor from its real and imaginary parts (matches torch.complex): both float32 or both
    float64, broadcast together; the result is complex64 / complex128.

    :raises RuntimeError: for different dtypes ("Expected object of scalar type Float but got scalar type
        Double for second argument") or a non-float dtype ("Expected both inputs to be Half, Float or Double
        tensors but got Int and Int").
    """
    from ._shape import stack, broadcast_tensors
    for n, a in (("real", real), ("imag", imag)):
        if not isinstance(a, Tensor):
            raise TypeError(f"complex(): argument '{n}' (position {1 if n == 'real' else 2}) must be Tensor, not "
                            f"{type(a).__name__}")
    if real._dtype.name not in _COMPLEX_OF or imag._dtype.name not in _COMPLEX_OF:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {_scalar_name(real)} "
                           f"and {_scalar_name(imag)}")
    if real._dtype is not imag._dtype:
        raise RuntimeError(f"Expected object of scalar type {_scalar_name(real)} but got scalar type "
                           f"{_scalar_name(imag)} for second argument")
    re, im = broadcast_tensors(real, imag)
    result = view_as_complex(stack([re, im], -1))
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"complex(): argument 'out' must be Tensor, not {type(out).__name__}")
        if out._dtype is not result._dtype:
            raise RuntimeError(f"Expected object of scalar type {_scalar_name(result)} but got scalar type "
                               f"{_scalar_name(out)} for argument 'out'")
        if out._shape != result._shape:         # PyTorch resizes an out= of another shape
            from .._factory import empty_on
            out._set_storage_meta(empty_on(result._shape, out._dtype, out._device))
        return out.copy_(result)
    return result


def polar(abs, angle, *, out=None):
    """``abs * (cos(angle) + i sin(angle))`` (matches torch.polar): float32 / float64 inputs of one dtype,
    broadcast; complex64 / complex128 result. Errors as :func:`complex`."""
    from ._elementwise import mul, cos, sin
    for n, a in (("abs", abs), ("angle", angle)):
        if not isinstance(a, Tensor):
            raise TypeError(f"polar(): argument '{n}' (position {1 if n == 'abs' else 2}) must be Tensor, not "
                            f"{type(a).__name__}")
    if abs._dtype.name in _COMPLEX_OF and abs._dtype is angle._dtype:
        return complex(mul(abs, cos(angle)), mul(abs, sin(angle)), out=out)
    return complex(abs, angle, out=out)     # the dtype errors, worded as PyTorch's


_SCALAR_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "bfloat16": "BFloat16",
                 "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool",
                 "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _scalar_name(t):
    return _SCALAR_NAMES.get(t._dtype.name, t._dtype.name)


# ---------------------------------------------------------------- Tensor methods and properties
def _assign(view, value):
    if isinstance(value, Tensor):
        view.copy_(value)
    else:
        view.fill_(value)


def _set_real(self, value):
    """``t.real = value``: writes the real part in place (a tensor broadcast, or a number)."""
    _assign(real(self), value)


def _set_imag(self, value):
    """``t.imag = value``: writes the imaginary part in place (a tensor broadcast, or a number)."""
    _assign(imag(self), value)


def _bind():
    Tensor.real = property(real, _set_real, doc=real.__doc__)
    Tensor.imag = property(imag, _set_imag, doc=imag.__doc__)
    for fn in (conj, conj_physical, conj_physical_, resolve_conj, resolve_neg, angle):
        setattr(Tensor, fn.__name__, fn)


_bind()
