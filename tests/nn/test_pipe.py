"""nn.parallel.Pipe (issue 24, part 2): GPipe over devices of any types, checked against the unsplit
model (PyTorch 2.13 no longer ships Pipe; the contract is torchgpipe's)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
from ember import nn, profiler
from ember.nn.parallel import Pipe

pytest.importorskip("ember_vdev")


def _opencl_ok():
    try:
        return ember.opencl.is_available()
    except (AttributeError, RuntimeError):
        return False


_NEEDS_OPENCL = pytest.mark.skipif(not _opencl_ok(), reason="no usable OpenCL device here")
PAIRS = [("vdev:0", "vdev:1"), ("vdev:0", "cpu"), pytest.param(("opencl:0", "cpu"), marks=_NEEDS_OPENCL),
         pytest.param(("cpu", "opencl:0"), marks=_NEEDS_OPENCL)]


def _seq(seed=0, dropout=0.0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 3))


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("devices", PAIRS, ids=lambda p: "+".join(p))
@pytest.mark.parametrize("checkpoint", ["never", "except_last", "always"])
@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_output_and_gradients_equal_the_unsplit_model(devices, checkpoint, chunks):
    whole = _seq()
    pipe = Pipe(copy.deepcopy(whole), chunks=chunks, checkpoint=checkpoint, devices=devices, balance=[3, 3])
    x = ember.randn(8, 6)
    out = pipe(x.to(devices[0]))
    assert out.device == ember.device(devices[1])
    want = whole(x)
    np.testing.assert_allclose(_np(out), _np(want), rtol=1e-5, atol=1e-6)
    (out * out).sum().backward()
    (want * want).sum().backward()
    for (name, p), q in zip(whole.named_parameters(), pipe.parameters()):
        assert q.grad is not None and q.grad.device == q.device, name
        np.testing.assert_allclose(_np(q.grad), _np(p.grad), rtol=1e-4, atol=1e-5, err_msg=name)


def test_partitions_from_where_the_children_sit():
    seq = _seq()
    seq[0].to("vdev:0")
    seq[3].to("vdev:1")
    seq[5].to("vdev:1")
    pipe = Pipe(seq, chunks=2)
    assert pipe.devices == [ember.device("vdev:0"), ember.device("vdev:1")]
    assert [len(p) for p in pipe.partitions] == [3, 3]      # Tanh and Dropout join the partition before them
    assert len(pipe) == 6 and pipe[3] is seq[3] and list(pipe) == list(seq)
    assert list(pipe.state_dict())[:2] == ["partitions.0.0.weight", "partitions.0.0.bias"]
    out = pipe(ember.randn(4, 6, device="vdev:0"))
    assert out.device == ember.device("vdev:1") and tuple(out.shape) == (4, 3)


def test_checkpointing_replays_dropout():
    x = ember.randn(8, 6, device="vdev:0")
    grads = {}
    for mode in ("never", "always"):
        pipe = Pipe(_seq(dropout=0.5), chunks=4, checkpoint=mode, devices=["vdev:0", "vdev:1"], balance=[3, 3])
        ember.manual_seed(7)
        ember.vdev.manual_seed_all(7)
        pipe(x).sum().backward()
        grads[mode] = [_np(p.grad) for p in pipe.parameters()]
    for a, b in zip(grads["never"], grads["always"]):
        np.testing.assert_array_equal(a, b)


def test_micro_batches_cross_devices_directly():
    pipe = Pipe(_seq(), chunks=4, devices=["vdev:0", "vdev:1"], balance=[2, 4])
    with profiler.record_copies() as rec:
        pipe(ember.randn(8, 6, device="vdev:0")).sum().backward()
    assert rec.get(("vdev", "vdev", "direct"), 0) >= 8          # 4 micro-batches forward, 4 gradients back
    assert not any(path == "host" for _, _, path in rec)


def test_checkpointing_lowers_the_activation_memory_held_after_forward():
    ember.manual_seed(0)
    layers = [nn.Linear(256, 256) if i % 2 == 0 else nn.GELU() for i in range(8)]
    held = {}
    for mode in ("never", "always"):
        pipe = Pipe(nn.Sequential(*copy.deepcopy(layers)), chunks=4, checkpoint=mode,
                    devices=["vdev:0", "vdev:1"], balance=[4, 4])
        x = ember.randn(64, 256, device="vdev:0")
        before = ember.vdev.memory_allocated(1)
        out = pipe(x)
        held[mode] = ember.vdev.memory_allocated(1) - before
        out.sum().backward()
        del out
    assert held["always"] < 0.6 * held["never"], held


def test_errors():
    with pytest.raises(TypeError, match="module must be nn.Sequential to be partitioned"):
        Pipe(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="number of chunks must be positive integer"):
        Pipe(_seq(), chunks=0)
    with pytest.raises(ValueError, match="checkpoint is not one of"):
        Pipe(_seq(), checkpoint="sometimes")
    with pytest.raises(ValueError, match=r"module and sum of balance have different length \(module: 6, sum of "
                                         r"balance: 5\)"):
        Pipe(_seq(), devices=["vdev:0", "vdev:1"], balance=[2, 3])
    with pytest.raises(IndexError, match=r"too few devices to hold given partitions \(devices: 1, partitions: 2\)"):
        Pipe(_seq(), devices=["vdev:0"], balance=[3, 3])
    pipe = Pipe(_seq(), chunks=4, devices=["vdev:0", "vdev:1"], balance=[3, 3])
    with pytest.raises(ValueError, match=r"the input is on cpu, but the first partition is on vdev:0"):
        pipe(ember.randn(8, 6))
    with pytest.raises(ValueError, match=r"chunks \(4\) must not exceed the batch size \(3\)"):
        pipe(ember.randn(3, 6, device="vdev:0"))
    bn = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4))
    with pytest.raises(ValueError, match="BatchNorm layer '1' is in training mode"):
        Pipe(bn, chunks=2, devices=["vdev:0", "vdev:1"], balance=[1, 1])(ember.randn(4, 6, device="vdev:0"))
    bn.eval()
    out = Pipe(bn, chunks=2, devices=["vdev:0", "vdev:1"], balance=[1, 1])(ember.randn(4, 6, device="vdev:0"))
    assert tuple(out.shape) == (4, 4)


def _issue_log(monkeypatch, pipe, asynchronous):
    """Record, in order, every partition call ("run", stage) and every micro-batch copy ("copy", to stage) of
    ``pipe`` over vdev:0 + vdev:1, with vdev marked asynchronous per device as ``asynchronous`` says."""
    from ember.nn.parallel import pipe as pipe_mod
    from ember_vdev.runtime import RUNTIME
    log = []
    monkeypatch.setattr(pipe_mod, "_asynchronous", lambda dev: asynchronous[dev.index])
    real = RUNTIME.copy_across

    def copy_across(dst, src, non_blocking=False):
        log.append(("copy", dst.device.index))
        return real(dst, src, non_blocking)
    monkeypatch.setattr(RUNTIME, "copy_across", copy_across)
    for j, part in enumerate(pipe.partitions):
        part.register_forward_pre_hook(lambda m, args, j=j: log.append(("run", j)))
    return log


@pytest.mark.parametrize("checkpoint", ["never", "always"])
def test_each_clock_copies_first_then_runs_asynchronous_devices_first(monkeypatch, checkpoint):
    # clock c runs micro-batch c on stage 0 and c - 1 on stage 1: both inputs are moved before either
    # partition runs, and the partition on the asynchronous device is issued before the synchronous one
    for asynchronous, clock in (((False, True), [("run", 1), ("run", 0)]),
                                ((True, False), [("run", 0), ("run", 1)])):
        pipe = Pipe(_seq(), chunks=3, checkpoint=checkpoint, devices=["vdev:0", "vdev:1"], balance=[3, 3])
        log = _issue_log(monkeypatch, pipe, asynchronous)
        pipe(ember.randn(6, 6, device="vdev:0"))            # grad mode on: "always" checkpoints every task
        assert log == [("run", 0), ("copy", 1), *clock, ("copy", 1), *clock, ("copy", 1), ("run", 1)], asynchronous


def test_the_former_order_is_kept_behind_the_benchmark_switch(monkeypatch):
    pipe = Pipe(_seq(), chunks=3, devices=["vdev:0", "vdev:1"], balance=[3, 3])
    pipe._overlap = False
    log = _issue_log(monkeypatch, pipe, (False, True))
    with ember.no_grad():
        pipe(ember.randn(6, 6, device="vdev:0"))
    assert log == [("run", 0), ("run", 0), ("copy", 1), ("run", 1), ("run", 0), ("copy", 1), ("run", 1),
                   ("copy", 1), ("run", 1)]


def test_runtimes_declare_whether_they_compute_asynchronously():
    from ember.library import DeviceRuntime
    from ember_vdev.runtime import RUNTIME
    from ember.nn.parallel.pipe import _asynchronous
    assert DeviceRuntime.asynchronous is False and RUNTIME.asynchronous is False
    assert not _asynchronous(ember.device("cpu")) and not _asynchronous(ember.device("vdev:0"))
    if _opencl_ok():
        assert _asynchronous(ember.device("opencl:0"))


@_NEEDS_OPENCL
@pytest.mark.parametrize("devices", [("opencl:0", "cpu"), ("cpu", "opencl:0")], ids=lambda p: "+".join(p))
@pytest.mark.parametrize("checkpoint", ["never", "except_last"])
def test_opencl_and_cpu_overlapped_order_equals_the_former_order_and_the_unsplit_model(devices, checkpoint):
    # dropout on both stages: each device draws from its own generator in the same order under both orders,
    # so the overlapped schedule reproduces the former one bit for bit, and without dropout the unsplit model
    grads, outs = {}, {}
    x = ember.randn(8, 6)
    for overlap in (False, True):
        pipe = Pipe(_seq(dropout=0.5).append(nn.Dropout(0.3)), chunks=4, checkpoint=checkpoint, devices=devices,
                    balance=[3, 4])
        pipe._overlap = overlap
        ember.manual_seed(11)
        ember.opencl.manual_seed_all(11)
        out = pipe(x.to(devices[0]))
        (out * out).sum().backward()
        outs[overlap], grads[overlap] = _np(out), [_np(p.grad) for p in pipe.parameters()]
    np.testing.assert_array_equal(outs[True], outs[False])
    for a, b in zip(grads[True], grads[False]):
        np.testing.assert_array_equal(a, b)
    whole = _seq()
    pipe = Pipe(copy.deepcopy(whole), chunks=8, checkpoint=checkpoint, devices=devices, balance=[3, 3])
    out = pipe(x.to(devices[0]))
    want = whole(x)
    np.testing.assert_allclose(_np(out), _np(want), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    want.sum().backward()
    for (name, p), q in zip(whole.named_parameters(), pipe.parameters()):
        np.testing.assert_allclose(_np(q.grad), _np(p.grad), rtol=1e-4, atol=1e-5, err_msg=name)


@_NEEDS_OPENCL
def test_opencl_work_is_still_queued_while_the_cpu_partition_computes():
    # opencl:0 -> cpu: with copies first and the asynchronous device first, the OpenCL kernels of micro-batch i
    # are queued (not finished) when the cpu starts stage 1 of micro-batch i - 1; in the former order the copy
    # of micro-batch i - 1 to the cpu waited for the whole queue, so nothing was left when the cpu started
    import pyopencl as cl
    from ember_opencl._runtime import RUNTIME
    queue = RUNTIME.state(0).queue
    ember.manual_seed(0)
    seq = nn.Sequential(*[nn.Linear(512, 512) for _ in range(6)], nn.Linear(512, 512))
    pending = {}
    for overlap in (False, True):
        pipe = Pipe(copy.deepcopy(seq), chunks=4, checkpoint="never", devices=["opencl:0", "cpu"], balance=[6, 1])
        pipe._overlap = overlap
        seen = pending[overlap] = []
        pipe.partitions[1].register_forward_pre_hook(
            lambda m, args: seen.append(cl.enqueue_marker(queue).command_execution_status
                                        != cl.command_execution_status.COMPLETE))
        x = ember.randn(512, 512, device="opencl:0")
        with ember.no_grad():
            pipe(x)
        ember.opencl.synchronize()
    assert pending[False] == [False] * 4, pending
    assert pending[True][:3] == [True] * 3 and pending[True][3] is False, pending    # the last has nothing after it
