"""Reduction, scan and sorting kernels: numpy over strided views, writing into ``out``.

The core's meta functions have checked every argument (dims in range, dtypes, empty
reductions without identity), so kernels only normalise ``dim`` and compute.
float16 / bfloat16 compute in float32 (exact for max / sort, accumulating for sums),
as PyTorch's cpu kernels do. Sorting is always stable; descending order keeps equal
elements in their original order and puts NaN first, as PyTorch does.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import Tensor

from ._util import ALL, compute_np, np_view, sum_array, sum_gemv, write


# ---------------------------------------------------------------- helpers
def _axes(ndim, dim):
    """``dim`` (None, an int, or a sequence; empty = all) as a tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    if ndim == 0:
        return ()
    return tuple(d % ndim for d in dims)


def _arr(t, cd=None):
    """The numpy view of ``t`` in compute dtype ``cd`` (float32 for float16 / bfloat16 by default)."""
    a = np_view(t)
    cd = compute_np(t._dtype) if cd is None else cd
    return a if a.dtype == cd else a.astype(cd)


def _sum_dtype(t, dtype):
    if dtype is not None:
        return dtype
    d = t._dtype
    return ember.int64 if d is ember.bool or d in ember.library.INTEGRAL else d


def _count(shape, axes):
    return math.prod(shape[a] for a in axes)


def _dim1(x, dim):
    """(x viewed with at least one dim, the wrapped axis): 0-dim tensors act as 1-element vectors."""
    if x.ndim == 0:
        return x.reshape(1), 0
    return x, dim % x.ndim


# ---------------------------------------------------------------- sum, prod, mean
def sum_(self, dim=None, keepdim=False, *, dtype=None, out):
    """cpu kernel of ``sum``, all dtypes: write the sum over ``dim`` (None / () = all) into ``out``, accumulated in
    ``dtype`` (default: int64 for bool / integers, else the input's) (float16 / bfloat16 computed in float32).
    """
    cd = compute_np(_sum_dtype(self, dtype))
    a = _arr(self, cd)
    o = np_view(out)
    if o.dtype == cd:               # straight into out (np.sum's own pairwise sums, without its Python wrapper)
        ax = _axes(a.ndim, dim)
        if not sum_gemv(a, ax, o):
            np.add.reduce(a, axis=ax, keepdims=keepdim, dtype=cd, out=o)
        return
    write(out, np.sum(a, axis=_axes(a.ndim, dim), keepdims=keepdim, dtype=cd))


def nansum(self, dim=None, keepdim=False, *, dtype=None, out):
    """cpu kernel of ``nansum``, all dtypes: as ``sum_`` with NaN counted as zero (floating inputs); writes
    ``out``.
    """
    cd = compute_np(_sum_dtype(self, dtype))
    a = _arr(self, cd)
    f = np.nansum if a.dtype.kind == "f" else np.sum
    write(out, f(a, axis=_axes(a.ndim, dim), keepdims=keepdim, dtype=cd))


def prod(self, dim=None, keepdim=False, *, dtype=None, out):
    """cpu kernel of ``prod``, all dtypes: write the product over ``dim`` into ``out``, accumulated in ``dtype``
    (default: int64 for bool / integers, else the input's).
    """
    cd = compute_np(_sum_dtype(self, dtype))
    a = _arr(self, cd)
    write(out, np.prod(a, axis=_axes(a.ndim, dim), keepdims=keepdim, dtype=cd))


def mean(self, dim=None, keepdim=False, *, dtype=None, out):
    """cpu kernel of ``mean``, floating / complex dtypes: write sum / count over ``dim`` into ``out`` (NaN for an
    empty reduction) (float16 / bfloat16 computed in float32).
    """
    cd = compute_np(dtype or self._dtype)
    a = _arr(self, cd)
    ax = _axes(a.ndim, dim)
    o = np_view(out)
    if o.dtype == cd and sum_gemv(a, ax, o):
        o /= cd.type(_count(a.shape, ax))
        return
    with np.errstate(all="ignore"):
        write(out, np.sum(a, axis=ax, keepdims=keepdim, dtype=cd) / cd.type(_count(a.shape, ax)))


def nanmean(self, dim=None, keepdim=False, *, dtype=None, out):
    """cpu kernel of ``nanmean``, floating dtypes: write the mean of the non-NaN values over ``dim`` into ``out``
    (NaN where all are NaN).
    """
    cd = compute_np(dtype or self._dtype)
    a = _arr(self, cd)
    ax = _axes(a.ndim, dim)
    keep = ~np.isnan(a)
    with np.errstate(all="ignore"):
        s = np.sum(np.where(keep, a, 0), axis=ax, keepdims=keepdim, dtype=cd)
        write(out, s / np.sum(keep, axis=ax, keepdims=keepdim))


# ---------------------------------------------------------------- max / min family
def amax(self, dim=(), keepdim=False, *, out):
    """cpu kernel of ``amax``, all dtypes: write the maximum over ``dim`` (() = all) into ``out``; NaN propagates.
    """
    a = _arr(self)
    write(out, np.max(a, axis=_axes(a.ndim, dim), keepdims=keepdim))


def amin(self, dim=(), keepdim=False, *, out):
    """cpu kernel of ``amin``, all dtypes: write the minimum over ``dim`` (() = all) into ``out``; NaN propagates.
    """
    a = _arr(self)
    write(out, np.min(a, axis=_axes(a.ndim, dim), keepdims=keepdim))


def max_all(self, *, out):
    """cpu kernel of ``max`` without dim, all dtypes: write the maximum of every element into the 0-dim ``out``;
    NaN propagates.
    """
    write(out, np.max(_arr(self)))


def min_all(self, *, out):
    """cpu kernel of ``min`` without dim, all dtypes: write the minimum of every element into the 0-dim ``out``;
    NaN propagates.
    """
    write(out, np.min(_arr(self)))


def _arg_values(f, self, dim, keepdim, out):
    """values / indices of argmax-like ``f`` over one dim (first occurrence; NaN wins)."""
    a, ax = _dim1(_arr(self), dim)
    idx = f(a, axis=ax, keepdims=True)
    vals = np.take_along_axis(a, idx, axis=ax)
    values, indices = out
    write(values, vals.reshape(values._shape))
    write(indices, idx.reshape(indices._shape))


def max_dim(self, dim, keepdim=False, *, out):
    """cpu kernel of ``max(dim)``, all dtypes: write (values, int64 indices) of the maximum along ``dim`` into
    ``out`` = (values, indices); first occurrence, NaN wins.
    """
    _arg_values(np.argmax, self, dim, keepdim, out)


def min_dim(self, dim, keepdim=False, *, out):
    """cpu kernel of ``min(dim)``, all dtypes: write (values, int64 indices) of the minimum along ``dim`` into
    ``out`` = (values, indices); first occurrence, NaN wins.
    """
    _arg_values(np.argmin, self, dim, keepdim, out)


def _argext(f):
    def kernel(self, dim=None, keepdim=False, *, out):
        a = _arr(self)
        if dim is None:
            write(out, np.asarray(f(a.reshape(-1))).reshape(out._shape))
            return
        a, ax = _dim1(a, dim)
        write(out, f(a, axis=ax, keepdims=True).reshape(out._shape))
    kernel.__name__ = f"cpu_{f.__name__}"
    return kernel


def aminmax(self, *, dim=None, keepdim=False, out):
    """cpu kernel of ``aminmax``, all dtypes: write the minimum and maximum over ``dim`` (None = all) into ``out``
    = (min, max).
    """
    a = _arr(self)
    if dim is None:
        ax = None
    else:
        a, ax = _dim1(a, dim)
    lo, hi = out
    write(lo, np.min(a, axis=ax, keepdims=True).reshape(lo._shape))
    write(hi, np.max(a, axis=ax, keepdims=True).reshape(hi._shape))


# ---------------------------------------------------------------- var / std / norm / logsumexp
def _variance(self, dim, correction, keepdim):
    a = _arr(self)
    ax = _axes(a.ndim, dim)
    n = _count(a.shape, ax)
    correction = 1 if correction is None else correction
    with np.errstate(all="ignore"):
        m = sum_array(a, ax, True)
        m /= a.dtype.type(n)
        d = np.subtract(a, m, out=np.empty(a.shape, a.dtype))
        if a.dtype.kind == "c":
            sq = d.real * d.real + d.imag * d.imag
        else:
            sq = np.multiply(d, d, out=d)
        r = sum_array(sq, ax, keepdim)
        r /= sq.dtype.type(n - correction if n > correction else 0)
        return r


def var(self, dim=None, *, correction=None, keepdim=False, out):
    """cpu kernel of ``var``, floating / complex dtypes: write sum |x - mean|^2 / (N - correction) over ``dim``
    into ``out`` (correction default 1; NaN / inf when N <= correction); complex gives a real result.
    """
    write(out, _variance(self, dim, correction, keepdim))


def std(self, dim=None, *, correction=None, keepdim=False, out):
    """cpu kernel of ``std``, floating / complex dtypes: write sqrt of ``var`` into ``out``."""
    with np.errstate(all="ignore"):
        write(out, np.sqrt(_variance(self, dim, correction, keepdim)))


def norm(self, p=2, dim=None, keepdim=False, *, dtype=None, out):
    """cpu kernel of ``norm``, floating / complex dtypes: write the p-norm over ``dim`` into ``out`` (p 2, 1, 0,
    inf, -inf, any other number, or 'nuc' = sum of singular values over two dims); computed in ``dtype`` when
    given.
    """
    d = dtype or self._dtype
    if self._dtype.is_complex and not d.is_complex:     # ``dtype`` names the (real) result: keep the phase
        d = d.to_complex
    cd = compute_np(d)
    a = _arr(self, cd)
    ax = _axes(a.ndim, dim)
    with np.errstate(all="ignore"):
        if p == "nuc":
            m = np.moveaxis(a, ax, (-2, -1))
            r = np.linalg.svd(m, compute_uv=False).sum(-1)
            if keepdim:
                r = np.expand_dims(r, ax)
            write(out, r)
            return
        x = np.abs(a)
        if p == 2:
            r = np.sqrt(np.sum(x * x, axis=ax, keepdims=keepdim))
        elif p == math.inf:
            r = np.max(x, axis=ax, keepdims=keepdim) if x.size else np.zeros(out._shape, x.dtype)
        elif p == -math.inf:
            r = np.min(x, axis=ax, keepdims=keepdim)
        elif p == 0:
            r = np.sum(x != 0, axis=ax, keepdims=keepdim).astype(x.dtype)
        elif p == 1:
            r = np.sum(x, axis=ax, keepdims=keepdim)
        else:
            r = np.sum(x ** x.dtype.type(p), axis=ax, keepdims=keepdim) ** x.dtype.type(1.0 / p)
    write(out, r)


def logsumexp(self, dim, keepdim=False, *, out):
    """cpu kernel of ``logsumexp``: write log(sum(exp(x))) over ``dim`` into ``out``, shifted by the maximum for
    stability (integers computed in the default dtype).
    """
    d = self._dtype
    a = _arr(self, compute_np(d if d.is_floating_point or d.is_complex else ember.get_default_dtype()))
    ax = _axes(a.ndim, dim)
    with np.errstate(all="ignore"):
        re = a.real if a.dtype.kind == "c" else a
        m = np.max(re, axis=ax, keepdims=True, initial=-np.inf)
        m = np.where(np.isinf(m), 0, m).astype(re.dtype)
        r = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
    write(out, r if keepdim else r.reshape(out._shape))


# ---------------------------------------------------------------- all / any / count_nonzero
def all_(self, dim=None, keepdim=False, *, out):
    """cpu kernel of ``all``, all dtypes: write whether every element over ``dim`` is nonzero (bool) into ``out``.
    """
    a = np_view(self)
    write(out, np.all(a, axis=_axes(a.ndim, dim), keepdims=keepdim))


def any_(self, dim=None, keepdim=False, *, out):
    """cpu kernel of ``any``, all dtypes: write whether some element over ``dim`` is nonzero (bool) into ``out``.
    """
    a = np_view(self)
    write(out, np.any(a, axis=_axes(a.ndim, dim), keepdims=keepdim))


def count_nonzero(self, dim=None, *, out):
    """cpu kernel of ``count_nonzero``, all dtypes: write the int64 count of nonzero elements over ``dim`` into
    ``out``.
    """
    a = np_view(self)
    write(out, np.sum(a != 0, axis=_axes(a.ndim, dim), dtype=np.int64))


# ---------------------------------------------------------------- scans
def _scan(f):
    def kernel(self, dim, *, dtype=None, out):
        cd = compute_np(_sum_dtype(self, dtype))
        a, ax = _dim1(_arr(self, cd), dim)
        write(out, f(a, axis=ax, dtype=cd).reshape(out._shape))
    kernel.__name__ = f"cpu_{f.__name__}"
    return kernel


def _cumext(acc):
    def kernel(self, dim, *, out):
        a, ax = _dim1(_arr(self), dim)
        vals = acc.accumulate(a, axis=ax)
        # the index of the last element equal to the running extreme (NaN matches NaN)
        match = (a == vals) | (np.isnan(a) & np.isnan(vals)) if a.dtype.kind == "f" else (a == vals)
        pos = np.arange(a.shape[ax]).reshape([-1 if i == ax else 1 for i in range(a.ndim)])
        idx = np.maximum.accumulate(np.where(match, pos, 0), axis=ax) if a.size else np.zeros(a.shape, np.int64)
        values, indices = out
        write(values, vals.reshape(values._shape))
        write(indices, idx.reshape(indices._shape))
    return kernel


# ---------------------------------------------------------------- sorting and order statistics
def _perm(x, axis, descending=False):
    """A stable sorting permutation along ``axis`` (NaN largest); descending keeps ties in order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    p = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return x.shape[axis] - 1 - np.flip(p, axis)


def sort(self, dim=-1, descending=False, *, stable=False, out):
    """cpu kernel of ``sort``, all dtypes: write the values sorted along ``dim`` and their int64 source indices
    into ``out`` = (values, indices); always stable, NaN largest, descending keeps ties in order.
    """
    a, ax = _dim1(_arr(self), dim)
    p = _perm(a, ax, descending)
    values, indices = out
    write(values, np.take_along_axis(a, p, axis=ax).reshape(values._shape))
    write(indices, p.reshape(indices._shape))


def topk(self, k, dim=-1, largest=True, sorted=True, *, out):
    """cpu kernel of ``topk``, all dtypes: write the ``k`` largest (smallest with ``largest=False``) values along
    ``dim``, in sorted order, and their int64 indices into ``out`` = (values, indices).
    """
    a, ax = _dim1(_arr(self), dim)
    p = np.take(_perm(a, ax, largest), np.arange(k), axis=ax)
    values, indices = out
    write(values, np.take_along_axis(a, p, axis=ax).reshape(values._shape))
    write(indices, p.reshape(indices._shape))


def _select(self, dim, out, position):
    """values / indices of the element at sorted ``position`` (an array per row, keepdims) along dim."""
    a, ax = _dim1(_arr(self), dim)
    p = _perm(a, ax)
    idx = np.take_along_axis(p, position(a, ax), axis=ax)
    values, indices = out
    write(values, np.take_along_axis(a, idx, axis=ax).reshape(values._shape))
    write(indices, idx.reshape(indices._shape))


def _median_pos(nan_skip):
    def position(a, ax):
        n = a.shape[ax]
        if a.dtype.kind != "f":
            return np.full([1 if i == ax else s for i, s in enumerate(a.shape)], (n - 1) // 2, np.int64)
        finite = np.sum(~np.isnan(a), axis=ax, keepdims=True)      # NaNs sort last
        if nan_skip:
            return np.maximum((finite - 1) // 2, 0)
        return np.where(finite < n, finite, (n - 1) // 2)
    return position


def median_dim(self, dim=-1, keepdim=False, *, out):
    """cpu kernel of ``median(dim)``, all dtypes: write the lower median along ``dim`` (NaN if the row has one) and
    its int64 index into ``out`` = (values, indices).
    """
    _select(self, dim, out, _median_pos(False))


def nanmedian_dim(self, dim=-1, keepdim=False, *, out):
    """cpu kernel of ``nanmedian(dim)``, all dtypes: write the lower median of the non-NaN values along ``dim`` and
    its int64 index into ``out`` = (values, indices).
    """
    _select(self, dim, out, _median_pos(True))


def kthvalue(self, k, dim=-1, keepdim=False, *, out):
    """cpu kernel of ``kthvalue``, all dtypes: write the k-th smallest value (1-based) along ``dim`` and its int64
    index into ``out`` = (values, indices).
    """
    _select(self, dim, out, lambda a, ax: np.full([1 if i == ax else s for i, s in enumerate(a.shape)], k - 1,
                                                  np.int64))


def _median_all(nan_skip):
    def kernel(self, *, out):
        a = _arr(self).reshape(-1)
        if a.size == 0:
            write(out, np.nan if a.dtype.kind == "f" else np.iinfo(a.dtype).min)
            return
        s = np.sort(a)
        pos = _median_pos(nan_skip)(a.reshape(1, -1), 1).item()
        write(out, s[pos])
    return kernel


def mode(self, dim=-1, keepdim=False, *, out):
    """cpu kernel of ``mode``, all dtypes: write the most frequent value along ``dim`` (the smallest among ties)
    and the index of its last occurrence into ``out`` = (values, indices).
    """
    a, ax = _dim1(_arr(self), dim)
    x = np.moveaxis(a, ax, -1)
    lead, n = x.shape[:-1], x.shape[-1]
    x = x.reshape(-1, n)
    p = np.argsort(x, axis=1, kind="stable")
    s = np.take_along_axis(x, p, axis=1)
    starts = np.ones(s.shape, bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]          # NaN != NaN: every NaN is its own run
    pos = np.arange(n)
    run_start = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    end = np.argmax(pos - run_start + 1, axis=1)[:, None]   # end of the first (smallest) longest run
    values, indices = out
    write(values, np.take_along_axis(s, end, axis=1).reshape(values._shape))
    # stable sort: the run's last position holds the largest original index (the last occurrence)
    write(indices, np.take_along_axis(p, end, axis=1).reshape(indices._shape))


# ---------------------------------------------------------------- unique
def _empty(shape, dtype, like):
    return ember.empty(tuple(shape), dtype=dtype, device=like.device)


def _outputs(self, vals, inv, counts):
    o = _empty(vals.shape, self._dtype, self)
    write(o, vals)
    i = _empty(inv.shape, ember.int64, self)
    write(i, inv)
    c = _empty(counts.shape, ember.int64, self)
    write(c, counts)
    return o, i, c


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """cpu kernel of ``unique``, all dtypes: return new tensors (sorted unique values, int64 inverse indices of the
    input's shape (or along ``dim``), int64 counts); always sorted.
    """
    a = _arr(self)
    if dim is None:
        vals, inv, cnt = np.unique(a.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        inv = inv.reshape(a.shape)
    else:
        ax = dim % a.ndim
        if a.size == 0:
            m = np.moveaxis(a, ax, 0)
            vals = a if m.shape[0] == 0 else np.take(a, [0], axis=ax)
            inv, cnt = np.zeros(a.shape[ax], np.int64), np.array([a.shape[ax]] if a.shape[ax] else [], np.int64)
        else:
            vals, inv, cnt = np.unique(a, axis=ax, return_inverse=True, return_counts=True)
            inv = inv.reshape(-1)
    return _outputs(self, vals, inv, cnt)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """cpu kernel of ``unique_consecutive``, all dtypes: return new tensors (values with runs of equal consecutive
    elements (or slices along ``dim``) collapsed, int64 inverse indices, int64 run lengths).
    """
    a = _arr(self)
    if dim is None:
        x = a.reshape(-1)
        change = x[1:] != x[:-1]
        ax = 0
    else:
        ax = dim % a.ndim
        x = np.moveaxis(a, ax, 0)
        rows = x.reshape(x.shape[0], -1)
        change = np.any(rows[1:] != rows[:-1], axis=1)
    n = x.shape[0]
    starts = np.flatnonzero(np.concatenate([[True], change])) if n else np.zeros(0, np.int64)
    inv = np.cumsum(np.concatenate([[0], change])).astype(np.int64) if n else np.zeros(0, np.int64)
    counts = np.diff(np.append(starts, n))
    if dim is None:
        vals, inv = x[starts], inv.reshape(a.shape)
    else:
        vals = np.take(a, starts, axis=ax)
    return _outputs(self, vals, inv, counts)


# ---------------------------------------------------------------- searchsorted
def searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None, out):
    """cpu kernel of ``searchsorted``: write into ``out`` the insertion index of each value of ``self`` in the last
    dim of ``sorted_sequence`` (1-D or batched like ``self``), left or right side; ``sorter`` reorders the
    sequence first. RuntimeError "ember.searchsorted(): sorter index out of range".
    """
    cd = compute_np(ember.result_type(sorted_sequence, self))
    b = _arr(sorted_sequence, cd)
    v = _arr(self, cd) if isinstance(self, Tensor) else np.asarray(self).astype(cd)
    if sorter is not None:
        s = np_view(sorter)
        n = b.shape[-1]
        if s.size and (s.min() < 0 or s.max() >= n):
            raise RuntimeError("ember.searchsorted(): sorter index out of range")
        b = np.take_along_axis(b, s, axis=-1)
    side = "right" if right or side == "right" else "left"
    if b.ndim == 1:
        r = np.searchsorted(b, v, side=side)
    else:
        b2, v2 = b.reshape(-1, b.shape[-1]), v.reshape(-1, v.shape[-1])
        r = np.stack([np.searchsorted(b2[i], v2[i], side=side) for i in range(b2.shape[0])]).reshape(v.shape) \
            if b2.shape[0] else np.zeros(v.shape, np.int64)
    write(out, r)


def register(lib):
    """Register the reduction, scan and sorting kernels above for device 'cpu', all dtypes, on ``lib``."""
    for name, k in (("sum", sum_), ("nansum", nansum), ("prod", prod), ("mean", mean), ("nanmean", nanmean),
                    ("amax", amax), ("amin", amin), ("max", max_all), ("min", min_all), ("max_dim", max_dim),
                    ("min_dim", min_dim), ("argmax", _argext(np.argmax)), ("argmin", _argext(np.argmin)),
                    ("aminmax", aminmax), ("var", var), ("std", std), ("norm", norm), ("logsumexp", logsumexp),
                    ("all", all_), ("any", any_), ("count_nonzero", count_nonzero), ("cumsum", _scan(np.cumsum)),
                    ("cumprod", _scan(np.cumprod)), ("cummax", _cumext(np.maximum)),
                    ("cummin", _cumext(np.minimum)), ("median", _median_all(False)),
                    ("nanmedian", _median_all(True)), ("median_dim", median_dim), ("nanmedian_dim", nanmedian_dim),
                    ("mode", mode), ("kthvalue", kthvalue), ("sort", sort), ("topk", topk), ("unique", unique),
                    ("unique_consecutive", unique_consecutive), ("searchsorted", searchsorted)):
        lib.impl(name, k, device="cpu", dtypes=ALL)
