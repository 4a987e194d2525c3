"""The legacy spectral normalisation hook (matches torch.nn.utils.spectral_norm /
remove_spectral_norm).

The parameter ``name`` becomes ``name_orig``; buffers ``name_u`` and ``name_v`` hold the power
method's vectors; a forward pre-hook recomputes ``module.<name>`` = W / sigma(W) as a plain
attribute before every call, running ``n_power_iterations`` power-method steps first in
training mode.
"""
from __future__ import annotations

import ember
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from ._norms import default_spectral_dim, reshape_to_matrix

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of the legacy spectral_norm."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = reshape_to_matrix(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                mat = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ember.mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ember.mv(mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = ember.dot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            weight_mat = reshape_to_matrix(weight.detach(), dim)
            h, w = weight_mat.shape
            u = F.normalize(ember.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=eps)
            v = F.normalize(ember.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Replace ``module.<name>`` by W / sigma(W) recomputed before each forward (see the module docstring);
    ``dim`` defaults to 1 for transposed convolutions and 0 otherwise. RuntimeError when applied twice to
    one name. Returns the module (matches torch.nn.utils.spectral_norm)."""
    if dim is None:
        dim = default_spectral_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Fold the normalised weight back into a plain parameter ``name``. ValueError "spectral_norm of 'name' not
    found in <module>" (matches torch.nn.utils.remove_spectral_norm)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
