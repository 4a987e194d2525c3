"""How tensors and storages pickle, deep-copy and move into shared memory.

- ``pickle.dumps(t)`` / ``copy.deepcopy(t)``: ``Tensor.__reduce_ex__`` calls ``reduce_tensor``,
  which gives ``(_rebuild_tensor, (storage, storage_offset, size, stride, dtype, requires_grad,
  cls, state))``; the storage pickles on its own (``reduce_storage``: its bytes, read through
  the device runtime's ``to_numpy``, and its device), so the pickle memo keeps views of one
  storage views of one storage inside one pickle. ``ember.save`` reuses ``reduce_tensor`` and
  stores each storage as a record of its own (``ember.serialization``).
- ``Tensor.__deepcopy__`` copies the storage on its own device (no host round trip), keeps
  ``requires_grad``, ``grad`` and a subclass's Python attributes, and refuses non-leaf tensors
  with PyTorch's message.
- ``share_memory_(t)``: asks the device runtime to move the storage into memory another process
  can map (``DeviceRuntime.share_memory``), in place, and drops the cached native views of every
  tensor over that storage so they all see the new memory.

Rebuild functions are module-level names so that pickles refer to them by a stable global
(``ember._serialization_support._rebuild_tensor``) that ``ember.load``'s restricted unpickler
allow-lists; they validate their arguments, because a crafted file controls them.
"""
from __future__ import annotations

import math
import pickle
import weakref

from ._allocator import UntypedStorage
from ._dtype import dtype as _dtype_cls, uint8
from ._tensor import Tensor

__all__ = ["reduce_tensor", "reduce_storage", "deepcopy_tensor", "deepcopy_storage", "share_memory_",
           "is_shared", "storage_bytes_view", "new_storage", "on_tensor_subclass", "TENSOR_CLASSES"]

_new = object.__new__

#: Tensor and every subclass defined so far (picklers that dispatch on the exact type, such as
#: multiprocessing's ForkingPickler, register a reducer for each; see on_tensor_subclass)
TENSOR_CLASSES: list = [Tensor]
#: callables notified with each new Tensor subclass (ember.multiprocessing registers its reducer)
_SUBCLASS_HOOKS: list = []

#: the shared memory's key -> the storage over it in this process (weak: a dead storage unmaps);
#: ember.multiprocessing maps memory it receives once per process through it
SHARED_STORAGES = weakref.WeakValueDictionary()



def _user_state(t) -> dict:
    """The Python attributes a user or subclass set on ``t`` (``t.note = ...``). Underscore names
    are the core's and autograd's per-tensor state (version counter, grad, accumulator, ...),
    which never travels with a pickle or a deep copy."""
    return {k: v for k, v in t.__dict__.items() if not k.startswith("_")}

_DEEPCOPY_NONLEAF = ("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at "
                     "the moment.  If you were attempting to deepcopy a module, this may be because of a "
                     "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")


def on_tensor_subclass(cls) -> None:
    """Called by ``Tensor.__init_subclass__``: remember ``cls`` and tell the registered hooks."""
    TENSOR_CLASSES.append(cls)
    for hook in _SUBCLASS_HOOKS:
        hook(cls)


# ---------------------------------------------------------------- host views of storages
def storage_bytes_view(storage: UntypedStorage) -> Tensor:
    """A 1-D uint8 tensor over all of ``storage`` (shape ``(nbytes,)``); shares its memory."""
    t = _new(Tensor)
    t._storage = storage
    t._shape = (storage._nbytes,)
    t._stride = (1,)
    t._offset = 0
    t._dtype = uint8
    t._device = storage.device
    t._native = None
    return t


def _runtime(device):
    from . import _registry
    return _registry.device_type(device.type).runtime


def host_bytes(storage: UntypedStorage):
    """A 1-D numpy uint8 array with the storage's bytes (a view on host-memory devices)."""
    return _runtime(storage.device).to_numpy(storage_bytes_view(storage))


def new_storage(nbytes: int, device) -> UntypedStorage:
    """A fresh (uninitialised) storage of ``nbytes`` bytes on ``device``, from its allocator."""
    from ._factory import allocator_for
    return allocator_for(device).malloc(nbytes)


def storage_from_host(array, device) -> UntypedStorage:
    """A new storage on ``device`` holding the bytes of the 1-D uint8 numpy ``array``."""
    st = new_storage(array.shape[0], device)
    if array.shape[0]:
        _runtime(device).from_numpy(storage_bytes_view(st), array)
    return st


# ---------------------------------------------------------------- pickling
def reduce_storage(storage: UntypedStorage, protocol: int = 2):
    """``UntypedStorage.__reduce_ex__``: the storage's bytes (read through the host) and its device."""
    arr = host_bytes(storage)
    if protocol >= 5 and arr.flags.c_contiguous:
        data = pickle.PickleBuffer(arr)        # no copy into a bytes object; loads as a bytearray
    else:
        data = arr.tobytes()
    return (_rebuild_storage, (data, str(storage.device), storage._nbytes))


def _rebuild_storage(data, location, nbytes):
    """Inverse of reduce_storage: a storage on ``location`` with the pickled bytes."""
    import numpy as np
    if not isinstance(data, (bytes, bytearray)) or not isinstance(location, str) or type(nbytes) is not int:
        raise pickle.UnpicklingError("_rebuild_storage: malformed storage record")
    if len(data) != nbytes:
        raise pickle.UnpicklingError(f"_rebuild_storage: the record holds {len(data)} bytes, expected {nbytes}")
    device = restore_location(location)
    return storage_from_host(np.frombuffer(data, np.uint8), device)


def restore_location(location: str):
    """The device a saved location string names, with a clear error when its plugin is missing
    or the index does not exist (the message suggests map_location, as torch.load's does)."""
    from . import _registry
    from ._device import device
    try:
        dev = device(location)
    except (RuntimeError, TypeError, ValueError):
        raise RuntimeError(f"don't know how to restore data location {location!r}") from None
    _registry.ensure_loaded()
    if dev.type not in _registry.device_types:
        pkg = _registry.KNOWN_PACKAGES.get(dev.type, f"ember-{dev.type}")
        raise RuntimeError(f"Attempting to deserialize object on a '{dev.type}' device but the plugin for it "
                           f"(pip install {pkg}) is not installed. If you are running on a CPU-only machine, please "
                           f"use ember.load with map_location='cpu' (or map_location=ember.device('cpu')) to map "
                           f"your storages to the CPU.")
    runtime = _registry.device_types[dev.type].runtime
    if runtime.indexed:
        n = runtime.device_count() if runtime.is_available() else 0
        if (dev.index or 0) >= n:
            raise RuntimeError(f"Attempting to deserialize object on {dev.type.upper()} device {dev.index or 0} but "
                               f"ember.{dev.type}.device_count() is {n}. Please use ember.load with map_location to "
                               f"map your storages to an existing device.")
    return _registry.canonical_device(dev)


def reduce_tensor(t: Tensor):
    """``Tensor.__reduce_ex__``: rebuild from the storage (pickled once per pickle), the geometry,
    dtype and requires_grad; a subclass records its class, and Python attributes set on the tensor
    (public names) travel too.
    ``.grad`` is not pickled (as PyTorch); a non-leaf comes back as a leaf with the same
    requires_grad."""
    if t._quantizer is not None:          # a quantized tensor: its integers plus the quantizer
        from ._ops._quantized import reduce_qtensor
        return reduce_qtensor(t)
    cls = type(t)
    state = _user_state(t)
    if cls is Tensor and not state:
        return (_rebuild_tensor, (t._storage, t._offset, t._shape, t._stride, t._dtype, t._requires_grad))
    return (_rebuild_tensor, (t._storage, t._offset, t._shape, t._stride, t._dtype, t._requires_grad,
                              None if cls is Tensor else cls, state or None))


#: what a saved tensor's geometry may hold: at most 64 dims (PyTorch's limit), int64 values
_MAX_DIMS, _INT64 = 64, 2 ** 63


def _ints(x, what):
    if not isinstance(x, (tuple, list)) or len(x) > _MAX_DIMS:      # len() first: never materialise a huge iterable
        raise pickle.UnpicklingError(f"_rebuild_tensor: {what} must be a tuple of at most {_MAX_DIMS} ints, got "
                                     f"{type(x).__name__}")
    x = tuple(x)
    if not all(type(v) is int and -_INT64 <= v < _INT64 for v in x):
        raise pickle.UnpicklingError(f"_rebuild_tensor: {what} must hold int64 values, got {x!r:.200}")
    return x


#: Tensor attributes a saved subclass state may not set: everything the class defines (methods, properties)
def _tensor_attribute(name) -> bool:
    return any(name in vars(k) for k in Tensor.__mro__)


def _rebuild_tensor(storage, storage_offset, size, stride, dtype, requires_grad=False, cls=None, state=None):
    """Inverse of reduce_tensor (also used by ember.load). Validates every argument: the
    geometry must lie inside the storage (a crafted file cannot reach outside it)."""
    if not isinstance(storage, UntypedStorage):
        raise pickle.UnpicklingError(f"_rebuild_tensor: expected a storage, got {type(storage).__name__}")
    if not isinstance(dtype, _dtype_cls):
        raise pickle.UnpicklingError(f"_rebuild_tensor: expected a dtype, got {type(dtype).__name__}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride) or type(storage_offset) is not int or not 0 <= storage_offset < _INT64 or \
            any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise pickle.UnpicklingError(f"_rebuild_tensor: invalid geometry size={size} stride={stride} "
                                     f"offset={storage_offset}")
    if math.prod(size):
        need = (storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) * dtype.itemsize
        if need > storage._nbytes:
            raise pickle.UnpicklingError(f"_rebuild_tensor: sizes {list(size)}, strides {list(stride)}, storage "
                                         f"offset {storage_offset} and itemsize {dtype.itemsize} need a storage of "
                                         f"{need} bytes, but it has {storage._nbytes}")
    if cls is None:
        cls = Tensor
    elif not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise pickle.UnpicklingError(f"_rebuild_tensor: {cls!r} is not a Tensor class")
    t = _new(cls)
    t._storage = storage
    t._shape = size
    t._stride = stride
    t._offset = storage_offset
    t._dtype = dtype
    t._device = storage.device
    t._native = None
    if state:
        if not isinstance(state, dict):
            raise pickle.UnpicklingError("_rebuild_tensor: the state of a Tensor subclass must be a dict")
        bad = [k for k in state if isinstance(k, str) and not k.startswith("_") and _tensor_attribute(k)]
        if bad:                 # t.size = list would survive a round trip and break every caller of t.size()
            raise pickle.UnpicklingError(f"_rebuild_tensor: a saved attribute may not replace Tensor.{bad[0]}")
        t.__dict__.update({k: v for k, v in state.items() if isinstance(k, str) and not k.startswith("_")})
    if requires_grad:
        t.requires_grad_(True)
    return t


# ---------------------------------------------------------------- deepcopy
def deepcopy_storage(storage: UntypedStorage, memo) -> UntypedStorage:
    """A copy of the storage on its own device (a device-side copy, no host round trip)."""
    st = new_storage(storage._nbytes, storage.device)
    if storage._nbytes:
        from .autograd import no_grad
        with no_grad():
            storage_bytes_view(st).copy_(storage_bytes_view(storage))
    memo[id(storage)] = st
    return st


def deepcopy_tensor(t: Tensor, memo) -> Tensor:
    """``Tensor.__deepcopy__``: a leaf with a copied storage (views of one storage copied in one
    deepcopy share the copy), the same geometry, dtype, device and requires_grad, a deep copy of
    ``.grad`` and of a subclass's Python attributes. RuntimeError (PyTorch's message) for a
    non-leaf tensor."""
    import copy
    if t._grad_fn is not None:
        raise RuntimeError(_DEEPCOPY_NONLEAF)
    key = id(t)
    if key in memo:
        return memo[key]
    st = memo.get(id(t._storage))
    if st is None:
        st = deepcopy_storage(t._storage, memo)
    new = _new(type(t))
    new._storage = st
    new._shape, new._stride, new._offset = t._shape, t._stride, t._offset
    new._dtype, new._device = t._dtype, t._device
    new._native = None
    if t._quantizer is not None:          # quantizers are immutable: shared by the copy
        new._quantizer = t._quantizer
    memo[key] = new
    if t._requires_grad:
        new.requires_grad_(True)
    if t._grad is not None:
        new._grad = copy.deepcopy(t._grad, memo)
    state = _user_state(t)
    if state:
        new.__dict__.update(copy.deepcopy(state, memo))
    return new


# ---------------------------------------------------------------- shared memory
def is_shared(t: Tensor) -> bool:
    """Whether the tensor's storage lives in memory other processes can map."""
    return getattr(t._storage, "_shared", None) is not None


def share_memory_(t: Tensor) -> Tensor:
    """Move ``t``'s storage into shared memory in place (``Tensor.share_memory_``); no-op when
    it is already there. Every tensor over the storage sees the new memory."""
    import sys
    storage = t._storage
    if getattr(storage, "_shared", None) is not None:
        return t
    # references to the storage: t._storage, our local, getrefcount's argument. More means other
    # tensors (views) hold it and may cache a native view of the old memory: find them (a heap
    # scan, paid once per shared storage)
    alone = sys.getrefcount(storage) <= 3
    _runtime(storage.device).share_memory(storage)
    SHARED_STORAGES[storage._shared.key] = storage
    t._native = None
    if not alone:
        import gc
        for r in gc.get_referrers(storage):
            if isinstance(r, Tensor):
                r._native = None
    return t
