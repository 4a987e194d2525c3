"""ember-cpu's BLAS shortcuts against PyTorch: sums over a leading or trailing block of axes as one gemv with a
vector of ones (``_util.sum_gemv``: sum, mean, the softmax family's row sums) and linear with its bias as one
gemm with beta = 1 (``nn._addmm_``). Each test checks that the shortcut ran, then compares values, signs of
zero, NaN / inf and gradients with torch; the fallbacks (non-contiguous input, small arrays) are compared too."""
import numpy as np
import pytest
import torch

import ember

K = pytest.importorskip("ember_cpu.kernels")
from ember_cpu.kernels import _util, nn as cpu_nn  # noqa: E402

DTYPES = [(ember.float32, torch.float32, 2e-6), (ember.float64, torch.float64, 1e-12)]


@pytest.fixture
def spy(monkeypatch):
    """Counts the calls of sum_gemv / _addmm_ that took the shortcut."""
    taken = {"gemv": 0, "addmm": 0}
    gemv, addmm = _util.sum_gemv, cpu_nn._addmm_

    def counting_gemv(*a):
        r = gemv(*a)
        taken["gemv"] += r
        return r

    def counting_addmm(*a):
        r = addmm(*a)
        taken["addmm"] += r
        return r
    for mod in (_util, cpu_nn, K.reduction):
        if hasattr(mod, "sum_gemv"):
            monkeypatch.setattr(mod, "sum_gemv", counting_gemv)
    monkeypatch.setattr(cpu_nn, "_addmm_", counting_addmm)
    return taken


def _pair(shape, dtype, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(str(dtype[1]).split(".")[1])
    return ember.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape,dim,keepdim", [((700, 512), 0, False), ((16, 32, 64), (0, 1), True),
                                               ((16, 32, 64), 2, True), ((16, 32, 64), (1, 2), False),
                                               ((64, 300), -1, False), ((300, 64, 2), (1, 0), False)])
def test_sum_and_mean_by_gemv_match_torch(spy, dtype, shape, dim, keepdim):
    e, t = _pair(shape, dtype)
    for fn in ("sum", "mean"):
        got = getattr(ember, fn)(e, dim, keepdim=keepdim)
        want = getattr(torch, fn)(t, dim, keepdim=keepdim)
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype) == str(want.dtype).replace("torch", "ember")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=dtype[2] * 10, atol=dtype[2] * 10)
    assert spy["gemv"] == 2


@pytest.mark.filterwarnings("ignore:invalid value encountered")      # inf + -inf, as numpy's own sum warns
def test_gemv_sum_keeps_torch_signed_zero_nan_and_inf(spy):
    a = -np.zeros((400, 64), np.float32)
    a[3, 5], a[7, 6], a[8, 6], a[9, 7] = np.nan, np.inf, -np.inf, np.inf
    got, want = ember.tensor(a).sum(0).numpy(), torch.tensor(a).sum(0).numpy()
    assert spy["gemv"] == 1
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))          # -0 + -0 sums to +0 in both


def test_non_contiguous_small_and_whole_sums_fall_back(spy):
    e, t = _pair((512, 64), DTYPES[0])
    np.testing.assert_allclose(e.t().sum(1).numpy(), t.t().sum(1).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(e[:8].sum(0).numpy(), t[:8].sum(0).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(e.sum((1, 0)).numpy(), t.sum((1, 0)).numpy(), rtol=1e-5, atol=1e-4)
    assert spy["gemv"] == 0


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_family_row_sums_by_gemv_match_torch(spy, fn):
    e, t = _pair((700, 200), DTYPES[0], seed=1)
    e.requires_grad_(), t.requires_grad_()
    ge, gt = _pair((700, 200), DTYPES[0], seed=2)
    ye, yt = getattr(ember.nn.functional, fn)(e, 1), getattr(torch.nn.functional, fn)(t, 1)
    (ye * ge).sum().backward()
    (yt * gt).sum().backward()
    assert spy["gemv"] >= 2                       # the forward's and the backward's row sums
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape", [(700, 128), (35, 20, 128)])
def test_linear_with_bias_by_gemm_matches_torch(spy, dtype, shape):
    x, tx = _pair(shape, dtype, seed=3)
    w, tw = _pair((512, 128), dtype, seed=4)
    b, tb = _pair((512,), dtype, seed=5)
    for t in (x, w, b, tx, tw, tb):
        t.requires_grad_()
    y, ty = ember.nn.functional.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb)
    assert spy["addmm"] == 1
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=dtype[2] * 50, atol=dtype[2] * 50)
    y.sum().backward()
    ty.sum().backward()
    for a, b_ in [(x, tx), (w, tw), (b, tb)]:
        np.testing.assert_allclose(a.grad.numpy(), b_.grad.numpy(), rtol=dtype[2] * 50, atol=dtype[2] * 500)


def test_linear_gemm_equals_matmul_then_bias_bit_for_bit(spy):
    x, _ = _pair((700, 128), DTYPES[0], seed=6)
    w, _ = _pair((200, 128), DTYPES[0], seed=7)
    b, _ = _pair((200,), DTYPES[0], seed=8)
    y = ember.nn.functional.linear(x, w, b).numpy()
    assert spy["addmm"] == 1
    np.testing.assert_array_equal(y, x.numpy() @ w.numpy().T + b.numpy())


def test_linear_fallbacks_match_torch(spy):
    x, tx = _pair((128, 700), DTYPES[0], seed=9)          # a transposed (non-contiguous) input
    w, tw = _pair((512, 128), DTYPES[0], seed=10)
    b, tb = _pair((512,), DTYPES[0], seed=11)
    np.testing.assert_allclose(ember.nn.functional.linear(x.t(), w, b).numpy(),
                               torch.nn.functional.linear(tx.t(), tw, tb).numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ember.nn.functional.linear(x.t()[:4], w, b).numpy(),        # a small output
                               torch.nn.functional.linear(tx.t()[:4], tw, tb).numpy(), rtol=1e-4, atol=1e-4)
    assert spy["addmm"] == 0


def test_scipy_blas_pool_runs_on_one_thread_and_set_num_threads_leaves_it():
    """Two OpenBLAS pools of several threads called in alternation fight over the cores; ember-cpu holds scipy's
    own wheel BLAS (its gemm, numba's np.dot) to one thread, and ember.set_num_threads sets numpy's only."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from ember_cpu import _runtime
    _runtime.scipy_blas()
    dirs = _runtime._scipy_dirs()
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(2)
        pools = threadpoolctl.threadpool_info()
        scipy_own = [p for p in pools if p["user_api"] == "blas" and p["filepath"].startswith(dirs)]
        others = [p for p in pools if p["user_api"] == "blas" and not p["filepath"].startswith(dirs)]
        assert all(p["num_threads"] == 1 for p in scipy_own)
        assert others and all(p["num_threads"] == ember.get_num_threads() for p in others)   # 2 where 2 cores
    finally:
        ember.set_num_threads(before)
