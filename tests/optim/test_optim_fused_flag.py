"""fused=True on Adam, AdamW, SGD and Adagrad: accepted as in PyTorch (its fused cpu kernels give the
single-tensor results in float64 - checked here against PyTorch's fused optimizer), with PyTorch's errors for
the combinations it refuses."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

OPTS = [("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01, "weight_decay": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
        ("Adagrad", {"lr": 0.1})]


@pytest.mark.parametrize("name,kw", OPTS)
def test_fused_matches_pytorchs_fused_optimizer(name, kw):
    rng = np.random.default_rng(0)
    w = rng.standard_normal(20)
    pe, pt = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    oe = getattr(ember.optim, name)([pe], fused=True, **kw)
    ot = getattr(torch.optim, name)([pt], fused=True, **kw)
    assert oe.param_groups[0]["fused"] is True
    for _ in range(15):
        g = rng.standard_normal(20)
        pe.grad, pt.grad = ember.tensor(g), torch.tensor(g)
        oe.step()
        ot.step()
    assert np.array_equal(pe.detach().numpy(), pt.detach().numpy())


@pytest.mark.parametrize("name,kw", OPTS)
def test_fused_refusals_match_pytorch(name, kw):
    for lib in (torch, ember):
        p = lib.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^`fused` and `foreach` cannot be `True` together\.$"):
            getattr(lib.optim, name)([p], fused=True, foreach=True, **kw)
        with pytest.raises(RuntimeError, match=r"^`fused` does not support `differentiable`$"):
            getattr(lib.optim, name)([p], fused=True, differentiable=True, **kw)


@pytest.mark.parametrize("name", ["RMSprop", "Adadelta", "NAdam"])
def test_optimizers_without_fused_refuse_the_argument(name):
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            getattr(lib.optim, name)([lib.zeros(2, requires_grad=True)], fused=True)
