"""The dispatcher's autograd layer: records graph nodes for op calls, in-place ops and views.

Generated op entry points call ``record_call`` / ``record_inplace`` when grad mode is on
and a tensor argument requires grad. The op then runs *below autograd* (the entry point
again, with recording switched off) and its outputs get a node built from the op's
derivative. In-place ops on views rewrite the history of the view's base (``CopySlices``,
as PyTorch does), and the view's own ``grad_fn`` is regenerated from the base.
"""
from __future__ import annotations

from .._grad_state import BELOW, STATE, mark_requires_grad
from .._tensor import Tensor
from ._formula import FormulaNode, NotImplementedNode
from .function import BackwardCFunction
from .graph import Node, SavedTensor, grad_edge

__all__ = ["record_call", "record_inplace", "record_view", "on_view"]


def _differentiable(t):
    return isinstance(t, Tensor) and (t._dtype.is_floating_point or t._dtype.is_complex)


def _below(fn, kwargs):
    """Run ``fn`` with recording off (the layers below autograd)."""
    with BELOW:
        return fn(**kwargs)


def _build_node(op, kwargs, outputs, self_edge=None, saved_self=None):
    """The node for ``op`` called with ``kwargs`` that produced ``outputs``; None when nothing is differentiable."""
    spec = op.autograd
    if spec is not None and getattr(spec, "custom", False):
        return spec.make_node(kwargs, outputs)
    output_meta = [(o._shape, o._dtype, o._device) if _differentiable(o) else None for o in outputs]
    if spec is not None:
        for i in spec.nondiff_outputs:
            output_meta[i] = None
    if all(m is None for m in output_meta):
        return None
    edges, slots, meta = [], [], []
    first = op.schema.arguments[0].name
    for a in op.schema.arguments:
        if not a.is_tensor:
            continue
        v = kwargs[a.name]
        diff = spec is None or a.name in spec.formulas
        items = [(v, None)] if not (a.type.endswith("[]")) else [(x, i) for i, x in enumerate(v or ())]
        for x, i in items:
            if not isinstance(x, Tensor):
                continue
            if self_edge is not None and a.name == first:
                e = self_edge[0]
            else:
                e = grad_edge(x) if diff else None
            edges.append(e)
            slots.append((a.name, i))
            meta.append((x._shape, x._dtype, x._device))
    if spec is None:
        return NotImplementedNode(op.name, edges)
    if not complex_ok(op.name, kwargs, outputs):
        return NotImplementedNode(op.name, edges, complex_result=True)
    saved = {}
    needs = {slot[0] for slot, e in zip(slots, edges) if e is not None}
    for name in spec.saved_inputs:
        if not any(a in needs for a in spec.users.get(name, ())):
            continue
        v = saved_self if (saved_self is not None and name == first) else kwargs[name]
        if isinstance(v, (list, tuple)):
            saved[name] = [SavedTensor(x) if isinstance(x, Tensor) else _Constant(x) for x in v]
        elif isinstance(v, Tensor):
            saved[name] = SavedTensor(v)
        else:
            saved[name] = _Constant(v)
    for name, i in spec.out_names.items():
        if i not in saved and any(a in needs for a in spec.users.get(name, ())):
            saved[i] = SavedTensor(outputs[i], is_output=True, output_nr=i)
    scalars = {n: kwargs[n] for n in spec.scalar_args}
    shapes = {f"{n}_shape": kwargs[n]._shape if isinstance(kwargs[n], Tensor) else [x._shape for x in kwargs[n]]
              for n in spec.shape_args}
    return FormulaNode(spec, edges, slots, meta, saved, scalars, shapes, output_meta)


class _Constant:
    """A saved argument that is a Python number (a scalar passed where the schema says Tensor)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def unpack(self, node=None):
        """The saved value (any Python object; ``node`` is ignored)."""
        return self.value

    def release(self):
        """Nothing to free: a plain value holds no graph."""
        pass


def complex_ok(op_name, kwargs, outputs):
    """Whether the node of ``op_name`` may be built for these outputs: always for real outputs; for a
    complex one only when the op's formula is right for complex values (``derivatives.COMPLEX_SAFE``).
    Otherwise the node raises when reached rather than give a wrong gradient."""
    if not any(isinstance(o, Tensor) and o._dtype.is_complex for o in outputs):
        return True
    from .derivatives import COMPLEX_SAFE
    return op_name in COMPLEX_SAFE


def _attach(node, outputs):
    for i, o in enumerate(outputs):
        if node.__class__ is FormulaNode and node.output_meta[i] is None:
            continue
        if _differentiable(o):
            o._grad_fn = node
            o._output_nr = i
            o._requires_grad = True


def record_call(op, fn, out, kwargs):
    """Run an out-of-place op below autograd and record its node."""
    if op.schema.arguments[0].mutated:
        return record_inplace(op, fn, kwargs)
    if out is not None:
        raise RuntimeError(f"{op.name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    result = _below(fn, kwargs)
    outputs = tuple(result) if isinstance(result, tuple) else (result,)
    node = _build_node(op, kwargs, outputs)
    if node is not None and node.__class__ is not BackwardCFunction:
        _attach(node, outputs)
    return result


def _needs_grad(v):
    if isinstance(v, (list, tuple)):
        return any(getattr(x, "_requires_grad", False) for x in v)
    return getattr(v, "_requires_grad", False)


def check_inplace(t):
    """PyTorch's errors for an in-place op on a leaf (or a view of a leaf) that requires grad."""
    if t._grad_fn is None and t._requires_grad:
        if t._base is not None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = t._base
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def record_inplace(op, fn, kwargs):
    """Run an in-place op below autograd and rewrite the history of the tensor it writes."""
    first = op.schema.arguments[0].name
    self = kwargs[first]
    check_inplace(self)
    spec = op.autograd
    saved_self = None
    if spec is not None and first in spec.saved_inputs and any(
            _needs_grad(kwargs[a]) for a in spec.users.get(first, ())):
        from .._ops._copy import clone
        saved_self = clone(self)          # the value before the write (recorded: double backward sees it)
    self_edge = (grad_edge(self),)
    version, vc = self._version, self._vc
    _below(fn, kwargs)
    node = _build_node(op, kwargs, (self,), self_edge=self_edge, saved_self=saved_self)
    if node is None:
        return self
    # another argument aliasing self (y.mul_(y), y.mul_(y[0])) was saved after the write: it is
    # saved at its version before it, so backward raises PyTorch's error instead of using new values
    for v in (getattr(node, "saved", None) or {}).values():
        for s in (v if isinstance(v, list) else (v,)):
            data = getattr(s, "data", None)
            if isinstance(s, SavedTensor) and not s.is_output and data is not saved_self and \
                    (data is self or (vc is not None and data._vc is vc)):
                s.version = version
    rebase_history(self, node)
    return self


def rebase_history(self, node):
    """Make ``node`` the history of ``self`` after an in-place write (CopySlices for views)."""
    base = self._base
    if base is None:
        self._grad_fn = node
        self._output_nr = 0
        self._requires_grad = True
        return
    base_edge = grad_edge(base)
    base._grad_fn = CopySlices(base, self, node, base_edge)
    base._output_nr = 0
    base._requires_grad = True
    mark_requires_grad()
    regenerate_view_grad_fn(self)


def regenerate_view_grad_fn(view):
    """``view``'s grad_fn as a view of its base's current history (after the base was written in place)."""
    base = view._base
    edge = grad_edge(base)
    node = AsStridedNode(base, view, edge)
    view._grad_fn = node
    view._output_nr = 0
    view._requires_grad = True
    view.__dict__["_gf_version"] = view._version
    return node


# ---------------------------------------------------------------- geometry helpers
def _geometry(t, base):
    """(shape, stride, offset relative to base's storage start) of ``t``; for a real view of a complex
    base (``real`` / ``imag`` / ``view_as_real``) in the units of the base's real view (``_real_target``)."""
    if t._dtype is not base._dtype and t._dtype.itemsize != base._dtype.itemsize:
        if not (base._dtype.is_complex and not t._dtype.is_complex):
            raise NotImplementedError(f"ember autograd: an in-place write through a {t._dtype} view of a "
                                      f"{base._dtype} tensor that requires grad is not supported")
        return t._shape, t._stride, t._offset - 2 * base._offset
    return t._shape, t._stride, t._offset - base._offset


def _real_target(t, view_dtype):
    """``t`` (laid out like a base) as the tensor a view's geometry addresses: its ``view_as_real`` when the
    view is a real view of a complex base, ``t`` itself otherwise."""
    if t._dtype.is_complex and not view_dtype.is_complex and view_dtype.itemsize * 2 == t._dtype.itemsize:
        from .._ops._complex import view_as_real
        return view_as_real(t)
    return t


def _overlaps(shape, stride):
    """Whether some storage position is reached by two indices (stride-0 / overlapping dims)."""
    dims = sorted((st, s) for s, st in zip(shape, stride) if s > 1)
    extent = 1
    for st, s in dims:
        if st < extent:
            return True
        extent = st * (s - 1) + 1 if st else extent
        extent = max(extent, 1)
    return False


def _scatter_into(target, shape, stride, offset, grad):
    """Add ``grad`` at the positions ``as_strided(shape, stride, offset)`` of ``target``'s storage."""
    v = target.as_strided(shape, stride, target._offset + offset)
    if not _overlaps(shape, stride):
        v.copy_(grad)
        return target
    from .._ops._creation import arange
    extent = target._storage._nbytes // target._dtype.itemsize
    pos = arange(extent, device=target._device).as_strided(shape, stride, target._offset + offset).reshape(-1)
    flat = target.as_strided((extent,), (1,), 0)
    flat.index_add_(0, pos, grad.reshape(-1))
    return target


class CopySlices(Node):
    """The history of a base after an in-place op on one of its views (PyTorch's CopySlices).

    Backward: the base's gradient with the view's slice replaced by the in-place op's
    gradient with respect to the view's old value; the op's other inputs get theirs.
    """

    def __init__(self, base, view, fn, base_edge):
        super().__init__([base_edge] + fn.next_edges[1:])
        self._name = "CopySlices"
        self.fn = fn
        self.base_meta = (base._shape, base._stride, base._dtype, base._device)
        self.geometry = _geometry(view, base)
        self.view_dtype = view._dtype

    def apply(self, grads):
        """Node.apply: the base's gradient with the view's slice replaced by the in-place op's gradient; the op's
        other inputs get theirs.
        """
        from .._ops._creation import empty_strided
        g = grads[0]
        shape, stride, dtype, device = self.base_meta
        result = empty_strided(shape, stride, dtype=dtype, device=device)
        result.copy_(g)
        vshape, vstride, voff = self.geometry
        target = _real_target(result, self.view_dtype)
        grad_slice = target.as_strided(vshape, vstride, target._offset + voff)
        res = self.fn.apply([grad_slice.clone()])
        if self.fn.next_edges and self.fn.next_edges[0] is not None and res[0] is not None:
            grad_slice.copy_(res[0])
        else:
            grad_slice.zero_()
        return [result] + list(res[1:])

    def release(self):
        """Release the wrapped in-place node's saved tensors."""
        self.fn.release()


class AsStridedNode(Node):
    """A view's backward by storage geometry: the gradient scattered into the positions of its
    input (the base after an in-place write, or the tensor a view was made of)."""

    def __init__(self, base, view, edge):
        super().__init__([edge])
        self._name = "AsStridedBackward0"
        self.base_meta = (base._shape, base._stride, base._dtype, base._device)
        self.geometry = _geometry(view, base)

    def apply(self, grads):
        """Node.apply: the gradient scattered into the input's positions by storage geometry (AsStridedScatter)."""
        from ._helpers import AsStridedScatter
        return [AsStridedScatter.apply(grads[0], self.base_meta, self.geometry)]


# ---------------------------------------------------------------- views
class ViewNode(Node):
    """The backward of a view op: reshape, permute, expand, or a scatter of the gradient into
    zeros of the input's shape at the positions the view selects (replaying the view op)."""

    def __init__(self, name, kind, edge, in_meta, arg):
        super().__init__([edge])
        self._name = name
        self.kind = kind
        self.in_meta = in_meta      # (shape, dtype, device)
        self.arg = arg              # permutation, or the replay function

    def apply(self, grads):
        """Node.apply: reshape / permute back, sum_to for expand, else the gradient scattered into zeros by replaying
        the view.
        """
        g = grads[0]
        kind = self.kind
        shape = self.in_meta[0]
        if kind == "reshape":
            return [g.reshape(shape)]
        if kind == "permute":
            inv = [0] * len(self.arg)
            for i, d in enumerate(self.arg):
                inv[d] = i
            return [g.permute(inv)]
        if kind == "expand":
            from ._helpers import sum_to
            return [sum_to(g, shape)]
        from ._helpers import ViewScatter
        return [ViewScatter.apply(g, self.in_meta, self.arg)]


def _permutation(name, self, out, args):
    n = len(self._shape)
    if name == "PermuteBackward0":
        from .._tensor import _size_args, _wrap_dim
        return [_wrap_dim(d, n) for d in _size_args(args, "permute")]
    if name == "TBackward0":
        return [1, 0] if n == 2 else list(range(n))
    from .._tensor import _wrap_dim
    d0, d1 = _wrap_dim(args[0], n), _wrap_dim(args[1], n)
    p = list(range(n))
    p[d0], p[d1] = p[d1], p[d0]
    return p


def record_view(name, kind, orig, self, args, kwargs):
    """Run view op ``orig`` below autograd and record its ViewNode."""
    with BELOW:
        out = orig(self, *args, **kwargs)
    if out._dtype is not self._dtype:
        return out                      # view(dtype): not differentiable
    if out._storage is not self._storage:
        out._base = None                # reshape had to copy: a new tensor, not a view
        if kind == "reshape":
            name = "UnsafeViewBackward0"
    in_meta = (self._shape, self._dtype, self._device)
    if kind == "permute":
        arg = _permutation(name, self, out, args)
    elif kind == "scatter":
        arg = lambda t: orig(t, *args, **kwargs)
    else:
        arg = None
    if kind == "expand" and out._shape == self._shape:
        kind = "reshape"
    node = ViewNode(name, kind, grad_edge(self), in_meta, arg)
    out._grad_fn = node
    out._output_nr = 0
    out._requires_grad = True
    if out._base is not None:
        out.__dict__["_gf_version"] = out._version
    return out


def on_view(base, view):
    """A view made outside the wrapped view methods while recording: record it by geometry."""
    if not (STATE.check and base._requires_grad):
        return
    if _overlaps(base._shape, base._stride):
        raise RuntimeError("ember autograd: cannot record a view of a tensor whose elements overlap in memory "
                           "(e.g. an expanded tensor); call .contiguous() first")
    node = AsStridedNode(base, view, grad_edge(base))
    view._grad_fn = node
    view._output_nr = 0
    view._requires_grad = True
    view.__dict__["_gf_version"] = view._version
