"""Quantized tensors in the core: quantizers, qschemes, and the ops that make and read them.

A quantized tensor is an ordinary strided Tensor whose dtype is one of the dtypes the
ember-quantized plugin registers (``qint8``, ``quint8``, ``qint32``); its storage holds the
integers (itemsize 1 / 1 / 4) and ``t._quantizer`` says how they map to real numbers
(matches PyTorch's QTensorImpl + Quantizer):

- ``PerTensorAffine(scale, zero_point)``: real = (q - zero_point) * scale
- ``PerChannelAffine(scales, zero_points, axis)``: the same with one (scale, zero point) per
  index of dimension ``axis``.

Views carry the quantizer (``Tensor._view``), so do ``clone``, ``.to(device)``, ``detach``,
pickling and ``ember.save``. The core declares the ops (``quantize_per_tensor``,
``quantize_per_channel``, ``dequantize``: schema, every argument check, the dispatch key);
the kernels come from ember-quantized, registered at (ANY device, strided, q-dtype). Without
the plugin these ops raise NotImplementedError naming ``pip install ember-quantized``.

``fake_quantize_per_tensor_affine`` / ``fake_quantize_per_channel_affine`` work on float
tensors only, so they live here, written with ember ops (every device) and with PyTorch's
straight-through gradient.
"""
from __future__ import annotations

import math

from .. import _dtype as D, _registry
from .._dispatch import declare
from .._tensor import Tensor
from ._meta import check_tensor

__all__ = ["quantize_per_tensor", "quantize_per_channel", "dequantize", "fake_quantize_per_tensor_affine",
           "fake_quantize_per_channel_affine", "qscheme", "per_tensor_affine", "per_channel_affine",
           "per_tensor_symmetric", "per_channel_symmetric"]

_new = object.__new__

#: q-dtype name -> (storage dtype name, min, max); the dtypes themselves come from ember-quantized
QDTYPES = {"qint8": ("int8", -128, 127), "quint8": ("uint8", 0, 255), "qint32": ("int32", -2 ** 31, 2 ** 31 - 1)}

_MISSING = ("the quantized dtypes (qint8, quint8, qint32) and their kernels come from the ember-quantized plugin, "
            "which is not {why}: {advice}")


class qscheme:
    """A quantization scheme (matches torch.qscheme): ``ember.per_tensor_affine``, ..."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_qscheme_by_name, (self.name,))


def _qscheme_by_name(name):
    return _QSCHEMES[name]


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
_QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric)}


# ---------------------------------------------------------------- quantizers
class PerTensorAffine:
    """real = (q - zero_point) * scale for every element."""

    __slots__ = ("scale", "zero_point")
    qscheme = per_tensor_affine

    def __init__(self, scale: float, zero_point: int):
        self.scale = float(scale)
        self.zero_point = int(zero_point)

    def view_of(self, src, t):
        """The quantizer of a view of a tensor with this quantizer: itself (per-tensor qparams do not depend on the
        view).
        """
        return self

    def __eq__(self, other):
        return isinstance(other, PerTensorAffine) and (self.scale, self.zero_point) == (other.scale, other.zero_point)

    def __hash__(self):
        return hash((self.scale, self.zero_point))

    def __repr__(self):
        return f"PerTensorAffine(scale={self.scale}, zero_point={self.zero_point})"


class PerChannelAffine:
    """real = (q - zero_points[c]) * scales[c], c the index along ``axis``.

    ``scales`` (float64) and ``zero_points`` (int64) are cpu tensors of the channel count;
    ``on(device)`` gives them on a tensor's device (cached per device)."""

    __slots__ = ("scales", "zero_points", "axis", "_cache")
    qscheme = per_channel_affine

    def __init__(self, scales, zero_points, axis: int):
        cpu = _registry.canonical_device("cpu")
        self.scales = scales.detach().to(cpu, D.float64)
        self.zero_points = zero_points.detach().to(cpu, D.int64)
        self.axis = int(axis)
        self._cache = {}

    def on(self, device):
        """(scales float64, zero_points int64) on ``device``."""
        r = self._cache.get(device)
        if r is None:
            r = self._cache[device] = (self.scales.to(device), self.zero_points.to(device))
        return r

    def view_of(self, src, t):
        """The quantizer of ``t``, a view of ``src``: the channel dim must survive with its size and
        stride (RuntimeError as PyTorch's otherwise)."""
        ax = self.axis
        n, st = src._shape[ax], src._stride[ax]
        if ax < len(t._shape) and t._shape[ax] == n and t._stride[ax] == st:
            return self
        for i, (s, d) in enumerate(zip(t._shape, t._stride)):
            if s == n and d == st:
                return PerChannelAffine._moved(self, i)
        raise RuntimeError("Setting strides is possible only on uniformly quantized tensor")

    def _moved(self, axis):
        q = _new(PerChannelAffine)
        q.scales, q.zero_points, q.axis, q._cache = self.scales, self.zero_points, axis, self._cache
        return q

    def __repr__(self):
        return f"PerChannelAffine(scales={self.scales.tolist()}, zero_points={self.zero_points.tolist()}, axis={self.axis})"


# ---------------------------------------------------------------- helpers for kernels (ember-quantized uses them)
def is_qdtype(d) -> bool:
    """Whether ``d`` is one of the quantized dtypes."""
    return getattr(d, "name", None) in QDTYPES and D._BY_NAME.get(d.name) is d


def qrange(d):
    """(min, max) of the integers a q-dtype holds."""
    return QDTYPES[d.name][1:]


def storage_dtype(d):
    """The integer dtype whose values a q-dtype's storage holds (qint8 -> int8)."""
    return D._BY_NAME[QDTYPES[d.name][0]]


def int_view(t: Tensor) -> Tensor:
    """A view of quantized ``t`` as its storage's integer dtype (no quantizer); writes go through."""
    v = _new(Tensor)
    v._storage, v._shape, v._stride, v._offset = t._storage, t._shape, t._stride, t._offset
    v._dtype = storage_dtype(t._dtype)
    v._device = t._device
    v._native = None
    if t._vc is None:
        t._vc = [0]
    v._vc = t._vc
    return v


def wrap(ints: Tensor, qdtype, quantizer) -> Tensor:
    """A quantized tensor of ``qdtype`` over the storage of the integer tensor ``ints`` (which must
    hold values in the q-dtype's range, in its storage dtype)."""
    t = _new(Tensor)
    t._storage, t._shape, t._stride, t._offset = ints._storage, ints._shape, ints._stride, ints._offset
    t._dtype = qdtype
    t._device = ints._device
    t._native = None
    t._quantizer = quantizer
    return t


def _need_plugin(op):
    _registry.ensure_loaded()
    if "qint8" not in D._BY_NAME:
        from .. import plugins
        why = "loaded" if any(p.name == "quantized" for p in plugins.list()) else "installed or is disabled"
        raise NotImplementedError(f"{op}: " + _MISSING.format(why=why, advice=_registry.install_advice("quantized")))


def _check_qdtype(dtype):
    if not is_qdtype(dtype):
        name = D.torch_name(dtype) if isinstance(dtype, D.dtype) else repr(dtype)
        raise RuntimeError(f"ScalarType {name} is not supported in new_qtensor.")


def _check_zp(zp, dtype, what):
    lo, hi = qrange(dtype)
    if zp > hi:
        raise RuntimeError(f"{what} zero_point {zp} is above upper bound.")
    if zp < lo:
        raise RuntimeError(f"{what} zero_point {zp} is below lower bound.")


def _as_number(x, kind):
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise RuntimeError(f"quantize_per_tensor: expected a one-element {kind} tensor, got size "
                               f"{list(x._shape)}")
        x = x.item()
    return x


# ---------------------------------------------------------------- quantize_per_tensor
def _qpt_meta(self, scale, zero_point, dtype):
    _need_plugin("quantize_per_tensor")
    check_tensor(self, "quantize_per_tensor")
    if self._dtype is not D.float32:
        raise RuntimeError(f"Quantize only works on Float Tensor, got {D.torch_name(self._dtype)}")
    _check_qdtype(dtype)
    if not (isinstance(scale, (int, float)) and not isinstance(scale, bool)) or not (scale > 0 and math.isfinite(scale)):
        raise RuntimeError(f"quantize_per_tensor: scale must be a positive finite number, got {scale}")
    if not isinstance(zero_point, int) or isinstance(zero_point, bool):
        raise TypeError(f"quantize_per_tensor(): argument 'zero_point' must be int, not {type(zero_point).__name__}")
    _check_zp(zero_point, dtype, "quantize_tensor_per_tensor_affine")
    return self._device, (self._device.type, self._layout.name, dtype)


_qpt = declare("quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor", _qpt_meta,
               structured=False, doc="see ember.quantize_per_tensor")


def quantize_per_tensor(input, scale, zero_point, dtype):
    """Quantize a float32 tensor with one scale and zero point (matches torch.quantize_per_tensor).

    q = clamp(round_half_even(x / scale + zero_point), qmin, qmax), computed as PyTorch's cpu
    kernels compute it (bit-identical ``int_repr()``); NaN maps to qmax (qint8 / quint8) or
    qmin (qint32), as there.

    :param input: float32 tensor of any shape, on any device.
    :param scale: positive finite float (or a one-element tensor).
    :param zero_point: int in the dtype's range (or a one-element tensor).
    :param dtype: ``ember.qint8`` ([-128, 127]), ``ember.quint8`` ([0, 255]) or ``ember.qint32``.
    :returns: a quantized tensor of ``input``'s shape and device, qscheme ``per_tensor_affine``.
    :raises RuntimeError: for a non-float32 input ("Quantize only works on Float Tensor, got Int"),
        a non-quantized dtype, a zero point outside the range ("... zero_point 200 is above upper
        bound."), or ``scale <= 0`` (PyTorch 2.13 accepts that and produces garbage; ember refuses).
    :raises NotImplementedError: when ember-quantized is not installed.
    """
    scale = _as_number(scale, "scale")
    zero_point = _as_number(zero_point, "zero_point")
    if isinstance(scale, int) and not isinstance(scale, bool):
        scale = float(scale)
    return _qpt(input, scale, zero_point, dtype)


# ---------------------------------------------------------------- quantize_per_channel
def _qpc_meta(self, scales, zero_points, axis, dtype):
    _need_plugin("quantize_per_channel")
    check_tensor(self, "quantize_per_channel")
    if self._dtype is not D.float32:
        raise RuntimeError(f"quantize_tensor_per_channel_affine expects a Float Tensor, got "
                           f"{D.torch_name(self._dtype)}")
    _check_qdtype(dtype)
    check_tensor(scales, "quantize_per_channel", "scales")
    check_tensor(zero_points, "quantize_per_channel", "zero_points")
    if scales.dim() != 1:
        raise RuntimeError("scale tensor must have dimension 1")
    if zero_points.dim() != 1:
        raise RuntimeError("zero_points tensor must have dimension 1")
    n = self.dim()
    if not 0 <= axis < n:
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: {axis}Expected: "
                           f"[0, {n})")
    if scales.numel() != zero_points.numel():
        raise RuntimeError("number of elements in scales and zero_points must match")
    if scales.numel() != self._shape[axis]:
        raise RuntimeError(f"length of scales must equal to channel, expected {self._shape[axis]} got, "
                           f"{scales.numel()}")
    sc = scales.detach().cpu().tolist()
    bad = [s for s in sc if not (s > 0 and math.isfinite(s))]
    if bad:
        raise RuntimeError(f"quantize_per_channel: scales must be positive finite numbers, got {bad[0]}")
    for z in zero_points.detach().cpu().tolist():
        _check_zp(int(z), dtype, "quantize_tensor_per_channel_affine")
    return self._device, (self._device.type, self._layout.name, dtype)


_qpc = declare("quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, ScalarType dtype) "
               "-> Tensor", _qpc_meta, structured=False, doc="see ember.quantize_per_channel")


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """Quantize a float32 tensor with one scale / zero point per index of ``axis`` (matches
    torch.quantize_per_channel; bit-identical ``int_repr()``).

    :param input: float32 tensor (at least 1-dim).
    :param scales: 1-dim tensor of ``input.shape[axis]`` positive scales (kept as float64).
    :param zero_points: 1-dim integer tensor of the same length (kept as int64).
    :param axis: the channel dimension, in [0, input.dim()) (negative values are refused, as PyTorch).
    :param dtype: ``ember.qint8``, ``ember.quint8`` or ``ember.qint32``.
    :returns: a quantized tensor, qscheme ``per_channel_affine``.
    :raises RuntimeError: PyTorch's messages for mismatched lengths ("length of scales must equal to
        channel, expected 4 got, 2"), an axis out of range, zero points outside the dtype's range,
        non-float32 input; ember also refuses non-positive scales.
    """
    return _qpc(input, scales, zero_points, axis, dtype)


# ---------------------------------------------------------------- dequantize
def _deq_meta(self):
    check_tensor(self, "dequantize")
    if self._quantizer is None:
        _need_plugin("dequantize")
        raise RuntimeError(f"dequantize: the tensor has dtype {self._dtype!r} but no quantizer (make quantized "
                           "tensors with ember.quantize_per_tensor / ember.quantize_per_channel)")
    return self._device, (self._device.type, self._layout.name, self._dtype)


_deq = declare("dequantize(Tensor self) -> Tensor", _deq_meta, structured=False, doc="see ember.dequantize")


def dequantize(input):
    """The float32 values of a quantized tensor, (q - zero_point) * scale (matches torch.dequantize;
    bit-identical to PyTorch's cpu result). A float tensor is returned as is, as PyTorch does.
    A list / tuple of tensors gives a list."""
    if isinstance(input, (list, tuple)):
        return [dequantize(t) for t in input]
    if isinstance(input, Tensor) and input._quantizer is None and not is_qdtype(input._dtype):
        return input
    return _deq(input)


# ---------------------------------------------------------------- Tensor methods
def _q(self, what):
    q = self._quantizer
    if q is None:
        raise RuntimeError(f"{what}: expected a quantized tensor, got one of dtype {self._dtype!r} "
                           "(use ember.quantize_per_tensor / quantize_per_channel first)")
    return q


def q_scale(self) -> float:
    """The scale of a per-tensor quantized tensor (matches torch.Tensor.q_scale)."""
    q = _q(self, "q_scale")
    if not isinstance(q, PerTensorAffine):
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.  "
                           "(q_scale needs a per-tensor quantized tensor)")
    return q.scale


def q_zero_point(self) -> int:
    """The zero point of a per-tensor quantized tensor (matches torch.Tensor.q_zero_point)."""
    q = _q(self, "q_zero_point")
    if not isinstance(q, PerTensorAffine):
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.  "
                           "(q_zero_point needs a per-tensor quantized tensor)")
    return q.zero_point


def _pc(self, what):
    q = _q(self, what)
    if not isinstance(q, PerChannelAffine):
        raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
                           f"kPerChannelAffineFloatQParams to be true, but got false.  ({what} needs a per-channel "
                           "quantized tensor)")
    return q


def q_per_channel_scales(self):
    """The float64 scales (cpu tensor of the channel count) of a per-channel quantized tensor."""
    return _pc(self, "q_per_channel_scales").scales.clone()


def q_per_channel_zero_points(self):
    """The int64 zero points of a per-channel quantized tensor."""
    return _pc(self, "q_per_channel_zero_points").zero_points.clone()


def q_per_channel_axis(self) -> int:
    """The channel dimension of a per-channel quantized tensor."""
    return _pc(self, "q_per_channel_axis").axis


def qscheme_of(self):
    """``ember.per_tensor_affine`` or ``ember.per_channel_affine`` (matches torch.Tensor.qscheme)."""
    return _q(self, "qscheme").qscheme


def int_repr(self):
    """A new integer tensor (int8 / uint8 / int32 for qint8 / quint8 / qint32) holding the stored
    integers (matches torch.Tensor.int_repr). RuntimeError for a tensor that is not quantized."""
    _q(self, "int_repr")
    return int_view(self).clone()


# ---------------------------------------------------------------- fake quantization (float in, float out)
def _fq_values(x, scale, zero_point, quant_min, quant_max):
    """(fake-quantized x, mask of elements inside the clamp range) with ember ops; scale / zero_point
    are Python numbers or tensors broadcasting against x."""
    inv = 1.0 / scale
    r = (x * inv + zero_point).round()
    mask = (r >= quant_min) & (r <= quant_max)
    y = (r.clamp(quant_min, quant_max) - zero_point) * scale
    return y, mask


def _fake_function():
    from ..autograd import Function

    class FakeQuantizeSTE(Function):
        """Fake quantization with the straight-through estimator: the gradient passes where x was
        not clamped and is 0 elsewhere (PyTorch's fake_quantize_*_backward)."""

        @staticmethod
        def forward(ctx, x, scale, zero_point, quant_min, quant_max):
            y, mask = _fq_values(x, scale, zero_point, quant_min, quant_max)
            ctx.save_for_backward(mask)
            return y.to(x.dtype)

        @staticmethod
        def backward(ctx, grad):
            (mask,) = ctx.saved_tensors
            return grad * mask, None, None, None, None
    return FakeQuantizeSTE


_FQ = None


def _check_fq_range(quant_min, quant_max):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """Quantize and dequantize in one step, staying in floating point (matches
    torch.fake_quantize_per_tensor_affine): (clamp(round(x / scale + zp), qmin, qmax) - zp) * scale.

    Differentiable with the straight-through estimator (gradient 1 inside [qmin, qmax] after
    rounding, 0 outside), on every device. ``scale`` / ``zero_point`` may be Python numbers or
    one-element tensors. RuntimeError when ``quant_min > quant_max`` or the zero point lies
    outside it ("`zero_point` must be between `quant_min` and `quant_max`.").
    """
    global _FQ
    check_tensor(input, "fake_quantize_per_tensor_affine")
    if not input._dtype.is_floating_point:
        raise RuntimeError(f"fake_quantize_per_tensor_affine: expected a floating point input, got "
                           f"{D.torch_name(input._dtype)}")
    _check_fq_range(quant_min, quant_max)
    scale = scale.item() if isinstance(scale, Tensor) else float(scale)
    zero_point = int(zero_point.item()) if isinstance(zero_point, Tensor) else int(zero_point)
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    if _FQ is None:
        _FQ = _fake_function()
    return _FQ.apply(input, scale, zero_point, quant_min, quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """Per-channel fake quantization (matches torch.fake_quantize_per_channel_affine): ``scale`` and
    ``zero_point`` are 1-dim tensors of ``input.shape[axis]``; straight-through gradient."""
    global _FQ
    check_tensor(input, "fake_quantize_per_channel_affine")
    _check_fq_range(quant_min, quant_max)
    if scale.dim() != 1 or scale.numel() != input.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    shape = [1] * input.dim()
    shape[axis] = -1
    s = scale.detach().to(input.device, input.dtype).reshape(shape)
    z = zero_point.detach().to(input.device, input.dtype).reshape(shape)
    if _FQ is None:
        _FQ = _fake_function()
    return _FQ.apply(input, s, z, quant_min, quant_max)


def _bind():
    T = Tensor
    T.q_scale = q_scale
    T.q_zero_point = q_zero_point
    T.q_per_channel_scales = q_per_channel_scales
    T.q_per_channel_zero_points = q_per_channel_zero_points
    T.q_per_channel_axis = q_per_channel_axis
    T.qscheme = qscheme_of
    T.int_repr = int_repr
    T.dequantize = dequantize


_bind()


def sample_qparams(dtype, low: float, high: float):
    """(scale, zero_point) mapping [low, high] onto most of ``dtype``'s range (for test samples)."""
    lo, hi = qrange(dtype)
    if dtype.name == "qint32":
        return 1e-3, 0
    scale = (high - low) / (hi - lo - 10)
    zp = int(round(lo + 5 - low / scale))
    return float(scale), max(lo, min(hi, zp))


def repr_suffixes(t) -> list:
    """The suffixes ``repr`` prints after a quantized tensor's values (PyTorch's order and words)."""
    q = t._quantizer
    out = [f"size={tuple(t._shape)}", f"dtype={t._dtype!r}", f"quantization_scheme={q.qscheme!r}"]
    if isinstance(q, PerTensorAffine):
        out += [f"scale={q.scale}", f"zero_point={q.zero_point}"]
    else:
        out += [f"scale={q.scales!r}", f"zero_point={q.zero_points!r}", f"axis={q.axis}"]
    return out


# ---------------------------------------------------------------- pickling / ember.save
def reduce_qtensor(t):
    """``Tensor.__reduce_ex__`` of a quantized tensor: the storage and geometry, the dtype by name
    (the plugin may load lazily), and the quantizer's parameters, whose length gives the scheme
    (scales / zero points as tensors for per-channel)."""
    q = t._quantizer
    if isinstance(q, PerTensorAffine):
        params = (q.scale, q.zero_point)
    else:
        params = (q.scales, q.zero_points, q.axis)
    return (_rebuild_qtensor, (t._storage, t._offset, tuple(t._shape), tuple(t._stride), t._dtype.name, params))


def _rebuild_qtensor(storage, storage_offset, size, stride, dtype_name, params):
    """Inverse of reduce_qtensor (allow-listed for ``ember.load``): validates every argument. ``params`` is
    (scale, zero_point) for per_tensor_affine, (scales, zero_points, axis) for per_channel_affine."""
    import pickle
    import numpy as np
    from .._serialization_support import _rebuild_tensor
    _need_plugin("ember.load of a quantized tensor")
    if dtype_name not in QDTYPES or not isinstance(params, tuple):
        raise pickle.UnpicklingError(f"_rebuild_qtensor: malformed record (dtype {dtype_name!r})")
    t = _rebuild_tensor(storage, storage_offset, size, stride, D._BY_NAME[dtype_name])
    _, qmin, qmax = QDTYPES[dtype_name]
    if len(params) == 2:
        scale, zp = params
        if not isinstance(scale, float) or type(zp) is not int or not (scale > 0 and math.isfinite(scale)) or \
                not qmin <= zp <= qmax:
            raise pickle.UnpicklingError(f"_rebuild_qtensor: malformed per-tensor parameters (scale {scale!r} must "
                                         f"be finite and positive, zero_point {zp!r} in [{qmin}, {qmax}])")
        t._quantizer = PerTensorAffine(scale, zp)
    elif len(params) == 3:
        scales, zps, axis = params
        if not (isinstance(scales, Tensor) and isinstance(zps, Tensor) and type(axis) is int and
                0 <= axis < len(size) and scales.numel() == zps.numel() == size[axis]):
            raise pickle.UnpicklingError("_rebuild_qtensor: malformed per-channel parameters")
        s, z = scales.cpu().numpy(), zps.cpu().numpy()
        if not ((s > 0).all() and np.isfinite(s).all() and (z >= qmin).all() and (z <= qmax).all()):
            raise pickle.UnpicklingError(f"_rebuild_qtensor: per-channel scales must be finite and positive and "
                                         f"zero points in [{qmin}, {qmax}]")
        t._quantizer = PerChannelAffine(scales, zps, axis)
    else:
        raise pickle.UnpicklingError(f"_rebuild_qtensor: malformed quantizer parameters {params!r}")
    return t
