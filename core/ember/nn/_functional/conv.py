"""ember.nn.functional: conv (filled in by its owner)."""
__all__ = []
