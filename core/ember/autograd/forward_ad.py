"""Forward-mode automatic differentiation with dual tensors (matches torch.autograd.forward_ad).

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        y = f(x)                                   # any ember ops
        value, jvp = fwAD.unpack_dual(y)           # jvp = J_f(primal) @ tangent

How: ember has no forward-mode formulas; tangents are derived from the reverse-mode graph when they
are read. ``make_dual`` returns a tensor the autograd engine tracks (a fresh leaf, or a view of the
primal when that already requires grad) and files its tangent under the current level. Ops on it
record the ordinary backward graph. ``unpack_dual(y)`` computes ``J t`` by the double-vjp trick: with
``u`` a zero tensor shaped like ``y`` that requires grad, ``g(u) = u^T J`` (a backward pass recorded
with ``create_graph``) is linear in ``u``, so the vjp of ``g`` in direction ``t`` with respect to ``u``
is ``J t`` (the sum over every dual tensor of the level). The values equal forward mode's; the cost is
two backward passes per ``unpack_dual`` instead of one extra pass during the forward.

Known differences from PyTorch: a dual tensor reports ``requires_grad=True`` (it is tracked by the
reverse-mode engine), ``unpack_dual``'s primal is detached (no reverse-mode history), ops run under ``no_grad`` / ``inference_mode`` do not carry tangents, and
in-place updates of a dual tensor's tangent (``tangent.add_``) after ``make_dual`` are seen by later
``unpack_dual`` calls (the tangent is read when unpacked).
"""
from __future__ import annotations

import collections

from .._tensor import Tensor
from .grad_mode import enable_grad

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]


class UnpackedDualTensor(collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """``(primal, tangent)`` as ``unpack_dual`` returns it (tangent None when there is none)."""


class _Level:
    def __init__(self, index):
        self.index = index
        self.duals = {}              # id(dual tensor) -> (dual tensor, tangent)


_levels: list = []


def enter_dual_level():
    """Open a new forward-AD level and return its index (RuntimeError when one is open: nesting is not
    supported, as in PyTorch)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append(_Level(0))
    return 0


def exit_dual_level(*, level=None):
    """Close the level (the last one opened); every tangent filed under it is dropped."""
    if not _levels or (level is not None and level != _levels[-1].index):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _levels.pop()


def _level(level, what):
    if not _levels:
        if what == "make":
            raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                               "enter_dual_level() first.")
        return None
    if level is not None and level != _levels[-1].index:
        raise RuntimeError("Invalid level given to _make_dual" if what == "make" else
                           "Invalid level given to _unpack_dual")
    return _levels[-1]


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: ``tensor``'s values carrying ``tangent`` through the ember ops applied to it.

    :param tensor: the primal (floating point or complex).
    :param tangent: its tangent, same shape (and a floating dtype).
    :raises RuntimeError: no level open; a tangent of another size (PyTorch's message).
    :raises ValueError: an integer primal or tangent.
    """
    lv = _level(level, "make")
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.dtype.is_floating_point or tangent.dtype.is_complex):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    with enable_grad():
        if tensor.requires_grad:
            dual = tensor.view_as(tensor)
        else:
            dual = tensor.detach().requires_grad_(True)
    lv.duals[id(dual)] = (dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """``UnpackedDualTensor(primal, tangent)`` of ``tensor``: its values and the Jacobian-vector product of
    the dual tensors it was computed from with their tangents (None when it depends on none, or outside a
    level). The primal is ``tensor`` detached: it carries no tangent (and, unlike PyTorch's, no reverse-mode
    history either: ember cannot separate the two in one graph).
    """
    lv = _level(level, "unpack")
    if lv is None or not isinstance(tensor, Tensor) or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    entry = lv.duals.get(id(tensor))
    if entry is not None and entry[0] is tensor:
        return UnpackedDualTensor(_primal(tensor, lv), entry[1])
    duals = [(d, t) for d, t in lv.duals.values()]
    if not duals:
        return UnpackedDualTensor(tensor, None)
    from . import grad
    with enable_grad():
        u = tensor.detach().new_zeros(tensor.shape).requires_grad_(True)
        gs = grad([tensor], [d for d, _ in duals], [u], retain_graph=True, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, (_, t) in zip(gs, duals) if g is not None]
        if not pairs:
            return UnpackedDualTensor(tensor, None)
        live = [(g, t) for g, t in pairs if g.requires_grad]
        if live:
            tangent, = grad([g for g, _ in live], [u], [t for _, t in live], retain_graph=True, allow_unused=True)
        else:
            tangent = None
        if tangent is None:                 # used, but through a constant Jacobian path: J t = 0
            tangent = u.detach().new_zeros(tensor.shape)
    return UnpackedDualTensor(_primal(tensor, lv), tangent)


def _primal(tensor, lv):
    return tensor.detach()


class dual_level:
    """``with dual_level():`` - a forward-AD level for the block (matches torch.autograd.forward_ad.dual_level);
    the tangents made inside are dropped on exit."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
