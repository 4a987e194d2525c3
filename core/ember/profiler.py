"""What ran where: fallback counts per op (the full per-op profiler comes with DESIGN §6's profiler work).

``fallback_counts()`` says which ops ran through a device's fallback (copy to cpu, run,
copy back) and how often, so a vendor sees what falls back; ``reset()`` clears it.
``copy_counts()`` / ``record_copies()`` say how copies between devices ran: directly (a runtime's
``copy_across``) or staged through host memory.

``record_fallbacks()`` counts only inside a ``with`` block::

    with ember.profiler.record_fallbacks() as rec:
        y = model(x.to("vdev"))
    print(rec.counts)            # {'erfinv': 3, ...}
    print(rec.by_key)            # {('erfinv', 'vdev', 'strided', 'float32'): 3, ...}

The environment variable ``EMBER_FALLBACK_WARN`` says what a fallback call does besides
being counted: ``once`` (default: one UserWarning per op), ``always`` (a warning on every
call) or ``error`` (RuntimeError naming the op and the dispatch key; nothing runs).
"""
from __future__ import annotations

import collections
import os

__all__ = ["fallback_counts", "reset", "record_fallbacks", "FallbackRecord", "fallback_warn_mode", "copy_counts",
           "compiled_graphs",
           "record_copies"]

_fallbacks: collections.Counter = collections.Counter()
_by_key: collections.Counter = collections.Counter()
_recorders: list = []
_copies: collections.Counter = collections.Counter()
_copy_recorders: list = []

#: the values EMBER_FALLBACK_WARN accepts
FALLBACK_WARN_MODES = ("once", "always", "error")


def _key_tuple(op_name, key):
    if key is None:
        return (op_name,)
    return (op_name,) + tuple("ANY" if k is None else getattr(k, "name", str(k)) for k in key)


def _count_fallback(op_name: str, key=None) -> None:
    """Called by the dispatcher each time an op runs through a device fallback."""
    _fallbacks[op_name] += 1
    k = _key_tuple(op_name, key)
    _by_key[k] += 1
    for rec in _recorders:
        rec.counts[op_name] = rec.counts.get(op_name, 0) + 1
        rec.by_key[k] = rec.by_key.get(k, 0) + 1


def fallback_counts(by_key: bool = False) -> dict:
    """{op name: number of calls that ran through a device fallback} since start or ``reset()``.

    With ``by_key=True`` the keys are ``(op name, device type, layout, dtype)`` tuples."""
    return dict(_by_key) if by_key else dict(_fallbacks)


def reset() -> None:
    """Clear the counts (fallbacks and copies)."""
    _fallbacks.clear()
    _by_key.clear()
    _copies.clear()


def _count_copy(src_type: str, dst_type: str, path: str) -> None:
    """Called by ``copy_`` for each copy between two devices; ``path`` is "direct" or "host"."""
    k = (src_type, dst_type, path)
    _copies[k] += 1
    for rec in _copy_recorders:
        rec[k] = rec.get(k, 0) + 1


def copy_counts() -> dict:
    """{(source device type, destination device type, path): copies} since start or ``reset()``, for
    copies between two devices: ``path`` is "direct" when a runtime's ``copy_across`` did the copy
    (peer-to-peer, DMA), "host" when the core staged it through host memory. Copies within one
    device are kernels (``copy_``) and are not counted here."""
    return dict(_copies)


class record_copies:
    """Context manager counting the copies between devices made inside it, as ``copy_counts`` does;
    ``__enter__`` returns the dict that fills up (nests)."""

    def __enter__(self) -> dict:
        self.record = {}
        _copy_recorders.append(self.record)
        return self.record

    def __exit__(self, *exc):
        _copy_recorders.remove(self.record)
        return False


class FallbackRecord:
    """The fallbacks counted inside one ``record_fallbacks()`` block.

    ``counts``: {op name: calls}; ``by_key``: {(op name, device type, layout, dtype): calls};
    ``total``: the number of fallback calls."""

    def __init__(self):
        self.counts: dict = {}
        self.by_key: dict = {}

    @property
    def total(self) -> int:
        """Fallback calls recorded, over every op and key."""
        return sum(self.counts.values())

    def __repr__(self):
        return f"FallbackRecord({self.counts})"


class record_fallbacks:
    """Context manager counting the fallback calls made inside it (nests; the global counts
    of ``fallback_counts`` keep counting too). ``__enter__`` returns a ``FallbackRecord``."""

    def __enter__(self) -> FallbackRecord:
        self.record = FallbackRecord()
        _recorders.append(self.record)
        return self.record

    def __exit__(self, *exc):
        _recorders.remove(self.record)
        return False


def compiled_graphs() -> list:
    """What ``ember.compile`` captured: one dict per compiled function and signature, with ``function``,
    ``calls``, ``replays``, ``kernel_calls`` (recorded kernels replayed per call), ``fused_kernels`` (runs of
    elementwise kernels the device's fuser replaced with one call each), ``kernel_launches`` (kernel calls per
    replay after fusion), ``checked_on_replay`` (host
    reads of ember's own code and data-dependent shapes, re-checked on each replay), ``graph_breaks``
    ([(what, "file:line")] host reads in the user's code), ``static_inputs``, ``mismatches`` (replays that
    stopped and ran eagerly), ``memory_plan`` (``{"planned", "bytes_before", "buffers", "bytes_after"}``: the
    intermediate storages eager code allocates per step, and the buffers the replay shares among them by
    liveness; None when planning is off), ``split`` (for a signature cut at a graph break: ``{"at", "statement",
    "segments"}``, each segment - ``prefix``, ``break``, ``rest`` - with its source lines and, when compiled, its
    own rows; else None) and ``eager_reason`` (why the signature runs eagerly, or None).
    ``EMBER_COMPILE_DEBUG=1`` prints each capture as it happens."""
    from .compiler._compiled import _REGISTRY
    rows = []
    for cf in _REGISTRY:
        rows.extend(cf.info())
    return rows


def fallback_warn_mode() -> str:
    """The current ``EMBER_FALLBACK_WARN`` mode: 'once' (default), 'always' or 'error'.

    :raises ValueError: for any other value (a typo must not silently change what is reported)."""
    mode = os.environ.get("EMBER_FALLBACK_WARN", "once").strip().lower() or "once"
    if mode not in FALLBACK_WARN_MODES:
        raise ValueError(f"EMBER_FALLBACK_WARN={mode!r} is not one of {', '.join(FALLBACK_WARN_MODES)}")
    return mode
