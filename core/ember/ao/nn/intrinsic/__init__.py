"""Fused float modules that ``fuse_modules`` produces (matches torch.ao.nn.intrinsic).

Each is a Sequential of its parts, so it runs as the float model did; ``prepare`` observes it as one
unit and ``convert`` swaps it for its quantized form (``ember.ao.nn.intrinsic.quantized``), where the
ReLU is applied before requantisation.
"""
from __future__ import annotations

from ... import nn as _nn_root  # noqa: F401  (ember.ao.nn)
from ....nn import Sequential, Linear, Conv2d, ReLU

__all__ = ["LinearReLU", "ConvReLU2d"]


class _FusedModule(Sequential):
    pass


class LinearReLU(_FusedModule):
    """Linear followed by ReLU (matches torch.ao.nn.intrinsic.LinearReLU)."""

    def __init__(self, linear, relu):
        if type(linear) is not Linear or type(relu) is not ReLU:
            raise AssertionError(f"Incorrect types for input modules{type(linear)}{type(relu)}")
        super().__init__(linear, relu)


class ConvReLU2d(_FusedModule):
    """Conv2d followed by ReLU (matches torch.ao.nn.intrinsic.ConvReLU2d)."""

    def __init__(self, conv, relu):
        if type(conv) is not Conv2d or type(relu) is not ReLU:
            raise AssertionError(f"Incorrect types for input modules{type(conv)}{type(relu)}")
        super().__init__(conv, relu)


from . import qat, quantized  # noqa: E402,F401
