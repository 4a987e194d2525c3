"""Rprop: resilient backpropagation (matches torch.optim.Rprop)."""
from __future__ import annotations

import ember

from .optimizer import Optimizer, _value, _step_tensor, _check_capturable, _compiling

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop (matches torch.optim.Rprop; PyTorch's single-tensor algorithm, the same
    operations in the same order, so float64 results are bit-identical to PyTorch's cpu).

    Per parameter with gradient g (``-g`` when ``maximize``), elementwise::

        s = sign(g * g_prev)
        step_size = clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 if s == 0),
                          step_sizes[0], step_sizes[1])
        g = 0 where s < 0                   (a sign change: no move, forget the gradient)
        p = p - sign(g) * step_size;  g_prev = g

    State per parameter: ``'step'`` (0-dim float tensor), ``'prev'``, ``'step_size'`` (starts
    at lr). ``capturable=True`` keeps ``'step'`` on the parameter's device and replaces the masked
    writes (which need the mask's size on the host) by ``where`` (as PyTorch); AssertionError (as
    PyTorch) when a capturable step meets a parameter on cpu.
    Raises ValueError for a negative lr and "Invalid eta values: a, b" unless
    0 < etaminus < 1 < etaplus (PyTorch's messages), RuntimeError for ``differentiable`` (not
    supported by ember) and for sparse gradients.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if not 0.0 <= _value(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        self._check_unsupported(None, differentiable, name="Rprop")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
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
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            maximize, capturable = group["maximize"], group["capturable"] or _compiling()
            params, grads = self._grads(group, "Rprop")
            for p, g in zip(params, grads):
                st = state[p]
                if not st:
                    st["step"] = _step_tensor(p.device if capturable else None)
                    st["prev"] = ember.zeros_like(p)
                    st["step_size"] = ember.full_like(g, _value(group["lr"]))
                prev, step_size = st["prev"], st["step_size"]
                if capturable:
                    _check_capturable(p, st["step"])
                if maximize:
                    g = -g
                st["step"].add_(1)
                sign = g.mul(prev).sign()
                if capturable:
                    sign.copy_(ember.where(sign.gt(0), etaplus, sign))
                    sign.copy_(ember.where(sign.lt(0), etaminus, sign))
                    sign.copy_(ember.where(sign.eq(0), 1, sign))
                    step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                    g = ember.where(sign.eq(etaminus), 0, g)
                    p.addcmul_(g.sign(), step_size, value=-1)
                    prev.copy_(g)
                    continue
                sign[sign.gt(0)] = etaplus
                sign[sign.lt(0)] = etaminus
                sign[sign.eq(0)] = 1
                step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                g = g.clone()
                g[sign.eq(etaminus)] = 0
                p.addcmul_(g.sign(), step_size, value=-1)
                prev.copy_(g)
        return loss
