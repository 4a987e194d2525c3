"""Special functions: the ops behind ``ember.special`` and their top-level names (matches torch.special).

Declared from tables, one line per op. Each op is one of two kinds:

* a formula over primitives (``sinc``, ``logit``, ``xlogy``, ``special_entr``, ...): it has a
  composite (``_special_composites``), so every device runs it with no kernel of its own;
* a function with no such formula (digamma, the Bessel functions, zeta, the orthogonal
  polynomials, ...): the cpu plugin computes it with scipy.special / numpy, and a device
  without a kernel for it runs it through its *host path* (``OpDef.host``: copy to cpu, run
  the cpu kernel, copy back; counted and warned about as a fallback, see
  ``ember.profiler.record_fallbacks``).

Op names are PyTorch's ATen names (``digamma``, ``special_i0e``, ``special_zeta``...). The
top-level functions here are the ones torch has at top level (``digamma``, ``lgamma``,
``polygamma``, ``mvlgamma``, ``i0``, ``igamma``, ``igammac``, ``xlogy``, ``logit``, ``sinc``);
the rest are reached through ``ember.special``.

dtype rules as PyTorch's cpu kernels: integer and bool inputs compute in the default float
dtype; float16 / bfloat16 compute in float32 where PyTorch supports them and raise
NotImplementedError '"op" not implemented for 'Half'' where it does not; complex inputs raise
NotImplementedError except for ``sinc``.
"""
from __future__ import annotations

import numbers

from .. import _dtype as D
from .._dispatch import declare, ops
from .._tensor import Tensor
from ..library import cpu_fallback
from ._meta import make_binary_meta, make_unary_meta, _not_implemented

__all__ = ["digamma", "lgamma", "polygamma", "mvlgamma", "i0", "i0_", "igamma", "igammac", "xlogy", "xlogy_",
           "logit", "logit_", "sinc", "sinc_"]

_g = globals()
_NI = None
_NO_COMPLEX = {"complex": _NI}
_FLOAT_ONLY = {"bool": _NI, "int": _NI, "complex": _NI}
_LOWP = (D.float16, D.bfloat16)

# name, float16 / bfloat16 supported (as torch's cpu kernels), complex supported, in-place variant, doc.
# ``host``: computed by the cpu kernel, reached on other devices through the host path.
UNARY = [
    ("digamma", True, False, True, "Logarithmic derivative of the gamma function, psi(x) = Gamma'(x) / Gamma(x)."),
    ("lgamma", True, False, True, "log |Gamma(x)|."),
    ("i0", True, False, True, "Modified Bessel function of the first kind, order 0."),
    ("sinc", True, True, True, "Normalized sinc, sin(pi x) / (pi x) (1 at x == 0)."),
    ("special_i0e", True, False, False, "Exponentially scaled i0: exp(-|x|) i0(x)."),
    ("special_i1", True, False, False, "Modified Bessel function of the first kind, order 1."),
    ("special_i1e", True, False, False, "Exponentially scaled i1: exp(-|x|) i1(x)."),
    ("special_entr", True, False, False, "Entropy term -x log(x) (0 at 0, -inf for x < 0)."),
    ("special_erfcx", False, False, False, "Scaled complementary error function exp(x**2) erfc(x)."),
    ("special_ndtri", False, False, False, "Inverse of the standard normal CDF (domain [0, 1])."),
    ("special_log_ndtr", False, False, False, "log of the standard normal CDF, accurate for large negative x."),
    ("special_airy_ai", False, False, False, "Airy function Ai(x)."),
    ("special_bessel_j0", False, False, False, "Bessel function of the first kind, order 0."),
    ("special_bessel_j1", False, False, False, "Bessel function of the first kind, order 1."),
    ("special_bessel_y0", False, False, False, "Bessel function of the second kind, order 0."),
    ("special_bessel_y1", False, False, False, "Bessel function of the second kind, order 1."),
    ("special_modified_bessel_i0", False, False, False, "Modified Bessel function of the first kind, order 0."),
    ("special_modified_bessel_i1", False, False, False, "Modified Bessel function of the first kind, order 1."),
    ("special_modified_bessel_k0", False, False, False, "Modified Bessel function of the second kind, order 0."),
    ("special_modified_bessel_k1", False, False, False, "Modified Bessel function of the second kind, order 1."),
    ("special_scaled_modified_bessel_k0", False, False, False, "exp(x) K0(x)."),
    ("special_scaled_modified_bessel_k1", False, False, False, "exp(x) K1(x)."),
    ("special_spherical_bessel_j0", False, False, False, "Spherical Bessel function of the first kind, order 0, "
                                                         "sin(x) / x."),
]

#: the orthogonal polynomials p_n(x): (input, n), n truncated to an integer; 0 for n < 0
POLYNOMIALS = [
    ("special_chebyshev_polynomial_t", "Chebyshev polynomial of the first kind T_n(x)."),
    ("special_chebyshev_polynomial_u", "Chebyshev polynomial of the second kind U_n(x)."),
    ("special_chebyshev_polynomial_v", "Chebyshev polynomial of the third kind V_n(x)."),
    ("special_chebyshev_polynomial_w", "Chebyshev polynomial of the fourth kind W_n(x)."),
    ("special_shifted_chebyshev_polynomial_t", "Shifted Chebyshev polynomial of the first kind T*_n(x)."),
    ("special_shifted_chebyshev_polynomial_u", "Shifted Chebyshev polynomial of the second kind U*_n(x)."),
    ("special_shifted_chebyshev_polynomial_v", "Shifted Chebyshev polynomial of the third kind V*_n(x)."),
    ("special_shifted_chebyshev_polynomial_w", "Shifted Chebyshev polynomial of the fourth kind W*_n(x)."),
    ("special_hermite_polynomial_h", "Physicists' Hermite polynomial H_n(x)."),
    ("special_hermite_polynomial_he", "Probabilists' Hermite polynomial He_n(x)."),
    ("special_laguerre_polynomial_l", "Laguerre polynomial L_n(x)."),
    ("special_legendre_polynomial_p", "Legendre polynomial P_n(x)."),
]

# name, dtype rule, errors, float16 / bfloat16 supported, in-place variant, schema argument names, doc
BINARY = [
    ("igamma", "promote", _FLOAT_ONLY, True, True, ("self", "other"),
     "Regularized lower incomplete gamma function P(self, other)."),
    ("igammac", "promote", _FLOAT_ONLY, True, True, ("self", "other"),
     "Regularized upper incomplete gamma function Q(self, other) = 1 - P(self, other)."),
    ("xlogy", "float", _NO_COMPLEX, True, True, ("self", "other"),
     "self * log(other), 0 where self == 0 (unless other is NaN)."),
    ("special_xlog1py", "float", _NO_COMPLEX, True, False, ("self", "other"),
     "self * log1p(other), 0 where self == 0 (unless other is NaN)."),
    ("special_zeta", "float", _NO_COMPLEX, False, False, ("self", "other"),
     "Hurwitz zeta function zeta(self, other) = sum_k (k + other) ** -self."),
] + [(name, "float", _NO_COMPLEX, False, False, ("x", "n"), doc) for name, doc in POLYNOMIALS]

#: ops with no formula over primitives: filled below, given the host path by ``_attach_host``
HOST = set()


def _display(name):
    """The name PyTorch's messages use (``special_zeta`` -> ``zeta``)."""
    return name[len("special_"):] if name.startswith("special_") else name


def _no_lowp(name, meta):
    """``meta`` refusing float16 / bfloat16 results with PyTorch's NotImplementedError."""
    def checked(*args, **kwargs):
        r = meta(*args, **kwargs)
        if r[3] in _LOWP:
            raise _not_implemented(_display(name), r[3])
        return r
    return checked


def _declare_unary(name, lowp, complex_ok, inplace, doc):
    meta = make_unary_meta(_display(name), "float", errors=None if complex_ok else _NO_COMPLEX)
    if not lowp:
        meta = _no_lowp(name, meta)
    fn = declare(f"{name}(Tensor self) -> Tensor", meta, inplace=inplace,
                 doc=f"{doc} Elementwise; matches torch.{name.replace('special_', 'special.')}. Shape kept; "
                     f"integer / bool inputs compute in the default float dtype.")
    _g[name] = fn
    if inplace:
        _g[name + "_"] = fn.inplace


def _tensors_only(name, meta):
    """``meta`` refusing Python numbers (igamma / igammac have no Scalar overloads in PyTorch)."""
    def checked(self, other, *args):
        for i, (arg, x) in enumerate((("input", self), ("other", other))):
            if not isinstance(x, Tensor):
                raise TypeError(f"{name}(): argument '{arg}' (position {i + 1}) must be Tensor, not "
                                f"{type(x).__name__}")
        return meta(self, other, *args)
    return checked


def _declare_binary(name, rule, errors, lowp, inplace, argnames, doc):
    meta = make_binary_meta(_display(name), rule, errors=errors)
    if name in ("igamma", "igammac"):
        meta = _tensors_only(name, meta)
    if not lowp:
        meta = _no_lowp(name, meta)
    a, b = argnames
    fn = declare(f"{name}(Tensor {a}, Tensor {b}) -> Tensor", meta, inplace=inplace,
                 doc=f"{doc} Matches torch.{name.replace('special_', 'special.')}; either operand may be a "
                     f"Python number; the result shape is the broadcast of the inputs'.")
    _g[name] = fn
    if inplace:
        _g[name + "_"] = fn.inplace


for _row in UNARY:
    _declare_unary(*_row)
for _row in BINARY:
    _declare_binary(*_row)


# ---------------------------------------------------------------- ops with arguments
_logit_meta = make_unary_meta("logit", "float", errors=_NO_COMPLEX)
logit = declare("logit(Tensor self, float? eps=None) -> Tensor", lambda self, eps=None: _logit_meta(self),
                inplace=True, doc="log(x / (1 - x)), x first clamped to [eps, 1 - eps] when ``eps`` is given "
                                  "(matches torch.logit). Elementwise; integer inputs compute in the default float.")
logit_ = logit.inplace

_polygamma_unary = make_unary_meta("polygamma", "float", errors=_NO_COMPLEX)


def _polygamma_meta(self, n):
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _polygamma_unary(self)


# declared with the tensor first (in-place and Tensor methods act on it); ``polygamma(n, input)`` below
_polygamma = declare("polygamma(Tensor self, int n) -> Tensor", _polygamma_meta, inplace=True,
                     doc="The n-th derivative of digamma (n >= 0).")


def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of the digamma function at ``input`` (matches torch.polygamma).

    ``n`` is an int >= 0 (RuntimeError for negative n, TypeError for a non-int); elementwise,
    shape kept, integer inputs in the default float dtype; NotImplementedError for complex.
    """
    return _polygamma(input, n, out=out)


polygamma._op = _polygamma._op

_mvlgamma_unary = make_unary_meta("mvlgamma", "float", errors={
    "complex": _NI, "bool": RuntimeError("The input tensor may not be a boolean tensor.")})


def _mvlgamma_meta(self, p):
    r = _mvlgamma_unary(self)
    if not isinstance(p, numbers.Integral) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return r


mvlgamma = declare("mvlgamma(Tensor self, int p) -> Tensor", _mvlgamma_meta, inplace=True,
                   doc="Multivariate log-gamma of dimension ``p``: p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2), "
                       "j < p (matches torch.mvlgamma). RuntimeError for p < 1 and for a bool input; like PyTorch "
                       "2.13, elements <= (p - 1) / 2 are not refused (lgamma's values, inf at its poles).")
mvlgamma_ = mvlgamma.inplace

HOST.update(n for n, *_ in UNARY if n not in ("sinc", "special_entr", "special_spherical_bessel_j0"))
HOST.update(n for n, *_ in BINARY if n not in ("xlogy", "special_xlog1py"))
HOST.add("polygamma")


# ---------------------------------------------------------------- Tensor methods
def _attach_host():
    """Give every op of ``HOST`` its host path (the cpu kernel through copies, on any device without a kernel)."""
    for name in HOST:
        ops[name].host = cpu_fallback


def _bind():
    T = Tensor
    for name in ("digamma", "lgamma", "i0", "sinc", "igamma", "igammac", "xlogy", "logit", "mvlgamma"):
        setattr(T, name, _g[name])
        setattr(T, name + "_", _g[name + "_"])
    T.polygamma = lambda self, n: _polygamma(self, n)
    T.polygamma_ = lambda self, n: _polygamma.inplace(self, n)
    T.polygamma.__doc__ = "``polygamma(n, self)`` (matches torch.Tensor.polygamma)."
    T.polygamma_.__doc__ = "In-place ``polygamma(n, self)``."


_attach_host()
_bind()

from . import _special_composites  # noqa: E402  (composites for the formula ops)

_special_composites.attach()
