"""Fusion of captured elementwise runs through a device hook (docs/compile.md, docs/vendor-guide.md §2.8).

After ``ember.compile`` captured a graph, ``fuse_program`` looks for *runs*: maximal sequences of
consecutive recorded kernel calls that are elementwise primitives (``ELEMENTWISE``) on one device,
whose tensors are all contiguous with the run's shape (or 0-dim operands, broadcast), with no two
tensors that overlap in another layout. Each run of two or more nodes is described as a
``Subgraph`` and handed to the fuser the device type registered (``registry.register_fuser``, or a
plugin's ``ember_fuse`` hook); the fuser returns one callable ``fused(*tensors)`` - the tensors are
``subgraph.slots``' in order - or None to decline. The replay then calls it in place of the run.

What a run writes reaches memory only where it is needed: a tensor the run writes is *stored* when
a node outside the run reads or writes its storage, or anything other than the graph's own nodes
holds it (an output, a ``.grad``, optimizer state, a static input, a view of it: counted by its
reference count, so an unknown holder errs on the side of storing). The other written tensors are
the run's intermediates: a fused kernel may keep them in registers.

A fuser that opted in to *features* (``register_fuser(..., features=FEATURES)``) receives richer runs; one
registered without them (and the ``ember_fuse`` hook) only ever receives the plain runs above:

- ``"broadcast"``: read-only operands of any shape that broadcasts to the run's shape (a bias ``(N,)`` in a
  ``(B, N)`` run, a row statistic ``(B, 1)``) or of the run's shape in another layout (a transposed view):
  ``Slot.strides`` gives their element strides over the run's shape (0 on broadcast dims);
- ``"reduction"``: a run may go on with ``sum`` / ``amax`` nodes over the run's shape (the same dims, the
  same result shape, ``Subgraph.reduce_dims`` / ``reduced_shape``), after which only elementwise nodes on the
  reduced shape follow (their slots have ``Slot.reduced``): ``[elementwise on shape] [reductions]
  [elementwise on reduced_shape]``. A reduction's result is never read before all of the run's elements were
  reduced, so one work item per output element can run the whole run.

A fuser that declines a run using features is offered the same nodes again as runs without the reduction
feature, then without any (so a device whose fuser handles only some reductions keeps its elementwise fusion).

Nothing here changes what a replay computes: a device without a fuser (or a fuser that declines)
replays the recorded kernels one by one, as before.
"""
from __future__ import annotations

import sys

__all__ = ["ELEMENTWISE", "REDUCTIONS", "FEATURES", "Constant", "Slot", "FusedNode", "Subgraph", "fuse_program",
           "find_fuser", "fuser_features"]

#: recorded op name -> (name in the Subgraph, how its recorded arguments read: "unary", "binary" (self, other,
#: alpha= for add / sub), "ternary" (three tensor operands, value= for addcmul / addcdiv), "copy" (dst, src),
#: "fill" (self, value))
ELEMENTWISE = {
    **{n: (n, "unary") for n in ("neg", "exp", "log", "relu", "sigmoid", "tanh", "sqrt", "rsqrt", "abs",
                                 "reciprocal", "floor", "sin", "cos", "expm1", "log1p", "erf", "square",
                                 "logical_not", "sign")},
    **{n: (n, "binary") for n in ("add", "sub", "mul", "true_divide", "maximum", "minimum", "pow", "eq", "ne", "lt",
                                  "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "atan2", "fmod")},
    **{n: (n, "ternary") for n in ("where", "lerp", "addcmul", "addcdiv")},
    "copy_": ("copy", "copy"),
    "fill_": ("fill", "fill"),
}

#: recorded reduction ops a run with the "reduction" feature may hold: sum(self, dim, keepdim, dtype=, out=),
#: amax(self, dim, keepdim, out=)
REDUCTIONS = {"sum": "sum", "amax": "amax"}

#: what a fuser may opt in to with ``register_fuser(device_type, fuser, features=...)`` (module doc)
FEATURES = ("broadcast", "reduction")


class Slot:
    """One tensor a fused run reads or writes.

    ``tensor``: the captured tensor (the fused callable receives this very tensor on every replay);
    ``dtype``; ``scalar``: a 0-dim tensor in a larger run: an operand broadcast over the run (on the run's
    device, or a 0-dim cpu tensor read on the host each call), or a 0-dim result computed from scalars only
    (every element computes the same value; store it once); ``load``: the run reads the value it had before the run;
    ``written``: the run writes it; ``store``: its final value must reach memory (False: an intermediate).

    With the fuser features (module doc): ``strides``: None for a contiguous (or scalar) slot, else the
    read-only operand's element strides over the shape of its stage (``subgraph.shape``, or
    ``subgraph.reduced_shape`` for a ``reduced`` slot): 0 on the dims it is broadcast along; ``reduced``: the
    slot lives in the reduced shape (a reduction's result, or a tensor of the elementwise nodes after it)."""
    __slots__ = ("tensor", "dtype", "scalar", "load", "written", "store", "strides", "reduced")

    def __init__(self, tensor, scalar, strides=None, reduced=False):
        self.tensor, self.dtype, self.scalar = tensor, tensor.dtype, scalar
        self.load = self.written = self.store = False
        self.strides, self.reduced = strides, reduced

    def __repr__(self):
        flags = "".join(f for f, on in (("S", self.scalar), ("L", self.load), ("W", self.written),
                                         ("T", self.store), ("R", self.reduced)) if on)
        st = f", strides={list(self.strides)}" if self.strides is not None else ""
        return f"Slot({self.dtype}, {list(self.tensor.shape)}, {self.tensor.device}, {flags}{st})"


class Constant:
    """A Python number (or bool) operand of a node: a constant of the capture (``value``)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Constant({self.value!r})"


class FusedNode:
    """One elementwise op of a run: ``out = op(*inputs, **scalars)``.

    ``op``: the name in ``ELEMENTWISE`` ("copy" for ``copy_``, "fill" for ``fill_``); ``inputs``: per operand
    the index of a slot (its current value inside the run) or a ``Constant`` (a Python number / bool of
    the capture); ``scalars``: ``alpha`` (add / sub), ``value`` (addcmul / addcdiv / fill) when given; ``out``: the
    index of the slot it writes, in that slot's dtype. The computation dtype follows PyTorch's type promotion
    (``ember.result_type`` of the operands: ``subgraph.operand(i)`` gives what to pass it).

    A reduction node (``op`` "sum" / "amax", only with the "reduction" feature) has one slot input of the run's
    shape and ``scalars`` ``{"dim": subgraph.reduce_dims, "keepdim": bool}``; it accumulates as the eager kernel
    does for its out slot's dtype (sum: PyTorch's ``dtype=`` or int64 for integers / bool)."""
    __slots__ = ("op", "inputs", "scalars", "out")

    def __init__(self, op, inputs, scalars, out):
        self.op, self.inputs, self.scalars, self.out = op, inputs, scalars, out

    def __repr__(self):
        return f"FusedNode({self.op}, {self.inputs}, {self.scalars}, -> {self.out})"


class Subgraph:
    """A run of elementwise nodes handed to a device's fuser.

    ``device``: the run's device; ``shape``: the shape every non-scalar slot has (all contiguous);
    ``numel``; ``slots``: [Slot], in the order the fused callable receives their tensors; ``nodes``:
    [FusedNode] in program order. ``signature()`` is a hashable key for caching generated code: it names
    the ops, the slots' dtypes and roles and the constants' types, not the shape or the constants' values.

    With fuser features (module doc): ``features``, the frozenset of those this run uses (empty for a plain
    run: always, for a fuser registered without features); ``reduce_dims`` (sorted dims of ``shape``, () when
    the run has no reduction) and ``reduced_shape`` (the reductions' result shape, None without one): the nodes
    are elementwise nodes on ``shape``, then reduction nodes, then elementwise nodes on ``reduced_shape``."""

    def __init__(self, device, shape, slots, nodes, features=frozenset(), reduce_dims=(), reduced_shape=None):
        self.device, self.shape, self.slots, self.nodes = device, tuple(shape), slots, nodes
        self.features, self.reduce_dims = frozenset(features), tuple(reduce_dims)
        self.reduced_shape = None if reduced_shape is None else tuple(reduced_shape)
        n = 1
        for s in self.shape:
            n *= s
        self.numel = n

    def operand(self, x):
        """What ``ember.result_type`` takes for operand ``x`` of a node: the slot's tensor, or the constant."""
        return x.value if isinstance(x, Constant) else self.slots[x].tensor

    def signature(self):
        """A hashable description of the run (device type, slots' dtypes and roles, ops and operand kinds), for a
        fuser's kernel cache: runs with equal signatures can share one generated kernel."""
        def ref(x):
            return ("c", type(x.value).__name__) if isinstance(x, Constant) else ("s", x)

        def scalar(k, v):
            return (k, v) if k in ("dim", "keepdim") else (k, type(v).__name__)
        return (self.device.type,
                tuple((s.dtype.name, s.scalar, s.tensor.device.type, s.load, s.store, s.strides, s.reduced)
                      for s in self.slots),
                tuple((n.op, tuple(ref(x) for x in n.inputs), tuple(sorted(scalar(k, v)
                      for k, v in n.scalars.items())), n.out) for n in self.nodes),
                tuple(sorted(self.features)), self.reduce_dims, len(self.shape),
                None if self.reduced_shape is None else len(self.reduced_shape))

    def __repr__(self):
        red = f", reduce_dims={list(self.reduce_dims)} -> {list(self.reduced_shape)}" if self.reduced_shape else ""
        return f"Subgraph({self.device}, {list(self.shape)}, {self.slots}, {self.nodes}{red})"


# ---------------------------------------------------------------- which fuser
def find_fuser(device_type: str):
    """The fuser for ``device_type``: the one registered with ``register_fuser``, else a plugin's
    ``ember_fuse`` hook (called per subgraph), else None."""
    from .. import _registry
    dt = _registry.device_types.get(device_type)
    f = getattr(dt, "fuser", None) if dt is not None else None
    if f is not None:
        return f
    from ..plugins import _manager
    hook = _manager().hook.ember_fuse
    if not hook.get_hookimpls():
        return None
    return lambda subgraph: hook(device_type=device_type, subgraph=subgraph)


def fuser_features(device_type: str) -> frozenset:
    """The features (``FEATURES``) the fuser of ``device_type`` opted in to: those given to ``register_fuser``;
    none for the ``ember_fuse`` hook or no fuser."""
    from .. import _registry
    dt = _registry.device_types.get(device_type)
    if dt is None or getattr(dt, "fuser", None) is None:
        return frozenset()
    return frozenset(getattr(dt, "fuser_features", ()))


# ---------------------------------------------------------------- reading a recorded node
def _parse(node):
    """(op, [operands], {scalars}, out tensor) of a recorded elementwise call, or None."""
    from .._tensor import Tensor
    spec = ELEMENTWISE.get(node.name)
    if spec is None:
        if node.name in REDUCTIONS:
            return _parse_reduction(node)
        return None
    op, form = spec
    a, k = node.args, node.kwargs
    try:
        if form == "copy":
            if len(a) < 2 or k:
                return None
            return op, [a[1]], {}, a[0]
        if form == "fill":
            if len(a) != 2 or k:
                return None
            return op, [], {"value": a[1]}, a[0]
        out = k.get("out")
        if not isinstance(out, Tensor) or set(k) - {"out", "alpha", "value"}:
            return None
        n = {"unary": 1, "binary": 2, "ternary": 3}[form]
        if len(a) != n:
            return None
        scalars = {name: k[name] for name in ("alpha", "value") if name in k}
        if any(isinstance(v, Tensor) for v in scalars.values()):
            return None
        return op, list(a), scalars, out
    except (AttributeError, IndexError, TypeError):
        return None


def _parse_reduction(node):
    """("sum" | "amax", [self], {"dim": sorted dims, "keepdim": bool}, out) of a recorded reduction, or None."""
    from .._tensor import Tensor
    a, k = node.args, node.kwargs
    out = k.get("out")
    if not isinstance(out, Tensor) or set(k) - {"out", "dtype"} or not 1 <= len(a) <= 3:
        return None
    x = a[0]
    if not isinstance(x, Tensor) or x._dtype is not out._dtype and node.name == "amax":
        return None
    dim = a[1] if len(a) > 1 else None
    keepdim = a[2] if len(a) > 2 else False
    nd = len(x._shape)
    if not isinstance(keepdim, bool) or nd == 0:
        return None
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        dims = tuple(range(nd))
    else:
        try:
            dims = tuple(sorted({int(d) % nd for d in ((dim,) if isinstance(dim, int) else dim)}))
        except (TypeError, ValueError):
            return None
    shape = tuple(1 if d in dims else n for d, n in enumerate(x._shape)) if keepdim else \
        tuple(n for d, n in enumerate(x._shape) if d not in dims)
    if tuple(out._shape) != shape:
        return None
    return REDUCTIONS[node.name], [x], {"dim": dims, "keepdim": keepdim}, out


def _broadcast_strides(t, shape):
    """``t``'s element strides over ``shape`` when ``t`` broadcasts to it (0 on broadcast dims), else None."""
    ts, st = t._shape, t._stride
    if len(ts) > len(shape):
        return None
    lead = len(shape) - len(ts)
    out = [0] * lead
    for n, s, want in zip(ts, st, shape[lead:]):
        if n == want:
            out.append(s if want != 1 else 0)
        elif n == 1:
            out.append(0)
        else:
            return None
    return tuple(out)


def _contiguous(t) -> bool:
    expected = 1
    for size, st in zip(reversed(t._shape), reversed(t._stride)):
        if size != 1 and st != expected:
            return False
        expected *= size
    return True


class _Run:
    """A run being grown: its device, shape, slots (by memory and by storage), nodes.

    Rules (each keeps one work item per element correct, whatever order the elements run in):
    - a non-0-dim tensor has the run's shape, is contiguous, on the run's device (with the "broadcast"
      feature: or it is only read, on the run's device, and broadcasts to the run's shape - ``Slot.strides``);
    - a 0-dim tensor in a larger run is a *scalar* slot: read anywhere (a 0-dim cpu tensor too), written only
      by a node whose tensor operands are all scalars and only if the run did not read it before (every
      element computes the same value; none may see another element's write);
    - two tensors of one storage in different layouts or dtypes (``view(int64)`` of a float64 tensor) may both
      be in the run only if neither is written;
    - a run of 0-dim nodes grows into a larger shape when it has no slot it reads and then writes;
    - with the "reduction" feature: after the elementwise nodes, reductions of the run's contiguous tensors over
      one set of dims into one result shape, then elementwise nodes on that shape only (stage 0, 1, 2).
    """

    def __init__(self, device, shape, features=frozenset()):
        self.device, self.shape, self.features = device, shape, features
        self.slots, self.by_mem, self.by_storage, self.nodes, self.indices = [], {}, {}, [], []
        self.aliases = {}
        self.stage, self.reduce_dims, self.reduced_shape = 0, (), None

    def used_features(self):
        """The fuser features (``FEATURES``) the run built so far needs: "broadcast" when a slot has strides,
        "reduction" once it holds a reduction."""
        used = set()
        if any(s.strides is not None for s in self.slots):
            used.add("broadcast")
        if self.stage:
            used.add("reduction")
        return frozenset(used)

    def slot_for(self, t, write, reduced=False):
        """The slot index of tensor ``t`` in this run (in the reduced shape's stage when ``reduced``), adding it;
        None when ``t`` cannot be in the run."""
        if t._layout.name != "strided":
            return None
        shape = self.reduced_shape if reduced else self.shape
        scalar = t._shape == () and shape != ()
        strides = None
        if scalar:
            if t._device != self.device and (write or t._device.type != "cpu"):
                return None
        elif t._device != self.device:
            return None
        elif t._shape != shape or not _contiguous(t):
            if write or "broadcast" not in self.features:
                return None
            strides = _broadcast_strides(t, shape)
            if strides is None:
                return None
        mem = (id(t._storage), t._offset, t._shape, t._stride if strides is not None else None, t._dtype)
        i = self.by_mem.get(mem)          # (a dtype-reinterpreting view is other memory)
        if i is not None and not scalar and self.slots[i].reduced != reduced:
            return None                                # one tensor in both stages of a reduction run
        others = [j for j in self.by_storage.get(id(t._storage), ()) if j != i]
        if others and (write or any(self.slots[j].written for j in others)):
            return None                               # views of one memory in other layouts, one written
        if i is None:
            i = len(self.slots)
            self.slots.append(Slot(t, scalar, strides, reduced and not scalar))
            self.by_mem[mem] = i
            self.by_storage.setdefault(id(t._storage), []).append(i)
        if id(t) not in self.aliases:
            self.aliases[id(t)] = (i, t)              # every tensor object on a slot's memory
        return i

    def try_add(self, parsed, index):
        """Add a parsed node (all-or-nothing); False when it does not fit the run."""
        from .._tensor import Tensor
        op, operands, scalars, out = parsed
        reduction = op in REDUCTIONS.values() and "dim" in scalars
        if op == "fill" and not isinstance(scalars.get("value"), (bool, int, float)):
            return False
        if reduction:
            if "reduction" not in self.features or self.stage == 2 or self.shape == ():
                return False
            if self.stage == 1 and (scalars["dim"] != self.reduce_dims or tuple(out._shape) != self.reduced_shape):
                return False
        saved = (len(self.slots), self.shape, [s.scalar for s in self.slots], dict(self.by_mem),
                 {k: list(v) for k, v in self.by_storage.items()}, dict(self.aliases), self.stage,
                 self.reduce_dims, self.reduced_shape)
        if reduction:
            self.stage, self.reduce_dims, self.reduced_shape = 1, scalars["dim"], tuple(out._shape)
        elif self.stage:
            self.stage = 2
        late = self.stage == 2                        # an elementwise node on the reduced shape
        if self.shape == () and out._shape != () and not self.stage:
            if any(s.load and s.written for s in self.slots):
                return False
            self.shape = out._shape                   # the 0-dim nodes so far become scalars of a larger run
            for s in self.slots:
                s.scalar = True
        refs = []
        ok = True
        for x in operands:
            if isinstance(x, Tensor):
                s = self.slot_for(x, False, late)
                if s is None or (reduction and (self.slots[s].scalar or self.slots[s].strides is not None)):
                    ok = False
                    break
                refs.append(s)
            elif isinstance(x, (bool, int, float)):
                refs.append(Constant(x))
            else:
                ok = False
                break
        o = self.slot_for(out, True, late or reduction) if ok else None
        if o is not None and reduction and (self.slots[o].written or self.slots[o].load):
            o = None                                  # a reduction's result is that node's alone
        if o is not None and self.slots[o].scalar:
            slot_refs = [r for r in refs if not isinstance(r, Constant)]
            reads_first = self.slots[o].load or (o in slot_refs and not self.slots[o].written)
            if reads_first or not all(self.slots[r].scalar for r in slot_refs):
                o = None
        if o is None:
            (n, self.shape, flags, self.by_mem, self.by_storage, self.aliases, self.stage, self.reduce_dims,
             self.reduced_shape) = saved
            del self.slots[n:]
            for s, f in zip(self.slots, flags):
                s.scalar = f
            return False
        for r in refs:
            if not isinstance(r, Constant):
                s = self.slots[r]
                if not s.written:
                    s.load = True
        self.slots[o].written = True
        self.nodes.append(FusedNode(op, tuple(refs), scalars, o))
        self.indices.append(index)
        return True


# ---------------------------------------------------------------- the pass
def _ref_base():
    o = object()
    return _raw_refs({0: o})[0] - 1          # minus the local ``o``


def _raw_refs(cands):
    return {k: sys.getrefcount(t) for k, t in cands.items()}


_BASE = _ref_base()


def _graph_refs(nodes, versions, deltas):
    """{id(tensor): how many references the graph's own structures hold} and {id(storage): [node indices]}."""
    from .._tensor import Tensor
    refs, where = {}, {}

    def note(t, i):
        refs[id(t)] = refs.get(id(t), 0) + 1
        where.setdefault(id(t._storage), set()).add(i)

    for i, n in enumerate(nodes):
        args = getattr(n, "args", None)
        if args is None:               # a ValueGuard: its tensor counts as held elsewhere
            t = getattr(n, "tensor", None)
            if isinstance(t, Tensor):
                where.setdefault(id(t._storage), set()).add(i)
            continue
        for a in list(args) + list(n.kwargs.values()):
            if isinstance(a, Tensor):
                note(a, i)
            elif isinstance(a, (tuple, list)):
                for b in a:
                    if isinstance(b, Tensor):
                        note(b, i)
    for t, _ in versions.values():
        refs[id(t)] = refs.get(id(t), 0) + 1
    for t, _ in deltas:
        refs[id(t)] = refs.get(id(t), 0) + 1
    return refs, where


def _runs(nodes, lo, hi, fusers, features):
    """The runs of two or more nodes among ``nodes[lo:hi]`` (recorded calls a fuser exists for), grown with
    ``features(device type)``."""
    from . import _capture
    from .._tensor import Tensor
    runs, cur = [], None
    for i in range(lo, hi):
        n = nodes[i]
        p = _parse(n) if type(n) is _capture.Node else None
        if p is not None:
            dev = p[3]._device
            if dev.type not in fusers:
                fusers[dev.type] = find_fuser(dev.type)
            if fusers[dev.type] is None:
                p = None
        if p is not None and cur is not None and cur.try_add(p, i):
            continue
        if cur is not None and len(cur.nodes) >= 2:
            runs.append(cur)
        cur = None
        if p is not None and isinstance(p[3], Tensor):
            start = p[1][0]._shape if "dim" in p[2] and p[0] in REDUCTIONS.values() else p[3]._shape
            cur = _Run(p[3]._device, start, features(p[3]._device.type))
            if not cur.try_add(p, i):
                cur = None
    if cur is not None and len(cur.nodes) >= 2:
        runs.append(cur)
    return runs


def fuse_program(graph, program, deltas=(), ranges=None):
    """``program`` ([(fn, args, kwargs)] of ``graph.nodes``, one entry per node) with every run a fuser
    accepted replaced by one ``(fused, slot tensors, {})`` entry; returns ``(program, fused runs, nodes they
    replaced)``. Without a fuser for any device in the graph, ``program`` is returned unchanged. ``ranges``, a
    list, receives the (first, last) node index of each replaced run (for memory planning).

    A run a fuser declines that used features is offered again without the reduction feature, then without
    any: a fuser that handles some reductions (or broadcasts) keeps its plain elementwise fusion elsewhere."""
    nodes = graph.nodes
    fusers = {}
    runs = _runs(nodes, 0, len(nodes), fusers, fuser_features)
    if not any(fusers.values()) or not runs:
        return program, 0, 0
    refs, where = _graph_refs(nodes, graph.versions, deltas)
    replace = {}
    runs.reverse()                          # (a stack: the retries of a declined run go on top)
    while runs:
        run = runs.pop()
        lo, hi = run.indices[0], run.indices[-1]
        for s in run.slots:
            if s.written and any(j < lo or j > hi for j in where.get(id(s.tensor._storage), ())):
                s.store = True
        # every tensor object on an unstored written slot's memory: held by more than the graph's nodes, the
        # run's alias table (1) and its slot (1, for the slot's own tensor)?
        cands = {k: t for k, (i, t) in run.aliases.items() if run.slots[i].written and not run.slots[i].store}
        raw = _raw_refs(cands)
        cands.clear()
        for k, (i, t) in run.aliases.items():
            s = run.slots[i]
            if k in raw and raw[k] - _BASE - 1 - (s.tensor is t) > refs.get(k, 0):
                s.store = True
        run.aliases = None
        used = run.used_features()
        sub = Subgraph(run.device, run.shape, run.slots, run.nodes, used, run.reduce_dims, run.reduced_shape)
        try:
            fused = fusers[run.device.type](sub)
        except Exception as err:  # noqa: BLE001 - a failing fuser costs speed, never the step: replay the nodes
            import warnings
            warnings.warn(f"ember.compile: the {run.device.type} fuser failed on a run of {len(sub.nodes)} nodes "
                          f"({type(err).__name__}: {err}); those nodes are replayed one by one", stacklevel=2)
            fused = None
        if fused is not None:
            replace[lo] = (hi, (fused, tuple(s.tensor for s in run.slots), {}))
        elif used:
            # offer the same nodes with fewer features (slots and aliases hold tensors: drop them first)
            less = used - {"reduction"} if "reduction" in used else frozenset()
            run.slots = sub = None
            retry = _runs(nodes, lo, hi + 1, fusers, lambda dt, less=less: fuser_features(dt) & less)
            runs.extend(reversed(retry))
            del retry
        del run, sub
    if not replace:
        return program, 0, 0
    out, i, replaced = [], 0, 0
    while i < len(program):
        r = replace.get(i)
        if r is None:
            out.append(program[i])
            i += 1
        else:
            out.append(r[1])
            replaced += r[0] - i + 1
            if ranges is not None:
                ranges.append((i, r[0]))
            i = r[0] + 1
    return out, len(replace), replaced
