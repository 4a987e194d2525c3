"""Reductions, scans and sorting (core/ember/_ops/_reduction.py on the cpu plugin), against numpy.

Each op runs on several dtypes, dims, keepdim, 0-dim / empty inputs and non-contiguous
(transposed, narrowed, expanded) inputs, with ``out=`` and the error cases PyTorch raises.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(0)
FLOATS = [ember.float32, ember.float64]
INTS = [ember.int32, ember.int64, ember.uint8, ember.int16]


def N(t):
    return np.array(t.tolist() if t.dtype is ember.bfloat16 else t.numpy())


def make(shape, dtype, lo=-5, hi=6):
    if dtype is ember.bool:
        a = RNG.random(shape) > 0.5
    elif dtype.is_complex:
        a = RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    elif dtype.is_floating_point:
        a = RNG.standard_normal(shape) * 3
    else:
        a = RNG.integers(0 if dtype is ember.uint8 else lo, hi, shape)
    t = ember.tensor(a, dtype=dtype)
    return t, N(t)


def variants(shape, dtype):
    """(name, tensor, numpy reference) for contiguous and non-contiguous layouts of ``shape`` (3-D)."""
    t, a = make(shape, dtype)
    yield "contiguous", t, a
    tt = t.transpose(0, 2)
    yield "transposed", tt, a.transpose(2, 1, 0)
    yield "narrowed", t.narrow(1, 1, shape[1] - 1), a[:, 1:]
    e, ea = make((1,) + shape[1:], dtype)
    yield "expanded", e.expand(shape), np.broadcast_to(ea, shape)


def S(v, dtype=None):
    """A 0-dim tensor holding ``v``."""
    return ember.tensor([v], dtype=dtype).reshape(())


def close(x, ref, dtype=None, rtol=None, atol=None):
    x = N(x) if isinstance(x, ember.Tensor) else np.asarray(x)
    ref = np.asarray(ref)
    assert x.shape == ref.shape, (x.shape, ref.shape)
    if dtype is not None and (dtype.is_floating_point or dtype.is_complex):
        tol = 1e-5 if dtype in (ember.float32, ember.complex64) else 1e-3 if dtype.itemsize == 2 else 1e-10
        np.testing.assert_allclose(x, ref, rtol=rtol or tol, atol=atol or tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(x, ref)


DIMS = [None, 0, -1, (0, 2), (1,), ()]


def np_axis(dim):
    return None if dim is None or dim == () else dim


# ---------------------------------------------------------------- sum / prod / mean / amax / all ...
REDUCTIONS = {
    "sum": (lambda a, ax, k: np.sum(a, axis=ax, keepdims=k), FLOATS + INTS + [ember.bool, ember.complex64]),
    "nansum": (lambda a, ax, k: np.nansum(a, axis=ax, keepdims=k), FLOATS + INTS),
    "mean": (lambda a, ax, k: np.mean(a, axis=ax, keepdims=k), FLOATS + [ember.complex128]),
    "amax": (lambda a, ax, k: np.max(a, axis=ax, keepdims=k), FLOATS + INTS + [ember.bool]),
    "amin": (lambda a, ax, k: np.min(a, axis=ax, keepdims=k), FLOATS + INTS + [ember.bool]),
    "all": (lambda a, ax, k: np.all(a, axis=ax, keepdims=k), FLOATS + INTS + [ember.bool]),
    "any": (lambda a, ax, k: np.any(a, axis=ax, keepdims=k), FLOATS + [ember.int64, ember.bool]),
    "logsumexp": (lambda a, ax, k: np.log(np.sum(np.exp(a.astype(np.float64)), axis=ax, keepdims=k)),
                  FLOATS + [ember.int64]),
}


@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reductions_match_numpy(op):
    ref, dtypes = REDUCTIONS[op]
    fn = getattr(ember, op)
    for dtype in dtypes:
        for name, t, a in variants((3, 4, 5), dtype):
            for dim in DIMS:
                if op == "logsumexp" and dim is None:
                    continue
                for keepdim in (False, True):
                    got = fn(t, dim, keepdim) if dim is not None else fn(t, keepdim=keepdim)
                    want = ref(a, np_axis(dim), keepdim)
                    assert got.shape == want.shape, (op, dtype, name, dim, keepdim)
                    close(got, want, got.dtype)
            # the Tensor method is the same op
                got = getattr(t, op)(0 if op == "logsumexp" else None)
            close(got, ref(a, 0 if op == "logsumexp" else None, False), got.dtype)


def test_prod_single_dim():
    for dtype in FLOATS + [ember.int64, ember.int32, ember.bool]:
        for name, t, a in variants((3, 4, 2), dtype):
            close(ember.prod(t), np.prod(a), t.dtype if dtype.is_floating_point else None)
            for dim in (0, 1, -1):
                for keepdim in (False, True):
                    close(t.prod(dim, keepdim), np.prod(a, axis=dim, keepdims=keepdim),
                          dtype if dtype.is_floating_point else None)
    with pytest.raises(TypeError, match="prod"):
        ember.prod(ember.ones(2, 3), (0, 1))


def test_result_dtypes():
    for dtype in INTS + [ember.bool, ember.int8]:
        t = ember.ones(2, 3, dtype=dtype)
        for op in (ember.sum, ember.nansum, ember.prod):
            assert op(t).dtype is ember.int64
        assert ember.cumsum(t, 0).dtype is ember.int64
        assert ember.cumprod(t, 1).dtype is ember.int64
        assert ember.logsumexp(t, 0).dtype is ember.float32
        assert ember.amax(t).dtype is dtype
        assert ember.all(t).dtype is (ember.uint8 if dtype is ember.uint8 else ember.bool)
        assert ember.argmax(t.int() if dtype is ember.bool else t).dtype is ember.int64
    for dtype in (ember.float16, ember.bfloat16, ember.float32, ember.float64):
        t = ember.ones(2, 3, dtype=dtype)
        for op in (ember.sum, ember.mean, ember.prod, ember.amax, ember.norm, ember.var, ember.std):
            assert op(t).dtype is dtype, (op, dtype)
    c = ember.ones(3, dtype=ember.complex64)
    assert ember.var(c).dtype is ember.float32
    assert ember.norm(c).dtype is ember.float32
    assert ember.mean(c).dtype is ember.complex64
    assert ember.sum(ember.ones(3, dtype=ember.int64), dtype=ember.float32).dtype is ember.float32
    assert ember.mean(ember.arange(4), dtype=ember.float64).item() == 1.5
    assert ember.count_nonzero(ember.ones(2, 3)).dtype is ember.int64


def test_low_precision_accumulates_in_float32():
    for dtype in (ember.float16, ember.bfloat16):
        a = np.full(4096, 0.1, np.float32)
        t = ember.tensor(a).to(dtype)
        assert abs(ember.sum(t).float().item() - 409.6) < 1.0
        assert abs(ember.mean(t).float().item() - 0.1) < 1e-3
        close(ember.amax(ember.tensor([1., 3., 2.]).to(dtype)).float(), np.float32(3))


def test_sum_dtype_casts_input_first():
    t = ember.tensor([1.7, 2.6, -0.5])
    assert ember.sum(t, dtype=ember.int32).item() == 3      # 1 + 2 + 0
    assert ember.sum(ember.tensor([True, True]), dtype=ember.float64).item() == 2.0


def test_empty_and_zero_dim():
    e = ember.zeros(0, 3)
    assert ember.sum(e).item() == 0 and ember.prod(e).item() == 1
    close(ember.sum(e, 0), np.zeros(3, np.float32))
    assert ember.sum(e, 1).shape == (0,)
    assert math.isnan(ember.mean(e).item())
    assert ember.all(e).item() is True and ember.any(e).item() is False
    assert ember.count_nonzero(e).item() == 0
    close(ember.logsumexp(e, 0), np.full(3, -np.inf, np.float32))
    assert ember.amax(e, 1).shape == (0,)
    assert ember.max(e, 1).values.shape == (0,)
    assert ember.cumsum(e, 0).shape == (0, 3)
    assert ember.norm(e).item() == 0.0
    s = S(3.5)
    for op in (ember.sum, ember.mean, ember.amax, ember.amin, ember.prod):
        assert op(s).item() == 3.5 and op(s, 0).shape == () and op(s, -1, True).shape == ()
    assert ember.max(s, 0).indices.item() == 0
    assert ember.argmax(s, 0).item() == 0
    assert ember.cumsum(s, 0).item() == 3.5
    assert ember.sort(s).values.item() == 3.5 and ember.sort(s).indices.item() == 0
    assert ember.topk(s, 1).values.item() == 3.5
    assert ember.kthvalue(s, 1).indices.item() == 0
    assert ember.median(s).item() == 3.5
    assert ember.mode(s).values.item() == 3.5


# ---------------------------------------------------------------- max / min / argmax / aminmax
def test_max_min_forms():
    for dtype in FLOATS + INTS + [ember.bool]:
        for name, t, a in variants((3, 4, 5), dtype):
            assert ember.max(t).shape == () and ember.max(t).item() == a.max()
            assert t.min().item() == a.min()
            for dim in (0, 1, -1):
                for keepdim in (False, True):
                    for f, nf, af in ((ember.max, np.max, np.argmax), (ember.min, np.min, np.argmin)):
                        r = f(t, dim, keepdim)
                        assert isinstance(r, ember.return_types.max if f is ember.max else ember.return_types.min)
                        close(r.values, nf(a, axis=dim, keepdims=keepdim))
                        assert r.indices.dtype is ember.int64
                        close(r.indices, af(a, axis=dim, keepdims=keepdim))
                        v, i = r
                        assert v is r.values and i is r.indices
    a = ember.tensor([[1., 5.], [7., 2.]])
    b = ember.tensor([3., 3.])
    close(ember.max(a, b), np.maximum(N(a), N(b)))
    close(ember.min(a, other=b), np.minimum(N(a), N(b)))
    close(a.max(b), np.maximum(N(a), N(b)))
    r = a.max(dim=1, keepdim=True)
    close(r.values, [[5.], [7.]])


def test_ties_and_nan():
    t = ember.tensor([[1, 3, 3, 0, 0], [2, 2, 2, 2, 2]])
    close(ember.argmax(t, 1), [1, 0])
    close(ember.argmin(t, 1), [3, 0])
    close(ember.max(t, 1).indices, [1, 0])
    close(ember.argmax(t), 1)
    f = ember.tensor([[1., float("nan"), 2., float("nan")], [3., 4., 0., 4.]])
    close(ember.max(f, 1).values, [np.nan, 4.])
    close(ember.max(f, 1).indices, [1, 1])
    close(ember.min(f, 1).indices, [1, 2])
    close(ember.argmax(f, 1), [1, 1])
    assert math.isnan(ember.max(f).item()) and math.isnan(ember.amin(f).item())


def test_argmax_argmin():
    for dtype in FLOATS + INTS:
        for name, t, a in variants((3, 4, 5), dtype):
            close(ember.argmax(t), np.argmax(a))
            close(t.argmin(), np.argmin(a))
            close(ember.argmax(t, keepdim=True), np.argmax(a).reshape(1, 1, 1))
            for dim in (0, 2, -2):
                close(ember.argmax(t, dim), np.argmax(a, axis=dim))
                close(ember.argmin(t, dim, keepdim=True), np.argmin(a, axis=dim, keepdims=True))


def test_aminmax():
    for dtype in FLOATS + INTS + [ember.bool]:
        for name, t, a in variants((3, 4, 5), dtype):
            r = ember.aminmax(t)
            assert isinstance(r, ember.return_types.aminmax)
            close(r.min, a.min())
            close(r.max, a.max())
            r = t.aminmax(dim=1, keepdim=True)
            close(r.min, a.min(axis=1, keepdims=True))
            close(r.max, a.max(axis=1, keepdims=True))


# ---------------------------------------------------------------- var / std / norm
def test_var_std():
    for dtype in FLOATS + [ember.complex64]:
        for name, t, a in variants((3, 4, 5), dtype):
            a = a.astype(np.complex128 if dtype.is_complex else np.float64)
            rd = ember.float32 if dtype is ember.complex64 else dtype
            for dim in (None, 0, (0, 2), -1):
                ax = np_axis(dim)
                for keepdim in (False, True):
                    close(ember.var(t, dim, keepdim=keepdim), np.var(a, axis=ax, ddof=1, keepdims=keepdim), rd)
                    close(ember.std(t, dim, keepdim=keepdim), np.std(a, axis=ax, ddof=1, keepdims=keepdim), rd)
                close(ember.var(t, dim, correction=0), np.var(a, axis=ax), rd)
                close(ember.var(t, dim, False), np.var(a, axis=ax), rd)
                close(ember.std(t, dim, unbiased=True), np.std(a, axis=ax, ddof=1), rd)
                close(t.var(dim, correction=2.5), np.var(a, axis=ax, ddof=2.5), rd)
            close(ember.var(t, False), np.var(a), rd)
            v, m = ember.var_mean(t, 1, correction=0, keepdim=True)
            close(v, np.var(a, axis=1, keepdims=True), rd)
            close(m, np.mean(a, axis=1, keepdims=True), dtype)
            s, m = ember.std_mean(t)
            close(s, np.std(a, ddof=1), rd)
            close(m, np.mean(a), dtype)
    assert type(ember.var_mean(ember.ones(3))) is tuple


def test_var_degrees_of_freedom_warning():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        r = ember.var(ember.ones(1))
    assert math.isnan(r.item())
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom"):
        ember.std(ember.ones(3), 0, correction=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.var(ember.ones(3))
    with pytest.raises(TypeError):
        ember.var(ember.ones(3), unbiased=True, correction=1)


def test_norm():
    for dtype in FLOATS + [ember.complex64]:
        for name, t, a in variants((3, 4, 5), dtype):
            rd = ember.float32 if dtype is ember.complex64 else dtype
            x = np.abs(a.astype(np.complex128 if dtype.is_complex else np.float64))
            close(ember.norm(t), np.sqrt((x ** 2).sum()), rd)
            close(t.norm(), np.sqrt((x ** 2).sum()), rd)
            close(ember.norm(t, "fro", dim=(0, 1)), np.sqrt((x ** 2).sum(axis=(0, 1))), rd)
            close(ember.norm(t, 1, 2, True), x.sum(axis=2, keepdims=True), rd)
            close(t.norm(3, 1), (x ** 3).sum(axis=1) ** (1 / 3), rd)
            close(ember.norm(t, float("inf"), 0), x.max(axis=0), rd)
            close(ember.norm(t, -float("inf")), x.min(), rd)
            close(ember.norm(t, 0, (1, 2)), (x != 0).sum(axis=(1, 2)), rd)
            close(ember.norm(t, 0.5), (x ** 0.5).sum() ** 2, rd)
    m = ember.tensor(RNG.standard_normal((4, 3)))
    close(ember.norm(m, "nuc"), np.linalg.norm(N(m), "nuc"), ember.float64)
    close(ember.norm(m, p=2, dtype=ember.float32), np.linalg.norm(N(m)), ember.float32)
    assert ember.norm(m, dtype=ember.float32).dtype is ember.float32


# ---------------------------------------------------------------- scans
def test_cumsum_cumprod():
    for dtype in FLOATS + INTS + [ember.bool]:
        for name, t, a in variants((3, 4, 2), dtype):
            for dim in (0, 1, -1):
                cd = np.int64 if a.dtype.kind in "iub" else a.dtype
                close(ember.cumsum(t, dim), np.cumsum(a, axis=dim, dtype=cd), ember.float64)
                close(t.cumprod(dim), np.cumprod(a, axis=dim, dtype=cd), ember.float64)
    t = ember.tensor([[1., 2.], [3., 4.]])
    close(ember.cumsum(t, 1, dtype=ember.float64), [[1., 3.], [3., 7.]])
    assert ember.cumsum(t, 1, dtype=ember.float64).dtype is ember.float64
    x = ember.ones(2, 3, dtype=ember.int32)
    r = x.cumsum_(1)
    assert r is x and x.dtype is ember.int32
    close(x, [[1, 2, 3], [1, 2, 3]])
    x.cumprod_(0)
    close(x, [[1, 2, 3], [1, 4, 9]])


def test_cummax_cummin():
    for dtype in FLOATS + INTS + [ember.bool]:
        for name, t, a in variants((3, 4, 2), dtype):
            for dim in (0, 1, -1):
                for f, acc in ((ember.cummax, np.maximum), (ember.cummin, np.minimum)):
                    r = f(t, dim)
                    close(r.values, acc.accumulate(a, axis=dim))
                    # index: the last position whose value equals the running extreme
                    ar = np.moveaxis(a, dim, -1)
                    want = np.zeros(ar.shape, np.int64)
                    for idx in np.ndindex(ar.shape[:-1]):
                        row, best, bi = ar[idx], None, 0
                        for j, v in enumerate(row):
                            if best is None or (v >= best if f is ember.cummax else v <= best):
                                best, bi = v, j
                            want[idx + (j,)] = bi
                    close(r.indices, np.moveaxis(want, -1, dim))
    r = ember.cummax(ember.tensor([1., float("nan"), 3., float("nan")]), 0)
    close(r.values, [1., np.nan, np.nan, np.nan])
    close(r.indices, [0, 1, 1, 3])


# ---------------------------------------------------------------- order statistics
def lower_median(x):
    s = np.sort(x)
    if np.isnan(s).any():
        return np.nan
    return s[(len(s) - 1) // 2]


def test_median():
    for dtype in FLOATS + INTS:
        for name, t, a in variants((3, 4, 5), dtype):
            close(ember.median(t), lower_median(a.reshape(-1)))
            for dim in (0, -1):
                for keepdim in (False, True):
                    r = ember.median(t, dim, keepdim)
                    assert isinstance(r, ember.return_types.median)
                    want = np.apply_along_axis(lower_median, dim, a)
                    close(r.values, np.expand_dims(want, dim) if keepdim else want)
                    # the index points at an element with the median's value
                    picked = np.take_along_axis(a, r.indices.numpy() if keepdim else
                                                np.expand_dims(r.indices.numpy(), dim), axis=dim)
                    close(picked.squeeze(dim) if not keepdim else picked, r.values.numpy())
    f = ember.tensor([[1., float("nan"), 2.], [3., 1., 2.], [float("nan")] * 3])
    close(ember.median(f, 1).values, [np.nan, 2., np.nan])
    close(ember.median(f, 1).indices, [1, 2, 0])
    close(ember.nanmedian(f, 1).values, [1., 2., np.nan])
    close(ember.nanmedian(f, 1).indices, [0, 2, 0])
    assert math.isnan(ember.median(f).item())
    assert ember.nanmedian(f).item() == 2.0
    assert ember.median(ember.tensor([1., 2., 3., 4.])).item() == 2.0
    assert math.isnan(ember.median(ember.zeros(0)).item())


def test_mode():
    t = ember.tensor([[2, 1, 2, 1, 3], [5, 5, 4, 4, 4]])
    r = ember.mode(t)
    close(r.values, [1, 4])
    close(r.indices, [3, 4])
    r = ember.mode(ember.tensor([2, 1, 2, 1, 3, 1, 2]), 0)
    assert r.values.item() == 1 and r.indices.item() == 5
    for dtype in (ember.int64, ember.float32, ember.bool):
        for name, t, a in variants((3, 4, 6), dtype):
            for dim in (0, -1):
                r = ember.mode(t, dim, keepdim=True)
                ar = np.moveaxis(a, dim, -1)
                vals = np.empty(ar.shape[:-1], ar.dtype)
                idxs = np.empty(ar.shape[:-1], np.int64)
                for idx in np.ndindex(ar.shape[:-1]):
                    u, c = np.unique(ar[idx], return_counts=True)
                    v = u[np.argmax(c)]
                    vals[idx] = v
                    idxs[idx] = np.flatnonzero(ar[idx] == v)[-1]
                close(r.values, np.expand_dims(np.moveaxis(vals[..., None], -1, dim).squeeze(dim), dim))
                close(r.indices, np.expand_dims(np.moveaxis(idxs[..., None], -1, dim).squeeze(dim), dim))


def test_kthvalue():
    for dtype in FLOATS + INTS:
        for name, t, a in variants((3, 4, 5), dtype):
            for dim in (0, 1, -1):
                n = a.shape[dim]
                for k in (1, n):
                    r = ember.kthvalue(t, k, dim)
                    close(r.values, np.sort(a, axis=dim).take(k - 1, axis=dim))
                    picked = np.take_along_axis(a, np.expand_dims(r.indices.numpy(), dim), axis=dim).squeeze(dim)
                    close(picked, r.values.numpy())
            assert t.kthvalue(2, 0, True).values.shape == (1,) + tuple(t.shape[1:])


def test_sort_argsort_msort():
    for dtype in FLOATS + INTS + [ember.bool]:
        for name, t, a in variants((3, 4, 5), dtype):
            for dim in (0, 1, -1):
                r = ember.sort(t, dim)
                assert isinstance(r, ember.return_types.sort)
                close(r.values, np.sort(a, axis=dim))
                close(r.indices, np.argsort(a, axis=dim, kind="stable"))
                r = t.sort(dim, descending=True)
                close(r.values, np.flip(np.sort(a, axis=dim), dim))
                # descending and stable: ties keep their original order
                key = -a.astype(np.float64) if dtype is not ember.bool else ~a
                close(r.indices, np.argsort(key, axis=dim, kind="stable"))
                close(ember.argsort(t, dim, descending=True, stable=True), r.indices.numpy())
                close(t.argsort(dim), np.argsort(a, axis=dim, kind="stable"))
            close(ember.msort(t), np.sort(a, axis=0))
    r = ember.sort(ember.tensor([3., float("nan"), 1.]), descending=True)
    close(r.values, [np.nan, 3., 1.])
    close(r.indices, [1, 0, 2])
    r = ember.sort(ember.tensor([3., float("nan"), 1.]))
    close(r.indices, [2, 0, 1])


def test_topk():
    for dtype in FLOATS + INTS:
        for name, t, a in variants((3, 4, 5), dtype):
            for dim in (0, -1):
                n = a.shape[dim]
                for k in (0, 1, n):
                    r = ember.topk(t, k, dim)
                    assert isinstance(r, ember.return_types.topk)
                    close(r.values, np.flip(np.sort(a, axis=dim), dim).take(range(k), axis=dim))
                    close(np.take_along_axis(a, r.indices.numpy(), axis=dim), r.values.numpy())
                    r = t.topk(k, dim, largest=False)
                    close(r.values, np.sort(a, axis=dim).take(range(k), axis=dim))
    r = ember.topk(ember.tensor([3., float("nan"), 1.]), 2)
    close(r.values, [np.nan, 3.])
    close(r.indices, [1, 0])


# ---------------------------------------------------------------- unique
def test_unique():
    for dtype in FLOATS + INTS + [ember.bool]:
        for name, t, a in variants((3, 4, 5), dtype):
            u, inv, cnt = np.unique(a, return_inverse=True, return_counts=True)
            close(ember.unique(t), u)
            r = ember.unique(t, return_inverse=True, return_counts=True)
            assert len(r) == 3
            close(r[0], u)
            close(r[1], inv.reshape(a.shape))
            close(r[2], cnt)
            o, c = t.unique(return_counts=True)
            close(c, cnt)
            o, i = ember.unique(t, sorted=False, return_inverse=True)
            close(i, inv.reshape(a.shape))
    m = ember.tensor([[1, 2], [1, 2], [0, 1]])
    o, i, c = ember.unique(m, dim=0, return_inverse=True, return_counts=True)
    close(o, [[0, 1], [1, 2]])
    close(i, [1, 1, 0])
    close(c, [1, 2])
    close(ember.unique(m, dim=1), N(m))
    o, i, c = ember.unique(S(3), return_inverse=True, return_counts=True)
    close(o, [3])
    assert i.shape == () and i.item() == 0
    o, i, c = ember.unique(ember.tensor([]), return_inverse=True, return_counts=True)
    assert o.shape == (0,) and i.dtype is ember.int64 and c.shape == (0,)
    nan = float("nan")
    assert ember.unique(ember.tensor([1., nan, nan])).shape == (3,)   # NaNs are distinct, as PyTorch
    assert ember.unique(ember.zeros(0, 3), dim=0).shape == (0, 3)


def test_unique_consecutive():
    t = ember.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    o, i, c = ember.unique_consecutive(t, return_inverse=True, return_counts=True)
    close(o, [1, 2, 3, 1, 2])
    close(i, [0, 0, 1, 1, 2, 3, 3, 4])
    close(c, [2, 2, 1, 2, 1])
    close(t.unique_consecutive(), [1, 2, 3, 1, 2])
    m = ember.tensor([[1, 2], [1, 2], [0, 1]])
    o, c = ember.unique_consecutive(m, dim=0, return_counts=True)
    close(o, [[1, 2], [0, 1]])
    close(c, [2, 1])
    o, i, c = ember.unique_consecutive(ember.tensor([]), return_inverse=True, return_counts=True)
    assert o.shape == (0,) and i.shape == (0,) and c.shape == (0,)
    # non-contiguous input
    x = ember.tensor([[1, 5], [1, 5], [2, 5]]).transpose(0, 1)
    close(ember.unique_consecutive(x), [1, 2, 5])


# ---------------------------------------------------------------- searchsorted / bucketize
def test_searchsorted():
    b = ember.tensor([1, 3, 5, 7, 9])
    v = ember.tensor([[3, 6, 9], [0, 10, 5]])
    close(ember.searchsorted(b, v), np.searchsorted(N(b), N(v)))
    close(ember.searchsorted(b, v, right=True), np.searchsorted(N(b), N(v), side="right"))
    close(ember.searchsorted(b, v, side="right"), np.searchsorted(N(b), N(v), side="right"))
    assert ember.searchsorted(b, v).dtype is ember.int64
    assert ember.searchsorted(b, v, out_int32=True).dtype is ember.int32
    r = ember.searchsorted(b, 6)
    assert r.shape == () and r.item() == 3
    assert ember.searchsorted(ember.tensor([1, 3, 5]), ember.tensor([3.5])).item() == 2
    bb = ember.tensor([[1., 3., 5.], [2., 4., 6.]])
    vv = ember.tensor([[3., 6.], [1., 5.]])
    close(ember.searchsorted(bb, vv), [[1, 3], [0, 2]])
    close(ember.searchsorted(bb.transpose(0, 1).contiguous().transpose(0, 1), vv, right=True), [[2, 3], [0, 2]])
    s = ember.tensor([5, 1, 3])
    close(ember.searchsorted(s, ember.tensor([3, 6]), sorter=ember.tensor([1, 2, 0])), [1, 3])
    out = ember.empty(2, 3, dtype=ember.int64)
    r = ember.searchsorted(b, v, out=out)
    assert r is out
    close(out, np.searchsorted(N(b), N(v)))


def test_bucketize():
    bnd = ember.tensor([1, 3, 5, 7, 9])
    x = ember.tensor([[3, 6], [9, 0]])
    close(ember.bucketize(x, bnd), np.searchsorted(N(bnd), N(x)))
    close(ember.bucketize(x, bnd, right=True), np.searchsorted(N(bnd), N(x), side="right"))
    assert ember.bucketize(x, bnd, out_int32=True).dtype is ember.int32
    assert ember.bucketize(3, bnd).item() == 1


# ---------------------------------------------------------------- out= and methods
def test_out_variants():
    t, a = make((3, 4), ember.float64)
    out = ember.empty(4, dtype=ember.float64)
    r = ember.sum(t, 0, out=out)
    assert r is out
    close(out, a.sum(axis=0), ember.float64)
    out = ember.empty(0, dtype=ember.float64)       # an empty out is resized silently
    ember.mean(t, 1, out=out)
    assert out.shape == (3,)
    close(out, a.mean(axis=1), ember.float64)
    with pytest.warns(UserWarning, match="resized"):
        ember.amax(t, 1, out=ember.empty(7, dtype=ember.float64))
    v, i = ember.empty(3, dtype=ember.float64), ember.empty(3, dtype=ember.int64)
    r = ember.max(t, 1, out=(v, i))
    assert r.values is v and r.indices is i
    close(i, a.argmax(axis=1))
    v, i = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int64)
    ember.sort(t, 0, out=(v, i))
    close(v, np.sort(a, axis=0))
    out = ember.empty((), dtype=ember.float64)
    ember.max(t, out=out)
    assert out.item() == a.max()
    out = ember.empty(3, 4, dtype=ember.float64)
    ember.cumsum(t, 1, out=out)
    close(out, np.cumsum(a, axis=1), ember.float64)
    out = ember.empty(3, dtype=ember.int32)       # sum writes into a lower int dtype, as PyTorch
    ember.sum(ember.ones(3, 2, dtype=ember.int64), 1, out=out)
    close(out, [2, 2, 2])
    out = ember.empty((), dtype=ember.float64)
    ember.var(t, out=out)
    close(out, np.var(a, ddof=1), ember.float64)
    out = ember.empty(3, 4, dtype=ember.float64)
    assert ember.msort(t, out=out) is out
    close(out, np.sort(a, axis=0))


def test_return_types():
    r = ember.return_types.max(values=1, indices=2)
    assert r == (1, 2) and r.values == 1 and r.indices == 2
    assert repr(ember.max(ember.tensor([[1, 2]]), 1)) == \
        "ember.return_types.max(\nvalues=tensor([2]),\nindices=tensor([1]))"
    assert repr(ember.aminmax(ember.tensor([1, 2]))).startswith("ember.return_types.aminmax(\nmin=tensor(1),")
    for name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"):
        assert getattr(ember.return_types, name)._fields == ("values", "indices")


def test_tensor_methods_exist():
    t = ember.ones(2, 3)
    for name in ("sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
                 "aminmax", "var", "std", "norm", "logsumexp", "all", "any", "count_nonzero", "cumsum", "cumsum_",
                 "cumprod", "cumprod_", "cummax", "cummin", "median", "nanmedian", "mode", "sort", "argsort",
                 "msort", "topk", "kthvalue", "unique", "unique_consecutive"):
        assert callable(getattr(t, name)), name
        assert getattr(ember.Tensor, name).__doc__, name


def test_nan_reductions():
    f = ember.tensor([[1., float("nan"), 2.], [float("nan")] * 3])
    close(ember.nansum(f, 1), [3., 0.])
    close(ember.nanmean(f, 1), [1.5, np.nan])
    close(f.nansum(), 3.)
    with pytest.raises(RuntimeError, match="nansum does not support complex inputs"):
        ember.nansum(ember.ones(2, dtype=ember.complex64))


def test_logsumexp_stable():
    t = ember.tensor([[1000., 1000.], [-float("inf"), -float("inf")], [float("inf"), 1.]])
    close(ember.logsumexp(t, 1), [1000 + np.log(2), -np.inf, np.inf], ember.float32)
    close(ember.logsumexp(ember.tensor([[1., 2.], [3., 4.]]), (0, 1)), np.log(np.exp([1., 2., 3., 4.]).sum()),
          ember.float32)


# ---------------------------------------------------------------- errors
E = ember.zeros(0, 3)
A = ember.arange(6).reshape(2, 3)
F = ember.ones(2, 3)
C = ember.ones(3, dtype=ember.complex64)
B = ember.tensor([True, False])

ERRORS = [
    (lambda: ember.sum(A, 2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda: ember.sum(A, (0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: ember.sum(S(3), 1), IndexError, r"expected to be in range of \[-1, 0\], but got 1"),
    (lambda: ember.sum(3), TypeError, "must be Tensor"),
    (lambda: ember.sum(A, dim=1.5), TypeError, "dim"),
    (lambda: ember.mean(A), RuntimeError, r"mean\(\): could not infer output dtype. Input dtype must be either a "
                                          r"floating point or complex dtype. Got: Long"),
    (lambda: ember.mean(B), RuntimeError, "Got: Bool"),
    (lambda: ember.mean(F, dtype=ember.int64), RuntimeError, "Optional dtype must be either a floating point"),
    (lambda: ember.nanmean(A), RuntimeError, "nanmean"),
    (lambda: ember.max(E), RuntimeError, r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0. "
                                         r"Specify the reduction dim with the 'dim' argument."),
    (lambda: ember.min(E), RuntimeError, r"min\(\): Expected reduction dim to be specified"),
    (lambda: ember.max(E, 0), IndexError, r"max\(\): Expected reduction dim 0 to have non-zero size."),
    (lambda: ember.max(A, 2), IndexError, "Dimension out of range"),
    (lambda: ember.max(C, 0), RuntimeError, r"max\(\): does not support complex input"),
    (lambda: ember.max(C), RuntimeError, "not implemented for 'ComplexFloat'"),
    (lambda: ember.amax(E), RuntimeError, r"amax\(\): Expected reduction dim to be specified"),
    (lambda: ember.amax(E, 0), IndexError, r"amax\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda: ember.amin(C), RuntimeError, "not implemented for 'ComplexFloat'"),
    (lambda: ember.argmax(E), IndexError, r"argmax\(\): Expected reduction dim to be specified"),
    (lambda: ember.argmin(E, 0), IndexError, r"argmin\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda: ember.argmax(B), RuntimeError, r"argmax\(\): does not support bool input"),
    (lambda: ember.argmax(C), RuntimeError, r"argmax\(\): does not support complex input"),
    (lambda: ember.argmax(A, (0, 1)), TypeError, "must be int"),
    (lambda: ember.aminmax(E), RuntimeError, "cannot compute aminmax over an empty dimension"),
    (lambda: ember.aminmax(E, dim=0), IndexError, "Expected reduction dim 0 to have non-zero size"),
    (lambda: ember.var(A), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda: ember.std(B), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda: ember.norm(A), RuntimeError, "linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                          "Got Long"),
    (lambda: ember.norm(F, dtype=ember.int64), RuntimeError, "dtype should be floating point or complex"),
    (lambda: ember.norm(F, "abc"), RuntimeError, "Order abc not supported"),
    (lambda: ember.norm(ember.ones(2, 2, 2), "fro", (0, 1, 2)), RuntimeError, "dim must be a 2-tuple"),
    (lambda: ember.norm(E, float("inf")), RuntimeError, "cannot compute the inf norm on an empty tensor"),
    (lambda: ember.norm(E, -1, 0), RuntimeError, "cannot compute the -1 norm on the dimension 0"),
    (lambda: ember.cumsum(A, 2), IndexError, "Dimension out of range"),
    (lambda: ember.cummax(C, 0), RuntimeError, "not implemented for 'ComplexFloat'"),
    (lambda: ember.median(E, 0), IndexError, r"median\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda: ember.median(B), RuntimeError, "not implemented for 'Bool'"),
    (lambda: ember.median(C, 0), RuntimeError, "not implemented for 'ComplexFloat'"),
    (lambda: ember.mode(E, 0), IndexError, r"mode\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda: ember.sort(C), RuntimeError, "Sort does not support complex dtypes"),
    (lambda: ember.sort(A, 2), IndexError, "Dimension out of range"),
    (lambda: ember.topk(A, 4), RuntimeError, "selected index k out of range"),
    (lambda: ember.topk(A, -1), RuntimeError, "selected index k out of range"),
    (lambda: ember.topk(A, 2, 5), IndexError, "Dimension out of range"),
    (lambda: ember.topk(B, 1), RuntimeError, "topk does not support bool dtypes"),
    (lambda: ember.topk(C, 1), RuntimeError, "topk does not support complex dtypes"),
    (lambda: ember.kthvalue(A, 0), RuntimeError, r"kthvalue\(\): selected number k out of range for dimension 1"),
    (lambda: ember.kthvalue(A, 4), RuntimeError, "selected number k out of range for dimension 1"),
    (lambda: ember.kthvalue(E, 1, 0), IndexError, "Expected reduction dim 0 to have non-zero size"),
    (lambda: ember.unique(C), RuntimeError, "not implemented for 'ComplexFloat'"),
    (lambda: ember.unique(S(3), dim=0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: ember.unique(A, dim=2), IndexError, "Dimension out of range"),
    (lambda: ember.searchsorted(S(3.), ember.tensor([3.])), RuntimeError,
     "boundaries tensor should have positive dimension, but got 0 dimension"),
    (lambda: ember.searchsorted(ember.tensor([1, 3]), ember.tensor([3]), side="middle"), RuntimeError,
     "side can only be 'left' or 'right' but got middle"),
    (lambda: ember.searchsorted(ember.tensor([1, 3]), ember.tensor([3]), side="left", right=True), RuntimeError,
     "side and right can't be set to opposites"),
    (lambda: ember.searchsorted(ember.tensor([[1, 3, 5], [2, 4, 6]]), ember.tensor([3, 6])), RuntimeError,
     r"boundaries tensor should be 1 dimension or the first N-1 dimensions .* \[2, 3\] and input value tensor \[2\]"),
    (lambda: ember.searchsorted(ember.tensor([[1, 3], [2, 4]]), 3), RuntimeError,
     "input value can be a scalar only when boundaries tensor dimension is 1"),
    (lambda: ember.searchsorted(ember.tensor([1, 3]), ember.tensor([3]), sorter=ember.tensor([0])), RuntimeError,
     "boundary and sorter must have the same size"),
    (lambda: ember.searchsorted(ember.tensor([1, 3]), ember.tensor([3]), sorter=ember.tensor([0, 1], dtype=ember.int32)),
     RuntimeError, "sorter must be a tensor of long dtype but got dtype Int"),
    (lambda: ember.searchsorted(ember.tensor([1, 3]), ember.tensor([3]), sorter=ember.tensor([0, 5])), RuntimeError,
     "sorter index out of range"),
    (lambda: ember.searchsorted(ember.tensor([1, 3]), ember.tensor([3]), out=ember.empty(1, dtype=ember.int32)),
     RuntimeError, "output tensor's dtype is wrong"),
    (lambda: ember.bucketize(ember.tensor([1]), ember.tensor([[1, 3]])), RuntimeError,
     r"boundaries tensor must be 1 dimension, but got dim\(2\)"),
    (lambda: ember.ones(2, dtype=ember.int64).cumsum_(0, dtype=ember.float32), RuntimeError, "can't be cast"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, cls, msg = ERRORS[i]
    with pytest.raises(cls, match=msg):
        fn()


def test_failed_inplace_writes_nothing():
    x = ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError):
        x.cumsum_(0, dtype=ember.float64)
    close(x, [1, 2, 3])
    assert x._version == 0


# ---------------------------------------------------------------- optional: PyTorch itself, where installed
def test_against_torch_where_installed():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    t, ta = ember.tensor(a), torch.tensor(a)
    close(ember.var(t, 1), ta.var(1).numpy(), ember.float32)
    close(ember.norm(t, 3, 0), ta.norm(3, 0).numpy(), ember.float32)
    close(ember.logsumexp(t, 1), torch.logsumexp(ta, 1).numpy(), ember.float32)
    close(ember.sort(t, 0, descending=True).indices, torch.sort(ta, dim=0, descending=True, stable=True).indices.numpy())
