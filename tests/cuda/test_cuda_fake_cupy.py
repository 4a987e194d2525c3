"""ember-cuda's runtime glue end to end on a FAKE cupy made of numpy (tests/cuda/_cuda_fake_cupy.py).

In a fresh process, the fake cupy is put in sys.modules before ember loads its plugins, so the real
"cuda" device type - ``CudaRuntime``, ``CupyBackend``, the streams module, the kernels - runs with
numpy standing in for cupy and host memory standing in for device memory. This checks ember-cuda's
own logic (raw-pointer views, transfers, direct and non_blocking copies, pinned memory, devices and
streams, the allocator hooks, the conformance suite's device checks) given our reading of cupy's API;
it says nothing about cupy or CUDA themselves, which only a GPU run (test_cuda_gpu.py) can.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ember_cuda", reason="ember-cuda is not installed (pip install -e plugins/cuda)")

HERE = pathlib.Path(__file__).parent

SCRIPT = textwrap.dedent(r'''
    import gc, sys
    sys.path.insert(0, HERE)
    import _cuda_fake_cupy as fake
    fake.install(n_devices=2)
    import numpy as np
    import ember

    def check(cond, what):
        if not cond:
            raise AssertionError(what)

    # devices
    check(ember.cuda.is_available() and ember.cuda.device_count() == 2, "2 fake devices")
    check(ember.cuda.get_device_name(1) == "Fake GPU (numpy)", ember.cuda.get_device_name(1))
    check(ember.cuda.get_device_properties(0).total_memory == 1 << 30, "properties")
    x = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    g = x.cuda()
    check(g.device == ember.device("cuda", 0), str(g.device))
    check(ember.equal((g.t() * 2).cpu(), x.t() * 2), "strided kernel")
    with ember.cuda.device(1):
        check(ember.cuda.current_device() == 1, "device context")
        check(ember.zeros(2, device="cuda").device.index == 1, "factory inside device(1)")
        check(x.cuda().device.index == 1, "x.cuda() uses the current device")
    check(ember.cuda.current_device() == 0, "device restored")
    h = x.cuda(1)
    try:
        g + h
        raise AssertionError("cuda:0 + cuda:1 did not raise")
    except RuntimeError as e:
        check("Expected all tensors to be on the same device" in str(e), str(e))
    n = len(fake._COPIES)
    check(ember.equal(h.to("cuda:0").cpu(), x) and fake._COPIES[n][0] == fake.memcpyDefault, "peer copy")

    # transfers: 0-dim, bfloat16, non-contiguous destination
    check(ember.tensor(3.5, device="cuda").item() == 3.5, "0-dim round trip")
    b = ember.tensor([1.5, -2.25, 3e30], dtype=ember.bfloat16)
    check(ember.equal(b.cuda().cpu(), b) and ember.equal((b.cuda() * 2).cpu(), b * 2), "bfloat16")
    dst = ember.zeros(4, 3, device="cuda").t()
    dst.copy_(x)
    check(ember.equal(dst.cpu(), x), "host -> strided device destination")

    # pinned memory and non_blocking copies
    p = ember.randn(1000).pin_memory()
    check(p.is_pinned() and not ember.randn(3).is_pinned(), "is_pinned")
    n = len(fake._COPIES)
    d = p.to("cuda", non_blocking=True)
    check(fake._COPIES[n][:2] == (fake.memcpyHostToDevice, 4000), fake._COPIES[n:])
    back = ember.empty(1000).pin_memory()
    back.copy_(d, non_blocking=True)
    ember.cuda.synchronize()
    check(ember.equal(back, p), "non_blocking round trip")
    from ember.utils.data import DataLoader, TensorDataset
    for xb, yb in DataLoader(TensorDataset(ember.randn(8, 2), ember.arange(8)), batch_size=4, pin_memory=True):
        check(xb.is_pinned() and yb.is_pinned(), "DataLoader pin_memory=True")

    # streams, record_stream, per-stream reuse
    s = ember.cuda.Stream(priority=-1)
    check(s.priority == -1 and s != ember.cuda.default_stream(), "stream priority")
    alloc = ember._factory.allocator_for(ember.device("cuda", 0))
    with ember.cuda.stream(s):
        check(ember.cuda.current_stream() == s, "current_stream inside stream(s)")
        y = ember.empty(1 << 20, device="cuda")
        check(y.untyped_storage()._stream == s.cuda_stream, "allocation keyed by the current stream")
    check(ember.cuda.current_stream() == ember.cuda.default_stream(), "stream restored")
    z = ember.empty(1 << 20, device="cuda")
    z.record_stream(s)
    check(alloc._recorded, "record_stream recorded")
    del z; gc.collect()
    check(alloc._pending, "freed block waits for the stream's event")
    before = fake.stats()["mallocs"]
    w = ember.empty(1 << 20, device="cuda")            # the event is done: the block comes back
    check(not alloc._pending and fake.stats()["mallocs"] == before, "block reused after the event")
    e1, e2 = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    e1.record(); e2.record(); e2.synchronize()
    check(e1.elapsed_time(e2) >= 0 and e2.query(), "events")

    # cupy's allocator is ember's
    hook = fake.stats()["allocator"]
    check(hook is not None, "cupy.cuda.set_allocator was called")
    m0 = ember.cuda.memory_allocated()
    mp = hook(1000)
    check(ember.cuda.memory_allocated() == m0 + 1024, "a cupy temporary is an ember block")
    del mp; gc.collect()
    check(ember.cuda.memory_allocated() == m0, "and goes back to ember's cache")

    # exchange: __cuda_array_interface__, to_cupy / from_cupy
    t = ember.arange(6, dtype=ember.float32, device="cuda").reshape(2, 3)[:, 1:]
    cai = t.__cuda_array_interface__
    check(cai["data"][0] == t.data_ptr() and cai["shape"] == (2, 2) and cai["strides"] == (12, 4)
          and cai["typestr"] == "<f4", str(cai))
    a = ember.cuda.to_cupy(t)
    a[0, 0] = 100.0
    check(t[0, 0].item() == 100.0, "to_cupy shares memory")
    u = ember.cuda.from_cupy(a)
    check(u.data_ptr() == t.data_ptr() and ember.equal(u.cpu(), t.cpu()), "from_cupy shares memory")

    # OOM: the raw allocator's MemoryError -> cache emptied, retried, OutOfMemoryError
    real_malloc = fake.malloc
    def failing(nbytes):
        if nbytes >= 1 << 28:
            raise fake.CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")
        return real_malloc(nbytes)
    sys.modules["cupy"].cuda.runtime.malloc = failing
    try:
        ember.empty(1 << 26, device="cuda")
        raise AssertionError("no OutOfMemoryError")
    except ember.OutOfMemoryError as e:
        check("cudaErrorMemoryAllocation" in str(e) and "tried to allocate" in str(e), str(e))
    sys.modules["cupy"].cuda.runtime.malloc = real_malloc

    # training: no raw allocation after one warm-up step
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.Flatten(), ember.nn.Linear(64, 128), ember.nn.ReLU(),
                              ember.nn.Linear(128, 10)).cuda()
    opt = ember.optim.Adam(net.parameters(), lr=1e-3)
    xb, yb = ember.rand(64, 1, 8, 8).cuda(), ember.randint(0, 10, (64,)).cuda()
    def step():
        loss = ember.nn.functional.cross_entropy(net(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        return loss.item()
    step()
    before = ember.cuda.memory_stats()["num_device_alloc"]
    for _ in range(3):
        step()
    check(ember.cuda.memory_stats()["num_device_alloc"] == before, "raw allocations after warm-up")

    # ember.compile's fuser: runs become cupy.fuse kernels, called once per replayed run; values are eager's
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compile"))
    from _compile_steps import compare_device_mlp
    row = compare_device_mlp("cuda", "adam", steps=4)
    check(row["fused_kernels"] >= 4 and row["kernel_launches"] < row["kernel_calls"], row)
    check(fake._STATE["fused"] and all(n > 0 for n in fake._STATE["fused"].values()), fake._STATE["fused"])

    # the conformance suite, device checks included (streams, events, pinned memory are declared)
    from ember.testing.conformance._main import run_conformance
    from ember.testing.conformance._report import render_text
    text = render_text(run_conformance("cuda", ops="add,mul,sum,where,copy_,fill_,mm,gather,scatter_add,uniform,"
                                                   "softmax,mean,normal,cross_entropy"))
    if "result: PASSED" not in text:
        print(text[-6000:]); raise AssertionError("conformance on the fake cupy failed")
    print("ALL OK")
''')


def test_runtime_glue_on_fake_cupy():
    env = dict(os.environ, EMBER_PLUGINS="cpu,cuda", PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-c", f"HERE = {str(HERE)!r}\n" + SCRIPT], env=env, capture_output=True,
                       check=False, text=True, timeout=600)
    assert r.returncode == 0 and "ALL OK" in r.stdout, r.stdout[-6000:] + r.stderr[-6000:]
