"""Op database entries: sequence factories (``ember._ops._creation``): arange, linspace
(and logspace, its ``base`` form), eye. Samples are argument tuples: ``input`` is a number
(start / n), ``dtype`` and ``device`` are keyword arguments."""
from __future__ import annotations

import numpy as np

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput
from .._samples import ALL_DTYPES, COMPLEX, REAL
from ._common import np_dtype

__all__ = ["op_db"]


def _cast(values, dtype):
    """Values computed in float64 / complex128, stored in ``dtype`` (C casts truncate toward zero)."""
    return np.asarray(values).astype(np_dtype(dtype))


# ---------------------------------------------------------------- arange
def _arange_op(*args, dtype=None, device=None):
    return ember.arange(*args, dtype=dtype, device=device)


def _arange_ref(*args, dtype=None, device=None):
    start, end, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
    n = max(int(np.ceil((end - start) / step)), 0)
    if not dtype.is_floating_point and not all(isinstance(v, int) for v in (start, end, step)):
        # PyTorch's cpu kernel truncates float bounds for integer dtypes; int64 counts in integers too
        start, end, step = int(start), int(end), int(step)
        if dtype.name == "int64":
            n = max(int((end - start + step - np.sign(step)) / step), 0)
        return _cast(start + np.arange(n, dtype=np.int64) * step, dtype)
    return _cast(start + np.arange(n, dtype=np.float64) * step, dtype)


def _arange_samples(op, device, dtype, requires_grad=False):
    kw = {"dtype": dtype, "device": device}
    unsigned = dtype.name == "uint8"
    yield SampleInput(5, (), kw, name="arange(end)")
    yield SampleInput(0, (0,), kw, name="empty")
    yield SampleInput(2, (11, 3), kw, name="step 3, end not hit")
    yield SampleInput(1, (2,), kw, name="one element")
    if not unsigned:
        yield SampleInput(-4, (5,), kw, name="negative start")
        yield SampleInput(6, (-3, -2), kw, name="negative step")
    if not dtype.is_floating_point:
        yield SampleInput(0.5, (5.7, 1.5), kw, name="float bounds, truncated")
        if not unsigned:
            yield SampleInput(5.7, (-0.5, -1.5), kw, name="float bounds, negative step, truncated")
    if dtype.is_floating_point:
        yield SampleInput(0.0, (1.0, 0.1), kw, name="float step 0.1")
        yield SampleInput(-1.5, (2.25, 0.25), kw, name="float bounds")
        yield SampleInput(1.0, (-2.0, -0.5), kw, name="negative float step")


def _arange_errors(op, device):
    kw = {"device": device}
    yield ErrorInput(SampleInput(0, (10, 0), kw, name="step 0"), RuntimeError, r"step must be nonzero")
    yield ErrorInput(SampleInput(0, (10, -1), kw, name="step of the wrong sign"), RuntimeError,
                     r"upper bound and lower bound inconsistent with step sign")
    yield ErrorInput(SampleInput(0.5, (5.7, 0.5), {"device": device, "dtype": ember.int64},
                                 name="int64, step truncated to 0"), ValueError, r"step must be nonzero")
    yield ErrorInput(SampleInput(0, (5,), {"device": device, "dtype": ember.bool}, name="bool"),
                     NotImplementedError, r"\"arange_cpu\" not implemented for 'Bool'")


# ---------------------------------------------------------------- linspace / logspace
def _linspace_op(start, end, steps, dtype=None, device=None):
    return ember.linspace(start, end, steps, dtype=dtype, device=device)


def _linspace_ref(start, end, steps, dtype=None, device=None):
    wide = np.complex128 if dtype.is_complex else np.float64
    if not (dtype.is_floating_point or dtype.is_complex) and steps != 1:
        start, end = int(start), int(end)   # PyTorch's cpu kernel truncates the bounds first
    return _cast(np.linspace(start, end, steps, dtype=wide), dtype)


def _linspace_samples(op, device, dtype, requires_grad=False):
    kw = {"dtype": dtype, "device": device}
    yield SampleInput(0, (10, 6), kw, name="integral step")
    yield SampleInput(0, (1, 0), kw, name="steps=0")
    yield SampleInput(3, (7, 1), kw, name="steps=1")
    yield SampleInput(10, (0, 11), kw, name="decreasing")
    if dtype.name != "uint8":
        yield SampleInput(-5, (5, 5), kw, name="symmetric")
    if dtype.is_floating_point or dtype.is_complex:
        yield SampleInput(-1.0, (2.0, 7), kw, name="float bounds")
        yield SampleInput(0.0, (1.0, 50), kw, name="50 steps")
    if dtype.is_complex:
        yield SampleInput(complex(1, -1), (complex(-2, 3), 5), kw, name="complex bounds")
    if not (dtype.is_floating_point or dtype.is_complex):
        yield SampleInput(0.5, (5.7, 5), kw, name="float bounds, truncated first")


def _linspace_errors(op, device):
    yield ErrorInput(SampleInput(0, (1, -1), {"device": device}, name="negative steps"), RuntimeError,
                     r"number of steps must be non-negative")
    yield ErrorInput(SampleInput(ember.zeros(2, device=device), (1, 3), {"device": device}, name="1-dim start"),
                     RuntimeError, r"linspace only supports 0-dimensional start and end tensors, but got start with "
                                   r"1 dimension\(s\)")
    yield ErrorInput(SampleInput(0, (1, 2.5), {"device": device}, name="float steps"), TypeError,
                     r"argument 'steps' \(position 3\) must be int, not float")


def _logspace_op(start, end, steps, base=10.0, dtype=None, device=None):
    return ember.logspace(start, end, steps, base, dtype=dtype, device=device)


def _logspace_ref(start, end, steps, base=10.0, dtype=None, device=None):
    if not (dtype.is_floating_point or dtype.is_complex) and steps != 1:
        start, end = int(start), int(end)
    return _cast(np.power(float(base), np.linspace(start, end, steps, dtype=np.float64)), dtype)


def _logspace_samples(op, device, dtype, requires_grad=False):
    kw = {"dtype": dtype, "device": device}
    yield SampleInput(0, (2, 3), kw, name="base 10")
    yield SampleInput(0, (4, 5, 2.0), kw, name="base 2")
    yield SampleInput(1, (0, 0), kw, name="steps=0")
    if dtype.is_floating_point:
        yield SampleInput(-1.0, (1.0, 5), kw, name="negative exponents")
        yield SampleInput(0.0, (3.0, 7, 2.5), kw, name="base 2.5")
    else:
        yield SampleInput(0.5, (2.7, 5), kw, name="float bounds, truncated first")


# ---------------------------------------------------------------- eye
def _eye_op(n, m=None, dtype=None, device=None):
    return ember.eye(n, m, dtype=dtype, device=device)


def _eye_ref(n, m=None, dtype=None, device=None):
    return np.eye(n, n if m is None else m).astype(np_dtype(dtype))


def _eye_samples(op, device, dtype, requires_grad=False):
    kw = {"dtype": dtype, "device": device}
    yield SampleInput(3, (), kw, name="square")
    yield SampleInput(2, (5,), kw, name="wide")
    yield SampleInput(4, (2,), kw, name="tall")
    yield SampleInput(0, (), kw, name="empty")
    yield SampleInput(0, (3,), kw, name="0 rows")
    yield SampleInput(1, (), kw, name="1 x 1")


def _eye_errors(op, device):
    yield ErrorInput(SampleInput(-1, (), {"device": device}, name="negative n"), RuntimeError,
                     r"n must be greater or equal to 0, got -1")
    yield ErrorInput(SampleInput(2, (-3,), {"device": device}, name="negative m"), RuntimeError,
                     r"m must be greater or equal to 0, got -3")


op_db = [
    OpInfo("arange", op=_arange_op, ref=_arange_ref, dtypes=REAL, sample_inputs=_arange_samples,
           error_inputs=_arange_errors),
    OpInfo("linspace", op=_linspace_op, ref=_linspace_ref, dtypes=REAL + COMPLEX, sample_inputs=_linspace_samples,
           error_inputs=_linspace_errors),
    OpInfo("linspace", variant="logspace", op=_logspace_op, ref=_logspace_ref, dtypes=REAL,
           sample_inputs=_logspace_samples),
    OpInfo("eye", op=_eye_op, ref=_eye_ref, dtypes=ALL_DTYPES, sample_inputs=_eye_samples,
           error_inputs=_eye_errors, exact=True),
]
