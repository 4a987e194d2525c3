"""ember.nn.functional: normalization (matches torch.nn.functional's batch_norm, layer_norm,
group_norm, instance_norm, rms_norm, normalize, local_response_norm).

Statistics use the biased variance (correction 0) for normalizing; running statistics are
updated in place, outside autograd, with the unbiased variance, as PyTorch does.
"""
from __future__ import annotations

import ember
from ..._autocast_state import autocast_function
from ... import _dtype as D
from .._layer_norm import check_normalized_shape, native_layer_norm

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "normalize",
           "local_response_norm"]


def _channel_shape(input):
    """(C, 1, ..., 1): a per-channel tensor of input (N, C, *) broadcast against it."""
    return (input._shape[1],) + (1,) * (input.dim() - 2)


def _affine(x, weight, bias, shape):
    if weight is not None:
        x = x * weight.reshape(shape)
    if bias is not None:
        x = x + bias.reshape(shape)
    return x


def _check_len(name, t, c):
    if t is not None and t.numel() != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")


def _update_running(running, value, momentum):
    """running <- (1 - momentum) running + momentum value, in place and untracked."""
    with ember.no_grad():
        running.mul_(1.0 - momentum).add_(value.to(running._dtype), alpha=momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Normalize ``input`` (N, C, *) per channel C: with the batch's statistics when ``training``
    (updating ``running_mean`` / ``running_var`` in place with ``momentum``, the variance unbiased),
    with the running statistics otherwise; then scale by ``weight`` (C,) and shift by ``bias`` (C,)
    (matches torch.nn.functional.batch_norm).

    Errors: ValueError "Expected more than 1 value per channel when training, got input size ...";
    RuntimeError "running_mean must be defined in evaluation mode"; RuntimeError "<name> should contain C
    elements not K" for a wrong-sized statistic or affine parameter.
    """
    c = input._shape[1] if input.dim() > 1 else 0
    _check_len("running_mean", running_mean, c)
    _check_len("running_var", running_var, c)
    _check_len("weight", weight, c)
    _check_len("bias", bias, c)
    shape = _channel_shape(input)
    if training:
        n = input.numel() // c if c else 0
        if n <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got input size "
                             f"ember.Size({list(input._shape)})")
        dims = (0,) + tuple(range(2, input.dim()))
        var, mean = ember.var_mean(input, dims, correction=0, keepdim=True)
        if running_mean is not None:
            _update_running(running_mean, mean.detach().reshape(c), momentum)
        if running_var is not None:
            _update_running(running_var, var.detach().reshape(c) * (n / (n - 1)), momentum)
    else:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    scale = ember.rsqrt(var + eps)
    if weight is not None:
        scale = scale * weight.reshape(shape)
    out = (input - mean) * scale
    out = out + bias.reshape(shape) if bias is not None else out
    return ember._memory_format.follow_channels_last(out, input)     # channels_last stays so, as PyTorch


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    """Normalize each (sample, channel) of ``input`` (N, C, *) over its spatial dims; running statistics,
    when given, are updated with the batch average of the per-instance statistics (used instead of the
    input's when ``use_input_stats`` is False) (matches torch.nn.functional.instance_norm).

    ValueError "Expected more than 1 spatial element when training, got input size ..." when the
    spatial dims hold one element.
    """
    c = input._shape[1]
    shape = _channel_shape(input)
    if use_input_stats:
        dims = tuple(range(2, input.dim()))
        n = 1
        for s in input._shape[2:]:
            n *= s
        if n <= 1:
            raise ValueError("Expected more than 1 spatial element when training, got input size "
                             f"ember.Size({list(input._shape)})")
        var, mean = ember.var_mean(input, dims, correction=0, keepdim=True)
        if running_mean is not None:
            _update_running(running_mean, mean.detach().reshape(-1, c).mean(0), momentum)
        if running_var is not None:
            _update_running(running_var, var.detach().reshape(-1, c).mean(0) * (n / (n - 1)), momentum)
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    return _affine((input - mean) * ember.rsqrt(var + eps), weight, bias, shape)


def _normalized_dims(input, normalized_shape, name="normalized_shape"):
    if isinstance(normalized_shape, int):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    ns = tuple(int(s) for s in normalized_shape)
    check_normalized_shape(input, ns)
    return ns, tuple(range(input.dim() - len(ns), input.dim()))


@autocast_function
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalize over the last len(normalized_shape) dims of ``input`` (biased variance), then scale by
    ``weight`` and shift by ``bias`` (both of normalized_shape) (matches torch.nn.functional.layer_norm).

    RuntimeError "Given normalized_shape=[4], expected input with shape [*, 4], but got input of
    size[3, 5]" and "Expected weight to be of same shape as normalized_shape, ..." as PyTorch. One
    ``native_layer_norm`` op (its backward one ``_layer_norm_backward``).
    """
    ns, _ = _normalized_dims(input, normalized_shape)      # (TypeError for an int, as PyTorch)
    return native_layer_norm(input, list(ns), weight, bias, float(eps))[0]      # (the op checks weight, bias)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x ** 2) + eps) over the last len(normalized_shape) dims, times ``weight``; eps
    defaults to the dtype's machine epsilon (matches torch.nn.functional.rms_norm)."""
    _, dims = _normalized_dims(input, normalized_shape)
    if eps is None:
        eps = D.finfo(input._dtype).eps
    out = input * ember.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out * weight if weight is not None else out


@autocast_function
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalize ``input`` (N, C, *) over each of ``num_groups`` groups of C // num_groups channels (and
    the spatial dims), then apply the per-channel ``weight`` / ``bias`` (C,)
    (matches torch.nn.functional.group_norm).

    RuntimeError "Expected number of channels in input to be divisible by num_groups, ..." and
    "Expected weight to be a vector of size equal to the number of channels in input, ..." as PyTorch.
    """
    shape = input._shape
    c = shape[1]
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t._shape)} and input of shape {list(shape)}")
    x = input.reshape(shape[0], num_groups, -1)
    var, mean = ember.var_mean(x, -1, correction=0, keepdim=True)
    out = ((x - mean) * ember.rsqrt(var + eps)).reshape(shape)
    return _affine(out, weight, bias, _channel_shape(input))


@autocast_function
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps) along ``dim``; ``out`` is checked and resized as ``div``'s, which
    PyTorch's uses (matches torch.nn.functional.normalize)."""
    return ember.div(input, input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input), out=out)


def local_response_norm(input, size, alpha=0.0001, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x ** 2 over ``size`` neighbouring channels) ** beta, input (N, C, *)
    (matches torch.nn.functional.local_response_norm).

    ValueError "Expected 3D or higher dimensionality input (got D dimensions)" for fewer dims.
    """
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    c = input._shape[1]
    # zero-pad the channel dim by (size // 2, (size - 1) // 2) and sum each window of ``size`` channels
    lo, hi = size // 2, (size - 1) // 2
    parts = []
    if lo:
        parts.append(sq.new_zeros((sq._shape[0], lo) + tuple(sq._shape[2:])))
    parts.append(sq)
    if hi:
        parts.append(sq.new_zeros((sq._shape[0], hi) + tuple(sq._shape[2:])))
    padded = ember.cat(parts, 1) if len(parts) > 1 else sq
    acc = padded.narrow(1, 0, c)
    for i in range(1, size):
        acc = acc + padded.narrow(1, i, c)
    div = (acc * (alpha / size) + k) ** beta
    return input / div
