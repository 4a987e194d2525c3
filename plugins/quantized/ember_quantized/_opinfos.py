"""Op-database entries of ``ember.ops.quantized`` (returned by the plugin's ``ember_opinfos`` hook).

Each entry's ``check`` compares the op's integers with a numpy reference: dequantize the inputs,
compute the float result (exact integer GEMM / convolution for linear and conv2d), requantise
with PyTorch's rounding. Ops that only move integers (relu, max_pool2d, flatten) must match
exactly; requantising ops within one unit, as PyTorch's own kernels differ from their float
definition by one unit on ties.
"""
from __future__ import annotations

import numpy as np

import ember
from ember.testing import ErrorInput, OpInfo, SampleInput, make_tensor
from ember.testing.opdb.quantized import assert_quantized, np_dequantize, np_quantize, q_numpy

ALL_Q = ("qint8", "quint8", "qint32")
ACT_Q = ("qint8", "quint8")


def _q(x, dtype, scale=None, zp=None):
    """``x`` quantized per tensor to ``dtype`` with qparams covering its range."""
    if scale is None:
        lo, hi = float(x.min().item()) if x.numel() else 0.0, float(x.max().item()) if x.numel() else 1.0
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        if dtype.name == "qint32":
            scale, zp = max(hi - lo, 1e-3) / 1000.0, 0
        else:
            qmin, qmax = (0, 255) if dtype.name == "quint8" else (-128, 127)
            scale = max(hi - lo, 1e-3) / (qmax - qmin)
            zp = int(max(qmin, min(qmax, round(qmin - lo / scale))))
    return ember.quantize_per_tensor(x, float(scale), int(zp), dtype)


def _out_qparams(dtype, scale):
    zp = {"qint8": 3, "quint8": 120, "qint32": -5}[dtype.name]
    return float(scale), zp


def _tol(device):
    from ._kernels import has_f64
    return 1 if has_f64(device) else 2


# ---------------------------------------------------------------- binary ops
def _binary_samples(op, device, dtype, requires_grad=False):
    for i, (sa, sb, name) in enumerate((((3, 4), (3, 4), "same shape"), ((2, 3, 4), (4,), "broadcast"),
                                        ((), (), "0-dim"), ((0, 3), (0, 3), "empty"),
                                        ((4, 3), (4, 3), "non-contiguous"))):
        nc = name == "non-contiguous"
        a = _q(make_tensor(sa, device=device, seed=i, noncontiguous=nc), dtype)
        b = _q(make_tensor(sb, device=device, seed=i + 50, low=-4, high=4), dtype)
        if name == "non-contiguous":
            b = b.t().contiguous().t() if b.dim() == 2 else b
        yield SampleInput(a, (b, *_out_qparams(dtype, 0.15)), name=name)


def _binary_check(fn):
    def check(sample, result, cpu_result):
        qa = sample.input
        qb, scale, zp = sample.args
        y = fn(np_dequantize(qa), np_dequantize(qb))
        fused = _tol(qa.device) == 1
        assert_quantized(result, np_quantize(y, scale, zp, qa.dtype.name, fused), dtype_name=qa.dtype.name,
                         qparams=(scale, zp), tol=_tol(qa.device))
        assert result.device == qa.device
    return check


def _mixed_errors(op, device):
    q = _q(make_tensor((3,), device=device), ember.quint8)
    f = make_tensor((3,), device=device)
    yield ErrorInput(SampleInput(q, (f, 0.1, 0)), NotImplementedError,
                     r"argument 'qb' must be a quantized tensor, but it has dtype ember\.float32")
    yield ErrorInput(SampleInput(q, (_q(f, ember.qint8), 0.1, 0)), RuntimeError,
                     r"both inputs must have the same dtype")
    yield ErrorInput(SampleInput(q, (q, -0.1, 0)), RuntimeError, r"output scale must be a positive number, got -0\.1")
    yield ErrorInput(SampleInput(q, (q, 0.1, 300)), RuntimeError, r"output zero_point 300 is outside \[0, 255\]")


# ---------------------------------------------------------------- relu / flatten / max_pool2d (integers only)
def _unary_samples(op, device, dtype, requires_grad=False):
    from ember.testing.opdb.quantized import sample_qtensors
    for name, q in sample_qtensors(device, dtype, seed=90):
        yield SampleInput(q, name=name)


def _relu_check(sample, result, cpu_result):
    q = sample.input
    ints, _, z = q_numpy(q)
    assert_quantized(result, np.maximum(ints.astype(np.int64), z), dtype_name=q.dtype.name)
    assert result.qscheme() == q.qscheme()


def _flatten_samples(op, device, dtype, requires_grad=False):
    for i, (shape, args) in enumerate((((2, 3, 4), ()), ((2, 3, 4), (1,)), ((2, 3, 4, 5), (1, 2)), ((), ()))):
        yield SampleInput(_q(make_tensor(shape, device=device, seed=i), dtype), args, name=f"{shape} {args}")


def _flatten_check(sample, result, cpu_result):
    q = sample.input
    start = sample.args[0] if sample.args else 0
    end = sample.args[1] if len(sample.args) > 1 else -1
    ints = q.int_repr().cpu().numpy()
    n = ints.ndim
    if n == 0:
        exp = ints.reshape(1)
    else:
        s, e = start % n, end % n
        exp = ints.reshape(ints.shape[:s] + (-1,) + ints.shape[e + 1:])
    assert_quantized(result, exp, dtype_name=q.dtype.name, qparams=(q.q_scale(), q.q_zero_point()))
    assert result.untyped_storage() is q.untyped_storage(), "flatten of a contiguous tensor must be a view"


def _pool_samples(op, device, dtype, requires_grad=False):
    cases = [((2, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
             ((1, 2, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1), False),
             ((3, 6, 6), (3, 2), (1, 2), (1, 0), (1, 1), True),
             ((1, 1, 9, 9), (2, 2), (2, 2), (0, 0), (2, 2), False)]
    for i, (shape, k, s, p, d, ceil) in enumerate(cases):
        q = _q(make_tensor(shape, device=device, seed=i), dtype)
        yield SampleInput(q, (k, s, p, d, ceil), name=f"{shape} k={k} s={s} p={p} d={d} ceil={ceil}")


def _np_pool_out(n, k, s, p, d, ceil):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def _maxpool_check(sample, result, cpu_result):
    q = sample.input
    k, s, p, d, ceil = sample.args
    ints = q.int_repr().cpu().numpy().astype(np.int64)
    batched = ints.ndim == 4
    x = ints if batched else ints[None]
    N, C, H, W = x.shape
    oh, ow = _np_pool_out(H, k[0], s[0], p[0], d[0], ceil), _np_pool_out(W, k[1], s[1], p[1], d[1], ceil)
    out = np.full((N, C, oh, ow), np.iinfo(np.int64).min)
    for i in range(oh):
        for j in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    r, c = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= r < H and 0 <= c < W:
                        out[:, :, i, j] = np.maximum(out[:, :, i, j], x[:, :, r, c])
    assert_quantized(result, out if batched else out[0], dtype_name=q.dtype.name,
                     qparams=(q.q_scale(), q.q_zero_point()))


def _aap_samples(op, device, dtype, requires_grad=False):
    for i, (shape, out) in enumerate((((2, 3, 8, 8), (2, 2)), ((1, 2, 7, 5), (3, 2)), ((3, 5, 5), (1, 1)),
                                      ((1, 1, 4, 4), (4, 4)))):
        yield SampleInput(_q(make_tensor(shape, device=device, seed=i), dtype), (out,), name=f"{shape} -> {out}")


def _aap_check(sample, result, cpu_result):
    q = sample.input
    oh, ow = sample.args[0]
    x = np_dequantize(q)
    batched = x.ndim == 4
    x = x if batched else x[None]
    H, W = x.shape[-2:]
    y = np.zeros(x.shape[:2] + (oh, ow), np.float64)
    for i in range(oh):
        r0, r1 = (i * H) // oh, -(-((i + 1) * H) // oh)
        for j in range(ow):
            c0, c1 = (j * W) // ow, -(-((j + 1) * W) // ow)
            y[:, :, i, j] = x[:, :, r0:r1, c0:c1].astype(np.float64).mean(axis=(2, 3))
    y = y.astype(np.float32) if batched else y[0].astype(np.float32)
    assert_quantized(result, np_quantize(y, q.q_scale(), q.q_zero_point(), q.dtype.name), dtype_name=q.dtype.name,
                     qparams=(q.q_scale(), q.q_zero_point()), tol=_tol(q.device))


def _q_only_errors(op_name, args):
    def errors(op, device):
        f = make_tensor((1, 2, 4, 4), device=device)
        yield ErrorInput(SampleInput(f, args), NotImplementedError,
                         rf"quantized::{op_name}: argument 'qx' must be a quantized tensor")
    return errors


def _cat_samples(op, device, dtype, requires_grad=False):
    a = _q(make_tensor((2, 3), device=device, seed=1), dtype)
    b = _q(make_tensor((4, 3), device=device, seed=2, low=-2, high=2), dtype)
    c = _q(make_tensor((2, 5), device=device, seed=3), dtype)
    yield SampleInput([a, b], (0, *_out_qparams(dtype, 0.1)), name="dim 0")
    yield SampleInput([a, c], (1, *_out_qparams(dtype, 0.2)), name="dim 1")
    yield SampleInput([a], (-1, *_out_qparams(dtype, 0.05)), name="one tensor, dim -1")


def _cat_check(sample, result, cpu_result):
    dim, scale, zp = sample.args
    y = np.concatenate([np_dequantize(t) for t in sample.input], axis=dim)
    dt = sample.input[0].dtype.name
    assert_quantized(result, np_quantize(y, scale, zp, dt, _tol(sample.input[0].device) == 1), dtype_name=dt,
                     qparams=(scale, zp), tol=_tol(sample.input[0].device))


def _cat_errors(op, device):
    q = _q(make_tensor((3,), device=device), ember.quint8)
    yield ErrorInput(SampleInput([q, make_tensor((3,), device=device)], (0, 0.1, 0)), NotImplementedError,
                     r"argument 'qx\[1\]' must be a quantized tensor")
    yield ErrorInput(SampleInput([], (0, 0.1, 0)), RuntimeError, r"expected a non-empty list of quantized tensors")


# ---------------------------------------------------------------- linear / conv2d
def _weights(shape, device, per_channel, seed):
    w = make_tensor(shape, device=device, seed=seed, low=-0.5, high=0.5)
    if not per_channel:
        return ember.quantize_per_tensor(w, 0.004, 0, ember.qint8)
    o = shape[0]
    scales = ember.tensor([0.003 + 0.001 * i for i in range(o)], dtype=ember.float64)
    return ember.quantize_per_channel(w, scales, ember.tensor([(i % 3) - 1 for i in range(o)]), 0, ember.qint8)


def _linear_samples(op, device, dtype, requires_grad=False):
    for i, (xs, o, pc, bias, name) in enumerate(((((4, 16), 8, False, True, "per-tensor weight")),
                                                 ((2, 3, 16), 5, True, True, "per-channel weight, 3-D input"),
                                                 ((6, 16), 7, False, False, "no bias"),
                                                 ((0, 16), 4, True, True, "empty batch"),
                                                 ((3, 600), 6, False, True, "K=600 (float64 accumulation)"))):
        x = _q(make_tensor(xs, device=device, seed=i), dtype)
        w = _weights((o, xs[-1]), device, pc, seed=i + 20)
        b = make_tensor((o,), device=device, seed=i + 40) if bias else None
        yield SampleInput(x, (w, b, *_out_qparams(dtype, 0.2)), name=name)


def _np_acc_scale(q):
    ints, s, z = q_numpy(q)
    return ints.astype(np.int64) - z.astype(np.int64), s


def _linear_ref(x, w, b):
    xi, sx = _np_acc_scale(x)
    wi, sw = _np_acc_scale(w)
    acc = xi @ wi.T
    mult = (np.float64(sx) * np.asarray(sw, np.float64).reshape(-1)).astype(np.float32)
    y = acc.astype(np.float32) * mult
    return y + b.cpu().numpy() if b is not None else y


def _linear_check(relu):
    def check(sample, result, cpu_result):
        x = sample.input
        w, b, scale, zp = sample.args
        y = _linear_ref(x, w, b)
        if relu:
            y = np.maximum(y, 0)
        assert_quantized(result, np_quantize(y, scale, zp, x.dtype.name), dtype_name=x.dtype.name,
                         qparams=(scale, zp), tol=_tol(x.device))
    return check


def _linear_errors(op, device):
    x = _q(make_tensor((2, 4), device=device), ember.quint8)
    w = _weights((3, 4), device, False, 0)
    yield ErrorInput(SampleInput(make_tensor((2, 4), device=device), (w, None, 0.1, 0)), NotImplementedError,
                     r"argument 'X' must be a quantized tensor")
    yield ErrorInput(SampleInput(x, (make_tensor((3, 4), device=device), None, 0.1, 0)), NotImplementedError,
                     r"argument 'W' must be a quantized tensor")
    yield ErrorInput(SampleInput(x, (_weights((3, 5), device, False, 0), None, 0.1, 0)), RuntimeError,
                     r"mat1 and mat2 shapes cannot be multiplied \(2x4 and 5x3\)")


def _np_conv2d(x, w, stride, padding, dilation, groups):
    N, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    oh = (H + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (W + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((N, O, oh, ow), np.int64)
    og = O // groups
    for g in range(groups):
        xs = xp[:, g * Cg:(g + 1) * Cg]
        for a in range(kh):
            for b in range(kw):
                patch = xs[:, :, a * dilation[0]: a * dilation[0] + stride[0] * (oh - 1) + 1: stride[0],
                           b * dilation[1]: b * dilation[1] + stride[1] * (ow - 1) + 1: stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, a, b])
    return out


def _conv_samples(op, device, dtype, requires_grad=False):
    cases = [((2, 3, 8, 8), 4, (3, 3), (1, 1), (1, 1), (1, 1), 1, False, "3x3 pad 1"),
             ((1, 4, 9, 7), 6, (3, 2), (2, 1), (0, 1), (1, 1), 2, True, "groups 2, stride, per-channel"),
             ((1, 2, 10, 10), 3, (3, 3), (1, 1), (2, 2), (2, 2), 1, True, "dilation 2")]
    for i, (xs, o, k, s, p, d, g, pc, name) in enumerate(cases):
        x = _q(make_tensor(xs, device=device, seed=i), dtype)
        w = _weights((o, xs[1] // g) + k, device, pc, seed=i + 30)
        b = make_tensor((o,), device=device, seed=i + 60)
        yield SampleInput(x, (w, b, s, p, d, g, *_out_qparams(dtype, 0.3)), name=name)


def _conv_check(relu):
    def check(sample, result, cpu_result):
        x = sample.input
        w, b, stride, padding, dilation, groups, scale, zp = sample.args
        xi, sx = _np_acc_scale(x)
        wi, sw = _np_acc_scale(w)
        acc = _np_conv2d(xi, wi, stride, padding, dilation, groups)
        mult = (np.float64(sx) * np.asarray(sw, np.float64).reshape(-1)).astype(np.float32).reshape(1, -1, 1, 1)
        y = acc.astype(np.float32) * mult + b.cpu().numpy().reshape(1, -1, 1, 1)
        if relu:
            y = np.maximum(y, 0)
        assert_quantized(result, np_quantize(y, scale, zp, x.dtype.name), dtype_name=x.dtype.name,
                         qparams=(scale, zp), tol=_tol(x.device))
    return check


def _conv_errors(op, device):
    x = _q(make_tensor((1, 3, 5, 5), device=device), ember.quint8)
    w = _weights((2, 4, 3, 3), device, False, 0)
    yield ErrorInput(SampleInput(x, (w, None, (1, 1), (0, 0), (1, 1), 1, 0.1, 0)), RuntimeError,
                     r"Given groups=1, weight of size \[2, 4, 3, 3\], expected input\[1, 3, 5, 5\] to have 4 channels, "
                     r"but got 3 channels instead")
    yield ErrorInput(SampleInput(make_tensor((1, 4, 5, 5), device=device), (w, None, (1, 1), (0, 0), (1, 1), 1, 0.1, 0)),
                     NotImplementedError, r"argument 'X' must be a quantized tensor")


def _dyn_samples(op, device, dtype, requires_grad=False):
    for i, (xs, o, pc, name) in enumerate((((5, 16), 4, False, "per-tensor"), ((2, 3, 16), 6, True, "per-channel"),
                                           ((4, 16), 3, False, "all zero"))):
        x = make_tensor(xs, device=device, seed=i) * (0 if name == "all zero" else 1)
        yield SampleInput(x, (_weights((o, xs[-1]), device, pc, seed=i), make_tensor((o,), device=device, seed=i),
                              True), name=name)


def _dyn_check(sample, result, cpu_result):
    from ._qops import choose_qparams
    x = sample.input
    w, b, reduce_range = sample.args
    scale, zp = choose_qparams(x, 0, 127 if reduce_range else 255)
    qx = ember.quantize_per_tensor(x, scale, zp, ember.quint8)
    exp = _linear_ref(qx, w, b)
    got = result.cpu().numpy()
    assert result.dtype == ember.float32 and got.shape == exp.shape
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5)
    # and close to the float linear: the error of quantizing x is at most scale / 2 per element
    wf = np_dequantize(w)
    bound = 0.5 * scale * np.abs(wf).sum(axis=1) + 1e-4
    assert (np.abs(got - (x.cpu().numpy() @ wf.T + b.cpu().numpy())) <= bound).all()


def _ops():
    return ember.ops.quantized


def op_db():
    """The OpInfo entries of the quantized:: ops, for the conformance suite."""
    q = _ops()
    return [
        OpInfo("quantized_add", op=q.add, dtypes=ALL_Q, sample_inputs=_binary_samples,
               check=_binary_check(np.add), error_inputs=_mixed_errors),
        OpInfo("quantized_add_relu", op=q.add_relu, dtypes=ALL_Q, sample_inputs=_binary_samples,
               check=_binary_check(lambda a, b: np.maximum(a + b, 0))),
        OpInfo("quantized_mul", op=q.mul, dtypes=ALL_Q, sample_inputs=_binary_samples,
               check=_binary_check(np.multiply)),
        OpInfo("quantized_relu", op=q.relu, dtypes=ALL_Q, sample_inputs=_unary_samples, check=_relu_check,
               error_inputs=_q_only_errors("relu", ())),
        OpInfo("quantized_flatten", op=q.flatten, dtypes=ALL_Q, sample_inputs=_flatten_samples, check=_flatten_check),
        OpInfo("quantized_max_pool2d", op=q.max_pool2d, dtypes=ALL_Q, sample_inputs=_pool_samples,
               check=_maxpool_check, error_inputs=_q_only_errors("max_pool2d", ((2, 2), (2, 2), (0, 0), (1, 1),
                                                                                False))),
        OpInfo("quantized_adaptive_avg_pool2d", op=q.adaptive_avg_pool2d, dtypes=ACT_Q, sample_inputs=_aap_samples,
               check=_aap_check, error_inputs=_q_only_errors("adaptive_avg_pool2d", ((2, 2),))),
        OpInfo("quantized_cat", op=q.cat, dtypes=ALL_Q, sample_inputs=_cat_samples, check=_cat_check,
               error_inputs=_cat_errors),
        OpInfo("quantized_linear", op=q.linear, dtypes=ACT_Q, sample_inputs=_linear_samples,
               check=_linear_check(False), error_inputs=_linear_errors),
        OpInfo("quantized_linear_relu", op=q.linear_relu, dtypes=ACT_Q, sample_inputs=_linear_samples,
               check=_linear_check(True)),
        OpInfo("quantized_linear_dynamic", op=q.linear_dynamic, dtypes=("qint8",), sample_inputs=_dyn_samples,
               check=_dyn_check),
        OpInfo("quantized_conv2d", op=q.conv2d, dtypes=ACT_Q, sample_inputs=_conv_samples, check=_conv_check(False),
               error_inputs=_conv_errors),
        OpInfo("quantized_conv2d_relu", op=q.conv2d_relu, dtypes=ACT_Q, sample_inputs=_conv_samples,
               check=_conv_check(True)),
    ]
