"""Elementwise ops (core/ember/_ops/_elementwise.py + the ember-cpu kernels) against numpy /
scipy references: every op of the UNARY and BINARY tables over dtypes, PyTorch's result
dtypes, broadcasting, 0-dim, empty and non-contiguous inputs, Python scalars on either
side, reflected and in-place dunders, ``out=``, and PyTorch's errors (an in-place op that
fails writes nothing).

Expected errors and dtypes below were checked against PyTorch 2.13 (system python).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.special as sp

import ember
from ember._ops._elementwise import BINARY, UNARY

DTYPES = ["float32", "float64", "int32", "int64", "bool", "float16", "bfloat16"]
FLOATS = {"float32", "float64", "float16", "bfloat16"}
RNG = np.random.default_rng(0)


# ---------------------------------------------------------------- helpers
def _edt(name):
    return getattr(ember, name)


def make(values, dtype):
    """An ember tensor of ``dtype`` holding ``values`` (a numpy array; 0-dim gives a 0-dim tensor)."""
    values = np.asarray(values)
    if values.ndim == 0:
        return ember.full((), values.item(), dtype=_edt(dtype))
    return ember.tensor(values, dtype=_edt(dtype))


def host(t):
    """The values of ``t`` as a float64 / int64 / bool numpy array (bfloat16 widened)."""
    a = np.asarray(t.numpy())
    if t.dtype is ember.bfloat16 or t.dtype is ember.float16:
        return a.astype(np.float64)
    return a.copy()


def _tol(dtype):
    return {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (2e-5, 1e-6),
            "float64": (1e-12, 1e-13), "complex64": (2e-5, 1e-6), "complex128": (1e-12, 1e-13)}.get(dtype, (0, 0))


def check(actual, expected, dtype=None):
    """``actual`` (tensor) equals the float64 reference ``expected`` rounded to actual's dtype."""
    dtype = dtype or actual.dtype.name
    assert actual.dtype is _edt(dtype), (actual.dtype, dtype)
    expected = np.asarray(expected)
    assert tuple(actual.shape) == expected.shape, (tuple(actual.shape), expected.shape)
    got = host(actual)
    if dtype in ("bool",):
        np.testing.assert_array_equal(got, expected.astype(bool))
    elif dtype in ("int8", "uint8", "int16", "int32", "int64"):
        np.testing.assert_array_equal(got, expected.astype(np.dtype(dtype)))
    else:
        ref = expected.astype(_edt(dtype).numpy_dtype).astype(np.complex128 if "complex" in dtype else np.float64) \
            if expected.size else expected
        rtol, atol = _tol(dtype)
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)


def sample(dtype, shape=(3, 4), domain="any"):
    """Random values valid for ``domain``, exactly representable in ``dtype``."""
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    lo, hi = {"any": (-3, 3), "pos": (0.1, 4), "unit": (-0.9, 0.9), "ge1": (1.1, 4), "nonzero": (0.5, 3)}[domain]
    if dtype in FLOATS:
        v = RNG.uniform(lo, hi, shape)
        if domain == "nonzero":
            v *= RNG.choice([-1, 1], shape)
        return np.asarray(make(v, dtype).to(ember.float64).numpy())
    lo, hi = {"any": (-3, 4), "pos": (1, 5), "unit": (-1, 2), "ge1": (1, 5), "nonzero": (1, 4)}[domain]
    v = RNG.integers(lo, hi, shape)
    if domain == "nonzero":
        v *= RNG.choice([-1, 1], shape)
    return v


# ---------------------------------------------------------------- unary
def _frac(x):
    return x - np.trunc(x)


# name -> (numpy reference on float64 / int64 / bool input, input domain)
UNARY_REF = {
    "neg": (np.negative, "any"), "abs": (np.abs, "any"), "sign": (lambda x: np.nan_to_num(np.sign(x), nan=0.0, posinf=np.inf, neginf=-np.inf), "any"),  # sign(nan) = 0
    "sgn": (lambda x: np.nan_to_num(np.sign(x), nan=0.0, posinf=np.inf, neginf=-np.inf), "any"),
    "exp": (np.exp, "any"), "exp2": (np.exp2, "any"), "log": (np.log, "pos"), "log2": (np.log2, "pos"),
    "log10": (np.log10, "pos"), "log1p": (np.log1p, "pos"), "expm1": (np.expm1, "any"), "sqrt": (np.sqrt, "pos"),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "pos"), "square": (np.square, "any"), "sin": (np.sin, "any"),
    "cos": (np.cos, "any"), "tan": (np.tan, "unit"), "asin": (np.arcsin, "unit"), "acos": (np.arccos, "unit"),
    "atan": (np.arctan, "any"), "sinh": (np.sinh, "any"), "cosh": (np.cosh, "any"), "tanh": (np.tanh, "any"),
    "asinh": (np.arcsinh, "any"), "acosh": (np.arccosh, "ge1"), "atanh": (np.arctanh, "unit"),
    "sigmoid": (sp.expit, "any"), "erf": (sp.erf, "any"), "erfc": (sp.erfc, "any"), "erfinv": (sp.erfinv, "unit"),
    "floor": (np.floor, "any"), "ceil": (np.ceil, "any"), "trunc": (np.trunc, "any"), "frac": (_frac, "any"),
    "reciprocal": (np.reciprocal, "nonzero"), "isnan": (np.isnan, "any"), "isinf": (np.isinf, "any"),
    "isposinf": (np.isposinf, "any"), "isneginf": (np.isneginf, "any"), "isfinite": (np.isfinite, "any"),
    "signbit": (np.signbit, "any"), "logical_not": (np.logical_not, "any"),
    "bitwise_not": (lambda x: np.logical_not(x) if x.dtype == bool else np.invert(x), "any"),
    "positive": (lambda x: x, "any"),
}
_TO_FLOAT = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
             "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "erfinv",
             "reciprocal"}
_PREDICATES = {"isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit", "logical_not"}

# (op, input category) -> (exception, message) as PyTorch 2.13 raises them
_NI = NotImplementedError
UNARY_ERRORS = {
    ("neg", "bool"): (RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported"),
    ("abs", "bool"): (_NI, "\"abs\" not implemented for 'Bool'"),
    ("floor", "bool"): (_NI, "\"floor\" not implemented for 'Bool'"),
    ("ceil", "bool"): (_NI, "\"ceil\" not implemented for 'Bool'"),
    ("trunc", "bool"): (_NI, "\"trunc\" not implemented for 'Bool'"),
    ("frac", "bool"): (_NI, "\"frac\" not implemented for 'Bool'"),
    ("frac", "int32"): (_NI, "\"frac\" not implemented for 'Int'"),
    ("frac", "int64"): (_NI, "\"frac\" not implemented for 'Long'"),
    ("positive", "bool"): (RuntimeError, "The `\\+` operator, on a bool tensor is not supported."),
    ("bitwise_not", "float32"): (_NI, "\"bitwise_not\" not implemented for 'Float'"),
    ("bitwise_not", "float64"): (_NI, "\"bitwise_not\" not implemented for 'Double'"),
    ("bitwise_not", "float16"): (_NI, "\"bitwise_not\" not implemented for 'Half'"),
    ("bitwise_not", "bfloat16"): (_NI, "\"bitwise_not\" not implemented for 'BFloat16'"),
}


def test_unary_table_is_covered():
    assert {row[0] for row in UNARY} == set(UNARY_REF)


def _unary_out_dtype(name, dtype):
    if name in _PREDICATES:
        return "bool"
    if name in _TO_FLOAT and dtype not in FLOATS:
        return "float32"
    if name == "square" and dtype == "bool":
        return "int64"
    return dtype


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(UNARY_REF))
def test_unary(name, dtype):
    ref, domain = UNARY_REF[name]
    fn = getattr(ember, name)
    x_np = sample(dtype, (3, 4), domain)
    if dtype in FLOATS and domain == "any":
        x_np.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]   # special values
    x = make(x_np, dtype)
    err = UNARY_ERRORS.get((name, dtype))
    if err is not None:
        with pytest.raises(err[0], match=err[1]):
            fn(x)
        return
    out_dtype = _unary_out_dtype(name, dtype)
    with np.errstate(all="ignore"):
        if name == "square" and dtype == "bool":
            expected = x_np.astype(np.int64) ** 2
        elif name in ("sign", "sgn") and dtype == "bool":
            expected = x_np
        elif name == "abs" and dtype in ("int32", "int64"):
            expected = np.abs(x_np)
        else:
            expected = ref(x_np.astype(np.float64) if dtype in FLOATS or out_dtype in FLOATS else x_np)
    r = fn(x)
    check(r, expected, out_dtype)
    # method form
    check(getattr(x, name)(), expected, out_dtype)
    # in-place variant (where the result dtype fits)
    if hasattr(ember.Tensor, name + "_") and name not in _PREDICATES:
        y = make(x_np, dtype)
        if out_dtype == dtype:
            v = y._version
            assert getattr(y, name + "_")() is y
            check(y, expected, dtype)
            assert y._version == v + 1
        else:
            before = host(y)
            with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
                getattr(y, name + "_")()
            np.testing.assert_array_equal(host(y), before)


@pytest.mark.parametrize("name", ["sin", "exp", "abs", "neg", "floor", "isnan", "sigmoid", "sqrt"])
def test_unary_shapes_and_layouts(name):
    ref, domain = UNARY_REF[name]
    fn = getattr(ember, name)
    base_np = sample("float64", (4, 6), domain if domain != "any" else "pos")
    base = make(base_np, "float64")
    cases = [
        (base.t(), base_np.T),                                   # transposed
        (base[::2, 1::2] if _has_getitem() else base.narrow(1, 1, 3), None),
        (base.narrow(0, 1, 2).select(1, 3), base_np[1:3, 3]),  # sliced, strided
        (base.select(0, 0).narrow(0, 0, 1).expand(5, 1).squeeze(1), np.broadcast_to(base_np[0, :1], (5,))),
        (make(np.float64(0.7), "float64"), np.float64(0.7)),     # 0-dim
        (ember.empty(0, dtype=ember.float64), np.empty(0)),       # empty
        (ember.empty(2, 0, 3, dtype=ember.float64), np.empty((2, 0, 3))),
    ]
    for t, expected_in in cases:
        if expected_in is None:
            expected_in = host(t)
        assert np.shape(expected_in) == tuple(t.shape)
        r = fn(t)
        check(r, ref(np.asarray(expected_in, dtype=np.float64)), "bool" if name in _PREDICATES else "float64")
        assert r.is_contiguous()


def _has_getitem():
    try:
        ember.ones(2)[::2]
        return True
    except Exception:   # noqa: BLE001 - advanced indexing belongs to another module
        return False


def test_unary_inplace_on_non_contiguous_view_writes_through():
    base_np = sample("float32", (3, 4), "any")
    base = make(base_np, "float32")
    v = base.t()
    v.neg_()
    np.testing.assert_array_equal(host(base), -base_np.astype(np.float32))
    col = base.select(1, 2)
    col.abs_()
    expected = -base_np.astype(np.float32)
    expected[:, 2] = np.abs(expected[:, 2])
    np.testing.assert_array_equal(host(base), expected)
    assert base._version == 2 and v._version == 2


@pytest.mark.parametrize("name", ["exp", "sqrt", "neg", "isnan"])
def test_unary_out(name):
    x_np = sample("float32", (2, 3), "pos")
    x = make(x_np, "float32")
    ref = UNARY_REF[name][0]
    out_dtype = "bool" if name in _PREDICATES else "float32"
    o = ember.empty(2, 3, dtype=_edt(out_dtype))
    assert getattr(ember, name)(x, out=o) is o
    check(o, ref(x_np.astype(np.float64)), out_dtype)
    # an empty out is resized silently, a non-empty one of the wrong shape with a warning
    o = ember.empty(0, dtype=_edt(out_dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(ember, name)(x, out=o)
    assert tuple(o.shape) == (2, 3)
    o = ember.empty(5, dtype=_edt(out_dtype))
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        getattr(ember, name)(x, out=o)
    check(o, ref(x_np.astype(np.float64)), out_dtype)


def test_unary_out_dtype_refused():
    x = make(np.array([1.5, 2.5]), "float32")
    o = ember.zeros(2, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ember.exp(x, out=o)
    np.testing.assert_array_equal(host(o), [0, 0])
    # a wider out dtype of the same category is fine (computed, then cast)
    o = ember.zeros(2, dtype=ember.float64)
    ember.exp(x, out=o)
    check(o, np.exp(np.array([1.5, 2.5], np.float32)).astype(np.float64), "float64")


def test_unary_complex():
    z_np = np.array([1 + 2j, -0.5 + 0.25j, 0j], np.complex64)
    z = ember.tensor(z_np)
    check(ember.abs(z), np.abs(z_np), "float32")
    check(ember.exp(z), np.exp(z_np.astype(np.complex128)), "complex64")
    check(ember.sigmoid(z), 1 / (1 + np.exp(-z_np.astype(np.complex128))), "complex64")
    sgn = np.where(np.abs(z_np) == 0, 0, z_np / np.where(z_np == 0, 1, np.abs(z_np)))
    check(ember.sgn(z), sgn, "complex64")
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors."):
        z.abs_()
    np.testing.assert_array_equal(z.numpy(), z_np)
    with pytest.raises(NotImplementedError, match="Please use ember.sgn instead"):
        ember.sign(z)
    with pytest.raises(NotImplementedError, match="floor is not supported for complex inputs"):
        ember.floor(z)
    with pytest.raises(NotImplementedError, match="\"erf\" not implemented for 'ComplexFloat'"):
        ember.erf(z)
    with pytest.raises(RuntimeError, match="isposinf does not support complex inputs."):
        ember.isposinf(z)
    with pytest.raises(NotImplementedError, match="signbit is not implemented for complex tensors."):
        ember.signbit(z)


def test_unary_refuses_non_tensor():
    with pytest.raises(TypeError, match=r"exp\(\): argument 'input' \(position 1\) must be Tensor, not list"):
        ember.exp([1.0, 2.0])


def test_default_dtype_for_integers_is_not_stale_in_meta_caches():
    i = ember.tensor([4, 9])
    check(ember.sqrt(i), [2.0, 3.0], "float32")
    check(i / 2, [2.0, 4.5], "float32")
    check(i + 0.5, [4.5, 9.5], "float32")
    ember.set_default_dtype(ember.float64)
    check(ember.sqrt(i), [2.0, 3.0], "float64")
    check(i / 2, [2.0, 4.5], "float64")
    check(i + 0.5, [4.5, 9.5], "float64")
    ember.set_default_dtype(ember.float32)
    check(ember.sqrt(i), [2.0, 3.0], "float32")
    check(i / 2, [2.0, 4.5], "float32")


# ---------------------------------------------------------------- binary
def _trunc_div(a, b):
    return np.trunc(a / b)


BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "true_divide": np.true_divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod, "atan2": np.arctan2,
    "hypot": np.hypot, "copysign": np.copysign, "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax,
    "fmin": np.fmin, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
}
_B_FLOAT = {"true_divide", "atan2", "copysign"}           # integers compute in the default float
_B_BOOL_OUT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
_B_INTEGRAL = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}
_B_DIVISOR = {"true_divide", "floor_divide", "remainder", "fmod"}    # the second operand is kept nonzero
_TORCH_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                "int32": "Int", "int64": "Long", "bool": "Bool"}


def test_binary_table_is_covered():
    assert {row[0] for row in BINARY} == set(BINARY_REF)


def _binary_error(name, a_dtype, b_dtype):
    """(exception, message) PyTorch raises for ``name`` on these dtypes, or None."""
    cd = ember.promote_types(_edt(a_dtype), _edt(b_dtype)).name
    if name == "sub" and "bool" in (a_dtype, b_dtype):
        if a_dtype == b_dtype == "bool":
            return RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported"
        return RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not supported"
    if name in _B_INTEGRAL and cd in FLOATS:
        return _NI, f"\"{name}\" not implemented for '{_TORCH_NAMES[cd]}'"
    if name in ("floor_divide", "remainder", "fmod", "bitwise_left_shift", "bitwise_right_shift") and cd == "bool":
        return _NI, f"\"{name}\" not implemented for 'Bool'"
    if name == "hypot" and cd not in FLOATS:
        return _NI, f"\"hypot\" not implemented for '{_TORCH_NAMES[cd]}'"
    return None


def _binary_expected(name, a_np, b_np, a_dtype, b_dtype):
    cd = ember.promote_types(_edt(a_dtype), _edt(b_dtype)).name
    if name in _B_FLOAT and cd not in FLOATS:
        cd = "float32"
    out = "bool" if name in _B_BOOL_OUT else cd
    if cd in FLOATS:
        a, b = a_np.astype(np.float64), b_np.astype(np.float64)
        # low-precision inputs are rounded to the compute dtype first
        a = host(make(a, cd)) if a_dtype != cd else a
        b = host(make(b, cd)) if b_dtype != cd else b
    else:
        a, b = a_np.astype(np.dtype(cd)), b_np.astype(np.dtype(cd))
    with np.errstate(all="ignore"):
        return BINARY_REF[name](a, b), out


_PAIRS = [(d, d) for d in DTYPES] + [("int32", "float32"), ("bool", "int64"), ("float16", "float32"),
                                       ("int64", "float64"), ("bfloat16", "int32"), ("int32", "int64"),
                                       ("float32", "bool")]


@pytest.mark.parametrize("a_dtype, b_dtype", _PAIRS)
@pytest.mark.parametrize("name", list(BINARY_REF))
def test_binary(name, a_dtype, b_dtype):
    fn = getattr(ember, name)
    a_np = sample(a_dtype, (3, 4))
    b_np = sample(b_dtype, (3, 4), "nonzero" if name in _B_DIVISOR else "any")
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        b_np = np.abs(b_np)
    a, b = make(a_np, a_dtype), make(b_np, b_dtype)
    err = _binary_error(name, a_dtype, b_dtype)
    if err is not None:
        with pytest.raises(err[0], match=err[1]):
            fn(a, b)
        return
    expected, out_dtype = _binary_expected(name, a_np, b_np, a_dtype, b_dtype)
    check(fn(a, b), expected, out_dtype)
    check(getattr(a, name)(b), expected, out_dtype)
    # broadcasting: (3, 1) with (4,) -> (3, 4)
    a2, b2 = make(a_np[:, :1], a_dtype), make(b_np[0], b_dtype)
    e2, _ = _binary_expected(name, np.broadcast_to(a_np[:, :1], (3, 4)), np.broadcast_to(b_np[0], (3, 4)),
                             a_dtype, b_dtype)
    check(fn(a2, b2), e2, out_dtype)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "true_divide", "maximum", "lt", "atan2", "remainder"])
def test_binary_non_contiguous_zero_dim_and_empty(name):
    fn = getattr(ember, name)
    a_np = sample("float64", (4, 6), "nonzero")
    b_np = sample("float64", (6, 4), "nonzero")
    a, b = make(a_np, "float64"), make(b_np, "float64")
    out_dtype = "bool" if name in _B_BOOL_OUT else "float64"
    ref = BINARY_REF[name]
    check(fn(a, b.t()), ref(a_np, b_np.T), out_dtype)                           # transposed
    check(fn(a.narrow(1, 1, 3), b.t().narrow(1, 2, 3)), ref(a_np[:, 1:4], b_np.T[:, 2:5]), out_dtype)  # sliced
    e = a.select(1, 0).unsqueeze(1).expand(4, 6)                                    # stride-0
    check(fn(e, b.t()), ref(np.broadcast_to(a_np[:, :1], (4, 6)), b_np.T), out_dtype)
    s = make(np.float64(1.5), "float64")                                            # 0-dim
    check(fn(s, s), ref(np.float64(1.5), np.float64(1.5)), out_dtype)
    check(fn(a, s), ref(a_np, 1.5), out_dtype)
    check(fn(s, a), ref(1.5, a_np), out_dtype)
    z = ember.empty(0, 6, dtype=ember.float64)                                      # empty
    check(fn(z, a.select(0, 0)), np.empty((0, 6)), out_dtype)
    check(fn(ember.empty(4, 0, dtype=ember.float64), ember.empty(1, 0, dtype=ember.float64)), np.empty((4, 0)),
          out_dtype)


def test_binary_zero_dim_tensor_does_not_promote_dimensioned():
    a = make(np.array([1, 2, 3]), "int32")
    r = a + make(np.int64(5), "int64")
    check(r, [6, 7, 8], "int32")
    r = make(np.array([1, 2], np.float16), "float16") * make(np.float64(2.0), "float64")
    check(r, [2.0, 4.0], "float16")
    r = a * make(np.float64(0.5), "float64")       # a higher category wins
    check(r, [0.5, 1.0, 1.5], "float64")


# Python scalars on either side, through the dunders (reflected forms included)
_SCALAR_CASES = [
    ("+", lambda t, s: t + s, lambda a, s: a + s), ("r+", lambda t, s: s + t, lambda a, s: s + a),
    ("-", lambda t, s: t - s, lambda a, s: a - s), ("r-", lambda t, s: s - t, lambda a, s: s - a),
    ("*", lambda t, s: t * s, lambda a, s: a * s), ("r*", lambda t, s: s * t, lambda a, s: s * a),
    ("/", lambda t, s: t / s, lambda a, s: a / s), ("r/", lambda t, s: s / t, lambda a, s: s / a),
    ("//", lambda t, s: t // s, lambda a, s: np.floor_divide(a, s)),
    ("r//", lambda t, s: s // t, lambda a, s: np.floor_divide(s, a)),
    ("%", lambda t, s: t % s, lambda a, s: np.remainder(a, s)),
    ("r%", lambda t, s: s % t, lambda a, s: np.remainder(s, a)),
    ("**", lambda t, s: t ** s, lambda a, s: np.power(a, s)),
    ("r**", lambda t, s: s ** t, lambda a, s: np.power(s, a)),
    ("<", lambda t, s: t < s, lambda a, s: a < s), (">=", lambda t, s: t >= s, lambda a, s: a >= s),
    ("==", lambda t, s: t == s, lambda a, s: a == s), ("!=", lambda t, s: t != s, lambda a, s: a != s),
]


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "int32"])
@pytest.mark.parametrize("scalar", [2, 2.5])
@pytest.mark.parametrize("op", [c[0] for c in _SCALAR_CASES])
def test_binary_python_scalars(op, scalar, dtype):
    _, f, ref = next(c for c in _SCALAR_CASES if c[0] == op)
    a_np = np.abs(sample(dtype, (2, 3), "nonzero"))       # positive: safe as divisor and as base
    t = make(a_np, dtype)
    # PyTorch: the tensor's dtype wins unless the scalar has a higher category (int tensor, float scalar)
    cd = dtype if (isinstance(scalar, int) or dtype in FLOATS) else "float32"
    if op in ("/", "r/") and cd not in FLOATS:
        cd = "float32"
    out_dtype = "bool" if op in ("<", ">=", "==", "!=") else cd
    a = a_np.astype(np.float64) if cd in FLOATS else a_np.astype(np.dtype(cd))
    with np.errstate(all="ignore"):
        expected = ref(a, scalar)
    check(f(t, scalar), expected, out_dtype)


def test_binary_bool_tensor_with_scalars():
    b = make(np.array([True, False]), "bool")
    check(b + 1, [2, 1], "int64")
    check(b * 2.5, [2.5, 0.0], "float32")
    check(b & True, [True, False], "bool")
    check(b | False, [True, False], "bool")
    check(b ^ True, [False, True], "bool")
    check(~b, [False, True], "bool")
    check(b ** True, [True, False], "bool")
    check(b ** 2, [1, 0], "int64")
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        1 - b
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        b - True
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        b ** b


def test_binary_int_ops_and_shifts_dunders():
    a_np = np.array([[5, -7, 12], [0, 3, -1]], np.int64)
    b_np = np.array([1, 2, 3], np.int64)
    a, b = make(a_np, "int64"), make(b_np, "int64")
    check(a & b, a_np & b_np, "int64")
    check(a | b, a_np | b_np, "int64")
    check(a ^ b, a_np ^ b_np, "int64")
    check(a << b, a_np << b_np, "int64")
    check(a >> b, a_np >> b_np, "int64")       # arithmetic for signed
    check(~a, ~a_np, "int64")
    check(3 & a, 3 & a_np, "int64")
    check(-a, -a_np, "int64")
    check(abs(a), np.abs(a_np), "int64")
    assert (+a) is a
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // make(np.array([1, 0, 1]), "int64")


@pytest.mark.parametrize("op, ref", [
    ("__iadd__", np.add), ("__isub__", np.subtract), ("__imul__", np.multiply), ("__itruediv__", np.true_divide),
    ("__ifloordiv__", np.floor_divide), ("__imod__", np.remainder), ("__ipow__", np.power),
])
def test_inplace_dunders(op, ref):
    a_np = np.abs(sample("float64", (3, 4), "nonzero"))
    b_np = np.abs(sample("float64", (4,), "nonzero"))
    t = make(a_np, "float64")
    view = t.view(12)
    v0 = t._version
    r = getattr(t, op)(make(b_np, "float64"))
    assert r is t
    check(t, ref(a_np, b_np), "float64")
    assert t._version == v0 + 1 and view._version == t._version
    check(view, ref(a_np, b_np).reshape(12), "float64")
    # with a scalar
    t = make(a_np, "float64")
    getattr(t, op)(2)
    check(t, ref(a_np, 2), "float64")


def test_inplace_dunder_statement_keeps_identity():
    t = make(np.arange(4.0), "float32")
    ident = id(t)
    t += 1
    t *= 2
    t -= 1
    t /= 2
    assert id(t) == ident
    check(t, ((np.arange(4.0) + 1) * 2 - 1) / 2, "float32")
    i = make(np.array([1, 2, 3]), "int32")
    i <<= 1
    i |= 1
    i &= 6
    i ^= 1
    i >>= 1
    check(i, ((((np.array([1, 2, 3]) << 1) | 1) & 6) ^ 1) >> 1, "int32")


def test_inplace_refuses_wider_result_and_writes_nothing():
    t = make(np.array([1, 2, 3]), "int32")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        t.add_(0.5)
    np.testing.assert_array_equal(host(t), [1, 2, 3])
    assert t._version == 0
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        t += make(np.array([0.5, 0.5, 0.5]), "float32")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        make(np.array([1, 2]), "int64").true_divide_(2)
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        make(np.array([True]), "bool").add_(2)
    np.testing.assert_array_equal(host(t), [1, 2, 3])
    # the same category (or lower) is fine: float32 += float64 0-dim / int
    f = make(np.array([1.0, 2.0]), "float32")
    f.add_(make(np.float64(0.5), "float64"))
    f.mul_(2)
    check(f, [3.0, 5.0], "float32")
    i = make(np.array([1, 2]), "int32")
    i.add_(make(np.array([1, 1]), "int64"))      # int64 -> int32 is a same-category cast
    check(i, [2, 3], "int32")


def test_broadcast_mismatch_messages():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\) at "
                                           r"non-singleton dimension 1"):
        ember.ones(2, 3) + ember.ones(3, 2)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 0"):
        ember.mul(ember.ones(4), ember.ones(3))


def test_inplace_broadcast_incompatible_writes_nothing():
    a = make(np.arange(3.0), "float32")
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        a.add_(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 3\] doesn't match the broadcast shape "
                                           r"\[4, 2, 3\]"):
        ember.ones(2, 3).mul_(ember.ones(4, 2, 3))
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        a.sub_(ember.ones(4))
    np.testing.assert_array_equal(host(a), [0.0, 1.0, 2.0])
    assert a._version == 0
    # broadcasting the other operand into self is fine
    b = ember.zeros(2, 3)
    b.add_(make(np.array([1.0, 2.0, 3.0]), "float32"))
    check(b, np.broadcast_to([1.0, 2.0, 3.0], (2, 3)), "float32")


def test_binary_out():
    a_np, b_np = sample("float32", (2, 3)), sample("float32", (3,))
    a, b = make(a_np, "float32"), make(b_np, "float32")
    o = ember.empty(2, 3)
    assert ember.add(a, b, alpha=2, out=o) is o
    check(o, a_np + 2 * b_np, "float32")
    o = ember.empty(2, 3, dtype=ember.float64)          # a wider out dtype is allowed
    ember.mul(a, b, out=o)
    check(o, (a_np * b_np).astype(np.float32), "float64")
    o = ember.empty(2, 3, dtype=ember.bool)
    ember.lt(a, b, out=o)
    check(o, a_np < b_np, "bool")
    o = ember.zeros(2, 3, dtype=ember.int32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        ember.add(a, b, out=o)
    np.testing.assert_array_equal(host(o), np.zeros((2, 3)))
    # non-contiguous out
    big = ember.zeros(3, 2)
    ember.sub(a, b, out=big.t())
    check(big, (a_np - b_np).T, "float32")
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
        ember.add(a, b, out=[])


def test_add_sub_alpha():
    a_np, b_np = sample("float64", (3,)), sample("float64", (3,))
    a, b = make(a_np, "float64"), make(b_np, "float64")
    check(ember.add(a, b, alpha=3), a_np + 3 * b_np, "float64")
    check(ember.sub(a, b, alpha=0.5), a_np - 0.5 * b_np, "float64")
    check(a.add(2, alpha=2), a_np + 4, "float64")
    i = make(np.array([1, 2]), "int64")
    check(ember.add(i, i, alpha=3), [4, 8], "int64")
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating point"):
        ember.add(i, i, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results."):
        ember.add(make(np.array([True]), "bool"), make(np.array([True]), "bool"), alpha=2)
    check(ember.rsub(a, b), b_np - a_np, "float64")
    check(ember.rsub(a, 5, alpha=2), 5 - 2 * a_np, "float64")


def test_binary_type_errors():
    with pytest.raises(TypeError, match=r"add\(\): argument 'other' \(position 2\) must be Tensor or Number, not "
                                        r"str"):
        ember.add(ember.ones(2), "x")
    with pytest.raises(TypeError, match=r"mul\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        ember.mul(2, 3)


def test_binary_complex_refusals():
    z = ember.tensor([1 + 1j, 2 - 1j])
    check(z * z, np.array([1 + 1j, 2 - 1j]) ** 2, "complex64")
    check(z == z, [True, True], "bool")
    with pytest.raises(NotImplementedError, match="\"lt\" not implemented for 'ComplexFloat'"):
        z < z
    with pytest.raises(RuntimeError, match="maximum not implemented for complex tensors."):
        ember.maximum(z, z)
    with pytest.raises(NotImplementedError, match="\"remainder\" not implemented for 'ComplexFloat'"):
        z % 2
    with pytest.raises(NotImplementedError, match="\"atan2\" not implemented for 'ComplexFloat'"):
        ember.atan2(z, z)


def test_nan_semantics_of_min_max():
    a = make(np.array([1.0, np.nan, 3.0, np.nan]), "float32")
    b = make(np.array([np.nan, 2.0, 1.0, np.nan]), "float32")
    a_np, b_np = host(a), host(b)
    check(ember.maximum(a, b), np.maximum(a_np, b_np), "float32")
    check(ember.minimum(a, b), np.minimum(a_np, b_np), "float32")
    check(ember.fmax(a, b), np.fmax(a_np, b_np), "float32")
    check(ember.fmin(a, b), np.fmin(a_np, b_np), "float32")


# ---------------------------------------------------------------- div, pow, round, nan_to_num
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16"])
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_rounding_modes(dtype, mode):
    a_np = sample(dtype, (3, 4), "any")
    b_np = sample(dtype, (3, 4), "nonzero")
    a, b = make(a_np, dtype), make(b_np, dtype)
    af, bf = a_np.astype(np.float64), b_np.astype(np.float64)
    if mode is None:
        expected, out = af / bf, (dtype if dtype in FLOATS else "float32")
    elif mode == "trunc":
        expected, out = np.trunc(af / bf), dtype
    else:
        expected, out = np.floor_divide(af, bf), dtype
    if dtype == "float16" and mode is not None:
        # float16 computes the quotient in float32 before rounding it
        q = a_np.astype(np.float32) / b_np.astype(np.float32)
        expected = np.trunc(q) if mode == "trunc" else np.floor(q)
    check(ember.div(a, b, rounding_mode=mode), expected, out)
    check(a.div(b, rounding_mode=mode), expected, out)
    check(ember.divide(a, b, rounding_mode=mode), expected, out)
    if out == dtype:
        c = make(a_np, dtype)
        assert c.div_(b, rounding_mode=mode) is c
        check(c, expected, dtype)


def test_div_trunc_of_negative_integers_rounds_toward_zero():
    a = make(np.array([-7, 7, -7, 7, -6]), "int64")
    b = make(np.array([2, -2, -2, 2, 4]), "int64")
    check(ember.div(a, b, rounding_mode="trunc"), [-3, -3, 3, 3, -1], "int64")
    check(ember.div(a, b, rounding_mode="floor"), [-4, -4, 3, 3, -2], "int64")
    check(a // b, [-4, -4, 3, 3, -2], "int64")
    check(a % b, np.remainder([-7, 7, -7, 7, -6], [2, -2, -2, 2, 4]), "int64")
    check(ember.fmod(a, b), np.fmod([-7, 7, -7, 7, -6], [2, -2, -2, 2, 4]), "int64")


def test_div_errors():
    with pytest.raises(ValueError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                                         "found 'round'"):
        ember.div(ember.ones(2), 2, rounding_mode="round")
    b = make(np.array([True]), "bool")
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        ember.div(b, b, rounding_mode="trunc")
    check(ember.div(b, b), [1.0], "float32")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_pow_floats(dtype):
    a_np = np.abs(sample(dtype, (2, 3), "pos"))
    e_np = sample(dtype, (2, 3), "any")
    a, e = make(a_np, dtype), make(e_np, dtype)
    check(ember.pow(a, e), np.power(a_np, e_np), dtype)
    check(a ** e, np.power(a_np, e_np), dtype)
    check(a.pow(2), a_np ** 2, dtype)
    check(ember.pow(a, 0.5), np.sqrt(a_np), dtype)
    check(ember.pow(2, e), np.power(2.0, e_np), dtype)
    c = make(a_np, dtype)
    c.pow_(3)
    check(c, a_np ** 3, dtype)


def test_pow_integers():
    a = make(np.array([2, 3, -2, 1, -1, 0]), "int64")
    check(a ** 2, np.array([2, 3, -2, 1, -1, 0]) ** 2, "int64")
    check(a ** make(np.array([0, 1, 3, 5, 2, 4]), "int32"), np.array([1, 3, -8, 1, 1, 0]), "int64")
    check(a ** 2.0, np.array([4.0, 9.0, 4.0, 1.0, 1.0, 0.0]), "float32")
    check(2 ** make(np.array([0, 1, 10]), "int32"), [1, 2, 1024], "int32")
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        a ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        a.pow_(-2)
    # a negative exponent tensor follows PyTorch: 1 ** n = 1, (-1) ** n = +-1, else 0
    b = make(np.array([2, 3, 1, -1, -1]), "int64")
    check(b ** make(np.array([-1, 2, -3, -3, -2]), "int64"), [0, 9, 1, -1, 1], "int64")


def test_float_power():
    a = make(np.array([1.5, 2.0]), "float32")
    check(ember.float_power(a, 2), np.array([2.25, 4.0]), "float64")
    check(ember.float_power(make(np.array([2, 3]), "int32"), make(np.array([1, 2]), "int32")), [2.0, 9.0], "float64")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round(dtype, decimals):
    x_np = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.25, 12.345, -123.456, 0.0])
    x = make(x_np, dtype)
    xr = host(x)
    if dtype in ("float16", "bfloat16"):
        expected = np.round(xr.astype(np.float32), decimals)
    else:
        expected = np.round(xr.astype(np.dtype(dtype)), decimals)
    check(ember.round(x, decimals=decimals), expected, dtype)
    check(x.round(decimals=decimals), expected, dtype)
    y = make(x_np, dtype)
    y.round_(decimals=decimals)
    check(y, expected, dtype)
    # integers are returned unchanged
    i = make(np.array([1, -2, 3]), "int64")
    check(ember.round(i), [1, -2, 3], "int64")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_nan_to_num(dtype):
    x_np = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0])
    x = make(x_np, dtype)
    big = ember.finfo(_edt(dtype)).max
    check(ember.nan_to_num(x), [0.0, big, -big, 1.5, -2.0], dtype)
    check(x.nan_to_num(nan=7.0, posinf=100.0, neginf=-100.0), [7.0, 100.0, -100.0, 1.5, -2.0], dtype)
    x.nan_to_num_(nan=1.0)
    check(x, [1.0, big, -big, 1.5, -2.0], dtype)
    i = make(np.array([1, 2]), "int32")
    check(ember.nan_to_num(i), [1, 2], "int32")


# ---------------------------------------------------------------- where, clamp, lerp, addcmul, addcdiv
def test_where():
    c_np = np.array([[True, False, True], [False, True, False]])
    a_np, b_np = sample("float32", (2, 3)), sample("float32", (3,))
    c, a, b = make(c_np, "bool"), make(a_np, "float32"), make(b_np, "float32")
    check(ember.where(c, a, b), np.where(c_np, a_np, b_np), "float32")
    check(a.where(c, b), np.where(c_np, a_np, b_np), "float32")
    check(ember.where(c, a, 0.0), np.where(c_np, a_np, 0.0), "float32")
    check(ember.where(c, 1, 0), np.where(c_np, 1, 0), "int64")
    check(ember.where(c, make(np.array([1, 2, 3]), "int32"), 2.5), np.where(c_np, [1, 2, 3], 2.5), "float32")
    check(ember.where(c, a.double(), b), np.where(c_np, a_np.astype(np.float64), b_np), "float64")
    check(ember.where(c.t().t(), a, b.unsqueeze(0).expand(2, 3)), np.where(c_np, a_np, b_np), "float32")
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor with "
                                           "dtype Float"):
        ember.where(a, a, b)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        ember.where(c, a, ember.ones(4))


def test_clamp():
    x_np = np.array([[-3.0, -1.0, 0.0], [1.0, 2.5, np.nan]])
    x = make(x_np, "float32")
    check(ember.clamp(x, -1.5, 2.0), np.clip(x_np, -1.5, 2.0), "float32")
    check(ember.clamp(x, min=0.0), np.maximum(x_np, 0.0), "float32")
    check(x.clamp(max=0.5), np.minimum(x_np, 0.5), "float32")
    check(ember.clip(x, -1, 1), np.clip(x_np, -1, 1), "float32")
    check(ember.clamp_min(x, 1.0), np.maximum(x_np, 1.0), "float32")
    check(ember.clamp_max(x, 1.0), np.minimum(x_np, 1.0), "float32")
    lo, hi = make(np.array([-2.0, 0.5, -1.0]), "float32"), make(np.array([0.0, 1.0, 2.0]), "float32")
    check(ember.clamp(x, lo, hi), np.minimum(np.maximum(x_np, host(lo)), host(hi)), "float32")
    check(ember.clamp(x, min=lo), np.maximum(x_np, host(lo)), "float32")
    # min > max: every element is max, as PyTorch
    check(ember.clamp(x.narrow(1, 0, 2), min=2.0, max=1.0), np.full((2, 2), 1.0), "float32")
    # an int tensor with a float bound promotes
    i = make(np.array([1, 5, 9]), "int64")
    check(ember.clamp(i, min=2.5), [2.5, 5.0, 9.0], "float32")
    check(ember.clamp(i, 2, 6), [2, 5, 6], "int64")
    y = make(x_np, "float32")
    assert y.clamp_(-1.0, 1.0) is y
    check(y, np.clip(x_np, -1.0, 1.0), "float32")
    with pytest.raises(RuntimeError, match="clamp: At least one of 'min' or 'max' must not be None"):
        ember.clamp(x)
    j = make(np.array([1, 5]), "int64")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        j.clamp_(min=2.5)
    np.testing.assert_array_equal(host(j), [1, 5])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_lerp(dtype):
    s_np, e_np = sample(dtype, (2, 3)), sample(dtype, (2, 3))
    s, e = make(s_np, dtype), make(e_np, dtype)
    w_np = np.asarray(host(make(np.array([0.0, 0.25, 0.75]), dtype)))
    w = make(w_np, dtype)
    check(ember.lerp(s, e, 0.3), s_np + 0.3 * (e_np - s_np), dtype)
    check(ember.lerp(s, e, w), s_np + w_np * (e_np - s_np), dtype)
    check(s.lerp(e, 1.0), e_np, dtype)
    c = make(s_np, dtype)
    c.lerp_(e, 0.5)
    check(c, s_np + 0.5 * (e_np - s_np), dtype)


def test_lerp_errors():
    a = ember.ones(2)
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        ember.lerp(a, ember.zeros(2, dtype=ember.float64), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype double"):
        ember.lerp(a, ember.zeros(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(NotImplementedError, match="\"lerp\" not implemented for 'Int'"):
        ember.lerp(ember.ones(2, dtype=ember.int32), ember.zeros(2, dtype=ember.int32), 0.5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_addcmul_addcdiv(dtype):
    s_np, a_np = sample(dtype, (2, 3)), sample(dtype, (2, 3))
    b_np = sample(dtype, (3,), "nonzero")
    s, a, b = make(s_np, dtype), make(a_np, dtype), make(b_np, dtype)
    check(ember.addcmul(s, a, b), s_np + a_np * b_np, dtype)
    check(ember.addcmul(s, a, b, value=2), s_np + 2 * a_np * b_np, dtype)
    c = make(s_np, dtype)
    c.addcmul_(a, b, value=3)
    check(c, s_np + 3 * a_np * b_np, dtype)
    if dtype == "int64":
        with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
            ember.addcdiv(s, a, b)
        return
    check(ember.addcdiv(s, a, b, value=0.5), s_np + 0.5 * a_np / b_np, dtype)
    c = make(s_np, dtype)
    c.addcdiv_(a, b)
    check(c, s_np + a_np / b_np, dtype)


# ---------------------------------------------------------------- misc
def test_aliases():
    a, b = make(np.array([1.0, 4.0]), "float32"), make(np.array([2.0, 2.0]), "float32")
    assert ember.multiply is ember.mul and ember.subtract is ember.sub
    check(ember.greater(a, b), [False, True], "bool")
    check(ember.less_equal(a, b), [True, False], "bool")
    check(ember.absolute(-a), [1.0, 4.0], "float32")
    check(ember.arctan2(a, b), np.arctan2([1.0, 4.0], [2.0, 2.0]), "float32")
    check(a.negative(), [-1.0, -4.0], "float32")


def test_comparisons_return_tensors_and_hash_by_identity():
    a = ember.ones(2)
    assert isinstance(a == a, ember.Tensor)
    assert len({a, a}) == 1
    assert hash(a) == id(a)


def test_bool_of_comparison():
    assert bool(ember.tensor(2.0) > 1)
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(ember.ones(2) > 0)


def test_integer_division_by_python_zero_float():
    r = make(np.array([1, -1, 0]), "int32") / 0
    v = host(r)
    assert r.dtype is ember.float32 and v[0] == math.inf and v[1] == -math.inf and math.isnan(v[2])
