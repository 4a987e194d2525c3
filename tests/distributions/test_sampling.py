"""Samples: shapes and dtypes against torch's, sample moments within stated statistical bounds,
repeatability under ember.manual_seed, and rsample gradients reaching the parameters.

Moment tolerance: with N draws, the sample mean's error is N(0, var/N) asymptotically; each check allows
6 standard errors (two-sided false-failure probability 2e-9 per check; about 1e-7 over the whole file),
using the exact variance of the estimator (the 4th central moment for the sample variance)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.distributions as ED

torch = pytest.importorskip("torch")

Z = 6.0   # standard errors allowed
N = 200_000


def t64(v):
    return ember.tensor(v, dtype=ember.float64)


# (name, build(mod, tensor_fn), heavy tails: skip the moment check)
SHAPE_CASES = [
    ("Normal", lambda m, t: m.distributions.Normal(t([0.0, 1.0]), t([1.0, 2.0]))),
    ("Bernoulli", lambda m, t: m.distributions.Bernoulli(t([0.3, 0.8]))),
    ("Categorical", lambda m, t: m.distributions.Categorical(t([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]]))),
    ("Uniform", lambda m, t: m.distributions.Uniform(t([0.0, -1.0]), t([1.0, 3.0]))),
    ("Exponential", lambda m, t: m.distributions.Exponential(t([0.5, 2.0]))),
    ("Laplace", lambda m, t: m.distributions.Laplace(t([0.0, 1.0]), t([1.0, 2.0]))),
    ("Cauchy", lambda m, t: m.distributions.Cauchy(t([0.0, 1.0]), t([1.0, 2.0]))),
    ("LogNormal", lambda m, t: m.distributions.LogNormal(t([0.0, 0.5]), t([0.5, 0.25]))),
    ("Gumbel", lambda m, t: m.distributions.Gumbel(t([0.0, 1.0]), t([1.0, 2.0]))),
    ("HalfNormal", lambda m, t: m.distributions.HalfNormal(t([1.0, 2.0]))),
    ("Independent", lambda m, t: m.distributions.Independent(m.distributions.Normal(t([[0.0, 1.0]]), t([[1.0, 2.0]])), 1)),
    ("OneHotCategorical", lambda m, t: m.distributions.OneHotCategorical(t([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]]))),
    ("MultivariateNormal", lambda m, t: m.distributions.MultivariateNormal(
        t([0.0, 1.0, 0.5]), t([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]))),
    ("LowRankMultivariateNormal", lambda m, t: m.distributions.LowRankMultivariateNormal(
        t([0.0, 1.0, 0.5]), t([[1.0], [0.5], [-0.2]]), t([0.5, 1.0, 0.3]))),
    ("Beta", lambda m, t: m.distributions.Beta(t([0.5, 2.0]), t([1.5, 3.0]))),
    ("Gamma", lambda m, t: m.distributions.Gamma(t([0.3, 2.0, 7.5]), t([1.0, 3.0, 0.5]))),
    ("Dirichlet", lambda m, t: m.distributions.Dirichlet(t([[0.5, 1.0, 2.0], [3.0, 1.0, 1.0]]))),
    ("Chi2", lambda m, t: m.distributions.Chi2(t([1.0, 5.0]))),
    ("StudentT", lambda m, t: m.distributions.StudentT(t([5.0, 9.0]), t([0.0, 1.0]), t([1.0, 0.5]))),
    ("Poisson", lambda m, t: m.distributions.Poisson(t([0.5, 4.0]))),
    ("Binomial", lambda m, t: m.distributions.Binomial(t([5.0, 10.0]), t([0.3, 0.8]))),
    ("Multinomial", lambda m, t: m.distributions.Multinomial(7, t([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]]))),
    ("Geometric", lambda m, t: m.distributions.Geometric(t([0.3, 0.8]))),
    ("MixtureSameFamily", lambda m, t: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(t([0.3, 0.7])), m.distributions.Normal(t([-1.0, 2.0]), t([0.5, 1.5])))),
    ("RelaxedBernoulli", lambda m, t: m.distributions.RelaxedBernoulli(t(0.5), t([0.3, 0.8]))),
    ("RelaxedOneHotCategorical", lambda m, t: m.distributions.RelaxedOneHotCategorical(t(0.7), t([0.2, 0.3, 0.5]))),
]
HEAVY = {"Cauchy"}                          # no finite mean / variance
# torch gives no mean / variance (Relaxed*) or nan ones (Categorical: checked by frequencies below)
NO_CLOSED_VARIANCE = {"RelaxedBernoulli", "RelaxedOneHotCategorical", "Categorical"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,build", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_sample_shape_and_dtype_match_torch(name, build, dtype):
    e = build(ember, lambda v: ember.tensor(v, dtype=getattr(ember, dtype)))
    t = build(torch, lambda v: torch.tensor(v, dtype=getattr(torch, dtype)))
    for shape in [(), (5,), (2, 3)]:
        es, ts = e.sample(shape), t.sample(shape)
        assert tuple(es.shape) == tuple(ts.shape), (name, shape)
        assert str(es.dtype).split(".")[-1] == str(ts.dtype).split(".")[-1], (name, es.dtype, ts.dtype)
        assert not es.requires_grad
        if t.has_rsample:
            er = e.rsample(shape)
            assert tuple(er.shape) == tuple(ts.shape) and er.dtype == es.dtype
        assert bool(e.support.check(es).all()), name
        el, tl = e.log_prob(es), t.log_prob(ts)
        assert tuple(el.shape) == tuple(tl.shape)
        assert str(el.dtype).split(".")[-1] == str(tl.dtype).split(".")[-1], (name, el.dtype, tl.dtype)


@pytest.mark.parametrize("name,build", [c for c in SHAPE_CASES if c[0] not in HEAVY | NO_CLOSED_VARIANCE],
                         ids=[c[0] for c in SHAPE_CASES if c[0] not in HEAVY | NO_CLOSED_VARIANCE])
def test_sample_moments(name, build):
    ember.manual_seed(1234)
    d = build(ember, t64)
    x = d.sample((N,)).numpy()
    mean, var = d.mean.numpy(), d.variance.numpy()
    # the 4th central moment, estimated from the draws, gives the standard error of the sample variance
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    se_mean = np.sqrt(var / N)
    se_var = np.sqrt(np.maximum(m4 - var ** 2, 0) / N)
    assert np.all(np.abs(x.mean(0) - mean) <= Z * se_mean + 1e-12), (name, x.mean(0), mean)
    assert np.all(np.abs(x.var(0) - var) <= Z * se_var + 1e-12), (name, x.var(0), var)


def test_categorical_frequencies():
    ember.manual_seed(3)
    probs = np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]])
    x = ED.Categorical(t64(probs.tolist())).sample((N,)).numpy()
    assert x.dtype == np.int64
    for b in range(2):
        freq = np.bincount(x[:, b], minlength=3) / N
        assert np.all(np.abs(freq - probs[b]) <= Z * np.sqrt(probs[b] * (1 - probs[b]) / N))


def test_cauchy_quartiles():
    ember.manual_seed(7)
    x = ED.Cauchy(t64(1.0), t64(2.0)).sample((N,)).numpy()
    # the empirical quartile of N draws has sd sqrt(p(1-p)/N)/f(q); allow 6 of them
    for p, q in [(0.25, -1.0), (0.5, 1.0), (0.75, 3.0)]:
        f = 1 / (math.pi * 2.0 * (1 + ((q - 1.0) / 2.0) ** 2))
        assert abs(np.quantile(x, p) - q) <= Z * math.sqrt(p * (1 - p) / N) / f


def test_manual_seed_repeats_every_sampler():
    for name, build in SHAPE_CASES:
        ember.manual_seed(99)
        a = build(ember, t64).sample((4,))
        ember.manual_seed(99)
        b = build(ember, t64).sample((4,))
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


def test_python_number_parameters():
    for d, td in [(ED.Gamma(2.0, 1.5), torch.distributions.Gamma(2.0, 1.5)),
                  (ED.Beta(2.0, 3.0), torch.distributions.Beta(2.0, 3.0)),
                  (ED.Normal(0.0, 1.0), torch.distributions.Normal(0.0, 1.0)),
                  (ED.Bernoulli(0.3), torch.distributions.Bernoulli(0.3)),
                  (ED.Uniform(0.0, 2.0), torch.distributions.Uniform(0.0, 2.0))]:
        x = d.sample((3,))
        assert tuple(d.batch_shape) == tuple(td.batch_shape) == ()
        assert tuple(x.shape) == (3,) and x.dtype == ember.float32
        np.testing.assert_allclose(d.log_prob(x).numpy(), td.log_prob(torch.tensor(x.numpy())).numpy(), rtol=1e-5)


def test_sample_n_warns_and_samples():
    with pytest.warns(UserWarning, match="sample_n will be deprecated"):
        s = ED.Normal(0.0, 1.0).sample_n(3)
    assert tuple(s.shape) == (3,)
