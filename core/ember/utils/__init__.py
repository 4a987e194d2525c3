"""ember.utils: helpers above the core (matches torch.utils).

``ember.utils.data`` holds datasets, samplers and the DataLoader; ``ember.utils.checkpoint``
activation checkpointing. Both are imported on first use, so ``import ember`` stays light.
"""
from __future__ import annotations

import importlib

__all__ = ["data", "checkpoint"]


def __getattr__(name):
    if name in ("data", "checkpoint"):
        return importlib.import_module(".data", __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
