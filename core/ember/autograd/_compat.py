"""The rest of torch.autograd's public names, with what each means in ember.

- ``Variable``: the pre-0.4 wrapper. ``Variable(t, requires_grad=False)`` is a new leaf sharing ``t``'s
  memory (requiring grad when asked); ``isinstance(x, Variable)`` is ``isinstance(x, Tensor)``
  (matches torch.autograd.Variable). ``variable(...)`` raises PyTorch's deprecation RuntimeError.
- ``SavedTensor``: the object a node keeps for backward (``ember.autograd.graph.SavedTensor``).
- ``is_tensor_like`` / ``has_torch_function``: ember has no ``__torch_function__`` protocol, so a tensor-like
  is an ember Tensor and no argument ever has a torch function (matches torch.overrides' answers for plain
  tensors).
- ``set_multithreading_enabled`` / ``is_multithreading_enabled``: PyTorch runs the backward of accelerator
  ops on per-device threads unless disabled; ember's engine always runs backward in the calling thread, so
  the flag (kept per thread, a context manager as PyTorch's) is recorded and read back but changes nothing.
- ``is_view_replay_enabled``: False (ember never replays views for autograd); ``kineto_available``: False
  (ember.profiler counts fallbacks and copies; there is no Kineto tracer).
"""
from __future__ import annotations

import threading

from .._tensor import Tensor
from .graph import SavedTensor

__all__ = ["Variable", "variable", "SavedTensor", "is_tensor_like", "has_torch_function",
           "set_multithreading_enabled", "is_multithreading_enabled", "is_view_replay_enabled", "kineto_available"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """The deprecated Variable constructor: ``Variable(data, requires_grad=False)`` (matches
    torch.autograd.Variable). With no argument, an empty float tensor."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        import ember
        if data is None:
            return ember.tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))     # a new tensor over the same memory


def variable(*args, **kwargs):
    """Removed in PyTorch: raises RuntimeError (matches torch.autograd.variable)."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is an ember Tensor (matches torch.overrides.is_tensor_like for plain tensors)."""
    return isinstance(inp, Tensor)


def has_torch_function(relevant_args) -> bool:
    """Always False: ember has no ``__torch_function__`` overrides (matches torch's answer for plain tensors)."""
    return False


_threads = threading.local()


def is_multithreading_enabled() -> bool:
    """This thread's multithreaded-backward flag (default True, as PyTorch's); ember's backward runs in the
    calling thread whatever it says."""
    return getattr(_threads, "enabled", True)


class set_multithreading_enabled:
    """Context manager (and function) setting this thread's multithreaded-backward flag (matches
    torch.autograd.set_multithreading_enabled; in ember the flag is recorded and changes nothing)."""

    def __init__(self, mode: bool) -> None:
        self.prev = is_multithreading_enabled()
        _threads.enabled = bool(mode)
        self.mode = bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _threads.enabled = self.prev

    def clone(self):
        """A new instance with the same mode (PyTorch's context managers have it)."""
        return self.__class__(self.mode)


def is_view_replay_enabled() -> bool:
    """False: ember never replays views for autograd."""
    return False


def kineto_available() -> bool:
    """False: ember has no Kineto tracer (ember.profiler counts fallbacks and copies between devices)."""
    return False
