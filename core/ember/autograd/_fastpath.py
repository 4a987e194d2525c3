"""Per-op recorders for the hot path: single-output structured ops.

The generated entry point of such an op runs its kernel and then, when an input
requires grad, calls ``op.rec(result, <the op's arguments>)``. For an op whose
derivative has only plain tensor arguments the recorder is generated from the
derivative (as the entry point is generated from the schema): it builds the node
without ``__init__``, with the edges, saved tensors and shapes that op needs and nothing
else. This keeps the added cost of a recorded op near PyTorch's (benchmarks/bench_autograd.py).
Other ops use ``generic_recorder`` (the general ``_record._build_node``).
"""
from __future__ import annotations

from .._grad_state import STATE
from .._tensor import Tensor
from ._formula import FormulaNode
from .graph import SavedTensor, accumulator, grad_edge, modified_error, _seq

__all__ = ["make_recorder", "generic_recorder", "SavedInput", "save_output"]

_new = object.__new__
_EMPTY: dict = {}


class SavedInput(tuple):
    """A saved input as a plain tuple (tensor, version at save time, its grad_fn then).

    Cheaper to build than a SavedTensor; the node drops it when released.
    """

    __slots__ = ()

    def unpack(self, node=None):
        """The saved tensor; RuntimeError (PyTorch's message) when it was modified in place after being saved."""
        data, version, grad_fn = self
        if data._version != version:
            raise modified_error(data, version, grad_fn, data._output_nr)
        return data

    def release(self):
        """Nothing to release (the node drops the tuple itself)."""
        pass


_tuple_new = tuple.__new__


def save_output(t):
    """A SavedTensor of output ``t`` (kept without its grad_fn)."""
    return SavedTensor(t, is_output=True, output_nr=0)


def _trace():
    import traceback
    return "".join(traceback.format_stack()[:-3])


_TEMPLATE = """
def rec(result, {params}):
    if not result._dtype.is_floating_point:
        if result._dtype.is_complex:     # complex results: the general builder, which checks complex_ok
            _generic(result, {call})
        return
{prologue}
    node = _new(_Node)
    node.next_edges = [{edges}]
    node.seq_nr = _next(_seq)
    node.input_meta = [{metas}]{saved}{scalars}{shapes}
    if _STATE.anomaly:
        node._trace = _trace()
    result._grad_fn = node
    result._requires_grad = True
"""

# per tensor argument: its edge, its (shape, dtype, device) and, when saved, its SavedInput, inline for tensors
# (the common cases: a leaf, or a non-view with a grad_fn) and through the helpers otherwise
_ARG = """
    try:
        gf_{n} = {n}._grad_fn
    except AttributeError:              # a Python number where the schema says Tensor
        e_{n} = m_{n} = None{save_const}
    else:
        m_{n} = ({n}._shape, {n}._dtype, {n}._device)
        if gf_{n} is not None:
            e_{n} = (gf_{n}, {n}._output_nr) if {n}._base is None else _edge({n})
        elif {n}._requires_grad:
            e_{n} = ({n}._accumulator or _acc({n}), 0)
        else:
            e_{n} = None{save}
"""


def make_recorder(op, spec):
    """The recorder of ``op`` for derivative ``spec`` (generated, or the generic one)."""
    if spec.list_args or spec.nondiff_outputs or len(op.schema.returns) != 1 or not op.structured:
        return generic_recorder(op)
    args = op.schema.arguments
    params = []
    star = False
    for a in args:
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        params.append(a.name)
    tensor_args = [a.name for a in args if a.is_tensor]
    prologue = []
    for n in tensor_args:
        saved_here = n in spec.saved_inputs
        prologue.append(_ARG.format(
            n=n,
            save_const=f"\n        s_{n} = _Constant({n})" if saved_here else "",
            save=(f"\n        vc_{n} = {n}._vc\n        s_{n} = _tnew(_SI, ({n}, 0 if vc_{n} is None else "
                  f"vc_{n}[0], gf_{n}))") if saved_here else ""))
    edges = ", ".join(f"e_{n}" if n in spec.formulas else "None" for n in tensor_args)
    metas = ", ".join(f"m_{n}" for n in tensor_args)
    def needed(name):
        users = [a for a in spec.users.get(name, ()) if a in tensor_args]
        return " or ".join(f"e_{a} is not None" for a in users) or "False"
    saved = [f"'{n}': s_{n}" for n in spec.saved_inputs]
    saved = []
    for n in spec.saved_inputs:
        saved.append(f"\n    if {needed(n)}:\n        node.saved['{n}'] = s_{n}")
    for name, i in spec.out_names.items():
        saved.append(f"\n    if {needed(name)}:\n        node.saved[{i}] = _save_output(result)")
    scalars = ", ".join(f"'{n}': {n}" for n in spec.scalar_args)
    shapes = ", ".join(f"'{n}_shape': {n}._shape" for n in spec.shape_args)
    ind = "\n    "
    call = ", ".join(a.name if not a.kwarg_only else f"{a.name}={a.name}" for a in args)
    src = _TEMPLATE.format(params=", ".join(params), call=call, prologue="".join(prologue).rstrip("\n"),
                           edges=edges + ("," if len(tensor_args) == 1 else ""), metas=metas,
                           saved=f"{ind}node.saved = {{}}" + "".join(saved) if saved else "",
                           scalars=f"{ind}node.scalars = {{{scalars}}}" if scalars else "",
                           shapes=f"{ind}node.shapes = {{{shapes}}}" if shapes else "")
    # one node class per op, named after its backward (MulBackward0), holding what every node of it shares
    node_cls = type(spec.name, (FormulaNode,), {"_name": spec.name, "spec": spec, "saved": _EMPTY,
                                                "scalars": _EMPTY, "shapes": _EMPTY, "output_meta": None,
                                                "slots": tuple((n, None) for n in tensor_args),
                                                "__module__": "ember.autograd.graph"})
    from ._record import _Constant
    ns = {"_new": _new, "_Node": node_cls, "_next": next, "_seq": _seq, "_edge": grad_edge, "_acc": accumulator,
          "_tnew": _tuple_new, "_SI": SavedInput, "_Constant": _Constant,
          "_save_output": save_output, "_STATE": STATE, "_trace": _trace, "_generic": generic_recorder(op)}
    exec(compile(src, f"<ember autograd recorder {op.name}>", "exec"), ns)
    return ns["rec"]


def generic_recorder(op):
    """A recorder that binds the arguments by name and uses the general node builder."""
    names = [a.name for a in op.schema.arguments]

    def rec(result, *args, **kwargs):
        from ._record import _build_node, _attach
        kw = dict(zip(names, args))
        kw.update(kwargs)
        from .function import BackwardCFunction
        node = _build_node(op, kw, (result,))
        if node is not None and not isinstance(node, BackwardCFunction):
            _attach(node, (result,))
    return rec
