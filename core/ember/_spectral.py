"""Short-time Fourier transforms and the top-level window functions (matches torch.stft,
torch.istft, torch.hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window).

``stft`` and ``istft`` are written with ember ops (reflect / constant padding, ``unfold``,
``ember.fft``, ``fold`` for the overlap-add), so they run on every device and are
differentiable wherever ``ember.fft`` is. The windows are computed in float64 on the host
from their closed forms (``periodic=True``: the symmetric window of length N + 1 without its
last sample, as PyTorch) and made tensors of ``dtype`` on ``device``.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from . import _dtype as D

__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


# ---------------------------------------------------------------- top-level windows
def _window(name, length, periodic, dtype, layout, device, requires_grad, formula):
    import ember
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={length}")
    if layout is not None and layout is not ember.strided:
        raise RuntimeError(f"{name} is not implemented for sparse types, got: {layout}")
    dtype = dtype or D.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {D.torch_name(dtype)}")
    if length <= 1:
        w = np.ones(length)
    else:
        n = length + 1 if periodic else length
        w = formula(np.arange(n, dtype=np.float64), n)[:length]
    return ember.tensor(w, dtype=dtype, device=device, requires_grad=requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """Hann window 0.5 - 0.5 cos(2 pi n / (N - 1)), 1-D of ``window_length`` (matches torch.hann_window).
    RuntimeError for a negative length or a non-floating dtype."""
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, N: 0.5 - 0.5 * np.cos(2 * math.pi * n / (N - 1)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """Hamming window alpha - beta cos(2 pi n / (N - 1)) (matches torch.hamming_window)."""
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, N: alpha - beta * np.cos(2 * math.pi * n / (N - 1)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """Blackman window 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)) (matches
    torch.blackman_window)."""
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, N: (0.42 - 0.5 * np.cos(2 * math.pi * n / (N - 1))
                                 + 0.08 * np.cos(4 * math.pi * n / (N - 1))))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """Triangular window 1 - |2n / (N - 1) - 1| (matches torch.bartlett_window)."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta) (matches torch.kaiser_window)."""
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda n, N: np.i0(beta * np.sqrt(np.maximum(1 - (2 * n / (N - 1) - 1) ** 2, 0.0))) / np.i0(beta))


# ---------------------------------------------------------------- stft / istft
def _padded_window(window, n_fft, win_length, like):
    """The window (ones when None) zero padded on both sides to ``n_fft``, as PyTorch centres it."""
    import ember
    if window is None:
        window = ember.ones(win_length, dtype=like.dtype.to_real if like.dtype.is_complex else like.dtype,
                            device=like.device)
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = ember.nn.functional.pad(window, (left, n_fft - win_length - left))
    return window


def _check_window(name, window, win_length):
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """Short-time Fourier transform (matches torch.stft).

    ``input``: (L,) or (B, L). Frames of ``n_fft`` samples every ``hop_length`` (default n_fft // 4)
    are multiplied by ``window`` (length ``win_length``, default n_fft, centred and zero padded to
    n_fft; ones when None) and transformed. ``center`` pads the signal by n_fft // 2 on both sides
    with ``pad_mode`` ("reflect", "constant", "replicate", "circular"). ``normalized`` scales by
    n_fft^-1/2. ``onesided`` (default: True for real input and window) keeps n_fft // 2 + 1 frequencies.

    Returns complex (B?, n_freq, n_frames) when ``return_complex=True``; ``return_complex=False`` (deprecated
    in PyTorch) returns the real and imaginary parts in a last dim of size 2. RuntimeError, in PyTorch's
    words, when ``return_complex`` is not given for real input, for a 0-D / 3-D+ input, hop_length <= 0,
    win_length outside (0, n_fft], a window of the wrong size, n_fft outside (0, length]."""
    import ember
    if align_to_window is not None and center:
        raise RuntimeError("stft: align_to_window should only be set when center = false")
    if align_to_window:
        raise NotImplementedError("stft: align_to_window=True is not implemented in ember")
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.", UserWarning,
                      stacklevel=2)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if input.dim() not in (1, 2):
        raise RuntimeError("stft: expected a 1D or 2D tensor")
    x = input.unsqueeze(0) if input.dim() == 1 else input
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(D.get_default_dtype())
    if center:
        pad = n_fft // 2
        x = ember.nn.functional.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    _check_window("stft", window, win_length)
    if window is None and win_length == n_fft:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    w = _padded_window(window, n_fft, win_length, x)
    frames = x.unfold(-1, n_fft, hop_length) * w                  # (B, n_frames, n_fft)
    onesided = (not complex_in) if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = ember.fft.rfft(frames, dim=-1, norm=norm) if onesided else ember.fft.fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(-1, -2)                                  # (B, n_freq, n_frames)
    if input.dim() == 1:
        spec = spec.squeeze(0)
    if not return_complex:
        real = spec.to(spec.dtype.to_real)
        imag = (spec * (-1j)).to(spec.dtype.to_real)
        return ember.stack([real, imag], -1)
    return spec


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """Inverse short-time Fourier transform by windowed overlap-add (matches torch.istft).

    ``input``: complex (n_freq, n_frames) or (B, n_freq, n_frames), as ``stft(..., return_complex=True)``
    gives. Each frame is inverse transformed (``irfft`` when ``onesided``, default: n_freq != n_fft),
    multiplied by the window, overlap-added, and divided by the overlap-added squared window; ``center``
    removes n_fft // 2 samples at both ends; ``length`` trims or zero pads the result. Returns real
    (B?, length) (``return_complex=True``: complex, for two-sided input only).

    RuntimeError, in PyTorch's words: a real input; a window whose overlap-added square is 0 somewhere
    ("window overlap add min: ..."); a onesided input whose frequency size is not n_fft // 2 + 1."""
    import ember
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got "
                           f"{input.dim()}")
    spec = input.unsqueeze(0) if input.dim() == 2 else input
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    onesided = (n_freq != n_fft) if onesided is None else onesided
    if onesided:
        if n_freq != n_fft // 2 + 1:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                               f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
    elif n_freq != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {n_freq}")
    if hop_length <= 0 or hop_length > win_length:
        raise RuntimeError("istft: expected 0 < hop_length <= win_length")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError("istft: expected 0 < win_length <= n_fft")
    _check_window("istft", window, win_length)
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)                                # (B, n_frames, n_freq)
    if onesided:
        frames = ember.fft.irfft(frames, n=n_fft, dim=-1, norm=norm)
    else:
        frames = ember.fft.ifft(frames, dim=-1, norm=norm)
        if not return_complex:
            frames = frames.to(frames.dtype.to_real)
    w = _padded_window(window, n_fft, win_length, frames)
    frames = frames * w
    total = n_fft + hop_length * (n_frames - 1)
    fold = ember.nn.functional.fold
    y = fold(frames.transpose(1, 2), output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop_length))
    y = y.reshape(y.shape[0], total)
    wsq = (w * w).reshape(1, n_fft, 1).expand(1, n_fft, n_frames)
    env = fold(wsq, output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop_length)).reshape(total)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    end = min(end, total)
    y, env = y[:, start:end], env[start:end]
    if env.numel() and float(env.abs().min().item()) <= 1e-11:
        raise RuntimeError(f"istft: window overlap add min: {float(env.abs().min().item()):g}")
    y = y / env
    if length is not None and y.shape[-1] < length:
        y = ember.nn.functional.pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.dim() == 2 else y
