"""Helpers shared by the cpu kernels: numpy views, compute dtypes, low-precision handling."""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import Tensor

from .._runtime import np_view

__all__ = ["np_view", "operand", "LOWP", "compute_np", "ALL", "FLOAT", "np_dtype", "write", "buffer", "transposed",
           "sum_gemv", "sum_array", "ones"]

ALL = ember.library.ALL_DENSE
FLOAT = ember.library.FLOATING
LOWP = frozenset({np.dtype(np.float16), ember.bfloat16.numpy_dtype})


def np_dtype(d):
    """The numpy dtype of ember dtype ``d``."""
    return d.numpy_dtype


def operand(x):
    """A numpy array for a tensor, the value itself for a Python scalar."""
    if x.__class__ is Tensor or isinstance(x, Tensor):
        return np_view(x)
    return x


def compute_np(d: ember.dtype) -> np.dtype:
    """The numpy dtype to compute ``d`` in: float16 / bfloat16 compute in float32, as PyTorch's cpu kernels do."""
    n = d.numpy_dtype
    return np.dtype(np.float32) if n in LOWP else n


def write(out, value):
    """Store ``value`` (array or scalar) into the cpu tensor ``out``, casting unsafely as PyTorch does."""
    np.copyto(np_view(out), value, casting="unsafe")


def buffer(t, cd, contiguous=False):
    """(array to compute into, whether it must be written back with ``write``): the cpu tensor ``t``'s own numpy
    view where it has dtype ``cd`` (and is C-contiguous, when ``contiguous``), else a scratch array of its shape."""
    o = np_view(t)
    if o.dtype == cd and (not contiguous or o.flags.c_contiguous):
        return o, False
    return np.empty(o.shape, cd), True


def transposed(a: np.ndarray) -> np.ndarray:
    """``a.T`` as a C-contiguous copy, for a 2-D array ``a`` (N, M) -> (M, N).

    numpy's one-pass copy writes the result in order and reads ``a`` down its columns, one element per row; when
    the rows are long their addresses fall into the same cache sets (a 4 KB row: all of them), and the copy runs
    at a few ns per element. Long rows are therefore moved in two passes through (M / b, N, b) blocks, each pass
    with short strides (64 x 1024 float32: 190 -> 45 µs; 64 x 3072: 570 -> 100 µs, one thread); short rows take
    the one-pass copy, which is as fast there."""
    N, M = a.shape
    if M >= 512 and N >= 8:
        for b in (64, 32, 16):
            if M % b == 0:
                blocks = np.ascontiguousarray(a.reshape(N, M // b, b).transpose(1, 0, 2))     # (M / b, N, b)
                return np.ascontiguousarray(blocks.transpose(0, 2, 1)).reshape(M, N)
    return np.ascontiguousarray(a.T)


_ONES: dict = {}
_GEMV_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
# a trailing-axis sum by gemv accumulates each row in the BLAS's few running partial sums, where numpy's is
# pairwise: kept to rows short enough that this costs no accuracy that matters
_GEMV_MAX_ROW = 4096
# below this many elements numpy's reduction is as fast (the gemv's call costs ~1.5 µs)
_GEMV_MIN_SIZE = 16384


def ones(n, dtype):
    """A read-only vector of ``n`` ones of numpy ``dtype``, cached (the right operand of row sums by gemv)."""
    v = _ONES.get((n, dtype))
    if v is None:
        if len(_ONES) > 256:
            _ONES.clear()
        v = np.ones(n, dtype)
        v.flags.writeable = False
        _ONES[(n, dtype)] = v
    return v


def sum_gemv(a: np.ndarray, axes: tuple, out: np.ndarray) -> bool:
    """out <- the sum of ``a`` over ``axes`` as one BLAS matrix-vector product with a vector of ones, where that
    applies: ``a`` C-contiguous float32 / float64 of at least 16384 elements, ``axes`` a leading block
    (0, ..., k - 1) or a trailing block (k, ..., ndim - 1) of its axes but not all of them (a trailing row at
    most 4096 long), ``out`` C-contiguous of a's dtype with the kept elements. Returns False (``out``
    untouched) otherwise.

    numpy reduces a short last axis one row at a time and a leading axis one row-add at a time; the gemv does
    either in one streaming pass (a (700, 512) float32 bias gradient: 39 -> 18 µs; (512, 64) rows: 11 -> 2, one
    thread). A sum of zeros is +0, as PyTorch's (numpy's keeps -0)."""
    nd = a.ndim
    axes = tuple(sorted(axes))
    k = len(axes)
    if (a.dtype not in _GEMV_DTYPES or not 0 < k < nd or a.size < _GEMV_MIN_SIZE or not a.flags.c_contiguous
            or out.dtype != a.dtype or not out.flags.c_contiguous or np.may_share_memory(a, out)):
        return False
    if axes == tuple(range(k)):
        r = math.prod(a.shape[:k])
        if out.size != a.size // r:
            return False
        np.matmul(ones(r, a.dtype), a.reshape(r, -1), out=out.reshape(-1))
        return True
    if axes == tuple(range(nd - k, nd)):
        c = math.prod(a.shape[nd - k:])
        if c > _GEMV_MAX_ROW or out.size != a.size // c:
            return False
        np.matmul(a.reshape(-1, c), ones(c, a.dtype), out=out.reshape(-1))
        return True
    return False


def sum_array(a: np.ndarray, axes: tuple, keepdims: bool) -> np.ndarray:
    """``np.add.reduce(a, axis=axes, keepdims=keepdims)`` (non-negative ``axes``) as a fresh array of a's dtype,
    by ``sum_gemv`` where it applies."""
    shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape)) if keepdims else \
        tuple(s for i, s in enumerate(a.shape) if i not in axes)
    r = np.empty(shape, a.dtype)
    if not sum_gemv(a, axes, r):
        np.add.reduce(a, axis=axes, keepdims=keepdims, out=r)
    return r
