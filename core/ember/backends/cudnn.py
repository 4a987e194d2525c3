"""ember.backends.cudnn (matches torch.backends.cudnn's surface).

ember-cuda computes convolutions and the rest with its own kernels (cupy, cuBLAS for matmuls),
never with cuDNN: ``is_available()`` is False and ``version()`` None, on every machine. The
flags are accepted and read back for PyTorch code that sets them, and change nothing in ember:
``enabled`` (default True), ``benchmark`` (False: ember has no algorithm search to turn on),
``deterministic`` (False: ember's kernels give the same result run to run either way),
``allow_tf32`` (True: no effect, ember runs float32 convolutions in float32), ``benchmark_limit``
(None, as PyTorch's without cuDNN).
"""
from __future__ import annotations

from . import Flag, ModuleType, install, set_flags_temporarily

__all__ = ["is_available", "version", "is_acceptable", "flags", "enabled", "benchmark", "deterministic",
           "allow_tf32", "benchmark_limit"]


def is_available() -> bool:
    """False: ember does not use cuDNN (torch.backends.cudnn.is_available)."""
    return False


def version():
    """None: ember does not use cuDNN (torch.backends.cudnn.version gives None without it)."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would be used for ``tensor``: never in ember."""
    return False


def _int(value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise RuntimeError(f"set_cudnn_benchmark_limit expects an int, but got {type(value).__name__}")
    return value


class _CudnnModule(ModuleType):
    enabled = Flag(True, "set_enabled_cudnn", "Accepted; ember never uses cuDNN, so it changes nothing.")
    benchmark = Flag(False, "set_benchmark_cudnn", "Accepted; ember has no cuDNN algorithm search: no effect.")
    deterministic = Flag(False, "set_deterministic_cudnn",
                         "Accepted; ember's kernels do not pick algorithms by timing: no effect.")
    allow_tf32 = Flag(True, "set_allow_tf32_cudnn", "Accepted; ember's float32 convolutions never use TF32.")
    benchmark_limit = Flag(None, "set_cudnn_benchmark_limit", "Accepted (None until set, as PyTorch without cuDNN); no "
                           "effect in ember.", check=_int)


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """A context manager setting the flags inside the block (matches torch.backends.cudnn.flags)."""
    import sys
    return set_flags_temporarily(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                                 benchmark_limit=benchmark_limit, deterministic=deterministic, allow_tf32=allow_tf32)


install(__name__, _CudnnModule)
