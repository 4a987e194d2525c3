"""ember.nn.functional: attention (filled in by its owner)."""
__all__ = []
