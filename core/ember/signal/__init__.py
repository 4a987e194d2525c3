"""``ember.signal``: signal-processing helpers (matches torch.signal); today the ``windows`` module."""
from . import windows  # noqa: F401

__all__ = ["windows"]
