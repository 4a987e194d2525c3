"""ember-cuda side by side with cupy and PyTorch (CUDA) on the same GPU, in one run.

    python benchmarks/bench_cuda.py [--device cuda:0] [--repeat 10] [--quick]

- 8192 x 8192 matmul, float32, float16 and bfloat16: TFLOP/s of ember against cupy and torch (all cuBLAS)
- 100M-element float32 add: GB/s (3 x 4 bytes per element) of ember against cupy and torch
- launch overhead: one small ``a + b`` (1000 elements), microseconds per call, against cupy and torch
- digits MLP and CNN training step (batch 64, Adam): ember against torch.cuda
- 8 x Linear(1024, 1024) + ReLU, batch 4096, one training step (SGD): ember against torch.cuda
- the same steps through ``ember.compile`` (captured once, replayed without ember's per-op Python work)
- the caching allocator: cudaMalloc calls (``num_device_alloc``) during the timed steps after step 1
- host -> device copies from pageable and pinned memory (GB/s), and how much of a pinned
  ``non_blocking`` copy on a side stream overlaps a matmul chain on the current stream

Every timing ends with a device synchronize; each figure is the median of ``--repeat`` rounds
after a warm-up round. PyTorch columns need a CUDA build of torch (``pip install torch`` with
CUDA); without one they read "n/a". Without a usable GPU the script exits with status 2 and
says why.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import ember
import numpy as np


def med(fn, sync, repeat, number=1):
    fn()
    sync()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / number)
    return statistics.median(ts)


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def bench_matmul(dev, cp, torch, repeat, n):
    from ember_cuda._backend import _cupy_bf16      # the plugin's own probe of cupy's bfloat16
    rows = []
    for name in ("float32", "float16", "bfloat16"):
        edt = getattr(ember, name)
        a = ember.randn(n, n, device=dev).to(edt)
        b = ember.randn(n, n, device=dev).to(edt)
        fl = 2.0 * n ** 3
        t_e = med(lambda a=a, b=b: a @ b, ember.cuda.synchronize, repeat)
        cdt = _cupy_bf16(cp) if name == "bfloat16" else cp.dtype(name)     # (n/a where cupy has no bfloat16)
        t_c = t_t = None
        if cdt is not None:
            ca = cp.random.standard_normal((n, n), dtype=cp.float32).astype(cdt)
            cb = cp.random.standard_normal((n, n), dtype=cp.float32).astype(cdt)
            t_c = med(lambda ca=ca, cb=cb: ca @ cb, cp.cuda.runtime.deviceSynchronize, repeat)
        if torch is not None:
            ta = torch.randn(n, n, device="cuda", dtype=getattr(torch, name))
            tb = torch.randn(n, n, device="cuda", dtype=getattr(torch, name))
            t_t = med(lambda ta=ta, tb=tb: ta @ tb, torch.cuda.synchronize, repeat)
        ref = t_c if t_c else t_t
        rows.append((f"matmul {n}^2 {name}", f"{fl / t_e / 1e12:.1f} TFLOP/s",
                     f"{fl / t_c / 1e12:.1f} TFLOP/s" if t_c else "n/a",
                     f"{fl / t_t / 1e12:.1f} TFLOP/s" if t_t else "n/a", f"{ref / t_e:.2f}" if ref else "n/a"))
    return rows


def bench_add(dev, cp, torch, repeat, n):
    a, b = ember.rand(n, device=dev), ember.rand(n, device=dev)
    out = ember.empty(n, device=dev)
    ca, cb, co = cp.asarray(a), cp.asarray(b), cp.asarray(out)
    t_e = med(lambda: ember.add(a, b, out=out), ember.cuda.synchronize, repeat)
    t_c = med(lambda: cp.add(ca, cb, out=co), cp.cuda.runtime.deviceSynchronize, repeat)
    gb = 12.0 * n / 1e9
    t_t = None
    if torch is not None:
        ta, tb, to = (torch.rand(n, device="cuda") for _ in range(3))
        t_t = med(lambda: torch.add(ta, tb, out=to), torch.cuda.synchronize, repeat)
    return [(f"add {n // 10**6}M float32", f"{gb / t_e:.0f} GB/s", f"{gb / t_c:.0f} GB/s",
             f"{gb / t_t:.0f} GB/s" if t_t else "n/a", f"{t_c / t_e:.2f}")]


def bench_launch(dev, cp, torch, repeat):
    a, b = ember.rand(1000, device=dev), ember.rand(1000, device=dev)
    ca, cb = cp.asarray(a), cp.asarray(b)
    t_e = med(lambda: a + b, ember.cuda.synchronize, repeat, number=1000)
    t_c = med(lambda: ca + cb, cp.cuda.runtime.deviceSynchronize, repeat, number=1000)
    t_t = None
    if torch is not None:
        ta, tb = torch.rand(1000, device="cuda"), torch.rand(1000, device="cuda")
        t_t = med(lambda: ta + tb, torch.cuda.synchronize, repeat, number=1000)
    ref = t_t if t_t else t_c
    return [("launch a+b (1000 el.)", f"{t_e * 1e6:.1f} us", f"{t_c * 1e6:.1f} us",
             f"{t_t * 1e6:.1f} us" if t_t else "n/a", f"{ref / t_e:.2f}")]


def _ember_step(model, opt, x, y):
    def step():
        loss = ember.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def _torch_step(torch, model, opt, x, y):
    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def _torch_model(torch, kind):
    nn = torch.nn
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Dropout(0.25),
                             nn.Linear(512, 10))
    layers = []
    for _ in range(8):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _ember_model(kind):
    if kind in ("mlp", "cnn"):
        from ember.examples.digits import build_model
        return build_model(kind)
    nn = ember.nn
    layers = []
    for _ in range(8):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _profile(kind, step, n=10, top=25):
    """cProfile of ``n`` synchronised steps: where the host time of a training step goes."""
    import cProfile
    import io
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        step()
    ember.cuda.synchronize()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    print(f"---- profile of {n} steps, {kind}\n" + "\n".join(ln for ln in buf.getvalue().splitlines() if ln.strip()))


def bench_training(dev, torch, repeat, profile=False):
    rows = []
    for kind, batch, shape, classes, optim in (("mlp", 64, (1, 8, 8), 10, "adam"), ("cnn", 64, (1, 8, 8), 10, "adam"),
                                                ("mlp 8x1024", 4096, (1024,), 1024, "sgd")):
        key = kind.split()[0] if kind != "mlp 8x1024" else "wide"
        x_np = np.random.default_rng(0).random((batch, *shape), dtype=np.float32)
        y_np = np.random.default_rng(1).integers(0, classes, batch)
        m = _ember_model(key).to(dev)
        opt = (ember.optim.Adam(m.parameters(), lr=1e-3) if optim == "adam"
               else ember.optim.SGD(m.parameters(), lr=1e-3))
        x, y = ember.tensor(x_np, device=dev), ember.tensor(y_np, device=dev)
        step = _ember_step(m, opt, x, y)
        step()
        ember.cuda.synchronize()
        before = ember.cuda.memory_stats()["num_device_alloc"]
        t_e = med(step, ember.cuda.synchronize, repeat)
        new_allocs = ember.cuda.memory_stats()["num_device_alloc"] - before
        if profile:
            _profile(kind, step)
        cstep = ember.compile(step)               # the same step, captured once and replayed
        t_c = med(cstep, ember.cuda.synchronize, repeat)
        t_t = None
        if torch is not None:
            tm = _torch_model(torch, key).cuda()
            topt = (torch.optim.Adam(tm.parameters(), lr=1e-3) if optim == "adam"
                    else torch.optim.SGD(tm.parameters(), lr=1e-3))
            tx, ty = torch.tensor(x_np, device="cuda"), torch.tensor(y_np, device="cuda")
            t_t = med(_torch_step(torch, tm, topt, tx, ty), torch.cuda.synchronize, repeat)
        rows.append((f"train step {kind} b{batch}", f"{t_e * 1e3:.2f} ms", "n/a",
                     f"{t_t * 1e3:.2f} ms" if t_t else "n/a", f"{t_t / t_e:.2f}" if t_t else "n/a"))
        rows.append((f"  cudaMalloc calls after step 1 ({repeat + 1} steps)", str(new_allocs), "", "", ""))
        rows.append((f"  compiled (ember.compile)", f"{t_c * 1e3:.2f} ms", "n/a",
                     f"{t_t * 1e3:.2f} ms" if t_t else "n/a", f"{t_t / t_c:.2f}" if t_t else "n/a"))
    return rows


def bench_copies(dev, torch, repeat, n):
    """Host -> device copy bandwidth from pageable and pinned memory, and how much of a pinned
    non_blocking copy on a side stream hides behind a matmul on the current stream."""
    rows = []
    gb = 4.0 * n / 1e9
    pageable = ember.rand(n)
    pinned = pageable.pin_memory()
    dst = ember.empty(n, device=dev)
    t_page = med(lambda: dst.copy_(pageable), ember.cuda.synchronize, repeat)
    t_pin = med(lambda: dst.copy_(pinned, non_blocking=True), ember.cuda.synchronize, repeat)
    t_tpage = t_tpin = None
    if torch is not None:
        tp = torch.rand(n)
        tpp, td = tp.pin_memory(), torch.empty(n, device="cuda")
        t_tpage = med(lambda: td.copy_(tp), torch.cuda.synchronize, repeat)
        t_tpin = med(lambda: td.copy_(tpp, non_blocking=True), torch.cuda.synchronize, repeat)
    rows.append((f"H2D {gb * 1e3:.0f} MB pageable", f"{gb / t_page:.1f} GB/s", "",
                 f"{gb / t_tpage:.1f} GB/s" if t_tpage else "n/a", f"{t_tpage / t_page:.2f}" if t_tpage else "n/a"))
    rows.append((f"H2D {gb * 1e3:.0f} MB pinned, non_blocking", f"{gb / t_pin:.1f} GB/s", "",
                 f"{gb / t_tpin:.1f} GB/s" if t_tpin else "n/a", f"{t_tpin / t_pin:.2f}" if t_tpin else "n/a"))
    # overlap: a matmul chain on the current stream and the pinned copy on a side stream
    a = ember.randn(4096, 4096, device=dev)
    side = ember.cuda.Stream()

    def compute():
        for _ in range(4):
            a @ a

    def copy_on_side():
        with ember.cuda.stream(side):
            dst.copy_(pinned, non_blocking=True)

    def both():
        copy_on_side()
        compute()

    t_mm = med(compute, ember.cuda.synchronize, repeat)
    t_cp = med(copy_on_side, ember.cuda.synchronize, repeat)
    t_both = med(both, ember.cuda.synchronize, repeat)
    hidden = (t_mm + t_cp - t_both) / min(t_mm, t_cp)
    rows.append(("overlap: 4 matmul 4096^2 | pinned copy on a side stream",
                 f"{t_both * 1e3:.2f} ms (serial {(t_mm + t_cp) * 1e3:.2f})", "", "",
                 f"{hidden * 100:.0f}% of the shorter hidden"))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="smaller sizes (2048^2 matmul, 10M add)")
    p.add_argument("--profile", action="store_true", help="print a cProfile of 10 steps of each training model")
    p.add_argument("--only", default="matmul,add,launch,training,copies",
                   help="comma-separated parts to run (default: all of matmul,add,launch,training,copies)")
    args = p.parse_args(argv)
    if not ember.cuda.is_available():
        print(f"bench_cuda: no usable CUDA device: {ember.cuda.unavailable_reason()}\n"
              f"Run it on a machine with an NVIDIA GPU and `pip install -e 'plugins/cuda[cuda12]'`.",
              file=sys.stderr)
        return 2
    import cupy as cp
    torch = _torch_cuda()
    dev = ember.device(args.device)
    ember.cuda.set_device(dev.index or 0)
    print(f"ember-cuda on {ember.cuda.get_device_name()} (cupy {cp.__version__}"
          f"{', torch ' + torch.__version__ if torch else ', no CUDA torch'}); median of {args.repeat}")
    parts = {"matmul": lambda: bench_matmul(dev, cp, torch, args.repeat, 2048 if args.quick else 8192),
             "add": lambda: bench_add(dev, cp, torch, args.repeat, 10 ** 7 if args.quick else 10 ** 8),
             "launch": lambda: bench_launch(dev, cp, torch, args.repeat),
             "training": lambda: bench_training(dev, torch, args.repeat, args.profile),
             "copies": lambda: bench_copies(dev, torch, args.repeat, 2 ** 24 if args.quick else 2 ** 26)}
    rows = []
    for name in args.only.split(","):
        rows += parts[name.strip()]()
    head = ("benchmark", "ember", "cupy", "torch", "ratio (ref time / ember time)")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    print("ratio > 1: ember is faster than the reference (cupy for matmul / add, torch where present else cupy "
          "for launch, torch for training)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
