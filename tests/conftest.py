"""Shared fixtures for ember's tests (core and plugins)."""
from __future__ import annotations

import pytest

import ember


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    """Tests that call ember.set_default_dtype must not leak it into others."""
    before = ember.get_default_dtype()
    yield
    ember.set_default_dtype(before)
