"""Helpers of the derivative table for the special functions (``ember._ops._special``), written with ember ops.

Follow PyTorch's derivatives.yaml / FunctionsManual (i1_backward, logit_backward, sinc_backward,
mvlgamma_backward, the igamma / zeta ``not_implemented`` entries).
"""
from __future__ import annotations

import math

from .._tensor import Tensor

__all__ = ["special_op", "not_implemented", "i1_grad", "i1e_grad", "sinc_grad", "logit_grad", "mvlgamma_grad",
           "igamma_other_grad", "zeta_other_grad"]


def special_op(name):
    """The entry point of special op ``name`` (``digamma``, ``special_i1e``, ...)."""
    from .._ops import _special
    return getattr(_special, name)


def _E():
    from .._ops import _elementwise
    return _elementwise


def not_implemented(what):
    """Raise PyTorch's NotImplementedError "the derivative for '<what>' is not implemented." (reached in backward)."""
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


def i1_grad(grad, self, result):
    """grad * (i0(x) - i1(x) / x), 1/2 at x == 0 (PyTorch's i1_backward)."""
    E = _E()
    zero = E.eq(self, 0)
    d = E.sub(special_op("i0")(self), E.true_divide(result, E.where(zero, 1, self)))
    return grad * E.where(zero, 0.5, d)


def i1e_grad(grad, self, result):
    """grad * (i0e(x) - i1e(x) (sgn(x) + 1 / x)), 1/2 at x == 0 (PyTorch's i1e_backward)."""
    E = _E()
    zero = E.eq(self, 0)
    inv = E.true_divide(1, E.where(zero, 1, self))
    d = E.sub(special_op("special_i0e")(self), E.mul(result, E.add(E.sgn(self), inv)))
    return grad * E.where(zero, 0.5, d)


def sinc_grad(grad, self):
    """grad * (pi x cos(pi x) - sin(pi x)) / (pi x ** 2), 0 at x == 0 (PyTorch's sinc_backward, real inputs)."""
    E = _E()
    px = E.mul(self, math.pi)
    zero = E.eq(self, 0)
    d = E.true_divide(E.sub(E.mul(px, E.cos(px)), E.sin(px)), E.where(zero, 1, E.mul(px, self)))
    return grad * E.where(zero, 0.0, d)


def logit_grad(grad, self, eps):
    """grad / (x (1 - x)); outside [0, 1] NaN without eps, 0 outside [eps, 1 - eps] with it (logit_backward)."""
    E = _E()
    d = E.true_divide(grad, E.mul(self, E.sub(1, self)))
    if eps is None or eps < 0:
        return E.where(E.logical_or(E.lt(self, 0), E.gt(self, 1)), math.nan, d)
    return E.where(E.logical_or(E.lt(self, eps), E.gt(self, 1 - eps)), 0.0, d)


def mvlgamma_grad(grad, self, p):
    """grad * sum_{j < p} digamma(x - j / 2) (PyTorch's mvlgamma_backward)."""
    E = _E()
    digamma = special_op("digamma")
    s = digamma(self)
    for j in range(1, p):
        s = E.add(s, digamma(E.add(self, -j / 2)))
    return grad * s


def igamma_other_grad(grad, self, other):
    """d/dx P(a, x) = exp((a - 1) log x - x - lgamma(a)); ``self`` (a) may be a Python number."""
    E = _E()
    lg = special_op("lgamma")(self) if isinstance(self, Tensor) else math.lgamma(self)
    return grad * E.exp(E.sub(E.sub(E.mul(E.sub(self, 1), E.log(other)), other), lg))


def zeta_other_grad(grad, self, other):
    """d/dq zeta(x, q) = -x zeta(x + 1, q)."""
    E = _E()
    return grad * E.mul(E.neg(self) if isinstance(self, Tensor) else -self,
                        special_op("special_zeta")(E.add(self, 1.0) if isinstance(self, Tensor) else self + 1.0, other))
