"""``ember.fft``: discrete Fourier transforms (matches torch.fft).

Every transform is written with three primitives of ``ember._ops._fft`` (``fft_c2c``,
``fft_r2c``, ``fft_c2r``, as PyTorch's ``_fft_c2c`` / ``_fft_r2c`` / ``_fft_c2r``) and
differentiable shape ops (zero padding, narrowing, flip / roll), so gradients follow from
the primitives' derivatives. Names, signatures, defaults, result dtypes and error messages
follow torch.fft:

* ``norm``: ``"backward"`` (default; the inverse transforms scale by 1/n), ``"ortho"``
  (both by 1/sqrt(n)), ``"forward"`` (the forward transforms scale by 1/n);
* ``n`` / ``s``: the signal size(s) along ``dim``; the input is zero padded or trimmed to them
  (for ``irfft*`` / ``hfft*`` they are the *output* sizes, default ``2 * (m - 1)``);
* dtypes: integer and bool inputs are computed in the default float dtype; float32 / float64
  give complex64 / complex128 (``irfft*`` / ``hfft*`` give the real type); float16 and bfloat16
  are refused with RuntimeError "Unsupported dtype Half" as PyTorch's cpu does.

Errors (PyTorch's classes and words): IndexError for a dim out of range; RuntimeError for
``n`` < 1 ("Invalid number of data points (0) specified"), repeated dims, ``s`` / ``dim``
of different lengths, an unknown ``norm``, a complex input to ``rfft*`` / ``ihfft*``.

``ihfft`` / ``hfft`` use that conjugating a real signal's spectrum reverses the signal:
``conj(rfft(x)) = rfft(x[-k mod n])``, so no conjugation op is needed.
"""
from __future__ import annotations

import builtins
import numbers

import ember

from . import _dtype as D
from ._tensor import Tensor
from ._ops._fft import fft_c2c, fft_r2c, fft_c2r, _fft_c2c

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


# ---------------------------------------------------------------- argument handling
def _norm_mode(norm, forward):
    """PyTorch's fft_norm_mode for ``norm=`` of a forward / inverse transform: 0 none, 1 1/sqrt(n), 2 1/n."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "forward":
        return 2 if forward else 0
    if norm == "ortho":
        return 1
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _compute_dtype(name, x, require_complex=False):
    """The dtype the transform computes ``x`` in (integers / bool -> default float; complex when asked);
    TypeError for a non-tensor, RuntimeError "Unsupported dtype Half" for float16 / bfloat16."""
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    dt = x._dtype
    if not (dt.is_floating_point or dt.is_complex):
        dt = D.get_default_dtype()
    if dt.name in ("float16", "bfloat16"):
        raise RuntimeError(f"Unsupported dtype {D.torch_name(dt)}")
    return dt.to_complex if require_complex and not dt.is_complex else dt


def _promote(name, x, require_complex=False):
    """``x`` in the dtype the transform computes in (``_compute_dtype``)."""
    dt = _compute_dtype(name, x, require_complex)
    return x if dt is x._dtype else x.to(dt)


def _require_real(name, x):
    """RuntimeError for a complex input, in the words PyTorch uses for each transform."""
    if isinstance(x, Tensor) and x._dtype.is_complex:
        got = D.torch_name(x._dtype)
        if name in ("rfft", "ihfft"):
            raise RuntimeError(f"{name} expects a real input tensor, but got {got}")
        if name in ("rfft2", "rfftn"):
            raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {got}")
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {got}")


def _wrap(d, nd):
    if not isinstance(d, numbers.Integral) or isinstance(d, builtins.bool):
        raise TypeError(f"fft: dim must be an int, not {type(d).__name__}")
    if nd == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if not -nd <= d < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    return d % nd


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _shape_and_dims(x, s, dim):
    """(sizes, dims) by PyTorch's canonicalize_fft_shape_and_dim_args; a size of -1 means "the input's"."""
    nd = x.dim()
    if isinstance(dim, numbers.Integral):
        dim = (dim,)
    if isinstance(s, numbers.Integral):
        s = (s,)
    if dim is not None:
        dims = [_wrap(d, nd) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = list(s)
        if dim is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if dim is None:
            if len(s) > nd:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} dimensions.")
            dims = list(range(nd - len(s), nd))
        sizes = [x._shape[d] if n == -1 else int(n) for n, d in zip(s, dims)]
    else:
        if dim is None:
            dims = list(range(nd))
        sizes = [x._shape[d] for d in dims]
    for n in sizes:
        _check_points(n)
    return sizes, dims


def _resize(x, dims, sizes):
    """``x`` zero padded or trimmed along each of ``dims`` to ``sizes`` (differentiable)."""
    pad = [0] * (2 * x.dim())
    for d, n in zip(dims, sizes):
        have = x._shape[d]
        if n < have:
            x = x.narrow(d, 0, n)
        elif n > have:
            pad[2 * (x.dim() - 1 - d) + 1] = n - have
    if any(pad):
        last = max(i for i, p in enumerate(pad) if p) + 1
        x = ember.nn.functional.pad(x, tuple(pad[:last + (last % 2)]))
    return x


def _reverse(x, dims):
    """x[-k mod n] along each of ``dims`` (the index reversal that conjugates a real signal's DFT)."""
    return ember.roll(ember.flip(x, dims), [1] * len(dims), dims)


def _finish(r, out):
    """``r``, or ``r`` copied into the user's ``out=`` (checked and resized as structured ops do)."""
    if out is None:
        return r
    from ._factory import check_out
    from ._ops._copy import copy_
    if r.requires_grad and ember.is_grad_enabled():
        raise RuntimeError("fft: functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if out._dtype is not r._dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {D.torch_name(r._dtype)}, but got "
                           f"{D.torch_name(out._dtype)} instead")
    check_out(_fft_c2c._op, out, r._shape, r._dtype, r._device)
    copy_(out, r)
    return out


# ---------------------------------------------------------------- the transforms, by kind
def _c2c(name, x, s, dim, norm, forward, out):
    """fft / ifft / fftn / ifftn: complex input through c2c; real input through r2c (full spectrum)."""
    x = _promote(name, x)
    sizes, dims = _shape_and_dims(x, s, dim)
    x = _resize(x, dims, sizes)
    mode = _norm_mode(norm, forward)
    if not dims:
        return _finish(x.to(x._dtype.to_complex if not x._dtype.is_complex else x._dtype, copy=True), out)
    if x._dtype.is_complex:
        r = fft_c2c(x, dims, mode, forward)
    elif forward:
        r = fft_r2c(x, dims, mode, False)
    else:   # the inverse of a real signal is the conjugate forward transform: reverse the signal
        r = fft_r2c(_reverse(x, dims), dims, mode, False)
    return _finish(r, out)


def _r2c(name, x, s, dim, norm, forward, out):
    """rfft / rfftn (forward) and ihfft / ihfftn (inverse: the signal reversed, so the result is conjugated)."""
    _require_real(name, x)
    x = _promote(name, x)
    sizes, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _resize(x, dims, sizes)
    if not forward:
        x = _reverse(x, dims)
    return _finish(fft_r2c(x, dims, _norm_mode(norm, forward), True), out)


def _c2r(name, x, s, dim, norm, forward, out):
    """irfft / irfftn (inverse) and hfft / hfftn (forward: the conjugated input, i.e. the result reversed)."""
    _compute_dtype(name, x)      # the dtype checks first, the argument checks next, before any conversion
    if s is not None and not isinstance(s, numbers.Integral):
        s = list(s)
    sizes, dims = _shape_and_dims(x, s, dim)
    mode = _norm_mode(norm, forward)
    x = _promote(name, x, require_complex=True)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    given_last = s is not None and (s if isinstance(s, numbers.Integral) else s[-1]) != -1
    last = sizes[-1] if given_last else 2 * (x._shape[dims[-1]] - 1)
    _check_points(last)
    sizes = sizes[:-1] + [last // 2 + 1]
    x = _resize(x, dims, sizes)
    r = fft_c2r(x, dims, mode, last)
    if forward:
        r = _reverse(r, dims)
    return _finish(r, out)


# ---------------------------------------------------------------- 1-D
def _one(n, dim):
    return (None if n is None else (n,)), (dim,)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """1-D discrete Fourier transform of ``input`` along ``dim`` (matches torch.fft.fft).

    ``n``: signal length (zero padded / trimmed to it); ``norm``: "backward" | "ortho" | "forward".
    Result: complex (complex64 for float32 / integer input, complex128 for float64), ``dim`` of size
    ``n``. RuntimeError: n < 1, an unknown norm, float16 input; IndexError: dim out of range."""
    s, d = _one(n, dim)
    return _c2c("fft", input, s, d, norm, True, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """1-D inverse discrete Fourier transform (matches torch.fft.ifft); as :func:`fft`, scaled by 1/n by
    default."""
    s, d = _one(n, dim)
    return _c2c("ifft", input, s, d, norm, False, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """1-D DFT of a real signal, the ``n // 2 + 1`` non-negative frequencies (matches torch.fft.rfft).
    RuntimeError "rfft expects a real input tensor, but got ComplexFloat" for complex input."""
    s, d = _one(n, dim)
    return _r2c("rfft", input, s, d, norm, True, out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of :func:`rfft` (matches torch.fft.irfft): a real signal of length ``n`` (default
    ``2 * (m - 1)`` for ``m`` input frequencies); the input is taken as the Hermitian half."""
    s, d = _one(n, dim)
    return _c2r("irfft", input, s, d, norm, False, out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """DFT of a Hermitian-symmetric signal given by its first half (matches torch.fft.hfft): a real
    result of length ``n`` (default ``2 * (m - 1)``); unscaled by default."""
    s, d = _one(n, dim)
    return _c2r("hfft", input, s, d, norm, True, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of :func:`hfft` (matches torch.fft.ihfft): the ``n // 2 + 1`` first entries of the
    inverse DFT of a real signal. RuntimeError for complex input."""
    s, d = _one(n, dim)
    return _r2c("ihfft", input, s, d, norm, False, out)


# ---------------------------------------------------------------- 2-D and n-D
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """2-D DFT over ``dim`` (matches torch.fft.fft2); ``s``: the signal sizes."""
    return _c2c("fft2", input, s, dim, norm, True, out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """2-D inverse DFT (matches torch.fft.ifft2)."""
    return _c2c("ifft2", input, s, dim, norm, False, out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """2-D DFT of a real signal, halved along the last of ``dim`` (matches torch.fft.rfft2)."""
    return _r2c("rfft2", input, s, dim, norm, True, out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Inverse of :func:`rfft2` (matches torch.fft.irfft2)."""
    return _c2r("irfft2", input, s, dim, norm, False, out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """2-D DFT of a Hermitian-symmetric signal given by its half (matches torch.fft.hfft2)."""
    return _c2r("hfft2", input, s, dim, norm, True, out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Inverse of :func:`hfft2` (matches torch.fft.ihfft2)."""
    return _r2c("ihfft2", input, s, dim, norm, False, out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-D DFT over ``dim`` (all dims, or the last ``len(s)``, when None; matches torch.fft.fftn).
    RuntimeError: ``s`` and ``dim`` of different lengths, repeated dims, a size < 1."""
    return _c2c("fftn", input, s, dim, norm, True, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-D inverse DFT (matches torch.fft.ifftn)."""
    return _c2c("ifftn", input, s, dim, norm, False, out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-D DFT of a real signal, halved along the last of ``dim`` (matches torch.fft.rfftn)."""
    return _r2c("rfftn", input, s, dim, norm, True, out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of :func:`rfftn` (matches torch.fft.irfftn); the last output size defaults to 2 * (m - 1)."""
    return _c2r("irfftn", input, s, dim, norm, False, out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-D DFT of a Hermitian-symmetric signal given by its half (matches torch.fft.hfftn)."""
    return _c2r("hfftn", input, s, dim, norm, True, out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of :func:`hfftn` (matches torch.fft.ihfftn)."""
    return _r2c("ihfftn", input, s, dim, norm, False, out)


# ---------------------------------------------------------------- frequencies and shifts
def _freq_dtype(dtype):
    dtype = dtype or D.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"fftfreq requires a floating point dtype, but got {D.torch_name(dtype)}")
    return dtype


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d`` (matches torch.fft.fftfreq):
    ``[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d * n)``, 1-D of the default float dtype."""
    dtype = _freq_dtype(dtype if out is None or dtype is not None else out.dtype)
    k = ember.arange(n, dtype=ember.int64, device=device)
    k = ember.where(k >= (n + 1) // 2, k - n, k).to(dtype) * (1.0 / (n * d))
    r = k.requires_grad_(requires_grad) if requires_grad else k
    return _finish(r, out)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The non-negative sample frequencies of an ``n``-point real DFT (matches torch.fft.rfftfreq):
    ``[0, 1, ..., n // 2] / (d * n)``."""
    dtype = _freq_dtype(dtype if out is None or dtype is not None else out.dtype)
    k = ember.arange(n // 2 + 1, dtype=ember.int64, device=device).to(dtype) * (1.0 / (n * d))
    r = k.requires_grad_(requires_grad) if requires_grad else k
    return _finish(r, out)


def _shift_dims(input, dim):
    if dim is None:
        return list(range(input.dim()))
    if isinstance(dim, numbers.Integral):
        return [dim]
    return list(dim)


def fftshift(input, dim=None):
    """Move the zero frequency to the centre along ``dim`` (all dims when None; matches
    torch.fft.fftshift): a roll by ``size // 2``."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return ember.roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """The inverse of :func:`fftshift` (matches torch.fft.ifftshift): a roll by ``(size + 1) // 2``."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return ember.roll(input, [(input.shape[d] + 1) // 2 for d in dims], dims)
