"""numba-compiled float32 loops for the LSTM cell and its backward (imported by ember_cpu.kernels._jit only when
numba imports; see that module for when they run and why).

Every function is compiled for float32 C-contiguous arrays with ``error_model="numpy"`` (a float division does not
check for zero, so the loops vectorise) and without fastmath: no FMA contraction and no reassociation, so results
are the same on every x86-64 machine and NaN propagates. tanh is the rational approximation of ``_jit`` (within
6 ulp of the correctly rounded float32 value); sigmoid(x) = 0.5 tanh(x / 2) + 0.5, as in the numpy kernels.
"""
from __future__ import annotations

import numba
import numpy as np

from ._jit import TANH_CLAMP, TANH_P, TANH_Q

_f = np.float32
P0, P1, P2, P3, P4, P5 = (_f(c) for c in TANH_P)
Q0, Q1, Q2, Q3 = (_f(c) for c in TANH_Q)
CLAMP, NCLAMP = _f(TANH_CLAMP), _f(-TANH_CLAMP)
ONE, NONE, HALF, ZERO = _f(1), _f(-1), _f(0.5), _f(0)
SATURATED = _f(9)         # |x| >= 9: tanh(x) is +-1 (within an ulp), as numpy's float32 tanh

_jit = numba.njit(error_model="numpy", nogil=True, cache=True)


@numba.njit(error_model="numpy", nogil=True, cache=True, inline="always")
def tanh32(x):
    """tanh of a float32: u P(u^2) / Q(u^2) with u = x clamped to [-8, 8], the result kept in [-1, 1]; +-1 from
    |x| >= 9 on; NaN stays NaN (every comparison with it is false)."""
    u = CLAMP if x > CLAMP else x
    u = NCLAMP if u < NCLAMP else u
    u2 = u * u
    p = u * (P0 + u2 * (P1 + u2 * (P2 + u2 * (P3 + u2 * (P4 + u2 * P5)))))
    q = Q0 + u2 * (Q1 + u2 * (Q2 + u2 * Q3))
    y = p / q
    y = ONE if (y > ONE or x >= SATURATED) else y
    return NONE if (y < NONE or x <= -SATURATED) else y


# The loops index slices from 0: numba cannot prove an index like ``2 * h + j`` non-negative, wraps it around per
# element, and the loop then does not vectorise (the gate loop ran at 13 µs instead of 4.6). In-place passes are
# their own one-array loops: a loop whose output is one of its inputs fails LLVM's run-time overlap check and runs
# the scalar version (50 µs for the step).

@_jit
def _sigmoid_sum(dst, x, y):
    for j in range(dst.size):
        dst[j] = HALF * tanh32((x[j] + y[j]) * HALF) + HALF


@_jit
def _tanh_sum(dst, x, y):
    for j in range(dst.size):
        dst[j] = tanh32(x[j] + y[j])


@_jit
def _sigmoid_(x):
    for j in range(x.size):
        x[j] = HALF * tanh32(x[j] * HALF) + HALF


@_jit
def _tanh_(x):
    for j in range(x.size):
        x[j] = tanh32(x[j])


@_jit
def _add_(dst, y):
    for j in range(dst.size):
        dst[j] += y[j]


@_jit
def lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias, hy, cy, workspace):
    """One LSTM step (``_thnn_fused_lstm_cell``): gates (N, 4H) = input_gates + hidden_gates (+ the (4H,) biases;
    a (0,) bias is absent), workspace = (sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)), cy = f cx + i g,
    hy = o tanh(cy). The operations and their order are the numpy kernel's."""
    n, h4 = input_gates.shape
    h = h4 // 4
    has_bias = input_bias.shape[0] != 0 or hidden_bias.shape[0] != 0
    for r in range(n):
        w = workspace[r]
        a = input_gates[r]
        b = hidden_gates[r]
        if has_bias:            # the sums first (in the numpy kernel's order), then activated in place
            for j in range(h4):
                w[j] = a[j] + b[j]
            if input_bias.shape[0] != 0:
                _add_(w, input_bias)
            if hidden_bias.shape[0] != 0:
                _add_(w, hidden_bias)
            _sigmoid_(w[:2 * h])
            _tanh_(w[2 * h:3 * h])
            _sigmoid_(w[3 * h:])
        else:                   # sum and activation in one pass
            _sigmoid_sum(w[:2 * h], a[:2 * h], b[:2 * h])
            _tanh_sum(w[2 * h:3 * h], a[2 * h:3 * h], b[2 * h:3 * h])
            _sigmoid_sum(w[3 * h:], a[3 * h:], b[3 * h:])
        i, f, g, o = w[:h], w[h:2 * h], w[2 * h:3 * h], w[3 * h:]
        c0 = cx[r]
        c1 = cy[r]
        h1 = hy[r]
        for j in range(h):
            c = f[j] * c0[j] + i[j] * g[j]
            c1[j] = c
            h1[j] = tanh32(c) * o[j]


@_jit
def lstm_cell_backward(grad_hy, has_grad_hy, grad_cy, has_grad_cy, cx, cy, workspace, grad_gates, grad_cx,
                       grad_bias, has_bias):
    """The LSTM step's gradient (``_thnn_fused_lstm_cell_backward_impl``): gc = grad_cy + grad_hy o (1 - tanh(cy)^2),
    grad_gates = (gc g, gc cx, gc i, grad_hy tanh(cy)) times s (1 - s) (the sigmoid gates) or 1 - g^2 (the cell
    gate), grad_cx = gc f, grad_bias = the row sums of grad_gates in row order. A gradient whose flag is False
    counts as zeros (its array is not read)."""
    n, h4 = workspace.shape
    h = h4 // 4
    for r in range(n):
        w = workspace[r]
        i, f, g, o = w[:h], w[h:2 * h], w[2 * h:3 * h], w[3 * h:]
        d = grad_gates[r]
        di, df, dg, do = d[:h], d[h:2 * h], d[2 * h:3 * h], d[3 * h:]
        c0 = cx[r]
        c1 = cy[r]
        gx = grad_cx[r]
        ghy = grad_hy[r] if has_grad_hy else c1
        gcy = grad_cy[r] if has_grad_cy else c1
        for j in range(h):
            tc = tanh32(c1[j])
            if has_grad_hy:
                gc = (ONE - tc * tc) * o[j] * ghy[j]
                if has_grad_cy:
                    gc += gcy[j]
                go = ghy[j] * tc
            else:
                gc = gcy[j] if has_grad_cy else ZERO
                go = ZERO
            di[j] = gc * g[j] * ((ONE - i[j]) * i[j])
            df[j] = gc * c0[j] * ((ONE - f[j]) * f[j])
            dg[j] = gc * i[j] * (ONE - g[j] * g[j])
            do[j] = go * ((ONE - o[j]) * o[j])
            gx[j] = gc * f[j]
    if has_bias:
        for j in range(h4):
            grad_bias[j] = ZERO
        for r in range(n):
            d = grad_gates[r]
            for j in range(h4):
                grad_bias[j] += d[j]


@_jit
def add_rows(a, index, source):
    """a[index[k]] += source[k] for k in order (``np.add.at(a, index, source)`` on 2-D rows, the same sums bit for
    bit): an embedding's gradient, one pass where add.at walks every element through its generic loop."""
    for k in range(index.shape[0]):
        row = a[index[k]]
        src = source[k]
        for j in range(row.shape[0]):
            row[j] += src[j]


@_jit
def _sum_into(dst, x, y):
    for j in range(dst.size):
        dst[j] = x[j] + y[j]


@_jit
def matmul_rows(a, b, out, bounds):
    """out[s] = a[s] @ b for each row block s = bounds[k]:bounds[k + 1] (numba's np.dot: a BLAS gemm per block;
    see rnn._row_blocks for why a product is split)."""
    for k in range(bounds.shape[0] - 1):
        np.dot(a[bounds[k]:bounds[k + 1]], b, out[bounds[k]:bounds[k + 1]])


@_jit
def lstm_layer(input_gates, hx, cx, weight_hh_t, reverse, bounds, output, cell_states, workspace, hidden_gates):
    """The LSTM layer's time loop (``_lstm_layer``): per step (from L - 1 down when ``reverse``) hidden_gates =
    h @ weight_hh_t by row blocks, then ``lstm_cell`` into the step's slices of output / cell_states / workspace.
    input_gates (L, N, 4H), hx / cx (N, H), weight_hh_t (H, 4H), hidden_gates (N, 4H) scratch."""
    steps = input_gates.shape[0]
    none = np.empty(0, np.float32)
    h, c = hx, cx
    for k in range(steps):
        t = steps - 1 - k if reverse else k
        matmul_rows(h, weight_hh_t, hidden_gates, bounds)
        lstm_cell(input_gates[t], hidden_gates, c, none, none, output[t], cell_states[t], workspace[t])
        h, c = output[t], cell_states[t]


@_jit
def lstm_layer_backward(grad_output, has_grad_output, dh, dc, dc_next, dh_sum, cx, weight_hh, cell_states,
                        workspace, grad_gates, reverse, bounds):
    """The steps of ``_lstm_layer_backward`` from the last one run: dh (N, H) and dc (N, H) enter holding the
    gradients of hy and cy (zeros for none); per step the cell backward writes the step's grad_gates slice and
    the next dc (into dc_next, the two swapped), then dh = grad_gates[t] @ weight_hh by row blocks. grad_output
    (L, N, H) is added to dh first when ``has_grad_output`` (into dh_sum). Returns the array holding grad_cx;
    dh holds grad_hx."""
    steps = workspace.shape[0]
    none_b = np.empty(0, np.float32)
    for k in range(steps - 1, -1, -1):
        t = steps - 1 - k if reverse else k
        dh_t = dh
        if has_grad_output:
            go = grad_output[t]
            for r in range(dh.shape[0]):
                _sum_into(dh_sum[r], dh[r], go[r])
            dh_t = dh_sum
        if k == 0:
            c0 = cx
        else:
            c0 = cell_states[steps - k if reverse else k - 1]
        lstm_cell_backward(dh_t, True, dc, True, c0, cell_states[t], workspace[t], grad_gates[t], dc_next, none_b,
                           False)
        matmul_rows(grad_gates[t], weight_hh, dh, bounds)
        dc, dc_next = dc_next, dc
    return dc
