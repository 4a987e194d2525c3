"""Where the per-op time of ``a + b`` (4-element float32) goes, stage by stage.

    python benchmarks/profile_add.py

Times each stage of the generated entry point in isolation (meta, kernel lookup,
output allocation + release, the cpu kernel, numpy's ufunc alone) next to the whole
call, so the overhead above numpy can be attributed. Prints microseconds per call.
"""
from __future__ import annotations

import timeit

import numpy as np

import ember
from ember._factory import empty_on


def best(fn, number=200000):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def main():
    a, b = ember.ones(4), ember.ones(4)
    a + b
    op = ember.add._op
    dev, key, shape, dtype = op.meta(a, b, 1)
    kernel = op.cache[key]
    out = empty_on(shape, dtype, dev)
    na, nout = np.ones(4, np.float32), np.empty(4, np.float32)
    stages = [
        ("empty lambda (timing floor)", lambda: None),
        ("meta (memoised)", lambda: op.meta(a, b, 1)),
        ("kernel lookup", lambda: op.cache.get(key) or op.resolve(key)),
        ("allocate + free the output", lambda: empty_on(shape, dtype, dev)),
        ("cpu kernel (into existing out)", lambda: kernel(a, b, alpha=1, out=out)),
        ("  of which np.add(out=)", lambda: np.add(na, na, out=nout)),
        ("whole a + b", lambda: a + b),
    ]
    for name, fn in stages:
        print(f"{name:<34}{best(fn):8.3f} us")


if __name__ == "__main__":
    main()
