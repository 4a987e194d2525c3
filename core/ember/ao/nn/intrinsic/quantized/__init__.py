"""Quantized fused modules (matches torch.ao.nn.intrinsic.quantized): the ReLU is applied before
requantisation (``ember.ops.quantized.linear_relu`` / ``conv2d_relu``)."""
from __future__ import annotations

from ...quantized import Linear as _QLinear, Conv2d as _QConv2d

__all__ = ["LinearReLU", "ConvReLU2d"]


class LinearReLU(_QLinear):
    """relu(linear(x)) on quantized tensors (matches torch.ao.nn.intrinsic.quantized.LinearReLU)."""

    _op_name = "linear_relu"


class ConvReLU2d(_QConv2d):
    """relu(conv2d(x)) on quantized tensors (matches torch.ao.nn.intrinsic.quantized.ConvReLU2d)."""

    _op_name = "conv2d_relu"
