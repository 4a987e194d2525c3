"""LogisticNormal(loc, scale) = stick-breaking of Normal(loc, scale) (matches torch.distributions.LogisticNormal)."""
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """The law of StickBreakingTransform()(X), X ~ Normal(loc, scale) over the last dim (K - 1 entries):
    values on the K-simplex, event shape (K,). rsample is reparameterised through the Normal."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:   # a scalar is a one-entry vector (K = 2)
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        """The mean of the underlying Normal, shape ``batch_shape + (K - 1,)``."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of the underlying Normal, shape ``batch_shape + (K - 1,)``."""
        return self.base_dist.base_dist.scale
