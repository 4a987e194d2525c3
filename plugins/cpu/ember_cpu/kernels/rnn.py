"""Recurrent-cell kernels: the fused LSTM and GRU cells and their backward ops (ember.nn._fused_rnn's ops).

An LSTM (GRU) step is a few small elementwise passes over (N, 4H) ((N, 3H)) and (N, H) arrays; here each is
one numpy call writing in place into the op's outputs (the workspace doubles as the gate
buffer, hy as scratch), so a step costs about fifteen numpy calls instead of twenty ember
ops and their temporaries. float16 / bfloat16 compute in float32, as PyTorch's cpu kernels do.

float32 LSTM cells on C-contiguous arrays run as one compiled loop each instead (``_jit``: numba, 4.8 against
~25 µs for a (20, 512) step) wherever numba is installed; the numpy code below is the rest, and all of it where
numba is not.
"""
from __future__ import annotations

import time

import numpy as np

from ._jit import jit_kernels
from ._util import FLOAT, buffer, compute_np, np_view, write

_NO_BIAS = np.empty(0, np.float32)
_NO_GRAD = np.empty((0, 0), np.float32)
_NO_STEPS = np.empty((0, 0, 0), np.float32)


def _arr(t, cd):
    a = np_view(t)
    return a if a.dtype == cd else a.astype(cd)


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


def _lstm_cell_arrays(ig, hg, c0, bi, bh, h, c, w):
    """The numpy LSTM step on arrays in the compute dtype: w <- the activated gates of ig + hg (+ bi, bh; None:
    absent), c <- f c0 + i g, h <- o tanh(c); h, c, w are written in place."""
    np.add(ig, hg, out=w)
    for b in (bi, bh):
        if b is not None:
            w += b
    H = w.shape[1] // 4
    if w.flags.c_contiguous:
        _lstm_gates_(w, H)
    else:                                   # an out= workspace with other strides: gate by gate
        _sigmoid_(w[:, :2 * H])
        np.tanh(w[:, 2 * H:3 * H], out=w[:, 2 * H:3 * H])
        _sigmoid_(w[:, 3 * H:])
    i, f, g, o = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
    np.multiply(f, c0, out=c)
    np.multiply(i, g, out=h)                # h as scratch for i * g
    c += h
    np.tanh(c, out=h)
    h *= o


def _lstm_cell_backward_arrays(ghy, gcy, c0, c1, w, gg, gcx, gb):
    """The numpy LSTM step's gradient on arrays in the compute dtype: gg, gcx (and gb, the batch sum of gg, unless
    None) written in place; a None gradient counts as zeros."""
    H = w.shape[1] // 4
    i, f, g, o = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
    tc = np.tanh(c1)
    gc = gcx                                # grad_cx's buffer holds gc until the end
    if ghy is not None:
        np.multiply(tc, tc, out=gc)
        np.subtract(1, gc, out=gc)
        gc *= o
        gc *= ghy
        if gcy is not None:
            gc += gcy
        np.multiply(ghy, tc, out=gg[:, 3 * H:])
    else:
        gc[...] = gcy if gcy is not None else 0
        gg[:, 3 * H:] = 0
    np.multiply(gc, g, out=gg[:, :H])
    np.multiply(gc, c0, out=gg[:, H:2 * H])
    np.multiply(gc, i, out=gg[:, 2 * H:3 * H])
    d = np.subtract(1, w)                   # the activations' derivatives: s (1 - s), and 1 - g^2 for g
    d *= w
    np.multiply(g, g, out=d[:, 2 * H:3 * H])
    np.subtract(1, d[:, 2 * H:3 * H], out=d[:, 2 * H:3 * H])
    gg *= d
    gc *= f
    if gb is not None:
        np.sum(gg, axis=0, out=gb)


def _jit_cell(ig, hg, c0, bi, bh, h, c, w):
    """``_lstm_cell_arrays`` as the compiled loop (float32, C-contiguous arrays)."""
    jit_kernels().lstm_cell(ig, hg, c0, _NO_BIAS if bi is None else bi, _NO_BIAS if bh is None else bh, h, c, w)


def _jit_cell_backward(ghy, gcy, c0, c1, w, gg, gcx, gb):
    """``_lstm_cell_backward_arrays`` as the compiled loop (float32, C-contiguous arrays)."""
    jit_kernels().lstm_cell_backward(_NO_GRAD if ghy is None else ghy, ghy is not None,
                                     _NO_GRAD if gcy is None else gcy, gcy is not None, c0, c1, w, gg, gcx,
                                     _NO_BIAS if gb is None else gb, gb is not None)


def _cells(cd, *arrays):
    """(step, step_backward) over arrays of dtype ``cd``: the compiled loops when they run and every array (None
    skipped) is float32 and C-contiguous, else the numpy ones; both take the numpy functions' arguments."""
    if jit_kernels() is None or cd != np.float32 or not all(a.flags.c_contiguous for a in arrays if a is not None):
        return _lstm_cell_arrays, _lstm_cell_backward_arrays
    return _jit_cell, _jit_cell_backward


def _copy_back(pairs):
    for t, (a, copied) in pairs:
        if copied:
            write(t, a)


def fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None, *, out):
    """cpu kernel of ``_thnn_fused_lstm_cell``, floating dtypes: gates = input_gates + hidden_gates (+ biases),
    workspace = (sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)), cy = f * cx + i * g, hy = o * tanh(cy), written
    in place into ``out`` = (hy, cy, workspace).
    """
    cd = compute_np(input_gates._dtype)
    bufs = [buffer(t, cd) for t in out]
    args = (_arr(input_gates, cd), _arr(hidden_gates, cd), _arr(cx, cd),
            *(None if b is None else _arr(b, cd) for b in (input_bias, hidden_bias)), *(b[0] for b in bufs))
    # the compiled loop only where no operand needed a float32 copy (float16 / bfloat16 take the numpy passes)
    step = _lstm_cell_arrays if any(b[1] for b in bufs) else _cells(cd, *args)[0]
    step(*args)
    _copy_back(zip(out, bufs))


def fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias, *, out):
    """cpu kernel of ``_thnn_fused_lstm_cell_backward_impl``, floating dtypes: with gc = grad_cy + grad_hy * o *
    (1 - tanh(cy)^2), grad_gates = (gc g, gc cx, gc i, grad_hy tanh(cy)) times the activations' derivatives
    (s (1 - s) for the sigmoid gates, 1 - g^2 for the cell gate), grad_cx = gc f and grad_bias the batch sum
    of grad_gates (when ``has_bias``). A None gradient counts as zeros.
    """
    cd = compute_np(workspace._dtype)
    bufs = [buffer(t, cd) for t in out] if has_bias else [buffer(t, cd) for t in out[:2]]
    args = (None if grad_hy is None else _arr(grad_hy, cd), None if grad_cy is None else _arr(grad_cy, cd),
            _arr(cx, cd), _arr(cy, cd), _arr(workspace, cd), bufs[0][0], bufs[1][0], bufs[2][0] if has_bias else None)
    step_backward = _lstm_cell_backward_arrays if any(b[1] for b in bufs) else _cells(cd, *args)[1]
    step_backward(*args)
    _copy_back(zip(out, bufs))


def _c(a, cd):
    """``a`` as a C-contiguous array of dtype ``cd`` (a copy only where needed)."""
    return np.ascontiguousarray(a, dtype=cd)


# Row blocks of the recurrence's per-step product, measured once per (m, k, n, dtype, loop) in a process.
_ROW_BLOCKS: dict = {}
# OpenBLAS multiplies without packing its operands below about 2^20 multiply-adds (its "small matrix" kernels):
# a (20, 128) @ (128, 512) step takes 35 µs whole and 25 as 12 + 8 rows. That is a candidate, not an assumption:
# _measure_row_blocks keeps a split only where it times faster here.
_UNPACKED_MACS = 1 << 20


def _numpy_matmul_rows(a, b, out, bounds):
    for i, j in zip(bounds[:-1], bounds[1:]):
        np.matmul(a[i:j], b, out=out[i:j])


def _row_blocks(m, k, n, dtype, jit):
    """Row-block bounds (0, ..., m) for an (m, k) @ (k, n) product of ``dtype`` (by numba's np.dot when ``jit``,
    else numpy's matmul, two different BLAS builds), as measured fastest on this machine: the whole product, or
    blocks each under ``_UNPACKED_MACS`` multiply-adds (greedy, greedy in multiples of 4 rows, or even) when
    those run at least 15 % faster. A row's values are the same either way up to the summation order the BLAS
    picks per call."""
    key = (m, k, n, np.dtype(dtype).str, jit)
    bounds = _ROW_BLOCKS.get(key)
    if bounds is None:
        run = jit_kernels().matmul_rows if jit else _numpy_matmul_rows
        bounds = _ROW_BLOCKS[key] = _measure_row_blocks(m, k, n, dtype, run)
    return bounds


def _measure_row_blocks(m, k, n, dtype, run):
    whole = (0, m)
    rows = (_UNPACKED_MACS - 1) // max(k * n, 1)
    if rows < 4 or rows >= m:
        return whole
    count = -(-m // rows)
    candidates = [(*range(0, m, size), m) for size in {rows, rows - rows % 4}]
    candidates.append(tuple(i * m // count for i in range(count + 1)))
    a, b, c = np.ones((m, k), dtype), np.ones((k, n), dtype), np.empty((m, n), dtype)

    def best(bounds):
        bounds = np.array(bounds, np.intp)
        run(a, b, c, bounds)                        # (numba compiles on the first call)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(4):
                run(a, b, c, bounds)
            times.append(time.perf_counter() - t0)
        return min(times)
    t_whole = best(whole)
    t_split, split = min(((best(bounds), bounds) for bounds in candidates), key=lambda tb: tb[0])
    return split if t_split < 0.85 * t_whole else whole


def lstm_layer(input_gates, hx, cx, weight_hh, reverse=False, *, out):
    """cpu kernel of ``_lstm_layer``, floating dtypes: per step (from L - 1 down when ``reverse``) h @ weight_hh.T
    into a scratch array (by ``_row_blocks``) and one cell writing straight into the step's slices of ``out`` =
    (output, hy, cy, cell_states, workspace). The whole loop is one numba call where ``_cells`` picks the
    compiled cell, else a Python loop of numpy calls."""
    cd = compute_np(input_gates._dtype)
    xg, h0, c0 = _c(np_view(input_gates), cd), _c(np_view(hx), cd), _c(np_view(cx), cd)
    bufs = [buffer(t, cd) for t in out]
    (o, _), (hy, _), (cy, _), (cs, _), (ws, _) = bufs
    steps, n, g = xg.shape
    w_t = _c(np_view(weight_hh), cd).T.copy()           # (H, 4H): a contiguous right operand for every step
    hg = np.empty((n, g), cd)
    step, _ = _cells(cd, xg, h0, c0, o, cs, ws)
    jit = step is _jit_cell
    bounds = _row_blocks(n, w_t.shape[0], g, cd, jit)
    if jit:
        jit_kernels().lstm_layer(xg, h0, c0, w_t, reverse, np.array(bounds, np.intp), o, cs, ws, hg)
    else:
        h, c = h0, c0
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            _numpy_matmul_rows(h, w_t, hg, bounds)
            step(xg[t], hg, c, None, None, o[t], cs[t], ws[t])
            h, c = o[t], cs[t]
    if steps:
        last = 0 if reverse else steps - 1
        hy[...] = o[last]
        cy[...] = cs[last]
    else:
        hy[...] = h0
        cy[...] = c0
    _copy_back(zip(out, bufs))


def lstm_layer_backward(grad_output, grad_hy, grad_cy, hx, cx, weight_hh, output, cell_states, workspace, reverse,
                        *, out):
    """cpu kernel of ``_lstm_layer_backward``, floating dtypes: the steps backward from the last one run, each one
    cell backward into its slice of grad_input_gates and the hidden state's gradient (by ``_row_blocks``), all
    one numba call where ``_cells`` picks the compiled cell; then grad_weight_hh as one product over all steps.
    ``out`` = (grad_input_gates, grad_hx, grad_cx, grad_weight_hh); None gradients count as zeros."""
    cd = compute_np(workspace._dtype)
    ws, cs = _c(np_view(workspace), cd), _c(np_view(cell_states), cd)
    c0 = _c(np_view(cx), cd)
    w = _c(np_view(weight_hh), cd)
    steps, n, g = ws.shape
    h = g // 4
    bufs = [buffer(out[0], cd, contiguous=True)] + [buffer(t, cd) for t in out[1:]]
    (gi, _), (ghx, _), (gcx, _), (gw, _) = bufs
    go = None if grad_output is None else _c(np_view(grad_output), cd)
    dh = np.zeros((n, h), cd) if grad_hy is None else _c(np_view(grad_hy), cd).copy()
    dc = np.zeros((n, h), cd) if grad_cy is None else _c(np_view(grad_cy), cd).copy()
    dh_sum, dc_next = np.empty((n, h), cd), np.empty((n, h), cd)
    _, step_backward = _cells(cd, ws, cs, c0, gi, dh, dc, go)
    jit = step_backward is _jit_cell_backward
    bounds = _row_blocks(n, g, h, cd, jit)
    if jit:
        dc = jit_kernels().lstm_layer_backward(_NO_STEPS if go is None else go, go is not None, dh, dc, dc_next,
                                               dh_sum, c0, w, cs, ws, gi, reverse, np.array(bounds, np.intp))
    else:
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for k in range(steps - 1, -1, -1):
            t = order[k]
            # dh itself when there is no output gradient: the cell reads it before the matmul below overwrites it
            dh_t = dh if go is None else np.add(dh, go[t], out=dh_sum)
            step_backward(dh_t, dc, c0 if k == 0 else cs[order[k - 1]], cs[t], ws[t], gi[t], dc_next, None)
            _numpy_matmul_rows(gi[t], w, dh, bounds)
            dc, dc_next = dc_next, dc
    ghx[...] = dh
    gcx[...] = dc
    h_prev = np.empty((steps, n, h), cd)                 # the hidden state each step started from
    if steps:
        o = np_view(output)
        first, rest = (steps - 1, slice(0, steps - 1)) if reverse else (0, slice(1, steps))
        h_prev[first] = np_view(hx)
        h_prev[rest] = o[1:] if reverse else o[:-1]
    np.matmul(gi.reshape(steps * n, g).T, h_prev.reshape(steps * n, h), out=gw)
    _copy_back(zip(out, bufs))


def fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None, *, out):
    """cpu kernel of ``_thnn_fused_gru_cell``, floating dtypes: r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z),
    n = tanh(x_n + r h_n) (biases added to their gates first), hy = n + z (hx - n), written into ``out`` =
    (hy, workspace (r, z, n, hx, h_n)).
    """
    cd = compute_np(input_gates._dtype)
    (w, w_cp), (h, h_cp) = buffer(out[1], cd), buffer(out[0], cd)
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
    (gi, gi_cp), (gh, gh_cp), (ghx, ghx_cp) = (buffer(out[k], cd) for k in range(3))
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
            b, b_cp = buffer(out[k], cd)
            np.sum(src, axis=0, out=b)
            if b_cp:
                write(out[k], b)
    for t, a, copied in ((out[0], gi, gi_cp), (out[1], gh, gh_cp), (out[2], ghx, ghx_cp)):
        if copied:
            write(t, a)


def register(lib):
    """Register the fused LSTM and GRU cells, the LSTM layer and their backward ops for device 'cpu', floating
    dtypes, on ``lib``."""
    lib.impl("_thnn_fused_lstm_cell", fused_lstm_cell, device="cpu", dtypes=FLOAT)
    lib.impl("_thnn_fused_lstm_cell_backward_impl", fused_lstm_cell_backward_impl, device="cpu", dtypes=FLOAT)
    lib.impl("_lstm_layer", lstm_layer, device="cpu", dtypes=FLOAT)
    lib.impl("_lstm_layer_backward", lstm_layer_backward, device="cpu", dtypes=FLOAT)
    lib.impl("_thnn_fused_gru_cell", fused_gru_cell, device="cpu", dtypes=FLOAT)
    lib.impl("_thnn_fused_gru_cell_backward", fused_gru_cell_backward, device="cpu", dtypes=FLOAT)
