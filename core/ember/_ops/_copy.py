"""copy_, fill_, clone, to and the dtype-conversion methods.

``copy_`` is the one kernel views need (contiguous, clone, .to all use it): a strided
copy within a device, with broadcasting of ``src`` and any dtype conversion. A copy
between two device types goes through host memory (each runtime's ``to_numpy`` /
``from_numpy``) unless a plugin registers a direct kernel.
"""
from __future__ import annotations

import numbers

from .. import _dtype as D, _registry
from .._device import device as _device_cls
from .._dispatch import declare
from .._factory import empty_on, bump_version, contiguous_strides
from .._grad_state import STATE as _AG
from .. import _memory_format as MF
from .._tensor import Tensor
from ..compiler._capture import ACTIVE as _CAPTURE_ACTIVE
from ._meta import broadcast_shapes, check_tensor

__all__ = ["copy_", "fill_", "clone", "to"]


def _copy_meta(self, src, non_blocking=False):
    check_tensor(self, "copy_", "self")
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    if src._quantizer is not None and self._dtype is not src._dtype and self._quantizer is None:
        raise RuntimeError("Copying from quantized Tensor to non-quantized Tensor is not allowed, please use "
                           "dequantize to get a float Tensor from a quantized Tensor")
    if src._shape != self._shape:
        if broadcast_shapes(self._shape, src._shape) != self._shape:
            raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                               f"shape [{', '.join(map(str, broadcast_shapes(self._shape, src._shape)))}]")
    return self._device, (self._device.type, self._layout.name, self._dtype)


_copy_op = declare("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", _copy_meta,
                   structured=False, doc="Copy ``src`` (broadcast, any dtype) into self, in place.")


def copy_(self, src, non_blocking=False):
    """Copy ``src`` into ``self`` in place, broadcasting and converting dtype (matches torch.Tensor.copy_).

    ``src`` may be on another device; the copy then goes through host memory.
    RuntimeError when ``src`` does not broadcast to self's shape; nothing is written then.
    """
    if _AG.check and (self._requires_grad or getattr(src, "_requires_grad", False)):
        from ..autograd import _record
        return _record.record_inplace(_copy_op._op, _copy_impl, {"self": self, "src": src,
                                                                  "non_blocking": non_blocking})
    return _copy_impl(self, src, non_blocking)


def _copy_impl(self, src, non_blocking=False):
    if isinstance(src, Tensor) and src._device is not self._device and src._device != self._device:
        _copy_meta(self, src)
        if self._quantizer is not None and src._quantizer is None:
            # a float src into a quantized tensor (ember-quantized): move it, then quantize on self's device
            return _copy_impl(self, src.to(self._device), non_blocking)
        if _CAPTURE_ACTIVE[0]:      # ember.compile: a copy between devices is a node of the graph too
            from ..compiler._capture import record_call
            return record_call(_copy_between_devices, (self, src, non_blocking), "copy_ (between devices)")
        return _copy_between_devices(self, src, non_blocking)
    _copy_op(self, src, non_blocking)
    bump_version(self)
    return self


def _copy_between_devices(self, src, non_blocking):
    if src._quantizer is not None:     # quantized: the integers go through the host, the qparams with them
        self._quantizer = src._quantizer
    # a runtime may copy directly (DMA, peer copies, non_blocking from pinned memory):
    # copy_across(dst, src, non_blocking) returns True when it did, False to go through the host
    from .. import profiler
    for dev in (self._device, src._device):
        across = getattr(_registry.device_type(dev.type).runtime, "copy_across", None)
        if across is not None and across(self, src, non_blocking):
            profiler._count_copy(src._device.type, self._device.type, "direct")
            bump_version(self)
            return self
    profiler._count_copy(src._device.type, self._device.type, "host")
    host = _registry.device_type(src._device.type).runtime.to_numpy(src)
    if src._shape != self._shape:
        import numpy as np
        host = np.broadcast_to(host, self._shape)
    host = host.astype(self._dtype.numpy_dtype, copy=False)
    _registry.device_type(self._device.type).runtime.from_numpy(self, host)
    bump_version(self)
    return self


def _fill_meta(self, value):
    check_tensor(self, "fill_", "self")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
    elif not isinstance(value, numbers.Number):
        raise TypeError(f"fill_(): argument 'value' must be Number, not {type(value).__name__}")
    return self._device, (self._device.type, self._layout.name, self._dtype)


_fill_op = declare("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)", _fill_meta, structured=False,
                   doc="Fill self with ``value``, in place.")


def fill_(self, value):
    """Fill with ``value`` (a number or a 0-dim tensor), in place (matches torch.Tensor.fill_)."""
    if _AG.check and self._requires_grad:
        from ..autograd import _record
        return _record.record_inplace(_fill_op._op, _fill_impl, {"self": self, "value": value})
    return _fill_impl(self, value)


def _fill_impl(self, value):
    if isinstance(value, Tensor):
        _fill_meta(self, value)     # PyTorch's "fill_ only supports 0-dimension value tensor" before .item()
        value = value.item()
    _fill_op(self, value)
    bump_version(self)
    return self


def zero_(self):
    """Fill with zeros, in place."""
    return fill_(self, 0)


def empty_in_format(shape, dtype, device, memory_format, like=None):
    """An uninitialised tensor of ``shape`` laid out in ``memory_format`` (``preserve_format`` takes
    ``like``'s layout: ``_memory_format.preserve_strides``); contiguous for None."""
    if memory_format is None or memory_format is MF.contiguous_format:
        if memory_format is not None:
            MF.check(memory_format, shape)
        return empty_on(shape, dtype, device)
    MF.check(memory_format, shape)
    if memory_format is MF.preserve_format:
        if like is None:
            return empty_on(shape, dtype, device)
        stride = MF.preserve_strides(like._shape, like._stride)
        if stride == contiguous_strides(tuple(shape)):      # the common case: a plain allocation
            return empty_on(shape, dtype, device)
    else:
        stride = MF.strides_for(shape, memory_format)
    numel = 1
    for n in shape:
        numel *= n
    t = empty_on((numel,), dtype, device)._view(tuple(shape), stride, 0)
    t._base = None
    return t


def clone(input, *, memory_format=MF.preserve_format):
    """A copy with its own storage (matches torch.clone), laid out in ``memory_format``. The default,
    ``preserve_format``, keeps the input's strides when it is non-overlapping and dense (a transposed or
    channels_last input gives a transposed / channels_last copy), else dense strides in the input's
    stride order; pass ``memory_format=ember.contiguous_format`` (or call ``.contiguous()``) for a
    row-major copy.

    :raises RuntimeError: channels_last(_3d) for a tensor not of rank 4 (5).
    """
    check_tensor(input, "clone")
    out = empty_in_format(input._shape, input._dtype, input._device,
                          MF.preserve_format if memory_format is None else memory_format, like=input)
    if input._quantizer is not None:      # a quantized tensor's copy keeps its quantizer
        out._quantizer = input._quantizer
    if _AG.check and input._requires_grad:
        copy_(out, input)
        out._grad_fn._name = "CloneBackward0"
        out._vc = None
        return out
    _copy_op(out, input, False)
    return out


def _parse_to(args, kwargs):
    dev = dtype = None
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dev, dtype = a._device, a._dtype
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            non_blocking = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    if "dtype" in kwargs:
        dtype = kwargs.pop("dtype")
    if "device" in kwargs:
        dev = kwargs.pop("device")
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if dev is not None:
        dev = _registry.canonical_device(dev if not isinstance(dev, int) else _device_cls(_registry.default_accelerator_type(), dev))
    return dev, dtype, copy, non_blocking


def to(self, *args, **kwargs):
    """This tensor on another device and/or dtype; self when nothing changes and copy=False.

    Accepts ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``, and the
    keywords device, dtype, non_blocking, copy, memory_format (a copy laid out in that format when the
    tensor is not already; by default preserve_format, as clone; matches torch.Tensor.to).
    """
    fmt = kwargs.get("memory_format")
    dev, dtype, copy, non_blocking = _parse_to(args, dict(kwargs))
    dev = dev or self._device
    dtype = dtype or self._dtype
    if dev is self._device and dtype is self._dtype and not copy and (
            fmt is None or fmt is MF.preserve_format or self.is_contiguous(memory_format=fmt)):
        return self
    out = empty_in_format(self._shape, dtype, dev, MF.preserve_format if fmt is None else fmt, like=self)
    if self._quantizer is not None and dtype is self._dtype:
        out._quantizer = self._quantizer
    copy_(out, self, non_blocking)
    out._vc = None
    if out._grad_fn is not None:
        out._grad_fn._name = "ToCopyBackward0"
    return out


def _bind():
    T = Tensor
    T.copy_ = copy_
    T.fill_ = fill_
    T.zero_ = zero_
    T.clone = clone
    T.to = to
    T.cpu = lambda self: to(self, "cpu")
    T.cuda = lambda self, device=None, non_blocking=False: to(
        self, _device_cls("cuda", device) if isinstance(device, int) else (device or "cuda"), non_blocking=non_blocking)
    for name, dt in (("float", D.float32), ("double", D.float64), ("half", D.float16), ("bfloat16", D.bfloat16),
                     ("long", D.int64), ("int", D.int32), ("short", D.int16), ("char", D.int8), ("byte", D.uint8),
                     ("bool", D.bool), ("cfloat", D.complex64), ("cdouble", D.complex128)):
        def conv(self, memory_format=None, _dt=dt):
            return to(self, _dt) if memory_format is None else to(self, _dt, memory_format=memory_format)
        conv.__name__ = name
        conv.__doc__ = f"``self.to(ember.{dt.name}, memory_format=memory_format)``."
        setattr(T, name, conv)

    def type_(self, dtype=None, non_blocking=False):
        """With no argument, the type name ('ember.FloatTensor'); else ``to(dtype)``."""
        if dtype is None:
            return f"ember.{D.torch_name(self._dtype)}Tensor" if self._device.type == "cpu" else \
                f"ember.{self._device.type}.{D.torch_name(self._dtype)}Tensor"
        if isinstance(dtype, str):
            name = dtype.split(".")[-1].replace("Tensor", "")
            inv = {v: k for k, v in D._TORCH_NAMES.items()}
            dtype = D._BY_NAME[inv[name]]
        elif not isinstance(dtype, D.dtype):             # a legacy class: ember.DoubleTensor, ...
            dtype = getattr(dtype, "dtype", dtype)
        return to(self, dtype)
    T.type = type_
    T.type_as = lambda self, other: to(self, other._dtype)


_bind()
