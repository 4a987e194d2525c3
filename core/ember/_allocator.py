"""Storage and the core's allocators, with one fixed statistics schema for every device.

A device plugin supplies a *raw* allocator (``allocate(nbytes, device_index) -> handle``,
``free(handle)``, ``data_ptr(handle) -> int``); the core wraps it in

- ``CachingAllocator`` - rounds sizes into bins, reuses freed blocks per (device index,
  stream), frees its cache and retries once on out-of-memory, honours a per-device
  limit; for devices whose raw allocation is expensive (cuda, opencl, a vendor's), or
- ``DirectAllocator`` - no cache, same statistics; for the host, where numpy's own
  allocator is faster than any cache written in Python (benchmarks/bench_allocator.py).

Statistics keys follow torch.cuda.memory_stats ("allocated_bytes.all.current", ...).
"""
from __future__ import annotations

__all__ = ["UntypedStorage", "OutOfMemoryError", "CachingAllocator", "DirectAllocator", "STAT_KEYS"]

_new = object.__new__

STAT_KEYS = (
    "allocated_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.allocated",
    "allocated_bytes.all.freed", "reserved_bytes.all.current", "reserved_bytes.all.peak",
    "allocation.all.current", "allocation.all.peak", "allocation.all.allocated", "allocation.all.freed",
    "segment.all.current", "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
)


class OutOfMemoryError(RuntimeError):
    """Raised when a device cannot satisfy an allocation (matches torch.OutOfMemoryError)."""


def format_bytes(n: int) -> str:
    """``n`` bytes as text with two decimals in GiB / MiB / KiB, or 'N bytes' below 1 KiB."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


class UntypedStorage:
    """An untyped byte buffer on one device (matches torch.UntypedStorage).

    ``nbytes()`` is the requested size in bytes, ``device`` the device, ``data_ptr()`` the
    address of byte 0. The handle is opaque to the core: whatever the device's raw
    allocator returned (a numpy array on cpu, a ``cl.Buffer`` on opencl, ...).
    Several tensors (views) may share one storage.
    """

    __slots__ = ("_handle", "_nbytes", "_size", "device", "_allocator", "_stream", "_shared", "__weakref__")

    def __del__(self):
        alloc = self._allocator
        if alloc is not None:
            if alloc.native is not None and alloc._free_raw is None:   # host memory: numpy frees it
                alloc.allocated -= self._size
                alloc.count -= 1
            else:
                alloc.release(self)

    def nbytes(self) -> int:
        """Size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """Size in bytes (an untyped storage counts bytes)."""
        return self._nbytes

    def data_ptr(self) -> int:
        """Device address of the first byte."""
        return self._allocator.raw.data_ptr(self._handle) if self._allocator else 0

    @property
    def handle(self):
        """The raw allocator's handle (numpy array, cl.Buffer, cupy memory, ...)."""
        return self._handle

    def __len__(self):
        return self._nbytes

    def __repr__(self):
        return f"ember.UntypedStorage(nbytes={self._nbytes}, device='{self.device}')"

    def __reduce_ex__(self, protocol):
        # its bytes (through the host) and its device; see ember._serialization_support
        from . import _serialization_support as S
        return S.reduce_storage(self, protocol)

    def __deepcopy__(self, memo):
        from . import _serialization_support as S
        return S.deepcopy_storage(self, memo)

    def is_shared(self) -> bool:
        """Whether the bytes live in shared memory (Tensor.share_memory_, ember.multiprocessing)."""
        return getattr(self, "_shared", None) is not None


class _StatsMixin:
    """The fixed statistics schema shared by every allocator."""

    native = None  # see DirectAllocator

    def _init_stats(self):
        self._stats = dict.fromkeys(STAT_KEYS, 0)   # the cold keys (reserved, segments, retries, OOMs)
        # the hot keys, plain attributes: every op's output passes malloc and release
        self.allocated = self.peak = self.count = self.peak_count = 0
        self.total_allocated = self.total_count = 0
        self.limit = None  # bytes, from set_per_process_memory_fraction

    @property
    def stats(self) -> dict:
        """The memory_stats dict (PyTorch's keys, ``STAT_KEYS``), assembled on demand."""
        s = dict(self._stats)
        s["allocated_bytes.all.current"] = self.allocated
        s["allocated_bytes.all.peak"] = self.peak
        s["allocated_bytes.all.allocated"] = self.total_allocated
        s["allocated_bytes.all.freed"] = self.total_allocated - self.allocated
        s["allocation.all.current"] = self.count
        s["allocation.all.peak"] = self.peak_count
        s["allocation.all.allocated"] = self.total_count
        s["allocation.all.freed"] = self.total_count - self.count
        return s

    def _reserve(self, nbytes):
        s = self._stats
        cur = s["reserved_bytes.all.current"] + nbytes
        s["reserved_bytes.all.current"] = cur
        s["segment.all.current"] += 1
        s["num_device_alloc"] += 1
        if cur > s["reserved_bytes.all.peak"]:
            s["reserved_bytes.all.peak"] = cur

    def _unreserve(self, nbytes):
        s = self._stats
        s["reserved_bytes.all.current"] -= nbytes
        s["segment.all.current"] -= 1
        s["num_device_free"] += 1

    def reset_peak_memory_stats(self):
        """Set the peak statistics (bytes allocated, bytes reserved, allocations; PyTorch's
        ``*.all.peak`` keys) to their current values (matches torch.cuda.reset_peak_memory_stats)."""
        self.peak = self.allocated
        self.peak_count = self.count
        s = self._stats
        s["reserved_bytes.all.peak"] = s["reserved_bytes.all.current"]

    def _oom(self, nbytes, cause=None):
        self._stats["num_ooms"] += 1
        s = self.stats
        limit = f" of which the per-process limit is {format_bytes(self.limit)};" if self.limit is not None else ""
        msg = (f"{self.device_label}: tried to allocate {format_bytes(nbytes)}.{limit} "
               f"{format_bytes(s['allocated_bytes.all.current'])} is allocated by ember, and "
               f"{format_bytes(s['reserved_bytes.all.current'])} is reserved by ember.")
        if cause is not None:
            msg += f" The device reported: {cause}"
        return OutOfMemoryError("Allocation failed on " + msg)


class DirectAllocator(_StatsMixin):
    """No cache: every storage gets a fresh raw allocation, freed when the storage dies.

    Used for host memory, where numpy's allocator (with its own small-block cache) is
    faster than a cache kept in Python (benchmarks/bench_allocator.py). Reports the same
    statistics schema; reserved equals allocated. The hot counters are plain attributes
    (``stats`` assembles the fixed-schema dict on demand).

    If the raw allocator has ``native_empty`` - a callable ``(shape, numpy_dtype) -> array``
    such as ``numpy.empty`` - the allocation is a typed native array that serves as both
    the storage handle and the tensor's native view, saving a view construction per op. A runtime whose memory is freed by garbage collection sets
    ``frees_by_gc = True`` and is not called on release.
    """

    def __init__(self, raw, device, device_label=None):
        self.raw = raw
        self.device = device
        self.device_label = device_label or str(device)
        self.limit = None
        self.native = getattr(raw, "native_empty", None)
        self._free_raw = None if getattr(raw, "frees_by_gc", False) else raw.free
        self.allocated = self.peak = self.count = self.peak_count = 0
        self.total_allocated = self.total_count = 0
        self.ooms = 0

    @property
    def stats(self):
        """The memory_stats dict (the caching allocator's keys): allocated and reserved are the same here; peaks,
        counts and OOMs tracked.
        """
        s = dict.fromkeys(STAT_KEYS, 0)
        s["allocated_bytes.all.current"] = s["reserved_bytes.all.current"] = self.allocated
        s["allocated_bytes.all.peak"] = s["reserved_bytes.all.peak"] = self.peak
        s["allocation.all.current"] = s["segment.all.current"] = self.count
        s["allocation.all.peak"] = self.peak_count
        s["num_ooms"] = self.ooms
        return s

    def reset_peak_memory_stats(self):
        """Reset the byte and allocation-count peaks to the current values."""
        self.peak = self.allocated
        self.peak_count = self.count


    def _account(self, nbytes):
        if self.limit is not None and self.allocated + nbytes > self.limit:
            self.ooms += 1
            raise self._oom_direct(nbytes)
        cur = self.allocated = self.allocated + nbytes
        if cur > self.peak:
            self.peak = cur
        n = self.count = self.count + 1
        if n > self.peak_count:
            self.peak_count = n

    def _oom_direct(self, nbytes, cause=None):
        limit = f" of which the per-process limit is {format_bytes(self.limit)};" if self.limit is not None else ""
        msg = (f"Allocation failed on {self.device_label}: tried to allocate {format_bytes(nbytes)}.{limit} "
               f"{format_bytes(self.allocated)} is allocated by ember.")
        if cause is not None:
            msg += f" The device reported: {cause}"
        return OutOfMemoryError(msg)

    def malloc(self, nbytes: int, stream=None) -> UntypedStorage:
        """A new storage of ``nbytes`` bytes (OutOfMemoryError when the device has none left)."""
        self._account(nbytes)
        try:
            handle = self.raw.allocate(nbytes, self.device.index or 0)
        except MemoryError as e:
            self.allocated -= nbytes
            self.count -= 1
            self.ooms += 1
            raise self._oom_direct(nbytes, e) from None
        st = _new(UntypedStorage)
        st._handle = handle
        st._nbytes = st._size = nbytes
        st.device = self.device
        st._allocator = self
        return st

    def release(self, st: UntypedStorage) -> None:
        """Take back a dead storage's memory (called by UntypedStorage.__del__)."""
        self.allocated -= st._size
        self.count -= 1
        if self._free_raw is not None:
            self._free_raw(st._handle)

    def empty_cache(self):
        """Nothing is cached; present so every allocator has the same interface."""


class _Segment:
    """A raw allocation of the small pool and the blocks carved from it (by id of their handle)."""

    __slots__ = ("handle", "used", "blocks")

    def __init__(self, handle):
        self.handle, self.used, self.blocks = handle, 0, {}


class CachingAllocator(_StatsMixin):
    """Bins sizes, keeps freed blocks for reuse per stream; the core's generic device allocator.

    Sizes under 1 MiB round up to a multiple of 512 bytes, larger ones to a multiple of
    2 MiB; a freed block is reused only for a request of the same rounded size on the
    same stream (no block splitting, unlike PyTorch's CUDA allocator). On out-of-memory
    (the raw allocator raising MemoryError, or the per-process limit) the cache is
    freed and the allocation retried once before ``OutOfMemoryError`` is raised.

    Small pool: when the device's runtime offers ``sub_allocation(handle, offset, nbytes)``
    (a handle for a byte range of a raw allocation, e.g. an OpenCL sub-buffer), small
    blocks are carved one after another from 2 MiB segments, as PyTorch's CUDA allocator
    does, instead of one raw allocation each. A training loop whose second iteration needs a
    few more small blocks than its first (state created late in the first, like an
    optimizer's moments) then takes them from the segment, not from the device. A segment
    goes back to the device in ``empty_cache`` once all its blocks are idle.
    """

    SEGMENT = 2 << 20

    SMALL = 1 << 20
    SMALL_ROUND = 512
    LARGE_ROUND = 2 << 20

    def __init__(self, raw, device, device_label=None):
        self.raw = raw
        self.device = device
        self.device_label = device_label or str(device)
        self._free = {}          # (stream, rounded size) -> [handle, ...]
        self._init_stats()
        self._sub = getattr(raw, "sub_allocation", None)   # small pool when the runtime can sub-allocate
        # streams (a runtime with current_stream_key): blocks are keyed by the stream current at
        # malloc; record_stream defers a dead block's reuse until events on the other streams complete
        self._stream_of = getattr(raw, "current_stream_key", None)
        self._recorded = {}      # id(storage) -> {stream key, ...} from record_stream
        self._pending = []       # [([event, ...], (stream, size), handle)] freed, waiting on events
        self._segments = []      # [_Segment, ...] of the small pool
        self._tail = {}          # stream -> the segment new small blocks are carved from

    @classmethod
    def round_size(cls, nbytes: int) -> int:
        """The bin size an allocation of ``nbytes`` is rounded up to."""
        r = cls.SMALL_ROUND if nbytes < cls.SMALL else cls.LARGE_ROUND
        return max(r, (nbytes + r - 1) // r * r)

    def malloc(self, nbytes: int, stream=None) -> UntypedStorage:
        """A new storage of ``nbytes`` bytes (OutOfMemoryError when the device has none left)."""
        if stream is None and self._stream_of is not None:
            stream = self._stream_of(self.device.index or 0)
        if nbytes < 1048576:                  # round_size, inlined: this is every op's output
            size = (nbytes + 511) & -512 or 512
        else:
            size = self.round_size(nbytes)
        pool = self._free.get((stream, size))
        if not pool and self._pending:
            self._process_pending()
            pool = self._free.get((stream, size))
        if pool:
            handle = pool.pop()
        elif self._sub is not None and size < self.SMALL:
            handle = self._carve(size, stream)
        else:
            handle = self._raw_alloc(size)
        st = _new(UntypedStorage)
        st._handle = handle
        st._nbytes = nbytes
        st._size = size
        st.device = self.device
        st._allocator = self
        st._stream = stream
        cur = self.allocated = self.allocated + size      # the statistics, inline: every op's output
        self.total_allocated += size
        if cur > self.peak:
            self.peak = cur
        n = self.count = self.count + 1
        self.total_count += 1
        if n > self.peak_count:
            self.peak_count = n
        return st

    def _raw_alloc(self, size):
        for attempt in (0, 1):
            over = self.limit is not None and self._stats["reserved_bytes.all.current"] + size > self.limit
            if not over:
                try:
                    handle = self.raw.allocate(size, self.device.index or 0)
                    self._reserve(size)
                    return handle
                except MemoryError as e:
                    cause = e
            else:
                cause = None
            if attempt == 0:
                self._stats["num_alloc_retries"] += 1
                self.empty_cache()
        raise self._oom(size, cause)

    def _carve(self, size, stream):
        """A small block from the stream's current segment (a new segment when it is full)."""
        seg = self._tail.get(stream)
        if seg is None or seg.used + size > self.SEGMENT:
            seg = _Segment(self._raw_alloc(self.SEGMENT))
            self._segments.append(seg)
            self._tail[stream] = seg
        handle = self._sub(seg.handle, seg.used, size)
        seg.used += size
        seg.blocks[id(handle)] = handle
        return handle

    def release(self, st: UntypedStorage) -> None:
        """Take back a dead storage's memory (called by UntypedStorage.__del__)."""
        self.allocated -= st._size
        self.count -= 1
        if self._recorded:
            uses = self._recorded.pop(id(st), None)
            if uses:
                idx = self.device.index or 0
                events = [self.raw.record_free_event(s, idx) for s in uses]
                self._pending.append((events, (st._stream, st._size), st._handle))
                return
        key = (st._stream, st._size)
        pool = self._free.get(key)
        if pool is None:
            pool = self._free[key] = []
        pool.append(st._handle)

    def record_stream(self, st: UntypedStorage, stream) -> None:
        """``st`` is also used by work on stream ``stream`` (a key as the runtime's
        ``current_stream_key`` gives; Tensor.record_stream). When ``st`` dies, its block returns to
        its own stream's pool only once the work queued on ``stream`` by then has finished: the
        runtime's ``record_free_event(stream, device_index)`` marks that point and
        ``event_done(event, wait)`` tells when it is reached (as PyTorch's CUDA caching allocator)."""
        if stream != st._stream:
            self._recorded.setdefault(id(st), set()).add(stream)

    def _process_pending(self, wait=False):
        """Move blocks whose recorded streams have passed their free events back to the pools
        (``wait=True``: wait for the events first)."""
        done = self.raw.event_done
        keep = []
        for events, key, handle in self._pending:
            if all(done(e, wait) for e in events):
                self._free.setdefault(key, []).append(handle)
            else:
                keep.append((events, key, handle))
        self._pending = keep

    def empty_cache(self):
        """Return every cached (unused) block to the device; small-pool segments go back
        once every block carved from them is idle."""
        if self._pending:
            self._process_pending(wait=True)
        carved = {}
        for seg in self._segments:
            carved.update(dict.fromkeys(seg.blocks, seg))
        idle = {}
        for key, handles in self._free.items():
            keep = []
            for h in handles:
                seg = carved.get(id(h))
                if seg is None:
                    self.raw.free(h)
                    self._unreserve(key[1])
                else:
                    idle.setdefault(id(seg), []).append(h)
                    keep.append(h)
            self._free[key] = keep
        for seg in list(self._segments):
            if len(idle.get(id(seg), ())) == len(seg.blocks):     # nothing carved from it is alive
                gone = set(seg.blocks)
                for key in self._free:
                    self._free[key] = [h for h in self._free[key] if id(h) not in gone]
                self._segments.remove(seg)
                self._tail = {k: v for k, v in self._tail.items() if v is not seg}
                self.raw.free(seg.handle)
                self._unreserve(self.SEGMENT)
        self._free = {k: v for k, v in self._free.items() if v}
