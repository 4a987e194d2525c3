"""Neural-network ops: linear, relu, softmax, log_softmax, nll_loss, im2col / col2im, max pooling,
constant padding and embedding (matches the ATen ops of the same names).

These are the few ops ``ember.nn.functional`` needs its own kernels for, for speed; each
has a meta function with PyTorch's checks and messages, and a composite written with
other ember ops, so every device runs them without a native kernel. Their derivatives
live in ``ember.autograd.derivatives``. The ``*_backward`` ops are the gradients of
nll_loss and max pooling as ops of their own (one kernel call in a training step's
backward, where the formula would be several ops).

Shapes follow PyTorch: images are NCHW (the batch dim optional where PyTorch allows it);
``int[2]`` arguments accept an int or a pair.
"""
from __future__ import annotations

import builtins
import math
import numbers

from .. import _dtype as D
from .._dispatch import declare
from .._tensor import Tensor, _wrap_dim
from ._meta import check_tensor, meta_cache, same_device

__all__ = ["linear", "relu", "relu_", "softmax", "_safe_softmax", "log_softmax", "threshold_backward",
           "_log_softmax_backward_data", "_softmax_backward_data", "nll_loss", "nll_loss_backward", "im2col", "col2im",
           "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "constant_pad_nd", "embedding"]

_name = D.torch_name
_CACHE_LIMIT = 4096


def _memo(meta):
    """Memoise a meta function per (tensor dtypes/shapes/devices/layouts, other arguments). Lists
    become tuples; a non-tensor is keyed with its class, so True, 1 and 1.0 stay apart; an
    unhashable argument takes the uncached path."""
    cache = meta_cache()

    def m(*args, **kwargs):
        k = []
        for a in (*args, *kwargs.values()) if kwargs else args:
            if isinstance(a, Tensor):
                k.append((a._dtype, a._shape, a._device, a._layout))
            elif a.__class__ is list:
                k.append((list, tuple(a)))
            else:
                k.append((a.__class__, a))
        if kwargs:
            k.append(tuple(kwargs))
        k = tuple(k)
        try:
            return cache[k]
        except KeyError:
            pass
        except TypeError:           # unhashable: the uncached path (run outside this handler: no chaining)
            k = None
        r = meta(*args, **kwargs)
        if k is not None:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            cache[k] = r
        return r
    return m


def _key(t, dt):
    return t._device, (t._device.type, t._layout.name, dt)


def _not_impl(op, dt):
    return NotImplementedError(f"\"{op}\" not implemented for '{_name(dt)}'")


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def pair(v, name="value"):
    """An int or a sequence of one or two ints as a pair (kernel_size=3 -> (3, 3))."""
    if isinstance(v, numbers.Integral) and not isinstance(v, builtins.bool):
        return (int(v), int(v))
    v = tuple(v)
    if len(v) == 1:
        return (int(v[0]), int(v[0]))
    if len(v) != 2:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of two ints")
    return (int(v[0]), int(v[1]))


# ---------------------------------------------------------------- relu
# ---------------------------------------------------------------- linear
@_memo
def _linear_meta(input, weight, bias=None):
    check_tensor(input, "linear")
    check_tensor(weight, "linear", "weight")
    same_device(input, weight, bias)
    xs, ws = input._shape, weight._shape
    if not xs or not ws:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {len(xs)}D and {len(ws)}D")
    if len(ws) != 2 or xs[-1] != ws[1]:
        rows = math.prod(xs[:-1])
        if len(ws) == 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{xs[-1]} and {ws[1]}x{ws[0]})")
        raise RuntimeError(f"linear(): weight must be 2-D, got a {len(ws)}-D weight of shape {_fmt(ws)}")
    dt = input._dtype
    if weight._dtype is not dt:
        c = lambda d: {D.float32: "float", D.float64: "double"}.get(d, _name(d).lower())   # C++ type names
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {c(dt)} != {c(weight._dtype)}")
    shape = tuple(xs[:-1]) + (ws[0],)
    if bias is not None:
        check_tensor(bias, "linear", "bias")
        if bias._dtype is not dt:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {_name(bias._dtype)} and {_name(dt)}")
        bs = bias._shape
        if len(bs) > 1 or (bs and bs[0] not in (1, ws[0])):
            raise RuntimeError(f"The expanded size of the tensor ({ws[0]}) must match the existing size "
                               f"({bs[-1]}) at non-singleton dimension {len(shape) - 1}.  Target sizes: "
                               f"{_fmt(shape)}.  Tensor sizes: {_fmt(bs)}")
    return (*_key(input, dt), shape, dt)


def _linear_composite(input, weight, bias=None, *, out):
    r = input.matmul(weight.t())
    out.copy_(r if bias is None else r + bias)


linear = declare("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", _linear_meta,
                 composite=_linear_composite,
                 doc="input @ weight.T + bias (matches torch.nn.functional.linear / aten::linear): input (*, in), "
                     "weight (out, in), bias (out,) or None -> (*, out), all of one dtype. One op (one autograd "
                     "node) where the composite would be a transpose, a matmul and an add. RuntimeError \"mat1 and "
                     "mat2 shapes cannot be multiplied (3x4 and 3x5)\" on mismatched features; RuntimeError on "
                     "mixed dtypes or a 0-d argument.")


def _relu_meta_slow(self):
    check_tensor(self, "relu")
    dt = self._dtype
    if dt is D.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    if dt.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    return self._device, (self._device.type, self._layout.name, dt), self._shape, dt


_relu_cache = meta_cache()


def _relu_meta(self):
    try:
        return _relu_cache[(self._dtype, self._shape, self._device, self._layout)]
    except KeyError:
        cached = True
    except AttributeError:
        cached = False
    r = _relu_meta_slow(self)           # outside the handlers: its errors are not chained to a KeyError
    if cached:
        if len(_relu_cache) > _CACHE_LIMIT:
            _relu_cache.clear()
        _relu_cache[(self._dtype, self._shape, self._device, self._layout)] = r
    return r


def _relu_composite(self, *, out):
    from ._elementwise import clamp
    clamp(self, 0, out=out)


relu = declare("relu(Tensor self) -> Tensor", _relu_meta, composite=_relu_composite, inplace=True,
               doc="max(x, 0) elementwise (matches torch.relu); NaN stays NaN. Shape and dtype kept. RuntimeError "
                   "\"Boolean inputs not supported for relu\"; NotImplementedError for complex inputs.")
relu_ = relu.inplace


# ---------------------------------------------------------------- softmax / log_softmax
def _softmax_meta_for(op, kernel=None):
    kernel = kernel or op

    @_memo
    def meta(self, dim, dtype=None):
        check_tensor(self, op)
        if not isinstance(dim, numbers.Integral) or isinstance(dim, builtins.bool):
            raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
        d = _wrap_dim(dim, len(self._shape))
        if dtype is not None and not isinstance(dtype, D.dtype):
            raise TypeError(f"{op}(): argument 'dtype' must be ember.dtype, not {type(dtype).__name__}")
        out = dtype or self._dtype
        if not out.is_floating_point:
            last = d == builtins.max(len(self._shape), 1) - 1
            raise _not_impl(f"{kernel}_lastdim_kernel_impl" if last else f"{kernel}_kernel_impl", out)
        return (*_key(self, out), self._shape, out)
    return meta


def _softmax_input(self, dim, dtype):
    """(x, dim) for the softmax composites: cast to ``dtype``, a 0-dim input as 1-D; None for an empty input."""
    x = self.to(dtype) if dtype is not None and dtype is not self._dtype else self
    if x.numel() == 0:
        return None, dim
    return (x.reshape(1), 0) if x.dim() == 0 else (x, dim)


def _softmax_composite(self, dim, dtype=None, *, out):
    x, dim = _softmax_input(self, dim, dtype)
    if x is not None:
        e = (x - x.amax(dim, keepdim=True)).exp()
        out.copy_((e / e.sum(dim, keepdim=True)).reshape(out._shape))


def _safe_softmax_composite(self, dim, dtype=None, *, out):
    x, dim = _softmax_input(self, dim, dtype)
    if x is not None:
        m = x.amax(dim, keepdim=True)
        dead = m.isneginf()             # rows with every entry -inf: exp(x - 0) = 0 over a sum of 1 gives 0
        e = (x - m.masked_fill(dead, 0)).exp()
        out.copy_((e / e.sum(dim, keepdim=True).masked_fill(dead, 1)).reshape(out._shape))


def _log_softmax_composite(self, dim, dtype=None, *, out):
    x, dim = _softmax_input(self, dim, dtype)
    if x is not None:
        s = x - x.amax(dim, keepdim=True)
        out.copy_((s - s.exp().sum(dim, keepdim=True).log()).reshape(out._shape))


_SOFTMAX_DOC = ("over ``dim`` (matches torch.{0}): shape kept; ``dtype`` casts the input first. Computed stably (the "
                "maximum is subtracted first). Floating dtypes only (NotImplementedError otherwise); IndexError for a "
                "dim out of range.")
softmax = declare("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", _softmax_meta_for("softmax"),
                  composite=_softmax_composite, doc="exp(x) / sum(exp(x)) " + _SOFTMAX_DOC.format("softmax"))
_safe_softmax = declare(
    "_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", _softmax_meta_for("_safe_softmax", "softmax"),
    composite=_safe_softmax_composite,
    doc="softmax with rows of all -inf giving zeros instead of NaN, as attention uses for fully masked query rows "
        + _SOFTMAX_DOC.format("_safe_softmax").replace("Computed stably", "Otherwise as softmax: computed stably"))
log_softmax = declare("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                      _softmax_meta_for("log_softmax"), composite=_log_softmax_composite,
                      doc="x - log(sum(exp(x))) " + _SOFTMAX_DOC.format("log_softmax"))



# ---------------------------------------------------------------- the backward ops of relu, softmax, log_softmax
@_memo
def _threshold_backward_meta(grad_output, self, threshold):
    from ._meta import broadcast_shapes
    check_tensor(grad_output, "threshold_backward", "grad_output")
    check_tensor(self, "threshold_backward", "self")
    same_device(grad_output, self)
    if not isinstance(threshold, numbers.Number):
        raise TypeError(f"threshold_backward(): argument 'threshold' must be Number, not {type(threshold).__name__}")
    shape = broadcast_shapes(grad_output._shape, self._shape)
    dt = D.result_type(grad_output, self)
    if dt is D.bool or dt.is_complex:
        raise _not_impl("threshold_backward", dt)
    return (*_key(grad_output, dt), shape, dt)


def _threshold_backward_composite(grad_output, self, threshold, *, out):
    from ._elementwise import where
    where(self <= threshold, 0, grad_output, out=out)     # (a NaN in self passes the gradient, as PyTorch)


threshold_backward = declare(
    "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor", _threshold_backward_meta,
    composite=_threshold_backward_composite,
    doc="The gradient of threshold / relu (matches aten::threshold_backward): ``grad_output`` where ``self > "
        "threshold``, else 0 (also where grad_output is NaN or inf; a NaN in self passes the gradient), broadcast, "
        "in the operands' promoted dtype. relu's derivative is threshold_backward(grad, result, 0). RuntimeError "
        "when the shapes do not broadcast; NotImplementedError for bool / complex.")


def _softmax_backward_meta_for(op, kernel):
    @_memo
    def meta(grad_output, output, dim, input_dtype):
        check_tensor(grad_output, op, "grad_output")
        check_tensor(output, op, "output")
        same_device(grad_output, output)
        if not isinstance(dim, numbers.Integral) or isinstance(dim, builtins.bool):
            raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
        if not isinstance(input_dtype, D.dtype):
            raise TypeError(f"{op}(): argument 'input_dtype' must be ember.dtype, not {type(input_dtype).__name__}")
        d = _wrap_dim(dim, len(output._shape))
        if grad_output._shape != output._shape:
            raise RuntimeError(f"{op}: grad_output of shape {_fmt(grad_output._shape)} and output of shape "
                               f"{_fmt(output._shape)} differ")
        gd = grad_output._dtype
        if output._dtype is not gd:
            raise RuntimeError(f"expected scalar type {_name(gd)} but found {_name(output._dtype)}")
        if not gd.is_floating_point:
            last = d == builtins.max(len(output._shape), 1) - 1
            raise _not_impl(f"{kernel}_lastdim_kernel_impl" if last else f"{kernel}_kernel_impl", gd)
        # PyTorch: the gradient keeps grad_output's dtype, but for a float16 input softmaxed in float32 (its CUDA
        # kernel's half_to_float; its cpu kernel raises there)
        dt = input_dtype if gd is D.float32 and input_dtype is D.float16 else gd
        return (*_key(grad_output, dt), output._shape, dt)
    return meta


def _softmax_dim(t, dim):
    return (t.reshape(1), 0) if t.dim() == 0 else (t, dim)


def _log_softmax_backward_composite(grad_output, output, dim, input_dtype, *, out):
    g, d = _softmax_dim(grad_output, dim)
    y, _ = _softmax_dim(output, dim)
    out.copy_((g - y.exp() * g.sum(d, keepdim=True)).reshape(out._shape))


def _softmax_backward_composite(grad_output, output, dim, input_dtype, *, out):
    g, d = _softmax_dim(grad_output, dim)
    y, _ = _softmax_dim(output, dim)
    out.copy_((y * (g - (g * y).sum(d, keepdim=True))).reshape(out._shape))


_SOFTMAX_BACKWARD_DOC = ("grad_output and output of one shape and floating dtype (RuntimeError otherwise; "
                         "NotImplementedError for integers), reduced over ``dim`` (IndexError out of range); the "
                         "result keeps grad_output's dtype, or is float16 for a float16 input softmaxed in float32 "
                         "(``input_dtype`` float16 with a float32 gradient: PyTorch's CUDA result; its cpu kernel "
                         "raises there).")
_log_softmax_backward_data = declare(
    "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
    _softmax_backward_meta_for("_log_softmax_backward_data", "log_softmax_backward"),
    composite=_log_softmax_backward_composite,
    doc="The gradient of log_softmax from its output (matches torch._log_softmax_backward_data): grad_output - "
        "exp(output) * sum(grad_output, dim). " + _SOFTMAX_BACKWARD_DOC)
_softmax_backward_data = declare(
    "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
    _softmax_backward_meta_for("_softmax_backward_data", "softmax_backward"), composite=_softmax_backward_composite,
    doc="The gradient of softmax from its output (matches torch._softmax_backward_data): output * (grad_output - "
        "sum(grad_output * output, dim)). " + _SOFTMAX_BACKWARD_DOC)


# ---------------------------------------------------------------- nll_loss
_REDUCTIONS = (0, 1, 2)   # none, mean, sum (PyTorch's Reduction enum)


def _nll_check(self, target, weight, reduction, op="nll_loss"):
    """Every check of nll_loss, in PyTorch's order and words; returns the output shape."""
    check_tensor(self, op)
    check_tensor(target, op, "target")
    same_device(self, target, weight)
    nd = len(self._shape)
    if nd == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    tshape = target._shape
    if nd >= 2 and tshape and self._shape[0] != tshape[0]:
        raise ValueError(f"Expected input batch_size ({self._shape[0]}) to match target batch_size ({tshape[0]}).")
    if target._dtype not in (D.int64, D.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_name(target._dtype)}")
    if nd > 2:
        if len(tshape) != nd - 1:
            if len(tshape) == 1:
                raise RuntimeError(f"only batches of spatial targets supported ({nd - 1}D tensors) but got targets "
                                   f"of dimension: {len(tshape)}")
            raise RuntimeError(f"Expected target size {_fmt(self._shape[:1] + self._shape[2:])}, got {_fmt(tshape)}")
        if tuple(tshape[1:]) != tuple(self._shape[2:]):
            raise RuntimeError(f"Expected target size {_fmt(self._shape[:1] + self._shape[2:])}, got {_fmt(tshape)}")
    elif nd == 2 and len(tshape) != 1:
        raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported")
    elif nd == 1 and len(tshape) > 1:
        raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported")
    elif nd == 1 and len(tshape) == 1 and tshape[0] != 1:
        raise RuntimeError(f"size mismatch (got input: {_fmt(self._shape)}, target: {_fmt(tshape)})")
    C = self._shape[1] if nd >= 2 else self._shape[0]
    if weight is not None:
        check_tensor(weight, op, "weight")
        if weight.numel() != C or weight.dim() != 1:
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no classes but got "
                               f"weight tensor of shape: {_fmt(weight._shape)}")
    dt = self._dtype
    if not dt.is_floating_point:
        raise _not_impl("nll_loss_out_frame" if nd <= 2 else "nll_loss2d_forward_out_frame", dt)
    if weight is not None and weight._dtype is not dt:
        raise RuntimeError(f"expected scalar type {_name(dt)} but found {_name(weight._dtype)}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction != 0:
        return ()
    return tuple(tshape) if nd >= 2 else ()


@_memo
def _nll_meta(self, target, weight=None, reduction=1, ignore_index=-100):
    shape = _nll_check(self, target, weight, reduction)
    return (*_key(self, self._dtype), shape, self._dtype)


def _nll_flat(self, target, weight, ignore_index):
    """(input as (M, C), target as (M,) int64 with ignored entries 0, per-row weights, M) for the composites."""
    nd = self.dim()
    C = self._shape[1] if nd >= 2 else self._shape[0]
    if nd == 1:
        x = self.reshape(1, C)
    elif nd == 2:
        x = self
    else:
        x = self.movedim(1, -1).reshape(-1, C)
    t = target.reshape(-1)
    if t._dtype is not D.int64:
        t = t.to(D.int64)
    valid = t != ignore_index
    bad = valid.logical_and((t < 0).logical_or(t >= C))
    if t.numel() and bool(bad.any()):
        raise IndexError(f"Target {int(t.masked_select(bad)[0])} is out of bounds.")
    t = t.masked_fill(valid.logical_not(), 0)
    w = valid.to(self._dtype) if weight is None else weight.index_select(0, t) * valid
    return x, t, w


def _nll_composite(self, target, weight=None, reduction=1, ignore_index=-100, *, out):
    x, t, w = _nll_flat(self, target, weight, ignore_index)
    losses = -(x.gather(1, t.unsqueeze(1)).squeeze(1) * w)
    if reduction == 0:
        out.copy_(losses.reshape(out._shape))
    elif reduction == 2:
        out.copy_(losses.sum())
    else:
        out.copy_(losses.sum() / w.sum())


nll_loss = declare("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, int ignore_index=-100) "
                   "-> Tensor", _nll_meta, composite=_nll_composite,
                   doc="The negative log likelihood loss of log-probabilities ``self`` at class indices ``target`` "
                       "(matches torch.nll_loss_nd / torch.nn.functional.nll_loss with ``reduction`` 0 none, 1 mean, "
                       "2 sum). self (N, C), (N, C, d1, ...) or (C,); target (N,), (N, d1, ...) or () of int64 / "
                       "uint8; weight (C,) or None. loss_i = -weight[t_i] * self[i, t_i], 0 where t_i == "
                       "ignore_index; mean divides by the sum of the weights of the non-ignored targets (NaN when "
                       "all are ignored). ValueError \"Expected input batch_size (3) to match target batch_size "
                       "(2).\"; IndexError \"Target 7 is out of bounds.\"; RuntimeError for a wrong target dtype, "
                       "weight size or target shape.")


@_memo
def _nll_backward_meta(grad_output, self, target, weight, reduction, ignore_index):
    _nll_check(self, target, weight, reduction, "nll_loss_backward")
    check_tensor(grad_output, "nll_loss_backward", "grad_output")
    return (*_key(self, self._dtype), self._shape, self._dtype)


def _nll_backward_composite(grad_output, self, target, weight, reduction, ignore_index, *, out):
    x, t, w = _nll_flat(self, target, weight, ignore_index)
    g = grad_output.reshape(-1) if reduction == 0 else grad_output
    if reduction == 1:
        g = g / w.sum()
    vals = (-(w * g)).to(self._dtype)
    from ._creation import zeros
    gx = zeros(x._shape, dtype=self._dtype, device=self._device).scatter(1, t.unsqueeze(1), vals.unsqueeze(1))
    nd = self.dim()
    if nd > 2:
        shape = (self._shape[0],) + tuple(self._shape[2:]) + (self._shape[1],)
        gx = gx.reshape(shape).movedim(-1, 1)
    out.copy_(gx.reshape(out._shape))


nll_loss_backward = declare(
    "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, "
    "int ignore_index) -> Tensor", _nll_backward_meta, composite=_nll_backward_composite,
    doc="The gradient of nll_loss with respect to ``self`` (shape of ``self``): -weight[t] * grad_output at each "
        "target class (divided by the total weight for mean), 0 elsewhere and at ignored targets.")


# ---------------------------------------------------------------- im2col / col2im
def _check_window(kernel_size, dilation, padding, stride):
    kh, kw = pair(kernel_size, "kernel_size")
    dh, dw = pair(dilation, "dilation")
    ph, pw = pair(padding, "padding")
    sh, sw = pair(stride, "stride")
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dh} "
                           f"dilation_width: {dw}")
    if ph < 0 or pw < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}")
    return (kh, kw), (dh, dw), (ph, pw), (sh, sw)


def blocks(size, k, d, p, s):
    """The number of sliding blocks along one dim: (size + 2p - d(k-1) - 1) // s + 1."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


@_memo
def _im2col_meta(self, kernel_size, dilation, padding, stride):
    check_tensor(self, "im2col")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _check_window(kernel_size, dilation, padding, stride)
    nd = len(self._shape)
    if nd not in (3, 4) or builtins.any(s == 0 for s in self._shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{_fmt(self._shape)}")
    H, W = self._shape[-2:]
    oh, ow = blocks(H, kh, dh, ph, sh), blocks(W, kw, dw, pw, sw)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size=({kh}, {kw}), dilation=({dh}, "
                           f"{dw}), padding=({ph}, {pw}), calculated shape of the array of sliding blocks as ({oh}, "
                           f"{ow}), but its components must be at least one.")
    C = self._shape[-3]
    shape = self._shape[:-3] + (C * kh * kw, oh * ow)
    return (*_key(self, self._dtype), shape, self._dtype)


def _im2col_composite(self, kernel_size, dilation, padding, stride, *, out):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _check_window(kernel_size, dilation, padding, stride)
    x = self if self.dim() == 4 else self.unsqueeze(0)
    N, C, H, W = x._shape
    oh, ow = blocks(H, kh, dh, ph, sh), blocks(W, kw, dw, pw, sw)
    xp = constant_pad_nd(x, (pw, pw, ph, ph)) if (ph or pw) else x.contiguous()
    Hp, Wp = H + 2 * ph, W + 2 * pw
    v = xp.as_strided((N, C, kh, kw, oh, ow), (C * Hp * Wp, Hp * Wp, dh * Wp, dw, sh * Wp, sw), 0)
    out.view(N, C, kh, kw, oh, ow).copy_(v)


im2col = declare("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
                 _im2col_meta, composite=_im2col_composite,
                 doc="The sliding local blocks of an image batch (matches torch.nn.functional.unfold): (N, C, H, W) "
                     "-> (N, C * kh * kw, L) with L = oh * ow blocks, element [n, (c, i, j), (y, x)] = the padded "
                     "input at [n, c, y * sh + i * dh, x * sw + j * dw]; 3-D (C, H, W) input gives (C * kh * kw, L). "
                     "RuntimeError in PyTorch's words for non-positive kernel / stride / dilation, negative "
                     "padding, a wrong rank, or no block fitting.")


@_memo
def _col2im_meta(self, output_size, kernel_size, dilation, padding, stride):
    check_tensor(self, "col2im")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _check_window(kernel_size, dilation, padding, stride)
    H, W = pair(output_size, "output_size")
    nd = len(self._shape)
    if nd not in (2, 3) or builtins.any(s == 0 for s in self._shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {_fmt(self._shape)}")
    rows, L = self._shape[-2:]
    if rows % (kh * kw):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={rows} and kernel_size=({kh}, {kw}).")
    oh, ow = blocks(H, kh, dh, ph, sh), blocks(W, kw, dw, pw, sw)
    if oh * ow != L or oh < 1 or ow < 1:
        raise RuntimeError(f"Given output_size=({H}, {W}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), "
                           f"padding=({ph}, {pw}), stride=({sh}, {sw}), expected size of input's dimension 2 to match "
                           f"the calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got "
                           f"input.size(2)={L}.")
    shape = self._shape[:-2] + (rows // (kh * kw), H, W)
    return (*_key(self, self._dtype), shape, self._dtype)


def _col2im_composite(self, output_size, kernel_size, dilation, padding, stride, *, out):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _check_window(kernel_size, dilation, padding, stride)
    H, W = pair(output_size)
    cols = self if self.dim() == 3 else self.unsqueeze(0)
    N = cols._shape[0]
    C = cols._shape[1] // (kh * kw)
    oh, ow = blocks(H, kh, dh, ph, sh), blocks(W, kw, dw, pw, sw)
    v = cols.reshape(N, C, kh, kw, oh, ow)
    from ._creation import zeros
    # padded to cover every block even when trailing rows / columns are not reached
    Hp = builtins.max(H + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    Wp = builtins.max(W + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    xp = zeros((N, C, Hp, Wp), dtype=self._dtype, device=self._device)
    for i in range(kh):
        for j in range(kw):
            xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw].add_(v[:, :, i, j])
    out.copy_(xp[:, :, ph:ph + H, pw:pw + W].reshape(out._shape))


col2im = declare("col2im(Tensor self, int[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
                 "int[2] stride) -> Tensor", _col2im_meta, composite=_col2im_composite,
                 doc="Sums sliding local blocks back into an image (matches torch.nn.functional.fold; the adjoint of "
                     "im2col): (N, C * kh * kw, L) -> (N, C, H, W) with (H, W) = output_size; 2-D input gives "
                     "(C, H, W). Overlapping blocks add up. RuntimeError in PyTorch's words when the sizes do not "
                     "match.")


# ---------------------------------------------------------------- max_pool2d_with_indices
def pool_out_size(size, k, s, p, d, ceil_mode):
    """Output length of a pooling window along one dim, as PyTorch (a window must start inside the
    input or its left padding)."""
    span = size + 2 * p - d * (k - 1) - 1
    o = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


def _pool_args(kernel_size, stride, padding, dilation):
    kh, kw = pair(kernel_size, "max_pool2d: kernel_size")
    st = tuple(stride) if not isinstance(stride, numbers.Integral) else (stride,)
    sh, sw = (kh, kw) if len(st) == 0 else pair(st, "max_pool2d: stride")
    ph, pw = pair(padding, "max_pool2d: padding")
    dh, dw = pair(dilation, "max_pool2d: dilation")
    return (kh, kw), (sh, sw), (ph, pw), (dh, dw)


@_memo
def _max_pool_meta(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    check_tensor(self, "max_pool2d")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_args(kernel_size, stride, padding, dilation)
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel_size should be greater than zero, but got kH: {kh} kW: {kw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError("stride should not be zero")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}")
    if ph > kh // 2 or pw > kw // 2:
        p, k, d = (ph, kh, dh) if ph > kh // 2 else (pw, kw, dw)
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} "
                           f"and dilation={d}")
    nd = len(self._shape)
    if nd not in (3, 4) or builtins.any(s == 0 for s in self._shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{_fmt(self._shape)}")
    dt = self._dtype
    if dt is D.bool or dt.is_complex:
        raise _not_impl("max_pool2d", dt)
    C, H, W = self._shape[-3:]
    oh = pool_out_size(H, kh, sh, ph, dh, ceil_mode)
    ow = pool_out_size(W, kw, sw, pw, dw, ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({C}x{H}x{W}). Calculated output size: ({C}x{oh}x{ow}). Output size "
                           f"is too small")
    shape = self._shape[:-2] + (oh, ow)
    return (*_key(self, dt), ((shape, dt), (shape, D.int64)))


def _lowest(dt):
    return -math.inf if dt.is_floating_point else (D.iinfo(dt).min)


def _max_pool_composite(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False, *, out):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_args(kernel_size, stride, padding, dilation)
    vals, idx = out
    x = self if self.dim() == 4 else self.unsqueeze(0)
    N, C, H, W = x._shape
    oh, ow = vals._shape[-2:]
    Hp = builtins.max(H + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    Wp = builtins.max(W + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    xp = constant_pad_nd(x, (pw, Wp - W - pw, ph, Hp - H - ph), _lowest(self._dtype))
    from ._creation import arange
    best = where_idx = None
    base = (arange(oh, device=self._device) * sh - ph).unsqueeze(1) * W + (arange(ow, device=self._device) * sw - pw)
    for i in range(kh):
        for j in range(kw):
            v = xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            flat = base + (i * dh * W + j * dw)
            if best is None:
                best, where_idx = v.clone(), flat.expand(v._shape).clone()
                continue
            take = (v > best).logical_or(v != v)      # NaN wins, as PyTorch
            best = best.where(take.logical_not(), v)
            where_idx = where_idx.where(take.logical_not(), flat.expand(v._shape))
    vals.copy_(best.reshape(vals._shape))
    idx.copy_(where_idx.reshape(idx._shape))


max_pool2d_with_indices = declare(
    "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
    "bool ceil_mode=False) -> (Tensor, Tensor)", _max_pool_meta, composite=_max_pool_composite,
    multi_output_type=lambda *outs: outs,
    doc="2-D max pooling with the argmax of each window (matches torch.nn.functional.max_pool2d(..., "
        "return_indices=True)): (N, C, H, W) or (C, H, W) -> (values, indices) of shape (..., oh, ow); indices are "
        "int64, flat over H * W of each plane, as PyTorch. ``stride`` [] means kernel_size; padding counts as -inf; "
        "``ceil_mode`` rounds the output size up (a window must start inside the input or its left padding). Ties "
        "go to the first maximum, a NaN wins. RuntimeError in PyTorch's words for bad sizes.")


@_memo
def _max_pool_backward_meta(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    check_tensor(grad_output, "max_pool2d_with_indices_backward", "grad_output")
    check_tensor(indices, "max_pool2d_with_indices_backward", "indices")
    if grad_output._shape != indices._shape:
        raise RuntimeError(f"max_pool2d_with_indices_backward: grad_output of shape {_fmt(grad_output._shape)} "
                           f"does not match indices of shape {_fmt(indices._shape)}")
    return (*_key(self, grad_output._dtype), self._shape, grad_output._dtype)


def _max_pool_backward_composite(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices,
                                 *, out):
    H, W = self._shape[-2:]
    lead = self._shape[:-2]
    from ._creation import zeros
    z = zeros(lead + (H * W,), dtype=grad_output._dtype, device=grad_output._device)
    g = grad_output.reshape(lead + (-1,))
    i = indices.reshape(lead + (-1,))
    out.copy_(z.scatter_add(-1, i, g).reshape(out._shape))


max_pool2d_with_indices_backward = declare(
    "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
    "int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
    _max_pool_backward_meta, composite=_max_pool_backward_composite,
    doc="The gradient of max_pool2d_with_indices with respect to ``self`` (its shape): each output's gradient "
        "added at its argmax.")


# ---------------------------------------------------------------- constant_pad_nd
@_memo
def _pad_meta(self, pad, value=0):
    check_tensor(self, "constant_pad_nd")
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    nd = len(self._shape)
    if len(pad) // 2 > nd:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. Pad "
                           f"length is {len(pad)}while the input has {nd}dimensions.")
    shape = list(self._shape)
    for k in range(len(pad) // 2):
        d = nd - 1 - k
        n = shape[d] + pad[2 * k] + pad[2 * k + 1]
        if shape[d] + builtins.min(pad[2 * k], 0) + builtins.min(pad[2 * k + 1], 0) < 0 or n < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        shape[d] = n
    return (*_key(self, self._dtype), tuple(shape), self._dtype)


def _pad_slices(shape, pad, nd):
    """(source slices, destination slices) of a constant pad: negative pads crop the source."""
    src, dst = [slice(None)] * nd, [slice(None)] * nd
    for k in range(len(pad) // 2):
        d = nd - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        n = shape[d]
        s0, s1 = builtins.max(-lo, 0), n - builtins.max(-hi, 0)
        src[d] = slice(s0, builtins.max(s1, s0))
        d0 = builtins.max(lo, 0)
        dst[d] = slice(d0, d0 + builtins.max(s1 - s0, 0))
    return tuple(src), tuple(dst)


def _pad_composite(self, pad, value=0, *, out):
    out.fill_(value)
    src, dst = _pad_slices(self._shape, tuple(pad), self.dim())
    if out.numel():
        out[dst].copy_(self[src])


constant_pad_nd = declare("constant_pad_nd(Tensor self, int[] pad, Scalar value=0) -> Tensor", _pad_meta,
                          composite=_pad_composite,
                          doc="Pads the last len(pad) // 2 dims with ``value`` (matches torch.constant_pad_nd): pad = "
                              "(last_lo, last_hi, second_last_lo, ...); negative pads crop. RuntimeError \"Length of "
                              "pad must be even but instead it equals 3\", for too long a pad, or a negative size.")


# ---------------------------------------------------------------- embedding
@_memo
def _embedding_meta(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    check_tensor(weight, "embedding", "weight")
    check_tensor(indices, "embedding", "indices")
    same_device(weight, indices)
    if indices._dtype not in (D.int64, D.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_tensor_type(indices)} instead (while checking arguments for "
                           f"embedding)")
    if len(weight._shape) != 2:
        raise RuntimeError("'weight' must be 2-D")
    shape = indices._shape + weight._shape[1:]
    return (*_key(weight, weight._dtype), shape, weight._dtype)


def _tensor_type(t):
    names = {D.float32: "Float", D.float64: "Double", D.float16: "Half", D.bfloat16: "BFloat16", D.int8: "Char",
             D.uint8: "Byte", D.int16: "Short", D.int32: "Int", D.int64: "Long", D.bool: "Bool",
             D.complex64: "ComplexFloat", D.complex128: "ComplexDouble"}
    prefix = "torch." if t._device.type == "cpu" else f"torch.{t._device.type}."
    return f"{prefix}{names.get(t._dtype, 'Tensor')}Tensor"


def _embedding_composite(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False, *, out):
    idx = indices.reshape(-1)
    n = weight._shape[0]
    if idx.numel() and bool(((idx < 0).logical_or(idx >= n)).any()):
        raise IndexError("index out of range in self")
    out.copy_(weight.index_select(0, idx).reshape(out._shape))


embedding = declare("embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, "
                    "bool sparse=False) -> Tensor", _embedding_meta, composite=_embedding_composite,
                    doc="Rows of ``weight`` (num_embeddings, D) at ``indices`` (int64 / int32, any shape) -> "
                        "indices.shape + (D,) (matches torch.embedding). The gradient skips the padding_idx row and, "
                        "with scale_grad_by_freq, is divided by each index's count in the batch. IndexError \"index "
                        "out of range in self\"; RuntimeError for other index dtypes or a weight that is not 2-D.")


# ---------------------------------------------------------------- Tensor methods
def _bind():
    T = Tensor
    T.relu = relu
    T.relu_ = relu_

    def softmax_method(self, dim, dtype=None):
        return softmax(self, dim, dtype)

    def log_softmax_method(self, dim, dtype=None):
        return log_softmax(self, dim, dtype)
    softmax_method.__doc__, log_softmax_method.__doc__ = softmax.__doc__, log_softmax.__doc__
    T.softmax, T.log_softmax = softmax_method, log_softmax_method


_bind()
