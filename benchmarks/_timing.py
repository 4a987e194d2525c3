"""Timing helper shared by the benchmarks (imported as a sibling module: the benchmarks run as
scripts, ``python benchmarks/bench_x.py``, so their directory is on sys.path)."""
from __future__ import annotations

import ctypes
import ctypes.util
import statistics
import time

__all__ = ["paired", "steady_heap"]


def steady_heap() -> bool:
    """Keep glibc's heap from returning memory to the system between allocations (``mallopt``: mmap threshold 32 MiB,
    its largest, and trim threshold 1 GiB), so that code timed in alternation with other code allocates as it would when run on its
    own. Without it glibc adapts its thresholds to whatever ran last, and a freed block comes back with fresh
    page faults: PyTorch's eager LSTM step measured 19.7 ms alternating with ember against 15.5 ms alone (one
    thread). Returns whether it applied (False off glibc)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def paired(fns, repeat, sync=None):
    """Median seconds of each of ``fns``, timed in alternation round by round, so load from other
    processes hits all of them alike. One warm-up call each first; ``sync()`` (a device's
    synchronize) ends every timed call when given."""
    for f in fns:
        f()
    if sync:
        sync()
    ts = [[] for _ in fns]
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            if sync:
                sync()
            ts[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in ts]
