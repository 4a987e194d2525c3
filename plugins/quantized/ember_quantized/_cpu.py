"""numpy fast paths of the hot quantized kernels on the cpu device (where measured faster).

The device-generic kernels dispatch one ember op per step (convert, multiply, add, round, clamp,
...); on small cpu tensors that dispatch costs more than the arithmetic. These do the same
arithmetic, bit for bit, as in-place numpy passes over the cpu tensors' memory (the cpu device's
memory is host memory, so ``.numpy()`` is a view). benchmarks/bench_quantized.py measures both.
"""
from __future__ import annotations

import numpy as np

import ember

_STORAGE = {"qint8": np.int8, "quint8": np.uint8, "qint32": np.int32}
_RANGE = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-2 ** 31, 2 ** 31 - 1)}


def quantize(a, scale, zero_point, dtype_name):
    """The integers of float32 array ``a`` quantized per tensor (PyTorch's rounding, see _kernels)."""
    lo, hi = _RANGE[dtype_name]
    shape = np.shape(a)
    a = np.asarray(a).reshape(-1)            # 1-D: numpy keeps arrays (not scalars) through the passes
    inv = np.float32(1.0) / np.float32(scale)
    with np.errstate(invalid="ignore", over="ignore"):
        if dtype_name == "qint32":
            y = np.multiply(a, inv, dtype=np.float32)
            y += np.float32(zero_point)
            np.rint(y, out=y)
            y = y.astype(np.float64)
        else:
            y = np.multiply(a, np.float64(inv), dtype=np.float64)     # exact product, as fbgemm's fma
            y += zero_point
            y = y.astype(np.float32)
            np.rint(y, out=y)
        nan = np.isnan(y)
        np.clip(y, lo, hi, out=y)
        if nan.any():
            y[nan] = hi if dtype_name != "qint32" else lo
    return y.astype(_STORAGE[dtype_name]).reshape(shape)


def quantize_tensor(x, scale, zero_point, dtype):
    """``_kernels.quantize_tensor`` for a cpu tensor: an ember integer tensor."""
    return ember.from_numpy(quantize(x.numpy(), scale, zero_point, dtype.name))


def int_linear(xv, zx, wt, mult, bias, relu=False):
    """float32 acc * mult + bias of the integer GEMM; ``xv`` the input integers (numpy), ``wt`` the
    packed (W - zp_w) transposed (numpy float32 / float64), ``mult`` a float32 scalar or row."""
    xi = xv.astype(wt.dtype)
    xi -= zx
    acc = np.matmul(xi, wt)
    if acc.dtype != np.float32:
        acc = acc.astype(np.float32)
    acc *= mult
    if bias is not None:
        acc += bias
    if relu:
        np.maximum(acc, 0, out=acc)
    return acc


def dequantize_per_tensor(iv, scale, zero_point, qint32):
    """float32 (q - zp) * scale of the integers ``iv`` (numpy), as _kernels.dequantize computes it."""
    if qint32:
        d = (iv - np.int32(zero_point)).astype(np.float32)
    else:
        d = iv.astype(np.float32)
        d -= np.float32(zero_point)
    d = np.asarray(d * np.float32(scale), np.float32)     # 0-dim input: numpy gives scalars
    return d
