"""Op database entries: the ``ember.nn.functional`` composites common models call (layer_norm,
group_norm, gelu, silu, dropout in its deterministic forms, pad in its four modes, interpolate,
scaled_dot_product_attention).

They are Python functions over dispatcher ops, not dispatcher ops, so each entry names the function
(``op``, ids ``nn.functional.<name>`` as PyTorch's OpInfo names them) and a float64 numpy reference
written from the formula in PyTorch's documentation; every device plugin's conformance run then checks
the composite end to end (values, noncontiguous inputs, gradients) on that device.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember.nn import functional as F
from .._opinfo import OpInfo, SampleInput, make_tensor
from .._samples import seed_for, with_grad

__all__ = ["OPINFOS", "op_db"]

_F = ("float32", "float64")


def _mk(op, device, dtype, shape, i, requires_grad=False, **kw):
    t = make_tensor(shape, device=device, dtype=dtype, seed=seed_for(op, dtype, i), **kw)
    return with_grad(t, requires_grad)


def _out(fn):
    """A reference computed in float64 and cast back to the first array's dtype."""
    def ref(x, *args, **kwargs):
        return np.asarray(fn(x.astype(np.float64), *args, **kwargs)).astype(x.dtype)
    return ref


# ---------------------------------------------------------------- layer_norm / group_norm
def _layer_norm_ref(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _layer_norm_samples(op, device, dtype, requires_grad=False):
    m = lambda shape, i, **kw: _mk(op, device, dtype, shape, i, requires_grad, **kw)   # noqa: E731
    yield SampleInput(m((3, 5), 0), ((5,),), name="2-D, no affine")
    yield SampleInput(m((2, 3, 4), 1), ((3, 4), m((3, 4), 2), m((3, 4), 3)), name="3-D, affine over 2 dims")
    yield SampleInput(m((4, 6), 4, noncontiguous=True), ([6], m((6,), 5), None), {"eps": 1e-3},
                      name="noncontiguous, weight only, eps")
    yield SampleInput(m((6, 4), 6).t(), ((6,), None, m((6,), 7)), name="transposed, bias only")


def _group_norm_ref(x, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _group_norm_samples(op, device, dtype, requires_grad=False):
    m = lambda shape, i, **kw: _mk(op, device, dtype, shape, i, requires_grad, **kw)   # noqa: E731
    yield SampleInput(m((2, 4, 3), 0), (2,), name="3-D, 2 groups, no affine")
    yield SampleInput(m((2, 6, 3, 2), 1), (3, m((6,), 2), m((6,), 3)), name="4-D, affine")
    yield SampleInput(m((1, 4, 5), 4, noncontiguous=True), (4, m((4,), 5), None), {"eps": 1e-3},
                      name="noncontiguous, one channel per group")
    yield SampleInput(m((3, 2), 6), (1,), name="2-D, one group")


# ---------------------------------------------------------------- gelu / silu / dropout
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu_ref(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _unary_samples(op, device, dtype, requires_grad=False, kwargs=({},)):
    m = lambda shape, i, **kw: _mk(op, device, dtype, shape, i, requires_grad, **kw)   # noqa: E731
    for j, kw in enumerate(kwargs):
        sfx = f", {kw}" if kw else ""
        yield SampleInput(m((), 10 * j), (), dict(kw), name="0-dim" + sfx)
        yield SampleInput(m((3, 4), 10 * j + 1, low=-5, high=5), (), dict(kw), name="2-D" + sfx)
        yield SampleInput(m((2, 3, 4), 10 * j + 2, noncontiguous=True), (), dict(kw), name="noncontiguous" + sfx)
        yield SampleInput(m((0, 3), 10 * j + 3), (), dict(kw), name="empty" + sfx)


def _gelu_samples(op, device, dtype, requires_grad=False):
    return _unary_samples(op, device, dtype, requires_grad, kwargs=({}, {"approximate": "tanh"}))


def _dropout_samples(op, device, dtype, requires_grad=False):
    """The deterministic forms: p=0 while training, any p in eval mode (training=False): the identity."""
    m = lambda shape, i, **kw: _mk(op, device, dtype, shape, i, requires_grad, **kw)   # noqa: E731
    yield SampleInput(m((3, 4), 0), (), {"p": 0.0, "training": True}, name="p=0, training")
    yield SampleInput(m((2, 3, 4), 1, noncontiguous=True), (), {"p": 0.5, "training": False},
                      name="noncontiguous, eval")
    yield SampleInput(m((5,), 2), (0.9, False), name="positional p, eval")


# ---------------------------------------------------------------- pad
_NP_PAD_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _pad_ref(x, pad, mode="constant", value=None):
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):          # pad lists the last dim first: (left, right, top, bottom, ...)
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=0.0 if value is None else value)
    return np.pad(x, widths, mode=_NP_PAD_MODE[mode])


def _pad_samples(op, device, dtype, requires_grad=False):
    m = lambda shape, i, **kw: _mk(op, device, dtype, shape, i, requires_grad, **kw)   # noqa: E731
    yield SampleInput(m((2, 3), 0), ((1, 2),), name="constant, last dim")
    yield SampleInput(m((2, 3, 4), 1, noncontiguous=True), ((1, 0, 2, 1),), {"value": 1.5},
                      name="constant, two dims, value, noncontiguous")
    for j, mode in enumerate(("reflect", "replicate", "circular")):
        yield SampleInput(m((2, 3, 5), 2 + j), ((2, 1),), {"mode": mode}, name=f"{mode}, 3-D")
        yield SampleInput(m((1, 2, 4, 5), 5 + j), ((1, 2, 2, 1),), {"mode": mode}, name=f"{mode}, 4-D")


# ---------------------------------------------------------------- interpolate
def _src_index(out_size, in_size, align_corners, scale=None):
    """Source coordinates of each output index, as PyTorch's linear upsampling computes them."""
    d = np.arange(out_size, dtype=np.float64)
    if align_corners:
        return d * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros(out_size)
    ratio = 1.0 / scale if scale is not None else in_size / out_size
    return np.maximum((d + 0.5) * ratio - 0.5, 0.0)


def _linear_axis(x, axis, out_size, align_corners, scale):
    src = _src_index(out_size, x.shape[axis], align_corners, scale)
    lo = np.minimum(np.floor(src).astype(np.int64), x.shape[axis] - 1)
    hi = np.minimum(lo + 1, x.shape[axis] - 1)
    w = (src - lo).reshape((-1,) + (1,) * (x.ndim - 1 - axis))
    return np.take(x, lo, axis) * (1 - w) + np.take(x, hi, axis) * w


def _interpolate_ref(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    nd = x.ndim - 2
    sizes = [size] * nd if isinstance(size, int) else list(size) if size is not None else None
    scales = [scale_factor] * nd if isinstance(scale_factor, (int, float)) else scale_factor
    if sizes is None:
        sizes = [int(math.floor(x.shape[2 + k] * scales[k])) for k in range(nd)]
    for k in range(nd):
        axis, n_in = 2 + k, x.shape[2 + k]
        scale = scales[k] if scales is not None else None
        if mode == "nearest":               # PyTorch's "nearest": src = floor(dst * in / out)
            ratio = 1.0 / scale if scale is not None else n_in / sizes[k]
            idx = np.minimum(np.floor(np.arange(sizes[k]) * ratio).astype(np.int64), n_in - 1)
            x = np.take(x, idx, axis)
        else:
            x = _linear_axis(x, axis, sizes[k], bool(align_corners), scale)
    return x


def _interpolate_samples(op, device, dtype, requires_grad=False):
    m = lambda shape, i, **kw: _mk(op, device, dtype, shape, i, requires_grad, **kw)   # noqa: E731
    yield SampleInput(m((1, 2, 3, 4), 0), (), {"size": (5, 7)}, name="nearest, size")
    yield SampleInput(m((2, 1, 4), 1), (), {"scale_factor": 2}, name="nearest 1-D, scale 2")
    yield SampleInput(m((1, 2, 6, 5), 2, noncontiguous=True), (), {"size": (3, 2)}, name="nearest, down")
    for j, ac in enumerate((False, True)):
        yield SampleInput(m((1, 2, 3, 4), 3 + j), (), {"size": (5, 6), "mode": "bilinear", "align_corners": ac},
                          name=f"bilinear, align_corners={ac}")
        yield SampleInput(m((2, 2, 5), 5 + j), (), {"size": 8, "mode": "linear", "align_corners": ac},
                          name=f"linear, align_corners={ac}")
    yield SampleInput(m((1, 1, 4, 4), 7), (), {"scale_factor": 0.5, "mode": "bilinear"}, name="bilinear, scale 0.5")


# ---------------------------------------------------------------- scaled_dot_product_attention
def _sdpa_ref(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    s = (q @ np.swapaxes(k, -1, -2)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        L, S = q.shape[-2], k.shape[-2]
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def _sdpa_samples(op, device, dtype, requires_grad=False):
    m = lambda shape, i, **kw: _mk(op, device, dtype, shape, i, requires_grad, low=-2, high=2, **kw)   # noqa: E731
    yield SampleInput(m((2, 3, 4), 0), (m((2, 5, 4), 1), m((2, 5, 6), 2)), name="3-D, L != S")
    yield SampleInput(m((1, 2, 4, 8), 3), (m((1, 2, 4, 8), 4), m((1, 2, 4, 8), 5)), {"is_causal": True},
                      name="4-D, causal")
    yield SampleInput(m((2, 3, 4), 6, noncontiguous=True), (m((2, 3, 4), 7), m((2, 3, 4), 8)),
                      {"attn_mask": m((3, 3), 9), "scale": 0.3}, name="float mask, scale, noncontiguous")
    mask = ember.tensor([[True, False, True], [True, True, False], [False, True, True]], device=device)
    yield SampleInput(m((2, 3, 4), 10), (m((2, 3, 4), 11), m((2, 3, 4), 12)), {"attn_mask": mask},
                      name="bool mask")


def _build():
    ag = dict(supports_autograd=True, dtypes=_F)
    ops = []
    add = ops.append
    add(OpInfo("nn.functional.layer_norm", op=F.layer_norm, ref=_out(_layer_norm_ref),
               sample_inputs=_layer_norm_samples, **ag))
    add(OpInfo("nn.functional.group_norm", op=F.group_norm, ref=_out(_group_norm_ref),
               sample_inputs=_group_norm_samples, **ag))
    add(OpInfo("nn.functional.gelu", op=F.gelu, ref=_out(_gelu_ref), sample_inputs=_gelu_samples, **ag))
    add(OpInfo("nn.functional.silu", op=F.silu, ref=_out(lambda x: x / (1 + np.exp(-x))),
               sample_inputs=_unary_samples, **ag))
    add(OpInfo("nn.functional.dropout", op=F.dropout, ref=lambda x, *a, **k: x.copy(),
               sample_inputs=_dropout_samples, **ag))
    add(OpInfo("nn.functional.pad", op=F.pad, ref=_out(_pad_ref), sample_inputs=_pad_samples, **ag))
    add(OpInfo("nn.functional.interpolate", op=F.interpolate, ref=_out(_interpolate_ref),
               sample_inputs=_interpolate_samples, **ag))
    add(OpInfo("nn.functional.scaled_dot_product_attention", op=F.scaled_dot_product_attention,
               ref=_out(_sdpa_ref), sample_inputs=_sdpa_samples, **ag))
    return ops


OPINFOS = _build()
op_db = OPINFOS
