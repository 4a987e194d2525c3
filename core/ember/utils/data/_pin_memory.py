"""Pinning a batch: every tensor in it moved to page-locked host memory through the
accelerator's runtime (``Tensor.pin_memory``; ``DeviceRuntime.pin_memory``)."""
from __future__ import annotations

import collections.abc as abc
import copy

from ember._tensor import Tensor


def pin_memory(data, device=None):
    """``data`` with each tensor replaced by ``tensor.pin_memory(device)``, keeping the
    structure: mappings and sequences keep their type (tuples become lists, as in
    PyTorch); objects with a ``pin_memory()`` method are asked to pin themselves."""
    if isinstance(data, Tensor):
        return data.pin_memory(device)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, abc.Mapping):
        items = {k: pin_memory(v, device) for k, v in data.items()}
        if isinstance(data, abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(items)
            return clone
        try:
            return type(data)(items)
        except TypeError:
            return items
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(v, device) for v in data))
    if isinstance(data, tuple):
        return [pin_memory(v, device) for v in data]
    if isinstance(data, abc.Sequence):
        items = [pin_memory(v, device) for v in data]
        if isinstance(data, abc.MutableSequence):
            clone = copy.copy(data)
            clone[:] = items
            return clone
        try:
            return type(data)(items)
        except TypeError:
            return items
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
