"""KL pairs PyTorch registers for the second batch of distributions (Pareto, ContinuousBernoulli); kept apart
from kl.py so that each file stays readable. Imported by ember.distributions, which registers them.
Answers are inf where q's support does not cover p's (or p's tail is heavier), as in PyTorch."""
import math

import ember

from .beta import Beta
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .kl import _register_infinite, _x_log_x, register_kl
from .laplace import Laplace
from .normal import Normal
from .pareto import Pareto
from .uniform import Uniform


def _inf_where(mask, result):
    return ember.where(mask, math.inf, result)


def _kl_to_continuous_bernoulli(p, q):
    """KL(p || q) for q ContinuousBernoulli and p on [0, 1]: -H(p) - E_p[x] logit(λ) - log(1 - λ) - log C(λ)."""
    return -p.entropy() - p.mean * q.logits - ember.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate = p.scale * q.rate
    result = ((p.alpha / scale_rate).log() - p.alpha.reciprocal() + p.alpha * scale_rate / (p.alpha - 1) - 1)
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common = p.scale.log() + p.alpha.reciprocal()
    result = (p.alpha.log() - common + q.concentration.lgamma() - q.concentration * q.rate.log()
              + (1 - q.concentration) * common + q.rate * p.alpha * p.scale / (p.alpha - 1) - 1)
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    mean_scale = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    second_moment = p.alpha * mean_scale.pow(2) / (p.alpha - 2) + (p.alpha * mean_scale - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + second_moment / (2 * q.scale.pow(2)) - 1
    return _inf_where(p.alpha <= 2, result)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + ember.log1p(-p.probs)
            - q._cont_bern_log_norm() - ember.log1p(-q.probs))


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - ember.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    log_norm_q = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + ember.log(q.scale)
    quadratic = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return -p.entropy() + log_norm_q + quadratic


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # PyTorch's condition (kept as is): inf unless q's interval sticks out of [0, 1] on both sides
    return _inf_where((q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = _kl_to_continuous_bernoulli(p, q)
    return _inf_where((p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound), result)


register_kl(Beta, ContinuousBernoulli)(_kl_to_continuous_bernoulli)


_register_infinite([(Beta, Pareto), (ContinuousBernoulli, Pareto), (Exponential, ContinuousBernoulli),
                    (Exponential, Pareto), (Gamma, ContinuousBernoulli), (Gamma, Pareto), (Gumbel, ContinuousBernoulli),
                    (Gumbel, Pareto), (Laplace, ContinuousBernoulli), (Laplace, Pareto), (Normal, ContinuousBernoulli),
                    (Normal, Pareto), (Pareto, Beta), (Pareto, ContinuousBernoulli), (Pareto, Uniform)])
