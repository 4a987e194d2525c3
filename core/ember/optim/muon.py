"""Muon: momentum orthogonalized by a Newton-Schulz iteration (matches torch.optim.Muon)."""
from __future__ import annotations

import math

import ember

from .._tensor import Tensor
from .optimizer import Optimizer, _value

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """An approximately orthogonal matrix U S' V^T (S' near 1) for the 2-D ``grad`` = U S V^T: ``ns_steps``
    quintic Newton-Schulz iterations X <- a X + (b A + c A A) X with A = X X^T, run in bfloat16 on the
    wider-than-tall orientation after scaling X to Frobenius norm 1 (Keller Jordan's Muon, as PyTorch).
    Returns a bfloat16 tensor of ``grad``'s shape. ValueError for ns_steps >= 100, a non-2-D grad or
    coefficients that are not three numbers (PyTorch's messages)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.bfloat16()
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        gram_update = ember.addmm(gram, gram, gram, beta=b, alpha=c)     # b A + c A A
        x = ember.addmm(x, gram_update, x, beta=a)                       # a X + (b A + c A A) X
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    """The learning rate scaled for a (A, B) matrix: sqrt(max(1, A / B)) ("original", Keller Jordan's,
    the default) or 0.2 * sqrt(max(A, B)) ("match_rms_adamw", Moonshot's: the update's RMS matches AdamW's)."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon, for the 2-D weights of hidden layers (matches torch.optim.Muon: the same operations in
    the same order, the orthogonalization in bfloat16 as PyTorch).

    Per parameter p (shape (A, B)) with gradient g::

        b = lerp(b, g, 1 - momentum)                        (momentum buffer, state 'momentum_buffer')
        u = lerp(g, b, momentum) if nesterov else b
        u = NS(u)                                           (``ns_steps`` Newton-Schulz iterations,
                                                             coefficients ``ns_coefficients``, bfloat16)
        p = p * (1 - lr * weight_decay)
        p = p - adjust_lr(lr, (A, B)) * u                   (see ``adjust_lr_fn``)

    Use another optimizer (e.g. AdamW) for biases, embeddings and other non-2-D parameters.
    Raises ValueError for a tensor lr with more than one element, lr < 0, momentum < 0,
    weight_decay < 0, an unknown ``adjust_lr_fn`` or a parameter that is not 2-D (PyTorch's
    messages; at step: a gradient that is not 2-D, ns_steps >= 100, coefficients not three);
    RuntimeError for complex parameters and sparse gradients.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= _value(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _value(group["lr"])
            wd, momentum, nesterov = group["weight_decay"], group["momentum"], group["nesterov"]
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                if g._layout.name != "strided":
                    raise RuntimeError("Muon does not support sparse gradients")
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = ember.zeros_like(g)
                if g.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf = st["momentum_buffer"]
                buf.lerp_(g, 1 - momentum)
                update = g.lerp(buf, momentum) if nesterov else buf
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
                p.mul_(1 - lr * wd)
                p.add_(update, alpha=-_adjust_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss
