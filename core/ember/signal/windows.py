"""``ember.signal.windows``: window functions (matches torch.signal.windows, which follows SciPy).

Each window is computed in float64 on the host with numpy from its closed form (the
formulas of torch.signal.windows / scipy.signal.windows), then made a tensor of ``dtype``
(float32 / float64; default: the default dtype) on ``device``, like any creation function.
``sym=True`` gives a symmetric window (filter design); ``sym=False`` a periodic one (spectral
analysis: the symmetric window of length M + 1 without its last sample).

Errors (torch's ValueError / TypeError and words): a negative ``M`` ("... requires non-negative
window length, got M=-1"), a dtype other than float32 / float64, a non-strided layout, and the
parameter checks of each window (``std`` <= 0, ``tau`` <= 0, ``beta`` < 0, ``center`` with
``sym=True``, empty or non-sequence coefficients).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    import ember
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dtype = dtype or ember.get_default_dtype()
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _make(values, dtype, device, requires_grad):
    import ember
    return ember.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, device=device,
                        requires_grad=requires_grad)


def _linspace(start, step, M):
    return start + step * np.arange(M, dtype=np.float64)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-|n - center| / tau), ``center`` defaulting to the middle (matches torch.signal.windows.exponential)."""
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _linspace(-center / tau, 1.0 / tau, M)
    return _make(np.exp(-np.abs(k)), dtype, device, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sin(pi (n + 0.5) / M) (matches torch.signal.windows.cosine)."""
    dtype = _checks("cosine", M, dtype, layout)
    c = math.pi / (M + 1 if not sym and M > 1 else M) if M else 0.0
    return _make(np.sin(_linspace(0.5 * c, c, M)), dtype, device, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-(n - (M - 1) / 2)^2 / (2 std^2)) (matches torch.signal.windows.gaussian)."""
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    c = 1 / (std * math.sqrt(2))
    k = _linspace(start * c, c, M)
    return _make(np.exp(-k ** 2), dtype, device, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta) (matches torch.signal.windows.kaiser)."""
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _make(np.ones(M), dtype, device, requires_grad)
    c = 2.0 * beta / (M if not sym else M - 1)
    k = np.minimum(_linspace(-beta, c, M), beta)
    return _make(np.i0(np.sqrt(np.maximum(beta * beta - k * k, 0.0))) / np.i0(beta), dtype, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1)) (matches torch.signal.windows.general_cosine)."""
    dtype = _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _make(np.ones(M), dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _linspace(0.0, 2 * math.pi / (M if not sym else M - 1), M)
    w = sum((-1) ** i * ai * np.cos(i * k) for i, ai in enumerate(a))
    return _make(w, dtype, device, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / (M - 1)) (matches torch.signal.windows.general_hamming)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window, general_hamming with alpha = 0.54 (matches torch.signal.windows.hamming)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window, general_hamming with alpha = 0.5 (matches torch.signal.windows.hann)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window, general_cosine with a = (0.42, 0.5, 0.08) (matches torch.signal.windows.blackman)."""
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window 1 - |2n / (M - 1) - 1| (matches torch.signal.windows.bartlett)."""
    dtype = _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _make(np.ones(M), dtype, device, requires_grad)
    k = _linspace(-1.0, 2 / (M if not sym else M - 1), M)
    return _make(1 - np.abs(k), dtype, device, requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall (matches torch.signal.windows.nuttall)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
