"""ember.backends: the backend flags and queries PyTorch programs set and read (matches
torch.backends: cudnn, cuda, mps, mkldnn, openmp, opt_einsum, cpu).

ember computes with its plugins' own kernels, so most of PyTorch's backend libraries are not
there: every ``is_available()`` answers for ember truthfully (``cudnn.is_available()`` is False:
ember-cuda uses cuBLAS through cupy but never cuDNN; ``mkldnn`` and ``openmp`` are False). The
flags (``cudnn.benchmark``, ``cuda.matmul.allow_tf32``, ...) are accepted, type-checked as in
PyTorch and read back, because PyTorch code sets them; each flag's docstring says what it does
in ember (for most: nothing, the computation is the same either way).
"""
from __future__ import annotations

import contextlib
import sys
import types

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp", "opt_einsum"]


class Flag:
    """A settable module attribute: a bool checked on assignment (RuntimeError "set_NAME expects a
    bool, but got TYPE", PyTorch's words), stored on the module."""

    def __init__(self, default, setter_name, doc, check=None):
        self.default, self.setter_name, self.__doc__ = default, setter_name, doc
        self.check = check

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return obj.__dict__.get("_flag_" + self.name, self.default)

    def __set__(self, obj, value):
        if self.check is not None:
            value = self.check(value)
        elif not isinstance(value, bool):
            raise RuntimeError(f"{self.setter_name} expects a bool, but got {type(value).__name__}")
        obj.__dict__["_flag_" + self.name] = value


def install(module_name, cls):
    """Give module ``module_name`` the class ``cls`` (a ModuleType subclass holding Flag properties),
    so that ``ember.backends.cudnn.benchmark = True`` goes through the flag's check."""
    sys.modules[module_name].__class__ = cls


@contextlib.contextmanager
def set_flags_temporarily(module, **values):
    """Set the given flags (None: unchanged) inside the block, restoring the previous values after."""
    old = {k: getattr(module, k) for k, v in values.items() if v is not None}
    try:
        for k, v in values.items():
            if v is not None:
                setattr(module, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


def device_type_state(name):
    """(registered, available) of device type ``name`` among the installed plugins."""
    from .. import _registry
    if not _registry.load_for("device_types", name):
        _registry.ensure_loaded()
    dt = _registry.device_types.get(name)
    if dt is None:
        return False, False
    try:
        return True, bool(dt.runtime.is_available())
    except Exception:  # noqa: BLE001 - a runtime that fails to answer has no usable device
        return True, False


ModuleType = types.ModuleType

from . import cpu, cuda, cudnn, mkldnn, mps, openmp, opt_einsum  # noqa: E402
