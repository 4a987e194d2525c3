"""Reducers that send tensors between processes through shared memory (registered on
``multiprocessing.reduction.ForkingPickler``, which Queues, Pipes and spawned Process
arguments pickle with).

Sending a tensor moves its storage into shared memory in place (``Tensor.share_memory_``: the
device runtime's ``share_memory``), then sends a duplicate of the memory's file descriptor
(``multiprocessing.reduction.DupFd``: SCM_RIGHTS through the resource sharer for queues and
pipes, ``pass_fds`` for spawned processes). The receiver maps the same memory - no copy - so a
write on either side is seen by the other. Storages are cached per process by the memory's
key, so a storage sent twice (or sent back) is one storage object again, and views of one
storage stay views of one storage.

Tensors on a device whose runtime cannot share memory travel by copy (their bytes, through the
host, as with ``pickle``). A non-leaf tensor that requires grad is refused (PyTorch's message):
autograd graphs do not cross processes.
"""
from __future__ import annotations

import os
from multiprocessing.reduction import ForkingPickler

from .._allocator import UntypedStorage
from .._tensor import Tensor
from ..library import DeviceRuntime
from .. import _serialization_support as S

__all__ = ["init_reductions", "reduce_tensor", "reduce_storage", "rebuild_storage_fd"]

_new = object.__new__

_shared_cache = S.SHARED_STORAGES      # the memory's key -> the storage over it in this process

_NONLEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")


def _can_share(runtime) -> bool:
    return type(runtime).share_memory is not DeviceRuntime.share_memory and hasattr(os, "fstat")


class _SharedAllocator:
    """Allocator stand-in for storages mapped from another process: the mapping is freed with the
    handle (numpy), the fd with the segment; nothing to account here."""

    native = None

    def __init__(self, raw):
        self.raw = raw

    def release(self, storage):
        """Nothing to give back: the mapping goes with the storage's handle, the descriptor with its segment."""
        pass


_allocators: dict = {}


def reduce_tensor(t: Tensor):
    """ForkingPickler's reducer for Tensor: shares the storage (in place) and sends the geometry."""
    if t._grad_fn is not None:
        raise RuntimeError(_NONLEAF)
    if not t.is_shared() and _can_share(S._runtime(t._device)):
        S.share_memory_(t)
    return (S._rebuild_tensor, (t._storage, t._offset, t._shape, t._stride, t._dtype, t._requires_grad))


def reduce_subclass(t: Tensor):
    """The reducer for a Tensor subclass that does not define its own ``__reduce_ex__``."""
    if t._grad_fn is not None:
        raise RuntimeError(_NONLEAF)
    if not t.is_shared() and _can_share(S._runtime(t._device)):
        S.share_memory_(t)
    return S.reduce_tensor(t)


def reduce_storage(storage: UntypedStorage):
    """ForkingPickler's reducer for UntypedStorage: a file descriptor of its shared memory."""
    from multiprocessing.reduction import DupFd
    runtime = S._runtime(storage.device)
    if not _can_share(runtime):
        return S.reduce_storage(storage, 2)      # its bytes: sent by copy
    seg = getattr(storage, "_shared", None)
    if seg is None:
        S.share_memory_(S.storage_bytes_view(storage))   # a bare storage: find its tensors by heap scan
        seg = storage._shared
    _shared_cache.setdefault(seg.key, storage)
    return (rebuild_storage_fd, (DupFd(seg.fd), storage._nbytes, str(storage.device), seg.key))


def rebuild_storage_fd(dupfd, nbytes, location, key):
    """The receiving side: the cached storage over that memory, else a new one mapping it."""
    try:
        fd = dupfd.detach()
    except RuntimeError as e:
        # multiprocessing's recvfds: "received 0 items of ancdata" when the descriptor could not be
        # received because this process is at its open-file limit
        if "ancdata" not in str(e):
            raise
        from ..library import out_of_descriptors_error
        raise out_of_descriptors_error("receiving a tensor in shared memory from another process") from None
    except (OSError, EOFError) as e:
        raise RuntimeError(f"ember.multiprocessing: could not receive the shared memory of a tensor ({e!r}): the "
                           "sending process probably exited before the tensor was received. Keep a producer alive "
                           "until its consumers have received its tensors (as with PyTorch's 'file_descriptor' "
                           "sharing strategy).") from e
    st = _shared_cache.get(key)
    if st is not None:
        os.close(fd)
        return st
    dev = S.restore_location(location)
    runtime = S._runtime(dev)
    try:
        handle, shared = runtime.storage_from_shared(fd, nbytes, dev.index or 0)
    except BaseException:
        os.close(fd)
        raise
    alloc = _allocators.get(dev)
    if alloc is None:
        alloc = _allocators[dev] = _SharedAllocator(runtime)
    st = _new(UntypedStorage)
    st._handle = handle
    st._nbytes = st._size = nbytes
    st.device = dev
    st._allocator = alloc
    st._stream = None
    st._shared = shared
    _shared_cache[key] = st
    return st


def _register_subclass(cls):
    if cls.__reduce_ex__ is Tensor.__reduce_ex__:       # a subclass with its own reduce keeps it
        ForkingPickler.register(cls, reduce_subclass)


_done = False


def init_reductions() -> None:
    """Register the reducers on ForkingPickler (idempotent; done when ember.multiprocessing is imported)."""
    global _done
    if _done:
        return
    _done = True
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(UntypedStorage, reduce_storage)
    for cls in S.TENSOR_CLASSES[1:]:
        _register_subclass(cls)
    S._SUBCLASS_HOOKS.append(_register_subclass)
