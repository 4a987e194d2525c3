"""ember-opencl's runtime: discovery, the device module, raw memory under the caching allocator,
host transfers, copy_ / fill_ kernels, the shared kernel machinery (_codegen), random state.

Device tests run on the first OpenCL device (PoCL in CI) and skip when there is none; the
no-platform behaviour is tested in subprocesses that hide every platform.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, DTYPES, NO_DEVICE, NO_PLUGIN, has_device, host, plugin_loaded  # noqa: E402

pytest.importorskip("ember_opencl")
from ember_opencl import _codegen as cg  # noqa: E402
from ember_opencl._runtime import RUNTIME, PhiloxState  # noqa: E402


needs_device = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)
needs_plugin = pytest.mark.skipif(not plugin_loaded(), reason=NO_PLUGIN)


def rand_np(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("float"):
        return (rng.standard_normal(shape) * 10).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


# ---------------------------------------------------------------- _codegen (no device needed)
def test_ctype_map():
    assert [cg.ctype(n) for n in DTYPES] == ["uchar", "uchar", "char", "short", "int", "long", "float", "double"]
    assert cg.ctype(ember.float16) == "half"
    with pytest.raises(TypeError, match="complex64 has no OpenCL C type"):
        cg.ctype(ember.complex64)


def test_scalar_conversion_is_c_like():
    assert cg.scalar(2.7, ember.int32) == 2 and cg.scalar(-2.7, ember.int32) == -2
    assert cg.scalar(-1, ember.uint8) == 255 and cg.scalar(300, ember.int8) == 44
    assert cg.scalar(5, ember.bool) == 1 and cg.scalar(0.0, ember.bool) == 0
    assert type(cg.scalar(1, ember.float64)) is np.float64 and type(cg.scalar(1, ember.int64)) is np.int64


def test_collapse_merges_contiguous_dims():
    assert cg.collapse((4, 5, 6), (30, 6, 1), (30, 6, 1)) == ((120,), [(1,), (1,)])
    # a transposed operand keeps the dims apart; size-1 dims vanish
    assert cg.collapse((4, 1, 6), (6, 6, 1), (1, 1, 4)) == ((4, 6), [(6, 1), (1, 4)])
    # a broadcast (0-stride) operand merges only where it is also contiguous
    assert cg.collapse((3, 4), (4, 1), (0, 1)) == ((3, 4), [(4, 1), (0, 1)])
    assert cg.collapse((), ) == ((1,), [])
    assert cg.collapse((1, 1), (1, 1)) == ((1,), [(0,)])


def test_unravel_and_offset_code():
    code = cg.unravel(3)
    assert "c2 = c_rem % n2" in code and "c0 = c_rem" in code
    assert cg.offset("x", 2) == "x_off + c0 * x_s0 + c1 * x_s1"
    assert cg.tensor_params("x", "float", 2, const=True) == "__global const float* x, long x_off, long x_s0, long x_s1"


# ---------------------------------------------------------------- no platform
def _run(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)


@needs_plugin
def test_no_matching_platform_means_unavailable():
    r = _run("import ember\nprint(ember.opencl.is_available(), ember.opencl.device_count())\n"
             "print(ember.opencl.unavailable_reason())\n"
             "try:\n    ember.ones(2, device='opencl')\nexcept RuntimeError as e:\n    print('ERR', e)\n",
             EMBER_OPENCL_PLATFORM="no-such-platform-xyz")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False 0"
    assert "no OpenCL platform matches EMBER_OPENCL_PLATFORM='no-such-platform-xyz'" in lines[1]
    assert "pip install 'ember-opencl[cpu]'" in lines[1] and "EMBER_DISABLE_PLUGINS=opencl" in lines[1]
    assert lines[2].startswith("ERR") and "opencl:0" in lines[2]


@needs_plugin
def test_without_pyopencl_the_plugin_still_imports():
    r = _run("import sys\nsys.modules['pyopencl'] = None\nimport ember\n"
             "print(ember.opencl.is_available())\nprint(ember.opencl.unavailable_reason())\n")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False" and "pyopencl cannot be imported" in lines[1]


# ---------------------------------------------------------------- device module
@needs_device
def test_device_module():
    m = ember.opencl
    assert m.device_count() >= 1 and m.current_device() == 0
    assert isinstance(m.get_device_name(0), str) and m.get_device_name(0)
    with pytest.raises(RuntimeError, match="Invalid device ordinal"):
        m.set_device(m.device_count())
    with m.device(0):
        assert ember.ones(2, device="opencl").device == ember.device("opencl", 0)
    props = m.get_device_properties(0)
    assert props["total_memory"] > 0 and isinstance(props["fp64"], bool)
    assert RUNTIME.total_memory(0) == props["total_memory"]
    m.synchronize()
    m.synchronize(0)
    assert m.unavailable_reason() is None


@needs_device
def test_context_and_queue_are_per_device_and_lazy():
    st = RUNTIME.state(0)
    assert RUNTIME.state(0) is st and st.label == "opencl:0"
    assert st.queue.device == st.device


# ---------------------------------------------------------------- host transfers
@needs_device
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype):
    a = rand_np((5, 7), dtype)
    x = ember.tensor(a).to(DEV)
    assert x.device == ember.device(DEV) and x.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(host(x), a)
    np.testing.assert_array_equal(host(x.t()), a.T)                       # strided read
    np.testing.assert_array_equal(host(x[1:4, 2::2]), a[1:4, 2::2])       # storage offset + strides
    np.testing.assert_array_equal(host(ember.tensor(a[0, 0]).to(DEV)), a[0, 0])     # 0-dim
    assert host(ember.tensor(a[:0]).to(DEV)).shape == (0, 7)


@needs_device
def test_sparse_view_of_big_storage_is_gathered_on_device():
    a = np.arange(200_000, dtype=np.float32)
    x = ember.tensor(a).to(DEV)
    np.testing.assert_array_equal(host(x[3::1000]), a[3::1000])          # span >> numel


@needs_device
def test_from_numpy_into_strided_destination():
    a = rand_np((3, 4), "float32")
    z = ember.empty((4, 3), device=DEV).t()
    z.copy_(ember.tensor(a))                                                # cpu -> strided opencl
    assert tuple(z.stride()) == (1, 3)
    np.testing.assert_array_equal(host(z), a)
    base = ember.zeros((4, 6), device=DEV)
    base[1:3, ::2].copy_(ember.tensor(np.ones((2, 3), np.float32)))
    exp = np.zeros((4, 6), np.float32)
    exp[1:3, ::2] = 1
    np.testing.assert_array_equal(host(base), exp)


# ---------------------------------------------------------------- copy_ and fill_ kernels
@needs_device
@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", ["bool", "uint8", "int8", "int32", "int64", "float32", "float64"])
def test_copy_casts_like_numpy(src, dst):
    a = rand_np((3, 5), src, seed=3)
    if src.startswith("float") and dst in ("uint8", "int8"):
        a = np.clip(a, -100, 100)                 # out-of-range float -> small int is undefined in C and numpy
    x = ember.tensor(a).to(DEV)
    y = ember.empty((5, 3), dtype=getattr(ember, dst), device=DEV).t()     # strided destination
    y.copy_(x.t().t())
    with np.errstate(all="ignore"):
        exp = a.astype(dst)
    np.testing.assert_array_equal(host(y), exp)


@needs_device
def test_copy_rank3_permuted_across_many_work_items():
    """Work items' ranges (1001 elements) do not align with rows (65): the row walk and the carry
    between dims must still visit every element once."""
    a = rand_np((7, 33, 65), "float32", seed=5)
    x = ember.tensor(a).to(DEV).permute(2, 0, 1)                       # (65, 7, 33), strides (1, 2145, 65)
    y = ember.empty((65, 7, 33), dtype=ember.float64, device=DEV)
    y.copy_(x)
    np.testing.assert_array_equal(host(y), a.transpose(2, 0, 1).astype(np.float64))
    z = ember.zeros((65, 7, 66), device=DEV)[:, :, 1::2]               # strided destination
    z.copy_(x)
    np.testing.assert_array_equal(host(z), a.transpose(2, 0, 1))


@needs_device
def test_copy_float_to_int_truncates_and_wraps():
    x = ember.tensor([2.7, -2.7, -1.0, 255.9, 0.5]).to(DEV)
    assert ember.empty(5, dtype=ember.int32, device=DEV).copy_(x).cpu().tolist() == [2, -2, -1, 255, 0]
    assert ember.empty(5, dtype=ember.uint8, device=DEV).copy_(x).cpu().tolist() == [2, 254, 255, 255, 0]
    assert ember.empty(5, dtype=ember.bool, device=DEV).copy_(x).cpu().tolist() == [True] * 4 + [True]
    big = ember.tensor([300, -129, 2 ** 40 + 5], dtype=ember.int64).to(DEV)
    assert ember.empty(3, dtype=ember.int8, device=DEV).copy_(big).cpu().tolist() == [44, 127, 5]


@needs_device
def test_copy_broadcasts_src():
    row = ember.tensor([1.0, 2.0, 3.0, 4.0]).to(DEV)
    out = ember.empty((3, 4), device=DEV)
    out.copy_(row)
    np.testing.assert_array_equal(host(out), np.tile([1.0, 2.0, 3.0, 4.0], (3, 1)).astype(np.float32))
    col = ember.tensor([[1], [2], [3]], dtype=ember.int64).to(DEV)
    out.copy_(col)
    np.testing.assert_array_equal(host(out), np.repeat([[1.0], [2.0], [3.0]], 4, 1).astype(np.float32))


@needs_device
def test_copy_between_overlapping_views():
    a = np.arange(10, dtype=np.float32)
    x = ember.tensor(a).to(DEV)
    x[1:].copy_(x[:-1])                      # as if src were read first (numpy's and PyTorch's result)
    exp = a.copy()
    exp[1:] = a[:-1].copy()
    np.testing.assert_array_equal(host(x), exp)
    y = ember.tensor(np.arange(9, dtype=np.float32).reshape(3, 3)).to(DEV)
    y.copy_(y.t())                           # in-place transpose
    np.testing.assert_array_equal(host(y), np.arange(9, dtype=np.float32).reshape(3, 3).T)


@needs_device
def test_fill_c_conversion_and_views():
    assert ember.empty(3, dtype=ember.int32, device=DEV).fill_(2.7).cpu().tolist() == [2, 2, 2]
    assert ember.empty(2, dtype=ember.uint8, device=DEV).fill_(-1).cpu().tolist() == [255, 255]
    assert ember.empty(2, dtype=ember.bool, device=DEV).fill_(3).cpu().tolist() == [True, True]
    f = ember.empty(2, dtype=ember.float64, device=DEV).fill_(float("nan")).cpu().numpy()
    assert np.isnan(f).all()
    x = ember.zeros((4, 6), device=DEV)
    x[1:3, 2:4].fill_(-1)
    exp = np.zeros((4, 6), np.float32)
    exp[1:3, 2:4] = -1
    np.testing.assert_array_equal(host(x), exp)
    x.t()[0].fill_(7)                            # a strided column
    exp[:, 0] = 7
    np.testing.assert_array_equal(host(x), exp)


@needs_device
def test_float16_is_a_storage_type_even_without_cl_khr_fp16():
    a = np.array([0.1, -2.5, 65504.0, 1e-7, 3.14159], np.float32)
    x = ember.tensor(a).to(DEV)
    h = ember.empty(5, dtype=ember.float16, device=DEV).copy_(x)          # rounds to nearest even
    np.testing.assert_array_equal(host(h), a.astype(np.float16))
    back = ember.empty(5, dtype=ember.float64, device=DEV).copy_(h)
    np.testing.assert_array_equal(host(back), a.astype(np.float16).astype(np.float64))
    assert ember.empty(2, dtype=ember.float16, device=DEV).fill_(0.1).cpu().numpy().tolist() == \
        [float(np.float16(0.1))] * 2


# ---------------------------------------------------------------- kernel build cache and errors
@needs_device
def test_build_caches_per_device_and_source():
    st = RUNTIME.state(0)
    src = "__kernel void ember_test_twice(__global int* x) { x[get_global_id(0)] *= 2; }"
    before = st.compiles
    k1 = cg.build(st, src, "ember_test_twice")
    k2 = cg.build(st, src, "ember_test_twice")
    assert k1 is k2 and st.compiles == before + 1
    x = ember.tensor([1, 2, 3], dtype=ember.int32).to(DEV)
    cg.launch(st, k1, 3, [cg.buffer(x)])
    assert x.cpu().tolist() == [2, 4, 6]
    assert cg.launch(st, k1, 0, [cg.buffer(x)]) is None                    # nothing to run


@needs_device
def test_build_failure_names_the_kernel_and_quotes_the_log():
    st = RUNTIME.state(0)
    with pytest.raises(RuntimeError, match=r"building OpenCL kernel 'ember_broken' failed on opencl:0") as e:
        cg.build(st, "__kernel void ember_broken(__global float* x) { x[0] = undefined_name; }", "ember_broken")
    assert "undefined_name" in str(e.value)                                # the compiler's log
    with pytest.raises(RuntimeError, match="kernel 'nope' is not in its source"):
        cg.build(st, "__kernel void ember_other(__global float* x) { }", "nope")


# ---------------------------------------------------------------- memory
@needs_device
def test_raw_allocator_under_the_caching_allocator():
    m = ember.opencl
    gc.collect()
    m.empty_cache()
    start = m.memory_allocated()
    raw0 = m.memory_stats()["num_device_alloc"]
    x = ember.empty(1000, device=DEV)
    assert m.memory_allocated() >= start + 4000
    assert m.memory_stats()["num_device_alloc"] == raw0 + 1
    ptr = x.untyped_storage().data_ptr()
    assert x[10:].untyped_storage().data_ptr() == ptr                    # views share the buffer
    del x
    gc.collect()
    y = ember.empty(1000, device=DEV)                                    # reused from the cache
    assert m.memory_stats()["num_device_alloc"] == raw0 + 1
    assert y.untyped_storage().data_ptr() == ptr
    del y
    gc.collect()
    m.empty_cache()
    assert m.memory_allocated() == start and m.memory_reserved() >= m.memory_allocated()


@needs_device
def test_oom_raises_out_of_memory_error_and_recovers():
    total = RUNTIME.total_memory(0)
    with pytest.raises(ember.OutOfMemoryError, match=r"tried to allocate.*cannot allocate"):
        ember.empty(total + (1 << 30), dtype=ember.uint8, device=DEV)
    assert ember.opencl.memory_stats()["num_ooms"] >= 1
    assert ember.ones(4, device=DEV).cpu().tolist() == [1.0] * 4


@needs_device
def test_mixing_devices_raises_device_mismatch():
    x = ember.ones(3, device=DEV)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.add(x, ember.ones(3))


# ---------------------------------------------------------------- random state
def test_philox_state_reserve_and_round_trip():
    s = PhiloxState(1234)
    assert s.reserve(10) == 0 and s.reserve(5) == 10 and s.offset == 15
    raw = s.get_state()
    assert len(raw) == 16
    t = PhiloxState(0)
    t.set_state(raw)
    assert (t.seed, t.offset) == (1234, 15)
    with pytest.raises(RuntimeError, match="16 bytes"):
        t.set_state(b"123")


@needs_device
def test_generator_state_api():
    g = ember.Generator(DEV).manual_seed(99)
    assert g.state.seed == 99 and g.state.offset == 0
    g.state.reserve(64)
    saved = g.get_state()
    assert saved.dtype == ember.uint8 and saved.numel() == 16
    g.state.reserve(100)
    g.set_state(saved)
    assert g.state.offset == 64
    ember.opencl.manual_seed(5)
    assert ember.opencl.initial_seed() == 5


# ---------------------------------------------------------------- save / load
@needs_device
def test_save_load_keeps_device_and_views(tmp_path):
    x = ember.tensor(rand_np((3, 4), "float32")).to(DEV)
    ember.save({"a": x, "b": x[1:]}, tmp_path / "t.pt")
    got = ember.load(tmp_path / "t.pt")
    assert got["a"].device == ember.device(DEV)
    np.testing.assert_array_equal(host(got["b"]), host(x[1:]))
    assert got["a"].untyped_storage().data_ptr() == got["b"].untyped_storage().data_ptr()


# ---------------------------------------------------------------- allocation steady state of a training loop
TRAINING_PRIMITIVES = ("add", "mul", "true_divide", "sqrt", "exp", "log", "sum", "amax", "bmm", "gather",
                       "scatter_add", "eq", "lt", "where", "uniform")


def _training_loop(optimizer_cls, **kw):
    """A Linear model on opencl trained on random data; returns step() -> loss and the optimizer."""
    from ember import nn
    import ember.nn.functional as F
    key = ("opencl", "strided", ember.float32)
    missing = [op for op in TRAINING_PRIMITIVES if ember._dispatch.ops[op].source(key) == "missing"]
    if missing:
        pytest.skip(f"opencl kernels not registered yet: {missing}")
    ember.manual_seed(0)
    model = nn.Linear(16, 4).to(DEV)
    opt = optimizer_cls(model.parameters(), **kw)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((64, 16)).astype(np.float32)).to(DEV)
    y = ember.tensor((rng.standard_normal((64, 16)) @ rng.standard_normal((16, 4))).argmax(1)).to(DEV)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step, opt


def _raw_allocs():
    return ember.opencl.memory_stats()["num_device_alloc"]


@needs_device
def test_training_steps_after_warmup_make_no_new_raw_allocations():
    """SGD: after one warm-up step the caching allocator serves every further step from its cache
    (num_device_alloc, the count of raw cl.Buffer allocations, stays put)."""
    from ember import optim
    step, _ = _training_loop(optim.SGD, lr=0.1)
    first = step()                                   # warm-up
    raw = _raw_allocs()
    allocated = ember.opencl.memory_stats()["allocated_bytes.all.current"]
    losses = [step() for _ in range(5)]
    assert _raw_allocs() == raw, "steps after the warm-up allocated new cl.Buffers"
    assert ember.opencl.memory_stats()["allocated_bytes.all.current"] == allocated
    assert losses[-1] < first                        # and it trains


@needs_device
def test_adam_steps_after_warmup_make_no_new_raw_allocations():
    """Adam creates its state at the end of the first step; the second step's extra small blocks
    come from the small pool's segment (cl sub-buffers), not from new cl.Buffers."""
    from ember import optim
    step, opt = _training_loop(optim.Adam, lr=0.05)
    first = step()                                   # warm-up: grads, then Adam's state
    raw = _raw_allocs()
    losses = [step() for _ in range(5)]
    assert _raw_allocs() == raw, "Adam steps after the warm-up allocated new cl.Buffers"
    assert losses[-1] < first


@needs_device
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_digits_training_loop_after_one_warmup_iteration_makes_no_raw_allocations(model):
    """The main job's loop (ember.examples.digits) on opencl: one warm-up iteration, then no new
    raw allocations for the rest of the run (the issue's allocator criterion)."""
    pytest.importorskip("sklearn")
    import ember.nn.functional as F
    from ember.examples.digits import build_model, load_digits_split
    dev = ember.device("opencl:0")
    ember.manual_seed(0)
    x, y, _, _ = load_digits_split(0, device=dev)
    net = build_model(model).to(dev)
    opt = ember.optim.Adam(net.parameters(), lr=1e-2)

    def iteration(i):
        loss = F.cross_entropy(net(x[i * 64:(i + 1) * 64]), y[i * 64:(i + 1) * 64])
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()
    iteration(0)
    raw = _raw_allocs()
    for i in range(1, 8):
        iteration(i)
    assert _raw_allocs() == raw
