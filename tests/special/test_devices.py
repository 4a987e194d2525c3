"""ember.special on devices with only the primitive kernels (vdev; opencl where a runtime is installed): the
formula ops run as composites, the others through their host path (counted and warned about as a fallback)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import _dispatch, profiler

# the host path's once-per-op warning is expected here (test_host_path_ops_match_cpu_and_are_counted checks it)
pytestmark = pytest.mark.filterwarnings("ignore:ember.*running it through its host path")


def _device(kind):
    ember.plugins.ensure_loaded()
    if kind not in ember._registry.device_types:
        pytest.skip(f"no '{kind}' plugin installed")
    if kind == "opencl" and not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    return ember.device(kind, 0)


@pytest.fixture(params=["vdev", "opencl"])
def dev(request):
    return _device(request.param)


X = np.array([0.3, 0.7, 1.5, 2.5, 4.0])


def test_host_path_ops_match_cpu_and_are_counted(dev, monkeypatch):
    monkeypatch.setattr(_dispatch, "_fallback_warned", set())
    x = ember.tensor(X, dtype=ember.float32)
    xd = x.to(dev)
    with warnings.catch_warnings(record=True) as w, profiler.record_fallbacks() as rec:
        warnings.simplefilter("always")
        r = ember.digamma(xd)
        ember.digamma(xd)
        z = ember.special.zeta(xd + 1, 2.0)
        p = ember.special.chebyshev_polynomial_t(xd / 5, 3)
    assert r.device == dev and z.device == dev and p.device == dev
    assert r.cpu().tolist() == ember.digamma(x).tolist()
    assert z.cpu().tolist() == ember.special.zeta(x + 1, 2.0).tolist()
    assert p.cpu().tolist() == ember.special.chebyshev_polynomial_t(x / 5, 3).tolist()
    assert rec.counts["digamma"] == 2 and rec.counts["special_zeta"] == 1
    msgs = [str(m.message) for m in w if "digamma" in str(m.message)]
    assert len(msgs) == 1 and "host path" in msgs[0]      # once per op
    assert _dispatch.ops["digamma"].source((dev.type, "strided", ember.float32)) == "fallback"


def test_formula_ops_are_composites_without_fallback(dev, monkeypatch):
    monkeypatch.setenv("EMBER_FALLBACK_WARN", "error")
    x = ember.tensor(X / 5, dtype=ember.float32)
    xd = x.to(dev)
    for f in (ember.sinc, ember.special.entr, ember.special.spherical_bessel_j0, ember.logit,
              lambda t: ember.xlogy(t, t + 1), lambda t: ember.special.xlog1py(t, 2.0), ember.special.ndtr):
        np.testing.assert_allclose(f(xd).cpu().numpy(), f(x).numpy(), rtol=2e-6, atol=1e-7)
    assert _dispatch.ops["sinc"].source((dev.type, "strided", ember.float32)) == "composite"
    # a host-path op refuses to run when fallbacks are forbidden
    with pytest.raises(RuntimeError, match="EMBER_FALLBACK_WARN=error"):
        ember.lgamma(xd)


def test_out_inplace_and_grad_on_device(dev):
    x = ember.tensor(X, dtype=ember.float32)
    xd = x.to(dev)
    out = ember.empty(5, device=dev)
    ember.special.i0e(xd, out=out)
    assert out.cpu().tolist() == ember.special.i0e(x).tolist()
    y = xd.clone()
    assert y.lgamma_() is y
    assert y.cpu().tolist() == ember.lgamma(x).tolist()
    a = xd.clone().requires_grad_()
    ember.mvlgamma(a + 1, 2).sum().backward()
    b = x.clone().requires_grad_()
    ember.mvlgamma(b + 1, 2).sum().backward()
    assert a.grad.device == dev
    np.testing.assert_allclose(a.grad.cpu().numpy(), b.grad.numpy(), rtol=1e-6)
