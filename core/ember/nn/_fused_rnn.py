"""The fused LSTM and GRU cells: one op per time step, and its backward as one op (matches ATen's
``_thnn_fused_lstm_cell`` / ``_thnn_fused_lstm_cell_backward_impl`` and the GRU's pair).

``_thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None)``
takes the gate pre-activations of one step, x_t W_ih^T (the LSTM layer computes it for
every step with one matmul before its loop) and h_{t-1} W_hh^T, each (N, 4H) in PyTorch's
gate order (input, forget, cell, output), and the cell state cx (N, H). It returns
(hy, cy, workspace): c' = sigmoid(f) * cx + sigmoid(i) * tanh(g), h' = sigmoid(o) * tanh(c')
and the activated gates (N, 4H), which is what the backward needs besides cx and cy.

Both ops have a composite written with ember ops, so every device (vdev, opencl, cuda) runs
them unchanged; ember-cpu registers numpy kernels that work in place on the outputs. The
derivative is registered with ``ember.library.register_autograd``: one call of the backward
op gives the gradients of all five inputs (a formula per input would run it once per input).
Under create_graph=True the backward is written with ember ops instead (the activations
recomputed from the saved inputs), so second derivatives work on every device. The GRU
cell is the same (``_thnn_fused_gru_cell``, ATen's workspace (r, z, n, hx, h_n)).
"""
from __future__ import annotations

from .._dispatch import declare
from .._ops._meta import check_tensor, same_device
from .._ops._nn import _fmt, _key, _memo, _name
from ..autograd import Function, is_grad_enabled

__all__ = ["fused_lstm_cell", "fused_lstm_cell_backward", "fused_gru_cell", "fused_gru_cell_backward",
           "unbind_steps"]

_OP = "_thnn_fused_lstm_cell"


def _check_floating(t, op):
    if not t._dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{_name(t._dtype)}'")


# ---------------------------------------------------------------- forward
def _cell_meta_for(op, gates, ws_gates):
    """The meta function of a fused cell with ``gates`` gates per hidden unit: checks, and (hy, cy) or (hy,)
    plus a workspace of ``ws_gates`` * H columns."""
    state = "cx" if gates == 4 else "hx"

    @_memo
    def meta(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
        for a, name in ((input_gates, "input_gates"), (hidden_gates, "hidden_gates"), (cx, state)):
            check_tensor(a, op, name)
        same_device(input_gates, hidden_gates, cx, input_bias, hidden_bias)
        gs = input_gates._shape
        if len(gs) != 2 or gs[1] % gates:
            raise RuntimeError(f"{op}: expected input_gates of shape (N, {gates} * hidden_size), got {_fmt(gs)}")
        if hidden_gates._shape != gs:
            raise RuntimeError(f"{op}: hidden_gates of shape {_fmt(hidden_gates._shape)} does not match "
                               f"input_gates of shape {_fmt(gs)}")
        n, h = gs[0], gs[1] // gates
        if cx._shape != (n, h):
            raise RuntimeError(f"{op}: expected {state} of shape {_fmt((n, h))}, got {_fmt(cx._shape)}")
        dt = input_gates._dtype
        _check_floating(input_gates, op)
        for a, name in ((hidden_gates, "hidden_gates"), (cx, state), (input_bias, "input_bias"),
                        (hidden_bias, "hidden_bias")):
            if a is None:
                continue
            check_tensor(a, op, name)
            if a._dtype is not dt:
                raise RuntimeError(f"{op}: expected {name} to have dtype {_name(dt)}, got {_name(a._dtype)}")
            if name.endswith("bias") and a._shape != (gates * h,):
                raise RuntimeError(f"{op}: expected {name} of shape {_fmt((gates * h,))}, got {_fmt(a._shape)}")
        states = (((n, h), dt), ((n, h), dt)) if gates == 4 else (((n, h), dt),)
        return (*_key(input_gates, dt), states + (((n, ws_gates * h), dt),))
    return meta


_lstm_cell_meta = _cell_meta_for(_OP, 4, 4)


def _lstm_step(input_gates, hidden_gates, cx, input_bias, hidden_bias):
    """(cy, workspace) of one LSTM step with ember ops: the composite, and the backward that is to be
    differentiated (create_graph=True)."""
    gates = input_gates + hidden_gates
    for b in (input_bias, hidden_bias):
        if b is not None:
            gates = gates + b
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    from .. import cat
    return f * cx + i * g, cat([i, f, g, o], 1)


def _lstm_cell_composite(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None, *, out):
    hy, cy, workspace = out
    c, ws = _lstm_step(input_gates, hidden_gates, cx, input_bias, hidden_bias)
    cy.copy_(c)
    hy.copy_(ws.chunk(4, 1)[3] * c.tanh())
    workspace.copy_(ws)


fused_lstm_cell = declare(
    f"{_OP}(Tensor input_gates, Tensor hidden_gates, Tensor cx, Tensor? input_bias=None, Tensor? hidden_bias=None) "
    "-> (Tensor, Tensor, Tensor)", _lstm_cell_meta, composite=_lstm_cell_composite,
    multi_output_type=lambda *outs: outs,
    doc="One LSTM step from its gate pre-activations (matches aten::_thnn_fused_lstm_cell): input_gates and "
        "hidden_gates (N, 4H) in the gate order (i, f, g, o), cx (N, H), optional biases (4H,), all of one floating "
        "dtype. Returns (hy, cy, workspace): cy = sigmoid(f) cx + sigmoid(i) tanh(g), hy = sigmoid(o) tanh(cy), "
        "workspace the activated gates (N, 4H) the backward reads. RuntimeError for mismatched shapes or dtypes; "
        "NotImplementedError for a non-floating dtype.")


# ---------------------------------------------------------------- backward
_BOP = "_thnn_fused_lstm_cell_backward_impl"


@_memo
def _lstm_cell_backward_meta(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    for a, name in ((cx, "cx"), (cy, "cy"), (workspace, "workspace")):
        check_tensor(a, _BOP, name)
    same_device(grad_hy, grad_cy, cx, cy, workspace)
    n, h = cx._shape if len(cx._shape) == 2 else (None, None)
    if n is None or cy._shape != cx._shape or workspace._shape != (n, 4 * h):
        raise RuntimeError(f"{_BOP}: expected cx and cy (N, H) and workspace (N, 4H), got {_fmt(cx._shape)}, "
                           f"{_fmt(cy._shape)} and {_fmt(workspace._shape)}")
    for g, name in ((grad_hy, "grad_hy"), (grad_cy, "grad_cy")):
        if g is not None and g._shape != cx._shape:
            raise RuntimeError(f"{_BOP}: expected {name} of shape {_fmt(cx._shape)}, got {_fmt(g._shape)}")
    dt = workspace._dtype
    _check_floating(workspace, _BOP)
    # no bias: grad_bias is an empty (0,) tensor where ATen returns an undefined one
    return (*_key(workspace, dt), (((n, 4 * h), dt), ((n, h), dt), (((4 * h) if has_bias else 0,), dt)))


def _lstm_grads(grad_hy, grad_cy, cx, cy, workspace):
    """(grad_gates, grad_cx) written with ember ops (differentiable again when the inputs are)."""
    i, f, g, o = workspace.chunk(4, 1)
    tc = cy.tanh()
    gc = grad_cy if grad_cy is not None else None
    if grad_hy is not None:
        from_h = grad_hy * o * (1 - tc * tc)
        gc = from_h if gc is None else gc + from_h
    if gc is None:
        gc = cy * 0
    from .. import cat
    go = grad_hy * tc * o * (1 - o) if grad_hy is not None else o * 0
    return cat([gc * g * i * (1 - i), gc * cx * f * (1 - f), gc * i * (1 - g * g), go], 1), gc * f


def _lstm_cell_backward_composite(grad_hy, grad_cy, cx, cy, workspace, has_bias, *, out):
    grad_gates, grad_cx, grad_bias = out
    gates, gcx = _lstm_grads(grad_hy, grad_cy, cx, cy, workspace)
    grad_gates.copy_(gates)
    grad_cx.copy_(gcx)
    if has_bias:
        grad_bias.copy_(gates.sum(0))


fused_lstm_cell_backward = declare(
    f"{_BOP}(Tensor? grad_hy, Tensor? grad_cy, Tensor cx, Tensor cy, Tensor workspace, bool has_bias) "
    "-> (Tensor, Tensor, Tensor)", _lstm_cell_backward_meta, composite=_lstm_cell_backward_composite,
    multi_output_type=lambda *outs: outs,
    doc="The gradient of _thnn_fused_lstm_cell (matches aten::_thnn_fused_lstm_cell_backward_impl): from the "
        "gradients of hy and cy (N, H; None counts as zeros), cx, cy and the forward's workspace, returns "
        "(grad_gates (N, 4H) - the gradient of input_gates and of hidden_gates alike -, grad_cx (N, H), grad_bias "
        "(4H,), the sum of grad_gates over the batch, or an empty (0,) tensor when ``has_bias`` is False).")


# ---------------------------------------------------------------- GRU cell
_GOP = "_thnn_fused_gru_cell"
_GBOP = "_thnn_fused_gru_cell_backward"


def _gru_workspace(input_gates, hidden_gates, hx, input_bias, hidden_bias):
    """The workspace (r, z, n, hx, h_n) of one GRU step with ember ops: the composite, and the backward that is
    to be differentiated (create_graph=True)."""
    if input_bias is not None:
        input_gates = input_gates + input_bias
    if hidden_bias is not None:
        hidden_gates = hidden_gates + hidden_bias
    xr, xz, xn = input_gates.chunk(3, 1)
    hr, hz, hn = hidden_gates.chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    from .. import cat
    return cat([r, z, (xn + r * hn).tanh(), hx, hn], 1)


def _gru_cell_composite(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None, *, out):
    hy, workspace = out
    ws = _gru_workspace(input_gates, hidden_gates, hx, input_bias, hidden_bias)
    _, z, n, _, _ = ws.chunk(5, 1)
    hy.copy_(n + z * (hx - n))
    workspace.copy_(ws)


fused_gru_cell = declare(
    f"{_GOP}(Tensor input_gates, Tensor hidden_gates, Tensor hx, Tensor? input_bias=None, Tensor? hidden_bias=None) "
    "-> (Tensor, Tensor)", _cell_meta_for(_GOP, 3, 5), composite=_gru_cell_composite,
    multi_output_type=lambda *outs: outs,
    doc="One GRU step from its gate pre-activations (matches aten::_thnn_fused_gru_cell): input_gates and "
        "hidden_gates (N, 3H) in the gate order (r, z, n), hx (N, H), optional biases (3H,), all of one floating "
        "dtype. r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r h_n) (the hidden bias inside "
        "the product, as PyTorch), hy = n + z (hx - n). Returns (hy, workspace (N, 5H) = (r, z, n, hx, h_n)). "
        "RuntimeError for mismatched shapes or dtypes; NotImplementedError for a non-floating dtype.")


@_memo
def _gru_cell_backward_meta(grad_hy, workspace, has_bias):
    check_tensor(grad_hy, _GBOP, "grad_hy")
    check_tensor(workspace, _GBOP, "workspace")
    same_device(grad_hy, workspace)
    gs = grad_hy._shape
    if len(gs) != 2 or workspace._shape != (gs[0], 5 * gs[1]):
        raise RuntimeError(f"{_GBOP}: expected grad_hy (N, H) and workspace (N, 5H), got {_fmt(gs)} and "
                           f"{_fmt(workspace._shape)}")
    dt = workspace._dtype
    _check_floating(workspace, _GBOP)
    n, h = gs
    b = (((3 * h) if has_bias else 0,), dt)
    return (*_key(workspace, dt), (((n, 3 * h), dt), ((n, 3 * h), dt), ((n, h), dt), b, b))


def _gru_grads(grad_hy, workspace):
    """(grad_input_gates, grad_hidden_gates, grad_hx) written with ember ops (differentiable again)."""
    r, z, n, hx, hn = workspace.chunk(5, 1)
    gn = grad_hy * (1 - z) * (1 - n * n)
    gz = grad_hy * (hx - n) * z * (1 - z)
    gr = gn * hn * r * (1 - r)
    from .. import cat
    return cat([gr, gz, gn], 1), cat([gr, gz, gn * r], 1), grad_hy * z


def _gru_cell_backward_composite(grad_hy, workspace, has_bias, *, out):
    grad_ig, grad_hg, grad_hx, grad_ib, grad_hb = out
    gi, gh, ghx = _gru_grads(grad_hy, workspace)
    grad_ig.copy_(gi)
    grad_hg.copy_(gh)
    grad_hx.copy_(ghx)
    if has_bias:
        grad_ib.copy_(gi.sum(0))
        grad_hb.copy_(gh.sum(0))


fused_gru_cell_backward = declare(
    f"{_GBOP}(Tensor grad_hy, Tensor workspace, bool has_bias) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    _gru_cell_backward_meta, composite=_gru_cell_backward_composite, multi_output_type=lambda *outs: outs,
    doc="The gradient of _thnn_fused_gru_cell (matches aten::_thnn_fused_gru_cell_backward): from grad_hy (N, H) "
        "and the forward's workspace, (grad_input_gates (N, 3H), grad_hidden_gates (N, 3H), grad_hx (N, H) - the "
        "direct part; the matmul that made hidden_gates adds its own -, grad_input_bias, grad_hidden_bias (3H,), "
        "the batch sums of the gate gradients, or empty (0,) tensors when ``has_bias`` is False).")


# ---------------------------------------------------------------- derivative
def _setup_context(ctx, inputs, output):
    _, _, cx, input_bias, hidden_bias = inputs
    _, cy, workspace = output
    ctx.has_bias = input_bias is not None or hidden_bias is not None
    ctx.biases = (input_bias is not None, hidden_bias is not None)
    ctx.mark_non_differentiable(workspace)      # as ATen: output_differentiability [True, True, False]
    ctx.set_materialize_grads(False)             # the backward op takes None for a missing gradient
    ctx.save_for_backward(*inputs, cy, workspace)


def _backward(ctx, grad_hy, grad_cy, grad_workspace):
    if grad_hy is None and grad_cy is None:
        return None, None, None, None, None
    *inputs, cy, workspace = ctx.saved_tensors
    bi, bh = ctx.biases
    if is_grad_enabled():       # create_graph=True: the gradient written with ember ops, so it has a graph
        cy, workspace = _lstm_step(*inputs)
        grad_gates, grad_cx = _lstm_grads(grad_hy, grad_cy, inputs[2], cy, workspace)
        grad_bias = grad_gates.sum(0) if ctx.has_bias else None
    else:
        grad_gates, grad_cx, grad_bias = fused_lstm_cell_backward(grad_hy, grad_cy, inputs[2], cy, workspace,
                                                                  ctx.has_bias)
    return grad_gates, grad_gates, grad_cx, grad_bias if bi else None, grad_bias if bh else None


def _gru_setup_context(ctx, inputs, output):
    input_bias, hidden_bias = inputs[3], inputs[4]
    ctx.has_bias = input_bias is not None or hidden_bias is not None
    ctx.biases = (input_bias is not None, hidden_bias is not None)
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(*inputs, output[1])


def _gru_backward(ctx, grad_hy, grad_workspace):
    if grad_hy is None:
        return None, None, None, None, None
    *inputs, workspace = ctx.saved_tensors
    bi, bh = ctx.biases
    if is_grad_enabled():       # create_graph=True, as for the LSTM
        gi, gh, ghx = _gru_grads(grad_hy, _gru_workspace(*inputs))
        gbi, gbh = gi.sum(0), gh.sum(0)
    else:
        gi, gh, ghx, gbi, gbh = fused_gru_cell_backward(grad_hy, workspace, ctx.has_bias)
    return gi, gh, ghx, gbi if bi else None, gbh if bh else None


def _install():
    from ..library import register_autograd
    register_autograd(_OP, _backward, setup_context=_setup_context)
    register_autograd(_GOP, _gru_backward, setup_context=_gru_setup_context)


_install()


# ---------------------------------------------------------------- the time steps of a sequence
class _Steps(Function):
    """``x.unbind(0)`` whose backward is one ``stack`` of the steps' gradients (a missing one counts as zeros).

    Autograd through plain ``unbind`` (one ``select`` view per step) scatters every step's gradient into a
    zero tensor of the whole sequence and sums those: O(L^2) work for L steps; this is O(L)."""

    @staticmethod
    def forward(ctx, x):
        """x (L, ...) -> its L steps x[t] (views)."""
        return tuple(x.unbind(0))

    @staticmethod
    def backward(ctx, *grads):
        """The steps' gradients (each (...)) stacked into one (L, ...) gradient of x."""
        from .. import stack
        return stack(grads, 0)


class _RecurrentProduct(Function):
    """``h @ w.T``, the recurrent product of an RNN / LSTM / GRU step, given ``w_t``: ``w.T`` as a contiguous copy
    made once per sequence (not tracked). The forward multiplies by ``w_t``, the backward by ``w`` itself
    (grad_h = grad @ w) and gives ``w`` its gradient grad.T @ h: every product has a contiguous right operand, where
    ``h @ w.T`` through the ``.t()`` view has a transposed one in the forward - OpenBLAS's product with a transposed
    right operand is about 1.7x slower at these sizes (20 x 128 x 512, float32: 57 against 34 µs at one thread)."""

    @staticmethod
    def forward(ctx, h, w, w_t):
        """h (N, H) @ w_t (H, G) -> (N, G); saves h and w for the backward."""
        ctx.save_for_backward(h, w)
        return h.matmul(w_t)

    @staticmethod
    def backward(ctx, grad):
        """(grad @ w, grad.T @ h, None): the gradients of h and w; w_t (untracked) gets none."""
        h, w = ctx.saved_tensors
        return grad.matmul(w), grad.t().matmul(h), None


def recurrent_product(h, w, w_t=None):
    """``h`` (N, H) @ ``w`` (G, H).T -> (N, G) (the recurrent term of an RNN step), differentiable in ``h`` and
    ``w``; ``w_t``: ``w.detach().t().contiguous()``, made once for the steps of a sequence (None: the ``.t()``
    view, for a single step)."""
    if w_t is None:
        w_t = w.detach().t()
    if not (h.requires_grad or w.requires_grad):
        return h.matmul(w_t)
    return _RecurrentProduct.apply(h, w, w_t)


def unbind_steps(x):
    """The time steps ``x[0], ..., x[L - 1]`` of ``x`` (L, ...), as ``x.unbind(0)`` (views), with a backward that
    stacks their gradients once."""
    if not x.requires_grad or x.shape[0] == 0:
        return x.unbind(0)
    return _Steps.apply(x)
