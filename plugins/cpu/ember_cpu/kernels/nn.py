"""Neural-network kernels: relu, softmax, nll_loss, im2col / col2im, max pooling, padding, embedding.

The core's meta functions (ember._ops._nn) have checked every argument; kernels compute
with numpy, vectorised over the whole batch. numpy pays a few nanoseconds per inner loop,
so the image kernels arrange their work in long contiguous runs: im2col is one strided
copy, col2im adds kh * kw shifted blocks in a (H, W, N * C) layout, max pooling reduces
along W over a flat strided view (one inner loop) before reducing along H.
float16 / bfloat16 compute in float32, as PyTorch's cpu kernels do.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember._ops._nn import blocks

from ._util import ALL, FLOAT, LOWP, buffer, compute_np, np_view, ones, sum_array, transposed, write

_ALL_NUMERIC = [d for d in ALL if not d.is_complex and d.name != "bool"]


def _arr(t, cd=None):
    a = np_view(t)
    cd = compute_np(t._dtype) if cd is None else cd
    return a if a.dtype == cd else a.astype(cd)


# ---------------------------------------------------------------- linear
_GEMM = {}
_ADDMM_MIN_SIZE = 16384      # outputs smaller than this: scipy's call (~3 µs) costs more than the pass it saves


def _addmm_(o, x, w, b):
    """o (M, N) <- x (M, K) @ w (N, K).T + b (N,) as one BLAS gemm with beta = 1 over ``o`` filled with ``b``
    first, as PyTorch's addmm: the bias costs a write pass instead of a read-and-write pass after the product
    (a (700, 128) x (512, 128) linear: 990 -> 912 µs, one thread); the sums are the same, product then bias.
    False (``o`` untouched) for outputs under 16384 elements, and unless all four are float32 / float64 of one
    dtype, x / w / o C-contiguous, none empty and o overlapping neither operand. The gemm is scipy's (numpy
    exposes no beta)."""
    dt = o.dtype
    if (o.size < _ADDMM_MIN_SIZE or dt.char not in "fd" or x.dtype != dt or w.dtype != dt or b.dtype != dt
            or 0 in x.shape or 0 in o.shape
            or not (x.flags.c_contiguous and w.flags.c_contiguous and o.flags.c_contiguous)
            or np.may_share_memory(o, x) or np.may_share_memory(o, w)):
        return False
    gemm = _GEMM.get(dt.char)
    if gemm is None:
        from .._runtime import scipy_blas
        blas = scipy_blas()
        gemm = _GEMM[dt.char] = blas.sgemm if dt.char == "f" else blas.dgemm
    np.copyto(o, b)
    # in Fortran's terms o.T (N, M) = w (N, K) @ x.T (K, M): w.T and x.T are Fortran-ordered views, so no copies
    r = gemm(1.0, w.T, x.T, beta=1.0, c=o.T, trans_a=1, overwrite_c=1)
    if r.ctypes.data != o.ctypes.data:          # (f2py copied c after all: keep the result)
        o[...] = r.T
    return True


def linear(input, weight, bias=None, *, out):
    """cpu kernel of ``linear``, floating dtypes: write input (*, in) @ weight (out, in).T + bias (out) into
    ``out`` (*, out). float16 / bfloat16 compute in float32.
    """
    x, w, o = np_view(input), np_view(weight), np_view(out)
    if o.dtype in LOWP:
        r = np.matmul(x.astype(np.float32), w.T.astype(np.float32))
        if bias is not None:
            r += np_view(bias).astype(np.float32)
        write(out, r)
        return
    if x.ndim > 2 and not x.flags.c_contiguous and o.flags.c_contiguous:
        # a strided (*, in) input (attention's sequence-first views): one copy and then one GEMM, where numpy's
        # batched matmul runs a small product per leading index ((32, 16, 64) x (192, 64): 335 -> 140 µs)
        x = np.ascontiguousarray(x)
    if x.ndim >= 2 and x.flags.c_contiguous and o.flags.c_contiguous:
        # (*, in) @ (in, out) as one (N, in) GEMM: numpy would call BLAS once per leading index (1.7x slower
        # for the transformer's (16, 32, 64) inputs)
        x2, o2 = x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), o.reshape(math.prod(o.shape[:-1]), o.shape[-1])
        if bias is not None and _addmm_(o2, x2, w, np_view(bias)):
            return
        np.matmul(x2, w.T, out=o2)
    else:
        np.matmul(x, w.T, out=o)
    if bias is not None:
        o += np_view(bias)


# ---------------------------------------------------------------- layer norm
def _rows(t, n, cd):
    """The cpu tensor ``t`` as a C-contiguous (rows, n) array of dtype ``cd`` (a copy only where needed)."""
    a = np.ascontiguousarray(np_view(t), dtype=cd)
    return a.reshape(a.size // n if n else 0, n)


def native_layer_norm(input, normalized_shape, weight, bias, eps, *, out):
    """cpu kernel of ``native_layer_norm``, floating dtypes: per row of the last len(normalized_shape) dims,
    mean and rstd = 1 / sqrt(biased variance + eps) (two passes: the mean, then the squared deviations; the
    row sums as gemv with ones), out = (x - mean) rstd weight + bias; ``out`` = (out, mean, rstd). float16 /
    bfloat16 compute in float32. An empty normalized shape gives mean 0 and rstd NaN, as PyTorch."""
    cd = compute_np(input._dtype)
    n = math.prod(normalized_shape)
    x = _rows(input, n, cd)
    yo, y_copy = buffer(out[0], cd, contiguous=True)
    y = yo.reshape(x.shape)
    if n == 0:
        write(out[1], 0)
        write(out[2], np.nan)
        return
    mean = np.matmul(x, ones(n, cd))
    mean /= cd.type(n)
    np.subtract(x, mean[:, None], out=y)
    sq = np.multiply(y, y)
    var = np.matmul(sq, ones(n, cd))
    var /= cd.type(n)
    var += cd.type(eps)
    rstd = np.sqrt(var, out=var)
    np.divide(1, rstd, out=rstd)
    y *= rstd[:, None]
    if weight is not None:
        y *= _rows(weight, n, cd)
    if bias is not None:
        y += _rows(bias, n, cd)
    if y_copy:
        write(out[0], yo)
    write(out[1], mean.reshape(out[1]._shape))
    write(out[2], rstd.reshape(out[2]._shape))


def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, *, out):
    """cpu kernel of ``_layer_norm_backward``, floating dtypes: with xhat = (x - mean) rstd and gy = grad_out
    weight, grad_input = rstd (gy - mean(gy) - xhat mean(gy xhat)) per row, grad_weight = the column sums of
    grad_out xhat, grad_bias those of grad_out (row and column sums as gemv with ones); ``out`` = (grad_input,
    grad_weight, grad_bias). float16 / bfloat16 compute in float32."""
    cd = compute_np(input._dtype)
    n = math.prod(normalized_shape)
    x, g = _rows(input, n, cd), _rows(grad_out, n, cd)
    r = x.shape[0]
    gio, gi_copy = buffer(out[0], cd, contiguous=True)
    gi = gio.reshape(x.shape)
    if n == 0 or r == 0:
        for t in out:
            write(t, 0)
        return
    m, s = _rows(mean, 1, cd), _rows(rstd, 1, cd)
    xhat = np.subtract(x, m)
    xhat *= s
    t = np.multiply(g, xhat)
    write(out[1], np.matmul(ones(r, cd), t).reshape(out[1]._shape))
    write(out[2], np.matmul(ones(r, cd), g).reshape(out[2]._shape))
    gy = g if weight is None else np.multiply(g, _rows(weight, n, cd))
    if weight is not None:
        np.multiply(gy, xhat, out=t)
    c1 = np.matmul(gy, ones(n, cd))
    c2 = np.matmul(t, ones(n, cd))
    c1 /= cd.type(n)
    c2 /= cd.type(n)
    np.multiply(xhat, c2[:, None], out=xhat)
    np.subtract(gy, c1[:, None], out=gi)
    gi -= xhat
    gi *= s
    if gi_copy:
        write(out[0], gio)


# ---------------------------------------------------------------- relu
def relu(self, *, out):
    """cpu kernel of ``relu``, real numeric dtypes (not bool / complex): write max(x, 0) into ``out``."""
    a = np_view(self)
    if a.dtype in LOWP:
        write(out, np.maximum(a.astype(np.float32), 0))
    else:
        np.maximum(a, 0, out=np_view(out))


# ---------------------------------------------------------------- softmax / log_softmax
def _softmax_prep(self, dim, out):
    cd = compute_np(out._dtype)
    a = _arr(self, cd)
    if a.ndim == 0:
        a = a.reshape(1)
    return a, dim % a.ndim


def _row_max(a, d):
    """``a.max(axis=d, keepdims=True)`` (NaN propagates). Short contiguous rows (attention scores: rows of 32) are
    reduced down the columns of a transposed copy: numpy's max along a short last axis runs per row (2048 x 32
    float32: 108 µs, against 39 for the copy and 9 for the column reduction, one thread). Max is exact, so the
    values are the same either way."""
    n = a.shape[d] if a.ndim else 1
    if d == a.ndim - 1 and 2 <= n <= 64 and a.size >= 64 * n and a.flags.c_contiguous:
        m = np.maximum.reduce(transposed(a.reshape(-1, n)), axis=0)
        return m.reshape(a.shape[:-1] + (1,))
    return a.max(axis=d, keepdims=True)


def _softmax_into(a, d, out, safe):
    o = np_view(out)
    direct = o.dtype == a.dtype and o.shape == a.shape      # straight into out: no temporary to copy
    e = o if direct else np.empty(a.shape, a.dtype)
    m = _row_max(a, d)
    if safe:
        dead = np.isneginf(m)
        m[dead] = 0
    np.subtract(a, m, out=e)
    np.exp(e, out=e)
    s = sum_array(e, (d,), True)
    if safe:
        s[dead] = 1
    e /= s
    if not direct:
        write(out, e.reshape(out._shape))


def softmax(self, dim, dtype=None, *, out):
    """cpu kernel of ``softmax``, floating dtypes: write exp(x - max) / sum along ``dim`` into ``out`` (in
    ``out``'s dtype; a 0-dim input acts as 1-D). float16 / bfloat16 compute in float32.
    """
    a, d = _softmax_prep(self, dim, out)
    if a.size:
        _softmax_into(a, d, out, False)


def safe_softmax(self, dim, dtype=None, *, out):
    """cpu kernel of ``_safe_softmax``, floating dtypes: as ``softmax``, with rows whose entries are all -inf
    written as zeros (their maximum taken as 0, their sum as 1) instead of NaN.
    """
    a, d = _softmax_prep(self, dim, out)
    if a.size:
        _softmax_into(a, d, out, True)


def log_softmax(self, dim, dtype=None, *, out):
    """cpu kernel of ``log_softmax``, floating dtypes: write x - max - log(sum(exp(x - max))) along ``dim`` into
    ``out``. float16 / bfloat16 compute in float32.
    """
    a, d = _softmax_prep(self, dim, out)
    if a.size == 0:
        return
    o = np_view(out)
    if o.dtype == a.dtype and o.shape == a.shape:       # straight into the output: no temporaries to copy
        np.subtract(a, _row_max(a, d), out=o)
        o -= np.log(sum_array(np.exp(o), (d,), True))
        return
    s = a - _row_max(a, d)
    s -= np.log(sum_array(np.exp(s), (d,), True))
    write(out, s.reshape(out._shape))



# ---------------------------------------------------------------- relu / softmax / log_softmax backward
def threshold_backward(grad_output, self, threshold, *, out):
    """cpu kernel of ``threshold_backward``, real numeric dtypes: write ``grad_output`` where ``self > threshold``,
    else 0, into ``out`` (broadcast; a NaN or inf gradient is zeroed too, a NaN in self passes it).
    """
    o, g, s = np_view(out), np_view(grad_output), np_view(self)
    with np.errstate(invalid="ignore"):          # (ml_dtypes' bfloat16 warns comparing a NaN)
        keep = np.logical_not(s <= threshold)
    if o.dtype in LOWP or g.dtype != o.dtype:
        np.copyto(o, np.where(keep, g, 0), casting="unsafe")
        return
    # grad * keep: one pass (masked copies are 3-4x slower in numpy); exact unless a NaN / inf gradient meets a
    # 0 of the mask (NaN then, where PyTorch writes 0): such a result is redone with a select
    if o.dtype.kind != "f":
        np.multiply(g, keep, out=o)
        return
    with np.errstate(invalid="ignore"):
        np.multiply(g, keep, out=o)
    if not np.isfinite(o).all():
        np.copyto(o, np.where(keep, g, 0))


def _softmax_backward_prep(grad_output, output, dim, out):
    cd = compute_np(grad_output._dtype)
    g, y = _arr(grad_output, cd), _arr(output, cd)
    if g.ndim == 0:
        g, y = g.reshape(1), y.reshape(1)
    o = np_view(out)
    direct = o.dtype == cd and o.shape == g.shape     # straight into out: no temporary to copy
    return g, y, dim % g.ndim, (o if direct else np.empty(g.shape, cd)), direct


def _log_softmax_backward_data(grad_output, output, dim, input_dtype, *, out):
    """cpu kernel of ``_log_softmax_backward_data``, floating dtypes: write grad - exp(output) * sum(grad, dim)
    into ``out`` (the composite's operations, in its order; float16 / bfloat16 compute in float32).
    """
    g, y, d, r, direct = _softmax_backward_prep(grad_output, output, dim, out)
    np.exp(y, out=r)
    np.multiply(r, sum_array(g, (d,), True), out=r)
    np.subtract(g, r, out=r)
    if not direct:
        write(out, r.reshape(out._shape))


def _softmax_backward_data(grad_output, output, dim, input_dtype, *, out):
    """cpu kernel of ``_softmax_backward_data``, floating dtypes: write output * (grad - sum(grad * output, dim))
    into ``out`` (the composite's operations, in its order; float16 / bfloat16 compute in float32).
    """
    g, y, d, r, direct = _softmax_backward_prep(grad_output, output, dim, out)
    np.multiply(g, y, out=r)
    np.subtract(g, sum_array(r, (d,), True), out=r)
    np.multiply(y, r, out=r)
    if not direct:
        write(out, r.reshape(out._shape))


# ---------------------------------------------------------------- nll_loss
def _nll_flat(self, target, weight, ignore_index):
    """(x as (M, C), rows, target (M,) with ignored set to 0, per-row weight, C)."""
    x = np_view(self)
    cd = compute_np(self._dtype)
    if x.ndim == 1:
        x2 = x.reshape(1, -1)
    elif x.ndim == 2:
        x2 = x
    else:
        x2 = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    C = x2.shape[1]
    t = np_view(target).reshape(-1).astype(np.int64, copy=False)
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= C))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    tt = np.where(valid, t, 0)
    if weight is None:
        w = valid.astype(cd)
    else:
        w = _arr(weight, cd)[tt] * valid
    return x2, tt, w, cd


_ARANGE = {}


def _arange(n):
    a = _ARANGE.get(n)
    if a is None:
        if len(_ARANGE) > 64:
            _ARANGE.clear()
        a = _ARANGE[n] = np.arange(n)
    return a


def _plain_targets(x, target, weight, ignore_index):
    """The targets as int64 when the common case holds: (N, C) input, no weight, every target a
    class (none equal to ignore_index) — then the loss is a plain gather. None otherwise."""
    if weight is not None or x.ndim != 2:
        return None
    t = np_view(target)
    C = x.shape[1]
    if t.dtype != np.int64 or not t.size or 0 <= ignore_index < C:
        return None
    # 0 <= t < C in one pass: a negative target is a huge number as uint64
    return t if np.less(t.view(np.uint64), C).all() else None


def nll_loss(self, target, weight=None, reduction=1, ignore_index=-100, *, out):
    """cpu kernel of ``nll_loss``, floating dtypes: input (N, C), (C,) or (N, C, d1, ...) of log-probabilities,
    int64 target (N) / () / (N, d1, ...); writes -weight[t] * input[t] per element (reduction 0), their sum (2)
    or their weighted mean (1; NaN when every target is ignored) into ``out``. IndexError "Target t is out of
    bounds."
    """
    x = np_view(self)
    t = _plain_targets(x, target, weight, ignore_index)
    if t is not None and x.dtype not in LOWP:
        picked = x[_arange(len(t)), t]
        if reduction == 0:
            np.negative(picked, out=np_view(out))
        else:
            s = -picked.sum()
            write(out, s / len(t) if reduction == 1 else s)
        return
    x2, tt, w, cd = _nll_flat(self, target, weight, ignore_index)
    picked = x2[np.arange(x2.shape[0]), tt].astype(cd, copy=False)
    losses = -(picked * w)
    if reduction == 0:
        write(out, losses.reshape(out._shape))
    elif reduction == 2:
        write(out, losses.sum(dtype=cd))
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            write(out, losses.sum(dtype=cd) / w.sum(dtype=cd))


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, *, out):
    """cpu kernel of ``nll_loss_backward``, floating dtypes: write the gradient with respect to ``self`` (zeros
    except -weight[t] * grad, scaled as ``reduction``) into ``out`` of self's shape. IndexError "Target t is out
    of bounds."
    """
    x, o = np_view(self), np_view(out)
    t = _plain_targets(x, target, weight, ignore_index)
    if t is not None and o.dtype not in LOWP and o.flags.c_contiguous:
        g = np_view(grad_output)
        o.fill(0)
        o[_arange(len(t)), t] = -g if reduction == 0 else -g / len(t) if reduction == 1 else -g
        return
    x2, tt, w, cd = _nll_flat(self, target, weight, ignore_index)
    g = _arr(grad_output, cd)
    if reduction == 0:
        vals = -(w * g.reshape(-1))
    else:
        scale = g.reshape(())
        if reduction == 1:
            with np.errstate(invalid="ignore", divide="ignore"):
                scale = scale / w.sum(dtype=cd)
        vals = -(w * scale)
    o = np_view(out)
    nd = o.ndim
    if nd <= 2 and o.flags.c_contiguous and o.dtype == cd:
        o2 = o.reshape(x2.shape)
        o2.fill(0)
        o2[np.arange(x2.shape[0]), tt] = vals
        return
    gx = np.zeros(x2.shape, cd)
    gx[np.arange(x2.shape[0]), tt] = vals
    if nd > 2:
        gx = np.moveaxis(gx.reshape((o.shape[0],) + o.shape[2:] + (o.shape[1],)), -1, 1)
    write(out, gx.reshape(o.shape))


# ---------------------------------------------------------------- im2col / col2im
# (every int[2] argument arrives as a pair of ints: the dispatcher's calling convention)
def im2col(self, kernel_size, dilation, padding, stride, *, out):
    """cpu kernel of ``im2col`` (F.unfold), all dtypes: input (N, C, H, W) or (C, H, W) -> ``out`` (N, C * kh * kw,
    L) of sliding blocks, zero-padded, L = oh * ow.
    """
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    x = np_view(self)
    if x.ndim == 3:
        x = x[None]
    N, C, H, W = x.shape
    oh, ow = blocks(H, kh, dh, ph, sh), blocks(W, kw, dw, pw, sw)
    if ph or pw:
        xp = np.zeros((N, C, H + 2 * ph, W + 2 * pw), x.dtype)
        xp[:, :, ph:ph + H, pw:pw + W] = x
    else:
        xp = x                                  # any strides: the window view reads them as they are
    s0, s1, s2, s3 = xp.strides
    v = as_strided(xp, (N, C, kh, kw, oh, ow), (s0, s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw), writeable=False)
    o = np_view(out)
    np.copyto(o.reshape(N, C, kh, kw, oh, ow), v, casting="unsafe")


def col2im(self, output_size, kernel_size, dilation, padding, stride, *, out):
    """cpu kernel of ``col2im`` (F.fold), all dtypes: input (N, C * kh * kw, L) or (C * kh * kw, L) -> ``out`` (N,
    C, H, W) with ``output_size`` (H, W), overlapping block entries summed.
    """
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    H, W = output_size
    c = _arr(self)
    if c.ndim == 2:
        c = c[None]
    N = c.shape[0]
    C = c.shape[1] // (kh * kw)
    oh, ow = blocks(H, kh, dh, ph, sh), blocks(W, kw, dw, pw, sw)
    Hp = max(H + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    Wp = max(W + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    # (kh, kw, oh, ow, N, C): every shifted block becomes one add over runs of N * C elements
    v = np.empty((kh, kw, oh, ow, N, C), c.dtype)
    np.copyto(v, c.reshape(N, C, kh, kw, oh, ow).transpose(2, 3, 4, 5, 0, 1))
    xp = np.zeros((Hp, Wp, N, C), c.dtype)
    for i in range(kh):
        for j in range(kw):
            blk = xp[i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            np.add(blk, v[i, j], out=blk)
    r = xp[ph:ph + H, pw:pw + W].transpose(2, 3, 0, 1)
    o = np_view(out)
    np.copyto(o.reshape(N, C, H, W), r, casting="unsafe")


# ---------------------------------------------------------------- max pooling
def _pool_args(kernel_size, stride, padding, dilation):
    # pairs of ints (the dispatcher's calling convention); stride () means kernel_size, as in ATen
    return kernel_size, stride or kernel_size, padding, dilation


def _lowest(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False, *, out):
    """cpu kernel of ``max_pool2d_with_indices``, real dtypes: input (N, C, H, W) or (C, H, W) -> ``out`` =
    (values, int64 indices) of shape (.., oh, ow); indices are flat positions in each H * W plane; NaN wins
    (PyTorch's rule); padding never wins.
    """
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_args(kernel_size, stride, padding, dilation)
    vals, inds = out
    x = np_view(self)
    cd = compute_np(self._dtype)
    if x.ndim == 3:
        x = x[None]
    N, C, H, W = x.shape
    oh, ow = vals._shape[-2:]
    NC = N * C
    if NC == 0:
        return
    Hp = max(H + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    Wp = max(W + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    # batch-last padded planes (Hp, Wp, N * C): every window offset is then an (oh, ow, N * C) view whose
    # rows run over N * C contiguous elements (numpy pays per inner loop; H and W are small, N * C is not)
    if (Hp, Wp) == (H, W) and x.dtype == cd:          # no padding: the planes as they are, batch-last
        xt = transposed(x.reshape(NC, H * W)).reshape(H, W, NC)
    else:
        xt = np.full((Hp, Wp, NC), _lowest(np.dtype(cd)), cd)
        xt[ph:ph + H, pw:pw + W] = x.reshape(NC, H, W).transpose(1, 2, 0)
    nan = cd.kind == "f" and bool(np.isnan(x).any())

    def window(i, j):
        return xt[i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]

    best = window(0, 0).copy()
    k = np.zeros(best.shape, np.int16 if kh * kw < 32768 else np.int64)
    for n in range(1, kh * kw):
        v = window(*divmod(n, kw))
        m = np.greater(v, best)
        if nan:                                   # PyTorch's rule: val > max or isnan(val)
            m |= np.isnan(v)
            np.copyto(best, v, where=m)
        else:
            np.maximum(best, v, out=best)
        np.putmask(k, m, n)
    # flat index over H * W: the window's top-left corner plus the winner's offset in it
    corner = ((np.arange(oh) * sh - ph) * W)[:, None] + (np.arange(ow) * sw - pw)[None, :]
    offset = np.array([i * dh * W + j * dw for i in range(kh) for j in range(kw)], np.int64)
    idx = offset.take(k) + corner[:, :, None]
    np.copyto(np_view(vals).reshape(NC, oh, ow), best.transpose(2, 0, 1), casting="unsafe")
    np.copyto(np_view(inds).reshape(NC, oh, ow), idx.transpose(2, 0, 1))


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices,
                                     *, out):
    """cpu kernel of ``max_pool2d_with_indices_backward``: scatter-add ``grad_output`` to the input positions in
    ``indices``, writing the gradient (self's shape) into ``out``.
    """
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_args(kernel_size, stride, padding, dilation)
    H, W = self._shape[-2:]
    o = np_view(out)
    cd = compute_np(out._dtype)
    g = _arr(grad_output, cd)
    i = np_view(indices)
    planes = int(np.prod(self._shape[:-2], dtype=np.int64))
    g2 = g.reshape(planes, -1)
    i2 = i.reshape(planes, -1)
    if (kh - 1) * dh + 1 <= sh and (kw - 1) * dw + 1 <= sw:
        # windows do not overlap: every input gets at most one gradient
        r = np.zeros((planes, H * W), cd)
        np.put_along_axis(r, i2, g2, axis=1)
    else:
        flat = (i2 + (np.arange(planes) * (H * W))[:, None]).reshape(-1)
        r = np.bincount(flat, weights=g2.reshape(-1), minlength=planes * H * W)
    write(out, r.reshape(o.shape))


# ---------------------------------------------------------------- constant_pad_nd / embedding
def constant_pad_nd(self, pad, value=0, *, out):
    """cpu kernel of ``constant_pad_nd``, all dtypes: write ``self`` padded (or cropped, for negative entries) by
    ``pad`` (pairs from the last dim backwards) with ``value`` into ``out``.
    """
    from ember._ops._nn import _pad_slices
    o = np_view(out)
    a = np_view(self)
    src, dst = _pad_slices(a.shape, tuple(pad), a.ndim)
    if o.size == 0:
        return
    o.fill(value) if o.dtype.kind != "b" else o.fill(bool(value))
    o[dst] = a[src]


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False, *, out):
    """cpu kernel of ``embedding``, all dtypes: write the rows weight[indices] into ``out`` (*indices.shape,
    embedding_dim). IndexError "index out of range in self".
    """
    w = np_view(weight)
    idx = np_view(indices).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= w.shape[0]):
        raise IndexError("index out of range in self")
    o = np_view(out)
    np.take(w, idx, axis=0, out=o.reshape(idx.size, w.shape[1]))


def register(lib):
    """Register the nn kernels above for device 'cpu' on ``lib`` (relu: real numeric dtypes; linear, softmax,
    log_softmax, nll_loss(_backward): floating; the rest all dtypes).
    """
    lib.impl("relu", relu, device="cpu", dtypes=_ALL_NUMERIC)
    lib.impl("threshold_backward", threshold_backward, device="cpu", dtypes=_ALL_NUMERIC)
    for name, k in (("_log_softmax_backward_data", _log_softmax_backward_data),
                    ("_softmax_backward_data", _softmax_backward_data)):
        lib.impl(name, k, device="cpu", dtypes=FLOAT)
    lib.impl("linear", linear, device="cpu", dtypes=FLOAT)
    lib.impl("native_layer_norm", native_layer_norm, device="cpu", dtypes=FLOAT)
    lib.impl("_layer_norm_backward", layer_norm_backward, device="cpu", dtypes=FLOAT)
    for name, k in (("softmax", softmax), ("_safe_softmax", safe_softmax), ("log_softmax", log_softmax),
                    ("nll_loss", nll_loss),
                    ("nll_loss_backward", nll_loss_backward)):
        lib.impl(name, k, device="cpu", dtypes=FLOAT)
    for name, k in (("im2col", im2col), ("col2im", col2im), ("max_pool2d_with_indices", max_pool2d_with_indices),
                    ("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward),
                    ("constant_pad_nd", constant_pad_nd), ("embedding", embedding)):
        lib.impl(name, k, device="cpu", dtypes=ALL)
