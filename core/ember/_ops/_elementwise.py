"""Elementwise ops: unary, binary (broadcasting, PyTorch's type promotion), ternary, and
the Tensor operator dunders (reflected and in-place). Matches the torch functions of
the same names. Declared from tables: one line per op, its dtype rule beside it.

dtype rules (see ``_meta``): "same" keeps the dtype; "float" computes integers in the
default float dtype; "bool" gives bool; "real" maps complex to its real dtype;
"promote" is ``result_type``; "compare" computes in ``result_type`` and outputs bool;
"integral" refuses floating inputs.
"""
from __future__ import annotations

import numbers

from .. import _dtype as D
from .._dispatch import declare
from .._tensor import Tensor
from ._meta import make_binary_meta, make_unary_meta, same_device, broadcast_shapes, check_tensor

__all__ = []  # filled from the tables below

_g = globals()

# name, dtype rule, has in-place variant, extra schema arguments, doc
UNARY = [
    ("neg", "no_bool", True, "Negation, -x."),
    ("abs", "real", True, "Absolute value |x| (complex -> its real dtype)."),
    ("sign", "no_complex", True, "Sign of x: -1, 0 or 1."),
    ("sgn", "same", True, "x / |x| for complex, sign(x) for real."),
    ("exp", "float", True, "e ** x."),
    ("exp2", "float", True, "2 ** x."),
    ("log", "float", True, "Natural logarithm."),
    ("log2", "float", True, "Base-2 logarithm."),
    ("log10", "float", True, "Base-10 logarithm."),
    ("log1p", "float", True, "log(1 + x), accurate for small x."),
    ("expm1", "float", True, "exp(x) - 1, accurate for small x."),
    ("sqrt", "float", True, "Square root."),
    ("rsqrt", "float", True, "1 / sqrt(x)."),
    ("square", "square", True, "x * x (bool -> int64, as x ** 2)."),
    ("sin", "float", True, "Sine (radians)."),
    ("cos", "float", True, "Cosine (radians)."),
    ("tan", "float", True, "Tangent (radians)."),
    ("asin", "float", True, "Arcsine."),
    ("acos", "float", True, "Arccosine."),
    ("atan", "float", True, "Arctangent."),
    ("sinh", "float", True, "Hyperbolic sine."),
    ("cosh", "float", True, "Hyperbolic cosine."),
    ("tanh", "float", True, "Hyperbolic tangent."),
    ("asinh", "float", True, "Inverse hyperbolic sine."),
    ("acosh", "float", True, "Inverse hyperbolic cosine."),
    ("atanh", "float", True, "Inverse hyperbolic tangent."),
    ("sigmoid", "float", True, "Logistic sigmoid 1 / (1 + exp(-x))."),
    ("erf", "float", True, "Error function."),
    ("erfc", "float", True, "Complementary error function."),
    ("erfinv", "float", True, "Inverse error function (domain (-1, 1))."),
    ("floor", "same", True, "Largest integer <= x (integers unchanged)."),
    ("ceil", "same", True, "Smallest integer >= x (integers unchanged)."),
    ("trunc", "same", True, "x rounded toward zero (integers unchanged)."),
    ("frac", "same", True, "x - trunc(x)."),
    ("reciprocal", "float", True, "1 / x."),
    ("isnan", "bool", False, "Whether each element is NaN."),
    ("isinf", "bool", False, "Whether each element is +/-inf."),
    ("isposinf", "bool", False, "Whether each element is +inf."),
    ("isneginf", "bool", False, "Whether each element is -inf."),
    ("isfinite", "bool", False, "Whether each element is finite."),
    ("signbit", "bool", False, "Whether the sign bit is set."),
    ("logical_not", "bool", True, "Elementwise not (output bool)."),
    ("bitwise_not", "integral", True, "Bitwise not (~); logical not for bool."),
    ("positive", "same", False, "x itself (a copy)."),
]

# name, dtype rule, alpha?, bool allowed?, in-place?, doc
BINARY = [
    ("add", "promote", True, True, True, "self + alpha * other, broadcasting."),
    ("sub", "promote", True, False, True, "self - alpha * other, broadcasting."),
    ("mul", "promote", False, True, True, "self * other, broadcasting."),
    ("true_divide", "float", False, True, True, "self / other; integers divide in the default float dtype."),
    ("floor_divide", "real", False, True, True, "floor(self / other)."),
    ("remainder", "real", False, True, True, "Python-style modulus (sign of the divisor)."),
    ("fmod", "real", False, True, True, "C-style modulus (sign of the dividend)."),
    ("atan2", "float", False, True, True, "Arctangent of self / other, by quadrant."),
    ("hypot", "promote", False, True, True, "sqrt(self**2 + other**2) (floating inputs only)."),
    ("copysign", "float", False, True, True, "|self| with other's sign."),
    ("maximum", "real", False, True, False, "Elementwise maximum (NaN propagates)."),
    ("minimum", "real", False, True, False, "Elementwise minimum (NaN propagates)."),
    ("fmax", "real", False, True, False, "Elementwise maximum ignoring NaN."),
    ("fmin", "real", False, True, False, "Elementwise minimum ignoring NaN."),
    ("eq", "compare", False, True, True, "self == other (bool)."),
    ("ne", "compare", False, True, True, "self != other (bool)."),
    ("lt", "compare", False, True, True, "self < other (bool)."),
    ("le", "compare", False, True, True, "self <= other (bool)."),
    ("gt", "compare", False, True, True, "self > other (bool)."),
    ("ge", "compare", False, True, True, "self >= other (bool)."),
    ("logical_and", "logical", False, True, True, "Elementwise and (bool)."),
    ("logical_or", "logical", False, True, True, "Elementwise or (bool)."),
    ("logical_xor", "logical", False, True, True, "Elementwise xor (bool)."),
    ("bitwise_and", "integral", False, True, True, "Bitwise and (&)."),
    ("bitwise_or", "integral", False, True, True, "Bitwise or (|)."),
    ("bitwise_xor", "integral", False, True, True, "Bitwise xor (^)."),
    ("bitwise_left_shift", "integral", False, True, True, "self << other."),
    ("bitwise_right_shift", "integral", False, True, True, "self >> other (arithmetic for signed)."),
]


_NI = None   # PyTorch's NotImplementedError '"op" not implemented for 'Bool'' (see _meta.check_dtype_errors)
_NO_BOOL, _NO_COMPLEX, _FLOAT_ONLY = {"bool": _NI}, {"complex": _NI}, {"bool": _NI, "int": _NI, "complex": _NI}


def _rounding(name):
    return {"bool": _NI, "complex": NotImplementedError(f"{name} is not supported for complex inputs")}


#: dtype categories an op refuses, with PyTorch's exception (checked by the meta, so every
#: backend refuses alike); ops not listed accept every dtype their rule allows
ERRORS = {
    "abs": _NO_BOOL,
    "sign": {"complex": NotImplementedError("Unlike NumPy, ember.sign is not intended to support complex numbers. "
                                            "Please use ember.sgn instead.")},
    "erf": _NO_COMPLEX, "erfc": _NO_COMPLEX, "erfinv": _NO_COMPLEX,
    "floor": _rounding("floor"), "ceil": _rounding("ceil"), "trunc": _rounding("trunc"),
    "frac": _FLOAT_ONLY,
    "isposinf": {"complex": RuntimeError("isposinf does not support complex inputs.")},
    "isneginf": {"complex": RuntimeError("isneginf does not support complex inputs.")},
    "signbit": {"complex": NotImplementedError("signbit is not implemented for complex tensors.")},
    "positive": {"bool": RuntimeError("The `+` operator, on a bool tensor is not supported.")},
    "floor_divide": {"bool": _NI, "complex": _NI}, "remainder": {"bool": _NI, "complex": _NI},
    "fmod": {"bool": _NI, "complex": _NI}, "div_trunc": {"bool": _NI, "complex": _NI},
    "atan2": _NO_COMPLEX, "copysign": _NO_COMPLEX, "hypot": _FLOAT_ONLY,
    "lt": _NO_COMPLEX, "le": _NO_COMPLEX, "gt": _NO_COMPLEX, "ge": _NO_COMPLEX,
    "bitwise_left_shift": _NO_BOOL, "bitwise_right_shift": _NO_BOOL,
}


def _declare_unary(name, rule, inplace, doc):
    meta = make_unary_meta(name, rule, errors=ERRORS.get(name))
    fn = declare(f"{name}(Tensor self) -> Tensor", meta, inplace=inplace,
                 doc=f"{doc} Elementwise; matches torch.{name}. Shape kept; dtype rule '{rule}'.")
    _g[name] = fn
    __all__.append(name)
    if inplace:
        _g[name + "_"] = fn.inplace


#: which operands may be Python numbers, as in PyTorch's signatures (default: both, as add / mul):
#: "other" - the input must be a Tensor; "none" - both must be Tensors (TypeError otherwise)
SCALARS = {**dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge", "fmod", "copysign"), "other"),
           **dict.fromkeys(("atan2", "hypot", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or",
                            "logical_xor"), "none")}


def _declare_binary(name, rule, alpha, bool_ok, inplace, doc):
    meta = make_binary_meta(name, rule, alpha=alpha, bool_ok=bool_ok, errors=ERRORS.get(name),
                            scalars=SCALARS.get(name, "both"))
    extra = ", *, Scalar alpha=1" if alpha else ""
    fn = declare(f"{name}(Tensor self, Tensor other{extra}) -> Tensor", meta, inplace=inplace,
                 doc=f"{doc} Matches torch.{name}; the result shape is the broadcast of the inputs' "
                     f"(RuntimeError if they do not broadcast); dtype rule '{rule}'.")
    _g[name] = fn
    __all__.append(name)
    if inplace:
        _g[name + "_"] = fn.inplace


for _row in UNARY:
    _declare_unary(*_row)
for _row in BINARY:
    _declare_binary(*_row)

_abs_inplace = abs_


def abs_(self):
    """In-place ``abs``; RuntimeError for complex tensors (the result is real), as PyTorch."""
    if isinstance(self, Tensor) and self._dtype.is_complex:
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _abs_inplace(self)


abs_._op = _abs_inplace._op

# aliases PyTorch has
multiply, subtract, divide_t, greater, greater_equal, less, less_equal, not_equal = \
    mul, sub, true_divide, gt, ge, lt, le, ne
absolute, negative, arcsin, arccos, arctan, arctan2 = abs, neg, asin, acos, atan, atan2
__all__ += ["multiply", "subtract", "greater", "greater_equal", "less", "less_equal", "not_equal", "absolute",
            "negative", "arcsin", "arccos", "arctan", "arctan2"]


# ---------------------------------------------------------------- div with rounding_mode
def div(input, other, *, rounding_mode=None, out=None):
    """input / other with ``rounding_mode`` None (true division), 'trunc' or 'floor' (matches torch.div).

    ValueError for another rounding mode. Shapes broadcast; integer inputs with
    rounding_mode=None divide in the default float dtype.
    """
    if rounding_mode is None:
        return true_divide(input, other, out=out)
    if rounding_mode == "floor":
        return floor_divide(input, other, out=out)
    if rounding_mode == "trunc":
        return _div_trunc(input, other, out=out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                     f"'{rounding_mode}'")


_div_trunc = declare("div_trunc(Tensor self, Tensor other) -> Tensor",
                     make_binary_meta("div_trunc", "real", errors=ERRORS["div_trunc"]),
                     inplace=True, doc="self / other rounded toward zero.")


def div_(self, other, *, rounding_mode=None):
    """In-place ``div``."""
    if rounding_mode is None:
        return true_divide_(self, other)
    if rounding_mode == "floor":
        return floor_divide_(self, other)
    if rounding_mode == "trunc":
        return _div_trunc.inplace(self, other)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                     f"'{rounding_mode}'")


divide = div
__all__ += ["div", "divide"]


# ---------------------------------------------------------------- pow
_pow_binary = make_binary_meta("pow", "promote")


def _pow_meta(self, exponent):
    r = _pow_binary(self, exponent)
    dt = r[3]
    if dt is D.bool and isinstance(self, Tensor) and isinstance(exponent, Tensor):
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if not (dt.is_floating_point or dt.is_complex) and dt is not D.bool:
        e = exponent
        if isinstance(e, numbers.Integral) and e < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    return r


pow = declare("pow(Tensor self, Tensor exponent) -> Tensor", _pow_meta, inplace=True,
              doc="self ** exponent, broadcasting (matches torch.pow). RuntimeError for an integer tensor "
                  "raised to a negative integer scalar.")
pow_ = pow.inplace
__all__ += ["pow"]


def float_power(input, exponent, *, out=None):
    """pow computed in float64 (complex128 for complex inputs); matches torch.float_power."""
    cd = D.complex128 if (getattr(input, "_dtype", D.float64).is_complex or
                          getattr(exponent, "_dtype", D.float64).is_complex or isinstance(exponent, complex)) \
        else D.float64
    a = input.to(cd) if isinstance(input, Tensor) else input
    b = exponent.to(cd) if isinstance(exponent, Tensor) else exponent
    return pow(a, b, out=out)


# ---------------------------------------------------------------- unary with arguments
_round_meta = make_unary_meta("round", "same")
round = declare("round(Tensor self, *, int decimals=0) -> Tensor", lambda self, decimals=0: _round_meta(self),
                inplace=True, doc="Round half to even, to ``decimals`` decimal places (matches torch.round).")
round_ = round.inplace

_nan_meta = make_unary_meta("nan_to_num", "same")
nan_to_num = declare("nan_to_num(Tensor self, float? nan=0.0, float? posinf=None, float? neginf=None) -> Tensor",
                     lambda self, nan=0.0, posinf=None, neginf=None: _nan_meta(self), inplace=True,
                     doc="NaN -> ``nan``, +inf -> ``posinf`` (default: dtype max), -inf -> ``neginf`` "
                         "(default: dtype min); matches torch.nan_to_num.")
nan_to_num_ = nan_to_num.inplace
__all__ += ["round", "nan_to_num"]


# ---------------------------------------------------------------- ternary
def _where_meta(condition, input, other):
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._dtype is not D.bool and condition._dtype is not D.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{D.torch_name(condition._dtype)}")
    device = same_device(condition, input, other)
    dt = D.result_type(input, other)
    shapes = [x._shape for x in (condition, input, other) if isinstance(x, Tensor)]
    return device, (device.type, condition._layout.name, dt), broadcast_shapes(*shapes), dt


_where = declare("where(Tensor condition, Tensor input, Tensor other) -> Tensor", _where_meta,
                 doc="Elements of input where condition, else of other (broadcast; matches torch.where).")


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` is true, else ``other`` (both may be scalars); with only
    ``condition``, ``nonzero(condition, as_tuple=True)``. Matches torch.where."""
    if input is None and other is None:
        from . import _indexing
        return _indexing.nonzero(condition, as_tuple=True)
    return _where(condition, input, other, out=out)


def _clamp_meta(self, min=None, max=None):
    check_tensor(self, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None".replace("torch", "ember"))
    device = same_device(self, min, max)
    dt = D.result_type(self, *(x for x in (min, max) if x is not None))
    if self._dtype.is_complex:
        raise RuntimeError("clamp is not supported for complex types")
    shapes = [x._shape for x in (self, min, max) if isinstance(x, Tensor)]
    return device, (device.type, self._layout.name, dt), broadcast_shapes(*shapes), dt


clamp = declare("clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", _clamp_meta, inplace=True,
                doc="Elements limited to [min, max]; bounds are numbers or tensors (matches torch.clamp). "
                    "RuntimeError when both bounds are None.")
clamp_ = clamp.inplace
clip, clip_ = clamp, clamp_


def clamp_min(input, min, *, out=None):
    """``clamp(input, min=min)``, ``out=`` included (matches torch.clamp_min)."""
    return clamp(input, min=min, out=out)


def clamp_max(input, max, *, out=None):
    """``clamp(input, max=max)``, ``out=`` included (matches torch.clamp_max)."""
    return clamp(input, max=max, out=out)


def _lerp_meta(self, end, weight):
    check_tensor(self, "lerp")
    device = same_device(self, end, weight)
    dt = self._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f"\"lerp\" not implemented for '{D.torch_name(dt)}'")
    for name, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor) and x._dtype is not dt:
            raise RuntimeError(f"expected dtype {_pt_name(dt)} for `{name}` but got dtype {_pt_name(x._dtype)}")
    shapes = [x._shape for x in (self, end, weight) if isinstance(x, Tensor)]
    return device, (device.type, self._layout.name, dt), broadcast_shapes(*shapes), dt


lerp = declare("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor", _lerp_meta, inplace=True,
               doc="self + weight * (end - self), broadcasting (matches torch.lerp).")
lerp_ = lerp.inplace


def _pt_name(d):
    # the lower-case names PyTorch's lerp messages use ("expected dtype float ... got dtype double")
    return {"float32": "float", "float64": "double", "float16": "half"}.get(d.name, d.name)


def _addc_meta(self, tensor1, tensor2, value=1):
    for i, x in enumerate((self, tensor1, tensor2)):
        if not isinstance(x, Tensor):
            raise TypeError(f"argument {i + 1} must be Tensor, not {type(x).__name__}")
    device = same_device(self, tensor1, tensor2)
    dt = self._dtype
    if tensor1._dtype is not dt or tensor2._dtype is not dt:
        dt = D.result_type(self, tensor1, tensor2)
    return device, (device.type, self._layout.name, dt), broadcast_shapes(self._shape, tensor1._shape,
                                                                         tensor2._shape), dt


def _addcdiv_meta(self, tensor1, tensor2, value=1):
    r = _addc_meta(self, tensor1, tensor2, value)
    if not (tensor1._dtype.is_floating_point or tensor1._dtype.is_complex or tensor2._dtype.is_floating_point
            or tensor2._dtype.is_complex):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * ember.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    return r


addcmul = declare("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", _addc_meta,
                  inplace=True, doc="self + value * tensor1 * tensor2 (matches torch.addcmul).")
addcdiv = declare("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", _addcdiv_meta,
                  inplace=True, doc="self + value * tensor1 / tensor2 (matches torch.addcdiv).")
addcmul_, addcdiv_ = addcmul.inplace, addcdiv.inplace
__all__ += ["where", "clamp", "clip", "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "float_power"]


# ---------------------------------------------------------------- Tensor methods and operators
def _rsub(self, other, *, alpha=1):
    """other - alpha * self (``other`` may be a Python scalar: the kernels keep the operand order)."""
    return sub(other, self, alpha=alpha)


def rsub(input, other, *, alpha=1):
    """other - alpha * input (matches torch.rsub)."""
    return sub(other, input, alpha=alpha)


def _rdiv(self, other):
    return true_divide(other, self)


def _rpow(self, other):
    return pow(other, self)


def _rfloordiv(self, other):
    return floor_divide(other, self)


def _rmod(self, other):
    return remainder(other, self)


def _bind():
    T = Tensor
    for name, *_ in UNARY:
        setattr(T, name, _g[name])
        if name + "_" in _g:
            setattr(T, name + "_", _g[name + "_"])
    for name, *_ in BINARY:
        setattr(T, name, _g[name])
        if name + "_" in _g:
            setattr(T, name + "_", _g[name + "_"])
    for name in ("div", "div_", "pow", "pow_", "round", "round_", "nan_to_num", "nan_to_num_", "clamp", "clamp_",
                 "clip", "clip_", "lerp", "lerp_", "addcmul", "addcmul_", "addcdiv", "addcdiv_", "float_power",
                 "clamp_min", "clamp_max"):
        setattr(T, name, _g[name])
    T.where = lambda self, condition, other: where(condition, self, other)
    T.multiply, T.subtract, T.divide, T.absolute, T.negative = mul, sub, div, abs, neg
    T.greater, T.greater_equal, T.less, T.less_equal, T.not_equal = gt, ge, lt, le, ne
    T.arcsin, T.arccos, T.arctan, T.arctan2 = asin, acos, atan, atan2
    T.__add__ = T.__radd__ = add
    T.__iadd__ = add_
    T.__sub__ = sub
    T.__rsub__ = _rsub
    T.__isub__ = sub_
    T.__mul__ = T.__rmul__ = mul
    T.__imul__ = mul_
    T.__truediv__ = true_divide
    T.__rtruediv__ = _rdiv
    T.__itruediv__ = true_divide_
    T.__floordiv__ = floor_divide
    T.__rfloordiv__ = _rfloordiv
    T.__ifloordiv__ = floor_divide_
    T.__mod__ = remainder
    T.__rmod__ = _rmod
    T.__imod__ = remainder_
    T.__pow__ = pow
    T.__rpow__ = _rpow
    T.__ipow__ = pow_
    T.__neg__ = neg
    T.__pos__ = lambda self: self
    T.__abs__ = abs
    T.__invert__ = bitwise_not
    T.__and__ = T.__rand__ = bitwise_and
    T.__iand__ = bitwise_and_
    T.__or__ = T.__ror__ = bitwise_or
    T.__ior__ = bitwise_or_
    T.__xor__ = T.__rxor__ = bitwise_xor
    T.__ixor__ = bitwise_xor_
    T.__lshift__ = bitwise_left_shift
    T.__rshift__ = bitwise_right_shift
    T.__ilshift__ = bitwise_left_shift_
    T.__irshift__ = bitwise_right_shift_
    T.__eq__ = eq
    T.__ne__ = ne
    T.__lt__ = lt
    T.__le__ = le
    T.__gt__ = gt
    T.__ge__ = ge
    T.__hash__ = lambda self: id(self)


_bind()
__all__ += ["rsub"]

# composites for the non-primitive ops above (a device without a kernel runs these)
from . import _elementwise_composites as _composites  # noqa: E402

_composites.attach()
