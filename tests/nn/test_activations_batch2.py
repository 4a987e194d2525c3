"""Activation modules and their functional forms against torch: values and float64 gradients,
reprs, in-place forms, integer-dtype errors, RReLU's train/eval semantics and Softmax2d's shapes;
plus the torch.nn.modules.* import paths (pickled-path allow-lists)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((3, 4, 5, 2)) * 3
X[0, 0, 0, 0] = 0.0

# (module name, constructor args)
CASES = [("PReLU", ()), ("PReLU", (4, 0.1)), ("RReLU", ()), ("CELU", ()), ("CELU", (0.7,)), ("SELU", ()),
         ("GLU", ()), ("GLU", (1,)), ("Mish", ()), ("Hardswish", ()), ("Hardsigmoid", ()), ("Softmin", (1,)),
         ("Softmax2d", ()), ("LogSigmoid", ()), ("Tanhshrink", ()), ("Threshold", (0.5, -2.0)),
         ("ELU", (0.5,)), ("Softplus", (2, 3)), ("Hardshrink", ()), ("Softshrink", (0.3,)), ("Softsign", ()),
         ("LeakyReLU", (0.2,)), ("ReLU6", ()), ("Hardtanh", (-0.5, 0.7)), ("SiLU", ()), ("GELU", ("tanh",))]


def _ids(c):
    return c[0] + "".join(f"-{a}" for a in c[1])


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_module_matches_torch(case):
    name, args = case
    em, tm = getattr(nn, name)(*args).double().eval(), getattr(torch.nn, name)(*args).double().eval()
    assert repr(em) == repr(tm)
    xe, xt = ember.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    ye, yt = em(xe), tm(xt)
    assert tuple(ye.shape) == tuple(yt.shape) and ye.dtype == ember.float64
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    (ye * ember.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    # a few PyTorch backward formulas round a constant to float32 even in float64 (CELU's 1 / alpha,
    # Hardsigmoid's 1 / 6), hence rtol 1e-6 rather than 1e-12 on the gradients
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-12)
    for (n, pe), (_, pt) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-10, err_msg=n)


@pytest.mark.parametrize("fn,args", [("rrelu", ()), ("selu", ()), ("celu", (0.5,)), ("mish", ()),
                                     ("hardswish", ()), ("hardsigmoid", ()), ("logsigmoid", ()),
                                     ("tanhshrink", ()), ("glu", ()), ("softmin", (0,)),
                                     ("threshold", (0.1, 20.0))])
def test_functional_matches_torch_and_rejects_integers(fn, args):
    ye = getattr(F, fn)(ember.tensor(X), *args)
    yt = getattr(torch.nn.functional, fn)(torch.tensor(X), *args)
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), rtol=1e-12, atol=1e-12)
    if fn not in ("threshold", "tanhshrink"):
        for lib in (torch, ember):
            with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
                getattr(lib.nn.functional, fn)(lib.ones(4, dtype=lib.long), *args)


@pytest.mark.parametrize("fn,args", [("selu_", ()), ("celu_", (0.5,)), ("rrelu_", ()), ("elu_", ())])
def test_inplace_forms(fn, args):
    xe, xt = ember.tensor(X), torch.tensor(X)
    re, rt = getattr(F, fn)(xe, *args), getattr(torch.nn.functional, fn)(xt, *args)
    assert re is xe
    np.testing.assert_allclose(xe.numpy(), xt.numpy(), rtol=1e-12)


@pytest.mark.parametrize("fn", ["hardtanh", "relu6", "hardsigmoid", "hardswish", "logsigmoid", "softplus",
                                "relu", "leaky_relu", "elu", "celu", "selu", "threshold"])
def test_gradients_at_kinks_match_torch(fn):
    """The subgradient PyTorch picks at the points where the function is not smooth."""
    pts = [-3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 20.0]
    args = (0.0, 5.0) if fn == "threshold" else ()
    xe = ember.tensor(pts, dtype=ember.float64, requires_grad=True)
    xt = torch.tensor(pts, dtype=torch.float64, requires_grad=True)
    getattr(F, fn)(xe, *args).sum().backward()
    getattr(torch.nn.functional, fn)(xt, *args).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_rrelu_training_draws_slopes_in_range():
    x = -ember.rand(2000, dtype=ember.float64) - 0.1
    m = nn.RReLU(0.1, 0.3)
    y = m(x)
    slope = (y / x).numpy()
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03
    pos = ember.rand(50, dtype=ember.float64)
    np.testing.assert_array_equal(m(pos).numpy(), pos.numpy())
    x.requires_grad_(True)
    y = m(x)
    y.sum().backward()
    # the gradient of a negative input is its drawn slope
    assert x.grad.min().item() >= 0.1 and x.grad.max().item() <= 0.3
    m.eval()
    np.testing.assert_allclose((m(x) / x).detach().numpy(), 0.2)


def test_softmax2d_shapes_and_errors():
    x = np.random.default_rng(2).standard_normal((3, 4, 5))
    np.testing.assert_allclose(nn.Softmax2d()(ember.tensor(x)).numpy(),
                               torch.nn.Softmax2d()(torch.tensor(x)).numpy(), rtol=1e-12)
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
            lib.nn.Softmax2d()(lib.zeros(3, 4))


def test_prelu_channel_mismatch_raises_like_torch():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError):
            lib.nn.PReLU(3)(lib.zeros(2, 4, 5))


def test_nn_modules_paths_match_torch():
    """Every class torch.nn.modules.<file> defines, for the files that hold what ember has, resolves at
    the same path in ember.nn.modules (so pickles and allow-lists naming these paths load)."""
    files = ["activation", "linear", "conv", "loss", "container", "normalization", "batchnorm", "dropout",
             "sparse", "rnn", "transformer", "pooling", "flatten", "module", "pixelshuffle", "upsampling",
             "channelshuffle", "fold", "instancenorm", "distance", "padding", "lazy"]
    for f in files:
        em = importlib.import_module(f"ember.nn.modules.{f}")
        tm = importlib.import_module(f"torch.nn.modules.{f}")
        for name in getattr(tm, "__all__", []):
            if hasattr(nn, name) and name in dir(torch.nn):
                assert getattr(em, name) is getattr(nn, name), f"ember.nn.modules.{f}.{name}"
    assert nn.modules.activation.MultiheadAttention is nn.MultiheadAttention
    assert nn.modules.linear.Linear is nn.Linear and nn.modules.conv.Conv2d is nn.Conv2d
