"""Custom differentiable functions (matches torch.autograd.Function).

    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

``forward`` may instead take no ctx, with a static ``setup_context(ctx, inputs, output)``
filling ctx (PyTorch 2 style). ``forward`` runs with grad mode off; ``backward`` runs with grad mode on exactly when
the backward pass was asked to ``create_graph`` (so a backward written with ember ops
is itself differentiable, unless decorated with ``once_differentiable``).
"""
from __future__ import annotations

import functools

from .._grad_state import STATE
from .._tensor import Tensor
from .graph import Node, SavedTensor, grad_edge, _SECOND_TIME

__all__ = ["Function", "FunctionCtx", "once_differentiable", "BackwardCFunction"]


class FunctionCtx:
    """The ``ctx`` of a custom Function: what forward leaves for backward."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for backward; read them back with ``saved_tensors`` (version-checked)."""
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        """Declare inputs that forward modified in place (they must be returned as outputs)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that get no gradient (e.g. indices)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""

    def __init__(self, cls, edges):
        Node.__init__(self, edges)
        self._name = cls.__name__ + "Backward"
        self._cls = cls
        self._saved = None
        self._to_save = ()
        self._dirty = ()
        self._non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._output_meta = []
        self._released = False

    @property
    def saved_tensors(self):
        """The tensors given to save_for_backward (RuntimeError if modified in place or freed)."""
        if self._released:
            raise RuntimeError(_SECOND_TIME)
        if self._saved is None:
            return tuple(self._to_save)     # still in forward
        return tuple(s.unpack(self) if s is not None else None for s in self._saved)

    def release(self):
        """Free the saved tensors after a backward without retain_graph; a later ``saved_tensors`` or ``apply``
        raises RuntimeError.
        """
        if self._saved:
            self._released = True
            for s in self._saved:
                if s is not None:
                    s.release()

    def apply(self, grads):
        """Run the Function's ``backward`` on ``grads`` (one per forward output; missing ones become zeros of the
        output's shape, dtype and device when ``materialize_grads``) and return one gradient per tensor input
        (None where none is needed), each fitted to the input's shape and dtype.

        RuntimeError when the graph was already freed, when backward returns the wrong number of gradients
        ("function XBackward returned an incorrect number of gradients (expected n, got m)") or a gradient of an
        incompatible shape; TypeError for a gradient that is not a Tensor or None.
        """
        if self._released:
            raise RuntimeError(_SECOND_TIME)
        full = []
        grads = list(grads) + [None] * (len(self._output_meta) - len(grads))
        for g, m in zip(grads, self._output_meta):
            if g is None and m is not None and self.materialize_grads:   # zeros, as PyTorch (also for
                # outputs marked non-differentiable: backward gets one gradient per output)
                from .._ops._creation import zeros
                g = zeros(m[0], dtype=m[1], device=m[2])
            full.append(g)
        res = self._cls.backward(self, *full)
        if not isinstance(res, tuple):
            res = (res,)
        n_inputs = len(self.needs_input_grad)
        if len(res) < n_inputs or (len(res) > n_inputs and any(r is not None for r in res[n_inputs:])):
            raise RuntimeError(f"function {self._name} returned an incorrect number of gradients (expected "
                               f"{n_inputs}, got {len(res)})")
        out = []
        for i, inp_idx in enumerate(self._tensor_positions):
            g = res[inp_idx]
            if g is not None and self.next_edges[i] is not None:
                from ._formula import _fit
                if not isinstance(g, Tensor):
                    raise TypeError(f"function {self._name} returned a gradient of type {type(g).__name__} "
                                    f"for input {inp_idx}; expected a Tensor or None")
                if g._shape != self._input_meta[i][0]:
                    try:
                        g = _fit(g, self._input_meta[i])
                    except RuntimeError:
                        raise RuntimeError(f"Function {self._name} returned an invalid gradient at index {inp_idx} "
                                           f"- got [{', '.join(map(str, g._shape))}] but expected shape compatible "
                                           f"with [{', '.join(map(str, self._input_meta[i][0]))}]") from None
                elif g._dtype is not self._input_meta[i][1]:
                    g = _fit(g, self._input_meta[i])
                out.append(g)
            else:
                out.append(None)
        return out


class _FunctionMeta(type):
    pass


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable operations (see the module docstring)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs from the inputs; override it as ``forward(ctx, *args, **kwargs)`` (or without ctx
        when ``setup_context`` is defined). The base raises NotImplementedError (matches
        torch.autograd.Function.forward).
        """
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Return one gradient per forward input (None for non-tensors or inputs needing none) given one gradient
        per forward output; override it. The base raises NotImplementedError (matches
        torch.autograd.Function.backward).
        """
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional (PyTorch 2 style): with it, ``forward(*args)`` takes no ctx and this fills
        ctx from the inputs (a tuple) and the output instead."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward and, when an input requires grad and grad mode is on, record the node."""
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        record = STATE.enabled and any(args[i]._requires_grad for i in positions)
        edges = [grad_edge(args[i]) if record else None for i in positions]
        node = BackwardCFunction(cls, edges)
        node.needs_input_grad = tuple(isinstance(a, Tensor) and record and a._requires_grad for a in args)
        node._tensor_positions = positions
        node._input_meta = [(args[i]._shape, args[i]._dtype) for i in positions]
        prev_enabled = STATE.enabled
        STATE.enabled = False
        STATE.update()
        try:
            if cls.setup_context is Function.setup_context:
                result = cls.forward(node, *args, **kwargs)
            else:
                result = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, result)
        finally:
            STATE.enabled = prev_enabled
            STATE.update()
        if not record:
            return result
        return _wrap_outputs(node, args, result)


def _wrap_outputs(node, args, result):
    single = not isinstance(result, tuple)
    outputs = (result,) if single else result
    dirty = {id(t) for t in node._dirty}
    nondiff = {id(t) for t in node._non_differentiable}
    input_ids = {id(a) for a in args if isinstance(a, Tensor)}
    from ._record import check_inplace
    new_outputs = []
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            node._output_meta.append(None)
            new_outputs.append(o)
            continue
        if id(o) in input_ids and id(o) not in dirty:
            o = o.detach()            # an input returned as is: a new tensor aliasing it
        if id(o) in dirty:
            if o._grad_fn is None and o._requires_grad and o._base is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            check_inplace(o)
        diff = (o._dtype.is_floating_point or o._dtype.is_complex) and id(outputs[i]) not in nondiff
        node._output_meta.append((o._shape, o._dtype, o._device))
        if diff:
            if id(o) in dirty and o._base is not None:
                from ._record import rebase_history
                rebase_history(o, node)
            else:
                o._grad_fn = node
                o._output_nr = i
                o._requires_grad = True
                if o._base is not None:         # a view forward returned: node is its history, as it is
                    o.__dict__["_gf_version"] = o._version
        new_outputs.append(o)
    out_ids = {id(o): i for i, o in enumerate(new_outputs) if isinstance(o, Tensor)}
    saved = []
    for t in node._to_save:
        if t is None:
            saved.append(None)
        elif id(t) in out_ids and t._grad_fn is node:
            saved.append(SavedTensor(t, is_output=True, output_nr=out_ids[id(t)]))
        else:
            saved.append(SavedTensor(t))
    node._saved = saved
    node._to_save = ()
    node.num_outputs = len(outputs)
    return new_outputs[0] if single else tuple(new_outputs)


def once_differentiable(fn):
    """Decorator for a backward that is not itself differentiable: it runs with grad mode off,
    and differentiating its result raises RuntimeError."""
    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        prev_enabled = STATE.enabled
        STATE.enabled = False
        STATE.update()
        try:
            res = fn(ctx, *grads)
        finally:
            STATE.enabled = prev_enabled
            STATE.update()
        if not prev_enabled or not any(isinstance(g, Tensor) and g._requires_grad for g in grads):
            return res
        single = not isinstance(res, tuple)
        outs = (res,) if single else res
        edges = [grad_edge(g) for g in grads if isinstance(g, Tensor) and g._requires_grad]
        err = _OnceDifferentiableError(edges)
        wrapped = []
        for r in outs:
            if isinstance(r, Tensor) and (r._dtype.is_floating_point or r._dtype.is_complex):
                r = r.detach()
                r._grad_fn, r._requires_grad = err, True
            wrapped.append(r)
        return wrapped[0] if single else tuple(wrapped)
    return wrapper


class _OnceDifferentiableError(Node):
    _name = "DelayedError"

    def apply(self, grads):
        """RuntimeError: a @once_differentiable backward was differentiated again (matches PyTorch's error)."""
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


class CustomOpDerivative:
    """The derivative of a plugin-defined op given by ``ember.library.register_autograd``."""

    custom = True
    nondiff_outputs = frozenset()

    def __init__(self, op, backward, setup_context):
        self.op = op
        self.setup_context = setup_context
        name = "".join(p[:1].upper() + p[1:] for p in op.name.split("_"))
        self.cls = type(name, (), {"backward": staticmethod(backward)})

    def make_node(self, kwargs, outputs):
        """The node of one call: inputs in schema order, outputs as returned."""
        args = [kwargs[a.name] for a in self.op.schema.arguments]
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        edges = [grad_edge(args[i]) for i in positions]
        node = BackwardCFunction(self.cls, edges)
        node.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        node._tensor_positions = positions
        node._input_meta = [(args[i]._shape, args[i]._dtype) for i in positions]
        if self.setup_context is not None:
            self.setup_context(node, tuple(args), outputs[0] if len(outputs) == 1 else tuple(outputs))
        result = outputs[0] if len(outputs) == 1 else tuple(outputs)
        _wrap_outputs(node, (), result)
        return node
