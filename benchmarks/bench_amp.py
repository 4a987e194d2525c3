"""bfloat16 autocast on cpu: the digits CNN trained with and without ``autocast``, in one run.

    python benchmarks/bench_amp.py                 # ember, 10 epochs, float32 then autocast
    python benchmarks/bench_amp.py --epochs 20 --torch   # and the same two runs in PyTorch

The model, data and recipe are the main job's (``ember.examples.digits``: CNN Conv(1->16) ReLU
MaxPool Conv(16->32) ReLU Dropout Linear(512->10), Adam lr 1e-2 cosine-annealed, batch 64, seed 0),
without the shift augmentation. The autocast run wraps forward and loss in
``autocast("cpu", dtype=bfloat16)`` (evaluation too); no GradScaler, as PyTorch advises for
bfloat16. Printed per run: the wall time of training (all epochs, evaluation included) and the final
test accuracy. The code is written once against ``lib`` (ember or torch).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember


def _data(lib, seed):
    from ember.examples.digits import load_digits_split
    return [lib.tensor(t.numpy()) for t in load_digits_split(seed=seed)]


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.Flatten(), nn.Dropout(0.25), nn.Linear(512, 10))


def run(lib, *, amp: bool, epochs: int, batch_size: int = 64, lr: float = 1e-2, seed: int = 0):
    """Train the CNN; returns (seconds, final test accuracy, final train loss)."""
    F = lib.nn.functional
    lib.manual_seed(seed)
    x_tr, y_tr, x_te, y_te = _data(lib, seed)
    model = _cnn(lib)
    opt = lib.optim.Adam(model.parameters(), lr=lr)
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    order = np.random.default_rng(seed)
    n = len(x_tr)
    start = time.perf_counter()
    for _ in range(epochs):
        model.train()
        total, count = 0.0, 0
        perm = lib.tensor(order.permutation(n))
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            with lib.autocast("cpu", dtype=lib.bfloat16, enabled=amp):
                loss = F.cross_entropy(model(x_tr[idx]), y_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            count += 1
        sched.step()
    seconds = time.perf_counter() - start
    model.eval()
    with lib.no_grad(), lib.autocast("cpu", dtype=lib.bfloat16, enabled=amp):
        acc = (model(x_te).argmax(1) == y_te).float().mean().item()
    return seconds, acc, total / count


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--torch", action="store_true", help="also run PyTorch (same code) for comparison")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads for both frameworks (default 1)")
    a = p.parse_args(argv)
    libs = [ember]
    if a.torch:
        import torch
        libs.append(torch)
    for lib in libs:
        lib.set_num_threads(a.threads)
    print(f"digits CNN, {a.epochs} epochs, batch 64, {a.threads} thread(s)")
    print(f"{'framework':10s} {'mode':18s} {'time (s)':>9s} {'s/epoch':>8s} {'test acc':>9s} {'train loss':>11s}")
    for lib in libs:
        base = None
        for amp in (False, True):
            sec, acc, tl = run(lib, amp=amp, epochs=a.epochs)
            mode = "autocast bfloat16" if amp else "float32"
            rel = "" if base is None else f"   ({sec / base:.2f}x the float32 time)"
            base = base or sec
            print(f"{lib.__name__:10s} {mode:18s} {sec:9.2f} {sec / a.epochs:8.3f} {acc:9.4f} {tl:11.4f}{rel}",
                  flush=True)


if __name__ == "__main__":
    main()
