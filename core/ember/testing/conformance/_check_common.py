"""Helpers shared by the device-level checks (``_device_checks``, ``_roundtrip``, ``_smoke``):
how a check fails, and how two tensors are compared on the host."""
from __future__ import annotations

import numpy as np

from ._runner import ConformanceFailure, _value_mismatches

__all__ = ["fail", "host", "same"]


def fail(name, target, problems, dtype=None):
    """Raise the ConformanceFailure of check ``device_<name>`` (for ``dtype``, a per-dtype check's) listing
    ``problems`` (one a line)."""
    body = "\n".join("  " + str(p).replace("\n", "\n  ") for p in problems)
    of = f", dtype {dtype}" if dtype else ""
    raise ConformanceFailure(f"device_{name} failed on device {target.device}{of}:\n{body}")


def host(t):
    """A host numpy copy of tensor ``t`` (a quantized tensor: its stored integers)."""
    return np.array(t.detach().cpu().numpy())


def same(got, exp, what, rtol=0.0, atol=0.0):
    """A problem string when arrays/tensors ``got`` and ``exp`` differ (exactly by default, NaN == NaN),
    else None."""
    import ember
    g = host(got) if isinstance(got, ember.Tensor) else np.asarray(got)
    e = host(exp) if isinstance(exp, ember.Tensor) else np.asarray(exp)
    if g.shape != e.shape:
        return f"{what}: shape {g.shape}, expected {e.shape}"
    msg = _value_mismatches(g, e, rtol, atol, rtol == 0 and atol == 0)
    return f"{what}: {msg}" if msg else None
