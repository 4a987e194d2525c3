"""F.gumbel_softmax (found missing by examples/ programs): shapes, straight-through gradient, distribution."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

LOGITS = [1.0, 0.0, -1.0, 0.5]


def test_soft_sample_is_a_distribution_with_logits_shape_and_dtype():
    for dtype in (ember.float32, ember.float64):
        y = F.gumbel_softmax(ember.zeros(5, 2, 4, dtype=dtype), tau=0.7, dim=1)
        assert y.shape == (5, 2, 4) and y.dtype == dtype
        assert bool((y > 0).all()) and ember.allclose(y.sum(1), ember.ones(5, 4, dtype=dtype))


def test_hard_is_one_hot_of_the_soft_argmax_with_the_soft_gradient():
    logits = ember.tensor([LOGITS] * 6, requires_grad=True)
    c = ember.arange(24, dtype=ember.float32).view(6, 4)
    ember.manual_seed(5)
    soft = F.gumbel_softmax(logits, tau=0.5)
    (g_soft,) = ember.autograd.grad((soft * c).sum(), logits)
    ember.manual_seed(5)                                   # the same Gumbel draws
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    (g_hard,) = ember.autograd.grad((hard * c).sum(), logits)
    assert ember.equal(hard.detach(), F.one_hot(soft.argmax(-1), 4).float())
    assert ember.allclose(g_hard, g_soft)                  # straight-through estimator


def test_argmax_frequencies_follow_softmax_of_logits():
    # P(argmax = i) = softmax(logits)_i for any tau; 20000 draws: 3-sigma ~ 0.011
    ember.manual_seed(0)
    y = F.gumbel_softmax(ember.tensor([LOGITS]).expand(20000, 4), tau=2.0, hard=True)
    freq = y.mean(0).numpy()
    p = np.exp(LOGITS) / np.exp(LOGITS).sum()
    np.testing.assert_allclose(freq, p, atol=0.015)
    torch = pytest.importorskip("torch")                  # PyTorch's own frequencies agree too
    theirs = torch.nn.functional.gumbel_softmax(torch.tensor([LOGITS]).expand(20000, 4), tau=2.0, hard=True)
    np.testing.assert_allclose(theirs.mean(0).numpy(), freq, atol=0.025)


def test_eps_is_deprecated():
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        F.gumbel_softmax(ember.zeros(2, 3), eps=1e-5)
