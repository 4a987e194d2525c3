"""ember.nn.functional: misc (filled in by its owner)."""
__all__ = []
