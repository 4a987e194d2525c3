"""Op database entries: copy_ and fill_ (``ember._ops._copy``): strided, broadcasting,
dtype-converting copies; fills with numbers and 0-dim tensors."""
from __future__ import annotations

import numpy as np

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import ALL_DTYPES, seed_for
from ._common import np_dtype

__all__ = ["op_db"]


def _copy_op(dst, src, non_blocking=False):
    return dst.copy_(src, non_blocking)


def _copy_ref(dst, src, non_blocking=False):
    src = np.asarray(src)
    if np.iscomplexobj(src) and not np.iscomplexobj(dst):
        src = src.real
    return np.broadcast_to(src, dst.shape).astype(dst.dtype)


def _copy_samples(op, device, dtype, requires_grad=False):
    k = iter(range(100))

    def mk(shape, dt=dtype, **kw):
        # non-negative values: a negative float cast to uint8 is undefined behaviour in C
        return make_tensor(shape, device=device, dtype=dt, low=0, high=9, seed=seed_for(op, dtype, next(k)), **kw)

    yield SampleInput(mk((3, 4)), (mk((3, 4)),), name="same dtype")
    yield SampleInput(mk(()), (mk(()),), name="0-dim")
    yield SampleInput(mk((0, 4)), (mk((4,)),), name="empty")
    yield SampleInput(mk((3, 4)), (mk((4,)),), name="broadcast (4,) -> (3, 4)")
    yield SampleInput(mk((3, 4)), (mk(()),), name="broadcast 0-dim")
    yield SampleInput(mk((3, 4), noncontiguous=True), (mk((4, 3)).t(),), name="noncontiguous dst, transposed src")
    yield SampleInput(mk((4, 3)).t(), (mk((3, 4), noncontiguous=True),),
                      name="transposed dst, noncontiguous src")
    yield SampleInput(mk((4, 6))[1:, ::2], (mk((3, 3)),), name="sliced dst")
    for src_dt in ("float64", "int64", "bool", "float16"):
        if src_dt != dtype.name:
            yield SampleInput(mk((3, 4)), (mk((3, 4), getattr(ember, src_dt)),), name=f"from {src_dt}")
    if dtype.is_floating_point:
        sp = ember.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 2.5], dtype=ember.float64, device=device)
        yield SampleInput(make_tensor((5,), device=device, dtype=dtype, seed=1), (sp,), name="special values")


def _copy_errors(op, device):
    x = make_tensor((2,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (make_tensor((3,), device=device, seed=2),), name="size mismatch"),
                     RuntimeError, r"The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                   r"non-singleton dimension 0")
    yield ErrorInput(SampleInput(x, (make_tensor((3, 2), device=device, seed=2),), name="src has more dims"),
                     RuntimeError, r"output with shape \[2\] doesn't match the broadcast shape \[3, 2\]")


def _fill_op(t, value):
    return t.fill_(value)


def _fill_ref(t, value):
    return np.full(t.shape, value).astype(t.dtype) if not isinstance(value, np.ndarray) else \
        np.broadcast_to(value, t.shape).astype(t.dtype)


def _fill_samples(op, device, dtype, requires_grad=False):
    v = True if dtype.name == "bool" else (complex(1.5, -2) if dtype.is_complex else
                                           (2.5 if dtype.is_floating_point else 7))
    mk = lambda shape, i, **kw: make_tensor(shape, device=device, dtype=dtype, seed=seed_for(op, dtype, i), **kw)
    yield SampleInput(mk((3, 4), 0), (v,), name="contiguous")
    yield SampleInput(mk((), 1), (v,), name="0-dim")
    yield SampleInput(mk((0, 3), 2), (v,), name="empty")
    yield SampleInput(mk((3, 4), 3, noncontiguous=True), (v,), name="noncontiguous")
    yield SampleInput(mk((4, 3), 4).t(), (v,), name="transposed")
    yield SampleInput(mk((4, 6), 5)[1:, ::2], (0,), name="sliced, int zero")
    yield SampleInput(mk((3,), 6), (ember.tensor(v, dtype=dtype, device=device),), name="0-dim tensor value")
    if dtype.is_floating_point:
        yield SampleInput(mk((3,), 7), (float("nan"),), name="nan")
        yield SampleInput(mk((3,), 8), (float("-inf"),), name="-inf")
    if dtype.name not in ("bool", "uint8"):
        yield SampleInput(mk((3,), 9), (-3,), name="negative int")


def _fill_errors(op, device):
    x = make_tensor((2,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (make_tensor((2,), device=device, seed=2),), name="1-D value"),
                     RuntimeError, r"fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions")


op_db = [
    OpInfo("copy_", op=_copy_op, ref=_copy_ref, dtypes=ALL_DTYPES, sample_inputs=_copy_samples,
           error_inputs=_copy_errors, exact=True),
    OpInfo("fill_", op=_fill_op, ref=_fill_ref, dtypes=ALL_DTYPES, sample_inputs=_fill_samples,
           error_inputs=_fill_errors, exact=True),
]
