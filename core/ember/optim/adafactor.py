"""Adafactor: factored second-moment estimates, relative step sizes (matches torch.optim.Adafactor)."""
from __future__ import annotations

import ember

from .._tensor import Tensor
from .optimizer import Optimizer, _value, _step_tensor

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018; matches torch.optim.Adafactor, PyTorch's single-tensor
    algorithm: the same operations in the same order).

    Per parameter p with gradient G (``-G`` when ``maximize``), at step t::

        beta2_hat = 1 - t ** beta2_decay;   rho = min(lr, 1 / sqrt(t))
        alpha = max(eps2, RMS(p)) * rho                       (RMS(x) = ||x||_2 / sqrt(numel))
        p = p * (1 - lr * weight_decay)
        G of dim >= 2 (factored, over the last two dims):
            R = lerp(R, mean(G * G, dim=-1), 1 - beta2_hat)    (row factor, shape (..., n, 1))
            C = lerp(C, mean(G * G, dim=-2), 1 - beta2_hat)    (column factor, shape (..., 1, m))
            V = R @ C / max(mean(R, dim=-2), eps1)
        G of dim <= 1:
            V = lerp(V, G * G, 1 - beta2_hat)
        U = G / sqrt(max(V, eps1 ** 2))
        p = p - alpha / max(1, RMS(U) / d) * U

    ``lr`` is PyTorch's deviation from the paper: it caps the relative step size rho and scales
    the (decoupled) weight decay. ``eps = (eps1, eps2)``; ``eps1=None`` takes
    ``finfo(dtype).eps`` of the first parameter stepped in the group (as PyTorch).

    State per parameter: ``'step'`` (0-dim float tensor on cpu), and ``'row_var'`` /
    ``'col_var'`` (gradients of dim >= 2) or ``'variance'`` (otherwise), in the gradient's dtype.
    ``foreach`` is accepted for PyTorch's signature; the result does not depend on it.
    Raises ValueError for a tensor lr with more than one element, lr < 0, beta2_decay > 0,
    eps1 < 0, eps2 < 0, d < 1 or weight_decay < 0 (PyTorch's messages), RuntimeError for
    complex parameters and for sparse gradients.
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _value(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)

    def _state_for(self, p, g):
        """``p``'s state, created on its first step (the factors take the gradient's shape and dtype)."""
        st = self.state[p]
        if not st:
            st["step"] = _step_tensor()
            if g.dim() > 1:
                st["row_var"] = g.new_zeros(tuple(g.shape[:-1]) + (1,))
                st["col_var"] = g.new_zeros(tuple(g.shape[:-2]) + (1, g.shape[-1]))
            else:
                st["variance"] = ember.zeros_like(g)
        return st

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _value(group["lr"])
            beta2_decay, d, wd, maximize = group["beta2_decay"], group["d"], group["weight_decay"], group["maximize"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                if g._layout.name != "strided":
                    raise RuntimeError("Adafactor does not support sparse gradients")
                st = self._state_for(p, g)
                if maximize:
                    g = -g
                if eps1 is None:      # the first parameter's dtype decides for the group, as PyTorch
                    eps1 = ember.finfo(p.dtype).eps
                st["step"].add_(1)
                step = st["step"].item()
                one_minus_beta2_t = step ** beta2_decay
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if g.dim() > 1:
                    row_var, col_var = st["row_var"], st["col_var"]
                    row_var.lerp_(ember.norm(g, dim=-1, keepdim=True).square_().div_(g.size(-1)), one_minus_beta2_t)
                    col_var.lerp_(ember.norm(g, dim=-2, keepdim=True).square_().div_(g.size(-2)), one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = st["variance"]
                    variance.lerp_(g * g, one_minus_beta2_t)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
                update.mul_(g)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
