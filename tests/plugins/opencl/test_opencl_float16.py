"""ember-opencl's float16 kernels against numpy and ember-cpu.

float16 is declared (and these tests run) only where the device reports cl_khr_fp16, e.g. Intel's
CPU runtime (``EMBER_OPENCL_PLATFORM=intel``); PoCL lacks it, and there float16 stays a storage type.
The kernels read half with ``vload_half``, compute / accumulate in float and round once, to nearest
even, with ``vstore_half_rte`` (PyTorch's rule for half, and ember-cpu's). The last tests (the
reduction's work-group size) run on every device.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, NO_DEVICE, dev, has_device, host  # noqa: E402

pytest.importorskip("ember_opencl")
import ember_opencl  # noqa: E402
from ember_opencl import _codegen as cg  # noqa: E402
from ember_opencl.kernels import reduce  # noqa: E402

pytestmark = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)


def _fp16_reason():
    if not has_device():
        return NO_DEVICE
    p = ember.opencl.get_device_properties()
    return (f"the device '{p['name']}' ({p['platform']}) does not report cl_khr_fp16: float16 is storage-only "
            f"there and not declared (run with EMBER_OPENCL_PLATFORM=intel for Intel's CPU runtime, which has it)")


needs_fp16 = pytest.mark.skipif(not has_device() or "float16" not in ember_opencl.supported_dtypes(),
                                reason=_fp16_reason())


def _half(rng, shape, scale=4.0):
    return (rng.standard_normal(shape) * scale).astype(np.float16)


def _both(fn, *arrays):
    """``fn`` run on opencl and on cpu over the same float16 arrays: (opencl result, cpu result) as numpy."""
    got = fn(*[dev(a) for a in arrays])
    want = fn(*[ember.tensor(a) for a in arrays])
    if isinstance(got, (tuple, list)):
        return [host(g) for g in got], [w.numpy() for w in want]
    return host(got), want.numpy()


# ---------------------------------------------------------------- registration
@needs_fp16
def test_float16_primitives_are_native():
    from ember import _dispatch
    key = ("opencl", "strided", ember.float16)
    for op in ("sum", "amax", "uniform", "sort", "topk", "cumsum", "unique", "gather", "scatter_add",
               "index_select", "scatter", "index_add", "masked_fill", "take", "index", "add", "where"):
        assert _dispatch.ops[op].source(key) == "native", op


# ---------------------------------------------------------------- reductions
@needs_fp16
@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_sum_accumulates_in_float(kind, monkeypatch):
    """10000 ones: a half accumulator stops at 2048 (2048 + 1 rounds to 2048); float gives 10000 exactly."""
    monkeypatch.setattr(reduce, "FORCE_SHAPE", kind)
    x = ember.ones(10_000, dtype=ember.float16, device=DEV)
    s = ember.sum(x)
    assert s.dtype == ember.float16 and float(s.item()) == 10_000.0
    rows = ember.sum(ember.ones((3, 5000), dtype=ember.float16, device=DEV), dim=1)
    assert host(rows).tolist() == [5000.0] * 3


@needs_fp16
@pytest.mark.parametrize("kind", ["cpu", "gpu"])
@pytest.mark.parametrize("shape,dim", [((), None), ((7,), None), ((3, 4), 0), ((3, 4), 1), ((50_000,), None),
                                       ((5, 20_000), 1), ((20_000, 5), 0), ((300, 100), 0), ((4, 5, 6), (0, 2))])
def test_sum_and_amax_round_once(kind, shape, dim, monkeypatch):
    """Multiples of 1/8 below 64: every float partial sum is exact, so the result is the exact sum rounded
    once to half - the same bits as numpy in float64 and as ember-cpu."""
    monkeypatch.setattr(reduce, "FORCE_SHAPE", kind)
    rng = np.random.default_rng(1)
    a = (rng.integers(-512, 512, shape) / 8).astype(np.float16)
    x = dev(a)
    got = host(ember.sum(x) if dim is None else ember.sum(x, dim=dim))
    want = np.sum(a.astype(np.float64), axis=dim).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    gm = host(ember.amax(x) if dim is None else ember.amax(x, dim=dim))
    np.testing.assert_array_equal(gm, np.max(a, axis=dim))
    # into float32 (dtype=): no rounding to half at all
    got32 = host(ember.sum(x, dim=dim, dtype=ember.float32) if dim is not None else ember.sum(x, dtype=ember.float32))
    np.testing.assert_array_equal(got32, np.sum(a.astype(np.float64), axis=dim).astype(np.float32))


@needs_fp16
def test_amax_nan_and_strided_views_match_cpu():
    rng = np.random.default_rng(2)
    a = _half(rng, (6, 40))
    a[2, 7] = np.nan
    got, want = _both(lambda t: ember.amax(t.t()[::2], dim=0), a)
    np.testing.assert_array_equal(got, want)
    got, want = _both(lambda t: ember.sum(t[:, 1::3], dim=1), a)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- elementwise
@needs_fp16
def test_elementwise_computes_in_float_and_rounds_once():
    rng = np.random.default_rng(3)
    a, b = _half(rng, (1000,)), _half(rng, (1000,))
    for fn, ref in ((ember.mul, np.multiply), (ember.add, np.add), (ember.true_divide, np.divide)):
        got = host(fn(dev(a), dev(b)))
        want = ref(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)   # one rounding
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)
    got = host(ember.where(dev(a > 0), dev(a), dev(b)))
    np.testing.assert_array_equal(got, np.where(a > 0, a, b))


# ---------------------------------------------------------------- random
@needs_fp16
def test_uniform_float16_stays_below_high_and_is_reproducible():
    def draw(seed, low, high, shape=(20_000,)):
        g = ember.Generator(device=DEV)
        g.manual_seed(seed)
        return host(ember.empty(shape, dtype=ember.float16, device=DEV).uniform_(low, high, generator=g))
    u = draw(0, 0.0, 1.0)
    assert u.dtype == np.float16 and u.min() >= 0 and u.max() < 1
    assert np.all(u * 2048 == np.round(u * 2048))          # 11 random bits: multiples of 2**-11
    assert abs(u.astype(np.float64).mean() - 0.5) < 0.02
    np.testing.assert_array_equal(u, draw(0, 0.0, 1.0))
    assert not np.array_equal(u, draw(1, 0.0, 1.0))
    w = draw(5, -3.0, 5.0)
    assert w.min() >= -3 and w.max() < 5                   # a sample rounding up to 5 becomes 4.996
    assert np.all(draw(7, 1.0, 1.0) == 1.0)
    t = host(ember.empty((40, 50), dtype=ember.float16, device=DEV).t().uniform_(0.0, 1.0))
    assert t.shape == (50, 40) and t.min() >= 0 and t.max() < 1


# ---------------------------------------------------------------- sort / scan / unique
@needs_fp16
def test_sort_topk_cumsum_unique_match_cpu():
    rng = np.random.default_rng(4)
    a = _half(rng, (5, 70))
    a[0, 3], a[1, 4], a[2, 5], a[2, 6] = np.nan, -0.0, 0.0, -0.0
    a[3, :10] = 1.5                                        # ties: stable order
    for desc in (False, True):
        (gv, gi), (wv, wi) = _both(lambda t: ember.sort(t, dim=1, descending=desc), a)
        np.testing.assert_array_equal(gv, wv)
        np.testing.assert_array_equal(gi, wi)
    for k in (3, 40):                                      # the one-pass kernel, then the sort
        (gv, gi), (wv, wi) = _both(lambda t: ember.topk(t, k, dim=1), a)
        np.testing.assert_array_equal(gv, wv)
        np.testing.assert_array_equal(gi, wi)
    b = a.copy()
    b[0, 3] = 1.0
    got, want = _both(lambda t: ember.cumsum(t, 1), b)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-3)
    c = np.array([3, 1, np.nan, 1, -0.0, 0.0, 2.5, 3, np.nan], np.float16)
    (gu, ginv, gcnt), (wu, winv, wcnt) = _both(lambda t: ember.unique(t, return_inverse=True, return_counts=True), c)
    np.testing.assert_array_equal(gu, wu)
    np.testing.assert_array_equal(ginv, winv)
    np.testing.assert_array_equal(gcnt, wcnt)
    (gu, gcnt), (wu, wcnt) = _both(lambda t: ember.unique_consecutive(t, return_counts=True), c)
    np.testing.assert_array_equal(gu, wu)
    np.testing.assert_array_equal(gcnt, wcnt)


# ---------------------------------------------------------------- indexing
@needs_fp16
def test_indexing_kernels_move_float16_bits_unchanged():
    rng = np.random.default_rng(5)
    a = _half(rng, (4, 6))
    a[1, 2], a[3, 0] = np.nan, -0.0
    idx = np.array([[0, 5, 2], [1, 1, 4], [3, 0, 0], [2, 2, 2]])
    ii = ember.tensor(idx)
    for fn in (lambda t: ember.gather(t, 1, ii.to(t.device)),
               lambda t: ember.index_select(t, 1, ember.tensor([5, 0, 2]).to(t.device)),
               lambda t: ember.take(t, ember.tensor([[0, -1], [7, 13]]).to(t.device)),
               lambda t: t[ember.tensor([3, 1]).to(t.device), ember.tensor([0, 2]).to(t.device)],
               lambda t: t.masked_fill(t > 0, 0.1),
               lambda t: ember.zeros((4, 6), dtype=ember.float16, device=t.device).scatter_(1, ii.to(t.device), t),
               lambda t: t.clone().scatter_(1, ii.to(t.device), -2.5)):
        got, want = _both(fn, a)
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))   # the same bits (-0.0, NaN)


@needs_fp16
def test_scatter_add_and_index_add_accumulate_in_float():
    """2000 additions of 1 into one element of 2048: rounded after every add (half atomics) it would stop at
    2048; accumulated in float and rounded once it is 4048, as on ember-cpu."""
    x = ember.full((3,), 2048.0, dtype=ember.float16, device=DEV)
    ones = ember.ones(2000, dtype=ember.float16, device=DEV)
    where = ember.zeros(2000, dtype=ember.int64, device=DEV)
    assert host(x.clone().scatter_add_(0, where, ones)).tolist() == [4048.0, 2048.0, 2048.0]
    assert host(x.clone().index_add_(0, where, ones, alpha=0.5)).tolist() == [3048.0, 2048.0, 2048.0]
    rng = np.random.default_rng(6)
    base, src = _half(rng, (5, 4)), _half(rng, (7, 4))
    i = np.array([0, 4, 4, 1, 0, 0, 3])
    got, want = _both(lambda b, s: b.index_add(0, ember.tensor(i).to(b.device), s, alpha=1.5), base, src)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-3)
    with pytest.raises(RuntimeError, match="out of bounds"):
        dev(base).scatter_add_(0, ember.tensor([[9, 0, 0, 0]], device=DEV), dev(src))


# ---------------------------------------------------------------- work-group sizes (every device)
class _Kernel:
    """A stand-in kernel answering get_work_group_info like a runtime would."""

    def __init__(self, wg, local_mem, multiple):
        import pyopencl as cl
        info = cl.kernel_work_group_info
        self.answers = {info.WORK_GROUP_SIZE: wg, info.LOCAL_MEM_SIZE: local_mem,
                        info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE: multiple}

    def get_work_group_info(self, what, device):
        return self.answers[what]


class _State:
    device = None

    def __init__(self, max_wg, local_mem):
        self.max_work_group_size, self.local_mem_size = max_wg, local_mem


def test_work_group_limits_come_from_the_device_and_kernel():
    assert cg.work_group_limits(_State(1024, 65536), _Kernel(256, 0, 32), 4) == (256, 32)
    assert cg.work_group_limits(_State(1024, 65536), _Kernel(4096, 0, 32), 4) == (1024, 32)   # device max
    assert cg.work_group_limits(_State(1024, 2048), _Kernel(1024, 1024, 8), 8) == (128, 8)   # local memory
    # the tree's group: a power of two within those limits, >= the preferred multiple, <= what n needs
    assert reduce._tree_group(_State(1024, 65536), _Kernel(768, 0, 32), "float", 10 ** 6) == 512
    assert reduce._tree_group(_State(1024, 65536), _Kernel(768, 0, 32), "float", 3) == 32
    assert reduce._tree_group(_State(1024, 65536), _Kernel(768, 0, 1), "float", 3) == 4
    assert reduce._tree_group(_State(1024, 512), _Kernel(768, 0, 64), "double", 10 ** 6) == 64


@pytest.mark.parametrize("limits", [(1, 1), (2, 1), (48, 16), (64, 64)])
def test_tree_reduction_is_right_for_any_group_the_device_allows(limits, monkeypatch):
    """The GPU-shaped reduction (forced here, on any device) with the device limits replaced by small ones."""
    monkeypatch.setattr(reduce, "FORCE_SHAPE", "gpu")
    monkeypatch.setattr(cg, "work_group_limits", lambda state, kernel, per_item=0: limits)
    rng = np.random.default_rng(7)
    for shape, dim in (((50_000,), None), ((5, 20_000), 1), ((30, 7), 1), ((3,), None)):
        a = rng.integers(-100, 100, shape).astype(np.float32)
        got = host(ember.sum(dev(a)) if dim is None else ember.sum(dev(a), dim=dim))
        np.testing.assert_array_equal(got, np.sum(a.astype(np.float64), axis=dim).astype(np.float32))
        gm = host(ember.amax(dev(a)) if dim is None else ember.amax(dev(a), dim=dim))
        np.testing.assert_array_equal(gm, np.max(a, axis=dim))
