"""Tracing: run once under ``ember.compile``'s capture, turn the recorded kernel calls into a ``JitGraph``.

The capture records every kernel call at the dispatcher with its arguments in schema order and its
``out=`` tensors. Tensors are matched to graph values by identity; a tensor never seen before that
shares the storage of a value is a view of it (views do not pass the dispatcher), expressed as
``reshape`` / ``permute`` / ``as_strided`` from the strides. A write into a known tensor (``add_``,
``relu_``, ``copy_``) becomes a new value (the graph is functional); a write into a view of another
tensor cannot be expressed and is refused. Any other unseen tensor is a constant of the graph.
"""
from __future__ import annotations

import math
import threading
import warnings

from ._graph import JitGraph, _dtype_name

__all__ = ["TracerWarning", "build", "TRACING"]


class TracerWarning(Warning):
    """A trace may not generalise to other inputs (matches torch.jit.TracerWarning)."""


class _Tracing(threading.local):
    depth = 0


TRACING = _Tracing()


def _contiguous(shape, stride):
    expect = 1
    for n, s in zip(reversed(shape), reversed(stride)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


class _Builder:
    def __init__(self):
        self.g = JitGraph()
        self.vals = {}       # id(tensor) -> value id
        self.tensors = {}    # id(tensor) -> tensor (kept alive: ids stay unique)
        self.owner = {}      # id(storage) -> (value id, tensor): the latest value that owns the storage
        self.next = 0

    def new_value(self, t, own=True):
        vid = self.next
        self.next += 1
        self.g.values[vid] = (tuple(t.shape), _dtype_name(t.dtype))
        self.vals[id(t)] = vid
        self.tensors[id(t)] = t
        if own:
            self.owner[id(t._storage)] = (vid, t)
        return vid

    def value_of(self, t, where):
        vid = self.vals.get(id(t))
        if vid is not None:
            return vid
        own = self.owner.get(id(t._storage))
        if own is None:                      # a tensor from outside the graph: a constant
            vid = self.new_value(t)
            self.g.constants[vid] = t.detach().clone()
            return vid
        base_vid, b = own
        if (b._shape, b._stride, b._offset) == (t._shape, t._stride, t._offset):
            self.vals[id(t)] = base_vid
            self.tensors[id(t)] = t
            return base_vid
        cur = base_vid
        steps = self._view(b, t, where)
        for i, (op, consts) in enumerate(steps):
            last = i == len(steps) - 1
            vid = self.new_value(t, own=False) if last else self._step_value(cur, op, consts)
            self.g.nodes.append({"op": op, "args": [{"v": cur}] + [{"c": c} for c in consts], "kwargs": {},
                                 "outputs": [vid], "inplace": False})
            cur = vid
        return cur

    def _step_value(self, src, op, consts):
        """A value id (with its shape) for an intermediate step of a view chain."""
        import math as _m
        shape, dt = self.g.values[src]
        if op == "reshape":
            new = list(consts[0])
            if -1 in new:
                known = _m.prod(d for d in new if d != -1)
                new[new.index(-1)] = _m.prod(shape) // known if known else 0
        elif op == "slice":
            new = list(shape)
            new[consts[0]] = consts[2] - consts[1]
        else:
            new = [shape[d] for d in consts[0]]
        vid = self.next
        self.next += 1
        self.g.values[vid] = (tuple(new), dt)
        return vid

    @staticmethod
    def _view(b, t, where):
        """The view ``t`` of ``b`` as a chain of view ops: [(op, constants)]."""
        bs, bst, s, st = b._shape, b._stride, t._shape, t._stride
        if t._offset == b._offset and _contiguous(bs, bst) and _contiguous(s, st) and math.prod(bs) == math.prod(s):
            shape = list(s)
            if s and bs and s[0] == bs[0] and math.prod(s[1:]) > 0:
                shape[0] = -1                # the batch dim follows the input at run time
            return [("reshape", [tuple(shape)])]
        if t._offset == b._offset and len(s) == len(bs):
            left = list(range(len(bs)))
            perm = []
            for n, k in zip(s, st):
                for i in left:
                    if bs[i] == n and (bst[i] == k or n == 1):
                        perm.append(i)
                        left.remove(i)
                        break
                else:
                    break
            if len(perm) == len(s):
                return [("permute", [tuple(perm)])]
        if _contiguous(bs, bst):
            chain = _strided_chain(bs, bst, s, st, t._offset - b._offset)
            if chain is not None:
                return chain
            return [("as_strided", [tuple(s), tuple(st), t._offset - b._offset])]
        raise RuntimeError(f"ember.jit.trace: {where} reads a view of a non-contiguous tensor that the graph cannot "
                           f"express (shape {list(s)}, strides {list(st)} over shape {list(bs)}, strides {list(bst)})")

    def arg(self, a, where):
        import ember
        if isinstance(a, ember.Tensor):
            return {"v": self.value_of(a, where)}
        if isinstance(a, (list, tuple)) and a and all(isinstance(x, ember.Tensor) for x in a):
            return {"vs": [self.value_of(x, where) for x in a]}
        return {"c": a}

    def write(self, t, where):
        """``t`` receives a kernel's result: a new value (the graph is functional)."""
        if id(t) not in self.vals and id(t._storage) not in self.owner:
            return self.new_value(t), False
        own = self.owner.get(id(t._storage))
        if own is None or (own[1]._shape, own[1]._stride, own[1]._offset) != (t._shape, t._stride, t._offset):
            raise RuntimeError(f"ember.jit.trace: {where} writes in place into a view of another tensor, which a "
                               f"traced graph cannot express; write the code out of place")
        for k in [k for k, x in self.tensors.items() if x._storage is t._storage]:
            self.vals.pop(k, None)           # other aliases now see the new value: derived again when read
        return self.new_value(t), True


def _strided_chain(bs, bst, s, st, offset):
    """A strided window (shape ``s``, strides ``st``, ``offset`` elements in) of a contiguous tensor of shape ``bs``
    as reshape -> slices -> permute -> reshape, or None when it is not one (overlapping or broadcast strides).
    The window's strides and the base's own strides are the levels the base is split into."""
    dims = [k for k in range(len(s)) if s[k] != 1]
    if any(st[k] <= 0 for k in dims) or len({st[k] for k in dims}) != len(dims):
        return None
    n = math.prod(bs)
    if n == 0:
        return None
    levels = sorted({st[k] for k in dims} | {bst[i] for i in range(len(bs)) if bs[i] != 1} | {1}, reverse=True)
    sizes, prev = [], n
    for lv in levels:
        if prev % lv:
            return None
        sizes.append(prev // lv)
        prev = lv
    start, rem = [], offset
    for lv in levels:
        start.append(rem // lv)
        rem %= lv
    level_of = {lv: i for i, lv in enumerate(levels)}
    take = {level_of[st[k]]: k for k in dims}
    chain = []
    shape0 = [-1] + sizes[1:]
    if tuple(sizes) != tuple(bs):
        chain.append(("reshape", [tuple(shape0)]))
    full = set()
    for i, size in enumerate(sizes):
        want = s[take[i]] if i in take else 1
        if start[i] + want > size:
            return None                       # the window wraps around: not a slice
        if start[i] == 0 and want == size:
            full.add(i)
            continue
        chain.append(("slice", [i, start[i], start[i] + want]))
    order = [level_of[st[k]] for k in dims]
    if order != sorted(order):                # the untaken levels have size 1: they go last
        order += [i for i in range(len(levels)) if i not in take]
        chain.append(("permute", [tuple(order)]))
    else:
        order = list(range(len(levels)))
    post = [s[take[i]] if i in take else 1 for i in range(len(levels))]
    if tuple(post[o] for o in order) != tuple(s) or not chain:
        final = list(s)
        for k in dims:
            if level_of[st[k]] in full:
                final[k] = -1                 # a whole level (the batch dim, typically) follows the input
                break
        chain.append(("reshape", [tuple(final)]))
    return chain


def build(capture, inputs, input_names, state, result, strict):
    """The ``JitGraph`` of one capture: ``inputs`` the example tensors, ``state`` name -> tensor (module
    parameters and buffers), ``result`` what the traced function returned."""
    import ember
    from .. import _dispatch
    from ..compiler import _capture as C
    bld = _Builder()
    g = bld.g
    for x in inputs:
        g.inputs.append(bld.new_value(x))
    g.input_names = list(input_names)
    state_vid = {}
    for name, t in state.items():
        if id(t) in bld.vals:
            continue                          # a tied parameter: the first name reads it
        vid = bld.new_value(t)
        g.state[name] = vid
        state_vid[name] = (vid, t)
    for node in capture.nodes:
        if isinstance(node, C.ValueGuard):
            continue                          # ember's own host read: the trace is specialised on it
        name = node.name
        where = f"'{name}'"
        op = _dispatch.ops.get(name)
        if op is None or op.entry is None:
            raise RuntimeError(f"ember.jit.trace: the traced code ran {name}, which is not an op of ember's registry "
                               f"and cannot be part of a traced graph")
        kwargs = dict(node.kwargs)
        outs = kwargs.pop("out", None)
        if name == "copy_":
            dst, src = node.args[0], node.args[1]
            srcv = bld.arg(src, where)
            fresh = id(dst) not in bld.vals and id(dst._storage) not in bld.owner
            vid, _ = bld.write(dst, where)
            g.nodes.append({"op": "copy_", "args": [{"fresh": _dtype_name(dst.dtype)}, srcv] +
                            [bld.arg(a, where) for a in node.args[2:]], "kwargs": {}, "outputs": [vid],
                            "inplace": not fresh})
            continue
        args = [bld.arg(a, where) for a in node.args]
        kw = {k: bld.arg(v, where) for k, v in kwargs.items()}
        if outs is not None:
            flat = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        else:
            r = capture.returns.get(id(node))
            flat = [r] if isinstance(r, ember.Tensor) else [x for x in (r or ()) if isinstance(x, ember.Tensor)]
        vids, inplace = [], False
        for t in flat:
            if outs is None:                   # a free-form op's result (may be a view of an argument)
                vids.append(bld.new_value(t, own=id(t._storage) not in bld.owner))
            else:
                vid, ip = bld.write(t, where)
                vids.append(vid)
                inplace = inplace or ip
        g.nodes.append({"op": name, "args": args, "kwargs": kw, "outputs": vids, "inplace": inplace})
    g.outputs = _struct(result, bld, strict)
    for name, (vid, t) in state_vid.items():
        own = bld.owner.get(id(t._storage))
        if own is not None and own[0] != vid and own[1] is t:
            g.updates.append((name, own[0]))
    _prune(g)
    return g


def _struct(r, bld, strict):
    import ember
    if isinstance(r, ember.Tensor):
        return {"t": bld.value_of(r, "the traced function's output")}
    if isinstance(r, tuple):
        return {"tuple": [_struct(e, bld, strict) for e in r]}
    if isinstance(r, (list, dict)):
        if strict:                            # as PyTorch: a list is warned about, a dict refused
            msg = (f"Encountering a {type(r).__name__} at the output of the tracer might cause the trace to be "
                   f"incorrect, this is only valid if the container structure does not change based on the module's "
                   f"inputs. Consider using a constant container instead (e.g. for `list`, use a `tuple` instead. "
                   f"for `dict`, use a `NamedTuple` instead). If you absolutely need this and know the side effects, "
                   f"pass strict=False to trace() to allow this behavior.")
            if isinstance(r, dict):
                raise RuntimeError(msg)
            warnings.warn(msg, TracerWarning, stacklevel=4)
        if isinstance(r, list):
            return {"list": [_struct(e, bld, strict) for e in r]}
        return {"dict": {str(k): _struct(v, bld, strict) for k, v in r.items()}}
    raise RuntimeError(f"Only tensors, lists, tuples of tensors, or dictionary of tensors can be output from traced "
                       f"functions (got {type(r).__name__})")


def _prune(g):
    """Drop nodes whose outputs nothing reads (dead code of composites, a pooling op's unused indices stay)."""
    live = set()

    def mark(s):
        if "t" in s:
            live.add(s["t"])
        else:
            for e in (s.get("tuple") or s.get("list") or list(s.get("dict", {}).values())):
                mark(e)
    mark(g.outputs)
    live.update(v for _, v in g.updates)
    keep = []
    for n in reversed(g.nodes):
        if any(v in live for v in n["outputs"]):
            keep.append(n)
            for a in list(n["args"]) + list(n["kwargs"].values()):
                if "v" in a:
                    live.add(a["v"])
                elif "vs" in a:
                    live.update(a["vs"])
    g.nodes = keep[::-1]
    g.constants = {k: v for k, v in g.constants.items() if k in live}
    outs = {v for n in keep for v in n["outputs"]}
    g.values = {k: v for k, v in g.values.items() if k in live or k in outs or k in g.inputs or k in g.state.values()}


def host_read_warnings(capture):
    from ..compiler import _capture as C
    guards = [n for n in capture.nodes if isinstance(n, C.ValueGuard)]
    if guards:
        warnings.warn(f"ember read {len(guards)} tensor value(s) on the host while tracing (first: {guards[0].name} at "
                      f"{guards[0].where}); the trace is specialised on those values and might not generalize to "
                      f"other inputs!", TracerWarning, stacklevel=4)
    for what, where in capture.breaks:
        warnings.warn(f"{what} was called on a tensor while tracing ({where}): converting a tensor to a Python value "
                      f"might cause the trace to be incorrect. We can't record the data flow of Python values, so this "
                      f"value will be treated as a constant in the future. This means that the trace might not "
                      f"generalize to other inputs!", TracerWarning, stacklevel=4)
