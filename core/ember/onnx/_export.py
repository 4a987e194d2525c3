"""ember.onnx.export: an ember.jit graph written as an ONNX model (docs/jit.md, "ONNX export").

Each node of the traced graph is translated by the function ``MAPPING`` holds for its op; an op with
no entry (or one needing a newer opset) raises ``UnsupportedOperatorError`` naming the op and the
opset. ONNX ops are built with ``onnx.helper``; the model passes ``onnx.checker.check_model``.
"""
from __future__ import annotations

import math

__all__ = ["MAPPING", "OnnxExporterError", "UnsupportedOperatorError", "export_graph", "table"]

#: lowest and highest opset the mappings are written for
MIN_OPSET, MAX_OPSET = 13, 20


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter (matches torch.onnx.OnnxExporterError)."""


class UnsupportedOperatorError(OnnxExporterError):
    """An ember op has no ONNX mapping at the requested opset (torch.onnx.errors.UnsupportedOperatorError's role)."""


#: ember op -> (translate(ctx, node, args, kwargs, outs), ONNX ops it emits, lowest opset)
MAPPING: dict = {}


def _maps(names, onnx_ops, since=MIN_OPSET):
    def deco(fn):
        for n in names.split():
            MAPPING[n] = (fn, onnx_ops, since)
        return fn
    return deco


def table():
    """``[(ember op, ONNX ops, lowest opset)]`` sorted by op: the table docs/jit.md lists."""
    return sorted((name, onnx_ops, since) for name, (_, onnx_ops, since) in MAPPING.items())


def table_markdown() -> str:
    """``table()`` as the markdown table in docs/jit.md ."""
    rows = ["| ember op | ONNX ops | lowest opset |", "|---|---|---|"]
    rows += [f"| `{name}` | {onnx_ops} | {since} |" for name, onnx_ops, since in table()]
    return "\n".join(rows)


class _Ctx:
    def __init__(self, graph, opset):
        import onnx
        self.onnx, self.h, self.graph, self.opset = onnx, onnx.helper, graph, opset
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, vid):
        return f"v{vid}"

    def tmp(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def node(self, op_type, inputs, outputs=None, **attrs):
        outputs = outputs or [self.tmp(op_type.lower())]
        self.nodes.append(self.h.make_node(op_type, inputs, outputs, name=self.tmp("n_" + op_type), **attrs))
        return outputs[0]

    def const(self, value, dtype, hint="c"):
        """An initializer holding ``value`` (a Python number or nested list) as ``dtype`` (an ember dtype name)."""
        import numpy as np
        from onnx import numpy_helper
        name = self.tmp(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=_NP[dtype]), name))
        return name

    def ints(self, values):
        return self.const(list(values), "int64", "ints")

    def meta(self, vid):
        return self.graph.values[vid]

    def rank(self, vid):
        return len(self.graph.values[vid][0])


_NP = {"float32": "float32", "float64": "float64", "float16": "float16", "int64": "int64", "int32": "int32",
       "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool"}


def _elem(dt):
    from onnx import TensorProto
    return {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
            "bfloat16": TensorProto.BFLOAT16, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
            "int16": TensorProto.INT16, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
            "bool": TensorProto.BOOL}[dt]


def _operand(ctx, a, like_vid):
    """A tensor argument's name, or a scalar made a constant of ``like_vid``'s dtype."""
    if isinstance(a, str):
        return a
    return ctx.const(a, ctx.meta(like_vid)[1], "scalar")


# ---------------------------------------------------------------- elementwise
_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "neg": "Neg",
          "sqrt": "Sqrt", "abs": "Abs", "erf": "Erf", "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil",
          "reciprocal": "Reciprocal", "sign": "Sign"}
_BINARY = {"mul": "Mul", "true_divide": "Div", "pow": "Pow", "maximum": "Max", "minimum": "Min"}


def _unary(onnx_op):
    def f(ctx, n, args, kw, outs):
        ctx.node(onnx_op, [args[0]], [outs[0]])
    return f


for _e, _o in _UNARY.items():
    _maps(_e, _o)(_unary(_o))


def _binary(onnx_op):
    def f(ctx, n, args, kw, outs):
        v = n["outputs"][0]
        ctx.node(onnx_op, [_operand(ctx, args[0], v), _operand(ctx, args[1], v)], [outs[0]])
    return f


for _e, _o in _BINARY.items():
    _maps(_e, _o)(_binary(_o))


@_maps("add", "Add (Mul for alpha != 1)")
@_maps("sub", "Sub (Mul for alpha != 1)")
def _add_sub(ctx, n, args, kw, outs):
    v = n["outputs"][0]
    a, b = _operand(ctx, args[0], v), _operand(ctx, args[1], v)
    alpha = kw.get("alpha", 1)
    if alpha != 1:
        b = ctx.node("Mul", [b, ctx.const(alpha, ctx.meta(v)[1], "alpha")])
    ctx.node("Add" if n["op"] == "add" else "Sub", [a, b], [outs[0]])


@_maps("rsqrt", "Sqrt, Reciprocal")
def _rsqrt(ctx, n, args, kw, outs):
    ctx.node("Reciprocal", [ctx.node("Sqrt", [args[0]])], [outs[0]])


@_maps("where", "Where")
def _where(ctx, n, args, kw, outs):
    v = n["outputs"][0]
    ctx.node("Where", [args[0], _operand(ctx, args[1], v), _operand(ctx, args[2], v)], [outs[0]])


@_maps("masked_fill", "Where")
def _masked_fill(ctx, n, args, kw, outs):
    v = n["outputs"][0]
    ctx.node("Where", [args[1], _operand(ctx, args[2], v), args[0]], [outs[0]])


@_maps("clamp", "Max, Min")
def _clamp(ctx, n, args, kw, outs):
    x = args[0]
    lo, hi = (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else None)
    if lo is not None:
        x = ctx.node("Max", [x, _operand(ctx, lo, n["outputs"][0])], [outs[0]] if hi is None else None)
    if hi is not None:
        x = ctx.node("Min", [x, _operand(ctx, hi, n["outputs"][0])], [outs[0]])
    if lo is None and hi is None:
        ctx.node("Identity", [x], [outs[0]])


# ---------------------------------------------------------------- linear algebra, nn
@_maps("linear", "Gemm (2-d input) / MatMul, Add")
def _linear(ctx, n, args, kw, outs):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else None
    if ctx.rank(n["args"][0]["v"]) == 2:
        ctx.node("Gemm", [x, w] + ([b] if b is not None else []), [outs[0]], transB=1)
        return
    y = ctx.node("MatMul", [x, ctx.node("Transpose", [w], perm=[1, 0])], None if b is not None else [outs[0]])
    if b is not None:
        ctx.node("Add", [y, b], [outs[0]])


@_maps("matmul mm bmm", "MatMul")
def _matmul(ctx, n, args, kw, outs):
    ctx.node("MatMul", [args[0], args[1]], [outs[0]])


@_maps("addmm", "Gemm")
def _addmm(ctx, n, args, kw, outs):
    ctx.node("Gemm", [args[1], args[2], args[0]], [outs[0]], alpha=float(kw.get("alpha", 1)),
             beta=float(kw.get("beta", 1)))


@_maps("conv2d", "Conv")
def _conv2d(ctx, n, args, kw, outs):
    x, w, b = args[0], args[1], args[2] if len(args) > 2 else None
    stride, padding, dilation, groups = (list(args[3:7]) + [(1, 1), (0, 0), (1, 1), 1][len(args[3:7]):])
    if isinstance(padding, str):
        raise UnsupportedOperatorError(f"ember.onnx.export: conv2d with padding='{padding}' is not mapped to ONNX "
                                       f"(opset {ctx.opset}); give the padding as numbers")
    ctx.node("Conv", [x, w] + ([b] if b is not None else []), [outs[0]], strides=list(stride),
             pads=list(padding) * 2, dilations=list(dilation), group=int(groups))


@_maps("max_pool2d_with_indices", "MaxPool")
def _max_pool2d(ctx, n, args, kw, outs):
    kernel = list(args[1])
    stride = list(args[2]) if len(args) > 2 and args[2] else kernel
    padding = list(args[3]) if len(args) > 3 else [0, 0]
    dilation = list(args[4]) if len(args) > 4 else [1, 1]
    ceil = int(bool(args[5])) if len(args) > 5 else 0
    if outs[1] is not None:
        raise UnsupportedOperatorError(f"ember.onnx.export: the indices of max_pool2d_with_indices are not mapped to "
                                       f"ONNX (opset {ctx.opset}): ONNX's MaxPool numbers them differently")
    ctx.node("MaxPool", [args[0]], [outs[0]], kernel_shape=kernel, strides=stride, pads=padding * 2,
             dilations=dilation, ceil_mode=ceil)


@_maps("softmax", "Softmax (Cast for dtype=)")
@_maps("log_softmax", "LogSoftmax (Cast for dtype=)")
def _softmax(ctx, n, args, kw, outs):
    x, dim = args[0], args[1]
    dtype = args[2] if len(args) > 2 else None
    if dtype is not None:
        x = ctx.node("Cast", [x], to=_elem(str(dtype).replace("ember.", "")))
    ctx.node("Softmax" if n["op"] == "softmax" else "LogSoftmax", [x], [outs[0]], axis=int(dim))


@_maps("embedding", "Gather")
def _embedding(ctx, n, args, kw, outs):
    ctx.node("Gather", [args[0], args[1]], [outs[0]], axis=0)


@_maps("sum", "ReduceSum (Cast for dtype=)")
@_maps("mean", "ReduceMean (Cast for dtype=)")
def _reduce(ctx, n, args, kw, outs):
    x = args[0]
    dim = args[1] if len(args) > 1 else None
    keep = int(bool(args[2])) if len(args) > 2 else 0
    dtype = kw.get("dtype")
    if dtype is not None:
        x = ctx.node("Cast", [x], to=_elem(str(dtype).replace("ember.", "")))
    op = "ReduceSum" if n["op"] == "sum" else "ReduceMean"
    if dim is None or len(dim) == 0:
        dim = list(range(ctx.rank(n["args"][0]["v"])))
    if op == "ReduceSum" or ctx.opset >= 18:
        ctx.node(op, [x, ctx.ints(dim)], [outs[0]], keepdims=keep)
    else:
        ctx.node(op, [x], [outs[0]], axes=list(dim), keepdims=keep)


@_maps("var", "ReduceMean, Sub, Mul, ReduceSum, Div")
def _var(ctx, n, args, kw, outs):
    src = n["args"][0]["v"]
    shape, dt = ctx.meta(src)
    dim = args[1] if len(args) > 1 and args[1] is not None else None
    dim = list(range(len(shape))) if dim is None or len(dim) == 0 else [d % len(shape) for d in dim]
    correction = kw.get("correction")
    correction = 1 if correction is None else correction
    keep = int(bool(kw.get("keepdim", False)))
    count = math.prod(shape[d] for d in dim) - correction
    axes = ctx.ints(dim)
    if ctx.opset >= 18:
        mean = ctx.node("ReduceMean", [args[0], axes], keepdims=1)
    else:
        mean = ctx.node("ReduceMean", [args[0]], axes=dim, keepdims=1)
    d = ctx.node("Sub", [args[0], mean])
    ss = ctx.node("ReduceSum", [ctx.node("Mul", [d, d]), axes], keepdims=keep)
    ctx.node("Div", [ss, ctx.const(max(count, 0), dt, "count")], [outs[0]])


@_maps("slice", "Slice")
def _slice(ctx, n, args, kw, outs):
    dim, start, end = args[1], args[2], args[3]
    ctx.node("Slice", [args[0], ctx.ints([start]), ctx.ints([end]), ctx.ints([dim])], [outs[0]])


@_maps("cat", "Concat")
def _cat(ctx, n, args, kw, outs):
    ctx.node("Concat", list(args[0]), [outs[0]], axis=int(args[1]) if len(args) > 1 else 0)


# ---------------------------------------------------------------- views, copies
@_maps("reshape", "Reshape")
def _reshape(ctx, n, args, kw, outs):
    ctx.node("Reshape", [args[0], ctx.ints(args[1])], [outs[0]])


@_maps("permute", "Transpose")
def _permute(ctx, n, args, kw, outs):
    ctx.node("Transpose", [args[0]], [outs[0]], perm=list(args[1]))


@_maps("as_strided", "Slice (a strided window of a contiguous tensor)")
def _as_strided(ctx, n, args, kw, outs):
    src = n["args"][0]["v"]
    shape = ctx.meta(src)[0]
    size, stride, offset = args[1], args[2], args[3]
    base = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    if len(size) != len(shape) or any(s != b for s, b, k in zip(stride, base, size) if k != 1):
        raise UnsupportedOperatorError(f"ember.onnx.export: a strided view (as_strided, shape {list(size)}, strides "
                                       f"{list(stride)}) other than a slice is not mapped to ONNX (opset {ctx.opset})")
    starts = []
    for b in base:
        starts.append(offset // b)
        offset %= b
    ends = [s + k for s, k in zip(starts, size)]
    ctx.node("Slice", [args[0], ctx.ints(starts), ctx.ints(ends), ctx.ints(range(len(shape)))], [outs[0]])


@_maps("copy_", "Cast / Identity")
def _copy(ctx, n, args, kw, outs):
    src_vid = n["args"][1]["v"]
    out_shape, out_dt = ctx.meta(n["outputs"][0])
    if tuple(ctx.meta(src_vid)[0]) != tuple(out_shape):
        raise UnsupportedOperatorError(f"ember.onnx.export: copy_ that broadcasts is not mapped to ONNX "
                                       f"(opset {ctx.opset})")
    if ctx.meta(src_vid)[1] != out_dt:
        ctx.node("Cast", [args[1]], [outs[0]], to=_elem(out_dt))
    else:
        ctx.node("Identity", [args[1]], [outs[0]])


# ---------------------------------------------------------------- the model
def export_graph(graph, state, *, input_names, output_names, dynamic_axes, opset_version, export_params,
                 do_constant_folding, producer="ember"):
    """The ``onnx.ModelProto`` of a ``JitGraph`` whose state is ``state`` (name -> tensor)."""
    import onnx
    from onnx import helper, numpy_helper
    from ..jit._graph import _unflatten_names
    if not MIN_OPSET <= opset_version <= MAX_OPSET:
        raise ValueError(f"ember.onnx.export: opset_version {opset_version} is not supported (ember maps its ops "
                         f"for opsets {MIN_OPSET} to {MAX_OPSET})")
    if do_constant_folding and export_params:
        graph = _fold(graph, state)
    ctx = _Ctx(graph, opset_version)
    in_names = list(input_names or [])
    if len(in_names) > len(graph.inputs):
        raise ValueError(f"ember.onnx.export: {len(in_names)} input_names for a graph of {len(graph.inputs)} inputs")
    in_names += [f"input_{i}" if len(graph.inputs) > 1 else "input" for i in range(len(in_names), len(graph.inputs))]
    out_vids = _unflatten_names(graph.outputs)
    o_names = list(output_names or [])
    if len(o_names) > len(out_vids):
        raise ValueError(f"ember.onnx.export: {len(o_names)} output_names for a graph of {len(out_vids)} outputs")
    o_names += [f"output_{i}" if len(out_vids) > 1 else "output" for i in range(len(o_names), len(out_vids))]
    names = {}
    for vid, nm in zip(graph.inputs, in_names):
        names[vid] = nm
    for sname, vid in graph.state.items():
        names[vid] = sname
    for vid in graph.constants:
        names[vid] = f"const_{vid}"
    dyn = _dynamic(dynamic_axes, set(in_names) | set(o_names))

    def vinfo(name, vid):
        shape, dt = graph.values[vid]
        dims = [dyn.get(name, {}).get(i, d) for i, d in enumerate(shape)]
        return helper.make_tensor_value_info(name, _elem(dt), dims)

    inputs = [vinfo(nm, vid) for vid, nm in zip(graph.inputs, in_names)]
    used = set(out_vids)
    for n in graph.nodes:
        for a in list(n["args"]) + list(n["kwargs"].values()):
            used.update([a["v"]] if "v" in a else a.get("vs", []))
    inits = []
    for sname, vid in graph.state.items():
        if vid not in used:
            continue                          # a buffer the forward never reads (num_batches_tracked)
        if not export_params:
            inputs.append(vinfo(sname, vid))
        else:
            inits.append(numpy_helper.from_array(state[sname].detach().cpu().numpy(), sname))
    for vid, t in graph.constants.items():
        inits.append(numpy_helper.from_array(t.detach().cpu().numpy(), f"const_{vid}"))
    for n in graph.nodes:
        entry = MAPPING.get(n["op"])
        if entry is None or entry[2] > opset_version:
            why = "has no ONNX mapping" if entry is None else f"needs opset {entry[2]} or newer"
            raise UnsupportedOperatorError(f"ember.onnx.export: ember op '{n['op']}' {why} (opset_version="
                                           f"{opset_version}). Supported ops: {', '.join(sorted(MAPPING))}.")

        def arg(a):
            if "v" in a:
                return names.get(a["v"], f"v{a['v']}")
            if "vs" in a:
                return [names.get(v, f"v{v}") for v in a["vs"]]
            if "fresh" in a:
                return None
            return a["c"]
        args = [arg(a) for a in n["args"]]
        kwargs = {k: arg(a) for k, a in n["kwargs"].items()}
        outs = [None if v is None or (v not in used and v not in out_vids) else names.setdefault(v, f"v{v}")
                for v in n["outputs"]]
        entry[0](ctx, n, args, kwargs, outs)
    outputs = []
    for vid, nm in zip(out_vids, o_names):
        src = names.get(vid, f"v{vid}")
        ctx.node("Identity", [src], [nm])
        outputs.append(vinfo(nm, vid))
    g = helper.make_graph(ctx.nodes, "ember_graph", inputs, outputs, initializer=inits + ctx.inits)
    model = helper.make_model(g, producer_name=producer, opset_imports=[helper.make_opsetid("", opset_version)])
    model.ir_version = min(model.ir_version, 8 if opset_version <= 18 else 9)
    onnx.checker.check_model(model)
    return model


def _dynamic(dynamic_axes, known):
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if name not in known:
            raise ValueError(f"ember.onnx.export: dynamic_axes names '{name}', which is neither an input nor an "
                             f"output name")
        if isinstance(axes, dict):
            out[name] = {int(k): str(v) for k, v in axes.items()}
        else:
            out[name] = {int(k): f"{name}_dynamic_axes_{i + 1}" for i, k in enumerate(axes)}
    return out


def _fold(graph, state):
    """A copy of ``graph`` where nodes that read only state and constants are computed now (their results become
    constants): ``do_constant_folding``."""
    import copy
    import ember
    from .._dispatch import ops
    from ..jit._graph import VIEW_OPS, _unflatten_names
    g = copy.copy(graph)
    g.constants = dict(graph.constants)
    env = dict(g.constants)
    env.update({vid: state[n] for n, vid in graph.state.items()})
    nodes = []
    for n in graph.nodes:
        tensor_args = [a for a in list(n["args"]) + list(n["kwargs"].values()) if "v" in a or "vs" in a]
        ins = [v for a in tensor_args for v in ([a["v"]] if "v" in a else a["vs"])]
        if not ins or not all(v in env for v in ins) or n["op"] in ("copy_",) or \
                any(v is None for v in n["outputs"]) or len(n["outputs"]) != 1:
            nodes.append(n)
            continue
        args = [env[a["v"]] if "v" in a else [env[v] for v in a["vs"]] if "vs" in a else a["c"] for a in n["args"]]
        kwargs = {k: env[a["v"]] if "v" in a else a["c"] for k, a in n["kwargs"].items()}
        with ember.no_grad():
            r = VIEW_OPS[n["op"]][0](*args) if n["op"] in VIEW_OPS else ops[n["op"]].entry(*args, **kwargs)
        env[n["outputs"][0]] = g.constants[n["outputs"][0]] = r.contiguous()
    g.nodes = nodes
    live = set()
    for n in nodes:
        for a in list(n["args"]) + list(n["kwargs"].values()):
            live.update([a["v"]] if "v" in a else a.get("vs", []))
    live.update(_unflatten_names(g.outputs))
    g.constants = {k: v for k, v in g.constants.items() if k in live}
    g.state = {k: v for k, v in graph.state.items() if v in live}
    return g
