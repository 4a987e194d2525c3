"""Indexing with a Python ``range`` and with lists holding slices / sequences (read and write),
side by side with PyTorch."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _x(m):
    return m.arange(24.0).reshape(4, 6)


READS = {
    "range": lambda m: _x(m)[range(2)], "range-step": lambda m: _x(m)[range(1, 4, 2)],
    "range-empty": lambda m: _x(m)[range(0)], "range-negative-step": lambda m: _x(m)[range(3, 0, -1)],
    "range-int": lambda m: _x(m)[range(2), 1], "slice-range": lambda m: _x(m)[:, range(3)],
    "int-range": lambda m: _x(m)[0, range(2)], "range-tensor": lambda m: _x(m)[range(2), m.tensor([1, 2])],
    "range-slice-range-3d": lambda m: m.arange(24.0).reshape(2, 3, 4)[range(2), :, range(2)],
    "list-of-range": lambda m: _x(m)[[range(2)]], "list": lambda m: _x(m)[[0, 2]],
    "list-of-list": lambda m: _x(m)[[[0, 2]]], "tuple-slice-int": lambda m: _x(m)[(slice(None), 1)],
    "list-slice-int": lambda m: _x(m)[[slice(None), 1]], "list-slice-list": lambda m: _x(m)[[slice(None), [0, 1]]],
    "list-none-int": lambda m: _x(m)[[None, 0]], "list-ellipsis-int": lambda m: _x(m)[[..., 0]],
    "list-of-tuples": lambda m: _x(m)[[(0, 1), (2, 3)]], "list-of-one-tuple": lambda m: _x(m)[[(0, 1)]],
    "range-out-of-bounds": lambda m: _x(m)[range(5)], "list-str": lambda m: _x(m)[[0, "a"]],
}


@pytest.mark.parametrize("name", list(READS))
def test_reads_match_torch(name):
    out = []
    for m in (ember, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = READS[name](m)
                out.append((tuple(r.shape), r.numpy().tolist()))
            except Exception as exc:       # noqa: BLE001 - the class is compared
                out.append(type(exc).__name__)
        out.append(any("non-tuple sequence" in str(x.message) for x in w))
    assert out[0] == out[2], out
    if not isinstance(out[0], str):        # the deprecation warning for a list read as a tuple, as torch
        assert out[1] == out[3], out


@pytest.mark.parametrize("index", [range(2), (slice(None), range(1, 3)), [slice(None), 1], [0, 2], [(0, 1)],
                                   (range(2), range(1, 3))], ids=str)
def test_writes_match_torch(index):
    got = []
    for m in (ember, torch):
        x = _x(m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x[index] = -1.0
        got.append(x.numpy())
    np.testing.assert_array_equal(*got)


def test_range_index_gradient():
    grads = []
    for m in (ember, torch):
        x = _x(m).requires_grad_()
        (x[range(1, 3)] * 2).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(*grads)
