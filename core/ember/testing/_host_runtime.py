"""A device runtime whose "device memory" is host numpy buffers: the smallest complete
``ember.library.DeviceRuntime``, for tests, benchmarks and a vendor's first prototype.

Subclass it, set ``name`` (and ``indexed``, ``device_count``), register it with
``registry.register_device_type`` and add kernels that work on ``runtime.view(t)`` (a numpy
view of the tensor's storage with its strides). The project's own tests use it for the fake
devices of the plugin and conformance tests; ``examples/vendor_plugin`` shows a fuller device
(its own memory arena, counted copies, a Philox generator).
"""
from __future__ import annotations

import numpy as np

from ..library import ALL_DENSE, DeviceRuntime

__all__ = ["HostMemoryRuntime"]


class HostMemoryRuntime(DeviceRuntime):
    """Storage handles are numpy uint8 arrays; copies to and from the host are numpy copies.

    ``allocate(nbytes, index)`` returns zeroed memory (numpy raises MemoryError for an impossible
    size, which the core's caching allocator turns into ``ember.OutOfMemoryError`` after a retry).
    """

    name = "hostmem"
    indexed = True

    def device_count(self) -> int:
        """One device."""
        return 1

    def synchronize(self, index: int) -> None:
        """Nothing to wait for: every kernel ran when it returned."""

    def allocate(self, nbytes: int, device_index: int):
        """``nbytes`` zeroed bytes (a numpy uint8 array)."""
        return np.zeros(nbytes, np.uint8)

    def free(self, handle) -> None:
        """Nothing to do: numpy frees the buffer with its last reference."""

    def data_ptr(self, handle) -> int:
        """The buffer's address."""
        return handle.__array_interface__["data"][0]

    def view(self, t) -> np.ndarray:
        """A numpy view of tensor ``t``'s elements in its storage (shape, strides and offset of ``t``)."""
        isz = t.dtype.itemsize
        return np.ndarray(tuple(t.shape), t.dtype.numpy_dtype, t.untyped_storage().handle,
                          t.storage_offset() * isz, tuple(s * isz for s in t.stride()))

    def to_numpy(self, t) -> np.ndarray:
        """A host copy of ``t``."""
        return self.view(t).copy()

    def from_numpy(self, t, array) -> None:
        """Write host ``array`` (broadcast, cast) into ``t``."""
        np.copyto(self.view(t), array, casting="unsafe")

    def register_copy_and_fill(self, lib) -> None:
        """Register this device's two runtime-level kernels on ``lib`` (a ``Library``), for every dense
        dtype: ``copy_`` (within the device, host -> device, device -> host; dtype casts included) and
        ``fill_``. With them and ``registry.register_fallback(name, ember.library.cpu_fallback)`` every
        op runs (slowly); add native kernels from there."""
        rt, name = self, self.name

        def copy_(dst, src, non_blocking=False):
            if dst.device.type == src.device.type == name:
                np.copyto(rt.view(dst), rt.view(src), casting="unsafe")
            elif dst.device.type == name:
                rt.from_numpy(dst, np.asarray(src.numpy()))
            else:
                np.copyto(dst.numpy(), rt.to_numpy(src), casting="unsafe")
            return dst

        def fill_(dst, value):
            rt.view(dst).fill(value)
            return dst

        lib.impl("copy_", copy_, device=name, dtypes=ALL_DENSE)
        lib.impl("fill_", fill_, device=name, dtypes=ALL_DENSE)
