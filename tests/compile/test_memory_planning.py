"""ember.compile's memory planning (docs/compile.md, "Memory plan"): a captured graph's intermediates share
buffers by liveness; replays stay bit-identical to eager, and tensors held outside the graph keep their own
memory."""
from __future__ import annotations

import ember
import ember.nn as nn
import pytest
from _compile_steps import assert_same_state, batches, mlp_step


@pytest.fixture
def planning():
    was = ember.compiler.config.memory_planning
    yield
    ember.compiler.config.memory_planning = was


def _plan(compiled):
    return max(compiled._compiled.info(), key=lambda r: (r["replays"], r["calls"]))["memory_plan"]


def _devices():
    out = ["cpu"]
    for d in ("vdev:0", "opencl:0"):
        try:
            ember.empty(1, device=d)
            out.append(d)
        except Exception:       # noqa: BLE001 - a plugin that is not installed, or no OpenCL runtime
            pass
    return out


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_intermediates_share_buffers_and_replays_stay_bit_identical(opt, device, planning):
    ember.compiler.config.memory_planning = True
    dtype = ember.float32 if device.startswith("opencl") else ember.float64
    m1, _, eager = mlp_step(opt=opt, dtype=dtype)
    m2, _, step = mlp_step(opt=opt, dtype=dtype)
    m1.to(device)
    m2.to(device)
    compiled = ember.compile(step)
    for x, y in batches(6, dtype=dtype):
        x, y = x.to(device), y.to(device)
        assert ember.equal(eager(x, y).cpu(), compiled(x, y).cpu())
        assert_same_state(m1, m2)
    assert all(p.grad is not None for p in m2.parameters())
    plan = _plan(compiled)
    assert plan["planned"] > plan["buffers"] > 0, plan
    assert plan["bytes_after"] < plan["bytes_before"], plan


def test_planning_lowers_the_memory_a_captured_step_keeps(planning):
    kept = {}
    for on in (False, True):
        ember.compiler.config.memory_planning = on
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
        opt = ember.optim.Adam(model.parameters())
        x, y = ember.randn(128, 64), ember.randint(0, 10, (128,))

        @ember.compile
        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        base = ember.memory.memory_allocated("cpu")
        for _ in range(4):
            step(x, y)
        kept[on] = ember.memory.memory_allocated("cpu") - base
        plan = _plan(step)
        assert (plan is None) == (not on)
        del step, model, opt
    assert kept[True] < kept[False] - plan["bytes_before"] // 2, (kept, plan)


def test_an_intermediate_held_by_python_or_through_a_view_keeps_its_memory(planning):
    ember.compiler.config.memory_planning = True
    keep = {}

    def f(x):
        h = (x * 2).exp()
        keep["h"] = h                     # held outside the graph
        v = (x + 1).sin()
        keep["row"] = v[0]                # a view held outside: its base must not move
        return (h.sum() + v.sum() + (x - 3).cos().sum()).reshape(1)

    def expected(x):
        return ((x * 2).exp().sum() + (x + 1).sin().sum() + (x - 3).cos().sum()).reshape(1)

    compiled = ember.compile(f)
    for _ in range(5):
        x = ember.randn(4, 3, dtype=ember.float64)
        assert ember.equal(compiled(x), expected(x))
        assert ember.equal(keep["h"], (x * 2).exp())
        assert ember.equal(keep["row"], (x + 1).sin()[0])
    plan = _plan(compiled)
    assert plan["planned"] >= 1          # (x - 3).cos() and the sums are intermediates


def test_switched_off_by_config(planning):
    ember.compiler.config.memory_planning = False
    m, _, step = mlp_step()
    compiled = ember.compile(step)
    for x, y in batches(4):
        compiled(x, y)
    assert _plan(compiled) is None
