"""ember.compile's fusion through a device hook (docs/compile.md "Fusion", core/ember/compiler/_fusion.py).

- a reference fuser on the cpu (numpy, below) proves the contract: what the runs look like, which tensors
  must be stored, and that a replay that calls the fused callables gives eager's values (float32: within
  rtol 1e-6 / atol 1e-7 - numpy's rounding of ``a + alpha * b`` may differ from ember-cpu's by an ulp);
- vdev has no fuser: plain replay, bit for bit;
- ember-opencl's fuser (one generated kernel per run) gives eager's values bit for bit (float32 and float64)
  and cuts the MLP step's kernel launches.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import _registry
from ember.compiler import _fusion


# ---------------------------------------------------------------- a reference fuser (numpy)
def _np_op(op, xs, scalars):
    a = xs
    if op == "add":
        return a[0] + scalars.get("alpha", 1) * a[1] if scalars.get("alpha", 1) != 1 else a[0] + a[1]
    if op == "sub":
        return a[0] - scalars.get("alpha", 1) * a[1] if scalars.get("alpha", 1) != 1 else a[0] - a[1]
    simple = {"mul": np.multiply, "true_divide": np.true_divide, "eq": np.equal, "lt": np.less, "gt": np.greater,
              "bitwise_or": np.bitwise_or, "bitwise_and": np.bitwise_and, "maximum": np.maximum,
              "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "neg": np.negative, "abs": np.abs}
    if op in simple:
        return simple[op](*a)
    if op == "relu":
        return np.maximum(a[0], 0)
    if op == "where":
        return np.where(a[0], a[1], a[2])
    if op == "copy":
        return a[0]
    raise KeyError(op)


class ReferenceFuser:
    """Evaluates a run with numpy temporaries; stores only the slots marked ``store``. Records what it got."""

    def __init__(self, decline=False):
        self.subgraphs, self.calls, self.decline = [], 0, decline

    def __call__(self, sub):
        self.subgraphs.append(sub)
        if self.decline or any(n.op not in _SUPPORTED for n in sub.nodes):
            return None

        def fused(*tensors):
            self.calls += 1
            arrays = [t.numpy(force=True) for t in tensors]     # cpu: views of their memory
            vals = {k: arrays[k].copy() for k, s in enumerate(sub.slots) if s.load}
            for n in sub.nodes:
                xs = [x.value if isinstance(x, _fusion.Constant) else vals[x] for x in n.inputs]
                if n.op == "fill":
                    r = n.scalars["value"]
                else:
                    r = _np_op(n.op, xs, n.scalars)
                vals[n.out] = np.asarray(r).astype(arrays[n.out].dtype, copy=False)
            for k, s in enumerate(sub.slots):
                if s.store:
                    arrays[k][...] = vals[k]
        return fused


_SUPPORTED = {"add", "sub", "mul", "true_divide", "eq", "lt", "gt", "bitwise_or", "bitwise_and", "maximum", "exp",
              "log", "sqrt", "neg", "abs", "relu", "where", "copy", "fill"}


@pytest.fixture
def cpu_fuser():
    f = ReferenceFuser()
    undo = _registry.register_fuser("cpu", f)
    try:
        yield f
    finally:
        undo()


def _graph_row(compiled):
    rows = [r for r in compiled._compiled.info() if r["replays"]]
    assert len(rows) == 1, compiled._compiled.info()
    return rows[0]


# ---------------------------------------------------------------- the contract, on the cpu
def test_a_chain_becomes_one_call_and_its_intermediates_are_not_stored(cpu_fuser):
    def f(x, y):
        return ((x * 2.0 + y).exp() - y).sqrt()

    c = ember.compile(f)
    g = ember.Generator().manual_seed(0)
    for _ in range(4):
        x, y = ember.rand(5, 7, generator=g), ember.rand(5, 7, generator=g)
        got = c(x, y)
        np.testing.assert_allclose(got.numpy(), f(x, y).numpy(), rtol=1e-6, atol=1e-7)
    row = _graph_row(c)
    assert row["fused_kernels"] == 1 and row["kernel_launches"] == 1 and row["kernel_calls"] == 5, row
    assert cpu_fuser.calls == row["replays"]
    sub = cpu_fuser.subgraphs[-1]
    assert [n.op for n in sub.nodes] == ["mul", "add", "exp", "sub", "sqrt"]
    assert sub.shape == (5, 7) and sub.numel == 35
    assert isinstance(sub.nodes[0].inputs[1], _fusion.Constant) and sub.nodes[0].inputs[1].value == 2.0
    stored = [s for s in sub.slots if s.store]
    assert len(stored) == 1 and stored[0].written and not stored[0].load     # only the result reaches memory
    loaded = [s for s in sub.slots if s.load]
    assert len(loaded) == 2 and not any(s.written for s in loaded)          # x and y (static inputs)


def test_a_tensor_read_after_the_run_is_stored(cpu_fuser):
    def f(x):
        t = x * 3.0
        u = t + 1.0
        return u, t.sum()

    c = ember.compile(f)
    x = ember.arange(12.0).reshape(3, 4)
    for _ in range(4):
        u, s = c(x)
    assert ember.equal(u, x * 3.0 + 1.0) and s.item() == (x * 3.0).sum().item()
    sub = cpu_fuser.subgraphs[-1]
    assert [n.op for n in sub.nodes] == ["mul", "add"]
    t_slot = sub.slots[sub.nodes[0].out]
    assert t_slot.store, sub                       # the sum after the run reads it


def test_an_intermediate_held_by_python_is_stored(cpu_fuser):
    keep = {}

    def f(x):
        t = x * 2.0
        keep["t"] = t               # held outside the graph: a replay must still write it
        return t + 1.0

    c = ember.compile(f)
    for k in range(5):
        x = ember.full((4,), float(k))
        assert ember.equal(c(x), x * 2.0 + 1.0)
        assert ember.equal(keep["t"], x * 2.0)
    assert _graph_row(c)["fused_kernels"] == 1
    sub = cpu_fuser.subgraphs[-1]
    assert sub.slots[sub.nodes[0].out].store


def test_an_alias_of_an_intermediate_that_is_returned_is_stored(cpu_fuser):
    def f(x):
        t = x * 2.0
        d = t.detach()              # another tensor object on the same memory, returned
        d.add_(1.0)
        return d

    c = ember.compile(f)
    for k in range(5):
        x = ember.full((4,), float(k))
        assert ember.equal(c(x), x * 2.0 + 1.0)
    assert _graph_row(c)["fused_kernels"] == 1


def test_in_place_updates_of_state_are_stored_and_versions_match_eager(cpu_fuser):
    buf1, buf2 = ember.zeros(6), ember.zeros(6)

    def make(buf):
        def f(x):
            buf.mul_(0.5)
            buf.add_(x, alpha=2.0)
            return buf.sum()
        return f

    eager, c = make(buf1), ember.compile(make(buf2))
    for k in range(5):
        x = ember.full((6,), float(k))
        a, b = eager(x), c(x)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)
        np.testing.assert_allclose(buf2.numpy(), buf1.numpy(), rtol=1e-6)
        assert buf1._version == buf2._version
    assert _graph_row(c)["fused_kernels"] == 1
    assert all(s.store for s in cpu_fuser.subgraphs[-1].slots if s.written)


def test_zero_dim_and_python_scalars_are_broadcast_operands(cpu_fuser):
    def f(x, s):
        return (x * s + 1) * x

    c = ember.compile(f)
    x = ember.rand(4, 3)
    for v in (1.5, 2.5, -1.0, 4.0):
        s = ember.tensor(v)
        np.testing.assert_allclose(c(x, s).numpy(), f(x, s).numpy(), rtol=1e-6)
    sub = cpu_fuser.subgraphs[-1]
    assert any(sl.scalar and sl.load for sl in sub.slots)


def test_a_zero_dim_result_of_scalars_joins_a_larger_run(cpu_fuser):
    def f(x, s):
        t = s * 2.0                  # 0-dim, computed once per element from scalars only
        return x * t + t

    c = ember.compile(f)
    x = ember.rand(4, 3)
    for v in (1.0, 2.0, 3.0, -4.0):
        s = ember.tensor(v)
        np.testing.assert_allclose(c(x, s).numpy(), f(x, s).numpy(), rtol=1e-6)
    assert _graph_row(c)["fused_kernels"] == 1 and _graph_row(c)["kernel_launches"] == 1
    sub = cpu_fuser.subgraphs[-1]
    assert sub.shape == (4, 3)
    t_slot = sub.slots[sub.nodes[0].out]
    assert t_slot.scalar and t_slot.written and not t_slot.store


def test_a_zero_dim_counter_read_then_written_is_not_spread_over_a_run(cpu_fuser):
    def f(x, c):
        c.add_(1.0)                  # every element would read the counter: it stays out of the larger run
        return x * c

    comp = ember.compile(f)
    x = ember.ones(5)
    c1, c2 = ember.zeros(()), ember.zeros(())
    for _ in range(5):
        assert ember.equal(comp(x, c2), f(x, c1)) and ember.equal(c1, c2)
    assert _graph_row(comp)["fused_kernels"] == 0


def test_read_only_views_of_one_memory_share_a_run(cpu_fuser):
    def f(x, v):
        return x * v[0] + v[1]

    c = ember.compile(f)
    x = ember.rand(6)
    for k in range(4):
        v = ember.tensor([1.0 + k, 2.0 - k])
        np.testing.assert_allclose(c(x, v).numpy(), f(x, v).numpy(), rtol=1e-6)
    assert _graph_row(c)["fused_kernels"] == 1


def test_views_of_one_memory_in_another_layout_end_a_run(cpu_fuser):
    def f(x):
        a = x * 2.0
        b = a.t() + 1.0             # a transposed view: not contiguous, not fused with the mul
        return b * 3.0

    c = ember.compile(f)
    x = ember.rand(3, 3)
    for _ in range(4):
        np.testing.assert_allclose(c(x).numpy(), f(x).numpy(), rtol=1e-6)
    assert _graph_row(c)["fused_kernels"] == 0


def test_mlp_training_step_with_the_reference_fuser_matches_eager(cpu_fuser):
    def build():
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return model, step
    m1, eager = build()
    m2, step = build()
    c = ember.compile(step)
    g = ember.Generator().manual_seed(3)
    for _ in range(6):
        x, y = ember.randn(8, 16, generator=g), ember.randint(0, 4, (8,), generator=g)
        np.testing.assert_allclose(c(x, y).detach().numpy(), eager(x, y).detach().numpy(), rtol=1e-6, atol=1e-7)
        for p, q in zip(m1.parameters(), m2.parameters()):
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)
            assert p._version == q._version
    row = _graph_row(c)
    assert row["fused_kernels"] > 0 and row["kernel_launches"] < row["kernel_calls"], row


def test_a_fuser_that_declines_leaves_plain_replay():
    f = ReferenceFuser(decline=True)
    undo = _registry.register_fuser("cpu", f)
    try:
        c = ember.compile(lambda x: (x + 1) * 2)
        x = ember.ones(3)
        for _ in range(4):
            assert ember.equal(c(x), ember.full((3,), 4.0))
    finally:
        undo()
    assert f.subgraphs
    row = _graph_row(c)
    assert row["fused_kernels"] == 0 and row["kernel_launches"] == row["kernel_calls"] == 2


def test_fusion_can_be_switched_off(cpu_fuser):
    ember.compiler.config.fusion = False
    try:
        c = ember.compile(lambda x: (x + 1) * 2)
        for _ in range(4):
            c(ember.ones(3))
    finally:
        ember.compiler.config.fusion = True
    assert not cpu_fuser.subgraphs and _graph_row(c)["fused_kernels"] == 0


def test_a_plugin_hook_can_fuse_for_a_device_without_a_registered_fuser():
    import types
    pytest.importorskip("ember_vdev")
    ref = ReferenceFuser()
    hookimpl = ember.plugins.hookimpl
    plugin = types.SimpleNamespace(
        ember_plugin_info=hookimpl(lambda: {"name": "fusetest", "version": "0", "api_version": "1.1"}),
        ember_fuse=hookimpl(lambda device_type, subgraph: ref(subgraph) if device_type == "vdev" else None))
    assert _fusion.find_fuser("vdev") is None
    ember.plugins.register(plugin, name="fusetest")
    try:
        assert _fusion.find_fuser("vdev") is not None
        c = ember.compile(lambda x: (x + 1) * 2)
        for _ in range(4):
            assert ember.equal(c(ember.ones(3, device="vdev")).cpu(), ember.full((3,), 4.0))
    finally:
        ember.plugins.unregister("fusetest")
    assert _fusion.find_fuser("vdev") is None
    assert ref.calls >= 2 and _graph_row(c)["fused_kernels"] == 1


def test_register_fuser_errors():
    with pytest.raises(TypeError, match="callable"):
        _registry.register_fuser("cpu", 3)
    with pytest.raises(RuntimeError, match="not available"):
        _registry.register_fuser("nosuchdevice", lambda sub: None)
    from ember.library import Registry
    reg = Registry("someplugin", provides={"device_types": ["mydev"]}, package="ember-someplugin")
    with pytest.raises(RuntimeError, match="not its own"):
        reg.register_fuser("cpu", lambda sub: None)


# ---------------------------------------------------------------- devices
def _device_mlp(dev, optim, dtype=ember.float32):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device=dev, dtype=dtype)
    opt = (ember.optim.Adam(model.parameters(), lr=1e-3) if optim == "adam"
           else ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, step


def _compare_mlp(dev, optim, dtype=ember.float32, steps=6):
    m1, eager = _device_mlp(dev, optim, dtype)
    m2, step = _device_mlp(dev, optim, dtype)
    c = ember.compile(step)
    g = ember.Generator().manual_seed(5)
    for _ in range(steps):
        x = ember.randn(64, 64, generator=g, dtype=dtype).to(dev)
        y = ember.randint(0, 10, (64,), generator=g).to(dev)
        assert ember.equal(c(x, y).cpu(), eager(x, y).cpu())           # bit for bit
        for p, q in zip(m1.parameters(), m2.parameters()):
            assert ember.equal(p.detach().cpu(), q.detach().cpu())
            assert ember.equal(p.grad.cpu(), q.grad.cpu())
            if optim == "sgd":      # (Adam's capturable path under compile writes a parameter once, eager twice)
                assert p._version == q._version
    return _graph_row(c)


def test_vdev_has_no_fuser_and_replays_plainly():
    pytest.importorskip("ember_vdev")
    assert _fusion.find_fuser("vdev") is None
    row = _compare_mlp("vdev", "sgd", steps=4)
    assert row["fused_kernels"] == 0 and row["kernel_launches"] == row["kernel_calls"], row


def _opencl():
    pytest.importorskip("ember_opencl")
    if not ember.opencl.is_available():
        pytest.skip("no OpenCL device")


@pytest.mark.parametrize("optim", ["sgd", "adam"])
def test_opencl_fused_mlp_step_is_bit_identical_to_eager(optim):
    _opencl()
    row = _compare_mlp("opencl", optim)
    assert row["fused_kernels"] >= 8, row
    assert row["kernel_launches"] <= row["kernel_calls"] * 0.6, row      # 123 -> 51 (SGD), 187 -> 64 (Adam)


def test_opencl_fused_float64():
    _opencl()
    from ember_opencl._codegen import state_of
    if not state_of(ember.zeros(1, device="opencl")).fp64:
        pytest.skip("the OpenCL device has no cl_khr_fp64")
    row = _compare_mlp("opencl", "adam", dtype=ember.float64, steps=4)
    assert row["fused_kernels"] >= 8, row


def test_opencl_fused_kernel_is_one_launch_and_cached_by_signature():
    _opencl()
    from ember_opencl.kernels import fused as fz
    seen = []
    orig = fz.fuse

    def spy(sub):
        f = orig(sub)
        seen.append(f)
        return f
    undo = _registry.register_fuser("opencl", spy)
    try:
        def f(a, b):
            return ((a * 0.5 + b).exp() / (b + 1.0)).sqrt()
        c = ember.compile(f)
        for shape in [(33,), (4, 9)]:              # two signatures: one kernel source serves both
            a, b = ember.rand(*shape).to("opencl"), ember.rand(*shape).to("opencl")
            for _ in range(4):
                got = c(a, b)
            assert ember.equal(got.cpu(), f(a, b).cpu())
    finally:
        undo()
    assert len(seen) == 2 and all(s is not None for s in seen)
    assert seen[0].source == seen[1].source and seen[0].source.count("__kernel") == 1
    rows = [r for r in c._compiled.info() if r["replays"]]
    assert all(r["fused_kernels"] == 1 and r["kernel_launches"] == 1 for r in rows), rows


def test_a_dtype_reinterpreting_view_ends_a_fused_run():
    """frexp / nextafter read a tensor's bits through view(int); a fused run once kept one slot for both views
    of the memory (keyed without the dtype), giving reinterpreted garbage on opencl's 0-dim samples."""
    pytest.importorskip("ember_opencl")
    import ember
    if not ember.opencl.is_available():
        pytest.skip(f"no usable OpenCL device: {ember.opencl.unavailable_reason()}")
    for dt in (ember.float32, ember.float64):
        x = ember.tensor(3.4398534, dtype=dt, device="opencl")
        y = ember.tensor(-1.0, dtype=dt, device="opencl")
        eager_m, eager_e = ember.frexp(x)
        eager_n = ember.nextafter(x, y)
        f = ember.compile(lambda a, b: (ember.frexp(a), ember.nextafter(a, b)))
        for _ in range(4):
            (m, e), n = f(x, y)
        assert ember.equal(m.cpu(), eager_m.cpu()) and ember.equal(e.cpu(), eager_e.cpu())
        assert ember.equal(n.cpu(), eager_n.cpu())
