"""Op database entries: complex numbers (``ember._ops._complex``): the views ``view_as_real`` /
``view_as_complex`` / ``real`` / ``imag``, ``conj`` / ``conj_physical`` / ``resolve_conj`` /
``resolve_neg``, ``angle``, ``complex`` and ``polar``.

References are numpy's (np.conj, np.real, np.imag, np.angle, x[..., 0] + 1j * x[..., 1]). Gradients
are checked in float64, the dtype the harness's gradcheck uses: for ops with a complex result from
real inputs (``view_as_complex``, ``complex``, ``polar``) that is a check of complex autograd too
(gradcheck takes a complex output as its real and imaginary parts); for the ops of complex input the
float64 sample exercises their real branch, and tests/complex checks complex128 leaves against torch.
"""
from __future__ import annotations

import numpy as np

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import COMPLEX, NUMERIC, REAL, seed_for, shape_samples, unary_samples, with_grad

__all__ = ["op_db"]

_NO_COMPLEX_OCL = "ember-opencl has no complex kernels"
_OCL = {("op", "opencl", "complex64"), ("op", "opencl", "complex128")}
_OCL_OUT = {("out", "opencl", "float32"), ("out", "opencl", "float64")}    # a complex out= of real inputs
_TOL = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-5), "complex64": (1e-5, 1e-5)}


def _angle_ref(x):
    if x.dtype.kind in "biu":
        x = x.astype(np.float32)
    return np.angle(x).astype(x.real.dtype)


def _pair_samples(op, device, dtype, requires_grad=False):
    """(real, imag) / (abs, angle) pairs: same shape, broadcasting, non-contiguous, 0-dim, empty."""
    def m(i, shape, **kw):
        t = make_tensor(shape, device=device, dtype=dtype, seed=seed_for(op, dtype, i), **kw)
        return with_grad(t, requires_grad)
    yield SampleInput(m(0, (3, 4)), (m(1, (3, 4)),), name="same shape")
    yield SampleInput(m(2, (3, 1)), (m(3, (1, 4)),), name="broadcast")
    yield SampleInput(m(4, (2, 5), noncontiguous=True), (m(5, (2, 5)),), name="noncontiguous")
    yield SampleInput(m(6, ()), (m(7, ()),), name="0-dim")
    yield SampleInput(m(8, (0, 3)), (m(9, (0, 3)),), name="empty")


def _pair_errors(name):
    def error_inputs(op, device):
        f32 = make_tensor((2,), device=device, dtype=ember.float32, seed=1)
        f64 = make_tensor((2,), device=device, dtype=ember.float64, seed=2)
        i32 = make_tensor((2,), device=device, dtype=ember.int32, seed=3)
        yield ErrorInput(SampleInput(f32, (f64,), name="float32 and float64"), RuntimeError,
                         r"Expected object of scalar type Float but got scalar type Double for second argument")
        yield ErrorInput(SampleInput(i32, (i32,), name="int32"), RuntimeError,
                         r"Expected both inputs to be Half, Float or Double tensors but got Int and Int")
    return error_inputs


def _view_as_complex_samples(op, device, dtype, requires_grad=False):
    yield from shape_samples(op, device, dtype, requires_grad, cases=(
        ("(2,)", (2,), (), {}), ("(3, 2)", (3, 2), (), {}), ("(2, 3, 2)", (2, 3, 2), (), {}),
        ("empty", (0, 2), (), {})))


def _view_as_complex_errors(op, device):
    x = make_tensor((3, 3), device=device, dtype=ember.float32, seed=1)
    yield ErrorInput(SampleInput(x, name="last dim 3"), RuntimeError, r"Tensor must have a last dimension of size 2")
    yield ErrorInput(SampleInput(make_tensor((2, 3), device=device, dtype=ember.float32, seed=2).t(),
                                 name="last dim stride 3"), RuntimeError,
                     r"Tensor must have a last dimension with stride 1")
    yield ErrorInput(SampleInput(make_tensor((3, 2), device=device, dtype=ember.int32, seed=3), name="int32"),
                     RuntimeError, r"view_as_complex is only supported for half, float and double tensors")


def _real_only_errors(name, message):
    def error_inputs(op, device):
        x = make_tensor((3,), device=device, dtype=ember.float32, seed=1)
        yield ErrorInput(SampleInput(x, name="float32"), RuntimeError, message)
    return error_inputs


def _polar_ref(a, b):
    return (a * np.cos(b) + 1j * a * np.sin(b)).astype(np.complex64 if a.dtype == np.float32 else np.complex128)


def _complex_ref(a, b):
    return (a + 1j * b).astype(np.complex64 if a.dtype == np.float32 else np.complex128)


def _build():
    unary = unary_samples
    ops = [
        OpInfo("conj", op=ember.conj, ref=np.conj, dtypes=NUMERIC, sample_inputs=unary, supports_autograd=True,
               tolerances=_TOL, exact=True, xfails=_OCL, xfail_reasons={k: _NO_COMPLEX_OCL for k in _OCL}),
        OpInfo("conj_physical", op=ember.conj_physical, ref=np.conj, dtypes=NUMERIC, sample_inputs=unary,
               supports_autograd=True, exact=True, xfails=_OCL, xfail_reasons={k: _NO_COMPLEX_OCL for k in _OCL}),
        OpInfo("resolve_conj", op=ember.resolve_conj, ref=np.copy, dtypes=NUMERIC, sample_inputs=unary,
               supports_autograd=True, exact=True),
        OpInfo("resolve_neg", op=ember.resolve_neg, ref=np.copy, dtypes=NUMERIC, sample_inputs=unary,
               supports_autograd=True, exact=True),
        OpInfo("real", op=ember.real, ref=np.real, dtypes=NUMERIC, sample_inputs=unary, supports_autograd=True,
               exact=True, is_view=True),
        OpInfo("imag", op=ember.imag, ref=np.imag, dtypes=COMPLEX, sample_inputs=unary, exact=True, is_view=True,
               error_inputs=_real_only_errors("imag", r"imag is not implemented for tensors with non-complex dtypes")),
        OpInfo("view_as_real", op=ember.view_as_real, ref=lambda x: np.stack([x.real, x.imag], -1), dtypes=COMPLEX,
               sample_inputs=unary, exact=True, is_view=True,
               error_inputs=_real_only_errors("view_as_real", r"view_as_real is only supported for complex tensors")),
        OpInfo("view_as_complex", op=ember.view_as_complex, ref=lambda x: x[..., 0] + 1j * x[..., 1],
               dtypes=("float32", "float64"), sample_inputs=_view_as_complex_samples, supports_autograd=True,
               exact=True, is_view=True, error_inputs=_view_as_complex_errors),
        OpInfo("angle", op=ember.angle, ref=_angle_ref, dtypes=REAL + COMPLEX, sample_inputs=unary,
               supports_autograd=True, tolerances=_TOL, xfails=_OCL,
               xfail_reasons={k: _NO_COMPLEX_OCL for k in _OCL}),
        # out=: the core copies the result into a complex out tensor, and ember-opencl has no complex copy_
        OpInfo("complex", op=ember.complex, ref=_complex_ref, dtypes=("float32", "float64"),
               sample_inputs=_pair_samples, supports_autograd=True, supports_out=True, exact=True,
               error_inputs=_pair_errors("complex"), xfails=_OCL_OUT,
               xfail_reasons={k: _NO_COMPLEX_OCL for k in _OCL_OUT}),
        OpInfo("polar", op=ember.polar, ref=_polar_ref, dtypes=("float32", "float64"), sample_inputs=_pair_samples,
               supports_autograd=True, supports_out=True, tolerances=_TOL, error_inputs=_pair_errors("polar"),
               xfails=_OCL_OUT, xfail_reasons={k: _NO_COMPLEX_OCL for k in _OCL_OUT}),
    ]
    return ops


op_db = _build()
