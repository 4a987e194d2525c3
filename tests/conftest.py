"""Shared fixtures for ember's tests (core and plugins)."""
from __future__ import annotations

import pytest

import ember

# ember's cpu default generator starts from a random seed per process, as PyTorch's; the suite starts
# it from the fixed seed it was written against, so that a test without its own seed stays repeatable
ember.default_generator.manual_seed(ember._random_state.DEFAULT_SEED)


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    """Tests that call ember.set_default_dtype must not leak it into others."""
    before = ember.get_default_dtype()
    yield
    ember.set_default_dtype(before)
