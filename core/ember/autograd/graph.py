"""The autograd graph: nodes (``grad_fn``), edges, saved tensors and leaf accumulators.

A node is the backward of one recorded op. ``next_functions`` are its edges, one per
differentiable input: ``(node, input_nr)`` of the node that produced that input, the
input's ``AccumulateGrad`` when it is a leaf, or ``(None, 0)`` when it needs no grad.
Saved tensors carry the version they were saved at; unpacking one that has been
modified in place since raises PyTorch's RuntimeError. Matches torch.autograd.graph.
"""
from __future__ import annotations

import itertools
import weakref

from .._grad_state import STATE

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "grad_edge", "accumulator", "RemovableHandle"]

_seq = itertools.count()

_SECOND_TIME = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward.")


class RemovableHandle:
    """Returned by ``register_hook``-style methods; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "_key")
    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self._key = next(RemovableHandle._ids)

    def remove(self):
        """Unregister the hook (a second call does nothing)."""
        self._hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Node:
    """One backward function of the graph (a tensor's ``grad_fn``); matches torch.autograd.graph.Node.

    ``next_functions``: a tuple of ``(node, input_nr)`` per input ((None, 0) for inputs
    that need no gradient). Calling a node with output gradients returns input gradients.
    Subclasses implement ``apply(grads) -> list`` (one entry per edge, None allowed).
    """

    _name = "Node"
    num_outputs = 1
    # rarely set state: class defaults (the recording fast path builds nodes without __init__)
    _pre_hooks = None                  # {key: fn(grad_outputs) -> new grad_outputs | None}
    _hooks = None                      # {key: fn(grad_inputs, grad_outputs) -> new grad_inputs | None}
    _tensor_hooks = None               # {output_nr: {key: fn(grad) -> grad | None}}
    _retain = None                     # {output_nr: weakref of a tensor that retains its grad}
    _trace = None                      # forward traceback (anomaly mode)

    @property
    def metadata(self) -> dict:
        """A dict for users' own annotations of this node."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    def __init__(self, next_edges=()):
        self.next_edges = list(next_edges)      # (node, nr) | None per input
        self.seq_nr = next(_seq)
        if STATE.anomaly:
            import traceback
            self._trace = "".join(traceback.format_stack()[:-3])

    def name(self) -> str:
        """The node's class-like name, e.g. 'MulBackward0'."""
        return self._name

    @property
    def next_functions(self):
        """One (node, output_nr) pair per input of this node, (None, 0) for inputs that need no gradient (matches
        torch.autograd.graph.Node.next_functions).
        """
        return tuple(e if e is not None else (None, 0) for e in self.next_edges)

    def apply(self, grads):
        """Map the gradients of this node's outputs (a list) to a list of gradients, one per entry of
        ``next_edges``; each node type overrides it (the base raises NotImplementedError).
        """
        raise NotImplementedError

    def release(self):
        """Free saved tensors (after a backward without retain_graph)."""

    def __call__(self, *grads):
        return tuple(self.apply(list(grads)))

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        h = RemovableHandle(self._hooks)
        self._hooks[h._key] = fn
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h._key] = fn
        return h

    def _add_tensor_hook(self, nr, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        hooks = self._tensor_hooks.setdefault(nr, {})
        h = RemovableHandle(hooks)
        hooks[h._key] = fn
        return h

    def __repr__(self):
        return f"<{self._name} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """The node of a leaf tensor: the engine adds the incoming gradient to ``variable.grad``.

    The leaf holds its AccumulateGrad strongly (one node per leaf, reused by every op);
    the node refers back to the leaf weakly, so there is no reference cycle.
    """

    _name = "AccumulateGrad"
    _post_hooks = None

    def __init__(self, variable):
        super().__init__(())
        self._variable = weakref.ref(variable)
        # run as soon as it is ready (the engine pops the highest seq_nr first), as PyTorch gives
        # AccumulateGrad the top priority: a leaf's tensor hooks (DDP's gradient-ready hooks)
        # then fire during backward, not after every other node
        self.seq_nr += 1 << 62

    @property
    def variable(self):
        """The leaf tensor (None once it has been freed)."""
        return self._variable()

    def apply(self, grads):
        """Return no gradients (the engine itself adds the incoming gradient to ``variable.grad``)."""
        return []


def accumulator(t) -> AccumulateGrad:
    """The AccumulateGrad node of leaf ``t`` (created on first use, then cached on ``t``)."""
    acc = t._accumulator
    if acc is None:
        acc = t._accumulator = AccumulateGrad(t)
    return acc


def grad_edge(t):
    """The edge gradients of ``t`` flow into: (grad_fn, output_nr), (AccumulateGrad, 0), or None."""
    gf = t._grad_fn
    if gf is not None:
        if t._base is not None and t.__dict__.get("_gf_version") != t._version:
            from . import _record
            gf = _record.regenerate_view_grad_fn(t)
        return (gf, t._output_nr)
    if t._requires_grad:
        return (accumulator(t), 0)
    return None


def _describe(t):
    shape = ", ".join(str(s) for s in t._shape)
    return f"[{t.type()} [{shape}]]"


def modified_error(data, version, grad_fn, output_nr):
    """PyTorch's RuntimeError for a saved tensor written in place after it was saved."""
    which = f", which is output {output_nr} of {grad_fn.name()}," if grad_fn is not None else ""
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"{_describe(data)}{which} is at version {data._version}; expected version {version} instead. "
        f"Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
        f"ember.autograd.set_detect_anomaly(True).")


class SavedTensor:
    """A tensor saved for backward with its version at save time.

    An output of the node that saves it is kept without its grad_fn (no reference cycle)
    and gets the node back when unpacked.
    """

    __slots__ = ("data", "version", "is_output", "output_nr", "grad_fn", "released", "requires_grad")

    def __init__(self, t, is_output=False, output_nr=0):
        self.is_output = is_output
        self.output_nr = output_nr
        self.version = t._version
        self.released = False
        self.requires_grad = is_output or t._requires_grad
        if is_output:
            self.data = t.detach()
            self.grad_fn = None
        else:
            self.data = t
            self.grad_fn = t._grad_fn

    def unpack(self, node=None):
        """The saved tensor; RuntimeError when freed or modified in place since it was saved."""
        if self.released:
            raise RuntimeError(_SECOND_TIME)
        data = self.data
        if data._version != self.version:
            gf = node if self.is_output else self.grad_fn
            raise modified_error(data, self.version, gf, self.output_nr if self.is_output else data._output_nr)
        if self.is_output and node is not None and self.requires_grad:
            t = data.detach()
            t._grad_fn = node
            t._output_nr = self.output_nr
            t._requires_grad = True
            return t
        return data

    def release(self):
        """Drop the saved tensor; a later ``unpack`` raises RuntimeError."""
        self.released = True
        self.data = None
        self.grad_fn = None
