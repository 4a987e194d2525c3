"""The small training step the ember.compile tests compare compiled and eager runs on."""
from __future__ import annotations

import ember
import ember.nn as nn


def training_step(model, optim):
    """``step(x, y)``: zero the grads, forward, cross entropy, backward, the optimizer step; returns the loss."""
    def step(x, y):
        optim.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        return loss
    return step


def mlp_step(seed=0, opt="SGD", dtype=ember.float64, dropout=0.0, **opt_kw):
    """(model, optimizer, step): an 8-16-3 MLP with ``opt`` (lr 0.05); ``step(x, y)`` zeroes the grads, runs
    forward, cross entropy, backward and the optimizer step, and returns the loss."""
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3)).to(dtype)
    optim = getattr(ember.optim, opt)(model.parameters(), lr=0.05, **opt_kw)

    return model, optim, training_step(model, optim)


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


def graph_row(compiled):
    """The profiler row of the one graph of ``compiled`` that replayed."""
    rows = [r for r in compiled._compiled.info() if r["replays"]]
    assert len(rows) == 1, compiled._compiled.info()
    return rows[0]


def device_mlp(dev, optim, dtype=ember.float32):
    """(model, step): the benchmark's MLP 64-128-10 on ``dev`` with Adam (lr 1e-3) or SGD (lr 0.1, momentum 0.9);
    ``step(x, y)`` runs zero_grad, forward, cross entropy, backward and the optimizer step (``step.opt``)."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device=dev, dtype=dtype)
    opt = (ember.optim.Adam(model.parameters(), lr=1e-3) if optim == "adam"
           else ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

    step = training_step(model, opt)
    step.opt = opt
    return model, step


def same_values(a, b, rtol):
    """Whether two tensors (on any devices) are equal bit for bit (``rtol=0``) or within ``rtol`` and ``atol=rtol``."""
    a, b = a.detach().cpu(), b.detach().cpu()
    if rtol == 0:
        return bool(ember.equal(a, b))
    return bool(ember.allclose(a, b, rtol=rtol, atol=rtol))


def compare_device_mlp(dev, optim, dtype=ember.float32, steps=6, rtol=0):
    """Compiled and eager steps side by side: loss, parameters, .grad and optimizer state after every step,
    bit for bit (``rtol=0``) or within ``rtol``."""
    m1, eager = device_mlp(dev, optim, dtype)
    m2, step = device_mlp(dev, optim, dtype)
    c = ember.compile(step)
    g = ember.Generator().manual_seed(5)
    for _ in range(steps):
        x = ember.randn(64, 64, generator=g, dtype=dtype).to(dev)
        y = ember.randint(0, 10, (64,), generator=g).to(dev)
        assert same_values(c(x, y), eager(x, y), rtol)
        for p, q in zip(m1.parameters(), m2.parameters()):
            assert same_values(p, q, rtol)
            assert same_values(p.grad, q.grad, rtol)
            if optim == "sgd" and rtol == 0:   # (Adam's capturable path under compile writes a parameter once)
                assert p._version == q._version
            s1, s2 = eager.opt.state[p], step.opt.state[q]
            assert sorted(s1) == sorted(s2)
            for k in s1:
                if isinstance(s1[k], ember.Tensor):
                    assert same_values(s1[k].to(s2[k].dtype), s2[k], rtol), k
    return graph_row(c)


def compiled_and_eager(fn, make_args, replays=3):
    """``fn`` compiled and eager side by side on ``make_args(i)`` for 2 + ``replays`` calls (each gets clones):
    (compiled results per call, eager results per call - each a tuple - and the profiler row of the one graph)."""
    c = ember.compile(fn)
    got, want = [], []
    for i in range(2 + replays):
        args = make_args(i)
        r1, r2 = c(*[a.clone() for a in args]), fn(*[a.clone() for a in args])
        got.append(r1 if isinstance(r1, tuple) else (r1,))
        want.append(r2 if isinstance(r2, tuple) else (r2,))
    return got, want, graph_row(c)


def random_args(dtype, n=2, shape=(5, 7), device="cpu"):
    """``make_args(i)``: ``n`` standard normal tensors of ``shape`` and ``dtype`` on ``device``, seeded by ``i``."""
    def make(i):
        g = ember.Generator().manual_seed(i)
        return [ember.randn(*shape, generator=g).to(device=device, dtype=dtype) for _ in range(n)]
    return make
