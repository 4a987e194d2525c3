"""Op database entries: elementwise ops (unary, binary, ternary; ``ember._ops._elementwise``).

References are numpy / scipy.special with PyTorch's semantics spelled out where numpy's
differ (integer inputs of floating ops compute in float, sign of bool, sgn of complex,
clamp as max-then-min, rounding half to even). Floating samples add a "special values"
sample (NaN, +-inf, +-0, halves) where the op is defined there.
"""
from __future__ import annotations

import functools

import numpy as np
import scipy.special as sps

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import (ALL_DTYPES, FLOATING, INTEGRAL, REAL, REAL_AND_BOOL, NUMERIC, FLOATING_AND_COMPLEX,
                        INTEGRAL_AND_BOOL, binary_samples, unary_samples, seed_for, with_grad)
from ._common import as_float, errstate, has_autograd, inplace_of

__all__ = ["op_db"]

NO_COMPLEX = REAL_AND_BOOL
FLOATING_INPUT = ("float16", "bfloat16", "float32", "float64")

_SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 1.0, -1.0]


def _specials(device, dtype, values=_SPECIALS):
    return ember.tensor(values, dtype=dtype, device=device)


def _is_int(dtype):
    return not (dtype.is_floating_point or dtype.is_complex)


def _range(dtype, fl, it):
    """(low, high) for dtype: ``fl`` for floating / complex, ``it`` for integers (clipped at 0 for uint8)."""
    if dtype.name == "bool":
        return None, None
    if _is_int(dtype):
        lo, hi = it if it is not None else (None, None)
        if dtype.name == "uint8" and lo is not None and lo < 0:
            lo = 0
        return lo, hi
    return fl if fl is not None else (None, None)


# ---------------------------------------------------------------- unary
def _unary_sampler(fl=None, it=None, specials=True, exclude_zero=False, kwargs=None, special_values=_SPECIALS):
    def sample_inputs(op, device, dtype, requires_grad=False):
        lo, hi = _range(dtype, fl, it)
        yield from unary_samples(op, device, dtype, requires_grad, low=lo, high=hi,
                                 exclude_zero=exclude_zero and _is_int(dtype), kwargs=kwargs)
        if specials and dtype.is_floating_point and not requires_grad:
            yield SampleInput(_specials(device, dtype, special_values), (), dict(kwargs or {}), name="special values")
    return sample_inputs


def _bool_error(msg_fn):
    def error_inputs(op, device):
        b = make_tensor((3,), device=device, dtype=ember.bool, seed=1)
        yield ErrorInput(SampleInput(b, name="bool"), *msg_fn)
    return error_inputs


def _dtype_error(dtype_name, exc, regex, n_args=1):
    def error_inputs(op, device):
        dt = getattr(ember, dtype_name)
        ts = [make_tensor((3,), device=device, dtype=dt, seed=i) for i in range(n_args)]
        yield ErrorInput(SampleInput(ts[0], tuple(ts[1:]), name=dtype_name), exc, regex)
    return error_inputs


def _scalar_operand_error(name):
    """PyTorch's TypeError for a Python number where its signature wants a Tensor: the first operand
    of eq / lt / fmod ..., either operand of atan2 / maximum / logical_and ..."""
    from ember._ops._elementwise import SCALARS
    policy = SCALARS.get(name, "both")

    def error_inputs(op, device):
        t = make_tensor((3,), device=device, seed=1)
        if policy == "none":
            yield ErrorInput(SampleInput(t, (2,), name="number other"), TypeError,
                             rf"{name}\(\): argument 'other' \(position 2\) must be Tensor, not int")
        if policy in ("none", "other"):
            yield ErrorInput(SampleInput(2, (t,), name="number input"), TypeError,
                             rf"{name}\(\): argument 'input' \(position 1\) must be Tensor, not int"
                             if policy == "none" else rf"{name}\(\) received an invalid combination of arguments")
    return error_inputs


def _chain(*fns):
    def error_inputs(op, device):
        for f in fns:
            yield from f(op, device)
    return error_inputs


def _ni(opname, dtype_name):
    """PyTorch's NotImplementedError '"<kernel>" not implemented for '<Type>'' (kernel name varies: any)."""
    t = {"bool": "Bool", "float32": "Float", "int64": "Long", "complex64": "ComplexFloat"}[dtype_name]
    return NotImplementedError, rf"not implemented for '{t}'"


def _sign_ref(x):
    if x.dtype == np.bool_:
        return x.copy()
    r = np.sign(x)
    return np.where(np.isnan(r), 0, r) if r.dtype.kind == "f" else r     # PyTorch: sign(nan) is 0


def _sgn_ref(x):
    if np.iscomplexobj(x):
        a = np.abs(x)
        return np.where(a == 0, 0, x / np.where(a == 0, 1, a))
    return _sign_ref(x)


def _int_identity(f):
    def g(x):
        return x.copy() if x.dtype.kind in "biu" else f(x)
    return g


def _bitwise_not_ref(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _signbit_ref(x):
    return np.signbit(x.astype(np.int8)) if x.dtype == np.bool_ else np.signbit(x)


def _square_ref(x):
    return np.square(x.astype(np.int64)) if x.dtype == np.bool_ else np.square(x)


def _isposinf(x):
    return np.isposinf(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)


def _isneginf(x):
    return np.isneginf(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _sigmoid(x):
    return sps.expit(x) if x.dtype.kind != "c" else 1 / (1 + np.exp(-x))


def _frac(x):
    return x - np.trunc(x)


# (name, reference, dtypes, float range, int range, options)
_F = as_float
_POS = ((0.1, 9.0), (1, 10))
_UNIT = ((-0.95, 0.95), (-1, 2))
_UNARY = [
    ("neg", np.negative, NUMERIC, None, None, {}),
    ("abs", np.abs, NUMERIC, None, None, {}),
    ("sign", _sign_ref, REAL_AND_BOOL, None, None, {}),
    ("sgn", _sgn_ref, ALL_DTYPES, None, None, {}),
    ("exp", _F(np.exp), ALL_DTYPES, (-4.0, 4.0), (-4, 5), {}),
    ("exp2", _F(np.exp2), ALL_DTYPES, (-4.0, 4.0), (-4, 5), {}),
    ("log", _F(np.log), ALL_DTYPES, *_POS, {}),
    ("log2", _F(np.log2), ALL_DTYPES, *_POS, {}),
    ("log10", _F(np.log10), ALL_DTYPES, *_POS, {}),
    ("log1p", _F(np.log1p), ALL_DTYPES, (-0.9, 9.0), (0, 10), {}),
    ("expm1", _F(np.expm1), ALL_DTYPES, (-4.0, 4.0), (-4, 5), {}),
    ("sqrt", _F(np.sqrt), ALL_DTYPES, *_POS, {}),
    ("rsqrt", _F(_rsqrt), ALL_DTYPES, *_POS, {}),
    ("square", _square_ref, ALL_DTYPES, None, None, {}),
    ("sin", _F(np.sin), ALL_DTYPES, (-4.0, 4.0), None, {}),
    ("cos", _F(np.cos), ALL_DTYPES, (-4.0, 4.0), None, {}),
    ("tan", _F(np.tan), ALL_DTYPES, (-1.3, 1.3), (-1, 2), {}),
    ("asin", _F(np.arcsin), ALL_DTYPES, *_UNIT, {}),
    ("acos", _F(np.arccos), ALL_DTYPES, *_UNIT, {}),
    ("atan", _F(np.arctan), ALL_DTYPES, None, None, {}),
    ("sinh", _F(np.sinh), ALL_DTYPES, (-4.0, 4.0), (-4, 5), {}),
    ("cosh", _F(np.cosh), ALL_DTYPES, (-4.0, 4.0), (-4, 5), {}),
    ("tanh", _F(np.tanh), ALL_DTYPES, (-4.0, 4.0), None, {}),
    ("asinh", _F(np.arcsinh), ALL_DTYPES, None, None, {}),
    ("acosh", _F(np.arccosh), ALL_DTYPES, (1.1, 9.0), (1, 10), {}),
    ("atanh", _F(np.arctanh), ALL_DTYPES, *_UNIT, {}),
    ("sigmoid", _F(_sigmoid), ALL_DTYPES, (-6.0, 6.0), None, {}),
    ("erf", _F(sps.erf), REAL_AND_BOOL, (-3.0, 3.0), None, {}),
    ("erfc", _F(sps.erfc), REAL_AND_BOOL, (-3.0, 3.0), None, {}),
    ("erfinv", _F(sps.erfinv), REAL_AND_BOOL, *_UNIT, {}),
    ("floor", _int_identity(np.floor), REAL, None, None, {"exact": True}),
    ("ceil", _int_identity(np.ceil), REAL, None, None, {"exact": True}),
    ("trunc", _int_identity(np.trunc), REAL, None, None, {"exact": True}),
    ("frac", _frac, FLOATING, None, None, {}),
    ("reciprocal", _F(np.reciprocal), ALL_DTYPES, None, None, {"exclude_zero": True}),
    ("isnan", np.isnan, ALL_DTYPES, None, None, {"exact": True}),
    ("isinf", np.isinf, ALL_DTYPES, None, None, {"exact": True}),
    ("isposinf", _isposinf, REAL_AND_BOOL, None, None, {"exact": True}),
    ("isneginf", _isneginf, REAL_AND_BOOL, None, None, {"exact": True}),
    ("isfinite", np.isfinite, ALL_DTYPES, None, None, {"exact": True}),
    # the sign bit of a NaN is not specified: no NaN in signbit's special values
    ("signbit", _signbit_ref, REAL_AND_BOOL, None, None, {"exact": True, "special_values": _SPECIALS[1:]}),
    ("logical_not", np.logical_not, ALL_DTYPES, None, None, {"exact": True}),
    ("bitwise_not", _bitwise_not_ref, INTEGRAL_AND_BOOL, None, None, {"exact": True}),
    ("positive", np.positive, NUMERIC, None, None, {}),
]

#: unary ops' error samples: name -> (dtype name, exception, regex)
_UNARY_ERRORS = {
    "neg": ("bool", RuntimeError, r"Negation, the `-` operator, on a bool tensor is not supported"),
    "abs": ("bool", *_ni("abs", "bool")),
    "sign": ("complex64", NotImplementedError, r"Unlike NumPy, (torch|ember)\.sign is not intended to support complex"),
    "erf": ("complex64", *_ni("erf", "complex64")),
    "erfc": ("complex64", *_ni("erfc", "complex64")),
    "erfinv": ("complex64", *_ni("erfinv", "complex64")),
    "floor": ("bool", *_ni("floor", "bool")),
    "ceil": ("bool", *_ni("ceil", "bool")),
    "trunc": ("bool", *_ni("trunc", "bool")),
    "frac": ("int64", *_ni("frac", "int64")),
    "isposinf": ("complex64", RuntimeError, r"isposinf does not support complex inputs"),
    "isneginf": ("complex64", RuntimeError, r"isneginf does not support complex inputs"),
    "signbit": ("complex64", NotImplementedError, r"signbit is not implemented for complex tensors"),
    "bitwise_not": ("float32", *_ni("bitwise_not", "float32")),
    "positive": ("bool", RuntimeError, r"The `\+` operator, on a bool tensor is not supported"),
}


def _unary_entries():
    out = []
    for name, ref, dtypes, fl, it, opt in _UNARY:
        err = _UNARY_ERRORS.get(name)
        out.append(OpInfo(
            name, ref=errstate(ref), dtypes=dtypes,
            sample_inputs=_unary_sampler(fl, it, exclude_zero=opt.get("exclude_zero", False),
                                         special_values=opt.get("special_values", _SPECIALS)),
            error_inputs=_dtype_error(*err) if err else None,
            supports_autograd=has_autograd(name), supports_out=True,
            inplace=inplace_of(name) if hasattr(ember.Tensor, name + "_") else None,
            exact=opt.get("exact", False)))
    return out


# ---------------------------------------------------------------- binary
def _binary_sampler(fl=None, it=None, rfl=None, rit=None, divisor=False, scalar=None, scalar_lhs=False,
                    kwargs=None, int_scalar=None):
    """Binary samples with per-kind value ranges of each operand; ``divisor`` keeps zeros out
    of integer second operands."""
    def sample_inputs(op, device, dtype, requires_grad=False):
        lo, hi = _range(dtype, fl, it)
        rlo, rhi = _range(dtype, rfl if rfl is not None else fl, rit if rit is not None else it)
        s = int_scalar if (int_scalar is not None and _is_int(dtype) and dtype.name != "bool") else scalar
        yield from binary_samples(op, device, dtype, requires_grad, low=lo, high=hi, rhs_low=rlo, rhs_high=rhi,
                                  rhs_exclude_zero=divisor and _is_int(dtype), scalar=s, scalar_lhs=scalar_lhs,
                                  kwargs=kwargs)
    return sample_inputs


def _broadcast_error(op, device):
    dt = ember.float32 if "float32" in op.dtypes else ember.int64
    a = make_tensor((3, 4), device=device, dtype=dt, seed=1)
    b = make_tensor((3,), device=device, dtype=dt, seed=2)
    yield ErrorInput(SampleInput(a, (b,), name="shapes do not broadcast"), RuntimeError,
                     r"The size of tensor a \(4\) must match the size of tensor b \(3\) at non-singleton dimension 1")


def _ref_alpha(f):
    def g(a, b, alpha=1):
        return f(a, b if alpha == 1 else np.multiply(b, alpha))
    return g


def _div_trunc_ref(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu" or isinstance(b, int):
        q = np.trunc(a.astype(np.float64) / np.asarray(b, dtype=np.float64))
        return q
    return np.trunc(np.true_divide(a, b))


def _floor_divide_ref(a, b):
    return np.floor_divide(a, b)


def _logical(f):
    def g(a, b):
        return f(np.asarray(a) != 0, np.asarray(b) != 0)
    return g


def _shift(f):
    def g(a, b):
        return f(a, np.asarray(b).astype(np.asarray(a).dtype) if not isinstance(b, int) else b)
    return g


def _hypot(a, b):
    return np.hypot(a, b)


def _copysign(a, b):
    return np.copysign(a, b)


_INT_DIV = {"it": (-9, 10), "rit": (-5, 6), "divisor": True}
# (name, reference, dtypes, sampler options, extra OpInfo options)
_BINARY = [
    ("add", _ref_alpha(np.add), ALL_DTYPES, {"scalar_lhs": True}, {}),
    ("sub", _ref_alpha(np.subtract), NUMERIC, {"scalar_lhs": True}, {}),
    ("mul", np.multiply, ALL_DTYPES, {"scalar_lhs": True}, {}),
    ("true_divide", _F(np.true_divide), ALL_DTYPES, {"rfl": (0.5, 9.0), "divisor": True}, {}),
    ("floor_divide", _floor_divide_ref, REAL, dict(_INT_DIV, rfl=(0.5, 4.0)), {}),
    ("remainder", np.remainder, REAL, dict(_INT_DIV, rfl=(0.5, 4.0)), {}),
    ("fmod", np.fmod, REAL, dict(_INT_DIV, rfl=(0.5, 4.0)), {}),
    ("div_trunc", _div_trunc_ref, REAL, dict(_INT_DIV, rfl=(0.5, 4.0)), {}),
    # PyTorch takes no Python scalar ``other`` for atan2, hypot and the logical ops
    ("atan2", _F(np.arctan2), REAL_AND_BOOL, {"scalars": False}, {}),
    ("hypot", _hypot, FLOATING, {"scalars": False}, {}),
    ("copysign", _F(_copysign), REAL_AND_BOOL, {"scalar": -2.5}, {}),
    ("maximum", np.maximum, REAL_AND_BOOL, {"scalars": False}, {}),
    ("minimum", np.minimum, REAL_AND_BOOL, {"scalars": False}, {}),
    ("fmax", np.fmax, REAL_AND_BOOL, {"scalars": False}, {}),
    ("fmin", np.fmin, REAL_AND_BOOL, {"scalars": False}, {}),
    ("eq", np.equal, ALL_DTYPES, {"it": (-2, 3)}, {"exact": True}),
    ("ne", np.not_equal, ALL_DTYPES, {"it": (-2, 3)}, {"exact": True}),
    ("lt", np.less, REAL_AND_BOOL, {"it": (-2, 3)}, {"exact": True}),
    ("le", np.less_equal, REAL_AND_BOOL, {"it": (-2, 3)}, {"exact": True}),
    ("gt", np.greater, REAL_AND_BOOL, {"it": (-2, 3)}, {"exact": True}),
    ("ge", np.greater_equal, REAL_AND_BOOL, {"it": (-2, 3)}, {"exact": True}),
    ("logical_and", _logical(np.logical_and), ALL_DTYPES, {"it": (-1, 2), "scalars": False}, {"exact": True}),
    ("logical_or", _logical(np.logical_or), ALL_DTYPES, {"it": (-1, 2), "scalars": False}, {"exact": True}),
    ("logical_xor", _logical(np.logical_xor), ALL_DTYPES, {"it": (-1, 2), "scalars": False}, {"exact": True}),
    ("bitwise_and", np.bitwise_and, INTEGRAL_AND_BOOL, {}, {"exact": True}),
    ("bitwise_or", np.bitwise_or, INTEGRAL_AND_BOOL, {}, {"exact": True}),
    ("bitwise_xor", np.bitwise_xor, INTEGRAL_AND_BOOL, {}, {"exact": True}),
    ("bitwise_left_shift", _shift(np.left_shift), INTEGRAL, {"rit": (0, 7), "int_scalar": 2}, {"exact": True}),
    ("bitwise_right_shift", _shift(np.right_shift), INTEGRAL, {"rit": (0, 7), "int_scalar": 2}, {"exact": True}),
]

_BINARY_ERRORS = {
    "sub": [("bool", RuntimeError, r"Subtraction, the `-` operator, with (two )?bool tensors? is not supported")],
    "floor_divide": [("bool", *_ni("floor_divide", "bool"))],
    "remainder": [("bool", *_ni("remainder", "bool"))],
    "fmod": [("bool", *_ni("fmod", "bool"))],
    "div_trunc": [("bool", *_ni("div_trunc", "bool"))],
    "atan2": [("complex64", *_ni("atan2", "complex64"))],
    "hypot": [("int64", *_ni("hypot", "int64"))],
    "lt": [("complex64", *_ni("lt", "complex64"))],
    "maximum": [("complex64", RuntimeError, r"maximum not implemented for complex tensors")],
    "minimum": [("complex64", RuntimeError, r"minimum not implemented for complex tensors")],
    "bitwise_and": [("float32", *_ni("bitwise_and", "float32"))],
    "bitwise_left_shift": [("bool", *_ni("lshift", "bool"))],
    "bitwise_right_shift": [("bool", *_ni("rshift", "bool"))],
}


def _div_trunc_op(a, b, out=None):
    return ember.div(a, b, rounding_mode="trunc", out=out)


def _div_trunc_inplace(a, b):
    return a.div_(b, rounding_mode="trunc")


_OPS = {"div_trunc": _div_trunc_op}
_INPLACE = {"div_trunc": _div_trunc_inplace}


def _binary_entries():
    out = []
    for name, ref, dtypes, sopt, opt in _BINARY:
        errs = [_dtype_error(d, e, r, n_args=2) for d, e, r in _BINARY_ERRORS.get(name, [])]
        sopt = dict(sopt)
        scalars = sopt.pop("scalars", True)
        sampler = _binary_sampler(**sopt)
        if not scalars:
            sampler = _no_scalars(sampler)
        out.append(OpInfo(
            name, op=_OPS.get(name), ref=errstate(ref), dtypes=dtypes, sample_inputs=sampler,
            error_inputs=_chain(_broadcast_error, _scalar_operand_error(name), *errs),
            supports_autograd=has_autograd(name), supports_out=True,
            inplace=_INPLACE.get(name) or (inplace_of(name) if hasattr(ember.Tensor, name + "_") else None),
            **opt))
    # add / sub with alpha
    for name, f in (("add", np.add), ("sub", np.subtract)):
        def alpha_samples(op, device, dtype, requires_grad=False):
            alpha = 2 if _is_int(dtype) else (True if dtype.name == "bool" else 0.5)
            if dtype.name == "bool":
                alpha = True
            yield from binary_samples(op, device, dtype, requires_grad, kwargs={"alpha": alpha}, scalars=False)
        out.append(OpInfo(name, variant="alpha", ref=errstate(_ref_alpha(f)),
                          dtypes=ALL_DTYPES if name == "add" else NUMERIC, sample_inputs=alpha_samples,
                          supports_autograd=has_autograd(name), supports_out=True, inplace=inplace_of(name)))
    return out


def _no_scalars(sampler):
    def sample_inputs(op, device, dtype, requires_grad=False):
        for s in sampler(op, device, dtype, requires_grad):
            if not s.name.startswith("scalar"):
                yield s
    return sample_inputs


# ---------------------------------------------------------------- pow, round, nan_to_num
def _pow_ref(a, b):
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    if isinstance(b, np.ndarray) and b.dtype == np.bool_:
        b = b.astype(np.int64)
    if a.dtype.kind in "iu" and isinstance(b, float):
        a = a.astype(np.float64)
    return np.power(a, b)


def _pow_samples(op, device, dtype, requires_grad=False):
    if dtype.name == "bool":
        # bool ** bool is refused; bool ** int scalar computes in int64
        yield SampleInput(make_tensor((3, 4), device=device, dtype=dtype, seed=5), (2,), name="bool ** int")
        return
    if _is_int(dtype):
        lo, hi = (0, 6) if dtype.name == "uint8" else (-5, 6)
        yield from binary_samples(op, device, dtype, requires_grad, low=lo, high=hi, rhs_low=0, rhs_high=4,
                                  scalar=3)
        return
    yield from binary_samples(op, device, dtype, requires_grad, low=0.5, high=3.0, rhs_low=-2.0, rhs_high=2.0,
                              scalar=2.5)
    if dtype.is_floating_point and not requires_grad:
        base = make_tensor((4,), device=device, dtype=dtype, low=-3, high=3, seed=6)
        yield SampleInput(base, (2,), name="negative base, int scalar exponent")
        yield SampleInput(base, (-1,), name="negative base, exponent -1")
        yield SampleInput(base, (0.5,), name="negative base, exponent 0.5 (NaN)")


def _pow_errors(op, device):
    i = make_tensor((3,), device=device, dtype=ember.int64, seed=1)
    yield ErrorInput(SampleInput(i, (-1,), name="int ** negative int"), RuntimeError,
                     r"Integers to negative integer powers are not allowed")
    b = make_tensor((3,), device=device, dtype=ember.bool, seed=1)
    yield ErrorInput(SampleInput(b, (b,), name="bool ** bool"), NotImplementedError,
                     r"not implemented for 'Bool'")
    yield from _broadcast_error(op, device)


def _round_ref(x, decimals=0):
    if x.dtype.kind in "biu":
        return x.copy()
    if x.dtype.itemsize == 2:     # float16 / bfloat16: rounded in float32, as PyTorch's cpu kernel does
        return np.round(x.astype(np.float32), decimals).astype(x.dtype)
    return np.round(x, decimals)


def _round_samples(op, device, dtype, requires_grad=False):
    yield from unary_samples(op, device, dtype, requires_grad)
    if dtype.is_floating_point:
        if not requires_grad:
            yield SampleInput(_specials(device, dtype), name="halves (to even), special values")
        yield SampleInput(make_tensor((3, 4), device=device, dtype=dtype, seed=7), (), {"decimals": 2},
                          name="decimals=2")
        yield SampleInput(make_tensor((5,), device=device, dtype=dtype, seed=8, low=-300, high=300), (),
                          {"decimals": -2}, name="decimals=-2")


def _nan_to_num_ref(x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind not in "fc":
        return x.copy()
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _nan_to_num_samples(op, device, dtype, requires_grad=False):
    yield from unary_samples(op, device, dtype, requires_grad, views=True)
    if dtype.is_floating_point and not requires_grad:
        if dtype.name != "float16":   # the default +-inf replacement is the dtype's max; the reference sees float32
            yield SampleInput(_specials(device, dtype), name="special values, defaults")
        yield SampleInput(_specials(device, dtype), (), {"nan": 1.5, "posinf": 100.0, "neginf": -100.0},
                          name="special values, given")
        yield SampleInput(_specials(device, dtype), (), {"posinf": 7.0} if dtype.name != "float16" else {"posinf": 7.0, "neginf": -7.0},
                          name="special values, posinf given")


def _clamp_ref(x, min=None, max=None):
    r = x
    if min is not None:
        r = np.maximum(r, min)
    if max is not None:
        r = np.minimum(r, max)
    if r is x:
        r = x.copy()
    return r


def _clamp_samples(op, device, dtype, requires_grad=False):
    lo_s, hi_s = (-3, 4) if not dtype.is_floating_point else (-3.5, 4.5)
    if dtype.name == "uint8":
        lo_s = 2
    mk = functools.partial(make_tensor, device=device, dtype=dtype)
    g = lambda t: with_grad(t, requires_grad)
    yield SampleInput(g(mk((3, 4), seed=1)), (), {"min": lo_s, "max": hi_s}, name="scalar bounds")
    yield SampleInput(g(mk((3, 4), seed=2)), (), {"min": lo_s}, name="min only")
    yield SampleInput(g(mk((3, 4), seed=3)), (), {"max": hi_s}, name="max only")
    yield SampleInput(g(mk((), seed=4)), (), {"min": lo_s, "max": hi_s}, name="0-dim")
    yield SampleInput(g(mk((0, 3), seed=5)), (), {"min": lo_s}, name="empty")
    yield SampleInput(g(mk((3, 4), seed=6, noncontiguous=True)), (),
                      {"min": g(mk((4,), seed=7, low=-4, high=0)), "max": g(mk((3, 1), seed=8, low=1, high=5))},
                      name="tensor bounds, broadcast, noncontiguous")
    yield SampleInput(g(mk((4, 3), seed=9).t()), (), {"min": hi_s, "max": lo_s}, name="min > max (-> max)")
    if dtype.is_floating_point and not requires_grad:
        yield SampleInput(_specials(device, dtype), (), {"min": -1.0, "max": 1.0}, name="NaN input propagates")
        yield SampleInput(mk((4,), seed=10), (), {"min": float("nan")}, name="NaN bound")


def _clamp_errors(op, device):
    x = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, name="no bounds"), RuntimeError,
                     r"clamp: At least one of 'min' or 'max' must not be None")
    c = make_tensor((3,), device=device, dtype=ember.complex64, seed=1)
    yield ErrorInput(SampleInput(c, (), {"min": 0.0}, name="complex"), RuntimeError,
                     r"clamp is not supported for complex types")


def _where_ref(cond, a, b):
    return np.where(cond, a, b)


def _where_samples(op, device, dtype, requires_grad=False):
    mk = functools.partial(make_tensor, device=device, dtype=dtype)
    c = functools.partial(make_tensor, device=device, dtype=ember.bool)
    g = lambda t: with_grad(t, requires_grad)
    yield SampleInput(c((3, 4), seed=1), (g(mk((3, 4), seed=2)), g(mk((3, 4), seed=3))), name="same shapes")
    yield SampleInput(c((), seed=4), (g(mk((), seed=5)), g(mk((), seed=6))), name="0-dim")
    yield SampleInput(c((0, 2), seed=4), (g(mk((0, 2), seed=5)), g(mk((2,), seed=6))), name="empty")
    yield SampleInput(c((3, 1), seed=7), (g(mk((1, 4), seed=8)), g(mk((4,), seed=9))), name="broadcast")
    yield SampleInput(c((3, 4), seed=10, noncontiguous=True), (g(mk((4, 3), seed=11).t()), g(mk((4, 6), seed=12)[1:, ::2][:, :1])),
                      name="noncontiguous, transposed, sliced")
    if not requires_grad:
        s = True if dtype.name == "bool" else (2 if _is_int(dtype) else 2.5)
        yield SampleInput(c((3, 4), seed=13), (mk((3, 4), seed=14), s), name="scalar other")
        yield SampleInput(c((3, 4), seed=15), (s, mk((3, 4), seed=16)), name="scalar input")
        yield SampleInput(c((3, 4), seed=17).to(ember.uint8), (mk((3, 4), seed=18), mk((3, 4), seed=19)),
                          name="uint8 condition")


def _where_errors(op, device):
    x = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (x, x), name="float condition"), RuntimeError,
                     r"where expected condition to be a boolean tensor, but got a tensor with dtype Float")
    c = make_tensor((3, 4), device=device, dtype=ember.bool, seed=1)
    yield ErrorInput(SampleInput(c, (x, x), name="shapes do not broadcast"), RuntimeError,
                     r"The size of tensor a \(\d\) must match the size of tensor b \(\d\)")


def _lerp_ref(a, b, w):
    return a + w * (b - a)


def _lerp_samples(op, device, dtype, requires_grad=False):
    mk = functools.partial(make_tensor, device=device, dtype=dtype)
    g = lambda t: with_grad(t, requires_grad)
    yield SampleInput(g(mk((3, 4), seed=1)), (g(mk((3, 4), seed=2)), 0.3), name="scalar weight < 0.5")
    yield SampleInput(g(mk((3, 4), seed=3)), (g(mk((4,), seed=4)), 0.8), name="scalar weight >= 0.5, broadcast")
    yield SampleInput(g(mk((), seed=5)), (g(mk((), seed=6)), g(mk((), seed=7, low=0, high=1))), name="0-dim")
    yield SampleInput(g(mk((0, 3), seed=5)), (g(mk((0, 3), seed=6)), 0.5), name="empty")
    yield SampleInput(g(mk((3, 4), seed=8, noncontiguous=True)),
                      (g(mk((4, 3), seed=9).t()), g(mk((3, 1), seed=10, low=0, high=1))),
                      name="tensor weight, noncontiguous, transposed")


def _lerp_errors(op, device):
    i = make_tensor((3,), device=device, dtype=ember.int64, seed=1)
    yield ErrorInput(SampleInput(i, (i, 0.5), name="int64"), NotImplementedError, r"not implemented for 'Long'")
    x = make_tensor((3,), device=device, seed=1)
    d = make_tensor((3,), device=device, dtype=ember.float64, seed=1)
    yield ErrorInput(SampleInput(x, (d, 0.5), name="end dtype differs"), RuntimeError,
                     r"expected dtype float for `end` but got dtype double")


def _addc_ref(div):
    def ref(a, t1, t2, value=1):
        q = np.true_divide(t1, t2) if div else np.multiply(t1, t2)
        r = a + value * q
        return r.astype(bool) if np.asarray(a).dtype == np.bool_ else r
    return ref


def _addc_samples(div):
    def sample_inputs(op, device, dtype, requires_grad=False):
        mk = functools.partial(make_tensor, device=device, dtype=dtype)
        g = lambda t: with_grad(t, requires_grad)
        den = {"low": 0.5, "high": 3.0} if div else {}
        v = 2 if _is_int(dtype) and dtype.name != "bool" else 0.5
        if dtype.name == "bool":
            v = True
        yield SampleInput(g(mk((3, 4), seed=1)), (g(mk((3, 4), seed=2)), g(mk((3, 4), seed=3, **den))),
                          name="same shapes")
        yield SampleInput(g(mk((3, 4), seed=4)), (g(mk((4,), seed=5)), g(mk((3, 1), seed=6, **den))),
                          {"value": v}, name="broadcast, value")
        yield SampleInput(g(mk((), seed=7)), (g(mk((), seed=8)), g(mk((), seed=9, **den))), name="0-dim")
        yield SampleInput(g(mk((0,), seed=7)), (g(mk((0,), seed=8)), g(mk((0,), seed=9, **den))), name="empty")
        yield SampleInput(g(mk((3, 4), seed=10, noncontiguous=True)),
                          (g(mk((4, 3), seed=11).t()), g(mk((4, 8), seed=12, **den)[1:, ::2])),
                          {"value": v}, name="noncontiguous, transposed, sliced")
    return sample_inputs


def _addcdiv_errors(op, device):
    i = make_tensor((3,), device=device, dtype=ember.int64, seed=1, exclude_zero=True)
    yield ErrorInput(SampleInput(i, (i, i), name="integer division"), RuntimeError,
                     r"Integer division with addcdiv is no longer supported")


def _other_entries():
    ag = has_autograd
    return [
        OpInfo("pow", ref=errstate(_pow_ref), dtypes=NUMERIC + ("bool",), sample_inputs=_pow_samples,
               error_inputs=_pow_errors, supports_autograd=ag("pow"), supports_out=True, inplace=inplace_of("pow"),
               tolerances={"float16": (2e-3, 1e-3), "complex64": (1e-5, 1e-5)}),
        OpInfo("round", ref=errstate(_round_ref), dtypes=REAL, sample_inputs=_round_samples,
               supports_autograd=ag("round"), supports_out=True, inplace=inplace_of("round")),
        OpInfo("nan_to_num", ref=errstate(_nan_to_num_ref), dtypes=REAL_AND_BOOL, sample_inputs=_nan_to_num_samples,
               supports_autograd=ag("nan_to_num"), supports_out=True, inplace=inplace_of("nan_to_num")),
        OpInfo("clamp", ref=errstate(_clamp_ref), dtypes=REAL, sample_inputs=_clamp_samples,
               error_inputs=_clamp_errors, supports_autograd=ag("clamp"), supports_out=True,
               inplace=inplace_of("clamp")),
        OpInfo("where", op=ember.where, ref=_where_ref, dtypes=ALL_DTYPES, sample_inputs=_where_samples,
               error_inputs=_where_errors, supports_autograd=ag("where"), supports_out=True),
        OpInfo("lerp", ref=errstate(_lerp_ref), dtypes=FLOATING_AND_COMPLEX, sample_inputs=_lerp_samples,
               error_inputs=_lerp_errors, supports_autograd=ag("lerp"), supports_out=True,
               inplace=inplace_of("lerp"), tolerances={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 5e-2)}),
        OpInfo("addcmul", ref=errstate(_addc_ref(False)), dtypes=NUMERIC,   # PyTorch has no bool addcmul
               sample_inputs=_addc_samples(False),
               supports_autograd=ag("addcmul"), supports_out=True, inplace=inplace_of("addcmul"),
               tolerances={"float16": (2e-3, 2e-2), "bfloat16": (2e-2, 2e-1)}),
        OpInfo("addcdiv", ref=errstate(_addc_ref(True)), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=_addc_samples(True), error_inputs=_addcdiv_errors, supports_autograd=ag("addcdiv"),
               supports_out=True, inplace=inplace_of("addcdiv"),
               tolerances={"float16": (2e-3, 2e-2), "bfloat16": (2e-2, 2e-1)}),
    ]


op_db = _unary_entries() + _binary_entries() + _other_entries()
