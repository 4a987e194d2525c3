"""Whole-tensor comparisons: isclose (elementwise), allclose and equal (a Python bool).
Match torch.isclose, torch.allclose, torch.equal.

``isclose`` is declared as an op with a composite written with elementwise ember ops,
so it works on every device whose elementwise kernels exist (a device may register a
fused kernel). ``allclose`` / ``equal`` reduce its result to one Python bool.
"""
from __future__ import annotations

import builtins

from .. import _dtype as D
from .._dispatch import declare
from .._tensor import Tensor
from ._meta import broadcast_shapes, same_device

__all__ = ["isclose", "allclose", "equal"]


def _check_other(other, fn):
    if not isinstance(other, Tensor):
        raise TypeError(f"{fn}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")


def _isclose_meta(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not isinstance(self, Tensor):
        raise TypeError(f"isclose(): argument 'input' (position 1) must be Tensor, not {type(self).__name__}")
    _check_other(other, "isclose")
    if self._dtype is not other._dtype:
        raise RuntimeError(f"{D.torch_name(self._dtype)} did not match {D.torch_name(other._dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    device = same_device(self, other)
    broadcast_shapes(self._shape, other._shape)
    return device, (device.type, self._layout.name, self._dtype)


def _isclose_composite(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    from . import _elementwise as E
    close = E.eq(self, other)
    floating = self._dtype.is_floating_point or self._dtype.is_complex
    if equal_nan and floating:
        close = E.logical_or(close, E.logical_and(E.isnan(self), E.isnan(other)))
    if rtol == 0 and atol == 0:
        return close                      # the inequality degenerates to equality
    a, b = self, other
    if a._dtype is D.bool:                # bool tensors compare in the default float dtype
        a, b = a.to(D.get_default_dtype()), b.to(D.get_default_dtype())
    allowed = E.add(E.abs(E.mul(b, rtol)), atol)
    actual = E.abs(E.sub(a, b))           # integer dtypes wrap around, as PyTorch's do
    within = E.logical_and(E.isfinite(actual), E.le(actual, allowed))
    return E.logical_or(close, within)


isclose = declare("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) "
                  "-> Tensor", _isclose_meta, structured=False, composite=_isclose_composite,
                  doc="Elementwise |input - other| <= atol + rtol * |other| (or equal), a bool tensor of the "
                      "broadcast shape (matches torch.isclose). NaNs are close only with equal_nan=True; "
                      "infinities only to themselves. RuntimeError when the dtypes differ ('Float did not match "
                      "Double'), for a negative rtol / atol, or when the shapes do not broadcast; TypeError when "
                      "other is not a tensor.")


def _all_true(mask) -> builtins.bool:
    """Whether every element of the bool tensor ``mask`` is true (True when empty)."""
    import ember
    f = getattr(ember, "all", None)
    if f is not None:
        return builtins.bool(f(mask))
    return builtins.bool(mask._host().all())  # a host read of the mask, until ember.all exists


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> builtins.bool:
    """Whether ``isclose(input, other, rtol, atol, equal_nan)`` holds everywhere, as a Python bool
    (matches torch.allclose; shapes broadcast). Same errors as :func:`isclose`."""
    return _all_true(isclose(input, other, rtol, atol, equal_nan))


def equal(input, other) -> builtins.bool:
    """True when both tensors have the same shape and equal elements (values compare after type
    promotion; NaN is unequal to itself), as a Python bool (matches torch.equal). TypeError when
    other is not a tensor; RuntimeError for tensors on different devices."""
    if not isinstance(input, Tensor):
        raise TypeError(f"equal(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    _check_other(other, "equal")
    same_device(input, other)
    if input._shape != other._shape:
        return False
    if input.numel() == 0:
        return True
    from . import _elementwise as E
    return _all_true(E.eq(input, other))


def _bind():
    Tensor.isclose = isclose
    Tensor.allclose = allclose
    Tensor.equal = equal


_bind()
