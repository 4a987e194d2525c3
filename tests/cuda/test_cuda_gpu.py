"""ember-cuda on a GPU (issue 7, items 1-4 and 6). Every test here needs a usable CUDA device and is
skipped, with the reason ember.cuda.unavailable_reason() gives, where there is none.

They ran and passed on an NVIDIA H100 (cupy-cuda13x 14.2, 2026-11-24). Run them with
``pytest tests/cuda -rs`` on a GPU machine with ``pip install -e 'plugins/cuda[cuda12]'`` (or ``[cuda13]``).
"""
from __future__ import annotations

import gc

import ember
import numpy as np
import pytest

pytest.importorskip("ember_cuda", reason="ember-cuda is not installed (pip install -e plugins/cuda)")
from ember_cuda._runtime import RUNTIME

pytestmark = pytest.mark.skipif(not RUNTIME.is_available(),
                                reason=f"no usable CUDA device: {RUNTIME.unavailable_reason()}")
two_gpus = pytest.mark.skipif(RUNTIME.is_available() and RUNTIME.device_count() < 2, reason="needs 2 CUDA devices")


def _cp():
    import cupy
    return cupy


# ---------------------------------------------------------------- devices
def test_device_module_basics():
    assert ember.cuda.is_available() and ember.cuda.device_count() >= 1
    assert ember.cuda.current_device() == 0
    name = ember.cuda.get_device_name()
    p = ember.cuda.get_device_properties(0)
    assert p.name == name and p.total_memory > 0 and p.multi_processor_count > 0
    ember.cuda.synchronize()
    x = ember.ones(3, device="cuda")
    assert x.device == ember.device("cuda", 0) and x.cpu().tolist() == [1.0, 1.0, 1.0]


@two_gpus
def test_device_context_and_cuda_index():
    with ember.cuda.device(1):
        assert ember.cuda.current_device() == 1
        assert ember.zeros(2, device="cuda").device == ember.device("cuda", 1)
        assert ember.ones(2).cuda().device == ember.device("cuda", 1)
    assert ember.cuda.current_device() == 0
    a, b = ember.ones(2).cuda(0), ember.ones(2).cuda(1)
    assert b.device.index == 1
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b
    assert (a + b.to("cuda:0")).cpu().tolist() == [2.0, 2.0]


def test_cross_device_op_raises():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least "
                                           "two devices"):
        ember.ones(2, device="cuda") + ember.ones(2)


# ---------------------------------------------------------------- kernels against numpy
@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.int32,
                                   ember.int64, ember.uint8, ember.bool])
def test_elementwise_on_strided_views(dtype):
    base = ember.arange(48).reshape(6, 8).to(dtype)
    g = base.cuda()
    v, gv = base[1:, ::2].t(), g[1:, ::2].t()             # a non-contiguous view, no copy
    assert gv.untyped_storage().data_ptr() == g.untyped_storage().data_ptr()
    np.testing.assert_array_equal((gv * 2).cpu().numpy(), (v * 2).numpy())
    np.testing.assert_array_equal((gv == 4).cpu().numpy(), (v == 4).numpy())
    np.testing.assert_array_equal(gv.sum(0).cpu().numpy(), v.sum(0).numpy())


def test_conformance_subset():
    from ember.testing.conformance._main import run_conformance
    from ember.testing.conformance._report import render_text
    r = run_conformance("cuda", ops="add,mul,sum,amax,where,copy_,fill_,mm,bmm,gather,scatter_add,uniform,softmax,"
                                    "erfinv,pow,div,fmod,bitwise_*")
    text = render_text(r)
    assert "result: PASSED" in text, text[-4000:]


def test_matmul_f16_uses_cublas_and_matches():
    a = ember.randn(256, 128).to(ember.float16)
    b = ember.randn(128, 64).to(ember.float16)
    r = (a.cuda() @ b.cuda()).cpu().float().numpy()
    ref = a.float().numpy() @ b.float().numpy()
    np.testing.assert_allclose(r, ref, rtol=2e-2, atol=2e-1)


def test_rng_reproducible_and_same_bits_as_emulation():
    from ember_cuda import _philox
    ember.cuda.manual_seed(123)
    x = ember.rand(1000, device="cuda")
    ember.cuda.manual_seed(123)
    y = ember.rand(1000, device="cuda")
    assert ember.equal(x, y)
    ref = _philox.uniform01(np, _philox.PhiloxState(123), 1000, "float32")
    np.testing.assert_array_equal(x.cpu().numpy(), ref)     # the counter-based generator is the same everywhere


# ---------------------------------------------------------------- memory
def test_memory_stats_and_empty_cache():
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    base = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")                  # 4 MiB
    assert ember.cuda.memory_allocated() - base == 4 << 20
    assert ember.cuda.max_memory_allocated() >= base + (4 << 20)
    del x
    gc.collect()
    assert ember.cuda.memory_allocated() == base
    assert ember.cuda.memory_reserved() >= 4 << 20
    ember.cuda.empty_cache()
    stats = ember.cuda.memory_stats()
    assert stats["num_device_free"] >= 1 and "allocated_bytes.all.peak" in stats
    assert "device cuda:0" in ember.cuda.memory_summary()


def test_oom_raises_out_of_memory_error_after_retry():
    total = ember.cuda.get_device_properties(0).total_memory
    stats = ember.cuda.memory_stats()
    with pytest.raises(ember.OutOfMemoryError, match="tried to allocate"):
        ember.empty(total, dtype=ember.uint8, device="cuda")
    after = ember.cuda.memory_stats()
    assert after["num_alloc_retries"] == stats["num_alloc_retries"] + 1
    assert after["num_ooms"] == stats["num_ooms"] + 1
    assert (ember.ones(4, device="cuda") + 1).cpu().tolist() == [2.0] * 4     # still usable


def test_per_process_memory_fraction():
    ember.cuda.empty_cache()
    ember.cuda.set_per_process_memory_fraction(0.01)
    try:
        total = ember.cuda.get_device_properties(0).total_memory
        with pytest.raises(ember.OutOfMemoryError, match="per-process limit"):
            ember.empty(int(total * 0.02), dtype=ember.uint8, device="cuda")
    finally:
        ember.cuda.set_per_process_memory_fraction(1.0)


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_digits_training_no_raw_allocations_after_warmup(model):
    from ember.examples.digits import build_model, load_digits_split
    x_tr, y_tr, _, _ = load_digits_split(0, device="cuda")
    net = build_model(model).cuda()
    opt = ember.optim.Adam(net.parameters(), lr=1e-3)

    def step(i):
        xb, yb = x_tr[i * 64:(i + 1) * 64], y_tr[i * 64:(i + 1) * 64]
        loss = ember.nn.functional.cross_entropy(net(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    step(0)
    before = ember.cuda.memory_stats()["num_device_alloc"]
    for i in range(1, 10):
        step(i)
    assert ember.cuda.memory_stats()["num_device_alloc"] == before


# ---------------------------------------------------------------- streams and events
def test_streams_events_timing():
    s = ember.cuda.Stream(priority=-1)
    assert s != ember.cuda.default_stream() and s.priority <= 0
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        start.record()
        x = ember.ones(1 << 20, device="cuda") * 3
        end.record()
    assert ember.cuda.current_stream() != s
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= 0.0
    ember.cuda.current_stream().wait_stream(s)
    assert float(x.sum().item()) == 3.0 * (1 << 20)
    with pytest.raises(RuntimeError, match="enable_timing"):
        ember.cuda.Event().elapsed_time(end)


def test_allocations_are_reused_per_stream_and_record_stream():
    s = ember.cuda.Stream()
    alloc = ember._factory.allocator_for(ember.device("cuda", 0))
    x = ember.empty(1 << 20, device="cuda")
    x.record_stream(s)
    with ember.cuda.stream(s):
        y = x * 2                                           # x used on s
    del x
    gc.collect()
    s.synchronize()
    z = ember.empty(1 << 20, device="cuda")                 # the block comes back once s passed its event
    assert not alloc._pending
    del y, z


# ---------------------------------------------------------------- pinned memory and non_blocking copies
def test_pin_memory_and_non_blocking_copies():
    x = ember.randn(1 << 20)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and ember.equal(p, x)
    d = p.to("cuda", non_blocking=True)
    back = ember.empty_like(x).pin_memory()
    back.copy_(d, non_blocking=True)
    ember.cuda.synchronize()
    assert ember.equal(back, x)


def test_dataloader_pin_memory():
    from ember.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(ember.randn(64, 4), ember.arange(64))
    for xb, yb in DataLoader(ds, batch_size=16, pin_memory=True):
        assert xb.is_pinned() and yb.is_pinned()
        assert xb.cuda(non_blocking=True).device.type == "cuda"


# ---------------------------------------------------------------- exchange with cupy and PyTorch
def test_dlpack_and_cuda_array_interface_with_cupy():
    cp = _cp()
    t = ember.arange(12, dtype=ember.float32, device="cuda").reshape(3, 4)[:, 1:]
    a = cp.from_dlpack(t)
    assert a.data.ptr == t.data_ptr() and a.shape == (3, 3)
    a[0, 0] = 100                                           # zero-copy: the tensor sees it
    assert t[0, 0].item() == 100
    b = cp.asarray(t)                                       # __cuda_array_interface__
    assert b.data.ptr == t.data_ptr()
    c = cp.arange(6, dtype=cp.float64).reshape(2, 3)
    u = ember.from_dlpack(c)
    assert u.device.type == "cuda" and u.data_ptr() == c.data.ptr and u.tolist() == c.get().tolist()


def test_dlpack_with_torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch here has no CUDA")
    t = ember.arange(6, dtype=ember.float32, device="cuda")
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr() and tt.is_cuda
    back = ember.from_dlpack(torch.arange(4, device="cuda"))
    assert back.device.type == "cuda" and back.tolist() == [0, 1, 2, 3]
