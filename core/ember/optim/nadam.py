"""NAdam: Adam with Nesterov momentum (matches torch.optim.NAdam)."""
from __future__ import annotations

import ember

from .adamax import _check_adam_like
from .optimizer import Optimizer, _value, _step_tensor, _check_capturable, _hyper, _compiling

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (matches torch.optim.NAdam; PyTorch's single-tensor algorithm, the same operations
    in the same order, so float64 results are bit-identical to PyTorch's cpu).

    Per parameter with gradient g (``-g`` when ``maximize``), at step t::

        p = p * (1 - lr * weight_decay)      (decoupled_weight_decay, i.e. NAdamW)
        g = g + weight_decay * p             (otherwise, if weight_decay != 0)
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_prod = mu_prod * mu_t             (a 0-dim tensor of the 'step' dtype, as PyTorch)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - mu_prod) * g / denom
        p = p - lr * mu_{t+1} / (1 - mu_prod * mu_{t+1}) * m / denom

    State per parameter: ``'step'``, ``'mu_product'`` (0-dim float tensors), ``'exp_avg'``,
    ``'exp_avg_sq'``.
    ``capturable=True`` (PyTorch's meaning): the 0-dim state tensors live on the parameter's device and
    everything that depends on the step is computed from them with tensor ops (PyTorch's capturable
    formulas), so a step never reads a number back to the host and can be captured and replayed;
    AssertionError (as PyTorch) when a capturable step meets a parameter on cpu.
    Raises ValueError for invalid lr / eps / betas / weight_decay / momentum_decay (PyTorch's
    messages), RuntimeError for ``differentiable`` (not supported by ember) and for sparse gradients.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_like(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        self._check_unsupported(None, differentiable, name="NAdam")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            capturable = group["capturable"] or _compiling()
            lr = _hyper(group["lr"], capturable)
            beta1, beta2 = (_value(b) for b in group["betas"])
            eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
            momentum_decay, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
            params, grads = self._grads(group, "NAdam")
            for p, g in zip(params, grads):
                st = state[p]
                if not st:
                    dev = p.device if capturable else None
                    st["step"] = _step_tensor(dev)
                    st["mu_product"] = _step_tensor(dev).fill_(1.0)
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                exp_avg, exp_avg_sq, mu_product, step_t = st["exp_avg"], st["exp_avg_sq"], st["mu_product"], \
                    st["step"]
                if capturable:
                    _check_capturable(p, mu_product, step_t, what="params, mu_products and state_steps")
                if maximize:
                    g = -g
                step_t.add_(1)
                if capturable:
                    self._capturable_update(p, g, exp_avg, exp_avg_sq, mu_product, step_t, lr, beta1, beta2, eps,
                                            wd, momentum_decay, decoupled)
                    continue
                step = step_t.item()
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        g = g.add(p, alpha=wd)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product.mul_(mu)
                mu_prod = mu_product.item()
                exp_avg.lerp_(g, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt()
                denom.add_(eps)
                p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - mu_prod))
                p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_prod * mu_next))
        return loss

    @staticmethod
    def _capturable_update(p, g, exp_avg, exp_avg_sq, mu_product, step_t, lr, beta1, beta2, eps, wd,
                           momentum_decay, decoupled):
        """The update with ``capturable=True``: mu, mu_next and the bias correction are 0-dim tensors
        computed from ``step_t`` on the parameter's device, in PyTorch's capturable order."""
        bias_correction2 = 1 - beta2 ** step_t
        if wd != 0:
            if decoupled:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step_t * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step_t + 1) * momentum_decay)))
        mu_product.mul_(mu)
        exp_avg.lerp_(g, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add(eps)
        mu_product_next = mu_product * mu_next
        p.addcdiv_(g * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
        p.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product_next)), denom)
