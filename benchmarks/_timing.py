"""Timing helper shared by the benchmarks (imported as a sibling module: the benchmarks run as
scripts, ``python benchmarks/bench_x.py``, so their directory is on sys.path)."""
from __future__ import annotations

import statistics
import time

__all__ = ["paired"]


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
