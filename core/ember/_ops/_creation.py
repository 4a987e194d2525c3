"""Creation ops: tensor, as_tensor, from_numpy, empty, zeros, ones, full, arange, linspace,
logspace, eye, the *_like forms (match the torch functions of the same names).

Host data (Python lists, numpy arrays) is converted on the host with numpy and
written to the device through its runtime's ``from_numpy``. Sequence ops (arange,
linspace, logspace, eye) have kernels per device, and composites over the primitive set
(``_shape_composites``: arange matches ``start + i * step`` exactly for integers).
"""
from __future__ import annotations

import builtins
import math
import numbers

import numpy as np

from .. import _dtype as D, _registry
from .._dispatch import declare
from .._factory import empty_on, contiguous_strides
from .._tensor import Tensor, _size_args
from ._copy import fill_, copy_, _fill_op, empty_in_format
from . import _shape_composites as _C   # composites over the primitive set


def _filled(t, value):
    """Fill a tensor just created (no version bump: a new tensor is at version 0, as in PyTorch)."""
    _fill_op(t, value.item() if isinstance(value, Tensor) else value)
    return t

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "empty", "empty_strided", "zeros", "ones", "full",
           "empty_like", "zeros_like", "ones_like", "full_like", "arange", "linspace", "logspace", "eye",
           "frombuffer_bytes", "scalar_tensor"]


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _device(device):
    return _registry.canonical_device(device)


def _infer_dtype(data, arr):
    """The dtype torch.tensor gives ``data`` (Python floats -> the default dtype)."""
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        return D.from_numpy_dtype(arr.dtype)
    k = arr.dtype.kind
    if k == "b":
        return D.bool
    if k in "iu":
        return D.int64
    if k == "f":
        return D.get_default_dtype()
    if k == "c":
        return D.default_complex_dtype()
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _to_host(data):
    if isinstance(data, Tensor):
        return data._host()
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return np.array([_to_host(x) for x in data])
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError) as e:
        raise ValueError(f"could not convert the data to a tensor: {e}") from None
    if arr.dtype == object:
        bad = next((type(x).__name__ for x in np.ravel(arr) if not isinstance(x, numbers.Number)), "object")
        raise TypeError(f"new(): invalid data type '{bad}'" if bad != "object" else
                        "expected a sequence of numbers with a consistent shape")
    return arr


def _from_host(arr, dtype, device):
    arr = np.asarray(arr, dtype=dtype.numpy_dtype)   # keeps 0-dim arrays 0-dim (ascontiguousarray would not)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    t = empty_on(tuple(arr.shape), dtype, device)
    if arr.size:
        _registry.device_type(device.type).runtime.from_numpy(t, arr)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences of numbers, numpy arrays,
    tensors). dtype is inferred as PyTorch does: Python floats -> the default dtype, ints
    -> int64, bools -> bool. Matches torch.tensor."""
    arr = _to_host(data)
    dtype = dtype or (data._dtype if isinstance(data, Tensor) else _infer_dtype(data, arr))
    return _finish(_from_host(arr, dtype, _device(device)), requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-dim tensor holding ``s`` (default dtype unless given; matches torch.scalar_tensor)."""
    return tensor(s, dtype=dtype or D.get_default_dtype(), device=device, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory where it can (a tensor, or a numpy array on cpu)."""
    if isinstance(data, Tensor):
        return data.to(device=device or data._device, dtype=dtype or data._dtype)
    dev = _device(device)
    if isinstance(data, np.ndarray) and _registry.device_type(dev.type).runtime.host_memory:
        t = from_numpy(data)
        return t if dtype is None or dtype is t._dtype else t.to(dtype)
    return tensor(data, dtype=dtype, device=dev)


asarray = as_tensor


def from_numpy(ndarray):
    """A cpu tensor sharing ``ndarray``'s memory (matches torch.from_numpy).

    TypeError for an unsupported numpy dtype; ValueError for negative strides (as PyTorch).
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtype = D.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array with array.copy().) ")
    isz = ndarray.itemsize
    if any(s % isz for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array "
                         "to reallocate the memory.")
    cpu = _device("cpu")
    rt = _registry.device_type("cpu").runtime
    return rt.wrap_numpy(ndarray, dtype, cpu)


def frombuffer_bytes(raw: bytes):
    """A uint8 cpu tensor holding a copy of ``raw``."""
    return from_numpy(np.frombuffer(bytes(raw), dtype=np.uint8).copy())


def size_varargs(sizes, size, name):
    """The size a factory got: as varargs (``zeros(2, 3)``, ``zeros((2, 3))``) or as the keyword
    ``size=`` (``zeros(size=(2, 3))``), as PyTorch's factories take it. TypeError for neither or both."""
    if size is not None:
        if sizes:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        if isinstance(size, numbers.Integral):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
        return (size,)
    if not sizes:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    return sizes


def _factory_args(size, dtype, device, name):
    shape = _size_args(size, name)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"[{', '.join(map(str, shape))}]")
    return shape, dtype or D.get_default_dtype(), _device(device)


def empty(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None, out=None):
    """An uninitialised tensor of ``size`` (varargs, one sequence or ``size=``; matches torch.empty)."""
    shape, dtype, dev = _factory_args(size_varargs(sizes, size, "empty"), dtype, device, "empty")
    if memory_format is not None:      # contiguous_format / channels_last / channels_last_3d
        from .. import _memory_format as MF
        if memory_format is MF.preserve_format:
            raise RuntimeError("preserve_format is not supported by ember.empty (there is no input to preserve)")
        return _finish(empty_in_format(shape, dtype, dev, memory_format), requires_grad)
    return _finish(empty_on(shape, dtype, dev), requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor with the given size and strides (matches torch.empty_strided)."""
    shape, dtype, dev = _factory_args(size, dtype, device, "empty_strided")
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(shape):
        raise RuntimeError(f"mismatch in length of strides and shape")
    extent = 1 + builtins.sum((n - 1) * s for n, s in zip(shape, stride)) if math.prod(shape) else 0
    base = empty_on((extent,), dtype, dev)
    t = base.as_strided(shape, stride, 0)
    t._base = None
    return _finish(t, requires_grad)


def full(size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """A tensor of ``size`` filled with ``fill_value``; dtype inferred from the value as PyTorch does."""
    if dtype is None:
        dtype = D.scalar_dtype(fill_value) if not isinstance(fill_value, Tensor) else fill_value._dtype
    shape, dtype, dev = _factory_args((size,) if isinstance(size, int) else size, dtype, device, "full")
    return _finish(_filled(empty_on(shape, dtype, dev), fill_value), requires_grad)


def zeros(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """A tensor of zeros of ``size`` (varargs, one sequence or ``size=``; matches torch.zeros)."""
    shape, dtype, dev = _factory_args(size_varargs(sizes, size, "zeros"), dtype, device, "zeros")
    return _finish(_filled(empty_on(shape, dtype, dev), 0), requires_grad)


def ones(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """A tensor of ones of ``size`` (varargs, one sequence or ``size=``; matches torch.ones)."""
    shape, dtype, dev = _factory_args(size_varargs(sizes, size, "ones"), dtype, device, "ones")
    return _finish(_filled(empty_on(shape, dtype, dev), 1), requires_grad)


def _new_like(input, shape, dtype, dev, memory_format):
    """The uninitialised result of a ``*_like`` factory laid out in ``memory_format``; None (the default)
    is PyTorch's default, ``preserve_format``: input's strides when it is non-overlapping and dense, else
    dense strides in input's stride order."""
    from .. import _memory_format as MF
    return empty_in_format(shape, dtype, dev, MF.preserve_format if memory_format is None else memory_format,
                           like=input)


def _like(input, dtype, device):
    return input._shape, dtype or input._dtype, _device(device) if device is not None else input._device


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """An uninitialised tensor with ``input``'s shape (dtype / device from input unless given; laid out in
    ``memory_format``, by default preserve_format: input's strides when it is non-overlapping and dense;
    matches torch.empty_like)."""
    shape, dtype, dev = _like(input, dtype, device)
    return _finish(_new_like(input, shape, dtype, dev, memory_format), requires_grad)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """Zeros with ``input``'s shape (dtype / device from input unless given; ``memory_format`` as empty_like)."""
    shape, dtype, dev = _like(input, dtype, device)
    return _finish(_filled(_new_like(input, shape, dtype, dev, memory_format), 0), requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """Ones with ``input``'s shape (dtype / device from input unless given; ``memory_format`` as empty_like)."""
    shape, dtype, dev = _like(input, dtype, device)
    return _finish(_filled(_new_like(input, shape, dtype, dev, memory_format), 1), requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """``fill_value`` with ``input``'s shape (dtype / device from input unless given; ``memory_format`` as
    empty_like)."""
    shape, dtype, dev = _like(input, dtype, device)
    return _finish(_filled(_new_like(input, shape, dtype, dev, memory_format), fill_value), requires_grad)


# ---------------------------------------------------------------- sequences (kernels per device)
def _arange_meta(start, end, step, size, dtype, device):
    return device, (device.type, "strided", dtype), (size,), dtype


_arange = declare("arange(Scalar start, Scalar end, Scalar step, int size, ScalarType dtype, Device device) -> Tensor",
                  _arange_meta, composite=_C.arange, doc="kernel entry for ember.arange")


def arange(start, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """Values from ``start`` to ``end`` (exclusive) every ``step`` (matches torch.arange).

    dtype: int64 when all of start/end/step are integers, else the default dtype.
    RuntimeError for step == 0 or a step of the wrong sign.

    With an integer ``dtype`` and float bounds, as PyTorch's cpu kernel: start, end and step are
    truncated to integers and the values are start + i * step; the length is counted in integers
    for int64 (ValueError "step must be nonzero" when step truncates to 0) and from the float
    bounds for the narrower integer dtypes. NotImplementedError for bool.
    """
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, int) for v in vals) else D.get_default_dtype()
    size = builtins.max(math.ceil((end - start) / step), 0)
    if dtype is D.bool:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if not (dtype.is_floating_point or dtype.is_complex) and not all(isinstance(v, int) for v in vals):
        start, end, step = (int(v) for v in vals)   # C++ truncation toward zero
        if dtype is D.int64:
            if step == 0:
                raise ValueError("step must be nonzero")
            num = end - start + step - (1 if step > 0 else -1)
            quotient = abs(num) // abs(step) * (1 if (num >= 0) == (step > 0) else -1)   # C division
            size = builtins.max(quotient, 0)
    return _finish(_arange(start, end, step, size, dtype, _device(device), out=out), requires_grad)


_linspace = declare("linspace(Scalar start, Scalar end, int steps, float base, ScalarType dtype, Device device) -> Tensor",
                    lambda start, end, steps, base, dtype, device: (device, (device.type, "strided", dtype), (steps,), dtype),
                    composite=_C.linspace,
                    doc="kernel entry for ember.linspace / logspace (base 0 means linear)")


def _space_args(name, start, end, steps, dtype):
    """Checked (start, end, steps, dtype) for linspace / logspace: 0-dim tensor bounds become numbers,
    and with an integer dtype the bounds truncate to integers first, as PyTorch's cpu kernels do."""
    for what, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v._shape:
            raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got {what} with "
                               f"{len(v._shape)} dimension(s).")
    if isinstance(steps, Tensor) and not steps._shape and not (steps._dtype.is_floating_point or
                                                              steps._dtype.is_complex):
        steps = steps.item()
    if not isinstance(steps, numbers.Integral) or isinstance(steps, bool):
        raise TypeError(f"{name}(): argument 'steps' (position 3) must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    dtype = dtype or D.get_default_dtype()
    if dtype is D.bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    if not (dtype.is_floating_point or dtype.is_complex) and steps != 1:   # one step: start as given
        start, end = int(start.real if isinstance(start, complex) else start), \
            int(end.real if isinstance(end, complex) else end)
    return start, end, int(steps), dtype


def linspace(start, end, steps, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (matches torch.linspace).

    ``start`` / ``end`` are numbers or 0-dim tensors (RuntimeError for more dims); with an integer
    dtype they truncate to integers before spacing and the values truncate (as PyTorch's cpu kernel).
    RuntimeError for negative ``steps``, TypeError for a non-integer one, NotImplementedError for bool.
    """
    start, end, steps, dtype = _space_args("linspace", start, end, steps, dtype)
    return _finish(_linspace(start, end, steps, 0.0, dtype, _device(device), out=out), requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """``base ** linspace(start, end, steps)`` (matches torch.logspace); bounds, dtypes and errors as
    :func:`linspace`."""
    start, end, steps, dtype = _space_args("logspace", start, end, steps, dtype)
    return _finish(_linspace(start, end, steps, float(base), dtype, _device(device), out=out), requires_grad)


_eye = declare("eye(int n, int m, ScalarType dtype, Device device) -> Tensor",
               lambda n, m, dtype, device: (device, (device.type, "strided", dtype), (n, m), dtype),
               composite=_C.eye,
               doc="kernel entry for ember.eye")


def eye(n, m=None, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """An n x m identity matrix (matches torch.eye)."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}" if n < 0 else
                           f"m must be greater or equal to 0, got {m}")
    return _finish(_eye(n, m, dtype or D.get_default_dtype(), _device(device), out=out), requires_grad)


def _bind():
    from .._tensor import Tensor as T

    def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        """``empty(size)`` with self's dtype and device unless given; sizes as varargs, one sequence
        or ``size=`` (matches torch.Tensor.new_empty)."""
        return empty(*size_varargs(sizes, size, "new_empty"), dtype=dtype or self._dtype,
                     device=device or self._device, requires_grad=requires_grad)

    def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        """``zeros(size)`` with self's dtype and device unless given; sizes as varargs, one sequence
        or ``size=``."""
        return zeros(*size_varargs(sizes, size, "new_zeros"), dtype=dtype or self._dtype,
                     device=device or self._device, requires_grad=requires_grad)

    def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        """``ones(size)`` with self's dtype and device unless given; sizes as varargs, one sequence
        or ``size=``."""
        return ones(*size_varargs(sizes, size, "new_ones"), dtype=dtype or self._dtype,
                    device=device or self._device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        """``full(size, fill_value)`` with self's dtype and device unless given."""
        return full(size, fill_value, dtype=dtype or self._dtype, device=device or self._device,
                    requires_grad=requires_grad)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        """``tensor(data)`` with self's dtype and device unless given."""
        return tensor(data, dtype=dtype or self._dtype, device=device or self._device, requires_grad=requires_grad)

    T.new_empty, T.new_zeros, T.new_ones, T.new_full, T.new_tensor = new_empty, new_zeros, new_ones, new_full, \
        new_tensor


_bind()
