"""Composites for the elementwise ops that are not primitives.

A device implements the elementwise primitives natively (``PRIMITIVES``: add with alpha,
mul, true_divide, div_trunc, fmod, pow, atan2, abs, eq, lt, where, the bitwise ops,
floor, exp, expm1, log, log1p, sin, cos, sqrt, erf, erfc, erfinv, plus copy_ / fill_);
every other op of ``_elementwise`` runs as the composite below when a device has no
kernel for it. Each composite has its op's kernel signature: structured ones receive the
allocated ``out`` and end with ``out.copy_(result)`` (so ``out`` may alias an input, as for
``x.tanh_()``), and they reproduce the cpu kernels' results: NaN / inf / -0.0 handling,
integer wrap-around, and float16 / bfloat16 computed in float32 and rounded once.

Written with ember ops only; each composite bottoms out in primitives, directly or through
other composites of this module (``attach`` installs them; there are no cycles).

Known gaps, stated where they matter: the sign of a NaN cannot be observed through the
primitives (``signbit`` and ``copysign`` treat every NaN as positive); complex results are
built from real formulas, so inputs with infinite parts may give NaN where the cpu kernel
gives a signed infinity.
"""
from __future__ import annotations

import math
import numbers

from .. import _dtype as D
from .._dispatch import invalidate_caches, ops
from .._factory import empty_on
from .._tensor import Tensor

__all__ = ["PRIMITIVES", "COMPOSITES", "attach"]

#: the elementwise (and runtime) ops a device implements natively
PRIMITIVES = frozenset({
    "copy_", "fill_", "add", "mul", "true_divide", "div_trunc", "fmod", "pow", "atan2", "abs", "eq", "lt", "where",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "floor", "exp",
    "expm1", "log", "log1p", "sin", "cos", "sqrt", "erf", "erfc", "erfinv",
})

#: op name -> composite, filled by the ``@composite`` decorator below
COMPOSITES: dict = {}

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def composite(name):
    """Decorator: register the function as op ``name``'s composite in ``COMPOSITES`` (renamed ``composite_<name>``).
    """
    def deco(fn):
        fn.__name__ = f"composite_{name}"
        COMPOSITES[name] = fn
        return fn
    return deco


def attach():
    """Install every composite on its OpDef (kept when an op already declares one)."""
    for name, fn in COMPOSITES.items():
        op = ops[name]
        if op.composite is None:
            op.composite = fn
    invalidate_caches()


# ---------------------------------------------------------------- helpers
def _E():
    from . import _elementwise
    return _elementwise


def _is_t(x):
    return isinstance(x, Tensor)


def _work(d):
    """The dtype to compute ``d`` in: float16 / bfloat16 in float32, as the cpu kernels do."""
    return D.float32 if d is D.float16 or d is D.bfloat16 else d


def _as(x, d):
    """Tensor ``x`` converted to ``d`` (Python scalars pass through)."""
    return x.to(d) if _is_t(x) and x._dtype is not d else x


def _key_dtype(name, *args):
    """The op's computation dtype for these arguments (the dtype of its dispatch key)."""
    return ops[name].meta(*args)[1][2]


def _finish(out, r):
    out.copy_(r)
    return out


def _const(value, like):
    """A 0-dim tensor holding ``value`` in ``like``'s dtype, on its device."""
    t = empty_on((), like._dtype, like._device)
    t.fill_(value)
    return t


def _not(b):
    """Logical not of a bool tensor."""
    return _E().eq(b, False)


def _or(a, b):
    return _E().bitwise_or(a, b)


def _and(a, b):
    return _E().bitwise_and(a, b)


def _isnan(x):
    return _not(_E().eq(x, x))


def _neg(x):
    """-x for a tensor (unsigned integers wrap around, as the cpu kernel's)."""
    d = x._dtype
    if d is D.bool or (d.category == 1 and not d.is_signed):
        return _E().mul(x, (1 << (8 * d.itemsize)) - 1)
    return _E().mul(x, -1)


def _sub(a, b):
    """a - b, exactly (a + (-b): the sign of a zero result is IEEE's)."""
    return _E().add(a, _neg(b) if _is_t(b) else -b)


def _real(z):
    """The real part of a complex tensor (copy_ to the real dtype drops the imaginary part)."""
    return z.to(z._dtype.to_real)


def _parts(z):
    """(real part, imaginary part) of a complex tensor, as real tensors."""
    return _real(z), _real(_E().mul(z, -1j))


def _complex(re, im):
    """re + i im from real tensors (exact for finite parts; an infinite im gives a NaN real part)."""
    E = _E()
    return E.add(E.mul(im, 1j), re)


def _signbit(x):
    """Bool tensor: x < 0 or x is -0.0 (NaN counts as positive: its sign is not observable here)."""
    E = _E()
    d = x._dtype
    if d is D.bool or (d.category == 1 and not d.is_signed):
        return E.lt(x, 0)
    neg = E.lt(x, 0)
    if d.is_floating_point:
        neg = _or(neg, _and(E.eq(x, 0), E.lt(E.true_divide(1, x), 0)))
    return neg


def _pass_zero(x, r):
    """``r``, except where x is +-0 (x itself, keeping its sign)."""
    return _E().where(_E().eq(x, 0), x, r)


def _with_sign_of(x, r):
    """``r`` (computed for |x|) negated where x < 0; zeros of x pass through."""
    E = _E()
    return _pass_zero(x, E.where(E.lt(x, 0), E.mul(r, -1), r))


def _big(d):
    """1 / sqrt(eps) of the floating dtype ``d``: beyond it, x ** 2 + 1 == x ** 2."""
    return 1.0 / math.sqrt(float(D.finfo(d.to_real).eps))


# ---------------------------------------------------------------- unary
@composite("neg")
def neg(self, *, out):
    """Composite of ``neg``: -x from the primitives, written into ``out``."""
    return _finish(out, _neg(self))


@composite("positive")
def positive(self, *, out):
    """Composite of ``positive``: copies ``self`` into ``out`` unchanged."""
    return _finish(out, self)


@composite("sign")
def sign(self, *, out):
    """Composite of ``sign``: where(0 < x, 1, 0) then -1 where x < 0 (signed dtypes); bool passes through, NaN gives
    0.
    """
    E = _E()
    if self._dtype is D.bool:
        return _finish(out, self)
    zero = E.mul(self, 0) if not self._dtype.is_floating_point else _const(0.0, self)
    r = E.where(E.gt(self, 0), 1, zero)                # 0, -0.0 and NaN -> 0 (PyTorch: sign(nan) == 0)
    if self._dtype.is_signed:
        r = E.where(E.lt(self, 0), -1, r)
    return _finish(out, r)


@composite("sgn")
def sgn(self, *, out):
    """Composite of ``sgn``: ``sign`` for real dtypes; complex x / abs(x), 0 where abs(x) == 0."""
    E = _E()
    if not self._dtype.is_complex:
        return sign(self, out=out)
    a = E.abs(self)
    zero = E.eq(a, 0)
    r = E.where(zero, 0, E.true_divide(self, E.where(zero, 1, a)))
    return _finish(out, r)


@composite("square")
def square(self, *, out):
    """Composite of ``square``: mul(x, x) (bool widened to int64 first)."""
    x = self.to(D.int64) if self._dtype is D.bool else self
    return _finish(out, _E().mul(x, x))


@composite("reciprocal")
def reciprocal(self, *, out):
    """Composite of ``reciprocal``: true_divide(1, x) in the computation dtype (float16 / bfloat16 in float32)."""
    x = _as(self, _work(_key_dtype("reciprocal", self)))
    return _finish(out, _E().true_divide(1, x))


@composite("rsqrt")
def rsqrt(self, *, out):
    """Composite of ``rsqrt``: true_divide(1, sqrt(x)) in the computation dtype."""
    E = _E()
    x = _as(self, _work(_key_dtype("rsqrt", self)))
    return _finish(out, E.true_divide(1, E.sqrt(x)))


@composite("exp2")
def exp2(self, *, out):
    """Composite of ``exp2``: pow(2.0, x) in the computation dtype."""
    x = _as(self, _work(_key_dtype("exp2", self)))
    return _finish(out, _E().pow(2.0, x))


def _log_base(name, ln_base):
    def fn(self, *, out):
        E = _E()
        x = _as(self, _work(_key_dtype(name, self)))
        return _finish(out, E.true_divide(E.log(x), ln_base))
    return composite(name)(fn)


log2 = _log_base("log2", _LN2)
log10 = _log_base("log10", _LN10)


@composite("tan")
def tan(self, *, out):
    """Composite of ``tan``: sin(x) / cos(x) (float); complex as -i tanh(i z)."""
    E = _E()
    x = _as(self, _work(_key_dtype("tan", self)))
    if x._dtype.is_complex:                       # tan(z) = -i tanh(i z): no overflow for large |Im z|
        return _finish(out, E.mul(_tanh(E.mul(x, 1j)), -1j))
    return _finish(out, E.true_divide(E.sin(x), E.cos(x)))


def _one_minus_sq(x):
    """(1 - x) * (1 + x): 1 - x ** 2 without cancellation near |x| = 1."""
    E = _E()
    return E.mul(E.add(_neg(x), 1), E.add(x, 1))


@composite("asin")
def asin(self, *, out):
    """Composite of ``asin``: atan2(x, sqrt((1 - x)(1 + x))) (float); complex as -i asinh(i z)."""
    E = _E()
    x = _as(self, _work(_key_dtype("asin", self)))
    if x._dtype.is_complex:                       # asin(z) = -i asinh(i z)
        return _finish(out, E.mul(_asinh(E.mul(x, 1j)), -1j))
    return _finish(out, E.atan2(x, E.sqrt(_one_minus_sq(x))))


@composite("acos")
def acos(self, *, out):
    """Composite of ``acos``: atan2(sqrt((1 - x)(1 + x)), x) (float); complex as pi / 2 - asin(z)."""
    E = _E()
    x = _as(self, _work(_key_dtype("acos", self)))
    if x._dtype.is_complex:                       # acos(z) = pi / 2 - asin(z)
        a = E.mul(_asinh(E.mul(x, 1j)), -1j)
        return _finish(out, E.add(_neg(a), math.pi / 2))
    return _finish(out, E.atan2(E.sqrt(_one_minus_sq(x)), x))


@composite("atan")
def atan(self, *, out):
    """Composite of ``atan``: atan2(x, 1) (float); complex as -i atanh(i z)."""
    E = _E()
    x = _as(self, _work(_key_dtype("atan", self)))
    if x._dtype.is_complex:                       # atan(z) = -i atanh(i z)
        return _finish(out, E.mul(_atanh(E.mul(x, 1j)), -1j))
    return _finish(out, E.atan2(x, _const(1.0, x)))


def _sinh_cosh_real(x, want_sinh):
    E = _E()
    a = E.abs(x)
    h = E.exp(E.mul(a, 0.5))                                # e ** (a / 2): e ** a may overflow early
    if not want_sinh:                                       # (e ** a + e ** -a) / 2, no cancellation
        return E.add(E.mul(E.mul(h, 0.5), h), E.true_divide(E.true_divide(0.5, h), h))
    big = E.add(E.mul(E.mul(h, 0.5), h), E.mul(E.true_divide(0.5, E.mul(h, h)), -1))
    e = E.expm1(a)                                          # small a: (e + e / (e + 1)) / 2
    small = E.mul(E.add(e, E.true_divide(e, E.add(e, 1))), 0.5)
    r = E.where(E.lt(a, 1.0), small, big)
    return _with_sign_of(x, r)


@composite("sinh")
def sinh(self, *, out):
    """Composite of ``sinh``: from exp(|x| / 2) (expm1 form for |x| < 1) with x's sign; complex as sinh x cos y + i
    cosh x sin y.
    """
    E = _E()
    x = _as(self, _work(_key_dtype("sinh", self)))
    if x._dtype.is_complex:                       # sinh x cos y + i cosh x sin y
        re, im = _parts(x)
        return _finish(out, _complex(E.mul(_sinh_cosh_real(re, True), E.cos(im)),
                                     E.mul(_sinh_cosh_real(re, False), E.sin(im))))
    return _finish(out, _sinh_cosh_real(x, True))


@composite("cosh")
def cosh(self, *, out):
    """Composite of ``cosh``: (e^|x| + e^-|x|) / 2 via exp(|x| / 2); complex as cosh x cos y + i sinh x sin y."""
    E = _E()
    x = _as(self, _work(_key_dtype("cosh", self)))
    if x._dtype.is_complex:                       # cosh x cos y + i sinh x sin y
        re, im = _parts(x)
        return _finish(out, _complex(E.mul(_sinh_cosh_real(re, False), E.cos(im)),
                                     E.mul(_sinh_cosh_real(re, True), E.sin(im))))
    return _finish(out, _sinh_cosh_real(x, False))


def _tanh(x):
    E = _E()
    if x._dtype.is_complex:
        # Kahan's form, stable near the poles: with t = tan y, s = sinh x, beta = 1 + t^2,
        # tanh(x + iy) = (beta sqrt(1 + s^2) s + i t) / (1 + beta s^2); for |x| beyond the
        # point where tanh x rounds to +-1: +-1 + 4i sin y cos y e^(-2|x|)
        re, im = _parts(x)
        t = E.true_divide(E.sin(im), E.cos(im))
        sh = _sinh_cosh_real(re, True)
        beta = E.add(E.mul(t, t), 1)
        s2 = E.mul(sh, sh)
        den = E.add(E.mul(beta, s2), 1)
        r_re = E.true_divide(E.mul(E.mul(beta, E.sqrt(E.add(s2, 1))), sh), den)
        r_im = E.true_divide(t, den)
        big = E.gt(E.abs(re), 9.0 if re._dtype is D.float32 else 22.0)
        b_re = E.where(E.lt(re, 0), -1.0, 1.0)
        b_im = E.mul(E.mul(E.mul(E.sin(im), E.cos(im)), 4), E.exp(E.mul(E.abs(re), -2)))
        return _complex(E.where(big, b_re, r_re), E.where(big, b_im, r_im))
    e = E.expm1(E.mul(E.abs(x), -2))                       # in (-1, 0]: tanh|x| = -e / (e + 2)
    t = E.true_divide(_neg(e), E.add(e, 2))
    return _with_sign_of(x, t)


@composite("tanh")
def tanh(self, *, out):
    """Composite of ``tanh``: -e / (e + 2) with e = expm1(-2|x|), x's sign (float); complex by Kahan's formula."""
    return _finish(out, _tanh(_as(self, _work(_key_dtype("tanh", self)))))


@composite("sigmoid")
def sigmoid(self, *, out):
    """Composite of ``sigmoid``: 1 / (1 + exp(-x)) in the computation dtype."""
    E = _E()
    x = _as(self, _work(_key_dtype("sigmoid", self)))
    return _finish(out, E.true_divide(1, E.add(E.exp(_neg(x)), 1)))


def _asinh(x):
    E = _E()
    if x._dtype.is_complex:
        # log(z + sqrt(z ** 2 + 1)) cancels for Re z < 0: use asinh(z) = -asinh(-z) there
        flip = E.lt(_real(x), 0)
        w = E.where(flip, _neg(x), x)
        r = E.log(E.add(w, E.sqrt(E.add(E.mul(w, w), 1))))
        return E.where(flip, _neg(r), r)
    a = E.abs(x)
    a2 = E.mul(a, a)                                        # log1p(a + a^2 / (1 + sqrt(1 + a^2)))
    r = E.log1p(E.add(a, E.true_divide(a2, E.add(E.sqrt(E.add(a2, 1)), 1))))
    r = E.where(E.gt(a, _big(x._dtype)), E.add(E.log(a), _LN2), r)
    return _with_sign_of(x, r)


@composite("asinh")
def asinh(self, *, out):
    """Composite of ``asinh``: log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x|, log(a) + ln 2 for huge a, with x's sign;
    complex via log.
    """
    return _finish(out, _asinh(_as(self, _work(_key_dtype("asinh", self)))))


@composite("acosh")
def acosh(self, *, out):
    """Composite of ``acosh``: log1p(t + sqrt(t (t + 2))), t = x - 1 (log(x) + ln 2 for huge x, NaN below 1); complex
    via log.
    """
    E = _E()
    x = _as(self, _work(_key_dtype("acosh", self)))
    if x._dtype.is_complex:
        return _finish(out, E.log(E.add(x, E.mul(E.sqrt(E.add(x, 1)), E.sqrt(E.add(x, -1))))))
    t = E.add(x, -1)                                        # log1p(t + sqrt(2t + t^2)), t = x - 1
    r = E.log1p(E.add(t, E.sqrt(E.mul(t, E.add(t, 2)))))
    r = E.where(E.gt(x, _big(x._dtype)), E.add(E.log(x), _LN2), r)
    r = E.where(E.lt(x, 1), math.nan, r)
    return _finish(out, r)


def _atanh(x):
    E = _E()
    return E.mul(_sub(E.log1p(x), E.log1p(_neg(x))), 0.5)


@composite("atanh")
def atanh(self, *, out):
    """Composite of ``atanh``: (log1p(x) - log1p(-x)) / 2, keeping the sign of zero for real input."""
    x = _as(self, _work(_key_dtype("atanh", self)))
    return _finish(out, _atanh(x) if x._dtype.is_complex else _pass_zero(x, _atanh(x)))


# ---------------------------------------------------------------- rounding
def _ceil(x):
    return _neg(_E().floor(_neg(x)))


def _trunc(x):
    E = _E()
    return E.where(E.lt(x, 0), _ceil(x), E.floor(x))


@composite("ceil")
def ceil(self, *, out):
    """Composite of ``ceil``: -floor(-x) for floating dtypes; integer and bool inputs pass through."""
    if not self._dtype.is_floating_point:
        return _finish(out, self)
    return _finish(out, _ceil(self))


@composite("trunc")
def trunc(self, *, out):
    """Composite of ``trunc``: ceil below zero, floor otherwise (floating dtypes); integer and bool inputs pass
    through.
    """
    if not self._dtype.is_floating_point:
        return _finish(out, self)
    return _finish(out, _trunc(self))


@composite("frac")
def frac(self, *, out):
    """Composite of ``frac``: x - trunc(x)."""
    return _finish(out, _sub(self, _trunc(self)))


def _round_half_even(x):
    E = _E()
    f = E.floor(x)
    # d = x - floor(x) is exact (Sterbenz) except for x in (-0.5, 0), where 1 + x may round up to 0.5:
    # that case is a "tie" with f = -1 odd, giving 0, still the right answer
    d = _sub(x, f)
    odd = _not(E.eq(E.fmod(f, 2), 0))     # (inf: fmod is NaN -> "odd", and inf + 1 = inf)
    r = E.where(E.gt(d, 0.5), E.add(f, 1), E.where(E.lt(d, 0.5), f, E.where(odd, E.add(f, 1), f)))
    return E.where(E.eq(r, 0), E.mul(x, 0), r)      # -0.3 -> -0.0


@composite("round")
def round(self, *, decimals=0, out):
    """Composite of ``round``: round half to even from floor / fmod, scaled by 10 ** decimals as numpy does; complex
    rounds each part; integer inputs pass through.
    """
    E = _E()
    d = self._dtype
    if not (d.is_floating_point or d.is_complex):
        return _finish(out, self)
    x = _as(self, _work(d))
    if d.is_complex:                      # each part on its own, as numpy's round
        re = round(_real(x), decimals=decimals, out=empty_on(x._shape, d.to_real, x._device))
        im = round(_real(E.mul(x, -1j)), decimals=decimals, out=empty_on(x._shape, d.to_real, x._device))
        return _finish(out, E.add(E.mul(im, 1j), re))
    if decimals == 0:
        return _finish(out, _round_half_even(x))
    if decimals > 0:                      # numpy's order: scale, round, unscale
        f = 10.0 ** decimals
        return _finish(out, E.true_divide(_round_half_even(E.mul(x, f)), f))
    f = 10.0 ** -decimals
    return _finish(out, E.mul(_round_half_even(E.true_divide(x, f)), f))


# ---------------------------------------------------------------- classification
@composite("isnan")
def isnan(self, *, out):
    """Composite of ``isnan``: x != x as a bool tensor."""
    return _finish(out, _isnan(self))


def _all(self, out, value):
    out.fill_(value)
    return out


@composite("isinf")
def isinf(self, *, out):
    """Composite of ``isinf``: abs(x) == inf (float / complex); all False for integer and bool dtypes."""
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        return _all(self, out, False)
    return _finish(out, _E().eq(_E().abs(self), math.inf))


@composite("isposinf")
def isposinf(self, *, out):
    """Composite of ``isposinf``: x == inf (float); all False for other dtypes."""
    if not self._dtype.is_floating_point:
        return _all(self, out, False)
    return _finish(out, _E().eq(self, math.inf))


@composite("isneginf")
def isneginf(self, *, out):
    """Composite of ``isneginf``: x == -inf (float); all False for other dtypes."""
    if not self._dtype.is_floating_point:
        return _all(self, out, False)
    return _finish(out, _E().eq(self, -math.inf))


@composite("isfinite")
def isfinite(self, *, out):
    """Composite of ``isfinite``: x - x == 0 (float / complex); all True for integer and bool dtypes."""
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        return _all(self, out, True)
    return _finish(out, _E().eq(_sub(self, self), 0))       # x - x is 0 unless x is inf or NaN


@composite("signbit")
def signbit(self, *, out):
    """Composite of ``signbit``: True for negative values and -0.0 (every NaN counts as positive: a known gap)."""
    return _finish(out, _signbit(self))


# ---------------------------------------------------------------- logical / bitwise
def _truth(x):
    """x != 0 as a bool tensor (NaN is true); a Python scalar as a Python bool."""
    if not _is_t(x):
        return bool(x)
    if x._dtype is D.bool:
        return x
    return _not(_E().eq(x, 0))


@composite("logical_not")
def logical_not(self, *, out):
    """Composite of ``logical_not``: eq(x, 0), or the negation of a bool tensor."""
    return _finish(out, _E().eq(self, 0) if self._dtype is not D.bool else _not(self))


def _logical(name, prim):
    def fn(self, other, *, out):
        a, b = _truth(self), _truth(other)
        if not _is_t(a):
            a, b = b, a
        return _finish(out, getattr(_E(), prim)(a, b))
    return composite(name)(fn)


logical_and = _logical("logical_and", "bitwise_and")
logical_or = _logical("logical_or", "bitwise_or")
logical_xor = _logical("logical_xor", "bitwise_xor")


@composite("bitwise_not")
def bitwise_not(self, *, out):
    """Composite of ``bitwise_not``: bitwise_xor with all ones (-1 for signed dtypes, 2 ** bits - 1 for unsigned);
    bool negated.
    """
    d = self._dtype
    if d is D.bool:
        return _finish(out, _not(self))
    ones = -1 if d.is_signed else (1 << (8 * d.itemsize)) - 1
    return _finish(out, _E().bitwise_xor(self, ones))


# ---------------------------------------------------------------- binary arithmetic
@composite("sub")
def sub(self, other, *, alpha=1, out):
    """Composite of ``sub``: add(self, -other) when alpha == 1 and other is a tensor, else add(self, other,
    alpha=-alpha).
    """
    if alpha == 1 and _is_t(other):
        return _finish(out, _E().add(self, _neg(other)))
    return _finish(out, _E().add(self, other, alpha=-alpha))


def _operands(name, self, other):
    """Both operands in the op's computation dtype (float16 / bfloat16 widened), and that dtype."""
    cd = _work(_key_dtype(name, self, other))
    if not _is_t(self):   # a Python number first (remainder(2, t)): a 0-dim tensor, as fmod takes a Tensor first
        t = empty_on((), cd, other._device)
        t.fill_(self)
        self = t
    return _as(self, cd), _as(other, cd), cd


def _lt0(x):
    return _E().lt(x, 0) if _is_t(x) else x < 0


def _divmod_float(a, b):
    """numpy's (and CPython's) float divmod: (floor quotient, remainder with the divisor's sign)."""
    E = _E()
    mod = E.fmod(a, b)
    div = E.true_divide(_sub(a, mod), b)
    nz = _not(E.eq(mod, 0))
    adj = _and(nz, E.bitwise_xor(E.lt(mod, 0), _lt0(b)))
    div = E.where(adj, E.add(div, -1), div)
    mod = E.where(adj, E.add(mod, b), mod)
    mod = E.where(nz, mod, E.where(_lt0(b), -0.0, 0.0) if _is_t(b) else (-0.0 if b < 0 else 0.0))
    fl = E.floor(div)
    fl = E.where(E.gt(_sub(div, fl), 0.5), E.add(fl, 1), fl)
    q = E.true_divide(a, b)
    fl = E.where(E.eq(div, 0), E.mul(q, 0), fl)          # a zero quotient takes the sign of a / b
    bz = E.eq(b, 0) if _is_t(b) else b == 0
    if _is_t(bz) or bz:
        fl = E.where(bz, q, fl)                            # x / 0: inf or NaN
    return fl, mod


def _int_divmod(a, b):
    """Integer floor division and remainder (sign of the divisor) from div_trunc / fmod."""
    E = _E()
    q = E._div_trunc(a, b)                                  # RuntimeError on a zero divisor, as the cpu kernel
    r = E.fmod(a, b)
    adj = _and(_not(E.eq(r, 0)), E.bitwise_xor(E.lt(r, 0), _lt0(b)))
    return E.where(adj, E.add(q, -1), q), E.where(adj, E.add(r, b), r)


@composite("floor_divide")
def floor_divide(self, other, *, out):
    """Composite of ``floor_divide``: float from fmod / true_divide (numpy's divmod); integer from div_trunc adjusted
    to floor (RuntimeError on a zero integer divisor, from div_trunc).
    """
    a, b, cd = _operands("floor_divide", self, other)
    if cd.is_floating_point:
        return _finish(out, _divmod_float(a, b)[0])
    if not cd.is_signed:
        return _finish(out, _E()._div_trunc(a, b))
    return _finish(out, _int_divmod(a, b)[0])


@composite("remainder")
def remainder(self, other, *, out):
    """Composite of ``remainder``: fmod adjusted to the divisor's sign (float and signed integer); plain fmod for
    unsigned dtypes.
    """
    a, b, cd = _operands("remainder", self, other)
    if cd.is_floating_point:
        return _finish(out, _divmod_float(a, b)[1])
    if not cd.is_signed:
        return _finish(out, _E().fmod(a, b))
    return _finish(out, _int_divmod(a, b)[1])


@composite("hypot")
def hypot(self, other, *, out):
    """Composite of ``hypot``: m sqrt(1 + (n / m) ** 2) with m, n the larger and smaller of |a|, |b|; inf if either is
    inf (even with NaN).
    """
    E = _E()
    a, b, cd = _operands("hypot", self, other)
    if not _is_t(a):
        a = _const(a, b)
    if not _is_t(b):
        b = _const(b, a)
    a, b = E.abs(a), E.abs(b)
    m = _maximum(a, b)
    n = _minimum(a, b)
    t = E.true_divide(n, E.where(E.eq(m, 0), 1, m))
    r = E.mul(m, E.sqrt(E.add(E.mul(t, t), 1)))
    r = E.where(_or(E.eq(a, math.inf), E.eq(b, math.inf)), math.inf, r)     # hypot(inf, NaN) = inf
    return _finish(out, r)


@composite("copysign")
def copysign(self, other, *, out):
    """Composite of ``copysign``: abs(self), negated where ``other``'s sign bit is set (NaN counts as positive)."""
    E = _E()
    a, b, cd = _operands("copysign", self, other)
    if not _is_t(a):
        a = _const(a, b)
    m = E.abs(a)
    if not _is_t(b):
        neg = math.copysign(1.0, b) < 0
        return _finish(out, E.mul(m, -1) if neg else m)
    return _finish(out, E.where(_signbit(b), E.mul(m, -1), m))


def _nan_like(a):
    """A NaN of the float tensor ``a``'s shape and dtype."""
    return _E().add(_E().mul(a, 0), math.nan)


def _maximum(a, b):
    """where(a < b or b is NaN, b, a): NaN propagates; a tie keeps a (numpy's rule, -0.0 vs 0.0)."""
    E = _E()
    if not _is_t(b) and b != b:
        return _nan_like(a)
    take_b = E.lt(a, b)
    if _is_t(b) and b._dtype.is_floating_point:
        take_b = _or(take_b, _isnan(b))
    return E.where(take_b, b, a)


def _minimum(a, b):
    E = _E()
    if not _is_t(b) and b != b:
        return _nan_like(a)
    take_b = E.lt(b, a)
    if _is_t(b) and b._dtype.is_floating_point:
        take_b = _or(take_b, _isnan(b))
    return E.where(take_b, b, a)


def _minmax(name, fn):
    def comp(self, other, *, out):
        a, b, cd = _operands(name, self, other)
        if not _is_t(a):
            a, b = b, a
        return _finish(out, fn(a, b))
    return composite(name)(comp)


maximum = _minmax("maximum", _maximum)
minimum = _minmax("minimum", _minimum)


def _fmax(a, b):
    E = _E()
    take_b = E.lt(a, b)
    if a._dtype.is_floating_point:
        take_b = _or(take_b, _isnan(a))
    return E.where(take_b, b, a)


def _fmin(a, b):
    E = _E()
    take_b = E.lt(b, a)
    if a._dtype.is_floating_point:
        take_b = _or(take_b, _isnan(a))
    return E.where(take_b, b, a)


fmax = _minmax("fmax", _fmax)
fmin = _minmax("fmin", _fmin)


# ---------------------------------------------------------------- comparisons
@composite("ne")
def ne(self, other, *, out):
    """Composite of ``ne``: not eq(self, other)."""
    return _finish(out, _not(_E().eq(self, other)))


def _tensor_operand(name, self, other):
    """``other`` itself, or (a Python number) a 0-dim tensor in ``name``'s computation dtype, so the
    operands can be swapped: ``lt`` takes a Tensor first, as PyTorch's."""
    if _is_t(other):
        return other
    t = empty_on((), _key_dtype(name, self, other), self._device)
    t.fill_(other)
    return t


@composite("gt")
def gt(self, other, *, out):
    """Composite of ``gt``: lt(other, self)."""
    return _finish(out, _E().lt(_tensor_operand("gt", self, other), self))


@composite("le")
def le(self, other, *, out):
    """Composite of ``le``: lt(self, other) or eq(self, other)."""
    E = _E()
    return _finish(out, _or(E.lt(self, other), E.eq(self, other)))


@composite("ge")
def ge(self, other, *, out):
    """Composite of ``ge``: lt(other, self) or eq(self, other)."""
    E = _E()
    return _finish(out, _or(E.lt(_tensor_operand("ge", self, other), self), E.eq(self, other)))


# ---------------------------------------------------------------- ops with extra arguments
@composite("nan_to_num")
def nan_to_num(self, nan=0.0, posinf=None, neginf=None, *, out):
    """Composite of ``nan_to_num``: where() replacing NaN, inf and -inf (defaults: 0 and the dtype's finfo max / min);
    complex per part; non-float inputs pass through.
    """
    E = _E()
    d = self._dtype
    if not (d.is_floating_point or d.is_complex):
        return _finish(out, self)
    info = D.finfo(d.to_real)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf

    def fix(x):
        x = E.where(_isnan(x), nan, x)
        x = E.where(E.eq(x, math.inf), hi, x)
        return E.where(E.eq(x, -math.inf), lo, x)

    if d.is_complex:                     # each part on its own, then re + 1j * im
        re = fix(_real(self))
        im = fix(_real(E.mul(self, -1j)))
        return _finish(out, E.add(E.mul(im, 1j), re))
    return _finish(out, fix(self))


@composite("clamp")
def clamp(self, min=None, max=None, *, out):
    """Composite of ``clamp``: maximum with ``min`` then minimum with ``max`` in the computation dtype; a NaN bound
    gives NaN.
    """
    E = _E()
    cd = _key_dtype("clamp", self, min, max)
    r = _as(self, cd)
    # scalar bounds convert to the computation dtype first, as the cpu kernel's (-1 -> 255 for uint8)
    lo = _as(min, cd) if _is_t(min) or min is None else _const(min, r)
    hi = _as(max, cd) if _is_t(max) or max is None else _const(max, r)
    if lo is not None:
        r = _bound(r, lo, _maximum)
    if hi is not None:
        r = _bound(r, hi, _minimum)
    return _finish(out, r)


def _bound(r, m, fn):
    """fn(r, m), except where the bound m is NaN (the result is then NaN, as PyTorch's clamp)."""
    E = _E()
    if r._dtype.is_floating_point:
        return E.where(_isnan(m), m, fn(r, m))
    return fn(r, m)


@composite("lerp")
def lerp(self, end, weight, *, out):
    """Composite of ``lerp``: self + w (end - self) for |w| < 0.5, else end + (w - 1)(end - self), exact at both ends.
    """
    E = _E()
    cd = _work(self._dtype)
    a, b, w = _as(self, cd), _as(end, cd), _as(weight, cd)
    d = _sub(b, a)
    if not _is_t(w):                      # exact at both ends: a + w d for |w| < 0.5, else b + (w - 1) d
        return _finish(out, E.add(a, E.mul(d, w)) if abs(w) < 0.5 else E.add(b, E.mul(d, w - 1)))
    small = E.lt(E.abs(w), 0.5)
    return _finish(out, E.where(small, E.add(a, E.mul(w, d)), E.add(b, E.mul(E.add(w, -1), d))))


def _addc(name, combine):
    def fn(self, tensor1, tensor2, *, value=1, out):
        cd = _work(_key_dtype(name, self, tensor1, tensor2))
        s, t1, t2 = _as(self, cd), _as(tensor1, cd), _as(tensor2, cd)
        x = combine(_E().mul(t1, _const(value, t1)), t2)
        return _finish(out, _E().add(s, x))
    return composite(name)(fn)


addcmul = _addc("addcmul", lambda x, t2: _E().mul(x, t2))
addcdiv = _addc("addcdiv", lambda x, t2: _E().true_divide(x, t2))
