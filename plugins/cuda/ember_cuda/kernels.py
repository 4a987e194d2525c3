"""ember-cuda's kernels, written once against an array backend (``_backend.ArrayBackend``).

``make_kernels(backend)`` returns ``{op name: kernel}``; ``register(lib, device_type, backend)``
registers them. With ``CupyBackend`` every kernel is a cupy call over views of ember's device
memory (cupy ufuncs and reductions, cuBLAS for ``mm`` / ``bmm`` / ``addmm`` / ``linear``,
``cupyx.scatter_add`` for ``scatter_add``, the Philox generator of ``_philox`` for ``uniform``);
with ``HostBackend`` the same code runs on numpy (the host emulation that tests the logic
without a GPU).

Contract (docs/vendor-guide.md, 2.6): the core ran the op's meta (argument checks, output shape
and dtype) and allocated ``out``; operands may be device tensors of any strides, 0-dim cpu
tensors or Python scalars; computation happens in PyTorch's common dtype of the operands
(``ember.result_type``); float16 and bfloat16 compute in float32 and are rounded to their own
dtype before the store (PyTorch's CUDA kernels do the same: ``opmath_t`` is float for both);
stores are C-style casts.

Covered: the primitive set (copy_, fill_, add, mul, true_divide, div_trunc, fmod, pow, atan2,
eq, lt, bitwise ops and shifts, abs, floor, exp, expm1, log, log1p, sin, cos, sqrt, erf, erfc,
erfinv, where, sum, amax, bmm, gather, scatter_add, uniform), plus natives for what training
spends its time in: mm, addmm, linear, relu, sub, neg, the remaining comparisons, maximum /
minimum, tanh, sigmoid, amin, softmax / log_softmax. Every other op runs as the core's
composite over these.
"""
from __future__ import annotations

import contextlib
import math
import types
import warnings

import ember
import numpy as np
from ember import Tensor
from ember.library import ALL_DENSE, COMPLEX, FLOATING

from . import _philox

BF16, F16 = ember.bfloat16, ember.float16
LOWP = (F16, BF16)
NO_BOOL = frozenset(ALL_DENSE) - {ember.bool}
REAL = frozenset(ALL_DENSE) - frozenset(COMPLEX)
FLOAT_REAL = frozenset(FLOATING)


def compute_np(d) -> np.dtype:
    """The numpy dtype ember dtype ``d`` computes in (float16 / bfloat16 -> float32)."""
    return np.dtype(np.float32) if d in LOWP else d.numpy_dtype


def fill_value(value, d):
    """``fill_``'s value for a tensor of dtype ``d`` (not bfloat16) as C converts it: to bool as ``!= 0`` (0.5 ->
    True), a float to an integer dtype toward zero (2.7 -> 2; a non-finite one -> 0); else unchanged."""
    kind = d.numpy_dtype.kind
    if kind == "b":
        return bool(value != 0)
    if kind in "iu" and isinstance(value, float):
        return int(value) if np.isfinite(value) else 0
    return value


def elementwise_functions(B) -> types.SimpleNamespace:
    """The array functions the elementwise kernels over backend ``B`` call, made once per backend (the fuser,
    ``fused.py``, calls these very objects): ``binary`` / ``unary`` map op names to functions of arrays;
    ``ufuncs`` / ``unary_ufuncs``: the ops whose function takes ``out=`` directly; ``to_float``: binary ops whose
    integer result is a float (default dtype); ``int_div``: ops checking for an integer zero divisor;
    ``keep_dtype``: unary ops keeping an integer dtype."""
    ns = getattr(B, "_elementwise", None)
    if ns is not None:
        return ns
    xp = B.xp

    def _int_pow(a, b):
        """Integer ** integer; a negative exponent gives 1 ** n = 1, (-1) ** n = +-1, else 0 (PyTorch)."""
        a, b = xp.broadcast_arrays(xp.asarray(a), xp.asarray(b))
        r = xp.power(a, xp.abs(b))
        one = xp.ones((), r.dtype)
        odd = xp.where(b % 2 == 0, one, -one)
        return xp.where(b >= 0, r, xp.where(a == 1, one, xp.where(a == -1, odd, xp.zeros((), r.dtype))))

    def _pow(a, b):
        if a.dtype == np.bool_:
            return xp.power(a.astype(np.uint8), b.astype(np.uint8)).astype(np.bool_)
        return _int_pow(a, b) if a.dtype.kind in "iu" else xp.power(a, b)

    def _div_trunc(a, b):
        if a.dtype.kind in "iub":                # C division rounds toward zero; // rounds down
            q = xp.floor_divide(a, b)
            return q + ((q < 0) & (q * b != a)).astype(q.dtype)
        return xp.trunc(xp.true_divide(a, b))

    def _maximum(a, b):
        return xp.maximum(a, b)                  # NaN propagates (numpy and cupy alike)

    binary = {
        "add": xp.add, "sub": xp.subtract, "mul": xp.multiply, "true_divide": xp.true_divide,
        "div_trunc": _div_trunc, "fmod": xp.fmod, "pow": _pow, "atan2": xp.arctan2,
        "eq": xp.equal, "ne": xp.not_equal, "lt": xp.less, "le": xp.less_equal, "gt": xp.greater,
        "ge": xp.greater_equal, "maximum": _maximum, "minimum": xp.minimum,
        "bitwise_and": xp.bitwise_and, "bitwise_or": xp.bitwise_or, "bitwise_xor": xp.bitwise_xor,
        "bitwise_left_shift": xp.left_shift, "bitwise_right_shift": xp.right_shift,
    }
    ufuncs = {"add", "sub", "mul", "true_divide", "fmod", "atan2", "minimum", "bitwise_and", "bitwise_or",
              "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}   # take out= directly
    to_float = {"true_divide", "atan2"}
    int_div = {"div_trunc", "fmod"}

    def _floor(x):
        return x.copy() if x.dtype.kind in "iub" else xp.floor(x)

    def _relu(x):
        # a numpy scalar operand: no device array (an allocation and a fill launch) per call
        return xp.maximum(x, x.dtype.type(0)) if x.dtype != np.bool_ else x.copy()

    def _sigmoid(x):
        return 1 / (1 + xp.exp(-x))

    sp = B.special
    unary = {
        "abs": xp.abs, "floor": _floor, "exp": xp.exp, "expm1": xp.expm1, "log": xp.log, "log1p": xp.log1p,
        "sin": xp.sin, "cos": xp.cos, "sqrt": xp.sqrt, "erf": sp.erf, "erfc": sp.erfc, "erfinv": sp.erfinv,
        "neg": xp.negative, "tanh": xp.tanh, "sigmoid": _sigmoid, "relu": _relu,
    }
    keep_dtype = {"abs", "floor", "neg", "relu"}
    unary_ufuncs = {"exp", "expm1", "log", "log1p", "sin", "cos", "sqrt", "tanh", "neg"}
    B._elementwise = ns = types.SimpleNamespace(
        binary=binary, unary=unary, ufuncs=ufuncs, unary_ufuncs=unary_ufuncs, keep_dtype=keep_dtype,
        to_float=to_float, int_div=int_div)
    return ns


def make_kernels(B, device_type: str) -> dict:
    """The kernels over backend ``B`` for tensors of ``device_type`` (see the module docstring)."""
    xp = B.xp
    is_host = xp is np

    def errstate():
        return np.errstate(all="ignore") if is_host else contextlib.nullcontext()

    # ------------------------------------------------------------ operands and stores
    def load(t, cd):
        """The array for device tensor ``t`` in compute dtype ``cd`` (bfloat16 bits -> float32 first)."""
        a = B.view(t)
        if t.dtype is BF16:
            a = B.bf16_to_f32(a)
        return a if a.dtype == cd else a.astype(cd)

    def operand(x, cd):
        """A device tensor -> its array in ``cd``; a 0-dim cpu tensor or a number -> a numpy scalar."""
        if isinstance(x, Tensor):
            if x.device.type == device_type:
                return load(x, cd)
            x = x.item()                         # a 0-dim cpu tensor rides along as a scalar
        return B.scalar(x, cd)

    def store(out, r, ed=None):
        """Write ``r`` into ``out`` with a C-style cast; round to ``ed`` first when it is float16 /
        bfloat16 (so ``out=`` of a wider dtype sees the rounded value, as in PyTorch)."""
        o = B.view(out)
        if getattr(r, "dtype", None) is not None and r.dtype.kind == "c" and not out.dtype.is_complex:
            # complex -> real drops the imaginary part, complex -> bool is != 0 (PyTorch); done explicitly
            # rather than trusting the array library's cast
            r = (r != 0) if out.dtype is ember.bool else r.real
        if ed is not None and out.dtype is not ember.bool:
            if ed is F16:
                r = xp.asarray(r).astype(xp.float16, copy=False)
            elif ed is BF16 and out.dtype is not BF16:
                r = B.bf16_to_f32(B.f32_to_bf16(xp.asarray(r).astype(xp.float32)))
        if out.dtype is BF16:                    # the storage is uint16 bits
            xp.copyto(o, B.f32_to_bf16(xp.asarray(r).astype(xp.float32, copy=False)))
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            xp.copyto(o, r, casting="unsafe")

    def direct_out(out, ed, *operands):
        """``out``'s array when a result in dtype ``ed`` can be written straight into it (saving a
        temporary and a copy): same dtype, not float16 / bfloat16 (they round through float32), and
        no operand overlapping ``out`` except one with exactly ``out``'s layout (in-place ``x.add_(y)``).
        None otherwise."""
        if ed is not out.dtype or ed in LOWP:
            return None
        st = out.untyped_storage()
        for t in operands:
            if isinstance(t, Tensor) and t.untyped_storage() is st and t is not out and not (
                    tuple(t.shape) == tuple(out.shape) and t.stride() == out.stride()
                    and t.storage_offset() == out.storage_offset()):
                return None
        return B.view(out)

    def any_true(a) -> bool:
        """Host decision on a device predicate (one synchronisation)."""
        return bool(xp.any(a))

    # ------------------------------------------------------------ copy_ and fill_
    def copy_(self, src, non_blocking=False):
        # within one device; the core routes copies across devices through the runtime
        d, s = B.view(self), B.view(src)
        if self.dtype is src.dtype:
            if self.numel() and xp.may_share_memory(d, s):
                s = s.copy()                     # overlapping self and src (cupy does not detect overlap)
            xp.copyto(d, s)
            return self
        store(self, load(src, compute_np(src.dtype) if src.dtype is not BF16 else np.dtype(np.float32)),
              None)
        return self

    def fill_(self, value):
        d = self.dtype
        if d is BF16:
            v = np.asarray(float(value.real if isinstance(value, complex) else value), np.float32)
            xp.copyto(B.view(self), v.astype(BF16.numpy_dtype).view(np.uint16)[()])
            return self
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            xp.copyto(B.view(self), B.scalar(fill_value(value, d), d.numpy_dtype))
        return self

    # ------------------------------------------------------------ elementwise
    ew = elementwise_functions(B)
    binary, unary = ew.binary, ew.unary
    ufuncs, to_float, int_div = ew.ufuncs, ew.to_float, ew.int_div
    keep_dtype, unary_ufuncs = ew.keep_dtype, ew.unary_ufuncs

    def make_binary(name):
        f = binary[name]

        def kernel(self, other, *, alpha=1, out):
            ed = ember.result_type(self, other)
            if name in to_float and not (ed.is_floating_point or ed.is_complex):
                ed = ember.get_default_dtype()
            cd = compute_np(ed)
            a, b = operand(self, cd), operand(other, cd)
            if name in int_div and cd.kind in "iub" and any_true(xp.asarray(b) == 0):
                raise RuntimeError("ZeroDivisionError")
            if alpha != 1:
                b = b * B.scalar(alpha, cd)
            o = direct_out(out, ed, self, other) if name in ufuncs else None
            with errstate():
                if o is not None:
                    f(a, b, out=o)
                    return
                r = f(a, b)
            store(out, r, ed)
        kernel.__name__ = f"cuda_{name}"
        return kernel

    def make_unary(name):
        f = unary[name]

        def kernel(self, *, out):
            ed = self.dtype
            if name not in keep_dtype and not (ed.is_floating_point or ed.is_complex):
                ed = ember.get_default_dtype()   # exp(int tensor) is a float tensor
            o = direct_out(out, ed, self) if name in unary_ufuncs else None
            with errstate():
                if o is not None:
                    f(operand(self, compute_np(ed)), out=o)
                    return
                r = f(operand(self, compute_np(ed)))
            store(out, r, ed)
        kernel.__name__ = f"cuda_{name}"
        return kernel

    def where(condition, input, other, *, out):
        cd = compute_np(out.dtype)
        c = operand(condition, np.dtype(np.bool_))
        a, b = operand(input, cd), operand(other, cd)
        store(out, xp.where(B.asarray(c), B.asarray(a), B.asarray(b)), out.dtype)

    # ------------------------------------------------------------ reductions
    def _axes(ndim, dim):
        if ndim == 0:
            return None
        if dim is None or (not isinstance(dim, int) and len(dim) == 0):
            return tuple(range(ndim))
        return tuple(d % ndim for d in ((dim,) if isinstance(dim, int) else dim))

    def sum_(self, dim=None, keepdim=False, *, dtype=None, out):
        d = dtype or (ember.int64 if not (self.dtype.is_floating_point or self.dtype.is_complex) else self.dtype)
        cd = compute_np(d)                       # integers and bool sum in int64; float16 in float32
        a = operand(self, cd)
        store(out, xp.sum(a, axis=_axes(a.ndim, dim), keepdims=keepdim, dtype=cd), d)

    def make_minmax(f):
        def kernel(self, dim=(), keepdim=False, *, out):
            a = operand(self, compute_np(self.dtype))   # NaN propagates; the meta refused empty reductions
            store(out, f(a, axis=_axes(a.ndim, dim), keepdims=keepdim))
        return kernel

    def _softmax(log):
        def kernel(self, dim, dtype=None, *, out):
            ed = out.dtype
            a = operand(self, compute_np(ed))
            if a.ndim == 0:
                store(out, xp.zeros((), a.dtype) if log else xp.ones((), a.dtype), ed)
                return
            dim_ = dim % a.ndim
            if a.shape[dim_] == 0:
                return
            with errstate():
                z = a - xp.max(a, axis=dim_, keepdims=True)
                e = xp.exp(z)
                s = xp.sum(e, axis=dim_, keepdims=True)
                r = z - xp.log(s) if log else e / s
            store(out, r, ed)
        return kernel

    # ------------------------------------------------------------ linear algebra (cuBLAS through cupy)
    def mat_operand(t, ed):
        """The array a matmul operand is given to cuBLAS as: float16 as it is and bfloat16 in the array library's
        own bfloat16 dtype (tensor cores, float32 accumulation), everything else in its compute dtype. The host
        emulation widens both (numpy's float16 matmul would accumulate in float16)."""
        if not is_host:
            if ed is F16:
                return load(t, np.dtype(np.float16))
            if ed is BF16 and B.matmul_bf16 is not None:
                return B.view(t).view(B.matmul_bf16)
        return load(t, compute_np(ed))

    def widen_bf16(a):
        """A native-bfloat16 operand as float32 (cupy's batched products do not take bfloat16)."""
        return B.bf16_to_f32(a.view(xp.uint16)) if B.matmul_bf16 is not None and a.dtype == B.matmul_bf16 else a

    def matmul_arrays(a, b, o=None):
        """``a @ b`` of 2-D or 3-D operands, into ``o`` when given (same dtype). A single batch is a 2-D product:
        cupy widens a batched float16 product to float32 and takes no bfloat16 in one, while a plain product
        goes to cuBLAS as it is."""
        if a.ndim == 3 and a.shape[0] == 1 and b.shape[0] == 1:
            a, b, o = a[0], b[0], None if o is None else o[0]
        if a.ndim == 3:
            a, b = widen_bf16(a), widen_bf16(b)
        return xp.matmul(a, b, out=o)

    def store_product(out, r, ed):
        """Store a product: a native-bfloat16 result is already rounded, its bits are copied."""
        if ed is BF16 and out.dtype is BF16 and B.matmul_bf16 is not None and r.dtype == B.matmul_bf16:
            xp.copyto(B.view(out), r.view(xp.uint16))
            return
        store(out, r, ed)

    def bmm(self, mat2, *, out):
        ed = out.dtype
        a, b = mat_operand(self, ed), mat_operand(mat2, ed)
        if ed is BF16:
            native = B.matmul_bf16 is not None and (a.ndim == 2 or a.shape[0] == 1)
            o = B.view(out).view(B.matmul_bf16) if native else None
        else:
            o = B.view(out) if not (is_host and ed is F16) else None
        if o is not None and o.flags.c_contiguous and a.dtype == b.dtype == o.dtype and \
                out.untyped_storage() not in (self.untyped_storage(), mat2.untyped_storage()):
            matmul_arrays(a, b, o)                # cuBLAS writes the result in place: no temporary
            return
        store_product(out, matmul_arrays(a, b), ed)

    mm = bmm

    def addmm(self, mat1, mat2, *, beta=1, alpha=1, out):
        ed = out.dtype
        cd = compute_np(ed)
        p = xp.matmul(mat_operand(mat1, ed), mat_operand(mat2, ed)).astype(cd, copy=False)   # 2-D: cuBLAS gemm
        if alpha != 1:
            p = p * B.scalar(alpha, cd)
        if beta != 0:                            # beta == 0: self is ignored (NaN in it too), as PyTorch
            s = operand(self, cd)
            p = p + (s if beta == 1 else s * B.scalar(beta, cd))
        store(out, p, ed)

    def linear(input, weight, bias=None, *, out):
        ed = out.dtype
        x, w = mat_operand(input, ed), mat_operand(weight, ed)
        if w.ndim == 2:                          # leading dims folded: one 2-D gemm, not a batched product
            r = xp.matmul(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), w.T).reshape(x.shape[:-1] + (w.shape[0],))
        else:
            r = xp.matmul(widen_bf16(x), widen_bf16(w))
        if bias is not None:
            r = r.astype(compute_np(ed), copy=False) + operand(bias, compute_np(ed))
        store_product(out, r, ed)

    # ------------------------------------------------------------ indexing
    def _index(index, size, dim):
        i = B.view(index)
        i = i.reshape(-1) if index.dim() == 0 else i
        if i.size:
            bad = (i < 0) | (i >= size)
            if any_true(bad):
                flat = i.reshape(-1)
                k = int(xp.argmax(bad.reshape(-1)))
                raise RuntimeError(f"index {int(flat[k])} is out of bounds for dimension {dim} with size {size}")
        return i.astype(np.int64, copy=False)

    def gather(self, dim, index, *, sparse_grad=False, out):
        a = B.view(self)
        a = a.reshape(-1) if self.dim() == 0 else a
        dim = dim % a.ndim
        i = _index(index, a.shape[dim], dim)
        if i.size == 0:
            return
        sub = a[tuple(slice(None) if d == dim else slice(0, i.shape[d]) for d in range(a.ndim))]
        r = xp.take_along_axis(sub, i, axis=dim).reshape(tuple(out.shape))
        if self.dtype is BF16:                   # bits move unchanged
            xp.copyto(B.view(out), r)
        else:
            store(out, r)

    def scatter_add(self, dim, index, src, *, out):
        ndim = max(self.dim(), 1)
        dim = dim % ndim
        size = 1 if self.dim() == 0 else self.shape[dim]
        i = _index(index, size, dim)             # checked before anything is written
        ed = out.dtype
        acc = np.dtype(np.float32) if ed in LOWP else (np.dtype(np.int64) if ed.numpy_dtype.kind in "iub"
                                                         else ed.numpy_dtype)
        work = xp.array(operand(self, acc), dtype=acc, copy=True).reshape(tuple(self.shape) or (1,))
        if i.size:
            s = xp.asarray(operand(src, acc))
            s = s.reshape(-1) if src.dim() == 0 else s
            s = s[tuple(slice(0, k) for k in i.shape)]
            coords = tuple(i if d == dim else
                           xp.arange(i.shape[d]).reshape([-1 if k == d else 1 for k in range(i.ndim)])
                           for d in range(i.ndim))
            coords = xp.broadcast_arrays(*coords)
            B.add_at(work, tuple(coords), s)
        store(out, work.reshape(tuple(out.shape)), ed)

    # ------------------------------------------------------------ random
    def uniform(self, low=0.0, high=1.0, *, generator, out):
        state = generator.state                  # PhiloxState of this device's generator
        ed = out.dtype
        kind = ed.name if not ed.is_complex else ("float32" if ed is ember.complex64 else "float64")
        cd = np.dtype(np.float64) if kind == "float64" else np.dtype(np.float32)
        n = out.numel()
        parts = 2 if ed.is_complex else 1
        u = _philox.uniform01(xp, state, n * parts, kind).astype(cd, copy=False)
        lo, hi = B.scalar(low, cd), B.scalar(high, cd)
        r = u * (hi - lo) + lo
        # round to the dtype; a value that rounded up to ``high`` becomes ``low`` (never equal to high)
        rounded = r if kind in ("float32", "float64") else (
            r.astype(np.float16).astype(cd) if kind == "float16" else B.bf16_to_f32(B.f32_to_bf16(r)))
        rounded = xp.where(rounded >= hi, lo, rounded) if high > low else rounded
        if ed.is_complex:
            rounded = rounded.reshape(n, 2)
            rounded = rounded[:, 0] + 1j * rounded[:, 1]
        store(out, rounded.reshape(tuple(out.shape)), ed)

    k = {"copy_": copy_, "fill_": fill_, "where": where, "sum": sum_, "amax": make_minmax(xp.max),
         "amin": make_minmax(xp.min), "bmm": bmm, "mm": mm, "addmm": addmm, "linear": linear,
         "gather": gather, "scatter_add": scatter_add, "uniform": uniform,
         "softmax": _softmax(False), "log_softmax": _softmax(True)}
    for name in binary:
        k[name] = make_binary(name)
    for name in unary:
        k[name] = make_unary(name)
    return k


#: dtypes each kernel is registered for (default: every dense dtype)
DTYPES = {
    "bmm": NO_BOOL, "mm": NO_BOOL, "addmm": NO_BOOL, "linear": FLOAT_REAL,
    "uniform": frozenset(FLOATING) | frozenset(COMPLEX),
    "sub": NO_BOOL, "neg": NO_BOOL, "maximum": REAL, "minimum": REAL, "amin": ALL_DENSE,
    "tanh": ALL_DENSE, "sigmoid": ALL_DENSE, "relu": NO_BOOL,
    "softmax": FLOAT_REAL, "log_softmax": FLOAT_REAL,
}


def register(lib, device_type: str, backend_factory, dtypes=None):
    """Register every kernel for ``device_type``. ``backend_factory()`` gives the array backend;
    it is called on the first kernel call (registration must not initialise the device)."""
    state = {}

    def kernels():
        k = state.get("k")
        if k is None:
            B = backend_factory()
            k = state["k"] = make_kernels(B, device_type)
            if getattr(B, "current_device", None) is not None:      # a multi-device backend (cupy)
                state["current"], state["device"] = B.current_device, B.device
        return k

    def device_switch(args, kwargs):
        """The device index to make current for this call, or None when it already is (cupy launches
        on the current device; PyTorch's device guard does the same per op)."""
        cur = state.get("current")
        if cur is None:
            return None
        t = kwargs.get("out")
        if t is None:
            t = next((a for a in args if isinstance(a, Tensor)), None)
        if t is None or t._device.type != device_type:
            return None
        i = t._device.index or 0
        return None if i == cur() else i

    allowed = frozenset(dtypes) if dtypes is not None else frozenset(ALL_DENSE)
    for name in _NAMES:
        def lazy(*args, _name=name, **kwargs):
            k = kernels()[_name]
            i = device_switch(args, kwargs)
            if i is None:
                return k(*args, **kwargs)
            with state["device"](i):
                return k(*args, **kwargs)
        lazy.__name__ = f"{device_type}_{name}"
        ds = sorted(frozenset(DTYPES.get(name, ALL_DENSE)) & allowed, key=lambda d: d.name)
        lib.impl(name, lazy, device=device_type, dtypes=ds)
    return kernels


_NAMES = ("copy_", "fill_", "add", "sub", "mul", "true_divide", "div_trunc", "fmod", "pow", "atan2",
          "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
          "bitwise_left_shift", "bitwise_right_shift", "abs", "floor", "exp", "expm1", "log", "log1p", "sin",
          "cos", "sqrt", "erf", "erfc", "erfinv", "neg", "tanh", "sigmoid", "relu", "where", "sum", "amax",
          "amin", "bmm", "mm", "addmm", "linear", "gather", "scatter_add", "uniform", "softmax", "log_softmax")
