"""Device-generic kernels for the quantized dtypes, built from dense ember ops.

Every kernel here reinterprets a quantized tensor's storage as its integer dtype
(``int_view``: qint8 -> int8, quint8 -> uint8, qint32 -> int32) and computes with ordinary
float / integer ember ops, so it runs on every device whose dense kernels exist (cpu, opencl,
cuda, a vendor's). They are registered at (ANY device, strided, q-dtype).

Rounding follows PyTorch's cpu kernels bit for bit (checked against torch in
tests/quantized/test_quant_rounding.py):

- per tensor, qint8 / quint8: ``round_half_even(fma(x, 1/scale, zero_point))`` in float32
  (fbgemm's fused multiply-add; computed in float64 then rounded once to float32);
- per tensor, qint32, and per channel: ``round_half_even(float32(x * inv_scale) + zero_point)``
  (two float32 roundings), inv_scale = float32(1 / float32(scale));
- clamp to the dtype's range; NaN becomes qmax (8-bit) or qmin (qint32), as in PyTorch.

On a device without float64 the fused path falls back to float32 (a result may then differ
from PyTorch's by one unit on exact ties).
"""
from __future__ import annotations

import numpy as np

import ember
from ember._ops._quantized import (PerChannelAffine, PerTensorAffine, int_view, qrange, storage_dtype, wrap)

from . import _cpu

_F64 = {}


def has_f64(device) -> bool:
    """Whether ``device`` computes in float64 (tried once per device type)."""
    r = _F64.get(device.type)
    if r is None:
        try:
            ember.ones(2, dtype=ember.float64, device=device).mul(3.0).sum().item()
            r = True
        except Exception:  # noqa: BLE001 - a device without float64 kernels
            r = False
        _F64[device.type] = r
    return r


def _finish(y, dtype):
    """Rounded float values -> clamped integers in ``dtype``'s storage dtype (NaN as PyTorch)."""
    lo, hi = qrange(dtype)
    if dtype.name == "qint32":
        y = y.to(ember.float64) if has_f64(y.device) else y
        y = y.clamp(lo, hi if y.dtype is ember.float64 else 2147483520.0)
        nan = lo
    else:
        y = y.clamp(lo, hi)
        nan = hi
    y = ember.where(ember.isnan(y), float(nan), y)
    return y.to(storage_dtype(dtype))


def quantize_tensor(x, scale: float, zero_point: int, dtype):
    """The integer tensor (storage dtype) of ``x`` (float32) quantized per tensor."""
    if x._device.type == "cpu":           # numpy fast path, same arithmetic (_cpu.py)
        return _cpu.quantize_tensor(x.detach(), scale, zero_point, dtype)
    inv = float(np.float32(1.0) / np.float32(scale))
    if dtype.name != "qint32" and has_f64(x.device):
        y = (x.to(ember.float64) * inv + float(zero_point)).to(ember.float32)
    else:
        y = x * inv + float(zero_point)
    return _finish(y.round(), dtype)


def quantize_per_tensor(self, scale, zero_point, dtype):
    """Kernel of ``ember.quantize_per_tensor`` (arguments checked by the core's meta)."""
    return wrap(quantize_tensor(self, scale, zero_point, dtype), dtype, PerTensorAffine(scale, zero_point))


def _channel_shape(n, axis):
    shape = [1] * n
    shape[axis] = -1
    return shape


def quantize_per_channel(self, scales, zero_points, axis, dtype):
    """Kernel of ``ember.quantize_per_channel``."""
    q = PerChannelAffine(scales, zero_points, axis)
    s, z = q.on(self.device)
    shape = _channel_shape(self.dim(), axis)
    inv = 1.0 / s.to(ember.float32).reshape(shape)
    y = (self * inv + z.to(ember.float32).reshape(shape)).round()
    return wrap(_finish(y, dtype), dtype, q)


def requantize(y, scale, zero_point, dtype):
    """``y`` (float32) quantized per tensor: the quantized tensor (the ops' output step)."""
    if y.dtype is not ember.float32:
        y = y.to(ember.float32)
    return wrap(quantize_tensor(y, scale, zero_point, dtype), dtype, PerTensorAffine(scale, zero_point))


def dequantize(self):
    """Kernel of ``dequantize``: float32 (q - zero_point) * scale, as PyTorch computes it."""
    q = self._quantizer
    iv = int_view(self)
    if isinstance(q, PerTensorAffine):
        if self._device.type == "cpu":    # numpy fast path, same arithmetic (_cpu.py)
            return ember.from_numpy(_cpu.dequantize_per_tensor(np.asarray(iv.numpy()).reshape(iv.shape), q.scale,
                                                               q.zero_point, self._dtype.name == "qint32"))
        if self._dtype.name == "qint32":   # PyTorch subtracts in int32 (wrapping), then converts
            return (iv - q.zero_point).to(ember.float32) * float(np.float32(q.scale))
        return (iv.to(ember.float32) - float(q.zero_point)) * float(np.float32(q.scale))
    s, z = q.on(self.device)
    shape = _channel_shape(self.dim(), q.axis)
    if has_f64(self.device):    # PyTorch: (q - zp) * scale in double, then float
        return ((iv.to(ember.float64) - z.reshape(shape)) * s.reshape(shape)).to(ember.float32)
    return (iv.to(ember.float32) - z.to(ember.float32).reshape(shape)) * s.to(ember.float32).reshape(shape)


def copy_(self, src, non_blocking=False):
    """``copy_`` into a quantized tensor: the integers of a quantized ``src`` of the same dtype, or a
    float ``src`` quantized with self's quantizer (as PyTorch's copy_)."""
    if src._quantizer is not None:
        if src._dtype is not self._dtype:
            raise RuntimeError(f"Quantized copy only works with the same quantized dtype, got {src._dtype!r} into "
                               f"{self._dtype!r}")
        base = self._base
        bq = None if base is None else base._quantizer
        if base is not None and self._quantizer is None:
            # a slice of a larger tensor (a composite filling its output: roll, repeat, ...): the storage
            # must hold one set of qparams. A fresh output takes the source's; a source with others is
            # requantised to the output's.
            if bq is None:
                if isinstance(src._quantizer, PerTensorAffine):
                    base._quantizer = src._quantizer
            elif bq != src._quantizer:
                if not isinstance(bq, PerTensorAffine):
                    raise NotImplementedError("copy_ into a slice of a per-channel quantized tensor from a tensor "
                                              "with other qparams is not supported")
                src = requantize(src.dequantize(), bq.scale, bq.zero_point, src._dtype)
        int_view(self).copy_(int_view(src))
        self._quantizer = src._quantizer    # as PyTorch: a quantized copy takes the source's qparams
        return self
    q = self._quantizer
    if q is None:
        raise RuntimeError("copy_: cannot copy into a quantized tensor that has no quantizer")
    x = src.to(ember.float32) if src._dtype is not ember.float32 else src
    x = x.expand(self._shape) if tuple(x._shape) != tuple(self._shape) else x
    if isinstance(q, PerTensorAffine):
        ints = quantize_tensor(x.contiguous(), q.scale, q.zero_point, self._dtype)
    else:
        ints = int_view(quantize_per_channel(x.contiguous(), q.scales, q.zero_points, q.axis, self._dtype))
    int_view(self).copy_(ints)
    return self


def relu(self, *, out):
    """``relu`` / ``relu_`` on a quantized tensor: max(q, zero_point) on the integers, qparams kept."""
    q = self._quantizer
    iv = int_view(self)
    if isinstance(q, PerTensorAffine):
        r = iv.clamp(min=q.zero_point)
    else:
        _, z = q.on(self.device)
        r = ember.maximum(iv, z.reshape(_channel_shape(self.dim(), q.axis)).to(iv.dtype))
    int_view(out).copy_(r)
    out._quantizer = q


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False, *, out):
    """``max_pool2d`` on a quantized tensor: max of the integers (monotone), qparams kept."""
    iv = int_view(self)
    f = iv.to(ember.float64 if self._dtype.name == "qint32" and has_f64(self.device) else ember.float32)
    v, i = ember.max_pool2d_with_indices(f, kernel_size, stride, padding, dilation, ceil_mode)
    vals, idx = out
    int_view(vals).copy_(v)
    idx.copy_(i)
    vals._quantizer = self._quantizer


def cat(tensors, dim=0, *, out):
    """``ember.cat`` of quantized tensors (matches torch.cat on them): the result has the first input's
    qparams; inputs with other qparams are requantised to them, the others' integers are copied."""
    first = tensors[0]._quantizer
    for i, t in enumerate(tensors):
        if t._quantizer is None:
            raise NotImplementedError(f"cat: tensor {i} is not quantized (dtype {t.dtype!r}); quantize it or "
                                      "dequantize() the others")
    if not isinstance(first, PerTensorAffine) or any(t._quantizer != first and not isinstance(t._quantizer,
                                                                                            PerTensorAffine)
                                                     for t in tensors):
        raise NotImplementedError("cat: per-channel quantized tensors are not supported (dequantize first)")
    ints = [int_view(t) if t._quantizer == first else
            int_view(requantize(t.dequantize(), first.scale, first.zero_point, t._dtype)) for t in tensors]
    ember.cat(ints, dim, out=int_view(out))
    out._quantizer = first


def register(lib, qdtypes):
    """Register the quantized-dtype kernels (quantize, dequantize, copy_, relu, max_pool2d_with_indices, cat) on
    ``lib`` for ``qdtypes``.
    """
    lib.impl("quantize_per_tensor", quantize_per_tensor, dtypes=qdtypes)
    lib.impl("quantize_per_channel", quantize_per_channel, dtypes=qdtypes)
    lib.impl("dequantize", dequantize, dtypes=qdtypes)
    lib.impl("copy_", copy_, dtypes=qdtypes)
    lib.impl("relu", relu, dtypes=qdtypes)
    lib.impl("max_pool2d_with_indices", max_pool2d_with_indices, dtypes=qdtypes)
    lib.impl("cat", cat, dtypes=qdtypes)
