"""The vdev runtime: device memory, host transfers, random state.

Each device ``vdev:i`` owns an *arena*: one fixed-size host buffer standing in for the
memory of a real accelerator. The runtime hands out pieces of it with a first-fit
free list; a handle is a ``Block`` (device index, byte offset, size). Nothing outside
this file touches the arena directly except the kernels, which view it through
``view(tensor)`` - exactly where a real plugin would pass a device pointer to its kernels.

The core's ``CachingAllocator`` sits on top (``caching_allocator=True``): it rounds
sizes, keeps freed blocks for reuse, and on ``MemoryError`` from ``allocate`` empties
its cache, retries once, and raises ``ember.OutOfMemoryError`` with the numbers.
"""
from __future__ import annotations

import bisect
import collections
import json
import os

import numpy as np

from ember.library import DeviceRuntime, geometry, native_view

DEVICE_COUNT = 2
ALIGN = 64                                       # every block starts on a 64-byte boundary


def arena_bytes() -> int:
    """The size of each device's arena: ``EMBER_VDEV_MEMORY`` bytes (suffixes K, M, G; KiB, MB, ...), default 256
    MiB.
    """
    v = (os.environ.get("EMBER_VDEV_MEMORY", "").strip() or "256M").upper().rstrip("IB")
    return int(float(v.rstrip("KMG") or 0) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(v[-1:], 1))


Block = collections.namedtuple("Block", "index offset nbytes")   # the opaque handle the core stores


class Arena:
    """One device's memory and its raw allocator (first fit over a sorted free list, with coalescing)."""

    def __init__(self, index: int, nbytes: int):
        self.index = index
        self.size = nbytes
        self.buf = np.zeros(nbytes, np.uint8)    # the OS maps pages lazily: untouched memory costs nothing
        self.free_list = [(0, nbytes)]           # sorted, non-adjacent (offset, size) holes
        self.used = 0

    def allocate(self, nbytes: int) -> Block:
        """A Block of at least ``nbytes`` (rounded up to 64-byte multiples, at least 64) from the first hole that
        fits. MemoryError "vdev:i arena exhausted: ..." when none does (the contract the core's allocator relies
        on).
        """
        need = max(ALIGN, (nbytes + ALIGN - 1) // ALIGN * ALIGN)
        for k, (off, size) in enumerate(self.free_list):
            if size >= need:
                if size == need:
                    del self.free_list[k]
                else:
                    self.free_list[k] = (off + need, size - need)
                self.used += need
                return Block(self.index, off, need)
        # MemoryError is the contract: the core's allocator frees its cache, retries, then raises OutOfMemoryError
        largest = max((s for _, s in self.free_list), default=0)
        raise MemoryError(f"vdev:{self.index} arena exhausted: {need} bytes requested, {self.size - self.used} "
                          f"free of {self.size} (largest hole {largest}); set EMBER_VDEV_MEMORY for a bigger arena")

    def free(self, block: Block) -> None:
        """Return ``block`` to the free list, merging it with adjacent holes."""
        fl = self.free_list
        k = bisect.bisect(fl, (block.offset, 0))
        off, size = block.offset, block.nbytes
        if k < len(fl) and fl[k][0] == off + size:          # merge with the hole after
            size += fl.pop(k)[1]
        if k > 0 and fl[k - 1][0] + fl[k - 1][1] == off:    # merge with the hole before
            off, size = fl[k - 1][0], fl[k - 1][1] + size
            k -= 1
            fl.pop(k)
        fl.insert(k, (off, size))
        self.used -= block.nbytes


class VdevGeneratorState:
    """Per-device random state: a numpy Philox (counter-based, as GPU generators are) generator.

    The state round-trips as JSON bytes (never pickle): Philox's counter, key and buffer
    are uint64 arrays, written as lists."""

    def __init__(self, seed: int):
        self.rng = np.random.Generator(np.random.Philox(seed))

    def get_state(self) -> bytes:
        """The Philox bit generator's state as UTF-8 JSON bytes (arrays as lists)."""
        return json.dumps(self.rng.bit_generator.state, default=lambda a: a.tolist()).encode()

    def set_state(self, raw: bytes) -> None:
        """Restore a state from ``get_state``'s bytes; RuntimeError "set_state: not a vdev generator state (...)"
        for anything else.
        """
        def arrays(d):                          # json calls it on every dict, innermost first
            return {k: np.array(v, np.uint64) if isinstance(v, list) else v for k, v in d.items()}
        try:
            self.rng.bit_generator.state = json.loads(bytes(raw).decode(), object_hook=arrays)
        except (ValueError, TypeError, KeyError) as e:
            raise RuntimeError(f"set_state: not a vdev generator state ({e})") from None


class VdevRuntime(DeviceRuntime):
    """Two simulated devices whose memory is a host arena each. Everything runs synchronously."""

    name = "vdev"
    indexed = True
    host_memory = False          # tensor.numpy() refuses, as for cuda: memory is "on the device"
    services = frozenset()       # no streams, no pinned memory: declare only what works

    def __init__(self):
        self._arenas = {}        # created on first use, never at registration
        self.transfers = {"host_to_device": 0, "device_to_host": 0, "host_to_device_bytes": 0,
                          "device_to_host_bytes": 0, "peer": 0, "peer_bytes": 0}

    def arena(self, index: int) -> Arena:
        """The Arena of device ``index``, created on first use; RuntimeError "Invalid device ordinal vdev:i: there
        are 2 vdev devices" outside 0..1.
        """
        if index not in self._arenas:
            if not 0 <= index < DEVICE_COUNT:
                raise RuntimeError(f"Invalid device ordinal vdev:{index}: there are {DEVICE_COUNT} vdev devices")
            self._arenas[index] = Arena(index, arena_bytes())
        return self._arenas[index]

    # -- discovery
    def device_count(self):
        """DeviceRuntime.device_count: always 2 (DEVICE_COUNT)."""
        return DEVICE_COUNT

    def get_device_name(self, index):
        """DeviceRuntime.get_device_name: "ember virtual device i (N MiB host arena)"."""
        return f"ember virtual device {index} ({arena_bytes() >> 20} MiB host arena)"

    def total_memory(self, index):
        """Bytes of device ``index``'s memory (the arena size, EMBER_VDEV_MEMORY); what
        ember.memory.set_per_process_memory_fraction reads.
        """
        return arena_bytes()

    def synchronize(self, index):
        """Every vdev kernel has finished when it returns: nothing to wait for."""

    # -- raw memory (the core's CachingAllocator calls these)
    def allocate(self, nbytes, device_index):
        """DeviceRuntime.allocate: a Block of ``nbytes`` in device ``device_index``'s arena; MemoryError when it is
        exhausted (the core then empties its cache and retries).
        """
        return self.arena(device_index).allocate(nbytes)

    def free(self, handle):
        """DeviceRuntime.free: return the Block ``handle`` to its arena."""
        self.arena(handle.index).free(handle)

    def data_ptr(self, handle):
        """DeviceRuntime.data_ptr: the host address of the block inside its arena buffer."""
        return self.arena(handle.index).buf.ctypes.data + handle.offset

    # -- host transfers (counted, so that tests and benchmarks can see every crossing)
    def to_numpy(self, tensor):
        """DeviceRuntime.to_numpy: a numpy copy (never a view: host_memory is False) of ``tensor``'s values with
        its shape; counted in ``transfers``.
        """
        a = view(tensor).copy()
        self.transfers["device_to_host"] += 1
        self.transfers["device_to_host_bytes"] += a.nbytes
        return a

    def from_numpy(self, tensor, array):
        """DeviceRuntime.from_numpy: write ``array`` (same shape; C-style cast) into the strided ``tensor``;
        counted in ``transfers``.
        """
        v = view(tensor)
        np.copyto(v, array, casting="unsafe")
        self.transfers["host_to_device"] += 1
        self.transfers["host_to_device_bytes"] += v.nbytes

    def copy_across(self, dst, src, non_blocking=False):
        """DeviceRuntime.copy_across: a copy between vdev:0 and vdev:1 goes arena to arena (broadcast, strides, C-style
        cast), counted as "peer" in ``transfers``; copies to or from other device types decline (the core uses
        the host).
        """
        if dst.device.type != "vdev" or src.device.type != "vdev":
            return False
        np.copyto(view(dst), view(src), casting="unsafe")
        self.transfers["peer"] += 1
        self.transfers["peer_bytes"] += dst.numel() * dst.element_size()
        return True

    # -- random numbers
    def new_generator_state(self, seed, device_index):
        """DeviceRuntime.new_generator_state: a VdevGeneratorState (numpy Philox) seeded with ``seed``."""
        return VdevGeneratorState(seed)

    # -- the device module: ember.vdev.transfer_stats() / reset_transfer_stats()
    def module_extras(self):
        """DeviceRuntime.module_extras: adds ``ember.vdev.transfer_stats()`` and
        ``ember.vdev.reset_transfer_stats()``.
        """
        def transfer_stats() -> dict:
            """Counts and bytes of host <-> device and vdev <-> vdev (peer) copies since the last reset."""
            return dict(self.transfers)

        def reset_transfer_stats() -> None:
            self.transfers.update(dict.fromkeys(self.transfers, 0))
        return {"transfer_stats": transfer_stats, "reset_transfer_stats": reset_transfer_stats}


RUNTIME = VdevRuntime()


def arena_view(t) -> np.ndarray:
    """The numpy array of a vdev tensor, a view into its device's arena (shares memory).

    This is the one place where the tensor's layout (shape, strides in elements, storage
    offset) meets the memory: a real plugin passes the same numbers to its kernels.
    """
    g = geometry(t)
    a = _VIEWS.get(g)
    if a is None:
        block, shape, stride, offset, dtype = g
        if 0 in shape:                   # nothing to address; numpy refuses some empty views
            return np.empty(shape, dtype.numpy_dtype)
        isz = dtype.itemsize
        a = np.ndarray(shape, dtype.numpy_dtype, RUNTIME._arenas[block.index].buf, block.offset + offset * isz,
                       tuple([s * isz for s in stride]))     # (the block exists, so its arena does)
        if len(_VIEWS) >= 4096:
            _VIEWS.clear()
        _VIEWS[g] = a
    return a


# arena views by geometry: the caching allocator hands the same blocks out again, so each op's new output
# finds its view here (a Block names a fixed range of a fixed arena: a view never goes stale)
_VIEWS: dict = {}


def view(t) -> np.ndarray:
    """``arena_view(t)``, cached on the tensor (``ember.library.native_view``)."""
    return native_view(t, arena_view)
