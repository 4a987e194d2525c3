"""kl_divergence against torch.distributions.kl_divergence in float64, for every pair PyTorch registers
among the distributions ember implements; the registry's dispatch and errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as ED

torch = pytest.importorskip("torch")
import torch.distributions as TD  # noqa: E402


def T(mod):
    return lambda v: mod.tensor(v, dtype=mod.float64)


# one or two parameterisations per family, batch shape (2,) throughout
FAMILIES = {
    "Bernoulli": [lambda m, t: m.distributions.Bernoulli(t([0.3, 0.8])),
                  lambda m, t: m.distributions.Bernoulli(t([0.6, 0.1]))],
    "Beta": [lambda m, t: m.distributions.Beta(t([0.5, 2.0]), t([1.5, 3.0])),
             lambda m, t: m.distributions.Beta(t([2.5, 1.0]), t([0.7, 4.0]))],
    "Binomial": [lambda m, t: m.distributions.Binomial(t([5.0, 8.0]), t([0.3, 0.8])),
                 lambda m, t: m.distributions.Binomial(t([5.0, 8.0]), t([0.6, 0.1]))],
    "Categorical": [lambda m, t: m.distributions.Categorical(t([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]])),
                    lambda m, t: m.distributions.Categorical(t([[0.4, 0.4, 0.2], [0.1, 0.1, 0.8]]))],
    "Cauchy": [lambda m, t: m.distributions.Cauchy(t([0.0, 1.0]), t([1.0, 2.0])),
               lambda m, t: m.distributions.Cauchy(t([0.5, -1.0]), t([0.3, 1.0]))],
    "Dirichlet": [lambda m, t: m.distributions.Dirichlet(t([[0.5, 1.0, 2.0], [3.0, 1.0, 1.0]])),
                  lambda m, t: m.distributions.Dirichlet(t([[1.0, 1.0, 1.0], [0.5, 2.0, 4.0]]))],
    "Exponential": [lambda m, t: m.distributions.Exponential(t([0.5, 2.0])),
                    lambda m, t: m.distributions.Exponential(t([1.5, 0.3]))],
    "Gamma": [lambda m, t: m.distributions.Gamma(t([0.5, 2.0]), t([1.0, 3.0])),
              lambda m, t: m.distributions.Gamma(t([2.5, 1.0]), t([0.5, 2.0]))],
    "Geometric": [lambda m, t: m.distributions.Geometric(t([0.3, 0.8])),
                  lambda m, t: m.distributions.Geometric(t([0.6, 0.1]))],
    "Gumbel": [lambda m, t: m.distributions.Gumbel(t([0.0, 1.0]), t([1.0, 2.0])),
               lambda m, t: m.distributions.Gumbel(t([0.5, -1.0]), t([0.3, 1.0]))],
    "HalfNormal": [lambda m, t: m.distributions.HalfNormal(t([1.0, 2.0])),
                   lambda m, t: m.distributions.HalfNormal(t([0.3, 1.5]))],
    "Independent": [lambda m, t: m.distributions.Independent(m.distributions.Normal(t([[0.0, 1.0]] * 2), t([[1.0, 2.0]] * 2)), 1),
                    lambda m, t: m.distributions.Independent(m.distributions.Normal(t([[0.5, 0.0]] * 2), t([[0.3, 1.0]] * 2)), 1)],
    "Laplace": [lambda m, t: m.distributions.Laplace(t([0.0, 1.0]), t([1.0, 2.0])),
                lambda m, t: m.distributions.Laplace(t([0.5, -1.0]), t([0.3, 1.0]))],
    "LowRankMultivariateNormal": [
        lambda m, t: m.distributions.LowRankMultivariateNormal(t([[0.0, 1.0, 0.5]] * 2), t([[[1.0], [0.5], [0.2]]] * 2),
                                                               t([[0.5, 1.0, 2.0]] * 2)),
        lambda m, t: m.distributions.LowRankMultivariateNormal(t([[1.0, 0.0, -0.5]] * 2), t([[[0.3, 0.1], [-0.5, 0.4], [0.2, 0.0]]] * 2),
                                                               t([[1.5, 0.7, 1.0]] * 2))],
    "MultivariateNormal": [
        lambda m, t: m.distributions.MultivariateNormal(t([[0.0, 1.0, 0.5]] * 2), t([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])),
        lambda m, t: m.distributions.MultivariateNormal(t([[1.0, 0.0, -0.5]] * 2), scale_tril=t([[1.0, 0.0, 0.0], [0.5, 0.7, 0.0], [0.1, 0.2, 1.3]]))],
    "Normal": [lambda m, t: m.distributions.Normal(t([0.0, 1.0]), t([1.0, 2.0])),
               lambda m, t: m.distributions.Normal(t([0.5, -1.0]), t([0.3, 1.0]))],
    "OneHotCategorical": [lambda m, t: m.distributions.OneHotCategorical(t([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]])),
                          lambda m, t: m.distributions.OneHotCategorical(t([[0.4, 0.4, 0.2], [0.1, 0.1, 0.8]]))],
    "Poisson": [lambda m, t: m.distributions.Poisson(t([0.5, 2.0])), lambda m, t: m.distributions.Poisson(t([1.5, 0.3]))],
    "TransformedDistribution": [
        lambda m, t: m.distributions.LogNormal(t([0.0, 1.0]), t([1.0, 2.0])),
        lambda m, t: m.distributions.LogNormal(t([0.5, -1.0]), t([0.3, 1.0]))],
    "Uniform": [lambda m, t: m.distributions.Uniform(t([0.1, -1.0]), t([0.6, 2.0])),
                lambda m, t: m.distributions.Uniform(t([0.0, -2.0]), t([1.0, 3.0]))],
}
OURS = set(FAMILIES)
TORCH_PAIRS = sorted({(p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY
                      if p.__name__ in OURS and q.__name__ in OURS})


def test_registry_covers_torchs_pairs():
    ours = {(p.__name__, q.__name__) for p, q in ED.kl._KL_REGISTRY}
    assert set(TORCH_PAIRS) <= ours, sorted(set(TORCH_PAIRS) - ours)


@pytest.mark.parametrize("pair", TORCH_PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_kl_matches_torch(pair):
    for bp in FAMILIES[pair[0]]:
        for bq in FAMILIES[pair[1]]:
            e = ED.kl_divergence(bp(ember, T(ember)), bq(ember, T(ember)))
            t = TD.kl_divergence(bp(torch, T(torch)), bq(torch, T(torch)))
            assert tuple(e.shape) == tuple(t.shape), pair
            assert str(e.dtype) == str(t.dtype).replace("torch", "ember"), pair
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-9, atol=1e-12, err_msg=str(pair))


def test_kl_is_zero_for_equal_and_differentiable():
    loc = ember.tensor([0.3, -1.0], requires_grad=True)
    p = ED.Normal(loc, ember.tensor([1.0, 2.0]))
    q = ED.Normal(ember.tensor([0.0, 0.0]), ember.tensor([1.0, 2.0]))
    kl = ED.kl_divergence(p, q)
    kl.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [0.3, -1.0 / 4], rtol=1e-6)
    assert ED.kl_divergence(q, q).abs().max().item() == 0.0


def test_unregistered_pair_raises_like_torch():
    with pytest.raises(NotImplementedError) as te:
        TD.kl_divergence(TD.StudentT(torch.tensor(3.0)), TD.Normal(0.0, 1.0))
    with pytest.raises(NotImplementedError) as ee:
        ED.kl_divergence(ED.StudentT(ember.tensor(3.0)), ED.Normal(0.0, 1.0))
    assert str(ee.value) == str(te.value)


def test_register_kl_most_specific_wins():
    class MyNormal(ED.Normal):
        pass

    @ED.register_kl(MyNormal, ED.Normal)
    def _mine(p, q):
        return ember.tensor(-1.0)

    try:
        assert ED.kl_divergence(MyNormal(0.0, 1.0), ED.Normal(0.0, 1.0)).item() == -1.0
        assert ED.kl_divergence(ED.Normal(0.0, 1.0), MyNormal(0.0, 1.0)).item() == 0.0   # Normal-Normal still
    finally:
        del ED.kl._KL_REGISTRY[MyNormal, ED.Normal]
        ED.kl._KL_MEMOIZE.clear()
    with pytest.raises(TypeError):
        ED.register_kl(int, ED.Normal)


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Beta", "Exponential", "Poisson", "Dirichlet", "Bernoulli"])
def test_bregman_kl_and_entropy_of_the_exponential_family(name):
    """The generic ExponentialFamily KL (Bregman divergence) and entropy equal the closed forms."""
    p = FAMILIES[name][0](ember, T(ember))
    q = FAMILIES[name][1](ember, T(ember))
    np.testing.assert_allclose(ED.kl._kl_expfamily_expfamily(p, q).detach().numpy(),
                               ED.kl_divergence(p, q).numpy(), rtol=1e-9, atol=1e-12)
    if name in ("Beta", "Poisson", "Dirichlet"):   # no _mean_carrier_measure, in PyTorch neither
        with pytest.raises(NotImplementedError):
            ED.ExponentialFamily.entropy(p)
        return
    np.testing.assert_allclose(ED.ExponentialFamily.entropy(p).detach().numpy(), p.entropy().numpy(),
                               rtol=1e-9, atol=1e-12)


def test_cross_family_exponential_kl_raises_like_torch():
    with pytest.raises(NotImplementedError) as te:
        TD.kl_divergence(TD.Poisson(torch.tensor(1.0)), TD.Exponential(torch.tensor(1.0)))
    with pytest.raises(NotImplementedError) as ee:
        ED.kl_divergence(ED.Poisson(ember.tensor(1.0)), ED.Exponential(ember.tensor(1.0)))
    assert str(ee.value) == " ".join(str(te.value).split())   # torch's message carries a line continuation's spaces
