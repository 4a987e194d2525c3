"""Capture of kernel calls at the dispatcher, for ``ember.compile`` (DESIGN §12, docs/compile.md).

While a thread captures, every op resolves to a *recording* kernel: it runs the real kernel and
appends ``Node(kernel, args, kwargs)`` to the thread's graph. Only the outermost kernel call is
recorded (a kernel that calls ops itself, a fallback's copies, runs as one node). Composites are
not recorded: the ops they call are, so a graph holds primitives only. Outside a capture the
caches hold the plain kernels again and eager code pays nothing.

Host reads (``Tensor._host`` / ``numpy``: ``item``, ``tolist``, ``bool``, ...) during a capture:
- from ember's own code (a composite's argument check, a fill from a 0-dim tensor) they become a
  ``ValueGuard`` node: replay reads the value again and stops (``GraphMismatch``) if it differs;
- from the user's code they are graph breaks: the capture is marked broken with the op and the
  user's source line (``fullgraph=True`` raises ``GraphBreakError`` there instead).
Kernels that return new tensors (free-form ops with data-dependent shapes: ``nonzero``,
``unique``, ...) become ``Producer`` nodes: replay recomputes the result and copies it into the
captured tensor, or stops with ``GraphMismatch`` when its shape changed.
"""
from __future__ import annotations

import os
import sys
import threading

__all__ = ["GraphBreakError", "GraphMismatch", "Graph", "STATE", "capturing"]

#: how many threads are capturing now (the dispatcher and host reads test this one number)
ACTIVE = [0]
_LOCK = threading.Lock()
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TENSOR_FILE = os.path.join(_EMBER_DIR, "_tensor.py")


class GraphBreakError(RuntimeError):
    """``ember.compile(fullgraph=True)`` met a graph break (matches torch._dynamo's Unsupported in role)."""


class GraphMismatch(Exception):
    """Replay found a value or a shape that differs from the capture's (the call is rerun eagerly)."""


class _State(threading.local):
    graph = None       # the Graph this thread is capturing into, or None
    depth = 0          # > 0 while a recorded kernel runs: the ops it calls are part of it
    fullgraph = False


STATE = _State()


class Node:
    """One recorded kernel call."""
    __slots__ = ("fn", "args", "kwargs", "name")

    def __init__(self, fn, args, kwargs, name):
        self.fn, self.args, self.kwargs, self.name = fn, args, kwargs, name

    def run(self):
        """Call the kernel again on the recorded arguments."""
        self.fn(*self.args, **self.kwargs)


class Producer(Node):
    """A kernel that returned new tensors: replay copies its new result into the captured ones."""
    __slots__ = ("results",)

    def __init__(self, fn, args, kwargs, name, results):
        super().__init__(fn, args, kwargs, name)
        self.results = results      # [(index in the flattened result, captured tensor)]

    def run(self):
        """Call the kernel again and copy its new results into the captured tensors (GraphMismatch when a
        result's shape or dtype changed)."""
        r = self.fn(*self.args, **self.kwargs)
        flat = _flat_tensors(r)
        for i, cap in self.results:
            new = flat[i]
            if new._shape != cap._shape or new._dtype is not cap._dtype:
                raise GraphMismatch(f"'{self.name}' returned shape {list(new._shape)} where the capture had "
                                    f"{list(cap._shape)}")
            _plain_copy(cap, new)


class ValueGuard:
    """A host read made by ember's own code during the capture: replay checks the value is unchanged."""
    __slots__ = ("tensor", "value", "name", "where")

    def __init__(self, tensor, value, name, where):
        self.tensor, self.value, self.name, self.where = tensor, value, name, where

    def run(self):
        """Read the tensor on the host again; GraphMismatch when its value differs from the capture's."""
        import numpy as np
        now = self.tensor._host()
        if now.shape != self.value.shape or not np.array_equal(now, self.value, equal_nan=True):
            raise GraphMismatch(f"a value read on the host by {self.where} changed since the capture")


class Graph:
    """The kernel calls of one capture, in order, with what was seen on the way."""

    def __init__(self, fullgraph=False):
        self.nodes = []
        self.breaks = []         # [(what, "file:line")] host reads in the user's code
        self.break_stack = ()    # [(code, line)] the frames of the first break, innermost first (``_split``)
        self.versions = {}       # id(tensor) -> (tensor, version before its first recorded use)
        self.fullgraph = fullgraph
        self.backward_ran = False    # a backward() (not retaining its graph) ran inside the capture
        self.returns = None          # ember.jit sets a dict: id(node) -> what its kernel returned

    def note_versions(self, args, kwargs):
        """Remember each tensor argument's version counter the first time the capture meets it."""
        seen = self.versions
        for a in _iter_args(args, kwargs):
            if id(a) not in seen:
                vc = a._vc
                seen[id(a)] = (a, vc[0] if vc is not None else 0)

    def version_deltas(self):
        """[(tensor, how many in-place writes the capture made to it)] for tensors it wrote."""
        out, shared = [], {}
        for t, before in self.versions.values():
            vc = t._vc
            if vc is None:            # never written
                continue
            # views share their base's counter (one list): count its writes once, from its earliest reading
            k = id(vc)
            if k not in shared or before < shared[k][1]:
                shared[k] = (t, before, vc)
        out.extend((t, vc[0] - before) for t, before, vc in shared.values() if vc[0] != before)
        return out


def _iter_args(args, kwargs):
    from .._tensor import Tensor
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (tuple, list)):
            for b in a:
                if isinstance(b, Tensor):
                    yield b
    for a in kwargs.values():
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (tuple, list)):
            for b in a:
                if isinstance(b, Tensor):
                    yield b


def _flat_tensors(r):
    from .._tensor import Tensor
    if isinstance(r, Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [x for x in r if isinstance(x, Tensor)]
    return []


def _plain_copy(dst, src):
    from .._ops._copy import _copy_impl
    _copy_impl(dst, src)


def recording(op, fn):
    """``fn`` (op's resolved kernel) wrapped to record its calls on a capturing thread."""
    structured = op.structured

    def kernel(*args, **kwargs):
        st = STATE
        g = st.graph
        if g is None or st.depth:
            return fn(*args, **kwargs)
        g.note_versions(args, kwargs)
        st.depth += 1
        try:
            r = fn(*args, **kwargs)
        finally:
            st.depth -= 1
        if structured:
            g.nodes.append(Node(fn, args, kwargs, op.name))
        else:
            results = _flat_tensors(r)
            if any(t._layout.name != "strided" for t in results):
                g.breaks.append((f"{op.name}() returned a {results[0]._layout.name} tensor", "ember's dispatcher"))
                return r
            storages = {id(t._storage) for t in _iter_args(args, kwargs) if t._layout.name == "strided"}
            new = [(i, t) for i, t in enumerate(results) if id(t._storage) not in storages]
            g.nodes.append(Producer(fn, args, kwargs, op.name, new) if new else Node(fn, args, kwargs, op.name))
        if g.returns is not None:
            g.returns[id(g.nodes[-1])] = r
        return r
    kernel.__wrapped__ = fn
    return kernel


def record_call(fn, args, name):
    """Run ``fn(*args)`` (a step outside the dispatcher, e.g. a copy between devices) and record it."""
    st = STATE
    g = st.graph
    if g is None or st.depth:
        return fn(*args)
    g.note_versions(args, {})
    st.depth += 1
    try:
        r = fn(*args)
    finally:
        st.depth -= 1
    g.nodes.append(Node(fn, args, {}, name))
    return r


def host_scalars(fn, out):
    """Store the Python numbers ``fn()`` returns in ``out`` (a float64 cpu tensor), as one recorded node when this
    thread captures: a replay calls ``fn`` again. For ember's own code that computes step sizes on the host from
    tensor state (an optimizer's bias corrections): the replay gets the same numbers, bit for bit, as eager code."""
    def store(a):
        a[...] = fn()
    return host_fill(store, out)


def host_fill(fn, out):
    """Call ``fn(a)`` with ``a`` the host (numpy) array of the cpu tensor ``out``, for ``fn`` to fill it in place;
    as one recorded node when this thread captures (a replay calls ``fn`` again), else at once. For ember's own
    code (an optimizer's step sizes: ``host_scalars``, or spread over a flat buffer); returns ``out``."""
    record_call(lambda: fn(out._host()), (), "host fill")     # (runs it at once outside a capture)
    return out


def host_read(tensor, value, what):
    """Called by ``Tensor._host`` / ``numpy`` while this thread captures (``value``: the numpy array read)."""
    st = STATE
    g = st.graph
    if g is None or st.depth:
        return
    caller = sys._getframe(1)
    while caller is not None and caller.f_code.co_filename == _TENSOR_FILE:
        if caller.f_code.co_name not in ("_host", "numpy"):
            what = caller.f_code.co_name + "()"      # item, tolist, __bool__, ...
        caller = caller.f_back
    in_ember = caller is not None and caller.f_code.co_filename.startswith(_EMBER_DIR) and \
        os.sep + "examples" + os.sep not in caller.f_code.co_filename[len(_EMBER_DIR):]
    if in_ember:
        where = f"{os.path.relpath(caller.f_code.co_filename, os.path.dirname(_EMBER_DIR))}:{caller.f_lineno}"
        g.nodes.append(ValueGuard(tensor, value.copy(), what, where))
        return
    user = caller
    where = f"{user.f_code.co_filename}:{user.f_lineno}" if user is not None else "<unknown>"
    g.breaks.append((f"Tensor.{what}", where))
    if len(g.breaks) == 1:      # where each calling function was: a split cuts the compiled one's body there
        stack, f = [], user
        while f is not None:
            stack.append((f.f_code, f.f_lineno))
            f = f.f_back
        g.break_stack = stack
    if g.fullgraph:
        raise GraphBreakError(f"ember.compile(fullgraph=True): graph break at {where}: Tensor.{what} reads a "
                              f"tensor's value on the host, which a captured graph cannot replay. Return the tensor "
                              f"from the compiled function and read it outside, or drop fullgraph=True.")


class capturing:
    """``with capturing(graph):`` - record this thread's kernel calls into ``graph``."""

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        from .. import _dispatch
        if STATE.graph is not None:
            raise RuntimeError("ember.compile: a capture is already running on this thread (nested compiled "
                               "functions are captured as part of the outer one only when called from it)")
        with _LOCK:
            ACTIVE[0] += 1
            _dispatch.invalidate_caches()       # ops resolve again, to recording kernels
        STATE.graph = self.graph
        STATE.depth = 0
        return self.graph

    def __exit__(self, *exc):
        from .. import _dispatch
        STATE.graph = None
        with _LOCK:
            ACTIVE[0] -= 1
            if not ACTIVE[0]:
                _dispatch.invalidate_caches()   # back to the plain kernels
        return False
