"""What ran where: fallback counts per op (the full per-op profiler comes with DESIGN §6's profiler work).

``fallback_counts()`` says which ops ran through a device's fallback (copy to cpu, run,
copy back) and how often, so a vendor sees what falls back; ``reset()`` clears it.
"""
from __future__ import annotations

import collections

__all__ = ["fallback_counts", "reset"]

_fallbacks: collections.Counter = collections.Counter()


def _count_fallback(op_name: str) -> None:
    _fallbacks[op_name] += 1


def fallback_counts() -> dict:
    """{op name: number of calls that ran through a device fallback} since start or ``reset()``."""
    return dict(_fallbacks)


def reset() -> None:
    """Clear the counts."""
    _fallbacks.clear()
