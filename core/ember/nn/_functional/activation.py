"""ember.nn.functional: activation (filled in by its owner)."""
__all__ = []
