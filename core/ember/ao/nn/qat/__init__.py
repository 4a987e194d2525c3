"""Modules for quantization-aware training (matches torch.ao.nn.qat): the float module with its
weight passed through ``weight_fake_quant`` (a FakeQuantize from the module's qconfig) in forward,
so training sees the weight's rounding; gradients flow straight through."""
from __future__ import annotations

import ember.nn as nn
import ember.nn.functional as F

__all__ = ["Linear", "Conv2d"]


def _need_qconfig(mod):
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise AssertionError("Input float module must have a valid qconfig")
    return qconfig


class Linear(nn.Linear):
    """nn.Linear with fake-quantized weights (matches torch.ao.nn.qat.Linear)."""

    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        if qconfig is None:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        """F.linear with the weight passed through ``weight_fake_quant``: float (*, in_features) -> float (*,
        out_features); gradients reach the float weight straight through (matches
        torch.ao.nn.qat.Linear.forward).
        """
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A QAT Linear sharing ``mod``'s weight and bias Parameters, with ``mod.qconfig``; AssertionError "Input
        float module must have a valid qconfig" without one (matches torch.ao.nn.qat.Linear.from_float).
        """
        qconfig = _need_qconfig(mod)
        q = cls(mod.in_features, mod.out_features, mod.bias is not None, qconfig=qconfig,
                device=mod.weight.device)
        q.weight = mod.weight
        q.bias = mod.bias
        return q


class Conv2d(nn.Conv2d):
    """nn.Conv2d with fake-quantized weights (matches torch.ao.nn.qat.Conv2d)."""

    _FLOAT_MODULE = nn.Conv2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", qconfig=None, device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)
        if qconfig is None:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        """The Conv2d forward with the weight passed through ``weight_fake_quant``: float (N, C_in, H, W) -> float
        (N, C_out, H_out, W_out) (matches torch.ao.nn.qat.Conv2d.forward).
        """
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A QAT Conv2d with ``mod``'s settings, sharing its weight and bias Parameters, with ``mod.qconfig``;
        AssertionError "Input float module must have a valid qconfig" without one (matches
        torch.ao.nn.qat.Conv2d.from_float).
        """
        qconfig = _need_qconfig(mod)
        q = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                mod.groups, mod.bias is not None, mod.padding_mode, qconfig=qconfig, device=mod.weight.device)
        q.weight = mod.weight
        q.bias = mod.bias
        return q
