"""ember.distributed benchmarks, side by side in one MPI job (run on 2 ranks):

    mpiexec -n 2 python benchmarks/bench_distributed.py            # everything
    mpiexec -n 2 python benchmarks/bench_distributed.py --quick    # sizes up to 16 MB, fewer steps

1. all-reduce bandwidth, float32 tensors of 1 MB .. 256 MB: ``ember.distributed.all_reduce`` (the
   "mpi" backend: non-blocking MPI_Iallreduce polled with a deadline, zero-copy numpy views of the
   cpu storage) against mpi4py's own blocking ``comm.Allreduce`` on numpy arrays of the same size.
   Bus bandwidth = 2 (n-1)/n * bytes / time, as nccl-tests reports it. Target: ember >= 90 % of mpi4py.
2. small-message latency (one float32) with the mismatch check off (EMBER_DISTRIBUTED_CHECK=0),
   with the default quick check (one MAX all-reduce of the call's signature) and with
   TORCH_DISTRIBUTED_DEBUG=DETAIL's full gather, to price the check.
3. one DDP training step (zero_grad, forward, cross-entropy, backward with the gradient all-reduce,
   SGD step) of an MLP 1024-1024-1024-10 (2.1 M parameters) with batch 64 per rank: ember DDP on 2
   ranks, ember in a single process (no DDP), and PyTorch 2.x DDP with the gloo backend on the same
   2 ranks (when torch is installed). Each rank runs one intra-op thread in both frameworks.
4. the overlap of communication with backward: backward time of ember DDP with 1 MB buckets
   (all-reduces launched from gradient hooks during backward), with one bucket (launched only once
   backward has produced every gradient: no overlap), and under no_sync() (no communication).

Each figure is the median of several timed rounds after a warm-up; ratios are printed beside.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from mpi4py import MPI

import ember
import ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel as DDP

comm = MPI.COMM_WORLD
R, N = comm.Get_rank(), comm.Get_size()


def say(*a):
    if R == 0:
        print(*a, flush=True)


def timed(fn, reps, warm=2):
    for _ in range(warm):
        fn()
    out = []
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    # the slowest rank's time is the collective's time
    return comm.allreduce(statistics.median(out), op=MPI.MAX)


def timed_pair(fa, fb, reps, warm=2):
    """Median times of ``fa`` and ``fb`` run alternately (so load from other processes hits both alike)."""
    for _ in range(warm):
        fa()
        fb()
    ta, tb = [], []
    for _ in range(reps):
        for f, acc in ((fa, ta), (fb, tb)):
            comm.Barrier()
            t0 = time.perf_counter()
            f()
            acc.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    return statistics.median(ta), statistics.median(tb)


def bench_allreduce(sizes_mb):
    say("\n== all-reduce, float32, %d ranks (bus bandwidth GB/s; ratio = ember / mpi4py time)" % N)
    say(f"{'size':>8} {'mpi4py ms':>10} {'ember ms':>10} {'mpi4py GB/s':>12} {'ember GB/s':>11} {'ember/mpi4py':>13}")
    for mb in sizes_mb:
        n = mb * 1024 * 1024 // 4
        a = np.ones(n, dtype=np.float32)
        t = ember.ones(n)
        reps = max(3, min(20, 256 // mb))
        t_mpi, t_emb = timed_pair(lambda: comm.Allreduce(MPI.IN_PLACE, a), lambda: dist.all_reduce(t), reps)
        bw = lambda s: 2 * (N - 1) / N * mb * 1024 * 1024 / s / 1e9
        say(f"{mb:>6}MB {t_mpi * 1e3:>10.2f} {t_emb * 1e3:>10.2f} {bw(t_mpi):>12.2f} {bw(t_emb):>11.2f} "
            f"{t_mpi / t_emb:>12.0%}")



def bench_latency():
    say("\n== one-float all-reduce latency (us)")
    a = np.ones(1, dtype=np.float32)
    t = ember.ones(1)
    reps = 2000
    t_mpi, t_emb = timed_pair(lambda: [comm.Allreduce(MPI.IN_PLACE, a) for _ in range(reps)],
                              lambda: [dist.all_reduce(t) for _ in range(reps)], 5)

    def with_check(mode):
        def run():
            dist._api._state.check = mode
            for _ in range(reps):
                dist.all_reduce(t)
            dist._api._state.check = "QUICK"
        return run
    _, t_off = timed_pair(lambda: None, with_check("OFF"), 5)
    _, t_dbg = timed_pair(lambda: None, with_check("DETAIL"), 5)
    t_mpi, t_emb, t_off, t_dbg = t_mpi / reps, t_emb / reps, t_off / reps, t_dbg / reps
    say(f"mpi4py Allreduce {t_mpi * 1e6:.1f} us | ember all_reduce: check off {t_off * 1e6:.1f} us "
        f"(x{t_off / t_mpi:.2f}), default quick check {t_emb * 1e6:.1f} us (x{t_emb / t_mpi:.2f}), "
        f"TORCH_DISTRIBUTED_DEBUG=DETAIL {t_dbg * 1e6:.1f} us (x{t_dbg / t_mpi:.2f})")


def mlp(lib, hidden=1024):
    nn = lib.nn
    return nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def step_fn(lib, model, x, y):
    opt = lib.optim.SGD(model.parameters(), lr=1e-3)
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def bench_ddp(steps):
    say(f"\n== DDP training step, MLP 1024-1024-1024-10, batch 64 per rank, {N} ranks (ms per step)")
    ember.set_num_threads(1)
    ember.manual_seed(0)
    x, y = ember.randn(64, 1024), ember.randint(0, 10, (64,))
    single = mlp(ember)
    t_single = None
    if R == 0:                                  # the single process runs alone (the other rank waits)
        f = step_fn(ember, single, x, y)
        for _ in range(2):
            f()
        ts = []
        for _ in range(steps):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        t_single = statistics.median(ts)
    comm.Barrier()
    model = DDP(mlp(ember))
    t_ddp = timed(step_fn(ember, model, x, y), steps)
    line = f"ember single process {t_single * 1e3 if t_single else 0:.2f} | ember DDP {t_ddp * 1e3:.2f}" \
        if R == 0 else ""
    t_torch = None
    try:
        import torch
        import torch.distributed as tdist
        torch.set_num_threads(1)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000 if R == 0 else 0))
        port = comm.bcast(os.environ["MASTER_PORT"], root=0)
        os.environ["MASTER_PORT"] = port
        tdist.init_process_group("gloo", rank=R, world_size=N)
        torch.manual_seed(0)
        tm = torch.nn.parallel.DistributedDataParallel(mlp(torch))
        tx, ty = torch.from_numpy(x.numpy().copy()), torch.from_numpy(y.numpy().copy())
        t_torch = timed(step_fn(torch, tm, tx, ty), steps)
        tdist.destroy_process_group()
    except ImportError:
        pass
    if t_torch:
        line += f" | PyTorch DDP (gloo) {t_torch * 1e3:.2f} | ember DDP / PyTorch DDP {t_ddp / t_torch:.2f}"
    say(line + (f" | DDP / single {t_ddp / t_single:.2f}" if t_single else ""))


def bench_overlap(steps):
    say(f"\n== overlap of the gradient all-reduce with backward (same MLP, {N} ranks; ms of backward)")
    ember.set_num_threads(1)
    ember.manual_seed(0)
    x, y = ember.randn(64, 1024), ember.randint(0, 10, (64,))
    F = ember.nn.functional
    res = {}
    from ember.nn.parallel import distributed as ddp_mod
    first = ddp_mod._DEFAULT_FIRST_BUCKET_BYTES
    for name, cap, sync in (("overlap (1 MB buckets)", 1, True), ("no overlap (one bucket)", 1000, True),
                            ("no communication (no_sync)", 1, False)):
        ddp_mod._DEFAULT_FIRST_BUCKET_BYTES = first if cap < 1000 else cap << 20    # one bucket: no early start
        model = DDP(mlp(ember), bucket_cap_mb=cap)
        ddp_mod._DEFAULT_FIRST_BUCKET_BYTES = first

        def back():
            model.zero_grad()
            loss = F.cross_entropy(model(x), y)
            comm.Barrier()
            t0 = time.perf_counter()
            loss.backward()
            return time.perf_counter() - t0

        ctx = model.no_sync if not sync else None
        ts = []
        for i in range(steps + 2):
            if ctx:
                with ctx():
                    t = back()
            else:
                t = back()
            if i >= 2:
                ts.append(t)
        res[name] = comm.allreduce(statistics.median(ts), op=MPI.MAX)
        say(f"{name:<28} {res[name] * 1e3:8.2f} ms  ({len(model._buckets)} bucket(s))")
    comm_time = res["no overlap (one bucket)"] - res["no communication (no_sync)"]
    hidden = res["no overlap (one bucket)"] - res["overlap (1 MB buckets)"]
    say(f"communication after backward: {comm_time * 1e3:.2f} ms; hidden by overlap: {hidden * 1e3:.2f} ms "
        f"({hidden / comm_time:.0%} of it)" if comm_time > 0 else "communication too fast to measure")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    dist.init_process_group("mpi")
    say(f"ember.distributed benchmarks: {N} ranks, {MPI.Get_library_version().splitlines()[0]}")
    bench_allreduce([1, 4, 16] if args.quick else [1, 4, 16, 64, 256])
    bench_latency()
    bench_ddp(5 if args.quick else 20)
    bench_overlap(5 if args.quick else 20)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
