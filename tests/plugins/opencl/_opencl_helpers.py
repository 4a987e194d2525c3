"""What the opencl plugin's test files share: the device check, the device, the dtypes it declares
on PoCL, and host/device conversions."""
from __future__ import annotations

import numpy as np

import ember

DEV = "opencl:0"
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]
NO_DEVICE = "no OpenCL device (install pocl-binary-distribution)"


def has_device() -> bool:
    """Whether ember-opencl is loaded and has a device (PoCL in CI)."""
    try:
        ember.plugins.ensure_loaded()
        return "opencl" in ember._registry.device_types and ember.opencl.is_available()
    except Exception:  # noqa: BLE001 - any failure to find a platform means: skip
        return False


def dev(a):
    """A numpy array (or list) as a tensor on the device."""
    return ember.tensor(np.asarray(a)).to(DEV)


def host(t):
    """A device tensor's values as a numpy array (a copy)."""
    return np.array(t.cpu().numpy())
