"""``ember.utils.checkpoint`` against torch.utils.checkpoint side by side: values and gradients equal to a
run without checkpointing (dropout included: the random state is replayed), both variants, the warning
when ``use_reentrant`` is not passed, the errors (classes and messages), ``autograd.grad`` / double
backward / closed-over tensors with the non-reentrant variant, ``checkpoint_sequential``, and the memory
actually released after the forward (``ember.memory`` statistics).
"""
from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import ember
import ember.memory
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")
import torch.utils.checkpoint as tck  # noqa: E402

VARIANTS = [True, False]


def _np(t):
    return np.array(t.detach().tolist())


def _pair(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(a, dtype=ember.float64, requires_grad=True), torch.tensor(a, dtype=torch.float64,
                                                                                 requires_grad=True)


def _mlp(lib, seed=1):
    """A small MLP with the same weights in ember and torch (weights closed over, not passed)."""
    rng = np.random.default_rng(seed)
    w1, b1, w2 = rng.standard_normal((6, 4)), rng.standard_normal(6), rng.standard_normal((3, 6))
    ws = [lib.tensor(w, dtype=lib.float64, requires_grad=True) for w in (w1, b1, w2)]

    def f(x, scale=1.0):
        h = lib.tanh(x @ ws[0].T + ws[1])
        return (h @ ws[2].T).sin() * scale
    return f, ws


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_values_and_grads_match_torch(reentrant):
    xe, xt = _pair((5, 4))
    fe, we = _mlp(ember)
    ft, wt = _mlp(torch)
    ye = checkpoint(fe, xe, use_reentrant=reentrant)
    yt = tck.checkpoint(ft, xt, use_reentrant=reentrant)
    np.testing.assert_allclose(_np(ye), yt.detach().numpy(), rtol=1e-12)
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    for a, b in zip([xe] + we, [xt] + wt):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    if reentrant:
        assert ye.grad_fn.name() == yt.grad_fn.name() == "CheckpointFunctionBackward"


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_dropout_inside_gives_the_same_grads_as_no_checkpoint(reentrant):
    ember.manual_seed(3)
    lin1, lin2 = ember.nn.Linear(8, 16), ember.nn.Linear(16, 4)
    params = list(lin1.parameters()) + list(lin2.parameters())

    def f(x):
        return lin2(ember.nn.functional.dropout(ember.relu(lin1(x)), 0.5, True))
    x = ember.randn(6, 8, requires_grad=True)
    state = ember.get_rng_state()
    y = checkpoint(f, x, use_reentrant=reentrant)
    ember.randn(100)                          # the random state moves on before backward
    y.square().sum().backward()
    got = [p.grad.clone() for p in params + [x]]
    for p in params + [x]:
        p.grad = None
    ember.set_rng_state(state)
    y2 = f(x)
    assert ember.equal(y, y2)
    y2.square().sum().backward()
    for a, p in zip(got, params + [x]):
        assert ember.equal(a, p.grad)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_preserve_rng_state_false_draws_a_new_mask(reentrant):
    ember.manual_seed(4)
    x = ember.ones(2000, requires_grad=True)

    def f(x):
        return ember.nn.functional.dropout(x, 0.5, True)
    y = checkpoint(f, x, use_reentrant=reentrant, preserve_rng_state=False)
    y.sum().backward()
    assert not ember.equal(x.grad, (y != 0).to(x.dtype) * 2.0)        # the recomputed mask is another one
    x.grad = None
    y = checkpoint(f, x, use_reentrant=reentrant, preserve_rng_state=True)
    y.sum().backward()
    assert ember.equal(x.grad, (y != 0).to(x.dtype) * 2.0)


@pytest.mark.parametrize("which", ["checkpoint", "checkpoint_sequential"])
def test_warns_without_use_reentrant_as_torch(which):
    xe, xt = _pair((3,))
    with warnings.catch_warnings(record=True) as we:
        warnings.simplefilter("always")
        if which == "checkpoint":
            checkpoint(ember.sin, xe)
        else:
            checkpoint_sequential([ember.sin, ember.cos], 2, xe)
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        if which == "checkpoint":
            tck.checkpoint(torch.sin, xt)
        else:
            tck.checkpoint_sequential([torch.sin, torch.cos], 2, xt)
    assert [w.category for w in we] == [w.category for w in wt] == [UserWarning]
    assert we[0].filename == __file__                   # stacklevel: the caller's line
    assert "use_reentrant parameter should be passed explicitly" in str(we[0].message)
    assert "use_reentrant parameter should be passed explicitly" in str(wt[0].message)


def test_no_input_requires_grad_warns_as_torch():
    for lib, ck in ((ember, checkpoint), (torch, tck.checkpoint)):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            y = ck(lib.sin, lib.ones(3), use_reentrant=True)
        assert not y.requires_grad


@pytest.mark.parametrize("lib,ck", [(ember, checkpoint), (torch, tck.checkpoint)])
def test_argument_errors_as_torch(lib, ck):
    x = lib.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        ck(lambda x, scale: x * scale, x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        ck(lib.sin, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        ck(lib.sin, x, use_reentrant=False, determinism_check="always")
    with pytest.raises(ValueError, match="Unexpected keyword arguments"):
        (tck.checkpoint_sequential if lib is torch else checkpoint_sequential)([lib.sin], 1, x, use_reentrant=False,
                                                                               foo=1)


@pytest.mark.parametrize("lib,ck", [(ember, checkpoint), (torch, tck.checkpoint)])
def test_reentrant_refuses_autograd_grad_non_reentrant_serves_it(lib, ck):
    x = lib.ones(3, requires_grad=True)
    y = ck(lib.sin, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        lib.autograd.grad(y.sum(), [x])
    y = ck(lib.sin, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        y.sum().backward(inputs=[x])
    y = ck(lib.sin, x, use_reentrant=False)
    g, = lib.autograd.grad(y.sum(), [x])
    np.testing.assert_allclose(np.array(g.tolist()), np.cos(np.ones(3)))


def test_non_reentrant_kwargs_nested_outputs_closed_over_and_double_backward():
    xe, xt = _pair((4, 4), seed=5)
    fe, we = _mlp(ember)
    ft, wt = _mlp(torch)

    def ge(x, s, scale=1.0):
        y = fe(x, scale=scale)
        return {"y": y, "pair": (y.sum() * s, 7)}

    def gt(x, s, scale=1.0):
        y = ft(x, scale=scale)
        return {"y": y, "pair": (y.sum() * s, 7)}
    oe = checkpoint(ge, xe, 3.0, use_reentrant=False, scale=0.5)
    ot = tck.checkpoint(gt, xt, 3.0, use_reentrant=False, scale=0.5)
    assert oe["pair"][1] == 7
    le = (oe["y"] ** 2).sum() + oe["pair"][0]
    lt = (ot["y"] ** 2).sum() + ot["pair"][0]
    ge_ = ember.autograd.grad(le, [xe, we[0]], create_graph=True)
    gt_ = torch.autograd.grad(lt, [xt, wt[0]], create_graph=True)
    for a, b in zip(ge_, gt_):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    gge, = ember.autograd.grad(ge_[0].sum(), [we[2]])
    ggt, = torch.autograd.grad(gt_[0].sum(), [wt[2]])
    np.testing.assert_allclose(_np(gge), ggt.numpy(), rtol=1e-10, atol=1e-12)


def test_non_reentrant_input_also_used_outside_and_intermediate_inputs():
    # the region's boundary holds a node that is itself upstream of another boundary node
    xe, xt = _pair((5,), seed=6)
    outs = []
    for lib, x, ck in ((ember, xe, checkpoint), (torch, xt, tck.checkpoint)):
        a = x.exp()
        y = ck(lambda u, v, w: (u * v).sin() + u * w, a, x * 2, x, use_reentrant=False) * a
        g, = lib.autograd.grad(y.sum(), [x])
        outs.append(np.array(g.tolist()))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_second_backward_and_in_place_change_raise(reentrant):
    x = ember.ones(3, requires_grad=True)
    y = checkpoint(ember.sin, x * 1, use_reentrant=reentrant)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    a = x * 1
    y = checkpoint(ember.sin, a, use_reentrant=reentrant)
    with ember.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_determinism_check_catches_a_different_recomputation():
    calls = []

    def f(x):
        calls.append(1)
        return x[: len(calls)].sin()            # a shorter result the first time
    x = ember.ones(4, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata") as info:
        y.sum().backward()
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_checkpoint_sequential_matches_torch(reentrant):
    ember.manual_seed(0)
    me = ember.nn.Sequential(*[m for _ in range(3) for m in (ember.nn.Linear(5, 5), ember.nn.Tanh())])
    mt = torch.nn.Sequential(*[m for _ in range(3) for m in (torch.nn.Linear(5, 5), torch.nn.Tanh())])
    with torch.no_grad():
        for pe, pt in zip(me.parameters(), mt.parameters()):
            pt.copy_(torch.tensor(np.array(pe.tolist())))
    xe, xt = _pair((2, 5), seed=7)
    xe, xt = xe.float(), xt.float()
    ye = checkpoint_sequential(me, 2, xe, use_reentrant=reentrant)
    yt = tck.checkpoint_sequential(mt, 2, xt, use_reentrant=reentrant)
    np.testing.assert_allclose(_np(ye), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    ye.sum().backward()
    yt.sum().backward()
    for pe, pt in zip(me.parameters(), mt.parameters()):
        np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_memory_held_after_forward_is_released(reentrant):
    ember.manual_seed(0)
    layers = [ember.nn.Sequential(ember.nn.Linear(256, 256), ember.nn.GELU()) for _ in range(6)]
    x = ember.randn(128, 256, requires_grad=True)

    def held(ck):
        gc.collect()
        base = ember.memory.memory_allocated("cpu")
        h = x
        for layer in layers:
            h = checkpoint(layer, h, use_reentrant=reentrant) if ck else layer(h)
        loss = h.square().mean()
        amount = ember.memory.memory_allocated("cpu") - base
        loss.backward()
        return amount
    plain, ck = held(False), held(True)
    act = 128 * 256 * 4
    assert plain >= 12 * act                          # inputs of linear and gelu saved per layer
    assert ck <= 7 * act                              # the six layer outputs (and the loss)
