"""Helpers shared by the cpu kernels: numpy views, compute dtypes, low-precision handling."""
from __future__ import annotations

import numpy as np

import ember
from ember import Tensor

from .._runtime import np_view

__all__ = ["np_view", "operand", "LOWP", "compute_np", "ALL", "FLOAT", "np_dtype", "write", "transposed"]

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
