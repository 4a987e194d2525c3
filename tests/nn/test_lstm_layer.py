"""The LSTM layer op (``_lstm_layer`` and its backward, ember.nn._lstm_layer) and ember-cpu's compiled loops
(``ember_cpu.kernels._jit``): second derivatives, the numpy and compiled kernels against each other and against the
per-step ops, the rational tanh's fit and error bound, NaN propagation."""
import numpy as np
import pytest

import ember
from ember.nn import _fused_rnn as FR
from ember.nn import _lstm_layer as LL

_jit = pytest.importorskip("ember_cpu.kernels._jit")


@pytest.fixture(params=["compiled loop", "numpy"])
def kernels(request, monkeypatch):
    """Run the test on ember-cpu's compiled (numba) loops, then with them off (the numpy kernels)."""
    if request.param == "numpy":
        monkeypatch.setattr(_jit, "_kernels", False)
    elif not _jit.jit_available():
        pytest.skip("numba is not installed: ember-cpu runs its numpy kernels")
    return request.param


def _layer_inputs(steps, n, h, dtype=ember.float32, seed=0, requires_grad=False):
    g = ember.Generator().manual_seed(seed)
    mk = lambda *s: (ember.rand(*s, generator=g, dtype=dtype) * 2 - 1).requires_grad_(requires_grad)  # noqa: E731
    return mk(steps, n, 4 * h), mk(n, h), mk(n, h), mk(4 * h, h)


@pytest.fixture(params=["whole product", "row blocks"])
def blocks(request, monkeypatch):
    """Run the test with the per-step product as ember-cpu measures it here, then split into row blocks (0, 1, m)
    whatever the timing says (the split is taken only for larger products than these tests use)."""
    from ember_cpu.kernels import rnn
    monkeypatch.setattr(rnn, "_ROW_BLOCKS", {})
    if request.param == "row blocks":
        monkeypatch.setattr(rnn, "_measure_row_blocks", lambda m, k, n, dtype, run: (0, 1, m))
    return request.param


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_equals_the_per_step_ops(kernels, blocks, reverse):
    """The layer op's forward and backward against the same LSTM run step by step with the fused cell ops and
    autograd (float32: the same cell kernel, the products summed in another order)."""
    ig, hx, cx, w = _layer_inputs(7, 3, 16, requires_grad=True)
    out, hy, cy, _, _ = LL.lstm_layer(ig, hx, cx, w, reverse)
    go, ghy, gcy = ember.randn(7, 3, 16), ember.randn(3, 16), ember.randn(3, 16)
    got = ember.autograd.grad([out, hy, cy], [ig, hx, cx, w], [go, ghy, gcy])

    h, c, outs = hx, cx, [None] * 7
    for t in (range(6, -1, -1) if reverse else range(7)):
        h, c, _ = FR.fused_lstm_cell(ig[t], h.matmul(w.t()), c)
        outs[t] = h
    want_out = ember.stack(outs, 0)
    want = ember.autograd.grad([want_out, h, c], [ig, hx, cx, w], [go, ghy, gcy])
    for a, b in [(out, want_out), (hy, h), (cy, c), *zip(got, want)]:
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=2e-6)


def test_compiled_loop_and_numpy_kernels_agree(monkeypatch):
    """The compiled loops differ from the numpy kernels only by the rational tanh: a few float32 ulp."""
    if not _jit.jit_available():
        pytest.skip("numba is not installed: ember-cpu runs its numpy kernels")
    ig, hx, cx, w = _layer_inputs(9, 4, 32, seed=1)
    fwd = LL.lstm_layer(ig, hx, cx, w)
    go = ember.randn(9, 4, 32)
    bwd = LL.lstm_layer_backward(go, None, None, hx, cx, w, fwd[0], fwd[3], fwd[4], False)
    monkeypatch.setattr(_jit, "_kernels", False)
    fwd_np = LL.lstm_layer(ig, hx, cx, w)
    bwd_np = LL.lstm_layer_backward(go, None, None, hx, cx, w, fwd_np[0], fwd_np[3], fwd_np[4], False)
    for a, b in zip(fwd + bwd, fwd_np + bwd_np):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_row_blocks_cover_the_rows_in_order(jit):
    """The measured row blocks of the benchmark's recurrent product ((20, 128) @ (128, 512)) are bounds from 0 to
    20, increasing, each block under the unpacked size where there is more than one."""
    if jit and not _jit.jit_available():
        pytest.skip("numba is not installed: ember-cpu runs its numpy kernels")
    from ember_cpu.kernels import rnn
    for k, n in [(128, 512), (512, 128)]:
        bounds = rnn._measure_row_blocks(20, k, n, np.float32, _jit.jit_kernels().matmul_rows if jit
                                         else rnn._numpy_matmul_rows)
        assert bounds[0] == 0 and bounds[-1] == 20 and all(a < b for a, b in zip(bounds, bounds[1:]))
        if len(bounds) > 2:
            assert max(b - a for a, b in zip(bounds, bounds[1:])) * k * n < rnn._UNPACKED_MACS


def test_second_derivatives(kernels):
    """create_graph=True: the backward is written with ember ops (states recomputed), so gradgradcheck passes."""
    ig, hx, cx, w = _layer_inputs(3, 2, 2, dtype=ember.float64, seed=2, requires_grad=True)
    for reverse in (False, True):
        assert ember.autograd.gradgradcheck(lambda *a: LL.lstm_layer(*a, reverse)[:3], (ig, hx, cx, w))
        assert ember.autograd.gradcheck(lambda *a: LL.lstm_layer(*a, reverse)[:3], (ig, hx, cx, w))


def test_lstm_module_runs_the_layer_op_in_eager_mode_too(kernels):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    m = ember.nn.LSTM(5, 8, num_layers=2, bidirectional=True)
    tm = torch.nn.LSTM(5, 8, num_layers=2, bidirectional=True)
    tm.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in m.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((6, 3, 5)).astype(np.float32)
    eo, (eh, ec) = m(ember.tensor(x))
    to, (th, tc) = tm(torch.tensor(x))
    for a, b in ((eo, to), (eh, th), (ec, tc)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    (eo.sum() + ec.sum()).backward()
    (to.sum() + tc.sum()).backward()
    for (k, p), (_, q) in zip(m.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)


def test_tanh_coefficients_are_the_fit_and_within_six_ulp():
    """TANH_P / TANH_Q are what fit_tanh() gives (to float32 precision: another LAPACK may round the least-squares
    solves differently in the last bits), and the compiled tanh is within 6 ulp of the
    correctly rounded float32 tanh everywhere, within [-1, 1], odd, and passes NaN and infinities through as tanh."""
    if not _jit.jit_available():
        pytest.skip("numba is not installed: ember-cpu runs its numpy kernels")
    p, q = _jit.fit_tanh()
    np.testing.assert_allclose(p, _jit.TANH_P, rtol=1e-6)
    np.testing.assert_allclose(q, _jit.TANH_Q, rtol=1e-6)
    from ember_cpu.kernels import _jit_kernels as K
    x = np.linspace(-12, 12, 2_000_001, dtype=np.float32)
    y = x.copy()
    K._tanh_(y)
    ref = np.tanh(x.astype(np.float64))
    ulp = np.abs(y - ref) / np.spacing(np.abs(ref).astype(np.float32))
    assert ulp.max() <= 6 and np.abs(y).max() <= 1
    assert np.array_equal(y, -y[::-1])
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30], np.float32)
    K._tanh_(special)
    assert np.isnan(special[0]) and special[1] == 1 and special[2] == -1 and special[3] == 0 and special[5] == np.float32(1e-30)


def test_nan_propagates_through_the_compiled_cell(kernels):
    ig, hg, cx = ember.randn(2, 8), ember.randn(2, 8), ember.randn(2, 2)
    ig[0, 0] = float("nan")
    hy, cy, ws = FR.fused_lstm_cell(ig, hg, cx)
    assert np.isnan(ws.numpy()[0, 0]) and np.isnan(cy.numpy()[0, 0]) and np.isnan(hy.numpy()[0, 0])
    assert not np.isnan(hy.numpy()[1]).any()
