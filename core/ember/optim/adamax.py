"""Adamax: Adam with the infinity norm (matches torch.optim.Adamax)."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _value, _step_tensor, _check_capturable, _hyper, _compiling

__all__ = ["Adamax"]


def _check_adam_like(lr, eps, betas, weight_decay):
    """The lr / eps / betas / weight_decay checks shared by the Adam family (PyTorch's messages)."""
    if not 0.0 <= _value(lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= _value(betas[0]) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= _value(betas[1]) < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adamax(Optimizer):
    """Adamax (matches torch.optim.Adamax; PyTorch's single-tensor algorithm, the same
    operations in the same order, so float64 results are bit-identical to PyTorch's cpu).

    Per parameter with gradient g (``-g`` when ``maximize``), at step t::

        g = g + weight_decay * p                  (if weight_decay != 0)
        m = lerp(m, g, 1 - beta1)
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**t) * m / u

    State per parameter: ``'step'`` (0-dim float tensor), ``'exp_avg'`` (m), ``'exp_inf'`` (u).
    ``capturable=True`` (PyTorch's meaning): the 0-dim state tensors live on the parameter's device and
    everything that depends on the step is computed from them with tensor ops (PyTorch's capturable
    formulas), so a step never reads a number back to the host and can be captured and replayed;
    AssertionError (as PyTorch) when a capturable step meets a parameter on cpu.
    Raises ValueError for invalid lr / eps / betas / weight_decay (PyTorch's messages),
    RuntimeError for ``differentiable`` (not supported by ember) and for sparse gradients.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_like(lr, eps, betas, weight_decay)
        self._check_unsupported(None, differentiable, name="Adamax")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
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
            capturable = group["capturable"] or _compiling()
            lr = _hyper(group["lr"], capturable)
            beta1, beta2 = (_value(b) for b in group["betas"])
            eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
            params, grads = self._grads(group, "Adamax")
            for p, g in zip(params, grads):
                st = state[p]
                if not st:
                    st["step"] = _step_tensor(p.device if capturable else None)
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_inf"] = ember.zeros_like(p)
                exp_avg, exp_inf, step_t = st["exp_avg"], st["exp_inf"], st["step"]
                if capturable:
                    _check_capturable(p, step_t)
                if maximize:
                    g = -g
                step_t.add_(1)
                if wd != 0:
                    g = g.add(p, alpha=wd)
                exp_avg.lerp_(g, 1 - beta1)
                ember.maximum(exp_inf.mul_(beta2), g.abs().add_(eps), out=exp_inf)
                if capturable:       # p += m / (u * (beta1**t - 1) / lr), no host read
                    neg_bias_correction = (beta1 ** step_t - 1).div_(lr)
                    p.addcdiv_(exp_avg, exp_inf * neg_bias_correction)
                    continue
                clr = lr / (1 - beta1 ** step_t.item())
                p.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
