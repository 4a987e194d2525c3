"""Every elementwise primitive of ember-opencl, generated from one strided N-ary template.

A kernel is specialised by its *signature*: the op, the computation type, the output's
type, the rank after ``collapse`` and, per operand, whether it is a tensor (and its storage
type) or a kernel scalar (a Python number or a 0-dim cpu tensor). ``_source`` writes the
OpenCL C for a signature::

    __kernel void ew(long total, long n0.., __global OT* out, long out_off, long out_s0..,
                     <per operand: __global const T* xk, long xk_off, long xk_s0..  |  CT xk>
                     [, CT alpha])
    {   long i = get_global_id(0); if (i >= total) return;
        <unravel i into c0..>
        CT a = (CT)x0[x0_off + c0 * x0_s0 + ...]; CT b = ...;      (or the scalar)
        out[out_off + ...] = STORE(<the op's C expression of a, b, c>);  }

so every operand is read in place with its own strides and storage offset (broadcast
operands get 0-strides here: the meta only computes the output's shape), and nothing is
copied to make it contiguous. Each op is one line of ``_expr``: its C expression per kind
of computation type (bool, signed, unsigned, floating).

Semantics follow ember-cpu (numpy) and PyTorch (docs/vendor-guide.md, section 3):

- the computation dtype is PyTorch's common dtype (``ember.result_type``); true_divide,
  atan2 and the float functions compute integers in the default float dtype; where
  computes in out's dtype; float16 (devices with cl_khr_fp16) is read with ``vload_half``,
  computes in float32 and is rounded once when stored (``vstore_half_rte``, PyTorch's rule); other
  results are stored with a C cast (``!= 0`` into bool);
- integer arithmetic wraps (done in unsigned types: signed overflow is undefined in C);
- integer ``div_trunc`` / ``fmod`` by zero raise ``RuntimeError("ZeroDivisionError")``
  before anything is written (a flag kernel checks the divisor first); ``INT_MIN / -1``
  wraps as numpy's;
- shifts by a negative amount or by >= the bit width give 0 (``>>`` of a negative: -1), as
  numpy's; integer ``pow`` by squaring, ``x ** -n`` = 0 but for ``1`` and ``-1``;
  ``bool ** bool`` is ``a or not b``;
- erfinv (no OpenCL builtin): an initial guess (series for |y| <= 0.5, Winitzki's
  approximation beyond) refined by Halley steps on erf (erfc in the tails, where
  ``1 - |y|`` is exact), accurate to a few ulp in float32 and float64.

An ``out`` that shares memory with an operand but with another layout (``x[1:] += x[:-1]``)
is computed into a temporary first, so every result reads the inputs as they were.
"""
from __future__ import annotations

import weakref

import numpy as np

import ember
from ember.library import ALL_DENSE

from .. import _codegen as cg

# ---------------------------------------------------------------- the ops
#: binary primitives (self, other); add takes alpha
BINARY = ("add", "mul", "true_divide", "div_trunc", "fmod", "pow", "atan2", "eq", "lt", "bitwise_and",
          "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift")
#: unary primitives
UNARY = ("abs", "floor", "exp", "expm1", "log", "log1p", "sin", "cos", "sqrt", "erf", "erfc", "erfinv")
TO_FLOAT = {"true_divide", "atan2"}                     # integer operands compute in the default float dtype
UNARY_KEEP = {"abs", "floor"}                           # the other unary ops compute integers in default float
INT_DIV = {"div_trunc", "fmod"}                         # integer division by zero raises

# C type -> (kind, wrap type for modular arithmetic, bit width)
_KIND = {"uchar": ("u", "uint", 8), "char": ("i", "uint", 8), "short": ("i", "uint", 16),
         "int": ("i", "uint", 32), "long": ("i", "ulong", 64), "float": ("f", None, 32),
         "double": ("f", None, 64), "half": ("f", None, 16)}


def _wrap(ct, expr):
    """``expr`` (of wrap-type operands) converted back to ``ct``: modular, as a C cast."""
    return f"(({ct})({expr}))"


def _expr(op, ct, is_bool, alpha):
    """The C expression of ``op`` over operands ``a``, ``b`` (``c``) of computation type ``ct``."""
    kind, w, bits = _KIND[ct]
    if is_bool:
        kind = "b"
    f = kind == "f"
    if op == "add":
        if f:
            return "fma(alpha, b, a)" if alpha else "(a + b)"
        if kind == "b":
            return "(a | (alpha & b))" if alpha else "(a | b)"
        return _wrap(ct, f"({w})a + ({w})alpha * ({w})b" if alpha else f"({w})a + ({w})b")
    if op == "mul":
        return "(a * b)" if f else "(a & b)" if kind == "b" else _wrap(ct, f"({w})a * ({w})b")
    if op == "true_divide":
        return "(a / b)"
    if op == "div_trunc":
        if f:
            return "trunc(a / b)"
        if kind == "u":
            return f"(b == 0 ? ({ct})0 : ({ct})(a / b))"
        return f"(b == 0 ? ({ct})0 : b == ({ct})-1 ? {_wrap(ct, f'({w})0 - ({w})a')} : ({ct})(a / b))"
    if op == "fmod":
        if f:
            return "fmod(a, b)"
        if kind == "u":
            return f"(b == 0 ? ({ct})0 : ({ct})(a % b))"
        return f"(b == 0 || b == ({ct})-1 ? ({ct})0 : ({ct})(a % b))"
    if op == "pow":
        return "pow(a, b)" if f else "(a | !b)" if kind == "b" else f"ipow_{ct}(a, b)"
    if op == "atan2":
        return "atan2(a, b)"
    if op == "eq":
        return "(a == b)"
    if op == "lt":
        return "(a < b)"
    if op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        return {"bitwise_and": "(a & b)", "bitwise_or": "(a | b)", "bitwise_xor": "(a ^ b)"}[op]
    if op == "bitwise_left_shift":             # numpy: a shift count outside [0, bits) gives 0
        return f"((ulong)b < {bits} ? {_wrap(ct, f'({w})a << b')} : ({ct})0)"
    if op == "bitwise_right_shift":            # ... and the sign for >> of a negative
        fill = f"({ct})0" if kind == "u" else f"(a < 0 ? ({ct})-1 : ({ct})0)"
        return f"((ulong)b < {bits} ? ({ct})(a >> b) : {fill})"
    if op == "abs":
        return "fabs(a)" if f else "a" if kind in "ub" else f"(a < 0 ? {_wrap(ct, f'({w})0 - ({w})a')} : a)"
    if op == "floor":
        return "floor(a)" if f else "a"
    if op == "erfinv":
        return f"erfinv_{ct}(a)"
    if op == "where":
        return "(c ? a : b)"
    if op == "copy":
        return "a"
    if op in UNARY:                            # the float functions: OpenCL builtins of the same name
        return f"{op}(a)"
    raise KeyError(op)


# ---------------------------------------------------------------- helper functions in OpenCL C
def _ipow(ct):
    """Integer power by squaring, modular (numpy's loop); negative exponents as PyTorch."""
    kind, _, _ = _KIND[ct]
    neg = ("    if (b < 0) return a == 1 ? ({ct})1 : a == -1 ? ((b & 1) ? ({ct})-1 : ({ct})1) : ({ct})0;\n"
           .format(ct=ct) if kind == "i" else "")
    return (f"{ct} ipow_{ct}({ct} a, {ct} b) {{\n{neg}"
            f"    ulong r = 1, base = (ulong)(long)a, e = (ulong)b;\n"
            f"    while (e) {{ if (e & 1) r *= base; base *= base; e >>= 1; }}\n"
            f"    return ({ct})r;\n}}\n")


def _erfinv(ct):
    """erfinv for ``ct`` (float or double): initial guess + Halley steps on erf / erfc."""
    s = "f" if ct == "float" else ""
    steps = 2 if ct == "float" else 3
    k = lambda v: f"({ct}){v!r}{s}"            # noqa: E731  a literal of type ct
    return f"""
{ct} erfinv_{ct}({ct} y) {{
    {ct} ay = fabs(y);
    if (isnan(y) || ay > 1) return ({ct})NAN;
    if (ay == 1) return copysign(({ct})INFINITY, y);
    {ct} x;
    if (ay <= {k(0.5)}) {{
        /* the series of erfinv in z = sqrt(pi) / 2 * y: z + z^3/3 + 7 z^5/30 + 127 z^7/630 */
        {ct} z = {k(0.886226925452758)} * y, z2 = z * z;
        x = z * (1 + z2 * ({k(1 / 3)} + z2 * ({k(7 / 30)} + z2 * {k(127 / 630)})));
        for (int k = 0; k < {steps}; k++) {{      /* Halley: f = erf(x) - y, f'' = -2 x f' */
            {ct} u = (erf(x) - y) / ({k(1.1283791670955126)} * exp(-x * x));
            x = x - u / (1 + x * u);
        }}
        return x;
    }}
    /* Winitzki's approximation with a = 0.147, then Halley on f = (1 - |y|) - erfc(x): 1 - |y| is exact */
    {ct} q = 1 - ay;
    {ct} w = -log(q * (1 + ay));
    {ct} t = {k(4.330746750799873)} - w / 2;
    x = sqrt(sqrt(t * t + w / {k(0.147)}) - t);
    for (int k = 0; k < {steps}; k++) {{
        {ct} u = (q - erfc(x)) / ({k(1.1283791670955126)} * exp(-x * x));
        x = x - u / (1 + x * u);
    }}
    return copysign(x, y);
}}
"""


# ---------------------------------------------------------------- the template
def _source(op, ct, is_bool, out_ct, out_bool, rank, operands, alpha):
    """OpenCL C of one elementwise kernel.

    ``operands``: per operand ``(load type, storage type)``; storage type None for a kernel scalar;
    load type "cond" for where's condition (read as ``!= 0``)."""
    names = "cab" if op == "where" else "ab"
    params = ["long total", cg.shape_params(rank) if rank else None, cg.tensor_params("out", out_ct, rank)]
    loads = []
    for k, (lt, st) in enumerate(operands):
        x, v = f"x{k}", names[k]
        if lt == "cond":
            if st is None:
                params.append(f"uchar {x}")
                loads.append(f"int {v} = {x} != 0;")
            else:
                params.append(cg.tensor_params(x, st, rank, const=True))
                loads.append(f"int {v} = {cg.load(x, cg.offset(x, rank), st)} != 0;")
        elif st is None:
            params.append(f"{lt} {x}")
            loads.append(f"{lt} {v} = {x};")
        else:
            params.append(cg.tensor_params(x, st, rank, const=True))
            loads.append(f"{lt} {v} = ({lt}){cg.load(x, cg.offset(x, rank), st)};")     # half: vload_half
    if alpha:
        params.append(f"{ct} alpha")
    expr = _expr(op, ct, is_bool, alpha)
    if out_ct == "half":                      # float16 out: a float, rounded once by vstore_half_rte
        store = f"(float)(({expr}) != 0)" if is_bool else f"({expr})" if _KIND[ct][0] == "f" else f"(float)({expr})"
    elif out_bool or is_bool:                 # into bool: != 0 (NaN -> true); a bool result is 0 or 1
        store = f"({out_ct})(({expr}) != 0)"
    else:
        store = f"({out_ct})({expr})"
    helpers = ""
    if op == "pow" and _KIND[ct][0] != "f" and not is_bool:
        helpers = _ipow(ct)
    elif op == "erfinv":
        helpers = _erfinv(ct)
    body = "\n    ".join(loads)
    sig = ",\n               ".join(p for p in params if p)
    return (f"{helpers}__kernel void ew({sig}) {{\n"
            f"    long i = get_global_id(0);\n    if (i >= total) return;\n"
            f"    {cg.unravel(rank)}\n    {body}\n"
            f"    {cg.store('out', cg.offset('out', rank), out_ct, store)}\n}}\n")


# ---------------------------------------------------------------- launching
_KERNELS = weakref.WeakKeyDictionary()         # device state -> {signature: cl.Kernel}
_FLAGS = weakref.WeakKeyDictionary()           # device state -> a 4-byte cl.Buffer (the zero-divisor flag)


def _on_device(x) -> bool:
    return isinstance(x, ember.Tensor) and x.device.type == "opencl"


def _value(x):
    """The Python value of a scalar operand (a number or a 0-dim cpu tensor)."""
    return x.item() if isinstance(x, ember.Tensor) else x


def _expanded_strides(t, shape):
    """``t``'s strides broadcast to ``shape``: 0 for the dims it is expanded along (PyTorch's rules)."""
    k = len(shape) - t.dim()
    ts, st = t.shape, t.stride()
    return tuple(0 if d < k or ts[d - k] == 1 else st[d - k] for d in range(len(shape)))


def _overlaps(out, out_buf, t, shape, strides) -> bool:
    """True when ``t`` shares ``out``'s buffer with another layout (reading it while writing would race).

    Conservative: two disjoint views of one buffer count too (they only cost a temporary)."""
    buf = cg.buffer(t)
    if buf is not out_buf and buf != out_buf:
        return False
    if t.storage_offset() != out.storage_offset():
        return True
    return any(n > 1 and s != o for n, s, o in zip(shape, strides, out.stride()))


def _kernel(state, signature):
    cache = _KERNELS.get(state)
    if cache is None:
        cache = _KERNELS[state] = {}
    k = cache.get(signature)
    if k is None:
        k = cache[signature] = cg.build(state, _source(*signature), "ew")
    return k


def _launch(op, cd, out, xs, alpha=None):
    """``out = op(*xs)`` computed in ember dtype ``cd``; ``xs``: opencl tensors (any strides, broadcastable
    to ``out``), 0-dim cpu tensors or Python numbers; ``alpha`` (add only) when it is not 1."""
    n = out.numel()
    if n == 0:
        return
    shape = tuple(out.shape)
    tensors = [x for x in xs if _on_device(x)]
    strides = [_expanded_strides(t, shape) for t in tensors]
    out_buf = cg.buffer(out)
    if any(_overlaps(out, out_buf, t, shape, s) for t, s in zip(tensors, strides)):
        tmp = ember.empty(shape, dtype=out.dtype, device=out.device)
        _launch(op, cd, tmp, xs, alpha)
        _launch("copy", out.dtype, out, [tmp])
        return
    cshape, cstrides = cg.collapse(shape, tuple(out.stride()), *strides)
    if cd is ember.float16:
        cd = ember.float32                     # float16 computes in float32, rounded once when stored (PyTorch)
    ct = cg.ctype(cd)
    args = [cg.i64(n), *cg.shape_args(cshape), *cg.tensor_args(out, cstrides[0])]
    spec, j = [], 1
    for k, x in enumerate(xs):
        cond = op == "where" and k == 0
        lt = "cond" if cond else ct
        if _on_device(x):
            spec.append((lt, cg.ctype(x.dtype)))
            args += cg.tensor_args(x, cstrides[j])
            j += 1
        else:
            spec.append((lt, None))
            args.append(cg.scalar(_value(x), ember.bool if cond else cd))
    if alpha is not None:
        args.append(cg.scalar(alpha, cd))
    state = cg.state_of(out)
    signature = (op, ct, cd is ember.bool, cg.ctype(out.dtype), out.dtype is ember.bool, len(cshape),
                 tuple(spec), alpha is not None)
    cg.launch(state, _kernel(state, signature), n, args)


def _check_divisor(b, cd, out):
    """RuntimeError("ZeroDivisionError") when the integer divisor ``b`` has a zero (ember-cpu's rule),
    before anything is written: a flag kernel over ``b``, read back (one sync)."""
    if not _on_device(b):
        if int(cg.scalar(_value(b), cd)) == 0:
            raise RuntimeError("ZeroDivisionError")
        return
    n = b.numel()
    if n == 0:
        return
    import pyopencl as cl
    state = cg.state_of(out)
    flag = _FLAGS.get(state)
    if flag is None:
        flag = _FLAGS[state] = cl.Buffer(state.context, cl.mem_flags.READ_WRITE, 4)
    shape, (st,) = cg.collapse(tuple(b.shape), tuple(b.stride()))
    r = len(shape)
    sig = ("zero_check", cg.ctype(b.dtype), r)
    cache = _KERNELS.setdefault(state, {})
    k = cache.get(sig)
    if k is None:
        src = (f"__kernel void zero_check(long total, {cg.shape_params(r)},\n"
               f"                         {cg.tensor_params('x', cg.ctype(b.dtype), r, const=True)},\n"
               f"                         __global int* flag) {{\n"
               f"    long i = get_global_id(0);\n    if (i >= total) return;\n    {cg.unravel(r)}\n"
               f"    if (x[{cg.offset('x', r)}] == 0) flag[0] = 1;\n}}\n")
        k = cache[sig] = cg.build(state, src, "zero_check")
    host = np.zeros(1, np.int32)
    cl.enqueue_copy(state.queue, flag, host)
    cg.launch(state, k, n, [cg.i64(n), *cg.shape_args(shape), *cg.tensor_args(b, st), flag])
    cl.enqueue_copy(state.queue, host, flag)       # blocking: waits for the check
    if host[0]:
        raise RuntimeError("ZeroDivisionError")


# ---------------------------------------------------------------- the primitive kernels
def _is_float(d) -> bool:
    return d.is_floating_point or d.is_complex


def make_binary(name):
    """Build the opencl kernel ``kernel(self, other, *, alpha=1, out)`` of binary op ``name``: computes in
    PyTorch's common dtype (integers in the default float dtype for true_divide / atan2), ``alpha`` scales
    ``other`` for add, and writes ``out`` through its strides. Integer div_trunc / fmod by zero raise
    RuntimeError "ZeroDivisionError" before anything is written.
    """
    def kernel(self, other, *, alpha=1, out):
        cd = ember.result_type(self, other)     # PyTorch's common dtype (eq / lt store bool into out)
        if name in TO_FLOAT and not _is_float(cd):
            cd = ember.get_default_dtype()
        if name in INT_DIV and not _is_float(cd):
            _check_divisor(other, cd, out)
        _launch(name, cd, out, [self, other], alpha if name == "add" and alpha != 1 else None)
    kernel.__name__ = f"opencl_{name}"
    return kernel


def make_unary(name):
    """Build the opencl kernel ``kernel(self, *, out)`` of unary op ``name``: computes in the input's dtype (abs /
    floor) or, for integer inputs of the float functions, the default float dtype, and writes ``out`` through
    its strides.
    """
    def kernel(self, *, out):
        cd = self.dtype
        if name not in UNARY_KEEP and not _is_float(cd):
            cd = ember.get_default_dtype()      # exp(int tensor) is a float tensor
        _launch(name, cd, out, [self])
    kernel.__name__ = f"opencl_{name}"
    return kernel


def where(condition, input, other, *, out):
    """opencl kernel of ``where``: write ``input`` where ``condition`` else ``other`` (tensors or scalars,
    broadcast; already promoted to out's dtype by the meta) into ``out``.
    """
    _launch("where", out.dtype, out, [condition, input, other])   # the meta promoted input, other to out's dtype


def register(lib, dtypes=None):
    """Register the elementwise primitives for device "opencl" and the dtypes that have an OpenCL C type."""
    dtypes = [d for d in (dtypes or ALL_DENSE) if d.name in cg.CTYPES]
    for name in BINARY:
        lib.impl(name, make_binary(name), device="opencl", dtypes=dtypes)
    for name in UNARY:
        lib.impl(name, make_unary(name), device="opencl", dtypes=dtypes)
    lib.impl("where", where, device="opencl", dtypes=dtypes)
