"""``ember.cpu.amp`` and ``ember.cuda.amp``: PyTorch's deprecated per-device spellings
(``torch.cpu.amp.autocast``, ``torch.cuda.amp.autocast``, ``torch.cuda.amp.GradScaler``,
``torch.cuda.amp.custom_fwd`` / ``custom_bwd``), each warning FutureWarning as PyTorch 2.13 does and
forwarding to ``ember.amp``. The device modules (``_device_module``, ``_registry``) attach them."""
from __future__ import annotations

import functools
import sys
import types
import warnings

from .. import _dtype
from . import autocast_mode as _am
from . import grad_scaler as _gs

_MODULES: dict = {}


def _warn(old, new):
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


class _CpuAutocast(_am.autocast):
    """Deprecated: ``ember.amp.autocast('cpu', ...)`` (matches torch.cpu.amp.autocast)."""

    def __init__(self, enabled: bool = True, dtype=_dtype.bfloat16, cache_enabled: bool = True):
        _warn("ember.cpu.amp.autocast", "ember.amp.autocast('cpu', args...)")
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class _CudaAutocast(_am.autocast):
    """Deprecated: ``ember.amp.autocast('cuda', ...)`` (matches torch.cuda.amp.autocast)."""

    def __init__(self, enabled: bool = True, dtype=_dtype.float16, cache_enabled: bool = True):
        _warn("ember.cuda.amp.autocast", "ember.amp.autocast('cuda', args...)")
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class _CudaGradScaler(_gs.GradScaler):
    """Deprecated: ``ember.amp.GradScaler('cuda', ...)`` (matches torch.cuda.amp.GradScaler)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        _warn("ember.cuda.amp.GradScaler", "ember.amp.GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


def _cuda_custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: ``ember.amp.custom_fwd(device_type='cuda')``."""
    _warn("ember.cuda.amp.custom_fwd", "ember.amp.custom_fwd(args..., device_type='cuda')")
    return _am.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def _cuda_custom_bwd(bwd=None):
    """Deprecated: ``ember.amp.custom_bwd(device_type='cuda')``."""
    _warn("ember.cuda.amp.custom_bwd", "ember.amp.custom_bwd(args..., device_type='cuda')")
    return _am.custom_bwd(bwd, device_type="cuda")


def _named(cls, name, module):
    cls.__name__ = cls.__qualname__ = name
    cls.__module__ = module
    return cls


def device_amp_module(device_type: str):
    """``ember.<device_type>.amp`` for cpu and cuda (None for other device types: PyTorch has none)."""
    if device_type not in ("cpu", "cuda"):
        return None
    mod = _MODULES.get(device_type)
    if mod is None:
        name = f"ember.{device_type}.amp"
        mod = types.ModuleType(name, f"Deprecated aliases of ember.amp for '{device_type}' "
                                     f"(as torch.{device_type}.amp).")
        if device_type == "cpu":
            mod.autocast = _named(_CpuAutocast, "autocast", name)
            mod.GradScaler = _gs.GradScaler
        else:
            mod.autocast = _named(_CudaAutocast, "autocast", name)
            mod.GradScaler = _named(_CudaGradScaler, "GradScaler", name)
            mod.custom_fwd = functools.wraps(_am.custom_fwd)(_cuda_custom_fwd)
            mod.custom_bwd = functools.wraps(_am.custom_bwd)(_cuda_custom_bwd)
        _MODULES[device_type] = mod
        sys.modules[name] = mod
    return mod
