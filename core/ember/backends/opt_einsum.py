"""ember.backends.opt_einsum (matches torch.backends.opt_einsum as it is without the opt_einsum
package).

``ember.einsum`` contracts its operands left to right and never asks the opt_einsum package for
an order, so ``is_available()`` is False and ``get_opt_einsum()`` None. ``enabled`` (default
False) and ``strategy`` (default None) are accepted and read back, as PyTorch accepts them
without the package, and change nothing; a strategy other than "auto", "greedy" or "optimal" is
PyTorch's ValueError.
"""
from __future__ import annotations

from . import Flag, ModuleType, install, set_flags_temporarily

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy", "flags", "set_flags"]


def is_available() -> bool:
    """False: ember's einsum does not use opt_einsum."""
    return False


def get_opt_einsum():
    """None: ember does not use the opt_einsum package."""
    return None


def _strategy(value):
    if value is not None and value not in ("auto", "greedy", "optimal"):
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}")
    return value


class _OptEinsumModule(ModuleType):
    enabled = Flag(False, "set_enabled", "Accepted; ember's einsum contracts left to right either way.")
    strategy = Flag(None, "set_strategy", "Accepted; no effect in ember.", check=_strategy)


def set_flags(_enabled=None, _strategy=None):
    """Set ``enabled`` / ``strategy`` (None: unchanged); returns the previous values."""
    import sys
    mod = sys.modules[__name__]
    orig = (mod.enabled, mod.strategy)
    if _enabled is not None:
        mod.enabled = _enabled
    if _strategy is not None:
        mod.strategy = _strategy
    return orig


def flags(enabled=None, strategy=None):
    """A context manager setting the flags inside the block (torch.backends.opt_einsum.flags)."""
    import sys
    return set_flags_temporarily(sys.modules[__name__], enabled=enabled, strategy=strategy)


install(__name__, _OptEinsumModule)
