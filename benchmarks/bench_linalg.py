"""ember.linalg on the cpu device against numpy / scipy and PyTorch, in one run.

    python benchmarks/bench_linalg.py [--n 512] [--repeat 15] [--threads 1]

Times ``solve`` (n x n with n right-hand sides), ``svd`` (reduced) and ``eigh`` of an n x n
well-conditioned (solve) / symmetric (eigh) matrix in float32 and float64: ember's cpu
kernels call numpy.linalg, so ember / numpy is what ember's dispatch, checks and output
allocation add (the target is <= 1.1x). PyTorch runs the same LAPACK routines through its
own build (MKL / OpenBLAS may differ from numpy's). ember and numpy are timed in alternation
round by round; torch is timed on its own afterwards (its OpenMP threads spin-wait after each
call and would slow the next BLAS call on a small machine); medians are printed with ratios.
``--threads`` sets OMP / OPENBLAS / MKL_NUM_THREADS before numpy is imported, and torch's
``set_num_threads``.
"""
from __future__ import annotations

import argparse
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    if args.threads:
        for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[v] = str(args.threads)
    import numpy as np
    import ember
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _timing import paired
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    n = args.n
    rs = np.random.RandomState(0)
    print(f"n = {n}, median of {args.repeat} rounds, numpy {np.__version__}"
          + (f", torch {torch.__version__}" if torch else ""))
    print(f"{'op':<8} {'dtype':<8} {'ember ms':>9} {'numpy ms':>9} {'torch ms':>9} {'ember/numpy':>12} "
          f"{'ember/torch':>12}")
    for dt in ("float32", "float64"):
        a = (rs.randn(n, n) + n * np.eye(n)).astype(dt)
        b = rs.randn(n, n).astype(dt)
        s = (a + a.T) / 2
        ea, eb, es = ember.tensor(a), ember.tensor(b), ember.tensor(s)
        cases = {
            "solve": (lambda: ember.linalg.solve(ea, eb), lambda: np.linalg.solve(a, b)),
            "svd": (lambda: ember.linalg.svd(ea, full_matrices=False), lambda: np.linalg.svd(a, full_matrices=False)),
            "eigh": (lambda: ember.linalg.eigh(es), lambda: np.linalg.eigh(s)),
        }
        if torch is not None:
            ta, tb, tsym = torch.tensor(a), torch.tensor(b), torch.tensor(s)
            tcases = {"solve": lambda: torch.linalg.solve(ta, tb),
                      "svd": lambda: torch.linalg.svd(ta, full_matrices=False),
                      "eigh": lambda: torch.linalg.eigh(tsym)}
        for name, (fe, fn) in cases.items():
            # torch apart: its OpenMP pool spin-waits after a call, which slows whichever BLAS call comes next
            t = [x * 1e3 for x in paired([fe, fn], args.repeat)]
            tt = paired([tcases[name]], args.repeat)[0] * 1e3 if torch is not None else float("nan")
            print(f"{name:<8} {dt:<8} {t[0]:9.2f} {t[1]:9.2f} {tt:9.2f} {t[0] / t[1]:11.2f}x {t[0] / tt:11.2f}x")


if __name__ == "__main__":
    main()
