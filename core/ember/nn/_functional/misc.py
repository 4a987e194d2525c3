"""ember.nn.functional: linear maps, dropout, embedding, one_hot, pad, interpolate and
distances (matches the torch.nn.functional functions of the same names).

Index lists and interpolation weights are computed on the host from shapes only; the
tensor data is touched through ember ops (index_select, cat, matmul, ...), so every
function runs on any device and autograd flows through it.
"""
from __future__ import annotations

import math
import warnings

import ember
from ..._autocast_state import autocast_function
from ... import _dtype as D
from ..._ops._nn import linear as _linear

__all__ = ["linear", "bilinear", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "embedding",
           "one_hot", "pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "cosine_similarity", "pairwise_distance", "pdist"]


# ----------------------------------------------------------------------------- linear maps
def linear(input, weight, bias=None, *, out=None):
    """input @ weight.T + bias; input (*, in_features), weight (out_features, in_features), bias
    (out_features,) -> (*, out_features), into ``out`` when given (matches torch.nn.functional.linear).

    RuntimeError "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x5)" on mismatched features.
    """
    return _linear(input, weight, bias, out=out)


@autocast_function
def bilinear(input1, input2, weight, bias=None):
    """y_k = input1 @ weight[k] @ input2 + bias[k]; input1 (*, in1), input2 (*, in2), weight
    (out, in1, in2), bias (out,) -> (*, out) (matches torch.nn.functional.bilinear).

    RuntimeError "bilinear(): input batch dimensions do not match at dim 0: got 3 and 2".
    """
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1._shape[d] != input2._shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got "
                               f"{input1._shape[d]} and {input2._shape[d]}")
    lead = tuple(input1._shape[:-1])
    x1 = input1.reshape(-1, input1._shape[-1])
    x2 = input2.reshape(-1, input2._shape[-1])
    out_f, in1, in2 = weight._shape
    # (B, in1) @ (in1, out * in2) -> (B, out, in2), then contract in2 against x2
    t = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    out = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + (out_f,))


# ----------------------------------------------------------------------------- dropout
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_mask(input, p, shape):
    """A mask of ``shape`` (broadcastable to input): 0 with probability p, else 1 / (1 - p)."""
    if p == 1.0:
        return input.new_zeros(shape)
    return input.new_empty(shape).bernoulli_(1.0 - p).div_(1.0 - p)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) while ``training``;
    the identity otherwise (matches torch.nn.functional.dropout).

    ValueError "dropout probability has to be between 0 and 1, but got 1.5".
    """
    _check_p(p)
    if not training or p == 0.0:
        return input
    mask = _dropout_mask(input, p, input._shape)
    return input.mul_(mask) if inplace else input * mask


def _feature_dropout(input, p, training, inplace, batched):
    """Channel-wise dropout: one draw per (sample, channel), broadcast over the spatial dims."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    nlead = 2 if batched else 1
    shape = tuple(input._shape[:nlead]) + (1,) * (input.dim() - nlead)
    mask = _dropout_mask(input, p, shape)
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``input`` (N, C, L) or (C, L) with probability ``p``
    (matches torch.nn.functional.dropout1d)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.dim() == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``input`` (N, C, H, W) or (C, H, W) with probability ``p``; a 3-dim input is
    taken as (N, C, L) with PyTorch's warning (matches torch.nn.functional.dropout2d)."""
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with "
                      "2 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, nd != 1)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``input`` (N, C, D, H, W) or (C, D, H, W) with probability ``p``
    (matches torch.nn.functional.dropout3d)."""
    return _feature_dropout(input, p, training, inplace, input.dim() == 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalizing mean and variance (matches torch.nn.functional.alpha_dropout)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    alpha_p = -1.7580993408473766                 # -SELU scale * alpha
    keep = input.new_empty(input._shape).bernoulli_(1.0 - p)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + (1 - keep) * alpha_p) * a + b
    return input.copy_(out) if inplace else out


# ----------------------------------------------------------------------------- embedding
_embedding_op = getattr(ember, "embedding", None)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (num_embeddings, embedding_dim) at the int64 / int32 indices ``input`` (*) ->
    (*, embedding_dim); the row ``padding_idx`` gets no gradient; ``max_norm`` renormalizes, in place,
    the referenced rows whose ``norm_type`` norm exceeds it (matches torch.nn.functional.embedding).

    AssertionError "Padding_idx must be within num_embeddings"; IndexError "index out of range in self".
    """
    n = weight._shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    if input._dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_tensor_type(input)} instead (while checking arguments for "
                           "embedding)")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if _embedding_op is not None:
        return _embedding_op(weight, input, padding_idx, scale_grad_by_freq, sparse)
    flat = input.reshape(-1)
    if flat.numel() and bool(((flat < 0) | (flat >= n)).any()):
        raise IndexError("index out of range in self")
    out = weight.index_select(0, flat)
    if padding_idx >= 0 and weight.requires_grad:
        # the padding row's gradient is 0: take it from a detached copy
        out = ember.where((flat == padding_idx).unsqueeze(1), out.detach(), out)
    return out.reshape(tuple(input._shape) + (weight._shape[1],))


def _tensor_type(t):
    return f"ember.{D.torch_name(t._dtype)}Tensor"


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Scale, in place and untracked, the rows of ``weight`` named by ``input`` to norm <= max_norm."""
    with ember.no_grad():
        idx = ember.unique(input.reshape(-1))
        rows = weight.index_select(0, idx)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = ember.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, idx, rows * scale)


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape (*, num_classes) with 1 at each index of ``tensor`` (*, int64); num_classes=-1
    takes max + 1 (matches torch.nn.functional.one_hot).

    RuntimeError: "one_hot is only applicable to index tensor of type LongTensor.", "Can not infer total
    number of classes from empty tensor.", "Class values must be non-negative.", "Class values must be
    smaller than num_classes."
    """
    if tensor._dtype != D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        lo, hi = ember.aminmax(tensor)
        if int(lo) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(hi) + 1
        elif int(hi) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ember.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


# ----------------------------------------------------------------------------- pad
_constant_pad_op = getattr(ember, "constant_pad_nd", None)

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_dims(pad):
    """[(dim from the end, before, after), ...] for PyTorch's pad list (last dim first)."""
    return [(-1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


def _constant_pad(input, pad, value):
    out = input
    for d, lo, hi in _pad_dims(pad):
        d = out.dim() + d
        if lo < 0:
            out = out.narrow(d, -lo, out._shape[d] + lo)
        if hi < 0:
            out = out.narrow(d, 0, out._shape[d] + hi)
        parts = []
        for amount in (max(lo, 0), max(hi, 0)):
            shape = list(out._shape)
            shape[d] = amount
            parts.append(ember.full(tuple(shape), value, dtype=out._dtype, device=out.device) if amount else None)
        if parts[0] is not None or parts[1] is not None:
            out = ember.cat([p for p in (parts[0], out, parts[1]) if p is not None], d)
    return out


def _gather_pad(input, pad, mode):
    """reflect / replicate / circular padding: one index_select per padded dim (negative pads crop)."""
    out = input
    for d, lo, hi in _pad_dims(pad):
        d = out.dim() + d
        n = out._shape[d]
        if mode == "reflect":
            if lo >= n or hi >= n:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                                   f"{list(out._shape)}")
            idx = [abs(i) if i < 0 else (2 * (n - 1) - i if i >= n else i) for i in range(-lo, n + hi)]
        elif mode == "replicate":
            idx = [min(max(i, 0), n - 1) for i in range(-lo, n + hi)]
        else:
            # as PyTorch: negative amounts crop first, then the cropped core wraps around
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if n + lo + hi < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
            start, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
            if m <= 0:   # nothing left to wrap (PyTorch leaves such pads uninitialised; ember writes 0)
                shape = list(out._shape)
                shape[d] = n + lo + hi
                out = ember.cat([out.narrow(d, 0, 0), out.new_zeros(tuple(shape))], d)
                continue
            idx = [start + i % m for i in range(-max(lo, 0), m + max(hi, 0))]
        out = out.index_select(d, ember.tensor(idx, dtype=D.int64, device=out.device))
    return out


def pad(input, pad, mode="constant", value=None):
    """Pad ``input``: ``pad`` = (left, right) for the last dim, then (top, bottom) for the one before, ...;
    mode 'constant' (fill ``value``, default 0; negative amounts crop), 'reflect' (mirror without the
    edge), 'replicate' (repeat the edge), 'circular' (wrap); the non-constant modes pad the last 1, 2 or 3
    dims of a 2-3, 3-4 or 4-5 dim input (matches torch.nn.functional.pad).

    Errors as PyTorch's: RuntimeError "Padding length must be divisible by 2", NotImplementedError
    "Padding size 2 is not supported for 4D input tensor. ...", NotImplementedError "Unrecognised padding
    mode foo", RuntimeError 'Padding mode "reflect" doesn\'t take in value argument'.
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode == "constant":
        value = 0 if value is None else value
        if _constant_pad_op is not None:
            return _constant_pad_op(input, pad, value)
        return _constant_pad(input, pad, value)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    k, nd = len(pad) // 2, input.dim()
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    return _gather_pad(input, pad, mode)


# ----------------------------------------------------------------------------- interpolate
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _as_tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of ``input`` (N, C, d1, ...): to ``size`` or by ``scale_factor`` (output
    size floor(d * scale)); modes 'nearest', 'nearest-exact', 'linear' (3-dim input), 'bilinear' (4-dim),
    'bicubic' (4-dim; PyTorch's cubic kernel A = -0.75, borders clamped), 'trilinear' (5-dim), with
    ``align_corners`` for the interpolating modes, and 'area' (adaptive average pooling to the output
    size) (matches torch.nn.functional.interpolate). ``antialias=True`` raises NotImplementedError.

    With ``scale_factor`` and no ``recompute_scale_factor`` the source coordinates use 1 / scale_factor,
    as PyTorch's; with recompute_scale_factor=True they use input / output size.
    Errors as PyTorch's (ValueError for size/scale_factor misuse, NotImplementedError for a mode that
    does not fit the input's dims).
    """
    if mode not in _MODES or antialias:
        if mode in _MODES:
            raise NotImplementedError(f"interpolate: mode '{mode}'{' with antialias' if antialias else ''} "
                                      "is not supported by ember")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  "for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
                                  f"area | nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nsp = input.dim() - 2
    in_sizes = tuple(input._shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (tuple, list)) and len(size) != nsp:
            raise ValueError("Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(in_sizes)} and output size of {size}. Please provide "
                             "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             "format.")
        out_sizes = tuple(int(s) for s in _as_tuple(size, nsp))
        scales = [None] * nsp
    elif scale_factor is not None:
        if isinstance(scale_factor, (tuple, list)) and len(scale_factor) != nsp:
            raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                             f"input with spatial dimensions of {list(in_sizes)} and scale_factor of shape "
                             f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             "scale_factor in (s1, s2, ...,sK) format.")
        sf = tuple(float(s) for s in _as_tuple(scale_factor, nsp))
        out_sizes = tuple(int(math.floor(n * s)) for n, s in zip(in_sizes, sf))
        scales = [None] * nsp if recompute_scale_factor else list(sf)
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode in _LINEAR and nsp != _LINEAR[mode]:
        want = _LINEAR[mode] + 2
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {want}D input")
    if mode == "bicubic" and nsp != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but bicubic mode needs 4D input")
    if mode == "area" and 1 <= nsp <= 3:
        from . import pooling, pooling3d
        pool = (pooling.adaptive_avg_pool1d, pooling.adaptive_avg_pool2d, pooling3d.adaptive_avg_pool3d)[nsp - 1]
        return pool(input, out_sizes if nsp > 1 else out_sizes[0])
    if nsp < 1 or nsp > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  "for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
                                  f"area | nearest-exact (got {mode})")
    out = input
    for i, (n_in, n_out, s) in enumerate(zip(in_sizes, out_sizes, scales)):
        d = 2 + i
        if n_in == n_out and s in (None, 1.0):
            continue
        if mode in ("nearest", "nearest-exact"):
            out = out.index_select(d, _nearest_index(n_in, n_out, s, mode == "nearest-exact", out.device))
        elif mode == "bicubic":
            from .sampling import cubic_along
            out = cubic_along(out, d, n_in, n_out, _source_scale(n_in, n_out, s, align_corners), align_corners)
        else:
            out = _linear_along(out, d, n_in, n_out, s, align_corners)
    return out


def _source_scale(n_in, n_out, scale, align_corners):
    """The step between source coordinates of neighbouring outputs."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _nearest_index(n_in, n_out, scale, exact, device):
    step = _source_scale(n_in, n_out, scale, False)
    if exact:
        idx = [min(int(math.floor((j + 0.5) * step)), n_in - 1) for j in range(n_out)]
    else:
        idx = [min(int(math.floor(j * step)), n_in - 1) for j in range(n_out)]
    return ember.tensor(idx, dtype=D.int64, device=device)


def _linear_along(x, d, n_in, n_out, scale, align_corners):
    """Linear interpolation of ``x`` along dim ``d``: x[i0] * (1 - w) + x[i1] * w per output."""
    step = _source_scale(n_in, n_out, scale, align_corners)
    i0, i1, w = [], [], []
    for j in range(n_out):
        src = j * step if align_corners else max((j + 0.5) * step - 0.5, 0.0)
        lo = min(int(math.floor(src)), n_in - 1)
        i0.append(lo)
        i1.append(min(lo + 1, n_in - 1))
        w.append(src - lo)
    dev = x.device
    shape = (n_out,) + (1,) * (x.dim() - d - 1)
    lam = ember.tensor(w, dtype=x._dtype, device=dev).reshape(shape)
    a = x.index_select(d, ember.tensor(i0, dtype=D.int64, device=dev))
    b = x.index_select(d, ember.tensor(i1, dtype=D.int64, device=dev))
    return a + (b - a) * lam


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate (matches torch.nn.functional.upsample)."""
    warnings.warn(f"nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='nearest') (matches torch.nn.functional.upsample_nearest)."""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='bilinear', align_corners=True)
    (matches torch.nn.functional.upsample_bilinear)."""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----------------------------------------------------------------------------- distances
@autocast_function
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along ``dim``; x1 and x2 broadcast to a
    common shape first, then each vector is normalised, so the result stays within [-1, 1]
    (matches torch.nn.functional.cosine_similarity, including its gradient: the eps clamp is
    applied outside autograd, so the norm's gradient flows as if unclamped).

    Integer inputs are promoted to the common dtype, which must be floating:
    RuntimeError "expected common dtype to be floating point, yet common dtype is Long".
    """
    common = ember.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(
            f"expected common dtype to be floating point, yet common dtype is {D.torch_name(common)}")
    x1, x2 = ember.broadcast_tensors(x1.to(common), x2.to(common))

    def clamped_norm(x):
        n = x.norm(2, dim, keepdim=True)
        return n + (n.detach().clamp(min=eps) - n.detach())

    return ((x1 / clamped_norm(x1)) * (x2 / clamped_norm(x2))).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim (matches torch.nn.functional.pairwise_distance)."""
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


@autocast_function
def pdist(input, p=2):
    """The p-norm distances between the rows of ``input`` (N, M), upper triangle flattened to
    (N (N - 1) / 2,) (matches torch.nn.functional.pdist)."""
    n = input._shape[0]
    rows = [i for i in range(n) for j in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return input.new_zeros((0,))
    dev = input.device
    a = input.index_select(0, ember.tensor(rows, dtype=D.int64, device=dev))
    b = input.index_select(0, ember.tensor(cols, dtype=D.int64, device=dev))
    return (a - b).norm(p, -1)
