"""|X| for X from a distribution symmetric about 0: what HalfNormal and HalfCauchy share."""
import math

import ember

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class _HalfDistribution(TransformedDistribution):
    """|X| for X ~ ``base_dist`` (symmetric about 0, parameter ``scale``): support x >= 0, density twice
    the base's there, -inf below 0; cdf 2F(x) - 1, icdf F⁻¹((p + 1) / 2), entropy H(X) - log 2."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, base_dist, validate_args=None):
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        """Zeros of shape ``batch_shape``."""
        return ember.zeros_like(self.scale)

    def log_prob(self, value):
        """log density at ``value`` (shape: broadcast of value and batch_shape); -inf for value < 0."""
        if self._validate_args:
            self._validate_sample(value)
        value = ember.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        """P(|X| <= value) = 2 F(value) - 1, F the base cdf."""
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        """The inverse of ``cdf``: F⁻¹((prob + 1) / 2)."""
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        """H(X) - log 2, shape ``batch_shape``."""
        return self.base_dist.entropy() - math.log(2)
