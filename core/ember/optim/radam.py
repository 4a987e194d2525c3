"""RAdam: rectified Adam (matches torch.optim.RAdam)."""
from __future__ import annotations

import ember

from .adamax import _check_adam_like
from .optimizer import Optimizer, _value, _step_tensor, _check_capturable, _hyper, _compiling

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (matches torch.optim.RAdam; PyTorch's single-tensor algorithm, the same operations
    in the same order, so float64 results are bit-identical to PyTorch's cpu).

    Per parameter with gradient g (``-g`` when ``maximize``), at step t::

        p = p * (1 - lr * weight_decay)      (decoupled_weight_decay, i.e. RAdamW)
        g = g + weight_decay * p             (otherwise, if weight_decay != 0)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        rho_t > 5:  p = p - m / (1 - beta1**t) * lr * sqrt(1 - beta2**t) / (sqrt(v) + eps) * r_t
                    with r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        otherwise:  p = p - m / (1 - beta1**t) * lr

    State per parameter: ``'step'`` (0-dim float tensor), ``'exp_avg'``, ``'exp_avg_sq'``.
    ``capturable=True`` (PyTorch's meaning): the 0-dim state tensors live on the parameter's device and
    everything that depends on the step is computed from them with tensor ops (PyTorch's capturable
    formulas), so a step never reads a number back to the host and can be captured and replayed;
    AssertionError (as PyTorch) when a capturable step meets a parameter on cpu.
    The branch on ``rho_t > 5`` becomes ``where(rho_t > 5, r_t * adaptive_lr, 1)``.
    Raises ValueError for invalid lr / eps / betas / weight_decay (PyTorch's messages),
    RuntimeError for ``differentiable`` (not supported by ember) and for sparse gradients.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_like(lr, eps, betas, weight_decay)
        self._check_unsupported(None, differentiable, name="RAdam")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            capturable = group["capturable"] or _compiling()
            lr = _hyper(group["lr"], capturable)
            beta1, beta2 = (_value(b) for b in group["betas"])
            eps, wd, maximize, decoupled = group["eps"], group["weight_decay"], group["maximize"], \
                group["decoupled_weight_decay"]
            params, grads = self._grads(group, "RAdam")
            for p, g in zip(params, grads):
                st = state[p]
                if not st:
                    st["step"] = _step_tensor(p.device if capturable else None)
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                exp_avg, exp_avg_sq, step_t = st["exp_avg"], st["exp_avg_sq"], st["step"]
                if capturable:
                    _check_capturable(p, step_t)
                if maximize:
                    g = -g
                step_t.add_(1)
                step = step_t if capturable else step_t.item()
                if wd != 0:
                    if decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        g = g.add(p, alpha=wd)
                exp_avg.lerp_(g, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                corrected = exp_avg / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if capturable:       # both branches computed, one picked on the device
                    # the radicand is negative only where rho_t <= 5, whose value ``where`` drops; clamped so
                    # that numpy-backed devices do not warn about sqrt of a negative number
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)).clamp_(min=0).sqrt()
                    adaptive_lr = bias_correction2.sqrt() / exp_avg_sq.sqrt().add_(eps)
                    update = ember.where(rho_t > 5.0, rect * adaptive_lr, 1.0)
                    p.add_(corrected * lr * update, alpha=-1.0)
                elif rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    # PyTorch's ``number / tensor`` is ``tensor.reciprocal() * number``
                    adaptive_lr = exp_avg_sq.sqrt().add_(eps).reciprocal_().mul_(bias_correction2 ** 0.5)
                    p.add_(corrected.mul_(lr).mul_(adaptive_lr).mul_(rect), alpha=-1.0)
                else:
                    p.add_(corrected.mul_(lr), alpha=-1.0)
        return loss
