"""Memory formats: ``ember.contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format`` (matches torch.memory_format) and the strides each one gives.

A memory format is only an order of the dims in memory: ``channels_last`` stores an (N, C, H, W)
tensor as N, H, W, C (strides ``(H*W*C, 1, W*C, C)``), ``channels_last_3d`` an (N, C, D, H, W) one as
N, D, H, W, C. The shape and every op's meaning are unchanged; kernels already address storage
through strides, so no device needs to know. ``preserve_format`` keeps an input's layout: its own
strides when it is non-overlapping and dense, else dense strides in the order of its strides
(PyTorch's rule for ``empty_like`` / ``clone``).

Pure functions of shapes and strides: no imports of the rest of ember.
"""
from __future__ import annotations

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
           "strides_for", "is_contiguous_for", "preserve_strides", "check", "suggests_channels_last",
           "follow_channels_last"]


class memory_format:
    """A memory format (a small value object; its repr can be pasted back, as torch's prints)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
_ALL = {f.name: f for f in (contiguous_format, channels_last, channels_last_3d, preserve_format)}
#: the dims from the slowest to the fastest, per format and rank
_ORDER = {"channels_last": (0, 2, 3, 1), "channels_last_3d": (0, 2, 3, 4, 1)}
_RANK = {"channels_last": 4, "channels_last_3d": 5}


def _by_name(name):
    return _ALL[name]


def check(fmt, shape, what="memory_format"):
    """Validate ``fmt`` for a tensor of ``shape``.

    :raises TypeError: when ``fmt`` is not a memory format.
    :raises RuntimeError: "required rank 4 tensor to use channels_last format" (rank 5 for
        channels_last_3d), PyTorch's message.
    """
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{what} must be ember.memory_format, not {type(fmt).__name__}")
    rank = _RANK.get(fmt.name)
    if rank is not None and len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")


def _dense(shape, order):
    """Dense strides storing dims in ``order`` (slowest first); size-0 / size-1 dims count as 1."""
    stride = [0] * len(shape)
    expected = 1
    for d in reversed(order):
        stride[d] = expected
        expected *= max(shape[d], 1)
    return tuple(stride)


def strides_for(shape, fmt):
    """The strides of a new tensor of ``shape`` in format ``fmt`` (contiguous / channels_last / _3d)."""
    check(fmt, shape)
    order = _ORDER.get(fmt.name, tuple(range(len(shape))))
    return _dense(tuple(shape), order)


def is_contiguous_for(shape, stride, fmt):
    """Whether (shape, stride) is contiguous in ``fmt``: size-1 dims are ignored, as PyTorch's
    ``is_contiguous(memory_format=...)`` (which also treats an empty tensor as row-major contiguous
    only); False for channels_last(_3d) at another rank."""
    if fmt.name in _RANK and len(shape) != _RANK[fmt.name]:
        return False
    order = _ORDER.get(fmt.name)
    if order is None:                       # row-major: an empty tensor counts as contiguous
        if any(s == 0 for s in shape):
            return True
        order = tuple(range(len(shape)))
    expected = 1
    for d in reversed(order):
        if shape[d] != 1:
            if stride[d] != expected:
                return False
            expected *= shape[d]
    return True


def _non_overlapping_and_dense(shape, stride):
    dims = sorted((st, s) for s, st in zip(shape, stride) if s != 1)
    expected = 1
    for st, s in dims:
        if s == 0:
            return True
        if st != expected:
            return False
        expected *= s
    return True


def preserve_strides(shape, stride):
    """``preserve_format``'s strides for an input laid out as (shape, stride): the same strides when
    non-overlapping and dense, else dense strides in the input's stride order (PyTorch's insertion sort:
    a 0 stride is ambiguous, equal strides put the smaller size inside)."""
    shape, stride = tuple(shape), tuple(stride)
    if _non_overlapping_and_dense(shape, stride):
        return stride
    nd = len(shape)
    perm = list(range(nd - 1, -1, -1))          # fastest first

    def should_swap(d0, d1):
        s0, s1 = stride[d0], stride[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, nd):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return _dense(shape, tuple(reversed(perm)))


def suggests_channels_last(t) -> bool:
    """Whether a 4-D tensor is laid out channels_last and not also row-major (PyTorch's
    ``suggest_memory_format() == channels_last``)."""
    return (t is not None and len(t._shape) == 4 and is_contiguous_for(t._shape, t._stride, channels_last)
            and not is_contiguous_for(t._shape, t._stride, contiguous_format))


def follow_channels_last(out, *inputs):
    """``out`` as channels_last when one of ``inputs`` suggests channels_last (conv2d / max_pool2d /
    batch_norm keep their input's layout, as PyTorch's); ``out`` itself otherwise."""
    if len(out._shape) == 4 and any(suggests_channels_last(t) for t in inputs):
        return out.contiguous(memory_format=channels_last)
    return out
