"""The backward engine: runs the graph from the roots to the leaves.

Nodes run in reverse creation order (highest sequence number first) once every
gradient flowing into them has arrived, as PyTorch's engine does on one thread.
Gradients for leaves are collected and written to ``.grad`` only after the whole
pass succeeded, so a failing backward leaves every ``.grad`` as it was.
"""
from __future__ import annotations

import heapq
import sys
import threading

from .._grad_state import STATE
from ..compiler._capture import ACTIVE as _CAPTURE_ACTIVE
from .._tensor import Tensor
from .graph import AccumulateGrad, grad_edge
from . import _tensor_methods

__all__ = ["run_backward", "checkpoint_valid"]


_NO_GRADS: dict = {}

_passes = threading.local()                    # per thread: a stack, one flag per running backward pass


def checkpoint_valid() -> bool:
    """Whether the innermost running backward pass is a plain ``backward()`` (no ``inputs``, not
    ``autograd.grad``): the reentrant checkpoint can only run inside such a pass (torch's
    ``_is_checkpoint_valid``)."""
    stack = getattr(_passes, "stack", None)
    return not stack or stack[-1]


def _add(a, b):
    return b if a is None else a + b


def _graph(roots, targets):
    """Dependency counts of the nodes that lead to a target (all nodes when ``targets`` is None)."""
    order, seen, stack = [], set(), [n for n in roots]
    for n in roots:
        seen.add(n)
    while stack:                     # iterative DFS: graphs can be deeper than Python's recursion limit
        n = stack.pop()
        order.append(n)
        for e in n.next_edges:
            if e is not None and e[0] not in seen:
                seen.add(e[0])
                stack.append(e[0])
    if targets is None:
        needed = seen
    else:
        needed = set(targets)
        # reverse topological: a node is needed when one of its next nodes is; iterate to a fixpoint
        # over the nodes ordered by sequence number (a node's inputs always have smaller numbers)
        for n in sorted(order, key=lambda n: n.seq_nr):
            if n not in needed and any(e is not None and e[0] in needed for e in n.next_edges):
                needed.add(n)
    deps = {}
    for n in order:
        if n not in needed:
            continue
        for e in n.next_edges:
            if e is not None and e[0] in needed:
                deps[e[0]] = deps.get(e[0], 0) + 1
    return needed, deps


def _call_node(node, grads, create_graph):
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            r = hook(tuple(grads))
            if r is not None:
                grads = list(r)
    out = node.apply(grads)
    if node._hooks:
        for hook in list(node._hooks.values()):
            r = hook(tuple(out), tuple(grads))
            if r is not None:
                out = list(r)
    if STATE.anomaly and STATE.anomaly_check_nan:
        _check_nan(node, out)
    return out


def _check_hook_result(hook, new, old):
    """A tensor hook may replace a gradient, but not change its size, dtype or device (as PyTorch)."""
    name = getattr(hook, "__name__", repr(hook))
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Tensor or None (got {type(new).__name__})")
    if new._shape != old._shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if new._dtype is not old._dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {old.type()} got {new.type()})")
    if new._device != old._device:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {old.type()} got {new.type()})")
    return new


def _check_nan(node, out):
    from .._ops._elementwise import isnan
    for i, g in enumerate(out):
        if isinstance(g, Tensor) and (g._dtype.is_floating_point or g._dtype.is_complex) and \
                isnan(g).any().item():
            trace = node._trace or "  (no forward traceback: the node was created before anomaly mode was on)\n"
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.\n"
                               f"Traceback of the forward call that created '{node.name()}':\n{trace}")


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, accumulate=True,
                 allow_unused=True):
    """Backpropagate from ``tensors`` (with gradients ``grad_tensors``).

    ``accumulate=True`` (``backward``): add gradients into ``.grad`` of the leaves (or of
    ``inputs`` only). ``accumulate=False`` (``autograd.grad``): return the gradients of
    ``inputs`` instead. Returns a list aligned with ``inputs`` (None where unused).
    """
    if _tensor_methods._RETAINING:
        _tensor_methods.sync_retained()
    if _CAPTURE_ACTIVE[0] and not retain_graph:
        from ..compiler._capture import STATE as _cap
        if _cap.graph is not None:
            _cap.graph.backward_ran = True      # outputs whose graph this frees are returned detached on replay
    root_edges = []
    for i, t in enumerate(tensors):
        e = grad_edge(t)
        if e is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append(e)
    capture = None
    if inputs is not None:
        capture = {}
        for i, x in enumerate(inputs):
            e = grad_edge(x)
            if e is None:
                if accumulate:
                    raise RuntimeError("One of the differentiated Tensors does not require grad")
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture.setdefault(e, []).append(i)
    targets = None if capture is None else {e[0] for e in capture}
    roots = list({e[0]: None for e in root_edges})
    needed, deps = _graph(roots, targets)

    buffers = {}
    for (node, nr), g in zip(root_edges, grad_tensors):
        buf = buffers.setdefault(node, {})
        buf[nr] = _add(buf.get(nr), g)
    heap = [(-n.seq_nr, n) for n in roots if deps.get(n, 0) == 0 and n in needed]
    heapq.heapify(heap)
    captured = [None] * (len(inputs) if inputs is not None else 0)
    pending = []           # (tensor, grad) to accumulate at the end
    prev_enabled = STATE.enabled
    STATE.enabled = create_graph
    STATE.update()
    stack = _passes.__dict__.setdefault("stack", [])
    stack.append(accumulate and inputs is None)
    try:
        while heap:
            _, node = heapq.heappop(heap)
            buf = buffers.pop(node, _NO_GRADS)
            n_out = node.num_outputs
            if n_out == 1 and len(buf) <= 1:
                grads = [buf.get(0)]
            else:
                grads = [buf.get(i) for i in range(max(n_out, max(buf, default=-1) + 1))]
            if node._tensor_hooks:
                for nr, hooks in node._tensor_hooks.items():
                    for hook in list(hooks.values()):
                        if grads[nr] is not None:
                            r = hook(grads[nr])
                            if r is not None:
                                grads[nr] = _check_hook_result(hook, r, grads[nr])
            if node._retain:
                for nr, ref in node._retain.items():
                    t = ref()
                    if t is not None and grads[nr] is not None and t._grad_fn is node:
                        pending.append((t, grads[nr], False))
            if capture is not None:
                for nr, g in enumerate(grads):
                    for i in capture.get((node, nr), ()):
                        captured[i] = g
            if isinstance(node, AccumulateGrad):
                if accumulate and grads[0] is not None and (capture is None or (node, 0) in capture):
                    leaf = node.variable
                    if leaf is not None:
                        pending.append((leaf, grads[0], True))
                continue
            if capture is not None and not any(e is not None and e[0] in needed for e in node.next_edges):
                continue
            if node._pre_hooks or node._hooks or STATE.anomaly:
                out = _call_node(node, grads, create_graph)
            else:
                out = node.apply(grads)
            if not retain_graph:
                node.release()
            for e, g in zip(node.next_edges, out):
                if e is None or (capture is not None and e[0] not in needed):
                    continue
                nxt, nr = e
                if g is not None:
                    b = buffers.get(nxt)
                    if b is None:
                        buffers[nxt] = {nr: g}
                    else:
                        old = b.get(nr)
                        b[nr] = g if old is None else old + g
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    heapq.heappush(heap, (-nxt.seq_nr, nxt))
        if accumulate and capture is not None:
            for (node, nr), idxs in capture.items():
                if not isinstance(node, AccumulateGrad):
                    for i in idxs:
                        if captured[i] is not None:
                            pending.append((inputs[i], captured[i], False))
    finally:
        stack.pop()
        STATE.enabled = prev_enabled
        STATE.update()
    if accumulate:
        out = buf = grads = b = g = None     # drop the last iteration's references (so _stealable sees them gone)
        _accumulate(pending, create_graph)
    return captured


def _stealable(g, t):
    """Whether the gradient ``g`` can become ``t.grad`` as it is: nothing else holds the tensor
    (references: this frame, the caller's loop variable, its tuple in ``pending``, getrefcount's argument) or
    its storage (g alone), it requires no grad and it has ``t``'s strides, offset 0 (so a later
    in-place accumulation writes a dense, non-overlapping buffer nobody else sees)."""
    return (sys.getrefcount(g) <= 4 and sys.getrefcount(g._storage) == 2 and not g._requires_grad
            and g._offset == 0 and (g._stride == t._stride or not STATE.grad_layout) and g._device == t._device)


def _clone_obey_contract(g, t):
    """The copy of gradient ``g`` that becomes ``t.grad``: laid out as ``t`` when ``t`` is non-overlapping and
    dense, else row-major (PyTorch's AccumulateGrad layout contract; a plain ``clone`` would keep ``g``'s own
    layout, e.g. the transposed gradient of mm's weight)."""
    from .. import _memory_format as MF
    from .._ops._creation import empty_like
    if g._layout.name != "strided" or t._layout.name != "strided":
        return g.clone()
    if MF.preserve_strides(t._shape, t._stride) != t._stride:
        return g.clone(memory_format=MF.contiguous_format)
    return empty_like(t, dtype=g._dtype, device=g._device).copy_(g)


def _accumulate(pending, create_graph):
    for t, g, _ in pending:
        if g._shape != t._shape:
            raise RuntimeError(f"Function AccumulateGrad returned an invalid gradient - got "
                               f"[{', '.join(map(str, g._shape))}] but expected shape compatible with "
                               f"[{', '.join(map(str, t._shape))}]")
    done = []
    for t, g, is_leaf in pending:
        if g._dtype is not t._dtype:
            g = g.to(t._dtype)
        old = t._grad
        if old is None:
            if create_graph:
                t._grad = g
            elif is_leaf and _stealable(g, t):
                t._grad = g                 # the engine's own fresh buffer: no copy (PyTorch's "steal")
            else:
                t._grad = _clone_obey_contract(g.detach(), t)
        elif create_graph or STATE.enabled and old._requires_grad or old._layout.name != "strided" \
                or g._layout.name != "strided":
            t._grad = old + g               # (a sparse gradient: out of place, sparse + sparse or dense + sparse)
        else:
            old.add_(g.detach())
        if is_leaf:
            done.append(t)
    for t in done:
        acc = t._accumulator
        if acc is not None and acc._post_hooks:
            for hook in list(acc._post_hooks.values()):
                hook(t)
