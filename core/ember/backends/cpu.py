"""ember.backends.cpu (matches torch.backends.cpu.get_cpu_capability)."""
from __future__ import annotations

import platform

__all__ = ["get_cpu_capability"]


def _features() -> dict:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f
    except ImportError:                      # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as f
    return f


def get_cpu_capability() -> str:
    """The vector instruction level of this CPU as PyTorch names it: "AVX512" (AVX-512 F, BW, VL
    and DQ), "AVX2" (AVX2 and FMA3), "VSX", "Z VECTOR", else "DEFAULT". Read from numpy's CPU
    feature detection, which also picks the SIMD loops ember's cpu kernels run; "SVE256" is not
    reported (numpy does not tell SVE's vector length), an ARM CPU gives "DEFAULT".
    """
    f = _features()
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i386", "i686"):
        if all(f.get(k) for k in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ")):
            return "AVX512"
        if f.get("AVX2") and f.get("FMA3"):
            return "AVX2"
        return "DEFAULT"
    if machine.startswith("ppc") and f.get("VSX"):
        return "VSX"
    if machine == "s390x" and f.get("VX"):
        return "Z VECTOR"
    return "DEFAULT"
