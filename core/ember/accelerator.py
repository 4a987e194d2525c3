"""ember.accelerator: the current accelerator, device-generic (matches torch.accelerator).

The current accelerator is the non-cpu device type whose runtime reports an available device,
the highest ``accelerator_priority`` first (``_registry.default_accelerator_type``: ember-cuda's
GPU before an OpenCL device or a vendor plugin such as the vdev emulator). "cpu" is never an
accelerator. With none available, ``current_accelerator()`` is None, ``is_available()`` False,
``device_count()`` 0, and the functions that need a device raise PyTorch's RuntimeError "Cannot
access accelerator device when none is available.".

A ``device`` argument is an index, or a device (or its string) of the accelerator's type: a
device of another type is ValueError "<type> doesn't match the current accelerator <acc>.", as
in PyTorch; a device without an index means the current index.

Not here: ``Graph``, ``get_device_capability`` and ``reset_accumulated_memory_stats`` (the
runtimes do not report what they need); ``current_stream`` / ``set_stream`` work where the
device module has them (the runtime's "streams" service) and raise NotImplementedError elsewhere.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

from . import _registry, memory as _memory
from ._device import device as _device

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "device_index", "synchronize", "current_stream", "set_stream",
           "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "empty_cache", "empty_host_cache", "get_memory_info"]

_NONE = "Cannot access accelerator device when none is available."


def current_accelerator(check_available: bool = False):
    """The device type of the current accelerator as an ``ember.device`` without index
    (``ember.device('cuda')``), or None when no non-cpu device type has an available device.
    ``check_available`` is accepted for PyTorch's signature: ember only ever names an available
    accelerator. Matches torch.accelerator.current_accelerator."""
    kind = _registry.default_accelerator_type()
    return None if kind == "cpu" else _device(kind)


def _runtime():
    """(device type name, runtime) of the current accelerator; RuntimeError when there is none."""
    acc = current_accelerator()
    if acc is None:
        raise RuntimeError(_NONE)
    return acc.type, _registry.device_type(acc.type).runtime


def is_available() -> bool:
    """Whether there is a current accelerator with a usable device (matches torch.accelerator.is_available)."""
    acc = current_accelerator()
    return acc is not None and bool(_registry.device_type(acc.type).runtime.is_available())


def device_count() -> int:
    """The number of devices of the current accelerator, 0 when there is none (matches
    torch.accelerator.device_count)."""
    acc = current_accelerator()
    return 0 if acc is None else int(_registry.device_type(acc.type).runtime.device_count())


def _index(dev, optional):
    """The device index ``dev`` names (PyTorch's ``_get_device_index``): an int as given; a device or
    string of the accelerator's type (ValueError for another type; RuntimeError "Accelerator
    expected" when there is no accelerator); None or an index-less device: the current index when
    ``optional``, else ValueError."""
    if isinstance(dev, int) and not isinstance(dev, bool):
        return dev
    idx = None
    if isinstance(dev, (str, _device)):
        dev = _device(dev)
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != dev.type:
            raise ValueError(f"{dev.type} doesn't match the current accelerator {acc}.")
        idx = dev.index
    elif dev is not None:
        raise TypeError(f"expected an ember.device, a string or an int, not {type(dev).__name__}")
    if idx is None:
        if not optional:
            raise ValueError(f"Expected an ember.device with a specified index or an integer, but got:{dev}")
        return current_device_index()
    return idx


def current_device_index() -> int:
    """The index of the current device of the current accelerator (RuntimeError when there is
    none; matches torch.accelerator.current_device_index)."""
    _, rt = _runtime()
    return int(rt.current_device()) if rt.indexed else 0


def current_device_idx() -> int:
    """Deprecated alias of ``current_device_index`` (FutureWarning, as torch.accelerator.current_device_idx)."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, or a device of the accelerator's type with an index) the current
    device; a negative index does nothing. RuntimeError "Invalid device ordinal" from the runtime for
    an index out of range. Matches torch.accelerator.set_device_index."""
    idx = _index(device, optional=False)
    if idx < 0:
        return
    _, rt = _runtime()
    rt.set_device(idx)


def set_device_idx(device, /) -> None:
    """Deprecated alias of ``set_device_index`` (FutureWarning, as torch.accelerator.set_device_idx)."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:
    """``with ember.accelerator.device_index(i):`` makes device ``i`` current inside and restores
    the previous one after; ``None`` changes nothing (matches torch.accelerator.device_index)."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx >= 0:
            set_device_index(self.prev_idx)


def synchronize(device=None, /) -> None:
    """Wait for all work queued on ``device`` (default: the current device) to finish (matches
    torch.accelerator.synchronize)."""
    idx = _index(device, optional=True)
    _, rt = _runtime()
    rt.synchronize(idx)


def _module():
    kind, _ = _runtime()
    return kind, _registry.device_type(kind).module


def current_stream(device=None, /):
    """The current stream of ``device`` (the device module's ``current_stream``); NotImplementedError
    when the accelerator's runtime has no "streams" service. Matches torch.accelerator.current_stream."""
    idx = _index(device, optional=True)
    kind, mod = _module()
    f = getattr(mod, "current_stream", None)
    if f is None:
        raise NotImplementedError(f"current_stream: the '{kind}' device (plugin "
                                  f"'{_registry.device_type(kind).plugin}') has no service 'streams'")
    return f(idx)


def set_stream(stream) -> None:
    """Make ``stream`` current (the device module's ``set_stream``); NotImplementedError when the
    accelerator has none. Matches torch.accelerator.set_stream."""
    kind, mod = _module()
    f = getattr(mod, "set_stream", None)
    if f is None:
        raise NotImplementedError(f"set_stream: the '{kind}' device (plugin "
                                  f"'{_registry.device_type(kind).plugin}') has no service 'streams'")
    f(stream)


def _dev(device):
    idx = _index(device, optional=True)
    kind, rt = _runtime()
    return _device(kind, idx) if rt.indexed else _device(kind)


def memory_stats(device_index=None, /) -> OrderedDict:
    """The allocator statistics of the accelerator's device (ember's fixed keys, PyTorch's names,
    sorted), as torch.accelerator.memory_stats."""
    return OrderedDict(sorted(_memory.memory_stats(_dev(device_index)).items()))


def memory_allocated(device_index=None, /) -> int:
    """Bytes held by live tensors on the device (matches torch.accelerator.memory_allocated)."""
    return _memory.memory_allocated(_dev(device_index))


def max_memory_allocated(device_index=None, /) -> int:
    """Peak of ``memory_allocated`` since the start or ``reset_peak_memory_stats`` (bytes)."""
    return _memory.max_memory_allocated(_dev(device_index))


def memory_reserved(device_index=None, /) -> int:
    """Bytes the allocator holds on the device, allocated plus cached."""
    return _memory.memory_reserved(_dev(device_index))


def max_memory_reserved(device_index=None, /) -> int:
    """Peak of ``memory_reserved`` (bytes)."""
    return _memory.max_memory_reserved(_dev(device_index))


def reset_peak_memory_stats(device_index=None, /) -> None:
    """Set the peaks of the device's statistics to their current values."""
    _memory.reset_peak_memory_stats(_dev(device_index))


def empty_cache() -> None:
    """Return the cached, unused blocks of every device of the accelerator's type (matches
    torch.accelerator.empty_cache)."""
    kind, _ = _runtime()
    _registry.device_type(kind).module.empty_cache()


def empty_host_cache() -> None:
    """Nothing to free: ember's pinned host memory comes from the runtime per tensor, with no cache.
    RuntimeError when there is no accelerator, as torch.accelerator.empty_host_cache."""
    _runtime()


def get_memory_info(device_index=None, /) -> tuple:
    """(free, total) bytes of the device, from the runtime's optional ``mem_get_info(index)``;
    NotImplementedError naming the plugin when its runtime does not report it. Matches
    torch.accelerator.get_memory_info."""
    dev = _dev(device_index)
    rt = _registry.device_type(dev.type).runtime
    f = getattr(rt, "mem_get_info", None)
    if f is None:
        raise NotImplementedError(f"get_memory_info: the '{dev.type}' device (plugin "
                                  f"'{_registry.device_type(dev.type).plugin}') does not report its free memory")
    free, total = f(dev.index or 0)
    return int(free), int(total)
