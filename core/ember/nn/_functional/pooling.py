"""ember.nn.functional: pooling (filled in by its owner)."""
__all__ = []
