"""Beta(concentration1, concentration0) (matches torch.distributions.Beta)."""
import numbers

import ember

from . import constraints
from ._sampling import _standard_gamma
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Density x^(a-1) (1-x)^(b-1) / B(a, b) on [0, 1], a = concentration1, b = concentration0 (both > 0).
    rsample is X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b), differentiable through the gamma draws."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        # the parameters live in a Dirichlet over (X, 1 - X), as in PyTorch (so are its validation errors)
        if isinstance(concentration1, numbers.Real) and isinstance(concentration0, numbers.Real):
            concentration = ember.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration = ember.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = ember.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        # the mode of (X, 1 - X), with Dirichlet's rule when both are < 1
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _standard_gamma(self.concentration1.expand(shape))
        y = _standard_gamma(self.concentration0.expand(shape))
        finfo = ember.finfo(x.dtype)
        return (x / (x + y)).clamp(min=finfo.tiny, max=1 - finfo.eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (ember.xlogy(a - 1, value) + ember.xlogy(b - 1, 1 - value)
                + ember.lgamma(a + b) - ember.lgamma(a) - ember.lgamma(b))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        log_beta = ember.lgamma(a) + ember.lgamma(b) - ember.lgamma(total)
        return log_beta - (a - 1) * ember.digamma(a) - (b - 1) * ember.digamma(b) + (total - 2) * ember.digamma(total)

    @property
    def concentration1(self):
        """a (the exponent of x), shape ``batch_shape``."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        """b (the exponent of 1 - x), shape ``batch_shape``."""
        return self._dirichlet.concentration[..., 1]

    @property
    def concentration(self):
        """(a, b) stacked on a last dim of size 2: the underlying Dirichlet's parameter."""
        return self._dirichlet.concentration

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return ember.lgamma(x) + ember.lgamma(y) - ember.lgamma(x + y)
