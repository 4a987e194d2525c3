"""``out=`` for functions written as compositions of ops (nn.functional activations, pools,
clamp_min, ...): the result is computed first, then checked against ``out`` and copied in,
so a failing check leaves ``out`` untouched. Matches PyTorch's rules: ``out`` is resized when
its shape differs (with PyTorch's deprecation warning when it had elements), the result dtype
must cast safely to out's, and out= refuses autograd."""
from __future__ import annotations

from .._factory import check_out
from .._grad_state import STATE as _AG
from .._tensor import Tensor


class _Named:
    """The one attribute of an op that ``check_out``'s messages read."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def check_out_grad(name, out, inputs):
    """RuntimeError, as PyTorch's, when out= is used while an input or ``out`` requires grad."""
    if _AG.check and any(isinstance(t, Tensor) and t._requires_grad for t in (*inputs, out)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")


def write_out(name, result, out, inputs=()):
    """``result`` when ``out`` is None; else ``out`` (checked, resized if needed) holding ``result``.

    :param name: the public op name used in messages ("gelu").
    :param inputs: the tensor arguments, for the autograd and memory-overlap checks.
    """
    if out is None:
        return result
    check_out_grad(name, out, inputs)
    check_out(_Named(name), out, result._shape, result._dtype, result._device)
    out.copy_(result)
    return out
