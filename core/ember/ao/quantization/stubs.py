"""Markers of the quantized region of an eager-mode model (matches torch.ao.quantization.stubs)."""
from __future__ import annotations

import ember.nn as nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(nn.Module):
    """Identity before ``convert``; becomes ``ember.ao.nn.quantized.Quantize`` (float -> quantized with
    the qparams its observer chose)."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        """Return ``x`` unchanged (convert replaces the stub by a Quantize module) (matches
        torch.ao.quantization.QuantStub.forward).
        """
        return x


class DeQuantStub(nn.Module):
    """Identity before ``convert``; becomes ``ember.ao.nn.quantized.DeQuantize``."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        """Return ``x`` unchanged (convert replaces the stub by a DeQuantize module) (matches
        torch.ao.quantization.DeQuantStub.forward).
        """
        return x


class QuantWrapper(nn.Module):
    """``module`` between a QuantStub and a DeQuantStub (matches torch.ao.quantization.QuantWrapper)."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.quant = QuantStub(qconfig)
        self.dequant = DeQuantStub(qconfig)
        self.module = module
        self.train(module.training)

    def forward(self, X):
        """``dequant(module(quant(X)))``; shapes and dtypes are the wrapped module's (matches
        torch.ao.quantization.QuantWrapper.forward).
        """
        return self.dequant(self.module(self.quant(X)))
