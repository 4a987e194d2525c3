"""Adagrad (matches torch.optim.Adagrad)."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _value, _step_tensor, _compiling, _compile_scalars

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (matches torch.optim.Adagrad; PyTorch's single-tensor algorithm, the same
    operations in the same order).

    Per parameter with gradient g (``-g`` when ``maximize``), at step t::

        g = g + weight_decay * p                     (if weight_decay != 0)
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (sqrt(s) + eps)

    State per parameter, created at construction as PyTorch does: ``'step'`` and ``'sum'``
    (filled with ``initial_accumulator_value``).
    ``differentiable=True`` (PyTorch's meaning): the step runs with grad enabled (and adds eps out of
    place, as PyTorch), so gradients flow through the update.
    Raises ValueError for invalid lr / lr_decay / weight_decay / initial_accumulator_value / eps,
    RuntimeError for sparse gradients.
    """

    #: hyperparameters a replay of ember.compile reads live (they are not guards: an lr scheduler does not recapture)
    _compile_live = frozenset({"lr"})

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= _value(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        self._check_fused(fused, foreach, differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = _step_tensor()
                st["sum"] = ember.full_like(p, group["initial_accumulator_value"])

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr = _value(group["lr"])
            lr_decay, wd, eps, maximize = group["lr_decay"], group["weight_decay"], group["eps"], group["maximize"]
            differentiable = group.get("differentiable", False)
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if g._layout.name != "strided":
                    raise RuntimeError("Adagrad does not support sparse gradients")
                st = state[p]
                if maximize:
                    g = -g
                step_t = st["step"]
                step_t.add_(1)
                if wd != 0:
                    g = g.add(p, alpha=wd)
                state_sum = st["sum"]
                state_sum.addcmul_(g, g, value=1)
                std = state_sum.sqrt() + eps if differentiable else state_sum.sqrt().add_(eps)
                if _compiling():     # ember.compile: -clr computed on the host by a recorded call a replay repeats
                    neg_clr = _compile_scalars(self, p, lambda step_t=step_t, group=group: (
                        -(_value(group["lr"]) / (1 + (step_t.item() - 1) * lr_decay)),))[0]
                    p.addcdiv_(g * neg_clr, std)     # eager's addcdiv_ with the 0-dim step folded into t1 (see Adam)
                    continue
                step = step_t.item()
                clr = lr / (1 + (step - 1) * lr_decay)
                p.addcdiv_(g, std, value=-clr)
        return loss
