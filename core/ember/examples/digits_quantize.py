"""``--quantize dynamic|static|qat`` of the digits job (``ember.examples.digits``).

After the float model is trained, it is quantized to int8 with ember.ao.quantization, exactly as a
PyTorch user would with torch.ao.quantization:

- ``dynamic``: ``quantize_dynamic(model, {nn.Linear}, dtype=qint8)`` (Linear weights int8, activations
  quantized per batch; the CNN's convolutions stay float, as in PyTorch);
- ``static``: the model between QuantStub / DeQuantStub, Linear+ReLU / Conv2d+ReLU fused, the
  backend's default qconfig (``--qengine``; default qnnpack: histogram observers, per-tensor weights;
  x86: 7-bit activations, per-channel weights. On these small layers per-channel qparams, a float64
  scale and an int64 zero point per output channel, weigh 23 % of the int8 weights and buy no accuracy),
  ``prepare``, calibration on training batches, ``convert``: everything int8;
- ``qat``: the same model prepared with ``prepare_qat`` and the default QAT qconfig, fine-tuned for
  ``--qat-epochs`` epochs with fake quantization, then ``convert``.

It reports the quantized model's test accuracy beside the float model's, the sizes of the two saved
state dicts (``ember.save`` into memory), and the inference throughput (test images per second,
float32 vs int8) on the model's device.
"""
from __future__ import annotations

import copy
import io
import time

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.ao import quantization as Q

__all__ = ["quantize_model", "state_dict_bytes", "throughput", "run"]


def _wrapped(model: nn.Module) -> nn.Sequential:
    """QuantStub + the model's layers + DeQuantStub (the models are Sequentials)."""
    return nn.Sequential(Q.QuantStub(), *copy.deepcopy(list(model.children())), Q.DeQuantStub())


def _fusable(seq: nn.Sequential) -> list:
    """Names of consecutive (Linear|Conv2d, ReLU) pairs in ``seq``."""
    kids = list(seq.named_children())
    out = []
    for (n1, m1), (n2, m2) in zip(kids, kids[1:]):
        if isinstance(m1, (nn.Linear, nn.Conv2d)) and type(m2) is nn.ReLU:
            out.append([n1, n2])
    return out


def quantize_model(model: nn.Module, mode: str, data, *, qengine: str = "qnnpack", calib_batches: int = 8,
                   batch_size: int = 64, qat_epochs: int = 3, lr: float = 1e-3, seed: int = 0,
                   progress: bool = False) -> nn.Module:
    """The int8 version of the trained float ``model`` (left unchanged) by ``mode``."""
    model = copy.deepcopy(model).eval()
    x_tr, y_tr = data[0], data[1]
    if mode == "dynamic":
        return Q.quantize_dynamic(model, {nn.Linear}, dtype=ember.qint8)
    seq = _wrapped(model)
    if mode == "static":
        seq.eval()
        seq = Q.fuse_modules(seq, _fusable(seq))
        seq.qconfig = Q.get_default_qconfig(qengine)
        prepared = Q.prepare(seq)
        g = ember.Generator().manual_seed(seed + 7)
        order = ember.randperm(len(x_tr), generator=g).tolist()
        with ember.no_grad():
            for b in range(calib_batches):
                idx = ember.tensor(order[b * batch_size:(b + 1) * batch_size], device=x_tr.device)
                if len(idx):
                    prepared(x_tr[idx])
        return Q.convert(prepared.eval())
    if mode == "qat":
        seq.train()
        seq = Q.fuse_modules(seq, _fusable(seq))
        seq.qconfig = Q.get_default_qat_qconfig(qengine)
        prepared = Q.prepare_qat(seq)
        opt = ember.optim.Adam(prepared.parameters(), lr=lr)
        g = ember.Generator().manual_seed(seed + 11)
        for epoch in range(qat_epochs):
            prepared.train()
            if epoch == qat_epochs - 1 and epoch > 0:   # last epoch: qparams frozen (PyTorch's QAT recipe)
                prepared.apply(Q.disable_observer)
            order = ember.randperm(len(x_tr), generator=g).to(x_tr.device)
            for i in range(0, len(x_tr), batch_size):
                idx = order[i:i + batch_size]
                loss = F.cross_entropy(prepared(x_tr[idx]), y_tr[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        return Q.convert(prepared.eval())
    raise ValueError(f"unknown quantization mode '{mode}' (expected dynamic, static or qat)")


def state_dict_bytes(model: nn.Module) -> int:
    """Bytes of ``ember.save(model.state_dict())``."""
    buf = io.BytesIO()
    ember.save(model.state_dict(), buf)
    return len(buf.getvalue())


@ember.no_grad()
def throughput(model: nn.Module, x, *, batch_size: int = 360, min_seconds: float = 0.5) -> float:
    """Images per second of ``model`` on ``x`` (eval mode, batches of ``batch_size``, device synchronised)."""
    model.eval()
    dev = x.device

    def one_pass():
        out = None
        for i in range(0, len(x), batch_size):
            out = model(x[i:i + batch_size])
        if dev.type != "cpu":
            getattr(ember, dev.type).synchronize()
        return out
    one_pass()                                    # warm-up (kernel compilation, caches)
    n, start = 0, time.perf_counter()
    while True:
        one_pass()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and n >= 2:
            return n * len(x) / elapsed


def run(args, model, data) -> dict:
    """Quantize ``model`` as ``args.quantize`` says and report (printed and returned as a dict)."""
    from .digits import evaluate
    x_te, y_te = data[2], data[3]
    start = time.perf_counter()
    qmodel = quantize_model(model, args.quantize, data, qengine=args.qengine, batch_size=args.batch_size,
                            qat_epochs=args.qat_epochs, seed=args.seed)
    seconds = time.perf_counter() - start
    _, float_acc = evaluate(model, x_te, y_te)
    _, q_acc = evaluate(qmodel, x_te, y_te)
    fb, qb = state_dict_bytes(model), state_dict_bytes(qmodel)
    f_ips = throughput(model, x_te)
    q_ips = throughput(qmodel, x_te)
    res = {"mode": args.quantize, "float_accuracy": float_acc, "quantized_accuracy": q_acc,
           "accuracy_drop_pp": 100 * (float_acc - q_acc), "float_state_dict_bytes": fb,
           "quantized_state_dict_bytes": qb, "size_ratio": fb / qb, "float_images_per_s": f_ips,
           "int8_images_per_s": q_ips, "int8_speedup": q_ips / f_ips, "quantize_seconds": seconds,
           "quantized_model": qmodel}
    print(f"quantize {args.quantize} ({args.qengine}): test accuracy {100 * q_acc:.2f} % (float {100 * float_acc:.2f} %, "
          f"{res['accuracy_drop_pp']:+.2f} pp drop); state dict {qb} bytes vs {fb} float ({fb / qb:.2f}x smaller); "
          f"inference {q_ips:.0f} images/s int8 vs {f_ips:.0f} float32 ({q_ips / f_ips:.2f}x) on {x_te.device}")
    return res
