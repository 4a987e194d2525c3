"""VonMises(loc, concentration): the circular normal distribution (matches torch.distributions.VonMises).

Differences from PyTorch, both in precision only: log I0 and log I1 come from ember.special.i0e / i1e (exact to
float64 rounding) where PyTorch evaluates the Abramowitz & Stegun polynomial fits 9.8.1-9.8.4 (relative error
up to about 2e-7), so log_prob and variance agree with PyTorch's to that accuracy and with scipy.stats.vonmises
to rounding.
"""
import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import _expand_params, broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    return ember.special.i0e(x).log() + x.abs()


def _log_i1(x):
    return ember.special.i1e(x).log() + x.abs()


def _best_fisher(loc, concentration, proposal_r, shape):
    """Best & Fisher (1979), "Efficient simulation of the von Mises distribution": wrapped-Cauchy proposals
    accepted or rejected elementwise until every element has one; the angle is returned in [-pi, pi)."""
    x = ember.zeros(shape, dtype=loc.dtype, device=loc.device)
    done = ember.zeros(shape, dtype=ember.bool, device=loc.device)
    while not bool(done.all()):   # acceptance is above 65% for every concentration (Best & Fisher, table 1)
        u1, u2, u3 = ember.rand((3,) + tuple(shape), dtype=loc.dtype, device=loc.device).unbind()
        z = ember.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        x = ember.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Density exp(κ cos(x - loc)) / (2π I0(κ)) for angles x (radians, any real: read modulo 2π), κ =
    ``concentration`` > 0. ``mean`` and ``mode`` are ``loc``; ``variance`` is the circular variance
    1 - I1(κ) / I0(κ). No rsample (as in PyTorch); samples lie in [-π, π) and are drawn in float64."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, ember.Size(), validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        """κ cos(value - loc) - log(2π) - log I0(κ); shape: broadcast of value and batch_shape."""
        if self._validate_args:
            self._validate_sample(value)
        return self.concentration * ember.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(self.concentration)

    @lazy_property
    def _proposal_r(self):
        """The wrapped-Cauchy proposal's parameter r = (1 + ρ²) / (2ρ) (1/κ + κ for tiny κ), float64."""
        kappa = self.concentration.double()
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return ember.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=ember.Size()):
        """Angles of shape ``sample_shape + batch_shape`` in [-π, π), not tracked by autograd."""
        with ember.no_grad():
            shape = self._extended_shape(sample_shape)
            return _best_fisher(self.loc.double(), self.concentration.double(), self._proposal_r,
                                shape).to(self.loc.dtype)

    @property
    def mean(self):
        """The circular mean: ``loc``."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(κ) / I0(κ), shape ``batch_shape``."""
        return 1 - (_log_i1(self.concentration) - _log_i0(self.concentration)).exp()
