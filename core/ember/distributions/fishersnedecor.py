"""FisherSnedecor(df1, df2): the F distribution (matches torch.distributions.FisherSnedecor)."""
import math

import ember

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _batch_shape_of, _expand_params, broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The law of (X1 / df1) / (X2 / df2) for X1 ~ Chi2(df1), X2 ~ Chi2(df2) (df1, df2 > 0), support x > 0.
    rsample is the ratio of two Gamma(df / 2, df / 2) rsamples, so it is differentiable in both. The mean is
    nan for df2 <= 2, the variance nan for df2 <= 4 and the mode nan for df1 <= 2 (as in PyTorch)."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        # Gamma(df / 2, df) = Chi2(df) / df; built (and so validated) first, as in PyTorch, whose errors name them
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(_batch_shape_of((df1, df2), self.df1), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, FisherSnedecor, batch_shape, _instance, ("df1", "df2", "_gamma1", "_gamma2"))

    def _df2_above(self, bound):
        """(df2 > bound, df2 with bound + 1 elsewhere): the closed forms stay finite (and so do their gradients)
        on the side that is replaced by nan."""
        valid = self.df2 > bound
        return valid, ember.where(valid, self.df2, bound + 1.0)

    @property
    def mean(self):
        valid, df2 = self._df2_above(2)
        return ember.where(valid, df2 / (df2 - 2), math.nan)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return ember.where(self.df1 > 2, mode, math.nan)

    @property
    def variance(self):
        df1, (valid, df2) = self.df1, self._df2_above(4)
        variance = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return ember.where(valid, variance, math.nan)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).expand(shape)
        x2 = self._gamma2.rsample(sample_shape).expand(shape)
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        """log density at ``value`` (shape: broadcast of value and batch_shape)."""
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_norm = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_norm + half1 * ratio.log() + (half1 - 1) * ember.log(value)
                - (half1 + half2) * ember.log1p(ratio * value))
