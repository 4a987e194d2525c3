"""Observers: modules that watch the values flowing through a model and choose qparams
(matches torch.ao.quantization.observer).

An observer's ``forward(x)`` records statistics of ``x`` and returns ``x`` unchanged;
``calculate_qparams()`` returns ``(scale, zero_point)`` as tensors (float32 / int64; one element
per tensor, or one per channel). The arithmetic on the recorded ranges is PyTorch's:

- affine: scale = (max(max, 0) - min(min, 0)) / (qmax - qmin), zero_point = qmin - round(min / scale),
  clamped to [qmin, qmax];
- symmetric: scale = max(-min, max) / ((qmax - qmin) / 2), zero_point 0 (qint8) or 128 (quint8);
- scale is at least ``eps`` (float32's epsilon); ``reduce_range`` halves the range (7 bits).

The statistics are a handful of numbers per tensor, so they are computed on the host with numpy
after one reduction on the device.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

import ember
import ember.nn as nn

__all__ = ["ObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "HistogramObserver", "PlaceholderObserver",
           "NoopObserver", "default_observer", "default_weight_observer", "default_per_channel_weight_observer",
           "default_histogram_observer", "default_dynamic_quant_observer", "default_placeholder_observer"]


class _PartialWrapper:
    """A factory of observers with preset arguments (``MinMaxObserver.with_args(...)``); calling it
    makes a new observer, ``with_args`` adds more arguments."""

    def __init__(self, p):
        self.p = p

    def __call__(self, *args, **kwargs):
        return self.p(*args, **kwargs)

    def with_args(self, **kwargs):
        return _PartialWrapper(functools.partial(self.p, **kwargs))

    def __repr__(self):
        return self.p.__repr__()


def _with_args(cls, **kwargs):
    return _PartialWrapper(functools.partial(cls, **kwargs))


def _qrange(dtype, reduce_range, quant_min, quant_max):
    """(quant_min, quant_max) for the dtype, PyTorch's rules (custom ranges are halved by reduce_range)."""
    if quant_min is not None and quant_max is not None:
        if not quant_min <= 0 <= quant_max:
            raise ValueError("Used-specified quantization range must include 0.")
        if quant_min >= quant_max:
            raise ValueError("qmin must be strictly less than qmax for user-specified quantization range.")
        if reduce_range:
            return quant_min // 2, quant_max // 2
        return quant_min, quant_max
    name = dtype.name
    if name in ("qint8", "int8"):
        return (-64, 63) if reduce_range else (-128, 127)
    if name in ("quint8", "uint8"):
        return (0, 127) if reduce_range else (0, 255)
    if name in ("qint32", "int32"):
        return -(2 ** 31), 2 ** 31 - 1
    raise ValueError(f"observers support qint8, quint8 and qint32, got {dtype!r}")


class ObserverBase(nn.Module):
    """Base of the observers: ``forward`` records, ``calculate_qparams`` answers."""

    with_args = classmethod(_with_args)

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def calculate_qparams(self):
        """Return (scale, zero_point) from the recorded statistics; subclasses override it (the base raises
        NotImplementedError).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement calculate_qparams")


class UniformQuantizationObserverBase(ObserverBase):
    """The qparams arithmetic shared by the uniform (affine / symmetric) observers."""

    def __init__(self, dtype=None, qscheme=None, reduce_range=False, quant_min=None, quant_max=None,
                 factory_kwargs=None, eps=None, is_dynamic=False):
        dtype = ember.quint8 if dtype is None else dtype
        super().__init__(dtype)
        self.qscheme = ember.per_tensor_affine if qscheme is None else qscheme
        self.reduce_range = reduce_range
        self.eps = float(np.finfo(np.float32).eps) if eps is None else float(eps)
        self.is_dynamic = is_dynamic
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        self.quant_min, self.quant_max = _qrange(dtype, reduce_range, quant_min, quant_max)

    def _symmetric(self):
        return self.qscheme.name in ("per_tensor_symmetric", "per_channel_symmetric")

    def _calculate_qparams(self, min_val, max_val):
        """(scale float32, zero_point int64) tensors from the observed ranges (numpy arrays)."""
        min_val = np.asarray(min_val, np.float32)
        max_val = np.asarray(max_val, np.float32)
        if not np.all(np.isfinite(min_val)) or not np.all(np.isfinite(max_val)):
            warnings.warn("must run observer before calling calculate_qparams. Returning default values.")
            shape = np.atleast_1d(min_val).shape
            return ember.ones(shape), ember.zeros(shape, dtype=ember.int64)
        qmin, qmax = self.quant_min, self.quant_max
        min_neg = np.minimum(min_val, np.float32(0))
        max_pos = np.maximum(max_val, np.float32(0))
        eps = np.float32(self.eps)
        if self._symmetric():
            unsigned = self.dtype.name in ("quint8", "uint8")
            if unsigned and self.reduce_range:
                raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")
            max_pos = np.maximum(-min_neg, max_pos)
            scale = max_pos / np.float32((qmax - qmin) / 2)
            scale = np.maximum(scale, eps)
            # PyTorch's midpoint: (qmin + qmax) // 2 for a custom range, 128 otherwise
            mid = ((qmin + qmax) // 2 if self.has_customized_qrange else 128) if unsigned else 0
            zp = np.full(scale.shape, mid, np.int64)
        else:
            scale = (max_pos - min_neg) / np.float32(qmax - qmin)
            scale = np.maximum(scale, eps)
            zp = qmin - np.rint(min_neg / scale).astype(np.int64)
            zp = np.clip(zp, qmin, qmax)
        scale = np.asarray(scale, np.float32)
        return ember.tensor(scale.reshape(-1) if scale.ndim else scale.reshape(1)), \
            ember.tensor(np.asarray(zp, np.int64).reshape(-1) if np.ndim(zp) else np.asarray(zp, np.int64).reshape(1))

    def extra_repr(self):
        """Settings shown inside the repr: ``dtype=..., qscheme=..., quant_min=..., quant_max=...``."""
        return f"dtype={self.dtype}, qscheme={self.qscheme}, quant_min={self.quant_min}, quant_max={self.quant_max}"


def _minmax(x):
    x = x.detach()
    if x.dtype is not ember.float32:
        x = x.float()
    mn, mx = ember.aminmax(x)
    return float(mn.item()), float(mx.item())


class MinMaxObserver(UniformQuantizationObserverBase):
    """Records the running minimum and maximum (matches torch.ao.quantization.MinMaxObserver)."""

    def __init__(self, dtype=None, qscheme=None, reduce_range=False, quant_min=None, quant_max=None,
                 factory_kwargs=None, eps=None, is_dynamic=False, **kwargs):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        if self.qscheme.name not in ("per_tensor_affine", "per_tensor_symmetric"):
            raise NotImplementedError(f"MinMaxObserver supports per-tensor schemes, got {self.qscheme}")
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))

    def forward(self, x_orig):
        """Fold the min and max of ``x_orig`` (any shape; cast to float32 for the reduction) into the ``min_val`` /
        ``max_val`` buffers; returns ``x_orig`` unchanged (empty tensors are ignored) (matches
        torch.ao.quantization.MinMaxObserver.forward).
        """
        if x_orig.numel() == 0:
            return x_orig
        mn, mx = _minmax(x_orig)
        self.min_val.fill_(min(mn, float(self.min_val.item())))
        self.max_val.fill_(max(mx, float(self.max_val.item())))
        return x_orig

    def calculate_qparams(self):
        """(scale, zero_point): float32 and int64 tensors of shape (1,), from min_val / max_val; before any
        forward, UserWarning and the defaults (1.0, 0) (matches
        torch.ao.quantization.MinMaxObserver.calculate_qparams).
        """
        return self._calculate_qparams(self.min_val.item(), self.max_val.item())

    def reset_min_max_vals(self):
        """Reset ``min_val`` to +inf and ``max_val`` to -inf in place (forget the observed range) (matches
        torch.ao.quantization.MinMaxObserver.reset_min_max_vals).
        """
        self.min_val.fill_(float("inf"))
        self.max_val.fill_(float("-inf"))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Exponential moving averages of the minimum and maximum: v += c * (new - v), the first batch sets
    them (matches torch.ao.quantization.MovingAverageMinMaxObserver)."""

    def __init__(self, averaging_constant=0.01, dtype=None, qscheme=None, reduce_range=False, quant_min=None,
                 quant_max=None, eps=None, is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic)
        self.averaging_constant = averaging_constant

    def forward(self, x_orig):
        """Move ``min_val`` / ``max_val`` toward the batch min / max of ``x_orig`` by ``averaging_constant`` (the
        first batch sets them); returns ``x_orig`` unchanged (matches
        torch.ao.quantization.MovingAverageMinMaxObserver.forward).
        """
        if x_orig.numel() == 0:
            return x_orig
        mn, mx = _minmax(x_orig)
        cur_min, cur_max = float(self.min_val.item()), float(self.max_val.item())
        if cur_min == float("inf") and cur_max == float("-inf"):
            new_min, new_max = mn, mx
        else:
            c = self.averaging_constant
            new_min, new_max = cur_min + c * (mn - cur_min), cur_max + c * (mx - cur_max)
        self.min_val.fill_(new_min)
        self.max_val.fill_(new_max)
        return x_orig


def _channel_minmax(x, axis):
    x = x.detach()
    if x.dtype is not ember.float32:
        x = x.float()
    y = x.transpose(0, axis).reshape(x.shape[axis], -1) if x.dim() > 1 else x.reshape(-1, 1)
    return y.amin(1).cpu().numpy().astype(np.float32), y.amax(1).cpu().numpy().astype(np.float32)


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Running minimum and maximum per index of ``ch_axis`` (matches
    torch.ao.quantization.PerChannelMinMaxObserver)."""

    def __init__(self, ch_axis=0, dtype=None, qscheme=None, reduce_range=False, quant_min=None, quant_max=None,
                 factory_kwargs=None, eps=None, is_dynamic=False, **kwargs):
        qscheme = ember.per_channel_affine if qscheme is None else qscheme
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        if self.qscheme.name not in ("per_channel_affine", "per_channel_symmetric"):
            raise NotImplementedError(f"PerChannelMinMaxObserver supports per-channel schemes, got {self.qscheme}")
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([]))
        self.register_buffer("max_val", ember.tensor([]))

    def _update(self, mn, mx):
        if self.min_val.numel() == 0:
            new_min, new_max = mn, mx
        else:
            new_min = np.minimum(self.min_val.cpu().numpy(), mn)
            new_max = np.maximum(self.max_val.cpu().numpy(), mx)
        self.min_val = ember.tensor(new_min, device=self.min_val.device)
        self.max_val = ember.tensor(new_max, device=self.max_val.device)

    def forward(self, x_orig):
        """Fold the per-channel (along ``ch_axis``) min and max of ``x_orig`` into the ``min_val`` / ``max_val``
        buffers, shape (C,) float32; returns ``x_orig`` unchanged (matches
        torch.ao.quantization.PerChannelMinMaxObserver.forward).
        """
        if x_orig.numel() == 0:
            return x_orig
        self._update(*_channel_minmax(x_orig, self.ch_axis))
        return x_orig

    def calculate_qparams(self):
        """(scale, zero_point): float32 and int64 tensors of shape (C,), one per channel; before any forward,
        UserWarning and the defaults (1.0, 0) of shape (1,) (matches
        torch.ao.quantization.PerChannelMinMaxObserver.calculate_qparams).
        """
        if self.min_val.numel() == 0:
            return self._calculate_qparams(np.array([np.inf]), np.array([-np.inf]))
        return self._calculate_qparams(self.min_val.cpu().numpy(), self.max_val.cpu().numpy())

    def extra_repr(self):
        """The base settings plus ``, ch_axis=...``."""
        return super().extra_repr() + f", ch_axis={self.ch_axis}"


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Moving averages of the per-channel minimum and maximum (matches
    torch.ao.quantization.MovingAveragePerChannelMinMaxObserver)."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=None, qscheme=None, reduce_range=False,
                 quant_min=None, quant_max=None, eps=None, is_dynamic=False, **kwargs):
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic)
        self.averaging_constant = averaging_constant

    def _update(self, mn, mx):
        if self.min_val.numel() == 0:
            new_min, new_max = mn, mx
        else:
            c = np.float32(self.averaging_constant)
            cmin, cmax = self.min_val.cpu().numpy(), self.max_val.cpu().numpy()
            new_min, new_max = cmin + c * (mn - cmin), cmax + c * (mx - cmax)
        self.min_val = ember.tensor(np.asarray(new_min, np.float32), device=self.min_val.device)
        self.max_val = ember.tensor(np.asarray(new_max, np.float32), device=self.max_val.device)


class HistogramObserver(UniformQuantizationObserverBase):
    """A histogram of the values over their running range; ``calculate_qparams`` picks the clipping
    range [lo, hi] (a sub-range of whole bins) that minimises the estimated L2 quantization error of
    the histogram, then the affine qparams of that range (matches
    torch.ao.quantization.HistogramObserver in purpose and arguments; the search is ember's own:
    it shrinks the range from whichever end holds less mass, as PyTorch's does, and stops when the
    error stops falling).

    When a batch widens the range, the old counts are moved to the bins of the new range that
    contain their bin centres."""

    def __init__(self, bins=2048, dtype=None, qscheme=None, reduce_range=False, quant_min=None, quant_max=None,
                 factory_kwargs=None, eps=None, is_dynamic=False, **kwargs):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        self.bins = bins
        self.register_buffer("histogram", ember.zeros(bins, dtype=ember.float64))
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))

    def forward(self, x_orig):
        """Add the finite values of ``x_orig`` to the ``histogram`` buffer (``bins`` float64 counts over [min_val,
        max_val], widened and re-binned as needed); returns ``x_orig`` unchanged (matches
        torch.ao.quantization.HistogramObserver.forward).
        """
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().float().cpu().numpy().reshape(-1)
        x = x[np.isfinite(x)]
        if not x.size:
            return x_orig
        mn, mx = float(x.min()), float(x.max())
        cur_min, cur_max = float(self.min_val.item()), float(self.max_val.item())
        hist = self.histogram.cpu().numpy()
        if cur_min == float("inf"):
            lo, hi = mn, mx
            old = None
        else:
            lo, hi = min(cur_min, mn), max(cur_max, mx)
            old = (hist.copy(), cur_min, cur_max)
        if hi == lo:
            hi = lo + 1e-12 if lo == 0 else lo + abs(lo) * 1e-6
        new, _ = np.histogram(x, bins=self.bins, range=(lo, hi))
        new = new.astype(np.float64)
        if old is not None and old[0].sum():
            h, a, b = old
            centres = a + (np.arange(self.bins) + 0.5) * (b - a) / self.bins
            idx = np.clip(((centres - lo) / (hi - lo) * self.bins).astype(np.int64), 0, self.bins - 1)
            np.add.at(new, idx, h)
        self.histogram = ember.tensor(new, device=self.histogram.device)
        self.min_val.fill_(lo)
        self.max_val.fill_(hi)
        return x_orig

    def _error(self, hist, lo_bin, hi_bin, width, nlevels):
        """Estimated L2 error of quantizing the histogram with the range of bins [lo_bin, hi_bin]."""
        n = len(hist)
        centres = (np.arange(n) + 0.5) * width
        a, b = lo_bin * width, (hi_bin + 1) * width
        step = (b - a) / nlevels
        c = np.clip(centres, a, b)
        q = a + (np.clip(np.floor((c - a) / step), 0, nlevels - 1) + 0.5) * step
        return float(np.sum(hist * ((centres - q) ** 2 + width * width / 12.0)))

    def _search(self):
        hist = self.histogram.cpu().numpy()
        total = hist.sum()
        lo, hi = float(self.min_val.item()), float(self.max_val.item())
        width = (hi - lo) / self.bins
        nlevels = self.quant_max - self.quant_min + 1
        cs = np.cumsum(hist)
        start, end = 0, self.bins - 1
        best = self._error(hist, start, end, width, nlevels)
        alpha, beta, step = 0.0, 1.0, 1e-5 * max(1.0, self.bins / 2048)
        while alpha < beta and end > start:
            na, nb = alpha + step, beta - step
            l_ = int(np.searchsorted(cs, na * total, side="left"))
            r_ = int(np.searchsorted(cs, nb * total, side="right")) - 1
            l_, r_ = min(max(l_, start), end), max(min(r_, end), start)
            ns, ne = start, end
            if (l_ - start) > (end - r_):
                ns, alpha = l_, na
            else:
                ne, beta = r_, nb
            if (ns, ne) == (start, end):
                continue
            err = self._error(hist, ns, ne, width, nlevels)
            if err > best:
                break
            best, start, end = err, ns, ne
        return lo + width * start, lo + width * (end + 1)

    def calculate_qparams(self):
        """(scale, zero_point): float32 and int64 tensors of shape (1,), of the clipping range the histogram search
        picks; before any forward, UserWarning and the defaults (1.0, 0) (matches
        torch.ao.quantization.HistogramObserver.calculate_qparams).
        """
        if float(self.min_val.item()) == float("inf"):
            return self._calculate_qparams(np.inf, -np.inf)
        new_min, new_max = self._search()
        return self._calculate_qparams(new_min, new_max)


class PlaceholderObserver(ObserverBase):
    """Records nothing; carries the dtype (used for dynamic quantization's activations, whose qparams
    are chosen at run time). Matches torch.ao.quantization.PlaceholderObserver."""

    def __init__(self, dtype=ember.float32, custom_op_name="", compute_dtype=None, quant_min=None, quant_max=None,
                 qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype)
        self.qscheme = ember.per_tensor_affine if qscheme is None else qscheme
        self.is_dynamic = is_dynamic

    def forward(self, x):
        """Return ``x`` unchanged; nothing is recorded (matches torch.ao.quantization.PlaceholderObserver.forward).
        """
        return x

    def calculate_qparams(self):
        """Always raises Exception "calculate_qparams should not be called for PlaceholderObserver" (matches
        torch.ao.quantization.PlaceholderObserver).
        """
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


class NoopObserver(PlaceholderObserver):
    """An observer that does nothing (matches torch.ao.quantization.NoopObserver)."""


def _lazy(fn):
    """Defaults that name plugin dtypes are built on first use (the plugin loads lazily)."""
    class _Lazy:
        _p = None

        def _get(self):
            if self._p is None:
                self._p = fn()
            return self._p

        def __call__(self, *a, **k):
            return self._get()(*a, **k)

        def with_args(self, **kwargs):
            return self._get().with_args(**kwargs)

        def __repr__(self):
            return repr(self._get())
    return _Lazy()


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = _lazy(lambda: MinMaxObserver.with_args(dtype=ember.qint8,
                                                                  qscheme=ember.per_tensor_symmetric))
default_per_channel_weight_observer = _lazy(lambda: PerChannelMinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric))
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_dynamic_quant_observer = _lazy(lambda: PlaceholderObserver.with_args(dtype=ember.quint8, is_dynamic=True))
default_placeholder_observer = PlaceholderObserver
