"""Recurrent layers RNN, LSTM, GRU and their cells (matches torch.nn's).

Written with ember ops: each layer and direction projects the whole input sequence with
one matmul (input-to-hidden weights and both biases where they add). An LSTM layer without
projections over a padded sequence is then one op, ``_lstm_layer`` (ember.nn._lstm_layer: the
time loop inside a device kernel, its backward one op with one weight_hh product for the
sequence). Otherwise the layer loops over the time steps with one hidden-to-hidden matmul
each; an LSTM or GRU step is then one fused op (``_thnn_fused_lstm_cell`` /
``_thnn_fused_gru_cell``, ember.nn._fused_rnn) whose backward is one op as well. Parameter
names, shapes, gate orders (LSTM: input, forget, cell, output;
GRU: reset, update, new) and the default initialisation U(-1/sqrt(hidden_size),
1/sqrt(hidden_size)) are PyTorch's, so state dicts load across.

PackedSequence input (ember.nn.utils.rnn) runs on the padded batch in packed (length-sorted)
order with a mask per time step: a sequence whose steps are over keeps its state, so h_n is
each sequence's state after its own last step (its first, for the reverse direction), and
the output is packed again with the input's batch sizes and permutation.
"""
from __future__ import annotations

import math
import numbers
import warnings

import ember
from ... import empty, zeros
from .. import functional as F
from .. import _fused_rnn, _lstm_layer, init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# ----------------------------------------------------------------------------- one step of each cell
def _rnn_step(act):
    def step(xw, h, c, w_hh, b_hh, w_hr):
        g = xw + h.matmul(w_hh.t())             # both biases are folded into xw
        return (ember.tanh(g) if act == "tanh" else F.relu(g)), None
    return step


def _lstm_step(xw, h, c, w_hh, b_hh, w_hr):
    # w_hh: (weight_hh, its transpose made contiguous once per sequence or None) for the recurrent product
    # (_fused_rnn.recurrent_product); one fused op per step (gate activations and the cell update; its backward
    # is one op too)
    h, c, _ = _fused_rnn.fused_lstm_cell(xw, _fused_rnn.recurrent_product(h, *w_hh), c)
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(xw, h, c, w_hh, b_hh, w_hr):
    # xw holds b_ih only: b_hn sits inside r * (...), so b_hh goes to the fused op; w_hh as for the LSTM
    h, _ = _fused_rnn.fused_gru_cell(xw, _fused_rnn.recurrent_product(h, *w_hh), h, None, b_hh)
    return h, None


def _run_direction(step, xw, h, c, w_hh, b_hh, w_hr, reverse, active=None):
    """Loop ``step`` over the time steps of the projected input ``xw`` (L, N, G); outputs (L, N, H).
    ``active`` (packed input): per step a (N, 1) bool mask of the sequences still running; the others
    keep their state."""
    steps = _fused_rnn.unbind_steps(xw)        # its backward stacks the steps' gradients once
    outs = [None] * len(steps)
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    for t in order:
        h_new, c_new = step(steps[t], h, c, w_hh, b_hh, w_hr)
        if active is None or active[t] is None:
            h, c = h_new, c_new
        else:
            h = ember.where(active[t], h_new, h)
            c = ember.where(active[t], c_new, c) if c is not None else None
        outs[t] = h
    return ember.stack(outs, 0), h, c


class RNNBase(Module):
    """The shared machinery of RNN, LSTM and GRU (matches torch.nn.RNNBase).

    ``mode`` is 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'. Parameters per layer k and direction
    (suffix '' or '_reverse'): weight_ih_l{k} (G * hidden_size, layer input), weight_hh_l{k}
    (G * hidden_size, real hidden), bias_ih_l{k}, bias_hh_l{k} (G * hidden_size), and for an LSTM
    with proj_size > 0 weight_hr_l{k} (proj_size, hidden_size); G is 4 (LSTM), 3 (GRU) or 1.
    """

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1

        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")

        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self):
        """The parameters, one list per layer and direction."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _layer_params(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        g = lambda base: getattr(self, f"{base}_l{layer}{suffix}", None)  # noqa: E731
        return g("weight_ih"), g("weight_hh"), g("bias_ih"), g("bias_hh"), g("weight_hr")

    def _check_input(self, input):
        name = type(self).__name__
        if input.dim() not in (2, 3):
            tail = " tensor" if self.mode.startswith("RNN") else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail} instead")
        if input._shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input._shape[-1]}")

    def _expected_hidden(self, batch, cell=False):
        num_directions = 2 if self.bidirectional else 1
        size = self.hidden_size if cell or self.proj_size == 0 else self.proj_size
        return (self.num_layers * num_directions, batch, size)

    @staticmethod
    def _check_hidden(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx._shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx._shape)))

    def _run(self, x, hs, cs, active=None):
        """All layers over x (L, N, in); hs / cs: initial states per (layer, direction); ``active`` the
        per-step masks of packed input."""
        step = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _rnn_step("tanh"),
                "RNN_RELU": _rnn_step("relu")}[self.mode]
        num_directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_params(layer, direction)
                # one matmul for the input projection of every step; b_hh folds in except for the GRU
                b = b_ih if (self.mode == "GRU" or b_ih is None) else b_ih + b_hh
                # as one 2-D product (L * N, in) @ (in, G): numpy loops a 3-D one over L small products
                L, N = x._shape[0], x._shape[1]
                xw = F.linear(x.reshape(L * N, x._shape[2]), w_ih, b).reshape(L, N, w_ih._shape[0])
                k = layer * num_directions + direction
                if self.mode == "LSTM" and w_hr is None and active is None:     # the whole layer as one op
                    out, h, c, _, _ = _lstm_layer.lstm_layer(xw, hs[k], cs[k], w_hh, direction == 1)
                else:
                    if self.mode in ("LSTM", "GRU"):      # transposed once, not once per step
                        w_hh = (w_hh, w_hh.detach().t().contiguous())
                    out, h, c = _run_direction(step, xw, hs[k], cs[k] if cs is not None else None, w_hh,
                                               b_hh if self.mode == "GRU" else None, w_hr, direction == 1, active)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if num_directions == 1 else ember.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, ember.stack(h_n, 0), (ember.stack(c_n, 0) if cs is not None else None)

    def extra_repr(self):
        """Settings shown inside the repr: ``input_size, hidden_size`` plus each non-default option (proj_size,
        num_layers, bias, batch_first, dropout, bidirectional).
        """
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def flatten_parameters(self):
        """A no-op: PyTorch packs the weights into one cuDNN buffer here; ember's weights need no packing
        (matches torch.nn.RNNBase.flatten_parameters off cuDNN)."""
        return None

    def _prepare_packed(self, packed):
        """Padded (L, N, in) input in packed order, and the per-step masks of running sequences."""
        from ..utils.rnn import _padded_sorted
        if packed.data.dim() != 2:
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {packed.data.dim()}D "
                             "instead")
        if packed.data._shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {packed.data._shape[-1]}")
        x, sizes = _padded_sorted(packed)
        n = sizes[0] if sizes else 0
        rows = ember.arange(n, device=x.device).unsqueeze(1)
        active = [None if bs == n else rows < bs for bs in sizes]
        return x, n, active

    def _finish_packed(self, out, packed):
        from ..utils.rnn import PackedSequence, _pack_sorted
        return PackedSequence(_pack_sorted(out, packed.batch_sizes), packed.batch_sizes, packed.sorted_indices,
                              packed.unsorted_indices)

    @staticmethod
    def _permute(hx, indices):
        return hx if indices is None else hx.index_select(1, indices)

    def _prepare(self, input):
        """(input as (L, N, in), batched?, batch size)."""
        self._check_input(input)
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        return input, batched, input._shape[1]

    def _finish(self, out, batched):
        if not batched:
            return out.squeeze(1)
        return out.transpose(0, 1) if self.batch_first else out

    def forward(self, input, hx=None):
        """Run every layer (and direction) over the sequence; used by RNN and GRU.

        input (L, N, H_in), (N, L, H_in) with batch_first, or unbatched (L, H_in); ``hx`` (D * num_layers, N, H)
        or unbatched (D * num_layers, H), zeros when None. Returns (output (L, N, D * H) in the input's layout,
        h_n of hx's shape), in the input's dtype. ValueError for a non-2-D/3-D input; RuntimeError "For batched
        3-D input, hx should also be 3-D but got k-D tensor" (and the unbatched form), "input.size(-1) must be
        equal to input_size. ..." and "Expected hidden size (...), got [...]". Matches torch.nn.RNN.forward /
        torch.nn.GRU.forward.
        """
        from ..utils.rnn import PackedSequence
        packed = input if isinstance(input, PackedSequence) else None
        active = None
        if packed is not None:
            x, n, active = self._prepare_packed(packed)
            batched = True
        else:
            x, batched, n = self._prepare(input)
        expected = self._expected_hidden(n)
        if hx is None:
            hx = zeros(expected, dtype=x._dtype, device=x.device)
        else:
            if batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            if not batched and hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
            if not batched:
                hx = hx.unsqueeze(1)
            if packed is not None:
                hx = self._permute(hx, packed.sorted_indices)
            self._check_hidden(hx, expected)
        out, h_n, _ = self._run(x, hx.unbind(0), None, active)
        if packed is not None:
            return self._finish_packed(out, packed), self._permute(h_n, packed.unsorted_indices)
        return self._finish(out, batched), (h_n if batched else h_n.squeeze(1))


class RNN(RNNBase):
    """Elman RNN h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act 'tanh' or 'relu'
    (matches torch.nn.RNN).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``. Input (L, N, H_in), (N, L, H_in) with batch_first, or unbatched
    (L, H_in); h_0 (D * num_layers, N, H) (default zeros). Returns (output (L, N, D * H), h_n).
    ValueError "Unknown nonlinearity 'foo'. Select from 'tanh' or 'relu'."; shape errors as PyTorch's.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self_nonlinearity, args = args[3], args[:3] + args[4:]
        else:
            self_nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self_nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self_nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self_nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = self_nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (matches torch.nn.LSTM).

    Gates (i, f, g, o) = chunks of x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh in that order;
    c_t = sigmoid(f) c_{t-1} + sigmoid(i) tanh(g); h_t = sigmoid(o) tanh(c_t), projected by W_hr
    when proj_size > 0. Input as RNN; (h_0, c_0) optional. Returns (output, (h_n, c_n)).
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        """Run every LSTM layer (and direction) over the sequence.

        input (L, N, H_in), (N, L, H_in) with batch_first, or unbatched (L, H_in); ``hx`` = (h_0 (D *
        num_layers, N, H_out), c_0 (D * num_layers, N, H_cell)), unbatched without N, zeros when None; H_out is
        proj_size when > 0 else hidden_size. Returns (output (L, N, D * H_out) in the input's layout, (h_n,
        c_n)). RuntimeError "For batched 3-D input, hx and cx should also be 3-D but got (a-D, b-D) tensors"
        (and the unbatched form), "Expected hidden[0] size ..., got ..." / "Expected hidden[1] size ...".
        Matches torch.nn.LSTM.forward.
        """
        from ..utils.rnn import PackedSequence
        packed = input if isinstance(input, PackedSequence) else None
        active = None
        if packed is not None:
            x, n, active = self._prepare_packed(packed)
            batched = True
        else:
            x, batched, n = self._prepare(input)
        exp_h, exp_c = self._expected_hidden(n), self._expected_hidden(n, cell=True)
        if hx is None:
            h0 = zeros(exp_h, dtype=x._dtype, device=x.device)
            c0 = zeros(exp_c, dtype=x._dtype, device=x.device)
        else:
            h0, c0 = hx
            if batched and (h0.dim() != 3 or c0.dim() != 3):
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            if not batched and (h0.dim() != 2 or c0.dim() != 2):
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            if not batched:
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            if packed is not None:
                h0, c0 = self._permute(h0, packed.sorted_indices), self._permute(c0, packed.sorted_indices)
            self._check_hidden(h0, exp_h, "Expected hidden[0] size {}, got {}")
            self._check_hidden(c0, exp_c, "Expected hidden[1] size {}, got {}")
        out, h_n, c_n = self._run(x, h0.unbind(0), c0.unbind(0), active)
        if packed is not None:
            idx = packed.unsorted_indices
            return self._finish_packed(out, packed), (self._permute(h_n, idx), self._permute(c_n, idx))
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._finish(out, batched), (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit (matches torch.nn.GRU).

    r, z, n gates in that order: r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z likewise,
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) n + z h. Input and returns as RNN.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ----------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """Shared parameters of the cells: weight_ih (G * hidden, input), weight_hh (G * hidden, hidden),
    bias_ih, bias_hh (G * hidden), all ~ U(-1/sqrt(hidden), 1/sqrt(hidden)) (matches torch.nn.RNNCellBase)."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw every parameter in place from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) (matches
        torch.nn.RNNCellBase.reset_parameters).
        """
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        """Settings shown inside the repr: ``input_size, hidden_size`` plus ``bias=False`` and a non-tanh
        ``nonlinearity`` when set.
        """
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def _prepare(self, input, hx, n_states):
        """(input (N, in), [states (N, hidden)], batched?) with PyTorch's checks."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if input._shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input._shape[-1]} expected "
                               f"{self.input_size}")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        n = input._shape[0]
        if hx is None:
            states = [zeros((n, self.hidden_size), dtype=input._dtype, device=input.device)
                      for _ in range(n_states)]
        else:
            states = [hx] if n_states == 1 else list(hx)
            if n_states == 2 and len(states) != 2:
                raise RuntimeError("lstm_cell expects two hidden states")
            for i, s in enumerate(states):
                if s.dim() != input.dim() if batched else s.dim() != 1:
                    raise ValueError(f"{name}: Expected hidden to be {2 if batched else 1}D, got {s.dim()}D "
                                     "instead")
                if not batched:
                    s = s.unsqueeze(0)
                if s._shape[0] != n:
                    raise RuntimeError(f"Input batch size {n} doesn't match hidden{i} batch size {s._shape[0]}")
                if s._shape[1] != self.hidden_size:
                    raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s._shape[1]}, expected "
                                       f"{self.hidden_size}")
                states[i] = s
        return input, states, batched


class RNNCell(RNNCellBase):
    """One Elman RNN step h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh); input (N, in) or (in,), hx
    optional (zeros) (matches torch.nn.RNNCell)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """One step: input (N, H_in) or (H_in,), hx (N, H) or (H,) (zeros when None) -> h' of hx's shape, input
        dtype. RuntimeError "Unknown nonlinearity: X" for a nonlinearity other than 'tanh' / 'relu'; shape
        errors as PyTorch's. Matches torch.nn.RNNCell.forward.
        """
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        x, (h,), batched = self._prepare(input, hx, 1)
        g = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        h = ember.tanh(g) if self.nonlinearity == "tanh" else F.relu(g)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c'); input (N, in) or (in,), (h, c) optional (zeros)
    (matches torch.nn.LSTMCell)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        """One step: input (N, H_in) or (H_in,), hx = (h, c) each (N, H) or (H,) (zeros when None) -> (h', c') of
        the same shapes, input dtype; shape errors as PyTorch's (matches torch.nn.LSTMCell.forward).
        """
        x, (h, c), batched = self._prepare(input, hx, 2)
        xw = F.linear(x, self.weight_ih, self.bias_ih)
        if self.bias_hh is not None:
            xw = xw + self.bias_hh
        h, c = _lstm_step(xw, h, c, (self.weight_hh, None), None, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step; input (N, in) or (in,), hx optional (zeros) (matches torch.nn.GRUCell)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        """One step: input (N, H_in) or (H_in,), hx (N, H) or (H,) (zeros when None) -> h' of hx's shape, input
        dtype; shape errors as PyTorch's (matches torch.nn.GRUCell.forward).
        """
        x, (h,), batched = self._prepare(input, hx, 1)
        h, _ = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, None, (self.weight_hh, None), self.bias_hh,
                         None)
        return h if batched else h.squeeze(0)
