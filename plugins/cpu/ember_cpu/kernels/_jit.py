"""Compiled loops (numba) for the cpu ops whose cost is numpy's per-call overhead rather than arithmetic.

One LSTM step on a (20, 512) gate array is about fifteen numpy calls of a few µs each, where the arithmetic takes
well under one: a numpy cell costs 20-40 µs, PyTorch's C++ cell about 4. The float32 LSTM cell and its backward
are therefore one numba loop each (``_jit_kernels``): 4.8 µs for that step. Everything else stays numpy - a loop
compiled per fused subgraph would cost ~0.5 s of compile time per kernel, where ember.compile promises capture in
under a second.

numba has no vectorised tanh (its ``math.tanh`` is a scalar libm call, 2 ns an element; numpy's is 0.37), so the
loops use a rational approximation, tanh(x) ~ x P(x^2) / Q(x^2) with P of degree 5 and Q of degree 3 in x^2, clamped
to |x| <= 8. Its coefficients are ember's own fit (``fit_tanh`` below, reproduced by the tests): a weighted linear
least-squares fit in the Sanathanan-Koerner iteration, reweighted toward the minimax relative error. Evaluated in
float32 it is within 6 ulp of the correctly rounded tanh over all floats (numpy's float32 tanh: 1.3 ulp), a few
1e-7 absolute, within the float32 tolerances the LSTM is tested with against PyTorch.

``jit_kernels()`` imports numba on first use (importing it costs ~0.3 s, so ember_cpu does not at import) and
returns None when numba is missing or ``EMBER_CPU_JIT=0``: the numpy kernels then run. ``cache=True`` keeps the
compiled code on disk, so only a machine's first process pays the compile (~1.5 s for both functions).
"""
from __future__ import annotations

import os
import threading

import numpy as np

__all__ = ["TANH_P", "TANH_Q", "TANH_CLAMP", "fit_tanh", "jit_kernels", "jit_available"]

# the float32 coefficients of fit_tanh(): P(u) = sum TANH_P[k] u^k, Q(u) = sum TANH_Q[k] u^k, u = x^2
TANH_P = (1.0, 0.12979397177696228, 0.002986050210893154, 9.880443030851893e-06, -1.4709956808189872e-08,
          2.3524826184284642e-11)
TANH_Q = (1.0, 0.46312713623046875, 0.024028688669204712, 0.00023722962941974401)
TANH_CLAMP = 8.0


def fit_tanh(p_terms=6, q_terms=3, clamp=TANH_CLAMP, iterations=60):
    """The rational fit behind TANH_P / TANH_Q: tanh(x) ~ x P(x^2) / Q(x^2) on (0, clamp], Q(0) = 1, P with
    ``p_terms`` coefficients and Q with ``q_terms`` + 1. Returns (P, Q) as float64 lists in powers of x^2.

    Linearised least squares (x P - tanh(x) Q = 0 at Chebyshev-spaced points and near zero), each iteration
    divided by the previous Q (Sanathanan-Koerner, so the fit minimises the true relative error) and, after ten,
    reweighted toward the points of largest relative error (Lawson), which moves it toward the minimax fit. The
    fit is in u = (x / clamp)^2, which keeps the system well conditioned, and scaled back at the end."""
    x = np.concatenate([clamp * (1 - np.cos(np.linspace(0, np.pi / 2, 60001)))[1:], np.geomspace(1e-6, 1e-3, 500)])
    t = np.tanh(x)
    u = (x / clamp) ** 2
    q_prev, lawson = np.ones_like(x), np.ones_like(x)
    for it in range(iterations):
        a = np.hstack([np.stack([x * u ** k for k in range(p_terms)], 1),
                       np.stack([-t * u ** k for k in range(1, q_terms + 1)], 1)])
        w = lawson / (t * q_prev)
        c = np.linalg.lstsq(a * w[:, None], t * w, rcond=None)[0]
        p, q = c[:p_terms], np.concatenate([[1.0], c[p_terms:]])
        q_prev = np.polyval(q[::-1], u)
        rel = np.abs(x * np.polyval(p[::-1], u) / q_prev - t) / t
        if it >= 10:
            lawson = lawson * (rel / rel.max()) ** 0.2
            lawson /= lawson.max()
    s = clamp ** -2
    return [float(p[k] * s ** k) for k in range(p_terms)], [float(q[k] * s ** k) for k in range(q_terms + 1)]


_lock = threading.Lock()
_kernels = None         # None: not probed yet; False: unavailable; else the _jit_kernels module


def _probe():
    global _kernels
    with _lock:
        if _kernels is None:
            if os.environ.get("EMBER_CPU_JIT", "1") == "0":
                _kernels = False
            else:
                try:
                    from . import _jit_kernels
                except ImportError:       # numba not installed (or not for this Python): the numpy kernels run
                    _kernels = False
                else:
                    from .._runtime import scipy_blas
                    scipy_blas()          # numba's np.dot calls scipy's BLAS: its pool held to one thread
                    _kernels = _jit_kernels
    return _kernels


def jit_available() -> bool:
    """Whether the numba loops run (numba imports and EMBER_CPU_JIT is not 0); imports numba the first time."""
    return jit_kernels() is not None


def jit_kernels():
    """The ``_jit_kernels`` module (lstm_cell, lstm_cell_backward, add_rows), or None where numba does not run."""
    k = _kernels if _kernels is not None else _probe()
    return k or None
