"""ember-opencl's native index_select, scatter, index_add, masked_fill, take and index kernels
against numpy: any strides, negative indices, int32 / int64 indices, ember-cpu's error messages
raised before anything is written. Runs on the first OpenCL device and skips without one."""
from __future__ import annotations

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, DTYPES, NO_DEVICE, dev, has_device, host  # noqa: E402

pytest.importorskip("ember_opencl")
from ember_opencl.kernels import indexing  # noqa: E402


pytestmark = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)


def sample(rng, shape, dtype):
    a = rng.standard_normal(shape) * 20
    return (a > 0) if dtype == "bool" else a.astype(dtype)


def test_kernels_are_native():
    """The ops run this module's kernels (their programs are in the device's build cache), not composites."""
    from ember_opencl._runtime import RUNTIME
    state = RUNTIME.state(0)
    x = dev(np.arange(12, dtype=np.float32).reshape(3, 4))
    x.index_select(1, dev(np.array([3, 0])))
    x.take(dev(np.array([-1])))
    x.masked_fill(dev(np.array([True, False, True, False])), 1.0)
    x[dev(np.array([0, 2]))]
    names = {name for _, name in state.kernels}
    assert {"ember_index_select", "ember_take", "ember_masked_fill", "ember_index"} <= names


# ---------------------------------------------------------------- index_select
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idt", ["int64", "int32"])
def test_index_select_matches_numpy(dtype, idt):
    rng = np.random.default_rng(0)
    a = sample(rng, (4, 5, 6), dtype)
    for dim in (0, 1, -1):
        i = rng.integers(0, a.shape[dim], 7).astype(idt)
        got = host(ember.index_select(dev(a), dim, dev(i)))
        np.testing.assert_array_equal(got, np.take(a, i, axis=dim))


def test_index_select_strided_inputs_and_scalars():
    a = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    x = dev(a).permute(2, 0, 1)[1:, :, ::2]                 # non-contiguous, storage offset
    i = dev(np.array([3, 0, 1, 3], dtype=np.int64))[::2]         # [3, 1]
    want = np.take(a.transpose(2, 0, 1)[1:, :, ::2], [3, 1], axis=0)
    np.testing.assert_array_equal(host(x.index_select(0, i)), want)
    s = dev(np.array(7.5))
    np.testing.assert_array_equal(host(s.index_select(0, dev(np.array([0])))), np.array(7.5))
    assert tuple(s.index_select(0, dev(np.array(0))).shape) == ()


def test_index_select_errors():
    x = dev(np.arange(6, dtype=np.int32).reshape(2, 3))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(1, dev(np.array([0, 3])))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(1, dev(np.array([-1])))                  # no wrapping, as PyTorch


# ---------------------------------------------------------------- scatter
def _coords(i, dim):
    return tuple(i if d == dim else np.arange(i.shape[d]).reshape([-1 if k == d else 1 for k in range(i.ndim)])
                 for d in range(i.ndim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_src_and_value_match_numpy(dtype):
    rng = np.random.default_rng(1)
    a = sample(rng, (5, 6), dtype)
    src = sample(rng, (5, 7), dtype)
    for dim in (0, 1):
        # unique targets along dim (a permutation's leading block), so the result is defined
        n = a.shape[dim]
        i = np.stack([rng.permutation(n)[:3] for _ in range(4)], axis=1 - dim) if dim == 0 else \
            np.stack([rng.permutation(n)[:3] for _ in range(4)], axis=0)
        want = a.copy()
        want[_coords(i, dim)] = src[:i.shape[0], :i.shape[1]]
        np.testing.assert_array_equal(host(ember.scatter(dev(a), dim, dev(i), dev(src))), want)
        want = a.copy()
        want[_coords(i, dim)] = np.asarray(3).astype(dtype)
        np.testing.assert_array_equal(host(ember.scatter(dev(a), dim, dev(i), value=3)), want)


def test_scatter_value_conversion_inplace_strided_and_reduce():
    base = dev(np.zeros((4, 6), dtype=np.uint8))
    view = base[:, ::2]                                       # strided in-place target
    idx = dev(np.array([[2, 0, 1]], dtype=np.int64))
    view.scatter_(1, idx, value=-1)                           # C conversion: -1 -> 255
    want = np.zeros((4, 6), np.uint8)
    want[0, [4, 0, 2]] = 255
    np.testing.assert_array_equal(host(base), want)
    f = dev(np.ones((2, 3), np.float32))
    r = f.scatter(1, dev(np.array([[0, 0], [2, 1]])), dev(np.full((2, 2), 2.0, np.float32)), reduce="add")
    np.testing.assert_array_equal(host(r), [[5, 1, 1], [1, 3, 3]])


def test_scatter_errors_leave_self_untouched():
    x = dev(np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.scatter_(1, dev(np.array([[0, 3], [-1, 1]])), dev(np.ones((2, 2), np.float32)))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1 with size 3"):
        x.scatter_(1, dev(np.array([[0, 1], [-1, 1]])), value=5.0)
    np.testing.assert_array_equal(host(x), np.zeros((2, 3)))


# ---------------------------------------------------------------- index_add
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idt", ["int64", "int32"])
def test_index_add_accumulates_repeats(dtype, idt):
    rng = np.random.default_rng(2)
    a = sample(rng, (5, 4), dtype)
    i = np.array([0, 3, 3, 1, 0, 3], dtype=idt)
    s = sample(rng, (6, 4), dtype)
    want = a.copy()
    if dtype == "bool":
        np.logical_or.at(want, i, s)
    else:
        np.add.at(want, i, s)
    got = host(ember.index_add(dev(a), 0, dev(i), dev(s)))
    if dtype.startswith("float"):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def test_index_add_alpha_dim_strides_and_inplace():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    x = dev(a.copy())
    view = x[:, 1::2]                                         # (4, 3) strided, storage offset 1
    src = dev(np.arange(8, dtype=np.float64).reshape(2, 4)).t()   # (4, 2) transposed
    view.index_add_(1, dev(np.array([2, 2], dtype=np.int32)), src, alpha=0.5)
    want = a.copy()
    want[:, 5] += 0.5 * (np.arange(8).reshape(2, 4).T.sum(axis=1))
    np.testing.assert_allclose(host(x), want)
    xi = dev(np.zeros(3, np.int16))
    r = xi.index_add(0, dev(np.array([1, 1])), dev(np.array([3, 4], np.int16)), alpha=2.9)   # int(alpha) = 2
    np.testing.assert_array_equal(host(r), [0, 14, 0])
    np.testing.assert_array_equal(host(xi), [0, 0, 0])


def test_index_add_errors_leave_self_untouched():
    x = dev(np.zeros((3, 2), np.int64))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_add_(0, dev(np.array([0, 3])), dev(np.ones((2, 2), np.int64)))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        x.index_add_(0, dev(np.array([-1, 0])), dev(np.ones((2, 2), np.int64)))
    np.testing.assert_array_equal(host(x), np.zeros((3, 2)))


# ---------------------------------------------------------------- masked_fill
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill_broadcasts(dtype):
    rng = np.random.default_rng(3)
    a = sample(rng, (3, 1, 5), dtype)
    m = rng.random((4, 5)) > 0.5
    value = True if dtype == "bool" else 7
    got = host(ember.masked_fill(dev(a), dev(m), value))
    want = np.where(m, np.asarray(value).astype(dtype), a)
    assert got.shape == (3, 4, 5)
    np.testing.assert_array_equal(got, want)


def test_masked_fill_inplace_strided_and_conversions():
    a = np.arange(30, dtype=np.int8).reshape(5, 6)
    x = dev(a.copy())
    view = x.t()[::2]                                         # (3, 5), non-contiguous
    m = np.array([True, False, False, True, True])
    view.masked_fill_(dev(m), 2.7)                            # C conversion: 2
    want = a.copy()
    want.T[::2][:, m] = 2
    np.testing.assert_array_equal(host(x), want)
    u = dev(np.zeros(4, np.uint8)).masked_fill(dev(np.array([True, False, True, False])), -1)
    np.testing.assert_array_equal(host(u), [255, 0, 255, 0])
    s = dev(np.zeros((2, 2), np.float32)).masked_fill(dev(np.array(True)), float("nan"))
    assert np.isnan(host(s)).all()


# ---------------------------------------------------------------- take
@pytest.mark.parametrize("dtype", DTYPES)
def test_take_strided_negative(dtype):
    rng = np.random.default_rng(4)
    a = sample(rng, (6, 7), dtype)
    x = dev(a).t()[1:]                                        # (6, 6) transposed view
    ref = a.T[1:].reshape(-1)
    i = rng.integers(-ref.size, ref.size, (3, 4))
    np.testing.assert_array_equal(host(x.take(dev(i))), ref[i])
    np.testing.assert_array_equal(host(x.take(dev(i).t())), ref[i.T])


def test_take_errors():
    x = dev(np.arange(6, dtype=np.float32))
    with pytest.raises(IndexError, match=r"out of range: tried to access index 6 on a tensor of 6 elements\."):
        x.take(dev(np.array([0, 6, 9])))
    with pytest.raises(IndexError, match="tried to access index -7"):
        x.take(dev(np.array([-7])))
    with pytest.raises(IndexError, match="take\\(\\): tried to take from an empty tensor"):
        dev(np.zeros(0, np.float32)).take(dev(np.array([0])))
    assert host(dev(np.array(5.0)).take(dev(np.array([0, -1])))).tolist() == [5.0, 5.0]


# ---------------------------------------------------------------- index (advanced indexing)
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_adjacent_separated_and_broadcast(dtype):
    rng = np.random.default_rng(5)
    a = sample(rng, (4, 5, 6, 3), dtype)
    x = dev(a)
    i = rng.integers(-4, 4, (2, 3))
    j = rng.integers(-5, 5, (3,))
    k = rng.integers(-6, 6, (2, 1))
    np.testing.assert_array_equal(host(x[dev(i)]), a[i])
    np.testing.assert_array_equal(host(x[dev(i), dev(j)]), a[i, j])                 # adjacent, broadcast
    np.testing.assert_array_equal(host(x[:, dev(j), dev(k)]), a[:, j, k])           # adjacent, in the middle
    np.testing.assert_array_equal(host(x[dev(i), :, dev(k)]), a[i, :, k])           # separated: to the front
    np.testing.assert_array_equal(host(x[dev(np.int64(-1)), dev(j)]), a[-1, j])       # 0-dim index


def test_index_strided_self_int32_and_strided_index():
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    x = dev(a).permute(2, 0, 1)[::2]                          # (3, 4, 5) non-contiguous
    ref = a.transpose(2, 0, 1)[::2]
    i = np.array([[2, -1, 0, 1]], dtype=np.int32)
    j = dev(np.array([4, 0, 3, 1, 2, 0, 1, 1], dtype=np.int64))[::2]    # strided: [4, 3, 2, 1]
    np.testing.assert_array_equal(host(x[:, dev(i), j]), ref[:, i, [4, 3, 2, 1]])
    np.testing.assert_array_equal(host(x[dev(i)[0]]), ref[i[0]])
    m = dev(ref > 50)                                         # a bool mask becomes nonzero indices
    np.testing.assert_array_equal(host(x[m]), ref[ref > 50])


def test_index_errors_name_the_index_position():
    x = dev(np.zeros((3, 4), np.float32))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 3"):
        x[dev(np.array([0, 4]))]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        x[dev(np.array([0])), dev(np.array([1, -5, 9]))]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x[:, dev(np.array([[4]]))]


def test_index_check_reports_first_bad_in_row_major_order():
    i = dev(np.array([[0, 1, 7], [-9, 2, 8]])).t()            # row-major over the view: 0, -9, 1, 2, 7, 8
    assert indexing.first_bad(i, 0, 3) == -9
    assert indexing.first_bad(i, -9, 9) is None
    assert indexing.first_bad(i, -8, 9) == -9
    assert indexing.first_bad(dev(np.zeros(0, np.int64)), 0, 1) is None
