"""Training-step benchmarks: ember against PyTorch (CPU), side by side in one run.

    python benchmarks/bench_nn.py            # steps only
    python benchmarks/bench_nn.py --full     # and a full 20-epoch MLP run on digits in each framework

The same code runs both frameworks: every model, loss and optimizer here is written once
against a module ``lib`` that is either ``ember`` or ``torch`` (ember follows PyTorch's API).

- MLP 64-128-10 (ReLU) + Adam, batch 64: one step = zero_grad, forward, cross-entropy,
  backward, optimizer step.
- CNN Conv(1->16, 3x3, pad 1), ReLU, MaxPool 2, Conv(16->32, 3x3, pad 1), ReLU, Linear(512->10)
  + Adam, batch 64 of 8x8 images: one step as above.

Each figure is the median over ``--repeat`` rounds of the mean time of ``--number`` steps; the
ratio is ember / PyTorch (lower is better; the issue's target is <= 1.0). Two settings, each
framework under the same one: one intra-op thread (``set_num_threads(1)`` in both: PyTorch's
own pool, numpy's BLAS pool for ember), and both frameworks' defaults (all cores).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ember


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(512, 10))


def make_step(lib, build, x_shape, seed=0):
    lib.manual_seed(seed)
    model = build(lib)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.random(x_shape, dtype=np.float32))
    y = lib.tensor(rng.integers(0, 10, x_shape[0]))
    cross_entropy = lib.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss = cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def time_step(step, number, repeat):
    for _ in range(10):
        step()
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            step()
        rounds.append((time.perf_counter() - t0) / number)
    return statistics.median(rounds)


def full_run(lib, epochs=20, seed=0):
    """20 epochs of the digits MLP recipe (Adam lr 1e-2, cosine, batch 64) in ``lib``; (seconds, accuracy)."""
    from ember.examples.digits import load_digits_split
    xs = [lib.tensor(t.numpy()) for t in load_digits_split(seed)]
    x_tr, y_tr, x_te, y_te = xs
    lib.manual_seed(seed)
    nn = lib.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    g = lib.Generator().manual_seed(seed)
    data = lib.utils.data
    ds = data.TensorDataset(x_tr, y_tr)
    loader = data.DataLoader(ds, sampler=data.BatchSampler(data.RandomSampler(ds, generator=g), 64, False),
                             batch_size=None)
    t0 = time.perf_counter()
    for _ in range(epochs):
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
    seconds = time.perf_counter() - t0
    with lib.no_grad():
        acc = (model(x_te).argmax(1) == y_te).double().mean().item()
    return seconds, acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--full", action="store_true", help="also time a full 20-epoch MLP run on digits")
    args = ap.parse_args()
    import torch
    t_default, e_default = torch.get_num_threads(), ember.get_num_threads()
    print(f"ember {ember.__version__} | torch {torch.__version__} | numpy {np.__version__} | "
          f"default threads: torch {t_default}, ember (BLAS) {e_default}")
    print(f"{'benchmark':<34}{'ember 1t':>10}{'torch 1t':>10}{'ratio':>8}{'ember':>10}{'torch':>10}{'ratio':>8}")
    for name, build, shape in (("MLP 64-128-10 + Adam, batch 64", mlp, (64, 64)),
                               ("CNN digits + Adam, batch 64", cnn, (64, 1, 8, 8))):
        row = []
        for threads in (1, None):
            torch.set_num_threads(threads or t_default)
            ember.set_num_threads(threads or e_default)
            e = time_step(make_step(ember, build, shape), args.number, args.repeat)
            t = time_step(make_step(torch, build, shape), args.number, args.repeat)
            row += [f"{e * 1e3:>8.3f}ms", f"{t * 1e3:>8.3f}ms", f"{e / t:>7.2f}x"]
        print(f"{name:<34}" + "".join(row))
    if args.full:
        es, ea = full_run(ember)
        ts, ta = full_run(torch)
        print(f"full 20-epoch digits MLP run: ember {es:.2f} s, test accuracy {100 * ea:.2f} % | "
              f"torch {ts:.2f} s, test accuracy {100 * ta:.2f} % | time ratio {es / ts:.2f}x")


if __name__ == "__main__":
    main()
