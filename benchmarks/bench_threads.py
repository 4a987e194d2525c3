"""What per-thread autograd state costs, side by side with PyTorch, in one run.

    python benchmarks/bench_threads.py

- ``a + b`` on 4-element float32 tensors (target <= 1.5x PyTorch), in the main thread and in a
  worker thread (a thread's state is created on its first op), with no tensor requiring grad in
  the process and after one has (then every op looks at its inputs' requires_grad)
- 4 small MLPs trained by 4 threads at once against the same 4 trained one after another (the GIL
  serialises Python; the figure shows the threads do not slow each other beyond that)

Best of several repeats; not a test: it prints, it asserts nothing.
"""
from __future__ import annotations

import threading
import time
import timeit

import numpy as np

import ember

try:
    import torch
except ImportError:
    torch = None


def best_us(fn, number=20000, repeat=7):
    """Best time per call of ``fn`` in microseconds."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def add_case(lib):
    a, b = lib.ones(4), lib.ones(4)
    return lambda: a + b


def train(seed, steps=30):
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.standard_normal((64, 32), dtype=np.float32))
    y = ember.tensor(rng.integers(0, 10, 64))
    model = ember.nn.Sequential(ember.nn.Linear(32, 64), ember.nn.ReLU(), ember.nn.Linear(64, 10))
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        opt.zero_grad()
        ember.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def main():
    print(f"ember {ember.__version__}" + (f" | torch {torch.__version__}" if torch else " | torch not installed"))
    rows = []
    for label, requires_grad in (("no tensor has required grad", False), ("a tensor has required grad", True)):
        if requires_grad:
            ember.ones(1, requires_grad=True)
        e_main = best_us(add_case(ember))
        e_thread = in_thread(lambda: best_us(add_case(ember)))
        t_main = best_us(add_case(torch)) if torch else None
        rows.append((label, e_main, e_thread, t_main))
    print(f"{'a + b, 4 float32':<32} {'ember main':>11} {'ember thread':>13} {'torch':>8} {'ember/torch':>12}")
    for label, em, et, tm in rows:
        ratio = f"{em / tm:.2f}x" if tm else "-"
        print(f"{label:<32} {em:9.2f}us {et:11.2f}us {tm or float('nan'):6.2f}us {ratio:>12}  (target <= 1.5x)")
    t0 = time.perf_counter()
    for s in range(4):
        train(s)
    seq = time.perf_counter() - t0
    ts = [threading.Thread(target=train, args=(s,)) for s in range(4)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    par = time.perf_counter() - t0
    print(f"4 MLPs x 30 Adam steps: one after another {seq * 1e3:.0f} ms, 4 threads at once {par * 1e3:.0f} ms "
          f"({par / seq:.2f}x)")


if __name__ == "__main__":
    main()
