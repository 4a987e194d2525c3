"""Parametrizations built on ember.nn.utils.parametrize: weight_norm and spectral_norm (matches
torch.nn.utils.parametrizations).

``weight_norm`` stores ``original0`` = g (the norm over every dim but ``dim``) and ``original1``
= v, and computes weight = v * g / ||v||. ``spectral_norm`` keeps the original weight and
divides it by an estimate of its largest singular value, refined by ``n_power_iterations``
steps of the power method on every access in training mode (buffers ``_u``, ``_v`` of the
parametrization; 15 steps at registration). ``orthogonal`` is not provided: it needs
matrix_exp / householder_product / QR, which ember lacks.
"""
from __future__ import annotations

import ember
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ._norms import default_spectral_dim, norm_except_dim, reshape_to_matrix, weight_norm as _weight_norm

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    """weight = v * g / ||v|| (norm over every dim but ``dim``; the whole tensor for dim None)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as magnitude g (``parametrizations.<name>.original0``) times direction
    v / ||v|| (``original1``), the norm taken over every dim but ``dim`` (all dims for None). Returns the
    module (matches torch.nn.utils.parametrizations.weight_norm)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the power-method estimate of weight's largest singular value (weight reshaped
    to a matrix with ``dim`` first); a 1-D weight is just normalised."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = reshape_to_matrix(weight.detach(), self.dim)
            h, w = weight_mat.shape
            u = ember.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            v = ember.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat, n_power_iterations):
        # u and v are updated in place: they are buffers, and a later state dict must see the new values
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = reshape_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated with the power method (see the module
    docstring); ``dim`` defaults to 1 for transposed convolutions and 0 otherwise. Returns the module.
    ValueError "Module '...' has no parameter or buffer with name '...'"; IndexError / ValueError for a bad
    dim or n_power_iterations (matches torch.nn.utils.parametrizations.spectral_norm)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = default_spectral_dim(module)
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
