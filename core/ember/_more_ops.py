"""The remaining tensor operators of torch (issue 18, part 6) written over existing ember ops.

Every function here is a composite of ember ops (no new dispatcher op, no kernel), so each
runs on every device, the primitive-only reference plugin vdev included, and is
differentiable wherever the ops it is built from are. Names, signatures, defaults, result
dtypes, exception classes and messages follow PyTorch 2.13; each docstring says what it
matches. Group (a): counting / statistics / number-theory / calculus helpers (``histc``,
``histogram``, ``quantile``, ``isin``, ``gcd``, ``frexp``, ``logcumsumexp``,
``gradient``, ``combinations``, ...). Group (b): scatter-style writes and in-place fills
(``put_``, ``index_reduce``, ``select_scatter``, ``resize_``, ``cauchy_``, ...). Group (c):
the ``*_copy`` variants and the NumPy-style aliases (``arccosh``, ``multiply``, ``clip_``, ...).

Known limits (stated where they matter): results whose size depends on the data
(``histc`` with automatic range; ``bincount`` in _ops/_reduction.py) read a value back to the host as PyTorch
does; ``gradient`` / ``quantile`` are differentiable through the ops they use; the random
fills (``cauchy_``, ``geometric_``, ``log_normal_``) draw from ember's generator, so their
values differ from PyTorch's for the same seed (the distributions agree).
"""
from __future__ import annotations

import builtins
import itertools
import math

import ember
from . import _dtype as D
from . import return_types as RT
from ._dtype import can_cast, torch_name
from ._tensor import Tensor, _wrap_dim

_bsum = builtins.sum
_bmin = builtins.min
_bmax = builtins.max
_brange = builtins.range

__all__ = [
    # (a)
    "histc", "histogram", "histogramdd", "quantile", "nanquantile", "isin", "gcd", "gcd_", "lcm", "lcm_",
    "heaviside",
    "nextafter", "ldexp", "ldexp_", "frexp", "logaddexp", "logaddexp2", "logcumsumexp", "deg2rad", "deg2rad_",
    "rad2deg", "rad2deg_", "trapezoid", "trapz", "cumulative_trapezoid", "gradient", "combinations",
    "cartesian_prod", "tril_indices", "triu_indices", "unravel_index",
    # (b)
    "put", "index_reduce", "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter",
    "split_with_sizes", "zero_", "fill", "resize_as_",
    # (c)
    "alias_copy", "detach_copy", "slice_copy", "split_with_sizes_copy", "narrow_copy",
    "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes",
    # small conveniences
    "vander", "nonzero_static", "is_same_size", "is_signed", "is_nonzero", "detach", "detach_", "range",
]


# ---------------------------------------------------------------- helpers
def _is_t(x):
    return isinstance(x, Tensor)


def _check_t(x, fn, arg="input", pos=1):
    if not _is_t(x):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _out(r, out, fn):
    """``r``, or ``r`` written into a user's ``out=`` (PyTorch's checks; ``out`` resized when its shape differs)."""
    if out is None:
        return r
    from types import SimpleNamespace
    from ._factory import check_out
    check_out(SimpleNamespace(name=fn), out, tuple(r.shape), r._dtype, r._device)
    with ember.no_grad():
        out.copy_(r)
    return out


def _inplace(self, r):
    """Write ``r`` into ``self`` (an in-place op's result), after PyTorch's shape / dtype checks."""
    if tuple(r.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(r.shape)}")
    if r._dtype is not self._dtype and not can_cast(r._dtype, self._dtype):
        raise RuntimeError(f"result type {torch_name(r._dtype)} can't be cast to the desired output type "
                           f"{torch_name(self._dtype)}")
    return self.copy_(r)


def _dtname(d):
    """PyTorch's short dtype name in kernel messages ('Float', 'Long', ...)."""
    return {D.float16: "Half", D.bfloat16: "BFloat16", D.float32: "Float", D.float64: "Double", D.uint8: "Byte",
            D.int8: "Char", D.int16: "Short", D.int32: "Int", D.int64: "Long", D.bool: "Bool",
            D.complex64: "ComplexFloat", D.complex128: "ComplexDouble"}.get(d, str(d))


def _float_of(x):
    """``x`` as a floating tensor (integers / bool promoted to the default dtype, as PyTorch's unary float ops)."""
    if x._dtype.is_floating_point or x._dtype.is_complex:
        return x
    return x.to(ember.get_default_dtype())


def _tensor_like(v, like):
    return v if _is_t(v) else ember.tensor(v, device=like.device)


# ================================================================ (a)
def _hist_bin_index(x, lo, hi, bins):
    """Bin of each element of ``x`` among ``bins`` equal bins over [lo, hi] (the last bin closed), and the
    mask of the elements inside the range."""
    inside = (x >= lo) & (x <= hi)
    pos = ((x - lo) * bins / (hi - lo)).floor().to(D.int64)
    pos = pos.clamp(0, bins - 1)
    return pos, inside


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002 - PyTorch's names
    """Histogram of ``input`` with ``bins`` equal-width bins over [min, max] (matches torch.histc).

    ``min == max == 0`` uses the data's minimum and maximum (widened by 1 each way when equal);
    elements outside the range are ignored. Result: 1-d, ``bins`` elements, ``input``'s dtype.
    RuntimeError for integer input ("histogram_cpu" not implemented for 'Long'), ``bins <= 0``,
    ``min > max`` or a non-finite range. Not differentiable (as PyTorch's).
    """
    _check_t(input, "histc")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_dtname(input._dtype)}'")
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got " + str(bins) + " for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = float(input.min()), float(input.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, but got min {lo} and max {hi}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc(): range of [{lo}, {hi}] is not finite")
    with ember.no_grad():
        x = input.reshape(-1)
        pos, inside = _hist_bin_index(x, lo, hi, bins)
        w = inside.to(input._dtype)
        res = ember.zeros(bins, dtype=input._dtype, device=input.device).index_add(0, pos, w)
    return _out(res, out, "histc")


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """Histogram of ``input`` (matches torch.histogram): returns ``(hist, bin_edges)``.

    ``bins`` is an int (equal-width bins over ``range`` or the data's [min, max]) or a 1-d
    increasing tensor of edges. Every bin is half-open except the last, which includes its right
    edge; elements outside the edges are ignored. ``weight`` (input's shape) sums weights instead
    of counting; ``density`` normalises so the histogram integrates to 1. float tensors only
    (RuntimeError "torch.histogram: input tensor and bins tensors should have the same dtype" etc.).
    """
    _check_t(input, "histogram")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_dtname(input._dtype)}'")
    with ember.no_grad():
        x = input.reshape(-1)
        if _is_t(bins):
            if bins._dtype is not input._dtype:
                raise RuntimeError("torch.histogram: input tensor and bins tensors should have the same dtype, "
                                   f"but got input {torch_name(input._dtype)} and bins {torch_name(bins._dtype)}")
            if bins.dim() != 1:
                raise RuntimeError(f"torch.histogram: bins tensor should have one dimension, but got "
                                   f"{bins.dim()} dimensions")
            if bins.numel() < 1:
                raise RuntimeError("torch.histogram: bins tensor should have at least 1 element, but got 0 elements")
            edges = bins.clone()
        else:
            if bins <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
            if range is not None:
                lo, hi = float(range[0]), float(range[1])
            elif x.numel():
                lo, hi = float(x.min()), float(x.max())
            else:
                lo, hi = 0.0, 0.0
            if lo > hi:
                raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {lo} max {hi}")
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise RuntimeError(f"torch.histogram(): range of [{lo}, {hi}] is not finite")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges = ember.linspace(lo, hi, bins + 1, dtype=input._dtype, device=input.device)
        nb = edges.numel() - 1
        hist = ember.zeros(_bmax(nb, 0), dtype=input._dtype, device=input.device)
        if nb > 0 and x.numel():
            pos = ember.searchsorted(edges, x.contiguous(), right=True) - 1
            last = edges[-1]
            inside = (x >= edges[0]) & (x <= last)
            pos = ember.where(x == last, nb - 1, pos).clamp(0, nb - 1)
            w = weight.reshape(-1).to(input._dtype) if weight is not None else ember.ones_like(x)
            hist = hist.index_add(0, pos, ember.where(inside, w, ember.zeros_like(w)))
        if density:
            widths = edges[1:] - edges[:-1]
            hist = hist / (hist.sum() * widths)
    if out is not None:
        _out(hist, out[0], "histogram")
        _out(edges, out[1], "histogram")
        return RT.histogram(out[0], out[1])
    return RT.histogram(hist, edges)


def _edges_1d(x, bins, rng, dtype, device, fn):
    """Bin edges for one dimension: a given 1-d tensor, or ``bins`` equal bins over ``rng`` / the data's range."""
    if _is_t(bins):
        if bins.dim() != 1 or bins.numel() < 1:
            raise RuntimeError(f"{fn}: bins tensor should have one dimension and at least 1 element")
        return bins.to(dtype)
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif x.numel():
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 0.0
    if lo > hi:
        raise RuntimeError(f"{fn}(): min should not exceed max, but got min {lo} max {hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return ember.linspace(lo, hi, int(bins) + 1, dtype=dtype, device=device)


def _bin_of(x, edges):
    """Bin index of each element of ``x`` for increasing ``edges`` (last bin closed) and the in-range mask."""
    nb = edges.numel() - 1
    pos = ember.searchsorted(edges, x.contiguous(), right=True) - 1
    last = edges[-1]
    inside = (x >= edges[0]) & (x <= last)
    return ember.where(x == last, nb - 1, pos).clamp(0, _bmax(nb - 1, 0)), inside


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """Multi-dimensional histogram of the points in ``input`` (..., D) (matches torch.histogramdd).

    ``bins``: an int (for every dim), a list of D ints, or a list of D 1-d edge tensors; ``range``: a flat
    list of 2 * D floats (min, max per dim). Returns ``(hist, bin_edges)``: hist of shape (bins_0, ...,
    bins_{D-1}) in ``input``'s dtype and a list of D edge tensors. ``weight`` (input.shape[:-1]) sums
    weights; ``density`` normalises by the total and the bin volumes. RuntimeError for input with fewer
    than 2 dims or a non-floating input."""
    _check_t(input, "histogramdd")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd_cpu\" not implemented for '{_dtname(input._dtype)}'")
    nd = input.shape[-1]
    bl = list(bins) if isinstance(bins, (list, tuple)) else [bins] * nd
    if len(bl) != nd:
        raise RuntimeError(f"torch.histogramdd: expected {nd} sequences of bin edges for each of the {nd} "
                           f"dimensions of the input, but got {len(bl)}")
    if range is not None and len(range) != 2 * nd:
        raise RuntimeError(f"torch.histogramdd: for a {nd}-dimensional histogram range should have "
                           f"{2 * nd} elements, but got {len(range)}")
    with ember.no_grad():
        pts = input.reshape(-1, nd)
        edges = [_edges_1d(pts[:, k], bl[k], None if range is None else range[2 * k:2 * k + 2], input._dtype,
                           input.device, "torch.histogramdd") for k in _brange(nd)]
        shape = tuple(e.numel() - 1 for e in edges)
        hist = ember.zeros(math.prod(shape), dtype=input._dtype, device=input.device)
        if pts.shape[0] and hist.numel():
            flat = ember.zeros(pts.shape[0], dtype=D.int64, device=input.device)
            ok = ember.ones(pts.shape[0], dtype=D.bool, device=input.device)
            for k in _brange(nd):
                b, inside = _bin_of(pts[:, k], edges[k])
                flat = flat * shape[k] + b
                ok = ok & inside
            w = weight.reshape(-1).to(input._dtype) if weight is not None else ember.ones(pts.shape[0],
                                                                                              dtype=input._dtype,
                                                                                              device=input.device)
            hist = hist.index_add(0, flat, ember.where(ok, w, ember.zeros_like(w)))
        hist = hist.reshape(shape)
        if density:
            vol = hist.new_ones(())
            for k, e in enumerate(edges):
                view = [1] * nd
                view[k] = shape[k]
                vol = vol * (e[1:] - e[:-1]).reshape(view)
            hist = hist / (hist.sum() * vol)
    return RT.histogramdd(hist, edges)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, out, fn, ignore_nan):
    _check_t(input, fn)
    if input.numel() == 0:
        raise RuntimeError(f"{fn}() input tensor must be non-empty")
    if not (input._dtype is D.float32 or input._dtype is D.float64):
        raise RuntimeError(f"{fn}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{fn}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    scalar_q = not _is_t(q)
    if scalar_q:
        if not (0 <= q <= 1):
            raise RuntimeError(f"{fn}() q must be in the range [0, 1] but got {q}")
        qt = ember.tensor(float(q), dtype=input._dtype, device=input.device)
    else:
        if q.dim() > 1:
            raise RuntimeError(f"{fn}() q must be a scalar or 1D tensor")
        if q._dtype is not input._dtype:
            raise RuntimeError(f"{fn}() q tensor must be same dtype as the input tensor")
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError(f"{fn}() q values must be in the range [0, 1]")
        qt = q
    q_scalar_shape = qt.dim() == 0
    if dim is None:
        x = input.reshape(-1)
        d = 0
    else:
        d = _wrap_dim(dim, input.dim())
        x = input if input.dim() else input.reshape(1)
    # sorted values along the last dim: (..., n)
    s = x.movedim(d, -1).sort(-1).values
    n = s.shape[-1]
    qv = qt.reshape(-1)                                           # (Q,)
    nan_any = s.isnan().any(-1, keepdim=True)                     # (..., 1)
    if ignore_nan:
        valid = (~s.isnan()).sum(-1, keepdim=True).to(s._dtype)  # (..., 1)
        ranks = qv * (valid - 1).clamp(min=0)                     # (..., Q)
    else:
        ranks = qv * (n - 1) * ember.ones_like(nan_any, dtype=s._dtype)
        ranks = ember.where(nan_any, float(n - 1), ranks)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    lo_i = ranks.floor().to(D.int64).clamp(0, n - 1)
    hi_i = ranks.ceil().to(D.int64).clamp(0, n - 1)
    below = s.gather(-1, lo_i)
    above = s.gather(-1, hi_i)
    if interpolation == "midpoint":
        res = below + (above - below) * 0.5
    elif interpolation == "linear":
        w = ranks - ranks.floor()
        res = below + (above - below) * w
    else:
        res = below
    if ignore_nan:
        res = ember.where(valid == 0, math.nan, res)
    # res: (..., Q) -> Q first, then the reduced layout
    res = res.movedim(-1, 0)                                      # (Q, ...)
    if dim is None:
        if keepdim:
            res = res.reshape((res.shape[0],) + (1,) * input.dim())
        else:
            res = res.reshape(res.shape[0])
    else:
        if keepdim and input.dim():
            res = res.unsqueeze(d + 1)
        elif not input.dim():
            res = res.reshape(res.shape[0])
    if q_scalar_shape:
        res = res.squeeze(0)
    return _out(res, out, fn)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of ``input`` (over all elements, or along ``dim``) (matches torch.quantile).

    ``q``: a float or a 1-d tensor of ``input``'s dtype in [0, 1]; with a tensor ``q`` the result
    has a leading dim of ``len(q)``. ``interpolation``: 'linear' | 'lower' | 'higher' | 'midpoint' |
    'nearest' (round half to even), between the two sorted values around rank ``q * (n - 1)``. A slice
    holding NaN gives NaN. float32 / float64 only; RuntimeError in PyTorch's words otherwise.
    Differentiable through sort / gather.
    """
    return _quantile(input, q, dim, keepdim, interpolation, out, "quantile", False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` ignoring NaN (matches torch.nanquantile): ranks count only the non-NaN values; an all-NaN
    slice gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, out, "nanquantile", True)


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """Bool tensor of ``elements``' shape: whether each element occurs in ``test_elements`` (matches torch.isin).

    Either argument may be a Python scalar (not both). Values are compared after promotion to a
    common dtype; NaN is in nothing. Works by sorting ``test_elements`` and binary search
    (O((n + m) log m)), so ``assume_unique`` changes nothing.
    """
    if not _is_t(elements) and not _is_t(test_elements):
        raise TypeError("isin() received an invalid combination of arguments - got (elements, test_elements) "
                        "where neither is a Tensor")
    ref = elements if _is_t(elements) else test_elements
    el = _tensor_like(elements, ref)
    te = _tensor_like(test_elements, ref)
    ct = ember.result_type(elements, test_elements)
    el = el.to(ct)
    flat = te.to(ct).reshape(-1)
    if flat.numel() == 0:
        res = ember.zeros(el.shape, dtype=D.bool, device=el.device)
    else:
        srt = flat.sort().values
        idx = ember.searchsorted(srt, el.contiguous()).clamp(max=srt.numel() - 1)
        res = srt[idx.reshape(-1)].reshape(el.shape) == el
    if invert:
        res = ~res
    return _out(res, out, "isin")


def _check_int_binary(a, b, name):
    ct = ember.result_type(a, b)
    if ct.is_floating_point or ct.is_complex or ct is D.bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtname(ct)}'")
    return ct


def gcd(input, other, *, out=None):
    """Elementwise greatest common divisor, non-negative, gcd(0, 0) = 0 (matches torch.gcd).

    Integer tensors only (RuntimeError "gcd_cpu" not implemented for 'Float' otherwise); broadcasts.
    Euclid's algorithm run on all elements at once (at most ~90 rounds for int64).
    """
    _check_t(input, "gcd")
    ct = _check_int_binary(input, other, "gcd")
    a = _tensor_like(input, input).to(ct).abs()
    b = _tensor_like(other, input).to(ct).abs()
    a, b = ember.broadcast_tensors(a, b)
    zero = ember.zeros((), dtype=ct, device=a.device)
    while bool((b != 0).any()):
        nz = b != 0
        safe = ember.where(nz, b, ember.ones((), dtype=ct, device=a.device))
        a, b = ember.where(nz, b, a), ember.where(nz, ember.remainder(a, safe), zero)
    return _out(a.abs(), out, "gcd")


def lcm(input, other, *, out=None):
    """Elementwise least common multiple, non-negative, lcm(0, x) = 0 (matches torch.lcm); integer tensors only."""
    _check_t(input, "lcm")
    ct = _check_int_binary(input, other, "lcm")
    a = _tensor_like(input, input).to(ct)
    b = _tensor_like(other, input).to(ct)
    g = gcd(a, b)
    safe = ember.where(g == 0, ember.ones((), dtype=ct, device=g.device), g)
    res = ember.where(g == 0, ember.zeros((), dtype=ct, device=g.device), (a // safe * b).abs())
    return _out(res, out, "lcm")


def gcd_(self, other):
    """In-place ``gcd`` (matches Tensor.gcd_)."""
    return _inplace(self, gcd(self, other))


def lcm_(self, other):
    """In-place ``lcm`` (matches Tensor.lcm_)."""
    return _inplace(self, lcm(self, other))


def heaviside(input, values, *, out=None):
    """Heaviside step: 0 where input < 0 (and NaN), ``values`` where input == 0, 1 where input > 0
    (matches torch.heaviside). ``input`` and ``values`` must have the same dtype (RuntimeError
    otherwise); they broadcast."""
    _check_t(input, "heaviside")
    _check_t(values, "heaviside", "values", 2)
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    if input._dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    pos = (input > 0).to(input._dtype)
    res = ember.where(input == 0, values, pos)
    return _out(res, out, "heaviside")


def nextafter(input, other, *, out=None):
    """The next representable floating value after ``input`` towards ``other`` (matches torch.nextafter).

    float32 / float64 (bit-exact, computed on the integer view of the bits); NaN if either is NaN;
    ``other`` where they are equal. RuntimeError for other dtypes (PyTorch's "nextafter_cpu" message).
    """
    _check_t(input, "nextafter")
    _check_t(other, "nextafter", "other", 2)
    ct = ember.result_type(input, other)
    if ct not in (D.float32, D.float64):
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_dtname(ct)}'")
    it = D.int32 if ct is D.float32 else D.int64
    x, y = ember.broadcast_tensors(input.to(ct), other.to(ct))
    x, y = x.contiguous(), y.contiguous()
    bits = x.view(it)
    up = (y > x) == (x > 0)
    step = ember.where(up, ember.ones((), dtype=it, device=x.device), -ember.ones((), dtype=it, device=x.device))
    moved = (bits + step).view(ct)
    tiny = 2.0 ** (-149 if ct is D.float32 else -1074)
    # both signs made on the host: negating a subnormal on a device that flushes them (CUDA) gives -0.0
    at_zero = ember.where(y > 0, ember.tensor(tiny, dtype=ct, device=x.device),
                          ember.tensor(-tiny, dtype=ct, device=x.device))
    res = ember.where(x == 0, at_zero, moved)
    res = ember.where(x == y, y, res)
    res = ember.where(x.isnan() | y.isnan(), math.nan, res)
    return _out(res, out, "nextafter")


def nextafter_(self, other):
    """In-place ``nextafter`` (matches Tensor.nextafter_)."""
    return _inplace(self, nextafter(self, other))


def ldexp(input, other, *, out=None):
    """input * 2 ** other (matches torch.ldexp); integer inputs give the default float dtype. Differentiable."""
    _check_t(input, "ldexp")
    res = ember.mul(input, ember.pow(2.0, other))
    return _out(res, out, "ldexp")


def ldexp_(self, other):
    """In-place ``ldexp`` (matches Tensor.ldexp_)."""
    return _inplace(self, ldexp(self, other))


def frexp(input, *, out=None):
    """Split ``input`` into mantissa in (-1, -0.5] ∪ [0.5, 1) and int32 exponent with input = m * 2**e
    (matches torch.frexp; 0, inf and NaN give (input, 0)). Floating dtypes only: RuntimeError
    "torch.frexp() only supports floating-point dtypes" otherwise. Returns ``(mantissa, exponent)``."""
    _check_t(input, "frexp")
    if not input._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with ember.no_grad():
        # exact on every device: the exponent and the mantissa are read off the float64 bits (a log2 / pow
        # formula is off by an ulp where the device's pow is not exact, as on CUDA)
        x = input.to(D.float64).contiguous()
        finite_nz = x.isfinite() & (x != 0)
        subnormal = finite_nz & (x.abs() < 2.0 ** -1022)
        bits = ember.where(subnormal, x * 2.0 ** 54, x).contiguous().view(D.int64)   # (scaling by 2**54 is exact)
        e = ((bits >> 52) & 0x7FF) - 1022 - ember.where(subnormal, 54, 0)
        m = ((bits & ~(0x7FF << 52)) | (1022 << 52)).view(D.float64)               # the exponent field set to -1
        mant = ember.where(finite_nz, m, x).to(input._dtype)
        expo = ember.where(finite_nz, e, 0).to(D.int32)
    if out is not None:
        _out(mant, out[0], "frexp")
        _out(expo, out[1], "frexp")
        return RT.frexp(out[0], out[1])
    return RT.frexp(mant, expo)


def _logaddexp_impl(a, b, log_fn_base2):
    a, b = ember.broadcast_tensors(a, b)
    m = ember.maximum(a, b)
    d = (a - b).abs()
    if log_fn_base2:
        r = m + ember.log1p(ember.exp2(-d)) / math.log(2.0)
    else:
        r = m + ember.log1p(ember.exp(-d))
    same_inf = m.isinf() & (a == b)
    return ember.where(same_inf, a, r)


def _logaddexp_dtype(a, b, name):
    ct = ember.result_type(a, b)
    if not ct.is_floating_point:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtname(ct)}'")
    return ct


def logaddexp(input, other, *, out=None):
    """log(exp(input) + exp(other)), computed stably (matches torch.logaddexp). Floating (real) tensors only
    (NotImplementedError "logaddexp_cpu" not implemented for 'Long', as PyTorch); broadcasts; differentiable."""
    _check_t(input, "logaddexp")
    _check_t(other, "logaddexp", "other", 2)
    ct = _logaddexp_dtype(input, other, "logaddexp")
    return _out(_logaddexp_impl(input.to(ct), other.to(ct), False), out, "logaddexp")


def logaddexp2(input, other, *, out=None):
    """log2(2**input + 2**other), computed stably (matches torch.logaddexp2)."""
    _check_t(input, "logaddexp2")
    _check_t(other, "logaddexp2", "other", 2)
    ct = _logaddexp_dtype(input, other, "logaddexp2")
    return _out(_logaddexp_impl(input.to(ct), other.to(ct), True), out, "logaddexp2")


def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input), dim)), computed stably (matches torch.logcumsumexp).

    A Hillis-Steele scan of ``logaddexp`` (ceil(log2 n) steps), so a small early element is not lost
    beside a large later one. Integer inputs give the default float dtype. Differentiable.
    """
    _check_t(input, "logcumsumexp")
    x = _float_of(input)
    if x.dim() == 0:
        return _out(x.clone(), out, "logcumsumexp")
    d = _wrap_dim(dim, x.dim())
    n = x.shape[d]
    r = x
    k = 1
    while k < n:
        head = r.narrow(d, 0, k)
        tail = _logaddexp_impl(r.narrow(d, k, n - k), r.narrow(d, 0, n - k), False)
        r = ember.cat([head, tail], d)
        k *= 2
    if r is x:
        r = x.clone()
    return _out(r, out, "logcumsumexp")


def deg2rad(input, *, out=None):
    """Degrees to radians (matches torch.deg2rad); integer input gives the default float dtype."""
    _check_t(input, "deg2rad")
    if input._dtype.is_complex:
        raise RuntimeError("deg2rad is not supported for complex tensors.")
    return _out(_float_of(input) * (math.pi / 180.0), out, "deg2rad")


def rad2deg(input, *, out=None):
    """Radians to degrees (matches torch.rad2deg); integer input gives the default float dtype."""
    _check_t(input, "rad2deg")
    if input._dtype.is_complex:
        raise RuntimeError("rad2deg is not supported for complex tensors.")
    return _out(_float_of(input) * (180.0 / math.pi), out, "rad2deg")


def deg2rad_(self):
    """In-place ``deg2rad`` (matches Tensor.deg2rad_)."""
    return _inplace(self, deg2rad(self))


def rad2deg_(self):
    """In-place ``rad2deg`` (matches Tensor.rad2deg_)."""
    return _inplace(self, rad2deg(self))


def _spacings(y, x, dx, d, fn):
    """The widths between neighbouring samples along ``d`` (a tensor broadcasting against the pairs) or a number."""
    if x is not None:
        if x.dim() == 1:
            if x.shape[0] != y.shape[d]:
                raise RuntimeError(f"{fn}: There must be one `x` value for each sample point")
            w = x[1:] - x[:-1]
            shape = [1] * y.dim()
            shape[d] = w.shape[0]
            return w.reshape(shape)
        xd = d - y.dim() + x.dim() if x.dim() < y.dim() else d
        n = x.shape[xd]
        return x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1)
    return 1.0 if dx is None else dx


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Trapezoidal rule along ``dim`` (matches torch.trapezoid): samples ``y`` at ``x`` (a 1-d tensor of
    y.shape[dim] points, or a tensor broadcasting with ``y``) or with constant spacing ``dx`` (default 1).
    Integer ``y`` gives a float result; differentiable."""
    _check_t(y, "trapezoid", "y")
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got both x and dx")
    if x is not None and not _is_t(x):
        dx, x = x, None
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:
        return y.sum(d) * 0
    pairs = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    w = _spacings(y, x, dx, d, "trapezoid")
    if _is_t(w):
        return (pairs * w).sum(d) / 2
    if not y._dtype.is_floating_point and not y._dtype.is_complex:
        pairs = pairs.to(ember.get_default_dtype())
    return pairs.sum(d) * (w / 2)


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of ``trapezoid`` (matches torch.trapz)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Cumulative trapezoidal rule along ``dim`` (matches torch.cumulative_trapezoid): size n - 1 along
    ``dim``."""
    _check_t(y, "cumulative_trapezoid", "y")
    if x is not None and not _is_t(x):
        dx, x = x, None
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:
        return y.narrow(d, 0, 0) * 1.0
    pairs = y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)
    w = _spacings(y, x, dx, d, "cumulative_trapezoid")
    if _is_t(w):
        return (pairs * w / 2).cumsum(d)
    if not y._dtype.is_floating_point and not y._dtype.is_complex:
        pairs = pairs.to(ember.get_default_dtype())
    return (pairs * (w / 2)).cumsum(d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimate of the gradient of a sampled function by central differences (second-order accurate
    inside, first- or second-order at the edges) (matches torch.gradient / numpy.gradient).

    ``spacing``: a number, a list of numbers (one per dim), or a list of 1-d coordinate tensors;
    ``dim``: an int, a list of ints, or None (all dims). Returns a tuple with one tensor per dim.
    RuntimeError when a dim has fewer than edge_order + 1 samples, or edge_order is not 1 or 2.
    """
    _check_t(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(_brange(input.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap_dim(k, input.dim()) for k in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                               f"dim arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        sp = list(spacing)
    else:
        sp = [spacing] * len(dims)
    for k in dims:
        if input.shape[k] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    f = _float_of(input)
    outs = []
    for k, h in zip(dims, sp):
        n = f.shape[k]

        def sl(a, b):
            return f.narrow(k, a, b - a)
        if _is_t(h) and h.dim() == 1:
            c = h.to(f._dtype)
            shape = [1] * f.dim()
            shape[k] = n - 2
            dx = c[1:] - c[:-1]                                  # n - 1 widths
            h1, h2 = dx[:-1].reshape(shape), dx[1:].reshape(shape)
            inner = (h1 * h1 * sl(2, n) - h2 * h2 * sl(0, n - 2) + (h2 * h2 - h1 * h1) * sl(1, n - 1)) \
                / (h1 * h2 * (h1 + h2))
            d0, d1 = float(dx[0]), float(dx[-1])
            if edge_order == 1:
                first = (sl(1, 2) - sl(0, 1)) / d0
                last = (sl(n - 1, n) - sl(n - 2, n - 1)) / d1
            else:
                a, b = float(dx[0]), float(dx[1])
                first = (-(2 * a + b) / (a * (a + b)) * sl(0, 1) + (a + b) / (a * b) * sl(1, 2)
                         - a / (b * (a + b)) * sl(2, 3))
                a, b = float(dx[-2]), float(dx[-1])
                last = (b / (a * (a + b)) * sl(n - 3, n - 2) - (a + b) / (a * b) * sl(n - 2, n - 1)
                        + (a + 2 * b) / (b * (a + b)) * sl(n - 1, n))
        else:
            h = float(h.item()) if _is_t(h) else float(h)
            inner = (sl(2, n) - sl(0, n - 2)) / (2 * h)
            if edge_order == 1:
                first = (sl(1, 2) - sl(0, 1)) / h
                last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
            else:
                first = (-1.5 * sl(0, 1) + 2 * sl(1, 2) - 0.5 * sl(2, 3)) / h
                last = (0.5 * sl(n - 3, n - 2) - 2 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) / h
        outs.append(ember.cat([first, inner, last], k))
    return tuple(outs)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-d tensor's elements as rows of an (N, r) tensor, in
    itertools order (matches torch.combinations). r = 0 gives an empty 1-d tensor. Differentiable."""
    _check_t(input, "combinations")
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(gen(_brange(input.shape[0]), r))
    if not rows:
        return input.new_empty((0, r))
    idx = ember.tensor(rows, dtype=D.int64, device=input.device)
    return input[idx.reshape(-1)].reshape(len(rows), r)


def cartesian_prod(*tensors):
    """Cartesian product of 1-d tensors, as rows of an (N, len(tensors)) tensor (matches
    torch.cartesian_prod); a single tensor is returned as is. Differentiable."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = ember.meshgrid(*tensors, indexing="ij")
    return ember.stack([g.reshape(-1) for g in grids], 1)


def _tri_indices(row, col, offset, dtype, device, upper, fn):
    import numpy as np
    if dtype is None:
        dtype = D.int64
    if dtype not in (D.int32, D.int64):
        raise NotImplementedError(f"\"{fn}\" not implemented for '{_dtname(dtype)}'")
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else f"col must be non-negative, got{col}")
    m = np.ones((row, col), dtype=bool)
    r, c = np.nonzero(np.triu(m, offset) if upper else np.tril(m, offset))
    return ember.tensor(np.stack([r, c]).reshape(2, -1), dtype=dtype, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False):
    """The (2, N) indices of the lower triangle of a row x col matrix, row-major (matches torch.tril_indices)."""
    return _tri_indices(row, col, offset, dtype, device, False, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False):
    """The (2, N) indices of the upper triangle of a row x col matrix, row-major (matches torch.triu_indices)."""
    return _tri_indices(row, col, offset, dtype, device, True, "triu_indices")


def unravel_index(indices, shape):
    """Flat indices to a tuple of coordinate tensors for ``shape`` (matches torch.unravel_index).

    ``indices``: an integer tensor (or Python int) indexing the flattened ``shape``; as PyTorch, indices are
    not bounds-checked (coordinate i is ``(index // stride_i) % shape[i]`` with floor division, so -1 is
    the last element). TypeError for non-integer indices, ValueError for a negative ``shape``.
    """
    if not _is_t(indices):
        indices = ember.tensor(indices)
    if indices._dtype.is_floating_point or indices._dtype.is_complex or indices._dtype is D.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    idx = indices.to(D.int64)
    coords = []
    for s in reversed(shape):
        coords.append(ember.remainder(idx, s) if s else idx * 0)
        idx = idx.div(s, rounding_mode="floor") if s else idx
    return tuple(reversed(coords))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-d tensor: column j is x ** (N - 1 - j) (x ** j with ``increasing``)
    (matches torch.vander). Integer / bool input gives int64. N defaults to len(x); RuntimeError for a
    non-1-d ``x`` or a negative ``N``. Differentiable (built with cumprod)."""
    _check_t(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        x = x.to(D.int64)
    if n == 0:
        return x.new_empty((x.shape[0], 0))
    cols = ember.cat([ember.ones((x.shape[0], 1), dtype=x._dtype, device=x.device),
                      x.unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1)
    return cols if increasing else cols.flip(1)


def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero(input)`` padded with ``fill_value`` rows or truncated to exactly ``size`` rows: an int64
    (size, input.dim()) tensor (matches torch.nonzero_static)."""
    _check_t(input, "nonzero_static")
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got {size}")
    nz = ember.nonzero(input)
    k = nz.shape[0]
    if k >= size:
        return nz[:size].clone()
    pad = ember.full((size - k, nz.shape[1]), fill_value, dtype=D.int64, device=input.device)
    return ember.cat([nz, pad], 0)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):
    """Deprecated: ``floor((end - start) / step) + 1`` values start, start + step, ... *including* ``end``,
    in the default float dtype unless ``dtype`` is given (matches torch.range, with its UserWarning).
    RuntimeError for step 0."""
    import warnings
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    dt = dtype if dtype is not None else ember.get_default_dtype()
    r = (ember.arange(n, dtype=D.float64, device=device) * step + start).to(dt)
    r = _out(r, out, "range")
    if requires_grad:
        r.requires_grad_(True)
    return r


def is_same_size(input, other):
    """Whether the two tensors have the same shape (matches torch.is_same_size)."""
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    """Whether ``input``'s dtype is signed (matches torch.is_signed)."""
    return input.is_signed()


def is_nonzero(input):
    """The truth value of a one-element tensor (matches torch.is_nonzero); RuntimeError for 0 or several
    elements."""
    return input.is_nonzero()


def detach(input):
    """``input.detach()`` (matches torch.detach)."""
    return input.detach()


def detach_(input):
    """``input.detach_()`` (matches torch.detach_)."""
    return input.detach_()


# ================================================================ (b)
def put_(self, index, source, accumulate=False):
    """Write ``source`` into ``self`` at the flat indices ``index`` (as if ``self`` were 1-d) (matches
    Tensor.put_). ``accumulate`` adds instead. Works on non-contiguous tensors. RuntimeError for an
    index out of range, a non-long index, or index / source of different sizes; nothing is written then."""
    if index._dtype is not D.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {torch_name(index._dtype)}")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {torch_name(self._dtype)} and source.dtype = {torch_name(source._dtype)}")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = self.numel()
    if index.numel() and (bool((index < -n).any()) or bool((index >= n).any())):
        bad = int(index[(index < -n) | (index >= n)].reshape(-1)[0])
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    if index.numel() == 0:
        return self
    if self.is_contiguous():
        self.view(-1).index_put_((index.reshape(-1),), source.reshape(-1), accumulate)
        return self
    coords = unravel_index(index.reshape(-1), tuple(self.shape))
    return self.index_put_(coords, source.reshape(-1), accumulate)


def put(input, index, source, accumulate=False):
    """Out-of-place ``put_`` (matches torch.put)."""
    return put_(input.clone(), index, source, accumulate)


def _index_reduce_src_index(self, dim, index, source):
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index._dtype not in (D.int64, D.int32):
        raise IndexError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                         f"{torch_name(index._dtype)}")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"index_reduce_(): self ({torch_name(self._dtype)}) and source "
                           f"({torch_name(source._dtype)}) must have the same scalar type")
    src = source if source.dim() else source.reshape(1)
    if src.dim() != _bmax(self.dim(), 1) or src.shape[d if self.dim() else 0] != index.numel():
        raise RuntimeError("index_reduce_(): Number of indices (" + str(index.numel()) + ") should be equal to "
                           "source.size(dim) (" + str(src.shape[d] if src.dim() > d else 0) + ")")
    shape = [1] * src.dim()
    shape[d] = index.numel()
    idx = index.to(D.int64).reshape(shape).expand(src.shape)
    return d, idx, src


_INDEX_REDUCES = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """Reduce ``source``'s slices into ``input``'s slices picked by ``index`` along ``dim`` with ``reduce`` in
    'prod' | 'mean' | 'amax' | 'amin' (matches torch.index_reduce); ``include_self=False`` ignores the
    original values of the slices written to. Integer 'mean' rounds toward zero as PyTorch."""
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d, idx, src = _index_reduce_src_index(input, dim, index, source)
    base = input if input.dim() else input.reshape(1)
    res = base.scatter_reduce(d, idx, src, reduce, include_self=include_self).reshape(input.shape)
    return _out(res, out, "index_reduce")


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place ``index_reduce`` (matches Tensor.index_reduce_)."""
    return self.copy_(index_reduce(self, dim, index, source, reduce, include_self=include_self))


def _scatter_view(input, src, make_view, fn):
    _check_t(input, fn)
    _check_t(src, fn, "src", 2)
    res = input.clone()
    view = make_view(res)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")
    view.copy_(src)
    return res


def select_scatter(input, src, dim, index):
    """``input`` with ``input.select(dim, index)`` replaced by ``src`` (a new tensor) (matches
    torch.select_scatter). Differentiable with respect to both."""
    return _scatter_view(input, src, lambda t: t.select(dim, index), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with ``input[start:end:step]`` along ``dim`` replaced by ``src`` (matches torch.slice_scatter)."""
    def view(t):
        d = _wrap_dim(dim, t.dim())
        key = [slice(None)] * t.dim()
        key[d] = slice(start, end, step)
        return t[tuple(key)]
    return _scatter_view(input, src, view, "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src`` (matches torch.diagonal_scatter)."""
    return _scatter_view(input, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """``input`` with ``input.as_strided(size, stride, storage_offset)`` replaced by ``src`` (matches
    torch.as_strided_scatter; the geometry refers to a contiguous copy of ``input``)."""
    def view(t):
        return t.as_strided(size, stride, storage_offset if storage_offset is not None else 0)
    return _scatter_view(input.contiguous(), src, view, "as_strided_scatter")


def split_with_sizes(input, split_sizes, dim=0):
    """Split into chunks of the given sizes along ``dim`` (views) (matches torch.split_with_sizes); the sizes
    must add up to input.shape[dim] (RuntimeError otherwise)."""
    _check_t(input, "split_with_sizes")
    d = _wrap_dim(dim, input.dim())
    sizes = [int(s) for s in split_sizes]
    if any(s < 0 for s in sizes):
        bad = next(s for s in sizes if s < 0)
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}" if bad < 0 else "")
    if _bsum(sizes) != input.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[d]} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sizes}")
    res, start = [], 0
    for s in sizes:
        res.append(input.narrow(d, start, s))
        start += s
    return tuple(res)


def zero_(input):
    """Fill ``input`` with zeros in place (matches torch.zero_)."""
    return input.zero_()


def fill(input, value):
    """A new tensor of ``input``'s shape / dtype / device filled with ``value`` (a number or a 0-dim tensor)
    (matches torch.fill). Differentiable with respect to a tensor ``value``."""
    _check_t(input, "fill")
    if _is_t(value):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        return value.to(input._dtype).expand(input.shape).clone()
    return ember.full_like(input, value)


def resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes`` (contiguous), keeping its leading elements when the element count
    does not grow (matches Tensor.resize_; new elements are uninitialised — here zero). RuntimeError for a
    tensor that requires grad (PyTorch's "cannot resize variables that require grad")."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, ember.Size)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {next(s for s in sizes if s < 0)}: "
                           f"{list(sizes)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if tuple(self.shape) == sizes and self.is_contiguous():
        return self
    n_new = math.prod(sizes)
    with ember.no_grad():
        fresh = ember.zeros(sizes, dtype=self._dtype, device=self.device)
        k = _bmin(n_new, self.numel())
        if k:
            fresh.reshape(-1)[:k].copy_(self.reshape(-1)[:k])
    self._set_storage_meta(fresh)
    return self


def resize_as_(input, the_template, *, memory_format=None):
    """``input.resize_(the_template.shape)`` (matches torch.resize_as_)."""
    return resize_(input, tuple(the_template.shape))


def sum_to_size(self, *size):
    """Sum ``self`` down to ``size``, which ``self`` must be expandable from ... to (matches Tensor.sum_to_size).
    RuntimeError "size {...} is not expandable to size {...}" otherwise."""
    if len(size) == 1 and isinstance(size[0], (list, tuple, ember.Size)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = tuple(self.shape)
    ok = len(size) <= len(shape) and all(s == t or s == 1 for s, t in zip(reversed(size), reversed(shape)))
    if not ok:
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    lead = len(shape) - len(size)
    r = self.sum(tuple(_brange(lead))) if lead else self
    dims = tuple(i for i, (s, t) in enumerate(zip(size, r.shape)) if s == 1 and t != 1)
    if dims:
        r = r.sum(dims, keepdim=True)
    return r


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                      requires_grad=False):
    """``ember.empty_strided`` with ``self``'s dtype and device as defaults (matches Tensor.new_empty_strided)."""
    return ember.empty_strided(size, stride, dtype=dtype if dtype is not None else self._dtype,
                               device=device if device is not None else self.device, requires_grad=requires_grad)


def _check_float_fill(self, fn):
    if not self._dtype.is_floating_point:
        raise NotImplementedError(f"\"{fn}_cpu\" not implemented for '{_dtname(self._dtype)}'")


def cauchy_(self, median=0, sigma=1, *, generator=None):
    """Fill with Cauchy(median, sigma) samples: median + sigma * tan(pi * (u - 1/2)) (matches Tensor.cauchy_;
    ember's generator, so the values differ from PyTorch's for a seed)."""
    _check_float_fill(self, "cauchy")
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    with ember.no_grad():
        u = ember.empty(self.shape, dtype=D.float64, device=self.device).uniform_(generator=generator)
        return self.copy_(median + sigma * ember.tan(math.pi * (u - 0.5)))


def geometric_(self, p, *, generator=None):
    """Fill with Geometric(p) samples in {1, 2, ...}: ceil(log(u) / log(1 - p)) (matches Tensor.geometric_)."""
    if not (0 < p < 1):
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    with ember.no_grad():
        u = ember.empty(self.shape, dtype=D.float64, device=self.device).uniform_(generator=generator)
        u = u.clamp(min=1e-300)
        return self.copy_((u.log() / math.log1p(-p)).ceil().clamp(min=1))


def log_normal_(self, mean=1, std=2, *, generator=None):
    """Fill with exp(Normal(mean, std)) samples (matches Tensor.log_normal_)."""
    _check_float_fill(self, "log_normal")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    with ember.no_grad():
        z = ember.empty(self.shape, dtype=D.float64, device=self.device).normal_(mean, std, generator=generator)
        return self.copy_(z.exp())


# ================================================================ (c) *_copy variants and aliases
def _fresh(t):
    """A contiguous copy of ``t`` that shares no memory with it (differentiable)."""
    return t.contiguous() if not t.is_contiguous() else t.clone()


def _copy_of(method):
    def fn(input, *args, out=None, **kwargs):
        r = getattr(input, method)(*args, **kwargs)
        if isinstance(r, (tuple, list)):
            return tuple(_fresh(t) for t in r)
        return _out(_fresh(r), out, f"{method}_copy")
    fn.__name__ = f"{method}_copy"
    fn.__doc__ = (f"A new tensor holding ``input.{method}(...)`` (not a view; contiguous) (matches "
                  f"torch.{method}_copy).")
    return fn


_COPY_VARIANTS = ("view", "permute", "t", "diagonal", "expand", "select", "squeeze", "unsqueeze", "transpose",
                  "unbind", "split", "unfold", "as_strided", "values", "indices", "crow_indices", "col_indices",
                  "ccol_indices", "row_indices", "view_as_real", "view_as_complex")
for _m in _COPY_VARIANTS:
    if not hasattr(Tensor, _m):     # no copy variant of a view ember does not have
        continue
    globals()[f"{_m}_copy"] = _copy_of(_m)
    __all__.append(f"{_m}_copy")


def alias_copy(input, *, out=None):
    """A copy of ``input`` (matches torch.alias_copy)."""
    return _out(_fresh(input), out, "alias_copy")


def detach_copy(input, *, out=None):
    """A detached copy of ``input`` (matches torch.detach_copy)."""
    return _out(_fresh(input.detach()), out, "detach_copy")


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    """A copy of ``input[start:end:step]`` along ``dim`` (matches torch.slice_copy)."""
    d = _wrap_dim(dim, input.dim())
    key = [slice(None)] * input.dim()
    key[d] = slice(start, end, step)
    return _out(_fresh(input[tuple(key)]), out, "slice_copy")


def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    """Copies of ``split_with_sizes``'s chunks (matches torch.split_with_sizes_copy)."""
    r = tuple(_fresh(t) for t in split_with_sizes(input, split_sizes, dim))
    if out is not None:
        for o, t in zip(out, r):
            _out(t, o, "split_with_sizes_copy")
        return None
    return r


def narrow_copy(input, dim, start, length, *, out=None):
    """A copy of ``input.narrow(dim, start, length)`` (matches torch.narrow_copy)."""
    return _out(_fresh(input.narrow(dim, start, length)), out, "narrow_copy")


def unsafe_split(input, split_size, dim=0):
    """``split`` (matches torch.unsafe_split; ember's views need no unsafe variant)."""
    return tuple(ember.split(input, split_size, dim))


def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` (matches torch.unsafe_chunk)."""
    return tuple(ember.chunk(input, chunks, dim))


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes`` (matches torch.unsafe_split_with_sizes)."""
    return split_with_sizes(input, split_sizes, dim)


def _unary_alias(target):
    def fn(input, *args, **kwargs):
        return getattr(ember, target)(input, *args, **kwargs)
    return fn


#: torch aliases -> the ember function they call (top level)
_ALIASES = {"arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc"}

#: in-place functions torch exposes at the top level (torch.abs_(x) == x.abs_())
_TOP_INPLACE = ("abs_", "acos_", "acosh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
                "clamp_min_", "clip_", "cos_", "cosh_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "floor_",
                "frac_", "log10_", "log1p_", "log2_", "log_", "nan_to_num_", "neg_", "negative_", "reciprocal_",
                "round_", "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_",
                "arccos_", "arcsin_", "arctan_", "arccosh_", "arcsinh_", "arctanh_", "fix_", "addmv_")

#: Tensor method aliases torch has: name -> existing Tensor method
_METHOD_ALIASES = {"arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "arccosh_": "acosh_",
                   "arcsinh_": "asinh_", "arctanh_": "atanh_", "arccos_": "acos_", "arcsin_": "asin_",
                   "arctan_": "atan_", "arctan2_": "atan2_", "fix": "trunc", "fix_": "trunc_", "absolute_": "abs_",
                   "negative_": "neg_", "multiply_": "mul_", "divide_": "div_", "subtract_": "sub_",
                   "greater_": "gt_", "greater_equal_": "ge_", "less_": "lt_", "less_equal_": "le_",
                   "not_equal_": "ne_", "clamp_max_": None, "clamp_min_": None, "float_power_": None}


def _clamp_max_(self, max):  # noqa: A002
    return self.clamp_(max=max)


def _clamp_min_(self, min):  # noqa: A002
    return self.clamp_(min=min)


def _float_power_(self, exponent):
    if self._dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {torch_name(self._dtype)} but the operation's "
                           f"result requires dtype Double")
    return self.copy_(ember.float_power(self, exponent))


#: Tensor methods defined in this module (name -> function taking self first)
_METHODS = {"histc": histc, "histogram": histogram, "quantile": quantile,
            "nanquantile": nanquantile, "gcd": gcd, "gcd_": gcd_, "lcm": lcm, "lcm_": lcm_, "heaviside": heaviside,
            "nextafter": nextafter, "nextafter_": nextafter_, "ldexp": ldexp, "ldexp_": ldexp_, "frexp": frexp,
            "logaddexp": logaddexp, "logaddexp2": logaddexp2, "logcumsumexp": logcumsumexp, "deg2rad": deg2rad,
            "deg2rad_": deg2rad_, "rad2deg": rad2deg, "rad2deg_": rad2deg_, "put": put, "put_": put_,
            "index_reduce": index_reduce, "index_reduce_": index_reduce_, "select_scatter": select_scatter,
            "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
            "as_strided_scatter": as_strided_scatter, "split_with_sizes": split_with_sizes, "resize_": resize_,
            "resize_as_": resize_as_, "sum_to_size": sum_to_size, "new_empty_strided": new_empty_strided,
            "cauchy_": cauchy_, "geometric_": geometric_, "log_normal_": log_normal_, "narrow_copy": narrow_copy,
            "clamp_max_": _clamp_max_, "unsafe_split": unsafe_split,
            "unsafe_chunk": unsafe_chunk, "unsafe_split_with_sizes": unsafe_split_with_sizes,
            "clamp_min_": _clamp_min_, "float_power_": _float_power_}


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal in place (matches Tensor.fill_diagonal_): a 2-D tensor (with ``wrap``, a tall
    matrix's diagonal restarts every ncols + 1 rows, as numpy.fill_diagonal) or one whose dims are all equal.
    RuntimeError "dimensions must larger than 1" / "all dimensions of input must be of equal length"."""
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    shape = tuple(self.shape)
    strides = [math.prod(shape[i + 1:]) for i in _brange(nd)]      # of the row-major flat index
    step = _bsum(strides)
    n = _bmin(shape)
    if nd == 2 and wrap and shape[0] > shape[1] + 1:
        flat = ember.arange(0, self.numel(), step, device=self.device)
    else:
        flat = ember.arange(n, device=self.device) * step
    if flat.numel():
        src = ember.full((flat.numel(),), fill_value, dtype=self._dtype, device=self.device)
        put_(self, flat, src)
    return self


def _renorm_(self, p, dim, maxnorm):
    """In-place ``renorm`` (matches Tensor.renorm_)."""
    return self.copy_(self.renorm(p, dim, maxnorm))


def _nonzero_static_method(self, *, size, fill_value=-1):
    return nonzero_static(self, size=size, fill_value=fill_value)


def _map_check(self, other, fn):
    if self.device.type != "cpu":
        raise RuntimeError(f"{fn} is only implemented on CPU tensors")
    if other is not None and other._dtype is not self._dtype:
        raise TypeError(f"{fn}: expected {self.type()} for 'other' (got {other.type()})")


def _apply_elementwise(self, callable, others, fn):
    """``self`` with every element replaced by ``callable(element, *others' elements)`` (Python numbers)."""
    import numpy as np
    for o in others:
        _map_check(self, o, fn)
    _map_check(self, None, fn)
    vals = [np.asarray(t.detach().expand(self.shape).numpy()) for t in (self,) + tuple(others)]
    res = np.empty(vals[0].shape, dtype=vals[0].dtype)
    for i in np.ndindex(res.shape):
        res[i] = callable(*(v[i].item() for v in vals))
    with ember.no_grad():
        self.copy_(ember.from_numpy(res))
    return self


def _apply_(self, callable):
    """Apply a Python function to each element in place (matches Tensor.apply_: slow, CPU only)."""
    return _apply_elementwise(self, callable, (), "apply_")


def _map_(self, other, callable):
    """self[i] = callable(self[i], other[i]) in place, ``other`` broadcast to self (matches Tensor.map_; CPU only)."""
    return _apply_elementwise(self, callable, (other,), "map_")


def _map2_(self, x, y, callable):
    """self[i] = callable(self[i], x[i], y[i]) in place (matches Tensor.map2_; CPU only)."""
    return _apply_elementwise(self, callable, (x, y), "map2_")


def _addr_(self, vec1, vec2, *, beta=1, alpha=1):
    """In-place ``addr`` (matches Tensor.addr_)."""
    return _inplace(self, self.addr(vec1, vec2, beta=beta, alpha=alpha))


def _heaviside_(self, values):
    return _inplace(self, heaviside(self, values))


_METHODS["heaviside_"] = _heaviside_
_METHODS.update({"apply_": _apply_, "map_": _map_, "map2_": _map2_, "addr_": _addr_})
_METHODS["fill_diagonal_"] = _fill_diagonal_
_METHODS["renorm_"] = _renorm_
_METHODS["nonzero_static"] = _nonzero_static_method


def _install():
    """Add the top-level names and the Tensor methods torch has and ember lacks (never replacing one).
    A top-level in-place function (``ember.abs_``) is added only where its Tensor method exists."""
    g = globals()
    for name, target in _ALIASES.items():
        if name not in vars(ember) and hasattr(ember.Tensor, target):
            fn = _unary_alias(target)
            fn.__name__ = name
            fn.__doc__ = f"Alias of ``{target}`` (matches torch.{name})."
            g[name] = fn
            __all__.append(name)
    for name, target in _METHOD_ALIASES.items():
        if target is not None and not hasattr(Tensor, name) and hasattr(Tensor, target):
            setattr(Tensor, name, getattr(Tensor, target))
    for name, fn in _METHODS.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    for name in _TOP_INPLACE:
        if name not in g and name not in vars(ember) and hasattr(Tensor, name):
            def fn(input, *a, _m=name, **k):
                return getattr(input, _m)(*a, **k)
            fn.__name__ = name
            fn.__doc__ = f"In place: ``input.{name}(...)`` (matches torch.{name})."
            g[name] = fn
            __all__.append(name)


_install()
