"""Parameter and Buffer: the tensors a Module registers (matches torch.nn.Parameter / torch.nn.Buffer).

A ``Parameter`` is a real ``Tensor`` subclass (``isinstance(p, ember.Tensor)`` holds) built
the way every ember tensor is built: ``object.__new__`` plus the Tensor slots, copied from
the data tensor, so it shares the data's storage and version counter and is a leaf. Ops on
a Parameter return plain Tensors, as in PyTorch. Views (``p.t()``), ``p.detach()`` and
``p.data`` are plain Tensors too.
"""
from __future__ import annotations

from collections import OrderedDict

from .._tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]

_new = object.__new__


def _as_subclass(cls, data):
    """A ``cls`` instance over ``data``'s storage and geometry (no autograd history)."""
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}(): argument 'data' (position 1) must be Tensor, not {type(data).__name__}")
    t = _new(cls)
    t._storage, t._shape, t._stride, t._offset = data._storage, data._shape, data._stride, data._offset
    t._dtype, t._device, t._native = data._dtype, data._device, data._native
    if data._vc is None:            # share the version counter, as detach() does
        data._vc = [0]
    t._vc = data._vc
    return t


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)``: shares ``data``'s storage (an empty float
    tensor when ``data`` is None) and is always a leaf. RuntimeError "Only Tensors of
    floating point and complex dtype can require gradients" for an integer ``data`` with
    ``requires_grad=True``; TypeError when ``data`` is not a Tensor.
    Matches torch.nn.Parameter (repr "Parameter containing:\\ntensor(...)").
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .. import empty
            data = empty(0)
        t = _as_subclass(cls, data)
        if requires_grad:
            if not (t._dtype.is_floating_point or t._dtype.is_complex):
                raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
            t.requires_grad_(True)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass                         # everything happens in __new__ (Tensor.__init__ refuses calls)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        from .. import no_grad
        with no_grad():
            result = type(self)(Tensor.clone(self), self._requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        # the data travels as a plain Tensor (pickled by ember's tensor reducer)
        return (_rebuild_parameter, (Tensor.detach(self), self._requires_grad, OrderedDict()))


def _rebuild_parameter(data, requires_grad, backward_hooks):
    """Unpickling helper for Parameter (the hooks argument is kept for PyTorch's layout; unused)."""
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A tensor that is a module buffer: assigning one to a Module attribute registers it as a
    buffer with ``persistent`` (matches torch.nn.Buffer). ``Buffer(data, *, persistent=True)``."""

    __slots__ = ()

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .. import empty
            data = empty(0)
        t = _as_subclass(cls, data)
        if data._requires_grad:
            t.requires_grad_(True)
        t.__dict__["persistent"] = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass

    def __reduce_ex__(self, protocol):
        return (_rebuild_buffer, (Tensor.detach(self), self.__dict__.get("persistent", True)))


def _rebuild_buffer(data, persistent):
    return Buffer(data, persistent=persistent)


class UninitializedTensorMixin:
    """What the uninitialized tensors of lazy modules share: no data yet (an empty tensor carries the
    dtype and device), ``materialize(shape)`` gives them storage and turns them into ``cls_to_become``
    in place, so a module keeps the same object (matches torch.nn.parameter.UninitializedTensorMixin;
    ember does not intercept every op on them, only ``shape``, ``share_memory_`` and the repr).
    """

    __slots__ = ()
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Give the tensor uninitialised storage of ``shape`` (on ``device``, of ``dtype``: its own when
        None) and make it a ``cls_to_become`` (Parameter or Tensor), in place."""
        from .. import empty
        device = self._device if device is None else device
        dtype = self._dtype if dtype is None else dtype
        Tensor.data.__set__(self, empty(shape, device=device, dtype=dtype))
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self._requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet: a lazy module materializes it at its first forward
    (matches torch.nn.parameter.UninitializedParameter). ``UninitializedParameter(requires_grad=True,
    device=None, dtype=None)``."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from .. import empty
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._requires_grad, self._device, self._dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet: a lazy module materializes it into a plain Tensor at its
    first forward (matches torch.nn.parameter.UninitializedBuffer). ``UninitializedBuffer(
    requires_grad=False, device=None, dtype=None, persistent=True)``."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        from .. import empty
        t = _as_subclass(cls, empty(0, device=device, dtype=dtype))
        if requires_grad:
            t.requires_grad_(True)
        t.__dict__["persistent"] = persistent
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


def is_lazy(param):
    """Whether ``param`` is an uninitialized parameter or buffer (matches torch.nn.parameter.is_lazy)."""
    return isinstance(param, UninitializedTensorMixin)
