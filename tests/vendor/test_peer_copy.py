"""Direct device-to-device copies (issue 24, part 3): ``DeviceRuntime.copy_across``.

vdev copies between vdev:0 and vdev:1 arena to arena; the runtime's transfer counters prove the host
was not used, ``ember.profiler.record_copies`` says which path each copy took, and a runtime that
declines gets the core's host staging with the same values.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import profiler
from ember.library import DeviceRuntime
from ember.testing.conformance import run_conformance

pytest.importorskip("ember_vdev")
from ember_vdev.runtime import RUNTIME  # noqa: E402


def _host_transfers():
    t = ember.vdev.transfer_stats()
    return t["host_to_device"] + t["device_to_host"]


def test_vdev_to_vdev_is_direct_and_never_touches_the_host():
    x = ember.randn(5, 7, device="vdev:0")
    ember.vdev.reset_transfer_stats()
    with profiler.record_copies() as rec:
        y = x.to("vdev:1")
        z = ember.empty(7, 5, device="vdev:1")
        z.copy_(x.t())                                           # non-contiguous source
        w = ember.empty(3, 5, 7, dtype=ember.float64, device="vdev:0")
        w.copy_(y)                                               # broadcast + cast, back to vdev:0
    assert _host_transfers() == 0
    assert ember.vdev.transfer_stats()["peer"] == 3
    assert rec == {("vdev", "vdev", "direct"): 3}
    assert y.device == ember.device("vdev:1") and z.device == ember.device("vdev:1")
    want = x.cpu().numpy()
    np.testing.assert_array_equal(y.cpu().numpy(), want)
    np.testing.assert_array_equal(z.cpu().numpy(), want.T)
    np.testing.assert_array_equal(w.cpu().numpy(), np.broadcast_to(want.astype(np.float64), (3, 5, 7)))


def test_copies_to_other_device_types_stay_on_the_host_path():
    x = ember.randn(4, device="vdev:0")
    with profiler.record_copies() as rec:
        c = x.cpu()
        back = c.to("vdev:1")
    assert rec == {("vdev", "cpu", "host"): 1, ("cpu", "vdev", "host"): 1}
    np.testing.assert_array_equal(back.cpu().numpy(), c.numpy())


def test_a_runtime_that_declines_gets_the_same_values_through_the_host(monkeypatch):
    x = ember.arange(12, dtype=ember.float32, device="vdev:0").reshape(3, 4)[:, 1::2]
    direct = x.to("vdev:1").cpu().numpy()
    monkeypatch.setattr(RUNTIME, "copy_across", lambda dst, src, non_blocking=False: False)
    ember.vdev.reset_transfer_stats()
    with profiler.record_copies() as rec:
        staged = x.to("vdev:1")
    assert rec == {("vdev", "vdev", "host"): 1}
    assert ember.vdev.transfer_stats()["device_to_host"] == 1 and ember.vdev.transfer_stats()["peer"] == 0
    np.testing.assert_array_equal(staged.cpu().numpy(), direct)


def test_gradients_flow_back_across_devices_directly():
    x = ember.randn(6, device="vdev:0", requires_grad=True)
    with profiler.record_copies() as rec:
        loss = (x.to("vdev:1") * 3).sum()
        loss.backward()
    assert x.grad.device == ember.device("vdev:0")
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.full(6, 3, np.float32))
    assert set(rec) == {("vdev", "vdev", "direct")} and rec[("vdev", "vdev", "direct")] >= 2


def test_the_base_runtime_declines():
    assert DeviceRuntime.copy_across(object(), None, None) is False


def test_conformance_lists_the_copy_paths():
    res = run_conformance("vdev", ops=["add"], dtypes=["float32"], fast=True)
    assert res.exit_code == 0
    assert res.copy_paths.get(("vdev", "vdev", "direct"), 0) > 0
    assert not any(k == ("vdev", "vdev", "host") for k in res.copy_paths)
    outcome = [o for o in res.outcomes if o.test == "device_peer_copy"]
    assert [o.status for o in outcome] == ["passed"]


def test_the_peer_copy_check_catches_a_wrong_direct_copy(monkeypatch):
    def broken(dst, src, non_blocking=False):              # "copies" by filling zeros: a DMA bug
        if dst.device.type == src.device.type == "vdev":
            dst.zero_()
            return True
        return False
    monkeypatch.setattr(RUNTIME, "copy_across", broken)
    res = run_conformance("vdev", ops=["add"], dtypes=["float32"], fast=True)
    failed = [o for o in res.outcomes if o.test == "device_peer_copy"]
    assert failed and failed[0].status == "failed" and "vdev:0 -> vdev:1" in failed[0].message


def test_gradients_come_back_on_the_inputs_device_as_in_pytorch():
    # PyTorch: the backward of x.to(device) returns the gradient on x's device; a 0-dim cpu tensor used with
    # device tensors gets its gradient on cpu
    x = ember.randn(3, requires_grad=True)
    (x.to("vdev:0") * 2).sum().backward()
    assert x.grad.device == ember.device("cpu")
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2, np.float32))
    s = ember.tensor(2.0, requires_grad=True)
    v = ember.ones(4, device="vdev:0", requires_grad=True)
    (v * s).sum().backward()
    assert s.grad.device == ember.device("cpu") and s.grad.item() == 4.0
    assert v.grad.device == ember.device("vdev:0")
