"""ember.nn.functional: 3-D convolutions (conv3d, conv_transpose3d) as composites of the 2-D ops; conv_tbc.

A 3-D convolution is a 2-D one over (H, W) whose input channels also run over the depth
window: ``im2col`` over (depth, 1) lays the kD depth slices of every output depth side by
side, they become extra input channels (group-major, so ``groups`` keeps working), and one
``ember.conv2d`` over the (N * D_out) images finishes the job. The transposed convolution is
the adjoint: one ``conv_transpose2d`` whose output channels run over the depth window, then
``col2im`` over (depth, 1) sums the windows back (and crops ``padding``). Both are made of
dispatcher ops with kernels or composites, so they run and differentiate on every device.
Volumes are NCDHW; an unbatched (C, D, H, W) input gives an unbatched output, as PyTorch.
"""
from __future__ import annotations

import ember
from ..._autocast_state import autocast_function
from .conv import _check_common, _fmt, _same_padding, _tuple, conv_transpose2d

__all__ = ["conv3d", "conv_transpose3d", "conv_tbc"]


def _depth_windows(x, k, d, p, s):
    """(N, C, D, H, W) -> (N, C, k, D_out, H, W): the k (dilated, strided) depth slices of every output depth,
    zero-padded by ``p`` (im2col over (depth, 1))."""
    N, C, D, H, W = x.shape
    cols = ember.im2col(x.permute(0, 1, 3, 4, 2).reshape(N, C * H * W, D, 1), (k, 1), (d, 1), (p, 0), (s, 1))
    # cols: (N, C * H * W * k, D_out)
    Do = cols.shape[-1]
    return cols.reshape(N, C, H, W, k, Do).permute(0, 1, 4, 5, 2, 3)


@autocast_function
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of ``input`` (N, C_in, D, H, W) or (C_in, D, H, W) with ``weight``
    (C_out, C_in / groups, kD, kH, kW) plus ``bias`` (C_out,) -> (N, C_out, D_out, H_out, W_out) (matches
    torch.nn.functional.conv3d).

    ``stride``, ``dilation``: int or triple; ``padding``: int, triple, 'valid' or 'same' (stride 1 only; the odd
    zero of an even kernel goes last, as PyTorch). D_out = (D + 2 * pad - dilation * (kD - 1) - 1) // stride + 1,
    likewise H_out and W_out. Floating dtypes. RuntimeError in PyTorch's words for channel / groups / bias
    mismatches, input rank, a kernel larger than the padded input, non-positive stride / dilation / groups,
    negative padding, an invalid padding string and different dtypes of input and weight.
    """
    stride = _tuple(stride, 3, "stride")
    dilation = _tuple(dilation, 3, "dilation")
    x = _check_common(input, weight, bias, stride, dilation, groups, 3, "conv3d")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0, 0)
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            padding, extra = _same_padding(weight.shape[2:], dilation)
            if any(extra):
                x = ember.constant_pad_nd(x, (0, extra[2], 0, extra[1], 0, extra[0]))
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, 3, "padding")
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"slow_conv3d_cpu\" not implemented for '{ember._torch_name(x.dtype)}'")
    N, C, D, H, W = x.shape
    O, Cg, kd, kh, kw = weight.shape
    padded = [n + 2 * p for n, p in zip((D, H, W), padding)]
    eff = [dl * (k - 1) + 1 for dl, k in zip(dilation, (kd, kh, kw))]
    if any(a < b for a, b in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual input size")
    win = _depth_windows(x, kd, dilation[0], padding[0], stride[0])            # (N, C, kD, D_out, H, W)
    Do = win.shape[3]
    # images (N * D_out, G * kD * C_g, H, W): channels group-major, then depth tap, then channel in group
    imgs = win.reshape(N, groups, Cg, kd, Do, H, W).permute(0, 4, 1, 3, 2, 5, 6).reshape(N * Do, groups * kd * Cg,
                                                                                          H, W)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(O, kd * Cg, kh, kw)
    out = ember.conv2d(imgs, w2, None, stride[1:], padding[1:], dilation[1:], groups)  # (N * D_out, O, H_out, W_out)
    out = out.reshape(N, Do, O, out.shape[-2], out.shape[-1]).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(O, 1, 1, 1)
    out = out.contiguous()
    return out if input.dim() == 5 else out.squeeze(0)


@autocast_function
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution of ``input`` (N, C_in, D, H, W) or (C_in, D, H, W) with ``weight``
    (C_in, C_out / groups, kD, kH, kW) plus ``bias`` (C_out,) (matches torch.nn.functional.conv_transpose3d):
    the gradient of conv3d with respect to its input.

    D_out = (D - 1) * stride - 2 * padding + dilation * (kD - 1) + output_padding + 1, likewise H_out, W_out.
    RuntimeError in PyTorch's words for a channel mismatch ("Given transposed=1, weight of size ..."), input
    rank, negative padding, output_padding not smaller than stride or dilation.
    """
    stride = _tuple(stride, 3, "stride")
    dilation = _tuple(dilation, 3, "dilation")
    padding = _tuple(padding, 3, "padding")
    output_padding = _tuple(output_padding, 3, "output_padding")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    x = _check_common(input, weight, bias, stride, dilation, groups, 3, "conv_transpose3d", transposed=True)
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding: {_fmt(output_padding)} stride: {_fmt(stride)} dilation: "
                               f"{_fmt(dilation)}")
    N, Cin, D, H, W = x.shape
    _, Og, kd, kh, kw = weight.shape
    Dout = (D - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kd - 1) + output_padding[0] + 1
    # one 2-D transposed convolution whose output channels (per group) run over (depth tap, channel)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(Cin, kd * Og, kh, kw)
    imgs = x.transpose(1, 2).reshape(N * D, Cin, H, W)
    y = conv_transpose2d(imgs, w2, None, stride[1:], padding[1:], output_padding[1:], groups, dilation[1:])
    Ho, Wo = y.shape[-2:]
    # (N, D, G, kD, O_g, H_out, W_out) -> columns (N, C_out * H_out * W_out * kD, D) for col2im over (depth, 1)
    cols = y.reshape(N, D, groups, kd, Og, Ho, Wo).permute(0, 2, 4, 5, 6, 3, 1).reshape(N, groups * Og * Ho * Wo * kd,
                                                                                         D)
    vol = ember.col2im(cols, (Dout, 1), (kd, 1), (dilation[0], 1), (padding[0], 0), (stride[0], 1))
    out = vol.reshape(N, groups * Og, Ho, Wo, Dout).permute(0, 1, 4, 2, 3)
    if bias is not None:
        out = out + bias.reshape(-1, 1, 1, 1)
    out = out.contiguous()
    return out if input.dim() == 5 else out.squeeze(0)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of a time-batch-channel ``input`` (T, B, C_in) with ``weight`` (K, C_in, C_out) plus
    ``bias`` (C_out,), zero-padded by ``pad`` on both ends of time -> (T + 2 pad - K + 1, B, C_out) (matches
    torch.conv_tbc / torch.nn.functional.conv_tbc): conv1d on the permuted tensors. RuntimeError in PyTorch's
    words for a rank other than 3 or mismatched channel counts."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    from .conv import conv1d
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return y.permute(2, 0, 1).contiguous()
