"""2-D convolution as ops: conv2d and its two backward ops (matches ATen's convolution /
convolution_backward for the non-transposed 2-D case).

``ember.nn.functional.conv1d`` / ``conv2d`` resolve string paddings, unbatched inputs and the
1-D case, then call ``conv2d`` here with a batched NCHW input and int pairs. A device that
registers kernels for these three ops gets the whole forward and backward of a convolution
in three kernel calls; one that does not runs the composites, written with im2col / col2im
and matmul. The derivatives (``ember.autograd.derivatives``) map conv2d to the two backward
ops, and each backward op to conv2d and the other backward op, so gradients of gradients
work on every device.

    conv2d(input (N, C, H, W), weight (O, C / groups, kH, kW), bias (O,) | None, stride, padding,
           dilation, groups) -> (N, O, H_out, W_out)
    conv2d_backward_input(grad_output, weight, input_size, ...) -> grad of input (input_size)
    conv2d_backward_weight(grad_output, input, weight_size, ...) -> grad of weight (weight_size)
"""
from __future__ import annotations

from .. import _dtype as D
from .._dispatch import declare
from ._meta import check_tensor, same_device
from ._nn import _fmt, _key, _memo, blocks, pair

__all__ = ["conv2d", "conv2d_backward_input", "conv2d_backward_weight"]


def _params(stride, padding, dilation, groups):
    (sh, sw), (ph, pw), (dh, dw) = pair(stride, "stride"), pair(padding, "padding"), pair(dilation, "dilation")
    if sh <= 0 or sw <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if ph < 0 or pw < 0:
        raise RuntimeError("negative padding is not supported")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {[dh, dw]}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    return (sh, sw), (ph, pw), (dh, dw)


def _geometry(op, x_shape, w_shape, dtype, stride, padding, dilation, groups):
    """Checks of a convolution's shapes in PyTorch's words; the output shape (N, O, H_out, W_out)."""
    (sh, sw), (ph, pw), (dh, dw) = _params(stride, padding, dilation, groups)
    if len(x_shape) != 4:
        raise RuntimeError(f"Expected 4D (batched) input to {op}, but got input of size: {_fmt(x_shape)}")
    if len(w_shape) != 4:
        raise RuntimeError(f"Expected 4-dimensional weight for 4-dimensional input {_fmt(x_shape)}, but got "
                           f"{len(w_shape)}-dimensional weight of size {_fmt(w_shape)} instead")
    N, C, H, W = x_shape
    O, Cg, kh, kw = w_shape
    if O % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{_fmt(w_shape)}] instead")
    if Cg * groups != C:
        raise RuntimeError(f"Given groups={groups}, weight of size {_fmt(w_shape)}, expected input{_fmt(x_shape)} to "
                           f"have {Cg * groups} channels, but got {C} channels instead")
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    if H + 2 * ph < eh or W + 2 * pw < ew:
        raise RuntimeError(f"Calculated padded input size per channel: ({H + 2 * ph} x {W + 2 * pw}). Kernel size: "
                           f"({eh} x {ew}). Kernel size can't be greater than actual input size")
    # PyTorch's cpu convolution takes every dtype but bool, integers and complex included; its dilated
    # kernel only floating, complex and int64
    if (dh, dw) != (1, 1) and not (dtype.is_floating_point or dtype.is_complex or dtype is D.int64):
        raise NotImplementedError(f"\"slow_conv_dilated<>\" not implemented for '{D.torch_name(dtype)}'")
    if dtype is D.bool:
        raise NotImplementedError(f"\"slow_conv2d_cpu\" not implemented for '{D.torch_name(dtype)}'")
    return (N, O, blocks(H, kh, dh, ph, sh), blocks(W, kw, dw, pw, sw))


@_memo
def _conv2d_meta(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    check_tensor(input, "conv2d")
    check_tensor(weight, "conv2d", "weight")
    same_device(input, weight, bias)
    dt = input._dtype
    if weight._dtype is not dt:
        raise RuntimeError(f"expected scalar type {D.torch_name(dt)} but found {D.torch_name(weight._dtype)}")
    shape = _geometry("conv2d", input._shape, weight._shape, dt, stride, padding, dilation, groups)
    if bias is not None:
        check_tensor(bias, "conv2d", "bias")
        if bias._shape != (shape[1],):
            raise RuntimeError(f"Given weight of size {_fmt(weight._shape)}, expected bias to be 1-dimensional with "
                               f"{shape[1]} elements, but got bias of size {_fmt(bias._shape)} instead")
        if bias._dtype is not dt:
            raise RuntimeError(f"expected scalar type {D.torch_name(dt)} but found {D.torch_name(bias._dtype)}")
    return (*_key(input, dt), shape, dt)


def _grouped_matmul(a, b, groups):
    """The weight as a matrix ``a`` (O, K), O = G * O_g, times the columns ``b`` (N, G * K, L),
    group by group (through reshapes): (N, O, L)."""
    if groups == 1:
        return a.matmul(b)
    N, GK, L = b.shape
    O, K = a.shape
    return a.reshape(groups, O // groups, K).matmul(b.reshape(N, groups, K, L)).reshape(N, O, L)


def _conv2d_composite(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, out):
    (sh, sw), (ph, pw), (dh, dw) = _params(stride, padding, dilation, groups)
    from ._nn import im2col
    O, Cg, kh, kw = weight._shape
    N, _, oh, ow = out._shape
    cols = im2col(input, (kh, kw), (dh, dw), (ph, pw), (sh, sw))                  # (N, C * kH * kW, L)
    r = _grouped_matmul(weight.reshape(O, Cg * kh * kw), cols, groups)            # (N, O, L)
    if bias is not None:
        r = r + bias.reshape(O, 1)
    out.copy_(r.reshape(N, O, oh, ow))


conv2d = declare(
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] dilation=1, "
    "int groups=1) -> Tensor", _conv2d_meta, composite=_conv2d_composite,
    doc="2-D cross-correlation of a batched NCHW ``input`` (N, C, H, W) with ``weight`` (O, C / groups, kH, kW) "
        "plus ``bias`` (O,) -> (N, O, H_out, W_out), H_out = (H + 2 padding - dilation (kH - 1) - 1) // stride + 1 "
        "(matches torch.conv2d with int paddings; torch.nn.functional.conv2d adds 'same' / 'valid' and unbatched "
        "inputs). Every dtype but bool (NotImplementedError), as PyTorch's cpu kernel; RuntimeError in PyTorch's words for channel / "
        "groups / bias mismatches, a kernel larger than the padded input and non-positive stride or dilation.")


def _check_grad(op, grad_output, other, size, stride, padding, dilation, groups, weight_like):
    check_tensor(grad_output, op, "grad_output")
    check_tensor(other, op, "weight" if weight_like else "input")
    same_device(grad_output, other)
    size = tuple(int(s) for s in size)
    x_shape, w_shape = (size, other._shape) if weight_like else (other._shape, size)
    shape = _geometry(op, x_shape, w_shape, grad_output._dtype, stride, padding, dilation, groups)
    if grad_output._shape != shape:
        raise RuntimeError(f"{op}: expected grad_output of size {_fmt(shape)}, but got {_fmt(grad_output._shape)}")
    if other._dtype is not grad_output._dtype:
        raise RuntimeError(f"expected scalar type {D.torch_name(grad_output._dtype)} but found "
                           f"{D.torch_name(other._dtype)}")
    return (*_key(grad_output, grad_output._dtype), size, grad_output._dtype)


@_memo
def _backward_input_meta(grad_output, weight, input_size, stride, padding, dilation, groups):
    return _check_grad("conv2d_backward_input", grad_output, weight, input_size, stride, padding, dilation, groups,
                       True)


def _backward_input_composite(grad_output, weight, input_size, stride, padding, dilation, groups, *, out):
    (sh, sw), (ph, pw), (dh, dw) = _params(stride, padding, dilation, groups)
    from ._nn import col2im
    N, O, oh, ow = grad_output._shape
    _, Cg, kh, kw = weight._shape
    K = Cg * kh * kw
    g = grad_output.reshape(N, O, oh * ow)
    if groups == 1:
        cols = weight.reshape(O, K).t().matmul(g)                                # (N, K, L)
    else:
        w = weight.reshape(groups, O // groups, K).transpose(1, 2)              # (G, K, Og)
        cols = w.matmul(g.reshape(N, groups, O // groups, oh * ow)).reshape(N, groups * K, oh * ow)
    out.copy_(col2im(cols, tuple(input_size[2:]), (kh, kw), (dh, dw), (ph, pw), (sh, sw)))


conv2d_backward_input = declare(
    "conv2d_backward_input(Tensor grad_output, Tensor weight, int[] input_size, int[2] stride, int[2] padding, "
    "int[2] dilation, int groups) -> Tensor", _backward_input_meta, composite=_backward_input_composite,
    doc="The gradient of conv2d with respect to its input, of shape ``input_size`` (N, C, H, W), from "
        "``grad_output`` (N, O, H_out, W_out) and ``weight`` (the transposed convolution; matches the input part "
        "of torch's convolution_backward). RuntimeError on inconsistent shapes.")


@_memo
def _backward_weight_meta(grad_output, input, weight_size, stride, padding, dilation, groups):
    return _check_grad("conv2d_backward_weight", grad_output, input, weight_size, stride, padding, dilation, groups,
                       False)


def _backward_weight_composite(grad_output, input, weight_size, stride, padding, dilation, groups, *, out):
    (sh, sw), (ph, pw), (dh, dw) = _params(stride, padding, dilation, groups)
    from ._nn import im2col
    O, Cg, kh, kw = weight_size
    N, _, oh, ow = grad_output._shape
    K = Cg * kh * kw
    cols = im2col(input, (kh, kw), (dh, dw), (ph, pw), (sh, sw))                  # (N, G * K, L)
    g = grad_output.reshape(N, O, oh * ow)
    if groups == 1:
        w = g.matmul(cols.transpose(1, 2)).sum(0)                                 # (O, K)
    else:
        gg = g.reshape(N, groups, O // groups, oh * ow)
        cc = cols.reshape(N, groups, K, oh * ow).transpose(2, 3)
        w = gg.matmul(cc).sum(0).reshape(O, K)
    out.copy_(w.reshape(tuple(weight_size)))


conv2d_backward_weight = declare(
    "conv2d_backward_weight(Tensor grad_output, Tensor input, int[] weight_size, int[2] stride, int[2] padding, "
    "int[2] dilation, int groups) -> Tensor", _backward_weight_meta, composite=_backward_weight_composite,
    doc="The gradient of conv2d with respect to its weight, of shape ``weight_size`` (O, C / groups, kH, kW), from "
        "``grad_output`` (N, O, H_out, W_out) and ``input`` (N, C, H, W) (matches the weight part of torch's "
        "convolution_backward). RuntimeError on inconsistent shapes.")
