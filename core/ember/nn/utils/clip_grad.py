"""Gradient clipping (matches torch.nn.utils.clip_grad_norm_ / clip_grad_value_ /
get_total_norm / clip_grads_with_norm_). All of it runs under no_grad with ember ops on
the gradients' device; ``foreach`` is accepted and ignored (ember has one code path)."""
from __future__ import annotations

import math

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _tensors(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters):
    return [p.grad for p in _tensors(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of all ``tensors`` together, as if concatenated into one vector
    (a 0-dim tensor; 0. for none). ``norm_type`` may be ``inf``. RuntimeError when the norm is
    nan / inf and ``error_if_nonfinite``."""
    from ... import tensor, stack, linalg
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = [linalg.vector_norm(t, norm_type) for t in tensors]
        device = tensors[0].device
        total = linalg.vector_norm(stack([n.to(device) for n in norms]), norm_type) if len(norms) > 1 else norms[0]
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` in place by min(1, max_norm / (total_norm + 1e-6))."""
    from ... import clamp
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device) if coef.device != g.device else coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of ``parameters`` (a tensor or an iterable of them) in place so that
    their total ``norm_type`` norm is at most ``max_norm``; returns the total norm before
    clipping (a 0-dim tensor). ``norm_type`` may be ``float('inf')``. RuntimeError for a
    non-finite norm when ``error_if_nonfinite`` (matches torch.nn.utils.clip_grad_norm_)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)     # a generator is consumed twice below
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    if grads:
        clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of ``clip_grad_norm_`` (FutureWarning)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.".replace("torch", "ember"), FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` in place to [-clip_value, clip_value]
    (matches torch.nn.utils.clip_grad_value_)."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
