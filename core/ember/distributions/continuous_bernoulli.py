"""ContinuousBernoulli(probs | logits, lims) (matches torch.distributions.ContinuousBernoulli).

Loaiza-Ganem & Cunningham (NeurIPS 2019), "The continuous Bernoulli: fixing a pervasive error in variational
autoencoders": density C(λ) λ^x (1 - λ)^(1-x) on [0, 1]. The closed forms of C, the mean, variance and cdf are
0/0 at λ = 1/2; inside ``lims`` (default (0.499, 0.501)) they are replaced by Taylor expansions about 1/2.
"""
import math
import numbers

import ember

from . import constraints
from .bernoulli import _bce_with_logits
from .exp_family import ExponentialFamily
from .utils import _expand_params, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Density C(λ) λ^x (1 - λ)^(1-x) on [0, 1], λ = ``probs`` in (0, 1) (or sigmoid(``logits``)); exactly
    one of the two is given. ``probs`` is not a probability (nor ``logits`` a log-odds): the names follow
    Bernoulli. rsample is icdf(U), U ~ Uniform(0, 1), reparameterised in λ."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            # checked before clamping, as PyTorch does, when validate_args is given explicitly
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(ember.Size() if is_scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        given = "probs" if "probs" in self.__dict__ else "logits"
        new = _expand_params(self, ContinuousBernoulli, batch_shape, _instance, (given,))
        new._param = getattr(new, given)
        new._lims = self._lims
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """λ, with lims[0] in place of values inside the unstable region (so the closed forms stay finite)."""
        return ember.where(self._outside_unstable_region(), self.probs, self._lims[0] * ember.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(λ) = log |log(1 - λ) - log λ| - log |1 - 2λ|, Taylor about 1/2 inside ``lims``."""
        cut = self._cut_probs()
        below_half = ember.where(cut <= 0.5, cut, ember.zeros_like(cut))
        above_half = ember.where(cut >= 0.5, cut, ember.ones_like(cut))
        log_norm = (ember.log(ember.abs(ember.log1p(-cut) - ember.log(cut)))
                    - ember.where(cut <= 0.5, ember.log1p(-2.0 * below_half), ember.log(2.0 * above_half - 1.0)))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ember.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (ember.log1p(-cut) - ember.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return ember.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return ember.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                     + 1.0 / (ember.log1p(-cut) - ember.log(cut)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ember.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        """The parameter in log space (log-odds / normalised log-probabilities), computed from ``probs`` on first
        use when not given."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The parameter as probabilities, computed from ``logits`` on first use when not given."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        """The shape of the parameter this distribution was given (``probs`` or ``logits``)."""
        return self._param.size()

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value):
        """x logit(λ) + log(1 - λ) + log C(λ) at x = ``value``; shape: broadcast with batch_shape."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        """(λ^x (1 - λ)^(1-x) + λ - 1) / (2λ - 1), clipped to 0 below 0 and 1 above 1 (x inside lims)."""
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = ember.where(self._outside_unstable_region(), cdfs, value)
        return ember.where(value <= 0.0, ember.zeros_like(value),
                           ember.where(value >= 1.0, ember.ones_like(value), unbounded))

    def icdf(self, value):
        """The inverse of ``cdf`` on [0, 1] (the identity inside lims)."""
        cut = self._cut_probs()
        closed = ((ember.log1p(-cut + value * (2.0 * cut - 1.0)) - ember.log1p(-cut))
                  / (ember.log(cut) - ember.log1p(-cut)))
        return ember.where(self._outside_unstable_region(), closed, value)

    def entropy(self):
        """mean (log(1 - λ) - log λ) - log C(λ) - log(1 - λ), shape ``batch_shape``."""
        log_probs0 = ember.log1p(-self.probs)
        log_probs1 = ember.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log((e^x - 1) / x) of the natural parameter x, Taylor about 0 inside lims - 1/2."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = ember.where(outside, x, (self._lims[0] - 0.5) * ember.ones_like(x))
        log_norm = ember.log(ember.abs(ember.expm1(cut))) - ember.log(ember.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return ember.where(outside, log_norm, taylor)
