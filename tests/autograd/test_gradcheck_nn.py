"""Gradients of the nn ops (ember._ops._nn) by finite differences in float64, and second derivatives."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def rand(*shape, seed=0):
    g = ember.Generator().manual_seed(seed)
    return ember.randn(*shape, dtype=ember.float64, generator=g).requires_grad_(True)


CASES = {
    "relu": (lambda x: ember.relu(x), (3, 4)),
    "softmax": (lambda x: ember.softmax(x, 1), (3, 4)),
    "log_softmax": (lambda x: ember.log_softmax(x, 0), (3, 4)),
    "nll_mean": (lambda x: ember.nll_loss(x, ember.tensor([1, 2, -100]), None, 1), (3, 4)),
    "nll_weight_sum": (lambda x: ember.nll_loss(x, ember.tensor([1, 2, 0]),
                                                ember.tensor([1.0, 2.0, 0.5, 3.0], dtype=ember.float64), 2), (3, 4)),
    "nll_none_spatial": (lambda x: ember.nll_loss(x, ember.tensor([[1, 0], [2, 2]]), None, 0), (2, 3, 2)),
    "im2col": (lambda x: ember.im2col(x, (2, 3), (1, 2), (1, 0), (2, 1)), (2, 2, 5, 6)),
    "col2im": (lambda x: ember.col2im(x, (5, 5), 2, 1, 1, 2), (1, 8, 9)),
    "max_pool": (lambda x: ember.max_pool2d_with_indices(x, 3, 2, 1, 1, True)[0], (2, 2, 5, 5)),
    "max_pool_overlap": (lambda x: ember.max_pool2d_with_indices(x, 2, 1)[0], (1, 2, 4, 4)),
    "constant_pad_nd": (lambda x: ember.constant_pad_nd(x, [1, -1, 2, 0], 0.5), (2, 3, 4)),
    "embedding": (lambda w: ember.embedding(w, ember.tensor([[1, 3], [1, 0]])), (5, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name):
    fn, shape = CASES[name]
    assert gradcheck(fn, (rand(*shape),))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "nll_mean", "im2col", "col2im", "max_pool",
                                  "constant_pad_nd"])
def test_gradgradcheck(name):
    fn, shape = CASES[name]
    assert gradgradcheck(fn, (rand(*shape),))


def test_relu_gradient_is_zero_at_zero():
    x = ember.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    ember.relu(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]


def test_embedding_padding_idx_and_scale_grad_by_freq():
    w = ember.zeros(4, 2, requires_grad=True)
    idx = ember.tensor([1, 1, 2, 3])
    out = ember.embedding(w, idx, 3, True)
    (out * ember.arange(8.0).reshape(4, 2)).sum().backward()
    # row 1 appears twice: (0,1)+(2,3) divided by 2; row 2 once; row 3 is padding
    assert w.grad.tolist() == [[0, 0], [1, 2], [4, 5], [0, 0]]


def test_max_pool_gradient_goes_to_first_max():
    x = ember.zeros(1, 1, 2, 2, requires_grad=True)
    ember.max_pool2d_with_indices(x, 2)[0].sum().backward()
    assert x.grad.reshape(-1).tolist() == [1.0, 0.0, 0.0, 0.0]


def test_grads_against_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((2, 3, 6, 5))
    x, tx = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    g = np.random.default_rng(1).standard_normal((2, 3, 4, 3))
    ember.max_pool2d_with_indices(x, 3, 2, 1, 1, True)[0].mul(ember.tensor(g)).sum().backward()
    torch.nn.functional.max_pool2d(tx, 3, 2, 1, 1, True).mul(torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    t = np.array([1, 0])
    y, ty = ember.tensor(a[:, :, 0, 0], requires_grad=True), torch.tensor(a[:, :, 0, 0], requires_grad=True)
    ember.nll_loss(ember.log_softmax(y, 1), ember.tensor(t)).backward()
    torch.nn.functional.nll_loss(torch.log_softmax(ty, 1), torch.tensor(t)).backward()
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), atol=1e-12)
