"""RMSprop (matches torch.optim.RMSprop)."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _value, _step_tensor, _check_capturable, _compiling

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (matches torch.optim.RMSprop; PyTorch's single-tensor algorithm, the same operations
    in the same order).

    Per parameter with gradient g (``-g`` when ``maximize``)::

        g = g + weight_decay * p                           (if weight_decay != 0)
        v = alpha * v + (1 - alpha) * g * g
        centered: m = lerp(m, g, 1 - alpha); avg = sqrt(v - m * m) + eps
        else:     avg = sqrt(v) + eps
        momentum > 0: b = momentum * b + g / avg; p = p - lr * b
        else:         p = p - lr * g / avg

    State per parameter: ``'step'``, ``'square_avg'`` (+ ``'momentum_buffer'``, ``'grad_avg'``).
    ``capturable=True`` keeps ``'step'`` on the parameter's device (the update does not use it);
    AssertionError (as PyTorch) when a capturable step meets a parameter on cpu.
    ``differentiable=True`` (PyTorch's meaning): the step runs with grad enabled (and adds eps out of
    place, as PyTorch), so gradients flow through the update.
    Raises ValueError for invalid lr / eps / momentum / weight_decay / alpha, RuntimeError for
    sparse gradients.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= _value(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("maximize", False)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr = _value(group["lr"])
            alpha, eps, wd = group["alpha"], group["eps"], group["weight_decay"]
            momentum, centered, maximize = group["momentum"], group["centered"], group["maximize"]
            capturable = group.get("capturable", False) or _compiling()
            differentiable = group.get("differentiable", False)
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if g._layout.name != "strided":
                    raise RuntimeError("RMSprop does not support sparse gradients")
                st = state[p]
                if not st:
                    st["step"] = _step_tensor(p.device if capturable else None)
                    st["square_avg"] = ember.zeros_like(p)
                    if momentum > 0:
                        st["momentum_buffer"] = ember.zeros_like(p)
                    if centered:
                        st["grad_avg"] = ember.zeros_like(p)
                if capturable:
                    _check_capturable(p, st["step"])
                if maximize:
                    g = -g
                st["step"].add_(1)
                if wd != 0:
                    g = g.add(p, alpha=wd)
                square_avg = st["square_avg"]
                square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha)
                if centered:
                    grad_avg = st["grad_avg"]
                    grad_avg.lerp_(g, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add(eps) if differentiable else avg.add_(eps)
                if momentum > 0:
                    buf = st["momentum_buffer"]
                    buf.mul_(momentum).addcdiv_(g, avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(g, avg, value=-lr)
        return loss
