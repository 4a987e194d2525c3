"""Automatic mixed precision: ``autocast`` and ``GradScaler`` (matches torch.amp, PyTorch 2.13).

``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`` runs a region with the ops on
autocast's lists in lower precision (bfloat16 on cpu by default, float16 elsewhere), numerically
sensitive ones in float32 and multi-input ones in the widest input type; ``GradScaler`` scales the
loss so float16 gradients do not underflow, and skips steps whose gradients hold inf/nan.
The state is per thread; see ``ember._autocast_state`` for the hook and the lists.
"""
from __future__ import annotations

from .autocast_mode import (autocast, custom_bwd, custom_fwd, is_autocast_available)  # noqa: F401
from .grad_scaler import GradScaler, OptState  # noqa: F401
from . import autocast_mode, grad_scaler  # noqa: F401

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "GradScaler"]
