"""The Tensor model: storage sharing, metadata, metadata-only views (compared with
numpy's stride semantics), reshape/view rules, conversions, host interop and the
version counter."""
from __future__ import annotations

import numpy as np
import pytest

import ember

ISZ = 4  # float32


def _arange(*shape, dtype=np.float32):
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return ember.tensor(a), a


def _strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def assert_view_of(v, base, expected):
    """``v`` is a view of ``base`` (same storage) with the values, shape and strides of
    the numpy view ``expected`` (size-1 dims' strides are free, as in PyTorch)."""
    assert v.untyped_storage() is base.untyped_storage()
    assert tuple(v.shape) == expected.shape
    np.testing.assert_array_equal(v.numpy(), expected)
    for n, s, e in zip(expected.shape, v.stride(), _strides(expected)):
        if n > 1:
            assert s == e, (v.stride(), _strides(expected))
    # the view reads the base's memory: offset and address agree with numpy's
    addr = expected.__array_interface__["data"][0]
    assert v.data_ptr() == addr or expected.size == 0


def test_metadata():
    t, a = _arange(2, 3, 4)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, ember.Size)
    assert t.size() == ember.Size([2, 3, 4]) and t.size(1) == 3 and t.size(-1) == 4
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12 and t.stride(-2) == 4
    assert t.storage_offset() == 0
    assert t.is_contiguous()
    assert t.element_size() == 4 and t.itemsize == 4 and t.nbytes == 96
    assert t.numel() == 24 and t.nelement() == 24 and ember.numel(t) == 24
    assert t.dim() == 3 and t.ndim == 3 and t.ndimension() == 3
    assert t.untyped_storage().nbytes() == 96
    assert t.untyped_storage().device == t.device
    assert t.data_ptr() == t.untyped_storage().data_ptr()
    assert t.dtype is ember.float32 and t.device == ember.device("cpu") and t.layout is ember.strided
    assert t.is_cpu and not t.is_cuda and t.get_device() == -1
    assert repr(t.shape) == "ember.Size([2, 3, 4])" and t.shape.numel() == 24
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but "
                                         r"got 3\)"):
        t.size(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.stride(-4)
    s = ember.ones(())
    assert s.shape == () and s.dim() == 0 and s.numel() == 1 and s.stride() == ()
    assert ember.empty(0, 3).numel() == 0 and ember.empty(0, 3).is_contiguous()
    assert ember.Tensor([1, 2]).tolist() == [1.0, 2.0]       # the legacy constructor (test_legacy_constructors)


def test_element_size_and_data_ptr_per_dtype():
    for d in (ember.float16, ember.bfloat16, ember.float64, ember.int8, ember.int64, ember.bool, ember.complex64):
        t = ember.zeros(2, 5, dtype=d)
        assert t.element_size() == d.itemsize
        n = t.narrow(1, 2, 2)
        assert n.data_ptr() == t.data_ptr() + 2 * d.itemsize
        assert n.storage_offset() == 2


@pytest.mark.parametrize("name, tview, nview", [
    ("view", lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
    ("view-1", lambda t: t.view(-1, 2), lambda a: a.reshape(-1, 2)),
    ("view_size", lambda t: t.view(ember.Size([4, 6])), lambda a: a.reshape(4, 6)),
    ("reshape", lambda t: t.reshape(4, -1), lambda a: a.reshape(4, -1)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: a.transpose(2, 1, 0)),
    ("swapaxes", lambda t: t.swapaxes(-1, 1), lambda a: a.swapaxes(-1, 1)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute_tuple", lambda t: t.permute((1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    ("T", lambda t: t.T, lambda a: a.T),
    ("mT", lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    ("expand", lambda t: t.narrow(1, 0, 1).expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    ("expand_new_dims", lambda t: t.select(0, 0).expand(3, 3, 4), lambda a: np.broadcast_to(a[0], (3, 3, 4))),
    ("expand-1", lambda t: t.narrow(2, 1, 1).expand(-1, -1, 7), lambda a: np.broadcast_to(a[:, :, 1:2], (2, 3, 7))),
    ("narrow", lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("narrow_neg", lambda t: t.narrow(-2, -2, 2), lambda a: a[:, 1:3]),
    ("select", lambda t: t.select(1, -1), lambda a: a[:, -1]),
    ("select2", lambda t: t.select(2, 3).select(0, 1), lambda a: a[1, :, 3]),
    ("unsqueeze", lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    ("unsqueeze_end", lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    ("squeeze_dim", lambda t: t.narrow(1, 0, 1).squeeze(1), lambda a: a[:, 0]),
    ("squeeze_all", lambda t: t.narrow(1, 0, 1).narrow(0, 1, 1).squeeze(), lambda a: a[1, 0]),
    ("squeeze_noop", lambda t: t.squeeze(0), lambda a: a),
    ("squeeze_tuple", lambda t: t.narrow(1, 0, 1).squeeze((0, 1)), lambda a: a[:, 0]),
    ("unfold", lambda t: t.unfold(2, 2, 1), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)),
    ("unfold_step", lambda t: t.unfold(2, 2, 2),
     lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)[:, :, ::2]),
    ("diagonal", lambda t: t.diagonal(0, 1, 2), lambda a: np.diagonal(a, 0, 1, 2)),
    ("diagonal+1", lambda t: t.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
    ("diagonal-1", lambda t: t.diagonal(-1, 1, 2), lambda a: np.diagonal(a, -1, 1, 2)),
    ("diagonal_0_2", lambda t: t.diagonal(0, 0, 2), lambda a: np.diagonal(a, 0, 0, 2)),
    ("as_strided", lambda t: t.as_strided((3, 3), (4, 1), 1),
     lambda a: np.lib.stride_tricks.as_strided(a.ravel()[1:], (3, 3), (16, 4))),
    ("as_strided_overlap", lambda t: t.as_strided((4, 3), (1, 1)),
     lambda a: np.lib.stride_tricks.as_strided(a.ravel(), (4, 3), (4, 4))),
    ("flatten", lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten1", lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
    ("flatten_0_1", lambda t: t.flatten(0, 1), lambda a: a.reshape(6, 4)),
    ("unflatten", lambda t: t.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
    ("unflatten-1", lambda t: t.unflatten(1, (-1, 1)), lambda a: a.reshape(2, 3, 1, 4)),
    ("movedim", lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    ("movedim_seq", lambda t: t.movedim((0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    ("view_of_transpose_ok", lambda t: t.transpose(0, 1).view(3, 2, 2, 2), lambda a: a.transpose(1, 0, 2).reshape(3, 2, 2, 2)),
    ("view_as", lambda t: t.view_as(ember.empty(4, 6)), lambda a: a.reshape(4, 6)),
    ("expand_as", lambda t: t.narrow(0, 0, 1).expand_as(ember.empty(5, 3, 4)), lambda a: np.broadcast_to(a[:1], (5, 3, 4))),
])
def test_view_ops_are_metadata_only(name, tview, nview):
    t, a = _arange(2, 3, 4)
    nbytes = ember.memory.memory_allocated("cpu")
    v = tview(t)
    assert ember.memory.memory_allocated("cpu") == nbytes        # nothing allocated
    expected = nview(t.numpy())
    assert_view_of(v, t, expected)
    assert v._base is t
    # writes through the view land in the base
    if expected.size and name not in ("expand", "expand_new_dims", "expand-1", "as_strided_overlap", "expand_as",
                                      "unfold"):   # overlapping views
        v.fill_(-1)
        assert (t.numpy() == -1).sum() == expected.size


@pytest.mark.parametrize("name, tsplit, nsplit", [
    ("split", lambda t: t.split(2, 2), lambda a: np.split(a, 2, axis=2)),
    ("split_uneven", lambda t: t.split(3, 2), lambda a: [a[:, :, :3], a[:, :, 3:]]),
    ("split_sizes", lambda t: t.split([1, 3], -1), lambda a: [a[..., :1], a[..., 1:]]),
    ("chunk", lambda t: t.chunk(3, 1), lambda a: np.split(a, 3, axis=1)),
    ("chunk_uneven", lambda t: t.chunk(3, 2), lambda a: [a[..., :2], a[..., 2:]]),
    ("unbind", lambda t: t.unbind(1), lambda a: [a[:, i] for i in range(3)]),
    ("unbind0", lambda t: t.unbind(), lambda a: list(a)),
    ("iter", lambda t: list(t), lambda a: list(a)),
])
def test_splitting_views(name, tsplit, nsplit):
    t, _ = _arange(2, 3, 4)
    parts, expected = tsplit(t), nsplit(t.numpy())
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        assert_view_of(p, t, e)


def test_split_and_chunk_errors():
    t, _ = _arange(2, 3, 4)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 4"):
        t.split([1, 2], 2)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        t.chunk(0)


def test_view_on_incompatible_strides_raises_and_reshape_copies():
    t, a = _arange(2, 3, 4)
    tt = t.transpose(0, 1)
    assert not tt.is_contiguous()
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's size and stride \(at "
                                           r"least one dimension spans across two contiguous subspaces\). Use "
                                           r"\.reshape\(\.\.\.\) instead\."):
        tt.view(-1)
    r = tt.reshape(-1)                       # must copy
    assert r.untyped_storage() is not t.untyped_storage()
    assert r.is_contiguous()
    np.testing.assert_array_equal(r.numpy(), a.transpose(1, 0, 2).reshape(-1))
    f = tt.flatten()                         # flatten copies too
    assert f.untyped_storage() is not t.untyped_storage()
    r2 = tt.reshape(3, 2, 4)                 # no-op shape: a view
    assert r2.untyped_storage() is t.untyped_storage()
    # empty tensors can always be viewed
    assert ember.empty(0, 3).t().view(3, 0).shape == (3, 0)


def test_view_and_reshape_shape_errors():
    t, _ = _arange(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"shape '\[5, 5\]' is invalid for input of size 24"):
        t.view(5, 5)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.reshape(-1, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[-1, 5\]' is invalid for input of size 24"):
        t.reshape(-1, 5)


def test_view_op_errors():
    t, _ = _arange(2, 3, 4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.transpose(0, 3)
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        t.t()
    with pytest.raises(RuntimeError, match="permute"):
        t.permute(0, 1)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        t.permute(0, 1, 1)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(5\) must match the existing size "
                                           r"\(3\) at non-singleton dimension 1"):
        t.expand(2, 5, 4)
    with pytest.raises(RuntimeError, match="must be greater or equal to the number of dimensions"):
        t.expand(3, 4)
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)"):
        t.narrow(2, 2, 3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        t.select(1, 3)
    with pytest.raises(IndexError, match="select\\(\\) cannot be applied to a 0-dim tensor"):
        ember.ones(()).select(0, 0)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 2 is 4 but size is 5"):
        t.unfold(2, 5, 1)
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
        t.diagonal(0, 1, 1)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 96"):
        t.as_strided((5, 5), (5, 1))
    with pytest.raises(RuntimeError, match="flatten\\(\\) has invalid args: start_dim cannot come after end_dim"):
        t.flatten(2, 1)


def test_t_of_1d_and_0d_is_a_view():
    v = ember.ones(3)
    assert v.t().shape == (3,) and v.t().untyped_storage() is v.untyped_storage()
    s = ember.ones(())
    assert s.t().shape == () and s.T.shape == ()


def test_zero_dim_view_reshape_flatten():
    s = ember.full((), 2.5)
    assert s.flatten().shape == (1,)
    assert s.view(1, 1).shape == (1, 1) and s.reshape(-1).shape == (1,)


def test_zero_dim_flatten_and_unsqueeze():
    s = ember.full((), 2.5)
    assert s.unsqueeze(0).shape == (1,) and s.unsqueeze(-1).shape == (1,)
    assert s.view(()).shape == () and s.item() == 2.5


def test_contiguous():
    t, a = _arange(3, 4)
    assert t.contiguous() is t
    assert t.narrow(0, 1, 1).contiguous().untyped_storage() is t.untyped_storage()   # still contiguous
    c = t.t().contiguous()
    assert c is not t and c.is_contiguous() and c.stride() == (3, 1)
    np.testing.assert_array_equal(c.numpy(), a.T)
    assert c.untyped_storage() is not t.untyped_storage()
    n = t.narrow(1, 1, 2)
    assert not n.is_contiguous()
    nc = n.contiguous()
    np.testing.assert_array_equal(nc.numpy(), a[:, 1:3])
    # size-1 dims do not break contiguity
    assert t.narrow(0, 0, 1).expand(1, 4).is_contiguous()
    assert ember.empty(2, 1, 3).transpose(0, 1).is_contiguous()


def test_clone_is_independent():
    t, a = _arange(2, 3)
    c = t.t().clone()
    assert c.untyped_storage() is not t.untyped_storage() and not c.is_contiguous()   # preserve_format, as torch
    c.fill_(0)
    np.testing.assert_array_equal(t.numpy(), a)


def test_conversions():
    t = ember.tensor([[1.5, -2.5], [3.0, 4.0]])
    assert t.to(ember.float32) is t and t.to("cpu") is t and t.to(t) is t
    assert t.to(ember.float32, copy=True) is not t
    for meth, dt in (("float", ember.float32), ("double", ember.float64), ("half", ember.float16),
                     ("bfloat16", ember.bfloat16), ("long", ember.int64), ("int", ember.int32),
                     ("short", ember.int16), ("char", ember.int8), ("byte", ember.uint8), ("bool", ember.bool)):
        r = getattr(t, meth)()
        assert r.dtype is dt
        expected = t.numpy().astype(dt.numpy_dtype)
        np.testing.assert_array_equal(np.asarray(r.numpy()), expected)
    assert t.to(dtype=ember.int64).tolist() == [[1, -2], [3, 4]]       # truncation toward zero
    assert t.to("cpu", ember.float64).dtype is ember.float64
    assert t.to(device="cpu", dtype=ember.int32).dtype is ember.int32
    assert t.type() == "ember.FloatTensor" and t.type(ember.float64).dtype is ember.float64
    assert t.type_as(ember.ones(1, dtype=ember.int16)).dtype is ember.int16
    assert t.cfloat().dtype is ember.complex64
    assert t.to(ember.float64)._version == 0
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination of arguments"):
        t.to(3.5)


def test_item_and_tolist():
    assert ember.tensor([3.5]).item() == 3.5
    assert isinstance(ember.tensor([3]).item(), int)
    assert isinstance(ember.tensor([True]).item(), bool)
    assert ember.full((), 7, dtype=ember.int64).item() == 7
    assert ember.ones(1, 1, 1).item() == 1.0
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        ember.ones(2).item()
    assert ember.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert ember.tensor([[1, 2], [3, 4]]).t().tolist() == [[1, 3], [2, 4]]
    assert ember.full((), 2.5).tolist() == 2.5
    assert ember.empty(0, 2).tolist() == []
    assert float(ember.tensor([2.5])) == 2.5 and int(ember.tensor([7])) == 7
    assert [1, 2, 3][ember.tensor([1])] == 2
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][ember.tensor([1.0])]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.ones(()))
    assert len(ember.ones(4, 2)) == 4


def test_tensor_of_python_scalar_is_zero_dim():
    # matches torch.tensor(3.5).shape == torch.Size([])
    assert ember.tensor(3.5).shape == ()
    assert ember.tensor(3.5).item() == 3.5
    assert ember.tensor(True).dim() == 0


def test_numpy_shares_memory():
    t, a = _arange(3, 4)
    n = t.numpy()
    assert np.shares_memory(n, t.numpy())
    n[1, 2] = 100
    assert t.tolist()[1][2] == 100
    tt = t.t()
    nt = tt.numpy()
    assert nt.shape == (4, 3) and _strides(nt) == (1, 4)
    nt[0, 0] = -5
    assert t.tolist()[0][0] == -5
    assert np.asarray(t) is not None and np.asarray(t).shape == (3, 4)


def test_from_numpy_shares_memory():
    a = np.zeros((2, 3), np.float64)
    t = ember.from_numpy(a)
    assert t.dtype is ember.float64 and t.shape == (2, 3) and t.stride() == (3, 1)
    t.fill_(5)
    assert (a == 5).all()
    a[0, 1] = -1
    assert t.tolist()[0][1] == -1
    # a strided numpy view keeps its strides
    b = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    tb = ember.from_numpy(b)
    assert tb.stride() == (4, 2)
    np.testing.assert_array_equal(tb.numpy(), b)
    tb.add_(1)
    np.testing.assert_array_equal(b, np.arange(12).reshape(3, 4)[:, ::2] + 1)
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(3.0)[::-1])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.float128|can't convert"):
        ember.from_numpy(np.zeros(2, dtype=np.dtype("U1")))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])


def test_version_counter_shared_by_views_and_bumped_by_inplace():
    t, _ = _arange(3, 4)
    assert t._version == 0
    v = t.view(12)
    w = t.t().narrow(0, 1, 2)
    assert v._version == 0 and w._version == 0
    t.add_(1)
    assert t._version == v._version == w._version == 1
    v.mul_(2)
    assert t._version == 2 and w._version == 2
    w.fill_(0)
    assert t._version == 3 and v._version == 3
    w.zero_()
    t.copy_(ember.ones(3, 4))
    assert t._version == 5 == v._version
    # out-of-place ops and copies start at 0
    assert (t + 1)._version == 0
    assert t.clone()._version == 0
    assert t.to(ember.float64)._version == 0
    # a view of a view shares it too
    vv = v.view(2, 6).select(0, 1)
    vv.add_(1)
    assert t._version == 6


def test_new_tensors_start_at_version_zero():
    for t in (ember.ones(3), ember.zeros(3), ember.full((2,), 7.0), ember.tensor([1, 2]), ember.empty(2)):
        assert t._version == 0


def test_copy_broadcasts_and_converts():
    t = ember.zeros(2, 3)
    t.copy_(ember.tensor([1, 2, 3]))
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2
    t.t().copy_(ember.tensor([[1.0, 2.0]] * 3))
    assert t.tolist() == [[1.0] * 3, [2.0] * 3]
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 3\] doesn't match the broadcast shape "
                                           r"\[2, 2, 3\]"):
        t.copy_(ember.ones(2, 2, 3))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of tensor b \(4\)"):
        t.copy_(ember.ones(4, 3))
    assert t.tolist() == [[1.0] * 3, [2.0] * 3]


def test_views_of_int_and_bool_tensors():
    for dt in (ember.int64, ember.bool, ember.float16):
        t = ember.zeros(4, 5, dtype=dt)
        v = t.t().narrow(0, 1, 2).unsqueeze(0)
        assert v.shape == (1, 2, 4) and v.dtype is dt
        assert v.untyped_storage() is t.untyped_storage()
        assert v.storage_offset() == 1
