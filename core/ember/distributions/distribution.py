"""The Distribution base class (matches torch.distributions.Distribution).

Shapes: a distribution's samples have shape ``sample_shape + batch_shape + event_shape``;
``log_prob(value)`` returns shape ``broadcast(value.shape[:-len(event_shape)], batch_shape)``.
With argument validation on (the default, as in PyTorch under ``__debug__``) constructors check
``arg_constraints`` and ``log_prob`` checks ``support``, raising ValueError with PyTorch's messages.
"""
import warnings

import ember

from . import constraints
from .utils import _inherit_docstrings, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Base of every distribution: shapes, argument validation and the sampling / density interface."""
    has_rsample = False            # rsample() is implemented (reparameterised, differentiable samples)
    has_enumerate_support = False  # enumerate_support() is implemented (discrete, finite support)
    _validate_args = __debug__

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _inherit_docstrings(cls)

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for every distribution built afterwards (ValueError unless a bool)."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=ember.Size(), event_shape=ember.Size(), validate_args=None):
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with `validate_args=False` "
                              "to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue   # a set that depends on other parameters cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue   # a parameter given in its other form (probs vs logits) is not computed to check it
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution of the same type with ``batch_shape`` (parameters expanded as views, not copied;
        validation setting kept). Matches torch.distributions.Distribution.expand."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        """The shape over which parameters are batched (ember.Size)."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample, without batching (ember.Size)."""
        return self._event_shape

    @property
    def arg_constraints(self):
        """A dict from parameter name to the Constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint that samples satisfy."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean, shape ``batch_shape + event_shape`` (nan / inf where undefined, as in PyTorch)."""
        raise NotImplementedError

    @property
    def mode(self):
        """The mode, shape ``batch_shape + event_shape`` (nan where there is none, as in PyTorch)."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance, shape ``batch_shape + event_shape`` (nan / inf where undefined, as in PyTorch)."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation, sqrt(variance), shape ``batch_shape + event_shape``."""
        return self.variance.sqrt()

    def sample(self, sample_shape=ember.Size()):
        """Samples of shape ``sample_shape + batch_shape + event_shape``, not tracked by autograd."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=ember.Size()):
        """Reparameterised samples: differentiable with respect to the parameters."""
        raise NotImplementedError(f"{self.__class__} does not implement rsample")

    def sample_n(self, n):
        """Deprecated: ``sample((n,))``."""
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        """Log density (or log mass) at ``value``: shape ``broadcast(value.shape[:-len(event_shape)],
        batch_shape)``; with validation on, ValueError for a value outside the support or of the wrong shape."""
        raise NotImplementedError

    def cdf(self, value):
        """P(X <= value), shape: broadcast of ``value`` and ``batch_shape``."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse of ``cdf``: the quantile at probability ``value``, shape: broadcast with ``batch_shape``."""
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """All values of a finite discrete support along a new leading dim: shape ``(n,) + batch_shape +
        event_shape`` (``expand=False``: singleton batch dims instead)."""
        raise NotImplementedError

    def entropy(self):
        """The (differential) entropy in nats, shape ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self):
        """exp(entropy()), shape ``batch_shape``."""
        return ember.exp(self.entropy())

    def _extended_shape(self, sample_shape=ember.Size()):
        """``sample_shape + batch_shape + event_shape`` as an ember.Size."""
        return ember.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        """Check ``value`` for log_prob / cdf: a Tensor, event shape, broadcastable, inside the support."""
        if not isinstance(value, ember.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if tuple(value.size()[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape = value.size()
        expected_shape = ember.Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.")
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in names)
        return self.__class__.__name__ + "(" + args + ")"
