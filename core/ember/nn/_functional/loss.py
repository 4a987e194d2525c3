"""ember.nn.functional: loss (filled in by its owner)."""
__all__ = []
