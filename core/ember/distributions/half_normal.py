"""HalfNormal(scale) = |Normal(0, scale)| (matches torch.distributions.HalfNormal)."""
import math

from ._folded import _HalfDistribution
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(_HalfDistribution):
    """|X| for X ~ Normal(0, scale): support x >= 0; log_prob is -inf below 0."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
