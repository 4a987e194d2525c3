"""ember.nn.functional losses: numpy references for every reduction, gradcheck, PyTorch's
errors and warnings, and comparisons with torch (values and gradients) where installed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

F64 = ember.float64
rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5))
Y = rng.standard_normal((4, 5))
W = rng.random((4, 5))
T = np.array([0, 3, 4, 1])
CW = rng.random(5)
P = rng.random((4, 5))
P /= P.sum(1, keepdims=True)
PX, PY = rng.uniform(0.05, 0.95, (4, 5)), rng.random((4, 5))


def _t(a, grad=False):
    return ember.tensor(a, requires_grad=grad)


def _red(l, r):
    return {"mean": l.mean(), "sum": l.sum(), "none": l}[r]


def _logsm(x, d=1):
    m = x.max(d, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(d, keepdims=True))


def _huber(d, delta):
    a = np.abs(d)
    return np.where(a < delta, 0.5 * a * a, delta * (a - 0.5 * delta))


def _sl1(d, beta):
    a = np.abs(d)
    return np.where(a < beta, 0.5 * a * a / beta, a - 0.5 * beta)


def _nll(lp, t, w=None, ignore=-100, r="mean"):
    valid = t != ignore
    safe = np.where(valid, t, 0)
    ww = (np.ones(lp.shape[1]) if w is None else w)[safe] * valid
    picked = -np.take_along_axis(lp, safe[:, None], 1)[:, 0] * ww
    return {"mean": picked.sum() / ww.sum(), "sum": picked.sum(), "none": picked}[r]


REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("r", REDUCTIONS)
def test_regression_losses_match_numpy(r):
    d = X - Y
    cases = [
        (F.mse_loss(_t(X), _t(Y), reduction=r), _red(d * d, r)),
        (F.l1_loss(_t(X), _t(Y), reduction=r), _red(np.abs(d), r)),
        (F.smooth_l1_loss(_t(X), _t(Y), reduction=r), _red(_sl1(d, 1.0), r)),
        (F.smooth_l1_loss(_t(X), _t(Y), reduction=r, beta=0.3), _red(_sl1(d, 0.3), r)),
        (F.smooth_l1_loss(_t(X), _t(Y), reduction=r, beta=0.0), _red(np.abs(d), r)),
        (F.huber_loss(_t(X), _t(Y), reduction=r, delta=0.7), _red(_huber(d, 0.7), r)),
        (F.soft_margin_loss(_t(X), _t(np.sign(Y)), reduction=r), _red(np.log1p(np.exp(-np.sign(Y) * X)), r)),
    ]
    for got, want in cases:
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_weighted_regression_losses():
    d = X - Y
    np.testing.assert_allclose(F.mse_loss(_t(X), _t(Y), weight=_t(W)).numpy(), (d * d * W).sum() / W.sum())
    np.testing.assert_allclose(F.l1_loss(_t(X), _t(Y), weight=_t(W), reduction="sum").numpy(), (np.abs(d) * W).sum())
    np.testing.assert_allclose(F.huber_loss(_t(X), _t(Y), weight=_t(W)).numpy(), (_huber(d, 1.0) * W).mean())


@pytest.mark.parametrize("r", REDUCTIONS)
def test_cross_entropy_and_nll_match_numpy(r):
    lp = _logsm(X)
    np.testing.assert_allclose(F.cross_entropy(_t(X), _t(T), reduction=r).numpy(), _nll(lp, T, r=r), atol=1e-12)
    np.testing.assert_allclose(F.nll_loss(_t(lp), _t(T), reduction=r).numpy(), _nll(lp, T, r=r), atol=1e-12)
    got = F.cross_entropy(_t(X), _t(T), weight=_t(CW), ignore_index=3, reduction=r)
    np.testing.assert_allclose(got.numpy(), _nll(lp, T, CW, 3, r), atol=1e-12)
    # probabilities as targets
    want = _red(-(P * lp).sum(1), r) if r != "mean" else -(P * lp).sum() / 4
    np.testing.assert_allclose(F.cross_entropy(_t(X), _t(P), reduction=r).numpy(), want, atol=1e-12)
    want = _red(-(P * lp * CW).sum(1), r) if r != "mean" else -(P * lp * CW).sum() / 4
    np.testing.assert_allclose(F.cross_entropy(_t(X), _t(P), weight=_t(CW), reduction=r).numpy(), want, atol=1e-12)


@pytest.mark.parametrize("r", REDUCTIONS)
def test_cross_entropy_label_smoothing(r):
    eps, c = 0.2, 5
    lp = _logsm(X)
    nll = _nll(lp, T, CW, 3, r)
    valid = T != 3
    smooth = -(lp * CW).sum(1) * valid
    smooth = {"mean": smooth.sum() / (CW[np.where(valid, T, 0)] * valid).sum(), "sum": smooth.sum(),
              "none": smooth}[r]
    got = F.cross_entropy(_t(X), _t(T), weight=_t(CW), ignore_index=3, reduction=r, label_smoothing=eps)
    np.testing.assert_allclose(got.numpy(), (1 - eps) * nll + eps / c * smooth, atol=1e-12)
    # with probabilities: the target is mixed with the uniform distribution
    q = P * (1 - eps) + eps / c
    got = F.cross_entropy(_t(X), _t(P), reduction=r, label_smoothing=eps)
    want = _red(-(q * lp).sum(1), r)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    # index targets without weights equal the smoothed one-hot probabilities
    onehot = np.eye(c)[T]
    a = F.cross_entropy(_t(X), _t(T), label_smoothing=eps)
    b = F.cross_entropy(_t(X), _t(onehot), label_smoothing=eps)
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


def test_cross_entropy_spatial_and_unbatched():
    x = rng.standard_normal((2, 3, 4, 5))
    t = rng.integers(0, 3, (2, 4, 5))
    flat_x = np.moveaxis(x, 1, -1).reshape(-1, 3)
    got = F.cross_entropy(_t(x), _t(t))
    np.testing.assert_allclose(got.numpy(), _nll(_logsm(flat_x), t.reshape(-1)), atol=1e-12)
    assert F.cross_entropy(_t(x), _t(t), reduction="none").shape == (2, 4, 5)
    got = F.cross_entropy(_t(X[0]), _t(np.array(2)))
    np.testing.assert_allclose(got.numpy(), -_logsm(X[:1])[0, 2], atol=1e-12)
    # all targets ignored: mean is 0 / 0
    assert np.isnan(F.cross_entropy(_t(X), _t(np.full(4, -100))).item())


@pytest.mark.parametrize("r", REDUCTIONS)
def test_binary_cross_entropy(r):
    bce = -(PY * np.log(PX) + (1 - PY) * np.log(1 - PX))
    np.testing.assert_allclose(F.binary_cross_entropy(_t(PX), _t(PY), reduction=r).numpy(), _red(bce, r))
    np.testing.assert_allclose(F.binary_cross_entropy(_t(PX), _t(PY), _t(CW), reduction=r).numpy(),
                               _red(bce * CW, r))
    z = X * 10
    s = 1 / (1 + np.exp(-z))
    pw = rng.random(5) * 3
    want = -(pw * PY * np.log(s) + (1 - PY) * np.log(1 - s)) * CW
    got = F.binary_cross_entropy_with_logits(_t(z), _t(PY), _t(CW), reduction=r, pos_weight=_t(pw))
    np.testing.assert_allclose(got.numpy(), _red(want, r), rtol=1e-10)


def test_binary_cross_entropy_clamps_log_and_logits_are_stable():
    got = F.binary_cross_entropy(_t(np.array([0.0, 1.0, 0.5])), _t(np.array([1.0, 0.0, 1.0])), reduction="none")
    np.testing.assert_allclose(got.numpy(), [100, 100, np.log(2)])
    z = _t(np.array([-800.0, 800.0]), True)
    loss = F.binary_cross_entropy_with_logits(z, _t(np.array([1.0, 0.0])), reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [800, 800])
    loss.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [-1, 1])


@pytest.mark.parametrize("r", REDUCTIONS + ["batchmean"])
def test_kl_div(r):
    inp = np.log(P)
    q = rng.random((4, 5))
    q[0, 1] = 0
    l = np.where(q > 0, q * (np.log(np.where(q > 0, q, 1)) - inp), 0)
    want = l.sum() / 4 if r == "batchmean" else _red(l, r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(F.kl_div(_t(inp), _t(q), reduction=r).numpy(), want, atol=1e-12)
        lq = np.log(q + 0.1)
        l2 = np.exp(lq) * (lq - inp)
        want = l2.sum() / 4 if r == "batchmean" else _red(l2, r)
        np.testing.assert_allclose(F.kl_div(_t(inp), _t(lq), reduction=r, log_target=True).numpy(), want, atol=1e-12)


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the batch size"):
        F.kl_div(_t(X), _t(P))


# ----------------------------------------------------------------------------- gradcheck
GRADS = [
    ("mse", lambda a, b: F.mse_loss(a, b), (X, Y)),
    ("l1", lambda a, b: F.l1_loss(a, b, reduction="sum"), (X, Y)),
    ("smooth_l1", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), (X, Y)),
    ("huber", lambda a, b: F.huber_loss(a, b, delta=0.5, reduction="none"), (X, Y)),
    ("ce", lambda a: F.cross_entropy(a, _t(T), weight=_t(CW), ignore_index=3), (X,)),
    ("ce_ls", lambda a: F.cross_entropy(a, _t(T), label_smoothing=0.1, reduction="sum"), (X,)),
    ("ce_prob", lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1), (X, P)),
    ("nll", lambda a: F.nll_loss(a, _t(T), reduction="none"), (X,)),
    ("bce", lambda a, b: F.binary_cross_entropy(a, b, _t(CW)), (PX, PY)),
    ("bce_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=_t(CW)), (X, PY)),
    ("kl", lambda a, b: F.kl_div(a, b, reduction="batchmean"), (np.log(P), PY)),
    ("kl_log", lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True), (np.log(P), np.log(PY))),
]


@pytest.mark.parametrize("name,fn,args", GRADS, ids=[g[0] for g in GRADS])
def test_gradcheck(name, fn, args):
    assert gradcheck(fn, tuple(_t(a, True) for a in args))


# ----------------------------------------------------------------------------- errors and warnings
ERRORS = [
    (lambda: F.mse_loss(_t(X), _t(X), reduction="foo"), ValueError, "foo is not a valid value for reduction"),
    (lambda: F.mse_loss(_t(X), _t(X), weight=_t(CW)), ValueError, "Weights and input must have the same size."),
    (lambda: F.binary_cross_entropy(_t(PX[0]), _t(PY[:, 0])), ValueError,
     "Using a target size (ember.Size([4])) that is different to the input size (ember.Size([5])) is deprecated. "
     "Please ensure they have the same size."),
    (lambda: F.binary_cross_entropy(_t(PX * 3), _t(PY)), RuntimeError, "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy_with_logits(_t(X[0]), _t(X[:, 0])), ValueError,
     "Target size (ember.Size([4])) must be the same as input size (ember.Size([5]))"),
    (lambda: F.cross_entropy(_t(X), _t(np.array([0, 1, 2, 3, 4]))), ValueError,
     "Expected input batch_size (4) to match target batch_size (5)."),
    (lambda: F.cross_entropy(_t(X), _t(T.astype(np.float64))), RuntimeError,
     "expected target dtype to be Long or Byte, but got Double"),
    (lambda: F.cross_entropy(_t(X), _t(np.eye(5, dtype=np.int64)[T])), RuntimeError,
     "Expected floating point type for target with class probabilities, got Long"),
    (lambda: F.cross_entropy(_t(X), _t(np.array([0, 1, 9, 2]))), IndexError, "Target 9 is out of bounds."),
    (lambda: F.cross_entropy(_t(X), _t(T), weight=_t(CW[:3])), RuntimeError,
     "weight tensor should be defined either for all 5 classes or no classes but got weight tensor of shape: [3]"),
    (lambda: F.cross_entropy(_t(X), _t(T), label_smoothing=1.5), RuntimeError,
     "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda: F.nll_loss(_t(np.zeros((2, 3, 4))), _t(np.zeros((2, 5), np.int64))), RuntimeError,
     "Expected target size [2, 4], got [2, 5]"),
    (lambda: F.smooth_l1_loss(_t(X), _t(Y), beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda: F.huber_loss(_t(X), _t(Y), delta=0.0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert msg in str(info.value)


def test_broadcast_warning_and_legacy_args():
    with pytest.warns(UserWarning, match=r"Using a target size \(ember.Size\(\[5\]\)\) that is different to the "
                                         r"input size \(ember.Size\(\[4, 5\]\)\). This will likely lead to "
                                         "incorrect results due to broadcasting."):
        got = F.mse_loss(_t(X), _t(Y[0]))
    np.testing.assert_allclose(got.numpy(), ((X - Y[0]) ** 2).mean())
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        got = F.l1_loss(_t(X), _t(Y), size_average=False)
    np.testing.assert_allclose(got.numpy(), np.abs(X - Y).sum())
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.cross_entropy(_t(X), _t(T), reduce=False).shape == (4,)


# ----------------------------------------------------------------------------- against torch
def _torch_cases(torch):
    x4 = rng.standard_normal((2, 3, 4, 5))
    t4 = rng.integers(0, 3, (2, 4, 5))
    return [
        ("mse", lambda f, a, b: f.mse_loss(a, b), (X, Y)),
        ("mse_w", lambda f, a, b: f.mse_loss(a, b, weight=b.detach() * 0 + 1 + b.detach() ** 2), (X, Y)),
        ("l1", lambda f, a, b: f.l1_loss(a, b, reduction="none"), (X, Y)),
        ("smooth_l1", lambda f, a, b: f.smooth_l1_loss(a, b, beta=0.4), (X, Y)),
        ("huber", lambda f, a, b: f.huber_loss(a, b, delta=0.4, reduction="sum"), (X, Y)),
        ("ce", lambda f, a: f.cross_entropy(a, _lib(f, T), weight=_lib(f, CW), ignore_index=3), (X,)),
        ("ce_ls", lambda f, a: f.cross_entropy(a, _lib(f, T), weight=_lib(f, CW), ignore_index=1,
                                               label_smoothing=0.3), (X,)),
        ("ce_ls_none", lambda f, a: f.cross_entropy(a, _lib(f, T), label_smoothing=0.3, reduction="none"), (X,)),
        ("ce_prob", lambda f, a, b: f.cross_entropy(a, b, weight=_lib(f, CW), label_smoothing=0.1), (X, P)),
        ("ce_4d", lambda f, a: f.cross_entropy(a, _lib(f, t4), weight=_lib(f, CW[:3]), ignore_index=1,
                                               label_smoothing=0.2), (x4,)),
        ("nll_4d_sum", lambda f, a: f.nll_loss(a, _lib(f, t4), reduction="sum"), (x4,)),
        ("bce", lambda f, a, b: f.binary_cross_entropy(a, b, _lib(f, CW)), (PX, PY)),
        ("bce_logits", lambda f, a, b: f.binary_cross_entropy_with_logits(a, b, _lib(f, CW), pos_weight=_lib(f, CW * 2),
                                                                         reduction="none"), (X * 5, PY)),
        ("kl", lambda f, a, b: f.kl_div(a, b, reduction="batchmean"), (np.log(P), PY)),
        ("kl_log", lambda f, a, b: f.kl_div(a, b, reduction="sum", log_target=True), (np.log(P), np.log(PY))),
        ("soft_margin", lambda f, a: f.soft_margin_loss(a, _lib(f, np.sign(Y))), (X,)),
        ("poisson", lambda f, a: f.poisson_nll_loss(a, _lib(f, np.abs(Y) * 3), full=True), (X,)),
        ("gaussian", lambda f, a: f.gaussian_nll_loss(a, _lib(f, Y), _lib(f, W), full=True), (X,)),
        ("cos_emb", lambda f, a, b: f.cosine_embedding_loss(a, b, _lib(f, np.array([1.0, -1, 1, -1])), margin=0.1),
         (X, Y)),
        ("margin_rank", lambda f, a, b: f.margin_ranking_loss(a, b, _lib(f, np.array([1.0, -1, 1, -1])), margin=0.1),
         (X[:, 0], Y[:, 0])),
        ("hinge", lambda f, a: f.hinge_embedding_loss(a, _lib(f, np.array([1.0, -1, 1, -1]))), (X[:, 0],)),
    ]


def _lib(f, a):
    if f is F:
        return ember.tensor(a)
    import torch
    return torch.tensor(a)


def test_against_torch():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    for name, fn, arrays in _torch_cases(torch):
        ea = [ember.tensor(a, requires_grad=True) for a in arrays]
        ta = [torch.tensor(a, requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eo, to = fn(F, *ea), fn(TF, *ta)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
        g = rng.standard_normal(tuple(to.shape))
        eo.backward(ember.tensor(g))
        to.backward(torch.tensor(g))
        for i, (e, t) in enumerate(zip(ea, ta)):
            if t.grad is not None:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12,
                                           err_msg=f"{name} grad {i}")
