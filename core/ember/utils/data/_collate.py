"""Turning a list of samples into a batch (match torch.utils.data.default_collate,
default_convert and torch.utils.data._utils.collate.collate).

``default_collate`` works on the structure of the first sample and recurses:

==========================  ============================================
sample element              batch element
==========================  ============================================
Tensor (shape S)            ``ember.stack`` -> shape (B, *S)
numpy array / numpy scalar  converted to tensors, then stacked
int (bool)                  int64 (bool) tensor of shape (B,)
float                       float64 tensor of shape (B,)
str, bytes                  unchanged: the batch's list (the column's
                            tuple when nested in a tuple or list)
Mapping                     same mapping type, each key collated
namedtuple                  same namedtuple type, each field collated
tuple                       a list, each position collated
other Sequence              same sequence type (a list if it cannot be
                            rebuilt), each position collated
==========================  ============================================
"""
from __future__ import annotations

import collections.abc as abc
import copy

import numpy as np

import ember
from ember import _registry
from ember._tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_STRING_KINDS = "SaUO"       # numpy dtype kinds that hold strings or objects, not numbers


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _rebuild_mapping(elem, items: dict):
    """A mapping of ``elem``'s type holding ``items``; a plain dict if the type cannot be rebuilt."""
    if isinstance(elem, abc.MutableMapping):
        clone = copy.copy(elem)
        clone.update(items)
        return clone
    try:
        return type(elem)(items)
    except TypeError:
        return items


def _rebuild_sequence(elem, items: list):
    """A sequence of ``elem``'s type holding ``items``; a plain list if the type cannot be rebuilt."""
    if isinstance(elem, abc.MutableSequence):
        clone = copy.copy(elem)
        clone[:] = items
        return clone
    try:
        return type(elem)(items)
    except TypeError:
        return items


# ---------------------------------------------------------------- leaf collate functions
def _host_stackable(batch):
    """The cpu runtime when ``batch`` can be stacked on the host with numpy: host-memory tensors
    of one device, dtype and shape, none requiring grad; else None (``ember.stack`` then does
    it, with its type promotion, autograd and error messages)."""
    elem = batch[0]
    rt = _registry.device_type(elem.device.type).runtime
    if not rt.host_memory:
        return None
    device, dtype, shape = elem._device, elem._dtype, elem._shape
    for t in batch:
        if t._requires_grad or t._dtype is not dtype or t._shape != shape or t._device != device:
            return None
    return rt


def _stack_tensors(batch, *, collate_fn_map=None):
    from ._worker import get_worker_info, shared_transport
    elem = batch[0]
    shape = (len(batch),) + tuple(elem.shape)
    # in a worker the batch travels to the main process through shared memory: stack straight
    # into a shared block (one copy instead of two)
    shared = elem.device.type == "cpu" and get_worker_info() is not None and shared_transport()
    rt = _host_stackable(batch)
    if rt is None:
        if shared:
            return ember.stack(batch, 0, out=ember.empty(shape, dtype=elem.dtype).share_memory_())
        return ember.stack(batch, 0)
    # host fast path: numpy views of the samples, one np.stack into the batch's memory
    # (a fifth of ember.stack's per-sample cost, which matters for small samples)
    out = ember.empty(shape, dtype=elem.dtype, device=elem.device)
    if shared:
        out.share_memory_()
    np.stack([rt.to_numpy(t) for t in batch], out=rt.to_numpy(out))
    return out


def _collate_ndarray(batch, *, collate_fn_map=None):
    if batch[0].dtype.kind in _STRING_KINDS:
        raise TypeError(_ERR.format(batch[0].dtype))
    return collate([ember.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalar(batch, *, collate_fn_map=None):
    return ember.as_tensor(np.asarray(batch))


def _collate_float(batch, *, collate_fn_map=None):
    return ember.tensor(batch, dtype=ember.float64)


def _collate_int(batch, *, collate_fn_map=None):
    return ember.tensor(batch)


def _collate_str(batch, *, collate_fn_map=None):
    return batch


#: type -> collate function for that type's elements; ``collate`` looks up the exact
#: type first, then the first entry the element is an instance of (insertion order).
default_collate_fn_map = {
    Tensor: _stack_tensors,
    np.ndarray: _collate_ndarray,
    np.memmap: _collate_ndarray,
    np.bool_: _collate_numpy_scalar,
    np.number: _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples) by the structure of its first sample,
    using ``collate_fn_map`` (type -> function) for leaves (matches
    torch.utils.data._utils.collate.collate).

    :raises RuntimeError: "each element in list of batch should be of equal size" for
        sequence samples of different lengths.
    :raises TypeError: for an element type with no collate function.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
        for kind, fn in collate_fn_map.items():
            if isinstance(elem, kind):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if _is_namedtuple(elem):
        return elem_type(*(collate(field, collate_fn_map=collate_fn_map) for field in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        n = len(elem)
        if any(len(e) != n for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(col, collate_fn_map=collate_fn_map) for col in zip(*batch)]
        return columns if isinstance(elem, tuple) else _rebuild_sequence(elem, columns)
    raise TypeError(_ERR.format(elem_type))


def default_collate(batch):
    """Stack a list of samples into a batch (matches torch.utils.data.default_collate).

    See the module docstring for the rule per element type: tensors of shape S become
    one tensor of shape (B, *S); Python ints an int64 tensor, floats a float64 tensor,
    bools a bool tensor; numpy arrays are converted then stacked; strings stay a list;
    dicts, namedtuples, tuples and lists are collated position by position.

    :raises RuntimeError: "each element in list of batch should be of equal size";
        ``ember.stack``'s error for tensors of different shapes.
    :raises TypeError: "default_collate: batch must contain tensors, numpy arrays,
        numbers, dicts or lists; found <type>".
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Convert numpy arrays and numpy scalars inside ``data`` to tensors, keeping the
    structure (matches torch.utils.data.default_convert; used when batching is off).

    Tuples become lists (as PyTorch); numpy arrays of strings or objects are left alone.
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in _STRING_KINDS else ember.as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return ember.as_tensor(data)
    if isinstance(data, abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data
