"""ember.nn.functional activations: numpy references (values and, by gradcheck, gradients),
PyTorch's errors and warnings, in-place variants, and a comparison with torch where installed."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

F64 = ember.float64
_erf = np.vectorize(math.erf)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(0, x)


def _hsig(x):
    return np.clip(x / 6 + 0.5, 0, 1)


def _softmax(x, d):
    e = np.exp(x - x.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


# name, kwargs, numpy reference
REFS = [
    ("relu", {}, lambda x: np.maximum(x, 0)),
    ("leaky_relu", {"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    ("gelu", {}, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    ("gelu", {"approximate": "tanh"},
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("silu", {}, lambda x: x * _sig(x)),
    ("sigmoid", {}, _sig),
    ("tanh", {}, np.tanh),
    ("softplus", {}, _softplus),
    ("softplus", {"beta": 2.0, "threshold": 3.0}, lambda x: np.where(2 * x > 3, x, _softplus(2 * x) / 2)),
    ("elu", {"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    ("selu", {}, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("celu", {"alpha": 2.0}, lambda x: np.where(x > 0, x, 2 * np.expm1(x / 2))),
    ("hardtanh", {"min_val": -0.5, "max_val": 2.0}, lambda x: np.clip(x, -0.5, 2.0)),
    ("relu6", {}, lambda x: np.clip(x, 0, 6)),
    ("logsigmoid", {}, lambda x: -_softplus(-x)),
    ("mish", {}, lambda x: x * np.tanh(_softplus(x))),
    ("hardsigmoid", {}, _hsig),
    ("hardswish", {}, lambda x: x * _hsig(x)),
    ("softsign", {}, lambda x: x / (1 + np.abs(x))),
    ("tanhshrink", {}, lambda x: x - np.tanh(x)),
    ("hardshrink", {"lambd": 0.7}, lambda x: np.where(np.abs(x) > 0.7, x, 0)),
    ("softshrink", {"lambd": 0.7}, lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0))),
    ("threshold", {"threshold": 0.3, "value": -2.0}, lambda x: np.where(x > 0.3, x, -2.0)),
]
IDS = [f"{n}-{'-'.join(map(str, kw.values()))}" for n, kw, _ in REFS]

# values on a grid that avoids the kinks (0, +-0.3, +-0.7, +-3, 6) by at least 0.05
X = np.array([[-7.9, -4.1, -2.2, -1.1, -0.45, -0.12],
              [0.11, 0.52, 1.3, 2.6, 4.4, 8.5]])


@pytest.mark.parametrize("name,kw,ref", REFS, ids=IDS)
def test_matches_numpy(name, kw, ref):
    out = getattr(F, name)(ember.tensor(X), **kw)
    assert out.dtype == F64 and out.shape == X.shape
    np.testing.assert_allclose(out.numpy(), ref(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,kw,ref", REFS, ids=IDS)
def test_gradcheck(name, kw, ref):
    x = ember.tensor(X / 2, requires_grad=True)
    assert gradcheck(lambda t: getattr(F, name)(t, **kw), (x,))


def test_large_inputs_stay_finite():
    x = ember.tensor([-1000.0, -50.0, 50.0, 1000.0], requires_grad=True)
    for fn in (F.softplus, F.logsigmoid, F.mish, F.elu, F.silu):
        y = fn(x)
        y.sum().backward()
        assert np.all(np.isfinite(y.detach().numpy())), fn.__name__
        assert np.all(np.isfinite(x.grad.numpy())), fn.__name__
        x.grad = None
    np.testing.assert_allclose(F.logsigmoid(x).detach().numpy(), [-1000, -50, -1.9287e-22, 0], rtol=1e-4)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(dim):
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    t = ember.tensor(x)
    np.testing.assert_allclose(F.softmax(t, dim).numpy(), _softmax(x, dim), atol=1e-12)
    np.testing.assert_allclose(F.log_softmax(t, dim).numpy(), np.log(_softmax(x, dim)), atol=1e-12)
    np.testing.assert_allclose(F.softmin(t, dim).numpy(), _softmax(-x, dim), atol=1e-12)
    xt = ember.tensor(x[:, :2, :2], requires_grad=True)
    assert gradcheck(lambda a: F.log_softmax(a, dim), (xt,))
    assert gradcheck(lambda a: F.softmax(a, dim), (xt,))


def test_softmax_dtype_and_implicit_dim():
    x = ember.randn(2, 3)
    assert F.softmax(x, 1, dtype=F64).dtype == F64
    assert F.log_softmax(x, 0, dtype=F64).dtype == F64
    for shape, dim in [((4,), 0), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4, 5), 1)]:
        x = ember.randn(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated. "
                                             "Change the call to include dim=X as an argument."):
            y = F.softmax(x)
        np.testing.assert_allclose(y.numpy(), F.softmax(x, dim).numpy())
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        F.log_softmax(ember.randn(2, 3))


def test_inplace_variants_return_input():
    for fn, kw in [(F.relu, {}), (F.leaky_relu, {}), (F.elu, {}), (F.hardtanh, {}), (F.relu6, {}), (F.silu, {}),
                   (F.threshold, {"threshold": 0.0, "value": 1.0}), (F.mish, {}), (F.hardswish, {})]:
        x = ember.tensor(X.copy())
        ref = fn(x, **kw)
        y = fn(x, inplace=True, **kw)
        assert y is x, fn.__name__
        np.testing.assert_array_equal(x.numpy(), ref.numpy())
    x = ember.tensor(X.copy())
    assert F.relu_(x) is x and x.numpy().min() == 0
    x = ember.tensor(X.copy())
    assert F.elu_(x) is x and F.leaky_relu_(x) is x and F.hardtanh_(x) is x and F.threshold_(x, 0.5, 0.0) is x


def test_relu_gradient_at_zero_and_integer_input():
    x = ember.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    F.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1])
    y = F.relu(ember.tensor([-1, 2]))
    assert y.dtype == ember.int64 and y.tolist() == [0, 2]


def test_glu_and_prelu():
    x = np.random.default_rng(1).standard_normal((2, 6))
    np.testing.assert_allclose(F.glu(ember.tensor(x)).numpy(), x[:, :3] * _sig(x[:, 3:]), atol=1e-12)
    np.testing.assert_allclose(F.glu(ember.tensor(x), 0).numpy(), x[:1] * _sig(x[1:]), atol=1e-12)
    w = np.array([0.1, 0.2, 0.3])
    x3 = np.random.default_rng(2).standard_normal((2, 3, 4))
    np.testing.assert_allclose(F.prelu(ember.tensor(x3), ember.tensor(w)).numpy(),
                               np.where(x3 > 0, x3, x3 * w[:, None]), atol=1e-12)


ERRORS = [
    (lambda: F.gelu(ember.randn(3), approximate="foo"), RuntimeError, "approximate argument must be either none or tanh."),
    (lambda: F.hardtanh(ember.randn(3), 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
    (lambda: F.leaky_relu(ember.arange(3)), NotImplementedError, "\"leaky_relu\" not implemented for 'Long'"),
    (lambda: F.silu(ember.arange(3)), NotImplementedError, "\"silu\" not implemented for 'Long'"),
    (lambda: F.softplus(ember.arange(3)), NotImplementedError, "\"softplus\" not implemented for 'Long'"),
    (lambda: F.glu(ember.randn(3)), RuntimeError, "Halving dimension must be even, but dimension 0 is size 3"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert msg in str(info.value)


# ----------------------------------------------------------------------------- against torch
@pytest.mark.parametrize("name,kw,ref", REFS, ids=IDS)
def test_against_torch(name, kw, ref):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 4)) * 4
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = getattr(F, name)(ex, **kw), getattr(torch.nn.functional, name)(tx, **kw)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(1).standard_normal(x.shape)
    ey.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    # rtol 1e-7: torch computes hardsigmoid's gradient with a float32 1/6
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-12)


def test_softmax_against_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for fn in ("softmax", "log_softmax", "softmin"):
        for dim in (0, 1, 2):
            np.testing.assert_allclose(getattr(F, fn)(ember.tensor(x), dim).numpy(),
                                       getattr(torch.nn.functional, fn)(torch.tensor(x), dim).numpy(), atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(F.softmax(ember.tensor(x)).numpy(),
                                   torch.nn.functional.softmax(torch.tensor(x)).numpy(), atol=1e-6)
