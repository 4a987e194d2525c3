"""The ember-cuda runtime: devices, raw device memory, host transfers, pinned memory, streams,
the Philox generator state and DLPack (``ember.library.DeviceRuntime`` for device type "cuda").

Discovery is lazy and never raises: cupy is imported and ``cudaGetDeviceCount`` called on the
first question about devices (``ember info``, ``ember.cuda.is_available()``, a tensor on "cuda").
Without cupy, without a driver or without a GPU, ``device_count()`` is 0, ``is_available()`` is
False and ``ember.cuda.unavailable_reason()`` says why (the CUDA error text or the pip command).

Memory: ``allocate`` calls ``cudaMalloc`` (``cupy.cuda.runtime.malloc``) - no cupy memory pool
underneath - and returns a ``DeviceBlock``; the core's ``CachingAllocator`` caches on top, per
(stream, size), and carves blocks under 1 MiB out of 2 MiB segments (``sub_allocation``).
``cudaErrorMemoryAllocation`` becomes ``MemoryError`` (the core then empties its cache, retries
once, and raises ``ember.OutOfMemoryError``). The allocator asks ``current_stream_key`` for the
stream of an allocation; ``record_free_event`` / ``event_done`` let it hold back a block that a
``Tensor.record_stream`` stream may still use.

Status: written against cupy's documentation; no GPU was available when it was written. What
was checked without one, and how, is in docs/cuda.md.
"""
from __future__ import annotations

import threading

import numpy as np
from ember.library import DeviceRuntime

from ._philox import PhiloxState

_INSTALL = "pip install 'ember-cuda[cuda12]' (or [cuda13] for a CUDA 13 driver)"


class DeviceBlock:
    """A raw allocation (the storage handle the core keeps): device pointer, size, device index.
    A block carved from a segment by ``sub_allocation`` has ``parent`` set and is freed with it."""

    __slots__ = ("__weakref__", "_mem", "device", "nbytes", "parent", "ptr")

    def __init__(self, ptr, nbytes, device, parent=None):
        self.ptr, self.nbytes, self.device, self.parent = int(ptr), int(nbytes), int(device), parent
        self._mem = None

    def unowned(self):
        """A ``cupy.cuda.UnownedMemory`` over the block (made once; the block keeps it)."""
        m = self._mem
        if m is None:
            import cupy
            m = self._mem = cupy.cuda.memory.UnownedMemory(self.ptr, self.nbytes, self, self.device)
        return m

    def __repr__(self):
        return f"DeviceBlock(ptr={self.ptr:#x}, nbytes={self.nbytes}, device={self.device})"


class _Foreign:
    """Allocator stand-in for storages over memory ember did not allocate (DLPack imports):
    the handle keeps the producer's array alive; nothing is freed or counted."""

    native = None
    _free_raw = None

    def __init__(self, raw):
        self.raw = raw

    def release(self, storage):
        pass


class ForeignBlock(DeviceBlock):
    """A block over another library's device memory (``owner`` keeps it alive)."""

    __slots__ = ("owner",)


class CudaRuntime(DeviceRuntime):
    """Every CUDA device cupy sees: ``cuda:0`` ... ``cuda:{n-1}``."""

    name = "cuda"
    indexed = True
    host_memory = False
    services = frozenset({"streams", "events", "pinned_memory"})
    asynchronous = True          # kernels are launched on the current stream and return at once
    #: a usable GPU is the current accelerator (pin_memory, DataLoader) even beside opencl / vdev
    accelerator_priority = 10

    def __init__(self):
        self._count = None
        self._reason = None
        self._backend = None
        self._tls = threading.local()
        self._pending_copies = []        # (cupy event, host object kept alive until the copy finished)

    @property
    def dlpack_device_types(self):
        """DLPack device codes this runtime imports: kDLCUDA (2) when a device is usable, else none
        (ember.from_dlpack then reports that no installed plugin can import the producer)."""
        return (2,) if self.is_available() else ()

    # ------------------------------------------------------------------ discovery
    def _discover(self):
        if self._count is not None:
            return
        try:
            import cupy
        except Exception as e:  # noqa: BLE001 - a broken or missing cupy must not break ember
            self._count, self._reason = 0, f"cupy cannot be imported ({type(e).__name__}: {e}); {_INSTALL}"
            return
        try:
            n = int(cupy.cuda.runtime.getDeviceCount())
        except Exception as e:  # noqa: BLE001 - CUDARuntimeError: no driver, insufficient driver, no device
            self._count, self._reason = 0, f"CUDA is not usable: {e}"
            return
        self._count = n
        self._reason = None if n else "cudaGetDeviceCount reports no CUDA device"

    def unavailable_reason(self):
        """Why no CUDA device can be used (None when one can)."""
        self._discover()
        return self._reason

    def is_available(self):
        """DeviceRuntime.is_available: whether cupy reports at least one CUDA device (False on any error)."""
        try:
            self._discover()
            return self._count > 0
        except Exception:  # noqa: BLE001 - must not raise
            return False

    def device_count(self):
        """DeviceRuntime.device_count: cudaGetDeviceCount through cupy (0 when CUDA or cupy is missing)."""
        self._discover()
        return self._count

    def require(self):
        """RuntimeError naming the reason when no CUDA device can be used."""
        if not self.is_available():
            raise RuntimeError(f"device type 'cuda' is not available: {self.unavailable_reason()}")

    def _check_index(self, index):
        n = self.device_count()
        if n == 0:
            self.require()
        if not 0 <= index < n:
            why = f" ({self._reason})" if n == 0 and self._reason else ""
            raise RuntimeError(f"Invalid device ordinal cuda:{index}: there {'is' if n == 1 else 'are'} {n} cuda "
                               f"device{'' if n == 1 else 's'}{why}")

    @property
    def backend(self):
        """The cupy array backend (created on first use)."""
        b = self._backend
        if b is None:
            self.require()
            from ._backend import CupyBackend
            b = self._backend = CupyBackend()
        return b

    # ------------------------------------------------------------------ current device
    def current_device(self):
        """The current device's index (RuntimeError with the reason when there is no device, as
        torch.cuda.current_device raises on a machine without CUDA)."""
        if not self._count:
            self.require()
        return getattr(self._tls, "device", 0)

    def set_device(self, index):
        """DeviceRuntime.set_device: make cupy's device ``index`` current for this thread; RuntimeError 'Invalid
        device ordinal cuda:i ...' for a bad index.
        """
        self._check_index(index)
        import cupy
        cupy.cuda.Device(index).use()
        self._tls.device = index

    def get_device_name(self, index):
        """DeviceRuntime.get_device_name: the device's name from cudaGetDeviceProperties."""
        return self.properties(index)["name"]

    def properties(self, index) -> dict:
        """cudaGetDeviceProperties of device ``index`` as a dict (name decoded to str); RuntimeError for a bad index.
        """
        self._check_index(index)
        import cupy
        p = cupy.cuda.runtime.getDeviceProperties(index)
        name = p["name"]
        return dict(p, name=name.decode() if isinstance(name, bytes) else str(name))

    def total_memory(self, index):
        """The device's totalGlobalMem in bytes."""
        return int(self.properties(index)["totalGlobalMem"])

    def synchronize(self, index):
        """DeviceRuntime.synchronize: cudaDeviceSynchronize on device ``index``, then drop finished asynchronous host
        copies.
        """
        self._check_index(index)
        import cupy
        with cupy.cuda.Device(index):
            cupy.cuda.runtime.deviceSynchronize()
        self._reap_copies()

    # ------------------------------------------------------------------ raw memory
    def allocate(self, nbytes, device_index):
        """DeviceRuntime.allocate: cudaMalloc of ``nbytes`` (at least 1) as a DeviceBlock; MemoryError with the free /
        total bytes when the device is out of memory.
        """
        self._check_index(device_index)
        import cupy
        nbytes = max(int(nbytes), 1)
        try:
            with cupy.cuda.Device(device_index):
                ptr = cupy.cuda.runtime.malloc(nbytes)
        except cupy.cuda.runtime.CUDARuntimeError as e:
            if "cudaErrorMemoryAllocation" in str(e):
                free, total = cupy.cuda.Device(device_index).mem_info
                raise MemoryError(f"cudaMalloc({nbytes} bytes) on cuda:{device_index} failed: {e}; the device has "
                                  f"{free} of {total} bytes free. Free tensors, call ember.cuda.empty_cache(), "
                                  f"or use smaller batches") from None
            raise
        return DeviceBlock(ptr, nbytes, device_index)

    def sub_allocation(self, handle, offset, nbytes):
        """A block for ``nbytes`` bytes at ``offset`` of the segment ``handle`` (the core's small pool)."""
        return DeviceBlock(handle.ptr + offset, nbytes, handle.device, parent=handle)

    def free(self, handle):
        """DeviceRuntime.free: cudaFree of a segment (blocks carved from a segment are not freed on their own)."""
        if handle.parent is not None:        # carved from a segment: the segment is freed on its own
            return
        import cupy
        with cupy.cuda.Device(handle.device):
            cupy.cuda.runtime.free(handle.ptr)

    def data_ptr(self, handle):
        """DeviceRuntime.data_ptr: the block's device pointer."""
        return handle.ptr

    # streams, as the caching allocator sees them
    def current_stream_key(self, device_index):
        """The raw ``cudaStream_t`` of the device's current stream: the allocator's reuse key."""
        if not self._count:
            self._check_index(device_index)
        import cupy
        return int(cupy.cuda.get_current_stream(device_index).ptr)   # (no device switch: asked per allocation)

    def stream_key(self, stream) -> int:
        """The allocator's key of an ``ember.cuda.Stream`` (Tensor.record_stream)."""
        return int(stream.cuda_stream)

    def record_free_event(self, stream_key, device_index):
        """An event recorded now on stream ``stream_key`` (for a block freed after record_stream)."""
        import cupy
        with cupy.cuda.Device(device_index):
            e = cupy.cuda.Event(disable_timing=True)
            e.record(cupy.cuda.ExternalStream(stream_key))
        return e

    def event_done(self, event, wait=False):
        """Whether the allocator's free event has been reached (with ``wait``, synchronize on it first and return
        True).
        """
        if wait:
            event.synchronize()
            return True
        return bool(event.done)

    # ------------------------------------------------------------------ host transfers
    def to_numpy(self, tensor):
        """DeviceRuntime.to_numpy: a host copy of the tensor (synchronous on the current stream; bfloat16 re-viewed).
        """
        b = self.backend
        with b.device(tensor.device.index or 0):
            a = b.view(tensor)
            host = b.xp.ascontiguousarray(a).get()      # synchronous on the current stream
        if tensor.dtype.name == "bfloat16":
            host = host.view(tensor.dtype.numpy_dtype)
        return host.reshape(tuple(tensor.shape))

    def from_numpy(self, tensor, array):
        """DeviceRuntime.from_numpy: cast / broadcast ``array`` to the tensor's shape and dtype and copy it onto the
        device.
        """
        b = self.backend
        shape, dt = tuple(tensor.shape), tensor.dtype.numpy_dtype
        if 0 in shape:
            return
        a = np.asarray(array)
        if a.shape != shape:
            a = np.broadcast_to(a, shape)
        if a.dtype != dt:
            a = a.astype(dt)
        if tensor.dtype.name == "bfloat16":
            a = a.view(np.uint16)
        with b.device(tensor.device.index or 0):
            v = b.view(tensor)
            if v.flags.c_contiguous:
                v.set(np.ascontiguousarray(a).reshape(shape))   # (a 0-dim array stays 0-dim)
            else:
                b.xp.copyto(v, b.xp.asarray(a))

    def copy_across(self, dst, src, non_blocking=False):
        """A direct copy between a cuda tensor and a cpu (or other cuda) tensor, or False to let the
        core go through ``to_numpy`` / ``from_numpy``. Taken when both are contiguous with the same
        dtype: ``cudaMemcpyAsync`` on the current stream, asynchronous for ``non_blocking=True`` with
        pinned host memory (the host tensor is kept alive until the copy has finished), else
        synchronous."""
        if dst.dtype is not src.dtype or tuple(dst.shape) != tuple(src.shape) or not (
                dst.is_contiguous() and src.is_contiguous()) or dst.numel() == 0:
            return False
        import cupy
        rt = cupy.cuda.runtime
        nbytes = dst.numel() * dst.dtype.itemsize
        kinds = (dst.device.type, src.device.type)
        if kinds == ("cuda", "cuda"):
            # peer copy (UVA); ordered after the source device's queued work
            with cupy.cuda.Device(src.device.index):
                cupy.cuda.get_current_stream().synchronize()
            with cupy.cuda.Device(dst.device.index):
                s = cupy.cuda.get_current_stream()
                rt.memcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes, rt.memcpyDefault, s.ptr)
                s.synchronize()
            return True
        if kinds == ("cuda", "cpu"):
            host, dev, kind = src, dst, rt.memcpyHostToDevice
        elif kinds == ("cpu", "cuda"):
            host, dev, kind = dst, src, rt.memcpyDeviceToHost
        else:
            return False
        pinned = self.is_pinned(host)
        with cupy.cuda.Device(dev.device.index):
            s = cupy.cuda.get_current_stream()
            d, h = (dev.data_ptr(), host.data_ptr()) if kind == rt.memcpyHostToDevice else (host.data_ptr(),
                                                                                             dev.data_ptr())
            rt.memcpyAsync(d, h, nbytes, kind, s.ptr)
            if non_blocking and pinned:
                e = cupy.cuda.Event(disable_timing=True)
                e.record(s)
                self._pending_copies.append((e, host.untyped_storage()))
                self._reap_copies()
            else:
                s.synchronize()
        return True

    def _reap_copies(self):
        self._pending_copies = [(e, keep) for e, keep in self._pending_copies if not e.done]

    # ------------------------------------------------------------------ pinned host memory
    def pin_memory(self, tensor):
        """A cpu tensor over page-locked memory from ``cudaHostAlloc`` (cupy's pinned-memory pool),
        holding a copy of ``tensor``."""
        self.require()
        import cupy
        import ember
        n = tensor.numel() * tensor.dtype.itemsize
        mem = cupy.cuda.alloc_pinned_memory(max(n, 1))
        raw = np.frombuffer(mem, np.uint8, max(n, 1))[:n]
        arr = raw.view(tensor.dtype.numpy_dtype).reshape(tuple(tensor.shape))
        np.copyto(arr, tensor.detach().numpy() if tensor.requires_grad else tensor.numpy())
        return ember.from_numpy(arr)           # the array's base keeps the pinned memory alive

    def is_pinned(self, tensor) -> bool:
        """Whether the cpu ``tensor``'s memory is page-locked (``cudaPointerGetAttributes`` says host
        memory; memory pinned by another library counts too, as in PyTorch)."""
        if tensor.device.type != "cpu" or not self.is_available() or tensor.numel() == 0:
            return False
        import cupy
        try:
            attrs = cupy.cuda.runtime.pointerGetAttributes(tensor.data_ptr())
        except cupy.cuda.runtime.CUDARuntimeError:
            return False
        return int(attrs.type) == int(cupy.cuda.runtime.memoryTypeHost)

    # ------------------------------------------------------------------ random numbers
    def new_generator_state(self, seed, device_index):
        """DeviceRuntime.new_generator_state: a counter-based PhiloxState seeded with ``seed``."""
        return PhiloxState(seed)

    # ------------------------------------------------------------------ DLPack / __cuda_array_interface__
    def to_dlpack(self, tensor, **kwargs):
        """A DLPack capsule over the tensor's memory (cupy's exporter; the capsule keeps the storage
        alive). bfloat16 goes out as cupy's bfloat16 dtype where this cupy has one, else BufferError."""
        a = self.backend.view_owned(tensor, owner=tensor.untyped_storage())
        if tensor.dtype.name == "bfloat16":
            try:
                a = a.view(tensor.dtype.numpy_dtype)
            except Exception as e:  # noqa: BLE001 - cupy without a bfloat16 dtype
                raise BufferError(f"bfloat16 DLPack export needs a cupy with bfloat16 support ({e})") from None
        return a.__dlpack__(**kwargs)

    def dlpack_device(self, tensor):
        """The DLPack device of a cuda tensor: (2, index), 2 being kDLCUDA."""
        return (2, tensor.device.index or 0)

    def cuda_array_interface(self, tensor) -> dict:
        """``__cuda_array_interface__`` (version 3) of a cuda tensor: its pointer, shape, strides in
        bytes, typestr; ``stream`` is the current stream, as the protocol asks of a producer."""
        if tensor.dtype.name == "bfloat16":
            raise TypeError("__cuda_array_interface__ has no typestr for bfloat16; use DLPack (ember.to_dlpack)")
        import cupy
        isz = tensor.dtype.itemsize
        ptr = tensor.data_ptr() if tensor.numel() else 0
        with cupy.cuda.Device(tensor.device.index):
            s = int(cupy.cuda.get_current_stream().ptr)
        return {"shape": tuple(tensor.shape), "typestr": tensor.dtype.numpy_dtype.str,
                "data": (ptr, False), "version": 3, "strides": tuple(x * isz for x in tensor.stride()),
                "stream": s or 1}        # 1 = the legacy default stream (0 is not allowed)

    def from_dlpack(self, obj):
        """A cuda tensor over the memory of ``obj`` (any producer of CUDA DLPack or
        ``__cuda_array_interface__``), no copy; the tensor keeps ``obj``'s memory alive."""
        import cupy
        arr = cupy.from_dlpack(obj) if hasattr(obj, "__dlpack__") else cupy.asarray(obj)
        return self.wrap_cupy(arr)

    def wrap_cupy(self, arr):
        """A cuda tensor sharing the memory of the cupy array ``arr``."""
        import ember
        from ember import Tensor, UntypedStorage
        dt = ember.bfloat16 if arr.dtype.name == "bfloat16" else _dtype_of(arr.dtype)
        isz = arr.itemsize
        if any(s % isz for s in arr.strides) or any(s < 0 for s in arr.strides):
            raise BufferError("from_dlpack: strides that are negative or not a multiple of the element size "
                              "are not supported")
        dev = ember.device("cuda", arr.device.id)
        extent = (1 + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) // isz) if arr.size else 0
        st = object.__new__(UntypedStorage)
        blk = ForeignBlock(arr.data.ptr, extent * isz, arr.device.id)
        blk.owner = arr
        st._handle = blk
        st._nbytes = st._size = extent * isz
        st.device = dev
        st._allocator = _Foreign(self)
        st._stream = None
        t = object.__new__(Tensor)
        t._storage = st
        t._shape = tuple(arr.shape)
        t._stride = tuple(s // isz for s in arr.strides)
        t._offset = 0
        t._dtype = dt
        t._device = dev
        t._native = None
        return t

    # ------------------------------------------------------------------ ember.cuda.<extra>
    def module_extras(self):
        """DeviceRuntime.module_extras: seeding, device properties / capability, cupy interop and the Stream / Event
        API for ember.cuda.
        """
        from . import _streams
        rt = self

        def unavailable_reason():
            """Why ember.cuda.is_available() is False (None when a device is available)."""
            return rt.unavailable_reason()

        def get_device_properties(device=None):
            """Name, compute capability, memory and multiprocessor count (matches
            torch.cuda.get_device_properties; ``total_memory`` in bytes)."""
            return DeviceProperties(rt.properties(_streams._index(device)))

        def get_device_capability(device=None):
            """(major, minor) compute capability."""
            p = rt.properties(_streams._index(device))
            return int(p["major"]), int(p["minor"])

        def manual_seed(seed):
            """Seed the current device's generator; silently ignored without a CUDA device (as
            torch.cuda.manual_seed)."""
            if rt.is_available():
                _generator(rt.current_device()).manual_seed(seed)

        def manual_seed_all(seed):
            """Seed every device's generator; silently ignored without a CUDA device (as torch)."""
            for i in range(rt.device_count()):
                _generator(i).manual_seed(seed)

        def from_cupy(arr):
            """A cuda tensor sharing a cupy array's memory (no copy)."""
            return rt.wrap_cupy(arr)

        def to_cupy(tensor):
            """A cupy array sharing a cuda tensor's memory (no copy; keeps the storage alive)."""
            return rt.backend.view_owned(tensor, owner=tensor.untyped_storage())

        return {"manual_seed": manual_seed, "manual_seed_all": manual_seed_all,
                "unavailable_reason": unavailable_reason, "get_device_properties": get_device_properties,
                "get_device_capability": get_device_capability, "from_cupy": from_cupy, "to_cupy": to_cupy,
                "Stream": _streams.Stream, "Event": _streams.Event, "current_stream": _streams.current_stream,
                "default_stream": _streams.default_stream, "stream": _streams.stream,
                "StreamContext": _streams.StreamContext}


def _generator(index):
    import ember
    from ember import _registry
    return _registry.device_type("cuda").generator(ember.device("cuda", index))


def _dtype_of(np_dtype):
    import ember
    for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                 "complex64", "complex128"):
        d = getattr(ember, name)
        if d.numpy_dtype == np_dtype:
            return d
    raise BufferError(f"from_dlpack: no ember dtype for {np_dtype}")


class DeviceProperties:
    """What ``ember.cuda.get_device_properties`` returns (the fields of torch's _CudaDeviceProperties
    that cudaGetDeviceProperties gives)."""

    def __init__(self, p: dict):
        self.name = p["name"]
        self.major, self.minor = int(p["major"]), int(p["minor"])
        self.total_memory = int(p["totalGlobalMem"])
        self.multi_processor_count = int(p["multiProcessorCount"])
        self.is_integrated = bool(p.get("integrated", 0))
        self.is_multi_gpu_board = bool(p.get("isMultiGpuBoard", 0))
        self.warp_size = int(p.get("warpSize", 32))
        self.L2_cache_size = int(p.get("l2CacheSize", 0))

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


RUNTIME = CudaRuntime()
