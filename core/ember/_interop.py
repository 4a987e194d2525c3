"""Zero-copy exchange with other array libraries through DLPack (matches torch.from_dlpack,
torch.Tensor.__dlpack__ / __dlpack_device__, torch.utils.dlpack.to_dlpack).

The core knows no device, so export and import go through the device runtime:

- a runtime may implement ``to_dlpack(tensor, **kwargs) -> capsule`` and
  ``dlpack_device(tensor) -> (device_type_code, index)``; a runtime whose memory is host
  memory (``host_memory = True``, the cpu) needs neither: its tensors are exported as the
  numpy view of their memory (``runtime.to_numpy``), so the capsule points at the
  tensor's own bytes;
- a runtime may implement ``from_dlpack(obj) -> Tensor`` and list the DLPack device codes
  it imports in ``dlpack_device_types``; CPU producers (code 1) are imported with
  ``numpy.from_dlpack`` and wrapped with ``ember.from_numpy``, sharing memory.

Strides, storage offsets and every dtype numpy's DLPack supports travel unchanged
(bfloat16 does not: numpy has no DLPack code for it, so it raises BufferError).
"""
from __future__ import annotations

import numpy as np

from . import _registry
from ._tensor import Tensor

__all__ = ["from_dlpack"]

#: DLPack's DLDeviceType codes, for messages
DLPACK_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDAHost", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI",
                       10: "ROCM", 11: "ROCMHost", 12: "ExtDev", 13: "CUDAManaged", 14: "OneAPI", 15: "WebGPU",
                       16: "Hexagon", 17: "MAIA"}
_CPU = 1


def _runtime(t):
    return _registry.device_type(t._device.type).runtime


def _no_dlpack(t, what):
    return BufferError(f"{what}: the '{t._device.type}' device's runtime provides no DLPack support (it "
                       f"implements neither {'to_dlpack' if what == '__dlpack__' else 'dlpack_device'} nor host "
                       f"memory). Copy the tensor to the cpu first: tensor.cpu().")


def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule viewing this tensor's memory (matches torch.Tensor.__dlpack__).

    ``stream``, ``max_version``, ``dl_device`` and ``copy`` follow the array API standard and
    are passed to the device's exporter. BufferError for a tensor that requires grad
    ("Can't export tensors that require gradient, use tensor.detach()"), for a dtype DLPack
    cannot describe, and for a device with no DLPack support.
    """
    if self._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
    rt = _runtime(self)
    export = getattr(rt, "to_dlpack", None)
    if export is not None:
        return export(self, **kwargs)
    if not rt.host_memory:
        raise _no_dlpack(self, "__dlpack__")
    if stream is not None and stream != -1:
        raise BufferError(f"stream must be None for a host-memory ({self._device.type}) tensor, got {stream!r}")
    kwargs.pop("stream", None)
    return rt.to_numpy(self).__dlpack__(**kwargs)


def __dlpack_device__(self):
    """``(DLPack device type code, device index)`` of this tensor's memory: ``(1, 0)`` for host
    memory (matches torch.Tensor.__dlpack_device__)."""
    rt = _runtime(self)
    dev = getattr(rt, "dlpack_device", None)
    if dev is not None:
        return tuple(dev(self))
    if rt.host_memory:
        return (_CPU, 0)
    raise _no_dlpack(self, "__dlpack_device__")


def to_dlpack(tensor):
    """A DLPack capsule of ``tensor`` (matches torch.utils.dlpack.to_dlpack)."""
    return __dlpack__(tensor)


class _CapsuleHolder:
    """Lets ``numpy.from_dlpack`` consume a bare (legacy, cpu) DLPack capsule."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (_CPU, 0)


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor``: any object with ``__dlpack__`` and
    ``__dlpack_device__`` (numpy arrays, PyTorch / cupy / jax arrays, ...) or a DLPack capsule
    (matches torch.from_dlpack).

    CPU producers are imported on the cpu with no copy; other DLPack devices are imported
    by the device plugin that lists their code in ``dlpack_device_types``. An ember tensor
    is returned as is. TypeError for an object without the protocol; BufferError when no
    installed device plugin imports the producer's device, or for a dtype numpy's DLPack
    does not know.
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ == "PyCapsule":
            return _import_cpu(_CapsuleHolder(ext_tensor))
        raise TypeError(f"from_dlpack expects an object with __dlpack__ and __dlpack_device__ or a DLPack capsule, "
                        f"got {type(ext_tensor).__name__}")
    code, index = ext_tensor.__dlpack_device__()
    code = int(code)
    if code == _CPU:
        return _import_cpu(ext_tensor)
    _registry.ensure_loaded()
    for name, dt in _registry.device_types.items():
        rt = dt.runtime
        if code in getattr(rt, "dlpack_device_types", ()) and callable(getattr(rt, "from_dlpack", None)):
            return rt.from_dlpack(ext_tensor)
    raise BufferError(f"from_dlpack: no installed ember device plugin imports DLPack device "
                      f"{DLPACK_DEVICE_NAMES.get(code, code)} (code {code}, index {int(index)}); installed device "
                      f"types: {', '.join(sorted(_registry.device_types)) or 'none'}")


def _import_cpu(obj):
    from ._ops._creation import from_numpy
    arr = np.from_dlpack(obj)
    if arr.ndim and arr.size == 0:
        arr = np.empty(arr.shape, arr.dtype)  # strides of an empty producer are meaningless
    return from_numpy(arr)


def _bind():
    Tensor.__dlpack__ = __dlpack__
    Tensor.__dlpack_device__ = __dlpack_device__


_bind()
