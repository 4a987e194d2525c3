"""Kumaraswamy(concentration1, concentration0) (matches torch.distributions.Kumaraswamy)."""
import math

import ember

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b B(1 + n / a, b) for X ~ Kumaraswamy(a, b), computed in log space."""
    arg1 = 1 + n / a
    return ember.exp(b.log() + ember.lgamma(arg1) + ember.lgamma(b) - ember.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """Density a b x^(a-1) (1 - x^a)^(b-1) on [0, 1] (a = concentration1 > 0, b = concentration0 > 0).
    rsample is (1 - U^(1/b))^(1/a), U ~ Uniform(0, 1): reparameterised in both parameters."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(ember.full_like(self.concentration0, 0), ember.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """((a - 1) / (a b - 1))^(1/a); nan where a < 1 or b < 1 (as in PyTorch)."""
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return ember.where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        """(1 - 1/b) + (1 - 1/a) H_b - log a - log b, H_b = digamma(b + 1) + γ; shape ``batch_shape``."""
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        harmonic = ember.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * harmonic - ember.log(self.concentration1) - ember.log(self.concentration0)
