"""The composites of the indexing, shape, creation and random ops (core/ember/_ops/_indexing_composites.py,
_random_composites.py) against the cpu kernels.

Each deterministic composite is called directly (``ember._dispatch.ops[name].composite``) on cpu
tensors and compared with the native cpu kernel on the same arguments: exactly for integers,
bool and indices, within DEFAULT_TOLERANCES for floats, NaN where NaN. Random composites cannot
reproduce numpy's streams: they are checked for shape, dtype, range, distribution and
reproducibility under a seeded generator. ``primitives_only`` removes every cpu kernel outside
the primitive set, so the public functions run end to end through composites alone, as on a
device that implements only the primitives.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import ember
from ember import _dispatch
from ember.testing._opinfo import DEFAULT_TOLERANCES, make_tensor

ops = _dispatch.ops

PRIMITIVES = {
    "copy_", "fill_", "add", "mul", "true_divide", "div_trunc", "fmod", "pow", "atan2", "abs", "eq", "lt",
    "where", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "floor",
    "exp", "expm1", "log", "log1p", "sin", "cos", "sqrt", "erf", "erfc", "erfinv", "sum", "amax", "bmm",
    "gather", "scatter_add", "uniform",
}

COVERED = ["index", "index_put", "index_select", "index_add", "index_copy", "index_fill", "take", "scatter",
           "scatter_reduce", "masked_fill", "masked_select", "masked_scatter", "nonzero", "flip", "arange",
           "linspace", "eye", "normal", "random", "bernoulli_scalar", "bernoulli_tensor", "exponential",
           "multinomial", "randperm", "cat", "repeat", "roll", "tril", "triu", "repeat_interleave_tensor",
           "normal_tensor"]

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
SOME = [ember.float32, ember.float64, ember.float16, ember.int64, ember.int32, ember.uint8, ember.bool,
        ember.complex64]


# ---------------------------------------------------------------- helpers
def _np(t):
    a = t.numpy() if t.dtype is not ember.bfloat16 else t.to(ember.float32).numpy()
    return np.asarray(a)


def assert_same(got, want):
    assert got.dtype is want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (tuple(got.shape), tuple(want.shape))
    a, b = _np(got), _np(want)
    name = want.dtype.name
    if name in DEFAULT_TOLERANCES:
        rtol, atol = DEFAULT_TOLERANCES[name]
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, b)


def _call(name, args, kwargs, which):
    if which == "composite":                    # inner ops run as primitives or these composites only
        with primitives_only(strict=True):
            return _call(name, args, kwargs, "composite-inner")
    op = ops[name]
    if op.structured:
        device, key, shape, dtype = op.meta(*args, **kwargs)
        out = ember.empty(shape, dtype=dtype, device=device)
        fn = op.composite if which != "native" else op.resolve(key)
        fn(*args, **kwargs, out=out)
        return out
    device, key = op.meta(*args, **kwargs)
    fn = op.composite if which != "native" else op.resolve(key)
    return fn(*args, **kwargs)


def check(name, *args, **kwargs):
    """The composite's result equals the native cpu kernel's (and both raise alike)."""
    try:
        want = _call(name, args, kwargs, "native")
    except Exception as e:                      # the composite raises the same class and message
        with pytest.raises(type(e)) as info:
            _call(name, args, kwargs, "composite")
        assert str(info.value) == str(e)
        return None
    got = _call(name, args, kwargs, "composite")
    assert_same(got, want)
    return got


def check_inplace(name, self, *args, **kwargs):
    """The composite with out=self (the in-place variant) on a copy of ``self`` equals the native one."""
    op = ops[name]
    a, b = self.clone(), self.clone()
    with primitives_only(strict=True):
        op.composite(a, *args, **kwargs, out=a)
    op.resolve(op.meta(b, *args, **kwargs)[1])(b, *args, **kwargs, out=b)
    assert_same(a, b)


@contextlib.contextmanager
def primitives_only(strict=False):
    """Every cpu kernel outside the primitive set removed, so non-primitive ops run their composites.
    ``strict``: the composites of ops outside COVERED are hidden too, so these composites are shown
    to need nothing but the primitives and each other."""
    from ember import _registry
    _registry.ensure_loaded()                   # plugins register their kernels on first use
    saved, hidden = {}, {}
    for name, op in ops.items():
        if name in PRIMITIVES:
            continue
        keys = [k for k in op.kernels if k[0] == "cpu" or k[0] is _dispatch.ANY]
        if keys:
            saved[name] = {k: op.kernels.pop(k) for k in keys}
        if strict and name not in COVERED and op.composite is not None:
            hidden[name], op.composite = op.composite, None
    _dispatch.invalidate_caches()
    try:
        yield
    finally:
        for name, entries in saved.items():
            ops[name].kernels.update(entries)
        for name, fn in hidden.items():
            ops[name].composite = fn
        _dispatch.invalidate_caches()


def _strict(fn):
    """``fn`` run under ``primitives_only(strict=True)``."""
    def run(*args, **kwargs):
        with primitives_only(strict=True):
            return fn(*args, **kwargs)
    return run


def T(data, dtype=None):
    return ember.tensor(data, dtype=dtype)


def idx(data, dtype=ember.int64):
    return ember.tensor(data, dtype=dtype)


def mk(shape, dtype, seed, **kw):
    return make_tensor(shape, dtype=dtype, seed=seed, **kw)


def test_every_op_has_a_composite():
    for name in COVERED:
        assert ops[name].composite is not None, name
    for name in ("gather", "scatter_add", "uniform"):
        assert ops[name].composite is None     # primitives


# ---------------------------------------------------------------- index / index_put
INDEX_CASES = [
    lambda: [None, idx([[0, -1], [2, 1]]), None],               # one middle dim, 2-D index, negative
    lambda: [idx([0, 3, -4]), None, idx([5, 0, 1])],            # separated: broadcast dims to the front
    lambda: [idx([[1], [2]]), idx([0, 4, -5], ember.int32)],    # adjacent, broadcasting, int32
    lambda: [idx([], ember.int64)],                              # empty index
    lambda: [None, None, idx(2)],                                # 0-dim index
    lambda: [idx([1, 1, 0]), idx([2, 2, 2]), idx([0, 5, 5])],   # every dim, repeats
]


@pytest.mark.parametrize("dtype", SOME)
def test_index(dtype):
    x = mk((4, 5, 6), dtype, 1)
    xt = mk((6, 5, 4), dtype, 2).permute(2, 1, 0)                # non-contiguous
    for case in INDEX_CASES:
        check("index", x, case())
        check("index", xt, case())
    check("index", x, [None, idx([5])])                          # out of range: IndexError
    check("index", x, [idx([0]), idx([-7])])


@pytest.mark.parametrize("dtype", SOME)
def test_index_put(dtype):
    x = mk((4, 5, 6), dtype, 3)
    for case in INDEX_CASES:
        ind = case()
        _, _, shape, _ = ops["index"].meta(x, ind)
        v = mk(shape, dtype, 4)
        for acc in (False, True):
            check("index_put", x, ind, v, acc)
            check("index_put", x, ind, mk((), dtype, 4), acc)                          # broadcast values
            check_inplace("index_put", mk((6, 5, 4), dtype, 5).permute(2, 1, 0), ind, v, acc)
    check("index_put", x, [idx([9])], mk((1, 5, 6), dtype, 6), False)


def test_index_put_duplicates_and_nan():
    x = T([1.0, 2.0, 3.0, -0.0])
    i = [idx([0, 2, 0, 0, 3])]
    v = T([5.0, float("nan"), 7.0, -0.0, -0.0])
    check("index_put", x, i, v, False)                            # last writer wins, as the cpu kernel
    check("index_put", x, i, v, True)
    y = check("index_put", x, [idx([3])], T([-0.0]), False)
    assert math.copysign(1.0, float(y[3])) == -1.0               # values are copied bit for bit
    check("index_put", T([True, False, False]), [idx([1, 1, 2])], T([True, False, True]), True)


# ---------------------------------------------------------------- index_* / take
@pytest.mark.parametrize("dtype", SOME)
def test_index_select_add_copy_fill(dtype):
    x = mk((4, 5), dtype, 7)
    xt = mk((5, 4), dtype, 8).t()
    for dim, i in ((0, idx([3, 0, 0, 1])), (1, idx([4, 1], ember.int32)), (-1, idx([], ember.int64)),
                   (0, idx(2))):
        check("index_select", x, dim, i)
        check("index_select", xt, dim, i)
    check("index_select", mk((), dtype, 9), 0, idx([0]))
    check("index_select", x, 0, idx([4]))                         # IndexError "index out of range in self"
    check("index_select", x, 0, idx([-1]))
    src = mk((4, 3), dtype, 10)
    ii = idx([4, 0, 4])
    check("index_add", x, 1, ii, src)
    check("index_add", xt, -1, ii.to(ember.int32), src)
    if dtype not in (ember.bool, ember.uint8):
        check("index_add", x, 1, ii, src, alpha=2)
    check_inplace("index_add", xt, 1, ii, src)
    check("index_add", x, 1, idx([5, 0, 0]), src)                 # RuntimeError
    check("index_add", mk((), dtype, 11), 0, idx([0]), mk((), dtype, 12))
    check("index_copy", x, 1, ii, src)                            # repeated 4: last wins
    check("index_copy", x, 0, idx([1, 3]), mk((2, 5), dtype, 13))
    check_inplace("index_copy", xt, 0, idx([1, 3]), mk((2, 5), dtype, 13))
    check("index_copy", x, 0, idx([4, 3]), mk((2, 5), dtype, 13))
    val = 3 if dtype is not ember.bool else True
    check("index_fill", x, 1, idx([0, -1, 0]), val)
    check("index_fill", xt, 0, idx([], ember.int64), val)
    check_inplace("index_fill", xt, 0, idx([2]), val)
    check("index_fill", x, 0, idx([-5]), val)


@pytest.mark.parametrize("dtype", SOME)
def test_take(dtype):
    x = mk((3, 4), dtype, 14)
    check("take", x, idx([[0, -1], [11, 5]]))
    check("take", x.t(), idx([0, 1, 2, -12]))
    check("take", x, idx(3))
    check("take", x, idx([], ember.int64))
    check("take", x, idx([12]))
    check("take", mk((0,), dtype, 15), idx([0]))


# ---------------------------------------------------------------- scatter / scatter_reduce
@pytest.mark.parametrize("dtype", SOME)
def test_scatter(dtype):
    x = mk((4, 5), dtype, 16)
    i = idx([[0, 1, 2], [0, 3, 2]])                               # repeats along dim 0
    src = mk((3, 4), dtype, 17)
    check("scatter", x, 0, i, src)
    check("scatter", x.t().contiguous().t(), 1, i, src)
    check("scatter", x, 1, i.to(ember.int32), 1 if dtype is not ember.bool else True)
    if dtype is not ember.bool:
        check("scatter", x, 0, i, src, reduce="add")
        check("scatter", x, 0, i, src, reduce="multiply")
    check("scatter", x, 0, idx([[4]]), src)                       # RuntimeError before writing
    check("scatter", x, 0, ember.empty((0,), dtype=ember.int64), src)
    check_inplace("scatter", x, 0, i, src)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int32, ember.int64, ember.uint8,
                                   ember.bool])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce(dtype, reduce):
    x = mk((4, 5), dtype, 18, low=1 if dtype.is_floating_point else None)
    i = idx([[0, 1, 1, 3], [0, 0, 1, 3], [0, 1, 1, 3]])
    src = mk((3, 4), dtype, 19, low=-2 if dtype.is_floating_point else None, high=2 if dtype.is_floating_point
              else None)
    if dtype is ember.float32:
        src[1, 1] = float("nan")
    for inc in (True, False):
        check("scatter_reduce", x, 0, i, src, reduce, include_self=inc)
        check("scatter_reduce", x.t().contiguous().t(), 1, i.narrow(1, 0, 3), src, reduce, include_self=inc)
    if not (reduce == "mean" and dtype is ember.bool):
        check_inplace("scatter_reduce", x, 0, i, src, reduce, include_self=False)


# ---------------------------------------------------------------- masks, nonzero
@pytest.mark.parametrize("dtype", SOME)
def test_masked_and_nonzero(dtype):
    x = mk((3, 4), dtype, 20)
    m = mk((3, 4), ember.bool, 21)
    mrow = mk((4,), ember.bool, 22)
    val = 2 if dtype is not ember.bool else True
    check("masked_fill", x, m, val)
    check("masked_fill", x.t(), mk((4, 1), ember.bool, 23), val)
    check("masked_fill", mk((4,), dtype, 24), m, val)             # the result has the broadcast shape
    check_inplace("masked_fill", x, mrow, val)
    for xx, mm in ((x, m), (x.t(), m.t()), (x, mrow), (mk((4,), dtype, 25), m), (x, ember.zeros(3, 4, dtype=ember.bool))):
        check("masked_select", xx, mm)
        check("masked_scatter", xx, mm, mk((20,), dtype, 26))
    check("masked_scatter", x, ember.ones(3, 4, dtype=ember.bool), mk((5,), dtype, 27))   # too few values
    check_inplace("masked_scatter", x, mrow, mk((12,), dtype, 28))
    for t in (x, x.t(), mk((2, 0, 3), dtype, 29), mk((), dtype, 30), mk((5,), dtype, 31)):
        check("nonzero", t)
    if dtype.is_floating_point:
        check("nonzero", T([0.0, float("nan"), -0.0, 1.0], dtype))


# ---------------------------------------------------------------- shape ops and sequences
@pytest.mark.parametrize("dtype", SOME)
def test_shape_ops(dtype):
    x = mk((3, 4, 2), dtype, 32)
    for dims in ((0,), (1, -1), (0, 1, 2), ()):
        check("flip", x, dims)
        check("flip", x.transpose(0, 2), dims)
    check("flip", mk((), dtype, 33), ())
    check("flip", mk((0, 3), dtype, 34), (0, 1))
    for diag in (-1, 0, 2):
        check("tril", x, diag)
        check("triu", x.transpose(0, 2), diag)
    check("cat", [x, mk((3, 1, 2), dtype, 35)], 1)
    check("repeat", x, (2, 1, 1, 3))
    check("roll", x, (1, -2), (0, 1))
    reps = idx([2, 0, 3])
    check("repeat_interleave_tensor", x, reps, 0)
    check("repeat_interleave_tensor", x.transpose(0, 1), idx([1, 0, 2], ember.int32), 1)
    check("repeat_interleave_tensor", x, idx(2), None)
    check("repeat_interleave_tensor", x, idx([0, 0, 0]), 0)
    check("repeat_interleave_tensor", x, idx([1, -1, 0]), 0)        # negative counts
    check("repeat_interleave_tensor", x, reps, 0, output_size=4)   # wrong output_size


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.int8, ember.uint8, ember.bool, ember.float32,
                                   ember.float64, ember.float16, ember.bfloat16, ember.complex64])
def test_sequences(dtype):
    cpu = ember.device("cpu")
    for start, end, step in ((0, 7, 1), (3, -4, -2), (0, 1, 0.1), (-1.5, 2.25, 0.25), (5, 5, 1), (0, 1000, 3)):
        if dtype is ember.uint8 and (start < 0 or end < 0):
            continue
        size = max(math.ceil((end - start) / step), 0)
        check("arange", start, end, step, size, dtype, cpu)
    for start, end, steps in ((0.0, 1.0, 5), (-3, 7, 11), (2.0, -1.0, 8), (1.5, 1.5, 1), (0, 1, 0),
                              (0.1, 10.3, 1001)):
        check("linspace", start, end, steps, 0.0, dtype, cpu)
        if dtype.is_floating_point:
            check("linspace", start, end, steps, 2.0, dtype, cpu)
    if dtype.is_complex:
        check("linspace", 0.0, 1 + 2j, 7, 0.0, dtype, cpu)
    for n, m in ((3, 3), (2, 5), (4, 1), (0, 3)):
        check("eye", n, m, dtype, cpu)


# ---------------------------------------------------------------- random: statistics + reproducibility
def _gen(seed):
    return ember.Generator().manual_seed(seed)


def _sample(name, self, *args, seed=0, **kwargs):
    """The composite run in place on ``self`` with a generator seeded ``seed`` (a copy is returned)."""
    out = self.clone()
    with primitives_only(strict=True):
        ops[name].composite(out, *args, **kwargs, generator=_gen(seed), out=out)
    return out


def _reproducible(name, self, *args, **kwargs):
    a = _sample(name, self, *args, seed=5, **kwargs)
    b = _sample(name, self, *args, seed=5, **kwargs)
    c = _sample(name, self, *args, seed=6, **kwargs)
    np.testing.assert_array_equal(_np(a), _np(b))
    assert not np.array_equal(_np(a), _np(c))
    return a


@pytest.mark.parametrize("dtype", FLOATS + [ember.complex64])
def test_normal(dtype):
    z = _reproducible("normal", ember.empty(20000, dtype=dtype), 2.0, 3.0)
    assert z.dtype is dtype and tuple(z.shape) == (20000,)
    a = _np(z).astype(np.complex128 if dtype.is_complex else np.float64)
    parts = (a.real, a.imag) if dtype.is_complex else (a,)
    for p in parts:
        sd = 3.0 / math.sqrt(2) if dtype.is_complex else 3.0
        assert abs(p.mean() - 2.0) < 0.1 and abs(p.std() - sd) < 0.1
        assert abs(np.mean(np.abs(p - 2.0) < sd) - 0.6827) < 0.02    # the normal's shape
    mean, std = T([0.0, 10.0, -5.0]).expand(4000, 3), T([1.0, 0.1, 2.0])
    op = ops["normal_tensor"]
    out = ember.empty(4000, 3)
    _strict(op.composite)(mean, std, generator=_gen(3), out=out)
    a = _np(out)
    assert np.allclose(a.mean(0), [0, 10, -5], atol=0.15) and np.allclose(a.std(0), [1, 0.1, 2], atol=0.1)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        _strict(op.composite)(mean, T([1.0, -1.0, 1.0]), generator=_gen(3), out=out)


@pytest.mark.parametrize("dtype,low,high", [
    (ember.int64, 0, None), (ember.int64, -3, 4), (ember.int32, -(2 ** 31), 2 ** 31), (ember.int8, 0, None),
    (ember.int8, -128, 128), (ember.uint8, 0, None), (ember.uint8, 250, 256), (ember.bool, 0, None),
    (ember.float32, 0, None), (ember.float16, -5, 5), (ember.float64, 0, None), (ember.int64, -(2 ** 63), None),
    (ember.int64, 2 ** 62, 2 ** 63 - 1),
])
def test_random(dtype, low, high):
    from ember._ops._random import random_upper
    r = _reproducible("random", ember.empty(6000, dtype=dtype), low, high)
    assert r.dtype is dtype
    hi = random_upper(dtype) + 1 if high is None else high
    a = _np(r).astype(np.float64) if dtype.is_floating_point else _np(r).astype(object if hi > 2 ** 62 else np.int64)
    assert a.min() >= low and a.max() < hi
    span = hi - low
    mid = low + span // 2
    frac = np.mean(np.asarray([v < mid for v in a]))
    assert abs(frac - (span // 2) / span) < 0.04, frac                   # both halves of the range are hit
    if span <= 256:
        assert len(set(a.tolist())) == span                               # every value in a small range


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int64, ember.bool, ember.uint8])
def test_bernoulli(dtype):
    b = _reproducible("bernoulli_scalar", ember.empty(20000, dtype=dtype), 0.3)
    assert b.dtype is dtype and set(np.unique(_np(b)).tolist()) <= {0, 1}
    assert abs(_np(b).astype(np.float64).mean() - 0.3) < 0.015
    assert _np(_sample("bernoulli_scalar", ember.empty(100, dtype=dtype), 0.0)).astype(np.float64).sum() == 0
    assert _np(_sample("bernoulli_scalar", ember.empty(100, dtype=dtype), 1.0)).astype(np.float64).sum() == 100
    p = T([0.0, 0.25, 0.9, 1.0]).expand(8000, 4)
    b = _reproducible("bernoulli_tensor", ember.empty(8000, 4, dtype=dtype), p)
    m = _np(b).astype(np.float64).mean(0)
    assert np.allclose(m, [0, 0.25, 0.9, 1.0], atol=0.02), m
    for bad in (T([0.5, 1.5]), T([float("nan"), 0.5]), T([-0.1, 0.5])):
        with pytest.raises(RuntimeError, match=r"Expected p_in >= 0 && p_in <= 1"):
            _sample("bernoulli_tensor", ember.empty(2, dtype=dtype), bad)


@pytest.mark.parametrize("dtype", FLOATS)
def test_exponential(dtype):
    e = _reproducible("exponential", ember.empty(20000, dtype=dtype), 4.0)
    a = _np(e).astype(np.float64)
    assert e.dtype is dtype and a.min() >= 0 and np.isfinite(a).all()
    assert abs(a.mean() - 0.25) < 0.01 and abs(np.median(a) - math.log(2) / 4) < 0.01


@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.float32, ember.float16, ember.uint8])
def test_randperm(dtype):
    n = 200 if dtype is not ember.uint8 else 256
    cpu = ember.device("cpu")
    op = ops["randperm"]
    outs = []
    for seed in (1, 1, 2):
        out = ember.empty(n, dtype=dtype)
        _strict(op.composite)(n, dtype, cpu, generator=_gen(seed), out=out)
        outs.append(_np(out).astype(np.int64))
    assert sorted(outs[0].tolist()) == list(range(n))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])
    firsts = []                                       # position 0 is uniform over the values
    for seed in range(300):
        out = ember.empty(5, dtype=ember.int64)
        _strict(op.composite)(5, ember.int64, cpu, generator=_gen(100 + seed), out=out)
        firsts.append(int(out[0]))
    counts = np.bincount(firsts, minlength=5)
    assert counts.min() > 30, counts
    out = ember.empty(0, dtype=ember.int64)
    _strict(op.composite)(0, ember.int64, cpu, generator=_gen(1), out=out)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16])
def test_multinomial(dtype):
    p = T([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]], dtype)
    op = ops["multinomial"]

    def draw(probs, k, repl, seed=0):
        out = ember.empty(tuple(probs.shape[:-1]) + (k,), dtype=ember.int64)
        _strict(op.composite)(probs, k, repl, generator=_gen(seed), out=out)
        return _np(out)

    a = draw(p, 4000, True)
    assert a.shape == (2, 4000) and not (a[0] == 1).any() and not (a[1] == 2).any()
    f = np.stack([np.bincount(r, minlength=4) / 4000 for r in a])
    assert np.allclose(f, [[0.1, 0, 0.6, 0.3], [0.25, 0.25, 0, 0.5]], atol=0.03), f
    np.testing.assert_array_equal(a, draw(p, 4000, True))
    assert not np.array_equal(a, draw(p, 4000, True, seed=1))
    firsts = []
    for seed in range(300):
        w = draw(p, 4, False, seed)
        assert all(sorted(r.tolist()) == [0, 1, 2, 3] for r in w)
        assert w[0, 3] == 1 and w[1, 3] == 2                     # zero-probability categories come last
        firsts.append(w[0, 0])
    f0 = np.bincount(firsts, minlength=4) / 300
    assert np.allclose(f0, [0.1, 0, 0.6, 0.3], atol=0.08), f0
    one = draw(T([0.2, 0.8], dtype), 1, False)
    assert one.shape == (1,)
    for bad, msg in ((T([0.5, -0.1], dtype), "element < 0"), (T([0.5, float("inf")], dtype), "inf"),
                     (T([0.0, 0.0], dtype), "sum of probabilities")):
        with pytest.raises(RuntimeError, match=msg):
            draw(bad, 1, True)


# ---------------------------------------------------------------- end to end on primitives only
def test_public_functions_on_primitives_only():
    x = mk((4, 5, 6), ember.float32, 40)
    m = mk((4, 5, 6), ember.bool, 41)
    i = idx([3, -1, 0])
    want = {
        "getitem": x[:, i, 1:4:2], "mask": x[m], "setitem": None, "index_select": ember.index_select(x, 1, i.abs()),
        "nonzero": ember.nonzero(m), "masked_select": ember.masked_select(x, m), "flip": ember.flip(x, (0, 2)),
        "arange": ember.arange(-3, 10, 0.5), "linspace": ember.linspace(-1, 1, 9), "eye": ember.eye(3, 4),
        "logspace": ember.logspace(0, 2, 5), "tril": ember.tril(x), "repeat_interleave": ember.repeat_interleave(
            x, idx([1, 0, 2, 1]), dim=0), "scatter_reduce": ember.scatter_reduce(
            x[0], 0, idx([[0, 1], [0, 1]]), x[1, :2, :2], "amax"), "take": ember.take(x, idx([-1, 0, 7])),
    }
    y = x.clone()
    y[i, :, 1:3] = 7.0
    y[m] = -1.0
    y[i, idx([0, 0, 4]), 5] += x[0, 0, :3]
    want["setitem"] = y
    with primitives_only(strict=True):
        assert ops["index"].source(("cpu", "strided", ember.float32)) == "composite"
        got = {
            "getitem": x[:, i, 1:4:2], "mask": x[m], "index_select": ember.index_select(x, 1, i.abs()),
            "nonzero": ember.nonzero(m), "masked_select": ember.masked_select(x, m), "flip": ember.flip(x, (0, 2)),
            "arange": ember.arange(-3, 10, 0.5), "linspace": ember.linspace(-1, 1, 9), "eye": ember.eye(3, 4),
            "logspace": ember.logspace(0, 2, 5), "tril": ember.tril(x), "repeat_interleave": ember.repeat_interleave(
                x, idx([1, 0, 2, 1]), dim=0), "scatter_reduce": ember.scatter_reduce(
                x[0], 0, idx([[0, 1], [0, 1]]), x[1, :2, :2], "amax"), "take": ember.take(x, idx([-1, 0, 7])),
        }
        y = x.clone()
        y[i, :, 1:3] = 7.0
        y[m] = -1.0
        y[i, idx([0, 0, 4]), 5] += x[0, 0, :3]
        got["setitem"] = y
        g = ember.Generator().manual_seed(0)
        r = {"randn": ember.randn(1000, generator=g), "randint": ember.randint(-5, 5, (1000,), generator=g),
             "randperm": ember.randperm(50, generator=g), "bern": ember.bernoulli(ember.full((1000,), 0.5),
                                                                                 generator=g),
             "mult": ember.multinomial(T([0.2, 0.8]), 100, True, generator=g),
             "mult_norepl": ember.multinomial(T([0.2, 0.8, 0.0]), 2, generator=g),
             "exp": ember.empty(1000).exponential_(generator=g)}
        assert ops["randperm"].source(("cpu", "strided", ember.int64)) == "composite"
    for k in want:
        assert_same(got[k], want[k])
    assert sorted(r["randperm"].tolist()) == list(range(50))
    assert r["randint"].min() >= -5 and r["randint"].max() <= 4 and abs(float(r["randn"].mean())) < 0.15
    assert sorted(r["mult_norepl"].tolist()) == [0, 1]
    assert ops["randperm"].source(("cpu", "strided", ember.int64)) == "native"      # kernels restored


# ---------------------------------------------------------------- on the reference plugin's device
@pytest.fixture(scope="module")
def vdev():
    """``"vdev:0"`` (examples/vendor_plugin: kernels for the primitives only), registered by hand
    when ember-vdev is not installed; skipped when the example cannot be loaded."""
    import pathlib
    import sys
    ember.plugins.ensure_loaded()
    if "vdev" not in ember._registry.device_types:
        plugin_dir = pathlib.Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin"
        if not (plugin_dir / "ember_vdev").is_dir():
            pytest.skip("examples/vendor_plugin is not present")
        sys.path.insert(0, str(plugin_dir))
        import ember_vdev
        ember.plugins.register(ember_vdev, name="vdev")
    return "vdev:0"


def _to(x, device):
    if isinstance(x, ember.Tensor):
        return x.to(device)
    if isinstance(x, list):
        return [_to(v, device) for v in x]
    return x


VDEV_CASES = [
    ("index", lambda d: (mk((4, 5, 6), d, 1), [idx([0, 3, -4]), None, idx([5, 0, 1])])),
    ("index", lambda d: (mk((6, 5, 4), d, 2).permute(2, 1, 0), [None, idx([[0, -1], [2, 1]])])),
    ("index_put", lambda d: (mk((4, 5), d, 3), [idx([1, 1, -1]), idx([0, 0, 2])], mk((3,), d, 4), False)),
    ("index_put", lambda d: (mk((4, 5), d, 3), [None, idx([1, 1, -1])], mk((4, 3), d, 4), True)),
    ("index_select", lambda d: (mk((4, 5), d, 5).t(), 1, idx([3, 0, 0]))),
    ("index_add", lambda d: (mk((4, 5), d, 6), 1, idx([4, 0, 4]), mk((4, 3), d, 7))),
    ("index_copy", lambda d: (mk((4, 5), d, 6), 0, idx([1, 3, 1]), mk((3, 5), d, 8))),
    ("index_fill", lambda d: (mk((4, 5), d, 9), 1, idx([0, -1]), 1)),
    ("take", lambda d: (mk((3, 4), d, 10).t(), idx([[0, -1], [11, 5]]))),
    ("scatter", lambda d: (mk((4, 5), d, 11), 0, idx([[0, 1, 2], [0, 3, 2]]), mk((3, 4), d, 12))),
    ("scatter_reduce", lambda d: (mk((4, 5), d, 13), 0, idx([[0, 1, 2], [0, 3, 2]]), mk((3, 4), d, 14), "amax")),
    ("scatter_reduce", lambda d: (mk((4, 5), d, 13), 1, idx([[0, 1, 1]]), mk((3, 4), d, 14), "prod")),
    ("masked_fill", lambda d: (mk((3, 4), d, 15), mk((4,), ember.bool, 16), 1)),
    ("masked_select", lambda d: (mk((3, 4), d, 17).t(), mk((4, 3), ember.bool, 18))),
    ("masked_scatter", lambda d: (mk((3, 4), d, 19), mk((3, 4), ember.bool, 20), mk((12,), d, 21))),
    ("nonzero", lambda d: (mk((3, 4), d, 22),)),
    ("flip", lambda d: (mk((3, 4, 2), d, 23), (0, 2))),
    ("tril", lambda d: (mk((2, 3, 4), d, 24), 1)),
    ("repeat_interleave_tensor", lambda d: (mk((3, 2), d, 25), idx([2, 0, 1]), 0)),
    ("arange", lambda d: (-3, 10, 2, 7, d, ember.device("cpu"))),
    ("arange", lambda d: (0.5, 4.0, 0.25, 14, d, ember.device("cpu"))),
    ("linspace", lambda d: (-1.0, 2.0, 11, 0.0, d, ember.device("cpu"))),
    ("eye", lambda d: (3, 5, d, ember.device("cpu"))),
]


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool])
def test_composites_on_vdev(vdev, dtype):
    for name, make in VDEV_CASES:
        if dtype is ember.bool and name in ("scatter_reduce", "index_add") or \
                dtype is ember.bool and name == "arange":
            continue
        args = make(dtype)
        want = _call(name, args, {}, "native")
        dargs = tuple(ember.device(vdev) if isinstance(a, ember.device) else _to(a, vdev) for a in args)
        got = _call(name, dargs, {}, "composite-inner")
        assert got.device == ember.device(vdev), name
        assert_same(got.to("cpu"), want)


def test_random_on_vdev(vdev):
    def draws(seed):
        g = ember.Generator(device=vdev).manual_seed(seed)
        return [ember.randn(2000, device=vdev, generator=g), ember.randint(-3, 4, (2000,), device=vdev, generator=g),
                ember.randperm(30, device=vdev, generator=g),
                ember.bernoulli(ember.full((2000,), 0.25, device=vdev), generator=g),
                ember.empty(2000, device=vdev).exponential_(2.0, generator=g),
                ember.multinomial(ember.tensor([0.2, 0.0, 0.8], device=vdev), 2, generator=g)]
    a, b, c = draws(1), draws(1), draws(2)
    for x, y, z in zip(a, b, c):
        assert x.device == ember.device(vdev)
        np.testing.assert_array_equal(_np(x.to("cpu")), _np(y.to("cpu")))
        assert not np.array_equal(_np(x.to("cpu")), _np(z.to("cpu"))) or x.numel() <= 2
    n, r, p, bern, e, mult = (_np(t.to("cpu")).astype(np.float64) for t in a)
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    assert r.min() == -3 and r.max() == 3
    assert sorted(p.tolist()) == list(range(30))
    assert abs(bern.mean() - 0.25) < 0.03 and abs(e.mean() - 0.5) < 0.05
    assert sorted(mult.tolist()) == [0, 2]
