"""Discrete Fourier transform kernels (the primitives behind ``ember.fft``) through scipy.fft.

scipy.fft (pocketfft) is used rather than numpy.fft: both keep complex64 for float32 input
(numpy >= 2), but scipy's is faster on large single-precision transforms (2^20 complex64:
about 4x) and takes ``workers=``, which follows ``ember.set_num_threads``. Figures:
docs/benchmarks.md, "ember.fft" (benchmarks/bench_fft.py).

``normalization`` is PyTorch's fft_norm_mode (0 none, 1 1/sqrt(n), 2 1/n); scipy's ``norm=``
names the scaling of the *forward* transform, so the inverse transforms map it the other way.
"""
from __future__ import annotations

import numpy as np
import scipy.fft as sfft

import ember

from ._util import np_view

_FORWARD_NORM = ("backward", "ortho", "forward")   # mode -> scipy norm of a forward transform
_INVERSE_NORM = ("forward", "ortho", "backward")   # mode -> scipy norm of an inverse transform


_THREADED = 1 << 16      # elements from which a transform asks for the thread count (that query costs ~13 us)


def _workers(x):
    """scipy's ``workers=``: ember's intra-op thread count for large inputs, 1 for small ones."""
    return max(1, ember.get_num_threads()) if x.size >= _THREADED else 1


def _call(one_d, n_d, x, dim, **kw):
    """scipy's 1-D function for one dim (less per-call overhead than its n-D one), else the n-D one."""
    if len(dim) == 1:
        return one_d(x, axis=dim[0], **kw)
    return n_d(x, axes=dim, **kw)


def fft_c2c(self, dim, normalization, forward, *, out):
    """cpu kernel of ``fft_c2c``, complex64 / complex128: write the n-D DFT of ``self`` over ``dim``
    (exp(-2 pi i jk / n) when ``forward``, else exp(+...)), scaled by ``normalization``, into ``out``."""
    x = np_view(self)
    if forward:
        r = _call(sfft.fft, sfft.fftn, x, dim, norm=_FORWARD_NORM[normalization], workers=_workers(x))
    else:
        r = _call(sfft.ifft, sfft.ifftn, x, dim, norm=_INVERSE_NORM[normalization], workers=_workers(x))
    np.copyto(np_view(out), r, casting="unsafe")


def fft_r2c(self, dim, normalization, onesided, *, out):
    """cpu kernel of ``fft_r2c``, float32 / float64: write the forward DFT of the real ``self`` over ``dim``
    into the complex ``out`` (the last dim's first n // 2 + 1 entries when ``onesided``)."""
    x = np_view(self)
    norm = _FORWARD_NORM[normalization]
    if onesided:
        r = _call(sfft.rfft, sfft.rfftn, x, dim, norm=norm, workers=_workers(x))
    else:
        r = _call(sfft.fft, sfft.fftn, x, dim, norm=norm, workers=_workers(x))
    np.copyto(np_view(out), r, casting="unsafe")


def fft_c2r(self, dim, normalization, last_dim_size, *, out):
    """cpu kernel of ``fft_c2r``, complex64 / complex128: write the real inverse DFT of the Hermitian half
    ``self`` over ``dim`` (last dim -> ``last_dim_size`` entries) into ``out``."""
    x = np_view(self)
    norm = _INVERSE_NORM[normalization]
    if len(dim) == 1:
        r = sfft.irfft(x, n=last_dim_size, axis=dim[0], norm=norm, workers=_workers(x))
    else:
        s = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
        r = sfft.irfftn(x, s=s, axes=dim, norm=norm, workers=_workers(x))
    np.copyto(np_view(out), r, casting="unsafe")


def register(lib):
    """Register the three transform primitives for device 'cpu' on ``lib`` (complex / float32 and float64)."""
    lib.impl("fft_c2c", fft_c2c, device="cpu", dtypes=(ember.complex64, ember.complex128))
    lib.impl("fft_r2c", fft_r2c, device="cpu", dtypes=(ember.float32, ember.float64))
    lib.impl("fft_c2r", fft_c2r, device="cpu", dtypes=(ember.complex64, ember.complex128))
