"""arange, linspace / logspace, eye on the host."""
from __future__ import annotations

import numpy as np

from ._util import ALL, np_view


def arange(start, end, step, size, dtype, device, *, out):
    """cpu kernel of ``arange``, all dtypes: write start + i * step for i < ``size`` into ``out`` (int64 arithmetic
    for integer dtypes and int arguments, else float64).
    """
    o = np_view(out)
    if o.dtype.kind in "iub" and all(isinstance(v, int) for v in (start, end, step)):
        o[...] = start + np.arange(size, dtype=np.int64) * step
    else:
        o[...] = start + np.arange(size, dtype=np.float64) * step


def linspace(start, end, steps, base, dtype, device, *, out):
    """cpu kernel of ``linspace`` / ``logspace``, all dtypes: write ``steps`` evenly spaced values from ``start``
    to ``end`` (PyTorch's symmetric formula; base ** value when ``base`` is set) into ``out``; integer dtypes
    truncate.
    """
    o = np_view(out)
    if steps == 0:
        return
    if steps == 1:
        vals = np.array([start], dtype=np.float64 if not isinstance(start, complex) else np.complex128)
    else:
        # PyTorch's symmetric formula: the first half from start, the second half from end
        step = (end - start) / (steps - 1)
        i = np.arange(steps)
        half = steps // 2
        vals = np.where(i < half, start + i * step, end - (steps - 1 - i) * step)
    if base:
        vals = np.power(base, vals)
    if o.dtype.kind in "iu":
        vals = np.trunc(vals) if not base else vals
    np.copyto(o, vals, casting="unsafe")


def eye(n, m, dtype, device, *, out):
    """cpu kernel of ``eye``, all dtypes: write the (n, m) identity (ones on the main diagonal) into ``out``.
    """
    o = np_view(out)
    o.fill(0)
    k = min(n, m)
    o[np.arange(k), np.arange(k)] = 1


def register(lib):
    """Register arange, linspace and eye for device 'cpu', all dtypes, on ``lib``."""
    lib.impl("arange", arange, device="cpu", dtypes=ALL)
    lib.impl("linspace", linspace, device="cpu", dtypes=ALL)
    lib.impl("eye", eye, device="cpu", dtypes=ALL)
