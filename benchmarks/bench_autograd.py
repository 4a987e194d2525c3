"""What autograd adds per op, side by side with PyTorch (issue 3, item 9).

    python benchmarks/bench_autograd.py

1. ``a * b`` on 4-element float32 tensors, with and without ``requires_grad=True``:
   the added time per recorded op, ember's against PyTorch's (target: ember's added
   time <= 1.5x PyTorch's).
2. Backward over a chain of 1000 small ops (``x = x * 1.0001 + 0.5``... on 4 elements):
   time per graph node, ember against PyTorch.

Everything runs in this one process, best of several repeats. Not a test: it prints.
"""
from __future__ import annotations

import platform
import timeit

import ember

try:
    import torch
except ImportError:  # the PyTorch columns are skipped without it
    torch = None


def best(fn, number, repeat=7):
    """Best time per call in microseconds."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def op_overhead(lib):
    a, b = lib.ones(4), lib.ones(4)
    ga, gb = lib.ones(4, requires_grad=True), lib.ones(4, requires_grad=True)
    plain = best(lambda: a * b, 100000)
    grad = best(lambda: ga * gb, 100000)
    return plain, grad


def chain_backward(lib, n=1000):
    x0 = lib.ones(4, requires_grad=True)

    def run():
        x = x0
        for _ in range(n // 2):
            x = x * 1.0001
            x = x + 0.5
        x.sum().backward()
    fwd_only = best(lambda: _forward(lib, x0, n), 3, repeat=5)
    total = best(run, 3, repeat=5)
    return (total - fwd_only) / (n + 1), fwd_only / n


def _forward(lib, x0, n):
    x = x0
    for _ in range(n // 2):
        x = x * 1.0001
        x = x + 0.5
    return x


def main():
    print(f"python {platform.python_version()}, torch {torch.__version__ if torch else 'not installed'}, "
          f"{platform.machine()}")
    e_plain, e_grad = op_overhead(ember)
    print(f"ember  a * b (4 x float32): {e_plain:6.2f} us plain, {e_grad:6.2f} us with requires_grad, "
          f"added {e_grad - e_plain:5.2f} us")
    if torch is not None:
        t_plain, t_grad = op_overhead(torch)
        print(f"torch  a * b (4 x float32): {t_plain:6.2f} us plain, {t_grad:6.2f} us with requires_grad, "
              f"added {t_grad - t_plain:5.2f} us")
        ratio = (e_grad - e_plain) / (t_grad - t_plain)
        print(f"added time per recorded op, ember / torch: {ratio:.2f}  (target <= 1.5: "
              f"{'met' if ratio <= 1.5 else 'NOT met'})")
    e_node, e_fwd = chain_backward(ember)
    print(f"ember  backward over a 1000-op chain: {e_node:6.2f} us per node (forward {e_fwd:5.2f} us per op)")
    if torch is not None:
        t_node, t_fwd = chain_backward(torch)
        print(f"torch  backward over a 1000-op chain: {t_node:6.2f} us per node (forward {t_fwd:5.2f} us per op)")
        print(f"backward time per node, ember / torch: {e_node / t_node:.2f}")


if __name__ == "__main__":
    main()
