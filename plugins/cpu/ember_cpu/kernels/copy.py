"""copy_ and fill_: the runtime primitives every strided op builds on."""
from __future__ import annotations

import warnings

import numpy as np

from ._util import ALL, np_view, operand


def copy_(self, src, non_blocking=False):
    """Strided copy with broadcasting and dtype conversion (complex -> real drops the imaginary part)."""
    dst = np_view(self)
    s = np_view(src)
    if s.dtype.kind != "c" or dst.dtype.kind == "c":     # no ComplexWarning possible: no warnings context
        np.copyto(dst, s, casting="unsafe")
        return self
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.copyto(dst, s, casting="unsafe")
    return self


def fill_(self, value):
    """cpu kernel of ``fill_``, all dtypes: set every element of ``self`` to ``value`` in place (integer dtypes
    convert as C does: 2.7 -> 2, -1 -> 255 for uint8); returns ``self``.
    """
    o = np_view(self)
    if o.dtype.kind in "iub":
        # C-style conversion, as PyTorch: 2.7 -> 2, -1 -> 255 for uint8
        value = np.array(int(value) if isinstance(value, float) else value).astype(o.dtype)
    o.fill(value)
    return self


def register(lib):
    """Register copy_ and fill_ for device 'cpu', all dtypes, on ``lib``."""
    lib.impl("copy_", copy_, device="cpu", dtypes=ALL)
    lib.impl("fill_", fill_, device="cpu", dtypes=ALL)
