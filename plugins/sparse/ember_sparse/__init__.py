"""ember-sparse: the sparse COO layout for ember (``ember.sparse_coo``).

A sparse COO tensor holds ``indices`` (int64, sparse_dim x nnz) and ``values`` (nnz x the
dense dims) on any device. Every kernel is registered at (ANY device, sparse_coo, ANY dtype)
and written with dense ember ops on the indices and values, so it runs on cpu, opencl, cuda
and a vendor's device alike; scipy.sparse fast paths are registered at the more specific
key (cpu, sparse_coo, float32 / float64) where they measured faster (benchmarks/bench_sparse.py).
Registered through the ``ember.plugins`` entry point, exactly as a third-party plugin would be.
"""
from __future__ import annotations

from ember.plugins import API_VERSION, hookimpl

__version__ = "0.1.0"


@hookimpl
def ember_plugin_info():
    """The sparse plugin's manifest."""
    from ._kernels import OPS_PROVIDED
    return {
        "name": "sparse",
        "version": __version__,
        "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
        "provides": {"layouts": ["sparse_coo"], "ops": sorted(OPS_PROVIDED)},
    }


@hookimpl
def ember_register(registry):
    """Register the sparse_coo layout, the ``sparse::`` ops and the kernels at sparse_coo keys."""
    from ._kernels import register_all
    layout = registry.register_layout("sparse_coo")
    register_all(registry, layout)


@hookimpl
def ember_opinfos():
    """Sparse COO samplers for the ops this plugin implements (``ember conformance DEV --layout sparse_coo``)."""
    from ._opinfos import sparse_opinfos
    return sparse_opinfos()
