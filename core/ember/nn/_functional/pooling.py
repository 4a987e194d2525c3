"""ember.nn.functional: pooling (max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool2d, adaptive_max_pool2d,
lp_pool1d/2d).

Max pooling is the ``max_pool2d_with_indices`` op (1-D pooling runs it over a height of 1);
average pooling sums the window's ``im2col`` blocks and divides by PyTorch's divisor;
adaptive average pooling is two matmuls with constant averaging matrices, so every output
size works. Images are NCHW; unbatched (C, H, W) inputs are accepted, as PyTorch.
"""
from __future__ import annotations

import math
import numbers

import ember
from ember._ops._nn import pair, pool_out_size
from ember._dtype import torch_name as _torch_name
from ember._ops._out import write_out

__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d",
           "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
           "adaptive_max_pool2d_with_indices", "lp_pool1d", "lp_pool2d"]


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _stride(stride, kernel_size):
    return () if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0) else stride


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """``max_pool2d`` returning (values, indices) (matches torch.nn.functional.max_pool2d_with_indices)."""
    return ember.max_pool2d_with_indices(input, kernel_size, _stride(stride, kernel_size), padding, dilation,
                                         ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling of (N, C, H, W) or (C, H, W) (matches torch.nn.functional.max_pool2d).

    ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the kernel) counts as -inf;
    ``ceil_mode`` rounds the output size up. With ``return_indices`` also returns the int64 argmax
    of each window, flat over H * W (for max_unpool2d). RuntimeError in PyTorch's words for bad sizes
    ("pad should be at most half of effective kernel size, ...", "Output size is too small").
    """
    vals, idx = ember.max_pool2d_with_indices(input, kernel_size, _stride(stride, kernel_size), padding, dilation,
                                              ceil_mode)
    if ember._memory_format.suggests_channels_last(input):       # keeps a channels_last layout, as PyTorch
        vals, idx = (ember._memory_format.follow_channels_last(t, input) for t in (vals, idx))
    return (vals, idx) if return_indices else vals


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """``max_pool1d`` returning (values, indices)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _one(v, name):
    if isinstance(v, numbers.Integral):
        return int(v)
    v = tuple(v)
    if len(v) != 1:
        raise RuntimeError(f"max_pool1d() {name} must be an int or int list of size 1 but got size {len(v)}")
    return int(v[0])


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling of (N, C, L) or (C, L) (matches torch.nn.functional.max_pool1d); indices are
    positions along L. Errors as max_pool2d."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"max_pool1d() Expected 2D or 3D input tensor, but got {_fmt(input.shape)}")
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0) else \
        _one(stride, "stride")
    p, d = _one(padding, "padding"), _one(dilation, "dilation")
    vals, idx = ember.max_pool2d_with_indices(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode)
    vals = vals.squeeze(-2)
    return (vals, idx.squeeze(-2)) if return_indices else vals


def _avg_divisors(size, k, s, p, out, count_include_pad):
    """Per output position along one dim: (window length counting padding, length inside the input)."""
    full, inner = [], []
    for o in range(out):
        start = o * s - p
        end = min(start + k, size + p)
        full.append(end - start)
        inner.append(min(end, size) - max(start, 0))
    return full if count_include_pad else inner


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None, *, out=None):
    """2-D average pooling of (N, C, H, W) or (C, H, W) (matches torch.nn.functional.avg_pool2d).

    ``stride`` defaults to ``kernel_size``; zero ``padding`` (at most half the kernel) counts in the
    divisor when ``count_include_pad``; ``ceil_mode`` rounds the output size up (windows running past
    the padded input average what they cover); ``divisor_override`` replaces the divisor. Floating
    and int64 inputs (int64 divides truncating, as PyTorch's cpu kernel; NotImplementedError for other
    dtypes); ``out=`` as PyTorch's. RuntimeError in PyTorch's words for bad sizes.
    """
    out_arg = out   # (``out`` is reused below for the result)
    kh, kw = pair(kernel_size, "avg_pool2d: kernel_size")
    st = _stride(stride, kernel_size)
    sh, sw = (kh, kw) if st == () else pair(st, "avg_pool2d: stride")
    ph, pw = pair(padding, "avg_pool2d: padding")
    if input.dim() not in (3, 4):
        raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input")
    if sh <= 0 or sw <= 0:
        raise RuntimeError("stride should not be zero")
    if ph > kh // 2 or pw > kw // 2:
        p, k = (ph, kh) if ph > kh // 2 else (pw, kw)
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} "
                           f"and dilation=1")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if not (input.dtype.is_floating_point or input.dtype is ember.int64):   # PyTorch's cpu kernel dtypes
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{_torch_name(input.dtype)}'")
    x = input if input.dim() == 4 else input.unsqueeze(0)
    N, C, H, W = x.shape
    oh, ow = pool_out_size(H, kh, sh, ph, 1, ceil_mode), pool_out_size(W, kw, sw, pw, 1, ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({C}x{H}x{W}). Calculated output size: ({C}x{oh}x{ow}). Output size "
                           f"is too small")
    # zero-pad so every window (ceil_mode ones included) lies inside, then sum the im2col blocks
    Hp = max(H + 2 * ph, (oh - 1) * sh + kh)
    Wp = max(W + 2 * pw, (ow - 1) * sw + kw)
    xp = ember.constant_pad_nd(x, (pw, Wp - W - pw, ph, Hp - H - ph)) if (Hp, Wp) != (H, W) else x
    cols = ember.im2col(xp, (kh, kw), (1, 1), (0, 0), (sh, sw))             # (N, C * kh * kw, L)
    sums = cols.view(N, C, kh * kw, oh, ow).sum(2)
    # int64 (PyTorch's one integer dtype here) divides as C does, truncating toward zero
    mode = "trunc" if input.dtype is ember.int64 else None
    if divisor_override is not None:
        out = ember.div(sums, divisor_override, rounding_mode=mode)
    else:
        dh = _avg_divisors(H, kh, sh, ph, oh, count_include_pad)
        dw = _avg_divisors(W, kw, sw, pw, ow, count_include_pad)
        if len(set(dh)) == 1 and len(set(dw)) == 1:
            out = ember.div(sums, dh[0] * dw[0], rounding_mode=mode)
        else:
            div = ember.tensor([[a * b for b in dw] for a in dh], dtype=sums.dtype, device=sums.device)
            out = ember.div(sums, div, rounding_mode=mode)
    return write_out("avg_pool2d", out if input.dim() == 4 else out.squeeze(0), out_arg, (input,))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling of (N, C, L) or (C, L) (matches torch.nn.functional.avg_pool1d)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"avg_pool1d() Expected 2D or 3D input tensor, but got {_fmt(input.shape)}")
    k = _one(kernel_size, "kernel_size")
    s = k if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0) else \
        _one(stride, "stride")
    p = _one(padding, "padding")
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def _adaptive_output_size(output_size, nd, name):
    """output_size as a tuple of nd entries (None kept); RuntimeError in PyTorch's words otherwise."""
    if isinstance(output_size, numbers.Integral):
        output_size = (int(output_size),) * nd
    output_size = tuple(output_size)
    if len(output_size) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    if any(o is not None and o < 0 for o in output_size):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           "{" + ", ".join(str(o) for o in output_size) + "}")
    return output_size


def _adaptive_sizes(input, output_size, nd, name, shown_shape=None, first_checked=-2):
    """The output spatial sizes, after PyTorch's checks: ``nd + 1`` or ``nd + 2`` dims, and no empty dim
    from ``first_checked`` on (avg pooling checks the spatial dims, max pooling every non-batch dim);
    ``shown_shape`` is the shape PyTorch's message shows (1-D pools run as 2-D ones there)."""
    shape = tuple(input.shape) if shown_shape is None else shown_shape
    if input.dim() not in (nd + 1, nd + 2):
        sep = ": " if "max" in name else " "
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{sep}{_fmt(shape)}")
    start = first_checked % len(shape) if first_checked < 0 else first_checked
    for i in range(start, len(shape)):
        if shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {_fmt(shape)} with dimension {i} being empty")
    output_size = _adaptive_output_size(output_size, nd, name)
    return tuple(input.shape[-nd + i] if o is None else int(o) for i, o in enumerate(output_size))


def _empty_result(input, shape):
    """A tensor of ``shape`` with no elements, still connected to input for autograd."""
    return input.reshape(-1)[:0].reshape(shape)


def _bounds(size, out):
    """PyTorch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _avg_matrix(size, out, like):
    """The (out, size) matrix averaging each adaptive window."""
    rows = []
    for a, b in _bounds(size, out):
        rows.append([1.0 / (b - a) if a <= j < b else 0.0 for j in range(size)])
    return ember.tensor(rows, dtype=like.dtype, device=like.device)


def adaptive_avg_pool2d(input, output_size):
    """Adaptive 2-D average pooling to ``output_size`` (int, pair, None entries keep the input size) of
    (N, C, H, W) or (C, H, W) (matches torch.nn.functional.adaptive_avg_pool2d): output cell i covers
    input rows [floor(i * H / oh), ceil((i + 1) * H / oh)).

    As PyTorch: a (1, 1) output is ``input.mean((-1, -2), keepdim=True)`` (any rank, the mean's dtype
    rules); otherwise floating inputs only (NotImplementedError), RuntimeError for other ranks, an
    empty H or W, or a negative output size; an output size of 0 gives an empty result."""
    return _adaptive_avg(input, output_size, "adaptive_avg_pool2d", None)


def _adaptive_avg(input, output_size, name, shown_shape):
    oh, ow = _adaptive_output_size(output_size, 2, "adaptive_avg_pool2d")
    if (oh, ow) == (1, 1):
        return input.mean((-1, -2), keepdim=True)
    oh, ow = _adaptive_sizes(input, (oh, ow), 2, "adaptive_avg_pool2d", shown_shape)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool2d\" not implemented for '{_torch_name(input.dtype)}'")
    H, W = input.shape[-2:]
    if oh == 0 or ow == 0 or input.numel() == 0:   # (an empty batch or channel dim)
        return _empty_result(input, tuple(input.shape[:-2]) + (oh, ow))
    if (oh, ow) == (H, W):
        return input * 1
    if H % oh == 0 and W % ow == 0:
        return avg_pool2d(input, (H // oh, W // ow))
    out = input
    if ow != W:
        out = out.matmul(_avg_matrix(W, ow, input).t())
    if oh != H:
        out = _avg_matrix(H, oh, input).matmul(out)
    return out


def adaptive_avg_pool1d(input, output_size):
    """Adaptive 1-D average pooling of (N, C, L) or (C, L) (matches torch.nn.functional.adaptive_avg_pool1d,
    which runs the 2-D pool over a height of 1: its rules and messages apply)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for adaptive_avg_pool1d)")
    if not isinstance(output_size, numbers.Integral):
        output_size = tuple(output_size)
        if len(output_size) != 1:
            raise RuntimeError(f"adaptive_avg_pool1d: output_size must be 1")
        output_size = output_size[0]
    x = input.unsqueeze(-2)
    return _adaptive_avg(x, (1, output_size), "adaptive_avg_pool2d", tuple(x.shape)).squeeze(-2)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool2d`` returning (values, indices)."""
    oh, ow = _adaptive_sizes(input, output_size, 2, "adaptive_max_pool2d", first_checked=1)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_max_pool2d\" not implemented for '{_torch_name(input.dtype)}'")
    H, W = input.shape[-2:]
    if oh == 0 or ow == 0 or input.numel() == 0:
        shape = tuple(input.shape[:-2]) + (oh, ow)
        return _empty_result(input, shape), ember.empty(shape, dtype=ember.int64, device=input.device)
    if H % oh == 0 and W % ow == 0:
        return ember.max_pool2d_with_indices(input, (H // oh, W // ow), (H // oh, W // ow))
    lead = input.shape[:-2]
    vals, idxs = [], []
    for a, b in _bounds(H, oh):
        for c, d in _bounds(W, ow):
            win = input[..., a:b, c:d].reshape(lead + (-1,))
            v, i = win.max(-1)
            vals.append(v)
            idxs.append((i // (d - c) + a) * W + i % (d - c) + c)
    return (ember.stack(vals, -1).reshape(lead + (oh, ow)), ember.stack(idxs, -1).reshape(lead + (oh, ow)))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive 2-D max pooling (matches torch.nn.functional.adaptive_max_pool2d); windows as in
    adaptive_avg_pool2d; ``return_indices`` also returns the flat argmax over H * W."""
    vals, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (vals, idx) if return_indices else vals


def _lp_finish(out, count, norm_type):
    # sign(out) * relu(|out|): a negative mean of x ** p (odd p) stays negative before the root, as PyTorch
    return (ember.sign(out) * ember.relu(out.abs()) * count) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling (sum over the window of x ** p) ** (1 / p): (N, C, L) or (C, L) -> (N, C, L_out)
    (matches torch.nn.functional.lp_pool1d; computed as avg_pool1d of x ** p times the window size)."""
    out = avg_pool1d(input ** norm_type, kernel_size, stride if stride is not None else kernel_size, 0, ceil_mode)
    k = kernel_size if isinstance(kernel_size, numbers.Integral) else kernel_size[0]
    return _lp_finish(out, k, norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 2-D windows: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out) (matches
    torch.nn.functional.lp_pool2d; avg_pool2d of x ** p times the window area)."""
    kh, kw = pair(kernel_size)
    out = avg_pool2d(input ** norm_type, kernel_size, stride if stride is not None else kernel_size, 0, ceil_mode)
    return _lp_finish(out, kh * kw, norm_type)
