"""PyTorch's memory-overlap checks on out= and in-place writes, size-argument edge cases (issue 17, part 4).

Every refused call is checked to have written nothing: the tensors involved are compared with copies
taken before the call. Side by side with PyTorch where it is installed."""
from __future__ import annotations

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

LIBS = [ember] + ([torch] if torch is not None else [])
INTERNAL = "more than one element of the written-to tensor refers to a single memory location"
PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"


def snapshot(*ts):
    return [np.array(t.detach().cpu().numpy(), copy=True) for t in ts]


def refused(lib, fn, match, *watched):
    before = snapshot(*watched)
    shapes = [tuple(t.shape) for t in watched]
    with pytest.raises(RuntimeError, match=match):
        fn()
    for b, t, s in zip(before, watched, shapes):
        assert tuple(t.shape) == s
        np.testing.assert_array_equal(b, t.detach().cpu().numpy())      # nothing written


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_an_expanded_out_is_refused(lib):
    base = lib.zeros(1, 3)
    out = base.expand(2, 3)
    refused(lib, lambda: lib.add(lib.ones(2, 3), 0, out=out), INTERNAL, base)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_in_place_on_an_expanded_tensor_is_refused(lib):
    base = lib.zeros(1, 3)
    refused(lib, lambda: base.expand(2, 3).add_(1), INTERNAL, base)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_out_partly_overlapping_an_input_is_refused(lib):
    b = lib.arange(6.0)
    refused(lib, lambda: lib.add(b[:4], 1, out=b[2:]), PARTIAL, b)
    refused(lib, lambda: lib.exp(b[:4], out=b[2:]), PARTIAL, b)
    refused(lib, lambda: b[2:].add_(b[:4]), PARTIAL, b)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_full_overlap_is_allowed(lib):
    b = lib.arange(6.0)
    lib.add(b, 1, out=b)
    b.mul_(b)
    assert b.tolist() == [1.0, 4.0, 9.0, 16.0, 25.0, 36.0]
    x = lib.arange(4.0)
    lib.add(x[:2], x[2:], out=x[:2])                      # disjoint halves of one storage
    assert x.tolist() == [2.0, 4.0, 2.0, 3.0]


def test_out_that_must_be_resized_while_aliasing_an_input_never_changes_the_input():
    """PyTorch resizes such an out (the input with it) and returns garbage; ember refuses, leaving it as it was."""
    a, w = ember.ones(2, 3), ember.ones(3, 4)
    for fn in (lambda: ember.matmul(a, w, out=a), lambda: ember.mm(a, w, out=a)):
        refused(ember, fn, "has to be resized from \\[2, 3\\] to \\[2, 4\\], but it shares memory with an input", a)
    r = ember.matmul(a, w, out=ember.empty(0))
    assert r.shape == (2, 4) and r.tolist() == [[3.0] * 4] * 2


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_expand_refuses_negative_sizes(lib):
    with pytest.raises(RuntimeError):
        lib.ones(1).expand(-2)
    with pytest.raises(RuntimeError):
        lib.ones(3).expand(-2, 3)
    with pytest.raises(RuntimeError, match="isn't allowed in a leading, non-existing dimension 0"):
        lib.ones(3).expand(-1, 3)
    assert tuple(lib.ones(1, 3).expand(-1, 3).shape) == (1, 3)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_view_accepts_a_list(lib):
    assert tuple(lib.ones(6).view([2, 3]).shape) == (2, 3)
    assert tuple(lib.ones(6).view([2, -1]).shape) == (2, 3)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("sizes", [(2 ** 40, 2 ** 30), (2 ** 62, 4)])
def test_sizes_beyond_addressable_memory_raise_runtime_error(lib, sizes):
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        lib.empty(*sizes)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        lib.zeros(*sizes)


def test_an_out_that_needs_resizing_is_left_alone_when_the_kernel_fails():
    """The deferred resize: an index found out of range while computing leaves out= as it was (found by the
    op-database sweep: index_select, take, nll_loss and embedding wrote first)."""
    import warnings
    x, out = ember.ones(3, 4), ember.full((3, 4), 7.0)
    for fn in (lambda: ember.index_select(x, 0, ember.tensor([5]), out=out),
               lambda: ember.take(x, ember.tensor([99]), out=out)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")           # the "was resized" deprecation warning
            refused_any = pytest.raises((IndexError, RuntimeError))
            with refused_any:
                fn()
        assert out.shape == (3, 4) and out.tolist() == [[7.0] * 4] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = ember.index_select(x, 0, ember.tensor([1]), out=out)
    assert r is out and out.shape == (1, 4) and out.tolist() == [[1.0] * 4]
