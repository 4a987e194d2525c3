"""Op database entries: ``ember.fft`` (the 18 transforms, fftshift / ifftshift) and the three
primitives behind them, which these entries cover (``fft_c2c``, ``fft_r2c``, ``fft_c2r``).

References are numpy.fft (scipy.fft for hfft2 / hfftn / ihfft2 / ihfftn, which numpy lacks),
computed in complex128 / float64 and cast to PyTorch's result dtype: complex64 for float32
and integer input (the default float), complex128 for float64; the real type for irfft* / hfft*.

Samples: 1-D / 2-D / 3-D, non-contiguous and transposed inputs, each ``norm``, explicit dims
(negative too), ``n`` / ``s`` that pad and that trim, and -1 in ``s``. Gradients are checked
(gradcheck) where the result is real: irfft* / hfft* from a real input, and "abs" variants of the
complex-result transforms (|fft(x)|), which exercise the primitives' adjoints through a real output
(tests/complex and tests/fft check complex leaves against torch).
"""
from __future__ import annotations

from functools import partial

import numpy as np
import scipy.fft as sfft

from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import seed_for

__all__ = ["OPINFOS", "op_db"]

#: every dtype the transforms take: integers / bool promote to the default float; no float16 / bfloat16
#: (PyTorch's cpu refuses them: "Unsupported dtype Half")
FFT_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64", "complex64", "complex128")
REAL_INPUT = tuple(d for d in FFT_DTYPES if not d.startswith("complex"))
_NO_COMPLEX_OCL = "ember-opencl has no complex kernels (copy_ / abs / mul of complex64, complex128)"
TOL = {"float32": (1e-4, 1e-3), "complex64": (1e-4, 1e-3), "float64": (1e-9, 1e-9), "complex128": (1e-9, 1e-9)}


# ---------------------------------------------------------------- references
def _result_dtype(x, real):
    if x.dtype in (np.float64, np.complex128):
        return np.float64 if real else np.complex128
    return np.float32 if real else np.complex64


def _axes(kind, dim):
    if kind == "1":
        return {"axis": dim}
    return {"axes": None if dim is None else (tuple(dim) if not isinstance(dim, int) else (dim,))}


def _ref(fn, kind, real_out, x, n=None, dim=None, norm=None, s=None):
    """numpy / scipy ``fn`` on ``x`` upcast to (complex) float64, cast to PyTorch's result dtype."""
    n_or_s = n if kind == "1" else s
    xa = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    if kind == "1":
        r = fn(xa, n_or_s, -1 if dim is None else dim, norm)
    else:
        if dim is None and kind == "2":
            dim = (-2, -1)
        r = fn(xa, n_or_s, **_axes(kind, dim), norm=norm)
    return np.asarray(r).astype(_result_dtype(x, real_out))


def _abs_ref(fn, kind, x, n=None, dim=None, norm=None, s=None):
    return np.abs(_ref(fn, kind, False, x, n, dim, norm, s))


# ---------------------------------------------------------------- samples
def _m(op, device, dtype, requires_grad, i, shape, nc=False, t=False):
    rg = requires_grad and dtype.is_floating_point
    if t:
        x = make_tensor(tuple(reversed(shape)), device=device, dtype=dtype, seed=seed_for(op, dtype, i)).t()
        return x.detach().requires_grad_(True) if rg else x
    return make_tensor(shape, device=device, dtype=dtype, noncontiguous=nc, requires_grad=rg,
                       seed=seed_for(op, dtype, i))


def _samples_1d(op, device, dtype, requires_grad=False, *, c2r=False):
    m = partial(_m, op, device, dtype, requires_grad)
    first = 5 if c2r else 8                         # c2r: 5 frequencies -> 8 samples by default
    yield SampleInput(m(0, (first,)), name="1-D")
    yield SampleInput(m(1, (3, first)), kwargs={"norm": "ortho"}, name="2-D, ortho")
    yield SampleInput(m(2, (3, 7)), kwargs={"dim": 0, "norm": "forward"}, name="dim=0, forward")
    yield SampleInput(m(3, (4, 6), nc=True), kwargs={"n": 10}, name="noncontiguous, n pads")
    yield SampleInput(m(4, (6, 4), t=True), kwargs={"n": 3, "dim": -1, "norm": "backward"},
                      name="transposed, n trims")
    yield SampleInput(m(5, (2, 3, 5)), kwargs={"dim": 1, "n": 4}, name="3-D, middle dim")
    yield SampleInput(m(6, (1,)), kwargs={"n": 1} if not c2r else {"n": 2}, name="single point")


def _samples_nd(op, device, dtype, requires_grad=False, *, two=False):
    m = partial(_m, op, device, dtype, requires_grad)
    yield SampleInput(m(0, (4, 6)), name="2-D")
    yield SampleInput(m(1, (2, 4, 5)), kwargs={"norm": "ortho"}, name="3-D, ortho")
    yield SampleInput(m(2, (3, 4, 6), nc=True), kwargs={"s": (5, 4), "norm": "forward"},
                      name="noncontiguous, s pads and trims")
    yield SampleInput(m(3, (5, 4), t=True), kwargs={"dim": (0, 1)}, name="transposed, dim")
    yield SampleInput(m(4, (2, 3, 4)), kwargs={"s": (-1, 6), "dim": (-1, 0)}, name="s with -1, dims reordered")
    if not two:
        yield SampleInput(m(5, (3, 4, 5)), kwargs={"dim": (1,)}, name="one dim")
        yield SampleInput(m(6, (3, 4)), kwargs={"s": (6,)}, name="s only: the last dims")


def _shift_samples(op, device, dtype, requires_grad=False):
    m = partial(_m, op, device, dtype, requires_grad)
    yield SampleInput(m(0, (7,)), name="1-D odd")
    yield SampleInput(m(1, (4, 6)), name="2-D, all dims")
    yield SampleInput(m(2, (3, 5), nc=True), kwargs={"dim": 1}, name="noncontiguous, dim=1")
    yield SampleInput(m(3, (2, 3, 5)), kwargs={"dim": (0, -1)}, name="3-D, two dims")


# ---------------------------------------------------------------- errors
def _errors_1d(name, op, device, *, real_only=False):
    x = make_tensor((4,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, kwargs={"n": 0}), RuntimeError, r"Invalid number of data points \(0\) specified")
    yield ErrorInput(SampleInput(x, kwargs={"dim": 3}), IndexError, r"Dimension out of range \(expected to be in "
                                                                      r"range of \[-1, 0\], but got 3\)")
    yield ErrorInput(SampleInput(x, kwargs={"norm": "bad"}), RuntimeError, r'Invalid normalization mode: "bad"')
    yield ErrorInput(SampleInput(make_tensor((), device=device, seed=2)), IndexError,
                     r"Dimension specified as -1 but tensor has no dimensions")
    import ember
    yield ErrorInput(SampleInput(make_tensor((4,), device=device, dtype=ember.float16, seed=3)), RuntimeError,
                     r"Unsupported dtype Half")
    if real_only:
        yield ErrorInput(SampleInput(make_tensor((4,), device=device, dtype=ember.complex64, seed=4)), RuntimeError,
                         rf"{name} expects a real input tensor, but got ComplexFloat")


def _errors_nd(name, op, device):
    x = make_tensor((4, 4), device=device, seed=1)
    if name.endswith("n"):      # fftn & co.: dim=None takes the last len(s) dims
        yield ErrorInput(SampleInput(x, kwargs={"s": (2, 2, 2)}), RuntimeError,
                         r"Got shape with 3 values but input tensor only has 2 dimensions\.")
    else:                       # fft2 & co.: dim=(-2, -1) is given by default
        yield ErrorInput(SampleInput(x, kwargs={"s": (2, 2, 2)}), RuntimeError,
                         r"When given, dim and shape arguments must have the same length")
    yield ErrorInput(SampleInput(x, kwargs={"s": (2, 2), "dim": (0,)}), RuntimeError,
                     r"When given, dim and shape arguments must have the same length")
    yield ErrorInput(SampleInput(x, kwargs={"dim": (0, 0)}), RuntimeError, r"FFT dims must be unique")
    yield ErrorInput(SampleInput(x, kwargs={"s": (0, 4)}), RuntimeError, r"Invalid number of data points \(0\)")
    if name in ("rfft2", "rfftn", "ihfft2", "ihfftn"):
        import ember
        msg = (r"rfftn expects a real-valued input tensor, but got ComplexFloat" if name.startswith("r") else
               r"Only supports floating-point dtypes, but found: ComplexFloat")
        yield ErrorInput(SampleInput(make_tensor((4, 4), device=device, dtype=ember.complex64, seed=2)), RuntimeError,
                         msg)


# ---------------------------------------------------------------- entries
def _build():
    import ember
    F = ember.fft
    ops = []
    add = ops.append
    # (name, numpy / scipy function, kind "1" / "2" / "n", real output, input must be real)
    table = [
        ("fft", np.fft.fft, "1", False, False), ("ifft", np.fft.ifft, "1", False, False),
        ("rfft", np.fft.rfft, "1", False, True), ("irfft", np.fft.irfft, "1", True, False),
        ("hfft", np.fft.hfft, "1", True, False), ("ihfft", np.fft.ihfft, "1", False, True),
        ("fft2", np.fft.fft2, "2", False, False), ("ifft2", np.fft.ifft2, "2", False, False),
        ("rfft2", np.fft.rfft2, "2", False, True), ("irfft2", np.fft.irfft2, "2", True, False),
        ("hfft2", sfft.hfft2, "2", True, False), ("ihfft2", sfft.ihfft2, "2", False, True),
        ("fftn", np.fft.fftn, "n", False, False), ("ifftn", np.fft.ifftn, "n", False, False),
        ("rfftn", np.fft.rfftn, "n", False, True), ("irfftn", np.fft.irfftn, "n", True, False),
        ("hfftn", sfft.hfftn, "n", True, False), ("ihfftn", sfft.ihfftn, "n", False, True),
    ]
    for name, fn, kind, real_out, real_in in table:
        c2r = name.startswith(("irfft", "hfft"))
        if kind == "1":
            samples = partial(_samples_1d, c2r=c2r)
            errors = partial(_errors_1d, name, real_only=real_in)
        else:
            samples = partial(_samples_nd, two=kind == "2")
            errors = partial(_errors_nd, name)
        dtypes = REAL_INPUT if real_in else FFT_DTYPES
        # ember-opencl has no complex kernels (copy_, abs, mul for complex64 / complex128): results reach it
        # from the host path, but nothing complex can be computed or copied on the device
        ocl = {("out", "opencl", "*")} | ({("op", "opencl", "*"), ("grad", "opencl", "*")} if c2r else set())
        add(OpInfo(f"fft.{name}", op=getattr(F, name), ref=partial(_ref, fn, kind, real_out), dtypes=dtypes,
                   sample_inputs=samples, error_inputs=errors, tolerances=TOL, supports_out=True,
                   supports_autograd=real_out, xfails=ocl, xfail_reasons={k: _NO_COMPLEX_OCL for k in ocl}))
        if not real_out and name in ("fft", "rfft", "ihfft", "ifft2", "rfftn", "ihfftn"):
            # the adjoints of fft_c2c / fft_r2c through a real result (gradcheck needs one)
            ocl = {("op", "opencl", "*"), ("grad", "opencl", "*")}
            add(OpInfo(f"fft.{name}", variant="abs", op=lambda x, *a, _f=getattr(F, name), **k: _f(x, *a, **k).abs(),
                       ref=partial(_abs_ref, fn, kind), dtypes=("float32", "float64"), sample_inputs=samples,
                       tolerances=TOL, supports_autograd=True, xfails=ocl,
                       xfail_reasons={k: _NO_COMPLEX_OCL for k in ocl}))
    for name, fn in (("fftshift", np.fft.fftshift), ("ifftshift", np.fft.ifftshift)):
        add(OpInfo(f"fft.{name}", op=getattr(F, name), ref=lambda x, dim=None, _f=fn: _f(x, axes=dim),
                   dtypes=FFT_DTYPES, sample_inputs=_shift_samples, supports_autograd=True, exact=True))
    return ops


OPINFOS = _build()
op_db = OPINFOS
