"""ember-opencl's elementwise primitives (kernels/elementwise.py): every op against ember-cpu, per dtype,
with strided, broadcast, offset and scalar operands, the integer rules (wrapping, division by zero,
shifts, powers), NaN rules, erfinv's accuracy, aliasing outputs, and the kernel cache.

Device tests run on the first OpenCL device (PoCL in CI) and skip when there is none.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, DTYPES, NO_DEVICE, has_device, host  # noqa: E402

pytest.importorskip("ember_opencl")
from ember_opencl.kernels import elementwise as ew  # noqa: E402


pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")     # numpy references warn about NaN / inf
needs_device = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)
TOL = {"float32": (2e-6, 1e-6), "float64": (1e-12, 1e-300)}
FLOAT_FUNCS = ["exp", "expm1", "log", "log1p", "sin", "cos", "sqrt", "erf", "erfc", "erfinv"]


def values(shape, dtype, seed=0, *, nonzero=False, small=False):
    """Random values of ``dtype`` with the dtype's edge cases (extremes, negatives, NaN, inf, -0.0) mixed in."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        a = rng.random(n) < 0.5
    elif dtype.startswith("float"):
        a = (rng.standard_normal(n) * 3).astype(dtype)
        if small:
            a = rng.uniform(-1, 1, n).astype(dtype)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0], dtype)
        a[: min(n, special.size)] = special[: min(n, special.size)]
    else:
        info = np.iinfo(dtype)
        lo, hi = (max(info.min, -9), min(info.max, 9)) if small else (info.min, info.max)
        a = rng.integers(lo, hi, n, endpoint=True).astype(dtype)
        if not small:
            a[: 4] = np.array([info.min, info.max, 0, 1], dtype=np.int64).astype(dtype)
    if nonzero:
        a[a == 0] = 1
    return a.reshape(shape)


def both(a, dtype=None):
    """The same tensor on cpu and on the opencl device."""
    c = ember.tensor(a, dtype=getattr(ember, dtype) if dtype else None)
    return c, c.to(DEV)


def assert_same(got, ref, dtype_name=None):
    """opencl result == cpu result: exact for integers and bool, per-dtype tolerance for floats, NaN == NaN."""
    assert got.dtype == ref.dtype and tuple(got.shape) == tuple(ref.shape)
    g, r = host(got), host(ref)
    name = dtype_name or ref.dtype.name
    if name in TOL:
        rtol, atol = TOL[name]
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True)
        same_inf = np.isinf(r)
        assert np.array_equal(g[same_inf], r[same_inf])
    else:
        np.testing.assert_array_equal(g, r)


def run_both(fn, *cpu_args):
    """``fn`` on the cpu arguments and on their opencl copies (non-tensors passed as they are)."""
    dev_args = [a.to(DEV) if isinstance(a, ember.Tensor) and a.dim() > 0 else a for a in cpu_args]
    try:
        ref = fn(*cpu_args)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        with pytest.raises(type(e)):
            fn(*dev_args)
        return None, None
    return fn(*dev_args), ref


# ---------------------------------------------------------------- code generation (no device needed)
def test_every_primitive_has_an_expression_for_every_kind():
    for op in ew.BINARY + ew.UNARY + ("where",):
        for ct in ("uchar", "char", "short", "int", "long", "float", "double"):
            assert ew._expr(op, ct, ct == "uchar", False)


def test_integer_arithmetic_is_done_in_unsigned_types():
    assert ew._expr("add", "int", False, False) == "((int)((uint)a + (uint)b))"
    assert "ulong" in ew._expr("mul", "long", False, False)
    assert ew._expr("add", "float", False, True) == "fma(alpha, b, a)"


def test_source_reads_operands_in_place_with_their_strides():
    src = ew._source("add", "float", False, "float", False, 2, [("float", "int"), ("float", None)], False)
    assert "__global const int* x0, long x0_off, long x0_s0, long x0_s1" in src
    assert "float x1" in src                      # a scalar operand is a kernel argument
    assert "(float)x0[x0_off + c0 * x0_s0 + c1 * x0_s1]" in src


# ---------------------------------------------------------------- every op x dtype against ember-cpu
BINARY_FNS = {
    "add": ember.add, "mul": ember.mul, "true_divide": ember.true_divide,
    "div_trunc": lambda a, b: ember.div(a, b, rounding_mode="trunc"), "fmod": ember.fmod, "pow": ember.pow,
    "atan2": ember.atan2, "eq": ember.eq, "lt": ember.lt, "bitwise_and": ember.bitwise_and,
    "bitwise_or": ember.bitwise_or, "bitwise_xor": ember.bitwise_xor,
    "bitwise_left_shift": ember.bitwise_left_shift, "bitwise_right_shift": ember.bitwise_right_shift,
}


@needs_device
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(BINARY_FNS))
def test_binary_matches_cpu_with_strided_broadcast_operands(op, dtype):
    fn = BINARY_FNS[op]
    small = op in ("pow", "bitwise_left_shift", "bitwise_right_shift")
    nonzero = op in ("div_trunc", "fmod")
    a = ember.tensor(values((5, 4), dtype, 1, small=small), dtype=getattr(ember, dtype))
    b = ember.tensor(values((4, 6), dtype, 2, small=small, nonzero=nonzero), dtype=getattr(ember, dtype))
    if op == "pow" and dtype not in ("float32", "float64", "bool"):
        b = b.abs()                                # the meta refuses integer ** negative integer
    cases = [
        (a, b.t()[1:6]),                           # contiguous with transposed + storage offset
        (a.t(), b[:, ::2][:, 1:3].t()[0:1]),       # broadcast along dim 0 (expanded to 0-stride)
        (a[::2], b.t()[2, :4]),                    # a 1-D operand broadcast against 2-D
    ]
    for x, y in cases:
        got, ref = run_both(fn, x, y)
        if ref is not None:
            assert_same(got, ref)


@needs_device
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["abs", "floor"] + FLOAT_FUNCS)
def test_unary_matches_cpu(op, dtype):
    fn = getattr(ember, op)
    x = ember.tensor(values((6, 7), dtype, 3, small=op == "erfinv"), dtype=getattr(ember, dtype))
    for t in (x, x.t(), x[1::2, 2:]):
        got, ref = run_both(fn, t)
        if ref is not None:
            assert_same(got, ref)
            if op in FLOAT_FUNCS and dtype not in ("float32", "float64"):
                assert got.dtype == ember.get_default_dtype()      # integers compute in the default float


@needs_device
@pytest.mark.parametrize("dtype", DTYPES)
def test_where_three_way_broadcast_and_scalars(dtype):
    cond = ember.tensor(values((4, 1), "bool", 4))
    x = ember.tensor(values((4, 5), dtype, 5), dtype=getattr(ember, dtype))
    y = ember.tensor(values((5,), dtype, 6), dtype=getattr(ember, dtype))
    cond_t = ember.tensor(values((5, 4), "bool", 7)).t()                     # a transposed condition
    for args in ((cond, x, y), (cond, x[:, 1:], 0), (cond_t, 1, y), (cond, x, ember.tensor(3)), (cond_t, x, 2.5)):
        got, ref = run_both(ember.where, *args)
        assert ref is not None
        assert_same(got, ref)


# ---------------------------------------------------------------- scalars and mixed dtypes
@needs_device
@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_and_cpu_0dim_operands(dtype):
    c, d = both(values((3, 4), dtype, 7), dtype)
    scalars = [True, 3, -2, 2.5, ember.tensor(7), ember.tensor(1.5, dtype=ember.float64), ember.tensor(True)]
    for s in scalars:
        for fn in (ember.add, ember.mul, ember.eq, ember.lt, lambda a, b: ember.add(b, a)):
            s_ref = s
            if dtype.startswith(("int", "uint")) and type(s) is int:
                # PyTorch converts the scalar to the tensor's dtype (uint8 < -2 is uint8 < 254); ember-cpu
                # (numpy 2) compares by value or refuses: compare with the wrapped scalar
                s_ref = int(np.array(s).astype(dtype))
            try:
                ref = fn(c, s_ref)
            except RuntimeError:
                continue
            assert_same(fn(d, s), ref)


@needs_device
def test_mixed_dtypes_promote_like_cpu():
    pairs = [("int8", "int64"), ("uint8", "int8"), ("bool", "int16"), ("int32", "float32"), ("float32", "float64"),
             ("uint8", "float32"), ("bool", "float64")]
    for da, db in pairs:
        a = ember.tensor(values((3, 4), da, 8), dtype=getattr(ember, da))
        b = ember.tensor(values((4,), db, 9, nonzero=True, small=True), dtype=getattr(ember, db))
        for op in ("add", "mul", "true_divide", "eq", "lt", "atan2", "fmod", "pow"):
            got, ref = run_both(BINARY_FNS[op], a, b)
            if ref is not None:
                assert_same(got, ref)


@needs_device
def test_alpha_and_wider_out():
    for dt in ("int8", "int32", "int64", "float32", "float64", "bool"):
        a = ember.tensor(values((5,), dt, 10), dtype=getattr(ember, dt))
        b = ember.tensor(values((5,), dt, 11), dtype=getattr(ember, dt))
        alpha = True if dt == "bool" else 3 if dt.startswith("int") else 0.25
        got, ref = run_both(lambda x, y: ember.add(x, y, alpha=alpha), a, b)
        assert_same(got, ref)
    a = ember.tensor([100, -100, 7], dtype=ember.int8)
    out_c = ember.empty(3, dtype=ember.int64)
    out_d = ember.empty(3, dtype=ember.int64, device=DEV)
    ember.add(a, a, out=out_c)
    ember.add(a.to(DEV), a.to(DEV), out=out_d)
    assert host(out_d).tolist() == host(out_c).tolist()


# ---------------------------------------------------------------- integer and bool rules
@needs_device
def test_integer_arithmetic_wraps():
    for dt in ("int8", "int16", "int32", "int64", "uint8"):
        info = np.iinfo(dt)
        a = ember.tensor(np.array([info.max, info.min, info.max // 2 + 3], dt))
        for fn in (lambda x: x + x, lambda x: x * x, lambda x: x * 3, ember.abs,
                   lambda x: ember.div(x, -1 if dt != "uint8" else 3, rounding_mode="trunc"),
                   lambda x: ember.fmod(x, -1 if dt != "uint8" else 3), lambda x: ember.pow(x, 5)):
            got, ref = run_both(fn, a)
            assert_same(got, ref)


@needs_device
def test_int_min_divided_by_minus_one():
    for dt in ("int32", "int64"):
        m = np.iinfo(dt).min
        a = ember.tensor([m, m, 7], dtype=getattr(ember, dt)).to(DEV)
        b = ember.tensor([-1, 1, -1], dtype=getattr(ember, dt)).to(DEV)
        assert host(ember.div(a, b, rounding_mode="trunc")).tolist() == [m, m, -7]
        assert host(ember.fmod(a, b)).tolist() == [0, 0, 0]


@needs_device
@pytest.mark.parametrize("op", ["div_trunc", "fmod"])
def test_integer_division_by_zero_raises_before_writing(op):
    fn = BINARY_FNS[op]
    a = ember.tensor([5, 6, 7], dtype=ember.int32).to(DEV)
    b = ember.tensor([[1, 2], [0, 3]], dtype=ember.int32).to(DEV).t()[0]          # strided divisor [1, 0]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a[:2], b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, 0)
    out = a.clone()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        if op == "fmod":
            out[:2].fmod_(b)
        else:
            out[:2].div_(b, rounding_mode="trunc")
    assert host(out).tolist() == [5, 6, 7]                                         # nothing written
    assert host(fn(a, ember.tensor([2, -3, 4], dtype=ember.int32).to(DEV))).tolist() == \
        ([2, -2, 1] if op == "div_trunc" else [1, 0, 3])
    f = ember.tensor([1.0, -1.0, 0.0]).to(DEV)                                     # floats never raise
    r = host(fn(f, 0.0))
    assert np.isnan(r[2]) and (np.isinf(r[0]) if op == "div_trunc" else np.isnan(r[0]))


@needs_device
def test_shifts_out_of_range_follow_numpy():
    for dt in ("uint8", "int8", "int16", "int32", "int64"):
        bits = np.dtype(dt).itemsize * 8
        a = np.array([1, 3, 5, 7, 1, 1], dt)
        if dt != "uint8":
            a[2:4] = -a[2:4]
        s = np.array([0, bits - 1, bits, bits + 5, 200 if dt == "uint8" else -1, 1], dt)
        ta, ts = ember.tensor(a).to(DEV), ember.tensor(s).to(DEV)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(host(ember.bitwise_left_shift(ta, ts)), np.left_shift(a, s))
            np.testing.assert_array_equal(host(ember.bitwise_right_shift(ta, ts)), np.right_shift(a, s))


@needs_device
def test_integer_and_bool_powers():
    a = ember.tensor([-3, -1, 0, 1, 2, 3], dtype=ember.int64).to(DEV)
    assert host(a ** 0).tolist() == [1] * 6
    assert host(a ** 3).tolist() == [-27, -1, 0, 1, 8, 27]
    assert host(ember.pow(a, ember.tensor([63, 63, 0, 63, 63, 40], dtype=ember.int64).to(DEV))).tolist() == \
        [int(np.int64(-3) ** np.int64(63)), -1, 1, 1, -2 ** 63, int(np.int64(3) ** np.int64(40))]
    t, f = ember.tensor([True, True, False, False]).to(DEV), ember.tensor([True, False, True, False]).to(DEV)
    assert host(ember.add(t, f)).tolist() == [True, True, True, False]      # bool: logical or
    assert host(ember.mul(t, f)).tolist() == [True, False, False, False]    # bool: logical and


# ---------------------------------------------------------------- floating-point rules
@needs_device
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ieee_special_values(dtype):
    d = getattr(ember, dtype)
    nan, inf = float("nan"), float("inf")
    x = ember.tensor([nan, 1.0, -1.0, 0.0, -0.0, inf], dtype=d).to(DEV)
    assert host(ember.eq(x, x)).tolist() == [False, True, True, True, True, True]
    assert host(ember.lt(x, nan)).tolist() == [False] * 6
    assert np.array_equal(host(x / 0.0), np.array([nan, inf, -inf, nan, nan, inf]), equal_nan=True)
    assert np.array_equal(host(ember.log(x)), np.array([nan, 0, nan, -inf, -inf, inf]), equal_nan=True)
    assert np.array_equal(host(ember.log1p(-x)), np.log1p(-host(x).astype(np.float64)).astype(dtype),
                          equal_nan=True)
    assert np.signbit(host(ember.abs(x))).sum() == 0                        # abs(-0.0) = +0.0
    a = host(ember.atan2(ember.tensor([0.0, -0.0, 0.0, -0.0], dtype=d).to(DEV),
                         ember.tensor([-0.0, -0.0, 0.0, 1.0], dtype=d).to(DEV)))
    np.testing.assert_array_equal(a, np.arctan2([0.0, -0.0, 0.0, -0.0], [-0.0, -0.0, 0.0, 1.0]).astype(dtype))
    assert np.signbit(a[3])
    assert np.array_equal(host(ember.floor(x)), host(x), equal_nan=True)


@needs_device
@pytest.mark.parametrize("dtype,bound", [("float64", 4e-15), ("float32", 3e-7)])
def test_erfinv_accuracy(dtype, bound):
    sp = pytest.importorskip("scipy.special")
    y = np.concatenate([np.linspace(-1, 1, 4001), [1e-30, -1e-12, 1e-5, 0.4999999, 0.5000001],
                        1 - np.logspace(-1, -15 if dtype == "float64" else -7, 50),
                        -1 + np.logspace(-1, -15 if dtype == "float64" else -7, 50)]).astype(dtype)
    got = host(ember.erfinv(ember.tensor(y).to(DEV))).astype(np.float64)
    ref = sp.erfinv(y.astype(np.float64))          # the exact erfinv of the rounded input
    finite = np.isfinite(ref)
    rel = np.abs(got[finite] - ref[finite]) / np.maximum(np.abs(ref[finite]), np.finfo(dtype).tiny)
    assert rel.max() < bound, (rel.max(), y[finite][rel.argmax()])
    assert got[y == 1].tolist() == [np.inf] and got[y == -1].tolist() == [-np.inf]
    assert np.isnan(host(ember.erfinv(ember.tensor([1.5, -2.0, float("nan")], dtype=getattr(ember, dtype))
                                      .to(DEV)))).all()
    assert np.signbit(host(ember.erfinv(ember.tensor([-0.0], dtype=getattr(ember, dtype)).to(DEV))))[0]


# ---------------------------------------------------------------- aliasing, empty, 0-dim
@needs_device
def test_in_place_and_overlapping_outputs_read_inputs_first():
    # partial overlap of dense tensors is refused before anything is written, on every device (PyTorch's
    # memory-overlap check); overlap of non-dense views is not judged (as PyTorch) and computes as on cpu
    for make, write in ((lambda: np.arange(10.0, dtype=np.float32), lambda t: t[1:].add_(t[:-1])),
                        (lambda: np.arange(9.0).reshape(3, 3), lambda t: t.add_(t.t()))):
        for t in both(make()):
            with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
                write(t)
            assert host(t).tolist() == make().tolist()
    c, d = both(np.arange(12, dtype=np.int32).reshape(3, 4))
    c[:, :3].mul_(c[:, 1:])
    d[:, :3].mul_(d[:, 1:])
    assert host(d).tolist() == host(c).tolist()
    _, d = both(np.arange(6.0))
    d.mul_(d)                                      # exact alias: computed in place
    assert host(d).tolist() == [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]


@needs_device
def test_empty_and_zero_dim():
    e = ember.empty(0, 3, device=DEV)
    assert tuple((e + 1).shape) == (0, 3) and tuple(ember.exp(e).shape) == (0, 3)
    s = ember.tensor(2.0).to(DEV)
    assert host(s * s).tolist() == 4.0 and host(ember.sqrt(s + 2)).tolist() == 2.0
    assert host(ember.add(s, ember.tensor([1.0, 2.0]).to(DEV))).tolist() == [3.0, 4.0]


# ---------------------------------------------------------------- kernel cache and layouts
@needs_device
def test_kernels_are_built_once_per_signature_and_contiguous_ops_are_rank_1():
    a = ember.tensor(np.ones((8, 16, 4), np.float32)).to(DEV)
    b = a + a
    from ember_opencl import _codegen as cg
    state = cg.state_of(a)
    sig = ("add", "float", False, "float", False, 1, (("float", "float"), ("float", "float")), False)
    assert sig in ew._KERNELS[state]               # (8, 16, 4) contiguous collapsed to rank 1
    k = ew._KERNELS[state][sig]
    before = state.compiles
    for _ in range(3):
        b = a + b
    assert state.compiles == before and ew._KERNELS[state][sig] is k
    assert host(b).max() == 5.0
