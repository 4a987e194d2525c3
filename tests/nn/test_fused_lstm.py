"""The fused LSTM and GRU cells (``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell`` and their backward ops,
ember.nn._fused_rnn): nn.LSTM and nn.GRU built on them against torch.nn's on identical weights (outputs, h_n,
c_n, every gradient; float64 and float32, both layouts, bidirectional, projections, packed input), the ops
against ATen's formulas in torch ops, the native cpu kernels against the composites (vdev), ember.compile
capture / replay and the O(L) backward of the steps.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn import _fused_rnn as FR

torch = pytest.importorskip("torch")


def _pair(dtype, seed=0, **kw):
    torch.manual_seed(seed)
    tdt = getattr(torch, dtype)
    tm = torch.nn.LSTM(5, 6, **kw).to(tdt)
    em = ember.nn.LSTM(5, 6, dtype=getattr(ember, dtype), **kw)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, em


def _run_both(tm, em, x, hx=None, seed=1):
    """Forward both with x (numpy), a random weighted sum of output, h_n and c_n backward; every result as numpy."""
    rng = np.random.default_rng(seed)
    tx = torch.tensor(x, requires_grad=True)
    ex = ember.tensor(x, requires_grad=True)
    targs = (tx,) if hx is None else (tx, tuple(torch.tensor(a, requires_grad=True) for a in hx))
    eargs = (ex,) if hx is None else (ex, tuple(ember.tensor(a, requires_grad=True) for a in hx))
    to, (th, tc) = tm(*targs)
    eo, (eh, ec) = em(*eargs)
    ws = [rng.standard_normal(tuple(t.shape)) for t in (to, th, tc)]
    sum(((t * torch.tensor(w, dtype=t.dtype)).sum() for t, w in zip((to, th, tc), ws))).backward()
    sum(((t * ember.tensor(w, dtype=t.dtype)).sum() for t, w in zip((eo, eh, ec), ws))).backward()
    res_t = [to, th, tc, tx.grad] + [p.grad for _, p in sorted(tm.named_parameters())]
    res_e = [eo, eh, ec, ex.grad] + [p.grad for _, p in sorted(em.named_parameters())]
    if hx is not None:
        res_t += [a.grad for a in targs[1]]
        res_e += [a.grad for a in eargs[1]]
    return [t.detach().numpy() for t in res_t], [e.detach().numpy() for e in res_e]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 2e-5)])
def test_lstm_matches_torch_outputs_and_every_gradient(batch_first, bidirectional, dtype, tol):
    tm, em = _pair(dtype, num_layers=2, batch_first=batch_first, bidirectional=bidirectional, dropout=0.0)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 7, 5) if batch_first else (7, 3, 5)).astype(dtype)
    d = 2 if bidirectional else 1
    hx = tuple(rng.standard_normal((2 * d, 3, 6)).astype(dtype) for _ in range(2))
    for h in (None, hx):
        rt, re = _run_both(tm, em, x, h)
        assert len(rt) == len(re)
        for a, b in zip(rt, re):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


@pytest.mark.parametrize("kw", [dict(proj_size=3, bidirectional=True), dict(bias=False, num_layers=2)])
def test_lstm_projection_and_no_bias_match_torch(kw):
    tm, em = _pair("float64", **kw)
    x = np.random.default_rng(4).standard_normal((6, 2, 5))
    for a, b in zip(*_run_both(tm, em, x)):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_packed_sequence_matches_torch():
    tm, em = _pair("float64", num_layers=2, bidirectional=True)
    x = np.random.default_rng(5).standard_normal((6, 3, 5))
    lengths = [6, 4, 2]
    tp = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x, requires_grad=True), lengths)
    ep = ember.nn.utils.rnn.pack_padded_sequence(ember.tensor(x, requires_grad=True), lengths)
    to, (th, tc) = tm(tp)
    eo, (eh, ec) = em(ep)
    (to.data.sum() + th.square().sum() + tc.sum()).backward()
    (eo.data.sum() + eh.square().sum() + ec.sum()).backward()
    for a, b in ((to.data, eo.data), (th, eh), (tc, ec)):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-12)
    for (n, p), (_, q) in zip(sorted(tm.named_parameters()), sorted(em.named_parameters())):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-11, atol=1e-12, err_msg=n)


def test_lstm_cell_matches_torch():
    torch.manual_seed(0)
    tc_ = torch.nn.LSTMCell(4, 3).double()
    ec_ = ember.nn.LSTMCell(4, 3, dtype=ember.float64)
    ec_.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tc_.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((5, 4))
    th, tcc = tc_(torch.tensor(x))
    eh, ecc = ec_(ember.tensor(x))
    (th.sum() + 2 * tcc.sum()).backward()
    (eh.sum() + 2 * ecc.sum()).backward()
    np.testing.assert_allclose(eh.detach().numpy(), th.detach().numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(ecc.detach().numpy(), tcc.detach().numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(ec_.weight_hh.grad.numpy(), tc_.weight_hh.grad.numpy(), rtol=1e-12, atol=1e-13)


def _inputs(seed=0, n=3, h=4, bias=True):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(s) for s in ((n, 4 * h), (n, 4 * h), (n, h))]
    if bias:
        arrs += [rng.standard_normal(4 * h), rng.standard_normal(4 * h)]
    return arrs


def _torch_cell(ig, hg, cx, bi=None, bh=None):
    """ATen's _thnn_fused_lstm_cell (a CUDA-only kernel in PyTorch) written with torch ops: (hy, cy, workspace)."""
    gates = ig + hg + (bi if bi is not None else 0) + (bh if bh is not None else 0)
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


@pytest.mark.parametrize("bias", [True, False])
def test_op_matches_torch_and_its_gradients(bias):
    arrs = _inputs(bias=bias)
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    et = [ember.tensor(a, requires_grad=True) for a in arrs]
    t_out = _torch_cell(*tt)
    e_out = FR.fused_lstm_cell(*et)
    for a, b in zip(t_out, e_out):      # hy, cy and the workspace (the activated gates)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-14, atol=1e-15)
    assert not e_out[2].requires_grad   # as ATen: the workspace is not differentiable
    w = np.random.default_rng(9).standard_normal((2, 3, 4))
    (t_out[0] * torch.tensor(w[0])).sum().add((t_out[1] * torch.tensor(w[1])).sum()).backward()
    (e_out[0] * ember.tensor(w[0])).sum().add((e_out[1] * ember.tensor(w[1])).sum()).backward()
    for a, b in zip(tt, et):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-13, atol=1e-14)


def test_backward_op_matches_torch_autograd_and_takes_missing_gradients():
    arrs = _inputs(seed=1)
    tt = [torch.tensor(a, requires_grad=True) for a in arrs[:3]]
    hy, cy, ws = _torch_cell(*tt, *map(torch.tensor, arrs[3:]))
    rng = np.random.default_rng(2)
    g = rng.standard_normal((2, 3, 4))
    E = lambda a: None if a is None else ember.tensor(a)  # noqa: E731
    for ghy, gcy in ((g[0], g[1]), (g[0], None), (None, g[1])):
        outs = [t for t, gr in ((hy, ghy), (cy, gcy)) if gr is not None]
        grads = [torch.tensor(gr) for gr in (ghy, gcy) if gr is not None]
        d_ig, d_cx = torch.autograd.grad(outs, [tt[0], tt[2]], grads, retain_graph=True)
        got = FR.fused_lstm_cell_backward(E(ghy), E(gcy), E(arrs[2]), ember.tensor(cy.detach().numpy()),
                                          ember.tensor(ws.detach().numpy()), True)
        for a, b in ((d_ig, got[0]), (d_cx, got[1]), (d_ig.sum(0), got[2])):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-13, atol=1e-14)
    got = FR.fused_lstm_cell_backward(None, None, E(arrs[2]), ember.tensor(cy.detach().numpy()),
                                      ember.tensor(ws.detach().numpy()), False)
    assert [tuple(t.shape) for t in got] == [(3, 16), (3, 4), (0,)]
    assert float(got[0].abs().sum()) == 0 and float(got[1].abs().sum()) == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_native_cpu_kernels_match_the_composites_on_vdev(dtype):
    arrs = _inputs(seed=3)
    res = {}
    for dev in ("cpu", "vdev"):
        ts = [ember.tensor(a, dtype=getattr(ember, dtype), device=dev, requires_grad=True) for a in arrs]
        hy, cy, ws = FR.fused_lstm_cell(*ts)
        (hy * 1.5 + cy.square()).sum().backward()
        res[dev] = [t.detach().to("cpu").float().numpy() for t in (hy, cy, ws)] + \
                   [t.grad.to("cpu").float().numpy() for t in ts]
    tol = 2e-3 if dtype == "float16" else 1e-6 if dtype == "float32" else 1e-13
    for a, b in zip(res["cpu"], res["vdev"]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_errors():
    x = ember.randn(3, 8)
    with pytest.raises(RuntimeError, match=r"expected input_gates of shape \(N, 4 \* hidden_size\), got \[3, 6\]"):
        FR.fused_lstm_cell(ember.randn(3, 6), ember.randn(3, 6), ember.randn(3, 2))
    with pytest.raises(RuntimeError, match=r"expected cx of shape \[3, 2\], got \[3, 3\]"):
        FR.fused_lstm_cell(x, x, ember.randn(3, 3))
    with pytest.raises(RuntimeError, match=r"expected hidden_gates to have dtype Float, got Double"):
        FR.fused_lstm_cell(x, x.double(), ember.randn(3, 2))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        FR.fused_lstm_cell(x.long(), x.long(), ember.zeros(3, 2, dtype=ember.int64))


def _captured_names(m, x):
    """The op names of the kernel calls ember.compile captured for a forward + backward of ``m`` on ``x``."""
    def f(x):
        out, _ = m(x)
        out.sum().backward()
        return out

    compiled = ember.compile(f)
    for _ in range(4):
        compiled(x)
    entry = max(compiled._compiled.entries.values(), key=lambda e: e.replays)
    assert entry.replays >= 1 and entry.graph is not None
    return [n.name for n in entry.graph.nodes if getattr(n, "name", None)]


def test_lstm_layer_is_one_op_forward_and_backward():
    # the kernel calls ember.compile captured: one _lstm_layer per layer and one backward op per layer, no step ops
    names = _captured_names(ember.nn.LSTM(4, 5, num_layers=2), ember.randn(6, 2, 4))
    assert names.count("_lstm_layer") == 2 and names.count("_lstm_layer_backward") == 2
    assert "_thnn_fused_lstm_cell" not in names and "sigmoid" not in names and "tanh" not in names


def test_lstm_step_is_one_op_forward_and_backward():
    # with projections the layer loops over steps: one fused op per step each way
    names = _captured_names(ember.nn.LSTM(4, 5, num_layers=2, proj_size=3), ember.randn(6, 2, 4))
    assert names.count("_thnn_fused_lstm_cell") == 12 and names.count("_thnn_fused_lstm_cell_backward_impl") == 12
    assert "sigmoid" not in names and "tanh" not in names
    assert names.count("fill_") < 12          # no zero gradient per step (O(L) backward of the steps)


def test_steps_backward_is_one_stack():
    x = ember.randn(5, 2, 3, requires_grad=True)
    steps = FR.unbind_steps(x)
    assert len(steps) == 5 and all(s._base is not None for s in steps)     # views, as unbind's
    (steps[0] * 2 + steps[3]).sum().backward()
    want = np.zeros((5, 2, 3))
    want[0], want[3] = 2, 1
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("cls", [ember.nn.LSTM, ember.nn.GRU])
def test_compile_captures_and_replays_a_training_step(cls):
    ember.manual_seed(0)
    model = cls(4, 6, num_layers=2, bidirectional=True)
    ref = cls(4, 6, num_layers=2, bidirectional=True)
    ref.load_state_dict(model.state_dict())
    opt, ref_opt = ember.optim.SGD(model.parameters(), lr=0.1), ember.optim.SGD(ref.parameters(), lr=0.1)
    x = ember.randn(5, 3, 4)

    def step(m, o, x):
        o.zero_grad()
        out, state = m(x)
        loss = out.square().mean() + (state[1] if isinstance(state, tuple) else state).sum()
        loss.backward()
        o.step()
        return loss

    compiled = ember.compile(lambda x: step(model, opt, x))
    for _ in range(5):
        a = compiled(x)
        b = step(ref, ref_opt, x)
        np.testing.assert_allclose(a.item(), b.item(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert max(r["replays"] for r in compiled._compiled.info()) >= 1


# ---------------------------------------------------------------- the fused GRU cell
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 2e-5)])
def test_gru_matches_torch_outputs_and_every_gradient(batch_first, bidirectional, dtype, tol):
    torch.manual_seed(0)
    tm = torch.nn.GRU(5, 6, 2, batch_first=batch_first, bidirectional=bidirectional).to(getattr(torch, dtype))
    em = ember.nn.GRU(5, 6, 2, batch_first=batch_first, bidirectional=bidirectional, dtype=getattr(ember, dtype))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 7, 5) if batch_first else (7, 3, 5)).astype(dtype)
    h0 = rng.standard_normal((4 if bidirectional else 2, 3, 6)).astype(dtype)
    tx, th0 = torch.tensor(x, requires_grad=True), torch.tensor(h0, requires_grad=True)
    ex, eh0 = ember.tensor(x, requires_grad=True), ember.tensor(h0, requires_grad=True)
    to, th = tm(tx, th0)
    eo, eh = em(ex, eh0)
    w, wh = rng.standard_normal(tuple(to.shape)), rng.standard_normal(tuple(th.shape))
    ((to * torch.tensor(w, dtype=to.dtype)).sum() + (th * torch.tensor(wh, dtype=th.dtype)).sum()).backward()
    ((eo * ember.tensor(w, dtype=eo.dtype)).sum() + (eh * ember.tensor(wh, dtype=eh.dtype)).sum()).backward()
    pairs = [(to, eo), (th, eh), (tx.grad, ex.grad), (th0.grad, eh0.grad)]
    pairs += [(p.grad, q.grad) for (_, p), (_, q) in zip(sorted(tm.named_parameters()), sorted(em.named_parameters()))]
    for a, b in pairs:
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=tol, atol=tol)


def test_gru_cell_op_matches_torch_and_the_composite():
    rng = np.random.default_rng(4)
    arrs = [rng.standard_normal(s) for s in ((3, 12), (3, 12), (3, 4), (12,), (12,))]
    tt = [torch.tensor(a, requires_grad=True) for a in arrs]
    ig, hg = tt[0] + tt[3], tt[1] + tt[4]
    r = (ig[:, :4] + hg[:, :4]).sigmoid()
    z = (ig[:, 4:8] + hg[:, 4:8]).sigmoid()
    n = (ig[:, 8:] + r * hg[:, 8:]).tanh()
    t_hy = n + z * (tt[2] - n)
    t_hy.square().sum().backward()
    for dev in ("cpu", "vdev"):
        et = [ember.tensor(a, device=dev, requires_grad=True) for a in arrs]
        hy, ws = FR.fused_gru_cell(*et)
        assert not ws.requires_grad
        hy.square().sum().backward()
        np.testing.assert_allclose(hy.detach().to("cpu").numpy(), t_hy.detach().numpy(), rtol=1e-13, atol=1e-14)
        for a, b in zip(tt, et):
            np.testing.assert_allclose(b.grad.to("cpu").numpy(), a.grad.numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_double_backward_matches_torch(mode):
    # create_graph=True: the cells' backward is written with ember ops, so a gradient penalty works
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(3, 4, 2, bidirectional=True).double()
    em = getattr(ember.nn, mode)(3, 4, 2, bidirectional=True, dtype=ember.float64)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    (tg,) = torch.autograd.grad(tm(tx)[0].square().sum(), tx, create_graph=True)
    (eg,) = ember.autograd.grad(em(ex)[0].square().sum(), ex, create_graph=True)
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-13)
    tg.square().sum().backward()
    eg.square().sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-11, atol=1e-13)
    for (n, p), (_, q) in zip(sorted(tm.named_parameters()), sorted(em.named_parameters())):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-11, atol=1e-13, err_msg=n)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_onnx_export_of_the_fused_cells_runs_in_onnxruntime(mode, tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    m = getattr(ember.nn, mode)(4, 6, num_layers=2, bidirectional=True).eval()
    x = ember.randn(5, 2, 4)
    path = str(tmp_path / "rnn.onnx")
    ember.onnx.export(m, (x,), path)
    sess = ort.InferenceSession(path)
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    want = m(x)
    np.testing.assert_allclose(got[0], want[0].detach().numpy(), rtol=1e-5, atol=1e-6)
    h = want[1][0] if mode == "LSTM" else want[1]
    np.testing.assert_allclose(got[1], h.detach().numpy(), rtol=1e-5, atol=1e-6)
