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
    def __init__(self, graph, opset, dyn=None, in_names=()):
        import onnx
        self.onnx, self.h, self.graph, self.opset = onnx, onnx.helper, graph, opset
        self.nodes, self.inits, self.count = [], [], 0
        self.dyn, self.in_names, self.cache = dyn, list(in_names), {}
        self.qp = {}          # value id of a quantized tensor -> (scale name, zero point name, axis or None)

    # ------------------------------------------------------------ sizes that follow dynamic dims
    def _delta(self, sym):
        """An int64 scalar: how much larger symbol ``sym`` is than in the example (read with Shape at run time)."""
        if ("delta", sym) not in self.cache:
            i, axis, size = self.dyn.symbols[sym][0]
            dim = self.node("Gather", [self.node("Shape", [self.in_names[i]]), self.const(axis, "int64", "axis")],
                            axis=0)
            self.cache[("delta", sym)] = self.node("Sub", [dim, self.const(size, "int64", "size")])
        return self.cache[("delta", sym)]

    def dyn_scalar(self, d):
        """An int64 scalar holding the ``Dyn`` ``d`` (``_dynamic``) at run time."""
        if d.key() not in self.cache:
            acc = self.const(d.f0, "int64", "f0")
            terms = [(b, [s]) for s, b in d.lin.items()] + [(b, list(st)) for st, b in d.quad.items()]
            for b, syms in terms:
                t = self._delta(syms[0])
                for s in syms[1:]:
                    t = self.node("Mul", [t, self._delta(s)])
                acc = self.node("Add", [acc, self.node("Mul", [t, self.const(b, "int64", "coef")])])
            self.cache[d.key()] = acc
        return self.cache[d.key()]

    def shape_tensor(self, seq):
        """A 1-d int64 tensor of ``seq`` (ints and ``Dyn``): an initializer when no entry is dynamic."""
        from ._dynamic import Dyn
        seq = list(seq)
        if not any(isinstance(v, Dyn) for v in seq):
            return self.ints(seq)
        one = self.ints([1])
        parts = [self.node("Reshape", [self.dyn_scalar(v), one]) if isinstance(v, Dyn) else self.ints([v])
                 for v in seq]
        return self.node("Concat", parts, axis=0)

    def dims(self, vid):
        """``{axis: Dyn}`` of the dims of value ``vid`` that follow a dynamic dim."""
        return self.dyn.value_dims.get(vid, {}) if self.dyn is not None else {}

    def name(self, vid):
        """The graph name of value ``vid``."""
        return f"v{vid}"

    def tmp(self, hint):
        """A fresh graph name starting with ``hint``."""
        self.count += 1
        return f"{hint}_{self.count}"

    def node(self, op_type, inputs, outputs=None, **attrs):
        """Append an ONNX node ``op_type`` (attributes ``attrs``) reading the names ``inputs``, writing ``outputs``
        (a fresh name when None); returns its first output's name."""
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
        """An int64 1-d initializer holding ``values``; returns its name."""
        return self.const(list(values), "int64", "ints")

    def meta(self, vid):
        """(shape, dtype) the trace recorded for value ``vid``."""
        return self.graph.values[vid]

    def rank(self, vid):
        """The number of dims of value ``vid``."""
        return len(self.graph.values[vid][0])


_NP = {"float32": "float32", "float64": "float64", "float16": "float16", "int64": "int64", "int32": "int32",
       "int16": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool", "quint8": "uint8", "qint8": "int8",
       "qint32": "int32"}


def _elem(dt):
    from onnx import TensorProto
    return {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
            "bfloat16": TensorProto.BFLOAT16, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
            "int16": TensorProto.INT16, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
            "bool": TensorProto.BOOL, "quint8": TensorProto.UINT8, "qint8": TensorProto.INT8,
            "qint32": TensorProto.INT32}[dt]


def _operand(ctx, a, like_vid):
    """A tensor argument's name, or a scalar made a constant of ``like_vid``'s dtype."""
    from ._dynamic import Dyn
    if isinstance(a, str):
        return a
    if isinstance(a, Dyn):
        return ctx.node("Cast", [ctx.dyn_scalar(a)], to=_elem(ctx.meta(like_vid)[1]))
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


def _keep_qparams(ctx, n):
    """A view or a max pool of a quantized tensor keeps its scale and zero point."""
    src = n["args"][0].get("v")
    if src in ctx.qp:
        ctx.qp[n["outputs"][0]] = ctx.qp[src]


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
    _keep_qparams(ctx, n)
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


@_maps("native_layer_norm", "LayerNormalization (opset 17 on; before: ReduceMean, Sub, Mul, Add, Sqrt, Reciprocal)")
def _layer_norm(ctx, n, args, kw, outs):
    x, ns, w, b, eps = args[:5]
    dt = ctx.meta(n["args"][0]["v"])[1]
    k = len(ns)
    if ctx.opset >= 17:
        if w is None:                   # ONNX's Scale is required
            import numpy as np
            w = ctx.const(np.ones(tuple(ns)), dt, "ones")
        names = [outs[0] or ctx.tmp("ln"), outs[1] or "", outs[2] or ""]
        while names[-1] == "":
            names.pop()
        ctx.node("LayerNormalization", [x, w] + ([b] if b is not None else []), names, axis=-k, epsilon=float(eps))
        return
    axes = list(range(-k, 0))
    mean = ctx.node("ReduceMean", [x], [outs[1]] if outs[1] else None, axes=axes, keepdims=1)
    d = ctx.node("Sub", [x, mean])
    var = ctx.node("ReduceMean", [ctx.node("Mul", [d, d])], axes=axes, keepdims=1)
    rstd = ctx.node("Reciprocal", [ctx.node("Sqrt", [ctx.node("Add", [var, ctx.const(eps, dt, "eps")])])],
                    [outs[2]] if outs[2] else None)
    y = ctx.node("Mul", [d, rstd], [outs[0]] if outs[0] and w is None and b is None else None)
    if w is not None:
        y = ctx.node("Mul", [y, w], [outs[0]] if outs[0] and b is None else None)
    if b is not None:
        ctx.node("Add", [y, b], [outs[0]] if outs[0] else None)


@_maps("_safe_softmax", "Softmax, ReduceMax, IsInf, Where (Cast for dtype=)")
def _safe_softmax(ctx, n, args, kw, outs):
    x, dim = args[0], int(args[1])
    dtype = args[2] if len(args) > 2 else None
    dt = ctx.meta(n["args"][0]["v"])[1] if dtype is None else str(dtype).replace("ember.", "")
    if dtype is not None:
        x = ctx.node("Cast", [x], to=_elem(dt))
    # ONNX's Softmax gives NaN for a row of all -inf: those rows (their maximum -inf) are replaced by zeros
    if ctx.opset >= 18:
        top = ctx.node("ReduceMax", [x, ctx.ints([dim])], keepdims=1)
    else:
        top = ctx.node("ReduceMax", [x], axes=[dim], keepdims=1)
    dead = ctx.node("IsInf", [top], detect_positive=0)
    ctx.node("Where", [dead, ctx.const(0, dt, "zero"), ctx.node("Softmax", [x], axis=dim)], [outs[0]])


def _lstm_cell_nodes(ctx, gates, cx, H, outs, need_hy=False, need_ws=False):
    """The nodes of one LSTM step from its summed gate pre-activations: (hy, cy, workspace), each written to its
    name in ``outs`` where that is not None. hy and the workspace are made only where an output name or
    ``need_hy`` / ``need_ws`` asks for them (None otherwise): no dead nodes in the graph."""
    i, f, g, o = (ctx.node(act, [ctx.node("Slice", [gates, ctx.ints([k * H]), ctx.ints([(k + 1) * H]), ctx.ints([1])])])
                  for k, act in enumerate(("Sigmoid", "Sigmoid", "Tanh", "Sigmoid")))
    cy = ctx.node("Add", [ctx.node("Mul", [f, cx]), ctx.node("Mul", [i, g])], outs[1:2] if outs[1] else None)
    hy = ctx.node("Mul", [o, ctx.node("Tanh", [cy])], [outs[0]] if outs[0] else None) \
        if outs[0] is not None or need_hy else None
    ws = ctx.node("Concat", [i, f, g, o], [outs[2]] if outs[2] else None, axis=1) \
        if outs[2] is not None or need_ws else None
    return hy, cy, ws


@_maps("_thnn_fused_lstm_cell", "Add, Slice, Sigmoid, Tanh, Mul (Concat for the workspace)")
def _fused_lstm_cell(ctx, n, args, kw, outs):
    gates = ctx.node("Add", [args[0], args[1]])
    for b in args[3:5]:
        if b is not None:
            gates = ctx.node("Add", [gates, b])
    _lstm_cell_nodes(ctx, gates, args[2], ctx.meta(n["args"][0]["v"])[0][1] // 4, outs)


@_maps("_lstm_layer", "Transpose, MatMul, Gather, Add, Slice, Sigmoid, Tanh, Mul, Unsqueeze, Concat (the steps "
                      "unrolled)")
def _lstm_layer(ctx, n, args, kw, outs):
    xg, hx, cx, w = args[:4]
    if 0 in ctx.dims(n["args"][0]["v"]):
        raise OnnxExporterError("ember.onnx.export: _lstm_layer (an LSTM layer) is exported with its time steps "
                                "unrolled, so the sequence length cannot be a dynamic axis; export with a fixed "
                                "sequence length")
    reverse = bool(args[4] if len(args) > 4 else kw.get("reverse", False))
    steps, _, g = ctx.meta(n["args"][0]["v"])[0]
    w_t = ctx.node("Transpose", [w], perm=[1, 0])
    h, c = hx, cx
    per_step = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        ig = ctx.node("Gather", [xg, ctx.const(t, "int64", "step")], axis=0)
        h, c, ws = _lstm_cell_nodes(ctx, ctx.node("Add", [ig, ctx.node("MatMul", [h, w_t])]), c, g // 4,
                                    [None, None, None], need_hy=True, need_ws=outs[4] is not None)
        per_step[t] = (h, c, ws)
    for k, out in ((0, outs[0]), (1, outs[3]), (2, outs[4])):
        if out is not None and steps:
            ctx.node("Concat", [ctx.node("Unsqueeze", [s[k], ctx.ints([0])]) for s in per_step], [out], axis=0)
    for src, out in ((h, outs[1]), (c, outs[2])):
        if out is not None:
            ctx.node("Identity", [src], [out])


@_maps("_thnn_fused_gru_cell", "Add, Slice, Sigmoid, Tanh, Mul, Sub (Concat for the workspace)")
def _fused_gru_cell(ctx, n, args, kw, outs):
    ig, hg, hx = args[0], args[1], args[2]
    ig = ctx.node("Add", [ig, args[3]]) if len(args) > 3 and args[3] is not None else ig
    hg = ctx.node("Add", [hg, args[4]]) if len(args) > 4 and args[4] is not None else hg
    H = ctx.meta(n["args"][0]["v"])[0][1] // 3
    part = lambda x, k: ctx.node("Slice", [x, ctx.ints([k * H]), ctx.ints([(k + 1) * H]), ctx.ints([1])])  # noqa
    r, z = (ctx.node("Sigmoid", [ctx.node("Add", [part(ig, k), part(hg, k)])]) for k in (0, 1))
    hn = part(hg, 2)
    nn_ = ctx.node("Tanh", [ctx.node("Add", [part(ig, 2), ctx.node("Mul", [r, hn])])])
    if outs[0] is not None:
        ctx.node("Add", [nn_, ctx.node("Mul", [z, ctx.node("Sub", [hx, nn_])])], [outs[0]])
    if outs[1] is not None:
        ctx.node("Concat", [r, z, nn_, hx, hn], [outs[1]], axis=1)


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
    dyn = ctx.dims(src)
    axes = ctx.ints(dim)
    if ctx.opset >= 18:
        mean = ctx.node("ReduceMean", [args[0], axes], keepdims=1)
    else:
        mean = ctx.node("ReduceMean", [args[0]], axes=dim, keepdims=1)
    d = ctx.node("Sub", [args[0], mean])
    ss = ctx.node("ReduceSum", [ctx.node("Mul", [d, d]), axes], keepdims=keep)
    if any(d in dyn for d in dim):          # a reduced dim follows a dynamic dim: count it at run time
        n_el = ctx.node("ReduceProd", [ctx.shape_tensor([dyn.get(d, shape[d]) for d in dim])], keepdims=0)
        n_el = ctx.node("Max", [ctx.node("Sub", [n_el, ctx.const(correction, "int64", "corr")]),
                                ctx.const(0, "int64", "zero")])
        ctx.node("Div", [ss, ctx.node("Cast", [n_el], to=_elem(dt))], [outs[0]])
        return
    ctx.node("Div", [ss, ctx.const(max(count, 0), dt, "count")], [outs[0]])


@_maps("slice", "Slice")
def _slice(ctx, n, args, kw, outs):
    dim, start, end = args[1], args[2], args[3]
    _keep_qparams(ctx, n)
    ctx.node("Slice", [args[0], ctx.shape_tensor([start]), ctx.shape_tensor([end]), ctx.ints([dim])], [outs[0]])


@_maps("cat", "Concat")
def _cat(ctx, n, args, kw, outs):
    ctx.node("Concat", list(args[0]), [outs[0]], axis=int(args[1]) if len(args) > 1 else 0)


# ---------------------------------------------------------------- quantized (QDQ)
# A quantized tensor is exported as its integers (uint8 for quint8, int8 for qint8) with its scale and zero point
# kept beside it (``ctx.qp``); a quantized op is written in ONNX's QDQ form, DequantizeLinear -> the float op ->
# QuantizeLinear, which ONNX Runtime runs as integer kernels (QLinearConv, QGemm) where it has them. Results agree
# with ember's integer kernels within one quantization step (float rounding differs at ties).
def _qparams(ctx, n, k=0):
    vid = n["args"][k]["v"]
    if vid not in ctx.qp:
        raise UnsupportedOperatorError(f"ember.onnx.export: op '{n['op']}' reads a quantized tensor whose scale and "
                                       f"zero point the exporter does not know (opset {ctx.opset})")
    return ctx.qp[vid]


def _dequant(ctx, n, name, k=0):
    scale, zp, axis = _qparams(ctx, n, k)
    return ctx.node("DequantizeLinear", [name, scale, zp], **({} if axis is None else {"axis": axis}))


def _quant_out(ctx, n, y, scale, zero_point, dtype, out):
    """QuantizeLinear of float ``y`` to ``out`` with per-tensor (scale, zero_point) of quantized dtype ``dtype``."""
    zp_name = ctx.const(int(zero_point), dtype, "zero_point")
    s_name = ctx.const(float(scale), "float32", "scale")
    ctx.qp[n["outputs"][0]] = (s_name, zp_name, None)
    ctx.node("QuantizeLinear", [y, s_name, zp_name], [out])


@_maps("quantize_per_tensor", "QuantizeLinear")
def _quantize_per_tensor(ctx, n, args, kw, outs):
    dtype = str(args[3]).replace("ember.", "")
    if dtype not in ("quint8", "qint8"):
        raise UnsupportedOperatorError(f"ember.onnx.export: quantize_per_tensor to {dtype} is not mapped to ONNX "
                                       f"(opset {ctx.opset}); quint8 and qint8 are")
    _quant_out(ctx, n, args[0], args[1], args[2], dtype, outs[0])


@_maps("dequantize", "DequantizeLinear")
def _dequantize(ctx, n, args, kw, outs):
    scale, zp, axis = _qparams(ctx, n)
    ctx.node("DequantizeLinear", [args[0], scale, zp], [outs[0]], **({} if axis is None else {"axis": axis}))


@_maps("quantized_linear quantized_linear_relu", "DequantizeLinear, Gemm / MatMul, Relu, QuantizeLinear")
def _quantized_linear(ctx, n, args, kw, outs):
    x, w = _dequant(ctx, n, args[0]), _dequant(ctx, n, args[1], 1)
    y = _float_linear(ctx, n, x, w, args[2])
    if n["op"].endswith("_relu"):
        y = ctx.node("Relu", [y])
    _quant_out(ctx, n, y, args[3], args[4], ctx.meta(n["outputs"][0])[1], outs[0])


def _float_linear(ctx, n, x, w, b):
    if ctx.rank(n["args"][0]["v"]) == 2:
        return ctx.node("Gemm", [x, w] + ([b] if b is not None else []), transB=1)
    y = ctx.node("MatMul", [x, ctx.node("Transpose", [w], perm=[1, 0])])
    return y if b is None else ctx.node("Add", [y, b])


@_maps("quantized_conv2d quantized_conv2d_relu", "DequantizeLinear, Conv, Relu, QuantizeLinear")
def _quantized_conv2d(ctx, n, args, kw, outs):
    x, w, b = _dequant(ctx, n, args[0]), _dequant(ctx, n, args[1], 1), args[2]
    stride, padding, dilation, groups = args[3:7]
    y = ctx.node("Conv", [x, w] + ([b] if b is not None else []), strides=list(stride), pads=list(padding) * 2,
                 dilations=list(dilation), group=int(groups))
    if n["op"].endswith("_relu"):
        y = ctx.node("Relu", [y])
    _quant_out(ctx, n, y, args[7], args[8], ctx.meta(n["outputs"][0])[1], outs[0])


@_maps("quantized_linear_dynamic", "ReduceMin, ReduceMax, QuantizeLinear, DequantizeLinear, Gemm / MatMul")
def _quantized_linear_dynamic(ctx, n, args, kw, outs):
    """The input quantized per call to quint8 over [0, 127] (reduce_range, PyTorch's x86 default) or [0, 255]
    with the range of its values and 0 (fbgemm's ChooseQuantizationParams), as ember's kernel does. ONNX's
    DynamicQuantizeLinear has no reduced range, so the qparams are computed with plain ops."""
    x = args[0]
    reduce_range = args[3] if len(args) > 3 else kw.get("reduce_range", True)
    qmax = 127 if reduce_range else 255
    f64 = _elem("float64")
    zero = ctx.const(0.0, "float64", "zero")
    lo = ctx.node("Min", [ctx.node("Cast", [ctx.node("ReduceMin", [x], keepdims=0)], to=f64), zero])
    hi = ctx.node("Max", [ctx.node("Cast", [ctx.node("ReduceMax", [x], keepdims=0)], to=f64), zero])
    # the scale in float64 rounded to float32 and the zero point in float64, as choose_qparams computes them
    scale = ctx.node("Div", [ctx.node("Sub", [hi, lo]), ctx.const(float(qmax), "float64", "qmax")])
    scale = ctx.node("Cast", [scale], to=_elem("float32"))
    scale = ctx.node("Where", [ctx.node("Equal", [scale, ctx.const(0.0, "float32", "zero")]),
                               ctx.const(0.1, "float32", "fallback"), scale])
    zp = ctx.node("Div", [ctx.node("Neg", [lo]), ctx.node("Cast", [scale], to=f64)])
    zp = ctx.node("Clip", [ctx.node("Round", [zp]), zero, ctx.const(float(qmax), "float64", "qmax")])
    zp = ctx.node("Cast", [zp], to=_elem("quint8"))
    xq = ctx.node("DequantizeLinear", [ctx.node("QuantizeLinear", [x, scale, zp]), scale, zp])
    y = _float_linear(ctx, n, xq, _dequant(ctx, n, args[1], 1), args[2])
    ctx.node("Identity", [y], [outs[0]])


# ---------------------------------------------------------------- views, copies
@_maps("reshape", "Reshape")
def _reshape(ctx, n, args, kw, outs):
    _keep_qparams(ctx, n)
    ctx.node("Reshape", [args[0], ctx.shape_tensor(args[1])], [outs[0]])


@_maps("permute", "Transpose")
def _permute(ctx, n, args, kw, outs):
    _keep_qparams(ctx, n)
    ctx.node("Transpose", [args[0]], [outs[0]], perm=list(args[1]))


@_maps("as_strided", "Slice (a strided window of a contiguous tensor)")
def _as_strided(ctx, n, args, kw, outs):
    src = n["args"][0]["v"]
    shape = ctx.meta(src)[0]
    size, stride, offset = args[1], args[2], args[3]
    if ctx.dims(src):
        raise UnsupportedOperatorError(f"ember.onnx.export: a strided view (as_strided) of a tensor whose dims follow "
                                       f"a dynamic axis is not mapped to ONNX (opset {ctx.opset})")
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
def input_names_for(n_inputs, input_names):
    """The ONNX names of a graph's ``n_inputs`` inputs: ``input_names`` then ``input`` / ``input_<i>``."""
    names = list(input_names or [])
    if len(names) > n_inputs:
        raise ValueError(f"ember.onnx.export: {len(names)} input_names for a graph of {n_inputs} inputs")
    return names + [f"input_{i}" if n_inputs > 1 else "input" for i in range(len(names), n_inputs)]


#: ops whose mapping takes sizes that follow a dynamic dim (``_dynamic.Dyn``) among their constant arguments
_DYN_OK = {"reshape", "slice", "add", "sub", "mul", "true_divide", "pow", "maximum", "minimum", "where",
           "masked_fill", "clamp"}


def _has_dyn(n):
    from ._dynamic import Dyn, _leaves
    return any(isinstance(leaf, Dyn) for a in list(n["args"]) + list(n["kwargs"].values()) if "c" in a
               for _, leaf in _leaves(a["c"]))


def export_graph(graph, state, *, input_names, output_names, dynamic_axes, opset_version, export_params,
                 do_constant_folding, producer="ember", dyn=None):
    """The ``onnx.ModelProto`` of a ``JitGraph`` whose state is ``state`` (name -> tensor); ``dyn`` is what
    ``_dynamic.analyse`` found for ``dynamic_axes`` (sizes that follow the dynamic dims), or None."""
    import onnx
    from onnx import helper, numpy_helper
    from ..jit._graph import _unflatten_names
    if not MIN_OPSET <= opset_version <= MAX_OPSET:
        raise ValueError(f"ember.onnx.export: opset_version {opset_version} is not supported (ember maps its ops "
                         f"for opsets {MIN_OPSET} to {MAX_OPSET})")
    if dyn is not None:
        graph = dyn.graph
    if do_constant_folding and export_params:
        graph = _fold(graph, state, set(dyn.const_shapes) if dyn is not None else set())
    in_names = input_names_for(len(graph.inputs), input_names)
    ctx = _Ctx(graph, opset_version, dyn, in_names)
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
    dyn_names = _dynamic(dynamic_axes, set(in_names) | set(o_names))

    def vinfo(name, vid):
        shape, dt = graph.values[vid]
        follow = ctx.dims(vid)
        dims = [dyn_names.get(name, {}).get(i, _dim_name(ctx, follow[i]) if i in follow else d)
                for i, d in enumerate(shape)]
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
        t = state.get(sname)
        if t is not None and t.is_quantized:
            if not export_params:
                raise OnnxExporterError(f"ember.onnx.export: export_params=False with the quantized parameter "
                                        f"'{sname}' is not supported (its scale and zero point would be lost)")
            inits.append(numpy_helper.from_array(t.int_repr().cpu().numpy(), sname))
            ctx.qp[vid] = _state_qparams(ctx, sname, t)
        elif not export_params:
            inputs.append(vinfo(sname, vid))
        else:
            inits.append(numpy_helper.from_array(state[sname].detach().cpu().numpy(), sname))
    for vid, t in graph.constants.items():
        if dyn is not None and vid in dyn.const_shapes:      # one repeated value in a shape that follows a dim
            fill = t.detach().cpu().reshape(-1)[:1].numpy().reshape(())
            ctx.node("Expand", [ctx.const(fill, _dtype_of(t), "fill"), ctx.shape_tensor(dyn.const_shapes[vid])],
                     [f"const_{vid}"])
        else:
            inits.append(numpy_helper.from_array(t.detach().cpu().numpy(), f"const_{vid}"))
    from ._symbolic import custom_symbolic, run_symbolic, Value
    domains = set()
    for n in graph.nodes:
        custom = custom_symbolic(n["op"], opset_version)
        entry = MAPPING.get(n["op"])
        if custom is None and (entry is None or entry[2] > opset_version):
            why = "has no ONNX mapping" if entry is None else f"needs opset {entry[2]} or newer"
            raise UnsupportedOperatorError(f"ember.onnx.export: ember op '{n['op']}' {why} (opset_version="
                                           f"{opset_version}). Supported ops: {', '.join(sorted(MAPPING))}; "
                                           f"ember.onnx.register_custom_op_symbolic adds one.")
        if custom is None and n["op"] not in _DYN_OK and _has_dyn(n):
            raise UnsupportedOperatorError(f"ember.onnx.export: ember op '{n['op']}' takes a size that follows a "
                                           f"dynamic axis, which its ONNX mapping cannot take (opset {opset_version}); "
                                           f"export with fixed shapes")

        def arg(a, wrap=lambda name: name):
            if "v" in a:
                return wrap(names.get(a["v"], f"v{a['v']}"))
            if "vs" in a:
                return [wrap(names.get(v, f"v{v}")) for v in a["vs"]]
            if "fresh" in a:
                return None
            return a["c"]
        outs = [None if v is None or (v not in used and v not in out_vids) else names.setdefault(v, f"v{v}")
                for v in n["outputs"]]
        if custom is not None:
            run_symbolic(custom, ctx, n, [arg(a, Value) for a in n["args"]],
                         {k: arg(a, Value) for k, a in n["kwargs"].items()}, outs, domains)
            continue
        args = [arg(a) for a in n["args"]]
        kwargs = {k: arg(a) for k, a in n["kwargs"].items()}
        entry[0](ctx, n, args, kwargs, outs)
    outputs = []
    for vid, nm in zip(out_vids, o_names):
        src = names.get(vid, f"v{vid}")
        ctx.node("Identity", [src], [nm])
        outputs.append(vinfo(nm, vid))
    g = helper.make_graph(ctx.nodes, "ember_graph", inputs, outputs, initializer=inits + ctx.inits)
    model = helper.make_model(g, producer_name=producer, opset_imports=[helper.make_opsetid("", opset_version)] +
                              [helper.make_opsetid(d, 1) for d in sorted(domains)])
    model.ir_version = min(model.ir_version, 8 if opset_version <= 18 else 9)
    onnx.checker.check_model(model)
    return model


def _state_qparams(ctx, sname, t):
    """Initializers for quantized tensor ``t``'s scale and zero point: (scale, zero point, axis or None)."""
    import ember
    dt = str(t.dtype).replace("ember.", "")
    if t.qscheme() in (ember.per_tensor_affine, ember.per_tensor_symmetric):
        return ctx.const(float(t.q_scale()), "float32", sname + "_scale"), \
            ctx.const(int(t.q_zero_point()), dt, sname + "_zero_point"), None
    return ctx.const(t.q_per_channel_scales().tolist(), "float32", sname + "_scale"), \
        ctx.const(t.q_per_channel_zero_points().tolist(), dt, sname + "_zero_point"), int(t.q_per_channel_axis())


def _dim_name(ctx, d):
    """A symbolic dim's name for an output: the symbol when the dim is exactly it, else None (unknown)."""
    if not d.quad and len(d.lin) == 1:
        (sym, b), = d.lin.items()
        if b == 1 and ctx.dyn.symbols[sym][0][2] == d.f0:
            return sym
    return None


def _dtype_of(t):
    return str(t.dtype).replace("ember.", "")


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


def _fold(graph, state, keep=frozenset()):
    """A copy of ``graph`` where nodes that read only state and constants are computed now (their results become
    constants): ``do_constant_folding``. Constants in ``keep`` (their shape follows a dynamic dim) and nodes with
    sizes that follow one are not folded."""
    import copy
    import ember
    from .._dispatch import ops
    from ..jit._graph import VIEW_OPS, _unflatten_names
    g = copy.copy(graph)
    g.constants = dict(graph.constants)
    env = {k: v for k, v in g.constants.items() if k not in keep}
    env.update({vid: state[n] for n, vid in graph.state.items()})
    nodes = []
    for n in graph.nodes:
        tensor_args = [a for a in list(n["args"]) + list(n["kwargs"].values()) if "v" in a or "vs" in a]
        ins = [v for a in tensor_args for v in ([a["v"]] if "v" in a else a["vs"])]
        if not ins or not all(v in env for v in ins) or n["op"] in ("copy_",) or _has_dyn(n) or \
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
