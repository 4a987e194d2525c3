"""InverseGamma(concentration, rate) = 1 / Gamma(concentration, rate)
(matches torch.distributions.InverseGamma)."""
import math

import ember

from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """Density rate^a x^(-a-1) exp(-rate / x) / Γ(a) on x > 0 (a = concentration > 0, rate > 0).
    rsample is 1 / (Gamma rsample), differentiable in both parameters. The mean is inf for a <= 1 and the
    variance inf for a <= 2."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = ember.full((), -1.0, dtype=base_dist.rate.dtype, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        """The shape a of the underlying Gamma, shape ``batch_shape``."""
        return self.base_dist.concentration

    @property
    def rate(self):
        """The rate of the underlying Gamma (the scale of the inverse), shape ``batch_shape``."""
        return self.base_dist.rate

    @property
    def mean(self):
        return ember.where(self.concentration > 1, self.rate / (self.concentration - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        return ember.where(a > 2, self.rate.square() / ((a - 1).square() * (a - 2)), math.inf)

    def entropy(self):
        """a + log(rate) + lgamma(a) - (1 + a) digamma(a), shape ``batch_shape``."""
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()
