"""ember-opencl (on PoCL here) side by side with numpy and ember-cpu on the same machine, in one run.

    python benchmarks/bench_opencl.py [--device opencl:0]

- 1024x1024 float32 matmul: GFLOP/s of ember on opencl against numpy's BLAS (target >= 30 %)
- 10M-element float32 add: time against numpy (target <= 2x)
- sum over 10M float32 elements: time against numpy
- one MLP 64-128-10 + Adam training step (batch 64): opencl against ember-cpu
- kernel compile time: the first ``a + b`` of a fresh process with an empty on-disk kernel cache
  (cold) and with the cache warm (cached), each in a subprocess

Every opencl timing ends with ``ember.opencl.synchronize()``; each figure is the median of
``--repeat`` rounds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import ember


def med(fn, repeat, number=1):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t0) / number)
    return statistics.median(ts)


def sync():
    ember.opencl.synchronize()


_FIRST_ADD = """
import time, ember
t0 = time.perf_counter()
a = ember.ones(1000, device="{dev}")
b = (a + a).sum().item()
print(time.perf_counter() - t0)
"""


def compile_times(dev):
    """(cold, cached) seconds of a fresh process's first add + sum on ``dev``."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYOPENCL_CACHE_DIR=cache, XDG_CACHE_HOME=cache, POCL_CACHE_DIR=cache)
        run = lambda: float(subprocess.run([sys.executable, "-c", _FIRST_ADD.format(dev=dev)], env=env,
                                           capture_output=True, text=True, check=True).stdout.split()[-1])
        return run(), run()


def mlp_step(device):
    ember.manual_seed(0)
    nn = ember.nn
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.random((64, 64), dtype=np.float32), device=device)
    y = ember.tensor(rng.integers(0, 10, 64), device=device)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()      # one host read per step, as a training loop logging its loss does
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="opencl:0")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    dev = args.device
    print(f"ember {ember.__version__} | numpy {np.__version__} | {dev}: {ember.opencl.get_device_name(0)}")
    rng = np.random.default_rng(0)

    a = rng.random((1024, 1024), dtype=np.float32)
    b = rng.random((1024, 1024), dtype=np.float32)
    ea, eb = ember.tensor(a, device=dev), ember.tensor(b, device=dev)
    t_np = med(lambda: a @ b, args.repeat)
    t_cl = med(lambda: (ea @ eb, sync()), args.repeat)
    gf = lambda t: 2 * 1024 ** 3 / t / 1e9
    print(f"matmul 1024^2 f32: opencl {gf(t_cl):7.1f} GFLOP/s   numpy {gf(t_np):7.1f} GFLOP/s   "
          f"opencl/numpy {t_np / t_cl:5.2f} (target >= 0.30)")

    n = 10_000_000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    ex, ey = ember.tensor(x, device=dev), ember.tensor(y, device=dev)
    t_np = med(lambda: x + y, args.repeat)
    t_cl = med(lambda: (ex + ey, sync()), args.repeat)
    print(f"add 10M f32:       opencl {t_cl * 1e3:7.2f} ms   numpy {t_np * 1e3:7.2f} ms   ratio {t_cl / t_np:5.2f}x "
          f"(target <= 2x)")
    t_np = med(lambda: x.sum(), args.repeat)
    t_cl = med(lambda: ex.sum().item(), args.repeat)
    print(f"sum 10M f32:       opencl {t_cl * 1e3:7.2f} ms   numpy {t_np * 1e3:7.2f} ms   ratio {t_cl / t_np:5.2f}x")

    t_cpu = med(mlp_step("cpu"), args.repeat, number=20)
    t_cl = med(mlp_step(dev), args.repeat, number=20)
    print(f"MLP step (64-128-10, Adam, batch 64): opencl {t_cl * 1e3:7.2f} ms   ember-cpu {t_cpu * 1e3:7.2f} ms   "
          f"ratio {t_cl / t_cpu:5.2f}x")

    cold, cached = compile_times(dev)
    print(f"first add + sum of a fresh process: cold kernel cache {cold:6.2f} s, warm cache {cached:6.2f} s")


if __name__ == "__main__":
    main()
