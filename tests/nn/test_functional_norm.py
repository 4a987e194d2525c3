"""ember.nn.functional normalization: numpy references, running statistics, gradcheck,
PyTorch's errors, and comparisons with torch where installed."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3, 5, 2)) * 2 + 1
W3, B3 = rng.standard_normal(3), rng.standard_normal(3)


def _t(a, grad=False):
    return ember.tensor(a, requires_grad=grad)


def _bn(x, w, b, eps=1e-5):
    dims = (0,) + tuple(range(2, x.ndim))
    m, v = x.mean(dims, keepdims=True), x.var(dims, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m) / np.sqrt(v + eps) * w.reshape(shape) + b.reshape(shape)


def test_batch_norm_training_and_running_stats():
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    out = F.batch_norm(_t(X), rm, rv, _t(W3), _t(B3), training=True, momentum=0.3)
    np.testing.assert_allclose(out.numpy(), _bn(X, W3, B3), atol=1e-12)
    n = X.size // 3
    mean = X.mean((0, 2, 3))
    unbiased = X.var((0, 2, 3)) * n / (n - 1)
    np.testing.assert_allclose(rm.numpy(), 0.3 * mean, atol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.7 + 0.3 * unbiased, atol=1e-12)
    assert rm.grad_fn is None and not rm.requires_grad
    # evaluation uses the running statistics
    out = F.batch_norm(_t(X), rm, rv, _t(W3), _t(B3), training=False)
    want = (X - rm.numpy()[:, None, None]) / np.sqrt(rv.numpy()[:, None, None] + 1e-5) * W3[:, None, None] \
        + B3[:, None, None]
    np.testing.assert_allclose(out.numpy(), want, atol=1e-12)
    # 2-d input (N, C) and no running stats
    x2 = X[:, :, 0, 0]
    np.testing.assert_allclose(F.batch_norm(_t(x2), None, None, training=True).numpy(),
                               _bn(x2, np.ones(3), np.zeros(3)), atol=1e-12)


def test_layer_group_instance_rms_norm():
    w, b = rng.standard_normal((5, 2)), rng.standard_normal((5, 2))
    m, v = X.mean((2, 3), keepdims=True), X.var((2, 3), keepdims=True)
    np.testing.assert_allclose(F.layer_norm(_t(X), (5, 2), _t(w), _t(b)).numpy(),
                               (X - m) / np.sqrt(v + 1e-5) * w + b, atol=1e-12)
    np.testing.assert_allclose(F.instance_norm(_t(X)).numpy(), (X - m) / np.sqrt(v + 1e-5), atol=1e-12)
    x = rng.standard_normal((2, 6, 4))
    g = x.reshape(2, 3, 8)
    gn = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(2, 6, 4)
    w6, b6 = rng.standard_normal(6), rng.standard_normal(6)
    np.testing.assert_allclose(F.group_norm(_t(x), 3, _t(w6), _t(b6)).numpy(), gn * w6[:, None] + b6[:, None],
                               atol=1e-12)
    rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(F.rms_norm(_t(x), (4,), eps=1e-6).numpy(), rms, atol=1e-12)


def test_instance_norm_running_stats():
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    F.instance_norm(_t(X), rm, rv, momentum=0.5)
    np.testing.assert_allclose(rm.numpy(), 0.5 * X.mean((2, 3)).mean(0), atol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.5 + 0.5 * X.var((2, 3), ddof=1).mean(0), atol=1e-12)


def test_normalize_and_local_response_norm():
    np.testing.assert_allclose(F.normalize(_t(X)).numpy(), X / np.linalg.norm(X, axis=1, keepdims=True),
                               atol=1e-12)
    np.testing.assert_allclose(F.normalize(_t(X), p=1.0, dim=-1).numpy(),
                               X / np.abs(X).sum(-1, keepdims=True), atol=1e-12)
    z = F.normalize(ember.zeros(2, 3))
    assert np.all(z.numpy() == 0)
    x = rng.standard_normal((2, 5, 3))
    sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0)))
    div = (1.0 + 1e-4 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** 0.75
    np.testing.assert_allclose(F.local_response_norm(_t(x), 3).numpy(), x / div, atol=1e-12)


def test_gradcheck():
    x = _t(X[:2, :, :2, :1].copy(), True)
    w, b = _t(W3, True), _t(B3, True)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    assert gradcheck(lambda x: F.layer_norm(x, (2, 1)), (x,))
    assert gradcheck(lambda x, w, b: F.group_norm(x, 3, w, b), (x, w, b))
    assert gradcheck(lambda x: F.normalize(x), (x,))


ERRORS = [
    (lambda: F.batch_norm(ember.randn(1, 4), ember.zeros(4), ember.ones(4), training=True), ValueError,
     "Expected more than 1 value per channel when training, got input size ember.Size([1, 4])"),
    (lambda: F.batch_norm(ember.randn(3, 4), None, None), RuntimeError, "running_mean must be defined in evaluation mode"),
    (lambda: F.batch_norm(ember.randn(3, 4), ember.zeros(3), ember.ones(3), training=True), RuntimeError,
     "running_mean should contain 4 elements not 3"),
    (lambda: F.layer_norm(ember.randn(3, 5), (4,)), RuntimeError,
     "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[3, 5]"),
    (lambda: F.layer_norm(ember.randn(3, 5), (5,), ember.ones(4)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and normalized_shape = [5]"),
    (lambda: F.group_norm(ember.randn(2, 6, 4), 4), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 4] and "
     "num_groups=4"),
    (lambda: F.instance_norm(ember.randn(2, 6, 1)), ValueError, "Expected more than 1 spatial element when training"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert msg in str(info.value)


def test_against_torch():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    cases = [
        ("batch_norm", lambda f, L, x, w, b: f.batch_norm(x, L(np.zeros(3)), L(np.ones(3)), w, b, True, 0.2), (X, W3, B3)),
        ("batch_norm_eval", lambda f, L, x, w, b: f.batch_norm(x, L(np.ones(3) * 0.3), L(np.ones(3) * 2), w, b),
         (X, W3, B3)),
        ("layer_norm", lambda f, L, x: f.layer_norm(x, (2,), eps=1e-3), (X,)),
        ("group_norm", lambda f, L, x, w, b: f.group_norm(x, 3, w, b), (X, W3, B3)),
        ("instance_norm", lambda f, L, x, w, b: f.instance_norm(x, weight=w, bias=b), (X, W3, B3)),
        ("rms_norm", lambda f, L, x: f.rms_norm(x, (5, 2)), (X,)),
        ("normalize", lambda f, L, x: f.normalize(x, 3.0, 2), (X,)),
        ("lrn", lambda f, L, x: f.local_response_norm(x, 2, alpha=0.1), (X,)),
    ]
    for name, fn, arrays in cases:
        ea = [ember.tensor(a, requires_grad=True) for a in arrays]
        ta = [torch.tensor(a, requires_grad=True) for a in arrays]
        eo, to = fn(F, ember.tensor, *ea), fn(TF, torch.tensor, *ta)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-10, err_msg=name)
        g = rng.standard_normal(tuple(to.shape))
        eo.backward(ember.tensor(g))
        to.backward(torch.tensor(g))
        for e, t in zip(ea, ta):
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-9, err_msg=name)
