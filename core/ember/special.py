"""``ember.special``: special functions (matches torch.special, PyTorch 2.13).

Names, signatures (``out=`` where torch has it), result dtypes and errors follow
torch.special. The ops are declared in ``ember._ops._special``: formulas over primitives
(``sinc``, ``entr``, ``logit``, ``xlogy``, ``xlog1py``, ``spherical_bessel_j0``, ``ndtr``,
``multigammaln``) run as composites on every device; the others (digamma, the Bessel
functions, zeta, the orthogonal polynomials, ...) are computed by the cpu plugin with
scipy.special / numpy and reach other devices through their host path (a counted, warned
copy to cpu and back). Aliases (``psi``, ``gammaln``, ``expit``, ``erf``, ...) are the same
ops as their top-level names.

dtypes: integer / bool inputs compute in the default float dtype; float16 / bfloat16 where
PyTorch's cpu kernels support them (computed in float32), NotImplementedError where they do
not; complex inputs raise NotImplementedError except for ``sinc`` and the aliases of ops
that accept complex (``exp2``, ``expm1``, ``expit``, ``log1p``, ``logsumexp``).

Gradients as PyTorch's derivatives.yaml; the Bessel functions and the polynomials are not
differentiable (their results do not require grad), and ``zeta`` / ``gammainc`` /
``gammaincc`` raise NotImplementedError for the gradient of their first argument.
"""
from __future__ import annotations

import math

from ._ops import _special as _S
from ._tensor import Tensor
from ._ops import _elementwise as _E
from ._ops import _nn as _N
from ._ops import _reduction as _R

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
           "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]

_g = globals()


def _unary(name, entry):
    def fn(input, *, out=None):
        return entry(input, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{(entry.__doc__ or '').split(' Elementwise')[0].strip()} Elementwise over ``input`` (any shape; "
                  f"integer / bool in the default float dtype), optional ``out=``; matches torch.special.{name}.")
    fn._op = getattr(entry, "_op", None)
    return fn


def _binary(name, entry, second="other"):
    if second == "n":
        def fn(input, n, *, out=None):
            return entry(input, n, out=out)
    else:
        def fn(input, other, *, out=None):
            return entry(input, other, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{(entry.__doc__ or '').split(' Matches')[0].strip()} ``input`` and ``{second}`` are tensors or "
                  f"numbers, broadcast together; optional ``out=``; matches torch.special.{name}.")
    fn._op = getattr(entry, "_op", None)
    return fn


# ---------------------------------------------------------------- unary
for _name, _entry in [
        ("airy_ai", _S.special_airy_ai), ("bessel_j0", _S.special_bessel_j0), ("bessel_j1", _S.special_bessel_j1),
        ("bessel_y0", _S.special_bessel_y0), ("bessel_y1", _S.special_bessel_y1), ("digamma", _S.digamma),
        ("psi", _S.digamma), ("entr", _S.special_entr), ("erf", _E.erf), ("erfc", _E.erfc),
        ("erfcx", _S.special_erfcx), ("erfinv", _E.erfinv), ("exp2", _E.exp2), ("expit", _E.sigmoid),
        ("expm1", _E.expm1), ("gammaln", _S.lgamma), ("i0", _S.i0), ("i0e", _S.special_i0e), ("i1", _S.special_i1),
        ("i1e", _S.special_i1e), ("log1p", _E.log1p), ("log_ndtr", _S.special_log_ndtr),
        ("modified_bessel_i0", _S.special_modified_bessel_i0), ("modified_bessel_i1", _S.special_modified_bessel_i1),
        ("modified_bessel_k0", _S.special_modified_bessel_k0), ("modified_bessel_k1", _S.special_modified_bessel_k1),
        ("ndtri", _S.special_ndtri), ("scaled_modified_bessel_k0", _S.special_scaled_modified_bessel_k0),
        ("scaled_modified_bessel_k1", _S.special_scaled_modified_bessel_k1), ("sinc", _S.sinc),
        ("spherical_bessel_j0", _S.special_spherical_bessel_j0)]:
    _g[_name] = _unary(_name, _entry)

# ---------------------------------------------------------------- binary
def _tensor_args(name, fn):
    def checked(input, other, *, out=None):
        for i, (arg, x) in enumerate((("input", input), ("other", other))):
            if not isinstance(x, Tensor):
                raise TypeError(f"special_{name}(): argument '{arg}' (position {i + 1}) must be Tensor, not "
                                f"{type(x).__name__}")
        return fn(input, other, out=out)
    checked.__name__ = checked.__qualname__ = name
    checked.__doc__ = fn.__doc__.replace("are tensors or numbers", "are tensors (TypeError for a number)")
    checked._op = fn._op
    return checked


for _name, _entry in [("gammainc", _S.igamma), ("gammaincc", _S.igammac), ("xlogy", _S.xlogy),
                      ("xlog1py", _S.special_xlog1py), ("zeta", _S.special_zeta)]:
    _g[_name] = _binary(_name, _entry)
for _name, *_ in _S.POLYNOMIALS:
    _g[_name[len("special_"):]] = _binary(_name[len("special_"):], _g.get(_name) or getattr(_S, _name), "n")
gammainc, gammaincc = _tensor_args("gammainc", gammainc), _tensor_args("gammaincc", gammaincc)
del _name, _entry


# ---------------------------------------------------------------- with other arguments
def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of digamma at ``input`` (matches torch.special.polygamma).

    ``n``: int >= 0 (RuntimeError for negative n); elementwise, shape kept, integer inputs in
    the default float dtype; NotImplementedError for complex.
    """
    return _S.polygamma(n, input, out=out)


def multigammaln(input, p, *, out=None):
    """Multivariate log-gamma of dimension ``p`` (matches torch.special.multigammaln / torch.mvlgamma).

    RuntimeError for p < 1 or a bool input; elements <= (p - 1) / 2 are not refused (as PyTorch 2.13).
    """
    return _S.mvlgamma(input, p, out=out)


def logit(input, eps=None, *, out=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] when ``eps`` is given (matches torch.special.logit)."""
    return _S.logit(input, eps, out=out)


def ndtr(input, *, out=None):
    """Standard normal CDF, erfc(-x / sqrt(2)) / 2, elementwise (matches torch.special.ndtr).

    A composite of erfc and mul (accurate in both tails); integer inputs in the default float
    dtype; NotImplementedError for complex.
    """
    return _E.mul(_E.erfc(_E.mul(input, -math.sqrt(0.5))), 0.5, out=out)


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(input, dim)), optionally computed in ``dtype`` (matches torch.special.log_softmax)."""
    return _N.log_softmax(input, dim, dtype=dtype)


def softmax(input, dim, *, dtype=None):
    """softmax along ``dim``, optionally computed in ``dtype`` (matches torch.special.softmax)."""
    return _N.softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input), dim)), computed stably (matches torch.special.logsumexp)."""
    return _R.logsumexp(input, dim, keepdim, out=out)


def round(input, *, decimals=0, out=None):  # noqa: A001 - torch.special.round
    """Round half to even to ``decimals`` decimal places (matches torch.special.round)."""
    return _E.round(input, decimals=decimals, out=out)
