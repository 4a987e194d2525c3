"""Symbolic dims for ``ember.onnx.export(..., dynamic_axes=)``: which recorded integers are sizes.

A traced graph records sizes as numbers: an LSTM's ``reshape(h, (2, 6))`` at batch 2, a transformer's
``reshape(x, (10, 8))`` for sequence 5 times batch 2, the zeros of an initial state ``[1, 2, 6]``.
ONNX needs those as functions of the input's dims. PyTorch's tracer records ``x.size(0)`` as a graph
node; ember's records the number, so the exporter finds the sizes by tracing again: once more per
dynamic dim with that dim one larger (and once per pair of dims with both larger), then compares the
graphs. An integer that changes is a polynomial in the dims' *deltas* from the example,
``f0 + sum b_s d_s + sum b_st d_s d_t`` (enough for products such as sequence x batch); a last trace
with every dim two larger checks the prediction. What the exporter then emits reads the dims at run
time (``Shape`` -> ``Gather``): see ``_export._Ctx.dyn_scalar``.

Refused with ``OnnxExporterError`` naming the dim: a graph whose ops change with the size, a float
that changes (``mean`` written as ``sum / x.shape[0]``), a constant tensor whose values (not only its
shape) change, a size that is no such polynomial.
"""
from __future__ import annotations

import itertools

__all__ = ["Dyn", "DynamicShapes", "analyse"]


class Dyn:
    """A recorded integer that is a polynomial in the dynamic dims' deltas: ``f0`` at the example's sizes,
    ``lin[s]`` per unit of symbol ``s``, ``quad[(s, t)]`` per unit of ``s`` times unit of ``t``."""

    __slots__ = ("f0", "lin", "quad")

    def __init__(self, f0, lin, quad):
        self.f0, self.lin, self.quad = int(f0), dict(lin), dict(quad)

    def at(self, delta):
        """The value when symbol ``s`` is ``delta[s]`` larger than in the example."""
        v = self.f0 + sum(b * delta.get(s, 0) for s, b in self.lin.items())
        return v + sum(b * delta.get(s, 0) * delta.get(t, 0) for (s, t), b in self.quad.items())

    def key(self):
        return (self.f0, tuple(sorted(self.lin.items())), tuple(sorted(self.quad.items())))

    def __repr__(self):
        terms = [str(self.f0)] + [f"{b}*d({s})" for s, b in self.lin.items()]
        terms += [f"{b}*d({s})*d({t})" for (s, t), b in self.quad.items()]
        return "Dyn(" + " + ".join(terms) + ")"


class DynamicShapes:
    """What ``analyse`` found: ``symbols`` (name -> [(input index, axis, example size)]), the base graph with
    ``Dyn`` in its constant arguments, ``value_dims`` (value id -> {axis: Dyn}) and ``const_shapes`` (constant value
    id -> shape with ``Dyn`` entries) for constants whose shape follows a dim (their values are one number)."""

    def __init__(self, symbols, graph, value_dims, const_shapes):
        self.symbols, self.graph, self.value_dims, self.const_shapes = symbols, graph, value_dims, const_shapes


def _error(msg):
    from ._export import OnnxExporterError
    return OnnxExporterError("ember.onnx.export: " + msg)


def _grow(x, axis, by):
    """``x`` made ``by`` larger along ``axis`` by repeating its first slices."""
    import ember
    n = x.shape[axis]
    if n == 0:
        raise _error(f"dynamic axis {axis} of an example input has size 0; give an example with a non-empty dim")
    reps = [x.narrow(axis, i % n, 1) for i in range(by)]
    return ember.cat([x] + reps, axis)


def _variant(args, symbols, delta):
    out = list(args)
    for s, places in symbols.items():
        for i, axis, _ in places:
            if delta.get(s, 0):
                out[i] = _grow(out[i], axis, delta[s])
    return tuple(out)


def _leaves(x, path=()):
    """(path, leaf) of a nested constant argument."""
    if isinstance(x, (tuple, list)):
        for i, e in enumerate(x):
            yield from _leaves(e, path + (i,))
    else:
        yield path, x


def _replace(x, path, new):
    if not path:
        return new
    seq = list(x)
    seq[path[0]] = _replace(seq[path[0]], path[1:], new)
    return tuple(seq) if isinstance(x, tuple) else seq


def _solve(samples, symbols):
    """The ``Dyn`` through ``samples`` ({delta key: value}), or None when it is the same number everywhere."""
    base = samples[()]
    lin = {s: samples[(s,)] - base for s in symbols}
    quad = {}
    for s, t in itertools.combinations(symbols, 2):
        q = samples[(s, t)] - samples[(s,)] - samples[(t,)] + base
        if q:
            quad[(s, t)] = q
    lin = {s: b for s, b in lin.items() if b}
    if not lin and not quad:
        return None
    return Dyn(base, lin, quad)


def _delta(key):
    return {s: 1 for s in key}


def analyse(trace, args, in_names, dynamic_axes, base_graph):
    """Trace ``trace(args')`` at grown sizes and annotate ``base_graph`` (traced at ``args``) with ``Dyn``.

    ``dynamic_axes`` is export's argument; only axes of inputs make traces (an output-only entry just names the
    output's dim). Returns a ``DynamicShapes``, or None when no input dim is dynamic."""
    import copy
    symbols = {}
    for i, name in enumerate(in_names):
        axes = (dynamic_axes or {}).get(name)
        if axes is None:
            continue
        items = axes.items() if isinstance(axes, dict) else [(a, f"{name}_dynamic_axes_{k + 1}")
                                                             for k, a in enumerate(axes)]
        for axis, sym in items:
            axis = int(axis)
            x = args[i]
            if not -x.dim() <= axis < max(x.dim(), 1):
                raise ValueError(f"ember.onnx.export: dynamic_axes gives axis {axis} of input '{name}', which has "
                                 f"{x.dim()} dims")
            axis %= max(x.dim(), 1)
            symbols.setdefault(str(sym), []).append((i, axis, x.shape[axis]))
    if not symbols:
        return None
    for s, places in symbols.items():
        if len({p[2] for p in places}) > 1:
            raise ValueError(f"ember.onnx.export: dynamic dim '{s}' has different sizes in the example inputs "
                             f"({', '.join(str(p[2]) for p in places)})")
    names = list(symbols)
    keys = [(s,) for s in names] + list(itertools.combinations(names, 2))
    graphs = {(): base_graph}
    for key in keys:
        graphs[key] = trace(_variant(args, symbols, _delta(key)))
    check_delta = {s: 2 for s in names}
    check = trace(_variant(args, symbols, check_delta))

    def sizes(key):
        d = _delta(key) if key != "check" else check_delta
        return ", ".join(f"{s}={symbols[s][0][2] + d.get(s, 0)}" for s in names if d.get(s, 0))

    def same_structure(g, key):
        a, b = base_graph, g
        if len(a.nodes) != len(b.nodes) or [n["op"] for n in a.nodes] != [n["op"] for n in b.nodes]:
            raise _error(f"the traced graph changes when the dynamic dim(s) change ({sizes(key)}): the model's "
                         f"control flow depends on the size, so it cannot be exported with dynamic_axes")
        if set(a.constants) != set(b.constants):
            raise _error(f"the traced graph's constants change when the dynamic dim(s) change ({sizes(key)})")

    everything = dict(graphs, check=check)
    for key, g in everything.items():
        if key != ():
            same_structure(g, key)

    def ints_at(get):
        """{key: value} of one recorded number across the traces, with a check that only ints change."""
        vals = {k: get(g) for k, g in everything.items()}
        b = vals[()]
        if all(v == b for v in vals.values()):
            return None, vals
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in vals.values()):
            return "float", vals
        return "int", vals

    def fit(vals, what):
        samples = {k: v for k, v in vals.items() if k != "check"}
        d = _solve(samples, names)
        if d is None or d.at(check_delta) != vals["check"]:
            raise _error(f"{what} changes with the dynamic dim(s) {', '.join(names)} in a way the exporter cannot "
                         f"write as sizes (values {sorted(set(vals.values()))})")
        return d

    graph = copy.copy(base_graph)
    graph.nodes = []
    for idx, n in enumerate(base_graph.nodes):
        n2 = dict(n, args=list(n["args"]), kwargs=dict(n["kwargs"]))
        slots = [("args", j) for j in range(len(n["args"]))] + [("kwargs", k) for k in n["kwargs"]]
        for where, j in slots:
            a = n[where][j]
            if "c" not in a:
                if a != everything["check"].nodes[idx][where][j]:
                    raise _error(f"op '{n['op']}' reads other values when the dynamic dim(s) change")
                continue
            value = a["c"]
            for path, leaf in list(_leaves(value)):
                def get(g, where=where, j=j, path=path):
                    v = g.nodes[idx][where][j]["c"]
                    for p in path:
                        v = v[p]
                    return v
                kind, vals = ints_at(get)
                if kind == "float":
                    raise _error(f"op '{n['op']}' has a number that changes with the dynamic dim(s) "
                                 f"({sorted(set(map(repr, vals.values())))}), which ONNX export cannot express as "
                                 f"a size; compute it from tensors or export with fixed shapes")
                if kind == "int":
                    value = _replace(value, path, fit(vals, f"an argument of op '{n['op']}'"))
            n2[where][j] = {"c": value}
        graph.nodes.append(n2)

    value_dims = {}
    for vid, (shape, _) in base_graph.values.items():
        dims = {}
        for ax in range(len(shape)):
            kind, vals = ints_at(lambda g, vid=vid, ax=ax: tuple(g.values[vid][0])[ax]
                                 if vid in g.values and len(g.values[vid][0]) == len(shape) else None)
            if kind is not None:
                if any(v is None for v in vals.values()):
                    raise _error(f"a value's rank changes with the dynamic dim(s) {', '.join(names)}")
                dims[ax] = fit(vals, f"dim {ax} of a value of shape {list(shape)}")
        if dims:
            value_dims[vid] = dims

    const_shapes = {}
    for vid, t in base_graph.constants.items():
        dims = value_dims.get(vid)
        if not dims:
            continue
        flat = [g.constants[vid].detach().cpu().reshape(-1) for g in everything.values()]
        if any(f.numel() and not bool((f == f[0]).all()) for f in flat) or \
                len({f[0].item() for f in flat if f.numel()}) > 1:
            raise _error(f"a constant tensor of shape {list(t.shape)} changes its values (not only its shape) with "
                         f"the dynamic dim(s) {', '.join(names)}; ONNX export can only make a tensor of one repeated "
                         f"value follow a dim")
        const_shapes[vid] = [dims.get(ax, size) for ax, size in enumerate(t.shape)]
    return DynamicShapes(symbols, graph, value_dims, const_shapes)
