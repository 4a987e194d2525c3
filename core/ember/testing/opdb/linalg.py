"""Op database entries: matrix products (matmul, mm, bmm, mv, dot, vdot, addmm, addmv, baddbmm,
addbmm, einsum) and the linalg norms.

References compute in float64 / complex128 / int64 and cast back, so integer products wrap
like PyTorch's (modulo 2**bits); ``vdot`` conjugates its first argument, ``dot`` does not.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import FLOATING_AND_COMPLEX, NUMERIC, seed_for, with_grad
from .reduction import upcast, _norm_ref, _norm_samples

__all__ = ["OPINFOS", "op_db"]


def _acc(*arrays):
    k = np.result_type(*arrays).kind
    return np.complex128 if k == "c" else np.float64 if k == "f" else np.int64


def _mm(a, b):
    acc = _acc(a, b)
    return np.matmul(a.astype(acc), b.astype(acc)).astype(np.result_type(a, b))


def _matmul_ref(a, b):
    return _mm(a, b)


def _dot_ref(a, b, *, conj=False):
    acc = _acc(a, b)
    x = np.conj(a) if conj else a
    return np.asarray(np.sum(x.astype(acc) * b.astype(acc))).astype(a.dtype)


def _scale(x, beta, alpha, c, p):
    """beta * c + alpha * p with beta == 0 ignoring c (NaN in c does not propagate: PyTorch's rule)."""
    acc = _acc(c, p)
    r = alpha * p.astype(acc)
    if beta != 0:
        r = r + beta * c.astype(acc)
    return r.astype(x)


def _addmm_ref(c, m1, m2, *, beta=1, alpha=1):
    acc = _acc(m1, m2)
    p = np.matmul(m1.astype(acc), m2.astype(acc))
    return _scale(c.dtype, beta, alpha, np.broadcast_to(c, p.shape), p)


def _addbmm_ref(c, b1, b2, *, beta=1, alpha=1):
    acc = _acc(b1, b2)
    p = np.matmul(b1.astype(acc), b2.astype(acc)).sum(0)
    return _scale(c.dtype, beta, alpha, np.broadcast_to(c, p.shape), p)


def _einsum_ref(eq, *ops):
    """np.einsum; integer / bool results as PyTorch: one operand with a summed-out label is a
    ``sum`` (int64), anything else keeps the operands' dtype."""
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])
    acc = _acc(*ops)
    r = np.asarray(np.einsum(eq, *[o.astype(acc) for o in ops]))
    out = ops[0].dtype
    if len(ops) == 1 and out.kind in "biu":
        lhs, _, rhs = eq.partition("->")
        labels = set(lhs.replace(".", ""))
        kept = set(rhs) if _ else {c for c in labels if lhs.count(c) == 1}
        if labels - kept:
            out = np.dtype(np.int64)
    return r.astype(out)


def _vector_norm_ref(a, ord=2, dim=None, keepdim=False, *, dtype=None):
    return _norm_ref(a, ord, dim, keepdim, dtype=dtype)


class _Mk:
    """Numbered tensors with the op's stable seeds; small values keep float16 products exact enough."""

    def __init__(self, op, device, dtype, requires_grad):
        self.op, self.device, self.dtype, self.rg, self.k = op, device, dtype, requires_grad, 0
        self.low, self.high = (-3, 3) if (dtype.is_floating_point or dtype.is_complex) else (None, None)
        if dtype.name == "uint8":
            self.low, self.high = 0, 4

    def __call__(self, shape, *, t=False, nc=False, sl=False, grad=True):
        self.k += 1
        s = seed_for(self.op, self.dtype, self.k)
        kw = dict(device=self.device, dtype=self.dtype, low=self.low, high=self.high, seed=s)
        if t:
            x = make_tensor(tuple(reversed(shape)), **kw).t()
        elif nc:
            x = make_tensor(shape, noncontiguous=True, **kw)
        elif sl:
            x = make_tensor((shape[0] + 1,) + tuple(shape[1:-1]) + (shape[-1] * 2,), **kw)[1:, ..., ::2]
        else:
            x = make_tensor(shape, **kw)
        return with_grad(x, self.rg and grad)


def _mm_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 4)), (m((4, 2)),), name="2-D")
    yield SampleInput(m((3, 4), t=True), (m((4, 2), nc=True),), name="transposed, noncontiguous")
    yield SampleInput(m((3, 4), sl=True), (m((4, 5), t=True),), name="sliced, transposed")
    yield SampleInput(m((0, 4)), (m((4, 2)),), name="empty rows")
    yield SampleInput(m((3, 0)), (m((0, 2)),), name="empty inner dim (zeros)")
    yield SampleInput(m((1, 1)), (m((1, 1)),), name="1x1")


def _matmul_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((4,)), (m((4,)),), name="1-D @ 1-D (dot)")
    yield SampleInput(m((3, 4)), (m((4,)),), name="2-D @ 1-D")
    yield SampleInput(m((4,)), (m((4, 2)),), name="1-D @ 2-D")
    yield SampleInput(m((3, 4), t=True), (m((4, 2)),), name="2-D transposed @ 2-D")
    yield SampleInput(m((2, 3, 4)), (m((4, 5)),), name="batched @ 2-D")
    yield SampleInput(m((2, 1, 3, 4)), (m((5, 4, 2)),), name="broadcast batch")
    yield SampleInput(m((4,)), (m((2, 4, 3)),), name="1-D @ batched")
    yield SampleInput(m((2, 3, 4), nc=True), (m((2, 4, 2)),), name="noncontiguous batched")
    yield SampleInput(m((0, 3, 4)), (m((4, 2)),), name="empty batch")
    yield SampleInput(m((3, 0)), (m((0, 2)),), name="empty inner dim")


def _bmm_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((2, 3, 4)), (m((2, 4, 2)),), name="3-D")
    yield SampleInput(m((2, 3, 4), nc=True), (m((2, 4, 2), nc=True),), name="noncontiguous")
    yield SampleInput(m((2, 4, 3)).transpose(1, 2), (m((2, 2, 4)).transpose(1, 2),), name="transposed")
    yield SampleInput(m((0, 3, 4)), (m((0, 4, 2)),), name="empty batch")
    yield SampleInput(m((2, 3, 0)), (m((2, 0, 2)),), name="empty inner dim")


def _mv_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 4)), (m((4,)),), name="2-D")
    yield SampleInput(m((3, 4), t=True), (m((4,), nc=True),), name="transposed, noncontiguous")
    yield SampleInput(m((0, 4)), (m((4,)),), name="empty")
    yield SampleInput(m((3, 0)), (m((0,)),), name="empty inner")


def _dot_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((5,)), (m((5,)),), name="1-D")
    yield SampleInput(m((5,), nc=True), (m((5,)),), name="noncontiguous")
    yield SampleInput(m((0,)), (m((0,)),), name="empty")
    yield SampleInput(m((3, 4))[1], (m((4, 3))[:, 0],), name="sliced")


def _add_kw(dtype):
    if dtype.is_complex:
        return {"beta": 0.5, "alpha": 2 - 1j}
    if dtype.is_floating_point:
        return {"beta": 0.5, "alpha": -1.5}
    return {"beta": 2, "alpha": 3}


def _addmm_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    kw = _add_kw(dtype)
    yield SampleInput(m((3, 2)), (m((3, 4)), m((4, 2))), name="2-D")
    yield SampleInput(m((2,)), (m((3, 4), t=True), m((4, 2))), dict(kw), name="broadcast self, beta/alpha")
    yield SampleInput(m((3, 2), nc=True), (m((3, 4), sl=True), m((4, 2), t=True)), name="views")
    yield SampleInput(m((3, 2)), (m((3, 0)), m((0, 2))), name="empty inner (beta * self)")
    if dtype.is_floating_point:
        c = make_tensor((3, 2), device=device, dtype=dtype, seed=7)
        c = c * float("nan")
        yield SampleInput(with_grad(c, requires_grad), (m((3, 4)), m((4, 2))), {"beta": 0},
                          name="beta=0 ignores NaN in self")


def _addmv_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3,)), (m((3, 4)), m((4,))), name="2-D")
    yield SampleInput(m(()), (m((3, 4), t=True), m((4,), nc=True)), _add_kw(dtype), name="broadcast self, views")
    yield SampleInput(m((3,)), (m((3, 0)), m((0,))), name="empty inner")


def _baddbmm_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((2, 3, 2)), (m((2, 3, 4)), m((2, 4, 2))), name="3-D")
    yield SampleInput(m((3, 2)), (m((2, 3, 4), nc=True), m((2, 4, 2))), _add_kw(dtype),
                      name="broadcast self, beta/alpha")
    yield SampleInput(m((0, 3, 2)), (m((0, 3, 4)), m((0, 4, 2))), name="empty batch")


def _addbmm_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 2)), (m((2, 3, 4)), m((2, 4, 2))), name="3-D")
    yield SampleInput(m((2,)), (m((2, 3, 4), nc=True), m((2, 4, 2))), _add_kw(dtype), name="broadcast self")
    yield SampleInput(m((3, 2)), (m((0, 3, 4)), m((0, 4, 2))), name="empty batch (beta * self)")


def _einsum_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput("ij,jk->ik", (m((3, 4)), m((4, 2))), name="matmul")
    yield SampleInput("ij,jk", ([m((3, 4), t=True), m((4, 2))],), name="list form, implicit output")
    yield SampleInput("bij,bjk->bik", (m((2, 3, 4)), m((2, 4, 2), nc=True)), name="batched")
    yield SampleInput("ii->i", (m((3, 3)),), name="diagonal")
    yield SampleInput("ii", (m((3, 3)),), name="trace")
    yield SampleInput("ij->ji", (m((3, 4)),), name="transpose")
    yield SampleInput("i,j->ij", (m((3,)), m((4,))), name="outer")
    yield SampleInput("...ij,...jk->...ik", (m((2, 3, 4)), m((4, 2))), name="ellipsis broadcast")
    yield SampleInput("ij->", (m((0, 3)),), name="empty sum")
    yield SampleInput("i,i,i->", (m((4,)), m((4,)), m((4,))), name="three operands")


def _matrix_norm_ref(a, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    x = a.astype(np_dtype_of(dtype)) if dtype is not None else a
    x = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    d0, d1 = dim[0] % a.ndim, dim[1] % a.ndim
    xm = np.moveaxis(x, (d0, d1), (-2, -1))
    r = np.linalg.norm(xm, ord=ord, axis=(-2, -1)) if xm.size else np.zeros(xm.shape[:-2])
    if keepdim:
        r = np.expand_dims(np.expand_dims(r, -1), -1)
        r = np.moveaxis(r, (-2, -1), (d0, d1)) if True else r
    base = np_dtype_of(dtype) if dtype is not None else a.dtype
    out = {"complex64": np.float32, "complex128": np.float64}.get(base.name, base)
    return np.asarray(r).astype(out)


def np_dtype_of(dt):
    """The numpy dtype of ember dtype ``dt`` (bfloat16 through ml_dtypes)."""
    return np.dtype(dt.numpy_dtype)


def _matrix_norm_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    lowp = dtype.name in ("float16", "bfloat16")
    yield SampleInput(m((3, 4)), (), name="fro")
    yield SampleInput(m((2, 3, 4), nc=True), (), {"keepdim": True}, name="batched, keepdim")
    yield SampleInput(m((4, 3), t=True), ("fro", (0, 1)), name="transposed, dim=(0, 1)")
    yield SampleInput(m((3, 2, 4)), ("fro", (-1, 0)), name="dim=(-1, 0)")
    for o in (1, -1, math.inf, -math.inf) + (() if lowp else ("nuc", 2, -2)):
        # ember has no derivative for the SVD-based orders (yet): those samples need no grad
        yield SampleInput(m((3, 4), grad=o not in ("nuc", 2, -2)), (o,), name=f"ord={o}")


def _vector_norm_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, dtype=ember.int64, seed=1)), RuntimeError,
                     r"linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long")
    yield ErrorInput(SampleInput(ember.empty((0, 3), device=device), (math.inf,), {"dim": 0}), RuntimeError,
                     r"linalg.vector_norm cannot compute the inf norm on the dimension 0 ?because this dimension is "
                     r"empty and the operation does not have an identity")


def _matrix_norm_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, seed=1)), RuntimeError,
                     r"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    yield ErrorInput(SampleInput(make_tensor((3, 3), device=device, seed=1), (3,)), RuntimeError,
                     r"linalg.matrix_norm: Order 3 not supported.")
    yield ErrorInput(SampleInput(make_tensor((3, 3), device=device, seed=1), ("fro", (0, 0))), RuntimeError,
                     r"linalg.matrix_norm: dims must be different. Got \(0, 0\)")


def _mm_errors(op, device):
    import ember
    a, b = make_tensor((3, 4), device=device, seed=1), make_tensor((5, 2), device=device, seed=2)
    yield ErrorInput(SampleInput(a, (b,)), RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x2\)")
    yield ErrorInput(SampleInput(a, (make_tensor((4, 2), device=device, dtype=ember.float64, seed=3),)), RuntimeError,
                     r"expected (m1 and m2 to have the same dtype|mat1 and mat2 must have the same dtype)")
    yield ErrorInput(SampleInput(make_tensor((4,), device=device, seed=1), (b,)), RuntimeError,
                     r"self must be a matrix")


def _matmul_errors(op, device):
    a = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(a, (make_tensor((5, 2), device=device, seed=2),)), RuntimeError,
                     r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x2\)")
    yield ErrorInput(SampleInput(make_tensor((), device=device, seed=1), (a,)), RuntimeError,
                     r"both arguments to matmul need to be at least 1D, but they are 0D and 2D")


def _bmm_errors(op, device):
    a = make_tensor((2, 3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(a, (make_tensor((2, 5, 2), device=device, seed=2),)), RuntimeError,
                     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\] but got: \[2, 5\]")
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), (a,)), RuntimeError,
                     r"batch1 must be a 3D tensor")


def _dot_errors(op, device):
    import ember
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, seed=1), (make_tensor((4,), device=device, seed=2),)),
                     RuntimeError, r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same "
                     r"number of elements, but got 3 and 4 elements respectively")
    yield ErrorInput(SampleInput(make_tensor((3, 1), device=device, seed=1), (make_tensor((3,), device=device,
                                                                                         seed=2),)),
                     RuntimeError, r"1D tensors expected, but got 2D and 1D tensors")
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, seed=1),
                                 (make_tensor((3,), device=device, dtype=ember.float64, seed=2),)),
                     RuntimeError, r"dot : expected both vectors to have same dtype, but found Float and Double")


def _mv_errors(op, device):
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), (make_tensor((5,), device=device,
                                                                                         seed=2),)),
                     RuntimeError, r"size mismatch, got input \(3\), mat \(3x4\), vec \(5\)")


def _einsum_errors(op, device):
    a = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput("ij,jk->ik", (a, make_tensor((5, 2), device=device, seed=2))), RuntimeError,
                     r"einsum\(\): subscript j has size 5 for operand 1 which does not broadcast with previously seen "
                     r"size 4")
    yield ErrorInput(SampleInput("ij,jk->ik", (a,)), RuntimeError,
                     r"einsum\(\): more operands were provided than specified in the equation|einsum\(\): fewer "
                     r"operands were provided than specified in the equation")
    yield ErrorInput(SampleInput("i->i", (a,)), RuntimeError,
                     r"einsum\(\): the number of subscripts in the equation \(1\) does not match the number of "
                     r"dimensions \(2\) for operand 0 and no ellipsis was given")


def _build():
    from ember import linalg as L
    ops = []
    add = ops.append
    ac = dict(supports_autograd=True, supports_out=True)
    tol = {"float16": (2e-3, 5e-3), "bfloat16": (1.6e-2, 5e-2)}
    add(OpInfo("matmul", ref=upcast(_matmul_ref), dtypes=NUMERIC, sample_inputs=_matmul_samples,
               error_inputs=_matmul_errors, tolerances=tol, **ac))
    add(OpInfo("mm", ref=upcast(_matmul_ref), dtypes=NUMERIC, sample_inputs=_mm_samples, error_inputs=_mm_errors,
               tolerances=tol, **ac))
    add(OpInfo("bmm", ref=upcast(_matmul_ref), dtypes=NUMERIC, sample_inputs=_bmm_samples, error_inputs=_bmm_errors,
               tolerances=tol, **ac))
    add(OpInfo("mv", ref=upcast(_matmul_ref), dtypes=NUMERIC, sample_inputs=_mv_samples, error_inputs=_mv_errors,
               tolerances=tol, **ac))
    add(OpInfo("dot", ref=upcast(_dot_ref), dtypes=NUMERIC, sample_inputs=_dot_samples, error_inputs=_dot_errors,
               tolerances=tol, **ac))
    add(OpInfo("vdot", ref=upcast(partial(_dot_ref, conj=True)), dtypes=NUMERIC, sample_inputs=_dot_samples,
               tolerances=tol, **ac))
    add(OpInfo("addmm", ref=upcast(_addmm_ref), dtypes=NUMERIC, sample_inputs=_addmm_samples, tolerances=tol,
               inplace=lambda t, *a, **k: t.addmm_(*a, **k), **ac))
    add(OpInfo("addmv", ref=upcast(_addmm_ref), dtypes=NUMERIC, sample_inputs=_addmv_samples, tolerances=tol,
               inplace=lambda t, *a, **k: t.addmv_(*a, **k), **ac))
    add(OpInfo("baddbmm", ref=upcast(_addmm_ref), dtypes=NUMERIC, sample_inputs=_baddbmm_samples, tolerances=tol,
               inplace=lambda t, *a, **k: t.baddbmm_(*a, **k), **ac))
    add(OpInfo("addbmm", ref=upcast(_addbmm_ref), dtypes=NUMERIC, sample_inputs=_addbmm_samples, tolerances=tol,
               inplace=lambda t, *a, **k: t.addbmm_(*a, **k), **ac))
    add(OpInfo("einsum", ref=upcast(_einsum_ref), dtypes=NUMERIC, sample_inputs=_einsum_samples,
               error_inputs=_einsum_errors, tolerances=tol, **ac))
    add(OpInfo("linalg_vector_norm", op=L.vector_norm, ref=upcast(_vector_norm_ref), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=partial(_norm_samples, linalg=True), error_inputs=_vector_norm_errors,
               tolerances={"float16": (2e-3, 2e-3)}, **ac))
    add(OpInfo("linalg_matrix_norm", op=L.matrix_norm, ref=upcast(_matrix_norm_ref), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=_matrix_norm_samples, error_inputs=_matrix_norm_errors,
               tolerances={"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-5)}, **ac))
    return ops


OPINFOS = _build()
op_db = OPINFOS
