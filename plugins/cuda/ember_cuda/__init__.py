"""ember-cuda: the "cuda" device type on cupy.

- ``_runtime.py``  - devices, raw ``cudaMalloc`` memory under the core's caching allocator, host
  transfers (``non_blocking`` from pinned memory), pinned memory, DLPack, ``ember.cuda`` extras;
- ``_streams.py``  - ``Stream``, ``Event``, ``current_stream``, ``default_stream``, ``stream(s)``;
- ``_backend.py``  - cupy views of ember's memory (and the numpy twin used by the host emulation);
- ``kernels.py``   - the kernels, written once against the array module;
- ``fused.py``     - the fuser of ``ember.compile``: a run of elementwise nodes as one ``cupy.fuse`` kernel;
- ``_philox.py``   - the Philox4x32-10 generator;
- ``_emulation.py``- device type ``cuda_emu``: the same kernels on numpy, for testing without a GPU;
- this file        - the manifest and the registration hook.

Install with ``pip install 'ember-cuda[cuda12]'`` (or ``[cuda13]``). Without cupy, a driver or a
GPU the plugin still loads: ``ember.cuda.is_available()`` is False and
``ember.cuda.unavailable_reason()`` (and ``ember info``) says why. Nothing is initialised at
registration; cupy is imported on the first question about devices.

Status: unverified on a GPU (none was available when this was written); see docs/cuda.md.
"""
from __future__ import annotations

import os

from ember.plugins import API_VERSION, hookimpl

__version__ = "0.1.0"

#: dtypes the plugin declares (the conformance suite tests these)
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128")


@hookimpl
def ember_plugin_info():
    """The manifest."""
    return {
        "name": "cuda",
        "version": __version__,
        "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
        "provides": {"device_types": ["cuda"] + (["cuda_emu"] if _emulate() else []), "layouts": ["strided"],
                     "dtypes": list(DTYPES)},
        "conformance_xfails": "conformance_xfails.txt",
    }


def _emulate() -> bool:
    """EMBER_CUDA_EMULATE=1: also the device type cuda_emu (ember-cuda's kernels on numpy, for testing without a GPU)."""
    return os.environ.get("EMBER_CUDA_EMULATE", "").strip() == "1"


def _cupy_backend():
    from ._runtime import RUNTIME
    return RUNTIME.backend


def _nccl_create(*args):
    from . import _nccl
    return _nccl.create(*args)


def _nccl_available():
    from . import _nccl
    return _nccl.is_available()


@hookimpl
def ember_register(registry):
    """Register the "cuda" device type (caching allocator over cudaMalloc) and the kernels. No fallback:
    an op without kernel or composite raises the dispatcher's NotImplementedError."""
    from . import fused, kernels
    from ._runtime import RUNTIME
    registry.register_device_type("cuda", RUNTIME, caching_allocator=True)
    kernels.register(registry.library("ember_cuda"), "cuda", _cupy_backend)
    registry.register_fuser("cuda", fused.make_fuser(_cupy_backend, "cuda"))   # ember.compile: cupy.fuse per run
    # ember.distributed's "nccl" backend (cupy.cuda.nccl), imported when a process group uses it
    registry.register_collective_backend("nccl", _nccl_create, devices=["cuda"], is_available=_nccl_available)
    if _emulate():
        # testing without a GPU: also the device type "cuda_emu" (these kernels on numpy; see _emulation.py),
        # so that `EMBER_CUDA_EMULATE=1 ember conformance cuda_emu` runs from the command line
        from . import _emulation
        _emulation.register_into(registry)
