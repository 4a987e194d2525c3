"""rsample gradients: on fixed noise (ember.manual_seed before each draw) autograd's gradient of the
sample equals a finite difference of the sample; for the gamma family (implicit reparameterisation)
the gradient dx/dalpha is checked against the exact derivative of the inverse cdf (scipy's gammaincinv, central difference) and against
torch._standard_gamma_grad, and Monte Carlo gradients of E[f(x)] against closed forms."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as ED
from ember.distributions._sampling import _standard_gamma_grad

torch = pytest.importorskip("torch")
scipy_special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize("name", ["Normal", "LogNormal", "HalfNormal", "Exponential", "Uniform", "Laplace",
                                  "Cauchy", "Gumbel", "MultivariateNormal", "LowRankMultivariateNormal"])
def test_pathwise_gradient_is_the_derivative_of_the_sample(name):
    """d x / d theta from autograd equals a central finite difference of the sample on the same noise
    (the seed is reset before each draw, so the noise is the same)."""
    params = {
        "Normal": ([0.5, -1.0], [1.0, 2.0]), "LogNormal": ([0.5, -1.0], [1.0, 0.3]), "HalfNormal": ([1.0, 2.0],),
        "Exponential": ([0.5, 2.0],), "Uniform": ([0.0, -1.0], [1.0, 3.0]), "Laplace": ([0.5, -1.0], [1.0, 2.0]),
        "Cauchy": ([0.5, -1.0], [1.0, 2.0]), "Gumbel": ([0.5, -1.0], [1.0, 2.0]),
        "MultivariateNormal": ([0.5, -1.0], [[1.0, 0.0], [0.3, 0.8]]),
        "LowRankMultivariateNormal": ([0.5, -1.0], [[1.0], [0.3]], [0.5, 0.8]),
    }[name]

    def draw(*ps):
        ember.manual_seed(5)
        if name == "MultivariateNormal":
            d = ED.MultivariateNormal(ps[0], scale_tril=ps[1])
        else:
            d = getattr(ED, name)(*ps)
        return d.rsample((4,))

    ps = [ember.tensor(p, dtype=ember.float64, requires_grad=True) for p in params]
    w = ember.tensor(np.linspace(-1, 1, draw(*ps).numel()).reshape(tuple(draw(*ps).shape)), dtype=ember.float64)
    (draw(*ps) * w).sum().backward()
    h = 1e-6
    for k, p in enumerate(ps):
        flat = p.detach().numpy().ravel()
        for i in range(flat.size):
            if name == "MultivariateNormal" and k == 1 and i == 1:
                continue   # the upper triangle is not read
            up, dn = flat.copy(), flat.copy()
            up[i] += h
            dn[i] -= h
            args_up = [q.detach() if j != k else ember.tensor(up.reshape(p.shape), dtype=ember.float64)
                       for j, q in enumerate(ps)]
            args_dn = [q.detach() if j != k else ember.tensor(dn.reshape(p.shape), dtype=ember.float64)
                       for j, q in enumerate(ps)]
            fd = ((draw(*args_up) * w).sum() - (draw(*args_dn) * w).sum()).item() / (2 * h)
            assert abs(p.grad.numpy().ravel()[i] - fd) <= 1e-5 * max(1.0, abs(fd)), (name, k, i)


@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0, 2.5, 10.0, 150.0])
def test_standard_gamma_grad_is_the_inverse_cdf_derivative(alpha):
    u = np.array([0.01, 0.2, 0.5, 0.8, 0.99])
    x = scipy_special.gammaincinv(alpha, u)
    h = 1e-6 * alpha
    exact = (scipy_special.gammaincinv(alpha + h, u) - scipy_special.gammaincinv(alpha - h, u)) / (2 * h)
    got = _standard_gamma_grad(ember.full((5,), alpha, dtype=ember.float64), ember.tensor(x)).numpy()
    np.testing.assert_allclose(got, exact, rtol=1e-5)
    # PyTorch's fitted approximation agrees to its own accuracy (a few parts in a thousand)
    tg = torch._standard_gamma_grad(torch.full((5,), alpha, dtype=torch.float64), torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, tg, rtol=5e-3)


@pytest.mark.parametrize("dist", ["Gamma", "Beta", "Dirichlet", "Chi2", "StudentT"])
def test_gamma_family_rsample_has_gradients(dist):
    ember.manual_seed(0)
    a = ember.tensor([0.7, 3.0], dtype=ember.float64, requires_grad=True)
    d = {"Gamma": lambda: ED.Gamma(a, ember.tensor([2.0, 0.5], dtype=ember.float64)),
         "Beta": lambda: ED.Beta(a, ember.tensor([2.0, 0.5], dtype=ember.float64)),
         "Dirichlet": lambda: ED.Dirichlet(a),
         "Chi2": lambda: ED.Chi2(a),
         "StudentT": lambda: ED.StudentT(a + 2)}[dist]()
    x = d.rsample((10,))
    x.sum().backward()
    assert a.grad is not None and bool(ember.isfinite(a.grad).all()) and bool((a.grad != 0).any())


def test_gamma_mc_gradient_of_the_mean():
    """d E[x] / d alpha = 1 / rate for Gamma(alpha, rate): the reparameterised estimate over 200k draws,
    within 6 standard errors (estimated from the per-draw gradients)."""
    ember.manual_seed(11)
    n = 200_000
    alpha = ember.tensor(1.7, dtype=ember.float64, requires_grad=True)
    rate = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    a = alpha.expand(n)
    x = ED.Gamma(a, rate).rsample()
    g_each = ember.autograd.grad(x.sum(), a, retain_graph=True)[0].numpy()
    x.mean().backward()
    assert abs(alpha.grad.item() - 1 / 2.0) <= 6 * g_each.std() / np.sqrt(n)
    # d E[x] / d rate = -alpha / rate^2 (pathwise through x = g / rate)
    assert abs(rate.grad.item() + 1.7 / 4.0) <= 6 * (x.detach().numpy() / 2.0).std() / np.sqrt(n)


def test_beta_and_dirichlet_mc_gradients_of_the_mean():
    ember.manual_seed(12)
    n = 200_000
    c1 = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    c0 = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    x = ED.Beta(c1, c0).rsample((n,))
    x.mean().backward()
    # E[x] = c1 / (c1 + c0): d/dc1 = c0 / 25 = 0.12, d/dc0 = -c1 / 25 = -0.08
    assert abs(c1.grad.item() - 0.12) < 0.01 and abs(c0.grad.item() + 0.08) < 0.01


def test_relaxed_and_straight_through_rsample_gradients():
    logits = ember.tensor([0.2, -0.3, 1.0], requires_grad=True)
    x = ED.RelaxedOneHotCategorical(ember.tensor(0.5), logits=logits).rsample((5,))
    (x[..., 0]).sum().backward()
    assert logits.grad is not None and bool((logits.grad != 0).any())
    p = ember.tensor([0.2, 0.8], requires_grad=True)
    y = ED.OneHotCategoricalStraightThrough(probs=p).rsample()
    (y * ember.tensor([1.0, 2.0])).sum().backward()
    # straight through: the gradient of w . (probs / probs.sum()) = (w - w . probs) / 1, as torch gives
    np.testing.assert_allclose(p.grad.numpy(), [1.0 - 1.8, 2.0 - 1.8], rtol=1e-6)
    assert float(y.sum()) == 1.0


def test_sample_is_detached_and_rsample_is_not():
    loc = ember.tensor([0.0], requires_grad=True)
    d = ED.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    with pytest.raises(NotImplementedError):
        ED.Bernoulli(0.3).rsample()
