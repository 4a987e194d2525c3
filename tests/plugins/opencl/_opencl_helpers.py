"""What the opencl plugin's test files share: the device check, the device, the dtypes it declares
on PoCL, and host/device conversions."""
from __future__ import annotations

import numpy as np

import ember

DEV = "opencl:0"
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]


def has_device() -> bool:
    """Whether ember-opencl is loaded and has a device that passed its probe (PoCL or Intel's CPU runtime)."""
    try:
        ember.plugins.ensure_loaded()
        return "opencl" in ember._registry.device_types and ember.opencl.is_available()
    except Exception:  # noqa: BLE001 - any failure to find a platform means: skip
        return False


def plugin_loaded() -> bool:
    """Whether ember-opencl is installed and loaded (not excluded by EMBER_PLUGINS / EMBER_DISABLE_PLUGINS)."""
    return any(p.name == "opencl" and p.status == "loaded" for p in ember.plugins.list())


#: the skip reason of tests that need the plugin loaded (but no device)
NO_PLUGIN = "ember-opencl is not installed or is excluded (EMBER_PLUGINS / EMBER_DISABLE_PLUGINS)"


def unavailable_reason() -> str:
    """Why the opencl tests skip: ember.opencl's own reason (the probe's message and the fix)."""
    try:
        return f"no usable OpenCL device: {ember.opencl.unavailable_reason()}"
    except Exception as e:  # noqa: BLE001
        return f"no usable OpenCL device ({type(e).__name__}: {e})"


#: the skip reason of the opencl tests on this machine
NO_DEVICE = unavailable_reason()


def dev(a):
    """A numpy array (or list) as a tensor on the device."""
    return ember.tensor(np.asarray(a)).to(DEV)


def host(t):
    """A device tensor's values as a numpy array (a copy)."""
    return np.array(t.cpu().numpy())
