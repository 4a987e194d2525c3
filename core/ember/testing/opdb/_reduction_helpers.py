"""Helpers of the reduction op database entries, shared with the other category modules
(linalg, shape, indexing, nn): ``upcast`` (run a reference in float64 for float16 / bfloat16
inputs), the ``distinct`` / ``ties`` / ``with_nan`` sample tensors, ``values_only`` and
``grad_unless_ambiguous``. Re-exported by ``reduction``, where the other modules import them.
"""
from __future__ import annotations

import numpy as np

from .._opinfo import make_tensor
from .._samples import seed_for, with_grad

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
