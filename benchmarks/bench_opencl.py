"""ember-opencl on each OpenCL runtime of this machine, side by side with numpy and ember-cpu, in one run.

    python benchmarks/bench_opencl.py [--repeat 5] [--runtimes intel,pocl]

For every runtime found (Intel's CPU runtime, PoCL, any GPU platform), a child process pinned to it with
``EMBER_OPENCL_PLATFORM`` measures, each against numpy / ember-cpu timed in the same process:

- 1024x1024 float32 matmul: GFLOP/s of ember on opencl as a fraction of numpy's BLAS (target >= 0.50 on
  the faster runtime)
- 10M-element float32 add: time against numpy
- sum over 10M float32 elements: time against numpy
- one MLP 64-128-10 + Adam training step (batch 64): opencl against ember-cpu
- launch overhead: microseconds per small kernel, as the runtime sees it (pyopencl enqueue of a trivial
  kernel, 10k launches then one finish) and as ember sees it (``t.add_(1)`` on a 16-element tensor:
  dispatch + launch)
- the probe (a trivial kernel built and run at discovery) and the first add + sum of a fresh process with
  an empty on-disk kernel cache (cold) and with the cache warm

Every opencl timing ends with ``ember.opencl.synchronize()``; each figure is the median of ``--repeat``
rounds. A runtime whose device fails the probe is listed with the reason.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def med(fn, repeat, number=1):
    """Median seconds per call of ``fn`` over ``repeat`` rounds of ``number`` calls (one warm-up call first)."""
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t0) / number)
    return statistics.median(ts)


_FIRST_ADD = """
import time, ember
t0 = time.perf_counter()
a = ember.ones(1000, device="opencl")
b = (a + a).sum().item()
print(time.perf_counter() - t0)
"""


def compile_times():
    """(cold, cached) seconds of a fresh process's first add + sum on opencl (the platform from the environment)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYOPENCL_CACHE_DIR=cache, XDG_CACHE_HOME=cache, POCL_CACHE_DIR=cache)
        run = lambda: float(subprocess.run([sys.executable, "-c", _FIRST_ADD], env=env, capture_output=True,
                                           text=True, check=True).stdout.split()[-1])
        return run(), run()


def mlp_step(ember, device):
    """A closure running one training step of a 64-128-10 MLP with Adam on ``device`` (returns the loss)."""
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


def raw_launch_us(state, n=10_000):
    """Microseconds per enqueue of a trivial kernel through pyopencl (the runtime's own launch cost)."""
    import pyopencl as cl
    prg = cl.Program(state.context, "__kernel void k(__global int* a) { a[get_global_id(0)] += 1; }").build()
    buf = cl.Buffer(state.context, cl.mem_flags.READ_WRITE, 64)
    k = prg.k
    k.set_args(buf)
    cl.enqueue_nd_range_kernel(state.queue, k, (16,), None)
    state.queue.finish()
    t0 = time.perf_counter()
    for _ in range(n):
        cl.enqueue_nd_range_kernel(state.queue, k, (16,), None)
    state.queue.finish()
    return (time.perf_counter() - t0) / n * 1e6


def child(repeat) -> dict:
    """Measure everything on the platform EMBER_OPENCL_PLATFORM selects; a dict of figures."""
    import ember
    from ember_opencl._runtime import RUNTIME
    if not ember.opencl.is_available():
        return {"unavailable": ember.opencl.unavailable_reason()}
    dev = "opencl:0"
    sync = ember.opencl.synchronize
    props = ember.opencl.get_device_properties(0)
    out = {"device": ember.opencl.get_device_name(0), "runtime": props["runtime"], "fp16": props["fp16"],
           "probe_ms": next(r.seconds for r in RUNTIME.reports() if r.status == "available") * 1e3}
    rng = np.random.default_rng(0)
    a, b = rng.random((1024, 1024), dtype=np.float32), rng.random((1024, 1024), dtype=np.float32)
    ea, eb = ember.tensor(a, device=dev), ember.tensor(b, device=dev)
    gf = lambda t: 2 * 1024 ** 3 / t / 1e9
    out["gemm_numpy"] = gf(med(lambda: a @ b, repeat))
    out["gemm"] = gf(med(lambda: (ea @ eb, sync()), repeat))
    n = 10_000_000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    ex, ey = ember.tensor(x, device=dev), ember.tensor(y, device=dev)
    out["add_numpy_ms"] = med(lambda: x + y, repeat) * 1e3
    out["add_ms"] = med(lambda: (ex + ey, sync()), repeat) * 1e3
    out["sum_numpy_ms"] = med(lambda: x.sum(), repeat) * 1e3
    out["sum_ms"] = med(lambda: ex.sum().item(), repeat) * 1e3
    out["mlp_cpu_ms"] = med(mlp_step(ember, "cpu"), repeat, number=20) * 1e3
    out["mlp_ms"] = med(mlp_step(ember, dev), repeat, number=20) * 1e3
    out["launch_raw_us"] = statistics.median(raw_launch_us(RUNTIME.state(0)) for _ in range(3))
    small = ember.zeros(16, device=dev)
    out["launch_ember_us"] = med(lambda: (small.add_(1), None), 3, number=2000) * 1e6
    sync()
    out["first_op_cold_s"], out["first_op_cached_s"] = compile_times()
    return out


def runtimes() -> list:
    """The aliases of the OpenCL platforms this machine lists ("intel", "pocl", ...), without probing."""
    from ember_opencl import _icd, _runtime
    _icd.expose_installed_runtimes()
    import pyopencl as cl
    seen = []
    for p in cl.get_platforms():
        a = _runtime.platform_alias(p)
        if a not in seen:
            seen.append(a)
    return seen


ROWS = [
    ("float16 (cl_khr_fp16)", lambda r: "yes" if r["fp16"] else "no"),
    ("probe (warm disk cache), ms", lambda r: f"{r['probe_ms']:.0f}"),
    ("matmul 1024² f32, GFLOP/s", lambda r: f"{r['gemm']:.1f}"),
    ("  numpy, GFLOP/s", lambda r: f"{r['gemm_numpy']:.1f}"),
    ("  fraction of numpy (>= 0.50)", lambda r: f"{r['gemm'] / r['gemm_numpy']:.2f}"),
    ("add 10M f32, ms", lambda r: f"{r['add_ms']:.2f}"),
    ("  numpy, ms", lambda r: f"{r['add_numpy_ms']:.2f}"),
    ("  ratio to numpy", lambda r: f"{r['add_ms'] / r['add_numpy_ms']:.2f}x"),
    ("sum 10M f32, ms", lambda r: f"{r['sum_ms']:.2f}"),
    ("  ratio to numpy", lambda r: f"{r['sum_ms'] / r['sum_numpy_ms']:.2f}x"),
    ("MLP step 64-128-10 Adam, ms", lambda r: f"{r['mlp_ms']:.2f}"),
    ("  ember-cpu, ms", lambda r: f"{r['mlp_cpu_ms']:.2f}"),
    ("  ratio to ember-cpu", lambda r: f"{r['mlp_ms'] / r['mlp_cpu_ms']:.2f}x"),
    ("launch: pyopencl enqueue, µs", lambda r: f"{r['launch_raw_us']:.1f}"),
    ("launch: ember t.add_(1), µs", lambda r: f"{r['launch_ember_us']:.1f}"),
    ("first add+sum, cold cache, s", lambda r: f"{r['first_op_cold_s']:.2f}"),
    ("first add+sum, warm cache, s", lambda r: f"{r['first_op_cached_s']:.2f}"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runtimes", default=None, help="comma-separated platform names (default: every one found)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.repeat)))
        return
    import ember
    names = args.runtimes.split(",") if args.runtimes else runtimes()
    print(f"ember {ember.__version__} | numpy {np.__version__} | runtimes: {', '.join(names)}")
    results = {}
    for name in names:
        env = dict(os.environ, EMBER_OPENCL_PLATFORM=name)
        r = subprocess.run([sys.executable, __file__, "--child", "--repeat", str(args.repeat)], env=env,
                           capture_output=True, text=True)
        try:
            results[name] = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            results[name] = {"unavailable": f"the benchmark failed: {r.stderr.strip()[-500:]}"}
    ok = {n: r for n, r in results.items() if "unavailable" not in r}
    for n, r in results.items():
        if n not in ok:
            print(f"{n}: not measured - {r['unavailable']}")
    if not ok:
        return
    for n, r in ok.items():
        print(f"{n}: {r['device']}")
    w = max(len(label) for label, _ in ROWS)
    print("| " + "benchmark".ljust(w) + " | " + " | ".join(n.rjust(12) for n in ok) + " |")
    for label, fmt in ROWS:
        print("| " + label.ljust(w) + " | " + " | ".join(fmt(r).rjust(12) for r in ok.values()) + " |")
    best = max(ok.values(), key=lambda r: r["gemm"] / r["gemm_numpy"])
    print(f"GEMM on the faster runtime ({best['runtime']}): {best['gemm'] / best['gemm_numpy']:.2f} of numpy "
          f"(target >= 0.50)")


if __name__ == "__main__":
    main()
