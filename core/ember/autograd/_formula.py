"""Derivative formulas, compiled from the table in ``derivatives``, and the node that runs them.

A formula is a Python expression over these names (as PyTorch's derivatives.yaml):

* the op's schema arguments (``self``, ``other``, ``dim``, ``alpha``, ...): a tensor
  argument named in any formula is *saved* (with its version) when the op is recorded;
* ``<arg>_shape``: the shape of a tensor argument, recorded without saving the tensor;
* ``grad`` (the gradient of output 0) and ``grads`` (all output gradients, zeros for
  outputs that got none; ``grads_defined`` says which were given), ``result`` (output 0)
  and ``result0``, ``result1``, ... and the schema's return names (``values``,
  ``indices``): outputs named in a formula are saved;
* the helpers of ``derivatives._helpers`` and every ``ember`` function.

The formula for a ``Tensor[]`` argument returns a list. Gradients are summed over
broadcast dims and cast to each input's dtype by the node, so formulas need not.
"""
from __future__ import annotations

import builtins

from .._tensor import Tensor
from .graph import Node, SavedTensor, _SECOND_TIME

__all__ = ["Derivative", "FormulaNode", "NotImplementedNode"]


def _camel(op_name):
    return "".join(p[:1].upper() + p[1:] for p in op_name.split("_"))


class Derivative:
    """The compiled derivative of one op: a formula per differentiable input."""

    def __init__(self, op, formulas: dict, name=None, nondiff_outputs=(), namespace=None):
        self.op = op
        self.name = name or f"{_camel(op.name)}Backward0"
        self.nondiff_outputs = frozenset(nondiff_outputs)
        schema = op.schema
        self.tensor_args = [a.name for a in schema.arguments if a.is_tensor]
        self.list_args = {a.name for a in schema.arguments if a.is_tensor and a.type.endswith("[]")}
        self.scalar_args = [a.name for a in schema.arguments if not a.is_tensor]
        returns = [r.name for r in schema.returns]
        outs = {"result": 0, **{f"result{i}": i for i in range(len(returns))},
                **{n: i for i, n in enumerate(returns) if n}}
        known = set(self.tensor_args) | set(self.scalar_args) | {"grad", "grads", "grads_defined"} | set(outs) | \
            {f"{a}_shape" for a in self.tensor_args}
        self.formulas = {}
        used = set()
        for arg, expr in formulas.items():
            if arg not in self.tensor_args:
                raise ValueError(f"derivative of '{op.name}': '{arg}' is not a tensor argument of {schema.text}")
            code = compile(expr, f"<derivative of {op.name} for {arg}>", "eval")
            params = list(dict.fromkeys(n for n in _names(code) if n in known))
            fn = eval(compile(f"lambda {', '.join(params)}: {expr}", f"<derivative of {op.name} for {arg}>",
                              "eval"), namespace)
            self.formulas[arg] = (fn, params)
            used.update(params)
        self.saved_inputs = [a for a in self.tensor_args if a in used]
        # saved name -> the inputs whose formulas use it: it is saved only when one of them needs a
        # gradient (as PyTorch: x * 2 does not save x), so unrelated in-place writes stay legal
        self.users = {}
        for arg, (fn, params) in self.formulas.items():
            for p in params:
                self.users.setdefault(p, []).append(arg)
        self.saved_outputs = sorted({outs[n] for n in used if n in outs})
        self.out_names = {n: i for n, i in outs.items() if n in used}
        self.shape_args = [a for a in self.tensor_args if f"{a}_shape" in used]
        self.uses_grads = "grads" in used


def _names(code):
    names = list(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names.extend(_names(c))
    return names + list(code.co_varnames)


class FormulaNode(Node):
    """The backward of a recorded op: runs its Derivative's formulas."""

    released = False

    def __init__(self, spec, edges, slots, input_meta, saved, scalars, shapes, output_meta):
        super().__init__(edges)
        self._name = spec.name
        self.spec = spec
        self.slots = slots              # per edge: (arg name, index in a Tensor[] or None)
        self.input_meta = input_meta    # per edge: (shape, dtype, device)
        self.saved = saved              # arg name -> SavedTensor | [SavedTensor]; output index -> SavedTensor
        self.scalars = scalars          # non-tensor args
        self.shapes = shapes            # "<arg>_shape" -> shape
        self.output_meta = output_meta  # per output: (shape, dtype, device) | None (not differentiable)
        self.num_outputs = len(output_meta)
        self.released = False

    def release(self):
        """Release the saved tensors after backward (a second backward through this node then raises RuntimeError)."""
        if self.saved:
            self.released = True
            for v in self.saved.values():
                for s in (v if isinstance(v, list) else (v,)):
                    s.release()
            self.saved = None

    def _env(self, grads):
        if self.released:
            raise RuntimeError(_SECOND_TIME)
        spec = self.spec
        env = {**self.scalars, **self.shapes} if (self.scalars or self.shapes) else {}
        saved = self.saved
        if saved:
            for name in spec.saved_inputs:
                v = saved.get(name)
                if v is not None:
                    env[name] = [s.unpack() for s in v] if isinstance(v, list) else v.unpack()
            for n, i in spec.out_names.items():
                v = saved.get(i)
                if v is not None:
                    env[n] = v.unpack(self)
        om = self.output_meta
        env["grads_defined"] = [g is not None for g in grads]
        if om is not None and any(g is None for g in grads):
            grads = list(grads)
            for i, g in enumerate(grads):
                if g is None and om[i] is not None:
                    from .._ops._creation import zeros
                    shape, dtype, device = om[i]
                    grads[i] = zeros(shape, dtype=dtype, device=device)
        env["grad"] = grads[0]
        env["grads"] = grads
        return env

    def apply(self, grads):
        """Node.apply: evaluate the derivative formulas for each input that has an edge; Nones when the node received
        no gradient.
        """
        if self.output_meta is None and grads[0] is None:
            return [None] * len(self.next_edges)     # single-output node reached with no gradient
        env = self._env(grads)
        formulas = self.spec.formulas
        slots, metas = self.slots, self.input_meta
        out = [None] * len(self.next_edges)
        cache = {}
        for i, edge in enumerate(self.next_edges):
            if edge is None:
                continue
            arg, idx = slots[i]
            g = cache.get(arg, _MISSING)
            if g is _MISSING:
                fn, params = formulas[arg]
                g = cache[arg] = fn(*[env[p] for p in params])
            if idx is not None and g is not None:
                g = g[idx]
            if g is not None:
                m = metas[i]
                out[i] = g if (g._shape == m[0] and g._dtype is m[1] and g._device is m[2]) else _fit(g, m)
        return out


_MISSING = object()


def _fit(g, meta):
    """Sum a gradient over broadcast dims, cast it to the input's dtype and move it to the input's device
    (``meta``: (shape, dtype) or (shape, dtype, device)), as PyTorch's engine does with each gradient it
    passes on: the backward of ``x.to(other_device)``, or of an op with a 0-dim cpu tensor among device
    operands, hands the gradient back on the input's own device."""
    shape, dtype = meta[0], meta[1]
    if not isinstance(g, Tensor):
        raise TypeError(f"a derivative formula returned {type(g).__name__}, expected a Tensor")
    if g._shape != shape:
        from ._helpers import sum_to  # noqa: F811
        g = sum_to(g, shape)
    if g._dtype is not dtype:
        g = g.to(dtype)
    if len(meta) > 2 and g._device is not meta[2] and g._device != meta[2]:
        g = g.to(meta[2])
    return g


class NotImplementedNode(Node):
    """The node of a differentiable-looking op with no derivative: raises when reached."""

    def __init__(self, op_name, edges, complex_result=False):
        super().__init__(edges)
        self._name = "NotImplemented"
        self.op_name = op_name
        self.complex_result = complex_result

    def apply(self, grads):
        """Always raises RuntimeError "the derivative for 'OP' is not implemented." (with "for complex
        tensors" when the op has a derivative whose formula is not known to be right for complex values)."""
        if self.complex_result:
            raise RuntimeError(f"the derivative for '{self.op_name}' is not implemented for complex tensors in "
                               f"ember yet (its formula is written for real values).")
        raise RuntimeError(f"the derivative for '{self.op_name}' is not implemented.")
