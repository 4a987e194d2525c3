"""Side-by-side timings of ember against numpy and PyTorch (when installed), printing ratios.

    python benchmarks/bench_core.py

Targets (issue 2): a + b on 4-element float32 <= 1.5x PyTorch; x.view(2, 2) <= 1.5x
PyTorch; 10M-element float32 add <= 1.1x numpy's np.add with a fresh output;
1024x1024 float32 matmul <= 1.05x numpy. Each case is timed as the best of several
repeats of a loop, all in this one process, so the ratios compare like with like.
Not a test: it prints, it asserts nothing.
"""
from __future__ import annotations

import platform
import timeit

import numpy as np

import ember

try:
    import torch
except ImportError:  # PyTorch is optional: ratios against it are skipped
    torch = None


def best(fn, number, repeat=7):
    """Best time per call in microseconds."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def row(name, ember_us, ref_name, ref_us, target):
    ratio = ember_us / ref_us
    ok = "met" if ratio <= target else "NOT met"
    print(f"{name:<34} ember {ember_us:10.2f} us   {ref_name:<8} {ref_us:10.2f} us   ratio {ratio:5.2f}  "
          f"(target <= {target}: {ok})")
    return ratio


def main():
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not installed'}, {platform.machine()}")
    results = {}

    a, b = ember.ones(4), ember.ones(4)
    e = best(lambda: a + b, 100000)
    if torch is not None:
        ta, tb = torch.ones(4), torch.ones(4)
        results["add4"] = row("a + b, 4 x float32", e, "torch", best(lambda: ta + tb, 100000), 1.5)
    na, nb = np.ones(4, np.float32), np.ones(4, np.float32)
    row("a + b, 4 x float32 (vs numpy)", e, "numpy", best(lambda: na + nb, 100000), 99)

    v = ember.ones(4)
    e = best(lambda: v.view(2, 2), 100000)
    if torch is not None:
        tv = torch.ones(4)
        results["view"] = row("x.view(2, 2)", e, "torch", best(lambda: tv.view(2, 2), 100000), 1.5)

    n = 10_000_000
    big_a, big_b = ember.rand(n), ember.rand(n)
    nba, nbb = big_a.numpy(), big_b.numpy()
    e = best(lambda: big_a + big_b, 20)
    results["add10M"] = row("10M float32 add (fresh output)", e, "numpy", best(lambda: np.add(nba, nbb), 20), 1.1)
    if torch is not None:
        tba, tbb = torch.from_numpy(nba), torch.from_numpy(nbb)
        row("10M float32 add (vs torch)", e, "torch", best(lambda: tba + tbb, 20), 99)

    m1, m2 = ember.rand(1024, 1024), ember.rand(1024, 1024)
    nm1, nm2 = m1.numpy(), m2.numpy()
    e = best(lambda: m1 @ m2, 10, repeat=5)
    results["matmul"] = row("1024x1024 float32 matmul", e, "numpy", best(lambda: nm1 @ nm2, 10, repeat=5), 1.05)
    if torch is not None:
        tm1, tm2 = torch.from_numpy(nm1), torch.from_numpy(nm2)
        row("1024x1024 matmul (vs torch)", e, "torch", best(lambda: tm1 @ tm2, 10, repeat=5), 99)
    return results


if __name__ == "__main__":
    main()
