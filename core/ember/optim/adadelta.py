"""Adadelta (matches torch.optim.Adadelta)."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _value, _step_tensor, _check_capturable, _compiling

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (matches torch.optim.Adadelta; PyTorch's single-tensor algorithm, the same
    operations in the same order, so float64 results are bit-identical to PyTorch's cpu).

    Per parameter with gradient g (``-g`` when ``maximize``)::

        g = g + weight_decay * p                          (if weight_decay != 0)
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    State per parameter: ``'step'`` (0-dim float tensor), ``'square_avg'`` (v), ``'acc_delta'`` (u).
    ``capturable=True`` keeps ``'step'`` on the parameter's device (the update does not use it);
    AssertionError (as PyTorch) when a capturable step meets a parameter on cpu.
    ``differentiable=True`` (PyTorch's meaning): the step runs with grad enabled (cloning what PyTorch
    clones), so gradients flow through the update.
    Raises ValueError for invalid lr / rho / eps / weight_decay (PyTorch's messages), RuntimeError
    for sparse gradients.
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= _value(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr = _value(group["lr"])
            rho, eps, wd, maximize = group["rho"], group["eps"], group["weight_decay"], group["maximize"]
            capturable, differentiable = group["capturable"] or _compiling(), group.get("differentiable", False)
            params, grads = self._grads(group, "Adadelta")
            for p, g in zip(params, grads):
                st = state[p]
                if not st:
                    st["step"] = _step_tensor(p.device if capturable else None)
                    st["square_avg"] = ember.zeros_like(p)
                    st["acc_delta"] = ember.zeros_like(p)
                square_avg, acc_delta = st["square_avg"], st["acc_delta"]
                if capturable:
                    _check_capturable(p, st["step"])
                st["step"].add_(1)
                if maximize:
                    g = -g
                if wd != 0:
                    g = g.add(p, alpha=wd)
                square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                if differentiable:
                    delta = delta.clone()
                delta.div_(std).mul_(g)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
