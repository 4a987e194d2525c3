"""Packed and padded variable-length sequences for the recurrent layers (matches torch.nn.utils.rnn).

A ``PackedSequence`` stores a batch of sequences time step by time step: ``data`` (sum of the
lengths, *) holds step 0 of every sequence, then step 1 of those still running, ...; the
int64 ``batch_sizes`` (max length,) says how many rows each step has. The sequences are
ordered by decreasing length; ``sorted_indices`` (batch order -> packed order) and
``unsorted_indices`` (its inverse) record the permutation when the input was not sorted.

Everything is a composite of ember ops (index_select, narrow, cat, stack), so gradients flow
from packed data back to the padded input and the other way. Lengths and batch sizes are
host-side integers, as in PyTorch, where they live on the CPU.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable

import ember
from ..._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices): a packed batch of variable-length sequences
    (matches torch.nn.utils.rnn.PackedSequence). Built by pack_padded_sequence / pack_sequence; RNN,
    LSTM and GRU accept one as input and return one as output. ``unsorted_indices`` defaults to the
    inverse of ``sorted_indices``. ``to`` / ``double`` / ... convert ``data`` (and move the indices with
    it), returning ``self`` when nothing changes.
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:             # PyTorch's (data, batch_sizes) tuple form
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data.to(...)``; the index tensors follow data's device. ``self`` when data is unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))  # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=ember.float64)

    def float(self):
        return self.to(dtype=ember.float32)

    def half(self):
        return self.to(dtype=ember.float16)

    def long(self):
        return self.to(dtype=ember.int64)

    def int(self):
        return self.to(dtype=ember.int32)

    @property
    def is_cuda(self):
        """Whether ``data`` lives on a CUDA device."""
        return self.data.device.type == "cuda"


def invert_permutation(permutation):
    """The inverse of a permutation given as an int64 tensor (None stays None) (matches
    torch.nn.utils.rnn.invert_permutation)."""
    if permutation is None:
        return None
    inv = ember.empty_like(permutation)
    inv.scatter_(0, permutation, ember.arange(permutation.numel(), dtype=permutation.dtype,
                                              device=permutation.device))
    return inv


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _batch_sizes(lengths):
    """Rows per time step for lengths sorted in decreasing order."""
    return [sum(1 for n in lengths if n > t) for t in range(lengths[0] if lengths else 0)]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) with batch_first) whose sequence b has ``lengths[b]`` valid
    steps (matches torch.nn.utils.rnn.pack_padded_sequence).

    ``lengths``: a list or int64 tensor of B positive ints; with ``enforce_sorted`` they must be in
    decreasing order, otherwise the batch is sorted and the permutation kept in the result.
    RuntimeError (PyTorch's messages) for unsorted lengths when enforced, a length <= 0, or a lengths
    count other than B.
    """
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lengths)), key=lambda b: -lengths[b])     # stable, as torch.sort(descending)
        sorted_indices = ember.tensor(order, dtype=ember.int64, device=input.device)
        lengths = [lengths[b] for b in order]
        input = input.index_select(batch_dim, sorted_indices)
    if len(lengths) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={input.shape[batch_dim]})")
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    sizes = ember.tensor(_batch_sizes(lengths), dtype=ember.int64)
    return PackedSequence(_pack_sorted(input, sizes), sizes, sorted_indices, None)


def _padded_sorted(sequence, padding_value=0.0, total_length=None):
    """(padded (T, B, *) in packed order, batch sizes as ints): the first half of pad_packed_sequence,
    shared with the recurrent layers."""
    data, batch_sizes = sequence.data, [int(v) for v in sequence.batch_sizes.tolist()]
    batch = batch_sizes[0] if batch_sizes else 0
    tail = tuple(data.shape[1:])
    steps, offset = [], 0
    for bs in batch_sizes:
        step = data.narrow(0, offset, bs)
        if bs < batch:
            step = ember.cat([step, ember.full((batch - bs,) + tail, padding_value, dtype=data.dtype,
                                                 device=data.device)], 0)
        steps.append(step)
        offset += bs
    for _ in range((total_length or 0) - len(batch_sizes)):
        steps.append(ember.full((batch,) + tail, padding_value, dtype=data.dtype, device=data.device))
    return ember.stack(steps, 0), batch_sizes


def _pack_sorted(padded, batch_sizes):
    """Packed data from a (T, B, *) batch already in packed order: the rows each step keeps."""
    sizes = [int(v) for v in batch_sizes.tolist()]
    return ember.cat([padded[t].narrow(0, 0, bs) for t, bs in enumerate(sizes)], 0)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo pack_padded_sequence: (padded (T, B, *) or (B, T, *) with batch_first, lengths int64 (B,)), in
    the original batch order; T is the longest length or ``total_length`` (matches
    torch.nn.utils.rnn.pad_packed_sequence). ValueError "Expected total_length to be at least the length of
    the longest sequence in input, ..." when it is shorter.
    """
    max_len = sequence.batch_sizes.numel()
    if total_length is not None and total_length < max_len:
        raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                         f"got total_length={total_length} and max sequence length being {max_len}")
    padded, batch_sizes = _padded_sorted(sequence, padding_value, total_length)
    batch = batch_sizes[0] if batch_sizes else 0
    lengths = ember.tensor([sum(1 for bs in batch_sizes if bs > b) for b in range(batch)], dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices.to("cpu"))
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) ((B, max L, *) with batch_first), filling with
    ``padding_value`` on the ``padding_side`` ('right' or 'left') (matches torch.nn.utils.rnn.pad_sequence).
    RuntimeError "received an empty list of sequences", "Expected padding_side to be one of left or right,
    but got X.", and PyTorch's size mismatch message when the trailing dims differ.
    """
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    elif not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    max_len = max(s.shape[0] for s in sequences)
    tail = tuple(sequences[0].shape[1:])
    rows = []
    for s in sequences:
        if tuple(s.shape[1:]) != tail:
            for d, (a, b) in enumerate(zip(tail, s.shape[1:])):
                if a != b:
                    raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                                       f"non-singleton dimension {d + 1}")
            raise RuntimeError(f"Expected all sequences to have trailing dims {list(tail)}, got {list(s.shape)}")
        n = max_len - s.shape[0]
        if n:
            pad = ember.full((n,) + tail, padding_value, dtype=s.dtype, device=s.device)
            s = ember.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return ember.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of (L_i, *) tensors (matches
    torch.nn.utils.rnn.unpad_sequence)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq.narrow(0, 0, n) for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of (L_i, *) tensors (matches torch.nn.utils.rnn.pack_sequence): pad_sequence then
    pack_padded_sequence."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of (L_i, *) tensors a PackedSequence holds, in the original order (matches
    torch.nn.utils.rnn.unpack_sequence)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
