"""ember.distributed: collective communication between processes (matches torch.distributed).

Training that outgrows one process runs on an existing distributed engine, not a
home-made one:

- ``"mpi"`` - MPI through mpi4py (``pip install mpi4py mpich``), for tensors on any
  device: cpu tensors are handed to MPI without a copy, tensors on other devices are
  staged through host memory. Launch with ``mpiexec -n N python train.py``; the rank and
  world size come from MPI.
- ``"nccl"`` - NCCL through cupy (``cupy.cuda.nccl``), for cuda tensors: registered by the
  ember-cuda plugin (``pip install ember-cuda``).
- any backend a plugin registers for its device type (``registry.register_collective_backend``
  in ``ember_register``) or a user registers with ``Backend.register_backend``.

Importing this module imports neither mpi4py nor cupy; ``is_available()``,
``is_mpi_available()`` and ``is_nccl_available()`` answer without initialising anything.

Every collective takes ``async_op``; with ``async_op=True`` it returns a ``Work`` whose
``wait()`` raises ``DistBackendError`` (a RuntimeError) naming the collective and the
ranks when a peer died or the group's ``timeout`` passed, rather than hanging.
Before every collective the ranks check that all call the same one with tensors of the
same shape and dtype (one tiny all-reduce of the call's signature; a mismatch raises
"Detected mismatch between collectives on ranks" on every rank). ``TORCH_DISTRIBUTED_DEBUG=DETAIL``
(or ``EMBER_DISTRIBUTED_DEBUG=DETAIL``) gathers every rank's signature on each call, as PyTorch
does; ``EMBER_DISTRIBUTED_CHECK=0`` turns the check off.
"""
from __future__ import annotations

import datetime

from ._backend import ReduceOp, Work, DistBackendError, CollectiveBackend
from . import _backend
from ._api import *  # noqa: F401,F403
from ._api import __all__ as _api_all

__all__ = ["ReduceOp", "Work", "DistBackendError", "CollectiveBackend", "is_available"] + list(_api_all)


def is_available() -> bool:
    """Whether ember.distributed can be used (always True: the package is part of the core;
    whether a given backend works is ``is_mpi_available()`` / ``is_nccl_available()``)."""
    return True


#: the default timeout of a process group's collectives (matches torch's default_pg_timeout)
default_pg_timeout = datetime.timedelta(minutes=30)


def _lazy(module, attr):
    # the backend modules are imported when first used, not at ``import ember``
    def call(*args):
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)(*args)
    return call


def _register_builtin():
    _backend.register_backend("mpi", _lazy("_mpi", "create"), devices=None, owner="ember (mpi4py)",
                              is_available=_lazy("_mpi", "is_available"))


_register_builtin()
