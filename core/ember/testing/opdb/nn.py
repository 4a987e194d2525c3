"""Op database entries: the nn ops of the dispatcher (linear, relu, softmax, log_softmax, nll_loss
and its backward, im2col / col2im, max_pool2d_with_indices and its backward, constant_pad_nd,
embedding, conv2d and its two backward ops, the fused LSTM and GRU cells and their backward ops).

The entries call the dispatcher's ops (``ember._ops._nn`` / ``_conv``) with their aten-style
arguments (``reduction`` as 0 none / 1 mean / 2 sum, explicit stride / padding / dilation). Every
op with ``int[2]`` arguments also has samples in the forms users write (an int, a list, defaults
left out): the dispatcher hands kernels pairs of ints whatever the form ("Calling conventions" in
docs/vendor-guide.md), and these samples are what would catch a dispatcher or kernel that does not.
References loop in float64 over small windows and accept every form.
"""
from __future__ import annotations

from functools import partial

import math

import numpy as np

from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import ALL_DTYPES, FLOATING, NUMERIC, REAL, seed_for, with_grad
from .reduction import upcast, distinct, ties, with_nan, values_only
from .indexing import _Mk   # the seeded sample maker shared by the index-taking entries

__all__ = ["OPINFOS", "op_db"]


def _two(v):
    """An int[2] value in any user form (an int, a 1- or 2-element list / tuple) as a pair."""
    if isinstance(v, (int, np.integer)):
        return (int(v), int(v))
    v = tuple(v)
    return v * 2 if len(v) == 1 else v


def _f64(a):
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64 if a.dtype.kind == "f" else np.int64)


# ---------------------------------------------------------------- linear / relu / softmax
def _linear_ref(x, w, b=None):
    r = np.matmul(_f64(x), _f64(w).T)
    if b is not None:
        r = r + _f64(b)
    return r.astype(x.dtype)


def _linear_samples(op, device, dtype, requires_grad=False):
    lo, hi = ((-3, 3) if (dtype.is_floating_point or dtype.is_complex) else (0, 4) if dtype.name == "uint8"
              else (-4, 4))
    m = partial(_Mk(op, device, dtype, requires_grad), low=lo, high=hi)
    yield SampleInput(m((3, 4)), (m((2, 4)), m((2,))), name="2-D, bias")
    yield SampleInput(m((4,)), (m((2, 4)),), name="1-D input, no bias")
    yield SampleInput(m((2, 3, 4), nc=True), (m((5, 4), t=True), m((5,))), name="3-D, transposed weight")
    yield SampleInput(m((0, 4)), (m((2, 4)), m((2,))), name="empty batch")
    yield SampleInput(m((3, 0)), (m((2, 0)), m((2,))), name="empty features (bias only)")


def _linear_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (make_tensor((2, 5), device=device, seed=2),)), RuntimeError,
                     r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x2\)")
    yield ErrorInput(SampleInput(x, (make_tensor((2, 4), device=device, dtype=ember.float64, seed=2),)),
                     RuntimeError, r"expected m1 and m2 to have the same dtype, but got: float != double")


def _relu_ref(x):
    return np.where(x > 0, x, np.zeros_like(x)) if x.dtype.kind != "f" else np.where(np.isnan(x) | (x > 0), x, 0) \
        .astype(x.dtype)


def _relu_samples(op, device, dtype, requires_grad=False):
    from .._samples import unary_samples
    yield from unary_samples(op, device, dtype, requires_grad)
    if dtype.is_floating_point:
        yield SampleInput(with_nan((5,), device, dtype, 3, where=(1,)), name="NaN")


def _softmax_ref(x, dim, dtype=None, *, log=False):
    out = np.dtype(dtype.numpy_dtype) if dtype is not None else x.dtype
    a = x.astype(np.float64)
    if a.ndim == 0:
        a, dim = a.reshape(1), 0
    if a.size == 0:
        return np.empty(x.shape, dtype=out)
    m = np.max(a, axis=dim, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(a - m)
    s = e.sum(axis=dim, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (a - m - np.log(s)) if log else e / s
    return r.reshape(x.shape).astype(out)


def _softmax_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m(()), (0,), name="0-dim")
    yield SampleInput(m((5,)), (0,), name="1-D")
    yield SampleInput(m((3, 4)), (1,), name="2-D, dim=1")
    yield SampleInput(m((3, 4), t=True), (0,), name="transposed, dim=0")
    yield SampleInput(m((2, 3, 4), nc=True), (-2,), name="noncontiguous, dim=-2")
    yield SampleInput(m((0, 3)), (1,), name="empty")
    yield SampleInput(m((3, 4), low=60, high=90), (1,), name="large values (stability)")
    if dtype.name in ("float16", "bfloat16", "float32"):
        yield SampleInput(m((3, 4)), (1, ember.float64), name="dtype=float64")
    x = make_tensor((2, 3), device="cpu", dtype=dtype, seed=m.seed()).numpy().astype(np.float64)
    x[0, 1] = -np.inf
    yield SampleInput(with_grad(ember.tensor(x.astype(np.float32), dtype=dtype, device=device), False), (1,),
                      name="-inf entry")


def _safe_softmax_ref(x, dim, dtype=None):
    r = _softmax_ref(x, dim, dtype)
    if x.ndim and x.size:
        r = np.where(np.all(np.isneginf(x), axis=dim, keepdims=True), 0, r).astype(r.dtype)
    return r


def _safe_softmax_samples(op, device, dtype, requires_grad=False):
    yield from _softmax_samples(op, device, dtype, requires_grad)
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    x = make_tensor((3, 4), device="cpu", dtype=dtype, seed=m.seed()).numpy().astype(np.float64)
    x[1, :] = -np.inf
    x[2, 1] = -np.inf
    yield SampleInput(with_grad(ember.tensor(x.astype(np.float32), dtype=dtype, device=device), requires_grad),
                      (1,), name="a row of all -inf (masked attention)")
    yield SampleInput(with_grad(ember.tensor(x.astype(np.float32), dtype=dtype, device=device), requires_grad),
                      (0,), name="all -inf row, dim=0")


def _softmax_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (2,)), IndexError, r"Dimension out of range")
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, dtype=ember.int64, seed=1), (1,)),
                     NotImplementedError, rf"\"{op.name.replace('_safe_', '')}_lastdim_kernel_impl\" not implemented "
                                          "for 'Long'")



# ---------------------------------------------------------------- the backward ops of relu, softmax, log_softmax
def _threshold_backward_ref(g, x, threshold):
    return np.where(x <= threshold, 0, g).astype(np.result_type(g, x))


def _threshold_backward_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 4)), (m((3, 4), grad=False), 0), name="relu's")
    yield SampleInput(m((2, 3, 4), nc=True), (m((2, 3, 4), t=True, grad=False), 1), name="non-contiguous, threshold 1")
    yield SampleInput(m((3, 4)), (m((4,), grad=False), 0), name="broadcast self")
    yield SampleInput(m(()), (m((), grad=False), 0), name="0-dim")
    yield SampleInput(m((0, 3)), (m((0, 3), grad=False), 0), name="empty")
    if dtype.is_floating_point:
        yield SampleInput(with_nan((5,), device, dtype, 3, where=(1,)), (m((5,), grad=False, low=-1, high=1), 0.25),
                          name="NaN gradient, threshold 0.25")
        yield SampleInput(m((5,)), (with_nan((5,), device, dtype, 4, where=(2,)), 0), name="NaN in self")


def _threshold_backward_errors(op, device):
    yield ErrorInput(SampleInput(make_tensor((3, 4), device=device, seed=1), (make_tensor((5,), device=device, seed=2), 0)),
                     RuntimeError, r"must match the size")


def _softmax_backward_ref(g, y, dim, input_dtype, *, log):
    import ember
    out = np.dtype(np.float16) if g.dtype == np.float32 and input_dtype is ember.float16 else g.dtype
    a, b = g.astype(np.float64), y.astype(np.float64)
    if a.ndim == 0:
        a, b, dim = a.reshape(1), b.reshape(1), 0
    r = a - np.exp(b) * a.sum(dim, keepdims=True) if log else b * (a - (a * b).sum(dim, keepdims=True))
    return r.reshape(g.shape).astype(out)


def _softmax_backward_samples(op, device, dtype, requires_grad=False, *, log):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    f = ember.log_softmax if log else ember.softmax

    def out(shape, dim, **kw):
        return with_grad(f(m(shape, grad=False, **kw).detach(), dim), requires_grad)
    yield SampleInput(m((3, 4)), (out((3, 4), 1), 1, dtype), name="2-D, dim=1")
    yield SampleInput(m((3, 4), t=True), (out((3, 4), 0), 0, dtype), name="transposed grad, dim=0")
    yield SampleInput(m((2, 3, 4), nc=True), (out((2, 3, 4), -2, nc=True), -2, dtype), name="non-contiguous, dim=-2")
    yield SampleInput(m(()), (out((), 0), 0, dtype), name="0-dim")
    yield SampleInput(m((0, 3)), (out((0, 3), 1), 1, dtype), name="empty")
    if dtype.name == "float32":
        yield SampleInput(m((3, 4)), (out((3, 4), 1), 1, ember.float16), name="half-to-float: input_dtype float16")


def _softmax_backward_errors(op, device):
    import ember
    g = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(g, (make_tensor((3, 5), device=device, seed=2), 1, ember.float32)), RuntimeError,
                     r"grad_output of shape \[3, 4\] and output of shape \[3, 5\] differ")
    yield ErrorInput(SampleInput(g, (make_tensor((3, 4), device=device, seed=2), 2, ember.float32)), IndexError,
                     r"Dimension out of range")
    yield ErrorInput(SampleInput(g, (make_tensor((3, 4), device=device, dtype=ember.float64, seed=2), 1,
                                     ember.float32)), RuntimeError, r"expected scalar type Float but found Double")
    i = make_tensor((3, 4), device=device, dtype=ember.int64, seed=3)
    kernel = op.name.strip("_").replace("_data", "")
    yield ErrorInput(SampleInput(i, (i, 1, ember.int64)), NotImplementedError,
                     rf"\"{kernel}_lastdim_kernel_impl\" not implemented for 'Long'")


# ---------------------------------------------------------------- nll_loss
def _nll_parts(x, t, w, ignore_index):
    """(per-element -w[t] * x[t] losses, per-element weights) for (N, C, ...) / (C,) inputs."""
    if x.ndim == 1:
        x, t = x[None], np.asarray(t).reshape(1)
    C = x.shape[1]
    xm = np.moveaxis(x, 1, -1).reshape(-1, C)
    tf = np.asarray(t).reshape(-1).astype(np.int64)
    wv = np.ones(C) if w is None else w.astype(np.float64)
    keep = tf != ignore_index
    ts = np.where(keep, tf, 0)
    ww = np.where(keep, wv[ts], 0.0)
    loss = -xm.astype(np.float64)[np.arange(len(tf)), ts] * ww
    return loss, ww


def _nll_ref(x, target, weight=None, reduction=1, ignore_index=-100):
    loss, ww = _nll_parts(x, target, weight, ignore_index)
    if reduction == 0:
        r = loss.reshape(np.asarray(target).shape)
    elif reduction == 2:
        r = loss.sum()
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            r = loss.sum() / ww.sum()
    return np.asarray(r).astype(x.dtype)


def _nll_backward_ref(g, x, target, weight, reduction, ignore_index):
    loss, ww = _nll_parts(x, target, weight, ignore_index)
    gv = np.asarray(g, dtype=np.float64).reshape(-1) if reduction == 0 else np.float64(np.asarray(g))
    if reduction == 1:
        gv = gv / ww.sum()
    xx = x[None] if x.ndim == 1 else x
    C = xx.shape[1]
    tf = np.asarray(target).reshape(-1).astype(np.int64)
    ts = np.where(tf != ignore_index, tf, 0)
    gm = np.zeros((len(tf), C))
    gm[np.arange(len(tf)), ts] = -(ww * gv)
    moved = np.moveaxis(xx, 1, -1).shape
    r = np.moveaxis(gm.reshape(moved), -1, 1).reshape(x.shape)
    return r.astype(x.dtype)


def _nll_cases(m, dtype):
    import ember
    yield "2-D, mean", m((3, 5)), m.idx((3,), 5), None, 1, -100
    yield "2-D, weight, sum", m((4, 5), t=True), m.idx((4,), 5), m((5,), low=0.5, high=2), 2, -100
    yield "2-D, none, ignore_index", m((4, 3), nc=True), ember.tensor([0, 2, 1, 2], device=m.device), None, 0, 2
    yield "1-D input, 0-dim target", m((5,)), m.idx((), 5), None, 1, -100
    yield "4-D (spatial), weight, mean", m((2, 3, 2, 2)), m.idx((2, 2, 2), 3), m((3,), low=0.5, high=2), 1, -100
    yield "empty batch, sum", m((0, 3)), m.idx((0,), 3), None, 2, -100
    yield "uint8 target", m((3, 4)), m.idx((3,), 4, dtype=ember.uint8), None, 1, -100


def _nll_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    for name, x, t, w, red, ign in _nll_cases(m, dtype):
        if w is not None:
            w = w.detach()
        yield SampleInput(x, (t, w, red, ign), name=name)


def _nll_backward_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    for name, x, t, w, red, ign in _nll_cases(m, dtype):
        x = x.detach()
        if w is not None:
            w = w.detach()
        g = m(tuple(t.shape) if red == 0 else ())
        yield SampleInput(g, (x, t, w, red, ign), name=name)


def _nll_errors(op, device):
    import ember
    x = make_tensor((3, 5), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (ember.tensor([1, 2], device=device), None, 1, -100)), ValueError,
                     r"Expected input batch_size \(3\) to match target batch_size \(2\).")
    yield ErrorInput(SampleInput(x, (ember.tensor([1, 2, 7], device=device), None, 1, -100)), IndexError,
                     r"Target 7 is out of bounds.")
    yield ErrorInput(SampleInput(x, (ember.tensor([1.0, 2.0, 0.0], device=device), None, 1, -100)), RuntimeError,
                     r"expected target dtype to be Long or Byte, but got Float")


# ---------------------------------------------------------------- im2col / col2im
def _out_len(size, k, d, p, s):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _im2col_ref(x, kernel_size, dilation, padding, stride):
    batched = x.ndim == 4
    a = x if batched else x[None]
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_two, (kernel_size, dilation, padding, stride))
    N, C, H, W = a.shape
    oh, ow = _out_len(H, kh, dh, ph, sh), _out_len(W, kw, dw, pw, sw)
    p = np.zeros((N, C, H + 2 * ph, W + 2 * pw), dtype=a.dtype)
    p[:, :, ph:ph + H, pw:pw + W] = a
    cols = np.zeros((N, C, kh, kw, oh, ow), dtype=a.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = p[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
    r = cols.reshape(N, C * kh * kw, oh * ow)
    return r if batched else r[0]


def _col2im_ref(cols, output_size, kernel_size, dilation, padding, stride):
    batched = cols.ndim == 3
    c = cols if batched else cols[None]
    (H, W), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(_two, (output_size, kernel_size, dilation, padding, stride))
    N = c.shape[0]
    C = c.shape[1] // (kh * kw)
    oh, ow = _out_len(H, kh, dh, ph, sh), _out_len(W, kw, dw, pw, sw)
    c6 = _f64(c).reshape(N, C, kh, kw, oh, ow)
    p = np.zeros((N, C, H + 2 * ph, W + 2 * pw), dtype=c6.dtype)
    for i in range(kh):
        for j in range(kw):
            p[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += c6[:, :, i, j]
    r = p[:, :, ph:ph + H, pw:pw + W].astype(cols.dtype)
    return r if batched else r[0]


_WINDOWS = (("k=2", (2, 2), (1, 1), (0, 0), (1, 1)), ("k=(2, 3), stride 2, pad 1", (2, 3), (1, 1), (1, 1), (2, 2)),
            ("dilation 2", (2, 2), (2, 2), (0, 1), (1, 1)))


def _im2col_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    shapes = ((1, 2, 5, 5), (2, 3, 5, 4), (3, 6, 5))
    for (name, k, d, p, s), shp in zip(_WINDOWS, shapes):
        yield SampleInput(m(shp), (k, d, p, s), name=f"{name}, {len(shp)}-D")
    yield SampleInput(m((1, 2, 4, 4), nc=True), ((2, 2), (1, 1), (0, 0), (2, 2)), name="noncontiguous")
    yield SampleInput(m((0, 2, 4, 4)), ((2, 2), (1, 1), (0, 0), (1, 1)), name="empty batch")
    # the forms users write: kernels must receive pairs of ints all the same
    yield SampleInput(m((1, 2, 5, 5)), (2, 1, 1, 2), name="ints")
    yield SampleInput(m((2, 2, 5, 4)), ([2, 3], [1, 1], [1, 0], [2, 1]), name="lists")


def _col2im_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    for (name, k, d, p, s), (N, C, H, W) in zip(_WINDOWS, ((1, 2, 5, 5), (2, 3, 5, 4), (None, 2, 5, 5))):
        L = _out_len(H, k[0], d[0], p[0], s[0]) * _out_len(W, k[1], d[1], p[1], s[1])
        shp = ((N,) if N else ()) + (C * k[0] * k[1], L)
        yield SampleInput(m(shp), ((H, W), k, d, p, s), name=f"{name}, {len(shp)}-D")
    yield SampleInput(m((1, 8, 9), nc=True), ((4, 4), (2, 2), (1, 1), (0, 0), (1, 1)), name="noncontiguous")
    # the forms users write (F.fold(x, 4, 2)): kernels must receive pairs of ints all the same
    yield SampleInput(m((1, 8, 9)), (4, 2, 1, 0, 1), name="ints")
    yield SampleInput(m((2, 12, 4)), ([3, 4], [2, 3], [1, 1], [0, 0], [1, 1]), name="lists")


def _im2col_errors(op, device):
    x = make_tensor((1, 2, 4, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ((0, 2), (1, 1), (0, 0), (1, 1))), RuntimeError,
                     r"kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 2")
    yield ErrorInput(SampleInput(make_tensor((4, 4), device=device, seed=1), ((2, 2), (1, 1), (0, 0), (1, 1))),
                     RuntimeError, r"Expected 3D or 4D \(batch mode\) tensor with optional 0 dim batch size for input")


def _col2im_errors(op, device):
    x = make_tensor((1, 7, 9), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ((4, 4), (2, 2), (1, 1), (0, 0), (1, 1))), RuntimeError,
                     r"Expected size of input's dimension 1 to be divisible by the product of kernel_size")


# ---------------------------------------------------------------- max_pool2d_with_indices (+ backward)
def _pool_out(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    o = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1
    return o


def _maxpool_ref(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    two = lambda v: tuple(v) if isinstance(v, (tuple, list)) and len(v) == 2 else \
        (tuple(v) * 2 if isinstance(v, (tuple, list)) else (v, v))
    kh, kw = two(kernel_size)
    sh, sw = (kh, kw) if stride in ((), []) else two(stride)
    (ph, pw), (dh, dw) = two(padding), two(dilation)
    a = x if x.ndim == 4 else x[None]
    N, C, H, W = a.shape
    oh, ow = _pool_out(H, kh, sh, ph, dh, ceil_mode), _pool_out(W, kw, sw, pw, dw, ceil_mode)
    vals = np.empty((N, C, oh, ow), dtype=x.dtype)
    idx = np.empty((N, C, oh, ow), dtype=np.int64)
    flt = a.dtype.kind == "f"
    for n, c, i, j in np.ndindex(N, C, oh, ow):
        best, bi = None, -1
        for u in range(kh):
            for v in range(kw):
                r, q = i * sh - ph + u * dh, j * sw - pw + v * dw
                if 0 <= r < H and 0 <= q < W:
                    val = a[n, c, r, q]
                    if best is None or val > best or (flt and np.isnan(val) and not np.isnan(best)):
                        best, bi = val, r * W + q
        vals[n, c, i, j], idx[n, c, i, j] = best, bi
    if x.ndim == 3:
        vals, idx = vals[0], idx[0]
    return vals, idx


_POOLS = (("k=2", (2, 2), (), (0, 0), (1, 1), False), ("k=3, stride 2, pad 1", (3, 3), (2, 2), (1, 1), (1, 1), False),
          ("k=(2, 3), stride 1, dilation 2", (2, 3), (1, 1), (0, 1), (2, 2), False),
          ("ceil_mode", (2, 2), (2, 2), (0, 0), (1, 1), True))


def _maxpool_samples(op, device, dtype, requires_grad=False):
    shapes = ((1, 2, 4, 4), (2, 2, 5, 5), (3, 6, 7), (1, 1, 5, 5))
    k = 0
    for (name, ks, st, pd, dl, ceil), shp in zip(_POOLS, shapes):
        k += 1
        x = distinct(shp, device, dtype, seed_for(op, dtype, k), requires_grad)
        yield SampleInput(x, (ks, st, pd, dl, ceil), name=f"{name}, {len(shp)}-D")
    x = distinct((1, 2, 4, 6), device, dtype, seed_for(op, dtype, 10), requires_grad).transpose(2, 3)
    yield SampleInput(x, ((2, 2), (), (0, 0), (1, 1), False), name="transposed")
    yield SampleInput(ties((1, 2, 4, 4), device, dtype, seed_for(op, dtype, 11)), ((2, 2), (), (0, 0), (1, 1), False),
                      name="ties", output_process=values_only)
    if dtype.is_floating_point:
        yield SampleInput(with_nan((1, 1, 4, 4), device, dtype, seed_for(op, dtype, 12), where=(0, 5)),
                          ((2, 2), (), (0, 0), (1, 1), False), name="NaN", output_process=values_only)
    # the forms users write (nn.MaxPool2d(2), F.max_pool2d(x, 3, 2, 1), lists): kernels must receive
    # pairs of ints all the same, and the int[2] defaults expanded
    x = distinct((1, 2, 6, 6), device, dtype, seed_for(op, dtype, 13), requires_grad)
    yield SampleInput(x, (2,), name="int kernel_size, defaults")
    x = distinct((2, 1, 7, 7), device, dtype, seed_for(op, dtype, 14), requires_grad)
    yield SampleInput(x, (3, 2, 1, 1, False), name="ints")
    x = distinct((1, 2, 7, 8), device, dtype, seed_for(op, dtype, 15), requires_grad)
    yield SampleInput(x, ([2, 3], [1, 2], [0, 1], [2, 1], False), name="lists")
    x = distinct((1, 1, 6, 6), device, dtype, seed_for(op, dtype, 16), requires_grad)
    yield SampleInput(x, ([3, 3], [], [1, 1]), name="lists, empty stride")


def _maxpool_backward_ref(g, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
    a = x if x.ndim == 4 else x[None]
    gi = g if g.ndim == 4 else g[None]
    ii = indices if indices.ndim == 4 else indices[None]
    N, C, H, W = a.shape
    out = np.zeros((N, C, H * W))
    gf = _f64(gi).reshape(N, C, -1)
    for n, c in np.ndindex(N, C):
        np.add.at(out[n, c], ii[n, c].reshape(-1), gf[n, c])
    return out.reshape(x.shape).astype(x.dtype)


def _maxpool_backward_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    for s in _maxpool_samples(op, device, dtype):
        if s.output_process is not None:
            continue
        x = s.input.detach()
        vals, idx = ember._ops._nn.max_pool2d_with_indices(x, *s.args)
        args = tuple(s.args) + ((), 0, 1, False)[len(s.args) - 1:]   # the backward op has no defaults
        yield SampleInput(m(tuple(vals.shape)), (x,) + args + (idx,), name=s.name)


def _maxpool_errors(op, device):
    x = make_tensor((1, 2, 4, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ((2, 2), (), (2, 2), (1, 1), False)), RuntimeError,
                     r"pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and "
                     r"dilation=1")
    yield ErrorInput(SampleInput(make_tensor((4, 4), device=device, seed=1), ((2, 2),)), RuntimeError,
                     r"Expected 3D or 4D \(batch mode\) tensor with optional 0 dim batch size for input")
    yield ErrorInput(SampleInput(make_tensor((1, 1, 2, 2), device=device, seed=1), ((3, 3),)), RuntimeError,
                     r"Given input size: \(1x2x2\). Calculated output size: \(1x0x0\). Output size is too small")


# ---------------------------------------------------------------- constant_pad_nd / embedding
def _pad_ref(x, pad, value=0):
    pad = list(pad)
    out = x
    for k in range(len(pad) // 2):
        d = x.ndim - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        sl = [slice(None)] * x.ndim
        sl[d] = slice(max(-lo, 0), out.shape[d] - max(-hi, 0))
        out = out[tuple(sl)]
        widths = [(0, 0)] * x.ndim
        widths[d] = (max(lo, 0), max(hi, 0))
        out = np.pad(out, widths, constant_values=np.asarray(value).astype(x.dtype) if x.dtype.kind != "V" else value)
    return np.ascontiguousarray(out).astype(x.dtype)


def _pad_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    v = True if dtype.name == "bool" else (1.5 - 2j if dtype.is_complex else -2.5 if dtype.is_floating_point else 3)
    yield SampleInput(m((3, 4)), ([1, 2],), name="last dim")
    yield SampleInput(m((3, 4), t=True), ([1, 0, 2, 1], v), name="two dims, value")
    yield SampleInput(m((2, 3, 4), nc=True), ([-1, 1, 0, 2],), name="negative pad (crop)")
    yield SampleInput(m((5,)), ([0, 0],), name="zero pad")
    yield SampleInput(m((0, 3)), ([1, 1, 1, 1], v), name="empty input")
    yield SampleInput(m((3, 4)), ([],), name="no pad")


def _pad_errors(op, device):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ([1, 2, 3],)), RuntimeError, r"Length of pad must be even but instead it equals 3")
    yield ErrorInput(SampleInput(x, ([1] * 6,)), RuntimeError,
                     r"Length of pad should be no more than twice the number of dimensions of the input")


def _embedding_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((5, 3)), (m.idx((4,), 5),), name="1-D indices")
    yield SampleInput(m((5, 3), t=True), (m.idx((2, 3), 5),), name="transposed weight, 2-D indices")
    yield SampleInput(m((5, 3), nc=True), (m.idx((), 5, dtype=ember.int32),), name="noncontiguous, 0-dim int32")
    yield SampleInput(m((5, 3)), (m.idx((0,), 5),), name="empty indices")
    # the padding_idx row gets no gradient by definition, which finite differences cannot see
    yield SampleInput(m((5, 3), grad=False), (m.idx((4,), 5), 2), name="padding_idx (forward unchanged)")


def _embedding_errors(op, device):
    import ember
    w = make_tensor((5, 3), device=device, seed=1)
    yield ErrorInput(SampleInput(w, (ember.tensor([0.0], device=device),)), RuntimeError,
                     r"Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
                     r"Int; but got torch.(\w+\.)?FloatTensor instead \(while checking arguments for embedding\)")
    yield ErrorInput(SampleInput(w, (ember.tensor([5], device=device),)), IndexError, r"index out of range in self")


# ---------------------------------------------------------------- conv2d (+ backward)
def _conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    (sh, sw), (ph, pw), (dh, dw) = _two(stride), _two(padding), _two(dilation)
    batched = x.ndim == 4
    a = _f64(x if batched else x[None])
    O, Cg, kh, kw = w.shape
    cols = _im2col_ref(a, (kh, kw), (dh, dw), (ph, pw), (sh, sw))           # (N, C*kh*kw, L)
    N, C, H, W = a.shape
    oh, ow = _out_len(H, kh, dh, ph, sh), _out_len(W, kw, dw, pw, sw)
    cols = cols.reshape(N, groups, Cg * kh * kw, oh * ow)
    wg = _f64(w).reshape(groups, O // groups, Cg * kh * kw)
    r = np.einsum("gok,ngkl->ngol", wg, cols).reshape(N, O, oh, ow)
    if b is not None:
        r = r + _f64(b)[None, :, None, None]
    r = r.astype(x.dtype)
    return r if batched else r[0]


def _conv_cases():
    # name, input shape, weight shape, bias, stride, padding, dilation, groups
    return (("basic", (1, 2, 5, 5), (3, 2, 3, 3), True, (1, 1), (0, 0), (1, 1), 1),
            ("stride 2, pad 1", (2, 3, 6, 5), (4, 3, 3, 2), False, (2, 2), (1, 1), (1, 1), 1),
            ("dilation 2, groups 2", (1, 4, 6, 6), (6, 2, 2, 2), True, (1, 1), (1, 0), (2, 2), 2),
            ("depthwise", (1, 3, 5, 5), (3, 1, 3, 3), True, (1, 2), (1, 1), (1, 1), 3),
            ("1x1", (2, 3, 4, 4), (2, 3, 1, 1), True, (1, 1), (0, 0), (1, 1), 1),
            ("empty batch", (0, 2, 4, 4), (3, 2, 2, 2), True, (1, 1), (0, 0), (1, 1), 1),
            # the forms users write (stride=2, padding=[1, 1]): kernels must receive pairs of ints all the same
            ("ints", (1, 2, 6, 6), (3, 2, 3, 3), True, 2, 1, 1, 1),
            ("lists", (2, 2, 6, 7), (2, 2, 2, 3), False, [2, 1], [1, 0], [1, 2], 1))


def _conv_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    for name, xs, ws, bias, s, p, d, g in _conv_cases():
        x = m(xs, nc=name == "basic", low=-2, high=2)
        w = m(ws, t=name == "1x1", low=-2, high=2)
        b = m((ws[0],), low=-2, high=2) if bias else None
        yield SampleInput(x, (w, b, s, p, d, g), name=name)
    yield SampleInput(m((1, 2, 5, 5), low=-2, high=2), (m((3, 2, 2, 2), low=-2, high=2),), name="defaults")


def _conv_bwd_input_ref(go, w, input_size, stride, padding, dilation, groups):
    """The gradient of conv2d with respect to the input: the adjoint of im2col, per group."""
    N, C, H, W = input_size
    O, Cg, kh, kw = w.shape
    oh, ow = go.shape[-2:]
    gg = _f64(go).reshape(N, groups, O // groups, oh * ow)
    wg = _f64(w).reshape(groups, O // groups, Cg * kh * kw)
    cols = np.einsum("gok,ngol->ngkl", wg, gg).reshape(N, C * kh * kw, oh * ow)
    return _col2im_ref(cols, (H, W), (kh, kw), dilation, padding, stride).astype(go.dtype)


def _conv_bwd_weight_ref(go, x, weight_size, stride, padding, dilation, groups):
    O, Cg, kh, kw = weight_size
    N = x.shape[0]
    cols = _im2col_ref(_f64(x), (kh, kw), dilation, padding, stride)
    oh, ow = go.shape[-2:]
    cols = cols.reshape(N, groups, Cg * kh * kw, oh * ow)
    gg = _f64(go).reshape(N, groups, O // groups, oh * ow)
    r = np.einsum("ngol,ngkl->gok", gg, cols).reshape(O, Cg, kh, kw)
    return r.astype(go.dtype)


def _conv_bwd_samples(op, device, dtype, requires_grad=False, *, which):
    m = _Mk(op, device, dtype, requires_grad)
    for name, xs, ws, bias, s, p, d, g in _conv_cases():
        (sh, sw), (ph, pw), (dh, dw) = _two(s), _two(p), _two(d)
        oh = _out_len(xs[2], ws[2], dh, ph, sh)
        ow = _out_len(xs[3], ws[3], dw, pw, sw)
        go = m((xs[0], ws[0], oh, ow), nc=name == "basic", low=-2, high=2)
        if which == "input":
            yield SampleInput(go, (m(ws, low=-2, high=2), list(xs), s, p, d, g), name=name)
        else:
            yield SampleInput(go, (m(xs, t=name == "1x1", low=-2, high=2), list(ws), s, p, d, g), name=name)


def _conv_errors(op, device):
    import ember
    x = make_tensor((1, 2, 5, 5), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (make_tensor((3, 2, 3), device=device, seed=2),)), RuntimeError,
                     r"Expected 4-dimensional weight for 4-dimensional input \[1, 2, 5, 5\], but got")
    yield ErrorInput(SampleInput(x, (make_tensor((3, 2, 6, 6), device=device, seed=2),)), RuntimeError,
                     r"Calculated padded input size per channel: \(5 x 5\). Kernel size: \(6 x 6\). Kernel size "
                     r"can't be greater than actual input size")
    yield ErrorInput(SampleInput(x, (make_tensor((3, 2, 3, 3), device=device, seed=2), None, 1, 0, 1, 2)),
                     RuntimeError, r"Given groups=2, expected weight to be divisible by 2 at dimension 0")
    yield ErrorInput(SampleInput(x, (make_tensor((3, 2, 3, 3), device=device, dtype=ember.float64, seed=2),)),
                     RuntimeError, r"expected scalar type Float but found Double")
    xb = make_tensor((1, 2, 5, 5), device=device, dtype=ember.bool, seed=1)
    yield ErrorInput(SampleInput(xb, (make_tensor((3, 2, 3, 3), device=device, dtype=ember.bool, seed=2),),
                                 name="bool"), NotImplementedError, r"\"slow_conv2d_cpu\" not implemented for 'Bool'")
    xi = make_tensor((1, 2, 5, 5), device=device, dtype=ember.int32, seed=1)
    yield ErrorInput(SampleInput(xi, (make_tensor((3, 2, 2, 2), device=device, dtype=ember.int32, seed=2), None, 1, 0,
                                      2), name="int32 dilated"),
                     NotImplementedError, r"\"slow_conv_dilated<>\" not implemented for 'Int'")


# ---------------------------------------------------------------- _thnn_fused_lstm_cell (+ backward)
def _sig(a):
    return 1 / (1 + np.exp(-a))


def _lstm_cell_ref(ig, hg, cx, bi=None, bh=None):
    g = _f64(ig) + _f64(hg)
    for b in (bi, bh):
        if b is not None:
            g = g + _f64(b)
    H = g.shape[1] // 4
    i, f, c, o = _sig(g[:, :H]), _sig(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), _sig(g[:, 3 * H:])
    cy = f * _f64(cx) + i * c
    hy = o * np.tanh(cy)
    dt = ig.dtype
    return hy.astype(dt), cy.astype(dt), np.concatenate([i, f, c, o], 1).astype(dt)


def _hy_cy(result):
    """(hy, cy): the workspace is not differentiable (as ATen's), so gradcheck leaves it out."""
    return tuple(result[:2])


def _lstm_cell_samples(op, device, dtype, requires_grad=False):
    m = partial(_Mk(op, device, dtype, requires_grad), low=-2, high=2)
    # value samples compare all three outputs; gradient samples hy and cy only
    proc = _hy_cy if requires_grad else None
    yield SampleInput(m((3, 8)), (m((3, 8)), m((3, 2)), m((8,)), m((8,))), name="both biases", output_process=proc)
    yield SampleInput(m((4, 12)), (m((4, 12)), m((4, 3))), name="no bias", output_process=proc)
    yield SampleInput(m((2, 8), nc=True), (m((2, 8), t=True), m((2, 2), nc=True), m((8,)), None),
                      name="non-contiguous, input bias only", output_process=proc)
    yield SampleInput(m((1, 4)), (m((1, 4)), m((1, 1)), None, m((4,))), name="hidden 1, hidden bias only",
                      output_process=proc)
    yield SampleInput(m((0, 8)), (m((0, 8)), m((0, 2))), name="empty batch", output_process=proc)


def _lstm_cell_errors(op, device):
    import ember
    mk = lambda shape, seed, **kw: make_tensor(shape, device=device, seed=seed, **kw)  # noqa: E731
    yield ErrorInput(SampleInput(mk((3, 6), 1), (mk((3, 6), 2), mk((3, 2), 3))), RuntimeError,
                     r"expected input_gates of shape \(N, 4 \* hidden_size\), got \[3, 6\]")
    yield ErrorInput(SampleInput(mk((3, 8), 1), (mk((2, 8), 2), mk((3, 2), 3))), RuntimeError,
                     r"hidden_gates of shape \[2, 8\] does not match input_gates of shape \[3, 8\]")
    yield ErrorInput(SampleInput(mk((3, 8), 1), (mk((3, 8), 2), mk((3, 3), 3))), RuntimeError,
                     r"expected cx of shape \[3, 2\], got \[3, 3\]")
    yield ErrorInput(SampleInput(mk((3, 8), 1), (mk((3, 8), 2), mk((3, 2), 3), mk((4,), 4))), RuntimeError,
                     r"expected input_bias of shape \[8\], got \[4\]")
    yield ErrorInput(SampleInput(mk((3, 8), 1), (mk((3, 8), 2, dtype=ember.float64), mk((3, 2), 3))),
                     RuntimeError, r"expected hidden_gates to have dtype Float, got Double")
    yield ErrorInput(SampleInput(mk((3, 8), 1, dtype=ember.int64), (mk((3, 8), 2, dtype=ember.int64),
                                                                   mk((3, 2), 3, dtype=ember.int64))),
                     NotImplementedError, r"\"_thnn_fused_lstm_cell\" not implemented for 'Long'")


def _lstm_cell_backward_ref(ghy, gcy, cx, cy, ws, has_bias):
    w, cx64, tc = _f64(ws), _f64(cx), np.tanh(_f64(cy))
    H = w.shape[1] // 4
    i, f, g, o = w[:, :H], w[:, H:2 * H], w[:, 2 * H:3 * H], w[:, 3 * H:]
    ghy = np.zeros_like(cx64) if ghy is None else _f64(ghy)
    gc = (np.zeros_like(cx64) if gcy is None else _f64(gcy)) + ghy * o * (1 - tc ** 2)
    gates = np.concatenate([gc * g * i * (1 - i), gc * cx64 * f * (1 - f), gc * i * (1 - g ** 2),
                            ghy * tc * o * (1 - o)], 1)
    gb = gates.sum(0) if has_bias else np.zeros((0,))
    dt = ws.dtype
    return gates.astype(dt), (gc * f).astype(dt), gb.astype(dt)


def _lstm_cell_backward_samples(op, device, dtype, requires_grad=False):
    import ember
    m = partial(_Mk(op, device, dtype, requires_grad), low=-2, high=2)
    for k, (n, h, has_bias, grads) in enumerate(((3, 2, True, "both"), (4, 3, False, "hy"), (2, 2, True, "cy"),
                                                 (2, 1, False, "none"), (0, 2, True, "both"))):
        cx = m((n, h))
        _, cy, ws = ember.nn._fused_rnn.fused_lstm_cell(m((n, 4 * h)), m((n, 4 * h)), cx)
        ghy = m((n, h)) if grads in ("both", "hy") else None
        gcy = m((n, h)) if grads in ("both", "cy") else None
        yield SampleInput(ghy, (gcy, cx, cy, ws, has_bias), name=f"N={n}, H={h}, bias {has_bias}, grads {grads}")


# ---------------------------------------------------------------- _lstm_layer (+ backward)
def _lstm_layer_states(ig, hx, cx, w, reverse):
    """float64 (output, hy, cy, cell_states, workspace, the hidden state each step started from) of an LSTM layer."""
    ig, h, c, w = _f64(ig), _f64(hx), _f64(cx), _f64(w)
    steps, n, g = ig.shape
    H = g // 4
    out, cs, ws, prev = (np.zeros((steps, n, k)) for k in (H, H, g, H))
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        gates = ig[t] + h @ w.T
        i, f, cg, o = _sig(gates[:, :H]), _sig(gates[:, H:2 * H]), np.tanh(gates[:, 2 * H:3 * H]), _sig(gates[:, 3 * H:])
        prev[t] = h
        c = f * c + i * cg
        h = o * np.tanh(c)
        out[t], cs[t], ws[t] = h, c, np.concatenate([i, f, cg, o], 1)
    return out, h, c, cs, ws, prev


def _lstm_layer_ref(ig, hx, cx, w, reverse=False):
    dt = ig.dtype
    return tuple(a.astype(dt) for a in _lstm_layer_states(ig, hx, cx, w, reverse)[:5])


def _lstm_layer_samples(op, device, dtype, requires_grad=False):
    m = partial(_Mk(op, device, dtype, requires_grad), low=-1, high=1)
    # cell_states and the workspace are not differentiable (as the fused cell's workspace)
    proc = (lambda r: tuple(r[:3])) if requires_grad else None
    yield SampleInput(m((4, 3, 8)), (m((3, 2)), m((3, 2)), m((8, 2))), name="L=4, N=3, H=2", output_process=proc)
    yield SampleInput(m((3, 2, 12)), (m((2, 3)), m((2, 3)), m((12, 3)), True), name="reverse", output_process=proc)
    yield SampleInput(m((2, 3, 8), nc=True), (m((3, 2), t=True), m((3, 2), nc=True), m((8, 2), t=True)),
                      name="non-contiguous", output_process=proc)
    yield SampleInput(m((0, 2, 8)), (m((2, 2)), m((2, 2)), m((8, 2))), name="no steps", output_process=proc)
    yield SampleInput(m((3, 0, 8)), (m((0, 2)), m((0, 2)), m((8, 2))), name="empty batch", output_process=proc)


def _lstm_layer_errors(op, device):
    import ember
    mk = lambda shape, seed, **kw: make_tensor(shape, device=device, seed=seed, **kw)  # noqa: E731
    yield ErrorInput(SampleInput(mk((2, 3, 6), 1), (mk((3, 2), 2), mk((3, 2), 3), mk((6, 2), 4))), RuntimeError,
                     r"expected input_gates of shape \(L, N, 4 \* hidden_size\), got \[2, 3, 6\]")
    yield ErrorInput(SampleInput(mk((2, 3, 8), 1), (mk((3, 2), 2), mk((3, 3), 3), mk((8, 2), 4))), RuntimeError,
                     r"expected cx of shape \[3, 2\], got \[3, 3\]")
    yield ErrorInput(SampleInput(mk((2, 3, 8), 1), (mk((3, 2), 2), mk((3, 2), 3), mk((8, 3), 4))), RuntimeError,
                     r"expected weight_hh of shape \[8, 2\], got \[8, 3\]")
    yield ErrorInput(SampleInput(mk((2, 3, 8), 1), (mk((3, 2), 2), mk((3, 2), 3), mk((8, 2), 4, dtype=ember.float64))),
                     RuntimeError, r"expected weight_hh to have dtype Float, got Double")
    yield ErrorInput(SampleInput(mk((2, 3, 8), 1, dtype=ember.int64), (mk((3, 2), 2, dtype=ember.int64),
                                 mk((3, 2), 3, dtype=ember.int64), mk((8, 2), 4, dtype=ember.int64))),
                     NotImplementedError, r"\"_lstm_layer\" not implemented for 'Long'")


def _lstm_layer_backward_ref(go, ghy, gcy, hx, cx, w, out, cs, ws, reverse):
    dt = ws.dtype
    w64, cs64, ws64, cx64, out64 = _f64(w), _f64(cs), _f64(ws), _f64(cx), _f64(out)
    steps, n, g = ws64.shape
    H = g // 4
    prev = np.zeros((steps, n, H))
    dh = np.zeros((n, H)) if ghy is None else _f64(ghy)
    dc = np.zeros((n, H)) if gcy is None else _f64(gcy)
    grads = np.zeros((steps, n, g))
    order = list(range(steps - 1, -1, -1) if reverse else range(steps))
    for k in range(steps - 1, -1, -1):
        t = order[k]
        prev[t] = _f64(hx) if k == 0 else out64[order[k - 1]]
        if go is not None:
            dh = dh + _f64(go)[t]
        i, f, cg, o = (ws64[t][:, j * H:(j + 1) * H] for j in range(4))
        tc = np.tanh(cs64[t])
        c_prev = cx64 if k == 0 else cs64[order[k - 1]]
        gc = dc + dh * o * (1 - tc ** 2)
        grads[t] = np.concatenate([gc * cg * i * (1 - i), gc * c_prev * f * (1 - f), gc * i * (1 - cg ** 2),
                                   dh * tc * o * (1 - o)], 1)
        dc = gc * f
        dh = grads[t] @ w64
    gw = grads.reshape(-1, g).T @ prev.reshape(-1, H)
    return grads.astype(dt), dh.astype(dt), dc.astype(dt), gw.astype(dt)


def _lstm_layer_backward_samples(op, device, dtype, requires_grad=False):
    import ember
    m = partial(_Mk(op, device, dtype, requires_grad), low=-1, high=1)
    for steps, n, h, reverse, grads in ((4, 3, 2, False, "all"), (3, 2, 3, True, "output"), (2, 2, 2, False, "hy cy"),
                                        (3, 1, 2, True, "cy"), (0, 2, 2, False, "all")):
        hx, cx, w = m((n, h)), m((n, h)), m((4 * h, h))
        out, _, _, cs, ws = ember.nn._lstm_layer.lstm_layer(m((steps, n, 4 * h)), hx, cx, w, reverse)
        go = m((steps, n, h)) if grads in ("all", "output") else None
        ghy = m((n, h)) if grads in ("all", "hy cy") else None
        gcy = m((n, h)) if grads in ("all", "hy cy", "cy") else None
        yield SampleInput(go, (ghy, gcy, hx, cx, w, out, cs, ws, reverse),
                          name=f"L={steps}, N={n}, H={h}, reverse {reverse}, grads {grads}")


# ---------------------------------------------------------------- native_layer_norm (+ backward)
def _layer_norm_stats(x, ns, eps):
    x = _f64(x)
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    mean = x.mean(axis=axes, keepdims=True) if x.size else np.zeros(x.shape[:x.ndim - len(ns)] + (1,) * len(ns))
    with np.errstate(all="ignore"):
        rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    return x, axes, mean, rstd


def _layer_norm_ref(x, ns, w, b, eps):
    dt = x.dtype
    x64, _, mean, rstd = _layer_norm_stats(x, ns, eps)
    if not math.prod(ns):
        mean, rstd = np.zeros(mean.shape), np.full(rstd.shape, np.nan)
    y = (x64 - mean) * rstd * (1 if w is None else _f64(w)) + (0 if b is None else _f64(b))
    return y.astype(dt), mean.astype(dt), rstd.astype(dt)


def _layer_norm_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    proc = (lambda r: r[0]) if requires_grad else None      # mean and rstd are not differentiable
    yield SampleInput(m((3, 4)), ([4], m((4,)), m((4,)), 1e-5), name="2-D, affine", output_process=proc)
    yield SampleInput(m((2, 3, 4)), ([3, 4], m((3, 4)), None, 1e-3), name="two normalized dims, weight only",
                      output_process=proc)
    yield SampleInput(m((2, 5, 3), nc=True), ([3], None, m((3,)), 1e-5), name="non-contiguous, bias only",
                      output_process=proc)
    yield SampleInput(m((6,)), ([6], None, None, 0.1), name="1-D, no affine, eps 0.1", output_process=proc)
    yield SampleInput(m((0, 4)), ([4], m((4,)), m((4,)), 1e-5), name="no rows", output_process=proc)


def _layer_norm_errors(op, device):
    import ember
    mk = lambda shape, seed, **kw: make_tensor(shape, device=device, seed=seed, **kw)  # noqa: E731
    yield ErrorInput(SampleInput(mk((2, 3), 1), ([4], None, None, 1e-5)), RuntimeError,
                     r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but got input of size\[2, 3\]")
    yield ErrorInput(SampleInput(mk((2, 3), 1), ([3], mk((2,), 2), None, 1e-5)), RuntimeError,
                     r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[2\]")
    yield ErrorInput(SampleInput(mk((2, 3), 1, dtype=ember.int64), ([3], None, None, 1e-5)), NotImplementedError,
                     r"\"LayerNormKernelImpl\" not implemented for 'Long'")


def _layer_norm_backward_ref(g, x, ns, mean, rstd, w):
    dt = x.dtype
    x64, axes, _, _ = _layer_norm_stats(x, ns, 0)
    m64, r64, g64 = _f64(mean), _f64(rstd), _f64(g)
    lead = tuple(range(x64.ndim - len(ns)))
    xhat = (x64 - m64) * r64
    gy = g64 * (1 if w is None else _f64(w))
    gi = r64 * (gy - gy.mean(axis=axes, keepdims=True) - xhat * (gy * xhat).mean(axis=axes, keepdims=True)) \
        if x64.size else np.zeros(x64.shape)
    return gi.astype(dt), (g64 * xhat).sum(axis=lead).astype(dt), g64.sum(axis=lead).astype(dt)


def _layer_norm_backward_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    for shape, ns, affine in (((3, 4), [4], True), ((2, 3, 4), [3, 4], False), ((4, 2, 3), [3], True),
                              ((0, 4), [4], True)):
        x = m(shape)
        w = m(tuple(ns)) if affine else None
        _, mean, rstd = ember.nn._layer_norm.native_layer_norm(x, ns, w, None, 1e-5)
        yield SampleInput(m(shape), (x, ns, mean, rstd, w), name=f"{shape} over {ns}, weight {affine}")


def _gru_cell_ref(ig, hg, hx, bi=None, bh=None):
    dt = ig.dtype
    ig, hg, hx = _f64(ig) + (0 if bi is None else _f64(bi)), _f64(hg) + (0 if bh is None else _f64(bh)), _f64(hx)
    H = hx.shape[1]
    r, z = _sig(ig[:, :H] + hg[:, :H]), _sig(ig[:, H:2 * H] + hg[:, H:2 * H])
    hn = hg[:, 2 * H:]
    n = np.tanh(ig[:, 2 * H:] + r * hn)
    return (n + z * (hx - n)).astype(dt), np.concatenate([r, z, n, hx, hn], 1).astype(dt)


def _gru_cell_samples(op, device, dtype, requires_grad=False):
    m = partial(_Mk(op, device, dtype, requires_grad), low=-2, high=2)
    proc = (lambda r: r[0]) if requires_grad else None      # the workspace is not differentiable
    yield SampleInput(m((3, 6)), (m((3, 6)), m((3, 2)), m((6,)), m((6,))), name="both biases", output_process=proc)
    yield SampleInput(m((4, 9)), (m((4, 9)), m((4, 3))), name="no bias", output_process=proc)
    yield SampleInput(m((2, 6), nc=True), (m((2, 6), t=True), m((2, 2), nc=True), None, m((6,))),
                      name="non-contiguous, hidden bias only", output_process=proc)
    yield SampleInput(m((0, 6)), (m((0, 6)), m((0, 2))), name="empty batch", output_process=proc)


def _gru_cell_errors(op, device):
    mk = lambda shape, seed: make_tensor(shape, device=device, seed=seed)  # noqa: E731
    yield ErrorInput(SampleInput(mk((3, 8), 1), (mk((3, 8), 2), mk((3, 2), 3))), RuntimeError,
                     r"expected input_gates of shape \(N, 3 \* hidden_size\), got \[3, 8\]")
    yield ErrorInput(SampleInput(mk((3, 6), 1), (mk((3, 6), 2), mk((2, 2), 3))), RuntimeError,
                     r"expected hx of shape \[3, 2\], got \[2, 2\]")
    yield ErrorInput(SampleInput(mk((3, 6), 1), (mk((3, 6), 2), mk((3, 2), 3), None, mk((3,), 4))), RuntimeError,
                     r"expected hidden_bias of shape \[6\], got \[3\]")


def _gru_cell_backward_ref(ghy, ws, has_bias):
    w, g = _f64(ws), _f64(ghy)
    H = g.shape[1]
    r, z, n, hx, hn = (w[:, k * H:(k + 1) * H] for k in range(5))
    gn = g * (1 - z) * (1 - n ** 2)
    gz = g * (hx - n) * z * (1 - z)
    gr = gn * hn * r * (1 - r)
    gi, gh = np.concatenate([gr, gz, gn], 1), np.concatenate([gr, gz, gn * r], 1)
    bi, bh = (gi.sum(0), gh.sum(0)) if has_bias else (np.zeros((0,)), np.zeros((0,)))
    dt = ws.dtype
    return tuple(a.astype(dt) for a in (gi, gh, g * z, bi, bh))


def _gru_cell_backward_samples(op, device, dtype, requires_grad=False):
    import ember
    m = partial(_Mk(op, device, dtype, requires_grad), low=-2, high=2)
    for n, h, has_bias in ((3, 2, True), (4, 3, False), (0, 2, True)):
        _, ws = ember.nn._fused_rnn.fused_gru_cell(m((n, 3 * h)), m((n, 3 * h)), m((n, h)))
        yield SampleInput(m((n, h)), (ws, has_bias), name=f"N={n}, H={h}, bias {has_bias}")


def _build():
    import ember
    from ember._ops import _nn as N, _conv as CV
    ops = []
    add = ops.append
    lowtol = {"float16": (2e-3, 5e-3), "bfloat16": (1.6e-2, 5e-2), "float32": (1e-5, 1e-5)}
    add(OpInfo("linear", op=N.linear, ref=upcast(_linear_ref), dtypes=NUMERIC, sample_inputs=_linear_samples,
               error_inputs=_linear_errors, supports_autograd=True, supports_out=True, tolerances=lowtol))
    add(OpInfo("relu", op=N.relu, ref=upcast(_relu_ref), dtypes=REAL, sample_inputs=_relu_samples, supports_autograd=True,
               supports_out=True, inplace=lambda t: ember.relu_(t), exact=True))
    add(OpInfo("softmax", op=N.softmax, ref=upcast(_softmax_ref), dtypes=FLOATING, sample_inputs=_softmax_samples,
               error_inputs=_softmax_errors, supports_autograd=True, supports_out=True))
    add(OpInfo("_safe_softmax", op=N._safe_softmax, ref=upcast(_safe_softmax_ref), dtypes=FLOATING,
               sample_inputs=_safe_softmax_samples, error_inputs=_softmax_errors, supports_autograd=True,
               supports_out=True))
    add(OpInfo("log_softmax", op=N.log_softmax, ref=upcast(partial(_softmax_ref, log=True)), dtypes=FLOATING,
               sample_inputs=_softmax_samples, error_inputs=_softmax_errors, supports_autograd=True,
               supports_out=True, tolerances={"float16": (1e-3, 5e-3), "bfloat16": (1.6e-2, 5e-2)}))
    add(OpInfo("threshold_backward", op=N.threshold_backward, ref=upcast(_threshold_backward_ref), dtypes=REAL,
               sample_inputs=_threshold_backward_samples, error_inputs=_threshold_backward_errors,
               supports_autograd=True, supports_out=True, exact=True))
    for name, log in (("_log_softmax_backward_data", True), ("_softmax_backward_data", False)):
        add(OpInfo(name, op=getattr(N, name), ref=partial(_softmax_backward_ref, log=log), dtypes=FLOATING,
                   sample_inputs=partial(_softmax_backward_samples, log=log), error_inputs=_softmax_backward_errors,
                   supports_autograd=True, supports_out=True,
                   tolerances={"float16": (2e-3, 5e-3), "bfloat16": (1.6e-2, 5e-2), "float32": (1e-5, 1e-5)}))
    add(OpInfo("nll_loss", op=N.nll_loss, ref=upcast(_nll_ref), dtypes=FLOATING, sample_inputs=_nll_samples,
               error_inputs=_nll_errors, supports_autograd=True, supports_out=True, tolerances=lowtol))
    add(OpInfo("nll_loss_backward", op=N.nll_loss_backward, ref=upcast(_nll_backward_ref), dtypes=FLOATING,
               sample_inputs=_nll_backward_samples, supports_out=True, tolerances=lowtol))
    add(OpInfo("im2col", op=N.im2col, ref=_im2col_ref, dtypes=ALL_DTYPES, sample_inputs=_im2col_samples,
               error_inputs=_im2col_errors, supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("col2im", op=N.col2im, ref=upcast(_col2im_ref), dtypes=NUMERIC, sample_inputs=_col2im_samples,
               error_inputs=_col2im_errors, supports_autograd=True, supports_out=True, tolerances=lowtol))
    add(OpInfo("max_pool2d_with_indices", op=N.max_pool2d_with_indices, ref=upcast(_maxpool_ref), dtypes=REAL,
               sample_inputs=_maxpool_samples, error_inputs=_maxpool_errors, supports_autograd=True,
               supports_out=True, exact=True))
    add(OpInfo("max_pool2d_with_indices_backward", op=N.max_pool2d_with_indices_backward,
               ref=upcast(_maxpool_backward_ref), dtypes=FLOATING, sample_inputs=_maxpool_backward_samples,
               supports_out=True, tolerances=lowtol))
    add(OpInfo("constant_pad_nd", op=N.constant_pad_nd, ref=_pad_ref, dtypes=ALL_DTYPES, sample_inputs=_pad_samples,
               error_inputs=_pad_errors, supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("embedding", op=N.embedding, ref=lambda w, i, *a, **k: w[i], dtypes=ALL_DTYPES,
               sample_inputs=_embedding_samples, error_inputs=_embedding_errors, supports_autograd=True,
               supports_out=True, exact=True))
    rtol = {"float16": (2e-3, 5e-3), "bfloat16": (1.6e-2, 5e-2), "float32": (1e-5, 1e-5)}
    add(OpInfo("_thnn_fused_lstm_cell", op=ember.nn._fused_rnn.fused_lstm_cell, ref=upcast(_lstm_cell_ref),
               dtypes=FLOATING, sample_inputs=_lstm_cell_samples, error_inputs=_lstm_cell_errors,
               supports_autograd=True, supports_out=True, tolerances=rtol))
    add(OpInfo("_thnn_fused_lstm_cell_backward_impl", op=ember.nn._fused_rnn.fused_lstm_cell_backward,
               ref=upcast(_lstm_cell_backward_ref), dtypes=FLOATING, sample_inputs=_lstm_cell_backward_samples,
               supports_out=True, tolerances=rtol))
    ltol = {"float16": (5e-3, 1e-2), "bfloat16": (3e-2, 1e-1), "float32": (1e-5, 1e-5)}
    add(OpInfo("_lstm_layer", op=ember.nn._lstm_layer.lstm_layer, ref=upcast(_lstm_layer_ref), dtypes=FLOATING,
               sample_inputs=_lstm_layer_samples, error_inputs=_lstm_layer_errors, supports_autograd=True,
               supports_out=True, tolerances=ltol))
    add(OpInfo("_lstm_layer_backward", op=ember.nn._lstm_layer.lstm_layer_backward,
               ref=upcast(_lstm_layer_backward_ref), dtypes=FLOATING, sample_inputs=_lstm_layer_backward_samples,
               supports_out=True, tolerances=ltol))
    ntol = {"float16": (3e-3, 1e-2), "bfloat16": (2e-2, 1e-1), "float32": (1e-5, 1e-5)}
    add(OpInfo("native_layer_norm", op=ember.nn._layer_norm.native_layer_norm, ref=upcast(_layer_norm_ref),
               dtypes=FLOATING, sample_inputs=_layer_norm_samples, error_inputs=_layer_norm_errors,
               supports_autograd=True, supports_out=True, tolerances=ntol))
    add(OpInfo("_layer_norm_backward", op=ember.nn._layer_norm.layer_norm_backward,
               ref=upcast(_layer_norm_backward_ref), dtypes=FLOATING, sample_inputs=_layer_norm_backward_samples,
               supports_out=True, tolerances=ntol))
    add(OpInfo("_thnn_fused_gru_cell", op=ember.nn._fused_rnn.fused_gru_cell, ref=upcast(_gru_cell_ref),
               dtypes=FLOATING, sample_inputs=_gru_cell_samples, error_inputs=_gru_cell_errors,
               supports_autograd=True, supports_out=True, tolerances=rtol))
    add(OpInfo("_thnn_fused_gru_cell_backward", op=ember.nn._fused_rnn.fused_gru_cell_backward,
               ref=upcast(_gru_cell_backward_ref), dtypes=FLOATING, sample_inputs=_gru_cell_backward_samples,
               supports_out=True, tolerances=rtol))
    ctol = {"float16": (3e-3, 1e-2), "bfloat16": (2e-2, 1e-1), "float32": (1e-5, 1e-5)}
    # every dtype but bool, as PyTorch's cpu kernel; int64 stands for the integers (int8 wraps around, as in C)
    add(OpInfo("conv2d", op=CV.conv2d, ref=upcast(_conv_ref), dtypes=FLOATING + ("int64",), sample_inputs=_conv_samples,
               error_inputs=_conv_errors, supports_autograd=True, supports_out=True, tolerances=ctol))
    add(OpInfo("conv2d_backward_input", op=CV.conv2d_backward_input, ref=upcast(_conv_bwd_input_ref),
               dtypes=FLOATING, sample_inputs=partial(_conv_bwd_samples, which="input"), supports_out=True,
               tolerances=ctol))
    add(OpInfo("conv2d_backward_weight", op=CV.conv2d_backward_weight, ref=upcast(_conv_bwd_weight_ref),
               dtypes=FLOATING, sample_inputs=partial(_conv_bwd_samples, which="weight"), supports_out=True,
               tolerances=ctol))
    return ops


OPINFOS = _build()
op_db = OPINFOS
