"""SGD: stochastic gradient descent with momentum, dampening, Nesterov and weight decay (matches torch.optim.SGD)."""
from __future__ import annotations

from .optimizer import Optimizer, _value

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (matches torch.optim.SGD; PyTorch's single-tensor algorithm,
    the same operations in the same order, so float64 results are bit-identical to PyTorch's cpu).

    Per parameter with gradient g (``-g`` when ``maximize``)::

        g = g + weight_decay * p                               (if weight_decay != 0)
        b = g (first step), else b = momentum * b + (1 - dampening) * g      (if momentum != 0)
        g = g + momentum * b if nesterov else b
        p = p - lr * g

    State per parameter: ``'momentum_buffer'`` (when momentum != 0).
    ``differentiable=True`` (PyTorch's meaning): the step runs with grad enabled, so a parameter that is
    a non-leaf tensor (or gradients that require grad) carry the update into the autograd graph.
    Raises ValueError for a negative lr / momentum / weight_decay, and
    "Nesterov momentum requires a momentum and zero dampening"; RuntimeError for sparse gradients.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if _value(lr) < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._check_fused(fused, foreach, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr = _value(group["lr"])
            wd, momentum, dampening = group["weight_decay"], group["momentum"], group["dampening"]
            nesterov, maximize = group["nesterov"], group["maximize"]
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if g._layout.name != "strided":
                    raise RuntimeError("SGD does not support sparse gradients")
                if maximize:
                    g = -g
                if wd != 0:
                    g = g.add(p, alpha=wd)
                if momentum != 0:
                    st = state[p]
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        buf = st["momentum_buffer"] = g.clone().detach()
                    else:
                        buf.mul_(momentum).add_(g, alpha=1 - dampening)
                    g = g.add(buf, alpha=momentum) if nesterov else buf
                p.add_(g, alpha=-lr)
        return loss
