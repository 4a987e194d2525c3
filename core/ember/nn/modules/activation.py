"""Activation modules: thin Modules over ember.nn.functional (matches torch.nn's activations).

Each keeps its settings as attributes and shows them in its repr exactly as PyTorch
does (``ReLU(inplace=True)``, ``GELU(approximate='tanh')``, ``Softmax(dim=1)``).
Shapes: output has the input's shape (GLU halves ``dim``).
"""
from __future__ import annotations

from ... import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Softmin",
           "Softplus", "ELU", "SELU", "CELU", "Hardtanh", "Mish", "Hardswish", "Hardsigmoid", "LogSigmoid",
           "Softsign", "Tanhshrink", "Hardshrink", "Softshrink", "Threshold", "GLU", "PReLU", "RReLU", "Softmax2d",
           "MultiheadAttention"]


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class ReLU(Module):
    """max(x, 0) elementwise (matches torch.nn.ReLU)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.relu elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.ReLU.forward).
        """
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``inplace=True`` when set, else empty."""
        return _inplace_repr(self.inplace)


class ReLU6(Module):
    """min(max(x, 0), 6) elementwise (matches torch.nn.ReLU6)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.relu6 elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.ReLU6.forward).
        """
        return F.relu6(input, inplace=self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``inplace=True`` when set, else empty."""
        return _inplace_repr(self.inplace)


class LeakyReLU(Module):
    """x if x >= 0 else negative_slope * x (matches torch.nn.LeakyReLU)."""

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        """Apply F.leaky_relu elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.LeakyReLU.forward).
        """
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``negative_slope=...`` plus ``, inplace=True`` when set."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x); ``approximate='tanh'`` uses the tanh approximation (matches torch.nn.GELU)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        """Apply F.gelu elementwise: any shape -> same shape and dtype (matches torch.nn.GELU.forward)."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        """Settings shown inside the repr: ``approximate='none'`` or ``approximate='tanh'``."""
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) (matches torch.nn.SiLU)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.silu elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.SiLU.forward).
        """
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``inplace=True`` when set, else empty."""
        return _inplace_repr(self.inplace)


class Mish(Module):
    """x * tanh(softplus(x)) (matches torch.nn.Mish)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.mish elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.Mish.forward).
        """
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``inplace=True`` when set, else empty."""
        return _inplace_repr(self.inplace)


class Hardswish(Module):
    """x * relu6(x + 3) / 6 (matches torch.nn.Hardswish)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.hardswish elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.Hardswish.forward).
        """
        return F.hardswish(input, self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6 (matches torch.nn.Hardsigmoid)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.hardsigmoid elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.Hardsigmoid.forward).
        """
        return F.hardsigmoid(input, self.inplace)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) (matches torch.nn.Sigmoid)."""

    def forward(self, input):
        """Apply F.sigmoid elementwise: any shape -> same shape and dtype (matches torch.nn.Sigmoid.forward).
        """
        return F.sigmoid(input)


class Tanh(Module):
    """tanh(x) (matches torch.nn.Tanh)."""

    def forward(self, input):
        """Apply F.tanh elementwise: any shape -> same shape and dtype (matches torch.nn.Tanh.forward)."""
        return F.tanh(input)


class LogSigmoid(Module):
    """log(sigmoid(x)) (matches torch.nn.LogSigmoid)."""

    def forward(self, input):
        """Apply F.logsigmoid elementwise: any shape -> same shape and dtype (matches torch.nn.LogSigmoid.forward).
        """
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + |x|) (matches torch.nn.Softsign)."""

    def forward(self, input):
        """Apply F.softsign elementwise: any shape -> same shape and dtype (matches torch.nn.Softsign.forward).
        """
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x) (matches torch.nn.Tanhshrink)."""

    def forward(self, input):
        """Apply F.tanhshrink elementwise: any shape -> same shape and dtype (matches torch.nn.Tanhshrink.forward).
        """
        return F.tanhshrink(input)


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if "dim" not in self.__dict__:
            self.dim = None

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along ``dim`` (matches torch.nn.Softmax)."""

    def forward(self, input):
        """Apply F.softmax along ``self.dim``: any shape -> same shape and dtype; ``dim=None`` picks the legacy
        implicit dim with a UserWarning (matches torch.nn.Softmax.forward).
        """
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along ``dim`` (matches torch.nn.LogSoftmax)."""

    def forward(self, input):
        """Apply F.log_softmax along ``self.dim``: any shape -> same shape and dtype; ``dim=None`` picks the legacy
        implicit dim with a UserWarning (matches torch.nn.LogSoftmax.forward).
        """
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(_SoftmaxBase):
    """softmax(-x) along ``dim`` (matches torch.nn.Softmin)."""

    def forward(self, input):
        """Apply F.softmin along ``self.dim``: any shape -> same shape and dtype; ``dim=None`` picks the legacy
        implicit dim with a UserWarning (matches torch.nn.Softmin.forward).
        """
        return F.softmin(input, self.dim, _stacklevel=5)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input, at every spatial position
    (matches torch.nn.Softmax2d). ValueError for other ranks."""

    def forward(self, input):
        """Softmax along dim -3: (N, C, H, W) or (C, H, W) -> same shape and dtype (matches
        torch.nn.Softmax2d.forward)."""
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above ``threshold`` (matches torch.nn.Softplus)."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        """Apply F.softplus elementwise: any shape -> same shape and dtype (matches torch.nn.Softplus.forward).
        """
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        """Settings shown inside the repr: ``beta=..., threshold=...``."""
        return f"beta={self.beta}, threshold={self.threshold}"


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1) (matches torch.nn.ELU)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        """Apply F.elu elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and returns
        ``input`` (matches torch.nn.ELU.forward).
        """
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``alpha=...`` plus ``, inplace=True`` when set."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (matches torch.nn.CELU)."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        """Apply F.celu elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.CELU.forward).
        """
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``alpha=...`` plus ``, inplace=True`` when set."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class SELU(Module):
    """scale * elu(x, alpha) with the self-normalising constants (matches torch.nn.SELU)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.selu elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.SELU.forward).
        """
        return F.selu(input, self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``inplace=True`` when set, else empty."""
        return _inplace_repr(self.inplace)


class Hardtanh(Module):
    """clamp(x, min_val, max_val) (matches torch.nn.Hardtanh). ValueError when max_val < min_val."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if not self.max_val > self.min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")

    def forward(self, input):
        """Apply F.hardtanh elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.Hardtanh.forward).
        """
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``min_val=..., max_val=...`` plus ``, inplace=True`` when set."""
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    """x if x > threshold else value (matches torch.nn.Threshold)."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        """Apply F.threshold elementwise: any shape -> same shape and dtype; with ``inplace=True`` overwrites and
        returns ``input`` (matches torch.nn.Threshold.forward).
        """
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``threshold=..., value=...`` plus ``, inplace=True`` when set."""
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Hardshrink(Module):
    """x if |x| > lambd else 0 (matches torch.nn.Hardshrink)."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """Apply F.hardshrink elementwise: any shape -> same shape and dtype (matches torch.nn.Hardshrink.forward).
        """
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        """Settings shown inside the repr: the bare ``lambd`` value."""
        return f"{self.lambd}"


class Softshrink(Module):
    """x - lambd if x > lambd, x + lambd if x < -lambd, else 0 (matches torch.nn.Softshrink)."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """Apply F.softshrink elementwise: any shape -> same shape and dtype (matches torch.nn.Softshrink.forward).
        """
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        """Settings shown inside the repr: the bare ``lambd`` value."""
        return str(self.lambd)


class GLU(Module):
    """a * sigmoid(b) where a, b are the halves of the input along ``dim`` (matches torch.nn.GLU)."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """Gated linear unit along ``self.dim``: (*, 2K, *) -> (*, K, *), same dtype (matches
        torch.nn.GLU.forward).
        """
        return F.glu(input, self.dim)

    def extra_repr(self):
        """Settings shown inside the repr: ``dim=...``."""
        return f"dim={self.dim}"


class PReLU(Module):
    """x if x >= 0 else weight * x, with a learnt ``weight`` of ``num_parameters`` entries
    (1, or one per channel) initialised to ``init`` (matches torch.nn.PReLU)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Fill ``weight`` with the constant ``self.init`` in place (matches torch.nn.PReLU.reset_parameters).
        """
        init.constant_(self.weight, self.init)

    def forward(self, input):
        """Apply F.prelu with ``self.weight``: (N, C, *) or any shape when ``num_parameters == 1`` -> same shape
        and dtype; the weight broadcasts over dim 1 (matches torch.nn.PReLU.forward).
        """
        return F.prelu(input, self.weight)

    def extra_repr(self):
        """Settings shown inside the repr: ``num_parameters=...``."""
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn uniformly from [lower, upper] for negative inputs in
    training mode, the fixed slope (lower + upper) / 2 in eval mode (matches torch.nn.RReLU)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        """Apply F.rrelu with ``training=self.training``: any shape -> same shape and dtype (matches
        torch.nn.RReLU.forward)."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        """Settings shown inside the repr: ``lower=..., upper=...`` and ``inplace=True`` when set."""
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


# PyTorch defines MultiheadAttention in torch.nn.modules.activation; it lives in attention.py here and is
# re-exported so pickled paths and allow-lists naming the PyTorch module resolve.
from .attention import MultiheadAttention  # noqa: E402
