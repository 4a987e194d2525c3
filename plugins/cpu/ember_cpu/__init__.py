"""ember-cpu: the CPU device for ember.

numpy kernels over strided numpy views of the storage buffer (no copies for views),
BLAS matmul through numpy, scipy.special for erf/erfinv. Registered through the
``ember.plugins`` entry point, exactly as a third-party plugin would be.
"""
from __future__ import annotations

import ember
from ember.plugins import hookimpl, API_VERSION

__version__ = "0.1.0"


@hookimpl
def ember_plugin_info():
    """The cpu plugin's manifest."""
    return {
        "name": "cpu",
        "version": __version__,
        "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
        "provides": {"device_types": ["cpu"], "layouts": ["strided"], "dtypes": sorted(d.name for d in ember.library.ALL_DENSE)},
    }


@hookimpl
def ember_register(registry):
    """Register the cpu device type (non-caching host allocator) and its kernels."""
    from ._runtime import CPURuntime
    from .kernels import register_all
    registry.register_device_type("cpu", CPURuntime(), caching_allocator=False)
    register_all(registry.library("ember_cpu"))
