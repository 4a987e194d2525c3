"""Tensors pickle and deep-copy: geometry, dtype, device, requires_grad, shared storages."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ember

DTYPES = [ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.int8, ember.uint8, ember.int16,
          ember.int32, ember.int64, ember.bool, ember.complex64, ember.complex128]


def _sample(dtype, shape=(2, 3)):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 2.5
    if dtype is ember.bool:
        return ember.tensor(a > 0)
    t = ember.tensor(a).to(dtype)
    if dtype.is_complex:
        t = t + 1j * ember.tensor(a).to(dtype)
    return t


def _same(a, b):
    assert a.shape == b.shape and a.dtype is b.dtype and a.device == b.device
    assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
    np.testing.assert_array_equal(np.asarray(a.detach().to(ember.float64) if a.dtype is ember.bfloat16 else a.detach()),
                                  np.asarray(b.detach().to(ember.float64) if b.dtype is ember.bfloat16 else b.detach()))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_round_trip_every_dtype(dtype, protocol):
    t = _sample(dtype)
    r = pickle.loads(pickle.dumps(t, protocol=protocol))
    _same(t, r)
    assert r.untyped_storage() is not t.untyped_storage()


@pytest.mark.parametrize("make", [lambda: ember.tensor(3.5), lambda: ember.zeros(0, 3),
                                  lambda: ember.arange(12.).reshape(3, 4).t(),
                                  lambda: ember.arange(12.).reshape(3, 4)[1:, ::2],
                                  lambda: ember.arange(4.).expand(3, 4)],
                         ids=["0dim", "empty", "transposed", "strided_offset", "expanded"])
def test_pickle_geometry(make):
    t = make()
    r = pickle.loads(pickle.dumps(t))
    _same(t, r)


def test_views_stay_views_inside_one_pickle():
    x = ember.arange(6.).reshape(2, 3)
    v = x[:, 1]
    y, w = pickle.loads(pickle.dumps([x, v]))
    assert w.untyped_storage() is y.untyped_storage()
    assert (w.stride(), w.storage_offset()) == ((3,), 1)
    y[0, 1] = 100.
    assert w.tolist() == [100., 4.]
    assert x[0, 1].item() == 1.           # the original is untouched


def test_pickle_requires_grad_and_grad():
    a = ember.randn(3, requires_grad=True)
    a.grad = ember.ones(3)
    r = pickle.loads(pickle.dumps(a))
    assert r.requires_grad and r.is_leaf and r.grad is None        # .grad is not pickled (as PyTorch)
    b = a * 2                                                      # a non-leaf comes back as a leaf
    r = pickle.loads(pickle.dumps(b))
    assert r.requires_grad and r.is_leaf and r.grad_fn is None
    np.testing.assert_allclose(r.detach().numpy(), b.detach().numpy())


def test_deepcopy_keeps_dtype_requires_grad_and_grad():
    a = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    a.grad = ember.full((2, 3), 7., dtype=ember.float64)
    c = copy.deepcopy(a)
    assert c.requires_grad and c.is_leaf and c.dtype is ember.float64 and c.device == a.device
    assert c.grad is not a.grad and c.grad.tolist() == a.grad.tolist()
    assert c.untyped_storage() is not a.untyped_storage()
    with ember.no_grad():
        c.add_(1)
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())


def test_deepcopy_views_share_the_copy():
    x = ember.arange(6.).reshape(2, 3)
    y, w = copy.deepcopy([x, x[:, 1]])
    assert w.untyped_storage() is y.untyped_storage() and w.storage_offset() == 1
    y[1, 1] = -1.
    assert w.tolist() == [1., -1.] and x[1, 1].item() == 4.


def test_deepcopy_non_leaf_refused_with_pytorchs_message():
    a = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user \(graph leaves\) support "
                                           r"the deepcopy protocol at the moment"):
        copy.deepcopy(a * 2)


def test_deepcopy_keeps_python_attributes():
    t = ember.ones(2)
    t.note = {"k": [1]}
    c = copy.deepcopy(t)
    assert c.note == {"k": [1]} and c.note is not t.note


def test_copy_module_shallow_copy_and_state_dict():
    import collections
    sd = collections.OrderedDict(w=ember.randn(3, 2), b=ember.zeros(2))
    r = pickle.loads(pickle.dumps(sd))
    assert isinstance(r, collections.OrderedDict) and list(r) == ["w", "b"]
    _same(sd["w"], r["w"])


def test_storage_pickles_and_deepcopies():
    x = ember.arange(4, dtype=ember.int32)
    st = x.untyped_storage()
    r = pickle.loads(pickle.dumps(st))
    assert isinstance(r, ember.UntypedStorage) and r.nbytes() == 16 and r.device == st.device
    c = copy.deepcopy(st)
    assert c is not st and c.nbytes() == 16


def test_parameter_pickles_and_deepcopies():
    nn = pytest.importorskip("ember.nn")
    p = nn.Parameter(ember.randn(3))
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and r.requires_grad
    _same(p, r)
    assert type(copy.deepcopy(p)) is nn.Parameter


def test_torch_agrees_on_deepcopy_and_pickle_semantics():
    torch = pytest.importorskip("torch")
    a = torch.randn(3, requires_grad=True)
    a.grad = torch.ones(3)
    assert copy.deepcopy(a).grad is not None and pickle.loads(pickle.dumps(a)).grad is None
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(a * 2)


class Tagged(ember.Tensor):
    """A Tensor subclass with no reduce of its own (pickles through Tensor's)."""


def tagged(t):
    """A ``Tagged`` over ``t``'s storage (ember has no Tensor.as_subclass yet)."""
    n = object.__new__(Tagged)
    n._storage, n._shape, n._stride, n._offset = t._storage, t._shape, t._stride, t._offset
    n._dtype, n._device, n._native = t._dtype, t._device, None
    return n


def test_subclass_and_python_attributes_survive_pickle():
    t = tagged(ember.arange(3.))
    t.label = "digits"
    r = pickle.loads(pickle.dumps(t))
    assert type(r) is Tagged and r.label == "digits" and r.tolist() == [0., 1., 2.]
    p = ember.ones(2)
    p.note = [1, 2]
    assert pickle.loads(pickle.dumps(p)).note == [1, 2]
    c = copy.deepcopy(t)
    assert type(c) is Tagged and c.label == "digits"


def test_autograd_state_never_travels():
    a = ember.randn(3, requires_grad=True)
    (a * 2).sum().backward()                    # a now holds an accumulator, a grad, a version counter
    r = pickle.loads(pickle.dumps(a))
    assert not any(k.startswith("_") and k != "_requires_grad" for k in r.__dict__)
    (r * 3).sum().backward()
    assert r.grad.tolist() == [3., 3., 3.]      # a fresh leaf: its own accumulator


def test_rebuild_validates_crafted_arguments():
    from ember import _serialization_support as S
    st = ember.ones(2).untyped_storage()
    with pytest.raises(pickle.UnpicklingError, match="need a storage of 400 bytes"):
        S._rebuild_tensor(st, 0, (100,), (1,), ember.float32)
    with pytest.raises(pickle.UnpicklingError, match="invalid geometry"):
        S._rebuild_tensor(st, -1, (1,), (1,), ember.float32)
    with pytest.raises(pickle.UnpicklingError, match="expected a storage"):
        S._rebuild_tensor(b"xx", 0, (1,), (1,), ember.float32)
    with pytest.raises(pickle.UnpicklingError, match="not a Tensor class"):
        S._rebuild_tensor(st, 0, (1,), (1,), ember.float32, False, dict)
    with pytest.raises(pickle.UnpicklingError, match="holds 3 bytes, expected 8"):
        S._rebuild_storage(b"abc", "cpu", 8)
