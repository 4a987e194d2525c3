"""The autograd methods of Tensor (backward, hooks, retain_grad, detach_, requires_grad_),
and the wrapping of the view methods so views record their backward."""
from __future__ import annotations

import builtins
import weakref

from .._grad_state import mark_requires_grad
from .._tensor import Tensor
from .graph import accumulator, grad_edge, RemovableHandle


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad`` (matches torch.Tensor.backward).

    ``gradient`` is required unless the tensor has one element. RuntimeError when the
    tensor does not require grad, when the graph was freed by an earlier backward
    ("Trying to backward through the graph a second time ..."), or when a saved tensor
    was modified in place.
    """
    from . import backward as _backward
    _backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def requires_grad_(self, requires_grad=True):
    """Set whether autograd records operations on this (leaf) tensor; returns self.

    RuntimeError "only Tensors of floating point and complex dtype can require gradients"
    for other dtypes, and for turning it off on a non-leaf. Complex tensors take PyTorch's
    convention: the gradient of a real loss L is dL/d(real) + i dL/d(imag).
    """
    if requires_grad:
        if not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = True
        mark_requires_grad()
    else:
        if self._grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        self._requires_grad = False
    return self


def _get_grad(self):
    """The accumulated gradient (None until a backward reaches this leaf)."""
    if self._grad_fn is not None and not self.__dict__.get("_retains_grad", False) and self._grad is None:
        import warnings
        warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                      "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
                      "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                      UserWarning, stacklevel=2)
    return self._grad


def _set_grad(self, value):
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if value._shape != self._shape:
            raise RuntimeError("assigned grad has data of a different size")
        if value._dtype is not self._dtype:
            raise RuntimeError("assigned grad has data of a different type")
        if value._device != self._device:
            raise RuntimeError("assigned grad has data located on a different device")
    self._grad = value


def register_hook(self, hook):
    """Run ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces
    the gradient. Returns a handle with ``remove()`` (matches torch.Tensor.register_hook)."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    e = grad_edge(self)
    if self._grad_fn is None:
        acc = accumulator(self)
        self.__dict__["_accumulator_strong"] = acc       # hooks live as long as the tensor
        return acc._add_tensor_hook(0, hook)
    return e[0]._add_tensor_hook(e[1], hook)


def register_post_accumulate_grad_hook(self, hook):
    """Run ``hook(tensor)`` after the gradient was accumulated into this leaf's ``.grad``."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    acc = accumulator(self)
    self.__dict__["_accumulator_strong"] = acc
    if acc._post_hooks is None:
        acc._post_hooks = {}
    h = RemovableHandle(acc._post_hooks)
    acc._post_hooks[h._key] = hook
    return h


def retain_grad(self):
    """Keep the gradient of this non-leaf tensor in ``.grad`` after backward (a no-op on leaves).

    RuntimeError "can't retain_grad on Tensor that has requires_grad=False".
    """
    if not self._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self._grad_fn is None or self.__dict__.get("_retains_grad"):
        return
    node, nr = grad_edge(self)
    key = id(self)
    ref = weakref.ref(self, lambda _, key=key: _RETAINING.pop(key, None))
    if node._retain is None:
        node._retain = {}
    node._retain[nr] = ref
    self.__dict__["_retains_grad"] = True
    _RETAINING[key] = ref


# the tensors that retain their grad: an in-place op gives such a tensor a new grad_fn, and
# the engine moves the retention to it before a backward (as PyTorch moves its retains_grad hook)
_RETAINING: dict = {}


def sync_retained():
    """Attach every retaining tensor's retention to its current grad_fn (called by the engine)."""
    for ref in list(_RETAINING.values()):
        t = ref()
        if t is None or t._grad_fn is None:
            continue
        if t._base is not None and t.__dict__.get("_gf_version") != t._version:
            continue        # a view written in place: its history is its base's, as in PyTorch
        node = t._grad_fn
        if node._retain is None:
            node._retain = {}
        node._retain[t._output_nr] = ref


def _retains_grad(self) -> builtins.bool:
    return builtins.bool(self.__dict__.get("_retains_grad", False))


def detach_(self):
    """Detach this tensor from the graph in place: it becomes a leaf that does not require grad."""
    if self._base is not None and self._grad_fn is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
                           "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
                           "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
                           "torch/optim/optimizer.py as the solution.")
    self._grad_fn = None
    self._requires_grad = False
    return self


def _get_data(self):
    """``t.data``: a tensor over the same storage that autograd does not track (matches torch.Tensor.data).

    Unlike ``detach()`` it has its own version counter, so an in-place write through it is
    not seen by the saved-tensor checks of backward (PyTorch's documented hazard)."""
    t = Tensor.detach(self)
    t._vc = None
    return t


def _set_data(self, value):
    """``t.data = other``: ``t`` takes ``other``'s storage, shape, strides, dtype and device,
    keeping its own autograd identity (requires_grad, grad, hooks). Used by ``Module.to``."""
    if not isinstance(value, Tensor):
        raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
    if self._requires_grad and not (value._dtype.is_floating_point or value._dtype.is_complex):
        raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
    self._storage, self._shape, self._stride, self._offset = value._storage, value._shape, value._stride, value._offset
    self._dtype, self._device, self._native = value._dtype, value._device, value._native


def _bind():
    T = Tensor
    T.backward = backward
    T.requires_grad_ = requires_grad_
    T.requires_grad = property(lambda self: self._requires_grad, lambda self, v: requires_grad_(self, v),
                               doc="Whether autograd records operations on this tensor.")
    T.grad = property(_get_grad, _set_grad, doc="The accumulated gradient (None until backward reaches it).")
    T.register_hook = register_hook
    T.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    T.retain_grad = retain_grad
    T.retains_grad = property(_retains_grad, doc="Whether this non-leaf tensor keeps its .grad.")
    T.detach_ = detach_
    T.data = property(_get_data, _set_data, doc="The tensor's data without autograd tracking (see _get_data).")
    T._output_nr = 0


_bind()
