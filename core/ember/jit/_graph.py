"""The op-level graph of ``ember.jit`` (docs/jit.md): values, nodes, execution, JSON.

A graph is built from ``ember.compile``'s capture (``_trace``). Values are numbered; a value is a
graph input, a piece of module state (parameter or buffer, by name), a constant tensor, or a node's
output. A node names an op of the dispatcher's registry (``ember._dispatch.ops``) or one of the few
view ops in ``VIEW_OPS`` (views do not pass the dispatcher, so the tracer derives them from strides).
Arguments are ``{"v": id}`` (a tensor value), ``{"vs": [ids]}`` (a tensor list) or ``{"c": json}``
(a constant); ``copy_`` into a fresh tensor has ``{"fresh": dtype}`` as its destination.

Running a graph calls each op's public entry point by name, so autograd records as in eager code.
"""
from __future__ import annotations

import json
import math

__all__ = ["FORMAT", "VERSION", "VIEW_OPS", "JitGraph", "encode_const", "decode_const"]

FORMAT = "ember.jit.graph"
VERSION = 1


def _reshape(x, shape):
    return x.reshape(tuple(shape))


def _permute(x, dims):
    return x.permute(tuple(dims))


def _slice(x, dim, start, end):
    return x.narrow(dim, start, end - start)


def _as_strided(x, size, stride, offset):
    x = x.contiguous()
    return x.as_strided(tuple(size), tuple(stride), x.storage_offset() + offset)


#: view ops the tracer emits: name -> (run(x, *constants), number of constant arguments)
VIEW_OPS = {"reshape": (_reshape, 1), "permute": (_permute, 1), "slice": (_slice, 3), "as_strided": (_as_strided, 3)}


# ---------------------------------------------------------------- constants
def encode_const(x, where):
    """A scalar argument as JSON; RuntimeError for anything a graph file cannot hold."""
    import ember
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else {"float": repr(x)}
    if isinstance(x, (tuple, list)):
        return {"tuple" if isinstance(x, tuple) else "list": [encode_const(v, where) for v in x]}
    if isinstance(x, ember.dtype):
        return {"dtype": str(x).replace("ember.", "")}
    if isinstance(x, ember.device):
        return {"device": str(x)}
    if isinstance(x, ember.memory_format):
        return {"memory_format": str(x).replace("ember.", "")}
    if isinstance(x, ember.Generator):
        if x is ember.default_generator:
            return {"generator": "default"}
    raise RuntimeError(f"ember.jit: {where} has an argument of type {type(x).__name__} ({x!r}), which a saved graph "
                       f"cannot hold")


def decode_const(j, where):
    """The inverse of ``encode_const``; RuntimeError naming ``where`` for anything else."""
    import ember
    if j is None or isinstance(j, (bool, str, int, float)):
        return j
    if isinstance(j, dict) and len(j) == 1:
        (k, v), = j.items()
        if k == "float" and v in ("inf", "-inf", "nan"):
            return float(v)
        if k in ("tuple", "list") and isinstance(v, list):
            r = [decode_const(e, where) for e in v]
            return tuple(r) if k == "tuple" else r
        if k == "dtype" and isinstance(getattr(ember, str(v), None), ember.dtype):
            return getattr(ember, v)
        if k == "device" and isinstance(v, str):
            return ember.device(v)
        if k == "memory_format" and isinstance(getattr(ember, str(v), None), ember.memory_format):
            return getattr(ember, v)
        if k == "generator" and v == "default":
            return ember.default_generator
    raise RuntimeError(f"ember.jit.load: {where} has a constant the graph format does not know: {j!r}")


def _dtype_name(dt):
    return str(dt).replace("ember.", "")


# ---------------------------------------------------------------- graph
class JitGraph:
    """An op-level graph: ``inputs`` (value ids), ``state`` (name -> value id), ``constants``
    (value id -> tensor), ``nodes`` ([{"op", "args", "kwargs", "outputs", "inplace"}]), ``outputs``
    (a nested structure of value ids), ``values`` (value id -> (shape, dtype name)) and ``updates``
    ([(state name, value id)]: buffers the traced code wrote in place, written back after a run)."""

    def __init__(self):
        self.inputs, self.state, self.constants, self.nodes = [], {}, {}, []
        self.outputs, self.values, self.updates = None, {}, []
        self.input_names = []

    # ------------------------------------------------------------ running
    def run(self, inputs, state):
        """Run the graph on ``inputs`` (tensors, in order) with ``state`` (name -> tensor)."""
        import ember
        from .. import _dispatch
        if len(inputs) != len(self.inputs):
            raise RuntimeError(f"ember.jit: the traced graph takes {len(self.inputs)} tensor input(s), got {len(inputs)}")
        env = dict(self.constants)
        for vid, x in zip(self.inputs, inputs):
            if not isinstance(x, ember.Tensor):
                raise TypeError(f"ember.jit: traced graphs take tensors, got {type(x).__name__}")
            env[vid] = x
        for name, vid in self.state.items():
            if name not in state:
                raise RuntimeError(f"ember.jit: the module has no parameter or buffer '{name}' the graph reads")
            env[vid] = state[name]
        for n in self.nodes:
            args = [self._arg(a, env) for a in n["args"]]
            kwargs = {k: self._arg(a, env) for k, a in n["kwargs"].items()}
            name = n["op"]
            if name in VIEW_OPS:
                r = VIEW_OPS[name][0](*args)
            else:
                if name == "copy_" and isinstance(n["args"][0], dict) and "fresh" in n["args"][0]:
                    src = args[1]
                    shape = self.values[n["outputs"][0]][0]
                    args[0] = ember.empty(_run_shape(shape, src), dtype=args[0], device=src.device)
                r = _dispatch.ops[name].entry(*args, **kwargs)
            outs = n["outputs"]
            flat = [r] if isinstance(r, ember.Tensor) else [t for t in r if isinstance(t, ember.Tensor)]
            for vid, t in zip(outs, flat):
                if vid is None:
                    continue
                want = self.values[vid][1]
                if n["inplace"] and _dtype_name(t.dtype) != want:
                    t = t.to(getattr(ember, want))     # an in-place op keeps its destination's dtype
                env[vid] = t
        with ember.no_grad():
            for name, vid in self.updates:
                state[name].copy_(env[vid])
        return _unflatten(self.outputs, env)

    @staticmethod
    def _arg(a, env):
        if "v" in a:
            return env[a["v"]]
        if "vs" in a:
            return [env[v] for v in a["vs"]]
        if "fresh" in a:
            import ember
            return getattr(ember, a["fresh"])
        return a["c"]

    # ------------------------------------------------------------ printing
    def _shape_str(self, vid):
        shape, dt = self.values[vid]
        return f"%{vid} : {dt}[{', '.join(map(str, shape))}]"

    def __str__(self):
        lines = ["graph(" + ", ".join([f"{self._shape_str(v)} (input {n})" for v, n in zip(self.inputs, self.input_names)]
                              + [f"{self._shape_str(v)} ({n})" for n, v in self.state.items()]) + "):"]
        for n in self.nodes:
            outs = ", ".join(self._shape_str(v) for v in n["outputs"] if v is not None)
            args = []
            for a in n["args"]:
                if "v" in a:
                    args.append(self._shape_str(a["v"]))
                elif "vs" in a:
                    args.append("[" + ", ".join(f"%{v}" for v in a["vs"]) + "]")
                elif "fresh" in a:
                    args.append(f"<new {a['fresh']}>")
                else:
                    args.append(repr(a["c"]))
            args += [f"{k}={repr(a['c']) if 'c' in a else self._shape_str(a['v'])}" for k, a in n["kwargs"].items()]
            lines.append(f"  {outs} = {n['op']}({', '.join(args)})")
        lines.append(f"  return {_fmt_struct(self.outputs)}")
        return "\n".join(lines)

    def code(self):
        """Python-like text of the graph (what ``ScriptModule.code`` shows)."""
        names = {v: f"x{i}" for i, v in enumerate(self.inputs)}
        names.update({v: f"self.{n}" for n, v in self.state.items()})
        names.update({v: f"CONSTANTS.c{v}" for v in self.constants})

        def nm(v):
            return names.get(v, f"_{v}")

        def arg(a):
            if "v" in a:
                return nm(a["v"])
            if "vs" in a:
                return "[" + ", ".join(nm(v) for v in a["vs"]) + "]"
            if "fresh" in a:
                return f"ember.empty(..., dtype=ember.{a['fresh']})"
            return repr(a["c"])
        lines = [f"def forward(self, {', '.join(nm(v) for v in self.inputs)}):"]
        for n in self.nodes:
            outs = ", ".join(nm(v) if v is not None else "_" for v in n["outputs"])
            call = ", ".join([arg(a) for a in n["args"]] + [f"{k}={arg(a)}" for k, a in n["kwargs"].items()])
            lines.append(f"    {outs} = ember.{n['op']}({call})")
        lines.append(f"    return {_fmt_struct(self.outputs, nm)}")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ JSON
    def to_json(self):
        from .. import _dispatch
        nodes = []
        for n in self.nodes:
            j = {"op": n["op"], "args": [_enc_arg(a, n["op"]) for a in n["args"]],
                 "kwargs": {k: _enc_arg(a, n["op"]) for k, a in n["kwargs"].items()},
                 "outputs": n["outputs"], "inplace": n["inplace"]}
            if n["op"] not in VIEW_OPS:
                op = _dispatch.ops[n["op"]]
                j["schema"] = op.schema.text
                if op.qualname is not None:          # defined by a Library: who must be there at load time
                    j["defined_by"] = {"op": op.qualname, "plugin": op.plugin}
            nodes.append(j)
        return {"format": FORMAT, "version": VERSION, "inputs": self.inputs, "input_names": self.input_names,
                "state": self.state, "constants": sorted(self.constants), "nodes": nodes, "outputs": self.outputs,
                "values": {str(k): [list(s), d] for k, (s, d) in self.values.items()}, "updates": self.updates}

    @classmethod
    def from_json(cls, j, constants):
        """Rebuild and validate: RuntimeError for a wrong format or version, an op outside the registry, a schema
        that differs from this ember's, or a malformed node."""
        from .. import _dispatch
        if not isinstance(j, dict) or j.get("format") != FORMAT:
            raise RuntimeError("ember.jit.load: the archive's graph is not an ember.jit graph")
        if j.get("version") != VERSION:
            raise RuntimeError(f"ember.jit.load: graph format version {j.get('version')!r} is not supported by this "
                               f"ember (it reads version {VERSION})")
        g = cls()
        try:
            g.values = {int(k): (tuple(int(d) for d in s), str(dt)) for k, (s, dt) in j["values"].items()}
            g.inputs = [int(v) for v in j["inputs"]]
            g.input_names = [str(n) for n in j["input_names"]]
            g.state = {str(k): int(v) for k, v in j["state"].items()}
            g.updates = [(str(n), int(v)) for n, v in j["updates"]]
            g.outputs = j["outputs"]
            known = set(g.inputs) | set(g.state.values())
            if any(isinstance(n, dict) and n.get("op") not in _dispatch.ops and n.get("op") not in VIEW_OPS
                   for n in j["nodes"]):
                from .. import _registry
                _registry.ensure_loaded()        # an op of a plugin not loaded yet (discovery is lazy)
            for vid in j["constants"]:
                if str(vid) not in constants:
                    raise RuntimeError(f"ember.jit.load: constant %{vid} is missing from the archive")
                g.constants[int(vid)] = constants[str(vid)]
                known.add(int(vid))
            for i, n in enumerate(j["nodes"]):
                op = n["op"]
                where = f"node {i} ({op})"
                if op in VIEW_OPS:
                    if len(n["args"]) != 1 + VIEW_OPS[op][1] or n["kwargs"]:
                        raise RuntimeError(f"ember.jit.load: {where}: wrong number of arguments")
                elif op in _dispatch.ops:
                    schema = _dispatch.ops[op].schema
                    if n.get("schema") != schema.text:
                        raise RuntimeError(f"ember.jit.load: {where}: the graph was saved with schema "
                                           f"'{n.get('schema')}', this ember has '{schema.text}'")
                    names = {a.name for a in schema.arguments}
                    if len(n["args"]) > len(schema.arguments) or not set(n["kwargs"]) <= names:
                        raise RuntimeError(f"ember.jit.load: {where}: arguments do not match the schema")
                else:
                    raise RuntimeError(_unknown_op(op, where, n.get("defined_by")))
                args = [_dec_arg(a, where, known) for a in n["args"]]
                kwargs = {str(k): _dec_arg(a, where, known) for k, a in n["kwargs"].items()}
                outs = [None if v is None else int(v) for v in n["outputs"]]
                known.update(v for v in outs if v is not None)
                g.nodes.append({"op": op, "args": args, "kwargs": kwargs, "outputs": outs, "inplace": bool(n["inplace"])})
            _check_struct(g.outputs, known)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise RuntimeError(f"ember.jit.load: malformed graph ({type(e).__name__}: {e})") from None
        return g


def _unknown_op(op, where, defined_by):
    """The error for a node whose op this process does not have: for an op a Library defined, which op and
    which plugin (with how to install it) the graph needs."""
    if not isinstance(defined_by, dict) or not isinstance(defined_by.get("op"), str):
        return f"ember.jit.load: {where}: unknown op '{op}' (not in ember's op registry)"
    plugin = defined_by.get("plugin")
    if isinstance(plugin, str):
        from .._registry import install_advice
        return (f"ember.jit.load: {where}: the graph calls '{defined_by['op']}', which the plugin '{plugin}' "
                f"defines, and that plugin is not loaded here: {install_advice(plugin)}")
    return (f"ember.jit.load: {where}: the graph calls '{defined_by['op']}', an op defined with "
            f"ember.library.Library('{defined_by['op'].split('::')[0]}').define in the program that saved it; "
            f"define it (import the code that does) before ember.jit.load")


def _run_shape(shape, src):
    """A fresh copy destination's shape: the traced one, with a leading batch size taken from ``src``."""
    if shape and src.dim() == len(shape) and src.shape[1:] == tuple(shape[1:]):
        return tuple(src.shape)
    return tuple(shape)


def _enc_arg(a, where):
    if "c" in a:
        return {"c": encode_const(a["c"], f"op '{where}'")}
    return a


def _dec_arg(a, where, known):
    if not isinstance(a, dict) or len(a) != 1:
        raise RuntimeError(f"ember.jit.load: {where}: malformed argument {a!r}")
    if "c" in a:
        return {"c": decode_const(a["c"], where)}
    if "v" in a:
        if a["v"] not in known:
            raise RuntimeError(f"ember.jit.load: {where}: reads value %{a['v']} before it is defined")
        return {"v": int(a["v"])}
    if "vs" in a:
        for v in a["vs"]:
            if v not in known:
                raise RuntimeError(f"ember.jit.load: {where}: reads value %{v} before it is defined")
        return {"vs": [int(v) for v in a["vs"]]}
    if "fresh" in a:
        decode_const({"dtype": a["fresh"]}, where)
        return {"fresh": str(a["fresh"])}
    raise RuntimeError(f"ember.jit.load: {where}: malformed argument {a!r}")


def _check_struct(s, known):
    if "t" in s:
        if s["t"] not in known:
            raise RuntimeError(f"ember.jit.load: output %{s['t']} is never defined")
    elif "tuple" in s or "list" in s:
        for e in s.get("tuple", s.get("list")):
            _check_struct(e, known)
    elif "dict" in s:
        for e in s["dict"].values():
            _check_struct(e, known)
    else:
        raise RuntimeError(f"ember.jit.load: malformed output structure {s!r}")


def _unflatten(s, env):
    if "t" in s:
        return env[s["t"]]
    if "tuple" in s:
        return tuple(_unflatten(e, env) for e in s["tuple"])
    if "list" in s:
        return [_unflatten(e, env) for e in s["list"]]
    return {k: _unflatten(e, env) for k, e in s["dict"].items()}


def _fmt_struct(s, nm=lambda v: f"%{v}"):
    if "t" in s:
        return nm(s["t"])
    if "tuple" in s:
        return "(" + ", ".join(_fmt_struct(e, nm) for e in s["tuple"]) + ("," if len(s["tuple"]) == 1 else "") + ")"
    if "list" in s:
        return "[" + ", ".join(_fmt_struct(e, nm) for e in s["list"]) + "]"
    return "{" + ", ".join(f"{k!r}: {_fmt_struct(e, nm)}" for k, e in s["dict"].items()) + "}"


def dumps(graph) -> str:
    return json.dumps(graph.to_json(), indent=1, sort_keys=True)


def _unflatten_names(s):
    """The value ids of an output structure, flattened in order."""
    if "t" in s:
        return [s["t"]]
    items = s.get("tuple") or s.get("list") or list(s.get("dict", {}).values())
    return [v for e in items for v in _unflatten_names(e)]
