"""Special-function kernels (``ember._ops._special``): scipy.special / numpy, with PyTorch's values at the edges.

Every kernel computes in the op's computation dtype (integers in the default float dtype,
float16 / bfloat16 in float32 rounded once) and stores into ``out``. scipy.special gives
the values; where PyTorch's cpu kernels define an edge differently (lgamma(-inf) = inf,
zeta(x, inf) = NaN, trigamma's reflection near the poles) the kernel follows PyTorch, and
the orthogonal polynomials are evaluated as PyTorch does (n truncated to an integer, 0 for
n < 0, closed forms at |x| == 1, the trigonometric form for large n inside (-1, 1), the
three-term recurrence otherwise).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

import ember
from ember import Tensor

from ._util import ALL, compute_np, np_view

_REAL = [d for d in ALL if not d.is_complex]


def _float_dtype(d):
    return d if (d.is_floating_point or d.is_complex) else ember.get_default_dtype()


def _store(out, r, d):
    cd = compute_np(d)
    if cd != d.numpy_dtype:
        r = np.asarray(r, dtype=cd).astype(d.numpy_dtype)     # low precision: rounded to the op's dtype first
    np.copyto(np_view(out), r, casting="unsafe")


def make_unary(f):
    """cpu kernel ``kernel(self, *, out)`` computing ``f`` (numpy arrays in, array out) in the op's dtype."""
    def kernel(self, *, out):
        d = _float_dtype(self._dtype)
        a = np_view(self).astype(compute_np(d), copy=False)
        with np.errstate(all="ignore"):
            r = f(a)
        _store(out, r, d)
    kernel.__name__ = f"cpu_{getattr(f, '__name__', 'special')}"
    return kernel


def _operand(x, cd):
    if isinstance(x, Tensor):
        return np_view(x).astype(cd, copy=False)
    return np.asarray(x).astype(cd)


def make_binary(f):
    """cpu kernel ``kernel(a, b, *, out)`` computing ``f`` in the common (floating) dtype of ``a`` and ``b``."""
    def kernel(a, b, *, out):
        d = _float_dtype(ember.result_type(a, b))
        cd = compute_np(d)
        with np.errstate(all="ignore"):
            r = f(_operand(a, cd), _operand(b, cd))
        _store(out, r, d)
    kernel.__name__ = f"cpu_{getattr(f, '__name__', 'special')}"
    return kernel


# ---------------------------------------------------------------- gamma family
def _lgamma(x):
    return np.where(x == -np.inf, np.inf, sp.gammaln(x))


def _trigamma(x):
    """PyTorch's trigamma: reflection for x < 1/2 (sin(pi x) in x's dtype), six recurrence steps, asymptotic series."""
    dt = x.dtype.type
    x = np.array(x, copy=True)
    result = np.zeros_like(x)
    sign = np.ones_like(x)
    refl = x < 0.5
    s = np.sin(dt(math.pi) * x)
    result = np.where(refl, result - dt(math.pi * math.pi) / (s * s), result)
    sign = np.where(refl, -sign, sign)
    x = np.where(refl, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    result = result + (1 + 1 / (2 * x) + ixx * (dt(1 / 6) - ixx * (dt(1 / 30) - ixx * dt(1 / 42)))) / x
    return sign * result


def _zeta(x, q):
    """Hurwitz zeta with PyTorch's values where scipy's differ: NaN at q = inf (scipy: 0) unless x == 1, and at
    x = inf: inf for 0 < q < 1, 1 for q == 1, NaN for q > 1 (PyTorch's series)."""
    r = np.where(q == np.inf, np.nan, sp.zeta(x, q))
    r = np.where((x == np.inf) & (q > 0), np.where(q < 1, np.inf, np.where(q == 1, 1, np.nan)), r)
    return np.where(x == 1, np.inf, r)


def _igamma_edges(a, x, regular, at_a0, at_x0, at_ainf, at_xinf):
    """PyTorch's order of special cases of the regularized incomplete gamma functions, then ``regular``."""
    return np.where((a < 0) | (x < 0), np.nan,
                    np.where(a == 0, np.where(x > 0, at_a0, np.nan),
                             np.where(x == 0, at_x0,
                                      np.where(np.isinf(a), np.where(np.isinf(x), np.nan, at_ainf),
                                               np.where(np.isinf(x), at_xinf, regular)))))


def _igamma(a, x):
    return _igamma_edges(a, x, sp.gammainc(a, x), 1, 0, 0, 1)


def _igammac(a, x):
    return _igamma_edges(a, x, sp.gammaincc(a, x), 0, 1, 1, 0)


def _airy_ai(x):
    # PyTorch: NaN at +-inf, 0 beyond 103.892 (scipy: NaN for huge x)
    return np.where(np.isinf(x), np.nan, np.where(x > 103.892, 0, sp.airy(x)[0]))


def make_polygamma():
    def kernel(self, n, *, out):
        d = _float_dtype(self._dtype)
        a = np_view(self).astype(compute_np(d), copy=False)
        with np.errstate(all="ignore"):
            if n == 0:
                r = sp.psi(a)
            elif n == 1:
                r = _trigamma(a)
            else:   # (-1) ** (n + 1) n! zeta(n + 1, x), as PyTorch
                r = ((-1) ** (n + 1)) * math.exp(math.lgamma(n + 1.0)) * _zeta(np.asarray(n + 1.0, a.dtype), a)
        _store(out, r, d)
    return kernel


def _spherical_j0(x):
    with np.errstate(all="ignore"):
        r = np.where(x == 0, 1, np.sin(x) / np.where(x == 0, 1, x))
    return np.where(np.isinf(x), 0, r)


def _entr(x):
    return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1)), np.where(x == 0, 0, np.where(x < 0, -np.inf, x)))


def _xlogy(x, y):
    return np.where(np.isnan(y), np.nan, np.where(x == 0, 0, x * np.log(y)))


def _xlog1py(x, y):
    return np.where(np.isnan(y), np.nan, np.where(x == 0, 0, x * np.log1p(y)))


def make_logit():
    def kernel(self, eps=None, *, out):
        d = _float_dtype(self._dtype)
        x = np_view(self).astype(compute_np(d), copy=False)
        if eps is not None and eps >= 0:
            lo, hi = x.dtype.type(eps), x.dtype.type(1 - eps)
            x = np.where(x < lo, lo, np.where(x > hi, hi, x))
        with np.errstate(all="ignore"):
            r = np.log(x / (1 - x))
        _store(out, r, d)
    return kernel


# ---------------------------------------------------------------- orthogonal polynomials
def _recurrence(x, n, p0, p1, step, done):
    """Evaluate p_n(x) elementwise by the three-term recurrence ``step(k, x, p_{k-1}, p_k) -> p_{k+1}``,
    starting from p0, p1; elements where ``done`` is set keep their value. Returns p_n (n >= 0)."""
    r = np.where(n == 0, p0, p1)
    top = int(n[~done].max()) if (~done).any() else 1
    p, q = np.broadcast_to(p0, x.shape).astype(x.dtype), np.broadcast_to(p1, x.shape).astype(x.dtype)
    for k in range(1, top):
        nxt = step(k, x, p, q)
        p, q = q, nxt
        r = np.where(n == k + 1, q, r)
    return r


def _poly(name):
    """The kernel of polynomial op ``name``: (x, n) with n truncated to int64 as PyTorch casts it."""
    def evaluate(x, nf):
        x, nf = np.broadcast_arrays(x, nf)
        with np.errstate(invalid="ignore"):
            n = np.where(np.isfinite(nf), nf, -1).astype(np.int64)     # NaN / inf n: PyTorch's cast is undefined
        dt = x.dtype.type
        one = np.ones_like(x)
        res = np.zeros_like(x)
        done = n < 0
        special, value = _closed_forms(name, x, n, dt)
        res = np.where(~done & special, value, res)
        done = done | special
        p0, p1, step = _RECURRENCE[name](x, dt)
        rec = _recurrence(x, np.where(done, 0, n), p0 * one, p1, step, done)
        return np.where(done, res, rec)
    return evaluate


def _closed_forms(name, x, n, dt):
    """(mask, value): PyTorch's special cases before the recurrence, for polynomial ``name``."""
    even = n % 2 == 0
    nf = n.astype(x.dtype)
    f = np.zeros(x.shape, bool)
    v = np.zeros_like(x)
    with np.errstate(all="ignore"):
        if name.startswith("special_shifted_chebyshev"):
            y = x + x - 1
            kind = name[-1]
            at_one, at_zero = x == 1, x == 0          # |2x - 1| == 1
            inside = np.abs(y) < 1
            big = n > (6 if kind == "t" else 8)
        elif name.startswith("special_chebyshev"):
            y = x
            kind = name[-1]
            at_one, at_zero = x == 1, x == -1
            inside = np.abs(x) < 1
            big = n > (6 if kind == "t" else 8)
        if name.startswith(("special_chebyshev", "special_shifted_chebyshev")):
            t = np.arccos(y)
            if kind == "t":
                edge = np.where(at_one | even, 1, -1)
                trig = np.cos(nf * t)
            elif kind == "u":
                edge = np.where(at_one | even, nf + 1, -(nf + 1))
                s = np.sin(t)
                trig = np.where(s != 0, np.sin((nf + 1) * t) / s, (nf + 1) * np.cos((nf + 1) * t) / y)
            elif kind == "v":
                edge = np.where(at_one, 1, np.where(even, nf + nf + 1, -(nf + nf + 1)))
                trig = np.where(np.sin(t / 2) != 1, np.cos((nf + dt(0.5)) * t) / np.cos(t / 2),
                                np.where(even, nf + nf + 1, -(nf + nf + 1)))
            else:
                edge = np.where(at_one, nf + nf + 1, np.where(even, 1, -1))
                trig = np.where(np.cos(t / 2) != 1, np.sin((nf + dt(0.5)) * t) / np.sin(t / 2),
                                np.where(y > 0, nf + nf + 1, np.where(even, 1, -1)))
            f = at_one | at_zero
            v = np.where(f, edge, v)
            use = ~f & big & inside
            v = np.where(use, trig, v)
            f = f | use
        elif name == "special_legendre_polynomial_p":
            f = np.abs(x) == 1
            v = np.where(f, np.where((x > 0) | (n == 0) | even, 1, -1), v)
        elif name == "special_laguerre_polynomial_l":
            f = np.abs(x) == 0
            v = np.where(f, 1, v)
    return f, v.astype(x.dtype)


def _cheb(first):
    def init(x, dt):
        return 1, first(x), lambda k, x, p, q: (x + x) * q - p
    return init


def _shifted(first):
    def init(x, dt):
        return 1, first(x + x - 1), lambda k, x, p, q: ((x + x - 1) + (x + x - 1)) * q - p
    return init


_RECURRENCE = {
    "special_chebyshev_polynomial_t": _cheb(lambda x: x),
    "special_chebyshev_polynomial_u": _cheb(lambda x: x + x),
    "special_chebyshev_polynomial_v": _cheb(lambda x: x + x - 1),
    "special_chebyshev_polynomial_w": _cheb(lambda x: x + x + 1),
    "special_shifted_chebyshev_polynomial_t": _shifted(lambda y: y),
    "special_shifted_chebyshev_polynomial_u": _shifted(lambda y: y + y),
    "special_shifted_chebyshev_polynomial_v": _shifted(lambda y: y + y - 1),
    "special_shifted_chebyshev_polynomial_w": _shifted(lambda y: y + y + 1),
    "special_hermite_polynomial_h": lambda x, dt: (1, x + x, lambda k, x, p, q: (x + x) * q - 2 * k * p),
    "special_hermite_polynomial_he": lambda x, dt: (1, x, lambda k, x, p, q: x * q - k * p),
    "special_laguerre_polynomial_l": lambda x, dt: (1, 1 - x,
                                                    lambda k, x, p, q: ((2 * k + 1 - x) * q - k * p) / (k + 1)),
    "special_legendre_polynomial_p": lambda x, dt: (1, x,
                                                    lambda k, x, p, q: ((2 * k + 1) * x * q - k * p) / (k + 1)),
}


# ---------------------------------------------------------------- tables
UNARY = {
    "digamma": sp.psi, "lgamma": _lgamma, "i0": sp.i0, "sinc": np.sinc, "special_i0e": sp.i0e,
    "special_i1": sp.i1, "special_i1e": sp.i1e, "special_entr": _entr, "special_erfcx": sp.erfcx,
    "special_ndtri": sp.ndtri, "special_log_ndtr": sp.log_ndtr, "special_airy_ai": _airy_ai,
    "special_bessel_j0": sp.j0, "special_bessel_j1": sp.j1, "special_bessel_y0": sp.y0, "special_bessel_y1": sp.y1,
    "special_modified_bessel_i0": sp.i0, "special_modified_bessel_i1": sp.i1, "special_modified_bessel_k0": sp.k0,
    "special_modified_bessel_k1": sp.k1, "special_scaled_modified_bessel_k0": sp.k0e,
    "special_scaled_modified_bessel_k1": sp.k1e, "special_spherical_bessel_j0": _spherical_j0,
}

BINARY = {
    "igamma": _igamma, "igammac": _igammac, "xlogy": _xlogy, "special_xlog1py": _xlog1py,
    "special_zeta": _zeta,
}
BINARY.update({name: _poly(name) for name in _RECURRENCE})


def register(lib):
    """Register the special-function kernels for device 'cpu' (every real dtype; sinc also complex; the ops'
    metas refuse the dtypes PyTorch refuses)."""
    for name, f in UNARY.items():
        lib.impl(name, make_unary(f), device="cpu", dtypes=ALL if name == "sinc" else _REAL)
    for name, f in BINARY.items():
        lib.impl(name, make_binary(f), device="cpu", dtypes=_REAL)
    lib.impl("polygamma", make_polygamma(), device="cpu", dtypes=_REAL)
    lib.impl("logit", make_logit(), device="cpu", dtypes=_REAL)
