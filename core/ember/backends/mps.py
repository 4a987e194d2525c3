"""ember.backends.mps (matches torch.backends.mps.is_available / is_built).

ember ships no Metal backend: both answer for an installed plugin registering the 'mps' device
type (``is_built``) and whether its runtime reports a device (``is_available``); without one,
both are False.
"""
from __future__ import annotations

from . import device_type_state

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether an installed plugin provides an available 'mps' device."""
    return device_type_state("mps")[1]


def is_built() -> bool:
    """Whether an installed plugin registers the 'mps' device type."""
    return device_type_state("mps")[0]
