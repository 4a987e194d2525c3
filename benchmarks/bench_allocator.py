"""Why the cpu device uses the core's DirectAllocator rather than its CachingAllocator.

    python benchmarks/bench_allocator.py

Times a storage allocation + release on the host through both allocators, over the
same cpu runtime, for a small and a large size. numpy's own allocator keeps a cache
of small blocks in C, which a cache written in Python cannot beat. Prints ratios.
"""
from __future__ import annotations

import timeit

import ember
from ember import _registry
from ember._allocator import CachingAllocator, DirectAllocator


def best(fn, number):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def main():
    _registry.ensure_loaded()
    rt = _registry.device_type("cpu").runtime
    dev = ember.device("cpu")
    direct, caching = DirectAllocator(rt, dev), CachingAllocator(rt, dev)
    for nbytes, number in ((16, 100000), (4 << 20, 2000)):
        d = best(lambda: direct.malloc(nbytes), number)
        c = best(lambda: caching.malloc(nbytes), number)
        print(f"{nbytes:>9} bytes: direct {d:7.3f} us   caching {c:7.3f} us   caching/direct {c / d:5.2f}")


if __name__ == "__main__":
    main()
