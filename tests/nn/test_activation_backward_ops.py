"""threshold_backward, _softmax_backward_data and _log_softmax_backward_data: the one-op derivatives of relu, softmax
and log_softmax, compared with PyTorch's aten ops side by side (values, dtypes, errors, first and second derivatives).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
A = torch.ops.aten

DTYPES = [(ember.float32, torch.float32), (ember.float64, torch.float64), (ember.float16, torch.float16),
          (ember.bfloat16, torch.bfloat16)]


def _pair(a, dt, tdt):
    return ember.tensor(a, dtype=dt), torch.tensor(a, dtype=tdt)


def _close(e, t, dt):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    tol = {ember.float16: 2e-3, ember.bfloat16: 1.6e-2, ember.float32: 1e-6}.get(dt, 1e-13)
    np.testing.assert_allclose(e.float().numpy() if e.dtype.itemsize < 4 else e.numpy(),
                               t.float().numpy() if t.dtype.itemsize < 4 else t.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dt,tdt", DTYPES, ids=lambda d: str(d))
@pytest.mark.parametrize("name,fwd", [("_log_softmax_backward_data", "log_softmax"),
                                      ("_softmax_backward_data", "softmax")])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_backward_data_matches_aten(name, fwd, dim, dt, tdt):
    rng = np.random.default_rng(0)
    g, x = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    G, tG = _pair(g, dt, tdt)
    Y = getattr(ember, fwd)(ember.tensor(x, dtype=dt), dim)
    tY = getattr(torch, fwd)(torch.tensor(x, dtype=tdt), dim)
    _close(getattr(ember, name)(G, Y, dim, dt), getattr(A, name)(tG, tY, dim, tdt), dt)


def test_half_to_float_result_dtype_and_errors_match_aten():
    g, y = ember.randn(3, 4), ember.randn(3, 4).log_softmax(1)
    tg, ty = torch.tensor(g.numpy()), torch.tensor(y.numpy())
    for name in ("_log_softmax_backward_data", "_softmax_backward_data"):
        # float16 input softmaxed in float32: float16, PyTorch's CUDA result (its cpu kernel raises)
        assert getattr(ember, name)(g, y, 1, ember.float16).dtype is ember.float16
        assert getattr(ember, name)(g, y, 1, ember.bfloat16).dtype is ember.float32
        assert getattr(A, name)(tg, ty, 1, torch.bfloat16).dtype is torch.float32
        assert getattr(ember, name)(g.half(), y.half(), 1, ember.float32).dtype is ember.float16
        assert getattr(A, name)(tg.half(), ty.half(), 1, torch.float32).dtype is torch.float16
        assert getattr(ember, name)(g.double(), y.double(), 1, ember.float32).dtype is ember.float64
        assert getattr(A, name)(tg.double(), ty.double(), 1, torch.float32).dtype is torch.float64
        for args, targs in [((g, y, 2), (tg, ty, 2)), ((g, y.double(), 1), (tg, ty.double(), 1)),
                            ((g.long(), y.long(), 1), (tg.long(), ty.long(), 1))]:
            with pytest.raises(Exception) as want:
                getattr(A, name)(*targs, torch.float32)
            with pytest.raises(type(want.value)) as got:
                getattr(ember, name)(*args, ember.float32)
            if not isinstance(want.value, IndexError):
                assert str(got.value) == str(want.value)
    with pytest.raises(RuntimeError, match="differ"):
        ember._log_softmax_backward_data(g, ember.randn(3, 5), 1, ember.float32)


@pytest.mark.parametrize("dt,tdt", DTYPES + [(ember.int32, torch.int32)], ids=lambda d: str(d))
def test_threshold_backward_matches_aten_with_nan_inf_and_broadcast(dt, tdt):
    rng = np.random.default_rng(1)
    g, x = rng.standard_normal((3, 5)) * 4, rng.standard_normal((3, 5))
    if dt.is_floating_point:
        g[0, 1], g[1, 2], x[2, 3] = np.nan, np.inf, np.nan
    G, tG = _pair(g, dt, tdt)
    X, tX = _pair(x, dt, tdt)
    for thr in (0, 0.5, -1):
        e, t = ember.threshold_backward(G, X, thr), A.threshold_backward(tG, tX, thr)
        assert np.array_equal(e.float().numpy(), t.float().numpy(), equal_nan=True)
    e, t = ember.threshold_backward(G, X[0], 0), A.threshold_backward(tG, tX[0], 0)
    assert e.shape == tuple(t.shape) and np.array_equal(e.float().numpy(), t.float().numpy(), equal_nan=True)
    with pytest.raises(RuntimeError):
        A.threshold_backward(tG, torch.zeros(4, dtype=tdt), 0)
    with pytest.raises(RuntimeError):
        ember.threshold_backward(G, ember.zeros(4, dtype=dt), 0)


@pytest.mark.parametrize("act", ["relu", "softmax", "log_softmax"])
def test_first_and_second_derivatives_match_torch(act):
    rng = np.random.default_rng(2)
    x, v, w = (rng.standard_normal((3, 5)) for _ in range(3))

    def run(T, x):
        X = T.tensor(x, dtype=T.float64, requires_grad=True)
        V, W = T.tensor(v, dtype=T.float64), T.tensor(w, dtype=T.float64)
        y = T.relu(X) if act == "relu" else getattr(T, act)(X, 1)
        gy = T.tensor(v, dtype=T.float64, requires_grad=True)
        (gx,) = T.autograd.grad(y, X, gy, create_graph=True)
        (ggy, *rest) = T.autograd.grad((gx * W).sum(), [gy] + ([X] if act != "relu" else []), allow_unused=True)
        return [gx.detach().numpy(), ggy.numpy()] + [r.numpy() for r in rest if r is not None], V
    got, _ = run(ember, x)
    want, _ = run(torch, x)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_relu_gradient_zeroes_a_nan_gradient_where_the_input_was_negative_as_torch():
    for T in (ember, torch):
        x = T.tensor([-1.0, 2.0, -3.0], requires_grad=True)
        T.relu(x).backward(T.tensor([float("nan"), float("nan"), float("inf")]))
        assert x.grad.tolist()[0] == 0 and x.grad.tolist()[2] == 0 and np.isnan(x.grad.tolist()[1])
