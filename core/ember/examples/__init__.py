"""Runnable examples shipped with ember: ``python -m ember.examples.digits`` is the main job."""
