"""RNN, LSTM, GRU and their cells: numpy references of the recurrences, PyTorch's parameter
names / shapes / errors, gradcheck of a tiny LSTM, and (where torch is installed) outputs and
gradients against torch with the weights copied across."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd import gradcheck


def _np(t):
    return t.detach().numpy()


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _params(m):
    return {k: _np(v) for k, v in m.named_parameters()}


# ----------------------------------------------------------------------------- numpy references
def _ref_rnn(mode, p, x, h0, c0, num_layers, bidirectional, act="tanh", proj=False):
    """Sequence-first numpy reference: x (L, N, in) -> (out, h_n, c_n)."""
    dirs = 2 if bidirectional else 1
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            wi, wh = p["weight_ih" + sfx], p["weight_hh" + sfx]
            bi = p.get("bias_ih" + sfx, 0.0)
            bh = p.get("bias_hh" + sfx, 0.0)
            k = layer * dirs + d
            h, c = h0[k], (c0[k] if c0 is not None else None)
            seq = [None] * x.shape[0]
            order = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            for t in order:
                gi = x[t] @ wi.T + bi
                gh = h @ wh.T + bh
                if mode == "RNN":
                    h = np.tanh(gi + gh) if act == "tanh" else np.maximum(gi + gh, 0)
                elif mode == "LSTM":
                    i, f, g, o = np.split(gi + gh, 4, -1)
                    c = _sig(f) * c + _sig(i) * np.tanh(g)
                    h = _sig(o) * np.tanh(c)
                    if proj:
                        h = h @ p["weight_hr" + sfx].T
                else:
                    ir, iz, inn = np.split(gi, 3, -1)
                    hr, hz, hn = np.split(gh, 3, -1)
                    r, z = _sig(ir + hr), _sig(iz + hz)
                    n = np.tanh(inn + r * hn)
                    h = (1 - z) * n + z * h
                seq[t] = h
            outs.append(np.stack(seq))
            hs.append(h)
            cs.append(c)
        x = np.concatenate(outs, -1)
    return x, np.stack(hs), (np.stack(cs) if c0 is not None else None)


CASES = [
    ("RNN", dict(), {}),
    ("RNN", dict(nonlinearity="relu", num_layers=2), {"act": "relu"}),
    ("RNN", dict(bidirectional=True, bias=False), {}),
    ("LSTM", dict(), {}),
    ("LSTM", dict(num_layers=2, bidirectional=True), {}),
    ("LSTM", dict(proj_size=2), {"proj": True}),
    ("GRU", dict(), {}),
    ("GRU", dict(num_layers=2, bidirectional=True), {}),
]


@pytest.mark.parametrize("mode,kw,refkw", CASES)
@pytest.mark.parametrize("batch_first", [False, True])
def test_matches_numpy_reference(mode, kw, refkw, batch_first):
    ember.manual_seed(0)
    m = getattr(nn, mode)(3, 4, batch_first=batch_first, dtype=ember.float64, **kw)
    rng = np.random.default_rng(1)
    L, N = 5, 2
    x = rng.standard_normal((L, N, 3))
    dirs = 2 if kw.get("bidirectional") else 1
    nl = kw.get("num_layers", 1)
    hsize = kw.get("proj_size", 4) or 4
    h0 = rng.standard_normal((nl * dirs, N, hsize))
    c0 = rng.standard_normal((nl * dirs, N, 4)) if mode == "LSTM" else None
    xin = np.swapaxes(x, 0, 1) if batch_first else x
    hx = (ember.tensor(h0), ember.tensor(c0)) if mode == "LSTM" else ember.tensor(h0)
    out, state = m(ember.tensor(xin), hx)
    ref_out, ref_h, ref_c = _ref_rnn(mode, _params(m), x, h0, c0, nl, dirs == 2, **refkw)
    np.testing.assert_allclose(_np(out), np.swapaxes(ref_out, 0, 1) if batch_first else ref_out, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(_np(state[0]), ref_h, atol=1e-12)
        np.testing.assert_allclose(_np(state[1]), ref_c, atol=1e-12)
    else:
        np.testing.assert_allclose(_np(state), ref_h, atol=1e-12)


def test_default_state_is_zeros_and_unbatched_input():
    ember.manual_seed(0)
    m = nn.GRU(3, 4, dtype=ember.float64)
    x = ember.randn(6, 3, dtype=ember.float64)
    out, h = m(x)
    assert out.shape == (6, 4) and h.shape == (1, 4)
    out_b, h_b = m(x.unsqueeze(1), ember.zeros(1, 1, 4, dtype=ember.float64))
    np.testing.assert_allclose(_np(out), _np(out_b[:, 0]), atol=1e-14)
    np.testing.assert_allclose(_np(h), _np(h_b[:, 0]), atol=1e-14)
    lstm = nn.LSTM(3, 4, num_layers=2)
    out, (h, c) = lstm(ember.randn(6, 3))
    assert out.shape == (6, 4) and h.shape == (2, 4) and c.shape == (2, 4)


def test_parameter_names_shapes_and_init():
    m = nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {k: tuple(v.shape) for k, v in m.named_parameters()}
    assert list(shapes)[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert shapes["weight_ih_l0"] == (32, 3) and shapes["weight_hh_l0"] == (32, 2)
    assert shapes["weight_ih_l1_reverse"] == (32, 4) and shapes["weight_hr_l1_reverse"] == (2, 8)
    assert len(shapes) == 20
    bound = 1 / np.sqrt(8)
    for v in m.parameters():
        a = _np(v)
        assert np.all(np.abs(a) <= bound) and a.std() > bound / 4
    g = nn.GRU(3, 5, bias=False)
    assert [k for k, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert g.weight_ih_l0.shape == (15, 3)
    cell = nn.LSTMCell(3, 5)
    assert [(k, tuple(v.shape)) for k, v in cell.named_parameters()] == [
        ("weight_ih", (20, 3)), ("weight_hh", (20, 5)), ("bias_ih", (20,)), ("bias_hh", (20,))]


def test_repr():
    assert repr(nn.RNN(4, 5, num_layers=2, nonlinearity="relu", bias=False, batch_first=True, dropout=0.5,
                       bidirectional=True)) == \
        "RNN(4, 5, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)"
    assert repr(nn.LSTM(4, 5, proj_size=3)) == "LSTM(4, 5, proj_size=3)"
    assert repr(nn.RNNCell(4, 5, bias=False, nonlinearity="relu")) == "RNNCell(4, 5, bias=False, nonlinearity=relu)"
    assert repr(nn.GRUCell(4, 5)) == "GRUCell(4, 5)"


@pytest.mark.parametrize("cls,hidden", [(nn.RNNCell, 1), (nn.LSTMCell, 2), (nn.GRUCell, 1)])
def test_cells_match_one_step_of_the_layer(cls, hidden):
    ember.manual_seed(0)
    cell = cls(3, 4, dtype=ember.float64)
    layer = {nn.RNNCell: nn.RNN, nn.LSTMCell: nn.LSTM, nn.GRUCell: nn.GRU}[cls](3, 4, dtype=ember.float64)
    layer.load_state_dict({k + "_l0": v for k, v in cell.state_dict().items()})
    x = ember.randn(2, 3, dtype=ember.float64)
    h = ember.randn(2, 4, dtype=ember.float64)
    if hidden == 2:
        c = ember.randn(2, 4, dtype=ember.float64)
        h1, c1 = cell(x, (h, c))
        _, (hn, cn) = layer(x.unsqueeze(0), (h.unsqueeze(0), c.unsqueeze(0)))
        np.testing.assert_allclose(_np(c1), _np(cn[0]), atol=1e-14)
        hu, cu = cell(x[0], (h[0], c[0]))
        np.testing.assert_allclose(_np(hu), _np(h1[0]), atol=1e-14)
    else:
        h1 = cell(x, h)
        _, hn = layer(x.unsqueeze(0), h.unsqueeze(0))
        np.testing.assert_allclose(_np(cell(x[0], h[0])), _np(h1[0]), atol=1e-14)
    np.testing.assert_allclose(_np(h1), _np(hn[0]), atol=1e-14)
    assert cell(x)[0].shape == (2, 4) if hidden == 2 else cell(x).shape == (2, 4)


def test_dropout_between_layers_only_in_training():
    ember.manual_seed(0)
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = ember.randn(5, 2, 3)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(_np(a), _np(b))
    m.train()
    c, _ = m(x)
    assert not np.allclose(_np(a), _np(c))


def test_gradcheck_tiny_lstm_and_gru():
    ember.manual_seed(0)
    for cls in (nn.LSTM, nn.GRU, nn.RNN):   # input gradient by gradcheck, weight_hh's by hand
        m = cls(2, 3, dtype=ember.float64)
        x = ember.randn(3, 1, 2, dtype=ember.float64, requires_grad=True)
        assert gradcheck(lambda x: m(x)[0], (x,))
        # parameter gradients through the recurrence
        w = m.weight_hh_l0
        out = m(x)[0].sum()
        out.backward()
        num = np.zeros(w.shape)
        base = _np(w).copy()
        eps = 1e-6
        for idx in np.ndindex(*w.shape):
            for s in (1, -1):
                pert = base.copy()
                pert[idx] += s * eps
                with ember.no_grad():
                    w.copy_(ember.tensor(pert))
                num[idx] += s * float(m(x)[0].sum()) / (2 * eps)
        with ember.no_grad():
            w.copy_(ember.tensor(base))
        np.testing.assert_allclose(_np(w.grad), num, atol=1e-6)


ERRORS = [
    (lambda: nn.RNN(4, 5, nonlinearity="foo"), ValueError, "Unknown nonlinearity 'foo'. Select from 'tanh' or 'relu'."),
    (lambda: nn.RNN(4, 5, dropout=1.5), ValueError, "dropout should be a number in range [0, 1]"),
    (lambda: nn.RNN(4, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.RNN(4, 5, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.GRU(4, 5, proj_size=2), ValueError, "proj_size argument is only supported for LSTM, not RNN or GRU"),
    (lambda: nn.LSTM(4, 5, proj_size=5), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda: nn.RNN(4, 5)(ember.randn(2, 3, 4, 5)), ValueError, "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
    (lambda: nn.LSTM(4, 5)(ember.randn(2, 3, 4, 5)), ValueError, "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda: nn.RNN(4, 5)(ember.randn(2, 3, 5)), RuntimeError, "input.size(-1) must be equal to input_size. Expected 4, got 5"),
    (lambda: nn.RNN(4, 5)(ember.randn(2, 3, 4), ember.randn(2, 3, 5)), RuntimeError, "Expected hidden size (1, 3, 5), got [2, 3, 5]"),
    (lambda: nn.RNN(4, 5)(ember.randn(2, 3, 4), ember.randn(3, 5)), RuntimeError, "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
    (lambda: nn.RNN(4, 5)(ember.randn(2, 4), ember.randn(1, 3, 5)), RuntimeError, "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
    (lambda: nn.LSTM(4, 5)(ember.randn(2, 3, 4), (ember.randn(3, 5), ember.randn(3, 5))), RuntimeError, "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors"),
    (lambda: nn.LSTM(4, 5)(ember.randn(2, 3, 4), (ember.randn(1, 3, 5), ember.randn(1, 2, 5))), RuntimeError, "Expected hidden[1] size (1, 3, 5), got [1, 2, 5]"),
    (lambda: nn.LSTM(4, 5, proj_size=2)(ember.randn(2, 3, 4), (ember.randn(1, 3, 5), ember.randn(1, 3, 5))), RuntimeError, "Expected hidden[0] size (1, 3, 2), got [1, 3, 5]"),
    (lambda: nn.RNNCell(4, 5)(ember.randn(2, 3, 4)), ValueError, "RNNCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda: nn.RNNCell(4, 5)(ember.randn(3, 5)), RuntimeError, "input has inconsistent input_size: got 5 expected 4"),
    (lambda: nn.RNNCell(4, 5)(ember.randn(3, 4), ember.randn(2, 5)), RuntimeError, "Input batch size 3 doesn't match hidden0 batch size 2"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS)
def test_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert msg in str(info.value)


def test_dropout_warning_single_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got dropout=0.5"):
        nn.RNN(4, 5, dropout=0.5)


# ----------------------------------------------------------------------------- against torch
@pytest.mark.parametrize("mode,kw", [("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True)),
                                     ("LSTM", dict(num_layers=2, bidirectional=True)),
                                     ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
                                     ("GRU", dict(num_layers=2, bidirectional=True, bias=False))])
def test_against_torch(mode, kw):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    m = getattr(nn, mode)(3, 4, batch_first=True, dtype=ember.float64, **kw)
    tm = getattr(torch.nn, mode)(3, 4, batch_first=True, dtype=torch.float64, **kw)
    tm.load_state_dict({k: torch.from_numpy(_np(v).copy()) for k, v in m.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 5, 3))
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    eo, es = m(ex)
    to, ts = tm(tx)
    np.testing.assert_allclose(_np(eo), to.detach().numpy(), atol=1e-12)
    es = es if mode != "LSTM" else es[1]
    ts = ts if mode != "LSTM" else ts[1]
    np.testing.assert_allclose(_np(es), ts.detach().numpy(), atol=1e-12)
    (eo.sum() + es.sum()).backward()
    (to.sum() + ts.sum()).backward()
    np.testing.assert_allclose(_np(ex.grad), tx.grad.numpy(), atol=1e-10)
    for (k, p), (_, q) in zip(m.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(_np(p.grad), q.grad.numpy(), atol=1e-10, err_msg=k)
