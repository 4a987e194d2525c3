"""Allocating tensors on a device, and the checks on ``out=`` and in-place outputs.

Used by the generated op entry points (``_dispatch``) and by the creation ops.
"""
from __future__ import annotations

import math
import warnings

from . import _registry
from ._allocator import UntypedStorage
from ._dtype import can_cast, torch_name

_new = object.__new__
_contig: dict = {}      # shape -> (numel, contiguous strides)
_allocators: dict = {}  # device -> allocator (filled on first use of a device)


def contiguous_strides(shape):
    """(numel, row-major strides in elements) for ``shape``; memoised."""
    try:
        return _contig[shape]
    except KeyError:
        stride, acc = [], 1
        for s in reversed(shape):
            stride.append(acc)
            acc *= max(s, 1)
        r = _contig[shape] = (math.prod(shape), tuple(reversed(stride)))
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
        except MemoryError as e:          # undo the accounting: the failed allocation leaves no trace
            alloc.allocated -= nbytes
            alloc.count -= 1
            alloc.ooms += 1
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
    return t


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def check_out(op, out, shape, dtype, device):
    """Validate a user's ``out=`` tensor; resize it (as PyTorch does) when its shape differs."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op.name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._device is not device:
        raise RuntimeError(f"Expected out tensor to have device {device}, but got {out._device} instead")
    if out._dtype is not dtype and not can_cast(dtype, out._dtype):
        raise RuntimeError(f"result type {torch_name(dtype)} can't be cast to the desired output type "
                           f"{torch_name(out._dtype)}")
    if out._shape != shape:
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{_shape_str(out._shape)}, which does not match the required output shape "
                          f"{_shape_str(shape)}. This behavior is deprecated.", UserWarning, stacklevel=3)
        out._set_storage_meta(empty_on(shape, out._dtype, device))
    return out


def check_outs(op, outs, specs, device):
    """Validate a tuple of ``out=`` tensors for a multi-output op."""
    if not isinstance(outs, (tuple, list)) or len(outs) != len(specs):
        raise TypeError(f"{op.name}(): argument 'out' must be a tuple of {len(specs)} Tensors")
    return tuple(check_out(op, o, s, d, device) for o, (s, d) in zip(outs, specs))


def check_inplace(op, self, shape, dtype, device):
    """The checks an in-place op makes before writing anything (nothing is partly written)."""
    if self._shape != shape:
        raise RuntimeError(f"output with shape {_shape_str(self._shape)} doesn't match the broadcast shape "
                           f"{_shape_str(shape)}")
    if dtype is not self._dtype and not can_cast(dtype, self._dtype):
        raise RuntimeError(f"result type {torch_name(dtype)} can't be cast to the desired output type "
                           f"{torch_name(self._dtype)}")
    if self._device is not device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{self._device} and {device}!")


def bump_version(t):
    """Record an in-place write: the version counter (shared with views) goes up by one."""
    vc = t._vc
    if vc is None:
        t._vc = [1]
    else:
        vc[0] += 1


from ._tensor import Tensor  # noqa: E402  (cycle: Tensor uses the factory for copies)
