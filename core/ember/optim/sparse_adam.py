"""SparseAdam: Adam restricted to the entries a sparse gradient specifies (matches torch.optim.SparseAdam)."""
from __future__ import annotations

import math

import ember

from .optimizer import Optimizer, _value

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Masked Adam for dense parameters with sparse COO gradients (matches torch.optim.SparseAdam;
    the same operations in the same order as PyTorch's ``sparse_adam``, so float64 results are
    bit-identical to PyTorch's cpu).

    Per parameter whose gradient g is a sparse COO tensor (``-g`` when ``maximize``), coalesced,
    at step t, only at the positions g specifies (every specified entry counts, zero or not)::

        m = m + (1 - beta1) * (g - m);  v = v + (1 - beta2) * (g * g - v)
        p = p - lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + eps)

    The other entries of p, m and v are untouched. A gradient with no specified entries
    still counts a step. State per parameter: ``'step'`` (a Python int, as PyTorch),
    ``'exp_avg'``, ``'exp_avg_sq'``.

    Sparse gradients come from ember-sparse (``ember.sparse_coo_tensor`` / ``dense.to_sparse()``
    assigned to ``p.grad``); ember's ``nn.Embedding(sparse=True)`` still produces dense
    gradients, which this optimizer refuses.

    Raises ValueError for lr <= 0, eps <= 0, betas outside [0, 1), for sparse or complex
    parameters (PyTorch's messages); RuntimeError "SparseAdam does not support dense gradients,
    please consider Adam instead" for a strided gradient.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < _value(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_sparse:
                    sparse_params.append([index, d_index])
                if p.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            eps, maximize, lr = group["eps"], group.get("maximize", False), _value(group["lr"])
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if not g.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                st = state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = ember.zeros_like(p)
                    st["exp_avg_sq"] = ember.zeros_like(p)
                st["step"] += 1
                self._update(p, -g if maximize else g, st, lr, beta1, beta2, eps)
        return loss

    @staticmethod
    def _update(p, g, st, lr, beta1, beta2, eps):
        g = g.coalesce()                      # the update is not linear: one entry per position
        values = g._values()
        if values.numel() == 0:
            return
        indices = g._indices()
        at = tuple(indices[d] for d in range(indices.shape[0]))    # the specified rows (sparse dims)
        exp_avg, exp_avg_sq, step = st["exp_avg"], st["exp_avg_sq"], st["step"]
        old_m = exp_avg[at]
        m_update = values.sub(old_m).mul_(1 - beta1)
        exp_avg[at] = old_m.add(m_update)
        old_v = exp_avg_sq[at]
        v_update = values.pow(2).sub_(old_v).mul_(1 - beta2)
        exp_avg_sq[at] = old_v.add(v_update)
        numer = m_update.add_(old_m)
        denom = v_update.add_(old_v).sqrt_().add_(eps)
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        p[at] = p[at].add(numer.div_(denom).mul_(-step_size))
