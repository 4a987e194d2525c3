"""ember-opencl's native unique / unique_consecutive (kernels/unique.py) against numpy.

Runs on the first OpenCL device (PoCL in CI) and skips without one.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, DTYPES, NO_DEVICE, dev, has_device, host  # noqa: E402

pytest.importorskip("ember_opencl")
from ember_opencl.kernels import unique as uq  # noqa: E402


pytestmark = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)


def _data(dtype, shape, rng):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(-4, 5, shape).astype(dtype)


def _np_consecutive(a):
    x = a.reshape(-1)
    n = x.shape[0]
    change = x[1:] != x[:-1]
    starts = np.flatnonzero(np.concatenate([[True], change])) if n else np.zeros(0, np.int64)
    inv = np.cumsum(np.concatenate([[0], change])).astype(np.int64) if n else np.zeros(0, np.int64)
    return x[starts], inv.reshape(a.shape), np.diff(np.append(starts, n))


def test_registered_natively():
    from ember import _dispatch
    for op in ("unique", "unique_consecutive"):
        for name in DTYPES:
            key = ("opencl", "strided", getattr(ember, name))
            assert _dispatch.ops[op].source(key) == "native", (op, name)
            assert _dispatch.ops[op].resolve(key) is getattr(uq, op), (op, name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (), (1,), (7, 5), (3, 4, 6), (5000,)])
def test_unique_flat(dtype, shape):
    rng = np.random.default_rng(len(shape) * 7 + DTYPES.index(dtype))
    a = _data(dtype, shape, rng)
    v, i, c = ember.unique(dev(a), return_inverse=True, return_counts=True)
    ev, ei, ec = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
    assert v.dtype == getattr(ember, dtype) and i.dtype == ember.int64 and c.dtype == ember.int64
    np.testing.assert_array_equal(host(v), ev)
    np.testing.assert_array_equal(host(i), ei.reshape(a.shape))
    np.testing.assert_array_equal(host(c), ec)
    assert tuple(i.shape) == a.shape


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_consecutive_flat(dtype):
    rng = np.random.default_rng(3 + DTYPES.index(dtype))
    a = np.repeat(_data(dtype, (40,), rng), rng.integers(1, 4, 40)).reshape(-1)
    a = a[: (a.size // 6) * 6].reshape(-1, 6)
    v, i, c = ember.unique_consecutive(dev(a), return_inverse=True, return_counts=True)
    ev, ei, ec = _np_consecutive(a)
    np.testing.assert_array_equal(host(v), ev)
    np.testing.assert_array_equal(host(i), ei)
    np.testing.assert_array_equal(host(c), ec)
    assert int(host(c).sum()) == a.size


def test_non_contiguous_and_offset_inputs():
    rng = np.random.default_rng(11)
    a = rng.integers(0, 6, (8, 9)).astype(np.int32)
    t = dev(a).t()[1:, ::2]                                 # transposed, offset, strided
    b = a.T[1:, ::2]
    v, i, c = ember.unique(t, return_inverse=True, return_counts=True)
    ev, ei, ec = np.unique(b.reshape(-1), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(v), ev)
    np.testing.assert_array_equal(host(i), ei.reshape(b.shape))
    np.testing.assert_array_equal(host(c), ec)
    v, i, c = ember.unique_consecutive(t, return_inverse=True, return_counts=True)
    ev, ei, ec = _np_consecutive(np.ascontiguousarray(b))
    np.testing.assert_array_equal(host(v), ev)
    np.testing.assert_array_equal(host(i), ei)
    np.testing.assert_array_equal(host(c), ec)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_distinct_and_signed_zero(dtype):
    a = np.array([2.0, np.nan, -0.0, 1.0, np.nan, 0.0, 2.0, np.inf, -np.inf], dtype=dtype)
    v, i, c = ember.unique(dev(a), return_inverse=True, return_counts=True)
    hv = host(v)
    np.testing.assert_array_equal(hv, np.array([-np.inf, 0.0, 1.0, 2.0, np.inf, np.nan, np.nan], dtype))
    np.testing.assert_array_equal(host(c), [1, 2, 1, 2, 1, 1, 1])
    hi = host(i)
    np.testing.assert_array_equal(hv[hi], a)                # every element maps back (NaN == NaN here)
    assert hi[1] != hi[4]                                   # each NaN is its own group
    v, i, c = ember.unique_consecutive(dev(np.array([np.nan, np.nan, 1.0, 1.0], dtype)),
                                       return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(c), [1, 1, 2])
    np.testing.assert_array_equal(host(i), [0, 1, 2, 2])


def test_dim_goes_through_the_composite():
    a = np.array([[1, 2, 1], [0, 5, 0], [1, 2, 1], [1, 2, 1]], dtype=np.int64)
    v, i, c = ember.unique(dev(a), dim=0, return_inverse=True, return_counts=True)
    ev, ei, ec = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(v), ev)
    np.testing.assert_array_equal(host(i), ei.reshape(-1))
    np.testing.assert_array_equal(host(c), ec)
    v, i, c = ember.unique_consecutive(dev(a), dim=1, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(v), a[:, :3])
    np.testing.assert_array_equal(host(i), [0, 1, 2])
    np.testing.assert_array_equal(host(c), [1, 1, 1])


def test_return_forms():
    t = dev(np.array([3, 3, 1], np.int32))
    assert isinstance(ember.unique(t), ember.Tensor)
    v, i = ember.unique(t, return_inverse=True)
    np.testing.assert_array_equal(host(i), [1, 1, 0])
    v, c = ember.unique_consecutive(t, return_counts=True)
    np.testing.assert_array_equal(host(c), [2, 1])
