"""The traced digits CNN loaded from a file, beside the eager model and ONNX Runtime, in one run.

    python benchmarks/bench_jit.py [--threads 1] [--repeat 7] [--number 200]

For batches of 1 and 64 (inference, ``no_grad``): the eager ember model, the model traced with
``ember.jit.trace``, saved, and loaded with ``ember.jit.load`` (its graph run op by op), the model exported
with ``ember.onnx.export`` and run by ONNX Runtime (CPU), and PyTorch 2.13 eager on the same weights where
installed. Microseconds per batch, median of ``--repeat`` rounds of ``--number`` calls. Also: the time to
save and to load the traced model, and the file sizes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np


def per_call(fn, number, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        ts.append((time.perf_counter() - t0) / number)
    return statistics.median(ts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--number", type=int, default=200)
    args = p.parse_args(argv)
    if args.threads:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
    import ember
    from ember.examples.digits import build_model
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    ember.manual_seed(0)
    model = build_model("cnn").eval()
    tmp = tempfile.mkdtemp()
    path, onnx_path = os.path.join(tmp, "cnn.pt"), os.path.join(tmp, "cnn.onnx")
    x2 = ember.randn(2, 1, 8, 8)
    traced = ember.jit.trace(model, x2)
    t0 = time.perf_counter()
    traced.save(path)
    t_save = time.perf_counter() - t0
    t0 = time.perf_counter()
    loaded = ember.jit.load(path)
    t_load = time.perf_counter() - t0
    ember.onnx.export(model, (x2,), onnx_path, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    sess = None
    if ort is not None:
        so = ort.SessionOptions()
        if args.threads:
            so.intra_op_num_threads = args.threads
        sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    tmodel = None
    if torch is not None:
        tmodel = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                     torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                     torch.nn.Dropout(0.25), torch.nn.Linear(512, 10)).eval()
        tmodel.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    print(f"digits CNN, inference; threads {args.threads or 'default'}; us per batch, median of {args.repeat} x "
          f"{args.number}. save {t_save * 1e3:.1f} ms, load {t_load * 1e3:.1f} ms; file {os.path.getsize(path)} "
          f"bytes (traced), {os.path.getsize(onnx_path)} bytes (ONNX)")
    head = ("batch", "ember eager", "ember.jit.load", "ONNX Runtime", "torch eager", "max |diff| (loaded, onnx)")
    rows = []
    for b in (1, 64):
        xn = np.random.default_rng(b).standard_normal((b, 1, 8, 8), dtype=np.float32)
        x = ember.tensor(xn)
        with ember.no_grad():
            t_e = per_call(lambda: model(x), args.number, args.repeat)
            t_l = per_call(lambda: loaded(x), args.number, args.repeat)
            ref = model(x).numpy()
            d_l = float(np.abs(loaded(x).numpy() - ref).max())
        t_o = d_o = None
        if sess is not None:
            t_o = per_call(lambda: sess.run(None, {"image": xn}), args.number, args.repeat)
            d_o = float(np.abs(sess.run(None, {"image": xn})[0] - ref).max())
        t_t = None
        if tmodel is not None:
            tx = torch.tensor(xn)
            with torch.no_grad():
                t_t = per_call(lambda: tmodel(tx), args.number, args.repeat)
        rows.append((str(b), f"{t_e * 1e6:.1f}", f"{t_l * 1e6:.1f}", f"{t_o * 1e6:.1f}" if t_o else "n/a",
                     f"{t_t * 1e6:.1f}" if t_t else "n/a", f"{d_l:.1e}, " + (f"{d_o:.1e}" if d_o is not None else "n/a")))
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
