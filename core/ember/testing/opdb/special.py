"""Op database entries: special functions (``ember._ops._special``, reached through ``ember.special``).

References are scipy.special (and numpy for the formula ops), with PyTorch's semantics where
they differ: integer inputs compute in the default float dtype; the orthogonal polynomials
truncate ``n`` to an integer and give 0 for n < 0. Each floating sample set ends with
"special values" (NaN, +-inf, +-0, ...) restricted to the points where scipy and PyTorch
agree (tests/special compares the remaining edges with PyTorch itself).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sps

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import REAL_AND_BOOL, binary_samples, unary_samples
from ._common import as_float, errstate, has_autograd, inplace_of

__all__ = ["op_db"]

_NO_LOWP = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64")
_NAN, _INF = float("nan"), float("inf")
_SPECIALS = [_NAN, _INF, -_INF, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 1.0, -1.0]
_TYPE = {"float16": "Half", "bfloat16": "BFloat16", "complex64": "ComplexFloat", "int64": "Long", "bool": "Bool"}


def _is_int(dtype):
    return not (dtype.is_floating_point or dtype.is_complex)


def _range(dtype, fl, it):
    if dtype.name == "bool":
        return None, None
    if _is_int(dtype):
        lo, hi = it
        return (max(lo, 0) if dtype.name == "uint8" else lo), hi
    return fl


def _unary_sampler(fl, it, specials):
    def sample_inputs(op, device, dtype, requires_grad=False):
        lo, hi = _range(dtype, fl, it)
        yield from unary_samples(op, device, dtype, requires_grad, low=lo, high=hi)
        if specials and dtype.is_floating_point and not requires_grad:
            yield SampleInput(ember.tensor(specials, dtype=dtype, device=device), name="special values")
    return sample_inputs


def _dtype_errors(*names, args=()):
    """Error inputs: a (3,) tensor of each dtype in ``names`` -> NotImplementedError '... not implemented for'."""
    def error_inputs(op, device):
        for n in names:
            t = make_tensor((3,), device=device, dtype=getattr(ember, n), seed=1)
            yield ErrorInput(SampleInput(t, tuple(a(t) if callable(a) else a for a in args), name=n),
                             NotImplementedError, rf"not implemented for '{_TYPE[n]}'")
    return error_inputs


def _chain(*fns):
    def error_inputs(op, device):
        for f in fns:
            yield from f(op, device)
    return error_inputs


def _ref(f):
    return errstate(as_float(f))


# ---------------------------------------------------------------- references
def _sinc(x):
    return np.sinc(x)


def _entr(x):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1)), np.where(x == 0, 0.0, np.where(x < 0, -np.inf, x)))


def _spherical_j0(x):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        r = np.where(x == 0, 1.0, np.sin(x) / np.where(x == 0, 1, x))
    return np.where(np.isinf(x), 0.0, r)


def _logit(x, eps=None):
    x = np.asarray(x)
    if eps is not None and eps >= 0:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def _polygamma(x, n):
    return sps.psi(x) if n == 0 else sps.polygamma(n, x)


def _mvlgamma(x, p):
    x = np.asarray(x, dtype=np.float64) if np.asarray(x).dtype.kind in "biu" else np.asarray(x)
    return sum(sps.gammaln(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)


def _xlogy(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y)))


def _xlog1py(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log1p(y)))


def _poly(f, shift=False):
    def ref(x, n):
        x, n = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64))
        k = np.trunc(n)
        r = f(np.maximum(k, 0).astype(np.int64), 2 * x - 1 if shift else x)
        return np.where(k < 0, 0.0, r)
    return ref


# ---------------------------------------------------------------- unary table
# (op name, public function, reference, dtypes, float range, int range, special values, options)
_GAMMA_SPECIALS = [_NAN, _INF, 0.5, 1.5, 2.5, 1.0, 3.0]
_UNARY = [
    ("digamma", ember.digamma, sps.psi, REAL_AND_BOOL, (0.1, 9.0), (1, 10), _GAMMA_SPECIALS + [0.0, -0.5], {}),
    ("lgamma", ember.lgamma, sps.gammaln, REAL_AND_BOOL, (-4.5, 9.0), (1, 10), _GAMMA_SPECIALS + [0.0, -0.5], {}),
    ("i0", ember.i0, sps.i0, REAL_AND_BOOL, (-6.0, 6.0), (-5, 6), _SPECIALS, {}),
    ("sinc", ember.sinc, _sinc, REAL_AND_BOOL + ("complex64", "complex128"), (-3.0, 3.0), (-3, 4), _SPECIALS, {}),
    ("special_i0e", ember.special.i0e, sps.i0e, REAL_AND_BOOL, (-6.0, 6.0), (-5, 6), _SPECIALS, {}),
    ("special_i1", ember.special.i1, sps.i1, REAL_AND_BOOL, (-6.0, 6.0), (-5, 6), _SPECIALS, {}),
    ("special_i1e", ember.special.i1e, sps.i1e, REAL_AND_BOOL, (-6.0, 6.0), (-5, 6), _SPECIALS, {}),
    ("special_entr", ember.special.entr, _entr, REAL_AND_BOOL, (0.1, 4.0), (-2, 5), _SPECIALS, {}),
    ("special_erfcx", ember.special.erfcx, sps.erfcx, _NO_LOWP, (-3.0, 6.0), (-2, 5), _SPECIALS, {}),
    ("special_ndtri", ember.special.ndtri, sps.ndtri, _NO_LOWP, (0.01, 0.99), (0, 2), _SPECIALS, {}),
    ("special_log_ndtr", ember.special.log_ndtr, sps.log_ndtr, _NO_LOWP, (-8.0, 4.0), (-5, 5), _SPECIALS, {}),
    ("special_airy_ai", ember.special.airy_ai, lambda x: sps.airy(x)[0], _NO_LOWP, (-4.0, 4.0), (-4, 5),
     [_NAN, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 1.0, -1.0], {"tol": (1e-5, 1e-6)}),
    ("special_bessel_j0", ember.special.bessel_j0, sps.j0, _NO_LOWP, (-8.0, 8.0), (-8, 9), _SPECIALS,
     {"tol": (1e-6, 1e-6)}),
    ("special_bessel_j1", ember.special.bessel_j1, sps.j1, _NO_LOWP, (-8.0, 8.0), (-8, 9), _SPECIALS,
     {"tol": (1e-6, 1e-6)}),
    ("special_bessel_y0", ember.special.bessel_y0, sps.y0, _NO_LOWP, (0.1, 8.0), (1, 9), _SPECIALS,
     {"tol": (1e-6, 1e-6)}),
    ("special_bessel_y1", ember.special.bessel_y1, sps.y1, _NO_LOWP, (0.1, 8.0), (1, 9), _SPECIALS,
     {"tol": (1e-6, 1e-6)}),
    ("special_modified_bessel_i0", ember.special.modified_bessel_i0, sps.i0, _NO_LOWP, (-6.0, 6.0), (-5, 6),
     _SPECIALS, {}),
    ("special_modified_bessel_i1", ember.special.modified_bessel_i1, sps.i1, _NO_LOWP, (-6.0, 6.0), (-5, 6),
     _SPECIALS, {}),
    ("special_modified_bessel_k0", ember.special.modified_bessel_k0, sps.k0, _NO_LOWP, (0.1, 6.0), (1, 6),
     _SPECIALS, {}),
    ("special_modified_bessel_k1", ember.special.modified_bessel_k1, sps.k1, _NO_LOWP, (0.1, 6.0), (1, 6),
     _SPECIALS, {}),
    ("special_scaled_modified_bessel_k0", ember.special.scaled_modified_bessel_k0, sps.k0e, _NO_LOWP, (0.1, 6.0),
     (1, 6), _SPECIALS, {}),
    ("special_scaled_modified_bessel_k1", ember.special.scaled_modified_bessel_k1, sps.k1e, _NO_LOWP, (0.1, 6.0),
     (1, 6), _SPECIALS, {}),
    ("special_spherical_bessel_j0", ember.special.spherical_bessel_j0, _spherical_j0, _NO_LOWP, (-8.0, 8.0), (-8, 9),
     _SPECIALS, {}),
]

#: ops whose derivative PyTorch does not define: results do not require grad (not gradchecked)
_NONDIFF = {"special_airy_ai", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
            "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
            "special_modified_bessel_k1", "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
            "special_spherical_bessel_j0"}
#: tensor methods with an in-place form (PyTorch's)
_INPLACE = {"digamma", "lgamma", "i0", "sinc", "logit", "polygamma", "mvlgamma", "igamma", "igammac", "xlogy"}


def _unary_entries():
    out = []
    for name, fn, ref, dtypes, fl, it, specials, opt in _UNARY:
        errs = [] if name == "sinc" else ["complex64"]
        if "float16" not in dtypes:
            errs = ["float16", "bfloat16"] + errs
        tol = opt.get("tol")
        out.append(OpInfo(
            name, op=fn, ref=_ref(ref), dtypes=dtypes, sample_inputs=_unary_sampler(fl, it, specials),
            error_inputs=_dtype_errors(*errs) if errs else None,
            supports_autograd=has_autograd(name) and name not in _NONDIFF, supports_out=True,
            inplace=inplace_of(name) if name in _INPLACE else None,
            tolerances={"float32": tol, "float64": tol} if tol else {}))
    return out


# ---------------------------------------------------------------- ops with arguments
def _logit_samples(op, device, dtype, requires_grad=False):
    lo, hi = _range(dtype, (0.05, 0.95), (0, 2))
    yield from unary_samples(op, device, dtype, requires_grad, low=lo, high=hi)
    if requires_grad:        # eps inside the clamp's range (its kinks and log(0) are not smooth for gradcheck)
        x = make_tensor((3, 4), device=device, dtype=dtype, low=0.15, high=0.85, seed=7)
        yield SampleInput(x.requires_grad_(dtype.is_floating_point), (0.1,), name="eps=0.1")
        return
    wide = _range(dtype, (-0.5, 1.5), (-1, 3))
    for eps in (0.2, 0.0, -1.0):
        x = make_tensor((3, 4), device=device, dtype=dtype, low=wide[0], high=wide[1], seed=7)
        yield SampleInput(x, (eps,), name=f"eps={eps}")
    if dtype.is_floating_point:
        yield SampleInput(ember.tensor([_NAN, 0.0, 1.0, 0.5, -0.5, 1.5], dtype=dtype, device=device),
                          name="special values")


def _polygamma_op(x, n, *, out=None):
    return ember.polygamma(n, x, out=out)


def _polygamma_samples(op, device, dtype, requires_grad=False):
    lo, hi = _range(dtype, (0.5, 6.0), (1, 7))
    for n in (0, 1, 2, 3):
        for s in unary_samples(op, device, dtype, requires_grad, low=lo, high=hi, args=(n,)):
            s.name = f"n={n}, {s.name}"
            yield s
    if dtype.is_floating_point and not requires_grad:
        yield SampleInput(ember.tensor([_NAN, _INF, 0.5, 1.5, 2.5, 1.0, 3.0], dtype=dtype, device=device), (1,),
                          name="special values")


def _polygamma_errors(op, device):
    x = make_tensor((3,), device=device, dtype=ember.float32, seed=1)
    yield ErrorInput(SampleInput(x, (-1,), name="negative n"), RuntimeError,
                     r"polygamma\(n, x\) does not support negative n\.")
    z = make_tensor((3,), device=device, dtype=ember.complex64, seed=1)
    yield ErrorInput(SampleInput(z, (1,), name="complex64"), NotImplementedError, "not implemented for 'ComplexFloat'")


def _mvlgamma_samples(op, device, dtype, requires_grad=False):
    for p in (1, 2, 3):
        lo, hi = _range(dtype, ((p - 1) / 2 + 0.2, 6.0), (p, 7))
        for s in unary_samples(op, device, dtype, requires_grad, low=lo, high=hi, args=(p,)):
            s.name = f"p={p}, {s.name}"
            yield s


def _mvlgamma_errors(op, device):
    x = make_tensor((3,), device=device, dtype=ember.float32, low=2.0, high=3.0, seed=1)
    yield ErrorInput(SampleInput(x, (0,), name="p < 1"), RuntimeError, r"p has to be greater than or equal to 1")
    b = make_tensor((3,), device=device, dtype=ember.bool, seed=1)
    yield ErrorInput(SampleInput(b, (1,), name="bool"), RuntimeError, r"The input tensor may not be a boolean tensor")


# ---------------------------------------------------------------- binary
def _binary_sampler(fl, it, rfl, rit, scalar=2.5, scalar_lhs=False, grad_first=True):
    """Binary samples; ``grad_first=False``: gradient samples leave the first operand without grad (its derivative
    raises NotImplementedError in PyTorch, as igamma's input)."""
    def sample_inputs(op, device, dtype, requires_grad=False):
        lo, hi = _range(dtype, fl, it)
        rlo, rhi = _range(dtype, rfl, rit)
        s = scalar if not _is_int(dtype) or dtype.name == "bool" else int(scalar)
        for smp in binary_samples(op, device, dtype, requires_grad, low=lo, high=hi, rhs_low=rlo, rhs_high=rhi,
                                  scalars=scalar is not None, scalar=s, scalar_lhs=scalar_lhs):
            if requires_grad and not grad_first and isinstance(smp.input, ember.Tensor):
                smp.input = smp.input.detach()
            yield smp
    return sample_inputs


_FLOATING_ONLY = ("float16", "bfloat16", "float32", "float64")
_BINARY = [
    # name, public function, reference, dtypes, sampler, error dtypes, options
    ("igamma", ember.igamma, sps.gammainc, _FLOATING_ONLY,
     _binary_sampler((0.5, 5.0), None, (0.1, 6.0), None, scalar=None, grad_first=False),
     ("int64", "bool", "complex64"), {}),
    ("igammac", ember.igammac, sps.gammaincc, _FLOATING_ONLY,
     _binary_sampler((0.5, 5.0), None, (0.1, 6.0), None, scalar=None, grad_first=False),
     ("int64", "bool", "complex64"), {}),
    ("xlogy", ember.xlogy, _xlogy, REAL_AND_BOOL,
     _binary_sampler((-3.0, 3.0), (-3, 4), (0.1, 5.0), (1, 6), scalar_lhs=True), ("complex64",), {}),
    ("special_xlog1py", ember.special.xlog1py, _xlog1py, REAL_AND_BOOL,
     _binary_sampler((-3.0, 3.0), (-3, 4), (-0.9, 5.0), (0, 6), scalar_lhs=True), ("complex64",), {}),
    ("special_zeta", ember.special.zeta, sps.zeta, _NO_LOWP,
     _binary_sampler((1.5, 6.0), (2, 7), (0.5, 5.0), (1, 6), scalar_lhs=True, grad_first=False),
     ("float16", "bfloat16", "complex64"), {}),
]
_POLYS = [
    ("chebyshev_polynomial_t", _poly(sps.eval_chebyt), (-1.0, 1.0)),
    ("chebyshev_polynomial_u", _poly(sps.eval_chebyu), (-1.0, 1.0)),
    ("chebyshev_polynomial_v", _poly(lambda n, x: sps.eval_jacobi(n, -0.5, 0.5, x) / sps.eval_jacobi(n, -0.5, 0.5, 1)
                                     ), (-1.0, 1.0)),
    ("chebyshev_polynomial_w", _poly(lambda n, x: (2 * n + 1) * sps.eval_jacobi(n, 0.5, -0.5, x)
                                     / sps.eval_jacobi(n, 0.5, -0.5, 1)), (-1.0, 1.0)),
    ("shifted_chebyshev_polynomial_t", _poly(sps.eval_chebyt, shift=True), (0.0, 1.0)),
    ("shifted_chebyshev_polynomial_u", _poly(sps.eval_chebyu, shift=True), (0.0, 1.0)),
    ("shifted_chebyshev_polynomial_v", _poly(lambda n, x: sps.eval_jacobi(n, -0.5, 0.5, x)
                                             / sps.eval_jacobi(n, -0.5, 0.5, 1), shift=True), (0.0, 1.0)),
    ("shifted_chebyshev_polynomial_w", _poly(lambda n, x: (2 * n + 1) * sps.eval_jacobi(n, 0.5, -0.5, x)
                                             / sps.eval_jacobi(n, 0.5, -0.5, 1), shift=True), (0.0, 1.0)),
    ("hermite_polynomial_h", _poly(sps.eval_hermite), (-2.0, 2.0)),
    ("hermite_polynomial_he", _poly(sps.eval_hermitenorm), (-2.0, 2.0)),
    ("laguerre_polynomial_l", _poly(sps.eval_laguerre), (0.0, 5.0)),
    ("legendre_polynomial_p", _poly(sps.eval_legendre), (-1.0, 1.0)),
]
for _name, _ref_fn, _fl in _POLYS:
    _BINARY.append((f"special_{_name}", getattr(ember.special, _name), _ref_fn, _NO_LOWP,
                    _binary_sampler(_fl, (-1, 2), (-1.0, 11.0), (-1, 11), scalar=3.0),
                    ("float16", "bfloat16", "complex64"), {"nondiff": True, "tol": (1e-5, 1e-5)}))


def _binary_entries():
    out = []
    for name, fn, ref, dtypes, sampler, errs, opt in _BINARY:
        tol = opt.get("tol")
        out.append(OpInfo(
            name, op=fn, ref=_ref(ref), dtypes=dtypes, sample_inputs=sampler,
            error_inputs=_dtype_errors(*errs, args=(lambda t: t,)),
            supports_autograd=has_autograd(name) and not opt.get("nondiff"), supports_out=True,
            inplace=inplace_of(name) if name in _INPLACE else None,
            tolerances={"float32": tol, "float64": tol} if tol else {}))
    return out


op_db = _unary_entries() + _binary_entries() + [
    OpInfo("logit", op=ember.logit, ref=_ref(_logit), dtypes=REAL_AND_BOOL, sample_inputs=_logit_samples,
           error_inputs=_dtype_errors("complex64"), supports_autograd=True, supports_out=True,
           inplace=inplace_of("logit")),
    OpInfo("polygamma", op=_polygamma_op, ref=_ref(_polygamma), dtypes=REAL_AND_BOOL,
           sample_inputs=_polygamma_samples, error_inputs=_polygamma_errors, supports_autograd=True,
           supports_out=True, inplace=inplace_of("polygamma")),
    OpInfo("mvlgamma", op=ember.mvlgamma, ref=_ref(_mvlgamma), dtypes=[d for d in REAL_AND_BOOL if d != "bool"],
           sample_inputs=_mvlgamma_samples, error_inputs=_mvlgamma_errors, supports_autograd=True,
           supports_out=True, inplace=inplace_of("mvlgamma")),
]
