"""Activation checkpointing: trade compute for memory (matches torch.utils.checkpoint).

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` so that the tensors its ops save for
backward are not kept: backward runs ``fn`` again (with the random state of the first run, so
dropout draws the same mask) and differentiates the recomputed graph. Two variants, as in PyTorch:

- ``use_reentrant=True``: a custom ``autograd.Function`` whose forward runs ``fn`` under
  ``no_grad`` (nothing is recorded, nothing is saved) and whose backward recomputes ``fn`` with grad
  on and calls ``ember.autograd.backward`` on it (a backward inside the backward). Gradients reach
  the tensor arguments and, through the inner ``backward``, the ``.grad`` of leaves ``fn`` closes
  over; it cannot serve ``autograd.grad`` or ``backward(inputs=...)`` (RuntimeError, PyTorch's
  message), and takes no keyword arguments.
- ``use_reentrant=False``: ember's autograd has no saved-tensor hooks, so this variant works on
  the graph itself. ``fn`` runs with grad on; the nodes it created (sequence numbers recorded in
  that window) are the *region*; the edges from the region to nodes outside it (tensor
  arguments, tensors ``fn`` closes over, leaves) are the *boundary*. The outputs are re-attached
  to one ``CheckpointBackward`` node whose edges are the boundary, and the region - with every
  tensor it saved - is dropped when ``checkpoint`` returns. Backward recomputes ``fn``, cuts the
  new region's boundary edges into sinks, and runs the engine from the recomputed outputs to
  the sinks; what reaches the sinks is this node's output. So it works with ``autograd.grad``,
  ``backward(inputs=...)``, keyword arguments, nested outputs and closed-over tensors. The
  memory saved is what the region kept for backward once ``fn`` has returned; the peak *inside*
  one call is that of an unchecked run (PyTorch's hooks avoid even that).

``determinism_check="default"`` compares the recomputed outputs (count, shapes, dtypes, devices)
and boundary with the first run's and raises ``CheckpointError`` on a difference.
"""
from __future__ import annotations

import contextlib
import warnings

from .._grad_state import STATE
from .._tensor import Tensor
from ..autograd import graph as _graph
from ..autograd.graph import Node, SavedTensor, AccumulateGrad, grad_edge
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad, enable_grad

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn",
           "set_checkpoint_debug_enabled", "detach_variable"]


class CheckpointError(RuntimeError):
    """The recomputation did not reproduce the first run (matches torch.utils.checkpoint.CheckpointError)."""


_DEBUG = None

_DETERMINISM = ("default", "none")

_TIP = ("\nTip: To see a more detailed error message, either pass `debug=True` to\n"
        "`ember.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
        "with `with ember.utils.checkpoint.set_checkpoint_debug_enabled(True):`")


def noop_context_fn():
    """The default ``context_fn``: two null contexts (forward, recomputation)."""
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Within the block, ``debug`` of every non-reentrant checkpoint is ``enabled`` (None: each call's own)."""
    global _DEBUG
    prev, _DEBUG = _DEBUG, enabled
    try:
        yield
    finally:
        _DEBUG = prev


def detach_variable(inputs):
    """The tensors of tuple ``inputs`` detached, keeping ``requires_grad``; RuntimeError for a non-tuple."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad_(x.requires_grad)
            x = d
        out.append(x)
    return tuple(out)


# ----------------------------------------------------------------------------- random state

def _rng_devices(args):
    return list(dict.fromkeys(a.device for a in args if isinstance(a, Tensor) and a.device.type != "cpu"))


def _get_rng(args):
    """(cpu state, [(device, state)]) of the default generators the call may draw from."""
    from .. import _random_state
    return (_random_state.get_rng_state(),
            [(d, _random_state._default(d).get_state()) for d in _rng_devices(args)])


def _set_rng(states):
    from .. import _random_state
    cpu, devs = states
    _random_state.set_rng_state(cpu)
    for d, s in devs:
        _random_state._default(d).set_state(s)


@contextlib.contextmanager
def _replay_rng(states, args):
    """Run the block with the random states of the first run, then put back the states of now."""
    if states is None:
        yield
        return
    now = _get_rng(args)
    _set_rng(states)
    try:
        yield
    finally:
        _set_rng(now)


# ----------------------------------------------------------------------------- reentrant variant

class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(a.requires_grad for a in args if isinstance(a, Tensor)):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=4)
        ctx.run_function = run_function
        ctx.rng = _get_rng(args) if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from ..autograd import engine, backward
        if not engine.checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, ember.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _replay_rng(ctx.rng, inputs):
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        backward([o for o, _ in pairs], [g if g is not None else o.new_zeros(o.shape) for o, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in detached)


# ----------------------------------------------------------------------------- non-reentrant variant

def _flatten(obj, out):
    """Append the leaves of nested tuples / lists / dicts to ``out``; return a function that rebuilds ``obj``
    from a list of new leaves."""
    if isinstance(obj, (tuple, list)):
        subs = [_flatten(x, out) for x in obj]
        kind = type(obj)

        def build(leaves):
            items = [s(leaves) for s in subs]
            return kind(*items) if hasattr(kind, "_fields") else kind(items)
        return build
    if isinstance(obj, dict):
        subs = {k: _flatten(v, out) for k, v in obj.items()}
        kind = type(obj)
        return lambda leaves: kind((k, s(leaves)) for k, s in subs.items())
    i = len(out)
    out.append(obj)
    return lambda leaves: leaves[i]


def _region(outputs, start, end):
    """The nodes created in [start, end) reachable from ``outputs`` and the ordered boundary edges from
    them (or from the outputs themselves) to nodes outside."""
    inside = lambda n: start <= n.seq_nr < end and not isinstance(n, AccumulateGrad)  # noqa: E731
    region, boundary, stack = {}, {}, []
    for t in outputs:
        e = grad_edge(t)
        if inside(e[0]):
            if e[0] not in region:
                region[e[0]] = None
                stack.append(e[0])
        else:
            boundary.setdefault(e, None)
    while stack:
        n = stack.pop()
        for e in n.next_edges:
            if e is None:
                continue
            if inside(e[0]):
                if e[0] not in region:
                    region[e[0]] = None
                    stack.append(e[0])
            else:
                boundary.setdefault(e, None)
    return list(region), list(boundary)


def _meta(t):
    return {"shape": tuple(t.shape), "dtype": t.dtype, "device": t.device}


class _Sink(Node):
    """Where a recomputed region's boundary edge ends: the engine captures the gradient and stops."""

    _name = "CheckpointSink"

    def __init__(self, seq_nr):
        Node.__init__(self, ())
        self.seq_nr = seq_nr

    def apply(self, grads):
        return []


class CheckpointBackward(Node):
    """The node of a non-reentrant checkpoint: its edges are the region's boundary; ``apply`` recomputes
    the function and backpropagates through the recomputed graph to that boundary."""

    _name = "CheckpointBackward"

    def __init__(self, edges, call, grad_idx, metas, check, debug):
        Node.__init__(self, edges)
        self.num_outputs = len(grad_idx)
        self._call = call             # (function, saved args, kwargs, rng states, recompute context factory)
        self._grad_idx = grad_idx
        self._metas = metas
        self._check = check
        self._debug = debug

    def release(self):
        self._call = None

    def apply(self, grads):
        from ..autograd import engine
        if self._call is None:
            raise RuntimeError(_graph._SECOND_TIME)
        function, saved, kwargs, rng, recompute_ctx = self._call
        args = [s.unpack() if isinstance(s, SavedTensor) else s for s in saved]
        with _replay_rng(rng, args):
            start = next(_graph._seq)
            with enable_grad(), recompute_ctx():
                out = function(*args, **kwargs)
            end = next(_graph._seq)
        flat = []
        _flatten(out, flat)
        outs = [flat[i] if i < len(flat) else None for i in self._grad_idx]
        if self._check:
            self._verify(flat, outs)
        region, boundary = _region([o for o in outs if isinstance(o, Tensor) and o.requires_grad], start, end)
        where = {e: k for k, e in enumerate(self.next_edges)}
        unknown = [e for e in boundary if e not in where]
        if unknown and self._check:
            names = ", ".join(f"{e[0].name()}:{e[1]}" for e in unknown)
            raise CheckpointError(f"ember.utils.checkpoint: the recomputation reached tensors the original forward "
                                  f"did not use ({names}).{self._tip()}")
        sinks = {e: (_Sink(e[0].seq_nr), 0) for e in boundary}
        result = [None] * len(self.next_edges)
        roots, root_grads = [], []
        for o, g in zip(outs, grads):
            if g is None or not isinstance(o, Tensor) or not o.requires_grad:
                continue
            e = grad_edge(o)
            if e in sinks:                        # an output that is a boundary tensor itself
                k = where.get(e)
                if k is not None:
                    result[k] = g if result[k] is None else result[k] + g
                continue
            roots.append(o)
            root_grads.append(g)
        if roots:
            standins, keys = [], []
            for e, (sink, _) in sinks.items():
                s = roots[0].new_zeros(())
                s._grad_fn, s._output_nr, s._requires_grad = sink, 0, True
                standins.append(s)
                keys.append(e)
            # the recomputation's fresh nodes are cut at the boundary for this pass only: a graph recorded by it
            # (create_graph) refers to them, and a higher-order pass must flow on through their real edges
            kept = [n.next_edges for n in region]
            for n in region:
                n.next_edges = [sinks.get(e, e) if e is not None else None for e in n.next_edges]
            try:
                got = engine.run_backward(roots, root_grads, STATE.enabled, STATE.enabled, inputs=standins,
                                          accumulate=False)
            finally:
                for n, edges in zip(region, kept):
                    n.next_edges = edges
            for e, g in zip(keys, got):
                k = where.get(e)
                if g is not None and k is not None:
                    result[k] = g if result[k] is None else result[k] + g
        return result

    def _tip(self):
        return "" if self._debug else "\n" + _TIP

    def _verify(self, flat, outs):
        bad = []
        if len(outs) != len(self._metas):
            bad.append(f"number of differentiable outputs: {len(self._metas)} then {len(outs)}")
        for k, (o, m) in enumerate(zip(outs, self._metas)):
            if not isinstance(o, Tensor) or not o.requires_grad:
                bad.append(f"output {k}: a tensor requiring grad, then {type(o).__name__}")
            elif _meta(o) != m:
                bad.append(f"output {k}: {m} then {_meta(o)}")
        if bad:
            raise CheckpointError("ember.utils.checkpoint: Recomputed values for the following tensors have "
                                  "different metadata than during the forward pass.\n" + "\n".join(bad) + "."
                                  + self._tip())


def _checkpoint_non_reentrant(function, preserve, context_fn, determinism_check, debug, args, kwargs):
    if determinism_check not in _DETERMINISM:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM)}, but got {determinism_check}")
    debug = _DEBUG if _DEBUG is not None else debug
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    forward_ctx, _ = context_fn()
    rng = _get_rng(args) if preserve else None
    start = next(_graph._seq)
    with forward_ctx:
        out = function(*args, **kwargs)
    end = next(_graph._seq)
    flat = []
    build = _flatten(out, flat)
    grad_idx = [i for i, t in enumerate(flat) if isinstance(t, Tensor) and t.requires_grad]
    if not grad_idx:
        return out
    _, boundary = _region([flat[i] for i in grad_idx], start, end)
    saved = [SavedTensor(a) if isinstance(a, Tensor) else a for a in args]
    node = CheckpointBackward(boundary, (function, saved, dict(kwargs), rng, lambda: context_fn()[1]), grad_idx,
                              [_meta(flat[i]) for i in grad_idx], determinism_check == "default", debug)
    new = list(flat)
    for k, i in enumerate(grad_idx):      # the outputs, re-attached: the region (and what it saved) is dropped
        t = flat[i].detach()
        t._grad_fn, t._output_nr, t._requires_grad = node, k, True
        new[i] = t
    del flat, out
    return build(new)


# ----------------------------------------------------------------------------- public API

_NO_REENTRANT_ARG = ("ember.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                     "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                     "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                     "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                     "two variants.")


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping what it saves for backward; backward recomputes it
    (matches torch.utils.checkpoint.checkpoint).

    :param function: the function to run; its outputs may be a tensor or nested tuples / lists / dicts
        (non-reentrant) or a tensor / tuple of tensors (reentrant).
    :param use_reentrant: which variant (see the module docstring). Not passing it warns (UserWarning,
        PyTorch 2.13's text) and picks True, as PyTorch does.
    :param preserve_rng_state: (keyword, default True) replay the random state of the first run in the
        recomputation (cpu and the devices of the tensor arguments), so dropout masks agree.
    :param context_fn: non-reentrant only: returns two context managers, for the forward and for the
        recomputation.
    :param determinism_check: ``"default"`` (compare the recomputation's outputs: CheckpointError on a
        difference) or ``"none"``; ValueError otherwise.
    :param debug: non-reentrant only: errors without the tip to turn debug on.
    :param early_stop: accepted for compatibility (ember always recomputes the whole function).
    :returns: what ``function`` returns.
    :raises ValueError: keyword arguments, ``context_fn`` or ``debug`` with ``use_reentrant=True``;
        ``debug=True`` with a custom ``context_fn``; an unknown ``determinism_check``.
    :raises RuntimeError: reentrant backward reached through ``autograd.grad`` / ``backward(inputs=)``; a
        second backward through a freed graph; a tensor argument modified in place before backward.
    """
    if use_reentrant is None:
        warnings.warn(_NO_REENTRANT_ARG, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_non_reentrant(function, preserve, context_fn, determinism_check, debug, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split ``functions`` (an ``nn.Sequential`` or a list of modules / functions) into ``segments`` chunks and
    checkpoint every chunk but the last (matches torch.utils.checkpoint.checkpoint_sequential).

    :param input: the one tensor the first function takes; each function takes its predecessor's output.
    :param preserve_rng_state: (keyword, default True) as for ``checkpoint``.
    :raises ValueError: another keyword argument ("Unexpected keyword arguments: ...").
    """
    if use_reentrant is None:
        warnings.warn("ember.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default "
                      "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
