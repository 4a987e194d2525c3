"""ember-cpu: the CPU device for ember.

numpy kernels over strided numpy views of the storage buffer (no copies for views),
BLAS matmul through numpy, scipy.special for erf/erfinv. Registered through the
``ember.plugins`` entry point, exactly as a third-party plugin would be.
"""
from __future__ import annotations

import warnings

import ember
from ember.plugins import hookimpl, API_VERSION

__version__ = "0.1.0"

# numpy's floating-point RuntimeWarnings raised inside this plugin's kernels (inf * 0, an overflowing
# cast, x / 0) are not news to the user: PyTorch computes the same IEEE results silently. A warnings
# filter on this package's modules costs nothing per op (np.errstate costs ~1 us a call); warnings
# that numpy raises in the user's own code are untouched.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember_cpu(\.|$)")


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
    from . import fused
    registry.register_fuser("cpu", fused.fuse)          # ember.compile: one generated function per elementwise run
