"""ember-cpu's fuser (plugins/cpu/ember_cpu/fused.py): a run of elementwise nodes replayed as one generated function.

Each test compiles a function, replays it, and compares every result with the eager run bit for bit (the fuser
calls the eager kernels' own numpy functions), and checks from ``ember.profiler.compiled_graphs()`` whether the run
was fused (accepted) or replayed node by node (declined: a node whose eager kernel takes another path).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.compiler import _fusion

from _compile_steps import assert_same_state, batches, compiled_and_eager as _run, mlp_step, random_args as _args

FLOATS = [ember.float32, ember.float64]


def _same(a, b):
    a, b = a.detach().numpy(), b.detach().numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b, equal_nan=True), (a, b)


def test_the_fuser_is_registered():
    assert _fusion.find_fuser("cpu") is not None


CHAINS = {
    "unary and binary": lambda x, y: ((x * y).exp() + 1.5).sqrt() - y.abs(),
    "scalar constants": lambda x, y: (x * 0.3 - 2) / 7.0 + x.neg(),
    "in-place optimizer ops": lambda x, y: x.lerp_(y, 0.1).mul_(0.999).addcmul_(y, y, value=0.001).add_(1e-8),
    "lerp far end": lambda x, y: x.lerp_(y, 0.9).sub_(y),
    "addcdiv": lambda x, y: x.add(1).addcdiv_(y, x.abs() + 1, value=-0.01).relu(),
    "alpha": lambda x, y: x.add(y, alpha=0.25).sub_(y, alpha=3),
    "comparisons": lambda x, y: (x > y, (x * 2).le(y), x.maximum(y) - 1),
    "copy and fill": lambda x, y: (y.copy_(x * 3).add_(1), x.fill_(2.5).mul_(y)),
    "nan and inf": lambda x, y: ((x / 0.0) * y, (x.log() + 1) * 2),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(CHAINS))
def test_chains_fuse_and_match_eager_bit_for_bit(name, dtype):
    fn = CHAINS[name]
    got, want, row = _run(fn, _args(dtype))
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            _same(a, b)
    assert row["fused_kernels"] >= 1, row


def test_a_zero_dim_float64_operand_is_read_as_the_kernel_reads_it():
    """A 0-dim float64 tensor with a float32 one computes in float32, as a Python number (the optimizers' case)."""
    def fn(x, s):
        return (x.sqrt() / s + 1e-8) * s

    def make(i):
        g = ember.Generator().manual_seed(i)
        return [ember.rand(6, 4, generator=g), ember.tensor(1.0 - 0.999 ** (i + 1), dtype=ember.float64)]
    got, want, row = _run(fn, make)
    for g, w in zip(got, want):
        assert g[0].dtype is ember.float32
        _same(g[0], w[0])
    assert row["fused_kernels"] == 1


@pytest.mark.parametrize("case", ["float16", "mixed dtypes", "scalar first"])
def test_runs_it_cannot_reproduce_are_declined_and_replayed_plainly(case):
    if case == "float16":
        fn, make = (lambda x, y: (x + y) * 2), _args(ember.float16)
    elif case == "mixed dtypes":
        fn, make = (lambda x, y: (x > 0) * y + 1), _args(ember.float32)
    else:
        fn, make = (lambda x, y: (2 - x) * y), _args(ember.float32)
    got, want, row = _run(fn, make)
    for g, w in zip(got, want):
        _same(g[0], w[0])
    assert row["fused_kernels"] == 0 and row["kernel_launches"] == row["kernel_calls"], row


def _same_moments(m1, o1, m2, o2):
    for p, q in zip(m1.parameters(), m2.parameters()):
        for k in ("step", "exp_avg", "exp_avg_sq"):
            _same(o1.state[p][k], o2.state[q][k])


def _adam_compiled_and_eager(dtype, steps, **kw):
    """The MLP step with Adam(**kw) compiled and eager side by side for ``steps`` batches: losses, parameters,
    .grad, versions and the optimizer's state equal bit for bit; returns the compiled step."""
    m1, o1, eager = mlp_step(opt="Adam", dtype=dtype, **kw)
    m2, o2, step = mlp_step(opt="Adam", dtype=dtype, **kw)
    c = ember.compile(step)
    for x, y in batches(steps, dtype=dtype):
        _same(c(x, y), eager(x, y).detach())
        assert_same_state(m1, m2)
    _same_moments(m1, o1, m2, o2)
    return c


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_an_adam_step_replays_bit_identical_with_its_runs_fused(dtype):
    """The MLP step with Adam: its flat update and the step counts are fused; parameters, .grad, optimizer state
    and version counters after each replay are eager's, bit for bit."""
    c = _adam_compiled_and_eager(dtype, 6)
    row = [r for r in c._compiled.info() if r["replays"]][0]
    # the step counts, and the flat moment updates over all four parameters (Adam._flat_update)
    assert row["fused_kernels"] >= 2, row


@pytest.mark.parametrize("kw", [{"weight_decay": 0.1}, {"maximize": True}, {"weight_decay": 0.1,
                                                                           "decoupled_weight_decay": True}],
                         ids=["L2", "maximize", "AdamW"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adam_flat_update_matches_eager_with_its_options(kw, dtype):
    _adam_compiled_and_eager(dtype, 5, **kw)


def test_adam_flat_update_with_step_counts_that_differ_and_a_reloaded_state():
    """A parameter without a gradient for a while lags in step count (its bias correction differs: the flat update
    spreads per-parameter values); after load_state_dict the moments are laid out again. Bit for bit with eager."""
    import ember.nn as nn
    dtype = ember.float64

    def make():
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(dtype)
        opt = ember.optim.Adam(model.parameters(), lr=0.05)

        def step(x, y, freeze):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            if freeze:
                model[0].bias.grad = None
            opt.step()
            return loss
        return model, opt, step
    m1, o1, eager = make()
    m2, o2, step = make()
    c = ember.compile(step)
    data = batches(10, dtype=dtype)
    for i, (x, y) in enumerate(data):
        freeze = i < 3
        if i == 6:      # a reloaded state: new state tensors, laid out again on the next compiled call
            sd = o2.state_dict()
            o2.load_state_dict(sd)
        _same(c(x, y, freeze), eager(x, y, freeze).detach())
        assert_same_state(m1, m2)
    assert o1.state[m1[0].bias]["step"].item() == 7 and o1.state[m1[0].weight]["step"].item() == 10
    _same_moments(m1, o1, m2, o2)
