"""HalfCauchy(scale) = |Cauchy(0, scale)| (matches torch.distributions.HalfCauchy)."""
import math

import ember

from ._folded import _HalfDistribution
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(_HalfDistribution):
    """|X| for X ~ Cauchy(0, scale): support x >= 0, density 2 / (pi scale (1 + (x / scale)^2));
    mean inf and variance inf (as PyTorch gives them). rsample is |Cauchy rsample|."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance
