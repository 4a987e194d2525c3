"""Loss modules: constructor arguments, buffers, repr, legacy arguments, and agreement with
the functional forms (and with torch's modules where installed)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

rng = np.random.default_rng(0)
X = ember.tensor(rng.standard_normal((4, 5)))
Y = ember.tensor(rng.standard_normal((4, 5)))
T = ember.tensor([0, 3, 4, 1])
PX = ember.tensor(rng.uniform(0.05, 0.95, (4, 5)))
PY = ember.tensor(rng.random((4, 5)))
CW = ember.tensor(rng.random(5))

CASES = [
    (nn.L1Loss(reduction="sum"), (X, Y), F.l1_loss(X, Y, reduction="sum")),
    (nn.MSELoss(), (X, Y), F.mse_loss(X, Y)),
    (nn.SmoothL1Loss(beta=0.5, reduction="none"), (X, Y), F.smooth_l1_loss(X, Y, beta=0.5, reduction="none")),
    (nn.HuberLoss(delta=0.5), (X, Y), F.huber_loss(X, Y, delta=0.5)),
    (nn.CrossEntropyLoss(weight=CW, ignore_index=3, label_smoothing=0.1), (X, T),
     F.cross_entropy(X, T, CW, ignore_index=3, label_smoothing=0.1)),
    (nn.NLLLoss(weight=CW, reduction="sum"), (X, T), F.nll_loss(X, T, CW, reduction="sum")),
    (nn.BCELoss(weight=CW), (PX, PY), F.binary_cross_entropy(PX, PY, CW)),
    (nn.BCEWithLogitsLoss(pos_weight=CW), (X, PY), F.binary_cross_entropy_with_logits(X, PY, pos_weight=CW)),
    (nn.KLDivLoss(reduction="batchmean", log_target=True), (X, Y), F.kl_div(X, Y, reduction="batchmean",
                                                                             log_target=True)),
    (nn.SoftMarginLoss(), (X, Y.sign()), F.soft_margin_loss(X, Y.sign())),
    (nn.PoissonNLLLoss(full=True), (X, PY), F.poisson_nll_loss(X, PY, full=True)),
    (nn.GaussianNLLLoss(), (X, Y, PY + 0.1), F.gaussian_nll_loss(X, Y, PY + 0.1)),
    (nn.MarginRankingLoss(0.1), (X[:, 0], Y[:, 0], T.double().sign()), F.margin_ranking_loss(X[:, 0], Y[:, 0],
                                                                                            T.double().sign(), 0.1)),
    (nn.HingeEmbeddingLoss(), (X[:, 0], ember.tensor([1.0, -1, 1, -1])), F.hinge_embedding_loss(
        X[:, 0], ember.tensor([1.0, -1, 1, -1]))),
    (nn.CosineEmbeddingLoss(), (X, Y, ember.tensor([1.0, -1, 1, -1])), F.cosine_embedding_loss(
        X, Y, ember.tensor([1.0, -1, 1, -1]))),
]


@pytest.mark.parametrize("module,args,want", CASES, ids=[type(c[0]).__name__ for c in CASES])
def test_module_equals_functional(module, args, want):
    np.testing.assert_array_equal(module(*args).numpy(), want.numpy())
    assert repr(module) == f"{type(module).__name__}()"


def test_buffers_and_state_dict():
    m = nn.CrossEntropyLoss(weight=CW)
    assert [n for n, _ in m.named_buffers()] == ["weight"] and m.weight is CW
    assert list(m.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == [] and nn.CrossEntropyLoss().weight is None
    b = nn.BCEWithLogitsLoss(weight=CW, pos_weight=CW * 2)
    assert [n for n, _ in b.named_buffers()] == ["weight", "pos_weight"]
    assert b.to(ember.float32).pos_weight.dtype == ember.float32
    assert list(nn.MSELoss().parameters()) == []


def test_defaults_and_legacy_arguments():
    m = nn.CrossEntropyLoss()
    assert (m.reduction, m.ignore_index, m.label_smoothing) == ("mean", -100, 0.0)
    assert nn.SmoothL1Loss().beta == 1.0 and nn.HuberLoss().delta == 1.0 and nn.KLDivLoss().log_target is False
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.NLLLoss(reduce=False).reduction == "none"


def test_training_step_decreases_loss():
    ember.manual_seed(0)
    lin = nn.Linear(5, 3)
    loss_fn = nn.CrossEntropyLoss()
    x = ember.randn(16, 5)
    t = ember.randint(0, 3, (16,))
    first = None
    for _ in range(30):
        loss = loss_fn(lin(x), t)
        first = first if first is not None else loss.item()
        for p in lin.parameters():
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in lin.parameters():
                p.add_(p.grad, alpha=-0.5)
    assert loss.item() < first * 0.8


def test_against_torch_modules():
    torch = pytest.importorskip("torch")
    for module, args, _ in CASES:
        tm = getattr(torch.nn, type(module).__name__)
        kwargs = {k: getattr(module, k) for k in ("reduction", "ignore_index", "label_smoothing", "beta", "delta",
                                                  "log_target", "margin", "full") if k in module.__dict__}
        for b in ("weight", "pos_weight"):
            if getattr(module, b, None) is not None:
                kwargs[b] = torch.from_numpy(getattr(module, b).numpy().copy())
        targs = [torch.from_numpy(a.numpy().copy()) for a in args]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(module(*args).numpy(), tm(**kwargs)(*targs).numpy(), rtol=1e-10,
                                       err_msg=type(module).__name__)


def test_bce_with_logits_gradient_at_zero_matches_torch():
    # max(-x, 0) as a clamp passed a gradient of 1 at x = 0: d/dx was -1 + (1 - t) instead of sigmoid(0) - t
    torch = pytest.importorskip("torch")
    x = [-2.0, 0.0, 0.0, 3.0]
    t = [0.5, 0.5, 1.0, 0.0]
    e = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    q = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ember.nn.functional.binary_cross_entropy_with_logits(e, ember.tensor(t, dtype=ember.float64)).backward()
    torch.nn.functional.binary_cross_entropy_with_logits(q, torch.tensor(t, dtype=torch.float64)).backward()
    np.testing.assert_allclose(e.grad.numpy(), q.grad.numpy(), rtol=1e-12, atol=1e-15)
