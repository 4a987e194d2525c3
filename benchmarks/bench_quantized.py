"""ember-quantized side by side with ember float32 and PyTorch 2.13 (CPU, fbgemm), in one run.

    python benchmarks/bench_quantized.py [--repeat 15] [--epochs 10] [--devices cpu,opencl] [--threads 1]

- quantized linear, 512 -> 512 at batch 256 (quint8 activations, qint8 per-tensor weights, float
  bias, requantised output) on cpu: ``ember.ops.quantized.linear`` against ember's float32
  ``F.linear`` and ``torch.ao.nn.quantized.Linear`` (fbgemm); target <= 2x PyTorch's quantized time.
  Per-channel weights too. The integer results are compared with PyTorch's (units that differ).
- the digits main job's models (MLP 64-128-10, the CNN), trained ``--epochs`` epochs, then int8 by
  static post-training quantization (qnnpack qconfig: per-tensor weights; x86: per-channel): inference
  throughput over the 360 test images (one batch) of the int8 model against the float32 one, on each
  device of ``--devices``; PyTorch's float32 / int8 figures for the same models beside them on cpu.

Each figure is the median of rounds in which the compared calls alternate (fair on a busy machine);
device timings end with ``synchronize()``. Not a test: it prints, it asserts nothing.
"""
from __future__ import annotations

import argparse
import copy
import warnings

import numpy as np

import ember
from _timing import paired

try:
    import torch
except ImportError:      # PyTorch is optional: its columns are skipped
    torch = None


def bench_linear(repeat):
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (256, 512)).astype(np.float32)
    w = (rng.normal(0, 0.05, (512, 512))).astype(np.float32)
    b = rng.normal(0, 0.1, 512).astype(np.float32)
    ex, ew, eb = ember.tensor(x), ember.tensor(w), ember.tensor(b)
    qx = ember.quantize_per_tensor(ex, 0.03, 128, ember.quint8)
    qw = ember.quantize_per_tensor(ew, 0.002, 0, ember.qint8)
    pcs = ember.tensor(np.linspace(0.0015, 0.0025, 512))
    qwc = ember.quantize_per_channel(ew, pcs, ember.zeros(512, dtype=ember.int64), 0, ember.qint8)
    F = ember.nn.functional
    Q = ember.ops.quantized
    fns = [lambda: F.linear(ex, ew, eb), lambda: Q.linear(qx, qw, eb, 0.05, 64),
           lambda: Q.linear(qx, qwc, eb, 0.05, 64)]
    names = ["ember float32 F.linear", "ember int8 ops.quantized.linear (per-tensor w)",
             "ember int8 ops.quantized.linear (per-channel w)"]
    if torch is not None:
        tl = torch.ao.nn.quantized.Linear(512, 512)
        tl.set_weight_bias(torch.quantize_per_tensor(torch.from_numpy(w), 0.002, 0, torch.qint8), torch.from_numpy(b))
        tl.scale, tl.zero_point = 0.05, 64
        tlc = torch.ao.nn.quantized.Linear(512, 512)
        tlc.set_weight_bias(torch.quantize_per_channel(torch.from_numpy(w), torch.from_numpy(pcs.numpy()),
                                                       torch.zeros(512, dtype=torch.int64), 0, torch.qint8),
                            torch.from_numpy(b))
        tlc.scale, tlc.zero_point = 0.05, 64
        tx = torch.quantize_per_tensor(torch.from_numpy(x), 0.03, 128, torch.quint8)
        txf, twf, tbf = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        fns += [lambda: tl(tx), lambda: tlc(tx), lambda: torch.nn.functional.linear(txf, twf, tbf)]
        names += ["torch int8 ao.nn.quantized.Linear (per-tensor, fbgemm)", "torch int8 (per-channel, fbgemm)",
                  "torch float32 F.linear"]
    t = paired(fns, repeat)
    print("\nquantized linear 512x512, batch 256, cpu (median ms)")
    for n, s in zip(names, t):
        print(f"  {n:58s} {s * 1e3:8.3f}")
    print(f"  ember int8 / ember float32                                 {t[1] / t[0]:8.2f}x")
    if torch is not None:
        print(f"  ember int8 / torch int8 (per-tensor)                       {t[1] / t[3]:8.2f}x   (target <= 2)")
        print(f"  ember int8 / torch int8 (per-channel)                      {t[2] / t[4]:8.2f}x")
        d = np.abs(Q.linear(qx, qw, eb, 0.05, 64).int_repr().numpy().astype(int) -
                   tl(tx).int_repr().numpy().astype(int))
        print(f"  integers that differ from PyTorch's: {int((d > 0).sum())} of {d.size} (max difference {d.max()})")


def _trained(name, epochs, seed=0):
    from ember.examples import digits
    ember.manual_seed(seed)
    data = digits.load_digits_split(seed)
    model = digits.build_model(name)
    digits.train(model, data, epochs=epochs, batch_size=64, lr=1e-2, seed=seed, progress=False)
    return model.eval(), data


def _torch_copy(model, name):
    """The same float model in PyTorch (weights copied), and its int8 version by PyTorch's static PTQ."""
    tm = {"mlp": lambda: torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                             torch.nn.Linear(128, 10)),
          "cnn": lambda: torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
                                             torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 3, padding=1),
                                             torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Dropout(0.25),
                                             torch.nn.Linear(512, 10))}[name]().eval()
    sd = {k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()}
    tm.load_state_dict(sd)
    return tm


def bench_digits(epochs, devices, repeat):
    from ember.examples import digits_quantize as dq
    print(f"\ndigits inference throughput, 360 test images in one batch (images/s; models trained {epochs} epochs)")
    for name in ("mlp", "cnn"):
        model, data = _trained(name, epochs)
        for qengine in ("qnnpack", "x86"):
            qmodel = dq.quantize_model(model, "static", data, qengine=qengine)
            for dev in devices:
                m, q = copy.deepcopy(model).to(dev), copy.deepcopy(qmodel).to(dev)
                x = data[2].to(dev)
                sync = (lambda d=dev: getattr(ember, d).synchronize()) if dev != "cpu" else None
                with ember.no_grad():
                    tf, tq = paired([lambda: m(x), lambda: q(x)], repeat, sync)
                line = (f"  {name} {qengine:8s} {dev:7s} float32 {360 / tf:10.0f}   int8 {360 / tq:10.0f}   "
                        f"int8/float32 {tf / tq:5.2f}x")
                if torch is not None and dev == "cpu" and qengine == "x86":
                    tm = _torch_copy(model, name)
                    tq_m = torch.ao.quantization.QuantWrapper(copy.deepcopy(tm)).eval()
                    tq_m.qconfig = torch.ao.quantization.get_default_qconfig("x86")
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        p = torch.ao.quantization.prepare(tq_m)
                        xt = torch.from_numpy(data[0].numpy()[:512])
                        p(xt)
                        tq_c = torch.ao.quantization.convert(p)
                    xe = torch.from_numpy(data[2].numpy())
                    with torch.no_grad():
                        a, b = paired([lambda: tm(xe), lambda: tq_c(xe)], repeat)
                    line += f"   | torch float32 {360 / a:10.0f}  int8 {360 / b:10.0f}"
                print(line)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--devices", default="cpu,opencl")
    p.add_argument("--threads", type=int, default=None, help="intra-op threads for both frameworks")
    p.add_argument("--no-digits", action="store_true")
    a = p.parse_args()
    if a.threads:
        ember.set_num_threads(a.threads)
        if torch is not None:
            torch.set_num_threads(a.threads)
    devices = [d for d in a.devices.split(",") if d == "cpu" or (hasattr(ember, d) and getattr(ember, d).is_available())]
    import platform
    print(f"ember {ember.__version__}, torch {getattr(torch, '__version__', 'not installed')}, "
          f"{platform.processor() or platform.machine()}, threads {a.threads or 'default'}")
    bench_linear(a.repeat)
    if not a.no_digits:
        bench_digits(a.epochs, devices, a.repeat)


if __name__ == "__main__":
    main()
