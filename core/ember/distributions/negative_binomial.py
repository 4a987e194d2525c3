"""NegativeBinomial(total_count, probs | logits) (matches torch.distributions.NegativeBinomial)."""
import ember

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .poisson import Poisson
from .utils import _expand_params, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """The number of successes before ``total_count`` (real, >= 0) failures in Bernoulli trials that succeed
    with probability ``probs`` in [0, 1) (or sigmoid(``logits``)); exactly one of the two is given.
    sample draws Poisson(Gamma(total_count, exp(-logits))) (the gamma-Poisson mixture, as PyTorch does)."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self._param = self.logits
        self.total_count = self.total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        given = "probs" if "probs" in self.__dict__ else "logits"
        new = _expand_params(self, NegativeBinomial, batch_shape, _instance, ("total_count", given))
        new._param = getattr(new, given)
        return new

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        """The parameter in log space (log-odds / normalised log-probabilities), computed from ``probs`` on first
        use when not given."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The parameter as probabilities, computed from ``logits`` on first use when not given."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        """The shape of the parameter this distribution was given (``probs`` or ``logits``)."""
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=ember.Size()):
        """Counts of shape ``sample_shape + batch_shape`` in the parameters' dtype, not tracked by autograd."""
        with ember.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return Poisson(rate, validate_args=False).sample()

    def log_prob(self, value):
        """log C(n + k - 1, k) + n log(1 - p) + k log p for k = ``value`` (0 where n + k == 0)."""
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = ember.nn.functional.logsigmoid
        log_unnormalized = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = (-ember.lgamma(self.total_count + value) + ember.lgamma(1.0 + value)
                             + ember.lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
