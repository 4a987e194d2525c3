"""References, samples and error inputs of the full reductions of the ``reduction`` op database
entries: sum / nansum / prod / mean / nanmean, the max / min family (amax, max(dim), argmax,
aminmax), var / std / norm / logsumexp, all / any / count_nonzero.
"""
from __future__ import annotations

import math

import numpy as np

from .._opinfo import SampleInput, ErrorInput, make_tensor
from .._samples import with_grad, reduction_samples
from ._reduction_helpers import _LOWP, np_dtype, _from_np, ties, with_nan, _ax, _int_to_long, _sample


# ================================================================ sum / nansum / prod / mean / nanmean
def _sum_ref(a, dim=None, keepdim=False, *, dtype=None, nan=False):
    out = np_dtype(dtype) if dtype is not None else _int_to_long(a.dtype)
    x = a.astype(out) if dtype is not None else a
    if nan:
        x = np.where(np.isnan(x), 0, x) if x.dtype.kind in "fc" else x
    acc = np.float64 if out.kind == "f" else (np.complex128 if out.kind == "c" else np.int64)
    r = np.sum(x, axis=_ax(dim, a.ndim), keepdims=bool(keepdim), dtype=acc)
    return np.asarray(r).astype(out)


def _prod_ref(a, dim=None, keepdim=False, *, dtype=None):
    out = np_dtype(dtype) if dtype is not None else _int_to_long(a.dtype)
    x = a.astype(out)
    acc = np.float64 if out.kind == "f" else (np.complex128 if out.kind == "c" else np.int64)
    return np.asarray(np.prod(x, axis=_ax(dim, a.ndim), keepdims=bool(keepdim), dtype=acc)).astype(out)


def _mean_ref(a, dim=None, keepdim=False, *, dtype=None, nan=False):
    out = np_dtype(dtype) if dtype is not None else a.dtype
    x = a.astype(np.complex128 if out.kind == "c" else np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.nanmean if nan else np.mean
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = f(x, axis=_ax(dim, a.ndim), keepdims=bool(keepdim))
    return np.asarray(r).astype(out)


def _dim_list(op, device, dtype, requires_grad, seed=95):
    """dim given as a list, the form users also write (kernels receive a tuple all the same)."""
    x = make_tensor((2, 3, 4), device=device, dtype=dtype, seed=_sample(op, device, dtype, seed))
    yield SampleInput(with_grad(x, requires_grad), (), {"dim": [0, -1]}, name="dim list [0, -1]")


def _sum_extra(op, device, dtype, requires_grad=False, *, nan=False, dtype_kw=True, int_dim=False):
    yield from reduction_samples(op, device, dtype, requires_grad, dims="int" if int_dim else True)
    if not int_dim:
        yield from _dim_list(op, device, dtype, requires_grad)
    if dtype.is_floating_point and nan:
        yield SampleInput(with_nan((3, 4), device, dtype, _sample(op, device, dtype, 90), where=(1, 6),
                                   requires_grad=requires_grad), (), {"dim": 1}, name="NaN, dim=1")
    if dtype_kw:
        import ember
        to = ember.float64 if (dtype.is_floating_point and dtype.name not in _LOWP) else \
            ember.complex128 if dtype.is_complex else ember.float32 if dtype.is_floating_point else ember.int32
        x = make_tensor((3, 4), device=device, dtype=dtype, seed=_sample(op, device, dtype, 91))
        yield SampleInput(with_grad(x, requires_grad and to.is_floating_point == dtype.is_floating_point), (),
                          {"dim": 0, "dtype": to}, name=f"dtype={to.name}")


def _mean_extra(op, device, dtype, requires_grad=False, *, nan=False):
    yield from reduction_samples(op, device, dtype, requires_grad)
    yield from _dim_list(op, device, dtype, requires_grad)
    if nan and dtype.is_floating_point:
        yield SampleInput(with_nan((3, 4), device, dtype, _sample(op, device, dtype, 90), where=(1, 6, 7, 8, 9),
                                   requires_grad=requires_grad), (), {"dim": 1}, name="NaN, dim=1")
    if dtype.name == "float32":
        import ember
        yield SampleInput(make_tensor((3, 4), device=device, dtype=dtype, seed=_sample(op, device, dtype, 91)), (),
                          {"dim": 1, "dtype": ember.float64}, name="dtype=float64")


def _sum_errors(op, device, name="sum"):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (), {"dim": 2}), IndexError, r"Dimension out of range \(expected to be in range "
                     r"of \[-2, 1\], but got 2\)")
    yield ErrorInput(SampleInput(x, (), {"dim": (1, 1)}), RuntimeError, r"dim 1 appears multiple times in the list "
                     r"of dims")
    yield ErrorInput(SampleInput(x, (), {"dim": 1.5}), TypeError, r"argument 'dim' must be tuple of ints")


def _mean_errors(op, device, name="mean"):
    import ember
    yield from _sum_errors(op, device)
    xi = make_tensor((3,), device=device, dtype=ember.int64, seed=2)
    msg = (r"nanmean\(\): expected input to have floating point or complex dtype but got Long" if name == "nanmean"
           else r"mean\(\): could not infer output dtype. Input dtype must be either a floating point or complex "
                r"dtype. Got: Long")
    yield ErrorInput(SampleInput(xi), RuntimeError, msg)


def _nansum_errors(op, device):
    import ember
    yield from _sum_errors(op, device)
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.complex64, seed=3)), RuntimeError,
                     r"nansum does not support complex inputs")


def _prod_errors(op, device):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (2,)), IndexError, r"Dimension out of range")
    yield ErrorInput(SampleInput(x, ((0, 1),)), TypeError, r"argument 'dim' must be int, not tuple")


# ================================================================ max / min family
def _nan_extreme(fn_nan, a, axis, keepdims):
    """amax/amin with NaN propagation (numpy's max propagates NaN too, but not for object dtypes)."""
    return np.asarray(fn_nan(a, axis=axis, keepdims=keepdims))


def _amax_ref(a, dim=(), keepdim=False, *, fn=np.max):
    return np.asarray(fn(a, axis=_ax(dim, a.ndim) if dim not in ((), []) else None, keepdims=bool(keepdim))
                      ).astype(a.dtype)


def _arg_ext(a, axis, largest):
    """First index of the max (min) along ``axis`` of a >=1-D array; NaN counts as the extreme."""
    x = a.astype(np.float64) if a.dtype.kind in "biu" else a
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        has = nan.any(axis=axis, keepdims=True)
        idx = np.argmax(x, axis=axis, keepdims=True) if largest else np.argmin(x, axis=axis, keepdims=True)
        nidx = np.argmax(nan, axis=axis, keepdims=True)
        return np.where(has, nidx, idx)
    return np.argmax(x, axis=axis, keepdims=True) if largest else np.argmin(x, axis=axis, keepdims=True)


def _max_dim_ref(a, dim, keepdim=False, *, largest=True):
    x = a.reshape(1) if a.ndim == 0 else a
    d = dim % x.ndim
    idx = _arg_ext(x, d, largest)
    vals = np.take_along_axis(x, idx, axis=d)
    if not keepdim or a.ndim == 0:
        idx, vals = np.squeeze(idx, d), np.squeeze(vals, d)
    if a.ndim == 0:
        idx, vals = idx.reshape(()), vals.reshape(())
    return vals.astype(a.dtype), idx.astype(np.int64)


def _argmax_ref(a, dim=None, keepdim=False, *, largest=True):
    if dim is None:
        i = _arg_ext(a.reshape(-1), 0, largest).reshape(())
        return np.asarray(i, dtype=np.int64).reshape((1,) * a.ndim if keepdim else ())
    return _max_dim_ref(a, dim, keepdim, largest=largest)[1]


def _aminmax_ref(a, *, dim=None, keepdim=False):
    if dim is None:
        mn = np.asarray(np.min(a)).astype(a.dtype)
        mx = np.asarray(np.max(a)).astype(a.dtype)
        if keepdim:
            mn, mx = mn.reshape((1,) * a.ndim), mx.reshape((1,) * a.ndim)
        return mn, mx
    return _max_dim_ref(a, dim, keepdim, largest=False)[0], _max_dim_ref(a, dim, keepdim)[0]


def _amax_samples(op, device, dtype, requires_grad=False, *, full_only=False, dims=True):
    if full_only:
        yield from reduction_samples(op, device, dtype, requires_grad, dims=False)
    else:
        yield from reduction_samples(op, device, dtype, requires_grad, dims=dims, empty=True)
        if dims is True:
            yield from _dim_list(op, device, dtype, requires_grad)
    kw = {} if full_only else {"dim": 1}
    if dtype.is_floating_point:
        yield SampleInput(with_nan((3, 4), device, dtype, _sample(op, device, dtype, 90), where=(2, 5, 7),
                                   requires_grad=requires_grad), (), dict(kw), name="NaN")
    yield SampleInput(ties((3, 5), device, dtype, _sample(op, device, dtype, 91)), (), dict(kw), name="ties")


def _max_dim_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, requires_grad, dims="int", full=False)
    # the index is the first occurrence of the extreme: ties are part of the contract
    yield SampleInput(ties((3, 6), device, dtype, _sample(op, device, dtype, 91)), (1,), name="ties, dim=1")
    yield SampleInput(ties((6, 3), device, dtype, _sample(op, device, dtype, 92)).t(), (0,), {"keepdim": True},
                      name="ties, transposed, dim=0")
    if dtype.is_floating_point:
        yield SampleInput(with_nan((3, 4), device, dtype, _sample(op, device, dtype, 90), where=(1, 3, 6),
                                   requires_grad=requires_grad), (-1,), name="NaN, dim=-1")


def _argmax_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, False, dims="int")
    yield SampleInput(ties((3, 6), device, dtype, _sample(op, device, dtype, 91)), (), {"dim": 1}, name="ties, dim=1")
    yield SampleInput(ties((4, 5), device, dtype, _sample(op, device, dtype, 92)), (), name="ties, all")
    yield SampleInput(ties((2, 3), device, dtype, _sample(op, device, dtype, 93)), (), {"keepdim": True},
                      name="all, keepdim")
    if dtype.is_floating_point:
        yield SampleInput(with_nan((3, 4), device, dtype, _sample(op, device, dtype, 90), where=(1, 3, 6)), (),
                          {"dim": 1}, name="NaN, dim=1")


def _aminmax_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, False, dims="int")
    yield SampleInput(ties((3, 5), device, dtype, _sample(op, device, dtype, 91)), (), {"dim": 0}, name="ties")
    yield SampleInput(make_tensor((2, 3), device=device, dtype=dtype, seed=_sample(op, device, dtype, 92)), (),
                      {"keepdim": True}, name="all, keepdim")


def _empty_all_error(op, device, name):
    import ember
    e = ember.empty((0, 3), device=device)
    yield ErrorInput(SampleInput(e), RuntimeError, rf"{name}\(\): Expected reduction dim to be specified for "
                     r"input.numel\(\) == 0")


def _amax_errors(op, device, name="amax"):
    import ember
    e = ember.empty((0, 3), device=device)
    yield ErrorInput(SampleInput(e, (), {"dim": 0}), IndexError, rf"{name}\(\): Expected reduction dim 0 to have "
                     r"non-zero size")
    yield from _empty_all_error(op, device, name)
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.complex64, seed=1)), RuntimeError,
                     r"not implemented for 'ComplexFloat'")


def _max_dim_errors(op, device, name="max"):
    import ember
    e = ember.empty((0, 3), device=device)
    yield ErrorInput(SampleInput(e, (0,)), IndexError, rf"{name}\(\): Expected reduction dim 0 to have non-zero size")
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), (2,)), IndexError,
                     r"Dimension out of range")
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.complex64, seed=1), (0,)),
                     RuntimeError, rf"{name}\(\): does not support complex input")


def _argmax_errors(op, device, name="argmax"):
    import ember
    yield ErrorInput(SampleInput(ember.empty((0, 3), device=device)), IndexError,
                     rf"{name}\(\): Expected reduction dim to be specified for input.numel\(\) == 0")
    yield ErrorInput(SampleInput(ember.empty((0, 3), device=device), (), {"dim": 0}), IndexError,
                     rf"{name}\(\): Expected reduction dim 0 to have non-zero size")
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.bool, seed=1)), RuntimeError,
                     rf"{name}\(\): does not support bool input")


def _aminmax_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(ember.empty((0, 3), device=device)), RuntimeError,
                     r"aminmax\(\): cannot compute aminmax over an empty dimension as the operation has no identity")
    yield ErrorInput(SampleInput(ember.empty((0, 3), device=device), (), {"dim": 0}), IndexError,
                     r"aminmax: Expected reduction dim 0 to have non-zero size")


def _max_dim_op(fn, default=None):
    """``fn(input, dim, keepdim)`` — the (values, indices) overload of max / min / median / nanmedian."""
    def op(input, dim=default, keepdim=False, **kw):
        return fn(input, dim, keepdim, **kw)
    return op


# ================================================================ var / std / norm / logsumexp
def _var_ref(a, dim=None, *, correction=None, keepdim=False, sqrt=False):
    c = 1 if correction is None else correction
    real = np.float64
    x = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    ax = _ax(dim, a.ndim)
    n = x.size if ax is None else int(np.prod([x.shape[d] for d in ax]))
    m = np.mean(x, axis=ax, keepdims=True) if x.size else np.zeros((1,) * x.ndim)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sum(np.abs(x - m) ** 2, axis=ax, keepdims=bool(keepdim)).astype(real)
        r = s / max(0, n - c)
    if sqrt:
        r = np.sqrt(r)
    out = np.dtype(np.float32) if a.dtype == np.complex64 else np.dtype(np.float64) if a.dtype.kind == "c" \
        else a.dtype
    return np.asarray(r).astype(out)


def _var_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, requires_grad, empty=False)
    for i, c in enumerate((0, 2, 0.5)):
        yield SampleInput(with_grad(make_tensor((3, 5), device=device, dtype=dtype,
                                                seed=_sample(op, device, dtype, 80 + i)), requires_grad),
                          (), {"dim": 1, "correction": c}, name=f"correction={c}")


def _var_op(fn):
    def op(input, dim=None, *, correction=None, keepdim=False, out=None):
        return fn(input, dim, correction=correction, keepdim=keepdim, out=out)
    return op


def _var_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.int64, seed=1)), RuntimeError,
                     r"std and var only support floating point and complex dtypes")
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), (), {"dim": 3}), IndexError,
                     r"Dimension out of range")


def _norm_ref(a, p=2, dim=None, keepdim=False, *, dtype=None):
    x = a.astype(np_dtype(dtype)) if dtype is not None else a
    x = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    ax = _ax(dim, a.ndim)
    v = np.abs(x)
    if p == "fro":
        p = 2
    if p == "nuc":
        s = np.linalg.svd(np.moveaxis(v if False else x, ax, (-2, -1)), compute_uv=False)
        r = s.sum(-1)
        if keepdim:
            r = np.expand_dims(r, ax)
    elif p == math.inf:
        r = np.max(v, axis=ax, keepdims=bool(keepdim))
    elif p == -math.inf:
        r = np.min(v, axis=ax, keepdims=bool(keepdim))
    elif p == 0:
        r = np.sum(v != 0, axis=ax, keepdims=bool(keepdim)).astype(np.float64)
    else:
        with np.errstate(divide="ignore"):
            r = np.sum(v ** p, axis=ax, keepdims=bool(keepdim)) ** (1.0 / p)
    base = np_dtype(dtype) if dtype is not None else a.dtype
    out = {"complex64": np.float32, "complex128": np.float64}.get(base.name, base)
    return np.asarray(r).astype(out)


def _norm_samples(op, device, dtype, requires_grad=False, *, linalg=False):
    import ember
    k = 0

    def mk(shape, **kw):
        nonlocal k
        k += 1
        return with_grad(make_tensor(shape, device=device, dtype=dtype, seed=_sample(op, device, dtype, k), **kw),
                         requires_grad)
    pk = "ord" if linalg else "p"
    yield SampleInput(mk(()), (), name="0-dim")
    yield SampleInput(mk((5,)), (), name="1-D")
    yield SampleInput(mk((0,)), (), name="empty")
    yield SampleInput(mk((3, 4)), (), {"dim": 1, "keepdim": True}, name="dim=1, keepdim")
    yield SampleInput(mk((4, 3)).t(), (), {"dim": (0, 1)}, name="transposed, dim=(0, 1)")
    yield SampleInput(mk((2, 3, 4), noncontiguous=True), (), {"dim": -1}, name="noncontiguous, dim=-1")
    for p in (1, 3, 0, math.inf, -math.inf, 0.5):
        yield SampleInput(mk((3, 4)), (), {pk: p, "dim": 1}, name=f"{pk}={p}")
    if not linalg:
        yield SampleInput(mk((3, 4)), ("fro",), name="p='fro'")
    if dtype.name == "float32":
        yield SampleInput(mk((3, 4)), (), {"dim": 1, "dtype": ember.float64}, name="dtype=float64")


def _norm_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.int64, seed=1)), RuntimeError,
                     r"linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long")
    yield ErrorInput(SampleInput(ember.empty((0, 3), device=device), (math.inf,), {"dim": 0}), RuntimeError,
                     r"linalg.vector_norm cannot compute the inf norm on the dimension 0 because this dimension is "
                     r"empty and the operation does not have an identity")
    yield ErrorInput(SampleInput(make_tensor((3, 4, 5), device=device, seed=1), ("fro", (0, 1, 2))), RuntimeError,
                     r"linalg.matrix_norm: dim must be a 2-tuple")


def _logsumexp_ref(a, dim, keepdim=False):
    out = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float32)
    x = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    ax = _ax(dim, a.ndim)
    if x.dtype.kind == "c":
        with np.errstate(divide="ignore"):
            r = np.log(np.sum(np.exp(x), axis=ax, keepdims=bool(keepdim)))
        return np.asarray(r).astype(out)
    if x.size == 0:
        r = np.full(np.sum(x, axis=ax, keepdims=bool(keepdim)).shape, -np.inf)
        return r.astype(out)
    m = np.max(x, axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    if not keepdim:
        r = np.squeeze(r, axis=ax) if ax is not None else r.reshape(())
    return np.asarray(r).astype(out)


def _logsumexp_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, requires_grad, full=False)
    yield from _dim_list(op, device, dtype, requires_grad)
    if dtype.is_floating_point:
        import ember
        x = make_tensor((2, 3), device="cpu", dtype=dtype, seed=_sample(op, device, dtype, 90)).numpy() \
            .astype(np.float64)
        x[0, 1] = np.inf
        x[1, :] = -np.inf
        yield SampleInput(_from_np(x, device, dtype), (1,), name="inf, -inf rows")
        yield SampleInput(with_grad(make_tensor((3, 4), device=device, dtype=dtype, low=50, high=80,
                                                seed=_sample(op, device, dtype, 91)), requires_grad), (1,),
                          name="large values (stability)")


def _logsumexp_errors(op, device):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (2,)), IndexError, r"Dimension out of range")


# ================================================================ all / any / count_nonzero
def _logical_ref(a, dim=None, keepdim=False, *, fn=np.all):
    r = fn(a != 0, axis=_ax(dim, a.ndim), keepdims=bool(keepdim))
    return np.asarray(r).astype(np.uint8 if a.dtype == np.uint8 else np.bool_)


def _logical_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, False, low=0, high=2)
    yield from _dim_list(op, device, dtype, False)
    import ember
    yield SampleInput(ember.zeros((3, 4), dtype=dtype, device=device), (), {"dim": 1}, name="zeros")
    yield SampleInput(ember.ones((3, 4), dtype=dtype, device=device), (), {"dim": 0}, name="ones")
    if dtype.is_floating_point:
        yield SampleInput(with_nan((3, 4), device, dtype, 5, where=(0, 5)), (), {"dim": 1}, name="NaN (non-zero)")


def _count_nonzero_ref(a, dim=None):
    return np.asarray(np.sum(a != 0, axis=_ax(dim, a.ndim))).astype(np.int64)


def _count_nonzero_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, False, low=-1, high=2, keepdim=False)
    yield from _dim_list(op, device, dtype, False)
