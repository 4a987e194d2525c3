"""numpy / DLPack interop (ember._interop, Tensor.numpy / __array__) and the comparison
predicates equal / allclose / isclose (ember._ops._compare)."""
import numpy as np
import pytest

import ember
from ember import _interop
from ember._ops import _compare

# until ember/__init__ and ember._ops import these modules, reach them here
from_dlpack = getattr(ember, "from_dlpack", _interop.from_dlpack)
isclose = getattr(ember, "isclose", _compare.isclose)
allclose = getattr(ember, "allclose", _compare.allclose)
equal = getattr(ember, "equal", _compare.equal)


def _t(a, dtype=None):
    """ember.tensor(a) (Python data infers dtypes as PyTorch does), kept 0-dim for scalars."""
    return ember.tensor(a, dtype=dtype).reshape(np.shape(a))


# ---------------------------------------------------------------- numpy
def test_numpy_shares_memory():
    t = ember.arange(6.).reshape(2, 3)
    a = t.numpy()
    a[0, 1] = 42
    assert t[0, 1].item() == 42
    b = np.asarray(t)
    assert np.shares_memory(a, b)
    b[1, 2] = -1
    assert t.tolist() == [[0, 42, 2], [3, 4, -1]]


def test_numpy_of_views_shares_memory():
    t = ember.arange(12.).reshape(3, 4)
    v = t.t()[1:, ::2]
    a = v.numpy()
    np.testing.assert_array_equal(a, np.arange(12.).reshape(3, 4).T[1:, ::2])
    a[0, 0] = 100
    assert t[0, 1].item() == 100
    e = ember.tensor([1., 2.]).expand(3, 2)
    assert e.numpy().strides == (0, 4)


def test_array_dtype_argument_and_asarray():
    t = ember.tensor([1.5, 2.5])
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), [1.5, 2.5])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.add(t.numpy(), 1).tolist() == [2.5, 3.5]


def test_numpy_refuses_requires_grad():
    t = ember.tensor([1., 2.])
    t._requires_grad = True
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        t.numpy()


def test_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ember.from_numpy(a)
    a[1, 1] = 77
    assert t[1, 1].item() == 77
    assert t.dtype is ember.int32


# ---------------------------------------------------------------- DLPack export
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int8, ember.uint8,
                                   ember.int16, ember.int32, ember.int64, ember.bool, ember.complex64,
                                   ember.complex128])
def test_np_from_dlpack_shares_memory(dtype):
    t = ember.arange(6).reshape(2, 3).to(dtype)
    a = np.from_dlpack(t)
    assert a.dtype == dtype.numpy_dtype
    np.testing.assert_array_equal(a, t.numpy())
    assert np.shares_memory(a, t.numpy())


def test_dlpack_writes_are_visible():
    t = ember.zeros(2, 3)
    a = np.from_dlpack(t)
    a[1, 2] = 5
    assert t[1, 2].item() == 5


@pytest.mark.parametrize("make", [lambda t: t.t(), lambda t: t[:, 1::2], lambda t: t[1:], lambda t: t[1, 1:],
                                  lambda t: t[0:1].expand(4, 4)], ids=["t", "slice", "offset", "row", "expand"])
def test_dlpack_non_contiguous(make):
    base = ember.arange(16.).reshape(4, 4)
    v = make(base)
    a = np.from_dlpack(v)
    np.testing.assert_array_equal(a, v.numpy())
    assert a.strides == v.numpy().strides
    assert a.__array_interface__["data"][0] == v.data_ptr()


def test_dlpack_0dim_and_empty():
    t = ember.tensor([3.5]).reshape(())
    assert np.from_dlpack(t).shape == ()
    assert np.from_dlpack(t)[()] == 3.5
    assert np.from_dlpack(ember.zeros(0, 3)).shape == (0, 3)


def test_dlpack_device():
    assert ember.zeros(2).__dlpack_device__() == (1, 0)


def test_dlpack_refuses_requires_grad():
    t = ember.tensor([1., 2.])
    t._requires_grad = True
    with pytest.raises(BufferError, match="Can't export tensors that require gradient, use tensor.detach()"):
        t.__dlpack__()
    with pytest.raises(BufferError, match="require gradient"):
        np.from_dlpack(t)


def test_dlpack_stream_must_be_none_on_cpu():
    with pytest.raises(BufferError, match="stream must be None"):
        ember.zeros(2).__dlpack__(stream=1)


def test_bfloat16_has_no_numpy_dlpack():
    with pytest.raises(BufferError):
        np.from_dlpack(ember.ones(2, dtype=ember.bfloat16))


# ---------------------------------------------------------------- DLPack import
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.int32,
                                   np.int64, np.bool_, np.complex64, np.complex128])
def test_from_dlpack_numpy_shares_memory(dtype):
    a = (np.arange(6) % 4).reshape(2, 3).astype(dtype)
    t = from_dlpack(a)
    assert t.dtype.numpy_dtype == a.dtype
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t.numpy(), a)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    a[0, 0] = 1
    assert t[0, 0].item() == 1


def test_from_dlpack_numpy_strided():
    base = np.arange(24.).reshape(4, 6)
    v = base[1:, ::2].T
    t = from_dlpack(v)
    assert t.shape == v.shape
    assert t.stride() == tuple(s // 8 for s in v.strides)
    np.testing.assert_array_equal(t.numpy(), v)
    base[1, 0] = -5
    assert t[0, 0].item() == -5


def test_from_dlpack_0dim_empty_capsule_and_roundtrip():
    t = from_dlpack(np.array(2.5))
    assert t.shape == () and t.item() == 2.5
    e = from_dlpack(np.zeros((2, 0)))
    assert e.shape == (2, 0)
    src = ember.arange(5.)
    back = from_dlpack(src.__dlpack__())       # a bare capsule
    assert back.data_ptr() == src.data_ptr()
    back2 = from_dlpack(np.from_dlpack(src))
    back2[0] = 9
    assert src[0].item() == 9
    assert from_dlpack(src) is src


def test_from_dlpack_errors():
    with pytest.raises(TypeError, match="from_dlpack expects an object with __dlpack__"):
        from_dlpack([1, 2])

    class OnGPU:
        def __dlpack__(self, **kw):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return (2, 0)
    with pytest.raises(BufferError, match="no installed ember device plugin imports DLPack device CUDA"):
        from_dlpack(OnGPU())


def test_torch_interop_if_installed():
    torch = pytest.importorskip("torch")
    tt = torch.arange(6.).reshape(2, 3)
    t = from_dlpack(tt)
    tt[0, 0] = 7
    assert t[0, 0].item() == 7
    back = torch.from_dlpack(ember.arange(4.))
    assert back.tolist() == [0., 1., 2., 3.]


# ---------------------------------------------------------------- equal / isclose / allclose
def test_equal():
    assert equal(_t([1, 2]), _t([1, 2])) is True
    assert equal(_t([1, 2]), _t([1., 2.])) is True            # values compare after promotion
    assert equal(_t([1, 2]), _t([1, 3])) is False
    assert equal(_t([1, 2]), _t([1, 2, 3])) is False          # shapes differ
    assert equal(_t([1, 1]), _t([1])) is False                # no broadcasting
    assert equal(_t([1]), _t(1)) is False
    assert equal(_t([np.nan]), _t([np.nan])) is False
    assert equal(ember.zeros(0, 3), ember.zeros(0, 3)) is True
    x = ember.arange(12.).reshape(3, 4)
    assert equal(x.t(), x.t().contiguous()) is True
    assert equal(x[:, ::2], _t(np.arange(12.).reshape(3, 4)[:, ::2])) is True
    assert x.equal(x.clone()) is True
    with pytest.raises(TypeError, match=r"equal\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        equal(_t([1.]), 1.)


_ISCLOSE_DTYPES = [ember.float32, ember.float64, ember.float16, ember.int64, ember.int32, ember.uint8,
                   ember.complex64]


def _isclose_ref(a, b, rtol, atol):
    """PyTorch's definition on numpy arrays of the tensors' own dtype (integer differences wrap)."""
    close = a == b
    if rtol == 0 and atol == 0:
        return close
    with np.errstate(all="ignore"):
        diff = np.abs(a - b)
        return close | (np.isfinite(diff) & (diff <= atol + np.abs(b * rtol)))


@pytest.mark.parametrize("dtype", _ISCLOSE_DTYPES)
def test_isclose_matches_numpy(dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, (4, 5)).astype(np.float64)
    b = a + rng.choice([0, 1e-9, 1e-6, 1e-4, 1, 2], size=a.shape)
    if dtype.is_complex:
        a, b = a + 1j * a, b + 1j * a
    ta, tb = _t(a, dtype), _t(b, dtype)
    ra, rb = ta.numpy(), tb.numpy()
    for rtol, atol in [(1e-5, 1e-8), (0.0, 1.5), (0.3, 0.0), (0.0, 0.0)]:
        got = isclose(ta, tb, rtol=rtol, atol=atol)
        assert got.dtype is ember.bool and got.shape == (4, 5)
        want = _isclose_ref(ra, rb, rtol, atol)
        np.testing.assert_array_equal(got.numpy(), want)
        assert allclose(ta, tb, rtol, atol) == bool(want.all())


def test_isclose_nan_inf_and_equal_nan():
    a = _t([1., np.inf, np.nan, -np.inf, np.nan])
    b = _t([1., np.inf, np.nan, np.inf, 1.])
    for en in (False, True):
        np.testing.assert_array_equal(isclose(a, b, equal_nan=en).numpy(),
                                      np.isclose(a.numpy(), b.numpy(), equal_nan=en))
    assert allclose(_t([np.nan]), _t([np.nan])) is False
    assert allclose(_t([np.nan]), _t([np.nan]), equal_nan=True) is True


def test_isclose_bool_and_integer_wraparound():
    # verified with PyTorch: bool compares in the default float dtype; uint8 differences wrap
    assert isclose(_t([True, False]), _t([True, True])).tolist() == [True, False]
    assert isclose(_t([1, 2], ember.uint8), _t([3, 2], ember.uint8), atol=2).tolist() == [False, True]
    assert isclose(_t([1, 2]), _t([1, 2]), rtol=0.5).tolist() == [True, True]


def test_isclose_broadcast_and_views():
    a = _t([1., 2.])
    b = _t([[1.], [2.]])
    np.testing.assert_array_equal(isclose(a, b).numpy(), [[True, False], [False, True]])
    assert allclose(a, b) is False
    x = ember.arange(12.).reshape(3, 4)
    assert allclose(x.t(), _t(np.arange(12.).reshape(3, 4).T * (1 + 1e-6), ember.float32))
    assert allclose(x[:, 1::2], x[:, 1::2].clone())
    assert allclose(ember.tensor([1.5, 2.]).expand(3, 2), _t(np.array([[1.5, 2.]] * 3), ember.float32))
    assert allclose(ember.zeros(0), ember.zeros(0)) is True
    assert a.isclose(a).tolist() == [True, True]
    assert a.allclose(a) is True
    s = _t(2.0)
    assert isclose(s, _t(2.0 + 1e-9)).shape == ()


def test_isclose_errors():
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        isclose(_t([1, 2]), _t([1., 2.]))
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        allclose(_t([1., 2.]), _t([1., 2.], ember.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        isclose(_t([1.]), _t([1.]), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero, but got -1"):
        isclose(_t([1.]), _t([1.]), atol=-1)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(3\)"):
        isclose(_t([1., 2.]), _t([1., 2., 3.]))
    with pytest.raises(TypeError, match=r"isclose\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        isclose(_t([1., 2.]), 1.)


def test_allclose_equal_without_reductions(monkeypatch):
    # the host-read path used on a build whose reduction ops are missing
    monkeypatch.delattr(ember, "all", raising=False)
    assert allclose(_t([1., 2.]), _t([1., 2.000001])) is True
    assert allclose(_t([1., 2.]), _t([1., 2.1])) is False
    assert equal(_t([1, 2]), _t([1, 2])) is True
    assert equal(_t([1, 2]), _t([2, 2])) is False


def test_dlpack_max_version_passes_through():
    t = ember.arange(3.)
    cap = t.__dlpack__(max_version=(1, 0))
    assert type(cap).__name__ == "PyCapsule"
