"""What a vendor plugin pays per op over ember-cpu, side by side in one run.

    python benchmarks/bench_vendor.py

The reference vendor plugin (examples/vendor_plugin, device ``vdev``) computes with the same
numpy as ember-cpu, so the difference between the two is the kernel API: reaching the device
memory (``ember.library.native_view`` / ``geometry``), the core's caching allocator for a
non-host device, and the kernel's own checks. Printed per op, for float32 operands of shape
64x128: microseconds on cpu, on vdev, and the ratio vdev / cpu (issue 20's target: <= 1.3x),
with numpy's own ufunc for scale. Needs ember-vdev installed (pip install ./examples/vendor_plugin).

Timed in alternation (``_timing.paired``: calls of 200 ops, median of 60 rounds); not a test:
it prints, it asserts nothing.
"""
from __future__ import annotations

import numpy as np

import ember
from _timing import paired

N = 200


def per_op_us(fn):
    def run():
        for _ in range(N):
            fn()
    return run


def main():
    if not _has_vdev():
        print("ember-vdev is not installed: pip install ./examples/vendor_plugin")
        return
    rows = []
    xs = {d: (ember.randn(64, 128, device=d), ember.randn(64, 128, device=d)) for d in ("cpu", "vdev")}
    a, b = np.random.randn(64, 128).astype(np.float32), np.random.randn(64, 128).astype(np.float32)
    cases = [("x + y", lambda x, y: x + y, lambda: np.add(a, b)),
             ("x * y", lambda x, y: x * y, lambda: np.multiply(a, b)),
             ("x.exp()", lambda x, y: x.exp(), lambda: np.exp(a))]
    for name, op, ref in cases:
        fns = [per_op_us(lambda op=op, d=d: op(*xs[d])) for d in ("cpu", "vdev")] + [per_op_us(ref)]
        cpu, vdev, numpy = (t / N * 1e6 for t in paired(fns, repeat=60))
        rows.append((name, cpu, vdev, numpy))
    print(f"{'op (64x128 float32)':<22}{'cpu us':>9}{'vdev us':>9}{'vdev/cpu':>10}{'numpy us':>10}")
    for name, cpu, vdev, numpy in rows:
        print(f"{name:<22}{cpu:>9.2f}{vdev:>9.2f}{vdev / cpu:>9.2f}x{numpy:>10.2f}")


def _has_vdev():
    try:
        ember.device("vdev")
        ember.empty(1, device="vdev")
        return True
    except RuntimeError:
        return False


if __name__ == "__main__":
    main()
