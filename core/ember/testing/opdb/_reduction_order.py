"""References, samples and error inputs of the ``reduction`` op database entries that keep a
dimension: scans (cumsum / cumprod / cummax / cummin), order statistics (median, nanmedian,
mode, kthvalue), sort / topk, unique / unique_consecutive and searchsorted.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from .._opinfo import SampleInput, ErrorInput, make_tensor
from .._samples import with_grad
from ._reduction_helpers import _LOWP, np_dtype, distinct, ties, with_nan, values_only, _int_to_long, _sample


# ================================================================ scans
def _scan_prep(a, dim):
    x = a.reshape(1) if a.ndim == 0 else a
    return x, dim % x.ndim


def _cumsum_ref(a, dim, *, dtype=None, prod=False):
    out = np_dtype(dtype) if dtype is not None else _int_to_long(a.dtype)
    x, d = _scan_prep(a.astype(out), dim)
    acc = np.float64 if out.kind == "f" else (np.complex128 if out.kind == "c" else np.int64)
    r = (np.cumprod if prod else np.cumsum)(x, axis=d, dtype=acc)
    return r.reshape(a.shape).astype(out)


def _scan_samples(op, device, dtype, requires_grad=False, *, low=None, high=None):
    import ember
    k = 0

    def mk(shape, **kw):
        nonlocal k
        k += 1
        return with_grad(make_tensor(shape, device=device, dtype=dtype, low=low, high=high,
                                     seed=_sample(op, device, dtype, k), **kw), requires_grad)
    yield SampleInput(mk(()), (0,), name="0-dim")
    yield SampleInput(mk((0,)), (0,), name="empty")
    yield SampleInput(mk((5,)), (0,), name="1-D")
    yield SampleInput(mk((3, 4)), (1,), name="2-D, dim=1")
    yield SampleInput(mk((3, 4)), (-2,), name="dim=-2")
    yield SampleInput(mk((2, 3, 4), noncontiguous=True), (1,), name="noncontiguous")
    yield SampleInput(mk((4, 3)).t(), (1,), name="transposed")
    yield SampleInput(mk((4, 6))[1:, ::2], (0,), name="sliced")
    if op.name in ("cumsum", "cumprod"):
        to = ember.float64 if dtype.is_floating_point and dtype.name not in _LOWP else \
            ember.complex128 if dtype.is_complex else None
        if to is not None:
            yield SampleInput(mk((3, 4)), (1,), {"dtype": to}, name=f"dtype={to.name}")
        if not dtype.is_floating_point and not dtype.is_complex:
            yield SampleInput(mk((3, 4)), (1,), {"dtype": ember.int32}, name="dtype=int32")
    if dtype.is_floating_point and op.name != "cumprod":
        yield SampleInput(with_nan((3, 5), device, dtype, _sample(op, device, dtype, 90), where=(1, 8, 9),
                                   requires_grad=requires_grad), (1,), name="NaN")
    if op.name in ("cummax", "cummin"):
        yield SampleInput(ties((3, 7), device, dtype, _sample(op, device, dtype, 91)), (1,), name="ties")


def _cumext_ref(a, dim, *, largest=True):
    x, d = _scan_prep(a, dim)
    xm = np.moveaxis(x, d, -1)
    vals = np.empty_like(xm)
    idx = np.zeros(xm.shape, dtype=np.int64)
    flt = xm.dtype.kind == "f"
    for pos in np.ndindex(*xm.shape[:-1]):
        row = xm[pos]
        best, bi = None, 0
        for j, v in enumerate(row):
            if best is None:
                best, bi = v, j
            elif flt and np.isnan(v):
                best, bi = v, j
            elif flt and np.isnan(best):
                pass
            elif (v >= best) if largest else (v <= best):
                best, bi = v, j
            vals[pos + (j,)] = best
            idx[pos + (j,)] = bi
        if len(row):
            vals[pos + (0,)] = row[0]
    vals, idx = np.moveaxis(vals, -1, d), np.moveaxis(idx, -1, d)
    return vals.reshape(a.shape).astype(a.dtype), idx.reshape(a.shape)


def _scan_errors(op, device):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (2,)), IndexError, r"Dimension out of range \(expected to be in range of "
                     r"\[-2, 1\], but got 2\)")
    yield ErrorInput(SampleInput(x, ((0, 1),)), TypeError, r"argument 'dim' must be int")


# ================================================================ order statistics
def _lower_median_1d(row, nan_mode):
    """(value, index) of the lower median of a 1-D row; nan_mode: 'propagate' | 'ignore'."""
    n = len(row)
    flt = row.dtype.kind == "f"
    nan = np.isnan(row) if flt else np.zeros(n, bool)
    if nan_mode == "propagate" and nan.any():
        return row[np.argmax(nan)], int(np.argmax(nan))
    order = np.argsort(np.where(nan, np.inf, row) if flt else row, kind="stable")
    m = n - int(nan.sum())
    if m == 0:
        return (row[0] if n else np.nan), 0
    j = order[(m - 1) // 2]
    return row[j], int(j)


def _median_all_ref(a, *, nan_mode="propagate"):
    x = a.reshape(-1)
    if x.size == 0:
        return np.asarray(np.nan, dtype=a.dtype)
    return np.asarray(_lower_median_1d(x, nan_mode)[0], dtype=a.dtype)


def _apply_rows(a, dim, keepdim, fn):
    """Apply ``fn(row) -> (value, index)`` along ``dim``; returns (values, int64 indices)."""
    x = a.reshape(1) if a.ndim == 0 else a
    d = dim % x.ndim
    xm = np.moveaxis(x, d, -1)
    vals = np.empty(xm.shape[:-1], dtype=a.dtype)
    idx = np.empty(xm.shape[:-1], dtype=np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        vals[pos], idx[pos] = fn(xm[pos])
    if keepdim and a.ndim:
        vals, idx = np.expand_dims(vals, d), np.expand_dims(idx, d)
    return vals, idx


def _median_dim_ref(a, dim=-1, keepdim=False, *, nan_mode="propagate"):
    return _apply_rows(a, dim, keepdim, partial(_lower_median_1d, nan_mode=nan_mode))


def _mode_1d(row):
    vals, counts = np.unique(row, return_counts=True)   # sorted: the smallest of the most frequent wins
    v = vals[np.argmax(counts)]
    last = int(np.nonzero(row == v)[0][-1])
    return v, last


def _mode_ref(a, dim=-1, keepdim=False):
    return _apply_rows(a, dim, keepdim, _mode_1d)


def _kth_1d(row, k):
    flt = row.dtype.kind == "f"
    key = np.where(np.isnan(row), np.inf, row) if flt else row
    order = np.argsort(key, kind="stable")
    if flt:   # NaN sorts after +inf
        order = np.concatenate([order[~np.isnan(row[order])], order[np.isnan(row[order])]])
    j = order[k - 1]
    return row[j], int(j)


def _kthvalue_ref(a, k, dim=-1, keepdim=False):
    return _apply_rows(a, dim, keepdim, partial(_kth_1d, k=k))


def _order_samples(op, device, dtype, requires_grad=False):
    """Samples for median / nanmedian / mode / kthvalue over a dim (ties -> values only)."""
    k = 0

    def nxt():
        nonlocal k
        k += 1
        return _sample(op, device, dtype, k)
    args = (lambda n: (min(2, n),)) if op.name == "kthvalue" else (lambda n: ())
    small = dtype.name == "bool"
    if not small:
        yield SampleInput(distinct((3, 5), device, dtype, nxt()), args(5) + (1,), name="distinct, dim=1")
        yield SampleInput(distinct((4, 3), device, dtype, nxt()).t(), args(4) + (0,), {"keepdim": True},
                          name="transposed, dim=0, keepdim")
        yield SampleInput(distinct((2, 3, 4), device, dtype, nxt()), args(3), {"dim": -2}, name="3-D, dim=-2")
        yield SampleInput(distinct((4,), device, dtype, nxt()), args(4), name="1-D, even size")
        yield SampleInput(distinct((), device, dtype, nxt()), args(1), name="0-dim")
        x = distinct((4, 8), device, dtype, nxt())[1:, ::2]
        yield SampleInput(x, args(4), name="sliced")
        if op.name == "kthvalue":
            yield SampleInput(distinct((3, 5), device, dtype, nxt()), (5, 1), name="k=size")
    yield SampleInput(ties((3, 7), device, dtype, nxt()), args(7) + (1,), name="ties, dim=1",
                      output_process=None if op.name == "mode" else values_only)
    yield SampleInput(ties((0, 3), device, dtype, nxt()), args(3) + (1,), name="empty, dim=1")
    if dtype.is_floating_point and op.name != "mode":     # mode's NaN rule is PyTorch's sort order artefact
        yield SampleInput(with_nan((3, 5), device, dtype, nxt(), where=(1, 6, 7)), args(5) + (1,), name="NaN",
                          output_process=values_only)


def _median_all_samples(op, device, dtype, requires_grad=False):
    k = 0

    def nxt():
        nonlocal k
        k += 1
        return _sample(op, device, dtype, k)
    yield SampleInput(distinct((), device, dtype, nxt()), name="0-dim")
    yield SampleInput(distinct((5,), device, dtype, nxt()), name="1-D, odd")
    yield SampleInput(distinct((3, 4), device, dtype, nxt()), name="2-D, even")
    yield SampleInput(distinct((4, 3), device, dtype, nxt()).t(), name="transposed")
    yield SampleInput(ties((3, 7), device, dtype, nxt()), name="ties")
    if dtype.is_floating_point:
        yield SampleInput(with_nan((3, 5), device, dtype, nxt(), where=(2,)), name="one NaN")
        yield SampleInput(with_nan((2, 2), device, dtype, nxt(), where=(0, 1, 2, 3)), name="all NaN")


def _order_errors(op, device, name):
    import ember
    args = (1,) if name == "kthvalue" else ()
    yield ErrorInput(SampleInput(ember.empty((0, 3), device=device), args + (0,)), IndexError,
                     rf"{name}\(\): Expected reduction dim 0 to have non-zero size")
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), args + (2,)), IndexError,
                     r"Dimension out of range")
    if name == "kthvalue":
        yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), (5, 1)), RuntimeError,
                         r"kthvalue\(\): selected number k out of range for dimension 1")
    if name in ("median", "nanmedian", "kthvalue"):
        yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.bool, seed=1), args + (0,)),
                         RuntimeError, rf"\"{name}\" not implemented for 'Bool'")


def _median_all_errors(op, device, name):
    import ember
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.complex64, seed=1)), RuntimeError,
                     rf"\"{name}\" not implemented for 'ComplexFloat'")


# ================================================================ sort / topk
def _sort_key(row, descending):
    """A stable argsort of a 1-D row with NaN as the largest value."""
    flt = row.dtype.kind == "f"
    if descending:
        if flt:
            nan = np.isnan(row)
            o = np.argsort(-np.where(nan, 0, row), kind="stable")
            return np.concatenate([o[nan[o]], o[~nan[o]]])
        if row.dtype.kind == "b":
            return np.argsort(~row, kind="stable")
        return np.argsort(-row.astype(np.float64), kind="stable")
    o = np.argsort(np.where(np.isnan(row), np.inf, row) if flt else row, kind="stable")
    if flt:
        nan = np.isnan(row)
        o = np.concatenate([o[~nan[o]], o[nan[o]]])
    return o


def _sort_ref(a, dim=-1, descending=False, *, stable=False):
    x, d = (a.reshape(1), 0) if a.ndim == 0 else (a, dim % a.ndim)
    xm = np.moveaxis(x, d, -1)
    idx = np.empty(xm.shape, dtype=np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        idx[pos] = _sort_key(xm[pos], descending)
    vals = np.take_along_axis(xm, idx, -1)
    return np.moveaxis(vals, -1, d).reshape(a.shape).astype(a.dtype), np.moveaxis(idx, -1, d).reshape(a.shape)


def _topk_ref(a, k, dim=-1, largest=True, sorted=True):
    x, d = (a.reshape(1), 0) if a.ndim == 0 else (a, dim % a.ndim)
    v, i = _sort_ref(x, d, descending=largest)
    v, i = np.take(v, np.arange(k), axis=d), np.take(i, np.arange(k), axis=d)
    if a.ndim == 0:
        return v.reshape(()), i.reshape(())
    return v, i


def _sort_samples(op, device, dtype, requires_grad=False):
    k = 0

    def nxt():
        nonlocal k
        k += 1
        return _sample(op, device, dtype, k)
    is_sort = op.name == "sort"
    small = dtype.name == "bool"
    if not small:
        for name, x, a, kw in (
                ("0-dim", distinct((), device, dtype, nxt()), (), {}),
                ("1-D", distinct((6,), device, dtype, nxt()), (), {}),
                ("2-D, dim=0", distinct((3, 4), device, dtype, nxt()), (0,), {}),
                ("noncontiguous", make_tensor((3, 4), device=device, dtype=dtype, noncontiguous=True, seed=nxt())
                 if dtype.is_floating_point else distinct((3, 4), device, dtype, nxt()), (-1,), {}),
                ("transposed", distinct((5, 3), device, dtype, nxt()).t(), (), {}),
                ("sliced", distinct((4, 10), device, dtype, nxt())[1:, ::2], (1,), {})):
            if is_sort:
                yield SampleInput(with_grad(x, requires_grad), a, kw, name=name)
                yield SampleInput(with_grad(x, requires_grad), a, {"descending": True}, name=name + ", descending")
            else:
                size = x.shape[a[0]] if a and x.dim() else (x.shape[-1] if x.dim() else 1)
                kk = min(2, size)
                yield SampleInput(with_grad(x, requires_grad), (kk,) + a, kw, name=name)
                yield SampleInput(with_grad(x, requires_grad), (kk,) + a, {"largest": False}, name=name + ", smallest")
        if not is_sort:
            yield SampleInput(distinct((3, 5), device, dtype, nxt()), (0,), name="k=0")
            yield SampleInput(distinct((3, 5), device, dtype, nxt()), (5,), name="k=size")
    t = ties((3, 8), device, dtype, nxt())
    if is_sort:    # stable: the indices of equal elements keep their order, also when descending
        yield SampleInput(t, (), name="ties (stable)")
        yield SampleInput(t, (), {"descending": True}, name="ties, descending (stable)")
        yield SampleInput(t, (0,), {"stable": True}, name="ties, stable=True, dim=0")
        yield SampleInput(ties((0, 3), device, dtype, nxt()), (), name="empty")
    else:
        yield SampleInput(t, (3,), name="ties", output_process=values_only)
        yield SampleInput(ties((0, 3), device, dtype, nxt()), (2,), name="empty")
    if dtype.is_floating_point:
        x = with_nan((3, 6), device, dtype, nxt(), where=(1, 4, 7, 17))
        if is_sort:
            yield SampleInput(x, (), name="NaN")
            yield SampleInput(x, (), {"descending": True}, name="NaN, descending")
        else:
            yield SampleInput(x, (3,), name="NaN", output_process=values_only)


def _sort_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.complex64, seed=1),
                                 () if op.name == "sort" else (1,)), RuntimeError,
                     r"Sort does not support complex dtypes" if op.name == "sort" else r"topk does not support complex")
    x = make_tensor((3, 4), device=device, seed=1)
    if op.name == "topk":
        yield ErrorInput(SampleInput(x, (5,)), RuntimeError, r"selected index k out of range")
        yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.bool, seed=1), (1,)),
                         RuntimeError, r"topk does not support bool dtypes")
    else:
        yield ErrorInput(SampleInput(x, (2,)), IndexError, r"Dimension out of range")


# ================================================================ unique / unique_consecutive
def _unique_ref(a, sorted=True, return_inverse=False, return_counts=False, dim=None, *, consecutive=False):
    if dim is None:
        x = a.reshape(-1)
        if consecutive:
            if x.size == 0:
                vals, inv, cnt = x, np.zeros(a.shape, np.int64), np.zeros(0, np.int64)
            else:
                new = np.concatenate([[True], x[1:] != x[:-1]])
                if x.dtype.kind == "f":    # NaNs are never equal: each NaN starts a new run
                    new |= np.concatenate([[True], np.isnan(x[1:])])
                starts = np.nonzero(new)[0]
                vals = x[starts]
                inv = (np.cumsum(new) - 1).reshape(a.shape)
                cnt = np.diff(np.concatenate([starts, [x.size]]))
        else:
            vals, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, equal_nan=False)
            inv = inv.reshape(a.shape)
    else:
        d = dim % a.ndim
        xm = np.moveaxis(a, d, 0).reshape(a.shape[d], -1)
        if consecutive:
            n = xm.shape[0]
            new = np.ones(n, bool)
            if n > 1:
                new[1:] = np.any(xm[1:] != xm[:-1], axis=1)
            starts = np.nonzero(new)[0]
            vm = xm[starts]
            inv = np.cumsum(new) - 1
            cnt = np.diff(np.concatenate([starts, [n]]))
        else:
            rows = [tuple(r) for r in xm.tolist()]
            uniq = builtins_sorted(set(rows))
            pos = {r: i for i, r in enumerate(uniq)}
            inv = np.array([pos[r] for r in rows], dtype=np.int64)
            vm = np.array(uniq, dtype=a.dtype).reshape(len(uniq), xm.shape[1])
            cnt = np.bincount(inv, minlength=len(uniq))
        rest = tuple(s for i, s in enumerate(a.shape) if i != d)
        vals = np.moveaxis(vm.reshape((vm.shape[0],) + rest), 0, d)
    return vals.astype(a.dtype), np.asarray(inv, dtype=np.int64), np.asarray(cnt, dtype=np.int64)


import builtins as _b          # noqa: E402  (``sorted`` is an argument name above)
builtins_sorted = _b.sorted


def _pick(res, return_inverse, return_counts):
    out, inv, cnt = res
    if return_inverse and return_counts:
        return out, inv, cnt
    if return_inverse:
        return out, inv
    if return_counts:
        return out, cnt
    return out


def _unique_public_ref(a, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return _pick(_unique_ref(a, sorted, return_inverse, return_counts, dim), return_inverse, return_counts)


def _unique_consecutive_public_ref(a, return_inverse=False, return_counts=False, dim=None):
    return _pick(_unique_ref(a, True, return_inverse, return_counts, dim, consecutive=True), return_inverse,
                 return_counts)


def _unique_samples(op, device, dtype, requires_grad=False):
    k = 0

    def nxt():
        nonlocal k
        k += 1
        return _sample(op, device, dtype, k)
    both = {"return_inverse": True, "return_counts": True}
    yield SampleInput(ties((), device, dtype, nxt()), (), name="0-dim")
    yield SampleInput(ties((0,), device, dtype, nxt()), (), dict(both), name="empty")
    yield SampleInput(ties((10,), device, dtype, nxt()), (), name="1-D")
    yield SampleInput(ties((3, 5), device, dtype, nxt()), (), {"return_inverse": True}, name="2-D, inverse")
    yield SampleInput(ties((4, 3), device, dtype, nxt()).t(), (), {"return_counts": True},
                      name="transposed, counts")
    yield SampleInput(ties((4, 10), device, dtype, nxt())[1:, ::2], (), dict(both), name="sliced, inverse, counts")
    yield SampleInput(ties((5, 2), device, dtype, nxt(), k=2), (), dict(both, dim=0), name="dim=0")
    yield SampleInput(ties((2, 6), device, dtype, nxt(), k=2), (), dict(both, dim=-1), name="dim=-1")
    if dtype.is_floating_point:
        yield SampleInput(with_nan((6,), device, dtype, nxt(), where=(1, 4)), (), {"return_counts": True},
                          name="NaN (each distinct)")


def _unique_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(make_tensor((), device=device, seed=1), (), {"dim": 0}), IndexError,
                     r"Dimension specified as 0 but tensor has no dimensions")
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), (), {"dim": 2}), IndexError,
                     r"Dimension out of range")


# ================================================================ searchsorted
def _searchsorted_ref(seq, v, *, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    s = seq if sorter is None else np.take_along_axis(seq, sorter, -1)
    if s.dtype.kind == "f":
        s = np.where(np.isnan(s), np.inf, s)        # NaN sorts last
    vv = np.asarray(v)
    out_dt = np.int32 if out_int32 else np.int64
    if s.ndim == 1:
        return np.searchsorted(s, vv, side=side).astype(out_dt).reshape(vv.shape)
    r = np.empty(vv.shape, dtype=out_dt)
    for pos in np.ndindex(*vv.shape[:-1]):
        r[pos] = np.searchsorted(s[pos], vv[pos], side=side)
    return r


def _searchsorted_samples(op, device, dtype, requires_grad=False):
    import ember
    k = 0

    def nxt():
        nonlocal k
        k += 1
        return _sample(op, device, dtype, k)

    def srt(x, dim=-1):
        return ember.sort(x, dim).values
    if dtype.name == "bool":
        b = ember.tensor([False, False, True], device=device)
        v = ties((2, 3), device, dtype, nxt())
        yield SampleInput(b, (v,), name="bool")
        yield SampleInput(b, (v,), {"right": True}, name="bool, right")
        return
    seq = srt(ties((7,), device, dtype, nxt(), k=5))
    yield SampleInput(seq, (ties((3, 4), device, dtype, nxt(), k=6),), name="1-D boundaries, ties")
    yield SampleInput(seq, (ties((3, 4), device, dtype, nxt(), k=6),), {"right": True}, name="right")
    yield SampleInput(seq, (ties((5,), device, dtype, nxt(), k=6),), {"side": "right", "out_int32": True},
                      name="side='right', out_int32")
    yield SampleInput(seq, (ties((), device, dtype, nxt(), k=6),), name="0-dim value")
    yield SampleInput(seq, (ties((0,), device, dtype, nxt(), k=6),), name="empty values")
    nd = srt(make_tensor((2, 3, 5), device=device, dtype=dtype, seed=nxt()))
    yield SampleInput(nd, (make_tensor((2, 3, 4), device=device, dtype=dtype, seed=nxt()),), name="N-D boundaries")
    yt = make_tensor((4, 3), device=device, dtype=dtype, seed=nxt()).t()
    yield SampleInput(srt(make_tensor((3, 6), device=device, dtype=dtype, seed=nxt())), (yt,), name="transposed values")
    raw = distinct((6,), device, dtype, nxt())
    yield SampleInput(raw, (ties((4,), device, dtype, nxt(), k=4),), {"sorter": ember.argsort(raw)}, name="sorter")
    yield SampleInput(seq, (2,), name="scalar value")
    if dtype.is_floating_point:
        s2 = srt(with_nan((6,), device, dtype, nxt(), where=(2,)))
        yield SampleInput(s2, (make_tensor((4,), device=device, dtype=dtype, seed=nxt()),), name="NaN in boundaries")


def _searchsorted_errors(op, device):
    import ember
    s = ember.tensor([1.0, 2.0, 3.0], device=device)
    v = ember.tensor([1.5], device=device)
    yield ErrorInput(SampleInput(ember.tensor(1.0, device=device), (v,)), RuntimeError,
                     r"boundaries tensor should have positive dimension, but got 0 dimension")
    yield ErrorInput(SampleInput(s, (v,), {"side": "middle"}), RuntimeError,
                     r"side can only be 'left' or 'right' but got middle")
    yield ErrorInput(SampleInput(s, (v,), {"side": "left", "right": True}), RuntimeError,
                     r"side and right can't be set to opposites, got side of left while right was True")
    yield ErrorInput(SampleInput(ember.ones((2, 3), device=device), (ember.ones((3, 1), device=device),)),
                     RuntimeError, r"the first N-1 dimensions of boundaries tensor and input value tensor must match")
    yield ErrorInput(SampleInput(s, (v,), {"sorter": ember.tensor([0, 1, 2], dtype=ember.int32, device=device)}),
                     RuntimeError, r"sorter must be a tensor of long dtype but got dtype Int")
