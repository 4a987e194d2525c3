"""ember.fft on cpu against numpy.fft, scipy.fft and torch.fft, timed side by side in one run.

    python benchmarks/bench_fft.py [--repeat 15]

Why ember-cpu's fft kernels call scipy.fft rather than numpy.fft: both are pocketfft, but
scipy's keeps single precision (numpy < 2 computed float32 input in float64), is faster on
large transforms and takes ``workers=``. Prints, per case, the median time of each library
(ms), the result dtype each gives, and ember's ratio to torch.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import scipy.fft as sfft

import ember

sys.path.insert(0, os.path.dirname(__file__))
from _timing import paired  # noqa: E402

CASES = [  # (label, shape, transform: "c2c" complex fft over the last dims, "r2c" rfft, "2d" fft2)
    ("fft 4096", (4096,), "c2c"),
    ("fft 2^20", (1 << 20,), "c2c"),
    ("rfft 2^20", (1 << 20,), "r2c"),
    ("fft2 512x512", (512, 512), "2d"),
    ("rfft 64x4096 (batched)", (64, 4096), "r2c"),
]


def _fns(kind, x_np, x_e, x_t, torch):
    workers = ember.get_num_threads()
    if kind == "c2c":
        return (lambda: ember.fft.fft(x_e), lambda: np.fft.fft(x_np), lambda: sfft.fft(x_np, workers=workers),
                (lambda: torch.fft.fft(x_t)) if torch else None)
    if kind == "r2c":
        return (lambda: ember.fft.rfft(x_e), lambda: np.fft.rfft(x_np), lambda: sfft.rfft(x_np, workers=workers),
                (lambda: torch.fft.rfft(x_t)) if torch else None)
    return (lambda: ember.fft.fft2(x_e), lambda: np.fft.fft2(x_np), lambda: sfft.fft2(x_np, workers=workers),
            (lambda: torch.fft.fft2(x_t)) if torch else None)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args()
    try:
        import torch
        torch.set_num_threads(ember.get_num_threads())
    except ImportError:
        torch = None
    print(f"numpy {np.__version__}, threads {ember.get_num_threads()}; median of {args.repeat} ms; "
          f"result dtypes in brackets")
    print(f"{'case':<24}{'dtype':<9}{'ember':>12}{'numpy':>22}{'scipy':>22}{'torch':>12}{'ember/torch':>13}")
    for label, shape, kind in CASES:
        for dt in (np.float32, np.float64):
            rng = np.random.default_rng(0)
            x_np = rng.standard_normal(shape).astype(dt)
            if kind != "r2c":
                x_np = (x_np + 1j * rng.standard_normal(shape)).astype(np.complex64 if dt == np.float32 else
                                                                        np.complex128)
            x_e = ember.tensor(x_np)
            x_t = torch.tensor(x_np) if torch else None
            fns = _fns(kind, x_np, x_e, x_t, torch)
            live = [f for f in fns if f is not None]
            ts = paired(live, args.repeat)
            t_e, t_np, t_sp = ts[:3]
            t_t = ts[3] if torch else float("nan")
            d_np, d_sp = np.asarray(fns[1]()).dtype.name, np.asarray(fns[2]()).dtype.name
            print(f"{label:<24}{np.dtype(dt).name:<9}{t_e * 1e3:>12.3f}{t_np * 1e3:>10.3f} [{d_np:>9}]"
                  f"{t_sp * 1e3:>10.3f} [{d_sp:>9}]{t_t * 1e3:>12.3f}{t_e / t_t:>12.2f}x")


if __name__ == "__main__":
    main()
