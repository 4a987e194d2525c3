"""ember-sparse side by side with scipy.sparse and PyTorch 2.13 (CPU), and opencl sparse vs dense, in one run.

    python benchmarks/bench_sparse.py [--repeat 7] [--no-opencl]

- ``S @ D``: S 10000x10000 float32 COO at density 1e-3 (1e5 entries, coalesced), D 10000x64
  float32, on cpu: ``ember.sparse.mm`` against scipy.sparse (CSR x dense, the CSR built beforehand)
  and ``torch.sparse.mm`` (target: <= 1.2x the faster of the two). ember's first call on a tensor
  also builds and caches its CSR structure; that call is timed separately.
- ``coalesce`` of 1M entries with duplicates (1000x1000, random coordinates) against PyTorch's.
- the same ``S @ D`` on opencl (ember-sparse's device-generic kernel) against the dense matmul
  of ``S.to_dense() @ D`` on opencl.

Each figure is a median over rounds; ember and scipy (and sparse vs dense on opencl) alternate
round by round, which is fair on a busy machine; PyTorch is timed on its own (its OpenMP threads
spin after a call). opencl timings end with ``synchronize()``.
Not a test: it prints, it asserts nothing.
"""
from __future__ import annotations

import argparse
import platform
import time

import ember
from _timing import paired
import numpy as np
import scipy.sparse as sps

try:
    import torch
except ImportError:      # PyTorch is optional: its columns are skipped
    torch = None


def med(fn, repeat, sync=None):
    """Median seconds of ``fn`` over ``repeat`` calls."""
    return paired([fn], repeat, sync)[0]


def row(name, t_ms, ref_name, ref_ms, target=None):
    ratio = t_ms / ref_ms
    tgt = "" if target is None else f"  (target <= {target}: {'met' if ratio <= target else 'NOT met'})"
    print(f"{name:<44} ember {t_ms:9.3f} ms   {ref_name:<14} {ref_ms:9.3f} ms   ratio {ratio:5.2f}{tgt}")
    return ratio


def make_coo(n, density, seed=0):
    rng = np.random.default_rng(seed)
    nnz = int(n * n * density)
    lin = np.unique(rng.integers(0, n * n, nnz))
    idx = np.stack(np.unravel_index(lin, (n, n))).astype(np.int64)
    vals = rng.standard_normal(lin.size).astype(np.float32)
    return idx, vals


def bench_mm(repeat):
    n, m = 10000, 64
    idx, vals = make_coo(n, 1e-3)
    dense = np.random.default_rng(1).standard_normal((n, m)).astype(np.float32)
    print(f"S @ D: S {n}x{n} float32, nnz {vals.size} (density {vals.size / n / n:.0e}), D {n}x{m} float32")
    s = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), (n, n), is_coalesced=True)
    d = ember.tensor(dense)
    t0 = time.perf_counter()
    ember.sparse.mm(s, d)
    first = (time.perf_counter() - t0) * 1e3
    csr = sps.csr_matrix((vals, (idx[0], idx[1])), shape=(n, n))
    # ember and scipy alternate round by round; PyTorch is timed on its own afterwards, as its
    # OpenMP threads keep spinning after a call and would slow whatever runs next
    e, sc = (t * 1e3 for t in paired([lambda: ember.sparse.mm(s, d), lambda: csr @ dense], repeat * 3))
    refs = {"scipy.sparse": sc}
    if torch is not None:
        ts = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), (n, n), check_invariants=False).coalesce()
        td = torch.tensor(dense)
        refs["torch.sparse"] = med(lambda: torch.sparse.mm(ts, td), repeat * 3) * 1e3
    ok = np.allclose(ember.sparse.mm(s, d).numpy(), csr @ dense, rtol=1e-4, atol=1e-4)
    for name, ref in refs.items():
        row(f"sparse.mm cpu (vs {name})", e, name, ref)
    best = min(refs, key=refs.get)
    row(f"sparse.mm cpu vs the faster ({best})", e, best, refs[best], 1.2)
    print(f"{'  first call (builds the cached CSR)':<44} ember {first:9.3f} ms   results agree: {ok}")
    return idx, vals, dense


def bench_coalesce(repeat):
    n, nnz = 1000, 1_000_000
    rng = np.random.default_rng(2)
    idx = np.stack([rng.integers(0, n, nnz), rng.integers(0, n, nnz)]).astype(np.int64)
    vals = rng.standard_normal(nnz).astype(np.float32)
    s = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), (n, n))
    from ember_sparse import _kernels
    e, g = (t * 1e3 for t in paired([lambda: s.coalesce(), lambda: _kernels.coalesce_raw(s)], repeat))
    nu = s.coalesce()._nnz()
    print(f"coalesce: {nnz} entries in {n}x{n} float32 ({nu} unique)")
    if torch is not None:
        ts = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), (n, n), check_invariants=False)
        t = med(lambda: ts.coalesce(), repeat) * 1e3
        row("coalesce cpu (scipy fast path)", e, "torch", t, 1.2)
        row("coalesce cpu (device-generic kernel)", g, "torch", t)
    else:
        print(f"coalesce cpu: ember {e:.3f} ms (device-generic {g:.3f} ms); PyTorch not installed")


def bench_opencl(idx, vals, dense, repeat):
    try:
        if not ember.opencl.is_available():
            print("opencl: not available (skipped)")
            return
    except (AttributeError, RuntimeError) as e:
        print(f"opencl: not available ({e}); skipped")
        return
    n = dense.shape[0]
    sync = ember.opencl.synchronize
    s = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), (n, n), is_coalesced=True, device="opencl")
    d = ember.tensor(dense, device="opencl")
    sd = s.to_dense()
    sync()
    e, dm = (t * 1e3 for t in paired([lambda: ember.sparse.mm(s, d), lambda: sd @ d], max(3, repeat // 2), sync))
    ok = np.allclose(ember.sparse.mm(s, d).cpu().numpy(), (sd @ d).cpu().numpy(), rtol=1e-3, atol=1e-3)
    print(f"S @ D on {ember.opencl.get_device_name(0) if hasattr(ember.opencl, 'get_device_name') else 'opencl'}")
    row("sparse.mm opencl (vs dense matmul on opencl)", e, "dense matmul", dm)
    print(f"{'  results agree':<44} {ok}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--no-opencl", action="store_true")
    a = p.parse_args(argv)
    print(f"ember-sparse benchmark on {platform.machine()} {platform.processor() or ''} "
          f"({ember.get_num_threads()} threads), numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else '-'}")
    idx, vals, dense = bench_mm(a.repeat)
    bench_coalesce(a.repeat)
    if not a.no_opencl:
        bench_opencl(idx, vals, dense, a.repeat)


if __name__ == "__main__":
    main()
