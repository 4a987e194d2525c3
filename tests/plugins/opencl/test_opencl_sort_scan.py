"""ember-opencl's native cumsum / cumprod / sort / topk (kernels/sort_scan.py) against numpy.

Runs on the first OpenCL device (PoCL in CI) and skips without one.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, DTYPES, NO_DEVICE, dev, has_device, host  # noqa: E402

pytest.importorskip("ember_opencl")
from ember_opencl.kernels import sort_scan  # noqa: E402


pytestmark = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)
NP_SUM = {"bool": np.int64, "uint8": np.int64, "int8": np.int64, "int16": np.int64, "int32": np.int64,
          "int64": np.int64, "float32": np.float32, "float64": np.float64}


def _data(dtype, shape, rng, lo=-5, hi=6):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(lo, hi, shape).astype(dtype)


def test_registered_natively():
    """The four ops resolve to this module's kernels (not composites) for every tested dtype."""
    from ember import _dispatch
    for op in ("cumsum", "cumprod", "sort", "topk"):
        for name in DTYPES:
            if op == "topk" and name == "bool":
                continue
            key = ("opencl", "strided", getattr(ember, name))
            assert _dispatch.ops[op].source(key) == "native", (op, name)
            assert _dispatch.ops[op].resolve(key) is getattr(sort_scan, op), (op, name)


# ---------------------------------------------------------------- scans
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_dims_and_strides(op, dtype):
    rng = np.random.default_rng(0)
    a = _data(dtype, (3, 5, 7), rng, -3, 4)
    x = dev(a)
    f = getattr(np, op)
    for view, av in ((x, a), (x.transpose(0, 2), a.transpose(2, 1, 0)), (x[:, 1:5:2, ::3], a[:, 1:5:2, ::3])):
        for d in range(3):
            got = host(getattr(ember, op)(view, d))
            want = f(av.astype(NP_SUM[dtype]), axis=d)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scan_integer_wrap_and_dtype_arg():
    a = np.array([100, 100, 100, -128, -1], dtype=np.int8)
    x = dev(a)
    got = host(ember.cumsum(x, 0, dtype=ember.int8))
    assert got.tolist() == np.cumsum(a, dtype=np.int8).tolist()       # wraps like numpy
    big = np.array([2 ** 62, 2 ** 62, 3], dtype=np.int64)
    assert host(ember.cumsum(dev(big), 0)).tolist() == np.cumsum(big).tolist()
    assert host(ember.cumprod(dev(big), 0)).tolist() == np.cumprod(big).tolist()
    f = np.array([1.5, -2.7, 3.9], dtype=np.float32)
    got = host(ember.cumsum(dev(f), 0, dtype=ember.int32))            # converts (truncates) first
    assert got.dtype == np.int32 and got.tolist() == [1, -1, 2]
    i = np.array([1, 2, 3], dtype=np.int32)
    got = host(ember.cumprod(dev(i), 0, dtype=ember.float64))
    assert got.dtype == np.float64 and got.tolist() == [1.0, 2.0, 6.0]
    b = np.array([0, 2, 0, 1], dtype=np.int16)
    assert host(ember.cumsum(dev(b), 0, dtype=ember.bool)).tolist() == [False, True, True, True]
    assert host(ember.cumprod(dev(np.array([1, 3, 0, 1], np.int16)), 0, dtype=ember.bool)).tolist() == \
        [True, True, False, False]


def test_scan_nan_zero_dim_empty_inplace():
    f = np.array([1.0, np.nan, 2.0])
    assert np.isnan(host(ember.cumsum(dev(f), 0))[1:]).all()
    s = host(ember.cumsum(dev(np.float32(4.0)), 0))
    assert s.shape == () and s == 4.0
    e = ember.cumsum(dev(np.zeros((0, 3), np.float32)), 1)
    assert tuple(e.shape) == (0, 3)
    a = np.arange(1, 13, dtype=np.float64).reshape(3, 4)
    x = dev(np.ascontiguousarray(a.T)).transpose(0, 1)        # (3, 4) with strides (1, 3)
    assert tuple(x.stride()) == (1, 3)
    x.cumprod_(1)
    np.testing.assert_allclose(host(x), np.cumprod(a, axis=1))


def test_scan_long_row_float_accuracy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(200_000)
    np.testing.assert_allclose(host(ember.cumsum(dev(a), 0)), np.cumsum(a), rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- sort / topk
def _np_perm(a, axis, descending):
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    p = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return a.shape[axis] - 1 - np.flip(p, axis)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_any_dim(dtype, descending):
    rng = np.random.default_rng(2)
    a = _data(dtype, (4, 37, 6), rng, -4, 5)                   # many ties: stability matters
    x = dev(a)
    for view, av in ((x, a), (x.transpose(1, 2), a.transpose(0, 2, 1)), (x[::2, 3:, 1::2], a[::2, 3:, 1::2])):
        for d in range(3):
            r = ember.sort(view, d, descending)
            p = _np_perm(av, d, descending)
            assert host(r.indices).dtype == np.int64
            np.testing.assert_array_equal(host(r.indices), p)
            np.testing.assert_array_equal(host(r.values), np.take_along_axis(av, p, axis=d))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sort_nan_and_signed_zero(dtype):
    a = np.array([3.0, np.nan, -0.0, 1.0, np.nan, 0.0, -np.inf, np.inf, 1.0], dtype=dtype)
    for desc in (False, True):
        r = ember.sort(dev(a), 0, desc)
        p = _np_perm(a, 0, desc)
        np.testing.assert_array_equal(host(r.indices), p)
        np.testing.assert_array_equal(host(r.values), a[p])
    assert np.isnan(host(ember.sort(dev(a), 0).values)[-2:]).all()
    assert np.isnan(host(ember.sort(dev(a), 0, True).values)[:2]).all()


def test_sort_large_rows():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 10_001)).astype(np.float32)
    r = ember.sort(dev(a), 1)
    np.testing.assert_array_equal(host(r.values), np.sort(a, axis=1))
    np.testing.assert_array_equal(host(r.indices), np.argsort(a, axis=1, kind="stable"))
    big = rng.integers(0, 1000, 300_000).astype(np.int64)
    r = ember.sort(dev(big), 0, True)
    np.testing.assert_array_equal(host(r.indices), _np_perm(big, 0, True))


def test_sort_zero_dim_and_empty():
    r = ember.sort(dev(np.float32(2.5)))
    assert host(r.values) == 2.5 and host(r.indices) == 0
    r = ember.sort(dev(np.zeros((2, 0), np.int32)), 1)
    assert tuple(r.values.shape) == (2, 0)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest):
    rng = np.random.default_rng(4)
    a = _data(dtype, (5, 23), rng, -6, 7)
    x = dev(a)
    for d, k in ((1, 0), (1, 4), (1, 23), (0, 3)):
        r = ember.topk(x, k, d, largest)
        p = np.take(_np_perm(a, d, largest), np.arange(k), axis=d)
        np.testing.assert_array_equal(host(r.indices), p)
        np.testing.assert_array_equal(host(r.values), np.take_along_axis(a, p, axis=d))


def test_topk_nan_counts_largest():
    a = np.array([1.0, np.nan, 5.0, 2.0], dtype=np.float32)
    r = ember.topk(dev(a), 2)
    assert np.isnan(host(r.values)[0]) and host(r.values)[1] == 5.0
    assert host(r.indices).tolist() == [1, 2]
    r = ember.topk(dev(a), 2, largest=False)
    assert host(r.values).tolist() == [1.0, 2.0]


def test_into_strided_out():
    """Outputs with non-contiguous strides (out= views) are written in place."""
    a = np.array([[3, 1, 2], [9, 7, 8]], dtype=np.int32)
    vals = ember.empty((3, 2), dtype=ember.int32, device=DEV).transpose(0, 1)
    idx = ember.empty((3, 2), dtype=ember.int64, device=DEV).transpose(0, 1)
    ember.sort(dev(a), 1, out=(vals, idx))
    assert host(vals).tolist() == [[1, 2, 3], [7, 8, 9]]
    assert host(idx).tolist() == [[1, 2, 0], [1, 2, 0]]


def test_scan_into_float16_matches_cpu():
    """dtype=float16 (a storage-only type on PoCL): accumulated in float32, rounded when stored, as ember-cpu."""
    a = np.array([0.3, 1.7, 2.25, -1.1, 1e-3], dtype=np.float64)
    for op in ("cumsum", "cumprod"):
        got = getattr(ember, op)(dev(a), 0, dtype=ember.float16)
        want = getattr(ember, op)(ember.tensor(a), 0, dtype=ember.float16)
        assert got.dtype == ember.float16
        np.testing.assert_array_equal(host(got), np.asarray(want.numpy()))


@pytest.mark.parametrize("k", [1, 7, sort_scan.TOPK_SMALL, sort_scan.TOPK_SMALL + 1, 300])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_both_paths_with_ties_and_nan(k, largest):
    """k <= TOPK_SMALL runs the one-pass kernel, larger k the sort: both are the stable sort's first k."""
    rng = np.random.default_rng(5)
    a = rng.integers(-20, 20, (6, 500)).astype(np.float32)
    a[rng.random(a.shape) < 0.02] = np.nan
    x = dev(a).transpose(0, 1)                                   # dim 0 of a strided view
    r = ember.topk(x, k, 0, largest)
    p = np.take(_np_perm(a.T, 0, largest), np.arange(k), axis=0)
    np.testing.assert_array_equal(host(r.indices), p)
    np.testing.assert_array_equal(host(r.values), np.take_along_axis(a.T, p, axis=0))
