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


PAIRS = [("vdev:0", "vdev:1"), ("vdev:0", "cpu"),
         pytest.param(("opencl:0", "cpu"), marks=pytest.mark.skipif(not _opencl_ok(), reason="no usable OpenCL "
                                                                                            "device here"))]


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
