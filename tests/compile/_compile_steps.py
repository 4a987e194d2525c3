"""The small training step the ember.compile tests compare compiled and eager runs on."""
from __future__ import annotations

import ember
import ember.nn as nn


def mlp_step(seed=0, opt="SGD", dtype=ember.float64, dropout=0.0, **opt_kw):
    """(model, optimizer, step): an 8-16-3 MLP with ``opt`` (lr 0.05); ``step(x, y)`` zeroes the grads, runs
    forward, cross entropy, backward and the optimizer step, and returns the loss."""
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3)).to(dtype)
    optim = getattr(ember.optim, opt)(model.parameters(), lr=0.05, **opt_kw)

    def step(x, y):
        optim.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        return loss
    return model, optim, step


def assert_same_state(m1, m2):
    """Parameters, .grad and version counters of two models equal, bit for bit (on any device)."""
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert ember.equal(p.cpu(), q.cpu())
        assert (p.grad is None) == (q.grad is None)
        if p.grad is not None:
            assert ember.equal(p.grad.cpu(), q.grad.cpu())
        assert p._version == q._version


def batches(n=5, dtype=ember.float64, seed=1):
    """``n`` (x (12, 8), y (12,) in 0..2) batches from a seeded generator."""
    g = ember.Generator().manual_seed(seed)
    return [(ember.randn(12, 8, generator=g, dtype=dtype), ember.randint(0, 3, (12,), generator=g))
            for _ in range(n)]
