"""What a device fallback costs per call, against a native kernel on the same device.

    python benchmarks/bench_fallback.py

Registers a throwaway device type 'benchdev' (memory: numpy byte buffers, like a simple
vendor plugin) with native kernels for copy_, fill_ and ``add``, and ember.library.cpu_fallback
for everything else. ``x + y`` then runs natively and ``x * y`` through the fallback (copy the
inputs to cpu, run the cpu kernel, copy the result back); the same numpy work is done by both
kernels, so the ratio is the fallback's overhead. Both are timed side by side, per size, and the
number of fallback calls is read back from ``ember.profiler.record_fallbacks()``. With the
reference plugin installed, ``EMBER_VDEV_FALLBACK=1`` adds the same measurement on vdev
(its ``add`` is native, ``mul`` is native too, so there it times an op without a kernel: ``atan``
if it has no composite, else it is skipped).
"""
from __future__ import annotations

import os
import timeit
import warnings

import numpy as np

import ember
import ember.library as L
import ember.profiler
from ember.plugins import hookimpl
from ember.testing import HostMemoryRuntime


class BenchRuntime(HostMemoryRuntime):
    name = "benchdev"

    def allocate(self, nbytes, device_index):
        return np.empty(nbytes, np.uint8)


class BenchPlugin:
    rt = BenchRuntime()

    @hookimpl
    def ember_plugin_info(self):
        return {"name": "benchdev", "version": "0", "api_version": "1.0",
                "provides": {"device_types": ["benchdev"]}}

    @hookimpl
    def ember_register(self, registry):
        rt = self.rt

        def add(self, other, *, alpha=1, out):
            o = rt.view(other) if isinstance(other, ember.Tensor) else other
            np.add(rt.view(self), o if alpha == 1 else o * alpha, out=rt.view(out), casting="unsafe")

        registry.register_device_type("benchdev", rt)
        lib = registry.library("benchdev")
        rt.register_copy_and_fill(lib)
        lib.impl("add", add, device="benchdev", dtypes=L.ALL_DENSE)
        registry.register_fallback("benchdev", L.cpu_fallback)


def best_us(fn, number):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def measure(label, device, native, fallback, sizes=(16, 4096, 1 << 20)):
    print(f"{label}: native vs fallback, per call")
    for n in sizes:
        x = ember.rand(n).to(device)
        y = ember.rand(n).to(device)
        number = max(20, 200000 // max(n // 64, 1) // 10) if n < (1 << 20) else 20
        with ember.profiler.record_fallbacks() as rec:
            tf = best_us(lambda: fallback(x, y), number)
        tn = best_us(lambda: native(x, y), number)
        assert rec.total > 0, "the 'fallback' op did not run through the fallback"
        print(f"  n={n:>8}: native {tn:9.2f} us   fallback {tf:9.2f} us   fallback/native {tf / tn:6.2f}"
              f"   ({rec.total} fallback calls counted)")


def main():
    warnings.simplefilter("ignore")          # the once-per-op fallback warning
    ember.plugins.register(BenchPlugin(), name="benchdev")
    try:
        measure("benchdev (add native, mul through cpu_fallback)", "benchdev",
                lambda x, y: x + y, lambda x, y: x * y)
        tc = best_us(lambda: ember.rand(16) * ember.rand(16), 20000)
        print(f"  (for scale: cpu rand(16) * rand(16) incl. allocation: {tc:.2f} us)")
    finally:
        ember.plugins.unregister("benchdev")
    if os.environ.get("EMBER_VDEV_FALLBACK") == "1" and "vdev" in ember._registry.device_types:
        op = ember._dispatch.ops.get("atan")
        key = ("vdev", "strided", ember.float32)
        if op is not None and op.source(key) == "fallback":
            measure("vdev (add native, atan through the fallback)", "vdev", lambda x, y: x + y,
                    lambda x, y: ember.atan(x))
        else:
            print("vdev: atan does not run through the fallback there; nothing to compare")


if __name__ == "__main__":
    main()
