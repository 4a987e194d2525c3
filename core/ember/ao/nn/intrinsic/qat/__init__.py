"""Fused modules for quantization-aware training (matches torch.ao.nn.intrinsic.qat)."""
from __future__ import annotations

import ember

from ...qat import Linear as _QATLinear, Conv2d as _QATConv2d, _need_qconfig

__all__ = ["LinearReLU", "ConvReLU2d"]


class LinearReLU(_QATLinear):
    """relu(linear(x)) with fake-quantized weights (matches torch.ao.nn.intrinsic.qat.LinearReLU)."""

    def forward(self, input):
        """relu(F.linear(input, fake_quant(weight), bias)): float (*, in_features) -> float (*, out_features)
        (matches torch.ao.nn.intrinsic.qat.LinearReLU.forward).
        """
        return ember.relu(super().forward(input))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A LinearReLU sharing the weight and bias of the fused ``mod`` (nni.LinearReLU: Linear then ReLU), with
        ``mod``'s qconfig; AssertionError "Input float module must have a valid qconfig" without one (matches
        torch.ao.nn.intrinsic.qat.LinearReLU.from_float).
        """
        lin = mod[0]
        lin.qconfig = _need_qconfig(mod)
        return super().from_float(lin)


class ConvReLU2d(_QATConv2d):
    """relu(conv2d(x)) with fake-quantized weights (matches torch.ao.nn.intrinsic.qat.ConvReLU2d)."""

    def forward(self, input):
        """relu(conv2d(input, fake_quant(weight), bias)): float (N, C_in, H, W) -> float (N, C_out, H_out, W_out)
        (matches torch.ao.nn.intrinsic.qat.ConvReLU2d.forward).
        """
        return ember.relu(super().forward(input))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A ConvReLU2d sharing the weight and bias of the fused ``mod`` (nni.ConvReLU2d: Conv2d then ReLU), with
        ``mod``'s qconfig; AssertionError "Input float module must have a valid qconfig" without one (matches
        torch.ao.nn.intrinsic.qat.ConvReLU2d.from_float).
        """
        conv = mod[0]
        conv.qconfig = _need_qconfig(mod)
        return super().from_float(conv)
