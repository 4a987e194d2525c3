"""Indexing: ``Tensor.__getitem__`` / ``__setitem__`` and the index ops (gather, scatter*,
index_*, take, take_along_dim, masked_*, nonzero, argwhere). Match the torch functions
of the same names: signatures, result shapes and dtypes, exception classes and messages.

Basic indexing (ints, slices with a positive step, None, Ellipsis) is metadata only: it
builds one view of the same storage with no kernel. Advanced indexing (integer tensors,
lists, numpy arrays, boolean masks, Python bools) runs the ``index`` op on that view;
assignment runs ``copy_`` / ``fill_`` on the view, or ``index_put_`` for advanced indices.
Boolean masks become integer indices (``nonzero``) in the core, so the ``index`` and
``index_put`` kernels only ever see int32/int64 indices.

Result shapes follow PyTorch, which differs from numpy in one case: an int next to an
advanced index is applied first as ``select`` (PyTorch), not broadcast as a 0-dim
advanced index (numpy): ``zeros(5, 2, 3, 4)[:, [0, 1], :, 0]`` has shape (5, 2, 3)
(numpy gives (2, 5, 3)). Otherwise the advanced indices are broadcast together and the
broadcast dims replace them in place when they are adjacent, or go to the front when a
slice / None / Ellipsis separates them, as numpy does.

Index values are checked by the kernels before they write anything, so an out-of-range
index raises (IndexError or RuntimeError, as PyTorch does for that op) and leaves the
destination untouched.
"""
from __future__ import annotations

import builtins
import math
import numbers
import operator
import warnings

import numpy as np

from .. import _dtype as D
from .._dispatch import declare
from .._grad_state import STATE as _AG
from .._tensor import Tensor, _wrap_dim
from ._meta import broadcast_shapes, same_device, check_tensor
from . import _indexing_composites as _C   # composites over the primitive set

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
           "index_fill", "index_put", "index_put_", "take", "take_along_dim", "masked_fill", "masked_select",
           "masked_scatter", "nonzero", "argwhere"]

_INDEX_DTYPES = (D.int64, D.int32)


# ---------------------------------------------------------------- shared checks
def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


#: the C type names PyTorch prints in scalar-conversion and mask messages
_CTYPE = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
          "int8": "signed char", "uint8": "unsigned char", "int16": "short int", "int32": "int",
          "int64": "long int", "bool": "bool", "complex64": "c10::complex<float>",
          "complex128": "c10::complex<double>"}
_CTYPE_FIXED = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t"}


def _check_scalar(value, dtype):
    """RuntimeError, in PyTorch's words, when a Python scalar cannot be stored in ``dtype``."""
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or dtype is D.bool or dtype.is_complex:
        return
    name = _CTYPE_FIXED.get(dtype.name) or _CTYPE.get(dtype.name, dtype.name)   # a plugin dtype: its name
    bad = False
    if isinstance(value, (complex, np.complexfloating)):
        bad = True
    elif dtype.category == D._INT:
        info = D.iinfo(dtype)
        lo = -info.max if not dtype.is_signed else info.min   # PyTorch lets -255 into uint8
        bad = not math.isfinite(value) or value < lo or value > info.max
    elif dtype.is_floating_point and dtype is not D.float64:
        bad = math.isfinite(value) and builtins.abs(value) > D.finfo(dtype).max
    if bad:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _wrap_int(value, dtype):
    """A Python number stored as an integer dtype stores it (truncated, wrapped modulo 2**bits as C casts do:
    -1 into uint8 is 255), so that fill_ never sees an out-of-range Python int."""
    if dtype.category != D._INT or isinstance(value, bool):
        return value
    bits = dtype.itemsize * 8
    v = int(value) & ((1 << bits) - 1)
    return v - (1 << bits) if dtype.is_signed and v >= 1 << (bits - 1) else v


def _check_index_tensor(op, index, arg="index", pos=3):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(index).__name__}")


def _key(device, self):
    return device, (device.type, self._layout.name, self._dtype)


def _flat(t):
    """``t.reshape(-1)``; a 0-dim tensor becomes a 1-element view."""
    return t._view((1,), (1,), t._offset) if not t._shape else t.reshape(-1)


def _nd(shape):
    """PyTorch's ensure_nonempty_dim / size: a 0-dim tensor counts as one dim of size 1."""
    return shape if shape else (1,)


# ---------------------------------------------------------------- index / index_put (advanced indexing)
def _index_result(self, indices, opname="index"):
    """(device, result shape) of ``self[indices]`` with ``indices`` a list of int tensors or None."""
    check_tensor(self, opname, "self")
    if not isinstance(indices, (list, tuple)):
        raise TypeError(f"{opname}(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    n = len(self._shape)
    if len(indices) > n:
        raise IndexError(f"too many indices for tensor of dimension {n} (got {len(indices)})")
    dims, tensors = [], []
    for d, t in enumerate(indices):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{opname}(): expected Tensor as element {d} in argument 1, but got "
                            f"{type(t).__name__}")
        if t._dtype not in _INDEX_DTYPES:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        dims.append(d)
        tensors.append(t)
    device = same_device(self, *tensors)
    if not dims:
        return device, self._shape
    try:
        bshape = broadcast_shapes(*(t._shape for t in tensors))
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(_shape_str(t._shape) for t in tensors)) from None
    if dims[-1] - dims[0] + 1 == len(dims):      # adjacent: the broadcast dims replace them in place
        shape = self._shape[:dims[0]] + bshape + self._shape[dims[-1] + 1:]
    else:                                        # separated: the broadcast dims go to the front
        shape = bshape + tuple(s for d, s in enumerate(self._shape) if d not in dims)
    return device, shape


def _index_meta(self, indices):
    device, shape = _index_result(self, indices)
    return device, (device.type, self._layout.name, self._dtype), shape, self._dtype


_index = declare("index(Tensor self, Tensor?[] indices) -> Tensor", _index_meta, composite=_C.index,
                 doc="``self[indices]`` for a list of int32/int64 index tensors or None (a full slice), as "
                     "aten::index. IndexError for an out-of-range index.")


def _index_put_meta(self, indices, values, accumulate=False):
    device, shape = _index_result(self, indices, "index_put")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' (position 3) must be Tensor, not {type(values).__name__}")
    if values._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{D.torch_name(self._dtype)} for the destination and {D.torch_name(values._dtype)} "
                           f"for the source.")
    try:
        ok = broadcast_shapes(shape, values._shape) == shape
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {_shape_str(values._shape)} cannot be broadcast "
                           f"to indexing result of shape {_shape_str(shape)}")
    device = same_device(self, values) if values._shape else device
    return device, (device.type, self._layout.name, self._dtype), self._shape, self._dtype


_index_put = declare("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
                     _index_put_meta, inplace=True, composite=_C.index_put,
                     doc="self with ``self[indices] = values`` (or ``+=`` when accumulate), as aten::index_put.")


def _expand_masks(self, indices):
    """``indices`` with bool / uint8 masks replaced by the int64 indices of their True elements."""
    out = []
    for t in indices:
        if isinstance(t, Tensor) and t._dtype in (D.bool, D.uint8):
            if t._dtype is D.uint8:
                warnings.warn("indexing with dtype ember.uint8 is now deprecated, please use a dtype ember.bool "
                              "instead.", UserWarning, stacklevel=4)
            d, k = len(out), len(t._shape)
            if k == 0:
                raise IndexError("index_put(): a 0-dim boolean index adds a dim; use self[mask] = values instead")
            if d + k > len(self._shape):
                raise IndexError(f"too many indices for tensor of dimension {len(self._shape)}")
            for j in range(k):
                if t._shape[j] != self._shape[d + j]:
                    raise IndexError(f"The shape of the mask {_shape_str(t._shape)} at index {j} does not match the "
                                     f"shape of the indexed tensor {_shape_str(self._shape)} at index {d + j}")
            out.extend(_columns(nonzero(t), k))
        else:
            out.append(t)
    return out


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``input[indices] = values`` (matches torch.index_put).

    ``indices`` is a tuple of index tensors (int32 / int64, or bool masks) or None (a
    full slice); ``values`` has input's dtype and broadcasts to the indexing result's
    shape. With ``accumulate=True`` repeated indices add up. IndexError for an
    out-of-range index, RuntimeError for a dtype or shape mismatch.
    """
    return _index_put(input, _expand_masks(input, list(indices)), values, accumulate)


def index_put_(input, indices, values, accumulate=False):
    """In-place :func:`index_put` (matches torch.index_put_); nothing is written when an index is out of range."""
    return _index_put.inplace(input, _expand_masks(input, list(indices)), values, accumulate)


# ---------------------------------------------------------------- __getitem__ / __setitem__
_INVALID = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
            "(got {})")


def _seq_as_tuple(seq):
    """PyTorch's (and old numpy's) rule: a short list holding a slice, None, Ellipsis, a tensor
    or a sequence (a ``range`` too) is a tuple of indices (PyTorch warns that this is deprecated)."""
    if len(seq) >= 32:
        return False
    for x in seq:
        if x is None or x is Ellipsis or isinstance(x, (slice, Tensor, list, tuple, np.ndarray, range)):
            return True
    return False


def _to_index_tensor(obj, device):
    """A list / numpy array index as an int64 or bool tensor on ``device``."""
    from ._creation import tensor
    arr = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
    if arr.dtype == object or arr.dtype.kind in "USO":
        bad = next((type(x).__name__ for x in np.ravel(arr) if not isinstance(x, numbers.Number)), "object")
        raise TypeError(f"new(): invalid data type '{bad}'")
    if arr.size == 0:
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "b":
        pass
    elif arr.dtype.kind in "iu":
        if arr.dtype != np.uint8:
            arr = arr.astype(np.int64)
    else:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return tensor(arr, device=device)


def _classify(self, item):
    """One index item as (kind, payload): 'int', 'slice', 'none', 'ellipsis', 'bool', 'adv', 'mask'."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    cls = item.__class__
    if cls is int:
        return "int", item
    if cls is slice:
        return "slice", item
    if cls is bool or cls is np.bool_:
        return "bool", builtins.bool(item)
    if isinstance(item, Tensor):
        dt = item._dtype
        if dt is D.bool or dt is D.uint8:
            if not item._shape:
                return "bool", builtins.bool(item.item())
            return "mask", item
        if dt.category != D._INT:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if not item._shape:
            return "int", item.item()
        if dt is not D.int64 and dt is not D.int32:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if item._device != self._device:
            item = item.to(self._device)
        return "adv", item
    if isinstance(item, np.ndarray) and item.ndim == 0:
        return _classify(self, item.item()) if item.dtype.kind in "biu" else _classify(self, item[()])
    if isinstance(item, (list, tuple, np.ndarray, range)):       # a range is a list of ints, as in PyTorch
        return _classify(self, _to_index_tensor(item, self._device))
    if isinstance(item, str):
        raise TypeError(f"new(): invalid data type 'str'")
    if isinstance(item, numbers.Integral) or (hasattr(item, "__index__") and not isinstance(item, numbers.Number)):
        return "int", operator.index(item)
    raise IndexError(_INVALID.format(type(item).__name__))


def _slice_bounds(s, size):
    """(start, length, step) of a slice with a positive step over ``size`` elements (PyTorch's clamping)."""
    step = 1 if s.step is None else operator.index(s.step)
    if step <= 0:
        raise ValueError("slice step cannot be zero" if step == 0 else "step must be greater than zero")
    start = 0 if s.start is None else operator.index(s.start)
    stop = size if s.stop is None else operator.index(s.stop)
    if start < 0:
        start = builtins.max(start + size, 0)
    elif start > size:
        start = size
    if stop < 0:
        stop = builtins.max(stop + size, 0)
    elif stop > size:
        stop = size
    length = (stop - start + step - 1) // step if stop > start else 0
    return start, length, step


def _apply_index(self, index):
    """Basic indexing as one view, plus the advanced indices left for ``index`` / ``index_put``.

    Returns ``(view, None)`` for a basic index, else ``(view, indices)`` where ``indices``
    is a list (one entry per leading dim of ``view``) of int64 tensors or None.
    """
    if index.__class__ is tuple:
        items = index
    elif isinstance(index, list) and _seq_as_tuple(index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] "
                      "instead of x[seq].", UserWarning, stacklevel=3)
        items = tuple(index)
    else:
        items = (index,)
    parsed = [_classify(self, it) for it in items]
    ndim = len(self._shape)
    consumed = 0
    ellipses = 0
    for kind, p in parsed:
        if kind in ("int", "slice", "adv"):
            consumed += 1
        elif kind == "mask":
            consumed += len(p._shape)
        elif kind == "ellipsis":
            ellipses += 1
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        if ndim == 0 and parsed[0][0] == "int":
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    src_shape, src_stride = self._shape, self._stride
    shape, stride = [], []
    offset = self._offset
    adv = []            # (position in the view, kind, payload)
    d = 0               # the next dim of self to consume
    for kind, p in parsed:
        if kind == "int":
            size = src_shape[d]
            if p < -size or p >= size:
                raise IndexError(f"index {p} is out of bounds for dimension {d} with size {size}")
            offset += (p + size if p < 0 else p) * src_stride[d]
            d += 1
        elif kind == "slice":
            start, length, step = _slice_bounds(p, src_shape[d])
            offset += start * src_stride[d]
            shape.append(length)
            stride.append(src_stride[d] * step)
            d += 1
        elif kind == "none" or kind == "bool":
            if kind == "bool":
                adv.append((len(shape), kind, p))
            shape.append(1)
            stride.append(src_stride[d] * src_shape[d] if d < ndim else 1)
        elif kind == "ellipsis":
            k = ndim - consumed
            shape.extend(src_shape[d:d + k])
            stride.extend(src_stride[d:d + k])
            d += k
        elif kind == "adv":
            adv.append((len(shape), kind, p))
            shape.append(src_shape[d])
            stride.append(src_stride[d])
            d += 1
        else:  # mask
            k = len(p._shape)
            adv.append((len(shape), kind, p))
            shape.extend(src_shape[d:d + k])
            stride.extend(src_stride[d:d + k])
            d += k
    shape.extend(src_shape[d:])
    stride.extend(src_stride[d:])
    if 0 in shape:      # an empty view may point just past its storage (x[5:]); keep it inside for host views
        offset = builtins.min(offset, self._storage._nbytes // self._dtype.itemsize)
    view = self._view(tuple(shape), tuple(stride), offset)
    if not adv:
        return view, None
    return view, _adv_indices(view, adv)


def _adv_indices(view, adv):
    from ._creation import tensor
    indices = [None] * (adv[-1][0] + (len(adv[-1][2]._shape) if adv[-1][1] == "mask" else 1))
    for pos, kind, p in adv:
        if kind == "bool":
            indices[pos] = tensor([0] if p else [], dtype=D.int64, device=view._device)
        elif kind == "adv":
            indices[pos] = p
        else:
            if p._dtype is D.uint8:
                warnings.warn("indexing with dtype ember.uint8 is now deprecated, please use a dtype ember.bool "
                              "instead.", UserWarning, stacklevel=4)
            k = len(p._shape)
            for j in range(k):
                if p._shape[j] != view._shape[pos + j]:
                    raise IndexError(f"The shape of the mask {_shape_str(p._shape)} at index {j} does not match the "
                                     f"shape of the indexed tensor {_shape_str(view._shape)} at index {pos + j}")
            if p._device != view._device:
                p = p.to(view._device)
            indices[pos:pos + k] = _columns(nonzero(p), k)
    return indices


def _is_basic_index(index):
    """Whether ``index`` selects a view only (ints, slices, None, Ellipsis)."""
    for it in (index if index.__class__ is tuple else (index,)):
        if not (it is None or it is Ellipsis or it.__class__ is int or it.__class__ is slice):
            return False
    return True


def _getitem(self, index):
    """``self[index]`` (matches torch.Tensor.__getitem__).

    Ints (negative count from the end), slices with a positive step, None (a new dim of
    size 1), Ellipsis and 0-dim integer tensors give a view (shared storage, no copy).
    Integer tensors / lists / numpy arrays, boolean masks and Python bools are advanced
    indices and give a copy. Raises IndexError for an out-of-range index ("index 5 is
    out of bounds for dimension 0 with size 3"), too many indices or a mask of the wrong
    shape; ValueError for a step <= 0; IndexError / TypeError for an invalid index type.
    """
    if self._requires_grad and _AG.check and _is_basic_index(index):
        from ..autograd import _record
        return _record.record_view("SelectBackward0" if index.__class__ is int else "SliceBackward0", "scatter",
                                   _getitem, self, (index,), {})
    cls = index.__class__
    if cls is int and self._shape:           # fast path: x[i]
        size = self._shape[0]
        if index < -size or index >= size:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {size}")
        if index < 0:
            index += size
        return self._view(self._shape[1:], self._stride[1:], self._offset + index * self._stride[0])
    view, indices = _apply_index(self, index)
    if indices is None:
        return view
    return _index(view, indices)


def _setitem(self, index, value):
    """``self[index] = value`` (matches torch.Tensor.__setitem__).

    ``value`` is a number or a tensor that broadcasts to ``self[index]``'s shape (leading
    size-1 dims of value are ignored) and is cast to self's dtype. A basic index writes
    through the view (``copy_`` / ``fill_``); an advanced index runs ``index_put_``. All
    index checks run before anything is written.
    """
    if isinstance(value, Tensor):
        pass
    elif isinstance(value, (numbers.Number, np.generic)):
        _check_scalar(value, self._dtype)
        value = _wrap_int(value.item() if isinstance(value, np.generic) else value, self._dtype)
    else:
        raise TypeError(f"can't assign a {type(value).__name__} to a {self.type()}")
    view, indices = _apply_index(self, index)
    if isinstance(value, Tensor):
        vs = value._shape
        lead = 0
        while len(vs) - lead > len(view._shape) and vs[lead] == 1:
            lead += 1
        if lead:
            value = value.reshape(vs[lead:])
    if indices is None:
        from ._copy import copy_, fill_
        if isinstance(value, Tensor):
            value.expand(view._shape)          # PyTorch's broadcast error, before anything is written
            copy_(view, value)
        else:
            fill_(view, value)
        return
    if isinstance(value, Tensor):
        if value._dtype is not self._dtype or value._device != self._device:
            value = value.to(self._device, self._dtype)
    else:
        from ._copy import fill_
        from .._factory import empty_on
        value = fill_(empty_on((), self._dtype, self._device), value)
    _index_put.inplace(view, indices, value, False)


# ---------------------------------------------------------------- gather / scatter
def _check_sg_index(op, index):
    if index.numel() and index._dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")


def _gather_meta(self, dim, index, sparse_grad=False):
    check_tensor(self, "gather")
    _check_index_tensor("gather", index)
    d = _wrap_dim(dim, len(self._shape))
    _check_sg_index("gather", index)
    ss, si = _nd(self._shape), _nd(index._shape)
    if len(ss) != len(si):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i in range(len(ss)):
        if i != d and si[i] > ss[i]:
            raise RuntimeError(f"Size does not match at dimension {i} expected index {_shape_str(index._shape)} to "
                               f"be no larger than self {_shape_str(self._shape)} apart from dimension {d}")
    device = same_device(self, index)
    return (*_key(device, self), index._shape, self._dtype)


gather = declare("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", _gather_meta,
                 doc="out[i][j][k] = input[index[i][j][k]][j][k] (for dim=0), and so on (matches torch.gather).\n\n"
                     "``index`` (int64 or int32) has input's number of dims and, apart from ``dim``, sizes no "
                     "larger than input's; the result has index's shape and input's dtype. RuntimeError for "
                     "a dims / sizes / dtype mismatch and for an index outside [0, input.size(dim)).")


def _scatter_check(self, dim, index, src, op="scatter"):
    check_tensor(self, op)
    _check_index_tensor(op, index)
    d = _wrap_dim(dim, len(self._shape))
    _check_sg_index("scatter", index)
    if isinstance(src, Tensor) and src._dtype is not self._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return d
    ss, si = _nd(self._shape), _nd(index._shape)
    if len(ss) != len(si):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and len(_nd(src._shape)) != len(si):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    wrong = builtins.any(si[i] > ss[i] for i in range(len(si)) if i != d)
    if isinstance(src, Tensor):
        wrong = wrong or builtins.any(a > b for a, b in zip(si, _nd(src._shape)))
        if wrong:
            raise RuntimeError(f"Expected index {_shape_str(index._shape)} to be no larger than self "
                               f"{_shape_str(self._shape)} apart from dimension {d} and to be no larger size than "
                               f"src {_shape_str(src._shape)}")
    elif wrong:
        raise RuntimeError(f"Expected index {_shape_str(index._shape)} to be no larger than self "
                           f"{_shape_str(self._shape)} apart from dimension {d}")
    return d


def _scatter_meta(self, dim, index, src, reduce=None):
    _scatter_check(self, dim, index, src)
    if not isinstance(src, Tensor):
        if not isinstance(src, numbers.Number):
            raise TypeError(f"scatter(): argument 'src' (position 4) must be Tensor or Number, not "
                            f"{type(src).__name__}")
        _check_scalar(src, self._dtype)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    device = same_device(self, index, src)
    return (*_key(device, self), self._shape, self._dtype)


_scatter = declare("scatter(Tensor self, int dim, Tensor index, Tensor src, *, str? reduce=None) -> Tensor",
                   _scatter_meta, inplace=True, composite=_C.scatter,
                   doc="self with self[index[i][j]][j] = src[i][j] (dim=0), etc.; src may be a number.")


def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    """A copy of ``input`` with the values of ``src`` (a tensor) or ``value`` (a number) written
    at the positions ``index`` gives along ``dim`` (matches torch.scatter).

    For dim=0: ``out[index[i][j]][j] = src[i][j]``. ``index`` (int64 / int32) has input's
    number of dims, sizes no larger than input's apart from ``dim`` and no larger than
    src's; src has input's dtype. ``reduce`` may be 'add' or 'multiply'. Where an index
    repeats, which value lands is unspecified (as in PyTorch). RuntimeError for a
    mismatch or an index outside [0, input.size(dim)); nothing is written then.
    """
    return _scatter(input, dim, index, _src_or_value(src, value), reduce=reduce, out=out)


def _src_or_value(src, value):
    if src is None and value is None:
        raise TypeError("scatter() missing 1 required positional argument: 'src' or 'value'")
    return src if src is not None else value


def _scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """In-place :func:`scatter` (matches torch.Tensor.scatter_)."""
    return _scatter.inplace(self, dim, index, _src_or_value(src, value), reduce=reduce)


def _scatter_add_meta(self, dim, index, src):
    _check_index_tensor("scatter_add", src, "src", 4)
    _scatter_check(self, dim, index, src, "scatter_add")
    device = same_device(self, index, src)
    return (*_key(device, self), self._shape, self._dtype)


scatter_add = declare("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", _scatter_add_meta,
                      inplace=True,
                      doc="A copy of input with the values of ``src`` added at the positions ``index`` gives "
                          "along ``dim``; repeated indices accumulate (matches torch.scatter_add). Same checks as "
                          ":func:`scatter`.")
scatter_add_ = scatter_add.inplace

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_meta(self, dim, index, src, reduce, include_self=True):
    _check_index_tensor("scatter_reduce", src, "src", 4)
    _scatter_check(self, dim, index, src, "scatter_reduce")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if self._dtype.is_complex and reduce in ("amax", "amin"):
        raise RuntimeError(f"scatter_reduce(): {reduce} is not supported for complex tensors")
    if reduce == "mean" and self._dtype is D.bool:      # checked before any kernel writes (PyTorch's cpu text)
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    device = same_device(self, index, src)
    return (*_key(device, self), self._shape, self._dtype)


scatter_reduce = declare(
    "scatter_reduce(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor",
    _scatter_reduce_meta, inplace=True, composite=_C.scatter_reduce,
    doc="A copy of input where each position ``index`` reaches along ``dim`` holds the reduction ('sum', 'prod', "
        "'mean', 'amax' or 'amin') of the src values scattered there, and of input's own value when "
        "``include_self`` (matches torch.scatter_reduce). Integer 'mean' rounds down. Same checks as "
        ":func:`scatter`; RuntimeError for another reduce.")
scatter_reduce_ = scatter_reduce.inplace


# ---------------------------------------------------------------- index_select / index_add / index_copy / index_fill
def _index_select_meta(self, dim, index):
    check_tensor(self, "index_select")
    _check_index_tensor("index_select", index)
    if len(index._shape) > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in _INDEX_DTYPES:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    d = _wrap_dim(dim, len(self._shape))
    n = index.numel()
    if not self._shape:
        if n > 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} value(s)")
        shape = ()
    else:
        shape = self._shape[:d] + (n,) + self._shape[d + 1:]
    device = same_device(self, index)
    return (*_key(device, self), shape, self._dtype)


index_select = declare("index_select(Tensor self, int dim, Tensor index) -> Tensor", _index_select_meta,
                       composite=_C.index_select,
                       doc="The entries of input along ``dim`` at the positions in ``index`` (a 0/1-dim int64 or "
                           "int32 tensor), in that order (matches torch.index_select); result shape: input's with "
                           "size(dim) = index.numel(). IndexError for a 2-dim index or an index outside "
                           "[0, input.size(dim)) ('index out of range in self'); RuntimeError for a float index.")


def _index_add_meta(self, dim, index, source, alpha=1):
    check_tensor(self, "index_add")
    _check_index_tensor("index_add", index)
    _check_index_tensor("index_add", source, "source", 4)
    if len(index._shape) > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {len(index._shape)} with "
                         f"type: {D.torch_name(index._dtype)} and size: {_shape_str(index._shape)}")
    if index._dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{D.torch_name(index._dtype)}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"index_add_(): self ({D.torch_name(self._dtype)}) and source "
                           f"({D.torch_name(source._dtype)}) must have the same scalar type")
    d = _wrap_dim(dim, len(self._shape))
    n = index.numel()
    src_d = source._shape[d] if source._shape and d < len(source._shape) else 1
    if n != src_d:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): ({src_d}), "
                           f"for dim: {d}")
    if self._shape or source._shape:
        if len(self._shape) != len(source._shape) or builtins.any(
                a != b for i, (a, b) in enumerate(zip(self._shape, source._shape)) if i != d):
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {_shape_str(self._shape)} source.shape = "
                               f"{_shape_str(source._shape)}")
    device = same_device(self, index, source)
    return (*_key(device, self), self._shape, self._dtype)


index_add = declare("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
                    _index_add_meta, inplace=True, composite=_C.index_add,
                    doc="A copy of input with ``alpha * source`` added along ``dim`` at the positions in ``index`` "
                        "(0/1-dim int64 or int32; repeats accumulate); matches torch.index_add. source has "
                        "input's dtype and shape apart from dim, where its size is index.numel(). RuntimeError "
                        "for a mismatch or an index outside [0, input.size(dim)); IndexError for a 2-dim index.")
index_add_ = index_add.inplace


def _index_copy_meta(self, dim, index, source):
    check_tensor(self, "index_copy")
    _check_index_tensor("index_copy", index)
    _check_index_tensor("index_copy", source, "source", 4)
    if len(index._shape) > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {len(index._shape)})")
    if index._dtype is not D.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {D.torch_name(index._dtype)}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{D.torch_name(self._dtype)} and (source) {D.torch_name(source._dtype)}")
    d = _wrap_dim(dim, len(self._shape))
    if self._shape and source._shape and len(self._shape) != len(source._shape):
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({len(source._shape)}), destination dimensionality "
                         f"({len(self._shape)})")
    n = index.numel()
    src_d = source._shape[d] if source._shape else 1
    if n != src_d:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) ({src_d})")
    if source._shape:
        ds = [s for i, s in enumerate(self._shape) if i != d]
        ss = [s for i, s in enumerate(source._shape) if i != d]
        if ds != ss:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {' '.join(map(str, ds))} at dimension {d} and source slice shape: "
                               f"{' '.join(map(str, ss))} at dimension 0.")
    device = same_device(self, index, source)
    return (*_key(device, self), self._shape, self._dtype)


index_copy = declare("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", _index_copy_meta,
                     inplace=True, composite=_C.index_copy,
                     doc="A copy of input whose entries along ``dim`` at the positions in ``index`` (0/1-dim "
                         "int64) are replaced by source's, in order (matches torch.index_copy). IndexError for an "
                         "index outside [0, input.size(dim)) or a count mismatch; RuntimeError for dtype or "
                         "slice-shape mismatches.")
index_copy_ = index_copy.inplace


def _index_fill_meta(self, dim, index, value):
    check_tensor(self, "index_fill")
    _check_index_tensor("index_fill", index)
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{len(value._shape)} dimension(s).")
    elif not isinstance(value, numbers.Number):
        raise TypeError(f"index_fill(): argument 'value' (position 4) must be Number, not {type(value).__name__}")
    if isinstance(value, complex) and not self._dtype.is_complex:
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not supported")
    if index._dtype is not D.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if len(index._shape) > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    _wrap_dim(dim, len(self._shape))
    _check_scalar(value, self._dtype)
    device = same_device(self, index)
    return (*_key(device, self), self._shape, self._dtype)


_index_fill = declare("index_fill(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", _index_fill_meta,
                      inplace=True, composite=_C.index_fill, doc="self with the entries along dim at index set to value.")


def index_fill(input, dim, index, value):
    """A copy of input whose entries along ``dim`` at the positions in ``index`` (0/1-dim int64;
    negative positions count from the end) are set to ``value`` (a number or 0-dim tensor).
    Matches torch.index_fill. IndexError for an out-of-range index or a non-int64 index;
    RuntimeError for a value tensor with dims or a 2-dim index."""
    _index_fill_meta(input, dim, index, value)
    if _value_needs_grad(value):
        return _fill_where(input, _index_fill_mask(input, dim, index), value)
    return _index_fill(input, dim, index, value.item() if isinstance(value, Tensor) else value)


def _index_fill_(self, dim, index, value):
    """In-place :func:`index_fill`."""
    _index_fill_meta(self, dim, index, value)
    if _value_needs_grad(value):
        return self.copy_(_fill_where(self, _index_fill_mask(self, dim, index), value))
    return _index_fill.inplace(self, dim, index, value.item() if isinstance(value, Tensor) else value)


# A 0-dim tensor ``value`` that requires grad gets, as in PyTorch, the sum of the incoming gradient
# over the filled positions. The Scalar kernels take a Python number, so this case runs as
# ``where(mask, value, self)``, whose derivative already reduces over the broadcast.
def _value_needs_grad(value):
    return isinstance(value, Tensor) and value._requires_grad and _AG.check


def _fill_where(self, mask, value):
    from ._elementwise import where
    return where(mask, value.to(device=self.device, dtype=self._dtype), self)


def _index_fill_mask(self, dim, index):
    """A bool tensor that broadcasts against self: True at ``index`` along ``dim``."""
    from ._creation import zeros
    nd = len(self._shape)
    d = _wrap_dim(dim, nd) if nd else 0
    n = self._shape[d] if nd else 1
    mask = zeros((n,), dtype=D.bool, device=self.device)
    mask = _index_fill(mask, 0, index.reshape(-1), True)
    return mask.reshape([n if i == d else 1 for i in range(nd)])


# ---------------------------------------------------------------- take / take_along_dim
def _take_meta(self, index):
    check_tensor(self, "take")
    _check_index_tensor("take", index, pos=2)
    if index._dtype is not D.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {D.torch_name(index._dtype)}")
    device = same_device(self, index)
    return (*_key(device, self), index._shape, self._dtype)


take = declare("take(Tensor self, Tensor index) -> Tensor", _take_meta, composite=_C.take,
               doc="input viewed as 1-D, read at the positions in ``index`` (int64; negative count from the end); "
                   "the result has index's shape (matches torch.take). IndexError for an out-of-range index "
                   "('out of range: tried to access index 6 on a tensor of 6 elements.').")


def take_along_dim(input, indices, dim=None, *, out=None):
    """Values of ``input`` at ``indices`` along ``dim`` (matches torch.take_along_dim).

    With ``dim=None`` input and indices are flattened. Otherwise input and indices have
    the same number of dims and broadcast against each other apart from ``dim``; the
    result is ``gather`` of the broadcast tensors. RuntimeError for a dims mismatch or a
    non-int64 ``indices``.
    """
    check_tensor(input, "take_along_dim")
    _check_index_tensor("take_along_dim", indices, "indices", 2)
    if indices._dtype is not D.int64:
        raise RuntimeError(f"ember.take_along_dim(): dtype of indices should be Long but got "
                           f"{D.torch_name(indices._dtype)}")
    if dim is None:
        return gather(_flat(input), 0, _flat(indices), out=out)
    n = len(input._shape)
    if n == 0 and not indices._shape:
        return gather(input, _wrap_dim(dim, 0), indices, out=out)
    if n != len(indices._shape):
        raise RuntimeError(f"ember.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {n} dimensions for input, and {len(indices._shape)} dimensions for indices")
    d = _wrap_dim(dim, n)
    a = list(input._shape)
    b = list(indices._shape)
    a[d] = b[d] = 1
    bshape = list(broadcast_shapes(tuple(a), tuple(b)))
    ishape, jshape = list(bshape), list(bshape)
    ishape[d], jshape[d] = input._shape[d] if n else 1, indices._shape[d] if n else 1
    return gather(input.expand(ishape), d, indices.expand(jshape), out=out)


# ---------------------------------------------------------------- masked_fill / masked_select / masked_scatter
def _masked_fill_meta(self, mask, value):
    check_tensor(self, "masked_fill")
    _check_index_tensor("masked_fill", mask, "mask", 2)
    if mask._dtype is not D.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_CTYPE[mask._dtype.name]}")
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{len(value._shape)} dimension(s).")
    elif not isinstance(value, numbers.Number):
        raise TypeError(f"masked_fill(): argument 'value' (position 3) must be Number, not {type(value).__name__}")
    _check_scalar(value, self._dtype)
    device = same_device(self, mask)
    return (*_key(device, self), broadcast_shapes(self._shape, mask._shape), self._dtype)


_masked_fill = declare("masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor", _masked_fill_meta,
                       inplace=True, composite=_C.masked_fill, doc="self with value where mask (broadcast).")


def masked_fill(input, mask, value):
    """A copy of input with ``value`` (a number or 0-dim tensor) wherever the bool ``mask`` is
    True; mask broadcasts with input and the result has the broadcast shape (matches
    torch.masked_fill). RuntimeError for a non-bool mask, a value tensor with dims, or a
    value that overflows input's dtype."""
    _masked_fill_meta(input, mask, value)
    if _value_needs_grad(value):
        return _fill_where(input, mask, value)
    return _masked_fill(input, mask, value.item() if isinstance(value, Tensor) else value)


def _masked_fill_(self, mask, value):
    """In-place :func:`masked_fill`; mask must broadcast to self's shape."""
    _masked_fill_meta(self, mask, value)
    if _value_needs_grad(value):
        if broadcast_shapes(self._shape, mask._shape) != self._shape:
            return _masked_fill.inplace(self, mask, value.item())   # raises the in-place shape error
        return self.copy_(_fill_where(self, mask, value))
    return _masked_fill.inplace(self, mask, value.item() if isinstance(value, Tensor) else value)


def _masked_select_meta(self, mask):
    check_tensor(self, "masked_select")
    _check_index_tensor("masked_select", mask, "mask", 2)
    if mask._dtype is not D.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    broadcast_shapes(self._shape, mask._shape)
    return _key(same_device(self, mask), self)


_masked_select = declare("masked_select(Tensor self, Tensor mask) -> Tensor", _masked_select_meta, structured=False,
                        composite=_C.masked_select,
                        doc="A new 1-D tensor of input's elements where the bool ``mask`` is True, input and mask "
                            "broadcast together, in row-major order (matches torch.masked_select). RuntimeError "
                            "for a non-bool mask or shapes that do not broadcast.")


def masked_select(input, mask, *, out=None):
    """A new 1-D tensor of input's elements where the bool ``mask`` is True, input and mask broadcast
    together, in row-major order (matches torch.masked_select). ``out`` must have input's dtype
    (RuntimeError "masked_select(): self and result must have the same scalar type") and is resized.
    RuntimeError for a non-bool mask or shapes that do not broadcast."""
    if out is not None and isinstance(out, Tensor) and isinstance(input, Tensor) and out._dtype is not input._dtype:
        raise RuntimeError("masked_select(): self and result must have the same scalar type")
    from ._out import write_out
    return write_out("masked_select", _masked_select(input, mask), out, (input, mask))


def _masked_scatter_meta(self, mask, source):
    check_tensor(self, "masked_scatter")
    _check_index_tensor("masked_scatter", mask, "mask", 2)
    _check_index_tensor("masked_scatter", source, "source", 3)
    if mask._dtype is not D.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{D.torch_name(mask._dtype)}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{D.torch_name(self._dtype)} and {D.torch_name(source._dtype)}")
    device = same_device(self, mask, source)
    return (*_key(device, self), broadcast_shapes(self._shape, mask._shape), self._dtype)


masked_scatter = declare("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", _masked_scatter_meta,
                         inplace=True, composite=_C.masked_scatter,
                         doc="A copy of input whose elements where the bool ``mask`` (broadcast) is True are "
                             "replaced, in row-major order, by source's first elements (matches "
                             "torch.masked_scatter). RuntimeError for a non-bool mask, a dtype mismatch, or a source "
                             "with fewer elements than the mask has True values (nothing is written then).")
masked_scatter_ = masked_scatter.inplace


# ---------------------------------------------------------------- nonzero / argwhere
def _columns(nz, k):
    """The k columns of a nonzero() result, as 1-D views (fresh empty tensors when there are no rows)."""
    if nz._shape[0] == 0:
        from .._factory import empty_on
        return [empty_on((0,), D.int64, nz._device) for _ in range(k)]
    return [nz.select(1, j) for j in range(k)]


def _nonzero_meta(self):
    check_tensor(self, "nonzero")
    return _key(self._device, self)


_nonzero = declare("nonzero(Tensor self) -> Tensor", _nonzero_meta, structured=False, composite=_C.nonzero,
                   doc="The int64 [n, ndim] indices of the nonzero elements, row-major.")


def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the nonzero (True) elements of ``input`` (matches torch.nonzero).

    Returns an int64 tensor of shape [n, input.ndim], one row per nonzero element in
    row-major order; with ``as_tuple=True`` a tuple of ndim 1-D int64 tensors, one per
    dim (a 0-dim input counts as 1-D there). ``out`` (int64, resized) only without as_tuple:
    RuntimeError as PyTorch's otherwise.
    """
    if out is not None:
        if as_tuple:
            raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
        if isinstance(out, Tensor) and out._dtype is not D.int64:
            raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but got scalar type"
                               f"{D.torch_name(out._dtype)}")
        from ._out import write_out
        return write_out("nonzero", _nonzero(input), out, (input,))
    if not as_tuple:
        return _nonzero(input)
    check_tensor(input, "nonzero")
    r = _nonzero(_flat(input) if not input._shape else input)
    return tuple(_columns(r, r._shape[1]))


def argwhere(input):
    """``nonzero(input)``: int64 [n, ndim] indices of the nonzero elements (matches torch.argwhere)."""
    return _nonzero(input)


# ---------------------------------------------------------------- Tensor methods
def _bind():
    T = Tensor
    T.__getitem__ = _getitem
    T.__setitem__ = _setitem
    T.gather = gather
    T.scatter = scatter
    T.scatter_ = _scatter_
    T.scatter_add, T.scatter_add_ = scatter_add, scatter_add_
    T.scatter_reduce, T.scatter_reduce_ = scatter_reduce, scatter_reduce_
    T.index_select = index_select
    T.index_add, T.index_add_ = index_add, index_add_
    T.index_copy, T.index_copy_ = index_copy, index_copy_
    T.index_fill, T.index_fill_ = index_fill, _index_fill_
    T.index_put, T.index_put_ = index_put, index_put_
    T.take = take
    T.take_along_dim = take_along_dim
    T.masked_fill, T.masked_fill_ = masked_fill, _masked_fill_
    T.masked_select = masked_select
    T.masked_scatter, T.masked_scatter_ = masked_scatter, masked_scatter_
    T.nonzero = nonzero
    T.argwhere = argwhere


_bind()
