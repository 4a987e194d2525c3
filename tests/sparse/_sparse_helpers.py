"""Shared helpers of the ember-sparse tests: devices to run on, random sparse data, torch twins."""
from __future__ import annotations

import ember
import numpy as np
import pytest

try:
    import torch
except ImportError:     # the PyTorch comparisons are skipped without it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (reference for the comparison)")


def _available(kind):
    try:
        mod = getattr(ember, kind)
        return mod.is_available()
    except (AttributeError, RuntimeError):
        return False


#: devices the device-generic kernels are tested on (cpu always; opencl / vdev when installed)
DEVICES = ["cpu"] + [d for d in ("opencl", "vdev") if _available(d)]


def random_coo(shape, *, nnz, sparse_dim=None, seed=0, dtype=np.float64, duplicates=False):
    """(indices int64 (k, nnz), values (nnz, *dense)) numpy arrays, random, possibly with duplicates."""
    rng = np.random.default_rng(seed)
    k = len(shape) if sparse_dim is None else sparse_dim
    idx = np.stack([rng.integers(0, max(s, 1), nnz) for s in shape[:k]]) if k else np.zeros((0, nnz), np.int64)
    if duplicates and nnz > 2:
        idx[:, : nnz // 3] = idx[:, nnz // 3: 2 * (nnz // 3)]
    vals = rng.standard_normal((nnz,) + tuple(shape[k:])).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        vals = rng.integers(-5, 6, (nnz,) + tuple(shape[k:])).astype(dtype)
    return idx.astype(np.int64), vals


def dense_of(idx, vals, shape):
    """The dense numpy array of a COO (duplicates summed)."""
    k = idx.shape[0]
    out = np.zeros(shape, dtype=vals.dtype)
    np.add.at(out, tuple(idx), vals) if k else None
    return out


def to_np(t):
    t = t.detach()
    if t.is_sparse:
        t = t.to_dense()
    return t.cpu().numpy()
