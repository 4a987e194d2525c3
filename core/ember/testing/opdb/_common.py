"""Helpers shared by the op database modules: numpy conversion of samples, reference
wrappers and the comparison a ``ref`` is checked with.

Convention for ``OpInfo.ref``: it receives the sample's tensors as numpy arrays (float16
and bfloat16 as float32, since PyTorch's and ember's cpu kernels compute those in float32),
every other argument as is (Python scalars, dtypes, ...), and returns array(s) whose values
are compared with the op's result after converting both to float64 / complex128 (NaN equal
to NaN, infinities equal by sign), within ``OpInfo.tolerance(result dtype)``.
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["to_numpy", "numpy_sample", "call_ref", "assert_close", "errstate", "as_float", "inplace_of",
           "has_autograd", "np_dtype"]


def to_numpy(x):
    """A tensor as a numpy array (float16 / bfloat16 as float32); lists / tuples element-wise;
    anything else unchanged."""
    import ember
    if isinstance(x, ember.Tensor):
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        if x.dtype in (ember.float16, ember.bfloat16):
            x = x.float()
        return np.array(x.numpy(), copy=True)
    if isinstance(x, (list, tuple)):
        return type(x)(to_numpy(v) for v in x)
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    return x


def numpy_sample(sample):
    """(input, args, kwargs) of ``sample`` converted with ``to_numpy``."""
    return to_numpy(sample.input), to_numpy(tuple(sample.args)), to_numpy(dict(sample.kwargs))


def call_ref(info, sample):
    """``info.ref`` applied to the numpy form of ``sample`` (floating-point warnings silenced)."""
    a, args, kwargs = numpy_sample(sample)
    with np.errstate(all="ignore"):
        return info.ref(a, *args, **kwargs)


def _wide(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    return x.astype(np.float64)


def assert_close(actual, expected, rtol, atol, *, msg=""):
    """``actual`` (tensor(s)) equals ``expected`` (numpy array(s)) within rtol / atol, shapes
    equal, NaN matching NaN; AssertionError naming the worst element otherwise."""
    import ember
    if isinstance(actual, (tuple, list)) and not isinstance(actual, ember.Tensor):
        assert isinstance(expected, (tuple, list)) and len(expected) == len(actual), \
            f"{msg}: expected {len(actual)} results from the reference, got {type(expected).__name__}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol, atol, msg=f"{msg} [result {i}]")
        return
    a = _wide(to_numpy(actual) if isinstance(actual, ember.Tensor) else actual)
    e = _wide(expected)
    assert a.shape == e.shape, f"{msg}: shape {a.shape} != reference shape {e.shape}"
    if a.size == 0:
        return
    with np.errstate(all="ignore"):
        ok = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        ok |= (a == e)      # equal infinities
    if not ok.all():
        bad = np.argwhere(~ok)
        i = tuple(bad[0])
        raise AssertionError(f"{msg}: {len(bad)} of {a.size} elements differ (rtol={rtol}, atol={atol}); "
                             f"first at {i}: got {a[i]!r}, expected {e[i]!r}")


def errstate(fn):
    """``fn`` with numpy's floating-point warnings silenced."""
    @functools.wraps(fn)
    def f(*a, **k):
        with np.errstate(all="ignore"):
            return fn(*a, **k)
    return f


def as_float(fn):
    """``fn`` with integer and bool arrays (and Python ints) converted to float64 first: the
    reference for ops whose integer inputs compute in the default float dtype."""
    def conv(x):
        if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
            return x.astype(np.float64)
        if isinstance(x, bool):
            return float(x)
        return x

    @functools.wraps(fn)
    def f(*a, **k):
        return fn(*(conv(x) for x in a), **{n: conv(v) for n, v in k.items()})
    return f


def inplace_of(name):
    """The in-place method variant ``t.<name>_(*args, **kwargs)``."""
    def f(t, *a, **k):
        return getattr(t, name + "_")(*a, **k)
    f.__name__ = name + "_"
    return f


def has_autograd(name) -> bool:
    """Whether the op ``name`` has a derivative (``ember._dispatch.ops[name].autograd``)."""
    from ember import _dispatch
    op = _dispatch.ops.get(name)
    return op is not None and op.autograd is not None


def np_dtype(dtype):
    """The numpy dtype the reference uses for an ember dtype (bfloat16 -> float32)."""
    import ember
    if dtype is ember.bfloat16:
        return np.dtype(np.float32)
    return np.dtype(dtype.numpy_dtype)
