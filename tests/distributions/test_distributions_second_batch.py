"""The second batch of distributions (HalfCauchy, Pareto, Weibull, InverseGamma, NegativeBinomial,
FisherSnedecor, Kumaraswamy, ContinuousBernoulli, GeneralizedPareto) against torch.distributions, float64,
same parameters: log_prob, cdf, icdf, entropy, mean, mode, variance, their gradients, expand, KL divergences
and validate_args errors; samples against torch's moments and cdf, rsample gradients against torch's
analytic d mean / d parameter.

Statistical tolerances (all with Z = 6 standard errors, false-failure probability < 1e-6 per check):
- sample mean: the standard error is sqrt(Var / N) with torch's exact variance;
- sample variance: sqrt((m4 - Var^2) / N), m4 the 4th central moment estimated from the same draws
  (cases are chosen so that m4 is finite);
- empirical cdf at a point: sqrt(F (1 - F) / N), binomial;
- Monte Carlo gradient of E[x]: the draws are split into K = 20 batches, the standard error is the batches'
  standard deviation / sqrt(K) (Student t with 19 degrees of freedom: P(|t| > 6) < 1e-5).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.distributions as ED

torch = pytest.importorskip("torch")
import torch.distributions as TD  # noqa: E402

Z = 6.0
N = 200_000


@pytest.fixture(autouse=True)
def _float64_default():
    """Both libraries default to float64 here: torch's GeneralizedPareto compares with torch.tensor(0.0), which
    fails for float64 parameters under a float32 default ("Double did not match Float")."""
    saved = torch.get_default_dtype(), ember.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    ember.set_default_dtype(ember.float64)
    yield
    torch.set_default_dtype(saved[0])
    ember.set_default_dtype(saved[1])


def T(mod):
    return lambda v: mod.tensor(v, dtype=mod.float64)


# name -> (build(mod, t) -> distribution, values(t) -> points for log_prob / cdf)
CASES = {
    "HalfCauchy": (lambda m, t: m.distributions.HalfCauchy(t([1.0, 2.5])), lambda t: t([[0.3, 1.2], [2.0, 7.0]])),
    "HalfCauchy_scalar": (lambda m, t: m.distributions.HalfCauchy(0.7), lambda t: t([0.0, 3.0])),
    "Pareto": (lambda m, t: m.distributions.Pareto(t([1.0, 0.5]), t([3.0, 0.8])),
               lambda t: t([[1.5, 0.6], [4.0, 9.0]])),
    "Weibull": (lambda m, t: m.distributions.Weibull(t([1.0, 2.0, 0.5]), t([0.7, 1.0, 3.0])),
                lambda t: t([[0.3, 1.2, 0.4], [2.0, 0.1, 0.9]])),
    "InverseGamma": (lambda m, t: m.distributions.InverseGamma(t([0.8, 1.5, 6.0]), t([1.0, 2.0, 0.5])),
                     lambda t: t([[0.3, 1.2, 0.4], [2.0, 0.1, 0.09]])),
    "NegativeBinomial_probs": (lambda m, t: m.distributions.NegativeBinomial(t([3.0, 0.5, 10.0]),
                                                                             probs=t([0.2, 0.6, 0.0])),
                               lambda t: t([[0.0, 2.0, 0.0], [7.0, 1.0, 4.0]])),
    "NegativeBinomial_logits": (lambda m, t: m.distributions.NegativeBinomial(4.5, logits=t([-1.0, 0.3, 2.0])),
                                lambda t: t([[0.0, 2.0, 11.0], [7.0, 1.0, 4.0]])),
    "FisherSnedecor": (lambda m, t: m.distributions.FisherSnedecor(t([1.0, 3.0, 10.0]), t([2.0, 5.0, 12.0])),
                       lambda t: t([[0.3, 1.2, 0.4], [2.0, 0.1, 5.0]])),
    "Kumaraswamy": (lambda m, t: m.distributions.Kumaraswamy(t([0.5, 2.0, 3.0]), t([0.7, 5.0, 1.5])),
                    lambda t: t([[0.3, 0.2, 0.4], [0.9, 0.1, 0.99]])),
    "ContinuousBernoulli_probs": (lambda m, t: m.distributions.ContinuousBernoulli(t([0.1, 0.4995, 0.5, 0.8, 0.999])),
                                  lambda t: t([[0.3, 0.2, 0.4, 0.0, 1.0], [0.9, 0.1, 0.99, 0.5, 0.7]])),
    "ContinuousBernoulli_logits": (lambda m, t: m.distributions.ContinuousBernoulli(logits=t([-3.0, 0.001, 2.0])),
                                   lambda t: t([[0.3, 0.2, 0.4], [0.9, 0.1, 0.99]])),
    "GeneralizedPareto": (lambda m, t: m.distributions.GeneralizedPareto(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5]),
                                                                         t([0.0, 0.3, -0.4])),
                          lambda t: t([[0.3, 1.2, -0.5], [2.0, 1.1, 0.2]])),
    "LogisticNormal": (lambda m, t: m.distributions.LogisticNormal(t([[0.0, 1.0, -0.5], [0.3, 0.2, 0.1]]),
                                                                   t([[1.0, 0.5, 2.0], [0.3, 1.0, 1.0]])),
                       lambda t: t([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])),
    "LogisticNormal_scalar": (lambda m, t: m.distributions.LogisticNormal(0.5, 2.0), lambda t: t([0.3, 0.7])),
    "LKJCholesky": (lambda m, t: m.distributions.LKJCholesky(3, t([0.5, 1.0, 4.0])),
                    lambda t: t([[[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]],
                                 [[1.0, 0.0, 0.0], [-0.28, 0.96, 0.0], [0.48, 0.36, 0.8]]])[:, None]),
    "Wishart_cov": (lambda m, t: m.distributions.Wishart(t([3.0, 5.5]), t([[2.0, 0.3], [0.3, 1.0]])),
                    lambda t: t([[[1.0, 0.2], [0.2, 0.5]], [[3.0, -1.0], [-1.0, 2.0]]])[:, None]),
    "Wishart_prec": (lambda m, t: m.distributions.Wishart(t(4.0), precision_matrix=t([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2],
                                                                                      [0.1, -0.2, 0.5]])),
                     lambda t: t([[1.0, 0.2, 0.0], [0.2, 0.5, 0.1], [0.0, 0.1, 2.0]])),
    "Wishart_tril": (lambda m, t: m.distributions.Wishart(t([[4.0], [2.5]]),
                                                          scale_tril=t([[1.5, 0.0], [-0.4, 0.7]]).tril()),
                     lambda t: t([[1.0, 0.2], [0.2, 0.5]])),
}
METHODS = ["log_prob", "cdf", "icdf", "entropy"]
PROPERTIES = ["mean", "mode", "variance", "stddev"]


def _both(name):
    build, values = CASES[name]
    return build(ember, T(ember)), build(torch, T(torch)), values(T(ember)), values(T(torch))


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_and_support(name):
    e, t, _, _ = _both(name)
    assert tuple(e.batch_shape) == tuple(t.batch_shape) and tuple(e.event_shape) == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample and e.has_enumerate_support == t.has_enumerate_support
    assert type(e.support).__name__ == type(t.support).__name__
    if type(t.support).__name__ not in ("_GreaterThanEq", "_Interval"):   # bounds that are tensors print differently
        assert repr(e.support).replace("ember.", "") == repr(t.support).replace("torch.", "")
    assert sorted(e.arg_constraints) == sorted(t.arg_constraints)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("what", METHODS + PROPERTIES)
def test_values_match_torch(name, what, torch_match):
    e, t, ev, tv = _both(name)
    torch_match.method(e, t, ev, tv, what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_of_log_prob_entropy_and_moments_match_torch(name):
    """d/dparams of sum(log_prob) + sum(entropy) + sum(finite means), against torch's autograd."""
    build, values = CASES[name]
    leaves = {"ember": [], "torch": []}
    out = {}
    for mod, key in ((ember, "ember"), (torch, "torch")):
        def leaf(v, mod=mod, key=key):
            x = mod.tensor(v, dtype=mod.float64, requires_grad=True)
            leaves[key].append(x)
            return x
        d = build(mod, leaf)
        total = d.log_prob(values(T(mod))).sum()
        try:
            total = total + d.entropy().sum()
        except NotImplementedError:   # FisherSnedecor, NegativeBinomial: none in torch either (checked above)
            pass
        try:
            mean = d.mean
            total = total + mod.where(mean.isfinite(), mean, 0.0).sum()
        except NotImplementedError:   # LogisticNormal, LKJCholesky: none in torch either (checked above)
            pass
        if total.requires_grad:
            total.backward()
        out[key] = total.item()
    assert out["ember"] == pytest.approx(out["torch"], rel=1e-10, abs=1e-12)
    for a, b in zip(leaves["ember"], leaves["torch"]):
        assert (a.grad is None) == (b.grad is None), name
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_expand_matches_torch(name, torch_match):
    e, t, ev, tv = _both(name)
    shape = (4,) + tuple(t.batch_shape)
    ee, te = e.expand(shape), t.expand(shape)
    assert type(ee) is type(e)
    assert tuple(ee.batch_shape) == tuple(te.batch_shape)
    one = ev.dim() > len(t.batch_shape) + len(t.event_shape)   # a stack of values: take the first
    torch_match.close(ee.log_prob(ev[:1] if one else ev), te.log_prob(tv[:1] if one else tv), name)
    try:
        te.mean
    except NotImplementedError:
        pass
    else:
        torch_match.close(ee.mean, te.mean, name)
    assert tuple(ee.sample().shape) == tuple(te.sample().shape)
    assert tuple(ee.sample((2,)).shape) == tuple(te.sample((2,)).shape)


# ---- samples ------------------------------------------------------------------------------------------------
# parameters with finite 4th moments, so that the variance check has a finite standard error
SAMPLING = {
    "HalfCauchy": lambda m, t: m.distributions.HalfCauchy(t([1.0, 2.5])),
    "Pareto": lambda m, t: m.distributions.Pareto(t([1.0, 0.5]), t([9.0, 12.0])),
    "Weibull": lambda m, t: m.distributions.Weibull(t([1.0, 2.0]), t([0.7, 3.0])),
    "InverseGamma": lambda m, t: m.distributions.InverseGamma(t([9.0, 12.0]), t([1.0, 2.0])),
    "NegativeBinomial": lambda m, t: m.distributions.NegativeBinomial(t([3.0, 0.5]), probs=t([0.2, 0.6])),
    "FisherSnedecor": lambda m, t: m.distributions.FisherSnedecor(t([3.0, 10.0]), t([20.0, 30.0])),
    "Kumaraswamy": lambda m, t: m.distributions.Kumaraswamy(t([0.5, 3.0]), t([0.7, 1.5])),
    "ContinuousBernoulli": lambda m, t: m.distributions.ContinuousBernoulli(t([0.1, 0.5, 0.8])),
    "GeneralizedPareto": lambda m, t: m.distributions.GeneralizedPareto(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5]),
                                                                        t([0.0, 0.1, -0.4])),
    "Wishart": lambda m, t: m.distributions.Wishart(t([6.0, 9.5]), t([[2.0, 0.3], [0.3, 1.0]])),
}


@pytest.mark.parametrize("name", sorted(SAMPLING))
def test_sample_moments_and_cdf(name):
    ember.manual_seed(0)
    e, t = SAMPLING[name](ember, T(ember)), SAMPLING[name](torch, T(torch))
    x = e.sample((N,))
    assert tuple(x.shape) == (N,) + tuple(t.batch_shape) + tuple(t.event_shape) and x.dtype == ember.float64
    x = x.numpy()
    assert bool(t.support.check(torch.from_numpy(x)).all()), name
    mean, var = t.mean.numpy(), t.variance.numpy()
    finite = np.isfinite(var)
    se_mean = np.sqrt(var / N)
    assert np.all(np.abs(x.mean(0) - mean)[finite] <= Z * se_mean[finite]), (name, x.mean(0), mean)
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - var ** 2, 0) / N)
    assert np.all(np.abs(x.var(0) - var)[finite] <= Z * se_var[finite]), (name, x.var(0), var)
    if name in ("NegativeBinomial", "FisherSnedecor", "Wishart"):
        return   # torch has no cdf for them; the moments above are the check
    for p in (0.1, 0.5, 0.9):
        # at the sample p-quantile q, F(q) - p is asymptotically N(0, p (1 - p) / N)
        q = np.quantile(x, p, axis=0)
        F = t.cdf(torch.from_numpy(q)).numpy()
        assert np.all(np.abs(F - p) <= Z * math.sqrt(p * (1 - p) / N)), (name, p, F)


def test_negative_binomial_frequencies():
    """P(X = k) of draws against torch's exp(log_prob), binomial standard errors."""
    ember.manual_seed(1)
    x = ED.NegativeBinomial(ember.tensor(2.5, dtype=ember.float64), probs=ember.tensor(0.4, dtype=ember.float64)
                            ).sample((N,)).numpy()
    assert np.all(x == np.round(x)) and x.min() >= 0
    k = torch.arange(8, dtype=torch.float64)
    p = TD.NegativeBinomial(torch.tensor(2.5, dtype=torch.float64), probs=torch.tensor(0.4, dtype=torch.float64)
                            ).log_prob(k).exp().numpy()
    freq = np.array([(x == i).mean() for i in range(8)])
    assert np.all(np.abs(freq - p) <= Z * np.sqrt(p * (1 - p) / N)), (freq, p)


# d E[x] / d param: Monte Carlo through rsample against torch's autograd of the closed-form mean
RSAMPLE = {
    "HalfCauchy": None,   # infinite mean: gradients are checked on a quantile instead (below)
    "Pareto": (lambda m, a, b: m.distributions.Pareto(a, b), [1.5, 6.0]),
    "Weibull": (lambda m, a, b: m.distributions.Weibull(a, b), [1.5, 2.0]),
    "InverseGamma": (lambda m, a, b: m.distributions.InverseGamma(a, b), [7.0, 2.0]),
    "FisherSnedecor": (lambda m, a, b: m.distributions.FisherSnedecor(a, b), [4.0, 12.0]),
    "Kumaraswamy": (lambda m, a, b: m.distributions.Kumaraswamy(a, b), [2.0, 3.0]),
    "ContinuousBernoulli": (lambda m, a: m.distributions.ContinuousBernoulli(a), [0.3]),
    "GeneralizedPareto": (lambda m, a, b, c: m.distributions.GeneralizedPareto(a, b, c), [0.5, 2.0, 0.1]),
    "Wishart": (lambda m, df, c: m.distributions.Wishart(df, c * m.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=m.float64)),
                [4.5, 0.7]),
}


@pytest.mark.parametrize("name", sorted(n for n in RSAMPLE if RSAMPLE[n]))
def test_rsample_gradient_of_the_mean(name):
    build, params = RSAMPLE[name]
    tp = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in params]
    expected = [torch.zeros(()) if g is None else g
                for g in torch.autograd.grad(build(torch, *tp).mean.sum(), tp, allow_unused=True)]
    ember.manual_seed(2)
    K = 20
    batches = []
    for _ in range(K):
        ep = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in params]
        build(ember, *ep).rsample((N // K,)).mean(0).sum().backward()
        batches.append([p.grad.item() for p in ep])
    batches = np.array(batches)
    got, se = batches.mean(0), batches.std(0, ddof=1) / math.sqrt(K)
    for i, want in enumerate(expected):
        assert se[i] < 0.05 * max(1.0, abs(want.item())), (name, i, se[i])   # the check has power
        assert abs(got[i] - want.item()) <= Z * se[i] + 1e-9, (name, i, got[i], want.item(), se[i])


def test_half_cauchy_rsample_gradient_is_the_scale_derivative():
    """x = scale |tan(pi (u - 1/2))|: on the same noise d x / d scale = x / scale exactly."""
    scale = ember.tensor([0.5, 2.0], dtype=ember.float64, requires_grad=True)
    x = ED.HalfCauchy(scale).rsample((5,))
    x.sum().backward()
    np.testing.assert_allclose(scale.grad.numpy(), (x.detach() / scale.detach()).sum(0).numpy(), rtol=1e-12)


def test_negative_binomial_has_no_rsample_like_torch():
    assert not ED.NegativeBinomial(3.0, probs=ember.tensor(0.5)).has_rsample
    with pytest.raises(NotImplementedError):
        ED.NegativeBinomial(3.0, probs=ember.tensor(0.5)).rsample()


# ---- KL ------------------------------------------------------------------------------------------------------
FAMILIES = {
    "Pareto": [lambda m, t: m.distributions.Pareto(t([1.0, 0.5]), t([3.0, 0.8])),
               lambda m, t: m.distributions.Pareto(t([0.7, 1.0]), t([2.5, 1.5]))],
    "ContinuousBernoulli": [lambda m, t: m.distributions.ContinuousBernoulli(t([0.2, 0.5])),
                            lambda m, t: m.distributions.ContinuousBernoulli(logits=t([1.5, -0.7]))],
    "Beta": [lambda m, t: m.distributions.Beta(t([0.5, 2.0]), t([1.5, 3.0]))],
    "Exponential": [lambda m, t: m.distributions.Exponential(t([0.5, 2.0]))],
    "Gamma": [lambda m, t: m.distributions.Gamma(t([0.5, 2.0]), t([1.0, 3.0]))],
    "Gumbel": [lambda m, t: m.distributions.Gumbel(t([0.0, 1.0]), t([1.0, 2.0]))],
    "Laplace": [lambda m, t: m.distributions.Laplace(t([0.0, 1.0]), t([1.0, 2.0]))],
    "Normal": [lambda m, t: m.distributions.Normal(t([0.0, 1.0]), t([1.0, 2.0]))],
    "Uniform": [lambda m, t: m.distributions.Uniform(t([1.5, 0.2]), t([3.0, 0.8])),
                lambda m, t: m.distributions.Uniform(t([-0.5, 0.2]), t([1.5, 0.8]))],
}
NEW = {"Pareto", "ContinuousBernoulli"}
PAIRS = sorted({(p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY if {p.__name__, q.__name__} & NEW})


def test_kl_registry_covers_torchs_pairs_for_the_new_families():
    assert set(PAIRS) <= set(FAMILIES) | {(a, b) for a in FAMILIES for b in FAMILIES}
    ours = {(p.__name__, q.__name__) for p, q in ED.kl._KL_REGISTRY}
    assert set(PAIRS) <= ours, sorted(set(PAIRS) - ours)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_kl_matches_torch(pair, torch_match):
    for bp in FAMILIES[pair[0]]:
        for bq in FAMILIES[pair[1]]:
            e = ED.kl_divergence(bp(ember, T(ember)), bq(ember, T(ember)))
            t = TD.kl_divergence(bp(torch, T(torch)), bq(torch, T(torch)))
            torch_match.close(e, t, str(pair))


# ---- validate_args -------------------------------------------------------------------------------------------
BAD = [
    lambda m: m.distributions.HalfCauchy(m.tensor([1.0, -1.0]), validate_args=True),
    lambda m: m.distributions.HalfCauchy(m.tensor([1.0]), validate_args=True).log_prob(m.tensor([-1.0])),
    lambda m: m.distributions.Pareto(m.tensor([1.0]), m.tensor([0.0]), validate_args=True),
    lambda m: m.distributions.Pareto(m.tensor([2.0]), m.tensor([1.0]), validate_args=True).log_prob(m.tensor([1.0])),
    lambda m: m.distributions.Weibull(m.tensor([-1.0]), m.tensor([1.0]), validate_args=True),
    lambda m: m.distributions.Weibull(m.tensor([1.0]), m.tensor([1.0]), validate_args=True).log_prob(m.tensor([0.0])),
    lambda m: m.distributions.InverseGamma(m.tensor([1.0]), m.tensor([-2.0]), validate_args=True),
    lambda m: m.distributions.NegativeBinomial(m.tensor([-1.0]), probs=m.tensor([0.5]), validate_args=True),
    lambda m: m.distributions.NegativeBinomial(m.tensor([2.0]), probs=m.tensor([1.0]), validate_args=True),
    lambda m: m.distributions.NegativeBinomial(m.tensor([2.0]), probs=m.tensor([0.5]), logits=m.tensor([0.0])),
    lambda m: m.distributions.NegativeBinomial(m.tensor([2.0]), probs=m.tensor([0.5]),
                                               validate_args=True).log_prob(m.tensor([1.5])),
    lambda m: m.distributions.FisherSnedecor(m.tensor([1.0]), m.tensor([0.0]), validate_args=True),
    lambda m: m.distributions.Kumaraswamy(m.tensor([1.0]), m.tensor([-3.0]), validate_args=True),
    lambda m: m.distributions.Kumaraswamy(m.tensor([1.0]), m.tensor([3.0]),
                                          validate_args=True).log_prob(m.tensor([1.5])),
    lambda m: m.distributions.ContinuousBernoulli(m.tensor([1.5]), validate_args=True),
    lambda m: m.distributions.ContinuousBernoulli(m.tensor([0.5]), logits=m.tensor([0.0])),
    lambda m: m.distributions.ContinuousBernoulli(m.tensor([0.3]), validate_args=True).log_prob(m.tensor([-0.1])),
    lambda m: m.distributions.GeneralizedPareto(m.tensor([0.0]), m.tensor([-1.0]), m.tensor([0.1]), validate_args=True),
    lambda m: m.distributions.GeneralizedPareto(m.tensor([0.0]), m.tensor([1.0]), m.tensor([-0.5]),
                                                validate_args=True).log_prob(m.tensor([3.0])),
    lambda m: m.distributions.HalfCauchy([1.0]),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_validation_errors_match_torch(i, torch_match):
    torch_match.same_error(BAD[i])


BAD_MORE = [
    lambda m: m.distributions.VonMises(m.tensor([0.0]), m.tensor([-1.0]), validate_args=True),
    lambda m: m.distributions.LogisticNormal(m.tensor([0.0]), m.tensor([-1.0]), validate_args=True),
    lambda m: m.distributions.LKJCholesky(1, 1.0),
    lambda m: m.distributions.LKJCholesky(3, m.tensor([-1.0]), validate_args=True),
    lambda m: m.distributions.LKJCholesky(2, m.tensor([1.0]), validate_args=True).log_prob(m.tensor([[1.0, 0.0],
                                                                                                     [0.5, 0.5]])),
    lambda m: m.distributions.Wishart(m.tensor([0.5]), m.eye(2)),
    lambda m: m.distributions.Wishart(m.tensor([3.0]), m.eye(2), scale_tril=m.eye(2)),
    lambda m: m.distributions.Wishart(m.tensor([3.0]), m.tensor([[1.0, 2.0], [2.0, 1.0]]), validate_args=True),
    lambda m: m.distributions.Wishart(m.tensor([3.0]), m.ones(2)),
]


@pytest.mark.parametrize("i", range(len(BAD_MORE)))
def test_more_validation_errors_match_torch(i, torch_match):
    torch_match.same_error(BAD_MORE[i])


# ---- VonMises: torch's log I0 / I1 are polynomial fits (relative error ~2e-7), ours exact ------------------------
def _von_mises(mod):
    return mod.distributions.VonMises(mod.tensor([0.0, 1.0, -2.0, 0.5], dtype=mod.float64),
                                      mod.tensor([0.3, 2.0, 3.75, 40.0], dtype=mod.float64))


def test_von_mises_against_scipy_and_torch(torch_match):
    stats = pytest.importorskip("scipy.stats")
    e, t = _von_mises(ember), _von_mises(torch)
    x = np.array([[0.1, 1.5, -3.0, 0.45], [3.0, -1.0, 6.0, 0.6]])
    loc, kappa = np.array([0.0, 1.0, -2.0, 0.5]), np.array([0.3, 2.0, 3.75, 40.0])
    got = e.log_prob(ember.tensor(x, dtype=ember.float64)).numpy()
    np.testing.assert_allclose(got, stats.vonmises.logpdf(x, kappa, loc=loc), rtol=1e-12)
    np.testing.assert_allclose(got, t.log_prob(torch.tensor(x)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(e.variance.numpy(), 1 - _circ_r(kappa), rtol=1e-12)
    np.testing.assert_allclose(e.variance.numpy(), t.variance.numpy(), rtol=0, atol=1e-6)   # 1 - I1/I0: absolute
    torch_match.close(e.mean, t.mean, "mean")
    torch_match.close(e.mode, t.mode, "mode")
    for what in ("entropy", "rsample"):
        with pytest.raises(NotImplementedError):
            getattr(t, what)()
        with pytest.raises(NotImplementedError):
            getattr(e, what)()
    assert e.has_rsample is False and repr(e.support) == repr(t.support).replace("torch.", "")
    ee = e.expand((3, 4))
    assert tuple(ee.batch_shape) == (3, 4) and tuple(ee.sample((2,)).shape) == (2, 3, 4)


def _circ_r(kappa):
    from scipy.special import i0e, i1e
    return i1e(kappa) / i0e(kappa)


def test_von_mises_log_prob_gradient_matches_torch():
    grads = []
    for mod in (ember, torch):
        loc = mod.tensor([0.0, 1.0], dtype=mod.float64, requires_grad=True)
        kappa = mod.tensor([0.3, 5.0], dtype=mod.float64, requires_grad=True)
        mod.distributions.VonMises(loc, kappa).log_prob(mod.tensor([0.5, -2.0], dtype=mod.float64)).sum().backward()
        grads.append((loc.grad.numpy(), kappa.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5)


def test_von_mises_samples():
    """E[cos(x - loc)] = I1(κ) / I0(κ), E[sin(x - loc)] = 0, samples in [-π, π) (standard errors from the draws)."""
    ember.manual_seed(3)
    e = _von_mises(ember)
    x = e.sample((N,)).numpy()
    assert x.dtype == np.float64 and x.min() >= -math.pi and x.max() < math.pi
    d = x - np.array([0.0, 1.0, -2.0, 0.5])
    for values, want in ((np.cos(d), _circ_r(np.array([0.3, 2.0, 3.75, 40.0]))), (np.sin(d), 0.0)):
        se = values.std(0) / math.sqrt(N)
        assert np.all(np.abs(values.mean(0) - want) <= Z * se), (values.mean(0), want)


# ---- LKJCholesky and LogisticNormal samples ----------------------------------------------------------------------
@pytest.mark.parametrize("eta", [0.5, 1.0, 4.0])
def test_lkj_cholesky_samples(eta):
    """Rows of unit norm (corr_cholesky support); each correlation r of L Lᵀ has (r + 1) / 2 ~ Beta(b, b) with
    b = η - 1 + d / 2, so E[r] = 0 and Var(r) = 1 / (2η + d - 1) (Lewandowski et al. 2009, section 3.2)."""
    d, n = 3, N // 4
    ember.manual_seed(4)
    L = ED.LKJCholesky(d, ember.tensor(eta, dtype=ember.float64)).sample((n,))
    assert tuple(L.shape) == (n, d, d) and L.dtype == ember.float64
    assert bool(TD.constraints.corr_cholesky.check(torch.from_numpy(L.numpy())).all())
    C = (L @ L.transpose(-1, -2)).numpy()
    r = C[:, [1, 2, 2], [0, 0, 1]]
    var = 1 / (2 * eta + d - 1)
    assert np.all(np.abs(r.mean(0)) <= Z * math.sqrt(var / n)), r.mean(0)
    m4 = ((r - r.mean(0)) ** 4).mean(0)
    assert np.all(np.abs(r.var(0) - var) <= Z * np.sqrt((m4 - var ** 2) / n)), (r.var(0), var)


def test_logistic_normal_samples_against_torchs():
    """Two-sample check of the mean against torch's draws (no closed-form mean exists): the difference of the two
    sample means has standard error sqrt(v1 / N + v2 / N)."""
    ember.manual_seed(5)
    torch.manual_seed(5)
    build = CASES["LogisticNormal"][0]
    x = build(ember, T(ember)).sample((N,)).numpy()
    y = build(torch, T(torch)).sample((N,)).numpy()
    assert x.shape == y.shape and np.allclose(x.sum(-1), 1.0) and x.min() > 0
    se = np.sqrt(x.var(0) / N + y.var(0) / N)
    assert np.all(np.abs(x.mean(0) - y.mean(0)) <= Z * se)


def test_logistic_normal_rsample_gradient_is_the_stick_breaking_derivative():
    """On the same noise (seed reset), d sum(w * x) / d loc equals a central finite difference."""
    w = ember.tensor(np.linspace(-1, 1, 4 * 4).reshape(4, 4), dtype=ember.float64)

    def f(loc):
        ember.manual_seed(6)
        return (ED.LogisticNormal(loc, ember.tensor([1.0, 0.5, 2.0], dtype=ember.float64)).rsample((4,)) * w).sum()

    loc = ember.tensor([0.0, 1.0, -0.5], dtype=ember.float64, requires_grad=True)
    f(loc).backward()
    h = 1e-6
    for i in range(3):
        step = np.zeros(3)
        step[i] = h
        up = f(ember.tensor(loc.detach().numpy() + step, dtype=ember.float64)).item()
        dn = f(ember.tensor(loc.detach().numpy() - step, dtype=ember.float64)).item()
        assert abs(loc.grad.numpy()[i] - (up - dn) / (2 * h)) <= 1e-6


# ---- another device: the reference plugin's "vdev" -----------------------------------------------------------
VDEV = dict(SAMPLING, VonMises=lambda m, t: m.distributions.VonMises(t([0.0, 1.0]), t([0.5, 4.0])),
            LKJCholesky=lambda m, t: m.distributions.LKJCholesky(3, t([0.5, 2.0])),
            LogisticNormal=lambda m, t: m.distributions.LogisticNormal(t([0.0, 1.0]), t([1.0, 0.5])))


@pytest.mark.parametrize("name", sorted(VDEV))
def test_on_vdev(name):
    """Samples and log_prob stay on the parameters' device and the densities equal cpu's."""
    pytest.importorskip("ember_vdev")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # host-path notices of ops vdev lacks
        dv = VDEV[name](ember, lambda v: ember.tensor(v, dtype=ember.float64, device="vdev"))
        dc = VDEV[name](ember, T(ember))
        x = dv.sample((4,))
        assert x.device.type == "vdev"
        lp = dv.log_prob(x)
        assert lp.device.type == "vdev"
        np.testing.assert_allclose(lp.cpu().numpy(), dc.log_prob(x.cpu()).numpy(), rtol=1e-12)
        if dv.has_rsample:
            assert dv.rsample((2,)).device.type == "vdev"


# ---- a program that runs unchanged under `import torch` and `import ember as torch` -----------------------------
PROGRAM = '''
import sys
if sys.argv[1] == "ember":
    import ember as torch
else:
    import torch
D = torch.distributions
torch.set_default_dtype(torch.float64)
data = torch.linspace(0.2, 3.0, 25)
# maximum likelihood for a Weibull and a Kumaraswamy (on data / 3.1) with Adam through log_prob
log_scale, log_k = torch.zeros(()).requires_grad_(), torch.zeros(()).requires_grad_()
log_a, log_b = torch.zeros(()).requires_grad_(), torch.zeros(()).requires_grad_()
opt = torch.optim.Adam([log_scale, log_k, log_a, log_b], lr=0.1)
for step in range(5):
    nll = -D.Weibull(log_scale.exp(), log_k.exp()).log_prob(data).mean()
    nll = nll - D.Kumaraswamy(log_a.exp(), log_b.exp()).log_prob(data / 3.1).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    print("mle", step, f"{nll.item():.12f}")
# an LKJ prior on a correlation Cholesky factor parameterised through CorrCholeskyTransform
x = torch.tensor([0.3, -0.5, 0.8], requires_grad=True)
t = D.transforms.CorrCholeskyTransform()
L = t(x)
lp = D.LKJCholesky(3, 2.0).log_prob(L) + t.log_abs_det_jacobian(x, L)
lp.backward()
print("lkj", f"{lp.item():.12f}", " ".join(f"{g:.12f}" for g in x.grad.tolist()))
cov = L @ L.T + torch.eye(3)
print("wishart", f"{D.Wishart(torch.tensor(5.0), cov).log_prob(2 * cov).item():.12f}",
      f"{D.Wishart(torch.tensor(5.0), cov).entropy().item():.12f}")
p, q = D.Pareto(torch.tensor(1.0), torch.tensor(3.0)), D.Exponential(torch.tensor(0.5))
print("kl", f"{D.kl_divergence(p, q).item():.12f}", f"{D.InverseGamma(3.0, 2.0).entropy().item():.12f}")
'''


def test_program_with_the_new_distributions_runs_the_same(tmp_path):
    import os
    import subprocess
    import sys
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    outs = {}
    for which in ("torch", "ember"):
        r = subprocess.run([sys.executable, str(path), which], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ))
        assert r.returncode == 0, r.stdout + r.stderr
        outs[which] = r.stdout.split()
    assert len(outs["torch"]) == 5 * 3 + 5 + 3 + 3, outs["torch"]
    for a, b in zip(outs["torch"], outs["ember"]):
        if any(c.isdigit() for c in a):
            assert abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a))), (outs["torch"], outs["ember"])
        else:
            assert a == b
