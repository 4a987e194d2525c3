"""Helpers shared by the cpu kernels: numpy views, compute dtypes, low-precision handling."""
from __future__ import annotations

import numpy as np

import ember
from ember import Tensor

from .._runtime import np_view

__all__ = ["np_view", "operand", "LOWP", "compute_np", "ALL", "FLOAT", "np_dtype", "write"]

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
