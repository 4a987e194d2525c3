"""Pooling layers (matches torch.nn): MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d,
AdaptiveMaxPool1d/2d/3d, LPPool1d/2d/3d, MaxUnpool1d/2d/3d, FractionalMaxPool2d/3d. ``stride`` defaults to
``kernel_size``; the computation is ember.nn.functional's pooling."""
from __future__ import annotations

from .. import functional as F
from .conv import _pair, _single, _triple
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over windows: (N, C, L) or (C, L) -> (N, C, L_out); ``return_indices`` also
    returns the argmax positions (matches torch.nn.MaxPool1d)."""

    def forward(self, input):
        """F.max_pool1d: (N, C, L) or (C, L) -> (N, C, L_out) or (C, L_out), same dtype; with ``return_indices`` a
        tuple (output, int64 indices) (matches torch.nn.MaxPool1d.forward).
        """
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over windows: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out); ``return_indices``
    also returns the flat argmax positions per plane (matches torch.nn.MaxPool2d)."""

    def forward(self, input):
        """F.max_pool2d: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) or (C, H_out, W_out), same dtype; with
        ``return_indices`` a tuple (output, int64 indices) (matches torch.nn.MaxPool2d.forward).
        """
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over windows: (N, C, L) -> (N, C, L_out) (matches torch.nn.AvgPool1d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        """F.avg_pool1d: (N, C, L) or (C, L) -> (N, C, L_out) or (C, L_out), same dtype (matches
        torch.nn.AvgPool1d.forward).
        """
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self):
        """Settings shown inside the repr: ``kernel_size=(k,), stride=(s,), padding=(p,)``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Mean over windows: (N, C, H, W) -> (N, C, H_out, W_out); ``count_include_pad`` and
    ``divisor_override`` as PyTorch's (matches torch.nn.AvgPool2d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        """F.avg_pool2d: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) or (C, H_out, W_out), same dtype
        (matches torch.nn.AvgPool2d.forward).
        """
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        """Settings shown inside the repr: ``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mean over adaptive windows to a fixed length: (N, C, L) -> (N, C, output_size)
    (matches torch.nn.AdaptiveAvgPool1d)."""

    def forward(self, input):
        """F.adaptive_avg_pool1d: (N, C, L) or (C, L) -> (N, C, output_size), same dtype (matches
        torch.nn.AdaptiveAvgPool1d.forward).
        """
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mean over adaptive windows to a fixed size: (N, C, H, W) -> (N, C, *output_size); a
    None entry keeps that input size (matches torch.nn.AdaptiveAvgPool2d)."""

    def forward(self, input):
        """F.adaptive_avg_pool2d: (N, C, H, W) or (C, H, W) -> (N, C, *output_size), same dtype (matches
        torch.nn.AdaptiveAvgPool2d.forward).
        """
        return F.adaptive_avg_pool2d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max over adaptive windows: (N, C, L) -> (N, C, output_size) (matches torch.nn.AdaptiveMaxPool1d)."""

    def forward(self, input):
        """F.adaptive_max_pool1d: (N, C, L) or (C, L) -> (N, C, output_size), same dtype; with ``return_indices`` a
        tuple (output, int64 indices) (matches torch.nn.AdaptiveMaxPool1d.forward).
        """
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max over adaptive windows: (N, C, H, W) -> (N, C, *output_size) (matches torch.nn.AdaptiveMaxPool2d)."""

    def forward(self, input):
        """F.adaptive_max_pool2d: (N, C, H, W) or (C, H, W) -> (N, C, *output_size), same dtype; with
        ``return_indices`` a tuple (output, int64 indices) (matches torch.nn.AdaptiveMaxPool2d.forward).
        """
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        """Settings shown inside the repr, in PyTorch's order."""
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling (sum of x ** p over each window) ** (1 / p) (matches torch.nn.LPPool1d)."""

    def forward(self, input):
        """F.lp_pool1d: (N, C, L) or (C, L) -> (N, C, L_out) or (C, L_out), same dtype."""
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over 2-D windows (matches torch.nn.LPPool2d)."""

    def forward(self, input):
        """F.lp_pool2d: (N, C, H, W) or (C, H, W) -> pooled, same dtype."""
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class MaxPool3d(_MaxPoolNd):
    """Max over 3-D windows: (N, C, D, H, W) or (C, D, H, W) -> (N, C, D_out, H_out, W_out); ``return_indices``
    also returns the flat argmax positions per volume (matches torch.nn.MaxPool3d)."""

    def forward(self, input):
        """F.max_pool3d: pooled volume, same dtype; with ``return_indices`` a tuple (output, int64 indices)."""
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool3d(Module):
    """Mean over 3-D windows: (N, C, D, H, W) -> (N, C, D_out, H_out, W_out); ``count_include_pad`` and
    ``divisor_override`` as PyTorch's (matches torch.nn.AvgPool3d)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        """F.avg_pool3d: (N, C, D, H, W) or (C, D, H, W) -> pooled, same dtype."""
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        """Settings shown inside the repr: ``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Mean over adaptive windows: (N, C, D, H, W) -> (N, C, *output_size) (matches torch.nn.AdaptiveAvgPool3d)."""

    def forward(self, input):
        """F.adaptive_avg_pool3d: (N, C, D, H, W) or (C, D, H, W) -> (N, C, *output_size), same dtype."""
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max over adaptive windows: (N, C, D, H, W) -> (N, C, *output_size) (matches torch.nn.AdaptiveMaxPool3d)."""

    def forward(self, input):
        """F.adaptive_max_pool3d: pooled volume, same dtype; with ``return_indices`` (output, int64 indices)."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over 3-D windows (matches torch.nn.LPPool3d)."""

    def forward(self, input):
        """F.lp_pool3d: (N, C, D, H, W) or (C, D, H, W) -> pooled, same dtype."""
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _MaxUnpoolNd(Module):
    _tuple = staticmethod(_single)
    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = self._tuple(kernel_size)
        self.stride = self._tuple(stride if stride is not None else kernel_size)
        self.padding = self._tuple(padding)

    def forward(self, input, indices, output_size=None):
        """F.max_unpoolNd: values placed at ``indices`` in a zero tensor (matches torch.nn.MaxUnpoolNd.forward)."""
        return type(self)._functional(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        """Settings shown inside the repr: ``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: (N, C, L) values put at their indices, zeros elsewhere (matches
    torch.nn.MaxUnpool1d)."""
    _functional = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d (matches torch.nn.MaxUnpool2d)."""
    _tuple = staticmethod(_pair)
    _functional = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d (matches torch.nn.MaxUnpool3d)."""
    _tuple = staticmethod(_triple)
    _functional = staticmethod(F.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        tup = _pair if self._nd == 2 else _triple
        name = type(self).__name__
        self.kernel_size = tup(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = tup(output_size) if output_size is not None else None
        self.output_ratio = tup(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        """F.fractional_max_poolNd with this module's settings (and fixed ``_random_samples`` if given)."""
        fn = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, H, W) with pseudo-random window starts (matches
    torch.nn.FractionalMaxPool2d). ValueError without exactly one of output_size / output_ratio, or for a
    ratio outside (0, 1)."""
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, D, H, W) (matches torch.nn.FractionalMaxPool3d)."""
    _nd = 3
