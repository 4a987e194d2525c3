"""Tensor repr in PyTorch's format (placeholder; replaced by the full formatter)."""


def tensor_repr(t):
    import numpy as np
    body = np.array2string(t._host(), separator=", ", prefix="tensor(")
    extra = ""
    from . import _dtype as D
    if t._dtype not in (D.get_default_dtype(), D.int64, D.bool, D.default_complex_dtype()):
        extra += f", dtype={t._dtype!r}"
    if t._device.type != "cpu":
        extra += f", device='{t._device}'"
    return f"tensor({body}{extra})"
