"""sum and amax on opencl over any dims, for any strides: one generated kernel, one or two stages.

The input's dims split into *kept* dims (they index the output) and *reduced* dims; each group
is collapsed separately (``_codegen.collapse``), so a contiguous full sum is a rank-0 x rank-1
problem. The kernel ``ember_reduce`` runs a 2-D grid: dim 1 is the output element ``o``, dim 0
its *parts*. Part ``p`` of output ``o`` reduces one contiguous range of the reduced index space
(row by row: coordinates are computed once, then only the innermost dim is stepped), so work
items walk memory in order. Work items of one work group then combine their values by a tree
reduction in local memory (on GPUs; CPU devices use one work item per group, where the tree
buys nothing). The group's size comes from the device, per kernel: the largest power of two
within CL_KERNEL_WORK_GROUP_SIZE whose accumulators fit the device's local memory (passed as a
``__local`` argument), at least the preferred work-group multiple, no more than the reduction
needs (``_tree_group``); there are about as many groups as compute units over all outputs
(CL_DEVICE_MAX_COMPUTE_UNITS), none with fewer than MIN_PER_PART elements. The group's value goes to

- ``out`` (cast to its dtype) when there is one group per output - a single stage, the usual
  case when there are many outputs; or
- a partial buffer of (n_out, groups) values in the accumulator type; a second launch of the
  same kernel then reduces those rows into ``out`` - the two-stage reduction of a large tensor
  into few outputs (a full sum of 10M floats runs on every compute unit).

When the innermost reduced dim is unit-stride, the walk loads 256-bit vectors (VW independent
accumulator lanes). When instead the innermost *kept* dim is unit-stride (a sum over dim 0 of a
row-major matrix), CPU devices use ``ember_reduce_cols``: a work item owns 64 neighbouring
outputs and adds each reduced element's 64 contiguous values into them, rather than walking 64
strided columns. Measured on PoCL (2-core EPYC; numpy in brackets): sum of 10M float32 0.9 ms
(1.6), over dim 1 of (1000, 10000) 1.3 ms (1.7), over dim 0 3.3 ms (2.3); amax of 10M 1.5 ms (0.9).

Semantics (docs/vendor-guide.md, THE PRIMITIVE SET; ember-cpu is the reference):

- ``sum``: accumulates in ``dtype=`` if given, else int64 for bool / integers, else the input's
  float dtype. Integer sums accumulate in the unsigned type of their width (overflow wraps;
  signed overflow is undefined in C); a sum *into bool* is a logical or, as numpy's. Empty sums
  are 0; NaN propagates. Float sums add each row into a row total first (less rounding error
  than one running sum).
- ``amax``: any NaN gives NaN (numpy's ``max``); bool is a logical or; the meta refuses empty
  reductions.
- float16 (declared where the device reports cl_khr_fp16): read with ``vload_half``, accumulated
  in float (as PyTorch and ember-cpu do) and rounded once, to nearest even, by ``vstore_half_rte``
  when stored - so the kernels need no half arithmetic.
"""
from __future__ import annotations

import functools
import math


import ember
from ember.library import ALL_DENSE

from .. import _codegen as cg

FLOAT_C = ("float", "double", "half")
UNSIGNED_OF = {"char": "uint", "uchar": "uint", "short": "uint", "int": "uint", "long": "ulong"}
#: the ember dtype whose storage holds partials of accumulator C type (only the size matters)
PARTIAL_DTYPE = {"uint": "int32", "ulong": "int64", "float": "float32", "double": "float64", "uchar": "uint8",
                 "char": "int8", "short": "int16", "int": "int32", "long": "int64"}
TARGET_ITEMS = 1024          # CPU devices: aim for about this many parts (over all outputs) when there are few outputs
MIN_PER_PART = 4096          # ... but give every part (on non-CPU devices: every group) at least this many elements
# non-CPU devices: the group's size and local memory from the device and kernel (_tree_group), and about one
# group per compute unit (CL_DEVICE_MAX_COMPUTE_UNITS) over all outputs

#: "cpu" or "gpu" forces the work-group shape (tests run both on PoCL); None picks by device type
FORCE_SHAPE = None


# ---------------------------------------------------------------- C pieces per op and type
def _acc_type(op: str, in_c: str, out_c: str) -> str:
    if op == "amax":
        return "float" if in_c == "half" else in_c
    if out_c in FLOAT_C:
        return "float" if out_c == "half" else out_c
    return UNSIGNED_OF[out_c]


def _identity(op: str, at: str, bool_in: bool) -> str:
    if op == "sum" or bool_in:
        return f"({at})0"
    return {"float": "-INFINITY", "double": "-INFINITY", "char": "CHAR_MIN", "uchar": "0", "short": "SHRT_MIN",
            "int": "INT_MIN", "long": "LONG_MIN"}[at]


def _combine(op: str, at: str, logical: bool) -> str:
    """C expression combining ``acc`` with ``v`` (both of type ``at``)."""
    if logical:
        return "(acc | v)"
    if op == "sum":
        return "(acc + v)"
    if at in FLOAT_C:
        return "((v > acc || v != v) ? v : acc)"      # NaN sticks: nothing is > NaN
    return "max(acc, v)"


def _convert(expr: str, src_c: str, at: str, logical: bool) -> str:
    """``expr`` of C type ``src_c`` as accumulator type ``at``."""
    if logical:
        return f"(uchar)(({expr}) != 0)"
    if src_c == at:
        return f"({expr})"
    if at in ("uint", "ulong") and src_c in FLOAT_C:           # float -> int truncates toward zero
        return f"({at})(long)({expr})"
    if at in ("uint", "ulong"):
        return f"({at})({'long' if at == 'ulong' else 'int'})({expr})"   # sign-extend, then wrap
    return f"({at})({expr})"


def _store(at: str, out_c: str, logical: bool, expr: str = "acc") -> str:
    """``expr`` (of type ``at``) as the value stored into ``out_c``: for half a float, rounded once by the store."""
    if logical or out_c == at or out_c == "half":
        return expr
    return f"({out_c})({expr})"


def _write(out_c: str, index: str, value: str) -> str:
    """C statement storing ``value`` at ``out[index]`` (float16: ``vstore_half_rte``, one rounding)."""
    return cg.store("out", index, out_c, value)


#: vector lanes of the unit-stride inner loop: 256-bit vectors (PoCL's znver3 target has AVX2; its
#: 512-bit vector types, e.g. ulong8, break kernels - they build, but the kernel is missing)
VW_OF = {"double": 4, "long": 4, "ulong": 4}
SIZEOF = {"uchar": 1, "char": 1, "short": 2, "int": 4, "uint": 4, "long": 8, "ulong": 8, "float": 4, "double": 8}


def _vectorizable(in_c: str, at: str, logical: bool) -> bool:
    """Whether the inner loop may load VW-vectors and convert them (float -> integer casts may not)."""
    return not logical and not (in_c in FLOAT_C and at not in FLOAT_C) and in_c != "half"


# ---------------------------------------------------------------- the kernel
@functools.lru_cache(maxsize=None)
def _source(op: str, in_c: str, at: str, out_c: str, logical: bool, kr: int, rr: int, tree: bool,
            partial: bool, unit: bool = False) -> str:
    """``ember_reduce`` for one signature: kr kept dims (shape k*), rr reduced dims (shape r*). With ``tree``
    the work items of a group (any power of two, chosen at launch) combine through ``__local`` memory given as
    the last argument (one accumulator per work item)."""
    kshape = cg.shape_params(kr, "k") if kr else ""
    rshape = cg.shape_params(rr, "r")
    out_strides = "".join(f", long out_s{d}" for d in range(kr)) if not partial else ""
    x_kept = "".join(f", long x_s{d}" for d in range(kr))
    x_red = "".join(f", long x_t{d}" for d in range(rr))
    base = " + ".join(["x_off"] + [f"kc{d} * x_s{d}" for d in range(kr)])
    obase = " + ".join(["out_off"] + [f"kc{d} * out_s{d}" for d in range(kr)])
    row = " + ".join(["base"] + [f"rc{d} * x_t{d}" for d in range(rr - 1)])
    last = rr - 1
    carry = ""
    for d in range(last):
        carry = f"if (++rc{d} == r{d}) {{ rc{d} = 0; {carry}}}"
    is_float_sum = op == "sum" and at in FLOAT_C and not logical
    v = _convert(cg.load("x", f"o_ + j * x_t{last}", in_c), in_c, at, logical)     # half: vload_half
    comb = _combine(op, at, logical)
    if is_float_sum:
        # each row into its own total first: less rounding error than one long running sum
        walk_row = f"""{at} row_ = 0;
            for (long j = 0; j < cnt_; j++) row_ += {v};
            acc += row_;"""
    else:
        walk_row = f"""for (long j = 0; j < cnt_; j++) {{ {at} v = {v}; acc = {comb}; }}"""
    typedef = ""
    if unit and _vectorizable(in_c, at, logical):
        # unit inner stride: VW lanes of partial results (VW independent chains, one vector load each)
        VW = VW_OF.get(at, 8)
        vt = f"{at}{VW}"
        # a dereference of an under-aligned vector type: an unaligned vector load (PoCL's vload8 is a
        # library call, 6x slower: 10M floats 4.6 ms -> 0.7 ms)
        ld = f"*(const __global {in_c}{VW}_u*)(x + o_ + j)"
        typedef = f"typedef {in_c}{VW} {in_c}{VW}_u __attribute__((aligned({SIZEOF[in_c]})));"
        vv = ld if in_c == at else f"convert_{vt}({ld})"
        vcomb = {"sum": "(vacc + v)",
                 # component-wise ?: (select() and max() are library calls on PoCL: 2-3x slower)
                 "amax": ("((v > vacc || v != v) ? v : vacc)" if at in FLOAT_C else "((v > vacc) ? v : vacc)")}[op]
        fold = "row_ += t_[l];" if is_float_sum else f"{at} v = t_[l]; acc = {comb};"
        walk_row = f"""{vt} vacc = ({vt})({_identity(op, at, logical)});
            long j = 0;
            for (; j + {VW} <= cnt_; j += {VW}) {{ {vt} v = {vv}; vacc = {vcomb}; }}
            {at} t_[{VW}];
            vstore{VW}(vacc, 0, t_);
            {f"{at} row_ = 0;" if is_float_sum else ""}
            for (int l = 0; l < {VW}; l++) {{ {fold} }}
            {walk_row.replace("long j = 0", "").replace(f"{at} row_ = 0;", "")}"""
    combine = ""
    if tree:
        combine = f"""
    sh_[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = (int)get_local_size(0) / 2; s > 0; s >>= 1) {{
        if (lid < s) {{ {at} v = sh_[lid + s]; acc = sh_[lid]; sh_[lid] = {comb}; }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    acc = sh_[0];"""
    if partial:
        write = f"out[out_off + o * get_num_groups(0) + get_group_id(0)] = acc;"
    else:
        write = _write(out_c, obase, _store(at, out_c, logical))
    store_t = at if partial else out_c
    local = f", __local {at}* sh_" if tree else ""
    return f"""{typedef}
__kernel void ember_reduce(long nred, long per{', ' + kshape if kshape else ''}, {rshape},
                           __global {store_t}* out, long out_off{out_strides},
                           __global const {in_c}* x, long x_off{x_kept}{x_red}{local})
{{
    const long o = get_global_id(1);
    const int lid = get_local_id(0);
    const long p = get_global_id(0);
    {cg.unravel(kr, "o", "k", "kc")}
    const long base = {base};
    {at} acc = {_identity(op, at, logical)};
    long i_ = p * per;
    const long hi_ = min(nred, i_ + per);
    if (i_ < hi_) {{
        {cg.unravel(rr, "i_", "r", "rc")}
        while (i_ < hi_) {{
            const long cnt_ = min(hi_ - i_, r{last} - rc{last});
            const long o_ = {row} + rc{last} * x_t{last};
            {walk_row}
            i_ += cnt_;
            rc{last} = 0;
            {carry}
        }}
    }}{combine}
    if (lid == 0) {{ {write} }}
}}
"""


COLS_BLOCK = 64            # outputs per work item of the columns kernel
COLS_FLUSH = 256           # float sums: reduced elements per partial before it joins the total


@functools.lru_cache(maxsize=None)
def _cols_source(op: str, in_c: str, at: str, out_c: str, logical: bool, kr: int, rr: int) -> str:
    """``ember_reduce_cols``: the innermost kept dim is unit-stride in ``x`` (e.g. a sum over dim 0 of a
    row-major matrix). A work item owns COLS_BLOCK neighbouring outputs and walks the reduced elements
    once, adding each one's COLS_BLOCK contiguous values into its accumulators (an inner loop LLVM
    vectorizes) - instead of one work item per output walking a strided column."""
    outer = kr - 1
    kshape = "".join(f", long k{d}" for d in range(outer))
    rshape = cg.shape_params(rr, "r")
    base = " + ".join(["x_off"] + [f"kc{d} * x_s{d}" for d in range(outer)])
    obase = " + ".join(["out_off"] + [f"kc{d} * out_s{d}" for d in range(outer)])
    roff = " + ".join(f"rc{d} * x_t{d}" for d in range(rr))
    carry = ""
    for d in range(rr - 1):
        carry = f"if (++rc{d} == r{d}) {{ rc{d} = 0; {carry}}}"
    carry = f"if (++rc{rr - 1} == r{rr - 1}) {{ rc{rr - 1} = 0; {carry}}}"
    comb = _combine(op, at, logical)
    v = _convert(cg.load("p_", "j", in_c), in_c, at, logical)
    float_sum = op == "sum" and at in FLOAT_C and not logical
    B = COLS_BLOCK
    write = _write(out_c, f"{obase} + (j0 + j) * out_s{outer}", _store(at, out_c, logical))
    if float_sum:
        step = f"""for (int j = 0; j < nb; j++) part_[j] += {v};
        if (++cnt_ == {COLS_FLUSH}) {{ for (int j = 0; j < nb; j++) {{ acc_[j] += part_[j]; part_[j] = 0; }} cnt_ = 0; }}"""
        init = f"{at} part_[{B}]; for (int j = 0; j < {B}; j++) part_[j] = 0; int cnt_ = 0;"
        finish = "for (int j = 0; j < nb; j++) acc_[j] += part_[j];"
    else:
        step = f"for (int j = 0; j < nb; j++) {{ {at} acc = acc_[j], v = {v}; acc_[j] = {comb}; }}"
        init = finish = ""
    return f"""
__kernel void ember_reduce_cols(long nred, long ninner{kshape}, {rshape},
                                __global {out_c}* out, long out_off{"".join(f", long out_s{d}" for d in range(kr))},
                                __global const {in_c}* x, long x_off{"".join(f", long x_s{d}" for d in range(outer))}
                                {"".join(f", long x_t{d}" for d in range(rr))})
{{
    const long o = get_global_id(1);
    const long j0 = get_global_id(0) * {B};
    if (j0 >= ninner) return;
    const int nb = (int)min((long){B}, ninner - j0);
    {cg.unravel(outer, "o", "k", "kc")}
    const long base = {base} + j0;
    {at} acc_[{B}];
    for (int j = 0; j < {B}; j++) acc_[j] = {_identity(op, at, logical)};
    {init}
    {"".join(f"long rc{d} = 0; " for d in range(rr))}
    for (long i = 0; i < nred; i++) {{
        __global const {in_c}* p_ = x + base + {roff};
        {step}
        {carry}
    }}
    {finish}
    for (int j = 0; j < nb; j++) {{ const {at} acc = acc_[j]; {write} }}
}}
"""


# ---------------------------------------------------------------- driver
def _axes(ndim, dim):
    """``dim`` (None, an int or a sequence; empty = all) as a sorted tuple of non-negative axes."""
    if ndim == 0:
        return ()
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    return tuple(sorted({d % ndim for d in dims}))


def _contiguous_strides(shape, inner=1):
    st, acc = [], inner
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return tuple(reversed(st))


def _tree_group(state, kernel, at: str, n: int) -> int:
    """Work items per group of the tree reduction of ``n`` values per group: a power of two (the tree halves
    it), at most what ``kernel`` may run with on the device and what its local memory holds (one ``at`` per work
    item; ``cg.work_group_limits``), at least the preferred multiple (a warp / wavefront) where that fits, and
    no larger than ``n`` needs."""
    most, multiple = cg.work_group_limits(state, kernel, SIZEOF[at])
    want = max(1 << (max(n, 1) - 1).bit_length(), multiple)
    return 1 << (min(want, most).bit_length() - 1)


def _shape_kind(state):
    if FORCE_SHAPE is not None:
        return FORCE_SHAPE
    import pyopencl as cl
    return "cpu" if state.device.type & cl.device_type.CPU else "gpu"


def reduce_into(op, x, axes, keepdim, out):
    """``out = op(x)`` over ``axes`` (sorted, non-negative); out's dtype decides sum's accumulator."""
    shape, strides = tuple(x.shape), tuple(x.stride())
    kept = [d for d in range(len(shape)) if d not in axes]
    kshape = tuple(shape[d] for d in kept)
    n_out = math.prod(kshape)
    if n_out == 0:
        return
    rshape = tuple(shape[d] for d in axes)
    nred = math.prod(rshape)
    ostr = tuple(out.stride())
    okept = tuple(ostr[d] for d in kept) if keepdim and out.dim() == len(shape) else ostr
    if len(okept) != len(kept):                  # 0-dim out of a full reduction
        okept = (0,) * len(kept)
    kshape_c, (xk, ok) = cg.collapse(kshape, tuple(strides[d] for d in kept), okept) if kept else ((), [(), ()])
    if kshape_c == (1,):
        kshape_c, xk, ok = (), (), ()            # a single output: no kept dims at all
    rshape_c, (xr,) = cg.collapse(rshape, tuple(strides[d] for d in axes)) if axes else ((1,), [(0,)])
    if nred == 0:                                # an empty sum (empty amax is refused by the meta)
        out.fill_(0)
        return
    in_c, out_c = cg.ctype(x.dtype), cg.ctype(out.dtype)
    logical = (op == "sum" and out.dtype == ember.bool) or (op == "amax" and x.dtype == ember.bool)
    at = "uchar" if logical else _acc_type(op, in_c, out_c)
    state = cg.state_of(out)
    tree = _shape_kind(state) != "cpu"           # CPU devices: one work item per group, no tree
    kr, rr = len(kshape_c), len(rshape_c)
    unit = xr[-1] == 1
    if not tree and kr and xk[-1] == 1 and not unit and kshape_c[-1] >= 16 and \
            n_out // COLS_BLOCK >= 8 and nred >= 8:
        ninner = kshape_c[-1]                    # a sum over leading dims: the columns kernel
        k = cg.build(state, _cols_source(op, in_c, at, out_c, logical, kr, rr), "ember_reduce_cols")
        cg.launch(state, k, (-(-ninner // COLS_BLOCK), n_out // ninner),
                  [cg.i64(nred), cg.i64(ninner), *cg.shape_args(kshape_c[:-1]), *cg.shape_args(rshape_c),
                   cg.buffer(out), cg.i64(out.storage_offset()), *map(cg.i64, ok), cg.buffer(x),
                   cg.i64(x.storage_offset()), *map(cg.i64, xk[:-1]), *map(cg.i64, xr)])
        return
    import pyopencl as cl

    def kernel(partial):                         # the one-stage (partial=False) or stage-1 kernel
        return cg.build(state, _source(op, in_c, at, out_c, logical, kr, rr, tree, partial, unit), "ember_reduce")

    def local(g):                                # the tree's __local accumulators, one per work item
        return [cl.LocalMemory(g * SIZEOF[at])] if tree else []

    if tree:                                     # a group per compute unit, each with >= MIN_PER_PART elements
        group = _tree_group(state, kernel(False), at, nred)
        groups = max(1, min(-(-int(state.device.max_compute_units) // n_out), nred // MIN_PER_PART))
    else:                                        # one work item per part
        group, groups = 1, max(1, min(TARGET_ITEMS // n_out, nred // MIN_PER_PART))
    if groups == 1:                              # one stage: each group writes its output element
        per = -(-nred // group)
        cg.launch(state, kernel(False), (group, n_out),
                  [cg.i64(nred), cg.i64(per), *cg.shape_args(kshape_c), *cg.shape_args(rshape_c), cg.buffer(out),
                   cg.i64(out.storage_offset()), *map(cg.i64, ok), cg.buffer(x), cg.i64(x.storage_offset()),
                   *map(cg.i64, xk), *map(cg.i64, xr), *local(group)],
                  local_size=(group, 1))
        return
    k1 = kernel(True)
    if tree:                                     # the stage-1 kernel's own limit may be lower
        group = min(group, _tree_group(state, k1, at, nred))
    # stage 1: (n_out, groups) partials in the accumulator type
    per = -(-nred // (groups * group))
    part = ember.empty((n_out * groups,), dtype=getattr(ember, PARTIAL_DTYPE[at]), device=out.device)
    cg.launch(state, k1, (groups * group, n_out), [cg.i64(nred), cg.i64(per), *cg.shape_args(kshape_c),
                                                   *cg.shape_args(rshape_c), cg.buffer(part), cg.i64(0),
                                                   cg.buffer(x), cg.i64(x.storage_offset()), *map(cg.i64, xk),
                                                   *map(cg.i64, xr), *local(group)], local_size=(group, 1))
    # stage 2: each row of partials into its output element (sum of partials is a sum; max of maxes)
    k2 = cg.build(state, _source(op, at, at, out_c, logical, kr, 1, tree, False, True), "ember_reduce")
    group2 = _tree_group(state, k2, at, groups) if tree else 1
    per2 = -(-groups // group2)
    cg.launch(state, k2, (group2, n_out), [cg.i64(groups), cg.i64(per2), *cg.shape_args(kshape_c),
                                           cg.i64(groups), cg.buffer(out), cg.i64(out.storage_offset()),
                                           *map(cg.i64, ok), cg.buffer(part), cg.i64(0),
                                           *map(cg.i64, _contiguous_strides(kshape_c, groups)), cg.i64(1),
                                           *local(group2)],
              local_size=(group2, 1))


def sum_(self, dim=None, keepdim=False, *, dtype=None, out):
    """opencl kernel of ``sum``: write the sum over ``dim`` (None / () = all) into ``out``, accumulated in out's
    dtype (int64 for bool / integers by default; integer overflow wraps; a sum into bool is a logical or).
    """
    reduce_into("sum", self, _axes(self.dim(), dim), keepdim, out)


def amax(self, dim=(), keepdim=False, *, out):
    """opencl kernel of ``amax``: write the maximum over ``dim`` (() = all) into ``out``; NaN propagates, bool is a
    logical or.
    """
    reduce_into("amax", self, _axes(self.dim(), dim), keepdim, out)


def register(lib, dtypes=None):
    """Register sum and amax for device 'opencl' on ``lib``, for the dtypes with an OpenCL C type (narrowed to
    ``dtypes`` when given: the device's dtypes, float16 only where it reports cl_khr_fp16).
    """
    dtypes = [d for d in (dtypes or ALL_DENSE) if d.name in cg.CTYPES]
    lib.impl("sum", sum_, device="opencl", dtypes=dtypes)
    lib.impl("amax", amax, device="opencl", dtypes=dtypes)
