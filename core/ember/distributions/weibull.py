"""Weibull(scale, concentration) = scale * Exponential(1)^(1 / concentration)
(matches torch.distributions.Weibull)."""
import ember

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all, euler_constant

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """Density (k / λ) (x / λ)^(k-1) exp(-(x / λ)^k) on x > 0, λ = scale > 0, k = concentration > 0.
    rsample is reparameterised in both parameters (through the power and affine transforms)."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(ember.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base_dist, self._transforms(), validate_args=validate_args)

    def _transforms(self):
        return [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        TransformedDistribution.__init__(new, self.base_dist.expand(batch_shape), new._transforms(),
                                         validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * ember.exp(ember.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        """scale ((k - 1) / k)^(1 / k); nan for k < 1 (as in PyTorch), 0 for k == 1."""
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration_reciprocal

    @property
    def variance(self):
        return self.scale.pow(2) * (ember.exp(ember.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - ember.exp(2 * ember.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self):
        """γ (1 - 1/k) + log(λ / k) + 1 (γ Euler's constant), shape ``batch_shape``."""
        return (euler_constant * (1 - self.concentration_reciprocal)
                + ember.log(self.scale * self.concentration_reciprocal) + 1)
