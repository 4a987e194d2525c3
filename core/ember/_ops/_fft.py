"""The three discrete Fourier transform primitives behind ``ember.fft`` (as PyTorch's
``_fft_c2c``, ``_fft_r2c`` and ``_fft_c2r``).

``fft_c2c(self, dim, normalization, forward)``  complex -> complex over ``dim``;
``fft_r2c(self, dim, normalization, onesided)``  real -> complex, forward transform; with
    ``onesided`` the last of ``dim`` keeps ``n // 2 + 1`` entries (the rest follows by
    Hermitian symmetry);
``fft_c2r(self, dim, normalization, last_dim_size)``  the inverse of a onesided ``fft_r2c``:
    complex (Hermitian half) -> real, the last of ``dim`` becoming ``last_dim_size``.

``normalization`` is PyTorch's ``fft_norm_mode``: 0 no scaling, 1 scale by 1 / sqrt(n),
2 scale by 1 / n (n = the product of the transformed sizes of the *output*'s signal,
``last_dim_size`` for c2r). The public functions (``ember.fft``) pad or trim the input to
the requested sizes, promote dtypes and turn ``norm=`` into this number before calling.

Only float32 / float64 (complex64 / complex128) are transformed, as PyTorch's cpu does.
Devices: ember-cpu has kernels (scipy.fft). A device without a kernel runs the transform
through a *declared host path*: each primitive's composite copies its input to cpu, runs
the cpu kernel and copies the result back, counted and warned about exactly as a device
fallback is (``ember.profiler.record_fallbacks``, ``EMBER_FALLBACK_WARN``), so the
conformance report marks it "F". It does not depend on the device registering a fallback.
"""
from __future__ import annotations

from .. import _dtype as D
from .._dispatch import declare
from ..library import cpu_fallback
from ._meta import check_tensor

__all__ = ["fft_c2c", "fft_r2c", "fft_c2r"]

#: the dtypes the transforms compute in (PyTorch's cpu: float / double and their complex types)
TRANSFORM_REAL = ("float32", "float64")
TRANSFORM_COMPLEX = ("complex64", "complex128")


def _key(device, t, dtype):
    return (device.type, t._layout.name, dtype)


def _check_dims(op, self, dim):
    nd = self.dim()
    out = []
    for d in dim:
        if not -nd <= d < nd or nd == 0:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, {max(nd, 1) - 1}], "
                             f"but got {d})")
        out.append(d % nd)
    if len(set(out)) != len(out):
        raise RuntimeError("FFT dims must be unique")
    if not out:
        raise RuntimeError(f"{op}: expected at least one dim to transform")
    return tuple(out)


def _check_norm(normalization):
    if normalization not in (0, 1, 2):
        raise RuntimeError(f"{normalization} is not a valid fft normalization mode (0, 1 or 2)")


# ---------------------------------------------------------------- metas
def _c2c_meta(self, dim, normalization, forward):
    check_tensor(self, "fft_c2c")
    if self._dtype.name not in TRANSFORM_COMPLEX:
        raise RuntimeError(f"fft_c2c: expected a complex64 or complex128 input, but got {D.torch_name(self._dtype)}")
    _check_dims("fft_c2c", self, dim)
    _check_norm(normalization)
    return self._device, _key(self._device, self, self._dtype), self._shape, self._dtype


def _r2c_meta(self, dim, normalization, onesided):
    check_tensor(self, "fft_r2c")
    if self._dtype.name not in TRANSFORM_REAL:
        raise RuntimeError(f"fft_r2c: expected a float32 or float64 input, but got {D.torch_name(self._dtype)}")
    dims = _check_dims("fft_r2c", self, dim)
    _check_norm(normalization)
    shape = list(self._shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return self._device, _key(self._device, self, self._dtype), tuple(shape), self._dtype.to_complex


def _c2r_meta(self, dim, normalization, last_dim_size):
    check_tensor(self, "fft_c2r")
    if self._dtype.name not in TRANSFORM_COMPLEX:
        raise RuntimeError(f"fft_c2r: expected a complex64 or complex128 input, but got {D.torch_name(self._dtype)}")
    dims = _check_dims("fft_c2r", self, dim)
    _check_norm(normalization)
    if last_dim_size < 1:
        raise RuntimeError(f"Invalid number of data points ({last_dim_size}) specified")
    shape = list(self._shape)
    shape[dims[-1]] = last_dim_size
    return self._device, _key(self._device, self, self._dtype), tuple(shape), self._dtype.to_real


# ---------------------------------------------------------------- declarations
_fft_c2c = declare("fft_c2c(Tensor self, int[] dim, int normalization, bool forward) -> Tensor", _c2c_meta,
                   doc="Complex-to-complex DFT over dim.")
_fft_r2c = declare("fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor", _r2c_meta,
                   doc="Real-to-complex forward DFT over dim.")
_fft_c2r = declare("fft_c2r(Tensor self, int[] dim, int normalization, int last_dim_size) -> Tensor", _c2r_meta,
                   doc="Complex (Hermitian half) to real inverse DFT over dim.")
# a device without fft kernels runs them through the host path (``OpDef.host``: copy to cpu, the cpu kernel, copy
# back; counted, warned about and reported as a fallback by the dispatcher)
for _entry in (_fft_c2c, _fft_r2c, _fft_c2r):
    _entry._op.host = cpu_fallback


def fft_c2c(self, dim, normalization, forward, *, out=None):
    """Complex-to-complex DFT of ``self`` (complex64 / complex128) over ``dim`` (matches torch._fft_c2c):
    ``forward`` uses exp(-2 pi i jk / n), else exp(+2 pi i jk / n); ``normalization`` 0 / 1 / 2 scales
    by 1, 1 / sqrt(n), 1 / n. Same shape and dtype as ``self``.

    RuntimeError for a real input or a repeated dim; IndexError for a dim out of range."""
    return _fft_c2c(self, dim, normalization, forward, out=out)


def fft_r2c(self, dim, normalization, onesided, *, out=None):
    """Forward DFT of the real ``self`` (float32 / float64) over ``dim`` (matches torch._fft_r2c); the
    result is complex of the same precision, with ``n // 2 + 1`` entries along the last of ``dim``
    when ``onesided``.

    RuntimeError for a complex / half input or a repeated dim; IndexError for a dim out of range."""
    return _fft_r2c(self, dim, normalization, onesided, out=out)


def fft_c2r(self, dim, normalization, last_dim_size, *, out=None):
    """Inverse DFT of the Hermitian half ``self`` (complex64 / complex128) over ``dim`` to a real result
    whose last transformed dim has ``last_dim_size`` entries (matches torch._fft_c2r). The imaginary
    parts of the zero-frequency (and, for even sizes, Nyquist) entries are ignored.

    RuntimeError for a real input, a repeated dim or ``last_dim_size < 1``."""
    return _fft_c2r(self, dim, normalization, last_dim_size, out=out)

