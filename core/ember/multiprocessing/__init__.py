"""ember.multiprocessing: the standard ``multiprocessing`` module, with tensors shared, not copied.

A drop-in for ``multiprocessing`` (every name it has - ``Process``, ``Queue``, ``Pool``,
``get_context``, ``set_start_method``, ... - is re-exported), plus reducers registered on
``multiprocessing.reduction.ForkingPickler`` when this module is imported: a CPU tensor put on a
Queue or Pipe, or passed to a Process started with 'spawn' / 'forkserver', has its storage moved
to shared memory (``Tensor.share_memory_``) and the receiver maps the same memory - a write in
the child is seen by the parent (see ``ember.multiprocessing.reductions``). With 'fork', Process
arguments are inherited, not pickled: share them first (``share_memory_()`` /
``Module.share_memory()``) for the child's writes to be seen. Matches torch.multiprocessing.

Sharing strategy: ember always shares anonymous memory files (memfd on Linux, else an unlinked
file in /dev/shm) by passing their file descriptors; they have no name, so no segment can leak
at exit and no resource-tracker warning is printed. ``set_sharing_strategy('file_system')`` is
accepted for PyTorch compatibility and uses the same mechanism; each shared storage keeps one
file descriptor open while it lives (raise ``ulimit -n`` for very many shared storages).
"""
from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403  - the drop-in: every public name of multiprocessing

from .reductions import init_reductions as _init_reductions
from ._spawn import spawn, start_processes, ProcessContext, ProcessRaisedException, ProcessExitedException

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException"] + list(_mp.__all__)

_init_reductions()

_STRATEGIES = frozenset({"file_descriptor", "file_system"})
_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Set the strategy for sharing CPU tensors: 'file_descriptor' or 'file_system' (matches
    torch.multiprocessing.set_sharing_strategy). Both pass file descriptors of anonymous memory
    files in ember (see the module docstring); ValueError for another name."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"Invalid sharing strategy {new_strategy!r}: expected one of "
                         f"{sorted(_STRATEGIES)}")
    _strategy = new_strategy


def get_sharing_strategy() -> str:
    """The current sharing strategy ('file_descriptor' unless set)."""
    return _strategy


def get_all_sharing_strategies() -> set:
    """The sharing strategies this system supports."""
    return set(_STRATEGIES)


def __getattr__(name):
    # names multiprocessing gains later (or private helpers such as multiprocessing.util)
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_mp, name)
