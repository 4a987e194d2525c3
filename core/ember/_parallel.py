"""Intra-op threads: ``ember.set_num_threads`` / ``ember.get_num_threads`` (match torch's).

The core runs no threads of its own; a device runtime that computes on the host with a
thread pool (ember-cpu: the BLAS library numpy uses) offers the optional services
``set_num_threads(n)`` / ``get_num_threads()``, and these functions forward to them.
"""
from __future__ import annotations

import numbers

__all__ = ["set_num_threads", "get_num_threads"]


def _runtimes():
    from . import _registry
    _registry.ensure_loaded()
    return [dt.runtime for dt in _registry.device_types.values() if hasattr(dt.runtime, "set_num_threads")]


def set_num_threads(n: int) -> None:
    """Set the number of threads the host devices use inside one op (matches torch.set_num_threads).

    Process-wide, like PyTorch's. RuntimeError "set_num_threads expects a positive integer" for
    n < 1; TypeError for a non-integer."""
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"set_num_threads(): argument 'int' (position 1) must be int, not {type(n).__name__}")
    if n < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    for rt in _runtimes():
        rt.set_num_threads(int(n))


def get_num_threads() -> int:
    """The number of threads the host devices use inside one op (matches torch.get_num_threads);
    1 when no installed device has a thread pool."""
    counts = [rt.get_num_threads() for rt in _runtimes()]
    return max(counts, default=1)
