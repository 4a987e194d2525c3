"""The primitive kernels of vdev: plain numpy over views of the arena.

A vendor implements exactly these ops (THE PRIMITIVE SET, docs/vendor-guide.md); every
other op of ember reaches the device as a composite over them. The contract of a kernel:

- the core's meta function has already checked the arguments and computed the output's
  shape and dtype; structured kernels get ``out=`` allocated and write into it;
- operands may be vdev tensors (any strides, broadcastable to ``out``), 0-dim cpu
  tensors, or Python scalars (``x + 2``);
- the *computation* dtype is PyTorch's common dtype of the operands (``ember.result_type``),
  not out's: ``eq`` computes in the inputs' dtype and stores bool; float16 / bfloat16
  compute in float32 and round to their own dtype before storing, as PyTorch's cpu does.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.special as sp

import ember
from ember import Tensor
from ember.library import ALL_DENSE, FLOATING, COMPLEX, native_view

from .runtime import arena_view, view

LOWP = (ember.float16, ember.bfloat16)
LOWP_NP = frozenset(d.numpy_dtype for d in LOWP)

# PyTorch never warns about inf / nan / overflowing casts, and neither do these kernels: a filter on
# this module costs nothing per call (np.errstate or warnings.catch_warnings around each op costs
# ~1 us; see "Speed" in docs/vendor-guide.md)
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning, module=__name__)


# ---------------------------------------------------------------- operands
def compute_np(d):
    """numpy dtype to compute ember dtype ``d`` in (float16 / bfloat16 -> float32)."""
    return np.dtype(np.float32) if d in LOWP else d.numpy_dtype


def operand(x, cd=None):
    """A numpy array (arena view) for a vdev tensor, a 0-dim array for a cpu scalar tensor or a number."""
    if isinstance(x, ember.Tensor):
        a = view(x) if x.device.type == "vdev" else np.asarray(x.item())    # 0-dim cpu tensors ride along
    else:
        a = np.asarray(x)
    return a if cd is None else a.astype(cd, copy=False)


def store(out, r, ed=None):
    """Write result ``r`` into ``out`` with a C-style cast; round to ``ed`` first (low precision)."""
    if ed is not None and ed in LOWP and out.dtype is not ember.bool:
        r = np.asarray(r).astype(ed.numpy_dtype)
    np.copyto(view(out), r, casting="unsafe")


# ---------------------------------------------------------------- runtime primitives: copy_ and fill_
def copy_(self, src, non_blocking=False):
    """vdev kernel of ``copy_``, all dense dtypes: copy ``src`` (same vdev device; broadcast, C-style cast) into
    ``self``; returns ``self``.
    """
    # within one vdev device; the core routes copies between devices (vdev:0 -> vdev:1, cpu <-> vdev)
    # through to_numpy / from_numpy. numpy handles overlapping self and src.
    store(self, view(src))
    return self


def fill_(self, value):
    """vdev kernel of ``fill_``, all dense dtypes: set every element of ``self`` to ``value`` (C conversion: 2.7 ->
    2, -1 -> 255 for uint8); returns ``self``.
    """
    d = self.dtype.numpy_dtype
    if d.kind in "iub" and isinstance(value, float):
        value = int(value)                       # C conversion: 2.7 -> 2
    store(self, np.asarray(value).astype(d) if d.kind in "iu" else value)   # -1 -> 255 for uint8
    return self


# ---------------------------------------------------------------- elementwise
def _int_pow(a, b):
    """Integer ** integer; a negative exponent gives 1 ** n = 1, (-1) ** n = +-1, else 0 (PyTorch)."""
    r = np.power(a, np.abs(b))
    odd = np.where(b % 2 == 0, 1, -1).astype(r.dtype)
    return np.where(b >= 0, r, np.where(a == 1, 1, np.where(a == -1, odd, 0)).astype(r.dtype))


def _pow(a, b):
    if a.dtype == np.bool_:                      # numpy has no bool power loop
        return np.power(a.astype(np.uint8), b.astype(np.uint8)).astype(np.bool_)
    return _int_pow(a, b) if a.dtype.kind in "iu" else np.power(a, b)


def _div_trunc(a, b):
    if a.dtype.kind in "iub":                    # C division rounds toward zero; numpy's // rounds down
        q = np.floor_divide(a, b)
        return q + ((q < 0) & (q * b != a))
    return np.trunc(np.true_divide(a, b))


BINARY = {   # name -> numpy function on arrays already in the computation dtype
    "add": np.add, "mul": np.multiply, "true_divide": np.true_divide, "div_trunc": _div_trunc,
    "fmod": np.fmod, "pow": _pow, "atan2": np.arctan2, "eq": np.equal, "lt": np.less,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
}
TO_FLOAT = {"true_divide", "atan2"}              # integer operands compute in the default float dtype
INT_DIV = {"div_trunc", "fmod"}                  # integer division by zero raises


def make_binary(name):
    """Build the vdev kernel ``kernel(self, other, *, alpha=1, out)`` of binary op ``name``: computes in PyTorch's
    common dtype (integers in the default float dtype for true_divide / atan2; float16 / bfloat16 in float32),
    ``other`` scaled by ``alpha``, and stores into ``out``. Integer div_trunc / fmod by zero raise RuntimeError
    "ZeroDivisionError" before anything is written.
    """
    f = BINARY[name]
    fast = isinstance(f, np.ufunc) and name not in TO_FLOAT and name not in INT_DIV    # f(a, b, out=o) works

    def kernel(self, other, *, alpha=1, out):
        if fast and alpha == 1 and isinstance(self, Tensor) and isinstance(other, Tensor) \
                and self.device.type == other.device.type == "vdev":
            # the common case, straight into out (the cached views cost nothing): same dtype everywhere
            a, b, o = native_view(self, arena_view), native_view(other, arena_view), native_view(out, arena_view)
            if a.dtype is b.dtype is o.dtype and o.dtype not in LOWP_NP:
                f(a, b, out=o)
                return
        ed = ember.result_type(self, other)      # PyTorch's common dtype (not out's: eq / lt store bool)
        if name in TO_FLOAT and not (ed.is_floating_point or ed.is_complex):
            ed = ember.get_default_dtype()
        cd = compute_np(ed)
        a, b = operand(self, cd), operand(other, cd)
        if name in INT_DIV and cd.kind in "iub" and np.any(b == 0):
            raise RuntimeError("ZeroDivisionError")
        if alpha != 1:                           # add(self, other, alpha=a) = self + a * other
            b = b * np.asarray(alpha).astype(cd)
        store(out, f(a, b), ed)
    kernel.__name__ = f"vdev_{name}"
    return kernel


def _floor(x):
    return x.copy() if x.dtype.kind in "iub" else np.floor(x)    # integers are unchanged


UNARY = {
    "abs": np.abs, "floor": _floor, "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "sin": np.sin, "cos": np.cos, "sqrt": np.sqrt, "erf": sp.erf, "erfc": sp.erfc, "erfinv": sp.erfinv,
}


def make_unary(name):
    """Build the vdev kernel ``kernel(self, *, out)`` of unary op ``name``: computes in the input's dtype (abs /
    floor) or, for integer inputs of the float functions, the default float dtype, and stores into ``out``.
    """
    f = UNARY[name]
    to_float = name not in ("abs", "floor")

    def kernel(self, *, out):
        ed = self.dtype
        if to_float and not (ed.is_floating_point or ed.is_complex):
            ed = ember.get_default_dtype()       # exp(int tensor) is a float tensor
        store(out, f(operand(self, compute_np(ed))), ed)
    kernel.__name__ = f"vdev_{name}"
    return kernel


def where(condition, input, other, *, out):
    """vdev kernel of ``where``, all dense dtypes: store ``input`` where ``condition`` else ``other`` (broadcast,
    already promoted to out's dtype) into ``out``.
    """
    cd = compute_np(out.dtype)                   # the meta promoted input and other into out's dtype
    store(out, np.where(operand(condition, np.bool_), operand(input, cd), operand(other, cd)), out.dtype)


# ---------------------------------------------------------------- reductions
def _axes(ndim, dim):
    """``dim`` (None, int, or list; empty = all) as numpy's ``axis``: a tuple of axes, or None for all."""
    dims = [dim] if isinstance(dim, int) else list(dim or ())
    return tuple(d % ndim for d in dims) if dims and ndim else None


def sum_(self, dim=None, keepdim=False, *, dtype=None, out):
    """vdev kernel of ``sum``, all dense dtypes: store the sum over ``dim`` into ``out``, accumulated in ``dtype``
    (default int64 for bool / integers, else the input's; float16 / bfloat16 in float32).
    """
    d = dtype or (ember.int64 if not (self.dtype.is_floating_point or self.dtype.is_complex) else self.dtype)
    cd = compute_np(d)                           # integers and bool sum in int64; float16 in float32
    a = operand(self, cd)
    store(out, np.sum(a, axis=_axes(a.ndim, dim), keepdims=keepdim, dtype=cd), d)


def amax(self, dim=(), keepdim=False, *, out):
    """vdev kernel of ``amax``, all dense dtypes: store the maximum over ``dim`` (() = all) into ``out``; NaN
    propagates.
    """
    a = operand(self, compute_np(self.dtype))    # NaN propagates (np.max); the meta refused empty reductions
    store(out, np.max(a, axis=_axes(a.ndim, dim), keepdims=keepdim))


# ---------------------------------------------------------------- linear algebra
def bmm(self, mat2, *, out):
    """vdev kernel of ``bmm``, all dense dtypes but bool: store self (b, n, m) @ mat2 (b, m, p) into ``out`` (b, n,
    p); integers wrap on overflow.
    """
    cd = compute_np(out.dtype)                   # integers wrap on overflow, as PyTorch's
    store(out, np.matmul(operand(self, cd), operand(mat2, cd)), out.dtype)


# ---------------------------------------------------------------- indexing
def _index(index, size, dim):
    """The index array (0-dim -> 1-D) after the range check PyTorch makes (no negative indices)."""
    i = np.atleast_1d(operand(index))
    if i.size and (i.min() < 0 or i.max() >= size):
        bad = int(i.reshape(-1)[np.argmax((i.reshape(-1) < 0) | (i.reshape(-1) >= size))])
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    return i.astype(np.intp)


def _coords(i, dim):
    """Index arrays addressing ``x[c with c[dim] = i[c]]`` for every position ``c`` of ``i``."""
    return tuple(i if d == dim else np.arange(n).reshape([-1 if k == d else 1 for k in range(i.ndim)])
                 for d, n in enumerate(i.shape))


def gather(self, dim, index, *, sparse_grad=False, out):
    """vdev kernel of ``gather``, all dense dtypes: out[c] = self[c with c[dim] = index[c]], of index's shape.
    RuntimeError "index v is out of bounds for dimension d with size n".
    """
    a = np.atleast_1d(operand(self))             # 0-dim acts as 1-D
    dim = dim % a.ndim
    i = _index(index, a.shape[dim], dim)
    store(out, a[_coords(i, dim)].reshape(tuple(out.shape)))


def scatter_add(self, dim, index, src, *, out):
    """vdev kernel of ``scatter_add``, all dense dtypes: copy ``self`` into ``out`` (unless in place), then add
    src's leading index.shape block at out[c with c[dim] = index[c]] (repeats accumulate; float16 / bfloat16 in
    float32). RuntimeError for an out-of-range index, before anything is written.
    """
    dim = dim % max(self.dim(), 1)
    i = _index(index, np.atleast_1d(operand(self)).shape[dim], dim)     # check before writing anything
    s = np.array(np.atleast_1d(operand(src)))    # a copy: src may alias out
    if out is not self:
        store(out, operand(self))
    o = np.atleast_1d(view(out))
    work = o.astype(np.float32) if out.dtype in LOWP else o      # accumulate float16 in float32
    np.add.at(work, _coords(i, dim), s[tuple(slice(0, n) for n in i.shape)].astype(work.dtype))
    if work is not o:
        np.copyto(o, work, casting="unsafe")


# ---------------------------------------------------------------- random
_MANTISSA_BITS = {ember.float16: 11, ember.bfloat16: 8}


def uniform(self, low=0.0, high=1.0, *, generator, out):
    """vdev kernel of ``uniform_``, floating / complex dtypes: fill ``out`` with U[low, high) from the device's
    Philox stream (complex: each part; float16 / bfloat16 draw only the bits they hold).
    """
    rng = generator.state.rng                    # this device's Philox stream (runtime.VdevGeneratorState)
    parts = [view(out)] if not out.dtype.is_complex else [view(out).real, view(out).imag]
    for p in parts:
        bits = _MANTISSA_BITS.get(out.dtype)
        if bits:                                 # a sample exactly representable: never rounds up to high
            u = rng.integers(0, 1 << bits, p.shape).astype(np.float32) / np.float32(1 << bits)
        else:
            u = rng.random(p.shape, dtype=np.float32 if p.dtype == np.float32 else np.float64)
        np.copyto(p, u * (high - low) + low, casting="unsafe")
        if high > low:      # rounding to the output dtype can reach high: keep samples in [low, high)
            top = p.dtype.type(high)
            if float(top) >= high:
                top = np.nextafter(top, p.dtype.type(low))
            np.copyto(p, top, where=p.astype(np.float64) >= high)


# ---------------------------------------------------------------- registration
KERNELS = {"copy_": copy_, "fill_": fill_, "where": where, "sum": sum_, "amax": amax, "bmm": bmm, "gather": gather,
           "scatter_add": scatter_add, "uniform": uniform}           # and the BINARY and UNARY ops
DTYPES = {"bmm": frozenset(ALL_DENSE) - {ember.bool}, "uniform": FLOATING | COMPLEX}    # the others: ALL_DENSE


def register(lib):
    """Register every primitive kernel for device "vdev" (and nothing else)."""
    kernels = {**KERNELS, **{n: make_binary(n) for n in BINARY}, **{n: make_unary(n) for n in UNARY}}
    for name, fn in kernels.items():
        lib.impl(name, fn, device="vdev", dtypes=DTYPES.get(name, ALL_DENSE))
