"""The distributions on another device: the reference out-of-tree plugin's "vdev" (no device-specific code
in ember.distributions; samples, log_prob and rsample gradients stay on the parameters' device and the
densities equal cpu's)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.distributions as ED

pytest.importorskip("ember_vdev")

BUILDS = {
    "Normal": lambda t: ED.Normal(t([0.0, 1.0]), t([1.0, 2.0])),
    "Categorical": lambda t: ED.Categorical(t([0.2, 0.8])),
    "Gamma": lambda t: ED.Gamma(t([0.5, 2.0]), t([1.0, 3.0])),
    "Beta": lambda t: ED.Beta(t([2.0]), t([3.0])),
    "Dirichlet": lambda t: ED.Dirichlet(t([0.5, 2.0, 1.0])),
    "MultivariateNormal": lambda t: ED.MultivariateNormal(t([0.0, 1.0]), t([[2.0, 0.3], [0.3, 1.0]])),
    "LogNormal": lambda t: ED.LogNormal(t([0.0, 1.0]), t([1.0, 0.5])),
    "Poisson": lambda t: ED.Poisson(t([3.0])),
    "Bernoulli": lambda t: ED.Bernoulli(t([0.3, 0.9])),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_on_vdev(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # host-path notices of ops vdev lacks
        dv = BUILDS[name](lambda v: ember.tensor(v, dtype=ember.float64, device="vdev"))
        dc = BUILDS[name](lambda v: ember.tensor(v, dtype=ember.float64))
        x = dv.sample((4,))
        assert x.device.type == "vdev"
        lp = dv.log_prob(x)
        assert lp.device.type == "vdev"
        np.testing.assert_allclose(lp.cpu().numpy(), dc.log_prob(x.cpu()).numpy(), rtol=1e-12)
        if dv.has_rsample:
            p = dv.mean.detach().clone().requires_grad_() if name == "Normal" else None
            if p is not None:
                ED.Normal(p, 1.0).rsample((3,)).sum().backward()
                assert p.grad.device.type == "vdev"
                np.testing.assert_allclose(p.grad.cpu().numpy(), [3.0, 3.0])
            else:
                assert dv.rsample((2,)).device.type == "vdev"
