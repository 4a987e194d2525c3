"""The recipe examples/vendor_plugin/native_kernels.py: native conv2d / mm / bmm / addmm / softmax on vdev.

Loaded as an add-on plugin (``ember.plugins.register``), the ops resolve to its kernels on vdev
("native" in the dispatcher and in the conformance report), give cpu's results, and once it is
unregistered everything is as before (composites, and ember_vdev's primitive bmm).
"""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing.conformance import run_conformance

pytest.importorskip("ember_vdev")

RECIPE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin" / "native_kernels.py"
OPS = ["conv2d", "mm", "bmm", "addmm", "softmax"]
FLOATS = [ember.float16, ember.bfloat16, ember.float32, ember.float64]


def _key(dtype):
    return ("vdev", "strided", dtype)


def _sources(dtype):
    return {op: ember._dispatch.ops[op].source(_key(dtype)) for op in OPS}


@pytest.fixture
def native():
    spec = importlib.util.spec_from_file_location("native_kernels", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ember.plugins.register(module, name="vdev-native")
    try:
        yield module
    finally:
        ember.plugins.unregister("vdev-native")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_ops_resolve_native_and_come_back(native, dtype):
    assert set(_sources(dtype).values()) == {"native"}
    bmm = ember._dispatch.ops["bmm"]
    assert bmm.resolve(_key(dtype)) is native.mm              # it overrides ember_vdev's primitive bmm
    ember.plugins.unregister("vdev-native")
    try:
        assert _sources(dtype) == {"conv2d": "composite", "mm": "composite", "bmm": "native", "addmm": "composite",
                                   "softmax": "composite"}
        assert bmm.resolve(_key(dtype)) is not native.mm       # the primitive is back
    finally:
        ember.plugins.register(native, name="vdev-native")   # for the fixture's unregister


def test_integers_stay_composite(native):
    # the recipe registers its products for floating and complex dtypes only: integers keep the composites
    assert ember._dispatch.ops["mm"].source(_key(ember.int32)) == "composite"
    assert ember._dispatch.ops["mm"].source(_key(ember.complex64)) == "native"


def _close(got, want, dtype):
    tol = {ember.float16: 2e-2, ember.bfloat16: 1e-1}.get(dtype, 1e-5)
    assert got.device.type == "vdev" and got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.cpu().double().numpy(), want.double().numpy(), rtol=tol, atol=tol)


CASES = {
    "conv2d": lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1),
    "conv2d groups dilation": lambda x, w, b: F.conv2d(x, w[:, :2], None, padding=2, dilation=2, groups=2),
    "mm": lambda x, w, b: x.reshape(10, 24).mm(w.reshape(24, 6)),
    "mm transposed": lambda x, w, b: x.reshape(10, 24).t().mm(x.reshape(10, 24)[:, ::3]),
    "bmm": lambda x, w, b: x.reshape(2, 15, 8).bmm(x.reshape(2, 8, 15)),
    "matmul (bmm)": lambda x, w, b: x @ x.transpose(2, 3),
    "addmm": lambda x, w, b: ember.addmm(b[:2], x.reshape(15, 16)[:, :6], w.reshape(6, 24)[:, :2], beta=0.5,
                                         alpha=2),
    "addmm beta=0": lambda x, w, b: ember.addmm(b[:2] * float("nan"), x.reshape(15, 16)[:, :6].t(), x.reshape(15, 16)[:, :2],
                                                beta=0),
    "linear": lambda x, w, b: F.linear(x.reshape(10, 24), w.reshape(6, 24), b),
    "softmax": lambda x, w, b: x.softmax(1),
    "softmax dtype": lambda x, w, b: ember.softmax(x.transpose(1, 3), -1, dtype=ember.float64),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_matches_cpu(native, case, dtype):
    g = ember.Generator().manual_seed(0)
    x, w, b = (ember.randn(*s, generator=g).to(dtype) for s in ((2, 4, 5, 6), (6, 4, 3, 2), (6,)))
    want = CASES[case](x, w, b)
    got = CASES[case](x.to("vdev"), w.to("vdev"), b.to("vdev"))
    _close(got, want, want.dtype)


def test_autograd_through_native_kernels(native):
    x = ember.randn(2, 3, 6, 6, dtype=ember.float64, device="vdev", requires_grad=True)
    w = ember.randn(4, 3, 3, 3, dtype=ember.float64, device="vdev", requires_grad=True)
    m = ember.randn(4, 5, dtype=ember.float64, device="vdev", requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, w, m: F.conv2d(x, w, padding=1).sum((0, 3)).t().mm(m).softmax(-1),
                                    (x, w, m))


def test_conformance_report_says_native(native):
    results = run_conformance("vdev", ops=OPS, dtypes="float32,int64", device_checks=False, fast=True)
    assert results.exit_code == 0, [str(f) for f in results.failures]
    assert {op: results.cell(op, "float32") for op in OPS} == dict.fromkeys(OPS, "native")
    assert results.cell("mm", "int64") == "composite" and results.cell("bmm", "int64") == "native"


def test_report_shows_the_kernel_that_ran_for_promoted_inputs():
    # tan of an int64 tensor dispatches at the float32 key (its computation dtype): with a native float kernel,
    # the int64 column is native, although the (vdev, strided, int64) key itself would resolve to the composite
    import types
    from ember.plugins import hookimpl

    def tan(self, *, out):     # float32 out (self may be an integer tensor), through the host: enough for a test
        x = self.detach().cpu().numpy().astype(np.float32)
        out.copy_(ember.from_numpy(np.asarray(np.tan(x), dtype=np.float32)))

    addon = types.ModuleType("vdev_tan")
    addon.ember_plugin_info = hookimpl(lambda: {"name": "vdev-tan", "version": "0.1.0", "api_version": "1.1",
                                               "provides": {}})
    addon.ember_register = hookimpl(lambda registry: registry.library("vdev_tan").impl(
        "tan", tan, device="vdev", dtypes=[ember.float32], priority=10))
    ember.plugins.register(addon, name="vdev-tan")
    try:
        res = run_conformance("vdev", ops=["tan"], dtypes=["int64", "float32"], device_checks=False, fast=True)
        assert res.sources[("tan", "float32")] == "native"
        assert res.sources[("tan", "int64")] == "native"
        assert ember._dispatch.ops["tan"].source(_key(ember.int64)) == "composite"
        assert res.exit_code == 0 and res.cell("tan", "int64") == "native"
    finally:
        ember.plugins.unregister("vdev-tan")
    res = run_conformance("vdev", ops=["tan"], dtypes=["int64"], device_checks=False, fast=True)
    assert res.sources[("tan", "int64")] == "composite" and res.exit_code == 0
