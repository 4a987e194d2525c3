"""Composites of the shape ops (flip, tril / triu, repeat_interleave with a tensor of repeats) and
the sequences (arange, linspace / logspace, eye), over the primitive set only, with the helpers of
``_indexing_composites`` (see its docstring for the primitive set and the techniques).

``arange`` is ``start + i * step`` over an int64 ``iota`` (fill_ + log-step doubling with add):
int64 arithmetic when start, end and step are ints and the dtype is integral or bool, else
float64, then one cast into ``out`` -- the cpu kernel's arithmetic, so integers match exactly.
"""
from __future__ import annotations

import builtins

from .. import _dtype as D
from .._factory import empty_on
from ._indexing_composites import (_E, _as_nd, _wrap_dim, along, as_int64, count, cumsum, flat_copy, full,
                                   gather_along, iota, scalar)


# ---------------------------------------------------------------- shape ops
def flip(self, dims, *, out):
    """Composite of ``flip``: gather along each flipped dim with reversed indices (n - 1 - i)."""
    E = _E()
    x = self
    if self.dim():
        for d in dims:
            d = d % self.dim()
            n = x.shape[d]
            if n > 1:
                x = gather_along(x, d, E.add(E.mul(iota(n, self.device), -1), n - 1))
    out.copy_(x)


def repeat_interleave_tensor(self, repeats, dim=None, *, output_size=None):
    """Each slice along dim repeated repeats[i] times: the output's source index is the
    cumulative count of slice boundaries (scatter_add of ones at each boundary, then a scan)."""
    E = _E()
    x = flat_copy(self) if dim is None else _as_nd(self)
    d = 0 if dim is None else _wrap_dim(dim, self.dim())
    L = x.shape[d]
    c = as_int64(repeats)
    if c.dim() == 0:
        c = c.expand(L)
    if c.shape[0] != L:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{c.shape[0]} and input.size({d}) = {L}")
    if count(E.lt(c, 0)):
        raise RuntimeError("repeats can not be negative")
    total = int(E.sum(c).item()) if L else 0
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    if total == 0:
        shape = list(x.shape)
        shape[d] = 0
        return empty_on(tuple(shape), self.dtype, self.device)
    ends = cumsum(c)                       # slice i fills [ends[i] - c[i], ends[i])
    marks = E.scatter_add(full((total + 1,), 0, D.int64, c.device), 0, ends, full((L,), 1, D.int64, c.device))
    src = cumsum(marks.narrow(0, 0, total))   # how many slices end at or before each output position
    return gather_along(x, d, src)


def tri(self, diagonal, lower, out):
    """tril / triu: ``where`` over a j - i mask built from two iotas."""
    E = _E()
    n, m = self.shape[-2:]
    offset = E.add(iota(m, self.device), along(iota(n, self.device), 0, 2), alpha=-1)     # j - i
    zero = scalar(0, self.dtype, self.device)
    if lower:                                   # keep j - i <= diagonal
        r = E.where(E.lt(offset, diagonal + 1), self, zero)
    else:                                       # keep j - i >= diagonal
        r = E.where(E.lt(offset, diagonal), zero, self)
    out.copy_(r)


# ---------------------------------------------------------------- sequences
def arange(start, end, step, size, dtype, device, *, out):
    """``start + i * step``: int64 arithmetic when all three are ints and dtype is integral or
    bool, else float64 (as the cpu kernel), then one cast into ``out``."""
    E = _E()
    if size == 0:
        return
    i = iota(size, device)
    ints = builtins.all(isinstance(v, int) for v in (start, end, step))
    if ints and (dtype is D.bool or not (dtype.is_floating_point or dtype.is_complex)):
        v = E.add(E.mul(i, step), start)
    else:
        v = E.add(E.mul(i.to(D.float64), float(step)), float(start))
    out.copy_(v)


def linspace(start, end, steps, base, dtype, device, *, out):
    """The cpu kernel's symmetric formula: the first half ``start + i * step``, the second half
    ``end - (steps - 1 - i) * step``, in float64 (complex128 for complex ends); ``base ** v`` for
    logspace."""
    E = _E()
    if steps == 0:
        return
    cplx = isinstance(start, complex) or isinstance(end, complex)
    wd = D.complex128 if cplx else D.float64
    if steps == 1:
        v = scalar(start, wd, device).view(1)
    else:
        step = (end - start) / (steps - 1)
        i = iota(steps, device)
        a = E.add(E.mul(i.to(D.float64), step), start)
        b = E.add(E.mul(E.add(E.mul(i, -1), steps - 1).to(D.float64), -step), end)
        v = E.where(E.lt(i, steps // 2), a, b)
    if base:
        v = E.pow(scalar(base, D.float64, device), v)
    out.copy_(v)


def eye(n, m, dtype, device, *, out):
    """Composite of ``eye``: eq(row index, column index) written into the (n, m) ``out``."""
    E = _E()
    if n and m:
        out.copy_(E.eq(along(iota(n, device), 0, 2), iota(m, device)))
