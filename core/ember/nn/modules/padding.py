"""Padding layers: Zero/Constant/Reflection/Replication/CircularPad{1,2,3}d (matches torch.nn);
computed by ember.nn.functional.pad, whose errors they raise. ``padding`` is an int (the same on
every side) or a tuple of 2 * n ints (left, right, top, bottom, front, back).
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


def _expand(padding, n):
    """An int padding repeated on the 2 * n sides; a tuple kept as given."""
    return (padding,) * (2 * n) if isinstance(padding, int) else tuple(padding)


class _PadNd(Module):
    """A padding layer: F.pad(input, self.padding, mode) over the last ``_n`` dims."""

    __constants__ = ["padding"]
    _mode = "constant"
    _n = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _expand(padding, self._n)

    def forward(self, input):
        """F.pad with this layer's padding and mode: same dtype, the padded dims grown."""
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        """Settings shown inside the repr: the padding tuple."""
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        """F.pad(input, padding, 'constant', value)."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        """Settings shown inside the repr: ``padding=..., value=...``."""
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        """Settings shown inside the repr: the padding tuple."""
        return f"{self.padding}"


class CircularPad1d(_PadNd):
    """Pad the last 1 dim(s) with the wrapped-around input (matches torch.nn.CircularPad1d)."""

    _mode = "circular"
    _n = 1


class CircularPad2d(_PadNd):
    """Pad the last 2 dim(s) with the wrapped-around input (matches torch.nn.CircularPad2d)."""

    _mode = "circular"
    _n = 2


class CircularPad3d(_PadNd):
    """Pad the last 3 dim(s) with the wrapped-around input (matches torch.nn.CircularPad3d)."""

    _mode = "circular"
    _n = 3


class ConstantPad1d(_ConstantPadNd):
    """Pad the last 1 dim(s) with a constant ``value`` (matches torch.nn.ConstantPad1d)."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dim(s) with a constant ``value`` (matches torch.nn.ConstantPad2d)."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dim(s) with a constant ``value`` (matches torch.nn.ConstantPad3d)."""

    _n = 3


class ReflectionPad1d(_PadNd):
    """Pad the last 1 dim(s) with the input reflected at the border (matches torch.nn.ReflectionPad1d)."""

    _mode = "reflect"
    _n = 1


class ReflectionPad2d(_PadNd):
    """Pad the last 2 dim(s) with the input reflected at the border (matches torch.nn.ReflectionPad2d)."""

    _mode = "reflect"
    _n = 2


class ReflectionPad3d(_PadNd):
    """Pad the last 3 dim(s) with the input reflected at the border (matches torch.nn.ReflectionPad3d)."""

    _mode = "reflect"
    _n = 3


class ReplicationPad1d(_PadNd):
    """Pad the last 1 dim(s) with the border value repeated (matches torch.nn.ReplicationPad1d)."""

    _mode = "replicate"
    _n = 1


class ReplicationPad2d(_PadNd):
    """Pad the last 2 dim(s) with the border value repeated (matches torch.nn.ReplicationPad2d)."""

    _mode = "replicate"
    _n = 2


class ReplicationPad3d(_PadNd):
    """Pad the last 3 dim(s) with the border value repeated (matches torch.nn.ReplicationPad3d)."""

    _mode = "replicate"
    _n = 3


class ZeroPad1d(_ZeroPadNd):
    """Pad the last 1 dim(s) with zeros (matches torch.nn.ZeroPad1d)."""

    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last 2 dim(s) with zeros (matches torch.nn.ZeroPad2d)."""

    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last 3 dim(s) with zeros (matches torch.nn.ZeroPad3d)."""

    _n = 3
