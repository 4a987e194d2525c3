"""ember.distributions against torch.distributions, side by side in float64: log_prob, entropy, cdf, icdf,
mean, mode, variance, stddev, shapes and supports for the same parameters."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def T(mod):
    return lambda v: mod.tensor(v, dtype=mod.float64)


# name -> (build(mod, t) -> distribution, values(t) -> points for log_prob / cdf)
CASES = {
    "Normal": (lambda m, t: m.distributions.Normal(t([0.3, -1.2]), t([0.5, 2.0])),
               lambda t: t([[0.1, 0.7], [-2.0, 3.0]])),
    "Normal_scalar": (lambda m, t: m.distributions.Normal(0.5, 2.0), lambda t: t([0.1, -3.0])),
    "Bernoulli_probs": (lambda m, t: m.distributions.Bernoulli(probs=t([0.2, 0.9, 0.5])),
                        lambda t: t([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])),
    "Bernoulli_logits": (lambda m, t: m.distributions.Bernoulli(logits=t([-3.0, 0.5, 20.0])),
                         lambda t: t([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])),
    "Categorical_probs": (lambda m, t: m.distributions.Categorical(probs=t([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])),
                          lambda t: t([[0.0, 2.0], [1.0, 1.0]])),
    "Categorical_logits": (lambda m, t: m.distributions.Categorical(logits=t([1.0, -2.0, 0.5, 3.0])),
                           lambda t: t([0.0, 3.0, 2.0])),
    "Uniform": (lambda m, t: m.distributions.Uniform(t([0.0, -2.0]), t([1.0, 5.0])),
                lambda t: t([[0.25, 4.0], [0.9, -1.5]])),
    "Exponential": (lambda m, t: m.distributions.Exponential(t([0.5, 3.0])), lambda t: t([[0.1, 2.0], [4.0, 0.0]])),
    "Laplace": (lambda m, t: m.distributions.Laplace(t([0.0, 1.0]), t([1.0, 0.3])), lambda t: t([[-1.0, 1.2], [2.0, 0.9]])),
    "Cauchy": (lambda m, t: m.distributions.Cauchy(t([0.0, 1.0]), t([1.0, 0.3])), lambda t: t([[-1.0, 1.2], [2.0, 0.9]])),
    "LogNormal": (lambda m, t: m.distributions.LogNormal(t([0.0, 0.5]), t([1.0, 0.25])),
                  lambda t: t([[0.5, 1.7], [3.0, 0.9]])),
    "Gumbel": (lambda m, t: m.distributions.Gumbel(t([0.0, 1.0]), t([1.0, 2.5])), lambda t: t([[-1.0, 1.2], [2.0, 7.0]])),
    "HalfNormal": (lambda m, t: m.distributions.HalfNormal(t([1.0, 2.5])), lambda t: t([[0.3, 1.2], [2.0, 7.0]])),
    "Independent": (lambda m, t: m.distributions.Independent(m.distributions.Normal(t([[0.0, 1.0, 2.0]]),
                                                                                    t([[1.0, 2.0, 0.5]])), 1),
                    lambda t: t([[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]])),
    "TransformedDistribution": (
        lambda m, t: m.distributions.TransformedDistribution(
            m.distributions.Normal(t([0.0, 1.0]), t([1.0, 0.5])),
            [m.distributions.transforms.AffineTransform(t(1.0), t(2.0)), m.distributions.transforms.SigmoidTransform()]),
        lambda t: t([[0.3, 0.8], [0.95, 0.05]])),
    "OneHotCategorical": (lambda m, t: m.distributions.OneHotCategorical(probs=t([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])),
                          lambda t: t([[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]])),
    "MultivariateNormal_cov": (
        lambda m, t: m.distributions.MultivariateNormal(t([1.0, -1.0, 0.5]), covariance_matrix=t(
            [[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])),
        lambda t: t([[0.0, 0.0, 0.0], [1.0, 2.0, -1.0]])),
    "MultivariateNormal_prec": (
        lambda m, t: m.distributions.MultivariateNormal(t([[1.0, -1.0], [0.0, 2.0]]), precision_matrix=t(
            [[2.0, 0.3], [0.3, 1.0]])),
        lambda t: t([[0.0, 0.0], [1.0, 2.0]])),
    "MultivariateNormal_tril": (
        lambda m, t: m.distributions.MultivariateNormal(t([1.0, -1.0]), scale_tril=t([[1.5, 0.0], [-0.4, 0.7]])),
        lambda t: t([[0.0, 0.0], [1.0, 2.0], [3.0, -3.0]])),
    "LowRankMultivariateNormal": (
        lambda m, t: m.distributions.LowRankMultivariateNormal(t([1.0, -1.0, 0.0]), t([[1.0], [0.5], [-0.3]]),
                                                               t([0.5, 1.0, 2.0])),
        lambda t: t([[0.0, 0.0, 0.0], [1.0, 2.0, -1.0]])),
    "Beta": (lambda m, t: m.distributions.Beta(t([0.5, 2.0, 3.0]), t([0.5, 5.0, 1.0])),
             lambda t: t([[0.1, 0.5, 0.9], [0.3, 0.2, 0.99]])),
    "Gamma": (lambda m, t: m.distributions.Gamma(t([0.5, 2.0, 9.0]), t([1.0, 0.5, 3.0])),
              lambda t: t([[0.1, 0.5, 0.9], [3.0, 2.0, 4.0]])),
    "Dirichlet": (lambda m, t: m.distributions.Dirichlet(t([[0.5, 1.0, 2.0], [3.0, 3.0, 0.7]])),
                  lambda t: t([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])),
    "Chi2": (lambda m, t: m.distributions.Chi2(t([1.0, 4.5])), lambda t: t([[0.3, 2.0], [5.0, 0.1]])),
    "StudentT": (lambda m, t: m.distributions.StudentT(t([0.8, 1.5, 5.0]), t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5])),
                 lambda t: t([[0.3, 2.0, -1.0], [5.0, 0.1, -4.0]])),
    "Poisson": (lambda m, t: m.distributions.Poisson(t([0.5, 4.0])), lambda t: t([[0.0, 3.0], [2.0, 9.0]])),
    "Binomial": (lambda m, t: m.distributions.Binomial(t([5.0, 5.0]), probs=t([0.3, 0.9])),
                 lambda t: t([[0.0, 3.0], [5.0, 4.0]])),
    "Binomial_logits": (lambda m, t: m.distributions.Binomial(10, logits=t([-2.0, 0.5, 30.0])),
                        lambda t: t([[0.0, 3.0, 10.0], [10.0, 4.0, 9.0]])),
    "Multinomial": (lambda m, t: m.distributions.Multinomial(6, probs=t([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])),
                    lambda t: t([[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]])),
    "Geometric": (lambda m, t: m.distributions.Geometric(t([0.2, 0.9])), lambda t: t([[0.0, 3.0], [7.0, 1.0]])),
    "MixtureSameFamily": (
        lambda m, t: m.distributions.MixtureSameFamily(m.distributions.Categorical(probs=t([0.3, 0.7])),
                                                       m.distributions.Normal(t([-1.0, 2.0]), t([0.5, 1.5]))),
        lambda t: t([-1.0, 0.0, 2.5])),
    "RelaxedBernoulli": (lambda m, t: m.distributions.RelaxedBernoulli(t(0.5), probs=t([0.2, 0.7])),
                         lambda t: t([[0.1, 0.8], [0.6, 0.3]])),
    "RelaxedOneHotCategorical": (
        lambda m, t: m.distributions.RelaxedOneHotCategorical(t(0.7), probs=t([0.2, 0.3, 0.5])),
        lambda t: t([[0.1, 0.3, 0.6], [0.8, 0.1, 0.1]])),
}

METHODS = ["log_prob", "cdf", "icdf", "entropy"]
PROPERTIES = ["mean", "mode", "variance", "stddev"]


def _both(name):
    build, values = CASES[name]
    return build(ember, T(ember)), build(torch, T(torch)), values(T(ember)), values(T(torch))


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_and_support(name):
    e, t, _, _ = _both(name)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample
    assert e.has_enumerate_support == t.has_enumerate_support
    try:
        ts = repr(t.support)
    except NotImplementedError:
        ts = None
    if ts is not None:
        assert repr(e.support).replace("ember.", "") == ts.replace("torch.", ""), name


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("what", METHODS + PROPERTIES)
def test_values_match_torch(name, what, torch_match):
    e, t, ev, tv = _both(name)
    torch_match.method(e, t, ev, tv, what)


@pytest.mark.parametrize("name", ["Normal", "Bernoulli_probs", "Categorical_probs", "Gamma", "Dirichlet",
                                  "MultivariateNormal_cov", "Independent", "Beta", "OneHotCategorical"])
def test_expand_matches_torch(name, torch_match):
    e, t, ev, tv = _both(name)
    shape = (4,) + tuple(t.batch_shape)
    ee, te = e.expand(shape), t.expand(shape)
    assert type(ee) is type(e)
    assert tuple(ee.batch_shape) == tuple(te.batch_shape) and tuple(ee.event_shape) == tuple(te.event_shape)
    torch_match.close(ee.log_prob(ev[:1]), te.log_prob(tv[:1]), name)
    assert tuple(ee.sample().shape) == tuple(te.sample().shape)


def test_enumerate_support_matches_torch():
    for name in ("Bernoulli_probs", "Categorical_probs", "OneHotCategorical", "Binomial"):
        e, t, _, _ = _both(name)
        for expand in (True, False):
            a, b = e.enumerate_support(expand), t.enumerate_support(expand)
            assert tuple(a.shape) == tuple(b.shape), name
            np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_of_log_prob_and_entropy_match_torch(name):
    """d/dparams (and d/dvalue) of sum(log_prob(value)) + sum(entropy) through autograd, against torch's."""
    build, values = CASES[name]
    leaves = {"ember": [], "torch": []}

    def leaf(mod, key):
        def make(v):
            x = mod.tensor(v, dtype=mod.float64, requires_grad=True)
            leaves[key].append(x)
            return x
        return make

    out = {}
    for mod, key in ((ember, "ember"), (torch, "torch")):
        d = build(mod, leaf(mod, key))
        v = values(leaf(mod, key))
        total = d.log_prob(v).sum()
        try:
            total = total + d.entropy().sum()
        except NotImplementedError:
            pass
        total.backward()
        out[key] = total.item()
    assert out["ember"] == pytest.approx(out["torch"], rel=1e-10, abs=1e-12)
    for a, b in zip(leaves["ember"], leaves["torch"]):
        assert (a.grad is None) == (b.grad is None), name
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)
