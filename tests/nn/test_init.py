"""ember.nn.init: gains, fans, distributions (seeded statistics with tolerances), errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn import init


def stats(x):
    a = x.detach().numpy().astype(np.float64)
    return a.mean(), a.std(), a.min(), a.max()


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fans():
    assert init._calculate_fan_in_and_fan_out(ember.empty(4, 3)) == (3, 4)
    assert init._calculate_fan_in_and_fan_out(ember.empty(8, 2, 3, 5)) == (30, 120)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                                         "dimensions"):
        init.xavier_uniform_(ember.empty(3))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")


def test_uniform_normal_constant():
    ember.manual_seed(0)
    w = ember.empty(200, 100)
    assert init.uniform_(w, -2.0, 3.0) is w
    m, s, lo, hi = stats(w)
    assert lo >= -2.0 and hi < 3.0 and abs(m - 0.5) < 0.05 and abs(s - 5 / math.sqrt(12)) < 0.03
    init.normal_(w, 1.0, 0.5)
    m, s, _, _ = stats(w)
    assert abs(m - 1.0) < 0.01 and abs(s - 0.5) < 0.01
    assert init.constant_(w, 0.3).numpy().max() == pytest.approx(0.3)
    assert init.zeros_(w).numpy().max() == 0.0
    assert init.ones_(w).numpy().min() == 1.0


def test_generator_reproducible():
    a, b = ember.empty(50), ember.empty(50)
    init.normal_(a, generator=ember.Generator().manual_seed(3))
    init.normal_(b, generator=ember.Generator().manual_seed(3))
    assert a.tolist() == b.tolist()
    init.trunc_normal_(a, generator=ember.Generator().manual_seed(4))
    init.trunc_normal_(b, generator=ember.Generator().manual_seed(4))
    assert a.tolist() == b.tolist()


def test_xavier():
    ember.manual_seed(0)
    w = ember.empty(300, 200)
    init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 500)
    m, s, lo, hi = stats(w)
    assert -bound <= lo and hi <= bound and abs(s - bound / math.sqrt(3)) < 0.01 * bound
    init.xavier_normal_(w)
    assert abs(stats(w)[1] - math.sqrt(2 / 500)) < 0.01 * math.sqrt(2 / 500) * 3


@pytest.mark.parametrize("mode, nonlin, a", [("fan_in", "relu", 0), ("fan_out", "leaky_relu", 0.1),
                                             ("fan_in", "leaky_relu", math.sqrt(5))])
def test_kaiming(mode, nonlin, a):
    ember.manual_seed(1)
    w = ember.empty(256, 32, 3, 3)
    fan = 32 * 9 if mode == "fan_in" else 256 * 9
    std = init.calculate_gain(nonlin, a) / math.sqrt(fan)
    init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nonlin)
    _, s, lo, hi = stats(w)
    bound = math.sqrt(3) * std
    assert -bound <= lo and hi <= bound and abs(s - std) < 0.02 * std
    init.kaiming_normal_(w, a=a, mode=mode, nonlinearity=nonlin)
    assert abs(stats(w)[1] - std) < 0.02 * std


def test_kaiming_zero_element_warns():
    w = ember.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(w) is w


def test_trunc_normal():
    ember.manual_seed(0)
    w = ember.empty(100000)
    init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.5)
    a = w.numpy().astype(np.float64)
    assert a.min() >= -1.0 and a.max() <= 1.5
    # moments of N(0.5, 1) truncated to [-1, 1.5]: alpha = -1.5, beta = 1
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))
    al, be = -1.5, 1.0
    Z = cdf(be) - cdf(al)
    mean = 0.5 + (phi(al) - phi(be)) / Z
    var = 1 + (al * phi(al) - be * phi(be)) / Z - ((phi(al) - phi(be)) / Z) ** 2
    assert abs(a.mean() - mean) < 0.01 and abs(a.std() - math.sqrt(var)) < 0.01
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(ember.empty(3), mean=10.0)


def test_eye_and_dirac():
    w = ember.empty(3, 4)
    assert init.eye_(w).tolist() == np.eye(3, 4).tolist()
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(2, 2, 2))
    d = init.dirac_(ember.empty(2, 2, 3, 3))
    a = d.numpy()
    assert a.sum() == 2 and a[0, 0, 1, 1] == 1 and a[1, 1, 1, 1] == 1
    g = init.dirac_(ember.empty(4, 2, 3), groups=2).numpy()
    assert g.sum() == 4 and g[2, 0, 1] == 1 and g[3, 1, 1] == 1
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(ember.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(ember.empty(3, 2, 3), groups=2)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 2)])
def test_orthogonal(shape):
    ember.manual_seed(0)
    w = ember.empty(*shape)
    init.orthogonal_(w, gain=2.0)
    a = w.numpy().reshape(shape[0], -1).astype(np.float64) / 2.0
    if a.shape[0] >= a.shape[1]:
        np.testing.assert_allclose(a.T @ a, np.eye(a.shape[1]), atol=1e-5)
    else:
        np.testing.assert_allclose(a @ a.T, np.eye(a.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(ember.empty(3))


def test_init_is_no_grad_and_keeps_leaf():
    p = nn.Parameter(ember.empty(3, 4))
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.trunc_normal_,
               init.orthogonal_, init.zeros_, init.eye_):
        assert fn(p) is p
        assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_sparse_():
    ember.manual_seed(0)
    w = init.sparse_(ember.empty(10, 4), sparsity=0.3)
    zeros_per_col = (w.numpy() == 0).sum(0)
    assert (zeros_per_col >= 3).all()


def test_deprecated_aliases():
    with pytest.warns(FutureWarning, match="nn.init.normal_"):
        init.normal(ember.empty(2))
