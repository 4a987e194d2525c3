"""FakeQuantize: an observer plus fake quantization, for quantization-aware training (matches
torch.ao.quantization.FakeQuantize).

``forward(x)``: while the observer is enabled it records ``x`` and updates ``scale`` /
``zero_point``; while fake quantization is enabled it returns
``ember.fake_quantize_per_tensor_affine`` (or ``_per_channel_``) of ``x``, whose gradient is the
straight-through estimator, so training sees the rounding but still learns.
"""
from __future__ import annotations

import ember
import ember.nn as nn

from .observer import MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver, _with_args, _lazy

__all__ = ["FakeQuantizeBase", "FakeQuantize", "default_fake_quant", "default_weight_fake_quant",
           "default_per_channel_weight_fake_quant", "disable_fake_quant", "enable_fake_quant", "disable_observer",
           "enable_observer"]


class FakeQuantizeBase(nn.Module):
    """Switches shared by the fake-quantize modules (buffers, so they travel with state_dict)."""

    with_args = classmethod(_with_args)

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.uint8))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.uint8))

    def enable_fake_quant(self, enabled=True):
        """Set the ``fake_quant_enabled`` buffer to 1 (0 with ``enabled=False``); returns self (matches
        torch.ao.quantization.FakeQuantizeBase.enable_fake_quant).
        """
        self.fake_quant_enabled.fill_(1 if enabled else 0)
        return self

    def disable_fake_quant(self):
        """Set ``fake_quant_enabled`` to 0 so forward passes values through unrounded; returns self (matches
        torch.ao.quantization.FakeQuantizeBase.disable_fake_quant).
        """
        return self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        """Set the ``observer_enabled`` buffer to 1 (0 with ``enabled=False``); returns self (matches
        torch.ao.quantization.FakeQuantizeBase.enable_observer).
        """
        self.observer_enabled.fill_(1 if enabled else 0)
        return self

    def disable_observer(self):
        """Set ``observer_enabled`` to 0, freezing scale / zero_point; returns self (matches
        torch.ao.quantization.FakeQuantizeBase.disable_observer).
        """
        return self.enable_observer(False)


class FakeQuantize(FakeQuantizeBase):
    """Observer + fake quantization (matches torch.ao.quantization.FakeQuantize).

    :param observer: the observer class / factory (default MovingAverageMinMaxObserver).
    :param quant_min, quant_max: the integer range (default the observer dtype's).
    :param observer_kwargs: passed to the observer (dtype, qscheme, reduce_range, ch_axis, ...).
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            observer_kwargs["quant_min"] = quant_min
            observer_kwargs["quant_max"] = quant_max
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.register_buffer("scale", ember.tensor([1.0], dtype=ember.float32))
        self.register_buffer("zero_point", ember.tensor([0], dtype=ember.int32))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        self.is_per_channel = self.qscheme.name in ("per_channel_affine", "per_channel_symmetric")

    def calculate_qparams(self):
        """The observer's (scale float32, zero_point int64) tensors (matches
        torch.ao.quantization.FakeQuantize.calculate_qparams).
        """
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        """Observe ``X`` and refresh the ``scale`` / ``zero_point`` buffers (zero_point as int32) when the observer
        is enabled, then fake-quantize per tensor or per channel (``ch_axis``) when enabled: any shape -> same
        shape, float dtype; gradient is the straight-through estimator (matches
        torch.ao.quantization.FakeQuantize.forward).
        """
        if self.observer_enabled[0].item() == 1:
            self.activation_post_process(X.detach())
            s, z = self.calculate_qparams()
            self.scale = s.to(X.device)
            self.zero_point = z.to(X.device, ember.int32)
        if self.fake_quant_enabled[0].item() == 1:
            if self.is_per_channel:
                X = ember.fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                           self.quant_min, self.quant_max)
            else:
                X = ember.fake_quantize_per_tensor_affine(X, float(self.scale[0].item()),
                                                          int(self.zero_point[0].item()), self.quant_min,
                                                          self.quant_max)
        return X

    def extra_repr(self):
        """Settings shown inside the repr: the enable flags, quant_min / quant_max, dtype, qscheme, ch_axis, scale
        and zero_point.
        """
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"quant_min={self.quant_min}, quant_max={self.quant_max}, dtype={self.dtype}, "
                f"qscheme={self.qscheme}, ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")


default_fake_quant = _lazy(lambda: FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                                          quant_max=255, dtype=ember.quint8,
                                                          qscheme=ember.per_tensor_affine, reduce_range=True))
default_weight_fake_quant = _lazy(lambda: FakeQuantize.with_args(observer=MovingAverageMinMaxObserver,
                                                                 quant_min=-128, quant_max=127, dtype=ember.qint8,
                                                                 qscheme=ember.per_tensor_symmetric,
                                                                 reduce_range=False))
default_per_channel_weight_fake_quant = _lazy(lambda: FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_channel_symmetric, reduce_range=False, ch_axis=0))


def _apply_to(mod, name):
    if isinstance(mod, FakeQuantizeBase):
        getattr(mod, name)()


def disable_fake_quant(mod):
    """``model.apply(disable_fake_quant)``: turn fake quantization off in every FakeQuantize."""
    _apply_to(mod, "disable_fake_quant")


def enable_fake_quant(mod):
    """``model.apply(enable_fake_quant)``: turn fake quantization on in every FakeQuantize (matches
    torch.ao.quantization.enable_fake_quant).
    """
    _apply_to(mod, "enable_fake_quant")


def disable_observer(mod):
    """``model.apply(disable_observer)``: freeze the qparams of every FakeQuantize."""
    _apply_to(mod, "disable_observer")


def enable_observer(mod):
    """``model.apply(enable_observer)``: let every FakeQuantize update its qparams again (matches
    torch.ao.quantization.enable_observer).
    """
    _apply_to(mod, "enable_observer")
