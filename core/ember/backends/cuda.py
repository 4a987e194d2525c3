"""ember.backends.cuda (matches torch.backends.cuda: ``is_built()`` and ``matmul``).

``is_built()`` is whether the ember-cuda plugin is installed (registers the 'cuda' device type),
whether or not a GPU is usable (``ember.cuda.is_available()`` says that), as PyTorch's answers
whether it was built with CUDA. ``matmul.allow_tf32`` (default False) and
``matmul.allow_fp16_reduced_precision_reduction`` / ``allow_bf16_reduced_precision_reduction``
(default True) are accepted and read back; ember-cuda's matmuls (cuBLAS through cupy) run float32
in float32 and half precision with float32 accumulation whatever they say.
"""
from __future__ import annotations

from . import device_type_state

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    """Whether the ember-cuda plugin is installed (torch.backends.cuda.is_built)."""
    return device_type_state("cuda")[0]


def _reduction(value, attr):
    """PyTorch's accepted forms: a bool, or a list / tuple of one or two bools (reduced precision,
    split-K); TypeError otherwise."""
    def as_bool(v, which):
        if isinstance(v, bool):
            return v
        raise TypeError(f"{attr} expects a bool for {which}, but got {type(v)!r}")
    if isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"{attr} expects at least one boolean argument")
        if len(value) > 2:
            raise TypeError(f"{attr} expects at most two boolean arguments")
        for i, v in enumerate(value):
            as_bool(v, ("allow_reduced_precision", "allow_splitk")[i])
        return value[0]
    raise TypeError(f"{attr} expects a bool or a tuple/list of bools, but got {type(value)!r}")


class _Matmul:
    """``ember.backends.cuda.matmul``: the cuBLAS flags (matches torch.backends.cuda.matmul);
    AttributeError "Unknown attribute NAME" for another name, as PyTorch."""

    _NAMES = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_values", {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                                             "allow_bf16_reduced_precision_reduction": True})

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unknown attribute {name}") from None

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got {type(value).__name__}")
        elif name in self._NAMES:
            value = _reduction(value, name)
        else:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = _Matmul()
