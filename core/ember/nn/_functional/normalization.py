"""ember.nn.functional: normalization (filled in by its owner)."""
__all__ = []
