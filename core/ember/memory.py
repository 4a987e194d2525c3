"""Device-generic memory statistics (the fixed schema of ``ember._allocator.STAT_KEYS``).

Matches torch.cuda.memory_allocated & co., for any device: ``ember.memory.memory_allocated("opencl:0")``.
Each device module re-exports them with its own device as the default
(``ember.cuda.memory_allocated()``).
"""
from __future__ import annotations

from . import _registry
from ._allocator import OutOfMemoryError, format_bytes

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "empty_cache", "memory_stats", "memory_summary",
           "set_per_process_memory_fraction", "OutOfMemoryError"]


def _allocator(device):
    from ._factory import allocator_for
    return allocator_for(_registry.canonical_device(device))


def memory_allocated(device=None) -> int:
    """Bytes currently held by live tensors on ``device`` (rounded to the allocator's bins)."""
    return _allocator(device).stats["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    """Peak of ``memory_allocated`` since start or ``reset_peak_memory_stats``."""
    return _allocator(device).stats["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    """Bytes obtained from the device: allocated plus cached."""
    return _allocator(device).stats["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    """Peak of ``memory_reserved``."""
    return _allocator(device).stats["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None) -> None:
    """Set the peaks to the current values."""
    _allocator(device).reset_peak_memory_stats()


def empty_cache(device=None) -> None:
    """Return cached, unused blocks to the device (all devices of the type when ``device`` is None)."""
    if device is None:
        from ._factory import _allocators
        for a in list(_allocators.values()):
            a.empty_cache()
        return
    _allocator(device).empty_cache()


def memory_stats(device=None) -> dict:
    """A dict with the fixed keys of ``STAT_KEYS`` (PyTorch's names)."""
    return dict(_allocator(device).stats)


def memory_summary(device=None, abbreviated=False) -> str:
    """A human-readable table of ``memory_stats``."""
    a = _allocator(device)
    s = a.stats
    lines = [f"ember memory summary, device {a.device}", "-" * 48]
    for k in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
              "reserved_bytes.all.peak"):
        lines.append(f"{k:<36}{format_bytes(s[k]):>12}")
    for k in ("allocation.all.current", "allocation.all.peak", "num_alloc_retries", "num_ooms"):
        lines.append(f"{k:<36}{s[k]:>12}")
    return "\n".join(lines)


def set_per_process_memory_fraction(fraction: float, device=None, total_memory: int = None) -> None:
    """Cap this process's reserved memory on ``device`` at ``fraction`` of its total memory.

    ``total_memory`` (bytes) defaults to the runtime's ``total_memory(index)``.
    Raises ValueError for a fraction outside [0, 1].
    """
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    a = _allocator(device)
    if total_memory is None:
        rt = _registry.device_type(a.device.type).runtime
        try:
            total_memory = rt.total_memory(a.device.index or 0)
        except NotImplementedError:
            raise NotImplementedError(f"device type '{a.device.type}' (plugin "
                                      f"'{_registry.device_type(a.device.type).plugin}') does not report its total "
                                      f"memory; pass total_memory=") from None
    a.limit = int(fraction * total_memory)
