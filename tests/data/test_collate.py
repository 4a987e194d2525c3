"""default_collate / default_convert: each element type, nesting, and the errors."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import ember
from ember.utils.data import default_collate, default_convert
from ember.utils.data._collate import collate, default_collate_fn_map

Point = collections.namedtuple("Point", "x y")


def test_tensors_are_stacked():
    b = default_collate([ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]), ember.tensor([5.0, 6.0])])
    assert b.shape == (3, 2) and b.dtype == ember.float32
    assert b.tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    s = default_collate([ember.tensor(1), ember.tensor(2)])
    assert s.shape == (2,) and s.dtype == ember.int64


def test_tensor_stacking_edge_cases():
    base = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    views = [base.t()[i] for i in range(4)]               # strided views, not contiguous
    assert default_collate(views).tolist() == base.t().tolist()
    w = ember.ones(2, requires_grad=True)
    b = default_collate([w * 2, w * 3])                   # samples in a graph: stacked by ember.stack
    assert b.requires_grad and b.grad_fn is not None
    b.sum().backward()
    assert w.grad.tolist() == [5.0, 5.0]
    mixed = default_collate([ember.tensor([1, 2]), ember.tensor([0.5, 1.5])])
    expected = ember.stack([ember.tensor([1, 2]), ember.tensor([0.5, 1.5])])
    assert mixed.dtype == expected.dtype and mixed.tolist() == expected.tolist()
    out = default_collate([ember.tensor(True), ember.tensor(False)])
    assert out.dtype == ember.bool and out.tolist() == [True, False]


def test_numbers_bools_and_strings():
    ints = default_collate([1, 2, 3])
    assert ints.dtype == ember.int64 and ints.tolist() == [1, 2, 3]
    floats = default_collate([1.5, 2.0])
    assert floats.dtype == ember.float64 and floats.tolist() == [1.5, 2.0]
    bools = default_collate([True, False])
    assert bools.dtype == ember.bool and bools.tolist() == [True, False]
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_numpy_arrays_and_scalars():
    b = default_collate([np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)])
    assert b.dtype == ember.int32 and b.tolist() == [[1, 2], [3, 4]]
    f = default_collate([np.float32(1.5), np.float32(2.5)])
    assert f.dtype == ember.float32 and f.tolist() == [1.5, 2.5]
    d = default_collate([np.float64(1.0)])
    assert d.dtype == ember.float64
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_nested_structures():
    batch = [{"img": ember.zeros(2), "label": 0, "meta": ("a", 1.0)},
             {"img": ember.ones(2), "label": 1, "meta": ("b", 2.0)}]
    out = default_collate(batch)
    assert set(out) == {"img", "label", "meta"}
    assert out["img"].tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert out["label"].tolist() == [0, 1]
    assert isinstance(out["meta"], list) and out["meta"][0] == ("a", "b")      # a tuple becomes a list
    assert out["meta"][1].dtype == ember.float64
    pairs = default_collate([(ember.zeros(1), 1), (ember.ones(1), 2)])
    assert isinstance(pairs, list) and pairs[0].shape == (2, 1) and pairs[1].tolist() == [1, 2]
    lists = default_collate([[1, 2], [3, 4]])
    assert isinstance(lists, list) and [t.tolist() for t in lists] == [[1, 3], [2, 4]]
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == ember.float64
    od = default_collate([collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)])
    assert isinstance(od, collections.OrderedDict) and list(od) == ["b", "a"] and od["a"].tolist() == [2, 4]


def test_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2\] at entry 0 "
                                           r"and \[3\] at entry 1"):
        default_collate([ember.zeros(2), ember.zeros(3)])
    with pytest.raises(TypeError, match="found <class 'NoneType'>"):
        default_collate([None, None])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object()])


def test_custom_collate_fn_map():
    class Box:
        def __init__(self, v):
            self.v = v
    fmap = dict(default_collate_fn_map)
    fmap[Box] = lambda batch, *, collate_fn_map=None: sum(b.v for b in batch)
    assert collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=fmap)[0] == 4


def test_default_convert():
    out = default_convert([np.array([1, 2]), 1, "a", (np.zeros(1),)])
    assert isinstance(out[0], ember.Tensor) and out[0].tolist() == [1, 2]
    assert out[1] == 1 and out[2] == "a"
    assert isinstance(out[3], list) and out[3][0].dtype == ember.float64     # tuple -> list
    assert default_convert({"x": np.float32(2)})["x"].dtype == ember.float32
    s = np.array(["a"])
    assert default_convert(s) is s
    t = ember.zeros(1)
    assert default_convert(t) is t
    p = default_convert(Point(np.ones(1), 2))
    assert isinstance(p, Point) and isinstance(p.x, ember.Tensor)


def test_matches_torch_default_collate():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as tcollate
    samples = [[1, 2], [1.5, 2.5], [True, False], [np.int16(3), np.int16(4)],
               [np.array([[1.0, 2.0]], dtype=np.float32), np.array([[3.0, 4.0]], dtype=np.float32)],
               [{"a": 1, "b": (2.0, "s")}, {"a": 3, "b": (4.0, "t")}], [2, 1.5]]

    def same(e, t):
        if isinstance(t, torch.Tensor):
            assert isinstance(e, ember.Tensor)
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] and e.tolist() == t.tolist()
        elif isinstance(t, dict):
            assert type(e) is type(t) and set(e) == set(t)
            for k in t:
                same(e[k], t[k])
        elif isinstance(t, (list, tuple)):
            assert type(e) is type(t) and len(e) == len(t)
            for a, b in zip(e, t):
                same(a, b)
        else:
            assert e == t
    for batch in samples:
        same(default_collate(batch), tcollate(batch))
    for bad in ([[1, 2], [3]], [None], [np.array(["x"])]):
        with pytest.raises(Exception) as te:
            tcollate(bad)
        with pytest.raises(Exception) as ee:
            default_collate(bad)
        assert type(ee.value) is type(te.value) and str(ee.value) == str(te.value)
