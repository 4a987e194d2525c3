"""Allocating tensors on a device, and the checks on ``out=`` and in-place outputs.

Used by the generated op entry points (``_dispatch``) and by the creation ops.
"""
from __future__ import annotations

import math
import warnings

from . import _registry
from ._allocator import UntypedStorage
from ._dtype import can_cast, torch_name
from ._grad_state import STATE as _GS

_new = object.__new__
_contig: dict = {}      # shape -> (numel, contiguous strides)
_allocators: dict = {}  # device -> allocator (filled on first use of a device)


#: storages hold at most 2**63 - 1 bytes (PyTorch's bound: sizes are int64)
_MAX_NUMEL = 2 ** 63


def _overflow(shape) -> RuntimeError:
    return RuntimeError(f"Storage size calculation overflowed with sizes=[{', '.join(map(str, shape))}]")


def contiguous_strides(shape):
    """(numel, row-major strides in elements) for ``shape``; memoised."""
    try:
        return _contig[shape]
    except KeyError:
        pass
    stride, acc = [], 1
    for s in reversed(shape):
        stride.append(acc)
        acc *= max(s, 1)
    numel = math.prod(shape)
    if numel >= _MAX_NUMEL:
        raise _overflow(shape)
    r = _contig[shape] = (numel, tuple(reversed(stride)))
    return r


def allocator_for(device):
    """The allocator of ``device`` (created on first use)."""
    try:
        return _allocators[device]
    except KeyError:
        a = _allocators[device] = _registry.device_type(device.type).allocator(device)
        return a


def empty_on(shape, dtype, device):
    """An uninitialised contiguous tensor of ``shape`` (a tuple of ints) and ``dtype`` on ``device``."""
    try:
        numel, stride = _contig[shape]
    except KeyError:
        numel, stride = contiguous_strides(shape)
    try:
        alloc = _allocators[device]
    except KeyError:
        alloc = allocator_for(device)
    t = _new(Tensor)
    native = alloc.native
    if native is not None:
        # a host allocator that hands back the typed native array with the memory
        nbytes = numel * dtype.itemsize
        if alloc.limit is None:
            cur = alloc.allocated = alloc.allocated + nbytes
            if cur > alloc.peak:
                alloc.peak = cur
            n = alloc.count = alloc.count + 1
            if n > alloc.peak_count:
                alloc.peak_count = n
        else:
            alloc._account(nbytes)
        try:
            handle = native(shape, dtype._np or dtype.numpy_dtype)
        except (MemoryError, ValueError) as e:   # undo the accounting: the failed allocation leaves no trace
            alloc.allocated -= nbytes
            alloc.count -= 1
            alloc.ooms += 1
            if nbytes >= _MAX_NUMEL:              # numpy: "array is too big" (ValueError): PyTorch's error
                raise _overflow(shape) from None
            if isinstance(e, ValueError):
                raise
            raise alloc._oom_direct(nbytes, e) from None
        st = _new(UntypedStorage)
        st._handle = t._native = handle
        st._nbytes = st._size = nbytes
        st.device = device
        st._allocator = alloc
        t._storage = st
    else:
        t._storage = alloc.malloc(numel * dtype.itemsize)
        t._native = None
    t._shape = shape
    t._stride = stride
    t._offset = 0
    t._dtype = dtype
    t._device = device
    if _GS.inference:                 # created in inference_mode: Tensor.is_inference()
        t._inference = True
    return t


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single "
                    "memory location. Please clone() the tensor before performing the operation.")
PARTIAL_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                   "single memory location. Please clone() the tensor before performing the operation.")


def _dense_span(t):
    """``(start, end)`` element offsets of a non-overlapping and dense tensor's memory, else None (as PyTorch,
    overlap between tensors that are not dense is not judged)."""
    dims = sorted((s, n) for n, s in zip(t._shape, t._stride) if n != 1)
    expect = 1
    for s, n in dims:
        if s != expect:
            return None
        expect *= n
    return t._offset, t._offset + expect


def check_overlap(out, inputs):
    """PyTorch's memory-overlap checks for a written-to tensor (``out=`` or in-place ``self``), made before
    anything is written: RuntimeError when ``out`` has elements sharing one location (an expanded tensor), or
    when an input partly overlaps it (the same elements exactly is fine: ``add(x, 1, out=x)``)."""
    for n, s in zip(out._shape, out._stride):
        if s == 0 and n > 1:
            raise RuntimeError(INTERNAL_OVERLAP)
    st = out._storage
    span = None
    for t in inputs:
        if not isinstance(t, Tensor) or t is out or t._storage is not st:
            continue
        if t._offset == out._offset and t._stride == out._stride and t._shape == out._shape:
            continue                                  # full overlap: elementwise in place is well defined
        span = span or _dense_span(out)
        other = _dense_span(t)
        if span is not None and other is not None and span[0] < other[1] and other[0] < span[1]:
            raise RuntimeError(PARTIAL_OVERLAP)


def check_out(op, out, shape, dtype, device, inputs=(), defer_resize=False):
    """Validate a user's ``out=`` tensor before anything is written; resize it (as PyTorch does) when its
    shape differs. RuntimeError for an ``out`` that overlaps itself or partly overlaps an input, and for one
    that must be resized while it shares memory with an input (resizing would change that input first).

    With ``defer_resize`` (the generated entry points), an ``out`` that needs resizing is left as it is and
    a new tensor of the right shape is returned for the kernel to write; ``commit_out`` then gives it to
    ``out``. So a kernel that fails (an index out of range found while computing) leaves ``out`` untouched."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op.name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._device is not device:
        raise RuntimeError(f"Expected out tensor to have device {device}, but got {out._device} instead")
    if out._dtype is not dtype and not can_cast(dtype, out._dtype):
        raise RuntimeError(f"result type {torch_name(dtype)} can't be cast to the desired output type "
                           f"{torch_name(out._dtype)}")
    check_overlap(out, inputs)
    if out._shape != shape:
        if any(isinstance(t, Tensor) and t._storage is out._storage for t in inputs):
            raise RuntimeError(f"{op.name}(): the out= tensor has to be resized from {_shape_str(out._shape)} to "
                               f"{_shape_str(shape)}, but it shares memory with an input, which resizing would "
                               f"change before the op reads it. Pass a separate out= tensor, or clone() the input.")
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{_shape_str(out._shape)}, which does not match the required output shape "
                          f"{_shape_str(shape)}. This behavior is deprecated.", UserWarning, stacklevel=3)
        fresh = empty_on(shape, out._dtype, device)
        if defer_resize:
            return fresh
        out._set_storage_meta(fresh)
    return out


def commit_out(out, dst):
    """After a kernel wrote ``dst`` (from ``check_out(..., defer_resize=True)``): ``out`` takes its storage and
    geometry when they differ (the deferred resize); returns ``out``."""
    if dst is not out:
        out._set_storage_meta(dst)
    return out


def check_outs(op, outs, specs, device, inputs=(), defer_resize=False):
    """Validate a tuple of ``out=`` tensors for a multi-output op (each as ``check_out``)."""
    if not isinstance(outs, (tuple, list)) or len(outs) != len(specs):
        raise TypeError(f"{op.name}(): argument 'out' must be a tuple of {len(specs)} Tensors")
    return tuple(check_out(op, o, s, d, device, inputs, defer_resize) for o, (s, d) in zip(outs, specs))


def check_inplace(op, self, shape, dtype, device, inputs=()):
    """The checks an in-place op makes before writing anything (nothing is partly written), PyTorch's
    memory-overlap checks (``check_overlap``) included."""
    if self._shape != shape:
        raise RuntimeError(f"output with shape {_shape_str(self._shape)} doesn't match the broadcast shape "
                           f"{_shape_str(shape)}")
    if dtype is not self._dtype and not can_cast(dtype, self._dtype):
        raise RuntimeError(f"result type {torch_name(dtype)} can't be cast to the desired output type "
                           f"{torch_name(self._dtype)}")
    if self._device is not device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{self._device} and {device}!")
    check_overlap(self, inputs)


def bump_version(t):
    """Record an in-place write: the version counter (shared with views) goes up by one."""
    vc = t._vc
    if vc is None:
        t._vc = [1]
    else:
        vc[0] += 1


from ._tensor import Tensor  # noqa: E402  (cycle: Tensor uses the factory for copies)
