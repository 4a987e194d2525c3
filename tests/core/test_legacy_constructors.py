"""The legacy constructors ember.Tensor(...) and ember.FloatTensor(...) & co, side by side with PyTorch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

TYPED = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
         "CharTensor", "ByteTensor", "BoolTensor")


def _same(e, t):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape)


def _outcome(mod, f):
    try:
        return f(mod)
    except Exception as exc:    # noqa: BLE001 - the class is compared with PyTorch's
        return type(exc)


@pytest.mark.parametrize("name", ("Tensor",) + TYPED)
def test_data_sizes_and_empty_forms_match_torch(name):
    for form in (lambda m: getattr(m, name)(),
                 lambda m: getattr(m, name)([1.7, 0, 2]),
                 lambda m: getattr(m, name)([[1, 2], [3, 4]]),
                 lambda m: getattr(m, name)((2, 3)),
                 lambda m: getattr(m, name)(np.arange(3)),
                 lambda m: getattr(m, name)([True, False]),
                 lambda m: getattr(m, name)(data=[5, 6]),
                 lambda m: getattr(m, name)([], device="cpu")):
        e, t = form(ember), form(torch)
        _same(e, t)
        np.testing.assert_array_equal(e.float().numpy() if e.dtype is ember.bfloat16 else e.numpy(),
                                      t.float().numpy() if t.dtype is torch.bfloat16 else t.numpy())
    for form in (lambda m: getattr(m, name)(2, 3), lambda m: getattr(m, name)(4),
                 lambda m: getattr(m, name)(m.Size([2, 0, 3])), lambda m: getattr(m, name)(size=(3, 1)),
                 lambda m: getattr(m, name)(0), lambda m: getattr(m, name)(2, device="cpu")):
        _same(form(ember), form(torch))      # uninitialised: shapes and dtypes only


@pytest.mark.parametrize("form", [
    lambda m: m.Tensor([1], dtype=m.float64), lambda m: m.Tensor(2, 3, requires_grad=True),
    lambda m: m.Tensor(2.5), lambda m: m.Tensor(None), lambda m: m.Tensor(True), lambda m: m.Tensor("ab"),
    lambda m: m.Tensor(2, 3.0), lambda m: m.Tensor(2, "a"), lambda m: m.Tensor([1], [2]), lambda m: m.Tensor(-1),
    lambda m: m.Tensor(2, -3), lambda m: m.FloatTensor(m.tensor([1, 2])), lambda m: m.LongTensor(m.ones(2)),
    lambda m: m.FloatTensor([1], dtype=m.float32), lambda m: m.Tensor(m.ones(2), device="cpu"),
    lambda m: m.Tensor([[1, 2], [3]])])
def test_errors_match_torch(form):
    e, t = _outcome(ember, form), _outcome(torch, form)
    assert isinstance(e, type) and e is t, (e, t)


def test_invalid_keyword_message_lists_the_forms():
    with pytest.raises(TypeError, match=r"new\(\) received an invalid combination of arguments - got \(list, "
                                        r"dtype=ember.dtype\)"):
        ember.Tensor([1], dtype=ember.float64)


def test_other_device_is_refused_as_torch():
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but device type: vdev"):
        ember.Tensor(2, device="vdev")
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but device type: meta"):
        torch.Tensor(2, device="meta")


def test_tensor_argument_is_an_alias():
    for m in (ember, torch):
        x = m.ones(3, requires_grad=True)
        y = m.Tensor(x)
        assert y is not x and y.data_ptr() == x.data_ptr() and y.requires_grad and y._base is x
        (y * 2).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
        f = m.tensor([1.0, 2.0])
        assert m.FloatTensor(f).data_ptr() == f.data_ptr()
        assert m.Tensor(m.tensor([1, 2])).dtype is m.int64       # torch.Tensor keeps another dtype


def test_storage_form():
    for m in (ember, torch):
        s = m.arange(6.0).untyped_storage()
        assert m.Tensor(s).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert m.IntTensor(s).shape == (6,)


def test_default_dtype_follows_set_default_dtype_but_typed_classes_do_not():
    for m in (ember, torch):
        old = m.get_default_dtype()
        m.set_default_dtype(m.float64)
        try:
            assert m.Tensor([1]).dtype is m.float64 and m.Tensor(2).dtype is m.float64
            assert m.FloatTensor([1]).dtype is m.float32
        finally:
            m.set_default_dtype(old)


@pytest.mark.parametrize("name", TYPED)
def test_isinstance_and_class_attributes(name):
    e_cls, t_cls = getattr(ember, name), getattr(torch, name)
    assert e_cls.dtype is getattr(ember, str(t_cls.dtype).split(".")[1])
    for dt in ("float32", "float64", "int64", "uint8", "bool"):
        e, t = ember.zeros(2, dtype=getattr(ember, dt)), torch.zeros(2, dtype=getattr(torch, dt))
        assert isinstance(e, e_cls) == isinstance(t, t_cls)
    assert issubclass(e_cls, ember.Tensor) == issubclass(t_cls, torch.Tensor)
    assert not isinstance(3, e_cls) and isinstance(e_cls(2), ember.Tensor)
    assert repr(e_cls) == repr(t_cls).replace("torch", "ember")
    assert e_cls.is_cuda is False and e_cls.is_sparse is False


def test_isinstance_is_false_off_cpu():
    assert not isinstance(ember.zeros(2, device="vdev"), ember.FloatTensor)


def test_type_with_a_legacy_class():
    for m in (ember, torch):
        x = m.zeros(2)
        assert x.type() == m.__name__ + ".FloatTensor"
        assert x.type(m.DoubleTensor).dtype is m.float64 and x.type(m.LongTensor).dtype is m.int64
        assert x.type(m.FloatTensor) is x


def test_subclass_construction():
    for m in (ember, torch):
        class Mine(m.Tensor):
            pass
        y = Mine([1, 2])
        assert type(y) is Mine and y.tolist() == [1.0, 2.0] and y.dtype is m.float32
