"""A FAKE cupy made of numpy, for running ember-cuda's own runtime code without a GPU (tests only).

``install(n_devices)`` puts modules named ``cupy``, ``cupy.cuda``, ``cupyx``, ... into
``sys.modules`` whose functions are numpy's and whose "device memory" is host memory: ``malloc``
hands out numpy buffers addressed by their real host pointers, ``cupy.ndarray(shape, dtype,
memptr=..., strides=...)`` views them, ``memcpyAsync`` is ``ctypes.memmove``, streams run their
work at once (so events are always done), pinned memory is a registered numpy buffer.

Use it only in a fresh process (tests/cuda/test_cuda_fake_cupy.py runs a subprocess), before
ember loads its plugins. What it proves: ember-cuda's runtime glue - views over raw pointers,
host transfers, direct and non_blocking copies, pinned-memory bookkeeping, the stream and device
context logic, the cupy allocator hook, DLPack-style wrapping - does what it should *given this
reading of cupy's API* (whose names test_cuda_plugin.py checks against the real cupy). It proves
nothing about cupy or CUDA themselves.
"""
from __future__ import annotations

import ctypes
import itertools
import sys
import types

import numpy as np
import scipy.special

_ALLOCS = {}          # base pointer -> numpy uint8 buffer ("device" memory and pinned memory)
_PINNED = set()       # base pointers of pinned allocations
_STATE = {"device": 0, "count": 1, "mallocs": 0, "frees": 0, "allocator": None, "fused": {}}
_streams = {}         # device -> current stream


class CUDARuntimeError(RuntimeError):
    pass


def _ptr(a):
    return a.__array_interface__["data"][0]


def _owner(ptr):
    for base, buf in _ALLOCS.items():
        if base <= ptr < base + max(buf.nbytes, 1):
            return base, buf
    raise CUDARuntimeError(f"fake cupy: {ptr:#x} is not inside any allocation")


class _Data:
    def __init__(self, ptr):
        self.ptr = ptr


class _Dev:
    def __init__(self, i):
        self.id = i


class FakeArray(np.ndarray):
    """numpy array with cupy's extra surface (``get``, ``set``, ``data.ptr``, ``device.id``)."""

    @property
    def data(self):
        return _Data(_ptr(self))

    @property
    def device(self):
        return _Dev(getattr(self, "_dev", _STATE["device"]))

    def get(self, stream=None):
        return np.array(self, copy=True).view(np.ndarray)

    def set(self, arr, stream=None):
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError("fake cupy: set() needs the same shape and dtype")
        np.copyto(self.view(np.ndarray), arr)


def _wrap(r):
    if isinstance(r, np.ndarray) and not isinstance(r, FakeArray):
        return r.view(FakeArray)
    if isinstance(r, tuple):
        return tuple(_wrap(x) for x in r)
    if isinstance(r, list):
        return [_wrap(x) for x in r]
    return r


def _delegate(name):
    f = getattr(np, name)
    if isinstance(f, type) or not callable(f):
        return f

    def g(*args, **kwargs):
        return _wrap(f(*args, **kwargs))
    g.__name__ = name
    return g


class _CupyModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        v = _delegate(name)
        setattr(self, name, v)
        return v


# ---------------------------------------------------------------- cupy.cuda.memory
class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id=-1):
        self.ptr, self.size, self.owner, self.device_id = int(ptr), int(size), owner, device_id


class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + int(offset)


def ndarray(shape, dtype=float, memptr=None, strides=None, order="C"):
    shape = tuple(shape)
    dt = np.dtype(dtype)
    if memptr is None:
        return _wrap(np.empty(shape, dt))
    base, buf = _owner(memptr.ptr)
    a = np.ndarray(shape, dt, buf, memptr.ptr - base, strides).view(FakeArray)
    a._keep = memptr                         # keeps the owner alive, as cupy does
    dev = getattr(memptr.mem, "device_id", -1)
    a._dev = dev if dev is not None and dev >= 0 else _STATE["device"]
    return a


# ---------------------------------------------------------------- cupy.cuda.runtime
def malloc(n):
    buf = np.zeros(max(int(n), 1), np.uint8)
    p = _ptr(buf)
    _ALLOCS[p] = buf
    _STATE["mallocs"] += 1
    return p


def free(p):
    if _ALLOCS.pop(p, None) is None:
        raise CUDARuntimeError(f"fake cupy: free of unknown pointer {p:#x}")
    _STATE["frees"] += 1


def getDeviceCount():
    return _STATE["count"]


def getDevice():
    return _STATE["device"]


def deviceSynchronize():
    pass


memcpyHostToDevice, memcpyDeviceToHost, memcpyDefault, memoryTypeHost = 1, 2, 4, 1
_COPIES = []


def memcpyAsync(dst, src, n, kind, stream):
    ctypes.memmove(dst, src, n)
    _COPIES.append((kind, n, stream))


class _Attrs:
    def __init__(self, t):
        self.type = t


def pointerGetAttributes(p):
    try:
        base, _ = _owner(p)
    except CUDARuntimeError:
        return _Attrs(0)
    return _Attrs(memoryTypeHost if base in _PINNED else 2)


def getDeviceProperties(i):
    return {"name": b"Fake GPU (numpy)", "major": 9, "minor": 0, "totalGlobalMem": 1 << 30,
            "multiProcessorCount": 4, "warpSize": 32}


def streamGetPriority(ptr):
    return next((s.priority for s in _ALL_STREAMS if s.ptr == ptr), 0)


# ---------------------------------------------------------------- devices, streams, events
class Device:
    def __init__(self, i=None):
        self.id = _STATE["device"] if i is None else int(i)
        self._prev = []

    def use(self):
        _STATE["device"] = self.id

    def __enter__(self):
        self._prev.append(_STATE["device"])
        _STATE["device"] = self.id
        return self

    def __exit__(self, *exc):
        _STATE["device"] = self._prev.pop()

    @property
    def mem_info(self):
        return (1 << 29, 1 << 30)


_ids = itertools.count(0x1000)
_ALL_STREAMS = []


class Stream:
    null = None

    def __init__(self, null=False, ptds=False, non_blocking=False, priority=0, *, _ptr=None):
        self.ptr = 0 if null else (next(_ids) if _ptr is None else _ptr)
        self.priority = min(0, max(-5, int(priority)))
        self.device_id = _STATE["device"]
        _ALL_STREAMS.append(self)

    done = True                               # work runs at once

    def synchronize(self):
        pass

    def use(self):
        _streams[self.device_id if self.ptr else _STATE["device"]] = self
        return self

    def wait_event(self, e):
        pass

    def record(self, event=None):
        e = event or Event()
        e.record(self)
        return e


Stream.null = Stream(null=True)


class ExternalStream(Stream):
    def __init__(self, ptr, device_id=-1):
        super().__init__(_ptr=ptr)


def get_current_stream(device_id=-1):
    return _streams.get(_STATE["device"] if device_id < 0 else device_id, Stream.null)


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.recorded = False
        self.disable_timing = disable_timing

    def record(self, stream=None):
        self.recorded = True

    done = True

    def synchronize(self):
        pass


def get_elapsed_time(a, b):
    return 0.0


# ---------------------------------------------------------------- pinned memory, allocator hook
class PinnedMemoryPointer(np.ndarray):
    pass


def alloc_pinned_memory(n):
    buf = np.zeros(max(int(n), 1), np.uint8)
    p = _ptr(buf)
    _ALLOCS[p] = buf
    _PINNED.add(p)
    m = buf.view(PinnedMemoryPointer)
    m.ptr = p
    return m


def set_allocator(f):
    _STATE["allocator"] = f


def fuse(*args, kernel_name=None):
    """cupy.fuse as it treats numpy arrays: the function runs as its calls; the names of the kernels that would be
    compiled, and their calls, are counted in ``_STATE["fused"]``."""
    def decorate(fn):
        _STATE["fused"].setdefault(kernel_name or fn.__name__, 0)

        def run(*a, **k):
            _STATE["fused"][kernel_name or fn.__name__] += 1
            return fn(*a, **k)
        return run
    return decorate(args[0]) if args else decorate


def install(n_devices=2):
    """Put the fake modules into sys.modules (call before ember loads its plugins)."""
    _STATE["count"] = n_devices
    cp = _CupyModule("cupy")
    cp.__version__ = "0.0-fake-numpy"
    cp.ndarray = ndarray
    cp.uint32, cp.uint64, cp.uint16, cp.float32, cp.float16, cp.int64 = (
        np.uint32, np.uint64, np.uint16, np.float32, np.float16, np.int64)

    def from_dlpack(obj, **kw):
        return _wrap(np.from_dlpack(obj))
    cp.from_dlpack = from_dlpack
    cp.fuse = fuse
    cuda = types.ModuleType("cupy.cuda")
    memory = types.ModuleType("cupy.cuda.memory")
    memory.UnownedMemory, memory.MemoryPointer = UnownedMemory, MemoryPointer
    runtime = types.ModuleType("cupy.cuda.runtime")
    for n in ("CUDARuntimeError", "malloc", "free", "getDeviceCount", "getDevice", "deviceSynchronize",
              "memcpyAsync", "memcpyHostToDevice", "memcpyDeviceToHost", "memcpyDefault", "memoryTypeHost",
              "pointerGetAttributes", "getDeviceProperties", "streamGetPriority"):
        setattr(runtime, n, globals()[n])
    cuda.memory, cuda.runtime = memory, runtime
    for n in ("Device", "Stream", "ExternalStream", "Event", "get_current_stream", "get_elapsed_time",
              "alloc_pinned_memory", "set_allocator"):
        setattr(cuda, n, globals()[n])
    cp.cuda = cuda
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = lambda a, slices, value: np.add.at(a, slices, value)
    cscipy = types.ModuleType("cupyx.scipy")
    cscipy.special = scipy.special
    cupyx.scipy = cscipy
    sys.modules.update({"cupy": cp, "cupy.cuda": cuda, "cupy.cuda.memory": memory, "cupy.cuda.runtime": runtime,
                        "cupyx": cupyx, "cupyx.scipy": cscipy, "cupyx.scipy.special": scipy.special})
    return sys.modules[__name__]


def stats():
    return dict(_STATE, live=len(_ALLOCS), copies=list(_COPIES))
