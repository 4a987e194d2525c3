"""ExponentialFamily: distributions p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)) (matches
torch.distributions.ExponentialFamily). Subclasses give ``_natural_params`` and ``_log_normalizer``;
the entropy then follows from the Bregman divergence of F, computed with autograd."""
import ember

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """-E[k(x)] + F(θ) - <θ, ∇F(θ)>, with ∇F from ember.autograd.grad."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
