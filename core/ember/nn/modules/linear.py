"""Identity, Linear, Bilinear (matches torch.nn)."""
from __future__ import annotations

import math

from ... import empty
from .. import functional as F
from .. import init
from ... import no_grad
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


class Identity(Module):
    """Returns its input unchanged; accepts and ignores any constructor arguments
    (matches torch.nn.Identity)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        """Return ``input`` itself (the same object) (matches torch.nn.Identity.forward)."""
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``: input (*, in_features) -> (*, out_features).

    ``weight`` (out_features, in_features) ~ kaiming_uniform_(a=sqrt(5)), i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)); ``bias`` (out_features) ~ the same
    uniform. A wrong last input dimension raises RuntimeError "mat1 and mat2 shapes cannot
    be multiplied (AxB and CxD)". Matches torch.nn.Linear.
    """

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight and bias with PyTorch's default initialisation."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """F.linear: (*, in_features) -> (*, out_features), dtype of the input and weight (matches
        torch.nn.Linear.forward).
        """
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        """Settings shown inside the repr: ``in_features=..., out_features=..., bias=True|False``."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b``: inputs (*, in1_features) and (*, in2_features) -> (*, out_features).

    ``weight`` (out_features, in1_features, in2_features) and ``bias`` (out_features) ~
    U(-1/sqrt(in1_features), 1/sqrt(in1_features)). Matches torch.nn.Bilinear.
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight and bias in place from U(-1/sqrt(in1_features), 1/sqrt(in1_features)) (matches
        torch.nn.Bilinear.reset_parameters).
        """
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        """F.bilinear: (*, in1_features) and (*, in2_features) -> (*, out_features) (matches
        torch.nn.Bilinear.forward).
        """
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        """Settings shown inside the repr: ``in1_features=..., in2_features=..., out_features=...,
        bias=True|False``.
        """
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is taken from the last dim of the first input; ``weight`` and
    ``bias`` are UninitializedParameters until then, and the module becomes a Linear (matches
    torch.nn.LazyLinear). ``LazyLinear(out_features, bias=True, device=None, dtype=None)``."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        """Linear's initialisation once the shapes are known; nothing before."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialize weight (out_features, input.shape[-1]) and bias (out_features,), then initialise them."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
