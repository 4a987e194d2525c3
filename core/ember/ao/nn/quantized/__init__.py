"""Quantized modules (matches torch.ao.nn.quantized): they take and return quantized tensors.

``Linear`` and ``Conv2d`` hold a qint8 weight (per tensor or per channel along the output
channels), a float bias, and the output's ``scale`` / ``zero_point``; they run
``ember.ops.quantized.linear`` / ``conv2d`` (exact int8 x int8 accumulation, requantised), on
any device. ``Quantize`` / ``DeQuantize`` convert at the edges of a quantized region. Build them
from a float module with ``from_float`` (what ``ember.ao.quantization.convert`` does).

State dict keys: ``_packed_params.weight`` (the quantized weight), ``_packed_params.bias`` (both
in one storage, see ``pack_weight_bias``), and ``_extra_state`` = ``(scale, zero_point)``.
(PyTorch keeps weight and bias in an opaque packed object under ``_packed_params._packed_params``
and scale / zero_point as tensors; ember's weight and bias are plain tensors, so a state dict can
be inspected, and the qparams are numbers.)
"""
from __future__ import annotations

import ember
import ember.nn as nn

__all__ = ["Linear", "Conv2d", "ReLU", "Quantize", "DeQuantize", "LinearPackedParams", "dynamic"]


def _ops():
    return ember.ops.quantized


def quantize_weight(w, observer):
    """``w`` (float) quantized with the qparams ``observer`` (which has seen it) chose."""
    scale, zp = observer.calculate_qparams()
    dtype = observer.dtype
    if observer.qscheme.name in ("per_channel_affine", "per_channel_symmetric"):
        return ember.quantize_per_channel(w.detach().float(), scale.double(), zp.long(), observer.ch_axis, dtype)
    return ember.quantize_per_tensor(w.detach().float(), float(scale.reshape(-1)[0].item()),
                                     int(zp.reshape(-1)[0].item()), dtype)


def _out_qparams(mod):
    act = getattr(mod, "activation_post_process", None)
    if act is None:
        raise AssertionError("Input float module must have observer attached (run ember.ao.quantization.prepare "
                             "and calibrate first)")
    scale, zp = act.calculate_qparams()
    return float(scale.reshape(-1)[0].item()), int(zp.reshape(-1)[0].item())


def _weight_observer(mod):
    if hasattr(mod, "weight_fake_quant"):       # a QAT module: its fake-quantizer saw the trained weights
        return mod.weight_fake_quant
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise AssertionError("Input float module must have qconfig defined")
    obs = qconfig.weight()
    obs(mod.weight)
    return obs


def _over(storage, dtype, shape, offset, device):
    """A contiguous tensor of ``dtype`` and ``shape`` over ``storage`` from element ``offset``."""
    from ember._tensor import Tensor
    from ember._factory import contiguous_strides
    t = object.__new__(Tensor)
    t._storage, t._shape, t._stride, t._offset = storage, tuple(shape), contiguous_strides(tuple(shape))[1], offset
    t._dtype, t._device, t._native = dtype, device, None
    return t


def pack_weight_bias(weight, bias):
    """(weight, bias) copied into one storage: the quantized weight's bytes, padding to 4 bytes, then
    the float32 bias. They save as one record (what PyTorch's packed params are for: one blob per
    layer), which keeps the saved state of small layers small; both stay ordinary tensors."""
    from ember._ops._quantized import int_view, wrap
    w = weight.contiguous()
    nw = w.numel() * w.element_size()
    head = -(-nw // 4) * 4
    nb = 0 if bias is None else bias.numel()
    buf = ember.empty(head + 4 * nb, dtype=ember.uint8, device=w.device)
    ints = _over(buf._storage, int_view(w).dtype, w.shape, 0, w.device)
    ints.copy_(int_view(w))
    packed_w = wrap(ints, w.dtype, w._quantizer)
    packed_b = None
    if bias is not None:
        packed_b = _over(buf._storage, ember.float32, bias.shape, head // 4, w.device)
        packed_b.copy_(bias.detach().to(w.device, ember.float32))
    return packed_w, packed_b


class LinearPackedParams(nn.Module):
    """The weight (quantized) and bias (float32 or None) of a quantized linear / conv, packed in one
    storage (``pack_weight_bias``); buffers ``weight`` and ``bias``."""

    def __init__(self, weight=None, bias=None):
        super().__init__()
        self.register_buffer("weight", None)
        self.register_buffer("bias", None)
        if weight is not None:
            self.set_weight_bias(weight, bias)

    def set_weight_bias(self, weight, bias):
        """Store copies of ``weight`` (quantized) and ``bias`` (as float32, or None) packed in one storage on the
        weight's device (see ``pack_weight_bias``).
        """
        self.weight, self.bias = pack_weight_bias(weight, bias)


class _PackedWeight(nn.Module):
    """``weight()`` / ``bias()`` / ``set_weight_bias`` over ``self._packed_params`` (a LinearPackedParams),
    as torch.ao.nn.quantized's Linear and Conv2d have them."""

    def weight(self):
        """The quantized weight."""
        return self._packed_params.weight

    def bias(self):
        """The float32 bias, or None."""
        return self._packed_params.bias

    def set_weight_bias(self, w, b):
        """Replace the weight (quantized) and bias (float or None)."""
        self._packed_params.set_weight_bias(w, b)


class _QParams(nn.Module):
    """The output's ``scale`` (float) and ``zero_point`` (int), plain attributes saved in the state dict
    as ``_extra_state`` = (scale, zero_point) (no tensor record each: small layers stay small when saved)."""

    def _init_qparams(self, scale, zero_point):
        self.scale = float(scale)
        self.zero_point = int(zero_point)

    def _qparams(self):
        return self.scale, self.zero_point

    def get_extra_state(self):
        return (self.scale, self.zero_point)

    def set_extra_state(self, state):
        self.scale = float(state[0])
        self.zero_point = int(state[1])


class Linear(_QParams, _PackedWeight):
    """Quantized linear: quint8 input (N, *, in_features) -> quint8 output (N, *, out_features), qint8 weight
    (matches torch.ao.nn.quantized.Linear). ``weight()`` / ``bias()`` are methods, as in PyTorch."""

    _FLOAT_MODULE = nn.Linear
    _op_name = "linear"

    def __init__(self, in_features, out_features, bias_=True, dtype=None):
        super().__init__()
        dtype = ember.qint8 if dtype is None else dtype
        self.in_features = in_features
        self.out_features = out_features
        w = ember.quantize_per_tensor(ember.zeros(out_features, in_features), 1.0, 0, dtype)
        self._packed_params = LinearPackedParams(w, ember.zeros(out_features) if bias_ else None)
        self._init_qparams(1.0, 0)

    def forward(self, x):
        """ember.ops.quantized.linear: quint8 x (*, in_features) -> quint8 (*, out_features) with this module's
        output scale / zero_point (matches torch.ao.nn.quantized.Linear.forward).
        """
        s, z = self._qparams()
        p = self._packed_params
        return getattr(_ops(), self._op_name)(x, p.weight, p.bias, s, z)

    def extra_repr(self):
        """Settings shown inside the repr: ``in_features=..., out_features=..., scale=..., zero_point=...,
        qscheme=...``.
        """
        s, z = self._qparams()
        w = self._packed_params.weight
        return (f"in_features={self.in_features}, out_features={self.out_features}, scale={s}, zero_point={z}, "
                f"qscheme={w.qscheme()}")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized module for a prepared-and-calibrated (or QAT-trained) float ``mod``."""
        float_mod = mod[0] if isinstance(mod, nn.Sequential) else mod      # a fused LinearReLU
        obs = _weight_observer(float_mod if not hasattr(mod, "weight_fake_quant") else mod)
        if not hasattr(float_mod, "qconfig") and hasattr(mod, "qconfig"):
            float_mod.qconfig = mod.qconfig
        wq = quantize_weight(float_mod.weight, obs)
        scale, zp = _out_qparams(mod)
        q = cls(float_mod.in_features, float_mod.out_features, float_mod.bias is not None, dtype=obs.dtype)
        q.set_weight_bias(wq, float_mod.bias)
        q._init_qparams(scale, zp)
        return q.to(float_mod.weight.device)


class Conv2d(_QParams, _PackedWeight):
    """Quantized 2-D convolution, NCHW (matches torch.ao.nn.quantized.Conv2d; padding_mode 'zeros')."""

    _FLOAT_MODULE = nn.Conv2d
    _op_name = "conv2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"quantized Conv2d supports padding_mode='zeros' only, got {padding_mode!r}")
        pair = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v, v)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = pair(kernel_size), pair(stride), pair(padding), \
            pair(dilation)
        self.groups = groups
        self.padding_mode = padding_mode
        dtype = ember.qint8 if dtype is None else dtype
        w = ember.quantize_per_tensor(ember.zeros(out_channels, in_channels // groups, *self.kernel_size), 1.0, 0,
                                      dtype)
        self._packed_params = LinearPackedParams(w, ember.zeros(out_channels) if bias else None)
        self._init_qparams(1.0, 0)

    def forward(self, x):
        """ember.ops.quantized.conv2d: quint8 (N, C_in, H, W) -> quint8 (N, C_out, H_out, W_out) with this module's
        output scale / zero_point (matches torch.ao.nn.quantized.Conv2d.forward).
        """
        s, z = self._qparams()
        p = self._packed_params
        return getattr(_ops(), self._op_name)(x, p.weight, p.bias, self.stride, self.padding, self.dilation,
                                              self.groups, s, z)

    def extra_repr(self):
        """Settings shown inside the repr: ``in_channels, out_channels, kernel_size=..., stride=..., scale=...,
        zero_point=..., padding=...``.
        """
        s, z = self._qparams()
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"scale={s}, zero_point={z}, padding={self.padding}")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized module for a prepared-and-calibrated (or QAT-trained) float Conv2d / fused ConvReLU2d
        ``mod``: weight quantized with its weight observer, output qparams from its ``activation_post_process``.
        NotImplementedError for string padding; AssertionError without a qconfig or an observer (matches
        torch.ao.nn.quantized.Conv2d.from_float).
        """
        float_mod = mod[0] if isinstance(mod, nn.Sequential) else mod
        if isinstance(float_mod.padding, str):
            raise NotImplementedError("quantized Conv2d: padding given as a string is not supported; use numbers")
        obs = _weight_observer(float_mod if not hasattr(mod, "weight_fake_quant") else mod)
        wq = quantize_weight(float_mod.weight, obs)
        scale, zp = _out_qparams(mod)
        q = cls(float_mod.in_channels, float_mod.out_channels, float_mod.kernel_size, float_mod.stride,
                float_mod.padding, float_mod.dilation, float_mod.groups, float_mod.bias is not None,
                float_mod.padding_mode, dtype=obs.dtype)
        q.set_weight_bias(wq, float_mod.bias)
        q._init_qparams(scale, zp)
        return q.to(float_mod.weight.device)


class ReLU(nn.Module):
    """ReLU on quantized tensors: max(q, zero_point), qparams kept (nn.ReLU does the same)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        """ember.relu on a quantized tensor: max(q, zero_point), same shape, dtype and qparams (what torch.nn.ReLU
        does on a quantized input).
        """
        return ember.relu(x)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A quantized ReLU with ``mod``'s ``inplace`` setting."""
        return cls(getattr(mod, "inplace", False))


class Quantize(_QParams):
    """Float -> quantized with fixed qparams (matches torch.ao.nn.quantized.Quantize)."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        self._init_qparams(float(scale), int(zero_point))
        self.dtype = dtype

    def forward(self, x):
        """ember.quantize_per_tensor(x, scale, zero_point, dtype): float (*) -> quantized (*) (matches
        torch.ao.nn.quantized.Quantize.forward).
        """
        s, z = self._qparams()
        return ember.quantize_per_tensor(x, s, z, self.dtype)

    def extra_repr(self):
        """Settings shown inside the repr: ``scale=..., zero_point=..., dtype=...``."""
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A Quantize with the qparams and dtype of ``mod.activation_post_process`` (a calibrated QuantStub)
        (matches torch.ao.nn.quantized.Quantize.from_float).
        """
        act = mod.activation_post_process
        scale, zp = act.calculate_qparams()
        return cls(float(scale.reshape(-1)[0].item()), int(zp.reshape(-1)[0].item()), act.dtype)


class DeQuantize(nn.Module):
    """Quantized -> float32 (matches torch.ao.nn.quantized.DeQuantize)."""

    def forward(self, x):
        """``x.dequantize()``: quantized (*) -> float32 (*) (matches torch.ao.nn.quantized.DeQuantize.forward).
        """
        return x.dequantize()

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A new DeQuantize (``mod`` carries no state to copy) (matches
        torch.ao.nn.quantized.DeQuantize.from_float).
        """
        return cls()


from . import dynamic  # noqa: E402,F401
