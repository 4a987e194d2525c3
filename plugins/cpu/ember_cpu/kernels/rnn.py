"""Recurrent-cell kernels: the fused LSTM and GRU cells and their backward ops (ember.nn._fused_rnn's ops).

An LSTM (GRU) step is a few small elementwise passes over (N, 4H) ((N, 3H)) and (N, H) arrays; here each is
one numpy call writing in place into the op's outputs (the workspace doubles as the gate
buffer, hy as scratch), so a step costs about fifteen numpy calls instead of twenty ember
ops and their temporaries. float16 / bfloat16 compute in float32, as PyTorch's cpu kernels do.
"""
from __future__ import annotations

import numpy as np

from ._util import FLOAT, compute_np, np_view, write


def _arr(t, cd):
    a = np_view(t)
    return a if a.dtype == cd else a.astype(cd)


def _buffer(out, cd):
    """``out``'s numpy view when it can be written in the compute dtype, else a float32 scratch array."""
    o = np_view(out)
    return (o, False) if o.dtype == cd else (np.empty(o.shape, cd), True)


def _sigmoid_(x):
    """x <- sigmoid(x) in place, as 0.5 tanh(x / 2) + 0.5: numpy's tanh is vectorised (scipy's expit is a scalar
    loop, several times slower at these sizes) and this is within an ulp of 1 / (1 + exp(-x)) in absolute terms."""
    x *= 0.5
    np.tanh(x, out=x)
    x *= 0.5
    x += 0.5


_LSTM_AFFINE = {}


def _lstm_gates_(w, H):
    """w (N, 4H) <- (sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)) in place: one tanh over the whole contiguous
    array between a per-column scale and offset (sigmoid(x) = 0.5 tanh(x / 2) + 0.5, the g columns scale 1 and
    offset 0) - four passes, where per-gate slices would be nine strided ones."""
    key = (H, w.dtype)
    so = _LSTM_AFFINE.get(key)
    if so is None:
        scale = np.full(4 * H, 0.5, w.dtype)
        scale[2 * H:3 * H] = 1
        offset = np.full(4 * H, 0.5, w.dtype)
        offset[2 * H:3 * H] = 0
        so = _LSTM_AFFINE[key] = (scale, offset)
    np.multiply(w, so[0], out=w)
    np.tanh(w, out=w)
    np.multiply(w, so[0], out=w)
    np.add(w, so[1], out=w)


def fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None, *, out):
    """cpu kernel of ``_thnn_fused_lstm_cell``, floating dtypes: gates = input_gates + hidden_gates (+ biases),
    workspace = (sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)), cy = f * cx + i * g, hy = o * tanh(cy), written
    in place into ``out`` = (hy, cy, workspace).
    """
    cd = compute_np(input_gates._dtype)
    (w, w_cp), (c, c_cp), (h, h_cp) = _buffer(out[2], cd), _buffer(out[1], cd), _buffer(out[0], cd)
    np.add(_arr(input_gates, cd), _arr(hidden_gates, cd), out=w)
    for b in (input_bias, hidden_bias):
        if b is not None:
            w += _arr(b, cd)
    H = w.shape[1] // 4
    if w.flags.c_contiguous:
        _lstm_gates_(w, H)
    else:                                   # an out= workspace with other strides: gate by gate
        _sigmoid_(w[:, :2 * H])
        np.tanh(w[:, 2 * H:3 * H], out=w[:, 2 * H:3 * H])
        _sigmoid_(w[:, 3 * H:])
    i, f, g, o = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
    np.multiply(f, _arr(cx, cd), out=c)
    np.multiply(i, g, out=h)                # hy as scratch for i * g
    c += h
    np.tanh(c, out=h)
    h *= o
    for t, a, copied in ((out[0], h, h_cp), (out[1], c, c_cp), (out[2], w, w_cp)):
        if copied:
            write(t, a)


def fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias, *, out):
    """cpu kernel of ``_thnn_fused_lstm_cell_backward_impl``, floating dtypes: with gc = grad_cy + grad_hy * o *
    (1 - tanh(cy)^2), grad_gates = (gc g, gc cx, gc i, grad_hy tanh(cy)) times the activations' derivatives
    (s (1 - s) for the sigmoid gates, 1 - g^2 for the cell gate), grad_cx = gc f and grad_bias the batch sum
    of grad_gates (when ``has_bias``). A None gradient counts as zeros.
    """
    cd = compute_np(workspace._dtype)
    (gg, gg_cp), (gcx, gcx_cp) = _buffer(out[0], cd), _buffer(out[1], cd)
    w = _arr(workspace, cd)
    H = w.shape[1] // 4
    i, f, g, o = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
    tc = np.tanh(_arr(cy, cd))
    gc = gcx                                # grad_cx's buffer holds gc until the end
    if grad_hy is not None:
        ghy = _arr(grad_hy, cd)
        np.multiply(tc, tc, out=gc)
        np.subtract(1, gc, out=gc)
        gc *= o
        gc *= ghy
        if grad_cy is not None:
            gc += _arr(grad_cy, cd)
        np.multiply(ghy, tc, out=gg[:, 3 * H:])
    else:
        gc[...] = _arr(grad_cy, cd) if grad_cy is not None else 0
        gg[:, 3 * H:] = 0
    np.multiply(gc, g, out=gg[:, :H])
    np.multiply(gc, _arr(cx, cd), out=gg[:, H:2 * H])
    np.multiply(gc, i, out=gg[:, 2 * H:3 * H])
    d = np.subtract(1, w)                   # the activations' derivatives: s (1 - s), and 1 - g^2 for g
    d *= w
    np.multiply(g, g, out=d[:, 2 * H:3 * H])
    np.subtract(1, d[:, 2 * H:3 * H], out=d[:, 2 * H:3 * H])
    gg *= d
    gc *= f
    if has_bias:
        b, b_cp = _buffer(out[2], cd)
        np.sum(gg, axis=0, out=b)
        if b_cp:
            write(out[2], b)
    for t, a, copied in ((out[0], gg, gg_cp), (out[1], gcx, gcx_cp)):
        if copied:
            write(t, a)


def fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None, *, out):
    """cpu kernel of ``_thnn_fused_gru_cell``, floating dtypes: r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z),
    n = tanh(x_n + r h_n) (biases added to their gates first), hy = n + z (hx - n), written into ``out`` =
    (hy, workspace (r, z, n, hx, h_n)).
    """
    cd = compute_np(input_gates._dtype)
    (w, w_cp), (h, h_cp) = _buffer(out[1], cd), _buffer(out[0], cd)
    H = w.shape[1] // 5
    rz, n, hxw, hn = w[:, :2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:4 * H], w[:, 4 * H:]
    ig, hg = _arr(input_gates, cd), _arr(hidden_gates, cd)
    np.add(ig[:, :2 * H], hg[:, :2 * H], out=rz)
    np.copyto(hn, hg[:, 2 * H:])
    np.copyto(n, ig[:, 2 * H:])
    if input_bias is not None:
        b = _arr(input_bias, cd)
        rz += b[:2 * H]
        n += b[2 * H:]
    if hidden_bias is not None:
        b = _arr(hidden_bias, cd)
        rz += b[:2 * H]
        hn += b[2 * H:]
    _sigmoid_(rz)
    r, z = rz[:, :H], rz[:, H:]
    np.multiply(r, hn, out=h)               # hy as scratch for r * h_n
    n += h
    np.tanh(n, out=n)
    np.copyto(hxw, _arr(hx, cd))
    np.subtract(hxw, n, out=h)
    h *= z
    h += n
    for t, a, copied in ((out[0], h, h_cp), (out[1], w, w_cp)):
        if copied:
            write(t, a)


def fused_gru_cell_backward(grad_hy, workspace, has_bias, *, out):
    """cpu kernel of ``_thnn_fused_gru_cell_backward``, floating dtypes: with gn = grad_hy (1 - z) (1 - n^2),
    gz = grad_hy (hx - n) z (1 - z), gr = gn h_n r (1 - r): grad_input_gates = (gr, gz, gn), grad_hidden_gates
    = (gr, gz, gn r), grad_hx = grad_hy z and the bias gradients their batch sums (when ``has_bias``).
    """
    cd = compute_np(workspace._dtype)
    (gi, gi_cp), (gh, gh_cp), (ghx, ghx_cp) = (_buffer(out[k], cd) for k in range(3))
    w = _arr(workspace, cd)
    g = _arr(grad_hy, cd)
    H = w.shape[1] // 5
    r, z, n, hx, hn = (w[:, k * H:(k + 1) * H] for k in range(5))
    gr, gz, gn = gi[:, :H], gi[:, H:2 * H], gi[:, 2 * H:]
    np.multiply(n, n, out=gn)               # gn = g (1 - z) (1 - n^2)
    np.subtract(1, gn, out=gn)
    gn *= g
    np.subtract(1, z, out=ghx)              # grad_hx's buffer as scratch for 1 - z
    gn *= ghx
    np.multiply(ghx, z, out=ghx)            # gz = g (hx - n) z (1 - z)
    np.subtract(hx, n, out=gz)
    gz *= ghx
    gz *= g
    np.subtract(1, r, out=gr)               # gr = gn h_n r (1 - r)
    gr *= r
    gr *= hn
    gr *= gn
    np.copyto(gh[:, :2 * H], gi[:, :2 * H])
    np.multiply(gn, r, out=gh[:, 2 * H:])
    np.multiply(g, z, out=ghx)
    if has_bias:
        for k, src in ((3, gi), (4, gh)):
            b, b_cp = _buffer(out[k], cd)
            np.sum(src, axis=0, out=b)
            if b_cp:
                write(out[k], b)
    for t, a, copied in ((out[0], gi, gi_cp), (out[1], gh, gh_cp), (out[2], ghx, ghx_cp)):
        if copied:
            write(t, a)


def register(lib):
    """Register the fused LSTM and GRU cells and their backward ops for device 'cpu', floating dtypes, on ``lib``."""
    lib.impl("_thnn_fused_lstm_cell", fused_lstm_cell, device="cpu", dtypes=FLOAT)
    lib.impl("_thnn_fused_lstm_cell_backward_impl", fused_lstm_cell_backward_impl, device="cpu", dtypes=FLOAT)
    lib.impl("_thnn_fused_gru_cell", fused_gru_cell, device="cpu", dtypes=FLOAT)
    lib.impl("_thnn_fused_gru_cell_backward", fused_gru_cell_backward, device="cpu", dtypes=FLOAT)
