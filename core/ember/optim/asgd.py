"""ASGD: averaged stochastic gradient descent (matches torch.optim.ASGD)."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _value, _step_tensor, _check_capturable, _rdiv, _compiling

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD (matches torch.optim.ASGD; PyTorch's single-tensor algorithm, the same
    operations in the same order, so float64 results are bit-identical to PyTorch's cpu).

    Per parameter with gradient g (``-g`` when ``maximize``), at step t::

        g = g + weight_decay * p                         (if weight_decay != 0)
        p = p * (1 - lambd * eta);  p = p - eta * g
        ax = p if mu == 1 else ax + mu * (p - ax)        (the average, state 'ax')
        eta = lr / (1 + lambd * lr * t) ** alpha;  mu = 1 / max(1, t - t0)

    ``eta`` and ``mu`` live in 0-dim tensors of the 'step' dtype (float32 unless the default
    dtype is float64) and are computed through default-dtype tensors, as in PyTorch, so they
    are rounded alike. State per parameter:
    ``'step'``, ``'eta'``, ``'mu'``, ``'ax'``.
    ``capturable=True`` (PyTorch's meaning): the 0-dim state tensors live on the parameter's device and
    everything that depends on the step is computed from them with tensor ops (PyTorch's capturable
    formulas), so a step never reads a number back to the host and can be captured and replayed;
    AssertionError (as PyTorch) when a capturable step meets a parameter on cpu.
    Raises ValueError for invalid lr / weight_decay (PyTorch's messages), RuntimeError for
    ``differentiable`` (not supported by ember) and for sparse gradients.
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, maximize=False,
                 differentiable=False, capturable=False):
        if not 0.0 <= _value(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._check_unsupported(None, differentiable, name="ASGD")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
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
            capturable = group["capturable"] or _compiling()
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            wd, maximize = group["weight_decay"], group["maximize"]
            params, grads = self._grads(group, "ASGD")
            for p, g in zip(params, grads):
                st = state[p]
                if not st:
                    dev = p.device if capturable else None
                    st["step"] = _step_tensor(dev)
                    st["eta"] = _step_tensor(dev).fill_(lr)
                    st["mu"] = _step_tensor(dev).fill_(1.0)
                    st["ax"] = ember.zeros_like(p)
                step_t, eta, mu, ax = st["step"], st["eta"], st["mu"], st["ax"]
                if capturable:
                    _check_capturable(p, mu, eta, step_t, what="params, mus, etas, and state_steps")
                if maximize:
                    g = -g
                step_t.add_(1)
                if wd != 0:
                    g = g.add(p, alpha=wd)
                if capturable:       # eta and mu stay 0-dim tensors on the device
                    p.mul_(1 - lambd * eta)
                    p.addcmul_(g, eta, value=-1)
                    ax.add_(p.sub(ax).mul_(mu))
                    eta.copy_(_rdiv(lr, (1 + lambd * lr * step_t) ** alpha))
                    mu.copy_(ember.maximum(step_t - t0, ember.ones_like(step_t)).reciprocal())
                    continue
                eta_value = eta.item()
                p.mul_(1 - lambd * eta_value)
                p.add_(g, alpha=-eta_value)
                if mu.item() != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                step = step_t.item()
                # through a tensor of the default dtype, as PyTorch's ``torch.as_tensor(number)``
                eta.copy_(ember.tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                mu.copy_(ember.tensor(1 / max(1, step - t0)))
        return loss
