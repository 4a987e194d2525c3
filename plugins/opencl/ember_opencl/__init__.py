"""ember-opencl: the "opencl" device type on pyopencl (any OpenCL platform; on CPU-only machines PoCL or
Intel's CPU runtime, whichever can build kernels on this CPU).

- ``_icd.py``      - makes pip-installed runtimes (Intel's) visible to pyopencl's ICD loader, at import;
- ``_runtime.py``  - discovery (every device probed with a trivial kernel, one CPU platform chosen), raw
                     ``cl.Buffer`` memory, host transfers, Philox state;
- ``_codegen.py``  - the shared kernel machinery: C types, strided addressing, build cache, launch;
- ``kernels/``     - the primitive set in OpenCL C (copy, elementwise, reduce, linalg, index, random);
- this file        - the manifest and the registration hook.

dtypes: bool, uint8, int8, int16, int32, int64, float32 on every device; float64 when every
opencl device reports ``cl_khr_fp64`` and float16 when every device reports ``cl_khr_fp16``
(the manifest then declares them, and the conformance suite tests them). A kernel that
needs a precision its device lacks raises RuntimeError naming the kernel, the device and the
missing extension. Nothing is opened, compiled or allocated at registration: devices are
enumerated when first asked for, contexts and queues created on first use.

Environment: ``EMBER_OPENCL_PLATFORM=<substring>`` keeps only matching platforms (``intel``, ``pocl``,
or any part of a platform's name). docs/opencl.md: runtimes tested, selection, failure modes.
"""
from __future__ import annotations

import importlib
import warnings

from ember.plugins import hookimpl, API_VERSION

from . import _icd

# before anything lists OpenCL platforms (pyopencl's loader reads OCL_ICD_VENDORS once)
_icd.expose_installed_runtimes()

__version__ = "0.1.0"

BASE_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32"]
#: kernel modules under ember_opencl.kernels, each with ``register(lib, dtypes)`` or ``register(lib)``
KERNEL_MODULES = ("copy", "elementwise", "reduce", "linalg", "index", "random", "sort_scan", "indexing", "unique")


def supported_dtypes() -> list:
    """The dtype names every available opencl device supports (BASE_DTYPES + float64 / float16 when all have them)."""
    from ._runtime import RUNTIME
    try:
        devs = [d for _, d in RUNTIME.devices()]
    except Exception:  # noqa: BLE001 - never let discovery break the manifest
        devs = []
    exts = [set(d.extensions.split()) for d in devs]
    names = list(BASE_DTYPES)
    if not devs or all("cl_khr_fp64" in e for e in exts):
        names.append("float64")
    if devs and all("cl_khr_fp16" in e for e in exts):
        names.insert(names.index("float32"), "float16")
    return names


@hookimpl
def ember_plugin_info():
    """The manifest (reads the platform list once, to know which float dtypes the devices have)."""
    return {
        "name": "opencl",
        "version": __version__,
        "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
        "provides": {"device_types": ["opencl"], "layouts": ["strided"], "dtypes": supported_dtypes()},
        "conformance_xfails": "conformance_xfails.txt",
    }


def _register_kernels(lib, dtypes):
    """Call ``register`` of every kernel module present; a module not written yet is skipped, one that
    fails to import or register is skipped with a warning naming it (the others keep working)."""
    import inspect
    for name in KERNEL_MODULES:
        modname = f"{__name__}.kernels.{name}"
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name == modname:
                continue
            warnings.warn(f"ember-opencl: kernels.{name} failed to import ({e}); its ops are not registered")
            continue
        except Exception as e:  # noqa: BLE001
            warnings.warn(f"ember-opencl: kernels.{name} failed to import ({type(e).__name__}: {e}); "
                          f"its ops are not registered")
            continue
        reg = getattr(mod, "register", None)
        if reg is None:
            continue
        if "dtypes" in inspect.signature(reg).parameters:
            reg(lib, dtypes=dtypes)
        else:
            reg(lib)


@hookimpl
def ember_register(registry):
    """Register the "opencl" device type (caching allocator over cl.Buffer) and the kernels."""
    import ember
    from ._runtime import RUNTIME
    registry.register_device_type("opencl", RUNTIME, caching_allocator=True)
    dtypes = [getattr(ember, n) for n in supported_dtypes()]
    _register_kernels(registry.library("ember_opencl"), dtypes)
    registry.register_fallback("opencl", _unsupported_dtype)
    from .kernels import fused
    registry.register_fuser("opencl", fused.fuse, features=fused.FEATURES)   # ember.compile: one kernel per run


def _unsupported_dtype(op, args, kwargs):
    """The opencl 'fallback': never runs anything on the cpu. It is reached only for a dispatch key
    with no kernel and no composite, i.e. a dtype the devices do not support (float16 without
    cl_khr_fp16, float64 without cl_khr_fp64, bfloat16, complex): a clear error naming the missing
    extension, instead of the dispatcher's generic one."""
    import ember
    tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, ember.Tensor)]
    t = next((a for a in tensors if a.device.type == "opencl"), tensors[0] if tensors else None)
    name = t.dtype.name if t is not None else "?"
    need = {"float16": "the cl_khr_fp16 extension", "float64": "the cl_khr_fp64 extension"}.get(name)
    if name in supported_dtypes():          # a declared dtype: an op without kernel or composite (a bug)
        raise NotImplementedError(f"ember-opencl: '{op.name}' has no kernel or composite for {name}")
    dev = f"{t.device} ('{ember.opencl.get_device_name(t.device.index or 0)}')" if t is not None else "opencl"
    why = f"it needs {need}, which the device does not report" if need else "ember-opencl does not implement it"
    raise RuntimeError(f"\"{op.name}\" not implemented for '{name}' on {dev}: {why}")
