"""Host emulation of ember-cuda, for testing its logic on machines without a GPU (tests only).

It is a separate device type, ``cuda_emu`` - never "cuda", so nothing can mistake it for a GPU -
registered only on request: by hand (``ember.plugins.register(ember_cuda._emulation, name="cuda_emu")``)
or, for the command line, by ember-cuda itself when ``EMBER_CUDA_EMULATE=1``
(``EMBER_CUDA_EMULATE=1 ember conformance cuda_emu``). It runs ember-cuda's own kernels
(``kernels.make_kernels``) over ``HostBackend``, numpy views of host buffers, and the runtime below mirrors ``CudaRuntime``'s memory model: raw
allocations under the core's ``CachingAllocator``, small blocks carved from 2 MiB segments
(``sub_allocation``), per-stream reuse keys and ``record_stream`` events (emulated streams are
plain counters that complete when synchronized).

What it checks: the kernels' dtype rules, strided and broadcast views, bfloat16 bit conversion,
the Philox generator, scatter/gather index handling, the allocator wiring - through ember's
conformance suite (``ember conformance cuda_emu``) and tests/cuda. What it cannot check: cupy
itself (a function numpy has and cupy lacks, a different casting or overflow rule), device
memory, streams running concurrently, cuBLAS. Those are checked only on a GPU.
"""
from __future__ import annotations

import itertools

import ember
import numpy as np
from ember.library import DeviceRuntime
from ember.plugins import API_VERSION, hookimpl

from ._philox import PhiloxState

NAME = "cuda_emu"
DEVICES = 2


class EmuBlock:
    """A host buffer standing in for a device allocation (``parent`` set for a carved block)."""

    __slots__ = ("buf", "device", "nbytes", "parent")

    def __init__(self, buf, nbytes, device, parent=None):
        self.buf, self.nbytes, self.device, self.parent = buf, nbytes, device, parent


class EmuEvent:
    """An emulated event: done once the stream it was recorded on was synchronized past it."""

    def __init__(self, stream, ticket):
        self.stream, self.ticket = stream, ticket

    @property
    def done(self):
        """Whether the event's stream has completed past the event's ticket."""
        return self.stream.completed >= self.ticket


class EmuStream:
    """An emulated stream: work items are tickets; ``synchronize`` completes them all."""

    _ids = itertools.count(1)

    def __init__(self):
        self.key = next(self._ids)
        self.issued = self.completed = 0

    def enqueue(self):
        """Issue one more work ticket on this stream."""
        self.issued += 1

    def synchronize(self):
        """Complete every issued ticket."""
        self.completed = self.issued


class EmulatedCudaRuntime(DeviceRuntime):
    """CudaRuntime's memory model over host memory (see the module docstring)."""

    name = NAME
    indexed = True
    host_memory = False
    services = frozenset()          # emulated streams are for the allocator tests, not a user service

    def __init__(self):
        self.raw_allocs = 0          # cudaMalloc calls the real runtime would have made
        self.raw_frees = 0
        self.streams = {0: EmuStream()}
        self.current = {}            # device -> stream key
        self.limit_bytes = None      # emulate a device of this size (OOM tests)
        self.used = 0

    def device_count(self):
        """DeviceRuntime.device_count: the fixed number of emulated devices."""
        return DEVICES

    def synchronize(self, index):
        """DeviceRuntime.synchronize: complete every emulated stream's tickets."""
        for s in self.streams.values():
            s.synchronize()

    def total_memory(self, index):
        """``limit_bytes`` when set, else 16 GiB."""
        return self.limit_bytes or (1 << 34)

    def allocate(self, nbytes, device_index):
        """DeviceRuntime.allocate: a zeroed host block of ``nbytes`` (at least 1), counted as a raw cudaMalloc;
        MemoryError past ``limit_bytes``.
        """
        nbytes = max(int(nbytes), 1)
        if self.limit_bytes is not None and self.used + nbytes > self.limit_bytes:
            raise MemoryError(f"cuda_emu:{device_index}: emulated cudaMalloc({nbytes} bytes) failed: {self.used} of "
                              f"{self.limit_bytes} bytes in use")
        self.raw_allocs += 1
        self.used += nbytes
        return EmuBlock(np.zeros(nbytes, np.uint8), nbytes, device_index)

    def sub_allocation(self, handle, offset, nbytes):
        """A block over ``nbytes`` bytes at ``offset`` of the segment ``handle`` (the core's small pool)."""
        return EmuBlock(handle.buf[offset:offset + nbytes], nbytes, handle.device, parent=handle)

    def free(self, handle):
        """DeviceRuntime.free: count a raw free of a segment (sub-blocks are not freed on their own)."""
        if handle.parent is not None:
            return
        self.raw_frees += 1
        self.used -= handle.nbytes

    def data_ptr(self, handle):
        """DeviceRuntime.data_ptr: the host address of the block's buffer."""
        return handle.buf.__array_interface__["data"][0]

    # streams as the caching allocator sees them
    def current_stream_key(self, device_index):
        """The allocator's key of the device's current emulated stream (0 by default)."""
        return self.current.get(device_index, 0)

    def record_free_event(self, stream_key, device_index):
        """An EmuEvent for a new ticket enqueued on stream ``stream_key``."""
        s = self.streams[stream_key]
        s.enqueue()
        return EmuEvent(s, s.issued)

    def event_done(self, event, wait=False):
        """Whether ``event`` is reached (with ``wait``, its stream is synchronized first)."""
        if wait:
            event.stream.synchronize()
        return event.done

    # host transfers
    def to_numpy(self, tensor):
        """DeviceRuntime.to_numpy: a C-contiguous host copy of the tensor (bfloat16 re-viewed)."""
        a = _BACKEND.view(tensor)
        a = np.array(a, copy=True, order="C")
        return a.view(tensor.dtype.numpy_dtype) if tensor.dtype is ember.bfloat16 else a

    def from_numpy(self, tensor, array):
        """DeviceRuntime.from_numpy: broadcast and cast ``array`` and copy it into the tensor's memory."""
        if 0 in tuple(tensor.shape):
            return
        a = np.broadcast_to(np.asarray(array), tuple(tensor.shape)).astype(tensor.dtype.numpy_dtype)
        if tensor.dtype is ember.bfloat16:
            a = a.view(np.uint16)
        np.copyto(_BACKEND.view(tensor), a)

    def new_generator_state(self, seed, device_index):
        """DeviceRuntime.new_generator_state: a counter-based PhiloxState seeded with ``seed``."""
        return PhiloxState(seed)


def _host_backend():
    return _BACKEND


from ._backend import HostBackend

_BACKEND = HostBackend()
RUNTIME = EmulatedCudaRuntime()


@hookimpl
def ember_plugin_info():
    """The emulation's manifest: device type cuda_emu, the dtypes ember-cuda declares."""
    from . import DTYPES
    return {"name": NAME, "version": "0.1.0", "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
            "provides": {"device_types": [NAME], "layouts": ["strided"], "dtypes": list(DTYPES)},
            "conformance_xfails": "conformance_xfails.txt"}


@hookimpl
def ember_register(registry):
    """Register device type cuda_emu with ember-cuda's kernels over numpy (no fallback)."""
    register_into(registry)


def register_into(registry):
    """Register cuda_emu and its kernels through ``registry`` (of this module, or of ember-cuda itself
    with ``EMBER_CUDA_EMULATE=1``)."""
    from . import fused, kernels
    registry.register_device_type(NAME, RUNTIME, caching_allocator=True)
    kernels.register(registry.library("ember_cuda_emu"), NAME, _host_backend)
    registry.register_fuser(NAME, fused.make_fuser(_host_backend, NAME))
