"""ember.compile side by side with ember eager, PyTorch eager and torch.compile, in one run.

    python benchmarks/bench_compile.py [--threads 1] [--repeat 7] [--steps 50] [--only mlp,cnn,gpt,lstm]
                                       [--no-torch-compile] [--device opencl] [--optim sgd]

One training step (zero_grad, forward, loss, backward, optimizer step) of each model, built by the same
code for both libraries (``import ember as torch`` style):

- mlp:  Linear(64,128)-ReLU-Linear(128,10), batch 64, Adam
- cnn:  the digits CNN (conv 1->16, pool, conv 16->32, linear), batch 64, Adam
- gpt:  2 Transformer layers, d_model 64, 4 heads, causal, sequence 32, batch 16, AdamW
- lstm: 2-layer LSTM language model, hidden 128, sequence 35, batch 20, SGD

Each figure is the median over ``--repeat`` rounds of ``--steps`` steps (ms per step), after warm-up; the
variants of a model are timed in alternating rounds (so load from other work falls on all alike), and the ratio is
the median over rounds of compiled / torch eager in the same round;
"first 3 calls" is the wall time of ember.compile's warm-up, capture and first replay together (the
issue's "capture + first replay"; torch.compile's compile time is not measured here). Ratios are ember
compiled / PyTorch eager (< 1: ember is faster). ``torch.compile`` uses its default backend (inductor, which
needs a C++ compiler); where it fails its column reads n/a with the reason.

``--device opencl`` (or another ember device) runs the models there instead and compares ember eager,
ember compiled without fusion (``ember.compiler.config.fusion = False``) and compiled with the device's
fuser, with the kernel launches per step of each compiled graph (``ember.profiler.compiled_graphs()``);
every round ends with the device synchronized. ``--optim sgd|adam`` replaces the mlp's optimizer
(SGD: momentum 0.9). ``--profile`` times each recorded call of the compiled step's replay and sums them per
kernel (where the time goes). ``--memory-plan`` prints, per model, what memory planning packed (the intermediates'
storages and bytes, the buffers they share) and the compiled step with planning off and on, timed in
alternating rounds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import steady_heap  # noqa: E402


def build(T, kind, seed=0, device="cpu", optim=None):
    """(step function, x, y) for library ``T`` (ember or torch): identical code for both."""
    nn, F = T.nn, T.nn.functional
    T.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        x, y = T.tensor(rng.standard_normal((64, 64), dtype=np.float32)), T.tensor(rng.integers(0, 10, 64))
        if optim == "sgd":
            opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        else:
            opt = None
    elif kind == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(512, 10))
        x = T.tensor(rng.standard_normal((64, 1, 8, 8), dtype=np.float32))
        y = T.tensor(rng.integers(0, 10, 64))
        opt = T.optim.Adam(model.parameters(), lr=1e-3)
    elif kind == "gpt":
        vocab, d, seq = 96, 64, 32

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(vocab, d)
                self.pos = nn.Embedding(seq, d)
                layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
                self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
                self.head = nn.Linear(d, vocab)
                self.register_buffer("mask", T.triu(T.full((seq, seq), float("-inf")), diagonal=1))
                self.register_buffer("positions", T.arange(seq))

            def forward(self, idx):
                h = self.tok(idx) + self.pos(self.positions)
                return self.head(self.blocks(h, mask=self.mask))
        model = GPT()
        x = T.tensor(rng.integers(0, vocab, (16, seq)))
        y = T.tensor(rng.integers(0, vocab, (16, seq)))
        opt = T.optim.AdamW(model.parameters(), lr=1e-3)
    elif kind == "lstm":
        vocab, hidden, seq = 200, 128, 35

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(vocab, hidden)
                self.rnn = nn.LSTM(hidden, hidden, 2)
                self.out = nn.Linear(hidden, vocab)

            def forward(self, idx):
                h, _ = self.rnn(self.emb(idx))
                return self.out(h)
        model = LM()
        x, y = T.tensor(rng.integers(0, vocab, (seq, 20))), T.tensor(rng.integers(0, vocab, (seq, 20)))
        opt = T.optim.SGD(model.parameters(), lr=0.1)
    else:
        raise ValueError(kind)
    model.to(device)
    x, y = x.to(device), y.to(device)
    if opt is None:
        opt = T.optim.Adam(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return step, x, y


def per_step(fn, x, y, steps, repeat, sync=None):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn(x, y)
        if sync is not None:
            sync()
        ts.append((time.perf_counter() - t0) / steps)
    return statistics.median(ts)


def device_table(args) -> int:
    """ember eager / compiled / compiled + fused on ``args.device``, with kernel launches per step."""
    import ember
    dev = args.device
    mod = getattr(ember, ember.device(dev).type)
    sync = getattr(mod, "synchronize", None)
    print(f"ember {ember.__version__} on {dev}; ms per training step, median of {args.repeat} x {args.steps} "
          f"steps (device synchronized at the end of each round)")
    head = ("model", "eager", "compiled", "compiled+fused", "eager / fused", "launches", "launches fused",
            "fused kernels")
    rows = []
    for kind in args.only.split(","):
        step, x, y = build(ember, kind, device=dev, optim=args.optim)
        first_calls(step, x, y)
        t_eager = per_step(step, x, y, args.steps, args.repeat, sync)
        res = {}
        for fusion in (False, True):
            ember.compiler.config.fusion = fusion
            step, x, y = build(ember, kind, device=dev, optim=args.optim)
            cstep = ember.compile(step)
            first_calls(cstep, x, y)
            res[fusion] = (per_step(cstep, x, y, args.steps, args.repeat, sync),
                           max(cstep._compiled.info(), key=lambda r: r["replays"]))
        ember.compiler.config.fusion = True
        (t0, i0), (t1, i1) = res[False], res[True]
        rows.append((kind + (f" ({args.optim})" if args.optim and kind == "mlp" else ""), f"{t_eager * 1e3:.3f}",
                     f"{t0 * 1e3:.3f}", f"{t1 * 1e3:.3f}", f"{t_eager / t1:.2f}x", str(i0["kernel_launches"]),
                     str(i1["kernel_launches"]), str(i1["fused_kernels"])))
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return 0


def first_calls(fn, x, y, n=3):
    t0 = time.perf_counter()
    for _ in range(n):
        fn(x, y)
    return time.perf_counter() - t0


def memory_plan_table(args) -> int:
    """Per model: what memory planning packed (ember.profiler.compiled_graphs()'s ``memory_plan``) and the compiled
    step with planning off and on, timed in alternating rounds (median ms)."""
    import ember
    config = ember.compiler.config
    print(f"ember {ember.__version__}, threads {args.threads or 'default'}; ms per compiled step, planning off / on "
          f"in alternating rounds, median of {args.repeat} x {args.steps} steps")
    head = ("model", "storages planned", "bytes before", "buffers", "bytes after", "plan off ms", "plan on ms")
    rows = []
    was = config.memory_planning
    try:
        for kind in args.only.split(","):
            runs = {}
            for on in (False, True):
                config.memory_planning = on
                step, x, y = build(ember, kind)
                cstep = ember.compile(step)
                first_calls(cstep, x, y, n=4)
                runs[on] = (cstep, x, y)
            times = {False: [], True: []}
            for _ in range(args.repeat):
                for on in (False, True):
                    times[on].append(per_step(*runs[on], args.steps, 1))
            plan = max(runs[True][0]._compiled.info(), key=lambda r: (r["replays"], r["calls"]))["memory_plan"]
            rows.append((kind, str(plan["planned"]), str(plan["bytes_before"]), str(plan["buffers"]),
                         str(plan["bytes_after"]), f"{statistics.median(times[False]) * 1e3:.3f}",
                         f"{statistics.median(times[True]) * 1e3:.3f}"))
    finally:
        config.memory_planning = was
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 0


def profile_table(args) -> int:
    """Per model: each recorded call of the compiled step's replay timed alone, summed per kernel name (µs per
    step), largest first; then the sum of the calls and the whole compiled step, both µs per step."""
    import ember
    for kind in args.only.split(","):
        step, x, y = build(ember, kind)
        cstep = ember.compile(step)
        first_calls(cstep, x, y)
        entry = max((e for e in cstep._compiled.entries.values() if e.program is not None), key=lambda e: e.replays)
        names = [getattr(fn, "__qualname__", type(fn).__name__).replace(".<locals>", "") for fn, _, _ in entry.program]
        spent = [0.0] * len(entry.bound)
        clock = time.perf_counter
        for _ in range(args.steps):
            for i, call in enumerate(entry.bound):
                t0 = clock()
                call()
                spent[i] += clock() - t0
        per = {}
        for name, t in zip(names, spent):
            n, total = per.get(name, (0, 0.0))
            per[name] = (n + 1, total + t)
        whole = per_step(cstep, x, y, args.steps, 1)
        print(f"\n{kind}: {len(entry.bound)} calls per step")
        print(f"{'kernel':44s} {'calls':>5s} {'us / step':>10s} {'us / call':>10s}")
        for name, (n, total) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            us = total / args.steps * 1e6
            print(f"{name[:44]:44s} {n:5d} {us:10.1f} {us / n:10.2f}")
        print(f"{'sum of the calls':44s} {'':5s} {sum(spent) / args.steps * 1e6:10.1f}")
        print(f"{'the compiled step (guards, copies included)':44s} {'':5s} {whole * 1e6:10.1f}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=None, help="numpy / torch threads (default: the libraries')")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--only", default="mlp,cnn,gpt,lstm")
    p.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile (it takes seconds per model)")
    p.add_argument("--device", default=None, help="an ember device (e.g. opencl): eager / compiled / fused there")
    p.add_argument("--optim", choices=("adam", "sgd"), default=None, help="the mlp's optimizer (default adam)")
    p.add_argument("--profile", action="store_true", help="instead: per model, the compiled step's recorded calls "
                   "timed one by one over --steps replays, summed per kernel (where a replay's time goes)")
    p.add_argument("--memory-plan", action="store_true", help="instead: per model, the memory plan (intermediates "
                   "before -> after) and compiled steps with planning off / on, timed in alternating rounds")
    args = p.parse_args(argv)
    heap = steady_heap()
    if args.threads:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
    if args.device:
        return device_table(args)
    if args.memory_plan:
        return memory_plan_table(args)
    if args.profile:
        return profile_table(args)
    import ember
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    print(f"ember {ember.__version__}, torch {torch.__version__ if torch else 'not installed'}, threads "
          f"{args.threads or 'default'}; ms per training step, median of {args.repeat} x {args.steps} steps"
          f"{'; glibc heap kept (_timing.steady_heap)' if heap else ''}")
    head = ("model", "ember eager", "ember compiled", "torch eager", "torch.compile", "compiled / torch eager",
            "first 3 calls (ms)", "replays")
    rows = []
    for kind in args.only.split(","):
        # every variant is built and warmed up first, then timed in alternating rounds (one round: --steps steps of
        # each), so that load from other work on the machine falls on all of them alike
        step, x, y = build(ember, kind)
        first_calls(step, x, y)
        variants = {"eager": (step, x, y)}
        step, x, y = build(ember, kind)
        cstep = ember.compile(step)
        cap = first_calls(cstep, x, y)
        variants["compiled"] = (cstep, x, y)
        tc_note = "n/a"
        if torch is not None:
            tstep, tx, ty = build(torch, kind)
            first_calls(tstep, tx, ty)
            variants["torch"] = (tstep, tx, ty)
            if not args.no_torch_compile:
                tstep, tx, ty = build(torch, kind)
                try:
                    ctstep = torch.compile(tstep)
                    first_calls(ctstep, tx, ty)
                    variants["torch.compile"] = (ctstep, tx, ty)
                except Exception as e:  # noqa: BLE001 - no C++ compiler, unsupported op, ...: reported, not fatal
                    tc_note = f"n/a ({type(e).__name__})"
        rounds = {k: [] for k in variants}
        for _ in range(args.repeat):
            for k, (fn, a, b) in variants.items():
                rounds[k].append(per_step(fn, a, b, args.steps, 1))
        t = {k: statistics.median(v) for k, v in rounds.items()}
        info = cstep._compiled.info()
        replays = sum(r["replays"] for r in info)
        why = "; ".join(sorted({r["eager_reason"] for r in info if r["eager_reason"]}))
        t_torch = t.get("torch")
        if "torch.compile" in t:
            tc_note = f"{t['torch.compile'] * 1e3:.3f}"
        # the ratio: median over rounds of (compiled / torch eager) in the same round
        ratio = statistics.median(c / e for c, e in zip(rounds["compiled"], rounds["torch"])) if t_torch else None
        rows.append((kind, f"{t['eager'] * 1e3:.3f}", f"{t['compiled'] * 1e3:.3f}",
                     f"{t_torch * 1e3:.3f}" if t_torch else "n/a", tc_note,
                     f"{ratio:.2f}" if t_torch else "n/a", f"{cap * 1e3:.1f}",
                     str(replays) + (f" (eager: {why})" if why else "")))
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
