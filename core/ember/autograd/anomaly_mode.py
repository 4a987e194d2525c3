"""Anomaly detection (matches torch.autograd.anomaly_mode).

While enabled, every recorded node keeps the traceback of the forward call that
created it, and the engine checks each backward output: a NaN raises RuntimeError
naming the node ("Function 'DivBackward0' returned nan values in its 0th output.")
with that forward traceback in the message.
"""
from __future__ import annotations

import warnings

from .._grad_state import STATE, set_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return STATE.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks backward outputs for NaN."""
    return STATE.anomaly_check_nan


class detect_anomaly:
    """Context manager / decorator enabling anomaly detection (``check_nan``: raise on NaN gradients)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        set_anomaly(True, self.check_nan)

    def __exit__(self, *exc):
        set_anomaly(*self.prev)

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = (STATE.anomaly, STATE.anomaly_check_nan)
            set_anomaly(True, self.check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                set_anomaly(*prev)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once as a call, or for a ``with`` block."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        set_anomaly(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        set_anomaly(*self.prev)
