"""ember.backends.mkldnn (matches torch.backends.mkldnn's surface).

ember's cpu kernels are numpy's (with its BLAS), not oneDNN: ``is_available()`` is False. The
flags ``enabled`` (True), ``deterministic`` (False) and ``allow_tf32`` (False) are accepted and
read back and change nothing.
"""
from __future__ import annotations

from . import Flag, ModuleType, install, set_flags_temporarily

__all__ = ["is_available", "flags", "enabled", "deterministic", "allow_tf32"]


def is_available() -> bool:
    """False: ember does not use oneDNN (mkldnn)."""
    return False


class _MkldnnModule(ModuleType):
    enabled = Flag(True, "set_enabled_mkldnn", "Accepted; ember never uses oneDNN: no effect.")
    deterministic = Flag(False, "set_deterministic_mkldnn", "Accepted; no effect in ember.")
    allow_tf32 = Flag(False, "set_allow_tf32_onednn", "Accepted; no effect in ember.")


def flags(enabled=False, deterministic=False, allow_tf32=False):
    """A context manager setting the flags inside the block (matches torch.backends.mkldnn.flags)."""
    import sys
    return set_flags_temporarily(sys.modules[__name__], enabled=enabled, deterministic=deterministic,
                                 allow_tf32=allow_tf32)


install(__name__, _MkldnnModule)
