"""Composites of the reduction, scan and sorting ops, written over the primitive set.

A device that implements only the primitives (``sum``, ``amax``, the elementwise
primitives ``add mul true_divide eq lt where bitwise_* abs exp log sqrt pow``, ``gather``,
``scatter_add``, ``copy_`` and ``fill_``) gets every op of ``_reduction.py`` through these.
Each composite has the kernel's signature (structured ones write into ``out``; ``unique``
returns its outputs) and gives the cpu kernel's results: integers, bool, indices and
orderings exactly, floating values within the per-dtype tolerances (sums and products
are associated differently).

Techniques (all data-independent, no host round trip except the size of ``unique``):

- min-type reductions: ``amin(x) = -amax(-x)`` for floating, ``~amax(~x)`` for integers / bool;
- first index of an extreme: ``n - 1 - amax(where(x == extreme, n - 1 - pos, -1))``;
- scans (cumsum, cumprod, cummax, running indices): Hillis-Steele, log2(n) shifted combines;
- prod: log2(n) steps of pairwise multiplication (exact for integers, wrapping as the kernel);
- sort: the rank of x_i is the number of x_j ordered before it (a broadcast (n, n)
  comparison along the dim: QUADRATIC memory per row, acceptable for a composite), the
  permutation is ``scatter_add``-ed from the ranks and the values ``gather``-ed through it;
  topk / kthvalue / median / mode / unique build on sort;
- searchsorted: counts of boundaries ordered before each value (broadcast comparison).

NaN sorts as the largest value, as in the cpu kernels.
"""
from __future__ import annotations

import math

import ember
from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ._meta import reduce_dims

_LOWP = (D.float16, D.bfloat16)


# ---------------------------------------------------------------- primitive helpers
def _acc(dt):
    """The dtype to compute ``dt`` in: float16 / bfloat16 accumulate in float32 (as the cpu kernels)."""
    return D.float32 if dt in _LOWP else dt


def _is_float(dt):
    return dt.is_floating_point or dt.is_complex


def _full(shape, value, dtype, device):
    t = ember.empty(tuple(shape), dtype=dtype, device=device)
    t.fill_(value)
    return t


def _arange(n, device, dtype=D.int64):
    """0, 1, ..., n-1 with fill_ / copy_ / add only (log2(n) steps, no arange op)."""
    t = ember.empty((n,), dtype=dtype, device=device)
    if n:
        t.narrow(0, 0, 1).fill_(0)
        k = 1
        while k < n:
            m = min(k, n - k)
            t.narrow(0, k, m).copy_(ember.add(t.narrow(0, 0, m), k))
            k *= 2
    return t


def _along(n, d, ndim, device):
    """arange(n) shaped to broadcast along dim ``d`` of an ``ndim``-dim tensor."""
    return _arange(n, device).reshape(tuple(n if i == d else 1 for i in range(ndim)))


def _cast(x, dtype):
    if x._dtype is dtype:
        return x
    r = ember.empty(x._shape, dtype=dtype, device=x._device)
    r.copy_(x)
    return r


def _real(x):
    """The real part (a copy; copy_ to a real dtype drops the imaginary part)."""
    return _cast(x, x._dtype.to_real) if x._dtype.is_complex else x


def _not(m):
    return ember.eq(m, False)


def _and(a, b):
    return ember.bitwise_and(a, b)


def _or(a, b):
    return ember.bitwise_or(a, b)


def _neg(x):
    return ember.mul(x, -1)


def _sub(a, b):
    return ember.add(a, b, alpha=-1)


def _isnan(x):
    if _is_float(x._dtype):
        return _not(ember.eq(x, x))
    return _full(x._shape, False, D.bool, x._device)


def _isinf(x):
    return ember.eq(ember.abs(x), math.inf)


def _ne(a, b):
    return _not(ember.eq(a, b))


def _eq_nan(a, b):
    """a == b, NaN equal to NaN."""
    r = ember.eq(a, b)
    if _is_float(a._dtype):
        r = _or(r, _and(_isnan(a), _isnan(b)))
    return r


def _lt_nan(a, b):
    """a < b with NaN the largest value (a numeric a is before a NaN b)."""
    r = ember.lt(a, b)
    if a._dtype.is_floating_point:
        r = _or(r, _and(_not(_isnan(a)), _isnan(b)))
    return r


def _max2(a, b):
    """Elementwise maximum, NaN propagating."""
    r = ember.where(ember.lt(a, b), b, a)
    return ember.where(_isnan(b), b, r) if a._dtype.is_floating_point else r


def _min2(a, b):
    r = ember.where(ember.lt(b, a), b, a)
    return ember.where(_isnan(b), b, r) if a._dtype.is_floating_point else r


def _flip_bits(x):
    """~x for integers / bool (an order-reversing bijection), with bitwise_xor."""
    dt = x._dtype
    if dt is D.bool:
        return ember.bitwise_xor(x, True)
    return ember.bitwise_xor(x, -1 if dt.is_signed else (1 << (8 * dt.itemsize)) - 1)


def _amin(x, dim=(), keepdim=False):
    """amin through amax: -amax(-x) for floating, ~amax(~x) for integers / bool (NaN propagates)."""
    if x._dtype.is_floating_point:
        return _neg(ember.amax(_neg(x), dim, keepdim))
    return _flip_bits(ember.amax(_flip_bits(x), dim, keepdim))


def _at_least_1d(x):
    return x.reshape(1) if x.dim() == 0 else x


def _scan_last(x, combine):
    """Inclusive scan of ``x`` along its last dim (Hillis-Steele: log2(n) shifted combines)."""
    n = x._shape[-1]
    x = x.clone()
    s = 1
    while s < n:
        y = x.clone()
        y.narrow(-1, s, n - s).copy_(combine(x.narrow(-1, s, n - s), x.narrow(-1, 0, n - s)))
        x = y
        s *= 2
    return x


def _first_index(x, target, d):
    """int64 index (keepdim) of the first element along ``d`` equal to ``target`` (NaN equal to NaN)."""
    n = x._shape[d]
    rev = _sub(_full((), n - 1, D.int64, x._device), _along(n, d, x.dim(), x._device))   # n-1-pos
    hit = ember.where(_eq_nan(x, target), rev, -1)
    return _sub(_full((), n - 1, D.int64, x._device), ember.amax(hit, d, True))


def _finish(out, r):
    out.copy_(r.reshape(out._shape))


# ---------------------------------------------------------------- sum family, prod, mean
def nansum(self, dim=None, keepdim=False, *, dtype=None, out):
    """Composite of ``nansum``: sum over the primitive ``sum`` after where(isnan(x), 0, x) (floating dtypes), in the
    accumulation dtype.
    """
    x = self
    if self._dtype.is_floating_point:
        x = ember.where(_isnan(x), 0, x)
    r = ember.sum(_cast(x, _acc(out._dtype)), dim, keepdim)
    _finish(out, r)


def _prod_last(x):
    """Product over the last dim by pairwise steps (the empty product is 1)."""
    n = x._shape[-1]
    if n == 0:
        return _full(x._shape[:-1], 1, x._dtype, x._device)
    while n > 1:
        h = n // 2
        y = ember.mul(x.narrow(-1, 0, h), x.narrow(-1, h, h))
        if n % 2:
            y.narrow(-1, 0, 1).copy_(ember.mul(y.narrow(-1, 0, 1), x.narrow(-1, 2 * h, 1)))
        x, n = y, h
    return x.squeeze(-1)


def prod(self, dim=None, keepdim=False, *, dtype=None, out):
    """Composite of ``prod``: log2(n) steps of pairwise ``mul`` along the reduced dim (all elements when dim is None);
    the empty product is 1.
    """
    x = _cast(self, _acc(out._dtype))
    if dim is None:
        r = _prod_last(x.reshape(-1))
    else:
        x = _at_least_1d(x)
        r = _prod_last(x.movedim(_wrap_dim(dim, x.dim()), -1))
    _finish(out, r)


def mean(self, dim=None, keepdim=False, *, dtype=None, out):
    """Composite of ``mean``: sum(x, dim) / n in the accumulation dtype, n the number of reduced elements."""
    x = _cast(self, _acc(out._dtype))
    n = math.prod(self._shape[d] for d in reduce_dims(self, dim)) if self._shape else 1
    _finish(out, ember.true_divide(ember.sum(x, dim, keepdim), n))


def nanmean(self, dim=None, keepdim=False, *, dtype=None, out):
    """Composite of ``nanmean``: sum of the non-NaN values / their count (NaN where all are NaN)."""
    x = _cast(self, _acc(out._dtype))
    keep = _not(_isnan(x))
    s = ember.sum(ember.where(keep, x, 0), dim, keepdim)
    _finish(out, ember.true_divide(s, ember.sum(keep, dim, keepdim)))


# ---------------------------------------------------------------- max / min family
def amin(self, dim=(), keepdim=False, *, out):
    """Composite of ``amin``: -amax(-x) for floating dtypes, ~amax(~x) for integers / bool."""
    _finish(out, _amin(self, dim, keepdim))


def max_all(self, *, out):
    """Composite of ``max`` (no dim): amax over all elements."""
    _finish(out, ember.amax(self))


def min_all(self, *, out):
    """Composite of ``min`` (no dim): amin over all elements (the -amax(-x) / ~amax(~x) form)."""
    _finish(out, _amin(self))


def _ext_dim(self, dim, keepdim, out, is_max):
    x = _at_least_1d(self)
    d = _wrap_dim(dim, x.dim())
    v = ember.amax(x, d, True) if is_max else _amin(x, d, True)
    values, indices = out
    _finish(values, v)
    _finish(indices, _first_index(x, v, d))


def max_dim(self, dim, keepdim=False, *, out):
    """Composite of ``max.dim``: amax along ``dim`` and the first index that reaches it; writes the (values, indices)
    pair in ``out``.
    """
    _ext_dim(self, dim, keepdim, out, True)


def min_dim(self, dim, keepdim=False, *, out):
    """Composite of ``min.dim``: amin along ``dim`` and the first index that reaches it; writes the (values, indices)
    pair in ``out``.
    """
    _ext_dim(self, dim, keepdim, out, False)


def _arg(is_max):
    def composite(self, dim=None, keepdim=False, *, out):
        x = self.reshape(-1) if dim is None else _at_least_1d(self)
        d = 0 if dim is None else _wrap_dim(dim, x.dim())
        v = ember.amax(x, d, True) if is_max else _amin(x, d, True)
        _finish(out, _first_index(x, v, d))
    composite.__name__ = "argmax" if is_max else "argmin"
    return composite


argmax, argmin = _arg(True), _arg(False)


def aminmax(self, *, dim=None, keepdim=False, out):
    """Composite of ``aminmax``: amin and amax over ``dim`` (all elements when None) into the (min, max) pair ``out``.
    """
    lo, hi = out
    x = self if dim is None else _at_least_1d(self)
    d = () if dim is None else _wrap_dim(dim, x.dim())
    _finish(lo, _amin(x, d, True))
    _finish(hi, ember.amax(x, d, True))


# ---------------------------------------------------------------- var / std / norm / logsumexp
def _variance(self, dim, correction, keepdim):
    x = _cast(self, _acc(self._dtype))
    n = math.prod(self._shape[d] for d in reduce_dims(self, dim)) if self._shape else 1
    c = 1 if correction is None else correction
    m = ember.true_divide(ember.sum(x, dim, True), n)
    dev = _sub(x, m)
    if dev._dtype.is_complex:
        dev = ember.abs(dev)
    sq = ember.mul(dev, dev)
    return ember.true_divide(ember.sum(sq, dim, keepdim), float(n - c) if n > c else 0.0)


def var(self, dim=None, *, correction=None, keepdim=False, out):
    """Composite of ``var``: sum(|x - mean|^2) / (n - correction) in the accumulation dtype (correction defaults to 1;
    a divisor <= 0 is replaced by 0, giving inf / NaN).
    """
    _finish(out, _variance(self, dim, correction, keepdim))


def std(self, dim=None, *, correction=None, keepdim=False, out):
    """Composite of ``std``: sqrt of the ``var`` composite's formula."""
    _finish(out, ember.sqrt(_variance(self, dim, correction, keepdim)))


def _vector_norm(x, p, dim, keepdim):
    """p-norm of ``x`` (already |x|, real, in the computation dtype) over ``dim``."""
    if p == math.inf:
        return ember.amax(x, dim if dim is not None else (), keepdim)
    if p == -math.inf:
        return _amin(x, dim if dim is not None else (), keepdim)
    if p == 0:
        return _cast(ember.sum(_ne(x, 0), dim, keepdim), x._dtype)
    if p == 1:
        return ember.sum(x, dim, keepdim)
    if p == 2:
        return ember.sqrt(ember.sum(ember.mul(x, x), dim, keepdim))
    return ember.pow(ember.sum(ember.pow(x, p), dim, keepdim), 1.0 / p)


def norm(self, p=2, dim=None, keepdim=False, *, dtype=None, out):
    """Composite of ``norm``: vector p-norm of abs(x) (inf / -inf: amax / amin, 0: nonzero count, else (sum
    |x|^p)^(1/p)); 'nuc' via the linalg composite nuclear_norm.
    """
    d = dtype or self._dtype
    if self._dtype.is_complex and not d.is_complex:
        d = d.to_complex
    cd = _acc(d)
    if p == "nuc":
        from ._linalg_composites import nuclear_norm
        dims = reduce_dims(self, dim)
        _finish(out, nuclear_norm(_cast(self, cd), dims, keepdim))
        return
    x = ember.abs(_cast(self, cd))
    if p == math.inf and x.numel() == 0:
        out.fill_(0)
        return
    _finish(out, _vector_norm(x, p, dim, keepdim))


def logsumexp(self, dim, keepdim=False, *, out):
    """Composite of ``logsumexp``: m + log(sum(exp(x - m))) with m the max over ``dim`` (0 where m is infinite);
    integer inputs in the default float dtype.
    """
    dt = self._dtype
    x = _cast(self, _acc(dt if _is_float(dt) else D.get_default_dtype()))
    dims = reduce_dims(x, dim)
    if x.numel() == 0 and any(x._shape[d] == 0 for d in dims):
        m = _full((), 0, _real(x)._dtype, x._device)
    else:
        m = ember.amax(_real(x), dims, True)
        m = ember.where(_isinf(m), 0, m)
    r = ember.add(ember.log(ember.sum(ember.exp(_sub(x, m)), dims, True)), m)
    _finish(out, r if keepdim else r.reshape(out._shape))


# ---------------------------------------------------------------- all / any / count_nonzero
def all_(self, dim=None, keepdim=False, *, out):
    """Composite of ``all``: sum(x == 0) == 0 over ``dim``."""
    _finish(out, ember.eq(ember.sum(ember.eq(self, 0), dim, keepdim), 0))


def any_(self, dim=None, keepdim=False, *, out):
    """Composite of ``any``: 0 < sum(x != 0) over ``dim``."""
    _finish(out, ember.gt(ember.sum(_ne(self, 0), dim, keepdim), 0))


def count_nonzero(self, dim=None, *, out):
    """Composite of ``count_nonzero``: sum(x != 0) over ``dim`` (int64)."""
    _finish(out, ember.sum(_ne(self, 0), dim))


# ---------------------------------------------------------------- scans
def _scan(combine):
    def composite(self, dim, *, dtype=None, out):
        x = _at_least_1d(_cast(self, _acc(out._dtype)))
        d = _wrap_dim(dim, x.dim())
        r = _scan_last(x.movedim(d, -1), combine).movedim(-1, d)
        _finish(out, r)
    return composite


cumsum = _scan(lambda a, b: ember.add(a, b))
cumprod = _scan(lambda a, b: ember.mul(a, b))


def _cumext(is_max):
    def composite(self, dim, *, out):
        x = _at_least_1d(self)
        d = _wrap_dim(dim, x.dim())
        xl = x.movedim(d, -1)
        vals = _scan_last(xl, _max2 if is_max else _min2)
        # the index of the last element equal to the running extreme (NaN matches NaN): a running max
        pos = _arange(xl._shape[-1], x._device)
        idx = _scan_last(ember.where(_eq_nan(xl, vals), pos, 0), _max2)
        values, indices = out
        _finish(values, vals.movedim(-1, d))
        _finish(indices, idx.movedim(-1, d))
    return composite


cummax, cummin = _cumext(True), _cumext(False)


# ---------------------------------------------------------------- sorting
def _sort_last(x, descending=False):
    """(values, int64 permutation) of ``x`` sorted stably along its last dim; NaN largest.

    rank_i = #{j : x_j ordered before x_i} over a broadcast (..., n, n) comparison, so memory
    is quadratic in the sorted dim's size."""
    n = x._shape[-1]
    a, b = x.unsqueeze(-1), x.unsqueeze(-2)          # a: x_i (rows), b: x_j (columns)
    strict = _lt_nan(a, b) if descending else _lt_nan(b, a)
    pos = _arange(n, x._device)
    tie = _and(_eq_nan(a, b), ember.lt(pos, pos.unsqueeze(-1)))    # equal and j < i
    rank = ember.sum(_or(strict, tie), -1)
    perm = ember.scatter_add(_full(rank._shape, 0, D.int64, x._device), -1, rank, pos.expand(rank._shape))
    return ember.gather(x, -1, perm), perm


def _sort_dim(self, dim, descending=False):
    """(values, perm) of ``self`` sorted along ``dim``, both with dim moved last (0-dim as 1 element)."""
    x = _at_least_1d(self)
    d = _wrap_dim(dim, x.dim())
    v, p = _sort_last(x.movedim(d, -1), descending)
    return v, p, d


def sort(self, dim=-1, descending=False, *, stable=False, out):
    """Composite of ``sort``: stable rank-based sort (quadratic memory along ``dim``, NaN largest) into the (values,
    indices) pair ``out``; always stable.
    """
    v, p, d = _sort_dim(self, dim, descending)
    values, indices = out
    _finish(values, v.movedim(-1, d))
    _finish(indices, p.movedim(-1, d))


def topk(self, k, dim=-1, largest=True, sorted=True, *, out):
    """Composite of ``topk``: the first k of the full sort along ``dim`` (descending when ``largest``); results are
    always sorted.
    """
    v, p, d = _sort_dim(self, dim, largest)
    values, indices = out
    _finish(values, v.narrow(-1, 0, k).movedim(-1, d))
    _finish(indices, p.narrow(-1, 0, k).movedim(-1, d))


def _select(self, dim, out, position):
    """values / indices at sorted ``position`` (int64, shape (..., 1)) along ``dim``."""
    v, p, _ = _sort_dim(self, dim)
    pos = position(v)
    values, indices = out
    _finish(values, ember.gather(v, -1, pos))
    _finish(indices, ember.gather(p, -1, pos))


def kthvalue(self, k, dim=-1, keepdim=False, *, out):
    """Composite of ``kthvalue``: the element at sorted position k - 1 along ``dim`` and its original index."""
    _select(self, dim, out, lambda v: _full(v._shape[:-1] + (1,), k - 1, D.int64, v._device))


def _median_pos(nan_skip):
    def position(v):
        n = v._shape[-1]
        lead = v._shape[:-1] + (1,)
        if not v._dtype.is_floating_point:
            return _full(lead, (n - 1) // 2, D.int64, v._device)
        finite = ember.sum(_not(_isnan(v)), -1, True)           # NaNs sort last
        if nan_skip:
            return _max2(ember.div(_sub(finite, 1), 2, rounding_mode="trunc"), _full((), 0, D.int64, v._device))
        return ember.where(ember.lt(finite, n), finite, (n - 1) // 2)
    return position


def median_dim(self, dim=-1, keepdim=False, *, out):
    """Composite of ``median.dim``: the lower median along ``dim`` from the sort (NaN if the slice holds a NaN) and
    its index.
    """
    _select(self, dim, out, _median_pos(False))


def nanmedian_dim(self, dim=-1, keepdim=False, *, out):
    """Composite of ``nanmedian.dim``: the lower median of the non-NaN values along ``dim`` from the sort, and its
    index.
    """
    _select(self, dim, out, _median_pos(True))


def _median_all(nan_skip):
    def composite(self, *, out):
        x = self.reshape(-1)
        if x.numel() == 0:
            dt = self._dtype
            out.fill_(math.nan if dt.is_floating_point else -(1 << (8 * dt.itemsize - 1)) if dt.is_signed else 0)
            return
        v, _, _ = _sort_dim(x, 0)
        _finish(out, ember.gather(v, -1, _median_pos(nan_skip)(v)))
    return composite


median, nanmedian = _median_all(False), _median_all(True)


def mode(self, dim=-1, keepdim=False, *, out):
    """Composite of ``mode``: the smallest most frequent value along ``dim`` (longest run of the sorted slice) and the
    index of its last occurrence.
    """
    s, p, _ = _sort_dim(self, dim)
    n = s._shape[-1]
    pos = _arange(n, s._device)
    starts = _full(s._shape, True, D.bool, s._device)
    starts.narrow(-1, 1, n - 1).copy_(_ne(s.narrow(-1, 1, n - 1), s.narrow(-1, 0, n - 1)))  # NaN: own run
    run_start = _scan_last(ember.where(starts, pos, 0), _max2)
    length = ember.add(_sub(pos, run_start), 1)
    # the end of the first longest run: its value is the smallest mode, and (stable sort) its
    # position holds the largest original index, the last occurrence
    end = _first_index(length, ember.amax(length, -1, True), length.dim() - 1)
    values, indices = out
    _finish(values, ember.gather(s, -1, end))
    _finish(indices, ember.gather(p, -1, end))


# ---------------------------------------------------------------- unique
def _rows_sorted(rows):
    """(permutation, run starts) of the rows of the 2-D ``rows`` sorted lexicographically (stable);
    quadratic in the number of rows."""
    n, m = rows._shape
    dev = rows._device
    a, b = rows.unsqueeze(1), rows.unsqueeze(0)                # (n, 1, m) row i, (1, n, m) row j
    differ = _ne(a, b)                                         # (n, n, m)
    first = _first_index(differ, _full((), True, D.bool, dev), 2)   # first differing column (m if none)
    first = _min2(first, _full((), m - 1, D.int64, dev)) if m else first
    before = ember.gather(_lt_nan(b, a).expand(n, n, m), 2, first).squeeze(2) if m else \
        _full((n, n), False, D.bool, dev)
    same = _not(ember.amax(differ, 2)) if m else _full((n, n), True, D.bool, dev)
    pos = _arange(n, dev)
    rank = ember.sum(_or(_and(before, _not(same)), _and(same, ember.lt(pos, pos.unsqueeze(-1)))), 1)
    perm = ember.scatter_add(_full((n,), 0, D.int64, dev), 0, rank, pos)
    srt = ember.gather(rows, 0, perm.unsqueeze(1).expand(n, m))
    starts = _full((n,), True, D.bool, dev)
    if n > 1:
        chg = ember.amax(_ne(srt.narrow(0, 1, n - 1), srt.narrow(0, 0, n - 1)), 1) if m else \
            _full((n - 1,), False, D.bool, dev)
        starts.narrow(0, 1, n - 1).copy_(chg)
    return perm, starts


def _groups(starts, order):
    """From run ``starts`` (over the ordered elements) and the ``order`` permutation: (number of
    groups K, the first ordered position of each group, inverse (per original element), counts)."""
    n = starts._shape[0]
    dev = starts._device
    gid = _sub(ember.cumsum(starts, 0), 1)
    k = int(ember.sum(starts).item())            # the one data-dependent size: a host sync
    pos = _arange(n, dev)
    first = ember.scatter_add(_full((k + 1,), 0, D.int64, dev), 0, ember.where(starts, gid, k),
                              ember.where(starts, pos, 0)).narrow(0, 0, k)
    counts = ember.scatter_add(_full((k,), 0, D.int64, dev), 0, gid, _full((n,), 1, D.int64, dev))
    inverse = ember.scatter_add(_full((n,), 0, D.int64, dev), 0, order, gid) if order is not None else gid
    return k, first, inverse, counts


def _empty_dim_unique(self, ax):
    size = self._shape[ax]
    vals = self if size == 0 else self.narrow(ax, 0, 1).clone()
    return (vals.clone(), _full((size,), 0, D.int64, self._device),
            _full((1,) if size else (0,), size, D.int64, self._device))


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Composite of ``unique``: sort, mark run starts, scatter_add the groups; returns (values, inverse, counts), rows
    compared lexicographically when ``dim`` is given. One host sync for the output size.
    """
    if dim is None:
        x = self.reshape(-1)
        n = x._shape[0]
        s, p, _ = _sort_dim(x, 0)
        starts = _full((n,), True, D.bool, x._device)
        if n > 1:
            starts.narrow(0, 1, n - 1).copy_(_ne(s.narrow(0, 1, n - 1), s.narrow(0, 0, n - 1)))  # NaNs distinct
        k, first, inv, cnt = _groups(starts, p)
        return ember.gather(s, 0, first), inv.reshape(self._shape), cnt
    ax = _wrap_dim(dim, self.dim())
    if self.numel() == 0:
        return _empty_dim_unique(self, ax)
    moved = self.movedim(ax, 0)
    rows = moved.reshape(moved._shape[0], -1)
    perm, starts = _rows_sorted(rows)
    k, first, inv, cnt = _groups(starts, perm)
    return _take_rows(moved, ember.gather(perm, 0, first)).movedim(0, ax), inv, cnt


def _take_rows(x, idx):
    """x[idx] along dim 0 with gather (idx int64 1-D)."""
    shape = (idx._shape[0],) + x._shape[1:]
    return ember.gather(x, 0, idx.reshape((-1,) + (1,) * (x.dim() - 1)).expand(shape))


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """Composite of ``unique_consecutive``: collapses runs of equal neighbours (rows when ``dim`` is given); returns
    (values, inverse, counts). One host sync for the output size.
    """
    if dim is None:
        x = self.reshape(-1)
        n = x._shape[0]
        starts = _full((n,), True, D.bool, x._device)
        if n > 1:
            starts.narrow(0, 1, n - 1).copy_(_ne(x.narrow(0, 1, n - 1), x.narrow(0, 0, n - 1)))
        k, first, inv, cnt = _groups(starts, None)
        return ember.gather(x, 0, first), inv.reshape(self._shape), cnt
    ax = _wrap_dim(dim, self.dim())
    moved = self.movedim(ax, 0)
    n = moved._shape[0]
    rows = moved.reshape(n, -1)
    starts = _full((n,), True, D.bool, self._device)
    if n > 1:
        chg = ember.amax(_ne(rows.narrow(0, 1, n - 1), rows.narrow(0, 0, n - 1)), 1) if rows._shape[1] else \
            _full((n - 1,), False, D.bool, self._device)
        starts.narrow(0, 1, n - 1).copy_(chg)
    k, first, inv, cnt = _groups(starts, None)
    return _take_rows(moved, first).movedim(0, ax), inv, cnt


# ---------------------------------------------------------------- searchsorted
def searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None, out):
    """Composite of ``searchsorted``: per value, the count of boundaries below it (at or below it when right /
    side='right'), by broadcast comparison; ``sorter`` gathered first.
    """
    b = sorted_sequence
    v = self if isinstance(self, Tensor) else _full((), self, D.scalar_dtype(self), b._device)
    cd = D.result_type(sorted_sequence, self)
    b, v = _cast(b, cd), _cast(v, cd)
    if sorter is not None:
        b = ember.gather(b, -1, sorter)
    if b.dim() == 1:
        bb, vv = b, v.unsqueeze(-1)                         # (m,) against (..., 1)
    else:
        bb, vv = b.unsqueeze(-2), v.unsqueeze(-1)           # (..., 1, m) against (..., k, 1)
    if right or side == "right":
        before = _not(_lt_nan(vv, bb))                      # b_j <= v
    else:
        before = _lt_nan(bb, vv)                            # b_j < v
    _finish(out, ember.sum(before, -1))


# the op name -> composite table _reduction.py installs
COMPOSITES = {
    "nansum": nansum, "prod": prod, "mean": mean, "nanmean": nanmean, "amin": amin, "max": max_all,
    "min": min_all, "max_dim": max_dim, "min_dim": min_dim, "argmax": argmax, "argmin": argmin,
    "aminmax": aminmax, "var": var, "std": std, "norm": norm, "logsumexp": logsumexp, "all": all_, "any": any_,
    "count_nonzero": count_nonzero, "cumsum": cumsum, "cumprod": cumprod, "cummax": cummax, "cummin": cummin,
    "median": median, "nanmedian": nanmedian, "median_dim": median_dim, "nanmedian_dim": nanmedian_dim,
    "mode": mode, "kthvalue": kthvalue, "sort": sort, "topk": topk, "unique": unique,
    "unique_consecutive": unique_consecutive, "searchsorted": searchsorted,
}
