"""GeneralizedPareto(loc, scale, concentration) (matches torch.distributions.GeneralizedPareto)."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import _batch_shape_of, _expand_params, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Survival (1 + ξ z)^(-1/ξ), z = (x - loc) / scale (ξ = concentration real, scale > 0); exp(-z) at ξ = 0.
    Support [loc, loc - scale / ξ] for ξ < 0, [loc, inf) otherwise. rsample is icdf(U), U ~ Uniform(0, 1),
    reparameterised in all three parameters. Mean nan for ξ >= 1, variance nan for ξ >= 1/2."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(_batch_shape_of((loc, scale, concentration), self.loc), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def _safe_concentration(self):
        """(ξ == 0 mask, ξ with 1 in place of the zeros), so that both branches of a where stay finite."""
        eq_zero = ember.isclose(self.concentration, ember.zeros_like(self.concentration))
        return eq_zero, ember.where(eq_zero, ember.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value):
        """-log scale - (1 + 1/ξ) log1p(ξ z) (-log scale - z at ξ = 0); shape: broadcast with batch_shape."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._safe_concentration()
        y = 1 / safe + ember.ones_like(z)
        nonzero = ember.where(y == 0, y, y * ember.log1p(safe * z))
        return -self.scale.log() - ember.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        """log P(X > value), shape: broadcast of value and batch_shape."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._safe_concentration()
        return ember.where(eq_zero, -z, -ember.log1p(safe * z) / safe)

    def log_cdf(self, value):
        """log P(X <= value) = log1p(-exp(log_survival_function(value)))."""
        return ember.log1p(-ember.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return ember.exp(self.log_cdf(value))

    def icdf(self, value):
        """loc + scale / ξ expm1(-ξ log1p(-value)) (loc - scale log1p(-value) at ξ = 0)."""
        eq_zero, safe = self._safe_concentration()
        log_u = ember.log1p(-value)
        return ember.where(eq_zero, self.loc - self.scale * log_u,
                           self.loc + self.scale / safe * ember.expm1(-safe * log_u))

    @property
    def mean(self):
        valid = self.concentration < 1
        safe = ember.where(valid, self.concentration, 0.5)
        return ember.where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = ember.where(valid, self.concentration, 0.25)
        return ember.where(valid, self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe)), math.nan)

    def entropy(self):
        """log scale + ξ + 1, shape ``batch_shape``."""
        return ember.broadcast_to(ember.log(self.scale) + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = ember.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
