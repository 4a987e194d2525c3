"""A whole LSTM layer over a sequence as one op, and its backward as one op (the role of ATen's
``mkldnn_rnn_layer`` / ``mkldnn_rnn_layer_backward``: PyTorch's cpu LSTM runs each layer and direction as one
call into oneDNN).

``_lstm_layer(input_gates, hx, cx, weight_hh, reverse=False)`` takes the input projection of every step,
input_gates (L, N, 4H) = x W_ih^T + b_ih + b_hh (the layer computes it with one matmul), the initial state hx, cx
(N, H) and weight_hh (4H, H), and runs the L steps - in reverse order when ``reverse`` (the backward direction
of a bidirectional LSTM). It returns (output (L, N, H), hy, cy (N, H), cell_states (L, N, H), workspace (L, N, 4H)):
the hidden state of every step, the final state, and what the backward needs (each step's cell state and
activated gates, as ``_thnn_fused_lstm_cell``'s workspace).

Why a layer op and not one op per step: the backward of the per-step ops gives weight_hh's gradient as one
(4H, N) @ (N, H) product and one add per step; here it is one (4H, L N) @ (L N, H) product for the sequence, the
steps write straight into the stacked output and gradient, and a device kernel runs the loop without dispatching
~15 ops per step (ember-cpu's: a numpy matmul and one compiled cell per step). Every device gets it: the composites
below run the loop with ember ops (the fused cell ops), so vdev, opencl and cuda run the op unchanged.

The derivative (``ember.library.register_autograd``): one ``_lstm_layer_backward`` call gives the gradients of
input_gates, hx, cx and weight_hh. Under create_graph=True the backward is written with ember ops instead (the
states recomputed from the saved inputs), so second derivatives work on every device.
"""
from __future__ import annotations

from .._dispatch import declare
from .._ops._meta import check_tensor, same_device
from .._ops._nn import _fmt, _key, _memo, _name
from ..autograd import is_grad_enabled
from ._fused_rnn import _check_floating, _lstm_grads, _lstm_step, fused_lstm_cell, fused_lstm_cell_backward

__all__ = ["lstm_layer", "lstm_layer_backward"]

_OP = "_lstm_layer"
_BOP = "_lstm_layer_backward"


def _order(steps, reverse):
    """The time steps in the order the layer runs them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _check_dtype(op, dt, *named):
    for a, name in named:
        if a is not None and a._dtype is not dt:
            raise RuntimeError(f"{op}: expected {name} to have dtype {_name(dt)}, got {_name(a._dtype)}")


# ---------------------------------------------------------------- forward
@_memo
def _layer_meta(input_gates, hx, cx, weight_hh, reverse=False):
    for a, name in ((input_gates, "input_gates"), (hx, "hx"), (cx, "cx"), (weight_hh, "weight_hh")):
        check_tensor(a, _OP, name)
    same_device(input_gates, hx, cx, weight_hh)
    gs = input_gates._shape
    if len(gs) != 3 or gs[2] % 4:
        raise RuntimeError(f"{_OP}: expected input_gates of shape (L, N, 4 * hidden_size), got {_fmt(gs)}")
    steps, n, h = gs[0], gs[1], gs[2] // 4
    for a, name, shape in ((hx, "hx", (n, h)), (cx, "cx", (n, h)), (weight_hh, "weight_hh", (4 * h, h))):
        if a._shape != shape:
            raise RuntimeError(f"{_OP}: expected {name} of shape {_fmt(shape)}, got {_fmt(a._shape)}")
    dt = input_gates._dtype
    _check_floating(input_gates, _OP)
    _check_dtype(_OP, dt, (hx, "hx"), (cx, "cx"), (weight_hh, "weight_hh"))
    seq, state = ((steps, n, h), dt), ((n, h), dt)
    return (*_key(input_gates, dt), (seq, state, state, seq, ((steps, n, 4 * h), dt)))


def _layer_composite(input_gates, hx, cx, weight_hh, reverse=False, *, out):
    output, hy, cy, cell_states, workspace = out
    w_t = weight_hh.t()
    h, c = hx, cx
    for t in _order(input_gates._shape[0], reverse):
        h, c, ws = fused_lstm_cell(input_gates[t], h.matmul(w_t), c)
        output[t].copy_(h)
        cell_states[t].copy_(c)
        workspace[t].copy_(ws)
    hy.copy_(h)
    cy.copy_(c)


lstm_layer = declare(
    f"{_OP}(Tensor input_gates, Tensor hx, Tensor cx, Tensor weight_hh, bool reverse=False) "
    "-> (Tensor, Tensor, Tensor, Tensor, Tensor)", _layer_meta, composite=_layer_composite,
    multi_output_type=lambda *outs: outs,
    doc="One LSTM layer over a sequence (the role of aten::mkldnn_rnn_layer): input_gates (L, N, 4H) = the input "
        "projection of every step with both biases, hx and cx (N, H), weight_hh (4H, H), all of one floating "
        "dtype; the steps run from 0 to L - 1, or from L - 1 to 0 when ``reverse``. Each step is "
        "_thnn_fused_lstm_cell(input_gates[t], h @ weight_hh.T, c). Returns (output (L, N, H), hy (N, H), cy (N, H), "
        "cell_states (L, N, H), workspace (L, N, 4H) - the activated gates). RuntimeError for mismatched shapes or "
        "dtypes; NotImplementedError for a non-floating dtype.")


# ---------------------------------------------------------------- backward
@_memo
def _layer_backward_meta(grad_output, grad_hy, grad_cy, hx, cx, weight_hh, output, cell_states, workspace,
                         reverse):
    for a, name in ((hx, "hx"), (cx, "cx"), (weight_hh, "weight_hh"), (output, "output"),
                    (cell_states, "cell_states"), (workspace, "workspace")):
        check_tensor(a, _BOP, name)
    same_device(grad_output, grad_hy, grad_cy, hx, cx, weight_hh, output, cell_states, workspace)
    ws = workspace._shape
    if len(ws) != 3 or ws[2] % 4:
        raise RuntimeError(f"{_BOP}: expected workspace of shape (L, N, 4 * hidden_size), got {_fmt(ws)}")
    steps, n, h = ws[0], ws[1], ws[2] // 4
    for a, name, shape in ((grad_output, "grad_output", (steps, n, h)), (grad_hy, "grad_hy", (n, h)),
                           (grad_cy, "grad_cy", (n, h)), (hx, "hx", (n, h)), (cx, "cx", (n, h)),
                           (weight_hh, "weight_hh", (4 * h, h)), (output, "output", (steps, n, h)),
                           (cell_states, "cell_states", (steps, n, h))):
        if a is not None and a._shape != shape:
            raise RuntimeError(f"{_BOP}: expected {name} of shape {_fmt(shape)}, got {_fmt(a._shape)}")
    dt = workspace._dtype
    _check_floating(workspace, _BOP)
    _check_dtype(_BOP, dt, (grad_output, "grad_output"), (grad_hy, "grad_hy"), (grad_cy, "grad_cy"), (hx, "hx"),
                 (cx, "cx"), (weight_hh, "weight_hh"), (output, "output"), (cell_states, "cell_states"))
    state = ((n, h), dt)
    return (*_key(workspace, dt), (((steps, n, 4 * h), dt), state, state, ((4 * h, h), dt)))


def _previous_hidden(hx, output, reverse):
    """(L, N, H): the hidden state each step starts from, in step order (hx for the first step run)."""
    from .. import cat
    if output._shape[0] == 0:
        return output
    if reverse:
        return cat([output[1:], hx.unsqueeze(0)], 0)
    return cat([hx.unsqueeze(0), output[:-1]], 0)


def _layer_backward_composite(grad_output, grad_hy, grad_cy, hx, cx, weight_hh, output, cell_states, workspace,
                              reverse, *, out):
    grad_input_gates, grad_hx, grad_cx, grad_weight_hh = out
    steps, n, g = workspace._shape
    dh, dc = grad_hy, grad_cy
    order = _order(steps, reverse)
    for k in range(steps - 1, -1, -1):
        t = order[k]
        if grad_output is not None:
            dh = grad_output[t] if dh is None else dh + grad_output[t]
        c_prev = cx if k == 0 else cell_states[order[k - 1]]
        gates, dc, _ = fused_lstm_cell_backward(dh, dc, c_prev, cell_states[t], workspace[t], False)
        grad_input_gates[t].copy_(gates)
        dh = gates.matmul(weight_hh)
    for dst, src in ((grad_hx, dh), (grad_cx, dc)):
        dst.zero_() if src is None else dst.copy_(src)
    h_prev = _previous_hidden(hx, output, reverse)
    grad_weight_hh.copy_(grad_input_gates.reshape(steps * n, g).t().matmul(h_prev.reshape(steps * n, g // 4)))


lstm_layer_backward = declare(
    f"{_BOP}(Tensor? grad_output, Tensor? grad_hy, Tensor? grad_cy, Tensor hx, Tensor cx, Tensor weight_hh, "
    "Tensor output, Tensor cell_states, Tensor workspace, bool reverse) -> (Tensor, Tensor, Tensor, Tensor)",
    _layer_backward_meta, composite=_layer_backward_composite, multi_output_type=lambda *outs: outs,
    doc="The gradient of _lstm_layer (the role of aten::mkldnn_rnn_layer_backward): from the gradients of output "
        "(L, N, H), hy and cy (N, H) (None counts as zeros), the inputs hx, cx, weight_hh and the forward's output, "
        "cell_states and workspace, returns (grad_input_gates (L, N, 4H), grad_hx, grad_cx (N, H), grad_weight_hh "
        "(4H, H)). The steps run backward from the last one the forward ran; weight_hh's gradient is one product "
        "grad_input_gates^T @ (the hidden state each step started from) over all steps.")


# ---------------------------------------------------------------- derivative
def _differentiable_backward(grad_output, grad_hy, grad_cy, input_gates, hx, cx, weight_hh, reverse):
    """The gradients of input_gates, hx, cx, weight_hh written with ember ops, the states recomputed from the
    inputs: differentiable again (create_graph=True)."""
    from .. import stack
    steps = input_gates._shape[0]
    if steps == 0:
        return (input_gates * 0, grad_hy if grad_hy is not None else hx * 0, grad_cy if grad_cy is not None else cx * 0,
                weight_hh * 0)
    order = _order(steps, reverse)
    w_t = weight_hh.t()
    h, c = hx, cx
    hs, cs, wss = [], [], []
    for t in order:
        hs.append(h)
        c_new, ws = _lstm_step(input_gates[t], h.matmul(w_t), c, None, None)
        h, c = ws.chunk(4, 1)[3] * c_new.tanh(), c_new
        cs.append(c)
        wss.append(ws)
    dh, dc = grad_hy, grad_cy
    grads = [None] * steps
    grad_w = None
    for k in range(steps - 1, -1, -1):
        t = order[k]
        if grad_output is not None:
            dh = grad_output[t] if dh is None else dh + grad_output[t]
        gates, dc = _lstm_grads(dh, dc, cx if k == 0 else cs[k - 1], cs[k], wss[k])
        grads[t] = gates
        step_w = gates.t().matmul(hs[k])
        grad_w = step_w if grad_w is None else grad_w + step_w
        dh = gates.matmul(weight_hh)
    return stack(grads, 0), dh, dc, grad_w


def _setup_context(ctx, inputs, output):
    input_gates, hx, cx, weight_hh, reverse = (*inputs, False)[:5]
    out, _, _, cell_states, workspace = output
    ctx.reverse = bool(reverse)
    ctx.mark_non_differentiable(cell_states, workspace)
    ctx.set_materialize_grads(False)             # the backward op takes None for a missing gradient
    ctx.save_for_backward(input_gates, hx, cx, weight_hh, out, cell_states, workspace)


def _backward(ctx, grad_output, grad_hy, grad_cy, grad_cell_states, grad_workspace):
    if grad_output is None and grad_hy is None and grad_cy is None:
        return None, None, None, None, None
    input_gates, hx, cx, weight_hh, out, cell_states, workspace = ctx.saved_tensors
    if is_grad_enabled():       # create_graph=True: written with ember ops, so the gradients have a graph
        grads = _differentiable_backward(grad_output, grad_hy, grad_cy, input_gates, hx, cx, weight_hh,
                                         ctx.reverse)
    else:
        grads = lstm_layer_backward(grad_output, grad_hy, grad_cy, hx, cx, weight_hh, out, cell_states, workspace,
                                    ctx.reverse)
    return (*grads, None)


def _install():
    from ..library import register_autograd
    register_autograd(_OP, _backward, setup_context=_setup_context)


_install()
