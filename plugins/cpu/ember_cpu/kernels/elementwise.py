"""Elementwise kernels: numpy ufuncs over strided views, writing into ``out``.

Fast path: all operands already in the output dtype -> one ufunc call with ``out=``.
Otherwise operands are cast to the computation dtype first (float16 / bfloat16
compute in float32, as PyTorch's cpu kernels do) and the result is stored with an
unsafe cast.
"""
from __future__ import annotations

import numpy as np
import scipy.special as sp

import ember
from ember import Tensor

from ._util import ALL, LOWP, compute_np, np_view

_T = Tensor


def _sigmoid(x, out=None):
    if x.dtype.kind == "c":     # scipy's expit has no complex loop
        r = 1 / (1 + np.exp(-x))
        if out is None:
            return r
        np.copyto(out, r)
        return out
    return sp.expit(x, out=out) if out is not None else sp.expit(x)


def _sign(x, out=None):
    if x.dtype == np.bool_:     # numpy's sign has no bool loop; sign(bool) is the value itself
        return _positive(x, out=out)
    r = np.asarray(np.sign(x, out=out))
    if r.dtype.kind == "f":     # PyTorch: sign(nan) is 0
        np.copyto(r, 0, where=np.isnan(r))
    return r


def _rsqrt(x, out=None):
    r = np.asarray(np.sqrt(x, out=out))   # 0-dim: a numpy scalar otherwise
    return np.reciprocal(r, out=r)


def _frac(x, out=None):
    return np.subtract(x, np.trunc(x), out=out)


def _sgn(x, out=None):
    if np.iscomplexobj(x):
        a = np.abs(x)
        r = np.where(a == 0, 0, x / np.where(a == 0, 1, a))
        if out is not None:
            out[...] = r
            return out
        return r
    return _sign(x, out=out)


def _int_identity(f):
    """floor / ceil / trunc / round keep integers unchanged."""
    def g(x, out=None):
        if x.dtype.kind in "iub":
            if out is None:
                return x.copy()
            np.copyto(out, x)
            return out
        return f(x, out=out)
    return g


def _positive(x, out=None):
    if out is None:
        return x.copy()
    np.copyto(out, x)
    return out


def _logical_not(x, out=None):
    return np.logical_not(x, out=out)


def _bitwise_not(x, out=None):
    if x.dtype == np.bool_:
        return np.logical_not(x, out=out)
    return np.invert(x, out=out)


def _square(x, out=None):
    if x.dtype == np.bool_:
        return np.logical_and(x, x, out=out)
    return np.square(x, out=out)


UNARY = {
    "neg": np.negative, "abs": np.abs, "sign": _sign, "sgn": _sgn, "exp": np.exp, "exp2": np.exp2, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "rsqrt": _rsqrt,
    "square": _square, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "sigmoid": _sigmoid, "erf": sp.erf, "erfc": sp.erfc,
    "erfinv": sp.erfinv, "floor": _int_identity(np.floor), "ceil": _int_identity(np.ceil),
    "trunc": _int_identity(np.trunc), "frac": _frac, "reciprocal": np.reciprocal, "isnan": np.isnan,
    "isinf": np.isinf, "isposinf": np.isposinf, "isneginf": np.isneginf, "isfinite": np.isfinite,
    "signbit": np.signbit, "logical_not": _logical_not, "bitwise_not": _bitwise_not, "positive": _positive,
}


# ops whose numpy ufunc can raise floating-point warnings (PyTorch warns about nothing):
# only these pay for np.errstate (about 1 us per call) on the fast path
_MAY_WARN = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "square", "sin", "cos",
             "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erfinv",
             "reciprocal", "true_divide", "floor_divide", "remainder", "fmod", "div_trunc", "atan2", "hypot",
             "pow", "sigmoid", "frac", "sgn"}
# add / sub / mul skip it: a float overflow to inf there shows numpy's RuntimeWarning (documented)


#: unary ops that compute integer (and bool) inputs in the default float dtype
_UNARY_TO_FLOAT = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
                   "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf",
                   "erfc", "erfinv", "reciprocal"}


def make_unary(f, name=""):
    """Build the cpu kernel ``kernel(self, *, out)`` of unary op ``name`` from numpy function ``f``.

    Same dtype in and out: ``f(a, out=o)`` straight into out's memory. Otherwise it computes in PyTorch's common
    dtype (integers in the default float dtype for the float ops, float16 / bfloat16 in float32 rounded back to
    their dtype) and casts into ``out``. numpy's floating-point warnings are suppressed.
    """
    quiet = name not in _MAY_WARN
    to_float = name in _UNARY_TO_FLOAT

    def kernel(self, *, out):
        o = out._native
        if o is None:
            o = np_view(out)
        a = self._native
        if a is None:
            a = np_view(self)
        if a.dtype == o.dtype and o.dtype not in LOWP:
            if quiet:
                f(a, out=o)
            else:
                with np.errstate(all="ignore"):
                    f(a, out=o)
            return
        # computation dtype (PyTorch's common dtype, whatever the out= dtype): a floating input's
        # own; integers in the default float for float ops, else their own
        sd = self._dtype
        ed = ember.get_default_dtype() if to_float and not (sd.is_floating_point or sd.is_complex) else sd
        cd = compute_np(ed)
        with np.errstate(all="ignore"):
            r = f(a.astype(cd, copy=False))
        if cd != ed.numpy_dtype and out._dtype is not ed and out._dtype is not ember.bool:
            r = r.astype(ed.numpy_dtype)       # low precision: rounded to the common dtype first
        np.copyto(o, r, casting="unsafe")
    kernel.__name__ = f"cpu_{getattr(f, '__name__', 'unary')}"
    return kernel


def _alpha_scale(b, alpha):
    return b * alpha


def _trunc_div(a, b, out=None):
    if np.result_type(a, b).kind in "iu":
        q = np.floor_divide(a, b)
        q = q + ((q < 0) & (q * b != a))
        if out is not None:
            np.copyto(out, q, casting="unsafe")
            return out
        return q
    return np.trunc(np.true_divide(a, b), out=out)


def _int_check_zero(f, name):
    def g(a, b, out=None):
        if np.result_type(a, b).kind in "iu" and np.any(np.asarray(b) == 0):
            raise RuntimeError("ZeroDivisionError")
        return f(a, b, out=out)
    return g


def _shift_right(a, b, out=None):
    return np.right_shift(a, b, out=out)


def _pow(a, b, out=None):
    if np.result_type(a, b) == np.bool_:   # bool ** bool scalar: numpy has no bool loop
        r = np.power(np.asarray(a, np.uint8), np.asarray(b, np.uint8)).astype(np.bool_)
        if out is None:
            return r
        np.copyto(out, r)
        return out
    if np.result_type(a, b).kind in "iu" and np.any(np.asarray(b) < 0):
        # numpy refuses integer ** negative integer; PyTorch gives 1 ** n = 1, (-1) ** n = +-1, else 0
        a, b = np.broadcast_arrays(a, b)
        with np.errstate(all="ignore"):
            r = np.power(a, np.abs(b))
        neg = b < 0
        r = np.where(neg, np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0)), r)
        if out is None:
            return r.astype(np.result_type(a, b), copy=False)
        np.copyto(out, r, casting="unsafe")
        return out
    return np.power(a, b, out=out)


def _logical(f):
    return lambda a, b, out=None: f(a, b, out=out)


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "true_divide": np.true_divide,
    "floor_divide": _int_check_zero(np.floor_divide, "floor_divide"),
    "remainder": _int_check_zero(np.remainder, "remainder"), "fmod": _int_check_zero(np.fmod, "fmod"),
    "div_trunc": _int_check_zero(_trunc_div, "div"), "atan2": np.arctan2, "hypot": np.hypot,
    "copysign": np.copysign, "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift, "bitwise_right_shift": _shift_right,
    "pow": _pow,
}
_FLOAT_RULE = {"true_divide", "atan2", "hypot", "copysign"}
_BOOL_OUT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}


def _common_dtype(name, self, other):
    """PyTorch's common dtype of the operands (not the out= dtype, which may be wider)."""
    d = ember.result_type(self, other)
    if name in _FLOAT_RULE and not (d.is_floating_point or d.is_complex):
        d = ember.get_default_dtype()
    return d


def _slow_binary(f, name, self, other, out, alpha):
    """Mixed dtypes, low precision, Python scalars of a higher category, or alpha != 1."""
    if not isinstance(self, _T):   # add(2, t): keep the argument order
        a = self
        b = np_view(other)
    else:
        a = np_view(self)
        b = np_view(other) if isinstance(other, _T) else other
    ed = _common_dtype(name, self, other)
    cd = compute_np(ed)
    a = a.astype(cd, copy=False) if isinstance(a, np.ndarray) else np.asarray(a).astype(cd)
    b = b.astype(cd, copy=False) if isinstance(b, np.ndarray) else np.asarray(b).astype(cd)
    if alpha != 1:
        b = b * np.asarray(alpha).astype(cd)
    with np.errstate(all="ignore"):
        r = f(a, b)
    if cd != ed.numpy_dtype and out._dtype is not ed and name not in _BOOL_OUT:
        r = r.astype(ed.numpy_dtype)           # low precision: rounded to the common dtype first
    np.copyto(np_view(out), r, casting="unsafe")


def make_binary(f, name, with_alpha):
    """Build the cpu kernel of binary op ``name`` from numpy ufunc ``f``: ``kernel(self, other, *, [alpha=1,]
    out)`` with ``alpha`` only when ``with_alpha`` (add / sub).

    Fast path: operands (tensor or Python scalar of the same category) in out's dtype -> ``f(a, b, out=o)``;
    float64 add / sub with alpha round once (fma64), as PyTorch's fused kernels do. Anything else (mixed dtypes,
    low precision, scalar first) computes in the common dtype and casts into ``out``. Integer floor_divide /
    remainder / fmod / div by zero raise RuntimeError "ZeroDivisionError".
    """
    if with_alpha:
        sign = 1 if name == "add" else -1
        def kernel(self, other, *, alpha=1, out):
            o = out._native
            if o is None:
                o = np_view(out)
            if self.__class__ is not _T and not isinstance(self, _T):
                return _slow_binary(f, name, self, other, out, alpha)
            a = self._native
            if a is None:        # (a view not cached yet takes the same path: float64 alpha stays one fma)
                a = np_view(self)
            if other.__class__ is _T or (other.__class__ is not float and isinstance(other, _T)):  # + nn.Parameter
                b = other._native
                if b is None:
                    b = np_view(other)
                # (float16 / bfloat16 keys get the slow kernel registered instead: see register())
                if a.dtype is o.dtype and b.dtype is o.dtype:
                    if alpha == 1:
                        f(a, b, out=o)
                        return
                    if o.dtype.kind == "f" and alpha.__class__ in (float, int):
                        # PyTorch: fma(+-alpha, other, self), rounded once (see fma64)
                        if o.dtype == np.float64:
                            fma64(float(alpha) if sign > 0 else -float(alpha), b, a, o)
                            return
                        f(a, np.multiply(b, alpha), out=o)
                        return
            elif a.dtype is o.dtype and alpha == 1 and other.__class__ is not complex \
                    and (other.__class__ is not float or o.dtype.kind in "fc"):
                f(a, other, out=o)
                return
            _slow_binary(f, name, self, other, out, alpha)
    else:
        quiet = name not in _MAY_WARN

        def kernel(self, other, *, out):
            o = out._native
            if o is None:
                o = np_view(out)
            a = self._native if self.__class__ is _T else None
            if a is None:
                if self.__class__ is not _T and not isinstance(self, _T):
                    return _slow_binary(f, name, self, other, out, 1)
                a = np_view(self)
            if other.__class__ is _T and other._shape == () and self._shape != () and a.dtype is o.dtype \
                    and a.dtype.kind == "f" and a.dtype not in LOWP and other._dtype.is_floating_point:
                # a 0-dim float tensor (an optimizer's step size under ember.compile) with a dimensioned float one:
                # computed in the dimensioned tensor's dtype, like a Python number (PyTorch's promotion)
                b = other._native
                other = float((b if b is not None else np_view(other))[()])
            if other.__class__ is _T or (other.__class__ is not float and isinstance(other, _T)):  # + nn.Parameter
                b = other._native
                if b is None:
                    b = np_view(other)
                if a.dtype == b.dtype and (a.dtype == o.dtype or o.dtype == np.bool_) and a.dtype not in LOWP:
                    if quiet or a.dtype.kind not in "fc":
                        f(a, b, out=o)
                        return
                    with np.errstate(all="ignore"):
                        f(a, b, out=o)
                    return
            elif (a.dtype == o.dtype or o.dtype == np.bool_) and a.dtype not in LOWP \
                    and other.__class__ is not complex and (other.__class__ is not float or a.dtype.kind in "fc") \
                    and (other.__class__ is not int or a.dtype.kind != "b"):
                if quiet or a.dtype.kind not in "fc":
                    f(a, other, out=o)
                    return
                with np.errstate(all="ignore"):
                    f(a, other, out=o)
                return
            _slow_binary(f, name, self, other, out, 1)
    kernel.__name__ = f"cpu_{name}"
    return kernel


# ---------------------------------------------------------------- ops with extra arguments
def round_(self, *, decimals=0, out):
    """cpu kernel of ``round``, all dtypes: write x rounded half to even at ``decimals`` places into ``out``
    (integers and bool copied).
    """
    o = np_view(out)
    a = np_view(self)
    if a.dtype.kind in "iub":
        np.copyto(o, a)
        return
    cd = compute_np(out._dtype)
    np.copyto(o, np.round(a.astype(cd, copy=False), decimals), casting="unsafe")


def nan_to_num(self, nan=0.0, posinf=None, neginf=None, *, out):
    """cpu kernel of ``nan_to_num``, all dtypes: write x with NaN -> ``nan``, +inf -> ``posinf`` and -inf ->
    ``neginf`` (defaults: the dtype's largest / lowest finite values) into ``out``; non-float inputs copied.
    """
    a = np_view(self)
    o = np_view(out)
    if a.dtype.kind not in "fc" and a.dtype not in LOWP:
        np.copyto(o, a)
        return
    info = ember.finfo(self._dtype)     # numpy's finfo does not know bfloat16
    r = np.nan_to_num(a.astype(compute_np(self._dtype), copy=False), nan=nan,
                      posinf=float(info.max) if posinf is None else posinf,
                      neginf=float(info.min) if neginf is None else neginf)
    np.copyto(o, r, casting="unsafe")


def _arr(x, cd):
    if isinstance(x, _T):
        return np_view(x).astype(cd, copy=False)
    return np.asarray(x).astype(cd)


def where(condition, input, other, *, out):
    """cpu kernel of ``where``, all dtypes: write ``input`` where ``condition`` else ``other`` (tensors or scalars,
    broadcast) into ``out``, in out's dtype.
    """
    cd = compute_np(out._dtype)
    np.copyto(np_view(out), np.where(np_view(condition).astype(bool, copy=False), _arr(input, cd), _arr(other, cd)),
              casting="unsafe")


def clamp(self, min=None, max=None, *, out):
    """cpu kernel of ``clamp``, all dtypes: write min(max(x, min), max) into ``out`` (``min`` / ``max`` tensors,
    scalars or None); a NaN bound gives NaN, as PyTorch does.
    """
    cd = compute_np(out._dtype)
    a = _arr(self, cd)
    r = a
    if min is not None:
        m = _arr(min, cd)
        r = np.where(np.isnan(m) if cd.kind == "f" else False, m, np.maximum(r, m))
    if max is not None:
        m = _arr(max, cd)
        r = np.where(np.isnan(m) if cd.kind == "f" else False, m, np.minimum(r, m))
    np.copyto(np_view(out), r, casting="unsafe")


# ---------------------------------------------------------------- fused multiply-add
# PyTorch's cpu kernels for add / sub with alpha, lerp and addcmul round once: their vectorized loops
# use fused multiply-add instructions. numpy has no fma ufunc, so for float64 the kernels below compute
# x * y + z exactly (Dekker's product and Knuth's sum, error-free transformations) and round once, which
# makes ember's float64 optimizer steps bit-identical to PyTorch's. Other dtypes round twice (<= 1 ulp).
_SPLIT = 134217729.0    # 2 ** 27 + 1: Veltkamp's splitting constant for float64


def _split(x):
    """(hi, lo) with hi + lo == x exactly and each half of at most 26 significant bits."""
    t = x * _SPLIT
    hi = t - (t - x)
    return hi, x - hi


def fma64(x, y, z, out):
    """``out = x * y + z`` rounded once (float64 arrays or Python floats, broadcasting; ``out`` may alias).

    Non-finite results (and splits that overflow beyond about 1e300) fall back to the twice-rounded value."""
    with np.errstate(all="ignore"):
        p = np.multiply(x, y)
        xh, xl = _split(x)
        yh, yl = _split(y)
        e = xh * yh
        e -= p
        e += xh * yl
        e += xl * yh
        e += xl * yl                    # p + e == x * y exactly
        s = np.add(p, z)
        bb = s - p                      # (no out= on temporaries: 0-d inputs give numpy scalars)
        t = (p - (s - bb)) + (z - bb)   # s + t == p + z exactly
        t += e
        np.add(s, t, out=out)
        if not np.isfinite(out).all():  # inf / nan operands, or an overflowing split: s = p + z
            np.copyto(out, s, where=~np.isfinite(out))
    return out


def _same_dtype_views(o, *xs):
    """numpy views of the tensors ``xs`` when all are in ``o``'s (full-precision) dtype, else None."""
    if o.dtype in LOWP:
        return None
    views = []
    for x in xs:
        v = x._native if x.__class__ is _T else None
        if v is None:
            if not isinstance(x, _T):
                return None
            v = np_view(x)
        if v.dtype != o.dtype:
            return None
        views.append(v)
    return views


def lerp_arrays(a, b, weight, o):
    """``o = a + weight * (b - a)`` for numpy arrays of ``o``'s dtype (float32 / float64; ``a`` may be 0-dim) and
    a Python float ``weight``: PyTorch's formula from the nearer end (fma(w, d, a) for |w| < 0.5, else
    fma(w - 1, d, b)); float64 rounds once. The fast path of the ``lerp`` kernel, and what ember-cpu's fuser
    calls (``ember_cpu.fused``)."""
    d = np.asarray(np.subtract(b, a))   # 0-dim: a numpy scalar otherwise
    if o.dtype == np.float64:
        return fma64(weight, d, a, o) if abs(weight) < 0.5 else fma64(weight - 1.0, d, b, o)
    if abs(weight) < 0.5:
        np.multiply(d, weight, out=d)
        np.add(a, d, out=o)
    else:
        np.multiply(d, weight - 1.0, out=d)
        np.add(b, d, out=o)


def addcmul_arrays(s, a, b, value, o):
    """``o = s + value * a * b`` for numpy arrays of ``o``'s float dtype, ``a`` and ``b`` of ``o``'s shape (``s``
    may broadcast), a Python number ``value``; float64 rounds once (PyTorch's fma(value * a, b, s)). The fast
    path of the ``addcmul`` kernel, and what ember-cpu's fuser calls."""
    x = np.asarray(np.multiply(a, value))
    if o.dtype == np.float64:
        fma64(x, b, s, o)
        return
    np.multiply(x, b, out=x)
    np.add(s, x, out=o)


def addcdiv_arrays(s, a, b, value, o):
    """``o = s + (value * a) / b`` for numpy arrays of ``o``'s float dtype, ``a`` and ``b`` of ``o``'s shape (``s``
    may broadcast), a Python number ``value``; each step rounded, as PyTorch's kernel. The fast path of the
    ``addcdiv`` kernel, and what ember-cpu's fuser calls."""
    with np.errstate(all="ignore"):
        if value == 1:          # 1 * a is a, exactly: one pass and one temporary less (the optimizers' call)
            x = np.asarray(np.true_divide(a, b))
        else:
            x = np.asarray(np.multiply(a, value))
            np.true_divide(x, b, out=x)
    np.add(s, x, out=o)


def lerp(self, end, weight, *, out):
    """cpu kernel of ``lerp``, all dtypes: write self + weight * (end - self) into ``out``, as PyTorch's formula
    (from the nearer end: fma(w, d, self) for |w| < 0.5, else fma(w - 1, d, end)); float64 rounds once.
    """
    o = out._native
    if o is None:
        o = np_view(out)
    if weight.__class__ is float and o.dtype.kind == "f":
        v = _same_dtype_views(o, self, end)
        if v is not None:           # the optimizers' case: tensors of one dtype, a Python float weight
            return lerp_arrays(v[0], v[1], weight, o)
    cd = compute_np(out._dtype)
    a, b, w = _arr(self, cd), _arr(end, cd), _arr(weight, cd)
    d = np.asarray(b - a)
    if cd == np.float64:
        # PyTorch's formula, exact at both ends: fma(w, d, a) for |w| < 0.5, else fma(w - 1, d, b)
        if w.ndim == 0:
            wf = float(w)
            return fma64(wf, d, a, o) if abs(wf) < 0.5 else fma64(wf - 1.0, d, b, o)
        small = np.abs(w) < 0.5
        return fma64(np.where(small, w, w - 1), d, np.where(small, a, b), o)
    if w.ndim == 0 and a.dtype == o.dtype and b.dtype == o.dtype:
        if abs(w.item()) < 0.5:   # complex weights: by magnitude
            np.multiply(d, w, out=d)
            np.add(a, d, out=o)
        else:
            np.multiply(d, w - 1, out=d)
            np.add(b, d, out=o)
        return
    r = np.where(np.abs(w) < 0.5, a + w * d, b + (w - 1) * d)
    np.copyto(o, r, casting="unsafe")


def addcmul(self, tensor1, tensor2, *, value=1, out):
    """cpu kernel of ``addcmul``, all dtypes: write self + value * tensor1 * tensor2 (broadcast) into ``out``;
    float64 rounds once, as PyTorch's fma.
    """
    # PyTorch: fma(value * tensor1, tensor2, self)
    o = out._native
    if o is None:
        o = np_view(out)
    if o.dtype.kind == "f" and value.__class__ in (float, int):
        v = _same_dtype_views(o, self, tensor1, tensor2)
        if v is not None:
            s_, a, b = v
            if a.shape == o.shape and b.shape == o.shape:      # no broadcasting but of self
                return addcmul_arrays(s_, a, b, value, o)
    cd = compute_np(out._dtype)
    x = np.multiply(np.asarray(value).astype(cd), _arr(tensor1, cd))
    o = np_view(out)
    if cd == np.float64 and o.dtype == cd:
        fma64(x, _arr(tensor2, cd), _arr(self, cd), o)
        return
    _add_into(o, _arr(self, cd), np.multiply(x, _arr(tensor2, cd)))


def addcdiv(self, tensor1, tensor2, *, value=1, out):
    """cpu kernel of ``addcdiv``, all dtypes: write self + value * tensor1 / tensor2 (broadcast) into ``out``.
    RuntimeError "Integer division with addcdiv is no longer supported, ..." for integer dtypes.
    """
    # PyTorch: self + (value * tensor1) / tensor2, rounding each step
    o = out._native
    if o is None:
        o = np_view(out)
    if o.dtype.kind == "f" and value.__class__ in (float, int):
        v = _same_dtype_views(o, self, tensor1, tensor2)
        if v is not None:
            s_, a, b = v
            if a.shape == o.shape and b.shape == o.shape:      # no broadcasting but of self
                return addcdiv_arrays(s_, a, b, value, o)
    cd = compute_np(out._dtype)
    if cd.kind in "iu":
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2.")
    x = np.multiply(np.asarray(value).astype(cd), _arr(tensor1, cd))
    with np.errstate(all="ignore"):
        x = np.true_divide(x, _arr(tensor2, cd))
    _add_into(np_view(out), _arr(self, cd), x)


def _add_into(o, a, r):
    """o = a + r; r is a temporary (reused as the result when o needs a cast or broadcast)."""
    if r.shape == o.shape and r.dtype == o.dtype:
        np.add(a, r, out=o)
    else:
        np.copyto(o, np.add(a, r), casting="unsafe")


def _make_lowp_binary(f, name):
    """float16 / bfloat16 compute in float32: always the casting path."""
    def kernel(self, other, *, alpha=1, out):
        _slow_binary(f, name, self, other, out, alpha)
    kernel.__name__ = f"cpu_{name}_lowp"
    return kernel


def register(lib):
    """Register every unary and binary op of the UNARY / BINARY tables (float16 / bfloat16 binaries through the
    casting kernel) and the kernels above for device 'cpu', all dtypes, on ``lib``.
    """
    lowp = [d for d in ALL if d.numpy_dtype in LOWP]
    rest = [d for d in ALL if d not in lowp]
    for name, f in UNARY.items():
        lib.impl(name, make_unary(f, name), device="cpu", dtypes=ALL)
    for name, f in BINARY.items():
        lib.impl(name, make_binary(f, name, name in ("add", "sub")), device="cpu", dtypes=rest)
        lib.impl(name, _make_lowp_binary(f, name), device="cpu", dtypes=lowp)
    for name, k in (("round", round_), ("nan_to_num", nan_to_num), ("where", where), ("clamp", clamp),
                    ("lerp", lerp), ("addcmul", addcmul), ("addcdiv", addcdiv)):
        lib.impl(name, k, device="cpu", dtypes=ALL)
