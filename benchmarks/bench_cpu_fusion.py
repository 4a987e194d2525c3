"""Would ember-cpu gain from a fuser? An elementwise chain (Adam's parameter update, six nodes) timed side by side.

    python benchmarks/bench_cpu_fusion.py [--threads 1] [--repeat 7] [--number 400]

Per size and dtype, microseconds per chain (median of ``--repeat`` rounds of ``--number`` calls):

- ember eager: the six ops through the dispatcher (what a user's code does);
- ember compiled: ``ember.compile`` replaying the six recorded cpu kernels (plus the replay's fixed cost:
  guards, the output's clone);
- numpy, one ufunc per node into preallocated buffers (``out=``): what a generated "numpy code without
  temporaries" fuser would run, bit for bit the eager values;
- numpy with temporaries (plain expressions);
- numexpr (when installed): the chain as one expression, evaluated in blocks in one pass.

The question for issue 21 ("ember-cpu fuses where measurement shows a gain") is whether any of the last three
beats the kernels the replay already calls by enough to be worth a fuser; docs/benchmarks.md records the
answer.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _time(fn, number, repeat):
    fn()
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(rounds)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=None, help="numpy / numexpr threads (default: the libraries')")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--number", type=int, default=400)
    args = p.parse_args(argv)
    import ember
    try:
        import numexpr
    except ImportError:
        numexpr = None
    if args.threads:
        ember.set_num_threads(args.threads)
        if numexpr is not None:
            numexpr.set_num_threads(args.threads)
    print(f"ember {ember.__version__}, numpy {np.__version__}, numexpr {numexpr.__version__ if numexpr else 'n/a'}; "
          f"us per chain p - lr * m / (sqrt(v) / bc + eps), median of {args.repeat} x {args.number}")
    head = ("dtype", "elements", "ember eager", "ember compiled", "numpy out=", "numpy temporaries", "numexpr")
    rows = []
    for dtype in ("float32", "float64"):
        for n in (8192, 131072, 1048576):
            g = ember.Generator().manual_seed(0)
            p_, m_, v_ = (ember.rand(n, generator=g, dtype=getattr(ember, dtype)) for _ in range(3))

            def chain():
                d = v_.sqrt().div_(0.9).add_(1e-8)
                return p_.sub(m_.mul(1e-3).div_(d))
            compiled = ember.compile(chain)
            for _ in range(4):
                compiled()
            pn, mn, vn = p_.numpy(), m_.numpy(), v_.numpy()
            dt = pn.dtype.type
            lr, bc, eps = dt(1e-3), dt(0.9), dt(1e-8)
            o, t1 = np.empty_like(pn), np.empty_like(pn)

            def numpy_out():
                np.sqrt(vn, out=t1)
                np.divide(t1, bc, out=t1)
                np.add(t1, eps, out=t1)
                np.multiply(mn, lr, out=o)
                np.divide(o, t1, out=o)
                np.subtract(pn, o, out=o)

            def numpy_tmp():
                return pn - mn * lr / (np.sqrt(vn) / bc + eps)
            numpy_out()
            assert np.array_equal(o, chain().numpy()), "the out= chain must give eager's values"
            cells = [_time(chain, args.number, args.repeat), _time(compiled, args.number, args.repeat),
                     _time(numpy_out, args.number, args.repeat), _time(numpy_tmp, args.number, args.repeat)]
            if numexpr is not None:
                local = {"p": pn, "m": mn, "v": vn, "lr": lr, "bc": bc, "eps": eps}
                cells.append(_time(lambda: numexpr.evaluate("p - m * lr / (sqrt(v) / bc + eps)", local_dict=local,
                                                             out=o), args.number, args.repeat))
            else:
                cells.append(None)
            rows.append((dtype, str(n)) + tuple("n/a" if c is None else f"{c:.1f}" for c in cells))
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
