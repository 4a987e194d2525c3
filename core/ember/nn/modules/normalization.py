"""LayerNorm, GroupNorm, RMSNorm (matches torch.nn); computed by ember.nn.functional."""
from __future__ import annotations

import numbers

from ... import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


def _affine(module, affine, bias, shape, device, dtype):
    """Register ``weight`` (and ``bias`` when asked) of ``shape`` as parameters when ``affine``, else
    as None; their values are set by ``_reset_affine``."""
    module.register_parameter("weight", Parameter(empty(shape, device=device, dtype=dtype)) if affine else None)
    module.register_parameter("bias", Parameter(empty(shape, device=device, dtype=dtype)) if affine and bias else None)


def _reset_affine(module):
    """PyTorch's initialisation of a norm layer's affine parameters: weight ones, bias zeros."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalise over the last ``len(normalized_shape)`` dims: (x - mean) / sqrt(var + eps)
    (biased variance) * weight + bias; weight ones and bias zeros of ``normalized_shape``
    when ``elementwise_affine`` (matches torch.nn.LayerNorm)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine(self, elementwise_affine, bias, self.normalized_shape, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Set ``weight`` to ones and ``bias`` to zeros in place (those present) (matches
        torch.nn.LayerNorm.reset_parameters).
        """
        _reset_affine(self)

    def forward(self, input):
        """F.layer_norm over the trailing ``normalized_shape`` dims: (*, *normalized_shape) -> same shape and dtype
        (matches torch.nn.LayerNorm.forward).
        """
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """Settings shown inside the repr: ``(shape,), eps=..., elementwise_affine=..., bias=...``."""
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalise (N, C, *) inputs over groups of C / num_groups channels; per-channel affine
    weight ones and bias zeros (matches torch.nn.GroupNorm). ValueError when num_channels is
    not divisible by num_groups."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine(self, affine, bias, (num_channels,), device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """Set ``weight`` to ones and ``bias`` to zeros in place (those present) (matches
        torch.nn.GroupNorm.reset_parameters).
        """
        _reset_affine(self)

    def forward(self, input):
        """F.group_norm with ``num_groups`` groups: (N, C, *) -> same shape and dtype (matches
        torch.nn.GroupNorm.forward).
        """
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """Settings shown inside the repr: ``num_groups, num_channels, eps=..., affine=..., bias=...``."""
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x**2 over the normalised dims) + eps) * weight (matches torch.nn.RMSNorm;
    ``eps=None`` uses the dtype's machine epsilon)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Set ``weight`` to ones in place when ``elementwise_affine`` (matches torch.nn.RMSNorm.reset_parameters).
        """
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        """F.rms_norm over the trailing ``normalized_shape`` dims: (*, *normalized_shape) -> same shape and dtype
        (matches torch.nn.RMSNorm.forward).
        """
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        """Settings shown inside the repr: ``(shape,), eps=..., elementwise_affine=...``."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalise each channel of (N, C, *) input by the squared activity of ``size`` neighbouring
    channels: x / (k + alpha / size * sum x**2) ** beta (matches torch.nn.LocalResponseNorm; errors as
    F.local_response_norm)."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        """F.local_response_norm with the stored settings: same shape and dtype."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        """Settings shown inside the repr: ``size, alpha=..., beta=..., k=...``."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Legacy cross-channel local response normalisation of (N, C, H, W): x * (k + alpha / size * s) ** -beta,
    where s sums x ** 2 over the channels of PyTorch's running window (matches torch.nn.CrossMapLRN2d,
    including its window bookkeeping: the window of channel c starts as channels [0, (size - 1) // 2 + 1) and
    slides by adding channel c + pre_pad - 1 and dropping c - pre_pad only once c > pre_pad). Its gradient is
    autograd's exact derivative of that forward; PyTorch's hand-written backward assumes a symmetric window and
    differs (and fails for size 1). ValueError for an input that is not 4-D."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    @staticmethod
    def _window_matrix(channels, size):
        """(C, C) multiplicities: row c counts how often channel j is in channel c's window."""
        pre = int((size - 1) / 2 + 1)
        row = [1 if j < min(pre, channels) else 0 for j in range(channels)]
        rows = [list(row)]
        for c in range(1, channels):
            if c < channels - pre + 1:
                row[c + pre - 1] += 1
            if c > pre:
                row[c - pre] -= 1
            rows.append(list(row))
        return rows

    def forward(self, input):
        """(N, C, H, W) -> same shape and dtype."""
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        from ... import tensor
        C = input.shape[1]
        m = tensor(self._window_matrix(C, self.size), dtype=input.dtype, device=input.device)
        sq = (input * input).permute(0, 2, 3, 1)                                  # (N, H, W, C)
        scale = sq.matmul(m.t()).permute(0, 3, 1, 2) * (self.alpha / self.size) + self.k
        return input * scale ** (-self.beta)

    def extra_repr(self):
        """``size, alpha=..., beta=..., k=...`` as PyTorch's."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
