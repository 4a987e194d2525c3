"""Composites of the special functions that are formulas over other ops (``_special``).

Each has its op's kernel signature, writes into the allocated ``out`` at the end (so ``out``
may alias an input, as for ``x.sinc_()``), computes float16 / bfloat16 in float32 and
follows the cpu kernels' values at the edges (NaN, +-inf, 0). Written with ember ops only;
``mvlgamma`` calls ``lgamma``, which a device without a kernel runs through its host path.
Installed by ``attach`` on ops that have no composite yet.
"""
from __future__ import annotations

import math

from .._dispatch import invalidate_caches, ops
from .._factory import empty_on
from .._tensor import Tensor
from ._elementwise_composites import _finish, _work, _key_dtype, _isnan

__all__ = ["COMPOSITES", "attach"]

#: op name -> composite
COMPOSITES: dict = {}


def composite(name):
    """Decorator: register ``fn`` as op ``name``'s composite."""
    def deco(fn):
        fn.__name__ = f"composite_{name}"
        COMPOSITES[name] = fn
        return fn
    return deco


def attach():
    """Install every composite on its OpDef (kept when an op already declares one)."""
    for name, fn in COMPOSITES.items():
        if ops[name].composite is None:
            ops[name].composite = fn
    invalidate_caches()


def _E():
    from . import _elementwise
    return _elementwise


def _operand(x, d, device):
    """``x`` as a tensor of dtype ``d`` on ``device`` (a Python number becomes a 0-dim tensor)."""
    if isinstance(x, Tensor):
        return x if x._dtype is d else x.to(d)
    t = empty_on((), d, device)
    t.fill_(x)
    return t


def _unary_work(name, self, *extra):
    d = _work(_key_dtype(name, self, *extra))
    return self if self._dtype is d else self.to(d)


def _binary_work(name, self, other):
    d = _work(_key_dtype(name, self, other))
    device = (self if isinstance(self, Tensor) else other)._device
    return _operand(self, d, device), _operand(other, d, device)


# ---------------------------------------------------------------- unary
@composite("sinc")
def sinc(self, *, out):
    """Composite of ``sinc``: sin(pi x) / (pi x), 1 where x == 0 (real and complex)."""
    E = _E()
    x = _unary_work("sinc", self)
    px = E.mul(x, math.pi)
    zero = E.eq(x, 0)
    r = E.true_divide(E.sin(px), E.where(zero, 1, px))
    return _finish(out, E.where(zero, 1, r))


@composite("special_entr")
def entr(self, *, out):
    """Composite of ``special_entr``: -x log x for x > 0, 0 at 0, -inf for x < 0, NaN for NaN."""
    E = _E()
    x = _unary_work("special_entr", self)
    r = E.mul(E.mul(x, -1), E.log(x))
    r = E.where(E.eq(x, 0), 0.0, r)
    return _finish(out, E.where(E.lt(x, 0), -math.inf, r))


@composite("special_spherical_bessel_j0")
def spherical_bessel_j0(self, *, out):
    """Composite of ``special_spherical_bessel_j0``: sin(x) / x, 1 at 0, 0 at +-inf."""
    E = _E()
    x = _unary_work("special_spherical_bessel_j0", self)
    zero = E.eq(x, 0)
    r = E.true_divide(E.sin(x), E.where(zero, 1, x))
    r = E.where(zero, 1.0, r)
    return _finish(out, E.where(E.eq(E.abs(x), math.inf), 0.0, r))


@composite("logit")
def logit(self, eps=None, *, out):
    """Composite of ``logit``: log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps >= 0 (NaN kept)."""
    E = _E()
    x = _unary_work("logit", self)
    if eps is not None and eps >= 0:
        x = E.where(E.lt(x, eps), eps, E.where(E.gt(x, 1 - eps), 1 - eps, x))
    return _finish(out, E.log(E.true_divide(x, E.add(E.mul(x, -1), 1))))


# ---------------------------------------------------------------- binary
def _xlog(name, log):
    def fn(self, other, *, out):
        E = _E()
        x, y = _binary_work(name, self, other)
        r = E.where(E.eq(x, 0), 0.0, E.mul(x, log(y)))
        return _finish(out, E.where(_isnan(y), math.nan, r))
    fn.__doc__ = f"Composite of ``{name}``: x * {log.__name__}(y), 0 where x == 0, NaN where y is NaN."
    return composite(name)(fn)


xlogy = _xlog("xlogy", lambda y: _E().log(y))
xlogy.__doc__ = "Composite of ``xlogy``: x * log(y), 0 where x == 0, NaN where y is NaN."
xlog1py = _xlog("special_xlog1py", lambda y: _E().log1p(y))
xlog1py.__doc__ = "Composite of ``special_xlog1py``: x * log1p(y), 0 where x == 0, NaN where y is NaN."


# ---------------------------------------------------------------- mvlgamma
@composite("mvlgamma")
def mvlgamma(self, p, *, out):
    """Composite of ``mvlgamma``: p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2).

    No domain check: PyTorch 2.13 gives inf for elements <= (p - 1) / 2 at the poles (and
    lgamma's values elsewhere) instead of raising, and so does this.
    """
    E = _E()
    from . import _special
    x = _unary_work("mvlgamma", self, p)
    r = None
    for j in range(p - 1, -1, -1):      # PyTorch's order: the smallest argument first
        t = _special.lgamma(E.add(x, -j / 2) if j else x)
        r = t if r is None else E.add(r, t)
    return _finish(out, E.add(r, p * (p - 1) / 4 * math.log(math.pi)))
