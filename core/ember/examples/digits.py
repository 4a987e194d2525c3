"""ember's main job: train a classifier on scikit-learn's handwritten digits, on any installed device.

    python -m ember.examples.digits                        # MLP on cpu, the defaults below
    python -m ember.examples.digits --model cnn --device opencl --plot curve.png
    mpiexec -n 2 python -m ember.examples.digits --distributed   # DistributedDataParallel over MPI
    python -m ember.examples.digits --device vdev:0 --data-parallel vdev:0,vdev:1   # nn.DataParallel
    python -m ember.examples.digits --model cnn --export-onnx digits.onnx   # ONNX, checked in onnxruntime

The data is real and ships with scikit-learn (``sklearn.datasets.load_digits``: 1797 8x8
grey-scale images of the digits 0-9, pixel values 0..16), so nothing is downloaded. It is
split 80/20 into a training and a held-out test set, stratified by class, with ``--seed``.

Models (written exactly as a PyTorch user would, with ``import ember as torch``):

- ``mlp``: Flatten -> Linear(64, 128) -> ReLU -> Linear(128, 10)
- ``cnn``: Conv2d(1, 16, 3, padding=1) -> ReLU -> MaxPool2d(2) -> Conv2d(16, 32, 3, padding=1)
  -> ReLU -> Flatten -> Dropout(0.25) -> Linear(512, 10); trained with random one-pixel
  shifts of each batch (``--no-augment`` turns them off).

Training: Adam (``--lr``, default 1e-2) with cosine annealing over ``--epochs`` (default 30),
cross-entropy loss, batches of ``--batch-size`` (64) drawn by a DataLoader shuffling with a
seeded generator. With the defaults the test accuracy is >= 97 % for the MLP and >= 98 % for
the CNN (docs/benchmarks.md has the figures). ``--checkpoint PATH`` saves model and optimizer
with ``ember.save`` and reloads them into a fresh model to check that the reloaded model gives
the same predictions; ``--plot PATH`` writes the loss / accuracy curves when matplotlib is
installed.

``main(argv)`` returns a dict with the final ``test_accuracy``, the per-epoch ``history``
and the ``seconds`` spent training, so tests and benchmarks can call it in-process.
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

__all__ = ["build_model", "load_digits_split", "evaluate", "train", "main"]


def load_digits_split(seed: int = 0, test_size: float = 0.2, device="cpu"):
    """The digits data as ember tensors: ``(x_train, y_train, x_test, y_test)``.

    ``x_*`` are float32 of shape (N, 1, 8, 8) with pixels scaled to [0, 1]; ``y_*`` are int64
    class indices of shape (N,). The split is stratified and fixed by ``seed``.
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:   # pragma: no cover - the demo installs it
        raise SystemExit("the digits example needs scikit-learn: pip install 'ember[examples]'") from None
    data = load_digits()
    x = (data.data / 16.0).astype("float32").reshape(-1, 1, 8, 8)
    x_tr, x_te, y_tr, y_te = train_test_split(x, data.target, test_size=test_size, random_state=seed,
                                              stratify=data.target)
    as_t = lambda a, dt: ember.tensor(a, dtype=dt, device=device)
    return as_t(x_tr, ember.float32), as_t(y_tr, ember.int64), as_t(x_te, ember.float32), as_t(y_te, ember.int64)


def build_model(name: str) -> nn.Module:
    """The ``mlp`` or ``cnn`` classifier (10 classes, input (N, 1, 8, 8))."""
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(512, 10))
    raise ValueError(f"unknown model '{name}' (expected 'mlp' or 'cnn')")


@ember.no_grad()
def evaluate(model: nn.Module, x, y, batch_size: int = 512):
    """``(mean cross-entropy loss, accuracy in [0, 1])`` of ``model`` in eval mode on ``(x, y)``."""
    was_training = model.training
    model.eval()
    loss, correct = 0.0, 0
    for i in range(0, len(x), batch_size):
        logits = model(x[i:i + batch_size])
        loss += F.cross_entropy(logits, y[i:i + batch_size], reduction="sum").item()
        correct += (logits.argmax(1) == y[i:i + batch_size]).sum().item()
    model.train(was_training)
    return loss / len(x), correct / len(x)


def _shifted(xb, padded, generator):
    """The batch moved by a random whole pixel in each direction (-1, 0 or +1), zeros shifted in.

    ``padded`` is the batch with one pixel of zero padding on each side; the shifted batch is
    a strided view of it, so the augmentation costs no kernel."""
    dy, dx = ember.randint(0, 3, (2,), generator=generator).tolist()
    return padded[:, :, dy:dy + 8, dx:dx + 8]


def train(model: nn.Module, data, *, epochs: int, batch_size: int, lr: float, seed: int,
          augment: bool = False, progress: bool = True, device="cpu", distributed: bool = False,
          verify_sync: bool = False, compile: bool = False):
    """Train ``model`` in place; returns ``(history, optimizer, seconds)``.

    ``distributed``: ``model`` is a DistributedDataParallel; each rank reads its share of every
    global batch of ``batch_size`` (a DistributedSampler, reshuffled per epoch), and the losses
    reported are averaged over ranks. ``verify_sync``: after every step, check that the parameters
    are bit-identical on every rank (RuntimeError naming the step otherwise). ``compile``: the training
    step (forward, loss, backward, Adam) runs through ``ember.compile`` (captured once per batch shape,
    then replayed; bit for bit the eager step's results).

    ``history`` has one dict per epoch: ``epoch``, ``train_loss`` (mean over the epoch's
    batches), ``test_loss``, ``test_accuracy``."""
    x_tr, y_tr, x_te, y_te = data
    dataset = TensorDataset(x_tr, y_tr)
    # A BatchSampler as the sampler (batch_size=None) hands the dataset a list of indices, so a batch
    # is one indexing op per tensor instead of batch_size item lookups and a stack (PyTorch's idiom).
    if distributed:
        from ember.utils.data import DistributedSampler
        dist_sampler = DistributedSampler(dataset, shuffle=True, seed=seed)
        world = ember.distributed.get_world_size()
        batches = BatchSampler(dist_sampler, -(-batch_size // world), drop_last=False)
    else:
        batches = BatchSampler(RandomSampler(dataset, generator=ember.Generator().manual_seed(seed)),
                               batch_size, drop_last=False)
    loader = DataLoader(dataset, sampler=batches, batch_size=None)
    aug_gen = ember.Generator().manual_seed(seed + 1) if augment else None
    opt = ember.optim.Adam(model.parameters(), lr=lr)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    history = []

    def train_step(xb, yb):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    step = ember.compile(train_step) if compile else train_step
    bar = _progress(range(1, epochs + 1), progress)
    start = time.perf_counter()
    for epoch in bar:
        model.train()
        if distributed:
            dist_sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        for xb, yb in loader:
            if augment:
                xb = _shifted(xb, F.pad(xb, (1, 1, 1, 1)), aug_gen)
            loss = step(xb, yb)
            if verify_sync:
                _verify_in_sync(model, epoch, batches)
            total += loss.item()
            batches += 1
        if distributed:
            total = _mean_over_ranks(total)
        sched.step()
        test_loss, test_acc = evaluate(model, x_te, y_te)
        history.append({"epoch": epoch, "train_loss": total / batches, "test_loss": test_loss,
                        "test_accuracy": test_acc})
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{total / batches:.4f}", test_acc=f"{test_acc:.4f}")
    train.compiled = step._compiled.info() if compile else None      # (what ember.compile did, for main)
    return history, opt, time.perf_counter() - start


def _verify_in_sync(model, epoch, step):
    """RuntimeError unless every rank's parameters equal rank 0's bit for bit."""
    dist = ember.distributed
    flat = ember.cat([p.detach().reshape(-1) for p in model.parameters()])
    mine = flat.view(ember.int32)                 # compare bits, not values (-0.0 vs 0.0, nan)
    ref = mine.clone()
    dist.broadcast(ref, src=0)
    if not ember.equal(mine, ref):
        raise RuntimeError(f"rank {dist.get_rank()}: parameters differ from rank 0's after epoch {epoch} step {step}")
    _verify_in_sync.steps += 1


_verify_in_sync.steps = 0


def _mean_over_ranks(value: float) -> float:
    t = ember.tensor([value], dtype=ember.float64)
    ember.distributed.all_reduce(t, op=ember.distributed.ReduceOp.AVG)
    return t.item()


def _progress(it, enabled):
    if not enabled:
        return it
    try:
        from tqdm import tqdm
    except ImportError:   # tqdm is optional: plain iteration, the epoch lines still print
        return it
    return tqdm(it, desc="epochs", unit="epoch", file=sys.stdout)


def _check_checkpoint(path, model, opt, args, x_te):
    """Save model + optimizer to ``path``, load them into a fresh model and check predictions match."""
    ember.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "args": vars(args)}, path)
    state = ember.load(path, map_location=args.device)
    fresh = build_model(args.model).to(args.device)
    fresh.load_state_dict(state["model"])
    model.eval()
    fresh.eval()
    with ember.no_grad():
        same = ember.equal(model(x_te), fresh(x_te))
    if not same:
        raise RuntimeError(f"the model reloaded from {path} does not reproduce the trained model's outputs")
    return same


def _export_onnx(path, model, x_te):
    """Export the trained model to ONNX at ``path`` (batch dim symbolic) and, when onnxruntime is installed, check
    it predicts the held-out images as ember does; returns ``{"path", "agree", "max_abs_diff"}``. A quantized model
    is exported in ONNX's QDQ form (QuantizeLinear / DequantizeLinear around the float ops)."""
    model.eval()
    cpu_model = model.to("cpu") if x_te.device.type != "cpu" else model
    x = x_te.cpu()
    ember.onnx.export(cpu_model, (x[:2],), path, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    out = {"path": path, "agree": None, "max_abs_diff": None}
    try:
        import onnxruntime
    except ImportError:
        print(f"onnx: exported to {path} (onnxruntime is not installed: not run)")
        return out
    sess = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"image": x.numpy()})[0]
    with ember.no_grad():
        want = cpu_model(x).numpy()
    out["agree"] = int((got.argmax(1) == want.argmax(1)).sum())
    out["max_abs_diff"] = float(abs(got - want).max())
    steps, quantized = "", _is_quantized(cpu_model)
    if quantized:                         # the int8 logits: count the difference in steps of the output's scale
        scale = [m.scale for m in cpu_model.modules() if isinstance(getattr(m, "scale", None), float)][-1]
        out["max_diff_steps"] = out["max_abs_diff"] / scale
        steps = f" = {out['max_diff_steps']:.2f} quantization steps"
    print(f"onnx: exported {'the int8 model ' if quantized else ''}to {path}; onnxruntime agrees on "
          f"{out['agree']}/{len(x)} held-out predictions (max |logit difference| {out['max_abs_diff']:.2e}{steps})")
    return out


def _is_quantized(model):
    return any(t.is_quantized for t in model.state_dict().values() if isinstance(t, ember.Tensor))


def _int8_path(path):
    """Where ``--export-onnx PATH`` with ``--quantize`` writes the int8 model: ``digits.onnx`` -> ``digits.int8.onnx``."""
    root, dot, ext = str(path).rpartition(".")
    return f"{root}.int8.{ext}" if dot and "/" not in ext else f"{path}.int8.onnx"


def _plot(history, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("--plot: matplotlib is not installed (pip install matplotlib); no plot written")
        return False
    epochs = [h["epoch"] for h in history]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.plot(epochs, [h["train_loss"] for h in history], label="train")
    ax1.plot(epochs, [h["test_loss"] for h in history], label="test")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("cross-entropy loss")
    ax1.legend()
    ax2.plot(epochs, [100 * h["test_accuracy"] for h in history])
    ax2.set_xlabel("epoch")
    ax2.set_ylabel("test accuracy (%)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def parse_args(argv=None):
    """The main job's command line (``argv`` default: sys.argv[1:]) as an argparse.Namespace."""
    p = argparse.ArgumentParser(prog="python -m ember.examples.digits",
                                description="Train an MLP or a small CNN on scikit-learn's handwritten digits.")
    p.add_argument("--device", default="cpu", help="any installed device: cpu, opencl, cuda, ... (default cpu)")
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-2, help="Adam's learning rate (cosine-annealed to 0)")
    p.add_argument("--seed", type=int, default=0, help="seeds the split, the initialisation and the shuffling")
    p.add_argument("--checkpoint", metavar="PATH", help="save the trained model here, reload and verify it")
    p.add_argument("--plot", metavar="PATH", help="write loss / accuracy curves (PNG) with matplotlib")
    p.add_argument("--export-onnx", metavar="PATH", help="export the trained model as ONNX (needs the onnx package; "
                   "checked in onnxruntime when installed); with --quantize also the int8 model, to PATH with "
                   "'.int8' before the extension")
    p.add_argument("--no-augment", dest="augment", action="store_false",
                   help="train the CNN without random one-pixel shifts")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.add_argument("--compile", action="store_true",
                   help="run the training step through ember.compile (capture once, then replay)")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel training on every rank of an MPI job: mpiexec -n 2 python -m "
                        "ember.examples.digits --distributed (the global batch stays --batch-size)")
    p.add_argument("--data-parallel", metavar="DEVICES", default=None,
                   help="train through nn.DataParallel over these devices of one type, comma-separated (e.g. "
                        "vdev:0,vdev:1; the model lives on the first, which --device must name)")
    p.add_argument("--verify-sync", action="store_true",
                   help="with --distributed: check after every step that all ranks hold bit-identical parameters")
    p.add_argument("--quantize", choices=("dynamic", "static", "qat"), default=None,
                   help="after training, quantize the model to int8 (ember.ao.quantization; needs ember-quantized) "
                        "and report its accuracy, state-dict size and throughput against the float model")
    p.add_argument("--qengine", choices=("x86", "fbgemm", "qnnpack", "onednn"), default="qnnpack",
                   help="with --quantize static|qat: whose default qconfig to use (default qnnpack: per-tensor "
                        "weights; x86: per-channel)")
    p.add_argument("--qat-epochs", type=int, default=3, help="with --quantize qat: fine-tuning epochs (default 3)")
    args = p.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or not (args.lr > 0 and math.isfinite(args.lr)):
        p.error("--epochs and --batch-size must be >= 1 and --lr a positive number")
    return args


def usable_device(name: str):
    """``ember.device(name)`` after checking that its type is installed and has a usable device; SystemExit
    with one line (the device module's ``unavailable_reason()`` where it has one) otherwise."""
    try:
        device = ember.device(name)
        module = getattr(ember, device.type, None)
        if module is not None and hasattr(module, "is_available") and not module.is_available():
            why = getattr(module, "unavailable_reason", lambda: None)() or "no device of this type was found"
            raise SystemExit(f"digits: --device {name} is not available: {why}")
        ember.empty(0, device=device)              # installed, and the index exists (else: what to do)
    except (RuntimeError, ValueError) as e:
        raise SystemExit(f"digits: --device {name}: {e}") from None
    return device


def main(argv=None) -> dict:
    """Run the main job as the command line says: train, evaluate on the held-out split, optionally save and
    verify a checkpoint, plot, quantize or train distributed; returns the results (test accuracy, ...)."""
    args = parse_args(argv)
    device = usable_device(args.device)
    ember.manual_seed(args.seed)
    data = load_digits_split(args.seed, device=device)
    model = build_model(args.model).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    rank, world, trained = 0, 1, model
    if args.distributed:
        import ember.distributed as dist
        if not dist.is_initialized():
            dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
        trained = nn.parallel.DistributedDataParallel(model)
    elif args.data_parallel:
        devices = [usable_device(d.strip()) for d in args.data_parallel.split(",") if d.strip()]
        if devices[0] != device:
            raise SystemExit(f"digits: --data-parallel {args.data_parallel}: the first device must be --device "
                             f"({device})")
        trained = nn.DataParallel(model, device_ids=devices)
    if rank == 0:
        print(f"digits: {len(data[0])} train / {len(data[2])} test images, model {args.model} "
              f"({n_params} parameters) on {device}" + (f", {world} ranks (DistributedDataParallel)"
                                                        if args.distributed else "")
              + (f", DataParallel over {', '.join(map(str, trained.device_ids))}" if args.data_parallel else ""))
    _verify_in_sync.steps = 0
    history, opt, seconds = train(trained, data, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                                  seed=args.seed, augment=args.augment and args.model == "cnn",
                                  progress=args.progress and rank == 0, device=device,
                                  distributed=args.distributed, verify_sync=args.verify_sync and args.distributed,
                                  compile=args.compile)
    acc = history[-1]["test_accuracy"]
    if rank == 0:
        print(f"test accuracy: {100 * acc:.2f} % after {args.epochs} epochs ({seconds:.1f} s training)")
    if args.compile and rank == 0:
        info = train.compiled
        calls, replays = sum(r["calls"] for r in info), sum(r["replays"] for r in info)
        eager = sorted({r["eager_reason"] for r in info if r["eager_reason"]})
        print(f"compile: {replays} of {calls} training steps replayed ({len(info)} batch shapes captured"
              + (f"; eager: {'; '.join(eager)}" if eager else "") + ")")
    if args.verify_sync and args.distributed:
        print(f"rank {rank}: parameters bit-identical to rank 0's after every one of {_verify_in_sync.steps} steps")
    result = {"test_accuracy": acc, "history": history, "seconds": seconds, "model": model,
              "compiled": train.compiled if args.compile else None,
              "rank": rank, "world_size": world, "sync_checks": _verify_in_sync.steps}
    if args.checkpoint and rank == 0:
        _check_checkpoint(args.checkpoint, model, opt, args, data[2])
        print(f"checkpoint: saved to {args.checkpoint}, reloaded, predictions identical")
    if args.export_onnx and rank == 0:
        result["onnx"] = _export_onnx(args.export_onnx, model, data[2])
    if args.plot and _plot(history, args.plot):
        print(f"plot: {args.plot}")
    if args.quantize and rank == 0:
        from .digits_quantize import run as run_quantized
        result["quantized"] = run_quantized(args, model, data)
        if args.export_onnx:
            result["quantized"]["onnx"] = _export_onnx(_int8_path(args.export_onnx),
                                                       result["quantized"]["quantized_model"], data[2])
    return result


if __name__ == "__main__":
    main()
