"""The callable ``ember.compile`` returns: guards, a cache of captured graphs, and replay.

A call is looked up by its *signature* (the guards): every tensor argument's shape, strides,
dtype, device and requires_grad (and identity, for one that requires grad), every other
argument's value, grad mode, the default dtype, and the state of the modules and optimizers
the function reaches (the module compiled, or those in its closure and globals): training
flags, parameter identity, which parameters have a ``.grad``, the optimizers' hyperparameters.

- first call of a signature: run eagerly (the warm-up: optimizers create their state, modules
  their lazy buffers), with ``is_compiling()`` true;
- second call: run eagerly once more while capturing the kernel calls (``_capture``); tensor
  arguments that do not require grad are staged into tensors the graph owns (static inputs);
- later calls: copy the arguments into the static inputs, run the recorded kernels in order,
  then restore what eager code would have left: ``.grad`` attributes, version counters, and the
  outputs (cloned, so a result returned earlier is never overwritten).

A signature whose capture met a graph break in a top-level statement after the first is split there
(``_split``): the statements before it are compiled on their own, the statement runs eagerly, the
statements after it are compiled on their own. One whose break cannot be split, or that returned
tensors that require grad (a forward compiled on its own in grad mode: ember replays whole steps, it
has no AOT autograd), runs eagerly from then on; ``ember.profiler.compiled_graphs()`` says why.
"""
from __future__ import annotations

import functools
import operator
import os
import threading
import warnings
import weakref

from . import _capture, _fusion, _memplan, _split
from ._capture import GraphMismatch
from .. import _dtype as _D
from .._grad_state import STATE as _GS
from .._factory import contiguous_strides, empty_on
from .._ops._copy import _copy_impl
from .._tensor import Tensor

_HYPER = (int, float, bool, tuple, str)
_training = operator.attrgetter("training")

#: per-thread: inside a warm-up or capture run of a compiled function
_COMPILING = threading.local()
_REGISTRY = weakref.WeakSet()      # the live CompiledFunctions, for ember.profiler / reset()


class config:
    """Knobs (matches torch._dynamo.config in name where PyTorch has one)."""
    cache_size_limit = 8     # captured signatures per compiled function before it stays eager
    debug = os.environ.get("EMBER_COMPILE_DEBUG", "") not in ("", "0")
    #: hand runs of elementwise nodes to the device's fuser at capture (EMBER_COMPILE_FUSION=0: never)
    fusion = os.environ.get("EMBER_COMPILE_FUSION", "1").strip() != "0"
    #: let a graph's intermediates share buffers by liveness (EMBER_COMPILE_MEMPLAN=0: never)
    memory_planning = os.environ.get("EMBER_COMPILE_MEMPLAN", "1").strip() != "0"


def is_compiling() -> bool:
    """True while ember.compile warms up or captures a function on this thread (matches
    torch.compiler.is_compiling): optimizers then keep their step counts in tensors."""
    return getattr(_COMPILING, "on", False)


def _globally_disabled() -> bool:
    return os.environ.get("EMBER_COMPILE", "1").strip() == "0"


class _Entry:
    __slots__ = ("calls", "graph", "program", "static", "eager_reason", "end_grads", "read_grads", "deltas",
                 "outputs", "replays", "mismatches", "writeback", "fused_kernels", "fused_nodes", "memory",
                 "bound", "static_copies", "split")

    def __init__(self):
        self.calls = 0
        self.memory = None         # what memory planning did (``_memplan.plan``), or None
        self.bound = ()            # ``program`` as bound callables, what the replay runs
        self.static_copies = ()    # [(index in the flattened arguments, static tensor, copy function)]
        self.graph = None
        self.program = None        # [(fn, args, kwargs)] the replay runs
        self.static = None         # [(index in the flattened arguments, static tensor)]
        self.eager_reason = None
        self.end_grads = ()        # [(parameter, its .grad after the capture)]
        self.read_grads = ()       # [(parameter, .grad at the capture's start)] the graph read
        self.deltas = ()
        self.outputs = None
        self.writeback = ()        # static inputs the function writes in place: copied back to the arguments
        self.replays = 0
        self.mismatches = 0
        self.fused_kernels = 0     # runs of elementwise nodes a device's fuser replaced with one callable
        self.fused_nodes = 0       # the recorded kernel calls those runs held
        self.split = None          # the ``_split.Split`` calls run through after a graph break, or None


class _Uncacheable(Exception):
    pass


def _copy_kernel(t):
    """The device's own ``copy_`` kernel for tensors like ``t`` (same device, dtype, strided layout): what a replay
    calls to stage an argument or copy a result, without the dispatcher's checks (a graph's signature fixed them);
    None when the key does not resolve to a native kernel (the replay then copies through ``copy_``)."""
    from .. import _dispatch
    op = _dispatch.lookup("copy_")
    key = (t._device.type, t._layout.name, t._dtype)
    try:
        fn = op._resolve(key)
    except (NotImplementedError, RuntimeError):
        return None
    return fn if op.sources.get(key) == "native" and t._layout.name == "strided" and t._quantizer is None else None


def _output_entry(t):
    """How a replay returns the graph's tensor ``t``: copied into a new contiguous tensor by the device's kernel,
    or (another layout, a view with gaps, no native kernel) through ``detach().clone()``."""
    copy = _copy_kernel(t) if t._offset == 0 and t._stride == contiguous_strides(t._shape)[1] else None
    return ("copy", (t, copy)) if copy is not None else ("tensor", t)


@functools.lru_cache(maxsize=None)
def _reachable_types():
    """(nn.Module, optim.Optimizer): what a compiled function's guards look for in its closure and globals
    (imported once: the compiler loads before them)."""
    from ..nn import Module
    from ..optim import Optimizer
    return Module, Optimizer


def _global_names(fn):
    """The names ``fn``'s code loads as globals (LOAD_GLOBAL / LOAD_NAME), in order, without repeats; every name of
    ``co_names`` where the bytecode cannot be read. (``co_names`` also holds attribute names: scanning only the
    loaded globals keeps a call's guard work to what the function can reach.)"""
    import dis
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    try:
        names = [i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    except Exception:  # noqa: BLE001 - unreadable bytecode: fall back to every name
        names = list(code.co_names)
    return tuple(dict.fromkeys(n for n in names if isinstance(n, str)))


_CONTAINERS = (tuple, list, dict)


@functools.lru_cache(maxsize=64)
def _flat_spec(n):
    """``_flatten``'s spec of ``((a_1, ..., a_n), {})`` with no container among the a_i."""
    return _flatten(((None,) * n, {}), [])


def _flatten(obj, out):
    """Flatten tuples / lists / dicts of arguments into ``out``; returns the structure's spec."""
    if isinstance(obj, (tuple, list)):
        return (type(obj), tuple(_flatten(x, out) for x in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, _flatten(v, out)) for k, v in obj.items()))
    out.append(obj)
    return None


def _unflatten(spec, leaves):
    if spec is None:
        return next(leaves)
    kind, items = spec
    if kind is dict:
        return {k: _unflatten(s, leaves) for k, s in items}
    vals = [_unflatten(s, leaves) for s in items]
    return kind(vals) if kind in (tuple, list) else kind(*vals)


class CompiledFunction:
    """A function (or a module's forward) with captured graphs per signature (see the module doc)."""

    def __init__(self, fn, *, fullgraph=False, dynamic=False, mode=None, backend=None, module=None):
        self.fn = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.mode = mode
        self.backend = backend
        self.module = module
        self.entries = {}
        self._mod_cache = {}
        self.uncached = None        # why the last call that could not be looked up ran eagerly
        self._warned_limit = False
        self.name = getattr(fn, "__qualname__", None) or type(fn).__name__
        self._global_names = None   # the global names the function's code loads (``_global_names``)
        _REGISTRY.add(self)

    # ------------------------------------------------------------ what the function reaches
    def _reached(self):
        """The modules and optimizers the function reaches: its module, closure cells, globals it names."""
        Module, Optimizer = _reachable_types()
        found = []
        if self.module is not None:
            found.append(self.module)
        fn = self.fn
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, (Module, Optimizer)):
            found.append(owner)
        fn = getattr(fn, "__func__", fn)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if isinstance(v, (Module, Optimizer)):
                found.append(v)
        glb = getattr(fn, "__globals__", None)
        if glb is not None:
            names = self._global_names
            if names is None:
                names = self._global_names = _global_names(fn)
            for name in names:
                v = glb.get(name)
                if isinstance(v, (Module, Optimizer)):
                    found.append(v)
        mods, opts, seen = [], [], set()
        for o in found:
            if id(o) not in seen:
                seen.add(id(o))
                (opts if isinstance(o, Optimizer) else mods).append(o)
        return mods, opts

    def _submodules(self, m):
        """``m.modules()`` as a list, cached (re-listed when ``m``'s own child dict is a different size)."""
        c = self._mod_cache.get(id(m))
        if c is None or c[0] is not m or c[1] != len(m._modules):
            c = self._mod_cache[id(m)] = (m, len(m._modules), list(m.modules()))
        return c[2]

    def _params(self, mods, opts):
        ps, seen = [], set()
        for m in mods:
            for sm in self._submodules(m):
                for p in sm._parameters.values():
                    if p is not None and id(p) not in seen:
                        seen.add(id(p))
                        ps.append(p)
        for o in opts:
            for g in o.param_groups:
                for p in g["params"]:
                    if id(p) not in seen:
                        seen.add(id(p))
                        ps.append(p)
        return ps

    def _key(self, spec, leaves, mods, opts, params):
        k = [spec]
        for a in leaves:
            if isinstance(a, Tensor):
                if a._layout.name != "strided":
                    raise _Uncacheable(f"a {a._layout.name} argument (only strided tensors are captured)")
                k.append((a._shape, a._stride, a._dtype, a._device, a._requires_grad,
                          id(a) if a._requires_grad else None))
            else:
                try:
                    hash(a)
                except TypeError:
                    raise _Uncacheable(f"an argument of type {type(a).__name__} is not hashable") from None
                k.append((type(a), a))
        k.append(_GS.enabled)
        k.append(_D.get_default_dtype())
        for m in mods:
            k.append(tuple(map(_training, self._submodules(m))))
        k.append(tuple(map(id, params)))
        k.append(tuple(p._grad is None for p in params))
        for o in opts:
            k.append((id(o.state), len(o.state)))
            for g in o.param_groups:
                live = type(o)._compile_live
                k.append(tuple((n, v) for n, v in g.items() if n != "params" and n not in live
                               and isinstance(v, _HYPER)))
        return tuple(k)

    # ------------------------------------------------------------ calls
    def __call__(self, *args, **kwargs):
        if _globally_disabled() or self.backend == "eager" or _capture.STATE.graph is not None or is_compiling():
            return self.fn(*args, **kwargs)      # (inside another capture: its kernels are that graph's)
        if kwargs or any(isinstance(a, _CONTAINERS) for a in args):
            leaves = []
            spec = _flatten((args, kwargs), leaves)
        else:                                    # the common call: flat positional arguments
            leaves = list(args)
            spec = _flat_spec(len(args))
        mods, opts = self._reached()
        params = self._params(mods, opts)
        try:
            key = self._key(spec, leaves, mods, opts, params)
        except _Uncacheable as e:
            self.uncached = f"not captured: {e}"
            self._note(self.uncached)
            return self.fn(*args, **kwargs)
        e = self.entries.get(key)
        if e is None:
            if len(self.entries) >= config.cache_size_limit:
                if not self._warned_limit:
                    self._warned_limit = True
                    warnings.warn(f"ember.compile: {self.name} reached ember.compiler.config.cache_size_limit "
                                  f"({config.cache_size_limit}) captured signatures; new signatures run eagerly. "
                                  f"What changed between calls: see ember.profiler.compiled_graphs().",
                                  stacklevel=2)
                return self.fn(*args, **kwargs)
            e = self.entries[key] = _Entry()
        e.calls += 1
        if e.split is not None:
            return e.split(args, kwargs)
        if e.eager_reason is not None:
            return self.fn(*args, **kwargs)
        if e.program is None:
            if e.calls == 1:
                return self._warm_up(args, kwargs)
            return self._capture(e, spec, leaves, params, args, kwargs)
        for p, g in e.read_grads:
            if p._grad is not g:       # the graph reads this .grad: another tensor is there now
                e.program = None
                e.calls = 1
                return self._warm_up(args, kwargs)
        try:
            return self._replay(e, leaves)
        except GraphMismatch as m:
            e.mismatches += 1
            self._note(f"replay stopped ({m}); this call ran eagerly")
            return self.fn(*args, **kwargs)

    def _note(self, msg):
        if config.debug:
            print(f"[ember.compile] {self.name}: {msg}")

    def _warm_up(self, args, kwargs):
        _COMPILING.on = True
        try:
            return self.fn(*args, **kwargs)
        finally:
            _COMPILING.on = False

    def _capture(self, e, spec, leaves, params, args, kwargs):
        from .._tensor import Tensor
        from .. import empty_strided
        static, staged = [], list(leaves)
        for i, a in enumerate(leaves):
            if isinstance(a, Tensor) and not a._requires_grad:
                s = empty_strided(a._shape, a._stride, dtype=a._dtype, device=a._device)
                s.copy_(a)
                static.append((i, s))
                staged[i] = s
        v0 = {id(s): s._version for _, s in static}
        c_args, c_kwargs = _unflatten(spec, iter(staged))
        start_grads = [(p, p._grad) for p in params]
        g = _capture.Graph(self.fullgraph)
        _COMPILING.on = True
        try:
            with _capture.capturing(g):
                result = self.fn(*c_args, **c_kwargs)
        finally:
            _COMPILING.on = False
        e.graph = g
        if g.breaks:
            what, where = g.breaks[0]
            e.eager_reason = f"graph break: {what} at {where}"
            e.split, why = _split.split_at_break(self, g)
            if e.split is None:
                e.eager_reason += f"; not split: {why}"
                self._note(e.eager_reason + " - this signature runs eagerly")
            else:
                e.eager_reason = None
                g.nodes, g.versions = [], {}      # the broken capture is not replayed: its segments' graphs are
                lines = e.split.lines
                self._note(f"graph break: {what} at {where} - split: lines {lines['prefix']} compiled, "
                           f"{lines['break']} eager" + (f", {lines['rest']} compiled" if lines["rest"] else ""))
            return result
        out_leaves = []
        out_spec = _flatten(result, out_leaves)
        for t in out_leaves:
            if isinstance(t, Tensor) and t._requires_grad and t._grad_fn is not None and not g.backward_ran:
                e.eager_reason = ("returns tensors that require grad: ember.compile replays whole steps (forward, "
                                  "backward and optimizer together); a forward compiled alone runs eagerly in grad "
                                  "mode")
                self._note(e.eager_reason)
                return result
        read = {id(a) for n in g.nodes if isinstance(n, _capture.Node) for a in _capture._iter_args(n.args, n.kwargs)}
        e.read_grads = [(p, gr) for p, gr in start_grads if gr is not None and id(gr) in read]
        e.end_grads = [(p, p._grad) for p in params]
        e.deltas = g.version_deltas()
        e.static = static
        staged_ids = {id(s): i for i, s in static}
        # a reachable parameter or an argument that requires grad is returned itself, as eagerly (a name bound to it
        # before a split's break is the parameter after it); other tensors as copies
        own = {id(t) for t in params} | {id(a) for a in leaves if isinstance(a, Tensor)}
        e.outputs = (out_spec, [("arg", staged_ids[id(t)]) if isinstance(t, Tensor) and id(t) in staged_ids
                                else ("value", t) if isinstance(t, Tensor) and id(t) in own
                                else _output_entry(t) if isinstance(t, Tensor) else ("value", t) for t in out_leaves])
        e.static_copies = [(i, s, _copy_kernel(s) or _copy_impl) for i, s in static]
        e.program = [(n.fn, n.args, n.kwargs) if type(n) is _capture.Node else (n.run, (), {}) for n in g.nodes]
        ranges = []
        if config.fusion:
            e.program, e.fused_kernels, e.fused_nodes = _fusion.fuse_program(g, e.program, e.deltas, ranges)
        if config.memory_planning:
            e.memory = _memplan.plan(g, e.program, e.deltas, ranges)
            self._note(f"memory plan: {e.memory['planned']} intermediate storages ({e.memory['bytes_before']} bytes) "
                       f"in {e.memory['buffers']} buffers ({e.memory['bytes_after']} bytes)")
        self._note(f"captured {len(g.nodes)} kernel calls ({sum(type(n) is not _capture.Node for n in g.nodes)} "
                   f"checked on replay), {len(static)} static inputs, {e.fused_kernels} fused kernels replacing "
                   f"{e.fused_nodes} calls")
        # the replay's calls, bound once (functools.partial: ~0.1 us per call less than fn(*args, **kwargs))
        e.bound = [functools.partial(fn, *a, **k) for fn, a, k in e.program]
        # the capture ran on the staged copies: the user's arguments see what eager would have done to them
        e.writeback = [(i, s) for i, s in static if s._version != v0[id(s)]]
        for i, s in e.writeback:
            leaves[i].copy_(s)
        try:
            return self._outputs(e, leaves)     # (the graph's own tensors are overwritten by the next replay)
        except (RuntimeError, NotImplementedError) as err:   # a device that cannot copy a result's dtype
            e.program = None
            e.eager_reason = f"its results cannot be copied on their device ({err})"
            self._note(e.eager_reason)
            return result

    def _replay(self, e, leaves):
        for i, s, copy in e.static_copies:
            copy(s, leaves[i])
        for call in e.bound:
            call()
        for t, d in e.deltas:
            vc = t._vc
            if vc is None:
                t._vc = [d]
            else:
                vc[0] += d
        for p, gr in e.end_grads:
            p._grad = gr
        for i, s in e.writeback:
            _copy_impl(leaves[i], s)
        e.replays += 1
        return self._outputs(e, leaves)

    @staticmethod
    def _outputs(e, leaves):
        spec, outs = e.outputs
        vals = []
        for kind, v in outs:
            if kind == "tensor":
                vals.append(v.detach().clone())
            elif kind == "copy":          # a contiguous result: a new tensor, filled by its device's copy kernel
                t, copy = v
                r = empty_on(t._shape, t._dtype, t._device)
                copy(r, t)
                vals.append(r)
            elif kind == "arg":
                vals.append(leaves[v])
            else:
                vals.append(v)
        return _unflatten(spec, iter(vals))

    def reset(self):
        """Forget every captured graph."""
        self.entries.clear()
        self.__dict__.pop("_splits", None)     # the segments of split signatures (``_split``)
        self._warned_limit = False

    def info(self):
        """One dict per signature: calls, replays, kernel calls, checks, graph breaks, why it runs eagerly."""
        rows = []
        for e in self.entries.values():
            g = e.graph
            rows.append({"function": self.name, "calls": e.calls, "replays": e.replays,
                         "kernel_calls": sum(type(n) is _capture.Node for n in g.nodes) if g else 0,
                         "checked_on_replay": sum(type(n) is not _capture.Node for n in g.nodes) if g else 0,
                         "graph_breaks": list(g.breaks) if g else [],
                         "static_inputs": len(e.static or ()), "mismatches": e.mismatches,
                         "fused_kernels": e.fused_kernels,
                         "kernel_launches": (sum(type(n) is _capture.Node for n in g.nodes) - e.fused_nodes +
                                             e.fused_kernels) if g else 0,
                         "memory_plan": e.memory,
                         "split": e.split.info() if e.split is not None else None,
                         "eager_reason": e.eager_reason})
        return rows
