"""Convolution layers: Conv1d/2d/3d, ConvTranspose1d/2d/3d and their lazy forms (matches torch.nn).

Weights: (out_channels, in_channels // groups, *kernel_size) for convolutions and
(in_channels, out_channels // groups, *kernel_size) for transposed ones, initialised with
kaiming_uniform_(a=sqrt(5)); bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (PyTorch's
defaults). The computation is ember.nn.functional's conv*d / conv_transpose*d.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from ... import empty
from .. import functional as F
from .. import init
from ... import no_grad
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]


def _ntuple(n):
    def parse(x):
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return (x,) * n
    parse.__name__ = f"_{n}tuple"
    return parse


_single = _ntuple(1)
_pair = _ntuple(2)
_triple = _ntuple(3)


class _ConvNd(Module):
    """Shared construction, initialisation and repr of the convolution layers."""

    _valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in self._valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {self._valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's (left, right) pairs, last spatial dim first, for padding modes other than zeros
        if isinstance(padding, str):
            pads = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    pads[2 * i] = left
                    pads[2 * i + 1] = total - left
        else:
            pads = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight and bias with PyTorch's default initialisation."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        n = len(self.kernel_size)
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if isinstance(self.padding, str) or self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if "padding_mode" not in self.__dict__:
            self.padding_mode = "zeros"


class Conv1d(_ConvNd):
    """1-D convolution: input (N, C_in, L) or (C_in, L) -> (N, C_out, L_out).

    ``padding`` an int, a 1-tuple, 'valid' or 'same' (stride 1 only); ``padding_mode``
    'zeros', 'reflect', 'replicate' or 'circular'. Matches torch.nn.Conv1d.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         padding if isinstance(padding, str) else _single(padding), _single(dilation), False,
                         _single(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv1d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                            weight, bias, self.stride, _single(0), self.dilation, self.groups)
        return F.conv1d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        """F.conv1d (after F.pad for a non-'zeros' padding_mode): (N, C_in, L) or (C_in, L) -> (N, C_out, L_out) or
        (C_out, L_out), same floating dtype (matches torch.nn.Conv1d.forward).
        """
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """2-D convolution: input (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out).

    ``padding`` an int, a pair, 'valid' or 'same' (stride 1 only); ``padding_mode`` 'zeros',
    'reflect', 'replicate' or 'circular'. A wrong channel count raises PyTorch's
    RuntimeError "Given groups=1, weight of size [...], expected input[...] to have C
    channels, but got C' channels instead". Matches torch.nn.Conv2d.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         padding if isinstance(padding, str) else _pair(padding), _pair(dilation), False,
                         _pair(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv2d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                            weight, bias, self.stride, _pair(0), self.dilation, self.groups)
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        """F.conv2d (after F.pad for a non-'zeros' padding_mode): (N, C_in, H, W) or (C_in, H, W) -> (N, C_out,
        H_out, W_out) or (C_out, H_out, W_out), same floating dtype (matches torch.nn.Conv2d.forward).
        """
        return self._conv_forward(input, self.weight, self.bias)


class Conv3d(_ConvNd):
    """3-D convolution: input (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out).

    ``padding`` an int, a triple, 'valid' or 'same' (stride 1 only); ``padding_mode`` 'zeros',
    'reflect', 'replicate' or 'circular'. Errors as F.conv3d. Matches torch.nn.Conv3d.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                         padding if isinstance(padding, str) else _triple(padding), _triple(dilation), False,
                         _triple(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv3d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                            weight, bias, self.stride, _triple(0), self.dilation, self.groups)
        return F.conv3d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        """F.conv3d (after F.pad for a non-'zeros' padding_mode): (N, C_in, D, H, W) or (C_in, D, H, W) ->
        (N, C_out, D_out, H_out, W_out) or unbatched, same floating dtype (matches torch.nn.Conv3d.forward).
        """
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    _valid_padding_modes = {"zeros"}

    def __init__(self, *args):
        padding_mode = args[10]
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(*args)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """The output_padding that gives ``output_size`` (or self.output_padding when None);
        ValueError when the size cannot be reached."""
        if output_size is None:
            return _ntuple(num_spatial_dims)(self.output_padding)
        has_batch = input.dim() == num_spatial_dims + 2
        num_non_spatial = 2 if has_batch else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial + num_spatial_dims:
            output_size = output_size[num_non_spatial:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        dilation = dilation if dilation is not None else (1,) * num_spatial_dims
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial) - 1) * stride[d] - 2 * padding[d]
                        + dilation[d] * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(dim_size + stride[d] - 1)
        for i in range(len(output_size)):
            if not min_sizes[i] <= output_size[i] <= max_sizes[i]:
                raise ValueError(f"requested an output size of {tuple(output_size)}, but valid sizes range from "
                                 f"{min_sizes} to {max_sizes} (for an input of {input.size()[num_non_spatial:]})")
        return tuple(output_size[d] - min_sizes[d] for d in range(num_spatial_dims))


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution: input (N, C_in, L) -> (N, C_out, L_out); ``forward(input,
    output_size=None)`` picks output_padding from a requested size (matches torch.nn.ConvTranspose1d)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride), _single(padding),
                         _single(dilation), True, _single(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        """F.conv_transpose1d: (N, C_in, L) or (C_in, L) -> (N, C_out, L_out); ``output_size`` (L_out, optionally
        with the leading dims) chooses output_padding; ValueError when it has the wrong length or cannot be
        reached (matches torch.nn.ConvTranspose1d.forward).
        """
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, 1,
                                              self.dilation)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution: input (N, C_in, H, W) -> (N, C_out, H_out, W_out) with
    H_out = (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1;
    ``forward(input, output_size=None)`` picks output_padding from a requested size
    (ValueError if unreachable). Matches torch.nn.ConvTranspose2d.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride), _pair(padding),
                         _pair(dilation), True, _pair(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        """F.conv_transpose2d: (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out); ``output_size`` (H_out,
        W_out, optionally with the leading dims) chooses output_padding; ValueError when it has the wrong length
        or cannot be reached (matches torch.nn.ConvTranspose2d.forward).
        """
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, 2,
                                              self.dilation)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution: input (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out) with
    D_out = (D - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1;
    ``forward(input, output_size=None)`` picks output_padding from a requested size
    (ValueError if unreachable). Matches torch.nn.ConvTranspose3d.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride), _triple(padding),
                         _triple(dilation), True, _triple(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        """F.conv_transpose3d: (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out);
        ``output_size`` chooses output_padding as ConvTranspose2d's (matches torch.nn.ConvTranspose3d.forward).
        """
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, 3,
                                              self.dilation)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)


class _LazyConvXdMixin(LazyModuleMixin):
    """Lazy convolutions: ``in_channels`` comes from the first input's channel dim (dim 1 batched, dim 0
    unbatched); weight and bias are UninitializedParameters until then."""

    def _lazy_setup(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        """The convolution's initialisation once the shapes are known; nothing before."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        spatial = len(self.kernel_size)
        if input.dim() not in (spatial + 1, spatial + 2):
            raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to "
                             f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == spatial + 2 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialize weight (out_channels, in_channels // groups, *kernel_size) and bias, then initialise.
        ValueError "in_channels must be divisible by groups" as the eager layer."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                             *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A Conv1d whose ``in_channels`` is inferred from the first input; becomes a Conv1d then (matches
    torch.nn.LazyConv1d). ``LazyConv1d(out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
    bias=True, padding_mode='zeros', device=None, dtype=None)``."""

    cls_to_become = Conv1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A Conv2d whose ``in_channels`` is inferred from the first input; becomes a Conv2d then (matches
    torch.nn.LazyConv2d). Arguments as Conv2d without ``in_channels``."""

    cls_to_become = Conv2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """A ConvTranspose1d whose ``in_channels`` is inferred from the first input (matches
    torch.nn.LazyConvTranspose1d). Arguments as ConvTranspose1d without ``in_channels``."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """A ConvTranspose2d whose ``in_channels`` is inferred from the first input (matches
    torch.nn.LazyConvTranspose2d). Arguments as ConvTranspose2d without ``in_channels``."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A Conv3d whose ``in_channels`` is inferred from the first input; becomes a Conv3d then (matches
    torch.nn.LazyConv3d). Arguments as Conv3d without ``in_channels``."""

    cls_to_become = Conv3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """A ConvTranspose3d whose ``in_channels`` is inferred from the first input (matches
    torch.nn.LazyConvTranspose3d). Arguments as ConvTranspose3d without ``in_channels``."""

    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        self._lazy_setup(out_channels, bias, device, dtype)
