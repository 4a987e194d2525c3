"""Layer normalization as one op and its backward as one op (``native_layer_norm``, PyTorch's, and
``_layer_norm_backward``, the role of aten::native_layer_norm_backward).

``native_layer_norm(input, normalized_shape, weight, bias, eps)`` normalizes over the last len(normalized_shape)
dims: mean and rstd = 1 / sqrt(biased variance + eps) per leading index, out = (input - mean) * rstd * weight +
bias. It returns (out, mean, rstd), mean and rstd of shape input.shape[:-k] + (1,) * k, as PyTorch's.

Why an op and not the composite of ember ops: written with ops, a layer norm is eight kernels forward (var, mean,
sub, add, rsqrt, two muls, add) and about fifteen backward, each a pass over the activations with its own
dispatch; a device kernel does the forward and the backward in a few passes each. Every device gets the op
unchanged: the composites below are the ember-op formulation, which vdev, opencl and cuda run.

The derivative (``ember.library.register_autograd``): one ``_layer_norm_backward`` call gives the gradients of
input, weight and bias from the saved mean and rstd. Under create_graph=True the gradients are written with ember
ops instead, so second derivatives work on every device.
"""
from __future__ import annotations

from .. import _dtype as D
from .._dispatch import declare
from .._ops._meta import check_tensor, same_device
from .._ops._nn import _fmt, _key, _memo, _name
from ..autograd import is_grad_enabled

__all__ = ["native_layer_norm", "layer_norm_backward"]

_OP = "native_layer_norm"
_BOP = "_layer_norm_backward"
_LOWP = (D.float16, D.bfloat16)


def check_normalized_shape(input, ns):
    """PyTorch's RuntimeError "Given normalized_shape=[4], expected input with shape [*, 4], but got input of
    size[3, 5]" unless the tuple of ints ``ns`` is not empty and ends input's shape."""
    k = len(ns)
    if k == 0 or len(input._shape) < k or tuple(input._shape[len(input._shape) - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(str(s) for s in ns)}], but got input of size{list(input._shape)}")


def _check_shapes(op, input, normalized_shape, named):
    ns = tuple(int(s) for s in normalized_shape)
    k = len(ns)
    check_normalized_shape(input, ns)
    for t, name in named:
        if t is not None and tuple(t._shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t._shape)} and normalized_shape = {list(ns)}")
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"LayerNormKernelImpl\" not implemented for '{_name(input._dtype)}'")
    for t, name in named:
        if t is not None and t._dtype is not input._dtype:
            raise RuntimeError(f"{op}: expected {name} to have dtype {_name(input._dtype)}, got {_name(t._dtype)}")
    return ns, tuple(input._shape[:len(input._shape) - k]) + (1,) * k


# ---------------------------------------------------------------- forward
@_memo
def _meta(input, normalized_shape, weight, bias, eps):
    check_tensor(input, _OP)
    same_device(input, weight, bias)
    _, stat_shape = _check_shapes(_OP, input, normalized_shape, ((weight, "weight"), (bias, "bias")))
    dt = input._dtype
    return (*_key(input, dt), ((input._shape, dt), (stat_shape, dt), (stat_shape, dt)))


def _dims(input, normalized_shape):
    n = len(input._shape)
    return tuple(range(n - len(normalized_shape), n))


def _forward_ops(input, normalized_shape, weight, bias, eps):
    """(out, mean, rstd) with ember ops (float16 / bfloat16 computed in float32, as PyTorch's cpu kernel)."""
    x = input.float() if input._dtype in _LOWP else input
    from .. import var_mean
    var, mean = var_mean(x, _dims(input, normalized_shape), correction=0, keepdim=True)
    rstd = (var + eps).rsqrt()
    out = (x - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


def _composite(input, normalized_shape, weight, bias, eps, *, out):
    for dst, src in zip(out, _forward_ops(input, normalized_shape, weight, bias, eps)):
        dst.copy_(src)


native_layer_norm = declare(
    f"{_OP}(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) "
    "-> (Tensor, Tensor, Tensor)", _meta, composite=_composite, multi_output_type=lambda *outs: outs,
    doc="Layer normalization over the last len(normalized_shape) dims (matches torch.native_layer_norm): "
        "returns (out, mean, rstd), out = (input - mean) * rstd * weight + bias of input's shape, mean and "
        "rstd = 1 / sqrt(biased variance + eps) of shape input.shape[:-k] + (1,) * k, all in input's dtype "
        "(float16 / bfloat16 computed in float32). weight and bias (normalized_shape) are optional. RuntimeError "
        "for a normalized_shape that does not end input's shape, a weight or bias of another shape or dtype; "
        "NotImplementedError for a non-floating input.")


# ---------------------------------------------------------------- backward
@_memo
def _backward_meta(grad_out, input, normalized_shape, mean, rstd, weight):
    for a, name in ((grad_out, "grad_out"), (input, "input"), (mean, "mean"), (rstd, "rstd")):
        check_tensor(a, _BOP, name)
    same_device(grad_out, input, mean, rstd, weight)
    ns, stat_shape = _check_shapes(_BOP, input, normalized_shape, ((weight, "weight"),))
    for a, name, shape in ((grad_out, "grad_out", input._shape), (mean, "mean", stat_shape),
                           (rstd, "rstd", stat_shape)):
        if a._shape != shape:
            raise RuntimeError(f"{_BOP}: expected {name} of shape {_fmt(shape)}, got {_fmt(a._shape)}")
        if a._dtype is not input._dtype:
            raise RuntimeError(f"{_BOP}: expected {name} to have dtype {_name(input._dtype)}, got {_name(a._dtype)}")
    dt = input._dtype
    return (*_key(input, dt), ((input._shape, dt), (ns, dt), (ns, dt)))


def _gradients(grad_out, input, normalized_shape, mean, rstd, weight):
    """(grad_input, grad_weight, grad_bias) with ember ops, differentiable (float16 / bfloat16 in float32):
    with xhat = (x - mean) rstd and gy = grad_out weight, grad_input = rstd (gy - mean(gy) - xhat mean(gy xhat))
    over the normalized dims; grad_weight = sum(grad_out xhat), grad_bias = sum(grad_out) over the leading dims."""
    lowp = input._dtype in _LOWP
    g, x = (grad_out.float(), input.float()) if lowp else (grad_out, input)
    mean, rstd = (mean.float(), rstd.float()) if lowp else (mean, rstd)
    dims = _dims(input, normalized_shape)
    lead = tuple(range(len(input._shape) - len(dims)))
    xhat = (x - mean) * rstd
    gy = g if weight is None else g * (weight.float() if lowp else weight)
    grad_input = (gy - gy.mean(dims, keepdim=True) - xhat * (gy * xhat).mean(dims, keepdim=True)) * rstd
    grad_weight = (g * xhat).sum(lead) if lead else g * xhat
    grad_bias = g.sum(lead) if lead else g
    return grad_input, grad_weight, grad_bias


def _backward_composite(grad_out, input, normalized_shape, mean, rstd, weight, *, out):
    for dst, src in zip(out, _gradients(grad_out, input, normalized_shape, mean, rstd, weight)):
        dst.copy_(src)


layer_norm_backward = declare(
    f"{_BOP}(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight) "
    "-> (Tensor, Tensor, Tensor)", _backward_meta, composite=_backward_composite,
    multi_output_type=lambda *outs: outs,
    doc="The gradient of native_layer_norm (the role of aten::native_layer_norm_backward): from grad_out (input's "
        "shape), the input, the forward's mean and rstd and the optional weight, returns (grad_input, "
        "grad_weight, grad_bias), the last two of normalized_shape - always computed (as for a weight of ones and "
        "a zero bias when there are none).")


# ---------------------------------------------------------------- derivative
def _setup_context(ctx, inputs, output):
    input, normalized_shape, weight, bias, eps = inputs
    _, mean, rstd = output
    ctx.normalized_shape = tuple(normalized_shape)
    ctx.eps = eps
    ctx.has = (weight is not None, bias is not None)
    ctx.mark_non_differentiable(mean, rstd)
    ctx.save_for_backward(input, weight, mean, rstd)


def _backward(ctx, grad_out, grad_mean, grad_rstd):
    input, weight, mean, rstd = ctx.saved_tensors
    if is_grad_enabled():       # create_graph=True: written with ember ops, so the gradients have a graph;
        # mean and rstd recomputed from the input (the saved ones are non-differentiable outputs)
        _, mean, rstd = _forward_ops(input, ctx.normalized_shape, None, None, ctx.eps)
        grad_input, grad_weight, grad_bias = _gradients(grad_out, input, ctx.normalized_shape, mean, rstd, weight)
        grad_input, grad_weight, grad_bias = (t.to(input._dtype) for t in (grad_input, grad_weight, grad_bias))
    else:
        grad_input, grad_weight, grad_bias = layer_norm_backward(grad_out, input, ctx.normalized_shape, mean, rstd,
                                                                 weight)
    return (grad_input, None, grad_weight if ctx.has[0] else None, grad_bias if ctx.has[1] else None, None)


def _install():
    from ..library import register_autograd
    register_autograd(_OP, _backward, setup_context=_setup_context)


_install()
