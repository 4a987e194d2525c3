"""ember-cuda side by side with cupy and PyTorch (CUDA) on the same GPU, in one run.

    python benchmarks/bench_cuda.py [--device cuda:0] [--repeat 10] [--quick]

- 8192 x 8192 matmul, float32 and float16: TFLOP/s of ember against cupy (both cuBLAS)
- 100M-element float32 add: GB/s (3 x 4 bytes per element) of ember against cupy and torch
- launch overhead: one small ``a + b`` (1000 elements), microseconds per call, against cupy and torch
- digits MLP and CNN training step (batch 64, Adam): ember against torch.cuda
- 8 x Linear(1024, 1024) + ReLU, batch 4096, one training step (SGD): ember against torch.cuda

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


def bench_matmul(dev, cp, repeat, n):
    rows = []
    for name, edt, cdt in (("float32", ember.float32, cp.float32), ("float16", ember.float16, cp.float16)):
        a = ember.randn(n, n, device=dev).to(edt)
        b = ember.randn(n, n, device=dev).to(edt)
        ca, cb = cp.asarray(a), cp.asarray(b)
        assert ca.dtype == cdt
        t_e = med(lambda a=a, b=b: a @ b, ember.cuda.synchronize, repeat)
        t_c = med(lambda ca=ca, cb=cb: ca @ cb, cp.cuda.runtime.deviceSynchronize, repeat)
        fl = 2.0 * n ** 3
        rows.append((f"matmul {n}^2 {name}", f"{fl / t_e / 1e12:.1f} TFLOP/s", f"{fl / t_c / 1e12:.1f} TFLOP/s",
                     "n/a", f"{t_c / t_e:.2f}"))
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


def bench_training(dev, torch, repeat):
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
        t_e = med(_ember_step(m, opt, x, y), ember.cuda.synchronize, repeat)
        t_t = None
        if torch is not None:
            tm = _torch_model(torch, key).cuda()
            topt = (torch.optim.Adam(tm.parameters(), lr=1e-3) if optim == "adam"
                    else torch.optim.SGD(tm.parameters(), lr=1e-3))
            tx, ty = torch.tensor(x_np, device="cuda"), torch.tensor(y_np, device="cuda")
            t_t = med(_torch_step(torch, tm, topt, tx, ty), torch.cuda.synchronize, repeat)
        rows.append((f"train step {kind} b{batch}", f"{t_e * 1e3:.2f} ms", "n/a",
                     f"{t_t * 1e3:.2f} ms" if t_t else "n/a", f"{t_t / t_e:.2f}" if t_t else "n/a"))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="smaller sizes (2048^2 matmul, 10M add)")
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
    rows = []
    rows += bench_matmul(dev, cp, args.repeat, 2048 if args.quick else 8192)
    rows += bench_add(dev, cp, torch, args.repeat, 10 ** 7 if args.quick else 10 ** 8)
    rows += bench_launch(dev, cp, torch, args.repeat)
    rows += bench_training(dev, torch, args.repeat)
    head = ("benchmark", "ember", "cupy", "torch", "ratio (ref time / ember time)")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    print("ratio > 1: ember is faster than the reference (cupy for matmul / add, torch where present else cupy "
          "for launch, torch for training)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
