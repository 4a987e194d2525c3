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

Declined (the nodes replay one by one): float16 / complex / other dtypes, float64 on a device without
cl_khr_fp64, integer division (its zero check reads back), ops other than the primitive elementwise ones.
"""
from __future__ import annotations

import ember

from .. import _codegen as cg
from . import elementwise as ew
from .copy import cast
from ember.compiler._fusion import Constant

#: dtypes a fused kernel handles (float16 is left to the eager kernels: vload_half / vstore_half_rte)
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64")
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


def _source(sub):
    """(OpenCL C source, [per kernel scalar argument: ("const", value, dtype) | ("host", slot index)])."""
    params, prologue, body, epilogue, extra = ["long total"], [], [], [], []
    helpers = {}
    ctypes = []
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
        index = f"x{k}_off" if s.scalar else f"x{k}_off + i"
        if s.load:
            prologue.append(f"{c} v{k} = x{k}[{index}];")
        else:
            prologue.append(f"{c} v{k};")
        if s.store:                                   # (a 0-dim result: every work item has it, one stores it)
            epilogue.append(f"if (i == 0) x{k}[{index}] = v{k};" if s.scalar else f"x{k}[{index}] = v{k};")
    n_const = 0

    def constant(value, dtype):
        nonlocal n_const
        name = f"k{n_const}"
        n_const += 1
        params.append(f"{cg.ctype(dtype)} {name}")
        extra.append(("const", value, dtype))
        return name

    for node in sub.nodes:
        op = node.op
        if op not in OPS:
            raise _Decline
        out = sub.slots[node.out]
        oc = ctypes[node.out]
        cd = _compute_dtype(sub, node)
        if cd.name not in DTYPES:
            raise _Decline
        ct = cg.ctype(cd)
        if op == "fill":
            body.append(f"v{node.out} = {constant(node.scalars['value'], out.dtype)};")
            continue
        if op == "copy":
            x = node.inputs[0]
            if not _is_slot(x):
                raise _Decline
            body.append(f"v{node.out} = {cast(f'v{x}', sub.slots[x].dtype, out.dtype)};")
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
        body.append("{ " + " ".join(lets) + f" v{node.out} = {store}; }}")
    src = ("".join(helpers.values()) + "__kernel void fused(" + ",\n        ".join(params) + ") {\n"
           "    long i = get_global_id(0);\n    if (i >= total) return;\n    " +
           "\n    ".join(prologue + body + epilogue) + "\n}\n")
    return src, extra


def fuse(sub):
    """ember-opencl's fuser (``registry.register_fuser("opencl", fuse)``): one kernel for the run ``sub``, as a
    callable ``fused(*tensors)`` (the slots' tensors in order), or None when the run has something the fused
    code does not reproduce (see the module doc)."""
    if sub.device.type != "opencl" or sub.numel == 0:
        return None
    try:
        source, extra = _source(sub)
    except (_Decline, KeyError, TypeError):
        return None
    state = cg.state_of(sub.slots[0].tensor if sub.slots[0].tensor.device.type == "opencl" else
                        next(s.tensor for s in sub.slots if s.tensor.device.type == "opencl"))
    if "double" in source and not state.fp64:
        return None
    kernel = cg.build(state, source, "fused")
    n = sub.numel
    consts = [cg.scalar(e[1], e[2]) for e in extra if e[0] == "const"]
    total = cg.i64(n)

    def fused(*tensors):
        args = [total]
        for k, t in enumerate(tensors):
            if t._device.type == "opencl":
                args.append(cg.buffer(t))
                args.append(cg.i64(t.storage_offset()))
            else:
                args.append(cg.scalar(t.item(), t.dtype))
        args.extend(consts)
        cg.launch(state, kernel, n, args)
    fused.source = source
    return fused
