"""ember-vdev: the reference out-of-tree device plugin ("vdev", two devices).

A simulated accelerator whose device memory is a host arena per device, with only THE
PRIMITIVE SET of kernels (docs/vendor-guide.md); every other op reaches it as a
composite over those. Copy this package to start a device plugin:

- ``runtime.py``  - the ``DeviceRuntime``: arena allocator, host transfers, RNG state;
- ``kernels.py``  - the primitive kernels (numpy over views of the arena);
- ``ops.py``      - a custom op in the plugin's namespace, with autograd;
- this file       - the two hooks ember calls: the manifest and the registration.

Environment: ``EMBER_VDEV_MEMORY`` (arena size per device, default 256M),
``EMBER_VDEV_FALLBACK=1`` (register ember's cpu fallback: ops without kernel or composite
then run on cpu through counted copies, with a warning per op).
"""
from __future__ import annotations

import os

from ember.plugins import hookimpl, API_VERSION

__version__ = "0.1.0"


@hookimpl
def ember_plugin_info():
    """The manifest: read before anything is registered (cheap: imports nothing heavy)."""
    return {
        "name": "vdev",
        "version": __version__,
        "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
        "provides": {"device_types": ["vdev"], "layouts": ["strided"], "ops": ["vdev::fused_scale_shift"],
                     # the dtypes the conformance suite tests on vdev: the cpu plugin's set
                     "dtypes": ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                                "float32", "float64", "complex64", "complex128"]},
        # expected failures of the conformance suite on vdev (see docs/vendor-guide.md)
        "conformance_xfails": "conformance_xfails.txt",
    }


@hookimpl
def ember_register(registry):
    """Register the device type, its kernels, the custom op and (opt-in) the cpu fallback.

    All-or-nothing: if anything here raises, ember keeps none of it and reports the plugin as failed.
    """
    import ember
    from . import kernels, ops
    from .runtime import RUNTIME
    registry.register_device_type("vdev", RUNTIME, caching_allocator=True)
    kernels.register(registry.library("ember_vdev"))
    ops.register(registry.library("vdev"))
    if os.environ.get("EMBER_VDEV_FALLBACK", "0") == "1":
        registry.register_fallback("vdev", ember.library.cpu_fallback)


@hookimpl(optionalhook=True)
def ember_opinfos():
    """Op-database entries for the plugin's own op, so that the conformance suite tests it."""
    from .testing import opinfos
    return opinfos()
