"""ember.utils: helpers above the core (matches torch.utils).

``ember.utils.data`` holds datasets, samplers and the DataLoader; it is imported on
first use, so ``import ember`` stays light.
"""
from __future__ import annotations

import importlib

__all__ = ["data"]


def __getattr__(name):
    if name == "data":
        return importlib.import_module(".data", __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
