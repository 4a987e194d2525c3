"""ember-cuda's fuser (plugins/cuda/ember_cuda/fused.py): a run of elementwise nodes replayed as one cupy.fuse kernel.

On the host emulation (device type ``cuda_emu``: ember-cuda's kernels and fuser over numpy) the fused function runs
as its numpy calls and a replay must equal eager bit for bit. On a GPU (device type ``cuda``, only when one is
there) cupy compiles the same function into one kernel; NVRTC may contract a product and a sum into one fused
multiply-add, so the comparison there allows a last-bit difference per operation (module doc of fused.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import plugins
from ember.compiler import _fusion

from _compile_steps import compare_device_mlp, compiled_and_eager as _run, random_args

pytest.importorskip("ember_cuda", reason="ember-cuda is not installed (pip install -e plugins/cuda)")
from ember_cuda import _emulation as emu  # noqa: E402
from ember_cuda import fused  # noqa: E402

FLOATS = [ember.float16, ember.float32, ember.float64]
#: relative tolerance on a GPU (fused multiply-adds), per dtype; the emulation compares exactly
GPU_RTOL = {ember.float16: 2e-3, ember.float32: 1e-5, ember.float64: 1e-12}


@pytest.fixture(scope="module", autouse=True)
def cuda_emu():
    plugins.register(emu, name=emu.NAME)
    yield
    getattr(ember, emu.NAME).empty_cache()
    plugins.unregister(emu.NAME)


@pytest.fixture(params=["cuda_emu", "cuda"])
def dev(request):
    if request.param == "cuda" and not ember.cuda.is_available():
        pytest.skip(f"no GPU: {ember.cuda.unavailable_reason()}")
    return request.param


def _tol(dev, dtype):
    return 0 if dev == "cuda_emu" else GPU_RTOL[dtype]


def _check(got, want, rtol):
    a, b = got.detach().cpu().numpy(), want.detach().cpu().numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    if rtol == 0:
        assert np.array_equal(a, b, equal_nan=True), (a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=rtol)


def test_both_device_types_register_the_fuser():
    assert _fusion.find_fuser("cuda_emu") is not None
    assert _fusion.find_fuser("cuda") is not None       # registered without touching a GPU


CHAINS = {
    "unary and binary": lambda x, y: ((x * y).exp() + 1.5).sqrt() - y.abs(),
    "scalar constants": lambda x, y: (x * 0.3 - 2) / 7.0 + x.neg() + (2 - y),
    "alpha": lambda x, y: x.add(y, alpha=0.25).sub_(y, alpha=3),
    "comparisons and where": lambda x, y: (x > y, ember.where(x.le(y), x * 2, y - 1), x.maximum(y) - 1),
    "composites as primitives": lambda x, y: x.clone().lerp_(y, 0.1).mul_(0.999).addcmul_(y, y, value=0.001),
    "dtype conversions": lambda x, y: (x.double() * 3 + y.double(), (x * 2).float() - 1),
    "nan and inf": lambda x, y: ((x / 0.0) * y, (x.log() + 1) * 2, x.relu().tanh() * y),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", list(CHAINS))
def test_chains_fuse_and_match_eager(dev, name, dtype):
    got, want, row = _run(CHAINS[name], random_args(dtype, device=dev))
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            _check(a, b, _tol(dev, dtype))
    assert row["fused_kernels"] >= 1 and row["kernel_launches"] < row["kernel_calls"], row


def test_a_zero_dim_cpu_tensor_is_read_on_every_call(dev):
    """The optimizers' case: a 0-dim cpu tensor operand is read on the host at each replay, not baked in."""
    def fn(x, s):
        return (x.sqrt() / s + 1e-8) * s

    def make(i):
        g = ember.Generator().manual_seed(i)
        return [ember.rand(6, 4, generator=g).to(dev), ember.tensor(1.0 - 0.999 ** (i + 1), dtype=ember.float64)]
    got, want, row = _run(fn, make)
    for g, w in zip(got, want):
        assert g[0].dtype is ember.float32
        _check(g[0], w[0], _tol(dev, ember.float32))
    assert row["fused_kernels"] == 1


def test_float16_nodes_round_between_nodes_as_eager_does(monkeypatch):
    """A float16 chain computes each node in float32 and rounds it to float16 before the next node reads it. A
    fuser keeping the intermediates in float32 (rounding only at the stores) gives other values, so the
    bit-for-bit comparison above would catch it."""
    fn = CHAINS["unary and binary"]
    got, want, _ = _run(fn, random_args(ember.float16, shape=(40, 50), device="cuda_emu"))
    assert all(np.array_equal(g[0].cpu().numpy(), w[0].cpu().numpy()) for g, w in zip(got, want))

    def unrounded(self, out, expr, rd, ed):
        self.body.append(f"v{out} = {expr}")
        self.written.add(out)
    monkeypatch.setattr(fused._Writer, "result", unrounded)
    got, want, row = _run(fn, random_args(ember.float16, shape=(40, 50), device="cuda_emu"))
    assert row["fused_kernels"] >= 1
    assert not all(np.array_equal(g[0].cpu().numpy(), w[0].cpu().numpy()) for g, w in zip(got, want))


def test_integer_and_bool_chains_fuse(dev):
    """cross_entropy's target checks and index arithmetic: int64 and bool nodes, integer constants and fills."""
    def fn(x, y):
        return (x + y) * 3 - y, (x > 2) | (y == 1), ember.where(x < 5, x, y).add_(2, alpha=3)

    def make(i):
        return [(ember.arange(12, dtype=ember.int64) + i).to(dev), ember.ones(12, dtype=ember.int64).to(dev)]
    got, want, row = _run(fn, make)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            _check(a, b, 0)
    assert row["fused_kernels"] >= 1 and row["kernel_launches"] < row["kernel_calls"], row


@pytest.mark.parametrize("case", ["bfloat16", "integer pow", "sigmoid"])
def test_runs_it_declines_replay_node_by_node(case):
    if case == "bfloat16":
        fn, make = (lambda x, y: (x + y) * 2), random_args(ember.bfloat16, device="cuda_emu")
    elif case == "integers":
        def make(i):
            return [ember.arange(12, dtype=ember.int64).to("cuda_emu") + i, ember.ones(12, dtype=ember.int64)
                    .to("cuda_emu")]
        fn = (lambda x, y: (x + y).pow(2) - y)
    else:
        fn, make = (lambda x, y: (x * 2).sigmoid() * 3), random_args(ember.float32, device="cuda_emu")
    got, want, row = _run(fn, make)
    for g, w in zip(got, want):
        _check(g[0], w[0], 0)
    assert row["fused_kernels"] == 0 and row["kernel_launches"] == row["kernel_calls"], row


@pytest.mark.parametrize("optim", ["sgd", "adam"])
def test_an_mlp_training_step_replays_fused(dev, optim):
    """The benchmark's MLP step (forward, cross entropy, backward, optimizer): loss, parameters, .grad and the
    optimizer's state after every replay are eager's (bit for bit on the emulation), with fewer launches."""
    row = compare_device_mlp(dev, optim, steps=5, rtol=_tol(dev, ember.float32))
    # launches per step on the emulation: SGD 133 -> 90, Adam 206 -> 93
    assert row["fused_kernels"] >= 10 and row["kernel_launches"] <= row["kernel_calls"] * 0.7, row
