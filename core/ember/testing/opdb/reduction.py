"""Op database entries: reductions, scans, order statistics, sorting, unique, searchsorted.

References are numpy with PyTorch's semantics: integer and bool sums / products / cumsums
give int64, ``mean`` / ``var`` take floating and complex inputs only, ``max`` / ``amax``
propagate NaN, ``argmax`` / ``max(dim)`` give the first index of the extreme (NaN counts as
the maximum), ``cummax`` the last, ``median`` is the lower median, ``mode`` the smallest most
frequent value with the index of its last occurrence, ``sort`` is stable with NaN last,
``unique`` is sorted.

This module also holds the small helpers the other H-A2 category modules (linalg, shape,
indexing, nn) share: ``upcast`` (run a reference in float64 for float16 / bfloat16 inputs),
``distinct`` / ``ties`` / ``with_nan`` sample tensors, and ``values_only``.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import (ALL_DTYPES, FLOATING_AND_COMPLEX, REAL, REAL_AND_BOOL, seed_for, with_grad,
                        reduction_samples)

__all__ = ["OPINFOS", "op_db", "upcast", "distinct", "ties", "with_nan", "values_only", "np_dtype",
           "grad_unless_ambiguous"]

# ================================================================ shared helpers
_LOWP = ("float16", "bfloat16")


def np_dtype(dt):
    """The numpy dtype of an ember dtype (bfloat16: ml_dtypes')."""
    return np.dtype(dt.numpy_dtype)


def _conv_in(a):
    if isinstance(a, np.ndarray) and a.dtype.name in _LOWP:
        return a.astype(np.float64)
    if isinstance(a, (list, tuple)):
        return type(a)(_conv_in(x) for x in a)
    return a


def upcast(fn):
    """A reference that computes in float64 when the first array argument is float16 / bfloat16,
    then casts every float64 result back to that dtype (other results, e.g. int64 indices, are left
    as they are; nothing is cast back when an ember dtype is among the arguments: the reference then
    casts to it itself)."""
    def ref(*args, **kwargs):
        orig = None
        for a in args:
            a0 = a[0] if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray) else a
            if isinstance(a0, np.ndarray):
                orig = a0.dtype
                break
        r = fn(*[_conv_in(a) for a in args], **{k: _conv_in(v) for k, v in kwargs.items()})
        if orig is None or orig.name not in _LOWP:
            return r
        if any(hasattr(v, "numpy_dtype") for v in list(args) + list(kwargs.values()) if v is not None):
            return r     # an explicit result dtype (``dtype=``): the reference already casts to it

        def back(x):
            if isinstance(x, (np.ndarray, np.generic)) and np.asarray(x).dtype == np.float64:
                return np.asarray(x).astype(orig)
            return x
        return tuple(back(x) for x in r) if isinstance(r, tuple) else back(r)
    ref.__name__ = getattr(fn, "__name__", "ref")
    ref.__doc__ = fn.__doc__
    return ref


def _from_np(a, device, dtype):
    import ember
    src = a.astype(np.float32) if dtype.name == "bfloat16" else a.astype(np_dtype(dtype))
    return ember.tensor(src, dtype=dtype, device=device)


def distinct(shape, device, dtype, seed, requires_grad=False):
    """A tensor of ``shape`` whose elements are pairwise distinct (a shuffled arithmetic
    sequence exactly representable in every dtype; 0/1 only for bool, so keep bool sizes <= 2)."""
    n = int(np.prod(shape)) if shape else 1
    rng = np.random.default_rng(seed)
    v = rng.permutation(n).astype(np.float64)
    name = dtype.name
    if name == "bool":
        v = v % 2
    elif name == "uint8":
        pass
    elif dtype.is_floating_point or dtype.is_complex:
        v = (v - n // 2) * 0.5
    else:
        v = v - n // 2
    return with_grad(_from_np(v.reshape(shape), device, dtype), requires_grad)


def ties(shape, device, dtype, seed, k=3):
    """A tensor of ``shape`` with many repeated values (integers in [0, k))."""
    rng = np.random.default_rng(seed)
    v = rng.integers(0, k if dtype.name != "bool" else 2, shape if shape else ())
    return _from_np(np.asarray(v, dtype=np.float64), device, dtype)


def with_nan(shape, device, dtype, seed, where=(1,), requires_grad=False):
    """A random floating tensor with NaN at the flat positions ``where``. Never requires grad
    (``requires_grad`` is accepted and ignored): finite differences through NaN are NaN."""
    t = make_tensor(shape, device="cpu", dtype=dtype, seed=seed).numpy().astype(np.float64).reshape(-1)
    for i in where:
        t[i % t.size] = np.nan
    return _from_np(t.reshape(shape), device, dtype)


def grad_unless_ambiguous(sampler):
    """Wrap a sampler of sorting-like ops: with ``requires_grad``, the inputs of samples without
    ties or NaN (their names say so) become leaves that require grad (the gradient of a median
    or a sort is only defined when the selected element is unique)."""
    def wrapped(op, device, dtype, requires_grad=False):
        for s in sampler(op, device, dtype, False):
            from ember import Tensor
            if requires_grad and isinstance(s.input, Tensor) and "ties" not in s.name and "NaN" not in s.name:
                s.input = with_grad(s.input, True)
            yield s
    wrapped.__name__ = getattr(sampler, "__name__", "sampler")
    wrapped.__doc__ = sampler.__doc__
    return wrapped


def values_only(r):
    """``output_process`` for (values, indices) results whose indices are ambiguous (ties):
    keep the values (works on the op's result and on the reference's)."""
    return r[0]


def _ax(dim, nd):
    if dim is None:
        return None
    if isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    dim = tuple(dim)
    if nd == 0 or not dim:
        return None
    return tuple(sorted(d % nd for d in dim))


def _int_to_long(dt):
    return np.dtype(np.int64) if dt.kind in "biu" else dt


def _sample(op, device, dtype, i):
    return seed_for(op, dtype, i)


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


def _sum_extra(op, device, dtype, requires_grad=False, *, nan=False, dtype_kw=True, int_dim=False):
    yield from reduction_samples(op, device, dtype, requires_grad, dims="int" if int_dim else True)
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
    import ember
    yield SampleInput(ember.zeros((3, 4), dtype=dtype, device=device), (), {"dim": 1}, name="zeros")
    yield SampleInput(ember.ones((3, 4), dtype=dtype, device=device), (), {"dim": 0}, name="ones")
    if dtype.is_floating_point:
        yield SampleInput(with_nan((3, 4), device, dtype, 5, where=(0, 5)), (), {"dim": 1}, name="NaN (non-zero)")


def _count_nonzero_ref(a, dim=None):
    return np.asarray(np.sum(a != 0, axis=_ax(dim, a.ndim))).astype(np.int64)


def _count_nonzero_samples(op, device, dtype, requires_grad=False):
    yield from reduction_samples(op, device, dtype, False, low=-1, high=2, keepdim=False)


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


# ================================================================ the entries
def _E():
    import ember
    return ember


def _build():
    E = _E()
    NOCPLX = REAL_AND_BOOL
    ORDER = REAL
    ops = []
    add = ops.append

    add(OpInfo("sum", ref=upcast(_sum_ref), dtypes=ALL_DTYPES, sample_inputs=_sum_extra, error_inputs=_sum_errors,
               supports_autograd=True, supports_out=True))
    add(OpInfo("nansum", ref=upcast(partial(_sum_ref, nan=True)), dtypes=REAL_AND_BOOL,
               sample_inputs=partial(_sum_extra, nan=True), error_inputs=_nansum_errors, supports_autograd=True,
               supports_out=True))
    add(OpInfo("prod", ref=upcast(_prod_ref), dtypes=ALL_DTYPES,
               sample_inputs=partial(_sum_extra, int_dim=True, dtype_kw=False),
               error_inputs=_prod_errors, supports_autograd=True, supports_out=True,
               tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 1e-1)}))
    add(OpInfo("mean", ref=upcast(_mean_ref), dtypes=FLOATING_AND_COMPLEX, sample_inputs=_mean_extra,
               error_inputs=_mean_errors, supports_autograd=True, supports_out=True))
    add(OpInfo("nanmean", ref=upcast(partial(_mean_ref, nan=True)), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=partial(_mean_extra, nan=True), error_inputs=partial(_mean_errors, name="nanmean"),
               supports_autograd=True, supports_out=True))
    for name, fn in (("amax", np.max), ("amin", np.min)):
        add(OpInfo(name, ref=upcast(partial(_amax_ref, fn=fn)), dtypes=NOCPLX, sample_inputs=_amax_samples,
                   error_inputs=partial(_amax_errors, name=name), supports_autograd=True, supports_out=True,
                   exact=True))
    for name, fn in (("max", np.max), ("min", np.min)):
        add(OpInfo(name, op=getattr(E, name), ref=upcast(partial(_amax_ref, fn=fn)), dtypes=NOCPLX,
                   sample_inputs=partial(_amax_samples, full_only=True),
                   error_inputs=partial(_empty_all_error, name=name), supports_autograd=True, supports_out=True,
                   exact=True))
    for name, largest in (("max", True), ("min", False)):
        add(OpInfo(f"{name}_dim", op=_max_dim_op(getattr(E, name)),
                   ref=upcast(partial(_max_dim_ref, largest=largest)), dtypes=NOCPLX,
                   sample_inputs=_max_dim_samples, error_inputs=partial(_max_dim_errors, name=name),
                   supports_autograd=True, supports_out=True, exact=True))
    for name, largest in (("argmax", True), ("argmin", False)):
        add(OpInfo(name, ref=upcast(partial(_argmax_ref, largest=largest)), dtypes=REAL, sample_inputs=_argmax_samples,
                   error_inputs=partial(_argmax_errors, name=name), supports_out=True, exact=True))
    add(OpInfo("aminmax", ref=upcast(_aminmax_ref), dtypes=NOCPLX, sample_inputs=_aminmax_samples,
               error_inputs=_aminmax_errors, supports_out=True, exact=True))
    add(OpInfo("var", op=_var_op(E.var), ref=upcast(_var_ref), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=_var_samples, error_inputs=_var_errors, supports_autograd=True, supports_out=True))
    add(OpInfo("std", op=_var_op(E.std), ref=upcast(partial(_var_ref, sqrt=True)), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=_var_samples, error_inputs=_var_errors, supports_autograd=True, supports_out=True))
    add(OpInfo("norm", op=E.norm, ref=upcast(_norm_ref), dtypes=FLOATING_AND_COMPLEX, sample_inputs=_norm_samples,
               error_inputs=_norm_errors, supports_autograd=True, supports_out=True,
               tolerances={"float16": (2e-3, 2e-3)}))
    add(OpInfo("logsumexp", ref=upcast(_logsumexp_ref), dtypes=ALL_DTYPES, sample_inputs=_logsumexp_samples,
               error_inputs=_logsumexp_errors, supports_autograd=True, supports_out=True))
    for name, fn in (("all", np.all), ("any", np.any)):
        add(OpInfo(name, ref=partial(_logical_ref, fn=fn), dtypes=ALL_DTYPES, sample_inputs=_logical_samples,
                   error_inputs=_sum_errors, supports_out=True, exact=True))
    add(OpInfo("count_nonzero", ref=_count_nonzero_ref, dtypes=ALL_DTYPES, sample_inputs=_count_nonzero_samples,
               error_inputs=_sum_errors, exact=True))
    add(OpInfo("cumsum", ref=upcast(_cumsum_ref), dtypes=ALL_DTYPES, sample_inputs=_scan_samples,
               error_inputs=_scan_errors, supports_autograd=True, supports_out=True,
               inplace=lambda t, *a, **k: t.cumsum_(*a, **k), tolerances={"float16": (2e-3, 1e-2)}))
    add(OpInfo("cumprod", ref=upcast(partial(_cumsum_ref, prod=True)), dtypes=ALL_DTYPES,
               sample_inputs=partial(_scan_samples, low=-2, high=2), error_inputs=_scan_errors,
               supports_autograd=True, supports_out=True, inplace=lambda t, *a, **k: t.cumprod_(*a, **k),
               tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 5e-2)}))
    for name, largest in (("cummax", True), ("cummin", False)):
        add(OpInfo(name, ref=upcast(partial(_cumext_ref, largest=largest)), dtypes=NOCPLX,
                   sample_inputs=_scan_samples, error_inputs=_scan_errors, supports_autograd=True,
                   supports_out=True, exact=True))
    for name, mode in (("median", "propagate"), ("nanmedian", "ignore")):
        add(OpInfo(name, op=getattr(E, name), ref=upcast(partial(_median_all_ref, nan_mode=mode)), dtypes=ORDER,
                   sample_inputs=grad_unless_ambiguous(_median_all_samples), error_inputs=partial(_median_all_errors, name=name),
                   supports_autograd=True, supports_out=True, exact=True))
        add(OpInfo(f"{name}_dim", op=_max_dim_op(getattr(E, name), -1),
                   ref=upcast(partial(_median_dim_ref, nan_mode=mode)), dtypes=ORDER, sample_inputs=grad_unless_ambiguous(_order_samples),
                   error_inputs=partial(_order_errors, name=name), supports_autograd=True, supports_out=True,
                   exact=True))
    add(OpInfo("mode", ref=upcast(_mode_ref), dtypes=NOCPLX, sample_inputs=grad_unless_ambiguous(_order_samples),
               error_inputs=partial(_order_errors, name="mode"), supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("kthvalue", ref=upcast(_kthvalue_ref), dtypes=ORDER, sample_inputs=grad_unless_ambiguous(_order_samples),
               error_inputs=partial(_order_errors, name="kthvalue"), supports_autograd=True, supports_out=True,
               exact=True))
    add(OpInfo("sort", ref=upcast(_sort_ref), dtypes=NOCPLX, sample_inputs=grad_unless_ambiguous(_sort_samples), error_inputs=_sort_errors,
               supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("topk", ref=upcast(_topk_ref), dtypes=ORDER, sample_inputs=grad_unless_ambiguous(_sort_samples), error_inputs=_sort_errors,
               supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("unique", op=E.unique, ref=upcast(_unique_public_ref), dtypes=NOCPLX, sample_inputs=_unique_samples,
               error_inputs=_unique_errors, exact=True))
    add(OpInfo("unique_consecutive", op=E.unique_consecutive, ref=upcast(_unique_consecutive_public_ref), dtypes=NOCPLX,
               sample_inputs=_unique_samples, error_inputs=_unique_errors, exact=True))
    add(OpInfo("searchsorted", op=E.searchsorted, ref=_searchsorted_ref, dtypes=NOCPLX,
               sample_inputs=_searchsorted_samples, error_inputs=_searchsorted_errors, supports_out=True, exact=True))
    return ops


OPINFOS = _build()
op_db = OPINFOS
