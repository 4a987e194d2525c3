"""ember.nn.functional: activations (matches torch.nn.functional's activations).

Each activation is written with ember ops, so it runs on every device and autograd
records it; relu, softmax and log_softmax wrap the declared ops ``ember.relu``,
``ember.softmax`` and ``ember.log_softmax`` (one autograd node each) when the core has
them. Elementwise activations keep the input's shape; the smooth ones (gelu, silu,
softplus, elu, ...) accept floating dtypes only and raise PyTorch's NotImplementedError
'"<op>" not implemented for 'Long'' otherwise. ``inplace=True`` writes into ``input``
and returns it (the usual in-place autograd rules apply).
"""
from __future__ import annotations

import math
import warnings

import ember
from ..._autocast_state import autocast_function
from ... import _dtype as D
from ..._ops._out import write_out

__all__ = ["relu", "relu_", "leaky_relu", "leaky_relu_", "gelu", "silu", "sigmoid", "tanh", "softmax",
           "log_softmax", "softmin", "softplus", "elu", "elu_", "selu", "celu", "hardtanh", "hardtanh_", "relu6",
           "logsigmoid", "threshold", "threshold_", "mish", "hardsigmoid", "hardswish", "softsign", "tanhshrink",
           "hardshrink", "softshrink", "glu", "prelu", "rrelu", "rrelu_", "selu_", "celu_", "gumbel_softmax"]


def _floating(x, name):
    """NotImplementedError in PyTorch's words unless ``x`` has a floating dtype."""
    if not x._dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{D.torch_name(x._dtype)}'")


def _result(input, value, inplace):
    """``value``, or ``input`` overwritten with it when ``inplace``."""
    return input.copy_(value) if inplace else value


# ----------------------------------------------------------------------------- rectifiers
_relu_op = getattr(ember, "relu", None)
_relu_op_ = getattr(ember, "relu_", None)


def relu(input, inplace=False):
    """max(input, 0) elementwise; any real dtype, shape kept (matches torch.nn.functional.relu).

    The gradient is 0 where input <= 0, as PyTorch's.
    """
    if inplace:
        return relu_(input)
    if _relu_op is not None:
        return _relu_op(input)
    return ember.where(input > 0, input, 0)


def relu_(input):
    """In-place relu; returns ``input`` (matches torch.nn.functional.relu_)."""
    if _relu_op_ is not None:
        return _relu_op_(input)
    return input.copy_(ember.where(input > 0, input, 0))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """input where input > 0, else negative_slope * input; floating dtypes
    (matches torch.nn.functional.leaky_relu)."""
    _floating(input, "leaky_relu")
    return _result(input, ember.where(input > 0, input, input * negative_slope), inplace)


def leaky_relu_(input, negative_slope=0.01):
    """In-place leaky_relu (matches torch.nn.functional.leaky_relu_)."""
    return leaky_relu(input, negative_slope, inplace=True)


def threshold(input, threshold, value, inplace=False):
    """value where input <= threshold, else input (NaN passes through); any real dtype (matches
    torch.nn.functional.threshold)."""
    if input.dtype is D.bool or input.dtype.is_complex:
        raise NotImplementedError(f"\"threshold_cpu\" not implemented for '{D.torch_name(input.dtype)}'")
    value = ember.full((), value, dtype=input.dtype, device=input.device)   # the result keeps input's dtype
    return _result(input, ember.where(input <= threshold, value, input), inplace)


def threshold_(input, threshold, value):
    """In-place threshold (matches torch.nn.functional.threshold_)."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def _clip(x, lo, hi):
    """x clamped to [lo, hi] whose gradient is 1 strictly inside and 0 on and beyond the bounds, as
    PyTorch's hardtanh / hardsigmoid backward (a plain clamp passes the gradient on the bounds)."""
    if not x.requires_grad:
        return x.clamp(lo, hi)
    return ember.where((x > lo) & (x < hi), x, x.clamp(lo, hi).detach())


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """input clamped to [min_val, max_val] (matches torch.nn.functional.hardtanh).

    ValueError "min_val cannot be greater than max_val" when min_val > max_val.
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is D.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        # integer inputs keep their dtype, as PyTorch's: clamping to the truncated limits equals
        # clamping to the limits and truncating the result
        if input.dtype is D.uint8 and min_val < 0:
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        min_val, max_val = int(min_val), int(max_val)
    if inplace and not input.requires_grad:
        return input.clamp_(min_val, max_val)
    return _result(input, _clip(input, min_val, max_val), inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place hardtanh (matches torch.nn.functional.hardtanh_)."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(input, 0), 6) (matches torch.nn.functional.relu6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input, alpha=1.0, inplace=False):
    """input where input > 0, else alpha * (exp(input) - 1); floating dtypes (matches torch.nn.functional.elu)."""
    _floating(input, "elu")
    # expm1 of the clamped input: the branch not taken never overflows, so its gradient stays finite
    neg = ember.expm1(input.clamp(max=0)) * alpha
    return _result(input, ember.where(input > 0, input, neg), inplace)


def elu_(input, alpha=1.0):
    """In-place elu (matches torch.nn.functional.elu_)."""
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """scale * elu(input, alpha) with SELU's constants (matches torch.nn.functional.selu)."""
    _floating(input, "elu")
    return _result(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def selu_(input):
    """In-place selu (matches torch.nn.functional.selu_)."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """In-place celu (matches torch.nn.functional.celu_)."""
    return celu(input, alpha, inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: input where input > 0, else a * input with ``a`` drawn uniformly from
    [lower, upper] per element when ``training``, and a = (lower + upper) / 2 otherwise (matches
    torch.nn.functional.rrelu; the random draw follows ember's generator, so training-mode values differ
    from PyTorch's while the distribution is the same). Floating dtypes; any shape -> same shape.
    """
    _floating(input, "rrelu_with_noise")
    if training:
        slope = ember.empty(input.shape, dtype=input.dtype, device=input.device).uniform_(lower, upper)
    else:
        slope = (lower + upper) / 2
    return _result(input, ember.where(input > 0, input, input * slope), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place rrelu (matches torch.nn.functional.rrelu_)."""
    return rrelu(input, lower, upper, training, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (matches torch.nn.functional.celu)."""
    _floating(input, "elu")
    neg = ember.expm1(input.clamp(max=0) / alpha) * alpha
    return _result(input, ember.where(input > 0, input, neg), inplace)


# ----------------------------------------------------------------------------- smooth
def gelu(input, approximate="none", *, out=None):
    """Gaussian error linear unit x * Phi(x); ``approximate='tanh'`` uses the tanh formula
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); floating dtypes; ``out=`` as PyTorch's
    (matches torch.nn.functional.gelu).

    RuntimeError "approximate argument must be either none or tanh." for another value.
    """
    if approximate == "none":
        _floating(input, "GeluKernelImpl")
        return write_out("gelu", input * (ember.erf(input * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5, out, (input,))
    if approximate == "tanh":
        _floating(input, "GeluKernelImpl")
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return write_out("gelu", input * (ember.tanh(inner) + 1.0) * 0.5, out, (input,))
    raise RuntimeError("approximate argument must be either none or tanh.")


def silu(input, inplace=False):
    """x * sigmoid(x) (swish); floating dtypes (matches torch.nn.functional.silu)."""
    _floating(input, "silu")
    return _result(input, input * ember.sigmoid(input), inplace)


def sigmoid(input):
    """1 / (1 + exp(-input)); integers compute in the default float dtype (matches torch.nn.functional.sigmoid)."""
    return ember.sigmoid(input)


def tanh(input):
    """Hyperbolic tangent (matches torch.nn.functional.tanh)."""
    return ember.tanh(input)


def _softplus1(z):
    """log(1 + exp(z)) computed stably as max(z, 0) + log1p(exp(-|z|)), with max(z, 0) written
    (z + |z|) / 2 so the gradient at z = 0 is sigmoid(0) = 1/2 (a clamp would give 1)."""
    a = z.abs()
    return (z + a) * 0.5 + ember.log1p(ember.exp(-a))


@autocast_function
def softplus(input, beta=1.0, threshold=20.0, *, out=None):
    """log(1 + exp(beta * x)) / beta, reverting to x where beta * x > threshold; floating dtypes;
    ``out=`` as PyTorch's (matches torch.nn.functional.softplus)."""
    _floating(input, "softplus")
    z = input * beta if beta != 1 else input
    soft = _softplus1(z)
    if beta != 1:
        soft = soft / beta
    return write_out("softplus", ember.where(z > threshold, input, soft), out, (input,))


def logsigmoid(input, *, out=None):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|; floating dtypes; ``out=`` as PyTorch's
    (matches torch.nn.functional.logsigmoid)."""
    _floating(input, "log_sigmoid_forward")
    # min(x, 0) as (x - |x|) / 2: the gradient at 0 is then 1/2, as PyTorch's (a clamp would give 1)
    a = input.abs()
    return write_out("log_sigmoid_forward", (input - a) * 0.5 - ember.log1p(ember.exp(-a)), out, (input,))


def mish(input, inplace=False):
    """x * tanh(softplus(x)); floating dtypes (matches torch.nn.functional.mish)."""
    _floating(input, "mish")
    return _result(input, input * ember.tanh(_softplus1(input)), inplace)


def hardsigmoid(input, inplace=False):
    """clamp(x / 6 + 1/2, 0, 1); floating dtypes (matches torch.nn.functional.hardsigmoid)."""
    _floating(input, "hardsigmoid")
    return _result(input, _clip(input / 6.0 + 0.5, 0.0, 1.0), inplace)


def hardswish(input, inplace=False):
    """x * hardsigmoid(x); floating dtypes (matches torch.nn.functional.hardswish)."""
    _floating(input, "hardswish")
    return _result(input, input * _clip(input / 6.0 + 0.5, 0.0, 1.0), inplace)


def softsign(input):
    """x / (1 + |x|) (matches torch.nn.functional.softsign)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x) (matches torch.nn.functional.tanhshrink)."""
    return input - ember.tanh(input)


def hardshrink(input, lambd=0.5, *, out=None):
    """0 where |x| <= lambd, else x (NaN passes through); floating dtypes only (NotImplementedError
    otherwise); ``out=`` as PyTorch's (matches torch.nn.functional.hardshrink)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"hardshrink_cpu\" not implemented for '{D.torch_name(input.dtype)}'")
    return write_out("hardshrink", ember.where(input.abs() <= lambd, 0, input), out, (input,))


def softshrink(input, lambd=0.5, *, out=None):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0; NaN passes through; floating
    dtypes only; ``out=`` as PyTorch's (matches torch.nn.functional.softshrink).

    RuntimeError "lambda must be in range [0, 3.40282e+38] for input dtype Float, but found -1".
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"softshrink_check\" not implemented for '{D.torch_name(input.dtype)}'")
    top = ember.finfo(input.dtype).max
    if not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype {D.torch_name(input.dtype)}, "
                           f"but found {lambd:g}")
    return write_out("softshrink", ember.where(input.abs() <= lambd, 0, input - input.sign() * lambd), out,
                     (input,))


def glu(input, dim=-1):
    """a * sigmoid(b) where a, b are the halves of ``input`` along ``dim`` (matches torch.nn.functional.glu).

    RuntimeError "glu does not support scalars because halving size must be even" for 0-dim input and
    "Halving dimension must be even, but dimension D is size S" for an odd size.
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    _floating(input, "glu")
    d = dim % input.dim() if -input.dim() <= dim < input.dim() else dim
    size = input.shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    a, b = input.split(size // 2, d)
    return a * ember.sigmoid(b)


@autocast_function
def prelu(input, weight):
    """input where input > 0, else weight * input; ``weight`` (0- or 1-dim, input's dtype) has 1
    element or one per channel (dim 1 of input; 1 for a 1-dim input); the result has input's shape,
    0-dim included (matches torch.nn.functional.prelu).

    RuntimeError as PyTorch's: "prelu: Type promoting not supported. Got Float and Double",
    "Not allow zero-dim input tensor.", "Mismatch of parameter numbers and input channel size. ...",
    "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2".
    """
    nd = input.dim()
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {D.torch_name(input.dtype)} and "
                           f"{D.torch_name(weight.dtype)}")
    if weight.numel() != 1:
        if nd == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if nd > 1 else 1
        if channels != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    w = weight
    if weight.dim() != nd:
        w = weight.reshape([weight.numel() if i == 1 else 1 for i in range(nd)])
    return ember.where(input > 0, input, input * w)


# ----------------------------------------------------------------------------- softmax family
def _softmax_dim(name, ndim, stacklevel):
    """PyTorch's legacy implicit dim: 0 for 0-, 1- and 3-dim inputs, else 1, with its deprecation warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


_softmax_op = getattr(ember, "softmax", None)
_log_softmax_op = getattr(ember, "log_softmax", None)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``; ``dtype`` casts the input first
    (matches torch.nn.functional.softmax).

    ``dim=None`` is PyTorch's deprecated implicit choice (0 for 0-, 1- and 3-dim inputs, else 1)
    with its UserWarning.
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    if _softmax_op is not None:
        return _softmax_op(input, dim, dtype=dtype)
    x = input if dtype is None else input.to(dtype)
    _floating(x, "softmax_lastdim_kernel_impl")
    e = ember.exp(x - x.amax(dim, keepdim=True).detach())
    return e / e.sum(dim, keepdim=True)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - log(sum(exp(x))) along ``dim``; ``dtype`` casts the input first
    (matches torch.nn.functional.log_softmax; ``dim=None`` as in softmax)."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    if _log_softmax_op is not None:
        return _log_softmax_op(input, dim, dtype=dtype)
    x = input if dtype is None else input.to(dtype)
    _floating(x, "log_softmax_lastdim_kernel_impl")
    return x - ember.logsumexp(x, dim, keepdim=True)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample from the Gumbel-softmax (concrete) distribution over ``dim``: softmax((logits + g) / tau)
    with g ~ Gumbel(0, 1) i.i.d. drawn from ember's generator (matches torch.nn.functional.gumbel_softmax).

    ``logits`` (any shape, floating) are unnormalised log-probabilities; ``tau`` > 0 the temperature.
    ``hard=True`` returns the one-hot of the sample's argmax in the forward pass with the soft
    sample's gradient (straight-through: ``y_hard - y_soft.detach() + y_soft``). The result has
    ``logits``' shape and dtype. ``eps`` is deprecated and unused, as in PyTorch (a UserWarning
    when it is not the default). The values differ from PyTorch's (another generator), the
    distribution is the same.
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -ember.empty_like(logits).exponential_().log()       # -log(Exp(1)) ~ Gumbel(0, 1)
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = ember.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


@autocast_function
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along ``dim`` (matches torch.nn.functional.softmin; ``dim=None`` as in softmax)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    x = input if dtype is None else input.to(dtype)
    return softmax(-x, dim)
