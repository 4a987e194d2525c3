"""2-D convolution kernels: conv2d and its input / weight gradients as single GEMMs.

Layout: batch-last. The input is copied once into zero-padded (C, H, W, N) planes, and its
sliding blocks become one (C * kH * kW, H_out * W_out * N) column matrix (rows in the
weight's (C, kH, kW) order, so the weight is used as the (O, C * kH * kW) matrix it already
is, and a group's rows and the group's output channels are contiguous slices). The forward
pass and both gradients are then one BLAS product each per group, where the composite's
batched matmul runs N small ones; and every copy or block add runs over N contiguous
elements, where NCHW would run over W_out: numpy pays per inner loop, and the images of
a small CNN are a few pixels wide. float16 / bfloat16 compute in float32, as PyTorch's cpu
kernels do. ``stride``, ``padding`` and ``dilation`` arrive as pairs of ints (the dispatcher's calling
convention for ``int[2]``).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._util import FLOAT, compute_np, np_view, transposed


def _arr(t, cd):
    a = np_view(t)
    return a if a.dtype == cd else a.astype(cd)


def _columns(x, kh, kw, oh, ow, stride, padding, dilation):
    """The sliding blocks of x (N, C, H, W) as a (C * kh * kw, oh * ow * N) matrix."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    N, C, H, W = x.shape
    xp = np.zeros((C, H + 2 * ph, W + 2 * pw, N), x.dtype)
    xp[:, ph:ph + H, pw:pw + W] = transposed(x.reshape(N, C * H * W)).reshape(C, H, W, N)
    s0, s1, s2, s3 = xp.strides
    v = as_strided(xp, (C, kh, kw, oh, ow, N), (s0, s1 * dh, s2 * dw, s1 * sh, s2 * sw, s3), writeable=False)
    return np.ascontiguousarray(v).reshape(C * kh * kw, oh * ow * N)


def _grad_matrix(g):
    """grad_output (N, O, oh, ow) as an (O, oh * ow * N) matrix, the columns' order."""
    N, O, oh, ow = g.shape
    return transposed(g.reshape(N, O * oh * ow)).reshape(O, oh * ow * N)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, out):
    """cpu kernel of ``conv2d``, floating dtypes: input (N, C, H, W), weight (O, C / groups, kh, kw), bias (O) ->
    ``out`` (N, O, oh, ow), one GEMM per group over the im2col matrix. float16 / bfloat16 compute in float32.
    """
    o = np_view(out)
    cd = compute_np(out._dtype)
    x, w = _arr(input, cd), _arr(weight, cd)
    N, O, oh, ow = o.shape
    kh, kw = w.shape[2:]
    cols = _columns(x, kh, kw, oh, ow, stride, padding, dilation)                # (K, M)
    r = _grouped_wc(groups, w.reshape(O, -1), cols)                                # (O, M)
    if bias is not None:
        r += _arr(bias, cd)[:, None]
    np.copyto(o, r.reshape(O, oh, ow, N).transpose(3, 0, 1, 2), casting="unsafe")


def _grouped_wc(groups, wm, cols):
    """The weight matrix (O, K_g) times the columns (G * K_g, M), group j's output-channel rows
    by group j's column rows -> (O, M)."""
    O, Kg = wm.shape
    if groups == 1:
        return wm @ cols
    Og = O // groups
    r = np.empty((O, cols.shape[1]), wm.dtype)
    for j in range(groups):
        r[j * Og:(j + 1) * Og] = wm[j * Og:(j + 1) * Og] @ cols[j * Kg:(j + 1) * Kg]
    return r


def conv2d_backward_input(grad_output, weight, input_size, stride, padding, dilation, groups, *, out):
    """cpu kernel of ``conv2d_backward_input``, floating dtypes: write the gradient with respect to the input
    (``input_size`` (N, C, H, W)) of ``grad_output`` (N, O, oh, ow) into ``out``. float16 / bfloat16 compute in
    float32.
    """
    cd = compute_np(out._dtype)
    g, w = _arr(grad_output, cd), _arr(weight, cd)
    N, O, oh, ow = g.shape
    Cg, kh, kw = w.shape[1:]
    C, H, W = (int(s) for s in input_size[1:])
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    if (sh, sw, dh, dw, groups) == (1, 1, 1, 1, 1) and ph < kh and pw < kw and N * C * H * W:
        # stride 1: the gradient is the full correlation of grad_output with the flipped kernel - one im2col
        # and one GEMM, where the block adds below are kh * kw passes over the input (CNN step: 325 -> ~220 µs)
        cols = _columns(g, kh, kw, H, W, (1, 1), (kh - 1 - ph, kw - 1 - pw), (1, 1))      # (O kh kw, H W N)
        wf = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)).reshape(C, O * kh * kw)
        r = wf @ cols                                                                      # (C, H W N)
        np.copyto(np_view(out), r.reshape(C, H, W, N).transpose(3, 0, 1, 2), casting="unsafe")
        return
    gm = _grad_matrix(g)                                                         # (O, M)
    wm = w.reshape(O, Cg * kh * kw)
    if groups == 1:
        d = wm.T @ gm                                                            # (K, M)
    else:
        Og, Kg = O // groups, Cg * kh * kw
        d = np.empty((C * kh * kw, gm.shape[1]), cd)
        for j in range(groups):
            d[j * Kg:(j + 1) * Kg] = wm[j * Og:(j + 1) * Og].T @ gm[j * Og:(j + 1) * Og]
    d = d.reshape(C, kh, kw, oh, ow, N)
    Hp = max(H + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    Wp = max(W + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    xp = np.zeros((C, Hp, Wp, N), cd)
    for i in range(kh):
        for k in range(kw):
            blk = xp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, k * dw:k * dw + (ow - 1) * sw + 1:sw]
            blk += d[:, i, k]
    np.copyto(np_view(out), xp[:, ph:ph + H, pw:pw + W].transpose(3, 0, 1, 2), casting="unsafe")


def conv2d_backward_weight(grad_output, input, weight_size, stride, padding, dilation, groups, *, out):
    """cpu kernel of ``conv2d_backward_weight``, floating dtypes: write the gradient with respect to the weight
    (``weight_size`` (O, C / groups, kh, kw)) into ``out``. float16 / bfloat16 compute in float32.
    """
    cd = compute_np(out._dtype)
    g, x = _arr(grad_output, cd), _arr(input, cd)
    N, O, oh, ow = g.shape
    Cg, kh, kw = (int(s) for s in weight_size[1:])
    cols = _columns(x, kh, kw, oh, ow, stride, padding, dilation)                # (K, M)
    gm = _grad_matrix(g)                                                         # (O, M)
    dst = np_view(out)
    if groups == 1:
        res = gm @ cols.T
    else:
        Og, Kg = O // groups, Cg * kh * kw
        res = np.empty((O, Kg), gm.dtype)
        for j in range(groups):
            np.matmul(gm[j * Og:(j + 1) * Og], cols[j * Kg:(j + 1) * Kg].T, out=res[j * Og:(j + 1) * Og])
    # through dst's own strides (a reshape of a non-contiguous out would write into a copy)
    np.copyto(dst, res.reshape(dst.shape), casting="unsafe")


def register(lib):
    """Register conv2d and its two backward kernels for device 'cpu', floating dtypes, on ``lib``."""
    for name, k in (("conv2d", conv2d), ("conv2d_backward_input", conv2d_backward_input),
                    ("conv2d_backward_weight", conv2d_backward_weight)):
        lib.impl(name, k, device="cpu", dtypes=FLOAT)
