"""QConfig: which observers (or fake-quantizers) a module's activations and weights get (matches
torch.ao.quantization.qconfig)."""
from __future__ import annotations

from collections import namedtuple

from .fake_quantize import FakeQuantize, default_fake_quant, default_weight_fake_quant, \
    default_per_channel_weight_fake_quant
from .observer import (HistogramObserver, MovingAverageMinMaxObserver, default_dynamic_quant_observer,
                       default_observer, default_per_channel_weight_observer, default_weight_observer)

__all__ = ["QConfig", "QConfigDynamic", "default_qconfig", "default_dynamic_qconfig", "per_channel_dynamic_qconfig",
           "default_qat_qconfig", "get_default_qconfig", "get_default_qat_qconfig"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Observer factories for activations and weights: ``QConfig(activation=MinMaxObserver.with_args(...),
    weight=...)``. Each field must be a class or a ``with_args`` factory (not an instance), as in PyTorch."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        import ember.nn as nn
        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class instead. Use "
                             "MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


QConfigDynamic = QConfig

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)

_BACKENDS = ("x86", "fbgemm", "qnnpack", "onednn")


def _check_backend(backend):
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {list(_BACKENDS)}")


def get_default_qconfig(backend="x86", version=0):
    """The default post-training QConfig of a backend (matches torch.ao.quantization.get_default_qconfig):
    x86 / fbgemm / onednn: histogram activations with reduce_range (7 bits) and per-channel symmetric
    weights; qnnpack: histogram activations (8 bits) and per-tensor symmetric weights."""
    _check_backend(backend)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False), weight=default_weight_observer)
    if backend == "onednn":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_per_channel_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend="x86", version=1):
    """The default quantization-aware-training QConfig (matches torch.ao.quantization.get_default_qat_qconfig):
    moving-average min/max fake-quantized activations (7 bits on x86 / fbgemm) and per-channel symmetric
    fake-quantized weights (per-tensor on qnnpack)."""
    _check_backend(backend)
    if backend == "qnnpack":
        return QConfig(activation=FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                                         quant_max=255, reduce_range=False),
                       weight=default_weight_fake_quant)
    return QConfig(activation=FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                                     quant_max=255, reduce_range=backend != "onednn"),
                   weight=default_per_channel_weight_fake_quant)
