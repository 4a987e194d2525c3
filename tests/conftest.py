"""Shared fixtures for ember's tests (core and plugins)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ember


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    """Tests that call ember.set_default_dtype must not leak it into others."""
    before = ember.get_default_dtype()
    yield
    ember.set_default_dtype(before)


def run_python(code, env_extra=None, env_drop=(), timeout=60):
    """Run ``code`` in a fresh interpreter (the test's Python) with extra environment
    variables; returns the CompletedProcess (text mode, stdout and stderr captured)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EMBER_") and k not in env_drop}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def python_subprocess():
    """``python_subprocess(code, env_extra=None)`` -> CompletedProcess (see ``run_python``)."""
    return run_python
