"""ember.compile's fusion through a device hook (docs/compile.md "Fusion", core/ember/compiler/_fusion.py).

- a reference fuser on the cpu (numpy, below) proves the contract: what the runs look like, which tensors
  must be stored, and that a replay that calls the fused callables gives eager's values (float32: within
  rtol 1e-6 / atol 1e-7 - numpy's rounding of ``a + alpha * b`` may differ from ember-cpu's by an ulp);
- vdev has no fuser: plain replay, bit for bit;
- ember-opencl's fuser (one generated kernel per run) gives eager's values bit for bit (float32 and float64)
  and cuts the MLP step's kernel launches;
- fuser features (``register_fuser(..., features=("broadcast", "reduction"))``): runs with broadcast operands
  and ending in reductions, through a numpy fuser on the cpu that checks the contract and through
  ember-opencl's fuser (bit for bit); a fuser registered without features never receives them.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import _registry
from ember.compiler import _fusion

from _compile_steps import compare_device_mlp as _compare_mlp, graph_row as _graph_row


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


def _evaluate(sub, arrays, vals):
    """Run ``sub``'s nodes with numpy on the loaded values ``vals`` (slot -> array), then store the slots marked
    ``store`` into ``arrays`` (the slots' memory). Reductions (sum, amax) only reach it from FeatureFuser."""
    for n in sub.nodes:
        xs = [x.value if isinstance(x, _fusion.Constant) else vals[x] for x in n.inputs]
        if n.op == "fill":
            r = n.scalars["value"]
        elif n.op in ("sum", "amax"):
            fn = np.sum if n.op == "sum" else np.max
            kw = {"dtype": arrays[n.out].dtype} if n.op == "sum" else {}
            r = fn(xs[0], axis=n.scalars["dim"], keepdims=n.scalars["keepdim"], **kw)
        else:
            r = _np_op(n.op, xs, n.scalars)
        vals[n.out] = np.asarray(r).astype(arrays[n.out].dtype, copy=False)
    for k, s in enumerate(sub.slots):
        if s.store:
            arrays[k][...] = vals[k]


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
            _evaluate(sub, arrays, {k: arrays[k].copy() for k, s in enumerate(sub.slots) if s.load})
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
def test_vdev_has_no_fuser_and_replays_plainly():
    pytest.importorskip("ember_vdev")
    assert _fusion.find_fuser("vdev") is None
    row = _compare_mlp("vdev", "sgd", steps=4)
    assert row["fused_kernels"] == 0 and row["kernel_launches"] == row["kernel_calls"], row


def _opencl():
    pytest.importorskip("ember_opencl")
    if not ember.opencl.is_available():
        pytest.skip(f"no usable OpenCL runtime (PoCL / Intel CPU): {ember.opencl.unavailable_reason()}")


@pytest.mark.parametrize("optim", ["sgd", "adam"])
def test_opencl_fused_mlp_step_is_bit_identical_to_eager(optim):
    _opencl()
    row = _compare_mlp("opencl", optim)
    assert row["fused_kernels"] >= 8, row
    assert row["kernel_launches"] <= row["kernel_calls"] * 0.6, row      # 123 -> 34 (SGD), 196 -> 37 (Adam)


def test_opencl_fused_mlp_step_uses_broadcast_and_reduction_runs():
    """The bias adds, cross_entropy's row max / sum / log and the bias gradients' column sums join fused runs:
    fewer launches than the plain elementwise runs gave (Adam: 54 -> 37 on the benchmark's step)."""
    _opencl()
    from ember_opencl.kernels import fused as fz
    got = []

    def spy(sub):
        f = fz.fuse(sub)
        got.append((sub.features, f is not None))
        return f
    undo = _registry.register_fuser("opencl", spy, features=fz.FEATURES)
    try:
        row = _compare_mlp("opencl", "adam", steps=5)
    finally:
        undo()
    assert any("reduction" in f and ok for f, ok in got) and any("broadcast" in f and ok for f, ok in got), got
    undo = _registry.register_fuser("opencl", fz.fuse)        # the same fuser, old-style: plain runs only
    try:
        plain = _compare_mlp("opencl", "adam", steps=5)
    finally:
        undo()
    assert row["kernel_launches"] <= plain["kernel_launches"] - 12, (row, plain)


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


# ---------------------------------------------------------------- fuser features: broadcast operands, reductions
class FeatureFuser(ReferenceFuser):
    """The reference fuser with the "broadcast" and "reduction" features: checks each slot's strides against
    numpy's broadcast of its tensor, evaluates reductions with numpy (float sums may differ from ember-cpu's
    order by rounding)."""

    def __call__(self, sub):
        self.subgraphs.append(sub)
        if self.decline or any(n.op not in _SUPPORTED | {"sum", "amax"} for n in sub.nodes):
            return None
        for k, s in enumerate(sub.slots):
            if s.strides is not None:
                shape = sub.reduced_shape if s.reduced else sub.shape
                a = np.broadcast_to(s.tensor.numpy(force=True), shape)
                assert tuple(0 if n == 1 else st // a.itemsize for n, st in zip(shape, a.strides)) == \
                    tuple(0 if n == 1 else st for n, st in zip(shape, s.strides)), (s, a.strides)
                assert not s.written

        def fused(*tensors):
            self.calls += 1
            arrays = [t.numpy(force=True) for t in tensors]
            vals = {}
            for k, s in enumerate(sub.slots):
                if s.load:
                    shape = sub.reduced_shape if s.reduced else sub.shape
                    vals[k] = arrays[k].copy() if s.scalar else np.broadcast_to(arrays[k], shape).copy()
            _evaluate(sub, arrays, vals)
        return fused


def _softmax_head(x, w, b):
    """A linear layer with a bias, a log_softmax over rows written out in primitives, a column sum."""
    h = x @ w + b
    z = h - h.amax(1, keepdim=True)
    out = z - z.exp().sum(1, keepdim=True).log()
    return out, (out * 0.5 + 1.0).exp().sum(0)


def _feature_inputs(dtype=ember.float64, device="cpu"):
    g = ember.Generator().manual_seed(3)
    return [ember.randn(*s, generator=g, dtype=dtype).to(device) for s in ((16, 8), (8, 12), (12,))]


def _softmax_head_with(fuser, features=()):
    """``_softmax_head`` compiled and called four times with ``fuser`` registered for the cpu (with ``features``);
    the results must equal eager's within 1e-12. Returns the compiled function."""
    undo = _registry.register_fuser("cpu", fuser, features=features)
    try:
        c = ember.compile(_softmax_head)
        x, w, b = _feature_inputs()
        for _ in range(4):
            got = c(x, w, b)
    finally:
        undo()
    for a, e in zip(got, _softmax_head(x, w, b)):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
    return c


def test_a_feature_fuser_receives_broadcast_operands_and_reductions():
    f = FeatureFuser()
    c = _softmax_head_with(f, features=("broadcast", "reduction"))
    assert f.calls >= 2
    subs = [s for s in f.subgraphs if s.features]
    bias = [s for s in subs if any(sl.strides == (0, 1) for sl in s.slots)]
    assert bias and all(s.shape == (16, 12) for s in bias), subs           # the (12,) bias over (16, 12)
    rows = [s for s in subs if s.reduce_dims == (1,)]
    assert rows and all(s.reduced_shape == (16, 1) and "reduction" in s.features for s in rows), subs
    for s in rows:                                   # [elementwise] [reductions] [elementwise on reduced_shape]
        kinds = ["r" if n.op in ("sum", "amax") else "e" for n in s.nodes]
        assert "".join(kinds).strip("e") == "r" * kinds.count("r"), kinds
        red_outs = {n.out for n in s.nodes if n.op in ("sum", "amax")}
        assert all(s.slots[o].reduced for o in red_outs)
    cols = [s for s in subs if s.reduce_dims == (0,)]
    assert cols and cols[0].reduced_shape == (12,), subs                   # the column sum ends a run
    row = _graph_row(c)
    assert row["kernel_launches"] < row["kernel_calls"] - 4, row


def test_an_old_style_fuser_never_receives_the_features():
    f = ReferenceFuser()
    _softmax_head_with(f)                                     # no features: plain elementwise runs
    assert f.subgraphs
    names = {op for op, _ in _fusion.ELEMENTWISE.values()}
    for s in f.subgraphs:
        assert s.features == frozenset() and s.reduce_dims == () and s.reduced_shape is None
        assert all(sl.strides is None and not sl.reduced for sl in s.slots)
        assert all(sl.scalar or sl.tensor.shape == s.shape for sl in s.slots)
        assert all(n.op in names for n in s.nodes)


def test_a_hook_fuser_never_receives_the_features():
    import types
    ref = ReferenceFuser()
    hookimpl = ember.plugins.hookimpl
    plugin = types.SimpleNamespace(
        ember_plugin_info=hookimpl(lambda: {"name": "fusetest2", "version": "0", "api_version": "1.1"}),
        ember_fuse=hookimpl(lambda device_type, subgraph: ref(subgraph) if device_type == "cpu" else None))
    undo = _registry.register_fuser("cpu", None)      # (ember-cpu's own fuser would answer first)
    ember.plugins.register(plugin, name="fusetest2")
    try:
        c = ember.compile(_softmax_head)
        x, w, b = _feature_inputs()
        for _ in range(4):
            c(x, w, b)
    finally:
        ember.plugins.unregister("fusetest2")
        undo()
    assert ref.subgraphs and all(s.features == frozenset() and s.reduced_shape is None for s in ref.subgraphs)


def test_a_declined_feature_run_is_offered_again_without_the_features():
    class NoReductions(FeatureFuser):
        def __call__(self, sub):
            if "reduction" in sub.features:
                self.subgraphs.append(sub)
                return None
            return super().__call__(sub)
    f = NoReductions()
    c = _softmax_head_with(f, features=("broadcast", "reduction"))
    declined = [i for i, s in enumerate(f.subgraphs) if "reduction" in s.features]
    assert declined and any("reduction" not in s.features and "broadcast" in s.features
                            for s in f.subgraphs[declined[0] + 1:]), f.subgraphs
    assert _graph_row(c)["fused_kernels"] >= 1 and f.calls >= 1


def test_register_fuser_refuses_unknown_features():
    with pytest.raises(ValueError, match="unknown fuser feature"):
        _registry.register_fuser("cpu", lambda sub: None, features=("broadcast", "loops"))
    from ember.library import Registry
    reg = Registry("someplugin", provides={"device_types": ["mydev"]}, package="ember-someplugin")
    with pytest.raises(ValueError, match="unknown fuser feature"):
        reg.register_fuser("mydev", lambda sub: None, features=("tiling",))


@pytest.mark.parametrize("optim", ["sgd", "adam"])
def test_cpu_mlp_step_with_a_feature_fuser_matches_eager(optim):
    f = FeatureFuser()
    undo = _registry.register_fuser("cpu", f, features=("broadcast", "reduction"))
    try:
        row = _compare_mlp("cpu", optim, dtype=ember.float64, steps=5, rtol=1e-10)
    finally:
        undo()
    # (on the cpu, linear, log_softmax and their gradients are single native ops: this step's runs are elementwise
    # only; broadcasting and reductions are exercised by _softmax_head's tests above)
    assert f.subgraphs and row["fused_kernels"] >= 1, row


def test_vdev_mlp_step_with_a_feature_fuser_matches_eager():
    """The contract on an out-of-tree device: the numpy fuser reads vdev tensors through ``numpy(force=True)``
    copies, so it cannot store; it only checks what it receives and declines, which leaves plain replay."""
    pytest.importorskip("ember_vdev")
    f = FeatureFuser(decline=True)
    undo = _registry.register_fuser("vdev", f, features=("broadcast", "reduction"))
    try:
        row = _compare_mlp("vdev", "adam", steps=5)
    finally:
        undo()
    assert any("reduction" in s.features for s in f.subgraphs)
    assert any("broadcast" in s.features for s in f.subgraphs)
    assert f.calls == 0 and row["replays"] >= 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opencl_broadcast_and_reduction_runs_are_bit_identical(dtype):
    """ember-opencl's fused reductions walk their elements in the eager kernel's order (rows: vector lanes
    folded, then the tail; columns: totals of 256 rows) on CPU devices, so values are equal bit for bit."""
    _opencl()
    from ember_opencl._codegen import state_of
    from ember_opencl.kernels import reduce as red
    dt = getattr(ember, dtype)
    st = state_of(ember.zeros(1, device="opencl"))
    if dt is ember.float64 and not st.fp64:
        pytest.skip("the OpenCL device has no cl_khr_fp64")
    if red._shape_kind(st) != "cpu":
        pytest.skip("a non-CPU OpenCL device: its fused reductions are declined (tree order), see docs/compile.md")
    g = ember.Generator().manual_seed(11)

    def r(*shape):
        return ember.randn(*shape, generator=g, dtype=dt).to("opencl")
    x, w, b = r(37, 8), r(8, 101), r(101)              # rows of 101: 12 vectors of 8 (4 of 4) and a tail
    big = r(300, 1024)                                  # a column sum the eager columns kernel does (300 > 256)
    nan = r(5, 9)
    nan[2, 3] = float("nan")

    def f(x, w, b, big, nan):
        out, colsum = _softmax_head(x, w, b)
        return (out, colsum, (big * 0.5 - 1.0).sum(0), ((big + 1.0) * big).sum(), (nan * 2.0).amax(1),
                ((nan > 0) & (nan < 1)).sum(1), (x.exp() + 1.0).sum(1, keepdim=True).sqrt())
    c = ember.compile(f)
    for _ in range(4):
        got = c(x, w, b, big, nan)
    want = f(x, w, b, big, nan)
    for i, (a, e) in enumerate(zip(got, want)):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert ember.equal(a.cpu(), e.cpu()) or (a.isnan().any() and ember.allclose(
            a.cpu(), e.cpu(), rtol=0, atol=0, equal_nan=True)), (i, (a.cpu() - e.cpu()).abs().max())
    row = _graph_row(c)
    assert row["fused_kernels"] >= 6 and row["kernel_launches"] <= row["kernel_calls"] - 12, row


def test_opencl_declines_reductions_it_cannot_reproduce_and_keeps_the_rest_fused(monkeypatch):
    """With the eager reduction in its work-group tree shape (as on a GPU) the fused code could not add in the
    same order: the fuser declines the reduction, the core offers the run again without it, and the
    elementwise part stays fused - values still equal eager's bit for bit."""
    _opencl()
    from ember_opencl.kernels import fused as fz
    from ember_opencl.kernels import reduce as red
    monkeypatch.setattr(red, "FORCE_SHAPE", "gpu")
    got = []

    def spy(sub):
        f = fz.fuse(sub)
        got.append(("reduction" in sub.features, f is not None))
        return f
    undo = _registry.register_fuser("opencl", spy, features=fz.FEATURES)
    try:
        x, w, b = _feature_inputs(ember.float32, "opencl")
        c = ember.compile(_softmax_head)
        for _ in range(4):
            out = c(x, w, b)
    finally:
        undo()
    for a, e in zip(out, _softmax_head(x, w, b)):
        assert ember.equal(a.cpu(), e.cpu())
    assert (True, False) in got and (True, True) not in got and (False, True) in got, got
