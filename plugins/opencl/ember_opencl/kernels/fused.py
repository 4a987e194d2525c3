"""The fuser of ember-opencl: one generated OpenCL kernel per run of elementwise nodes that ember.compile captured.

``ember.compile`` hands the fuser a ``Subgraph`` (``ember.compiler._fusion``): consecutive elementwise nodes
on one opencl device, every tensor contiguous with one shape (or a 0-dim operand). ``fuse`` writes one kernel
in which each work item runs the nodes in order on one element, in registers::

    __kernel void fused(long total, __global float* x0, long x0_off, __global const float* x1, long x1_off,
                        float x2 /* a 0-dim cpu tensor, read on the host each call */, float k0 /* a constant */) {
        long i = get_global_id(0); if (i >= total) return;
        float v0 = x0[x0_off + i]; float v1 = x1[x1_off + i];      (the slots read before written)
        float v3 = (float)(v0 * k0);                                (one statement per node, as the eager
        v0 = (float)(fma(x2, v3, v1));                               kernel's expression: kernels/elementwise.py)
        x0[x0_off + i] = v0;  }                                     (only the slots that must be stored)

Each node computes exactly as its eager kernel does - the same C expression (``elementwise._expr``), the
same computation dtype (PyTorch's common dtype, ``ember.result_type``), the same conversions on load and
store (``copy.cast`` for copy_) and each result rounded to its tensor's dtype before the next node reads it -
so a fused replay gives the eager step's values bit for bit (the tests compare them exactly). Constants of
the capture and 0-dim cpu tensors are kernel arguments, so runs that differ only in shape or constants share
one kernel: kernels are cached by their source per device (``_codegen.build``), which the run's signature
and the default dtype determine.

With the fuser features (``FEATURES``, registered with ``register_fuser(..., features=FEATURES)``):

- broadcast operands (``Slot.strides``) are read at ``off + sum(coord_d(i) * stride_d)``, the run's shape and
  the strides being constants of the kernel (so such kernels are cached per shape);
- a run with reductions runs one work item per output element ``o``: a loop over the elements it reduces
  (element ``o * nred + r`` for reduced trailing dims, ``r * n_out + o`` for leading ones) runs the elementwise
  nodes and accumulates each reduction, then the nodes on the reduced shape run once. The loop keeps the eager
  kernel's order (``kernels/reduce.py``, CPU devices): rows in VW vector lanes (``reduce.VW_OF``) folded in
  order and then the tail, float row sums added into the accumulator as a row total, columns in totals of
  ``COLS_FLUSH`` rows where the eager columns kernel would run - so fused sums equal eager ones bit for bit.
  Declined (the core then offers the nodes without the reduction): non-CPU devices (a tree reduction),
  reductions the eager kernel splits into parts, reduced dims neither leading nor trailing, two reductions
  needing different vector widths.

Declined (the nodes replay one by one): float16 / complex / other dtypes, float64 on a device without
cl_khr_fp64, integer division (its zero check reads back), ops other than the primitive elementwise ones.
"""
from __future__ import annotations

import numpy as np

import ember
from ember.library import geometry

from .. import _codegen as cg
from . import elementwise as ew
from . import reduce as red
from .copy import cast
from ember.compiler._fusion import Constant

#: dtypes a fused kernel handles (float16 is left to the eager kernels: vload_half / vstore_half_rte)
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64")
#: what the fuser opts in to (``register_fuser("opencl", fuse, features=FEATURES)``)
FEATURES = frozenset({"broadcast", "reduction"})
#: ops with one opencl primitive kernel the fused code reproduces
OPS = (set(ew.BINARY) - ew.INT_DIV) | set(ew.UNARY) | {"where", "copy", "fill"}


class _Decline(Exception):
    pass


def _is_slot(x) -> bool:
    return not isinstance(x, Constant)


def _compute_dtype(sub, node):
    """The dtype node ``node`` computes in, as its eager kernel chooses it."""
    op = node.op
    if op in ("where", "copy", "fill"):
        return sub.slots[node.out].dtype
    if op in ew.UNARY:
        cd = sub.slots[node.inputs[0]].dtype if _is_slot(node.inputs[0]) else None
        if cd is None:
            raise _Decline
        if op not in ew.UNARY_KEEP and not cd.is_floating_point:
            cd = ember.get_default_dtype()
        return cd
    cd = ember.result_type(sub.operand(node.inputs[0]), sub.operand(node.inputs[1]))
    if op in ew.TO_FLOAT and not cd.is_floating_point:
        cd = ember.get_default_dtype()
    return cd


def _flat_index(k, slot, shape, var):
    """C expression of slot ``k``'s element for flat index ``var`` of ``shape``: contiguous, or through the
    slot's strides (a broadcast or strided operand: the shape and strides are constants of the kernel)."""
    if slot.strides is None:
        return f"x{k}_off + {var}"
    terms, inner = [], 1
    for d in range(len(shape) - 1, -1, -1):
        n, st = shape[d], slot.strides[d]
        if n != 1 and st != 0:
            q = var if inner == 1 else f"({var} / {inner}L)"
            c = q if d == 0 else f"({q} % {n}L)"
            terms.append(c if st == 1 else f"{c} * {st}L")
        inner *= n
    return " + ".join([f"x{k}_off"] + terms[::-1])


def _reduction_plan(sub, state):
    """How the reductions of ``sub`` walk their elements, reproducing the eager opencl ``sum`` / ``amax``
    (kernels/reduce.py) on CPU devices: ("rows" | "cols", n_out, nred, mode) with mode "lanes" (VW independent
    accumulators over whole vectors, folded in order, then the tail: the eager unit-stride walk), "row" (one
    running row total, then added to the accumulator), "cols" (totals of COLS_FLUSH elements, the eager columns
    kernel). Raises _Decline where the eager kernel's order cannot be reproduced: a tree reduction (non-CPU
    device), a two-stage reduction, reduced dims that are neither leading nor trailing."""
    if red._shape_kind(state) != "cpu":
        raise _Decline
    shape, dims = sub.shape, set(sub.reduce_dims)
    live = [d for d in range(len(shape)) if shape[d] != 1]          # (size-1 dims collapse away)
    flags = [d in dims for d in live]
    n_out = 1
    for d in range(len(shape)):
        if d not in dims:
            n_out *= shape[d]
    nred = sub.numel // n_out if n_out else 0
    k = flags.count(True)
    if n_out == 0 or nred == 0:
        raise _Decline
    if n_out == 1 or (k and all(flags[len(flags) - k:])):        # trailing reduced dims: unit stride
        walk, unit = "rows", True
    elif all(flags[:k]):                                          # leading reduced dims
        walk, unit = "cols", False
    else:
        raise _Decline
    cols = walk == "cols" and n_out >= 16 and n_out // red.COLS_BLOCK >= 8 and nred >= 8
    if not cols and max(1, min(red.TARGET_ITEMS // n_out, nred // red.MIN_PER_PART)) > 1:
        raise _Decline                                            # the eager kernel splits it in parts
    return walk, n_out, nred, unit, cols


def _source(sub, state=None):
    """(OpenCL C source, [per kernel scalar argument: ("const", value, dtype) | ("host", slot index)]).

    Without a reduction one work item runs the nodes on one element ``i``; with one (``sub.reduce_dims``) one
    work item per output element ``o`` runs the elementwise nodes on each element it reduces, in the eager
    reduction's order, then the nodes on the reduced shape."""
    params, prologue, extra = ["long total"], [], []
    per_elem_load, per_elem_store, out_load, out_store, final_store = [], [], [], [], []
    helpers = {}
    ctypes = []
    reducing = sub.reduced_shape is not None
    for k, s in enumerate(sub.slots):
        if s.dtype.name not in DTYPES:
            raise _Decline
        c = cg.ctype(s.dtype)
        ctypes.append(c)
        on_host = s.tensor.device.type == "cpu" and sub.device.type != "cpu"
        if on_host:                                   # a 0-dim cpu tensor: its value, read each call
            params.append(f"{c} x{k}")
            extra.append(("host", k))
            prologue.append(f"{c} v{k} = x{k};")
            continue
        params.append(f"__global {'' if s.written else 'const '}{c}* x{k}, long x{k}_off")
        if s.scalar:                                  # (a 0-dim result: every work item has it, one stores it)
            prologue.append(f"{c} v{k} = x{k}[x{k}_off];" if s.load else f"{c} v{k};")
            if s.store:
                final_store.append(f"if (i == 0) x{k}[x{k}_off] = v{k};")
            continue
        late = s.reduced
        index = _flat_index(k, s, sub.reduced_shape if late else sub.shape, "o" if late else "i")
        loads = out_load if late else per_elem_load
        stores = out_store if late else per_elem_store
        loads.append(f"{c} v{k} = x{k}[{index}];" if s.load else f"{c} v{k};")
        if s.store:
            stores.append(f"x{k}[{index}] = v{k};")
    n_const = 0

    def constant(value, dtype):
        nonlocal n_const
        name = f"k{n_const}"
        n_const += 1
        params.append(f"{cg.ctype(dtype)} {name}")
        extra.append(("const", value, dtype))
        return name

    body, reductions, late_body = [], [], []
    for node in sub.nodes:
        op = node.op
        out = sub.slots[node.out]
        oc = ctypes[node.out]
        if op in ("sum", "amax") and "dim" in node.scalars:
            reductions.append(node)
            continue
        if op not in OPS:
            raise _Decline
        target = late_body if reductions else body
        cd = _compute_dtype(sub, node)
        if cd.name not in DTYPES:
            raise _Decline
        ct = cg.ctype(cd)
        if op == "fill":
            target.append(f"v{node.out} = {constant(node.scalars['value'], out.dtype)};")
            continue
        if op == "copy":
            x = node.inputs[0]
            if not _is_slot(x):
                raise _Decline
            target.append(f"v{node.out} = {cast(f'v{x}', sub.slots[x].dtype, out.dtype)};")
            continue
        names = "cab" if op == "where" else "abc"
        lets = []
        for j, x in enumerate(node.inputs):
            v = names[j]
            cond = op == "where" and j == 0
            src = f"v{x}" if _is_slot(x) else constant(x.value, ember.bool if cond else cd)
            lets.append(f"int {v} = {src} != 0;" if cond else f"{ct} {v} = ({ct}){src};")
        alpha = node.scalars.get("alpha", 1)
        use_alpha = op == "add" and alpha != 1
        if use_alpha:
            lets.append(f"{ct} alpha = {constant(alpha, cd)};")
        expr = ew._expr(op, ct, cd is ember.bool, use_alpha)
        if op == "pow" and not cd.is_floating_point and cd is not ember.bool:
            helpers[ct] = ew._ipow(ct)
        elif op == "erfinv":
            helpers["erfinv" + ct] = ew._erfinv(ct)
        if out.dtype is ember.bool or cd is ember.bool:
            store = f"({oc})(({expr}) != 0)"
        else:
            store = f"({oc})({expr})"
        target.append("{ " + " ".join(lets) + f" v{node.out} = {store}; }}")
    head = "".join(helpers.values()) + "__kernel void fused(" + ",\n        ".join(params) + ") {\n    "
    if not reducing:
        src = (head + "long i = get_global_id(0);\n    if (i >= total) return;\n    " +
               "\n    ".join(prologue + per_elem_load + body + per_elem_store + final_store) + "\n}\n")
        return src, extra
    return _reduction_source(sub, state, head, prologue, per_elem_load, body, per_elem_store, reductions,
                             out_load, late_body, out_store, final_store, ctypes), extra


def _reduction_source(sub, state, head, prologue, elem_load, body, elem_store, reductions, out_load, late_body,
                      out_store, final_store, ctypes):
    """The kernel of a run with reductions: work item ``o`` per output element (see ``_reduction_plan``)."""
    walk, n_out, nred, unit, cols = _reduction_plan(sub, state)
    init, lane_step, seq_step, after_lanes, finish = [], [], [], [], []
    lanes_vw = None
    for r, node in enumerate(reductions):
        x = node.inputs[0]
        op, in_c, out_c = node.op, ctypes[x], ctypes[node.out]
        logical = (op == "sum" and sub.slots[node.out].dtype is ember.bool) or \
                  (op == "amax" and sub.slots[x].dtype is ember.bool)
        at = "uchar" if logical else red._acc_type(op, in_c, out_c)
        ident = red._identity(op, at, logical)
        comb = red._combine(op, at, logical).replace("acc", f"a{r}")
        v = red._convert(f"v{x}", in_c, at, logical)
        float_sum = op == "sum" and at in red.FLOAT_C and not logical
        init.append(f"{at} a{r} = {ident};")
        lanes = unit and not cols and red._vectorizable(in_c, at, logical)
        if lanes:
            vw = red.VW_OF.get(at, 8)
            if lanes_vw not in (None, vw):
                raise _Decline                # (two reductions with other vector widths: one loop cannot do both)
            lanes_vw = vw
            lane = f"l{r}[l_]"                  # (the eager kernel's component-wise combine, one lane at a time)
            if op == "sum":
                vcomb = f"({lane} + v)"
            elif at in red.FLOAT_C:
                vcomb = f"((v > {lane} || v != v) ? v : {lane})"
            else:
                vcomb = f"((v > {lane}) ? v : {lane})"
            init.append(f"{at} l{r}[{vw}]; for (int l_ = 0; l_ < {vw}; l_++) l{r}[l_] = {ident};")
            lane_step.append(f"{{ {at} v = {v}; l{r}[l_] = {vcomb}; }}")
            if float_sum:
                init.append(f"{at} row{r} = 0;")
                after_lanes.append(f"for (int l_ = 0; l_ < {vw}; l_++) row{r} += l{r}[l_];")
                seq_step.append(f"row{r} += {v};")
                finish.append(f"a{r} += row{r};")
            else:
                after_lanes.append(f"for (int l_ = 0; l_ < {vw}; l_++) {{ {at} v = l{r}[l_]; a{r} = {comb}; }}")
                seq_step.append(f"{{ {at} v = {v}; a{r} = {comb}; }}")
        elif float_sum and cols:
            init.append(f"{at} part{r} = 0; int cnt{r} = 0;")
            step = (f"part{r} += {v}; if (++cnt{r} == {red.COLS_FLUSH}) {{ a{r} += part{r}; part{r} = 0; "
                    f"cnt{r} = 0; }}")
            lane_step.append(step)
            seq_step.append(step)
            finish.append(f"a{r} += part{r};")
        elif float_sum:
            init.append(f"{at} row{r} = 0;")
            lane_step.append(f"row{r} += {v};")
            seq_step.append(f"row{r} += {v};")
            finish.append(f"a{r} += row{r};")
        else:
            step = f"{{ {at} v = {v}; a{r} = {comb}; }}"
            lane_step.append(step)
            seq_step.append(step)
        finish.append(f"v{node.out} = {red._store(at, out_c, logical, f'a{r}')};")
    index = f"o * {nred}L + r_" if walk == "rows" else f"r_ * {n_out}L + o"

    def element(steps):
        return ("{ const long i = " + index + ";\n        " +
                "\n        ".join(elem_load + body + steps + elem_store) + " }")
    # (one element after the other, as written: Intel's compiler otherwise vectorizes some of these loops with
    # the additions reassociated - a sum that differs from the eager kernel's in the last bits)
    seq = "\n    #pragma clang loop vectorize(disable) interleave(disable)\n    "
    if lanes_vw is not None:
        full = nred - nred % lanes_vw
        loops = (f"{seq}for (long r0_ = 0; r0_ < {full}L; r0_ += {lanes_vw}) {{ "
                 f"for (int l_ = 0; l_ < {lanes_vw}; l_++) "
                 f"{{ const long r_ = r0_ + l_;\n        {element(lane_step)} }} }}\n    " +
                 "".join(seq + a for a in after_lanes) +
                 f"{seq}for (long r_ = {full}L; r_ < {nred}L; r_++) {element(seq_step)}")
    else:
        loops = f"{seq}for (long r_ = 0; r_ < {nred}L; r_++) {element(seq_step)}"
    stores = [f.replace("i == 0", "o == 0") for f in final_store]
    return (head + "const long o = get_global_id(0);\n    if (o >= total) return;\n    " +
            "\n    ".join(prologue + out_load + init) + "\n    " + loops + "\n    " +
            "\n    ".join(finish + late_body + out_store + stores) + "\n}\n")


def fuse(sub):
    """ember-opencl's fuser (``registry.register_fuser("opencl", fuse)``): one kernel for the run ``sub``, as a
    callable ``fused(*tensors)`` (the slots' tensors in order), or None when the run has something the fused
    code does not reproduce (see the module doc)."""
    if sub.device.type != "opencl" or sub.numel == 0 or not sub.features <= FEATURES:
        return None
    state = cg.state_of(sub.slots[0].tensor if sub.slots[0].tensor.device.type == "opencl" else
                        next(s.tensor for s in sub.slots if s.tensor.device.type == "opencl"))
    try:
        source, extra = _source(sub, state)
    except (_Decline, KeyError, TypeError):
        return None
    if "double" in source and not state.fp64:
        return None
    kernel = cg.build(state, source, "fused")
    n = sub.numel
    if sub.reduced_shape is not None:           # one work item per output element
        n = 1
        for d in sub.reduced_shape:
            n *= d
    consts = [cg.scalar(e[1], e[2]) for e in extra if e[0] == "const"]
    total = cg.i64(n)
    on_device = [s.tensor.device.type == "opencl" for s in sub.slots]
    import pyopencl as cl
    enqueue, queue, grid = cl.enqueue_nd_range_kernel, state.queue, (n,)

    def fused(*tensors):                      # (on every replay: the few Python steps a launch needs)
        args = [total]
        for dev, t in zip(on_device, tensors):
            if dev:
                handle, _, _, offset, _ = geometry(t)
                args += (handle, np.int64(offset))
            else:
                args.append(cg.scalar(t.item(), t.dtype))
        args += consts
        kernel.set_args(*args)
        enqueue(queue, kernel, grid, None)
    fused.source = source
    return fused
