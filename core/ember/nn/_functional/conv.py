"""ember.nn.functional: convolutions (conv1d, conv2d, conv_transpose2d) and unfold / fold.

conv1d and conv2d resolve 'same' / 'valid' paddings and unbatched inputs, then call the op
``ember.conv2d`` (``ember._ops._conv``: its own kernels per device, or a composite of
``im2col`` and a matmul; its backward is two ops of its own). The transposed convolution is
the matmul with the transposed weight and one ``col2im``; gradients flow through those ops
(im2col and col2im are each other's adjoint).
Images are NCHW; an unbatched (C, H, W) input gives an unbatched output, as PyTorch.
"""
from __future__ import annotations

import numbers

import ember
from ..._autocast_state import autocast_function
from ..._dtype import torch_name as _torch_name

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold"]


def _tuple(v, n, name):
    """An int or a sequence of n ints as an n-tuple; RuntimeError in PyTorch's words otherwise."""
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),) * n
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                           f"convolution dimensions, but got {name}={list(v)}")
    return v


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _dtype_name(d):
    return ember._torch_name(d)


def _check_common(input, weight, bias, stride, dilation, groups, nd, name, transposed=False):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input of "
                           f"size: {_fmt(input.shape)}")
    if weight.dim() != nd + 2:
        raise RuntimeError(f"weight should have at least three dimensions" if weight.dim() < 3 else
                           f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input "
                           f"{_fmt(input.shape)}, but got {weight.dim()}-dimensional weight of size "
                           f"{_fmt(weight.shape)} instead")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(input.dtype)} but found {_dtype_name(weight.dtype)}")
    x = input if input.dim() == nd + 2 else input.unsqueeze(0)
    C = x.shape[1]
    if transposed:
        if weight.shape[0] != C:
            raise RuntimeError(f"Given transposed=1, weight of size {_fmt(weight.shape)}, expected input"
                               f"{_fmt(x.shape)} to have {weight.shape[0]} channels, but got {C} channels instead")
        out_channels = weight.shape[1] * groups
    else:
        if weight.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                               f"but got weight of size [{_fmt(weight.shape)}] instead")
        if weight.shape[1] * groups != C:
            raise RuntimeError(f"Given groups={groups}, weight of size {_fmt(weight.shape)}, expected input"
                               f"{_fmt(x.shape)} to have {weight.shape[1] * groups} channels, but got {C} channels "
                               f"instead")
        out_channels = weight.shape[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(f"Given weight of size {_fmt(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {_fmt(bias.shape)} instead")
    return x


def _same_padding(kernel, dilation):
    """(symmetric padding, extra padding on the right) per dim for padding='same' (PyTorch puts the odd
    one on the right)."""
    sym, extra = [], []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        sym.append(total // 2)
        extra.append(total - 2 * (total // 2))
    return tuple(sym), tuple(extra)


def _conv2d(x, weight, bias, stride, padding, dilation, groups):
    """x is 4-D and checked; padding is a pair of ints."""
    N, C, H, W = x.shape
    O, Cg, kh, kw = weight.shape
    Hp, Wp = H + 2 * padding[0], W + 2 * padding[1]
    eh, ew = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    if Hp < eh or Wp < ew:
        raise RuntimeError(f"Calculated padded input size per channel: ({Hp} x {Wp}). Kernel size: ({eh} x {ew}). "
                           f"Kernel size can't be greater than actual input size")
    return ember.conv2d(x, weight, bias, stride, padding, dilation, groups)


@autocast_function
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of ``input`` (N, C_in, H, W) or (C_in, H, W) with ``weight``
    (C_out, C_in / groups, kH, kW) plus ``bias`` (C_out,) -> (N, C_out, H_out, W_out) (matches
    torch.nn.functional.conv2d).

    ``stride``, ``dilation``: int or pair; ``padding``: int, pair, 'valid' (no padding) or 'same'
    (output size = input size, stride 1 only; for even kernels the extra zero goes on the right and
    bottom, as PyTorch). H_out = (H + 2 * pad - dilation * (kH - 1) - 1) // stride + 1.
    RuntimeError in PyTorch's words: channel mismatch ("Given groups=1, weight of size [16, 3, 3, 3],
    expected input[1, 1, 8, 8] to have 3 channels, but got 1 channels instead"), input rank, bias size,
    kernel larger than the padded input, non-positive stride / dilation / groups, negative padding,
    an invalid padding string, 'same' with stride > 1, different dtypes of input and weight.
    """
    stride = _tuple(stride, 2, "stride")
    dilation = _tuple(dilation, 2, "dilation")
    x = _check_common(input, weight, bias, stride, dilation, groups, 2, "conv2d")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0)
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            padding, extra = _same_padding(weight.shape[2:], dilation)
            if any(extra):
                x = ember.constant_pad_nd(x, (0, extra[1], 0, extra[0]))
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, 2, "padding")
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
    out = _conv2d(x, weight, bias, stride, padding, dilation, groups)
    if input.dim() == 4:     # a channels_last input or weight gives a channels_last output, as PyTorch
        return ember._memory_format.follow_channels_last(out, input, weight)
    return out.squeeze(0)


@autocast_function
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of ``input`` (N, C_in, L) or (C_in, L) with ``weight`` (C_out, C_in / groups, k)
    plus ``bias`` -> (N, C_out, L_out) (matches torch.nn.functional.conv1d): conv2d over a height of 1.
    ``padding``: int, 1-tuple, 'valid' or 'same'. Errors as conv2d, naming conv1d and 1-D sizes."""
    stride = _tuple(stride, 1, "stride")
    dilation = _tuple(dilation, 1, "dilation")
    x = _check_common(input, weight, bias, stride, dilation, groups, 1, "conv1d")
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            if stride[0] != 1:
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            (p,), (extra,) = _same_padding(weight.shape[2:], dilation)
            if extra:
                x = ember.constant_pad_nd(x, (0, extra))
            padding = p
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        (padding,) = _tuple(padding, 1, "padding")
        if padding < 0:
            raise RuntimeError("negative padding is not supported")
    L = x.shape[-1]
    if L + 2 * padding < dilation[0] * (weight.shape[2] - 1) + 1:
        raise RuntimeError(f"Calculated padded input size per channel: ({L + 2 * padding}). Kernel size: "
                           f"({dilation[0] * (weight.shape[2] - 1) + 1}). Kernel size can't be greater than actual "
                           f"input size")
    out = _conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, stride[0]), (0, padding), (1, dilation[0]), groups)
    out = out.squeeze(2)
    return out if input.dim() == 3 else out.squeeze(0)


@autocast_function
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution ("deconvolution") of ``input`` (N, C_in, H, W) or (C_in, H, W) with
    ``weight`` (C_in, C_out / groups, kH, kW) plus ``bias`` (C_out,) (matches
    torch.nn.functional.conv_transpose2d): the gradient of conv2d with respect to its input.

    H_out = (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1.
    RuntimeError in PyTorch's words for a channel mismatch ("Given transposed=1, weight of size ...")
    or output_padding not smaller than stride or dilation.
    """
    stride = _tuple(stride, 2, "stride")
    dilation = _tuple(dilation, 2, "dilation")
    padding = _tuple(padding, 2, "padding")
    output_padding = _tuple(output_padding, 2, "output_padding")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    x = _check_common(input, weight, bias, stride, dilation, groups, 2, "conv_transpose2d", transposed=True)
    dt = input.dtype
    if not (dt.is_floating_point or dt.is_complex or dt is ember.int64):   # PyTorch's cpu kernel dtypes
        raise NotImplementedError(f"\"slow_conv_transpose2d_out_cpu\" not implemented for '{_torch_name(dt)}'")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_height: {output_padding[0]} output_padding_width: "
                               f"{output_padding[1]} stride_height: {stride[0]} stride_width: {stride[1]} "
                               f"dilation_height: {dilation[0]} dilation_width: {dilation[1]}")
    N, Cin, H, W = x.shape
    _, Og, kh, kw = weight.shape
    Hout = (H - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    Wout = (W - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    K = Og * kh * kw
    if groups == 1:
        cols = weight.reshape(Cin, K).t().matmul(x.reshape(N, Cin, H * W))            # (N, C_out * k, L)
    else:
        w = weight.reshape(groups, Cin // groups, K).transpose(1, 2)                 # (G, C_out/G * k, C_in/G)
        cols = w.matmul(x.reshape(N, groups, Cin // groups, H * W)).reshape(N, groups * K, H * W)
    out = ember.col2im(cols, (Hout, Wout), (kh, kw), dilation, padding, stride)
    if bias is not None:
        out = out + bias.view(-1, 1, 1)
    return out if input.dim() == 4 else out.squeeze(0)


@autocast_function
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution of (N, C_in, L) with weight (C_in, C_out / groups, k) (matches
    torch.nn.functional.conv_transpose1d): conv_transpose2d over a height of 1."""
    stride, padding, output_padding, dilation = (_tuple(v, 1, n)[0] for v, n in (
        (stride, "stride"), (padding, "padding"), (output_padding, "output_padding"), (dilation, "dilation")))
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of "
                           f"size: {_fmt(input.shape)}")
    x = input if input.dim() == 3 else input.unsqueeze(0)
    out = conv_transpose2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, stride), (0, padding),
                           (0, output_padding), groups, (1, dilation)).squeeze(2)
    return out if input.dim() == 3 else out.squeeze(0)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extracts sliding local blocks (matches torch.nn.functional.unfold): (N, C, H, W) ->
    (N, C * kH * kW, L), (C, H, W) -> (C * kH * kW, L). See ``ember.im2col`` for errors."""
    return ember.im2col(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combines sliding local blocks into an image, summing overlaps (matches torch.nn.functional.fold):
    (N, C * kH * kW, L) -> (N, C, H, W) with (H, W) = output_size. See ``ember.col2im`` for errors."""
    return ember.col2im(input, output_size, kernel_size, dilation, padding, stride)
