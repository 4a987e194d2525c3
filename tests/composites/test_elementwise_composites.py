"""The composites of the non-primitive elementwise ops (core/ember/_ops/_elementwise_composites.py)
and of isclose, checked against the native cpu kernels.

Each composite runs inside ``primitives_only()``: every op outside the primitive set loses
its cpu kernels for the duration, so a composite that reaches a non-primitive op without a
composite fails (NotImplementedError), and one that recurses into itself fails
(RecursionError). Results are compared with the native cpu result: exactly for integers and
bool, within DEFAULT_TOLERANCES for floating dtypes, NaN matching NaN, and the sign of zero
results matching where the native result is a zero.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import ember
from ember import _dispatch
from ember._ops import _elementwise_composites as C
from ember.testing._opinfo import DEFAULT_TOLERANCES

ops = _dispatch.ops

#: the whole primitive set (elementwise, reductions, linalg, indexing, random, runtime)
PRIMITIVES = C.PRIMITIVES | {"sum", "amax", "bmm", "gather", "scatter_add", "uniform"}

#: the ops of _elementwise / _compare / _copy that are not primitives: every one needs a composite
def _module_ops():
    from ember._ops import _elementwise, _compare, _copy
    names = set()
    for m in (_elementwise, _compare, _copy):
        names |= {v._op.name for v in vars(m).values() if hasattr(v, "_op")}
    return names


COVERED = sorted(_module_ops() - PRIMITIVES)


@contextlib.contextmanager
def primitives_only():
    """Every op outside the primitive set runs as its composite (its kernels are hidden)."""
    saved = {}
    for name, op in ops.items():
        if name not in PRIMITIVES and op.kernels:
            saved[name] = op.kernels
            op.kernels = {}
    _dispatch.invalidate_caches()
    try:
        yield
    finally:
        for name, k in saved.items():
            ops[name].kernels = k
        _dispatch.invalidate_caches()


def test_every_non_primitive_op_has_a_composite():
    missing = [n for n in COVERED if ops[n].composite is None]
    assert not missing, f"ops without a composite: {missing}"
    assert len(COVERED) >= 55


# ---------------------------------------------------------------- inputs
INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = ["bool"] + INTS + FLOATS + COMPLEX

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, 0.49999997, -0.7, 0.3, 1e-6, -1e-6,
           2.0 ** -20, 7.25, -7.75, 20.0, -20.0, 100.0, -100.0, 1e4, math.inf, -math.inf, math.nan]
UNIT = [0.0, -0.0, 0.25, -0.25, 0.5, -0.5, 0.9, -0.9, 0.999, -0.999, 1.0, -1.0, 1.5, -1.5, 1e-5, -1e-5, math.nan,
        math.inf, -math.inf]


def _np_dtype(name):
    return getattr(ember, name).numpy_dtype


def _rng(seed=0):
    return np.random.default_rng(seed)


def make(values, dtype, shape=None):
    """An ember cpu tensor of ``dtype`` from floats / ints (complex: values + i * shuffled values)."""
    nd = _np_dtype(dtype)
    v = np.asarray(values, dtype=np.float64)
    if dtype == "bool":
        a = v != 0
    elif dtype in INTS:
        info = np.iinfo(nd)
        a = np.clip(np.nan_to_num(v, posinf=info.max, neginf=info.min), info.min, info.max).astype(np.int64)
        a = a.astype(nd)
    elif dtype in COMPLEX:
        im = _rng(len(v)).permutation(v)
        im = np.clip(np.where(np.isfinite(im), im, 0.5), -20, 20)
        re = np.clip(np.where(np.isfinite(v), v, 2.0), -20, 20)   # complex parts finite, no overflow
        a = (re + 1j * im).astype(nd)
    else:
        a = v.astype(nd)
    if shape is not None:
        a = a.reshape(shape)
    return ember.tensor(a)


def int_values(dtype, n=24, seed=1):
    info = np.iinfo(_np_dtype(dtype))
    lo, hi = max(int(info.min), -300), min(int(info.max), 300)
    edge = [0, 1, 2, 3, 7, int(info.max), int(info.min)] + ([-1, -2, -7] if info.min < 0 else [])
    return edge + list(_rng(seed).integers(lo, hi, n - len(edge) if n > len(edge) else 1))


def unary_values(dtype, domain=None):
    if dtype == "bool":
        return [0, 1, 1, 0]
    if dtype in INTS:
        return int_values(dtype)
    base = UNIT if domain == "unit" else SPECIAL
    if domain == "acosh":
        base = [1.0, 1.0001, 1.5, 2.0, 10.0, 1e5, 1e10, 0.5, -1.0, -3.0, math.inf, math.nan]
    rnd = list(_rng(3).uniform(-4, 4, 16))
    if domain == "unit":
        rnd = [x / 4 for x in rnd]
    return base + rnd


def layouts(values, dtype):
    """The tensor in three layouts: 1-d, a transposed 2-d view, and a strided slice."""
    n = len(values)
    t = make(values, dtype)
    yield "contiguous", t
    k = n - n % 2
    if k >= 4:
        yield "transposed", make(values[:k], dtype, (2, k // 2)).t()
    yield "sliced", t[::2]


# ---------------------------------------------------------------- comparison
def to_np(t):
    a = t.numpy() if hasattr(t, "numpy") else t._host()
    return np.asarray(a)


#: ops whose native zero sign follows numpy's loop choice (size / dtype dependent for ties of -0.0 and 0.0)
ZERO_SIGN_FREE = ("maximum", "minimum", "fmax", "fmin", "clamp")


def assert_same(native, comp, dtype_name, what):
    a, b = to_np(native), to_np(comp)
    assert a.shape == b.shape, f"{what}: shape {b.shape} != native {a.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {b.dtype} != native {a.dtype}"
    if a.dtype.kind in "biu":
        bad = a != b
        assert not bad.any(), f"{what}: composite {b[bad][:5]} != native {a[bad][:5]}"
        return
    rtol, atol = DEFAULT_TOLERANCES[str(a.dtype)]       # the result's dtype decides
    a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    b64 = b.astype(a64.dtype)
    ok = np.isclose(b64, a64, rtol=rtol, atol=atol, equal_nan=True)
    if a.dtype.kind == "f":   # infinities and zeros: same sign
        ok &= ~(np.isinf(a64) & (a64 != b64))
        ok &= what.startswith(ZERO_SIGN_FREE) | ~((a64 == 0) & (b64 == 0) & (np.signbit(a64) != np.signbit(b64)))
    assert ok.all(), f"{what}: composite {b64[~ok][:6]} != native {a64[~ok][:6]} (inputs at {np.argwhere(~ok)[:6].tolist()})"


def run_composite(name, *args, **kwargs):
    """opdef.composite(...) with ``out`` allocated from the meta, as the generated entry point does."""
    opdef = ops[name]
    with primitives_only():
        if opdef.structured:
            device, key, shape, dtype = opdef.meta(*args, **kwargs)
            out = ember.empty(shape, dtype=dtype, device=device)
            r = opdef.composite(*args, **kwargs, out=out)
            assert r is out
            return out
        return opdef.composite(*args, **kwargs)


def check(name, fn, *args, dtype_name, what, **kwargs):
    """Native result of ``fn(*args)`` vs the composite of op ``name``; False when the native refuses."""
    try:
        with np.errstate(all="ignore"):
            native = fn(*args, **kwargs)
    except (RuntimeError, TypeError, NotImplementedError, ValueError):
        with pytest.raises((RuntimeError, TypeError, NotImplementedError, ValueError)):
            run_composite(name, *args, **kwargs)
        return False
    comp = run_composite(name, *args, **kwargs)
    assert_same(native, comp, dtype_name, f"{name}[{what}]")
    return True


# ---------------------------------------------------------------- unary
UNARY = ["neg", "positive", "sign", "sgn", "square", "reciprocal", "rsqrt", "exp2", "log2", "log10", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "asinh", "acosh", "atanh", "ceil", "trunc", "frac",
         "isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit", "logical_not", "bitwise_not"]
DOMAIN = {"asin": "unit", "acos": "unit", "atanh": "unit", "acosh": "acosh"}


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    fn = getattr(ember, name)
    ran = 0
    for dt in ALL:
        for lay, x in layouts(unary_values(dt, DOMAIN.get(name)), dt):
            ran += check(name, fn, x, dtype_name=dt, what=f"{dt}, {lay}")
    x0 = make([-2.5], "float32", ())                      # 0-dim
    check(name, fn, x0, dtype_name="float32", what="0-dim")
    assert ran >= 3


def test_round():
    for dt in ALL:
        for lay, x in layouts(unary_values(dt), dt):
            for decimals in (0, 1, 2, -1):
                check("round", ember.round, x, dtype_name=dt, what=f"{dt}, {lay}, decimals={decimals}",
                      decimals=decimals)


def test_nan_to_num():
    for dt in ALL:
        for lay, x in layouts(unary_values(dt), dt):
            check("nan_to_num", ember.nan_to_num, x, dtype_name=dt, what=f"{dt}, {lay}")
            check("nan_to_num", ember.nan_to_num, x, 1.5, 7.0, -8.0, dtype_name=dt, what=f"{dt}, {lay}, values")


def test_large_arguments_do_not_overflow_early():
    for dt in ("float32", "float64"):
        big = [80.0, 88.5, 89.0, 300.0, 700.0, 709.5, 710.0, 1e20, 1e30, 3e38, -89.0, -710.0]
        x = make(big, dt)
        for name in ("sinh", "cosh", "tanh", "sigmoid", "asinh", "acosh", "exp2"):
            check(name, getattr(ember, name), x, dtype_name=dt, what=f"{dt}, large")


# ---------------------------------------------------------------- binary
BINARY = ["sub", "floor_divide", "remainder", "hypot", "copysign", "maximum", "minimum", "fmax", "fmin", "ne", "gt",
          "le", "ge", "logical_and", "logical_or", "logical_xor"]


def binary_pairs(dt, name):
    """(description, a, b) pairs: same shape, broadcasting, non-contiguous, Python scalars."""
    if dt == "bool":
        av, bv = [0, 1, 1, 0, 1, 0] * 4, [1, 1, 0, 0, 0, 1, 1, 0] * 3
    elif dt in INTS:
        av = int_values(dt, 24, seed=5)
        bv = int_values(dt, 24, seed=6)[::-1]
        if name in ("floor_divide", "remainder"):
            bv = [v if v != 0 else 3 for v in bv]
    else:
        av = [0.0, -0.0, 1.0, -1.0, 5.5, -5.5, 3.0, -3.0, 0.5, math.inf, -math.inf, math.nan, 7.0, -7.0, 2.0, 0.0,
              math.inf, 1e-3, 4.0, -0.0, math.nan, 1.0, -2.0, 6.0]
        bv = [0.0, 0.0, -0.0, 2.0, 2.0, 2.0, -2.0, -2.0, math.inf, 3.0, -math.inf, 1.0, math.nan, 0.7, -0.0, -0.0,
              math.inf, -4.0, 4.0, 0.0, math.nan, -1.0, 0.0, -1.5]
    a, b = make(av, dt), make(bv, dt)
    yield "same shape", a, b
    yield "broadcast", make(av[:6], dt, (6, 1)), make(bv[:4], dt, (1, 4))
    yield "transposed", make(av, dt, (4, 6)).t(), make(bv, dt, (6, 4))
    yield "sliced", a[::2], b[1::2]
    if dt != "bool":
        yield "scalar int", a, 3
        yield "scalar int first", 5, b if name not in ("floor_divide", "remainder") or dt not in INTS else a
        if dt not in INTS:
            yield "scalar float", a, -2.5
    else:
        yield "scalar bool", a, True


@pytest.mark.parametrize("name", BINARY)
def test_binary(name):
    fn = getattr(ember, name)
    ran = 0
    for dt in ALL:
        for what, a, b in binary_pairs(dt, name):
            if not isinstance(a, ember.Tensor) and name in ("hypot", "copysign", "logical_and", "logical_or",
                                                             "logical_xor", "fmax", "fmin", "maximum", "minimum"):
                continue
            ran += check(name, fn, a, b, dtype_name=dt, what=f"{dt}, {what}")
    assert ran >= 3


def test_binary_mixed_dtypes():
    a = make([1, -2, 3, 7, -9, 0], "int32")
    b = make([0.5, -1.5, 2.0, -0.0, 3.25, math.nan], "float32")
    c = make([2, 3, 4, 5, 6, 7], "uint8")
    for name in BINARY:
        fn = getattr(ember, name)
        check(name, fn, a, b, dtype_name="float32", what="int32, float32")
        check(name, fn, c, a, dtype_name="int32", what="uint8, int32")


def test_sub_alpha_and_wraparound():
    for dt in INTS + FLOATS + COMPLEX:
        a, b = make(int_values("int8", 12, 2), dt), make(int_values("int8", 12, 3), dt)
        for alpha in (1, 2, -3):
            check("sub", ember.sub, a, b, alpha=alpha, dtype_name=dt, what=f"{dt}, alpha={alpha}")
    check("sub", ember.sub, make([1.0, 2.0], "float64"), make([3.0, 5.0], "float64"), alpha=0.1,
          dtype_name="float64", what="float alpha")


def test_integer_division_by_zero_raises():
    a, b = make([1, 2, 3], "int32"), make([1, 0, 2], "int32")
    for name in ("floor_divide", "remainder"):
        with pytest.raises(RuntimeError):
            getattr(ember, name)(a, b)
        with pytest.raises(RuntimeError):
            run_composite(name, a, b)


def test_out_dtype_wider_and_inplace():
    a = make([1.5, -2.5, 3.0, math.nan], "float32")
    out = ember.empty((4,), dtype=ember.float64)
    with primitives_only():
        ops["maximum"].composite(a, make([0.0, 0.0, 5.0, 1.0], "float32"), out=out)
    np.testing.assert_array_equal(to_np(out), [1.5, 0.0, 5.0, np.nan])
    x = make([0.5, -1.0, 2.0], "float32")
    ref = to_np(ember.tanh(x))
    with primitives_only():
        ops["tanh"].composite(x, out=x)                 # out aliases the input, as x.tanh_()
    np.testing.assert_allclose(to_np(x), ref, rtol=1e-6)


# ---------------------------------------------------------------- ternary and friends
def test_clamp():
    for dt in INTS + FLOATS + ["bool"]:
        x = make(unary_values(dt), dt)
        n = x.shape[0]
        for lo, hi in ((-1, 2), (None, 3), (0, None), (2, -1)):
            check("clamp", ember.clamp, x, lo, hi, dtype_name=dt, what=f"{dt}, scalars {lo}, {hi}")
        if dt != "bool":
            lo_t = make(list(_rng(7).uniform(-5, 0, n)), dt)
            hi_t = make(list(_rng(8).uniform(0, 5, n)), dt)
            check("clamp", ember.clamp, x, lo_t, hi_t, dtype_name=dt, what=f"{dt}, tensors")
    x = make([1.0, -3.0, math.nan, 5.0], "float32")
    check("clamp", ember.clamp, x, make([0.0, math.nan, 0.0, 0.0], "float32"), None, dtype_name="float32",
          what="NaN bound")
    check("clamp", ember.clamp, x, math.nan, None, dtype_name="float32", what="NaN scalar bound")
    check("clamp", ember.clamp, make([1, 5, -3], "int32"), 0.5, 2.5, dtype_name="float32", what="int, float bounds")


def test_lerp():
    for dt in FLOATS + COMPLEX:
        a = make(list(_rng(1).uniform(-3, 3, 12)), dt)
        b = make(list(_rng(2).uniform(-3, 3, 12)), dt)
        for w in (0.0, 0.25, 0.5, 1.0, -0.7, 2.0):
            check("lerp", ember.lerp, a, b, w, dtype_name=dt, what=f"{dt}, w={w}")
        wt = make(list(_rng(4).uniform(-1, 2, 12)), dt)
        check("lerp", ember.lerp, a, b, wt, dtype_name=dt, what=f"{dt}, tensor weight")
        check("lerp", ember.lerp, make([1.0, 2.0, 3.0], dt, (3, 1)), make([5.0, -1.0], dt, (1, 2)), 0.3,
              dtype_name=dt, what=f"{dt}, broadcast")


def test_addcmul_addcdiv():
    for dt in ["bool"] + INTS + FLOATS + COMPLEX:
        s = make(unary_values(dt)[:12], dt)
        t1 = make(unary_values(dt)[12:24], dt)
        t2 = make(unary_values(dt)[6:18], dt)
        for value in (1, 2, -0.5) if dt not in INTS + ["bool"] else (1, 3):
            check("addcmul", ember.addcmul, s, t1, t2, value=value, dtype_name=dt, what=f"{dt}, value={value}")
            check("addcdiv", ember.addcdiv, s, t1, t2, value=value, dtype_name=dt, what=f"{dt}, value={value}")
    check("addcmul", ember.addcmul, make([1.0, 2.0], "float32", (2, 1)), make([3.0, 4.0, 5.0], "float32"),
          make([2.0], "float32"), dtype_name="float32", what="broadcast")


def _isclose_ref(a, b, rtol, atol, equal_nan):
    return ember.tensor(np.isclose(to_np(a), to_np(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


def test_isclose():
    for dt in ["bool"] + INTS + FLOATS + COMPLEX:
        vals = unary_values(dt)
        a, b = make(vals[:4], dt), make(vals[-4:], dt)
        if dt in FLOATS + COMPLEX:
            b = make([v + 1e-3 * (i % 3) if i % 2 else v for i, v in enumerate(vals[:4])], dt)
        for rtol, atol, en in ((1e-5, 1e-8, False), (0.1, 0.5, True), (0, 0, False), (1e-2, 0, True)):
            if dt in ("float16", "bfloat16") or dt in INTS[:4]:
                continue        # numpy widens these before comparing (ember compares in the input dtype)
            ref = ember.tensor(np.isclose(to_np(a), to_np(b), rtol=rtol, atol=atol, equal_nan=en))
            comp = run_composite("isclose", a, b, rtol, atol, en)
            assert_same(ref, comp, dt, f"isclose[{dt}, {rtol}, {atol}, {en}]")


# ---------------------------------------------------------------- through the entry points
def test_entry_points_run_the_composites():
    """Functional, out= and in-place calls resolve to the composites when only primitives have kernels;
    every kernel that then runs natively is a primitive's."""
    x = make([0.5, -1.5, 2.5, -0.0, math.nan, 3.0], "float32")
    y = make([1.0, 2.0, -2.0, 0.0, 1.0, math.inf], "float32")
    refs = {
        "round": ember.round(x, decimals=1), "sub": ember.sub(x, y, alpha=2), "clamp_": x.clone().clamp_(-1, 1),
        "nan_to_num": ember.nan_to_num(x, nan=1.0), "isclose": ember.isclose(x, y, equal_nan=True),
        "addcmul": ember.addcmul(x, x, y, value=2), "tanh_out": ember.tanh(x), "gt": x > y, "rsub": 2 - x,
        "floordiv": x // y, "mod": x % 2, "neg": -x, "invert": ~(x > 0),
    }
    with primitives_only():
        out = ember.empty((6,), dtype=ember.float32)
        got = {
            "round": ember.round(x, decimals=1), "sub": ember.sub(x, y, alpha=2),
            "clamp_": x.clone().clamp_(-1, 1), "nan_to_num": ember.nan_to_num(x, nan=1.0),
            "isclose": ember.isclose(x, y, equal_nan=True), "addcmul": ember.addcmul(x, x, y, value=2),
            "tanh_out": ember.tanh(x, out=out), "gt": x > y, "rsub": 2 - x, "floordiv": x // y, "mod": x % 2,
            "neg": -x, "invert": ~(x > 0),
        }
        key = ("cpu", "strided", ember.float32)
        assert ops["tanh"].sources[key] == "composite" and ops["exp"].source(key) == "native"
        used = {(name, src) for name, op in ops.items() for src in op.sources.values()}
    assert got["tanh_out"] is out
    for k, ref in refs.items():
        assert_same(ref, got[k], "float32", k)
    native = {n for n, s in used if s == "native"}
    assert native <= PRIMITIVES, f"non-primitive ops ran natively: {native - PRIMITIVES}"
    assert {n for n, s in used if s == "composite"} >= {"tanh", "sub", "gt", "isclose", "round", "clamp"}


def test_composites_refuse_what_the_meta_refuses():
    with primitives_only():
        with pytest.raises(RuntimeError, match="Negation"):
            ember.neg(make([1, 0], "bool"))
        with pytest.raises(NotImplementedError):
            ember.ceil(make([1, 0], "bool"))
        with pytest.raises(RuntimeError):
            ember.maximum(make([1.0], "complex64"), make([1.0], "complex64"))


# ---------------------------------------------------------------- on the reference vendor device
@pytest.fixture(scope="module")
def vdev():
    """The vdev device (examples/vendor_plugin: only primitive kernels), registered by hand when not installed."""
    import pathlib
    import sys
    plugin_dir = pathlib.Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin"
    ember.plugins.ensure_loaded()
    registered = False
    if "vdev" not in ember._registry.device_types:
        if not (plugin_dir / "ember_vdev").is_dir():
            pytest.skip("examples/vendor_plugin is not there")
        sys.path.insert(0, str(plugin_dir))
        import ember_vdev
        ember.plugins.register(ember_vdev, name="vdev")
        registered = True
    yield "vdev:0"
    if registered:
        ember.plugins.unregister("vdev")
        sys.path.remove(str(plugin_dir))


VDEV_DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64"]


def _vdev_check(name, fn, args, dt, what, **kwargs):
    try:
        with np.errstate(all="ignore"):
            ref = fn(*args, **kwargs)
    except (RuntimeError, TypeError, NotImplementedError, ValueError):
        return 0
    dargs = [a.to("vdev:0") if isinstance(a, ember.Tensor) else a for a in args]
    got = fn(*dargs, **kwargs)
    assert got.device == ember.device("vdev", 0)
    assert_same(ref, got.cpu(), dt, f"{name}[vdev, {what}]")
    return 1


def test_on_vdev(vdev):
    """Every covered op end to end on vdev, which has kernels for the primitives only."""
    ran = set()
    for dt in VDEV_DTYPES:
        ux = [x for _, x in layouts(unary_values(dt), dt)]
        for name in UNARY + ["round", "nan_to_num"]:
            dom = DOMAIN.get(name)
            for x in (ux if dom is None else [x for _, x in layouts(unary_values(dt, dom), dt)]):
                if _vdev_check(name, getattr(ember, name), (x,), dt, dt):
                    ran.add(name)
        for name in BINARY:
            for what, a, b in binary_pairs(dt, name):
                if not isinstance(a, ember.Tensor):
                    continue
                if _vdev_check(name, getattr(ember, name), (a, b), dt, f"{dt}, {what}"):
                    ran.add(name)
        if dt not in ("bool", "complex64"):
            x = make(unary_values(dt), dt)
            if _vdev_check("clamp", ember.clamp, (x, 0, 5), dt, dt):
                ran.add("clamp")
        if dt in FLOATS + COMPLEX:
            a, b = make([1.0, 2.0, -3.0], dt), make([0.5, 4.0, 1.0], dt)
            for name, args in (("lerp", (a, b, 0.3)), ("addcmul", (a, a, b)), ("addcdiv", (a, a, b)),
                               ("isclose", (a, b))):
                if _vdev_check(name, getattr(ember, name), args, dt, dt):
                    ran.add(name)
    assert set(COVERED) - ran == set()
