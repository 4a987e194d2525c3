"""Fused modules for quantization-aware training (matches torch.ao.nn.intrinsic.qat)."""
from __future__ import annotations

import ember

from ...qat import Linear as _QATLinear, Conv2d as _QATConv2d, _need_qconfig

__all__ = ["LinearReLU", "ConvReLU2d"]


class LinearReLU(_QATLinear):
    """relu(linear(x)) with fake-quantized weights (matches torch.ao.nn.intrinsic.qat.LinearReLU)."""

    def forward(self, input):
        return ember.relu(super().forward(input))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        lin = mod[0]
        lin.qconfig = _need_qconfig(mod)
        return super().from_float(lin)


class ConvReLU2d(_QATConv2d):
    """relu(conv2d(x)) with fake-quantized weights (matches torch.ao.nn.intrinsic.qat.ConvReLU2d)."""

    def forward(self, input):
        return ember.relu(super().forward(input))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        conv = mod[0]
        conv.qconfig = _need_qconfig(mod)
        return super().from_float(conv)
