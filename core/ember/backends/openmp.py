"""ember.backends.openmp (matches torch.backends.openmp.is_available).

ember runs no OpenMP of its own (its cpu plugin's parallelism is the BLAS thread pool numpy uses,
sized by ``ember.set_num_threads``), so ``is_available()`` is False.
"""
from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """False: ember is not built with OpenMP."""
    return False
