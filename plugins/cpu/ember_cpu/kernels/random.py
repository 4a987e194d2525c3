"""Random sampling on the host: numpy's PCG64 generator held by the cpu generator state.

Every kernel draws from ``generator.state.rng`` (a ``numpy.random.Generator``), so the
same seed gives the same numbers. Low-precision floats draw with as many random bits
as their mantissa holds, so a U[0, 1) sample never rounds up to 1.
"""
from __future__ import annotations

import numpy as np

import ember

from ._util import ALL, FLOAT, np_view, write

_COMPLEX = frozenset({ember.complex64, ember.complex128})
_NOT_COMPLEX = frozenset(ALL) - frozenset(_COMPLEX)
_BITS = {"float16": 11, "bfloat16": 8}
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _rng(generator):
    return generator.state.rng


def _real_parts(out):
    """The real arrays to fill: the view itself, or its real and imaginary parts (complex)."""
    o = np_view(out)
    return (o.real, o.imag) if o.dtype.kind == "c" else (o,)


def _unit(rng, shape, dtype):
    """Samples of U[0, 1) exactly representable in ``dtype`` (float64 / float32 arrays)."""
    bits = _BITS.get(dtype.name)
    if bits is not None:
        return rng.integers(0, 1 << bits, shape).astype(np.float32) / np.float32(1 << bits)
    if dtype.name in ("float64", "complex128"):
        return rng.random(shape)
    return rng.random(shape, dtype=np.float32)


def uniform(self, low=0.0, high=1.0, *, generator, out):
    """cpu kernel of ``uniform_``, floating / complex dtypes: fill ``out`` with U[low, high) from ``generator``'s
    numpy Generator (complex: real and imaginary parts each; float16 / bfloat16 draw only as many bits as they
    hold, so never round up to high).
    """
    rng = _rng(generator)
    real = out._dtype.to_real
    for part in _real_parts(out):
        u = _unit(rng, part.shape, real)
        np.copyto(part, u * (high - low) + low if (low, high) != (0.0, 1.0) else u, casting="unsafe")
        _below_high(part, low, high)


def _below_high(part, low, high):
    """Samples that rounding to the output dtype carried to ``high`` or past it become the dtype's largest
    value below ``high``, so every sample is in [low, high) (as PyTorch's uniform_)."""
    if not high > low:
        return
    top = part.dtype.type(high)
    if float(top) >= high:
        top = np.nextafter(top, part.dtype.type(low))
    np.copyto(part, top, where=part.astype(np.float64) >= high)


def _std_normal(rng, shape, dtype):
    return rng.standard_normal(shape, dtype=np.float64 if dtype.name in ("float64", "complex128") else np.float32)


def normal(self, mean=0.0, std=1.0, *, generator, out):
    """cpu kernel of ``normal_``, floating / complex dtypes: fill ``out`` with N(mean, std^2) from ``generator``'s
    numpy Generator (complex: each part with std / sqrt(2)).
    """
    rng = _rng(generator)
    parts = _real_parts(out)
    if len(parts) == 2:
        std = std / np.sqrt(2.0)
    for part in parts:
        np.copyto(part, _std_normal(rng, part.shape, out._dtype) * std + mean, casting="unsafe")


def random(self, low, high=None, *, generator, out):
    """cpu kernel of ``random_``, non-complex dtypes: fill ``out`` with integers uniform in [low, high);
    ``high=None`` means up to the dtype's largest value (2**mantissa digits for floats), inclusive.
    """
    if high is None:   # up to the dtype's largest value (2**mantissa digits for floats), inclusive
        d = out._dtype
        high = (1 << _DIGITS[d.name] if d.is_floating_point else 1 if d is ember.bool else ember.iinfo(d).max) + 1
    write(out, _rng(generator).integers(low, high, out._shape, dtype=np.int64))


def bernoulli_scalar(self, p=0.5, *, generator, out):
    """cpu kernel of ``bernoulli_(p: float)``, non-complex dtypes: fill ``out`` with 1 with probability ``p``, else
    0.
    """
    write(out, _rng(generator).random(out._shape) < p)


def bernoulli_tensor(self, p, *, generator, out):
    """cpu kernel of ``bernoulli_(p: Tensor)`` / ``bernoulli``, non-complex dtypes: fill ``out`` with 1 with
    probability p (broadcast), else 0. RuntimeError "Expected p_in >= 0 && p_in <= 1 to be true, but got false."
    """
    probs = np.broadcast_to(np_view(p), out._shape)
    if probs.size and not ((probs >= 0) & (probs <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    write(out, _rng(generator).random(out._shape) < probs)


def exponential(self, lambd=1.0, *, generator, out):
    """cpu kernel of ``exponential_``, floating dtypes: fill ``out`` with Exp(``lambd``) samples (mean 1 / lambd).
    """
    e = _rng(generator).standard_exponential(out._shape, dtype=np.float64 if out._dtype is ember.float64
                                             else np.float32)
    write(out, e / lambd)


def randperm(n, dtype, device, *, generator, out):
    """cpu kernel of ``randperm``, non-complex dtypes: write a random permutation of 0..n-1 into ``out``."""
    write(out, _rng(generator).permutation(n))


def multinomial(self, num_samples, replacement=False, *, generator, out):
    """cpu kernel of ``multinomial``, floating dtypes: write ``num_samples`` int64 category indices per row of the
    (unnormalised) probabilities ``self`` (C,) or (N, C) into ``out``; without replacement by exponential races.
    RuntimeError "probability tensor contains either `inf`, `nan` or element < 0" and "invalid multinomial
    distribution (sum of probabilities <= 0)".
    """
    probs = np_view(self).astype(np.float64)
    rows = probs.reshape(-1, probs.shape[-1]) if probs.ndim == 2 else probs.reshape(1, -1)
    if rows.size and not (np.isfinite(rows) & (rows >= 0)).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = rows.sum(axis=1)
    if (totals <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator)
    if replacement:
        cdf = np.cumsum(rows, axis=1)
        u = rng.random((rows.shape[0], num_samples)) * totals[:, None]
        idx = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)]) if rows.shape[0] else \
            np.empty((0, num_samples), np.int64)
        idx = np.minimum(idx, rows.shape[1] - 1)
    else:
        # exponential races: category i finishes at E_i / p_i; the first num_samples to finish are
        # a sample without replacement (zero-probability categories never finish before others)
        with np.errstate(divide="ignore"):
            keys = rng.standard_exponential(rows.shape) / rows
        idx = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    write(out, idx.reshape(out._shape))


def register(lib):
    """Register the random kernels above for device 'cpu' on ``lib`` (uniform / normal: floating and complex;
    exponential / multinomial: floating; the rest: all but complex).
    """
    lib.impl("uniform", uniform, device="cpu", dtypes=set(FLOAT) | set(_COMPLEX))
    lib.impl("normal", normal, device="cpu", dtypes=set(FLOAT) | set(_COMPLEX))
    lib.impl("random", random, device="cpu", dtypes=_NOT_COMPLEX)
    lib.impl("bernoulli_scalar", bernoulli_scalar, device="cpu", dtypes=_NOT_COMPLEX)
    lib.impl("bernoulli_tensor", bernoulli_tensor, device="cpu", dtypes=_NOT_COMPLEX)
    lib.impl("exponential", exponential, device="cpu", dtypes=FLOAT)
    lib.impl("randperm", randperm, device="cpu", dtypes=_NOT_COMPLEX)
    lib.impl("multinomial", multinomial, device="cpu", dtypes=FLOAT)
