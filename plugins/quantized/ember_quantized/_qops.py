"""``ember.ops.quantized``: PyTorch's ``torch.ops.quantized`` ops, device-generic.

Each op is declared with ``Library("quantized").define`` (schema + a meta function that does
every argument check, on every device) and has one kernel at (ANY device, strided, q-dtype).
The kernels compute on the integers with dense ember ops:

- ``linear`` / ``conv2d``: (q_x - zp_x) and (q_w - zp_w) as exact integers in float32 (float64
  when K * |x| * |w| could pass 2 ** 24), one GEMM / convolution, so the accumulation is exactly
  the int32 accumulation of an int8 x int8 kernel; then acc * (scale_x * scale_w) + bias is
  requantised to the output's scale and zero point. Per-channel weights (axis 0) are supported.
- ``add`` / ``add_relu`` / ``mul`` / ``cat`` / ``adaptive_avg_pool2d``: dequantize, compute in float32,
  requantise (PyTorch's definition; results agree with PyTorch's within one unit of rounding).
- ``relu`` / ``max_pool2d`` / ``flatten``: on the integers, input qparams kept (exact).

Departures from PyTorch: ``linear`` / ``conv2d`` take the quantized weight tensor and a float bias
directly (PyTorch takes an opaque prepacked object); the packed, zero-point-centred weight is
cached on the weight tensor (invalidated when its version changes).
"""
from __future__ import annotations

import numpy as np

import ember
from ember import Tensor
from ember._ops._quantized import PerChannelAffine, PerTensorAffine, int_view, qrange

from . import _cpu, _kernels as K

_STRIDED = "strided"


# ---------------------------------------------------------------- argument checks
def _need_q(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"quantized::{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if t._quantizer is None:
        raise NotImplementedError(f"quantized::{op}: argument '{name}' must be a quantized tensor, but it has dtype "
                                  f"{t.dtype!r} (mixing quantized and float tensors is not supported: quantize it "
                                  f"with ember.quantize_per_tensor, or dequantize() the others)")


def _per_tensor(op, name, t):
    if not isinstance(t._quantizer, PerTensorAffine):
        raise RuntimeError(f"quantized::{op}: argument '{name}' must be quantized per tensor (got "
                           f"{t._quantizer.qscheme!r})")


def _check_out_qparams(op, scale, zero_point, dtype):
    if not (isinstance(scale, (int, float)) and scale > 0):
        raise RuntimeError(f"quantized::{op}: output scale must be a positive number, got {scale}")
    lo, hi = qrange(dtype)
    if not lo <= int(zero_point) <= hi:
        raise RuntimeError(f"quantized::{op}: output zero_point {zero_point} is outside [{lo}, {hi}] of {dtype!r}")


def _key(t):
    return t._device, (t._device.type, _STRIDED, t._dtype)


def _same_device(op, *ts):
    dev = ts[0]._device
    for t in ts[1:]:
        if t is not None and t._device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {t._device}!")


# ---------------------------------------------------------------- binary
def _binary_meta(op):
    def meta(qa, qb, scale, zero_point):
        _need_q(op, "qa", qa)
        _need_q(op, "qb", qb)
        if qa._dtype is not qb._dtype:
            raise RuntimeError(f"quantized::{op}: both inputs must have the same dtype, got {qa.dtype!r} and "
                               f"{qb.dtype!r}")
        _same_device(op, qa, qb)
        _check_out_qparams(op, scale, zero_point, qa._dtype)
        ember.broadcast_shapes(qa._shape, qb._shape)
        return _key(qa)
    return meta


def add(qa, qb, scale, zero_point):
    """Kernel of quantized::add: dequantize both, add in float, requantize to scale / zero_point in qa's dtype."""
    return K.requantize(qa.dequantize() + qb.dequantize(), scale, zero_point, qa._dtype)


def add_relu(qa, qb, scale, zero_point):
    """Kernel of quantized::add_relu: relu(dequantize(qa) + dequantize(qb)) requantized in qa's dtype."""
    return K.requantize((qa.dequantize() + qb.dequantize()).relu(), scale, zero_point, qa._dtype)


def mul(qa, qb, scale, zero_point):
    """Kernel of quantized::mul: dequantize both, multiply in float, requantize in qa's dtype."""
    return K.requantize(qa.dequantize() * qb.dequantize(), scale, zero_point, qa._dtype)


def _unary_meta(op):
    def meta(qx):
        _need_q(op, "qx", qx)
        return _key(qx)
    return meta


def relu(qx):
    """Kernel of quantized::relu: ember.relu on the quantized tensor (qparams kept)."""
    return ember.relu(qx)


# ---------------------------------------------------------------- linear
def _exact_float(x_dtype, zx, w_dtype, zw_max, k, device):
    """float32 when every partial sum of the integer GEMM stays below 2 ** 24 (exact), else float64."""
    lo, hi = qrange(x_dtype)
    wlo, whi = qrange(w_dtype)
    xa = max(abs(lo - zx), abs(hi - zx))
    wa = max(abs(wlo) + zw_max, abs(whi) + zw_max)
    if xa * wa * k < 2 ** 24 or not K.has_f64(device):
        return ember.float32
    return ember.float64


def _w_zp(w):
    q = w._quantizer
    if isinstance(q, PerTensorAffine):
        return q.zero_point, q.zero_point
    z = q.zero_points
    return z, int(z.abs().max().item()) if z.numel() else 0


def packed_weight(w, ct):
    """(q_w - zp_w) as ``ct`` on w's device, cached on ``w`` until it is written (its version)."""
    cache = w.__dict__.get("_qpacked")
    key = (ct, w._version)
    if cache is not None and cache[0] == key:
        return cache[1]
    q = w._quantizer
    wi = int_view(w).to(ct)
    if isinstance(q, PerTensorAffine):
        wi = wi - float(q.zero_point)
    else:
        _, z = q.on(w.device)
        shape = [1] * w.dim()
        shape[q.axis] = -1
        wi = wi - z.to(ct).reshape(shape)
    wi = wi.contiguous()
    w.__dict__["_qpacked"] = (key, wi)
    return wi


def _w_scale(w, device, n_out_dims, ndim):
    """scale_w as a Python float (per tensor) or a float32 tensor shaped to broadcast over the output
    channels (dimension ``n_out_dims`` of an output of ``ndim`` dims)."""
    q = w._quantizer
    if isinstance(q, PerTensorAffine):
        return q.scale
    s, _ = q.on(device)
    shape = [1] * ndim
    shape[n_out_dims] = -1
    return s.reshape(shape)


def _check_weight(op, w, out_axis=0):
    _need_q(op, "W", w)
    if w._dtype.name == "qint32":
        raise RuntimeError(f"quantized::{op}: the weight must be qint8 or quint8, got {w.dtype!r}")
    q = w._quantizer
    if isinstance(q, PerChannelAffine) and q.axis != out_axis:
        raise RuntimeError(f"quantized::{op}: per-channel weights must be quantized along axis {out_axis} (the "
                           f"output channels), got axis {q.axis}")


def _linear_meta(op):
    def meta(X, W, B, Y_scale_i, Y_zero_point_i):
        _need_q(op, "X", X)
        _per_tensor(op, "X", X)
        _check_weight(op, W)
        if W.dim() != 2:
            raise RuntimeError(f"quantized::{op}: weight must be 2-D (out_features, in_features), got "
                               f"{W.dim()}-D")
        if X.dim() < 1 or X._shape[-1] != W._shape[1]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, X._shape))} and "
                               f"{W._shape[1]}x{W._shape[0]})")
        if B is not None and (B._quantizer is not None or tuple(B._shape) != (W._shape[0],)):
            raise RuntimeError(f"quantized::{op}: bias must be a float tensor of shape ({W._shape[0]},)")
        _same_device(op, X, W, B)
        _check_out_qparams(op, Y_scale_i, Y_zero_point_i, X._dtype)
        return _key(X)
    return meta


def _int_linear(X, W, B, relu=False):
    """acc * scale_x * scale_w + bias (float32), acc the exact integer GEMM of X and W."""
    qx = X._quantizer
    zw, zw_max = _w_zp(W)
    ct = _exact_float(X._dtype, qx.zero_point, W._dtype, zw_max, W._shape[1], X.device)
    wi = packed_weight(W, ct)
    if X._device.type == "cpu":           # numpy fast path, same arithmetic (_cpu.py)
        q = W._quantizer
        mult = np.float32(qx.scale * q.scale) if isinstance(q, PerTensorAffine) else \
            (q.scales.numpy() * qx.scale).astype(np.float32)
        b = None if B is None else B.detach().to(ember.float32).numpy()
        return ember.from_numpy(_cpu.int_linear(int_view(X).numpy(), wi.numpy().dtype.type(qx.zero_point),
                                                wi.numpy().T, mult, b, relu))
    xi = int_view(X).to(ct) - float(qx.zero_point)
    acc = ember.matmul(xi, wi.t())
    if ct is not ember.float32:
        acc = acc.to(ember.float32)
    ws = _w_scale(W, X.device, -1 + acc.dim(), acc.dim()) if isinstance(W._quantizer, PerChannelAffine) \
        else W._quantizer.scale
    if isinstance(ws, float):
        y = acc * float(np.float32(qx.scale * ws))
    else:
        y = acc * (ws * qx.scale).to(ember.float32)
    if B is not None:
        y = y + B.to(ember.float32)
    return y.relu() if relu else y


def linear(X, W, B, Y_scale_i, Y_zero_point_i):
    """Kernel of quantized::linear: exact integer GEMM of X and W plus B, requantized to Y_scale_i / Y_zero_point_i in
    X's dtype.
    """
    return K.requantize(_int_linear(X, W, B), Y_scale_i, Y_zero_point_i, X._dtype)


def linear_relu(X, W, B, Y_scale_i, Y_zero_point_i):
    """Kernel of quantized::linear_relu: as ``linear`` with relu applied before requantization."""
    return K.requantize(_int_linear(X, W, B, relu=True), Y_scale_i, Y_zero_point_i, X._dtype)


# ---------------------------------------------------------------- dynamic linear (float in, float out)
def choose_qparams(x, qmin, qmax):
    """(scale, zero_point) of fbgemm's ChooseQuantizationParams for the range of ``x`` (0 included),
    which PyTorch's dynamic quantization uses for activations."""
    if x.numel():
        mn, mx = ember.aminmax(x) if hasattr(ember, "aminmax") else (x.min(), x.max())
        mn, mx = min(float(mn.item()), 0.0), max(float(mx.item()), 0.0)
    else:
        mn = mx = 0.0
    scale = (mx - mn) / (qmax - qmin)
    scale = float(np.float32(scale))
    if scale == 0.0 or not (scale < float("inf")) or 1.0 / scale == float("inf"):
        scale = 0.1
    zp_min = qmin - mn / scale
    zp_max = qmax - mx / scale
    err_min = abs(qmin) - abs(mn / scale)
    err_max = abs(qmax) - abs(mx / scale)
    zp = zp_min if err_min < err_max else zp_max
    zp = int(max(qmin, min(qmax, round(zp))))
    return scale, zp


def _dyn_meta(X, W, B, reduce_range=True):
    if not isinstance(X, Tensor) or X._quantizer is not None or X._dtype is not ember.float32:
        raise RuntimeError(f"quantized::linear_dynamic: the input must be a float32 tensor, got "
                           f"{getattr(X, 'dtype', type(X).__name__)!r}")
    _check_weight("linear_dynamic", W)
    if X.dim() < 1 or X._shape[-1] != W._shape[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, X._shape))} and "
                           f"{W._shape[1]}x{W._shape[0]})")
    _same_device("linear_dynamic", X, W, B)
    return W._device, (W._device.type, _STRIDED, W._dtype)


def linear_dynamic(X, W, B, reduce_range=True):
    """Kernel of quantized::linear_dynamic: X quantized to quint8 with choose_qparams (0..127 with reduce_range, else
    0..255), then the integer linear; float32 result.
    """
    qmax = 127 if reduce_range else 255
    scale, zp = choose_qparams(X, 0, qmax)
    qx = K.requantize(X, scale, zp, ember.quint8)
    return _int_linear(qx, W, B)


# ---------------------------------------------------------------- conv2d
def _conv_meta(op):
    def meta(X, W, B, stride, padding, dilation, groups, scale, zero_point):
        _need_q(op, "X", X)
        _per_tensor(op, "X", X)
        _check_weight(op, W)
        if X.dim() != 4 or W.dim() != 4:
            raise RuntimeError(f"quantized::{op}: expected 4-D input (N, C, H, W) and weight, got {X.dim()}-D and "
                               f"{W.dim()}-D")
        if X._shape[1] != W._shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(W._shape)}, expected input"
                               f"{list(X._shape)} to have {W._shape[1] * groups} channels, but got {X._shape[1]} "
                               f"channels instead")
        if B is not None and (B._quantizer is not None or tuple(B._shape) != (W._shape[0],)):
            raise RuntimeError(f"quantized::{op}: bias must be a float tensor of shape ({W._shape[0]},)")
        _same_device(op, X, W, B)
        _check_out_qparams(op, scale, zero_point, X._dtype)
        return _key(X)
    return meta


def _int_conv(X, W, B, stride, padding, dilation, groups):
    qx = X._quantizer
    zw, zw_max = _w_zp(W)
    k = W._shape[1] * W._shape[2] * W._shape[3]
    ct = _exact_float(X._dtype, qx.zero_point, W._dtype, zw_max, k, X.device)
    xi = int_view(X).to(ct) - float(qx.zero_point)     # zero padding of (q - zp) = padding with zp, as PyTorch
    wi = packed_weight(W, ct)
    acc = ember.conv2d(xi, wi, None, stride, padding, dilation, groups)
    if ct is not ember.float32:
        acc = acc.to(ember.float32)
    if isinstance(W._quantizer, PerTensorAffine):
        y = acc * float(np.float32(qx.scale * W._quantizer.scale))
    else:
        s, _ = W._quantizer.on(X.device)
        y = acc * (s * qx.scale).to(ember.float32).reshape(1, -1, 1, 1)
    if B is not None:
        y = y + B.to(ember.float32).reshape(1, -1, 1, 1)
    return y


def conv2d(X, W, B, stride, padding, dilation, groups, scale, zero_point):
    """Kernel of quantized::conv2d: exact integer convolution plus B, requantized to scale / zero_point in X's dtype.
    """
    return K.requantize(_int_conv(X, W, B, stride, padding, dilation, groups), scale, zero_point, X._dtype)


def conv2d_relu(X, W, B, stride, padding, dilation, groups, scale, zero_point):
    """Kernel of quantized::conv2d_relu: as ``conv2d`` with relu applied before requantization."""
    return K.requantize(_int_conv(X, W, B, stride, padding, dilation, groups).relu(), scale, zero_point, X._dtype)


# ---------------------------------------------------------------- pooling, cat, flatten
def _pool_meta(qx, kernel_size, stride, padding, dilation, ceil_mode):
    _need_q("max_pool2d", "qx", qx)
    return _key(qx)


def max_pool2d(qx, kernel_size, stride, padding, dilation, ceil_mode):
    """Kernel of quantized::max_pool2d: max_pool2d_with_indices on the quantized tensor, values only."""
    return ember.max_pool2d_with_indices(qx, kernel_size, stride, padding, dilation, ceil_mode)[0]


def _aap_meta(qx, output_size):
    _need_q("adaptive_avg_pool2d", "qx", qx)
    _per_tensor("adaptive_avg_pool2d", "qx", qx)
    if qx.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(qx._shape)}")
    return _key(qx)


def adaptive_avg_pool2d(qx, output_size):
    """Kernel of quantized::adaptive_avg_pool2d: pooled in float, requantized with the input's scale / zero_point."""
    q = qx._quantizer
    y = ember.nn.functional.adaptive_avg_pool2d(qx.dequantize(), output_size)
    return K.requantize(y, q.scale, q.zero_point, qx._dtype)


def _cat_meta(qx, dim, scale, zero_point):
    if not isinstance(qx, (list, tuple)) or not qx:
        raise RuntimeError("quantized::cat: expected a non-empty list of quantized tensors")
    for i, t in enumerate(qx):
        _need_q("cat", f"qx[{i}]", t)
        if t._dtype is not qx[0]._dtype:
            raise RuntimeError(f"quantized::cat: all inputs must have the same dtype, got {qx[0].dtype!r} and "
                               f"{t.dtype!r}")
    _same_device("cat", *qx)
    _check_out_qparams("cat", scale, zero_point, qx[0]._dtype)
    return _key(qx[0])


def cat(qx, dim, scale, zero_point):
    """Kernel of quantized::cat: concatenate the dequantized inputs along ``dim`` and requantize to scale /
    zero_point.
    """
    return K.requantize(ember.cat([t.dequantize() for t in qx], dim), scale, zero_point, qx[0]._dtype)


def _flatten_meta(qx, start_dim=0, end_dim=-1):
    _need_q("flatten", "qx", qx)
    return _key(qx)


def flatten(qx, start_dim=0, end_dim=-1):
    """Kernel of quantized::flatten: ``qx.flatten(start_dim, end_dim)``."""
    return qx.flatten(start_dim, end_dim)


# ---------------------------------------------------------------- registration
_DEFS = [
    ("add(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor", _binary_meta("add"), add,
     "(dequantize(qa) + dequantize(qb)) requantised to scale / zero_point (matches torch.ops.quantized.add)."),
    ("add_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor", _binary_meta("add_relu"), add_relu,
     "relu(qa + qb) requantised (matches torch.ops.quantized.add_relu)."),
    ("mul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor", _binary_meta("mul"), mul,
     "qa * qb requantised (matches torch.ops.quantized.mul)."),
    ("relu(Tensor qx) -> Tensor", _unary_meta("relu"), relu,
     "max(qx, zero_point) on the integers; qparams kept (matches torch.relu on a quantized tensor)."),
    ("linear(Tensor X, Tensor W, Tensor? B, float Y_scale_i, int Y_zero_point_i) -> Tensor", _linear_meta("linear"),
     linear, "Quantized linear: X (N, *, K) quantized per tensor, W (O, K) qint8 per tensor or per channel "
             "(axis 0), B float (O,) or None; int8 x int8 products accumulated exactly, requantised to "
             "Y_scale_i / Y_zero_point_i (matches torch.ops.quantized.linear, with W and B unpacked)."),
    ("linear_relu(Tensor X, Tensor W, Tensor? B, float Y_scale_i, int Y_zero_point_i) -> Tensor",
     _linear_meta("linear_relu"), linear_relu, "relu(linear(...)) before requantisation (torch.ops.quantized.linear_relu)."),
    ("linear_dynamic(Tensor X, Tensor W, Tensor? B, bool reduce_range=True) -> Tensor", _dyn_meta, linear_dynamic,
     "Dynamically quantized linear: X float32 quantized to quint8 with its own range (fbgemm's choice of "
     "qparams; 7 bits with reduce_range), exact integer GEMM with the qint8 W, float32 result plus B "
     "(matches torch.ops.quantized.linear_dynamic)."),
    ("conv2d(Tensor X, Tensor W, Tensor? B, int[2] stride, int[2] padding, int[2] dilation, int groups, float scale, "
     "int zero_point) -> Tensor", _conv_meta("conv2d"), conv2d,
     "Quantized 2-D convolution, NCHW; padding is the input's zero point (real 0); exact integer accumulation, "
     "requantised (matches torch.ops.quantized.conv2d, with W and B unpacked)."),
    ("conv2d_relu(Tensor X, Tensor W, Tensor? B, int[2] stride, int[2] padding, int[2] dilation, int groups, "
     "float scale, int zero_point) -> Tensor", _conv_meta("conv2d_relu"), conv2d_relu,
     "relu(conv2d(...)) before requantisation (torch.ops.quantized.conv2d_relu)."),
    ("max_pool2d(Tensor qx, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode) "
     "-> Tensor", _pool_meta, max_pool2d, "2-D max pooling of the integers; qparams kept (torch.ops.quantized.max_pool2d)."),
    ("adaptive_avg_pool2d(Tensor qx, int[2] output_size) -> Tensor", _aap_meta, adaptive_avg_pool2d,
     "Adaptive average pooling; the output keeps the input's qparams (torch.ops.quantized.adaptive_avg_pool2d)."),
    ("cat(Tensor[] qx, int dim, float scale, int zero_point) -> Tensor", _cat_meta, cat,
     "Concatenation requantised to scale / zero_point (matches torch.ops.quantized.cat)."),
    ("flatten(Tensor qx, int start_dim=0, int end_dim=-1) -> Tensor", _flatten_meta, flatten,
     "A view with dims start_dim..end_dim merged; qparams kept."),
]


def register(lib, qdtypes):
    """Define every quantized:: op of ``_DEFS`` on ``lib`` (unstructured, with its doc) and register its kernel for
    ``qdtypes``.
    """
    for schema, meta, fn, doc in _DEFS:
        name = lib.define(schema, meta, structured=False, doc=doc)
        lib.impl(name, fn, dtypes=qdtypes)
