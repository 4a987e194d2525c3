"""Op database entries: the remaining tensor operators written as composites in ``ember._more_ops``
(bincount, histc, quantile, isin, gcd, nextafter, frexp, logaddexp, logcumsumexp, trapezoid,
combinations, the *_scatter family, index_reduce, ...). They are Python functions over ember
ops, not dispatcher ops, so each entry names the function (``op``) and a numpy reference."""
from __future__ import annotations

import math

import numpy as np

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import FLOATING, INTEGRAL, REAL, ALL_DTYPES, seed_for, unary_samples, binary_samples, with_grad

__all__ = ["op_db"]

_F = ("float32", "float64")


def _mk(op, device, dtype, shape, i, **kw):
    return make_tensor(shape, device=device, dtype=dtype, seed=seed_for(op, dtype, i), **kw)


# ---------------------------------------------------------------- bincount / histc
def _bincount_samples(op, device, dtype, requires_grad=False):
    for i, (name, n) in enumerate((("empty", 0), ("1-D", 7), ("longer", 30))):
        x = _mk(op, device, dtype, (n,), i, low=0, high=9)
        yield SampleInput(x, name=name)
        yield SampleInput(x, (), {"minlength": 12}, name=name + ", minlength")
    x = _mk(op, device, dtype, (12,), 9, low=0, high=9, noncontiguous=True)
    w = make_tensor((12,), device=device, dtype=ember.float64, seed=3)
    yield SampleInput(x, (w,), name="noncontiguous, weights")


def _bincount_ref(x, weights=None, minlength=0):
    return np.bincount(x.astype(np.int64), weights, minlength)


def _bincount_errors(op, device):
    x = make_tensor((3,), device=device, dtype=ember.int64, low=0, high=4, seed=1)
    yield ErrorInput(SampleInput(x.reshape(1, 3)), RuntimeError, r"bincount only supports 1-d non-negative integral")
    yield ErrorInput(SampleInput(x - 5), RuntimeError, r"bincount only supports 1-d non-negative integral")
    yield ErrorInput(SampleInput(x.float()), NotImplementedError, r"\"bincount_cpu\" not implemented for 'Float'")
    yield ErrorInput(SampleInput(x, (), {"minlength": -1}), RuntimeError, r"minlength should be >= 0")


def _histc_samples(op, device, dtype, requires_grad=False):
    for i, (name, shape) in enumerate((("0-dim", ()), ("1-D", (20,)), ("2-D", (4, 6)))):
        x = _mk(op, device, dtype, shape, i)
        yield SampleInput(x, (), {"bins": 6}, name=name + ", data range")
        yield SampleInput(x, (), {"bins": 4, "min": -3, "max": 3}, name=name + ", given range")
    yield SampleInput(_mk(op, device, dtype, (4, 6), 8).t(), (), {"bins": 5, "min": -9, "max": 9}, name="transposed")
    yield SampleInput(_mk(op, device, dtype, (0,), 9), (), {"bins": 3}, name="empty")


def _histc_ref(x, bins=100, min=0, max=0):  # noqa: A002
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return np.histogram(x.reshape(-1), bins=bins, range=(lo, hi))[0].astype(x.dtype)


def _histc_errors(op, device):
    x = make_tensor((5,), device=device, dtype=ember.float32, seed=1)
    yield ErrorInput(SampleInput(x, (), {"bins": 3, "min": 2, "max": 1}), RuntimeError, r"max must be larger than min")
    yield ErrorInput(SampleInput(x.long()), NotImplementedError, r"not implemented for 'Long'")
    yield ErrorInput(SampleInput(x, (), {"bins": 0}), RuntimeError, r"bins must be > 0")


# ---------------------------------------------------------------- quantile
def _quantile_samples(op, device, dtype, requires_grad=False):
    g = lambda t: with_grad(t, requires_grad)
    q = ember.tensor([0.0, 0.3, 0.5, 1.0], dtype=dtype, device=device)
    yield SampleInput(g(_mk(op, device, dtype, (), 0)), (0.5,), name="0-dim")
    yield SampleInput(g(_mk(op, device, dtype, (7,), 1)), (0.25,), name="1-D")
    yield SampleInput(g(_mk(op, device, dtype, (3, 5), 2)), (q,), {"dim": 1}, name="q tensor, dim=1")
    yield SampleInput(g(_mk(op, device, dtype, (3, 5), 3)), (0.6,), {"dim": 0, "keepdim": True},
                      name="dim=0, keepdim")
    yield SampleInput(g(_mk(op, device, dtype, (5, 3), 4).t()), (q,), {"dim": -1, "interpolation": "nearest"},
                      name="transposed, nearest")
    for interp in ("lower", "higher", "midpoint"):
        yield SampleInput(g(_mk(op, device, dtype, (3, 4), 5, noncontiguous=True)), (0.4,),
                          {"dim": 1, "interpolation": interp}, name=f"noncontiguous, {interp}")
    nanx = ember.tensor([[1.0, math.nan, 3.0, 0.5], [2.0, 4.0, -1.0, 0.0], [math.nan] * 4], dtype=dtype,
                        device=device)
    yield SampleInput(nanx, (q,), {"dim": 1}, name="NaN")


def _np_quantile(nan):
    fn = np.nanquantile if nan else np.quantile

    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fn(x, np.asarray(q), axis=dim, keepdims=keepdim, method=interpolation)
        return np.asarray(r, dtype=x.dtype)
    return ref


def _quantile_errors(op, device):
    x = make_tensor((3, 4), device=device, dtype=ember.float32, seed=1)
    name = op.name
    yield ErrorInput(SampleInput(x, (1.5,)), RuntimeError, rf"{name}\(\) q must be in the range \[0, 1\]")
    yield ErrorInput(SampleInput(x.long(), (0.5,)), RuntimeError, rf"{name}\(\) input tensor must be either float")
    yield ErrorInput(SampleInput(x, (0.5,), {"interpolation": "foo"}), RuntimeError,
                     rf"{name}\(\) interpolation must be one of")
    yield ErrorInput(SampleInput(x, (ember.tensor([0.5], dtype=ember.float64),)), RuntimeError,
                     rf"{name}\(\) q tensor must be same dtype as the input tensor")
    yield ErrorInput(SampleInput(x[:0], (0.5,)), RuntimeError, rf"{name}\(\) input tensor must be non-empty")


# ---------------------------------------------------------------- isin
def _isin_samples(op, device, dtype, requires_grad=False):
    a = _mk(op, device, dtype, (3, 4), 0, low=0, high=6)
    b = _mk(op, device, dtype, (5,), 1, low=0, high=6)
    yield SampleInput(a, (b,), name="2-D in 1-D")
    yield SampleInput(a, (b,), {"invert": True}, name="invert")
    yield SampleInput(_mk(op, device, dtype, (), 2, low=0, high=6), (b.reshape(5, 1),), name="0-dim in 2-D")
    yield SampleInput(a, (b[:0],), name="empty test elements")
    yield SampleInput(_mk(op, device, dtype, (4, 3), 3, low=0, high=6).t(), (b,), name="transposed")


def _isin_ref(a, b, assume_unique=False, invert=False):
    return np.isin(a, b, invert=invert)


# ---------------------------------------------------------------- frexp / trapezoid / combinations
def _frexp_samples(op, device, dtype, requires_grad=False):
    yield from unary_samples(op, device, dtype)
    yield SampleInput(ember.tensor([0.0, -0.0, 1.0, 0.5, -7.25, 1024.0, math.inf, -math.inf, math.nan], dtype=dtype,
                                   device=device), name="special values")


def _frexp_ref(x):
    m, e = np.frexp(x)
    return m, e.astype(np.int32)


def _trapz_samples(op, device, dtype, requires_grad=False):
    g = lambda t: with_grad(t, requires_grad)
    yield SampleInput(g(_mk(op, device, dtype, (5,), 0)), name="1-D")
    yield SampleInput(g(_mk(op, device, dtype, (3, 4), 1)), (), {"dim": 0}, name="dim=0")
    yield SampleInput(g(_mk(op, device, dtype, (3, 4), 2, noncontiguous=True)), (), {"dx": 0.5},
                      name="noncontiguous, dx")
    xs = ember.tensor([0.0, 0.5, 2.0, 3.0], dtype=dtype, device=device)
    yield SampleInput(g(_mk(op, device, dtype, (4, 3), 3).t()), (xs,), name="transposed, x")
    yield SampleInput(g(_mk(op, device, dtype, (2, 1), 4)), name="one sample")


def _trapz_ref(cumulative):
    def ref(y, x=None, dx=None, dim=-1):
        y = np.moveaxis(y, dim, -1)
        pairs = (y[..., 1:] + y[..., :-1]) / 2
        w = np.diff(x) if x is not None else (1.0 if dx is None else dx)
        r = pairs * w
        r = np.cumsum(r, -1) if cumulative else r.sum(-1)
        return np.moveaxis(r, -1, dim) if cumulative else r
    return ref


def _combinations_samples(op, device, dtype, requires_grad=False):
    g = lambda t: with_grad(t, requires_grad)
    x = _mk(op, device, dtype, (4,), 0)
    for r in (1, 2, 3):
        yield SampleInput(g(x), (r,), name=f"r={r}")
        yield SampleInput(g(x), (r,), {"with_replacement": True}, name=f"r={r}, with replacement")
    yield SampleInput(g(_mk(op, device, dtype, (8,), 1)[::2]), (2,), name="strided")


def _combinations_ref(x, r=2, with_replacement=False):
    import itertools
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(gen(range(x.shape[0]), r))
    return x[np.array(rows, dtype=np.int64).reshape(len(rows), r)] if rows else np.empty((0, r), x.dtype)


# ---------------------------------------------------------------- *_scatter, index_reduce
def _select_scatter_samples(op, device, dtype, requires_grad=False):
    g = lambda t: with_grad(t, requires_grad)
    yield SampleInput(g(_mk(op, device, dtype, (3, 4), 0)), (g(_mk(op, device, dtype, (4,), 1)), 0, 1),
                      name="row")
    yield SampleInput(g(_mk(op, device, dtype, (4, 3), 2).t()), (g(_mk(op, device, dtype, (3,), 3)), 1, -1),
                      name="transposed, column")
    yield SampleInput(g(_mk(op, device, dtype, (5,), 4)), (g(_mk(op, device, dtype, (), 5)), 0, 2), name="1-D")


def _select_scatter_ref(x, src, dim, index):
    r = x.copy()
    key = [slice(None)] * r.ndim
    key[dim] = index
    r[tuple(key)] = src
    return r


def _slice_scatter_samples(op, device, dtype, requires_grad=False):
    g = lambda t: with_grad(t, requires_grad)
    yield SampleInput(g(_mk(op, device, dtype, (5, 4), 0)), (g(_mk(op, device, dtype, (2, 4), 1)), 0, 1, 5, 2),
                      name="step 2")
    yield SampleInput(g(_mk(op, device, dtype, (4, 3), 2).t()), (g(_mk(op, device, dtype, (3, 2), 3)),),
                      {"dim": 1, "start": 2}, name="transposed, dim=1")
    yield SampleInput(g(_mk(op, device, dtype, (3, 4), 4)), (g(_mk(op, device, dtype, (0, 4), 5)), 0, 1, 1),
                      name="empty slice")


def _slice_scatter_ref(x, src, dim=0, start=None, end=None, step=1):
    r = x.copy()
    key = [slice(None)] * r.ndim
    key[dim] = slice(start, end, step)
    r[tuple(key)] = src
    return r


def _diagonal_scatter_samples(op, device, dtype, requires_grad=False):
    g = lambda t: with_grad(t, requires_grad)
    yield SampleInput(g(_mk(op, device, dtype, (3, 4), 0)), (g(_mk(op, device, dtype, (3,), 1)),), name="main")
    yield SampleInput(g(_mk(op, device, dtype, (3, 4), 2)), (g(_mk(op, device, dtype, (3,), 3)), 1), name="offset 1")
    yield SampleInput(g(_mk(op, device, dtype, (2, 3, 3), 4)), (g(_mk(op, device, dtype, (2, 3), 5)), 0, 1, 2),
                      name="batched, dims 1 2")


def _diagonal_scatter_ref(x, src, offset=0, dim1=0, dim2=1):
    r = np.moveaxis(x.copy(), (dim1, dim2), (-2, -1)).copy()
    n, m = r.shape[-2:]
    i = np.arange(n)
    j = i + offset
    ok = (j >= 0) & (j < m)
    r[..., i[ok], j[ok]] = src
    return np.moveaxis(r, (-2, -1), (dim1, dim2))


def _index_reduce_samples(op, device, dtype, requires_grad=False):
    x = _mk(op, device, dtype, (4, 3), 0, low=1, high=4)
    src = _mk(op, device, dtype, (5, 3), 1, low=1, high=4)
    idx = ember.tensor([0, 2, 0, 3, 2], device=device)
    for red in ("prod", "mean", "amax", "amin"):
        yield SampleInput(x, (0, idx, src, red), name=red)
        yield SampleInput(x, (0, idx, src, red), {"include_self": False}, name=red + ", exclude self")
    yield SampleInput(x.t(), (1, idx, src.t(), "amax"), name="transposed, dim=1")


def _index_reduce_ref(x, dim, idx, src, reduce, include_self=True):
    x = np.moveaxis(x.copy(), dim, 0)
    src = np.moveaxis(src, dim, 0)
    out = x.copy()
    for k in set(idx.tolist()):
        rows = src[idx == k]
        vals = np.concatenate([x[k:k + 1], rows]) if include_self else rows
        if reduce == "prod":
            r = vals.prod(0)
        elif reduce == "amax":
            r = vals.max(0)
        elif reduce == "amin":
            r = vals.min(0)
        else:
            r = vals.sum(0) / len(vals)
            if x.dtype.kind in "iu":
                r = np.trunc(r)
        out[k] = r
    return np.moveaxis(out, 0, dim)


# ---------------------------------------------------------------- gcd / heaviside / nextafter
def _heaviside_samples(op, device, dtype, requires_grad=False):
    for s in binary_samples(op, device, dtype, scalars=False):
        yield s
    z = ember.tensor([-1.0, 0.0, 2.0, -0.0], device=device).to(dtype)
    yield SampleInput(z, (ember.tensor([7.0], device=device).to(dtype),), name="zeros")


def _nextafter_samples(op, device, dtype, requires_grad=False):
    yield from binary_samples(op, device, dtype, scalars=False)
    a = ember.tensor([1.0, 0.0, -0.0, 1.0, -3.0, math.inf, 2.0, math.nan], dtype=dtype, device=device)
    b = ember.tensor([2.0, 1.0, -1.0, 0.0, -math.inf, 0.0, 2.0, 1.0], dtype=dtype, device=device)
    yield SampleInput(a, (b,), name="special values")


def _logaddexp_samples(op, device, dtype, requires_grad=False):
    yield from binary_samples(op, device, dtype, requires_grad, scalars=False)
    a = ember.tensor([-1000.0, -math.inf, math.inf, 3.0, math.nan], dtype=dtype, device=device)
    b = ember.tensor([-1000.0, -math.inf, math.inf, -math.inf, 1.0], dtype=dtype, device=device)
    yield SampleInput(a, (b,), name="special values")


def _np_logaddexp2(a, b):
    return np.logaddexp2(a, b)


def _logcumsumexp_samples(op, device, dtype, requires_grad=False):
    for s in unary_samples(op, device, dtype, requires_grad):
        yield SampleInput(s.input, (0 if s.input.dim() else 0,), name=s.name)
        if s.input.dim() > 1:
            yield SampleInput(s.input, (-1,), name=s.name + ", dim=-1")
    yield SampleInput(ember.tensor([-1000.0, 0.0, -math.inf, 5.0], dtype=dtype, device=device), (0,),
                      name="far apart")


def _logcumsumexp_ref(x, dim):
    if x.ndim == 0:
        return x.copy()
    with np.errstate(all="ignore"):
        return np.logaddexp.accumulate(x.astype(np.float64), axis=dim).astype(x.dtype)


def _gcd_errors(op, device):
    x = make_tensor((3,), device=device, dtype=ember.float32, seed=1)
    yield ErrorInput(SampleInput(x, (x,)), NotImplementedError, rf"\"{op.name}_cpu\" not implemented for 'Float'")


def _build():
    ag = dict(supports_autograd=True)
    ops = []
    add = ops.append
    add(OpInfo("bincount", op=ember.bincount, ref=_bincount_ref, dtypes=INTEGRAL, sample_inputs=_bincount_samples,
               error_inputs=_bincount_errors, exact=True))
    add(OpInfo("histc", op=ember.histc, ref=_histc_ref, dtypes=_F, sample_inputs=_histc_samples,
               error_inputs=_histc_errors, supports_out=True, exact=True))
    add(OpInfo("quantile", op=ember.quantile, ref=_np_quantile(False), dtypes=_F, sample_inputs=_quantile_samples,
               error_inputs=_quantile_errors, supports_out=True, **ag))
    add(OpInfo("nanquantile", op=ember.nanquantile, ref=_np_quantile(True), dtypes=_F,
               sample_inputs=_quantile_samples, error_inputs=_quantile_errors, supports_out=True, **ag))
    add(OpInfo("isin", op=ember.isin, ref=_isin_ref, dtypes=REAL, sample_inputs=_isin_samples, supports_out=True,
               exact=True))
    add(OpInfo("gcd", op=ember.gcd, ref=np.gcd, dtypes=("int8", "int16", "int32", "int64"),
               sample_inputs=lambda op, device, dtype, requires_grad=False: binary_samples(op, device, dtype),
               error_inputs=_gcd_errors, supports_out=True, exact=True, inplace=lambda t, *a: t.gcd_(*a)))
    add(OpInfo("lcm", op=ember.lcm, ref=np.lcm, dtypes=("int16", "int32", "int64"),
               sample_inputs=lambda op, device, dtype, requires_grad=False: binary_samples(op, device, dtype),
               error_inputs=_gcd_errors, supports_out=True, exact=True, inplace=lambda t, *a: t.lcm_(*a)))
    add(OpInfo("heaviside", op=ember.heaviside, ref=np.heaviside, dtypes=("float32", "float64", "int32", "int64"),
               sample_inputs=_heaviside_samples, supports_out=True, exact=True))
    add(OpInfo("nextafter", op=ember.nextafter, ref=np.nextafter, dtypes=_F, sample_inputs=_nextafter_samples,
               supports_out=True, exact=True))
    add(OpInfo("ldexp", op=ember.ldexp, ref=lambda a, b: a * np.power(2.0, b).astype(a.dtype), dtypes=_F,
               sample_inputs=lambda op, device, dtype, requires_grad=False: binary_samples(
                   op, device, dtype, requires_grad, low=-3, high=3, rhs_dtype="int32", scalars=False),
               supports_out=True, **ag))
    add(OpInfo("frexp", op=ember.frexp, ref=_frexp_ref, dtypes=FLOATING[:1] + _F, sample_inputs=_frexp_samples,
               exact=True))
    add(OpInfo("logaddexp", op=ember.logaddexp, ref=np.logaddexp, dtypes=_F, sample_inputs=_logaddexp_samples,
               supports_out=True, **ag))
    add(OpInfo("logaddexp2", op=ember.logaddexp2, ref=_np_logaddexp2, dtypes=_F, sample_inputs=_logaddexp_samples,
               supports_out=True, **ag))
    add(OpInfo("logcumsumexp", op=ember.logcumsumexp, ref=_logcumsumexp_ref, dtypes=_F,
               sample_inputs=_logcumsumexp_samples, supports_out=True, **ag))
    add(OpInfo("deg2rad", op=ember.deg2rad, ref=lambda a: np.deg2rad(a), dtypes=_F,
               sample_inputs=unary_samples, supports_out=True, inplace=lambda t: t.deg2rad_(), **ag))
    add(OpInfo("rad2deg", op=ember.rad2deg, ref=lambda a: np.rad2deg(a), dtypes=_F,
               sample_inputs=unary_samples, supports_out=True, inplace=lambda t: t.rad2deg_(), **ag))
    add(OpInfo("trapezoid", op=ember.trapezoid, ref=_trapz_ref(False), dtypes=_F, sample_inputs=_trapz_samples, **ag))
    add(OpInfo("cumulative_trapezoid", op=ember.cumulative_trapezoid, ref=_trapz_ref(True), dtypes=_F,
               sample_inputs=_trapz_samples, **ag))
    add(OpInfo("combinations", op=ember.combinations, ref=_combinations_ref, dtypes=ALL_DTYPES,
               sample_inputs=_combinations_samples, exact=True, **ag))
    add(OpInfo("select_scatter", op=ember.select_scatter, ref=_select_scatter_ref, dtypes=ALL_DTYPES,
               sample_inputs=_select_scatter_samples, exact=True, **ag))
    add(OpInfo("slice_scatter", op=ember.slice_scatter, ref=_slice_scatter_ref, dtypes=ALL_DTYPES,
               sample_inputs=_slice_scatter_samples, exact=True, **ag))
    add(OpInfo("diagonal_scatter", op=ember.diagonal_scatter, ref=_diagonal_scatter_ref, dtypes=ALL_DTYPES,
               sample_inputs=_diagonal_scatter_samples, exact=True, **ag))
    add(OpInfo("index_reduce", op=ember.index_reduce, ref=_index_reduce_ref, dtypes=("float32", "float64", "int64"),
               sample_inputs=_index_reduce_samples, supports_out=True))
    return ops


OPINFOS = _build()
op_db = OPINFOS
