"""Margin, ranking, triplet and likelihood losses against torch: every reduction, values and float64
gradients for every differentiable input, module reprs, shapes, and PyTorch's exception classes."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)
N, C, D = 4, 5, 3
REDUCTIONS = ["mean", "sum", "none"]


def _run(name, args, kwargs, diff):
    """Build the loss module ``name`` with ``kwargs`` in both libraries, call it on ``args`` (numpy arrays,
    or ('long', array) for index tensors); compare the loss and the gradients of the args listed in
    ``diff``."""
    def conv(lib, a, grad):
        if isinstance(a, tuple):
            return lib.tensor(a[1], dtype=lib.int64)
        return lib.tensor(a, requires_grad=grad)
    kw_e = {k: (ember.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    kw_t = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    em, tm = getattr(nn, name)(**kw_e), getattr(torch.nn, name)(**kw_t)
    assert repr(em) == repr(tm)
    ae = [conv(ember, a, i in diff) for i, a in enumerate(args)]
    at = [conv(torch, a, i in diff) for i, a in enumerate(args)]
    le, lt = em(*ae), tm(*at)
    assert tuple(le.shape) == tuple(lt.shape) and le.dtype == ember.float64
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(lt.shape))
    (le * ember.tensor(w)).sum().backward()
    (lt * torch.tensor(w)).sum().backward()
    for i in diff:
        np.testing.assert_allclose(ae[i].grad.numpy(), at[i].grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"grad of argument {i}")


def _x(*shape):
    return rng.standard_normal(shape)


def _signs(*shape):
    return np.where(rng.random(shape) > 0.5, 1.0, -1.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking(reduction):
    _run("MarginRankingLoss", [_x(N), _x(N), _signs(N)], dict(margin=0.3, reduction=reduction), [0, 1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,weighted", [(1, False), (2, False), (1, True), (2, True)])
def test_multi_margin(reduction, p, weighted):
    kw = dict(p=p, margin=0.8, reduction=reduction)
    if weighted:
        kw["weight"] = rng.random(C) + 0.5
    _run("MultiMarginLoss", [_x(N, C), ("long", rng.integers(0, C, N))], kw, [0])
    _run("MultiMarginLoss", [_x(C), ("long", np.array(2))], kw, [0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin(reduction):
    t = np.array([[0, 3, -1, 1, 2], [4, -1, 0, 0, 0], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0]])
    _run("MultiLabelMarginLoss", [_x(N, C), ("long", t)], dict(reduction=reduction), [0])
    _run("MultiLabelMarginLoss", [_x(C), ("long", t[0])], dict(reduction=reduction), [0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin(reduction, weighted):
    kw = dict(reduction=reduction)
    if weighted:
        kw["weight"] = rng.random(C)
    _run("MultiLabelSoftMarginLoss", [_x(N, C) * 3, (rng.random((N, C)) > 0.5) * 1.0], kw, [0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,swap", [(2, False), (1, True), (3, False)])
def test_triplet_margin(reduction, p, swap):
    _run("TripletMarginLoss", [_x(N, D), _x(N, D), _x(N, D) * 0.5], dict(margin=1.5, p=p, swap=swap,
                                                                            reduction=reduction), [0, 1, 2])
    _run("TripletMarginLoss", [_x(D), _x(D), _x(D)], dict(p=p, swap=swap, reduction=reduction), [0, 1, 2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance(reduction, swap):
    _run("TripletMarginWithDistanceLoss", [_x(N, D), _x(N, D), _x(N, D)], dict(swap=swap, reduction=reduction),
         [0, 1, 2])

    def cos_e(a, b):
        return 1 - F.cosine_similarity(a, b)

    def cos_t(a, b):
        return 1 - torch.nn.functional.cosine_similarity(a, b)
    a, p, n = _x(N, D), _x(N, D), _x(N, D)
    le = nn.TripletMarginWithDistanceLoss(distance_function=cos_e, margin=0.5, swap=swap, reduction=reduction)(
        ember.tensor(a), ember.tensor(p), ember.tensor(n))
    lt = torch.nn.TripletMarginWithDistanceLoss(distance_function=cos_t, margin=0.5, swap=swap,
                                                reduction=reduction)(torch.tensor(a), torch.tensor(p),
                                                                     torch.tensor(n))
    np.testing.assert_allclose(le.numpy(), lt.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding(reduction):
    _run("CosineEmbeddingLoss", [_x(N, D), _x(N, D), _signs(N)], dict(margin=0.2, reduction=reduction), [0, 1])
    _run("CosineEmbeddingLoss", [_x(D), _x(D), np.array(-1.0)], dict(margin=-0.5, reduction=reduction), [0, 1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True), (False, True)])
def test_poisson_nll(reduction, log_input, full):
    inp = _x(N, C) if log_input else rng.random((N, C)) + 0.1
    target = rng.poisson(2.0, (N, C)).astype(float)
    _run("PoissonNLLLoss", [inp, target], dict(log_input=log_input, full=full, reduction=reduction), [0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(N, C), (N, 1), (N,)])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll(reduction, var_shape, full):
    var = rng.random(var_shape) + 0.05
    var.flat[0] = 1e-9                      # clamped to eps
    _run("GaussianNLLLoss", [_x(N, C), _x(N, C), var], dict(full=full, eps=1e-4, reduction=reduction), [0, 1, 2])


# ----------------------------------------------------------------------------- errors
def _same_error(call):
    with pytest.raises(Exception) as et:
        call(torch)
    with pytest.raises(type(et.value)) as ee:
        call(ember)
    return str(ee.value), str(et.value)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 4])),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1])),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 2]), p=3),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 2]), weight=lib.ones(3)),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 2]), weight=lib.ones(2, 2)),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(2, 3, 4), lib.tensor([0, 1])),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0., 1., 2.])),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.zeros(3, 4), lib.tensor([0, 1, 2]), reduction="avg"),
    lambda lib: lib.nn.MultiMarginLoss(p=0),
    lambda lib: lib.nn.functional.multilabel_margin_loss(lib.zeros(3, 4), lib.tensor([[0, 5, -1, 0]] * 3)),
    lambda lib: lib.nn.functional.multilabel_margin_loss(lib.zeros(3, 4), lib.tensor([[0, 1, -1]] * 3)),
    lambda lib: lib.nn.functional.multilabel_soft_margin_loss(lib.zeros(3, 4), lib.zeros(3, 4), reduction="x"),
    lambda lib: lib.nn.functional.triplet_margin_loss(lib.zeros(3, 4), lib.zeros(3, 4), lib.zeros(4)),
    lambda lib: lib.nn.functional.triplet_margin_loss(lib.zeros(3, 4), lib.zeros(3, 4), lib.zeros(3, 4), margin=0),
    lambda lib: lib.nn.TripletMarginLoss(margin=-1.0),
    lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=0.0),
    lambda lib: lib.nn.functional.triplet_margin_with_distance_loss(lib.zeros(3), lib.zeros(3), lib.zeros(3),
                                                                    reduction="bad"),
    lambda lib: lib.nn.functional.triplet_margin_with_distance_loss(lib.zeros(3), lib.zeros(2, 3), lib.zeros(3)),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.zeros(3, 4), lib.zeros(3, 4), -lib.ones(3, 4)),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.zeros(3, 4), lib.zeros(3, 4), lib.ones(2, 4)),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.zeros(3, 4), lib.zeros(3, 4), lib.ones(3, 4), reduction="x"),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.zeros(3, 4), lib.zeros(3, 4), -1.0),
])
def test_errors_match_torch(call):
    got, want = _same_error(call)
    assert got.replace("ember", "torch") == want
