"""Shape kernels: cat (one ``np.concatenate`` into the output), flip, tril / triu and
repeat_interleave with a tensor of repeats. The other shape ops (roll, repeat, stack,
...) are composites of views and ``copy_`` and need no cpu kernel.
"""
from __future__ import annotations

import numpy as np

import ember

from ._util import ALL, np_view


def _nv(t):
    a = t._native
    return np_view(t) if a is None else a


def cat(tensors, dim=0, *, out):
    """cpu kernel of ``cat``, all dtypes: one np.concatenate of ``tensors`` along ``dim`` into ``out`` (legacy 1-D
    empty tensors skipped; mixed dtypes cast to out's).
    """
    parts = [_nv(t) for t in tensors if t._shape != (0,)]
    if not parts:
        return
    o = _nv(out)
    d = dim % o.ndim
    if all(p.dtype == o.dtype for p in parts):
        np.concatenate(parts, axis=d, out=o)
    else:
        np.concatenate(parts, axis=d, out=o, casting="unsafe")


def flip(self, dims, *, out):
    """cpu kernel of ``flip``, all dtypes: write ``self`` reversed along ``dims`` into ``out``."""
    o = _nv(out)
    a = _nv(self)
    if a.ndim == 0 or not dims:
        np.copyto(o, a)
        return
    np.copyto(o, np.flip(a, axis=tuple(d % a.ndim for d in dims)))


def tril(self, diagonal=0, *, out):
    """cpu kernel of ``tril``, all dtypes: write ``self`` with the elements above diagonal ``diagonal`` of the last
    two dims zeroed into ``out``.
    """
    np.copyto(_nv(out), np.tril(_nv(self), diagonal))


def triu(self, diagonal=0, *, out):
    """cpu kernel of ``triu``, all dtypes: write ``self`` with the elements below diagonal ``diagonal`` of the last
    two dims zeroed into ``out``.
    """
    np.copyto(_nv(out), np.triu(_nv(self), diagonal))


def repeat_interleave_tensor(self, repeats, dim=None, *, output_size=None):
    """cpu kernel of ``repeat_interleave(Tensor repeats)``, all dtypes: return a new tensor with slice i along
    ``dim`` (the flattened input when None) repeated repeats[i] times.

    RuntimeError "repeats must have the same size as input along dim, ...", "repeats can not be negative" and
    "allocated size does not match required size" (a wrong ``output_size``).
    """
    a = _nv(self)
    counts = _nv(repeats).astype(np.int64, copy=False)
    if dim is None:
        a = a.reshape(-1)
        dim = 0
    d = dim % max(a.ndim, 1)
    if counts.ndim == 0:
        counts = np.full(a.shape[d], int(counts), np.int64)
    if counts.shape[0] != a.shape[d]:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.shape[0]} and input.size({d}) = {a.shape[d]}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and output_size != int(counts.sum()):
        raise RuntimeError("allocated size does not match required size")
    r = np.repeat(a, counts, axis=d)
    out = ember.empty(r.shape, dtype=self._dtype, device=self._device)
    if r.size:
        np.copyto(np_view(out), r)
    return out


def register(lib):
    """Register cat, flip, tril, triu and repeat_interleave_tensor for device 'cpu', all dtypes, on ``lib``.
    """
    for name, k in (("cat", cat), ("flip", flip), ("tril", tril), ("triu", triu)):
        lib.impl(name, k, device="cpu", dtypes=ALL)
    lib.impl("repeat_interleave_tensor", repeat_interleave_tensor, device="cpu", dtypes=ALL)
