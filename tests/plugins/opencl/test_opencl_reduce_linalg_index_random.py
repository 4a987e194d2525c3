"""ember-opencl's sum / amax, bmm, gather / scatter_add and uniform kernels against numpy.

Runs on the first OpenCL device (PoCL in CI) and skips without one. Both kernel shapes of the
reduction and of the GEMM (one work item per tile for CPU devices, cooperative work groups with
local-memory trees / tiles for GPUs) are forced in turn, so PoCL tests the GPU code path too.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, DTYPES, NO_DEVICE, dev, has_device, host  # noqa: E402

pytest.importorskip("ember_opencl")
from ember_opencl.kernels import index as index_k  # noqa: E402
from ember_opencl.kernels import linalg, reduce  # noqa: E402
from ember_opencl.kernels import random as random_k  # noqa: E402


pytestmark = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def sample(rng, shape, dtype):
    a = rng.standard_normal(shape) * 20
    return (a > 0) if dtype == "bool" else a.astype(dtype)


@pytest.fixture(params=["cpu", "gpu"])
def shape_kind(request, monkeypatch):
    """Force the kernels' work-group shape: "cpu" (one work item per tile) or "gpu" (local-memory trees)."""
    monkeypatch.setattr(reduce, "FORCE_SHAPE", request.param)
    monkeypatch.setattr(linalg, "FORCE_SHAPE", request.param)
    return request.param


# ---------------------------------------------------------------- sum / amax
REDUCTIONS = [((), None), ((7,), None), ((3, 4), 0), ((3, 4), 1), ((3, 4, 5), (0, 2)), ((2, 3, 4), []),
              ((4, 5, 6), -1), ((3, 0), 1), ((50_000,), None), ((5, 20_000), 1), ((20_000, 5), 0)]


def _sum_ref(a, dim, keepdim, dtype=None):
    cd = dtype or (np.int64 if a.dtype.kind in "biu" else a.dtype)
    ax = None if dim is None or (isinstance(dim, list) and not dim) else dim
    return np.sum(a.astype(cd), axis=ax, keepdims=keepdim if a.ndim else False)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", REDUCTIONS)
def test_sum_and_amax_match_numpy(shape_kind, dtype, shape, dim):
    rng = np.random.default_rng(0)
    a = sample(rng, shape, dtype)
    x = dev(a)
    for keepdim in (False, True):
        got = host(ember.sum(x, dim=dim, keepdim=keepdim) if dim is not None else ember.sum(x))
        want = _sum_ref(a, dim, keepdim and dim is not None)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype != "float32" else 2e-4)
        if a.size:
            ax = None if dim is None or (isinstance(dim, list) and not dim) else dim
            got = host(ember.amax(x, dim=dim if dim is not None else (), keepdim=keepdim))
            np.testing.assert_array_equal(got, np.max(a, axis=ax, keepdims=keepdim))


def test_sum_two_stage_large(shape_kind):
    """A full sum of 3M elements goes through partials; int64 sums are exact, float32 close."""
    a = np.arange(3_000_000, dtype=np.int64) - 1_000_000
    assert host(ember.sum(dev(a))) == a.sum()
    f = np.random.default_rng(1).random(3_000_001).astype(np.float32)
    np.testing.assert_allclose(host(ember.sum(dev(f))), f.astype(np.float64).sum(), rtol=1e-5)
    np.testing.assert_array_equal(host(ember.amax(dev(f))), f.max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((300, 200), 0), ((10, 50, 70), 1), ((20, 30, 80), (0, 1)),
                                       ((3, 40, 5, 130), (1, 2))])
def test_reductions_over_leading_dims(dtype, shape, dim):
    """The columns kernel (innermost kept dim contiguous, reduced dims strided), NaN included."""
    a = sample(np.random.default_rng(9), shape, dtype)
    if dtype.startswith("float"):
        a.reshape(-1)[17] = np.nan
    x = dev(a)
    for keepdim in (False, True):
        np.testing.assert_allclose(host(ember.sum(x, dim=dim, keepdim=keepdim)), _sum_ref(a, dim, keepdim),
                                   rtol=1e-5)
        np.testing.assert_array_equal(host(ember.amax(x, dim=dim, keepdim=keepdim)),
                                      np.max(a, axis=dim, keepdims=keepdim))


def test_reduce_strided_views_and_out_strides():
    a = np.random.default_rng(2).standard_normal((40, 30, 6)).astype(np.float32)
    x = dev(a)
    v = x.permute(2, 0, 1)[1:, ::3, 5:]                    # transposed, sliced, offset
    np.testing.assert_allclose(host(ember.sum(v, dim=(0, 2))), a.transpose(2, 0, 1)[1:, ::3, 5:].sum((0, 2)),
                               rtol=1e-5)
    e = x[:, :1, :1].expand(40, 30, 6)                      # 0-strides
    np.testing.assert_allclose(host(ember.sum(e, dim=1)), np.broadcast_to(a[:, :1, :1], (40, 30, 6)).sum(1),
                               rtol=1e-5)
    out = ember.zeros(6, 40, device=DEV).t()                # a transposed out=
    ember.sum(x, dim=1, out=out)
    np.testing.assert_allclose(host(out), a.sum(1), rtol=1e-5)


def test_sum_dtype_argument_and_wrapping():
    a = np.full(1000, 100, np.int8)
    assert host(ember.sum(dev(a))) == 100_000                         # ints accumulate in int64
    assert host(ember.sum(dev(a), dtype=ember.int8)) == np.sum(a, dtype=np.int8)   # wraps as numpy
    assert host(ember.sum(dev(a), dtype=ember.float32)) == 100_000.0
    b = np.arange(10) % 3 == 0
    assert host(ember.sum(dev(b), dtype=ember.bool)) == np.True_       # a logical or, as numpy's
    assert host(ember.sum(dev(b))) == 4
    f = np.array([[1.5, -2.7], [3.9, 4.1]])
    np.testing.assert_array_equal(host(ember.sum(dev(f), dim=0, dtype=ember.int32)), np.sum(f, 0, dtype=np.int32))


def test_nan_propagates():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    a[1, 3] = np.nan
    np.testing.assert_array_equal(host(ember.amax(dev(a), dim=1)), np.max(a, 1))
    np.testing.assert_array_equal(host(ember.sum(dev(a), dim=0)), np.sum(a, 0))
    assert np.isnan(host(ember.amax(dev(a))))
    big = np.zeros(100_000, np.float64)
    big[77_777] = np.nan
    assert np.isnan(host(ember.amax(dev(big)))) and np.isnan(host(ember.sum(dev(big))))


def test_amax_integer_extremes_and_bool():
    a = np.array([[-128, -128], [-5, -128]], np.int8)
    np.testing.assert_array_equal(host(ember.amax(dev(a), dim=1)), [-128, -5])
    u = np.array([0, 255, 7], np.uint8)
    assert host(ember.amax(dev(u))) == 255
    assert host(ember.amax(dev(np.array([False, False])))) == np.False_
    assert host(ember.amax(dev(np.array([False, True])))) == np.True_


# ---------------------------------------------------------------- bmm
BMM_SHAPES = [(1, 1, 1, 1), (2, 3, 4, 5), (3, 97, 130, 65), (1, 200, 300, 7), (2, 5, 0, 3), (0, 2, 2, 2),
              (1, 6, 257, 16)]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("b,n,m,p", BMM_SHAPES)
def test_bmm_matches_numpy(shape_kind, dtype, b, n, m, p):
    rng = np.random.default_rng(3)
    a, c = sample(rng, (b, n, m), dtype), sample(rng, (b, m, p), dtype)
    want = np.matmul(a, c)                            # integers wrap, as numpy's
    got = host(ember.bmm(dev(a), dev(c)))
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype.startswith("float"):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_bmm_any_strides(shape_kind, dtype):
    rng = np.random.default_rng(4)
    a, c = sample(rng, (3, 70, 40), dtype), sample(rng, (3, 90, 50), dtype)
    x = dev(np.ascontiguousarray(a.transpose(0, 2, 1))).transpose(1, 2)    # column-major operand
    y = dev(c)[:, 5:45, ::2]                                                  # sliced, offset, stride 2
    want = np.matmul(a, c[:, 5:45, ::2])
    got = host(ember.bmm(x, y))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    z = dev(c[:1])[:, :40, :].expand(3, 40, 50)                               # batch stride 0
    np.testing.assert_allclose(host(ember.bmm(x, z)), np.matmul(a, np.broadcast_to(c[:1, :40], (3, 40, 50))),
                               rtol=1e-4, atol=1e-3)
    out = ember.zeros(3, 25, 70, dtype=getattr(ember, dtype), device=DEV).transpose(1, 2)   # strided out=
    ember.bmm(x, y, out=out)
    np.testing.assert_allclose(host(out), want, rtol=1e-4, atol=1e-3)


def test_bmm_out_aliasing_an_operand_and_matmul():
    a = np.random.default_rng(5).standard_normal((2, 8, 8)).astype(np.float32)
    x = dev(a)
    ember.bmm(x, x, out=x)                           # computed into a temporary first
    np.testing.assert_allclose(host(x), np.matmul(a, a), rtol=1e-5, atol=1e-5)
    m = np.random.default_rng(6).standard_normal((130, 70)).astype(np.float32)
    np.testing.assert_allclose(host(dev(m) @ dev(m.T.copy())), m @ m.T, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- gather / scatter_add
INDEX_CASES = [((5,), (7,), 0), ((4, 5), (6, 3), 0), ((4, 5), (3, 9), 1), ((3, 4, 5), (2, 4, 3), 2), ((), (), 0),
               ((3, 4), (0, 2), 1), ((300, 4), (2000, 3), 0)]


def _coords(i, dim):
    return tuple(i if d == dim else np.arange(i.shape[d]).reshape([-1 if k == d else 1 for k in range(i.ndim)])
                 for d in range(i.ndim))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,ishape,dim", INDEX_CASES)
def test_gather_and_scatter_add_match_numpy(dtype, shape, ishape, dim):
    rng = np.random.default_rng(7)
    a = sample(rng, shape, dtype)
    size = 1 if a.ndim == 0 else shape[dim]
    idx = rng.integers(0, size, ishape)
    src = sample(rng, tuple(s + 1 for s in ishape), dtype) if ishape else sample(rng, (), dtype)
    a1, i1, s1 = (v.reshape(1) if v.ndim == 0 else v for v in (a, idx, src))
    sub = a1[tuple(slice(None) if d == dim else slice(0, i1.shape[d]) for d in range(a1.ndim))]
    want = np.take_along_axis(sub, i1, axis=dim).reshape(idx.shape)
    np.testing.assert_array_equal(host(ember.gather(dev(a), dim, dev(idx))), want)
    o = a1.copy()
    if i1.size:
        np.add.at(o, _coords(i1, dim), s1[tuple(slice(0, s) for s in i1.shape)])   # duplicates accumulate
    got = host(ember.scatter_add(dev(a), dim, dev(idx), dev(src)))
    assert got.shape == a.shape
    if dtype.startswith("float"):
        np.testing.assert_allclose(got, o.reshape(a.shape), rtol=1e-5)
    else:
        np.testing.assert_array_equal(got, o.reshape(a.shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add_heavy_duplicates_is_atomic(dtype):
    """10000 adds into 3 elements: every one must land (sub-word types use CAS on the whole word)."""
    n = 10_000
    x = ember.zeros(7, dtype=getattr(ember, dtype), device=DEV)
    idx = dev(np.arange(n) % 3 * 2)                   # elements 0, 2, 4: their neighbours must stay 0
    x.scatter_add_(0, idx, ember.ones(n, dtype=getattr(ember, dtype), device=DEV))
    want = np.zeros(7, dtype)
    np.add.at(want, np.arange(n) % 3 * 2, np.ones(n, dtype))
    np.testing.assert_array_equal(host(x), want)


def test_index_errors_raise_before_writing():
    x = dev(np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        ember.gather(x, 1, dev(np.array([[0, 4, 5]])))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        x.scatter_add_(0, dev(np.array([[0, 1], [-1, 2]])), ember.ones(2, 2, device=DEV))
    np.testing.assert_array_equal(host(x), np.arange(12, dtype=np.float32).reshape(3, 4))   # untouched


def test_scatter_add_strided_and_aliasing():
    rng = np.random.default_rng(8)
    base = rng.standard_normal((6, 10)).astype(np.float32)
    x = dev(base)
    view = x.t()[2:7]                                      # (5, 6) view with strides (1, 10), offset 2
    idx = rng.integers(0, 6, (5, 4))
    ref = base.T[2:7].copy()
    src_np = base.T[2:7].copy()                            # src aliases out: read as it was
    np.add.at(ref, _coords(idx, 1), src_np[:, :4])
    view.scatter_add_(1, dev(idx), view)
    np.testing.assert_allclose(host(view), ref, rtol=1e-6)


# ---------------------------------------------------------------- uniform (Philox4x32-10)
def test_philox_known_answers():
    """Random123's known-answer vectors for Philox4x32-10."""
    assert random_k.philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    assert random_k.philox4x32_10([0xffffffff] * 4, [0xffffffff] * 2) == \
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
    assert random_k.philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]) == \
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]


def test_uniform_kernel_matches_reference_and_advances():
    ember.manual_seed(2**40 + 123)
    a = host(ember.rand(10, device=DEV))
    key = [123, 2**8]                                      # seed 2**40 + 123 as (low, high) words
    for blk in range(3):
        words = random_k.philox4x32_10([blk, 0, 0, 0], key)
        want = np.array([(w >> 8) * 2.0 ** -24 for w in words], np.float32)
        np.testing.assert_array_equal(a[4 * blk:4 * blk + 4], want[:len(a[4 * blk:4 * blk + 4])])
    b = host(ember.rand(10, device=DEV))                   # the state advanced: counters 3.. now
    words = random_k.philox4x32_10([3, 0, 0, 0], key)
    np.testing.assert_array_equal(b[:4], np.array([(w >> 8) * 2.0 ** -24 for w in words], np.float32))
    ember.manual_seed(2**40 + 123)
    np.testing.assert_array_equal(host(ember.rand(10, device=DEV)), a)   # same seed, same numbers


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_range_and_strided_out(dtype):
    ember.manual_seed(0)
    x = ember.empty(400, 300, dtype=getattr(ember, dtype), device=DEV).t()[::2]   # strided, 150 x 400
    x.uniform_(-2.0, 3.0)
    v = host(x)
    assert v.min() >= -2.0 and v.max() < 3.0
    assert abs(v.mean() - 0.5) < 0.05 and abs(v.std() - 5 / np.sqrt(12)) < 0.05
    assert len(np.unique(v)) > 0.99 * v.size
    tight = host(ember.empty(100_000, dtype=getattr(ember, dtype), device=DEV).uniform_(1.0, float(np.nextafter(
        np.array(1.0, dtype), np.array(2.0, dtype)))))
    assert (tight == 1.0).all()                            # never rounds up to high


def test_uniform_state_roundtrip():
    g = ember.Generator(device=DEV) if hasattr(ember, "Generator") else None
    if g is None:
        pytest.skip("no ember.Generator")
    g.manual_seed(7)
    s = g.get_state()
    a = host(ember.rand(5, generator=g, device=DEV))
    g.set_state(s)
    np.testing.assert_array_equal(host(ember.rand(5, generator=g, device=DEV)), a)


def test_index_check_flag_uses_first_bad_position():
    idx = dev(np.array([[1, 9], [7, 0]]))                  # 9 comes first in row-major order
    with pytest.raises(RuntimeError, match="index 9 is out of bounds"):
        index_k.check_index(idx, 5, 0)
