"""Parallelism across devices in one process, side by side in one run (issue 24):

    python benchmarks/bench_parallel.py

1. nn.DataParallel over vdev:0 + vdev:1 against the same model on vdev:0 alone: time per training step
   (forward, backward, SGD step) of an MLP, and where DataParallel's own time goes (scatter, replicate,
   gather).
2. nn.parallel.Pipe over vdev:0 + vdev:1 with chunks 1 / 2 / 4 / 8, checkpoint "never" and "always":
   time per step and the peak memory the allocator saw on each device during the step (above what the
   parameters hold), forward and backward. The MLP is narrow and the batch large, so activations (what
   checkpointing saves) outweigh the weights' gradients (what it cannot).
3. A copy vdev:0 -> vdev:1 through the runtime's ``copy_across`` (arena to arena) against the core's
   staging through host memory (the runtime made to decline), for 64 KiB and 16 MiB.
4. nn.parallel.Pipe over opencl:0 + cpu and cpu + opencl:0 (an asynchronous device beside a synchronous
   one), chunks 1 / 2 / 4 / 8: time per forward and per forward + backward with the former issue order
   (lower partitions first, each copying its input just before it runs) against the current one (every
   copy first, then the partitions on asynchronous devices, then the synchronous ones), back to back in
   each round, with the median of the rounds' ratios (chunks 1 is the control: both orders are the same),
   beside each partition's own forward time on the whole batch (their sum is what a schedule without
   overlap costs, their maximum what a perfect overlap would). Needs ember-opencl with a usable device;
   skipped otherwise.

    python benchmarks/bench_parallel.py --only overlap      # just section 4 (also: dp, pipe, copies)

vdev computes with numpy on the host, synchronously: these figures measure ember's data flow and
its overheads, not a speed-up from two accelerators (see docs/parallel.md). Sections 1-3 need ember-vdev
(pip install ./examples/vendor_plugin). Not a test: it prints and asserts nothing.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

import ember
from ember import nn
from ember.nn.parallel import Pipe, gather, replicate, scatter
from _timing import paired


def _best(fn, repeat=7, number=5):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def _mlp(width=512, depth=4):
    ember.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def data_parallel():
    print("1. DataParallel, MLP 512x4 + SGD step, batch 256 (ms per step)")
    single = _mlp().to("vdev:0")
    dp = nn.DataParallel(copy.deepcopy(single), device_ids=["vdev:0", "vdev:1"])
    x = ember.randn(256, 512, device="vdev:0")
    y = ember.randint(0, 10, (256,), device="vdev:0")

    def step(model, opt):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    o1 = ember.optim.SGD(single.parameters(), lr=0.01)
    o2 = ember.optim.SGD(dp.parameters(), lr=0.01)
    t1, t2 = paired([lambda: step(single, o1), lambda: step(dp, o2)], repeat=15)
    devs = ["vdev:0", "vdev:1"]
    ts = _best(lambda: scatter((x,), devs))
    tr = _best(lambda: replicate(dp.module, devs))
    outs = [ember.randn(128, 10, device=d) for d in devs]
    tg = _best(lambda: gather(outs, "vdev:0"))
    print(f"   one device (vdev:0)        {t1 * 1e3:8.2f}")
    print(f"   DataParallel (2 devices)   {t2 * 1e3:8.2f}   ({t2 / t1:.2f}x one device)")
    print(f"   of which scatter {ts * 1e3:.3f}, replicate {tr * 1e3:.3f}, gather {tg * 1e3:.3f}")


def pipe():
    print("2. Pipe over vdev:0 + vdev:1, MLP 256x8 split 8 + 9 children, batch 2048, forward + backward")
    print(f"   {'chunks':>6} {'checkpoint':>10} {'ms/step':>9} {'peak vdev:0 MiB':>16} {'peak vdev:1 MiB':>16}")
    base = _mlp(width=256, depth=8)        # activations (2 MiB each) outweigh the weights (0.25 MiB each)
    x = ember.randn(2048, 256, device="vdev:0")
    pipes = {(c, m): Pipe(copy.deepcopy(base), chunks=c, checkpoint=m, devices=["vdev:0", "vdev:1"],
                          balance=[8, 9]) for c in (1, 2, 4, 8) for m in ("never", "always")}

    def step(p):
        p.zero_grad(set_to_none=True)
        p(x).sum().backward()
    keys = list(pipes)
    times = dict(zip(keys, paired([lambda p=pipes[k]: step(p) for k in keys], repeat=5)))
    for k in keys:
        p = pipes[k]
        p.zero_grad(set_to_none=True)
        base_alloc = [ember.vdev.memory_allocated(i) for i in (0, 1)]
        for i in (0, 1):
            ember.vdev.reset_peak_memory_stats(i)
        step(p)
        peaks = [(ember.vdev.max_memory_allocated(i) - base_alloc[i]) / 2 ** 20 for i in (0, 1)]
        print(f"   {k[0]:>6} {k[1]:>10} {times[k] * 1e3:9.2f} {peaks[0]:16.2f} {peaks[1]:16.2f}")


def copies():
    from ember_vdev.runtime import RUNTIME
    print("3. copy vdev:0 -> vdev:1 (microseconds)")
    for n in (16 * 1024, 4 * 1024 * 1024):
        src = ember.randn(n, device="vdev:0")
        direct = _best(lambda: src.to("vdev:1"), number=20)
        RUNTIME.copy_across = lambda dst, s, non_blocking=False: False      # the core stages through the host
        try:
            staged = _best(lambda: src.to("vdev:1"), number=20)
        finally:
            del RUNTIME.copy_across
        print(f"   {n * 4 / 1024:8.0f} KiB   copy_across {direct * 1e6:9.1f}   host staging {staged * 1e6:9.1f}"
              f"   ({staged / direct:.2f}x)")


def overlap(repeat=7):
    try:
        usable = ember.opencl.is_available()
    except AttributeError:           # ember-opencl not installed
        usable = False
    if not usable:
        print("4. skipped: no usable OpenCL device (pip install './plugins/opencl[cpu]')")
        return
    print(f"4. Pipe over opencl:0 ({ember.opencl.get_device_name(0)}) and cpu, MLP 512x8 (17 children), batch "
          f"1024, checkpoint 'never'; ms, median of {repeat} rounds, the two orders back to back in each")
    base = _mlp(width=512, depth=8)
    sync = ember.opencl.synchronize
    # about a third of the Linear layers on opencl:0: on a CPU OpenCL runtime its matmul takes about twice
    # numpy's, so both stages take about as long (overlap can hide at most the shorter one)
    for devices, balance in ((["opencl:0", "cpu"], [6, 11]), (["cpu", "opencl:0"], [10, 7])):
        x = ember.randn(1024, 512, device=devices[0])
        pipes = {c: Pipe(copy.deepcopy(base), chunks=c, checkpoint="never", devices=devices, balance=balance)
                 for c in (1, 2, 4, 8)}
        parts = pipes[1].partitions
        mid = parts[0](x).detach().to(devices[1])
        stage = paired([lambda: parts[0](x), lambda: parts[1](mid)], repeat=repeat, sync=sync)

        def forward(p):
            p(x)

        def step(p):
            p.zero_grad(set_to_none=True)
            p(x).sum().backward()
        print(f"   {' + '.join(devices)}, balance {balance}: forward on the whole batch, stage 0 {stage[0] * 1e3:.1f}, "
              f"stage 1 {stage[1] * 1e3:.1f} (sum {sum(stage) * 1e3:.1f}, max {max(stage) * 1e3:.1f})")
        print(f"   {'chunks':>6} {'fwd former':>11} {'fwd now':>8} {'now/former':>10} {'step former':>12} "
              f"{'step now':>9} {'now/former':>10}")
        for c, p in pipes.items():
            row = []
            for fn in (forward, step):
                former, now, ratio = _orders(lambda: fn(p), p, repeat, sync)
                row += [f"{former * 1e3:.1f}", f"{now * 1e3:.1f}", f"{ratio:.2f}"]
            print(f"   {c:>6} {row[0]:>11} {row[1]:>8} {row[2]:>10} {row[3]:>12} {row[4]:>9} {row[5]:>10}")


def _orders(fn, pipe, repeat, sync):
    """Median seconds of ``fn`` with the former issue order and with the current one, timed back to back in each
    round, and the median of the rounds' ratios (current / former), which load from other processes moves less."""
    times = {False: [], True: []}
    ratios = []
    for r in range(repeat + 1):                     # round 0 warms up
        for order in (False, True) if r % 2 else (True, False):
            pipe._overlap = order
            t0 = time.perf_counter()
            fn()
            sync()
            times[order].append(time.perf_counter() - t0)
        if r:
            ratios.append(times[True][-1] / times[False][-1])
    pipe._overlap = True
    return statistics.median(times[False][1:]), statistics.median(times[True][1:]), statistics.median(ratios)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("dp", "pipe", "copies", "overlap"), help="run one section")
    ap.add_argument("--repeat", type=int, default=7, help="timed rounds of section 4 (default 7)")
    args = ap.parse_args()
    if args.only in (None, "dp", "pipe", "copies"):
        try:
            ember.empty(1, device="vdev:1")
        except RuntimeError:
            print("ember-vdev is not installed: pip install ./examples/vendor_plugin")
        else:
            for name, fn in (("dp", data_parallel), ("pipe", pipe), ("copies", copies)):
                if args.only in (None, name):
                    fn()
    if args.only in (None, "overlap"):
        overlap(args.repeat)


if __name__ == "__main__":
    main()
