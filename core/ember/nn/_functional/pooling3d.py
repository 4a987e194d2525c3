"""ember.nn.functional: 3-D pooling, adaptive max pooling in 1-D / 3-D, max unpooling and lp_pool3d.

Composites of ordinary ember ops, so they run and differentiate on every device: the
windows of a pooling are ``Tensor.unfold`` views of the (padded) input, one per spatial dim;
max pooling takes ``max(-1)`` over the flattened window and turns its argmax into PyTorch's
flat index over the input volume; average pooling sums the window and divides by PyTorch's
divisor. Adaptive max pooling maxes each of PyTorch's adaptive windows (or is a plain
max pooling when the sizes divide). Unpooling scatters values into a zero volume.
Volumes are NCDHW; unbatched (C, D, H, W) inputs are accepted, as PyTorch.
"""
from __future__ import annotations

import itertools
import math
import numbers

import ember
from ember._ops._nn import pool_out_size
from .pooling import _adaptive_sizes, _avg_divisors, _avg_matrix, _bounds, _fmt, _lp_finish

__all__ = ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool3d", "fractional_max_pool2d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _triple(v, name):
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return (int(v),) * 3
    v = tuple(int(a) for a in v)
    if len(v) == 1:
        return v * 3
    if len(v) != 3:
        raise RuntimeError(f"{name} must either be a single int, or a tuple of three ints")
    return v


def _no_stride(stride):
    return stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0)


def _windows(x, k, s, p, d, out, fill):
    """(N, C, *spatial) -> (N, C, *out, prod(k)): every pooling window, the input padded with ``fill``
    (p before, enough after for ceil_mode windows)."""
    nd = len(k)
    pads = []
    for i in reversed(range(nd)):
        size = x.shape[2 + i]
        need = (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1
        pads += [p[i], max(need - size - p[i], 0)]
    if any(pads):
        x = ember.constant_pad_nd(x, tuple(pads), fill)
    for i in range(nd):
        x = x.unfold(2 + i, (k[i] - 1) * d[i] + 1, s[i])
        if d[i] > 1:
            x = x[..., ::d[i]]
        # unfold put the window last; narrow to the out windows (padding may allow one more)
        x = x.narrow(2 + i, 0, out[i])
    return x.reshape(tuple(x.shape[:2 + nd]) + (-1,))


def _pool3d_args(op, input, kernel_size, stride, padding, dilation, ceil_mode):
    k = _triple(kernel_size, f"{op}: kernel_size")
    s = k if _no_stride(stride) else _triple(stride, f"{op}: stride")
    p = _triple(padding, f"{op}: padding")
    d = _triple(dilation, f"{op}: dilation")
    if input.dim() not in (4, 5) or input.numel() == 0:
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if any(a <= 0 for a in s):
        raise RuntimeError("stride should not be zero")
    if any(a <= 0 for a in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} dilationH: {d[1]} "
                           f"dilationW: {d[2]}")
    for pi, ki, di in zip(p, k, d):
        if pi > ((ki - 1) * di + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pi}, "
                               f"kernel_size={ki} and dilation={di}")
    x = input if input.dim() == 5 else input.unsqueeze(0)
    sizes = x.shape[2:]
    out = tuple(pool_out_size(n, ki, si, pi, di, ceil_mode) for n, ki, si, pi, di in zip(sizes, k, s, p, d))
    return x, k, s, p, d, out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """``max_pool3d`` returning (values, int64 indices) (matches torch.nn.functional.max_pool3d_with_indices)."""
    x, k, s, p, d, out = _pool3d_args("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode)
    N, C, D, H, W = x.shape
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input size: ({C}x{D}x{H}x{W}). Calculated output size: "
                           f"({C}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")
    vals, arg = _windows(x, k, s, p, d, out, float("-inf")).max(-1)
    # argmax over the window (a, b, c) -> the input position (z, y, x) -> z * H * W + y * W + x
    a, b, c = arg // (k[1] * k[2]), (arg // k[2]) % k[1], arg % k[2]
    dev = x.device
    oz = ember.arange(out[0], device=dev).reshape(-1, 1, 1) * s[0] - p[0]
    oy = ember.arange(out[1], device=dev).reshape(-1, 1) * s[1] - p[1]
    ox = ember.arange(out[2], device=dev) * s[2] - p[2]
    idx = ((oz + a * d[0]) * H + (oy + b * d[1])) * W + (ox + c * d[2])
    if input.dim() == 4:
        vals, idx = vals.squeeze(0), idx.squeeze(0)
    return vals, idx


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling of (N, C, D, H, W) or (C, D, H, W) (matches torch.nn.functional.max_pool3d).

    ``stride`` defaults to ``kernel_size``; ``padding`` (at most half the effective kernel) counts as -inf;
    ``ceil_mode`` rounds the output size up. With ``return_indices`` also returns the int64 argmax of each
    window, flat over D * H * W (for max_unpool3d). RuntimeError in PyTorch's words for bad ranks and sizes.
    """
    vals, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (vals, idx) if return_indices else vals


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling of (N, C, D, H, W) or (C, D, H, W) (matches torch.nn.functional.avg_pool3d).

    Zero ``padding`` (at most half the kernel) counts in the divisor when ``count_include_pad``;
    ``ceil_mode`` rounds the output size up; ``divisor_override`` replaces the divisor. RuntimeError in
    PyTorch's words for bad ranks and sizes, a zero stride or divisor.
    """
    x, k, s, p, d, out = _pool3d_args("avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode)
    N, C, D, H, W = x.shape
    if any(n + 2 * pi < ki for n, pi, ki in zip((D, H, W), p, k)):
        raise RuntimeError(f"input image (T: {D} H: {H} W: {W}) smaller than kernel size (kT: {k[0]} kH: {k[1]} "
                           f"kW: {k[2]})")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    sums = _windows(x, k, s, p, d, out, 0.0).sum(-1)
    if divisor_override is not None:
        res = sums / divisor_override
    else:
        dz, dy, dx = (_avg_divisors(n, ki, si, pi, o, count_include_pad)
                      for n, ki, si, pi, o in zip((D, H, W), k, s, p, out))
        div = ember.tensor([[[a * b * c for c in dx] for b in dy] for a in dz], dtype=sums.dtype, device=sums.device)
        res = sums / div
    return res if input.dim() == 5 else res.squeeze(0)


def adaptive_avg_pool3d(input, output_size):
    """Adaptive 3-D average pooling to ``output_size`` (int, triple; None entries keep the input size) of
    (N, C, D, H, W) or (C, D, H, W) (matches torch.nn.functional.adaptive_avg_pool3d): one averaging
    matrix per dim. RuntimeError for other ranks."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got {_fmt(input.shape)}")
    od, oh, ow = _adaptive_sizes(input, output_size, 3, "adaptive_avg_pool3d")
    D, H, W = input.shape[-3:]
    out = input.matmul(_avg_matrix(W, ow, input).t())
    out = _avg_matrix(H, oh, input).matmul(out)
    out = out.transpose(-3, -1).matmul(_avg_matrix(D, od, input).t()).transpose(-3, -1)
    return out.contiguous()


def _adaptive_max(input, out, name):
    """Adaptive max pooling over the last len(out) dims: (values, flat int64 indices)."""
    nd = len(out)
    sizes = tuple(input.shape[-nd:])
    if all(n % o == 0 for n, o in zip(sizes, out)):
        k = tuple(n // o for n, o in zip(sizes, out))
        lead = tuple(input.shape[:-nd])
        x = input.reshape((-1, 1) + sizes)
        vals, arg = _windows(x, k, k, (0,) * nd, (1,) * nd, out, 0.0).max(-1)
        idx = None
        for i in range(nd):
            rem = arg
            for j in range(i + 1, nd):
                rem = rem // k[j]
            off = rem % k[i]
            shape = [1] * nd
            shape[i] = out[i]
            pos = ember.arange(out[i], device=input.device).reshape(shape) * k[i] + off
            idx = pos if idx is None else idx * sizes[i] + pos
        return vals.reshape(lead + out), idx.reshape(lead + out)
    lead = tuple(input.shape[:-nd])
    vals, idxs = [], []
    for cell in itertools.product(*(_bounds(n, o) for n, o in zip(sizes, out))):
        win = input[(Ellipsis,) + tuple(slice(a, b) for a, b in cell)].reshape(lead + (-1,))
        v, i = win.max(-1)
        flat = None
        rest = i
        lens = [b - a for a, b in cell]
        coords = []
        for j in reversed(range(nd)):
            coords.append(rest % lens[j] + cell[j][0])
            rest = rest // lens[j]
        for j, c in enumerate(reversed(coords)):
            flat = c if flat is None else flat * sizes[j] + c
        vals.append(v)
        idxs.append(flat)
    return ember.stack(vals, -1).reshape(lead + out), ember.stack(idxs, -1).reshape(lead + out)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool1d`` returning (values, indices)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for adaptive_max_pool1d)")
    (o,) = _adaptive_sizes(input, (output_size,) if isinstance(output_size, numbers.Integral) else output_size, 1,
                           "adaptive_max_pool1d")
    return _adaptive_max(input, (o,), "adaptive_max_pool1d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive 1-D max pooling of (N, C, L) or (C, L) to ``output_size`` (matches
    torch.nn.functional.adaptive_max_pool1d): window i covers [floor(i L / o), ceil((i + 1) L / o)); with
    ``return_indices`` also the int64 argmax positions along L."""
    vals, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (vals, idx) if return_indices else vals


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """``adaptive_max_pool3d`` returning (values, indices)."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {_fmt(input.shape)}")
    out = _adaptive_sizes(input, output_size, 3, "adaptive_max_pool3d")
    return _adaptive_max(input, out, "adaptive_max_pool3d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive 3-D max pooling of (N, C, D, H, W) or (C, D, H, W) (matches
    torch.nn.functional.adaptive_max_pool3d); ``return_indices`` also returns the flat argmax over D * H * W."""
    vals, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (vals, idx) if return_indices else vals


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    k = tuple(int(a) for a in ((kernel_size,) * nd if isinstance(kernel_size, numbers.Integral) else kernel_size))
    s = k if _no_stride(stride) else tuple(int(a) for a in ((stride,) * nd if isinstance(stride, numbers.Integral)
                                                             else stride))
    p = tuple(int(a) for a in ((padding,) * nd if isinstance(padding, numbers.Integral) else padding))
    k, s, p = (v * nd if len(v) == 1 else v for v in (k, s, p))
    in_sizes = tuple(input.shape[-nd:])
    default = [(n - 1) * si - 2 * pi + ki for n, si, pi, ki in zip(in_sizes, s, p, k)]
    if output_size is None:
        out = tuple(default)
    else:
        out = tuple(int(a) for a in output_size)
        if len(out) == nd + 2:
            out = out[2:]
        if len(out) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(out)}'")
        for i, (o, dflt, si) in enumerate(zip(out, default, s)):
            if not dflt - si < o < dflt + si:
                raise ValueError(f"invalid output_size \"{tuple(out)}\" (dim {i} must be between {dflt - si} and "
                                 f"{dflt + si})")
    if indices.dtype is not ember.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{ember._torch_name(indices.dtype).capitalize()}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({_fmt(input.shape)}) "
                           f"but got indices tensor with shape: {_fmt(indices.shape)}")
    total = math.prod(out)
    if indices.numel():
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= total:
            raise RuntimeError(f"Found an invalid max index: {hi if hi >= total else lo} (output volumes are of size "
                               f"{'x'.join(map(str, out)) if nd > 1 else f'{out[0]}x1'})")
    lead = tuple(input.shape[:-nd])
    flat_in = input.reshape(lead + (-1,))
    res = ember.zeros(lead + (total,), dtype=input.dtype, device=input.device)
    res = res.scatter(-1, indices.reshape(lead + (-1,)), flat_in)
    return res.reshape(lead + out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: (N, C, L) or (C, L) values put at their ``indices`` in a zero
    signal of length (L - 1) * stride - 2 * padding + kernel_size or ``output_size`` (matches
    torch.nn.functional.max_unpool1d). RuntimeError for an out-of-range index or non-int64 indices,
    ValueError for an unreachable ``output_size``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: (N, C, H, W) or (C, H, W) values at their flat ``indices`` over
    H_out * W_out in a zero image (matches torch.nn.functional.max_unpool2d). Errors as max_unpool1d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: (N, C, D, H, W) or (C, D, H, W) values at their flat ``indices``
    in a zero volume (matches torch.nn.functional.max_unpool3d). Errors as max_unpool1d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 3-D windows (sum of x ** p) ** (1 / p): (N, C, D, H, W) or (C, D, H, W)
    (matches torch.nn.functional.lp_pool3d; avg_pool3d of x ** p times the window volume)."""
    kd, kh, kw = _triple(kernel_size, "lp_pool3d: kernel_size")
    out = avg_pool3d(input ** norm_type, kernel_size, stride if stride is not None else kernel_size, 0, ceil_mode)
    return _lp_finish(out, kd * kh * kw, norm_type)


# ----------------------------------------------------------------------------- fractional max pooling
def _intervals(sample, size, out, k, np_dtype):
    """PyTorch's pseudo-random window starts along one dim (generate_intervals, in the input's precision)."""
    import numpy as np
    seq = [0] * out
    if out > 1:
        alpha = np_dtype(size - k) / np_dtype(out - 1)
        u = np_dtype(sample)
        for i in range(out - 1):
            seq[i] = int(np_dtype(np_dtype(i) + u) * alpha) - int(u * alpha)
    if out > 0:
        seq[-1] = size - k
    return seq


def _fractional(input, nd, kernel_size, output_size, output_ratio, samples):
    import numpy as np
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    k = tuple(int(a) for a in ((kernel_size,) * nd if isinstance(kernel_size, numbers.Integral) else kernel_size))
    k = k * nd if len(k) == 1 else k
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {_fmt(input.shape)}")
    sizes = tuple(input.shape[-nd:])
    if output_size is None:
        r = (output_ratio,) * nd if isinstance(output_ratio, numbers.Real) else tuple(output_ratio)
        r = r * nd if len(r) == 1 else r
        out = tuple(int(n * q) for n, q in zip(sizes, r))
    else:
        out = tuple(int(a) for a in ((output_size,) * nd if isinstance(output_size, numbers.Integral)
                                     else output_size))
        out = out * nd if len(out) == 1 else out
    dims = ("time", "height", "width")[3 - nd:]
    for d, n, o, kk in zip(dims, sizes, out, k):
        if o + kk - 1 > n:
            raise RuntimeError(f"{name}(): pool {d} {kk} too large relative to input {d} {n}")
    x = input if input.dim() == nd + 2 else input.unsqueeze(0)
    N, C = x.shape[:2]
    if samples is None:
        samples = ember.rand(N, C, nd, dtype=x.dtype, device=x.device)
    if tuple(samples.shape[:2]) != (N, C) or samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples to have shape ({N}, {C}, {nd}), but got {_fmt(samples.shape)}")
    np_dtype = np.float32 if x.dtype is ember.float32 else np.float64
    s = samples.detach().cpu().tolist()
    # PyTorch's sample order: 2-D (width, height), 3-D (time, height, width)
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [[[_intervals(s[b][c][order[i]], sizes[i], out[i], k[i], np_dtype) for c in range(C)] for b in range(N)]
              for i in range(nd)]
    dev = x.device
    flat = x.reshape(N, C, -1)
    strides = [math.prod(sizes[i + 1:]) for i in range(nd)]
    base = None
    for i in range(nd):
        shape = [N, C] + [1] * nd
        shape[2 + i] = out[i]
        pos = ember.tensor(starts[i], dtype=ember.int64, device=dev).reshape(shape) * strides[i]
        base = pos if base is None else base + pos
    taps = []
    for off in itertools.product(*(range(kk) for kk in k)):
        taps.append(base + sum(o * st for o, st in zip(off, strides)))
    idx = ember.stack(taps, -1)                                                  # (N, C, *out, prod(k))
    vals = flat.gather(2, idx.reshape(N, C, -1)).reshape(idx.shape)
    v, arg = vals.max(-1)
    i_out = idx.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if input.dim() == nd + 1:
        v, i_out = v.squeeze(0), i_out.squeeze(0)
    return v, i_out


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool2d`` returning (values, int64 indices)."""
    return _fractional(input, 2, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling (Graham, 2014) of (N, C, H, W) or (C, H, W) to ``output_size`` (or
    ``output_ratio`` times the input size) with kH x kW windows at pseudo-random starts (matches
    torch.nn.functional.fractional_max_pool2d; the starts follow PyTorch's generate_intervals from
    ``_random_samples`` (N, C, 2) in [0, 1), drawn with ember's generator when not given).
    ``return_indices`` also returns the flat argmax over H * W. ValueError without output_size /
    output_ratio; RuntimeError for a window too large for the output size."""
    v, i = _fractional(input, 2, kernel_size, output_size, output_ratio, _random_samples)
    return (v, i) if return_indices else v


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool3d`` returning (values, int64 indices)."""
    return _fractional(input, 3, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) (matches
    torch.nn.functional.fractional_max_pool3d; ``_random_samples`` (N, C, 3)). See fractional_max_pool2d."""
    v, i = _fractional(input, 3, kernel_size, output_size, output_ratio, _random_samples)
    return (v, i) if return_indices else v
