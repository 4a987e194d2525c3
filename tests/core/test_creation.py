"""Creation ops against numpy references (tensor, zeros, full, arange, linspace, eye, *_like, new_*)."""
import numpy as np
import pytest

import ember


@pytest.mark.parametrize("data,dtype", [
    ([1.0, 2.0], ember.float32), ([1, 2], ember.int64), ([True, False], ember.bool), (3.5, ember.float32),
    ([[1, 2], [3, 4]], ember.int64), ([1 + 2j], ember.complex64), ([], ember.float32),
])
def test_tensor_infers_dtype_like_pytorch(data, dtype):
    t = ember.tensor(data)
    assert t.dtype is dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))


def test_tensor_from_numpy_keeps_dtype_and_copies():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = ember.tensor(a)
    assert t.dtype is ember.float64 and t.shape == (2, 3)
    a[0, 0] = 100
    assert t[0, 0].item() == 0 if hasattr(ember.Tensor, "__getitem__") else t.numpy()[0, 0] == 0


def test_from_numpy_shares_memory_and_as_tensor():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ember.from_numpy(a)
    a[1, 2] = -7
    assert t.numpy()[1, 2] == -7
    assert ember.as_tensor(a).numpy()[1, 2] == -7
    tt = ember.from_numpy(a.T)
    assert tt.stride() == (1, 3) and tt.numpy()[2, 1] == -7
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(a[:, ::-1])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.uint16"):
        ember.from_numpy(np.zeros(2, np.uint16))


def test_tensor_rejects_bad_data():
    with pytest.raises(TypeError):
        ember.tensor([1, "a"])


@pytest.mark.parametrize("fn,ref,fill", [(ember.zeros, np.zeros, 0), (ember.ones, np.ones, 1)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int32, ember.bool, ember.float16,
                                   ember.bfloat16, ember.complex64])
def test_zeros_ones(fn, ref, fill, dtype):
    t = fn(2, 3, dtype=dtype)
    assert t.shape == (2, 3) and t.dtype is dtype and t.is_contiguous()
    assert (t.numpy().astype(np.float64) == fill).all()
    assert fn((2, 3)).shape == (2, 3) and fn([4]).shape == (4,) and fn(()).shape == ()


def test_full_infers_dtype():
    assert ember.full((2,), 3).dtype is ember.int64
    assert ember.full((2,), 3.0).dtype is ember.float32
    assert ember.full((2,), True).dtype is ember.bool
    np.testing.assert_array_equal(ember.full((2, 2), 7, dtype=ember.int8).numpy(), np.full((2, 2), 7, np.int8))


def test_negative_size_raises():
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ember.zeros(2, -1)


def test_like_and_new():
    x = ember.ones(2, 3, dtype=ember.float64)
    for f in (ember.zeros_like, ember.ones_like, ember.empty_like):
        y = f(x)
        assert y.shape == x.shape and y.dtype is ember.float64
    assert ember.full_like(x, 5).numpy().tolist() == [[5.0] * 3] * 2
    assert ember.zeros_like(x, dtype=ember.int32).dtype is ember.int32
    assert x.new_zeros((4,)).dtype is ember.float64 and x.new_ones(2).shape == (2,)
    assert x.new_full((1,), 2).numpy().tolist() == [2.0] and x.new_tensor([1, 2]).dtype is ember.float64


@pytest.mark.parametrize("args,kw", [((5,), {}), ((1, 10, 3), {}), ((0.0, 1.0, 0.1), {}), ((10, 0, -2), {}),
                                     ((2, 2), {}), ((5,), {"dtype": ember.float64}), ((-3.5, 2.5, 0.5), {})])
def test_arange_matches_numpy(args, kw):
    t = ember.arange(*args, **kw)
    ref = np.arange(*args)
    assert t.shape == ref.shape
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-6)
    if all(isinstance(a, int) for a in args) and not kw:
        assert t.dtype is ember.int64
    elif not kw:
        assert t.dtype is ember.float32


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        ember.arange(0, 5, -1)


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-2.0, 3.0, 11), (5, 5, 1), (0, 1, 0), (1, 0, 4)])
def test_linspace_logspace(start, end, steps):
    np.testing.assert_allclose(ember.linspace(start, end, steps).numpy(), np.linspace(start, end, steps), rtol=1e-6)
    np.testing.assert_allclose(ember.logspace(start, end, steps, dtype=ember.float64).numpy(),
                               np.logspace(start, end, steps), rtol=1e-12)
    np.testing.assert_allclose(ember.logspace(start, end, steps, base=2.0, dtype=ember.float64).numpy(),
                               np.logspace(start, end, steps, base=2.0), rtol=1e-12)


def test_linspace_negative_steps():
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.linspace(0, 1, -1)


@pytest.mark.parametrize("n,m", [(3, None), (2, 4), (4, 2), (0, 3)])
def test_eye(n, m):
    np.testing.assert_array_equal(ember.eye(n, m).numpy(), np.eye(n, m, dtype=np.float32))
    assert ember.eye(n, m, dtype=ember.int64).dtype is ember.int64


def test_empty_strided():
    t = ember.empty_strided((2, 3), (1, 2))
    assert t.stride() == (1, 2) and t.shape == (2, 3)
    t.fill_(1.0)
    assert t.numpy().sum() == 6


def test_out_argument_resizes_with_warning():
    out = ember.empty(5)
    with pytest.warns(UserWarning, match="resized"):
        r = ember.add(ember.ones(2), ember.ones(2), out=out)
    assert r is out and out.shape == (2,) and out.numpy().tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ember.add(ember.ones(2), ember.ones(2), out=ember.empty(2, dtype=ember.int64))


def test_default_device_context_and_setter():
    with ember.device("cpu"):
        assert ember.zeros(1).device == ember.device("cpu")
    assert ember.get_default_device() == ember.device("cpu")
    with pytest.raises(RuntimeError, match="device type 'cuda' is not available"):
        ember.zeros(1, device="cuda")
