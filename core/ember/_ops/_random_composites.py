"""Composites for the random samplers, built from the ``uniform`` primitive.

A device that implements ``uniform`` (U[0, 1) from its own generator) gets every other
sampler from these: normal (Box-Muller), random (integers from 16-bit chunks of float32
uniforms), bernoulli (``u < p``), exponential (``-log1p(-u) / lambd``), randperm (a stable
radix argsort of random keys) and multinomial (with replacement: inverse CDF by counting;
without: exponential races, keys ``E / p`` sorted with the same radix argsort).

They cannot reproduce the numbers of the cpu kernels (those draw from numpy's streams),
so they are tested for shape, dtype, range and distribution, and for reproducibility: the
same seeded generator on the same device gives the same numbers, since every draw goes
through ``uniform`` with that generator. They use only the primitive set (plus the helpers
of ``_indexing_composites``); the probability checks of bernoulli / multinomial read one
flag with ``.item()``.
"""
from __future__ import annotations

import builtins
import math

from .. import _dtype as D
from .._factory import empty_on
from ._indexing_composites import (_E, full, iota, cumsum, count, logical_not, along, gather_along)


def _unit(shape, dtype, generator, device):
    """U[0, 1) samples of ``dtype`` from ``generator`` (the only call into the device's RNG)."""
    t = empty_on(tuple(shape), dtype, device)
    if t.numel():
        t.uniform_(0.0, 1.0, generator=generator)
    return t


def _compute_dtype(dtype):
    """float64 for double-precision results, float32 otherwise (float16 / bfloat16 compute in float32)."""
    return D.float64 if dtype in (D.float64, D.complex128) else D.float32


def _std_normal(n, dtype, generator, device):
    """n standard normal samples by Box-Muller: sqrt(-2 log(1 - u1)) * (cos, sin)(2 pi u2)."""
    E = _E()
    m = (n + 1) // 2
    u1 = _unit((m,), dtype, generator, device)
    u2 = _unit((m,), dtype, generator, device)
    r = E.sqrt(E.mul(E.log1p(E.mul(u1, -1.0)), -2.0))
    theta = E.mul(u2, 2.0 * math.pi)
    z = empty_on((2 * m,), dtype, device)
    z.narrow(0, 0, m).copy_(E.mul(r, E.cos(theta)))
    z.narrow(0, m, m).copy_(E.mul(r, E.sin(theta)))
    return z.narrow(0, 0, n)


def normal(self, mean=0.0, std=1.0, *, generator, out):
    """Composite of ``normal_``: Box-Muller standard normals scaled by ``std`` and shifted by ``mean``; complex draws
    each part with variance std**2 / 2.
    """
    E = _E()
    n = out.numel()
    if n == 0:
        return
    cd = _compute_dtype(out.dtype)
    if out.dtype.is_complex:             # real and imaginary parts each N(mean, std**2 / 2), as the cpu kernel
        z = _std_normal(2 * n, cd, generator, out.device)
        s = std / math.sqrt(2.0)
        re = E.add(E.mul(z.narrow(0, 0, n), s), mean)
        im = E.add(E.mul(z.narrow(0, n, n), s), mean)
        v = E.add(re, E.mul(im, 1j))
    else:
        v = E.add(E.mul(_std_normal(n, cd, generator, out.device), std), mean)
    out.copy_(v.view(out.shape))


def _random_bits(n, chunks, generator, device):
    """n int64 values of 16 * chunks random bits: each 16-bit chunk is floor(u * 2**16) of a
    float32 uniform (exact: float32 uniforms are multiples of 2**-24)."""
    E = _E()
    u = _unit((chunks, n), D.float32, generator, device)
    c = E.floor(E.mul(u, 65536.0)).to(D.int64)
    bits = c.select(0, 0)
    for k in range(1, chunks):
        bits = E.bitwise_or(bits, E.bitwise_left_shift(c.select(0, k), 16 * k))
    return bits


def random(self, low, high=None, *, generator, out):
    """Integers uniform in [low, high) (high=None: up to random_upper(dtype) inclusive): 32 random
    bits modulo the range when it is below 2**32, else 64 bits, as PyTorch's cpu generator does."""
    from ._random import random_upper
    E = _E()
    n = out.numel()
    if n == 0:
        return
    if high is None:
        high = random_upper(out.dtype) + 1
    span = high - low
    if span <= 1 << 32:
        v = E.add(E.fmod(_random_bits(n, 2, generator, out.device), span), low)
    elif span == 1 << 64:
        v = E.add(_random_bits(n, 4, generator, out.device), low)       # wraps through every int64
    else:
        bits = E.bitwise_and(_random_bits(n, 4, generator, out.device), (1 << 63) - 1)
        # spans above 2**63 draw from the first 2**63 values of the range (documented limitation)
        v = E.add(E.fmod(bits, span) if span < 1 << 63 else bits, low)
    out.copy_(v.view(out.shape))


def bernoulli_scalar(self, p=0.5, *, generator, out):
    """Composite of ``bernoulli_`` with a float p: uniform [0, 1) draws < p."""
    if out.numel():
        out.copy_(_E().lt(_unit(out.shape, _compute_dtype(out.dtype), generator, out.device), p))


def bernoulli_tensor(self, p, *, generator, out):
    """Composite of ``bernoulli`` with a probability tensor: uniform draws < p (broadcast); RuntimeError 'Expected
    p_in >= 0 && p_in <= 1 ...' for p outside [0, 1] or NaN.
    """
    E = _E()
    pe = p.expand(out.shape)
    if pe.numel():
        ok = E.bitwise_and(E.eq(pe, pe), E.bitwise_and(logical_not(E.lt(pe, 0)), logical_not(E.lt(E.add(E.mul(pe, -1.0), 1.0), 0))))
        if count(logical_not(ok)):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        cd = D.float64 if p.dtype is D.float64 else D.float32
        out.copy_(E.lt(_unit(out.shape, cd, generator, out.device), pe))


def exponential(self, lambd=1.0, *, generator, out):
    """Composite of ``exponential_``: -log1p(-u) / lambd from uniform draws u."""
    E = _E()
    if out.numel():
        u = _unit(out.shape, _compute_dtype(out.dtype), generator, out.device)
        out.copy_(E.true_divide(E.mul(E.log1p(E.mul(u, -1.0)), -1.0), lambd))


# ---------------------------------------------------------------- sorting by random keys
def radix_argsort(keys, nbits):
    """The stable ascending argsort, along the last dim, of the non-negative int64 ``keys``
    (2-D (rows, n)) below ``2**nbits``: one binary LSD pass per bit (scan + scatter_add)."""
    E = _E()
    rows, n = keys.shape
    dev = keys.device
    perm = iota(n, dev).view(1, n).expand(rows, n).clone()
    for b in range(nbits):
        bit = E.bitwise_and(E.bitwise_right_shift(keys, b), 1)
        zeros = E.add(E.mul(bit, -1), 1)
        cz = cumsum(zeros, 1)
        nz = cz.narrow(1, n - 1, 1)
        dest = E.where(E.eq(bit, 1), E.add(E.add(cumsum(bit, 1), nz), -1), E.add(cz, -1))
        keys = E.scatter_add(full((rows, n), 0, D.int64, dev), 1, dest, keys)
        perm = E.scatter_add(full((rows, n), 0, D.int64, dev), 1, dest, perm)
    return perm


def randperm(n, dtype, device, *, generator, out):
    """Composite of ``randperm``: a stable radix argsort of n random keys of 32..48 bits."""
    if n == 0:
        return
    nbits = builtins.min(48, builtins.max(32, 2 * n.bit_length() + 16))
    keys = _random_bits(n, (nbits + 15) // 16, generator, device)
    keys = _E().bitwise_and(keys, (1 << nbits) - 1)
    out.copy_(radix_argsort(keys.view(1, n), nbits).view(n))


def multinomial(self, num_samples, replacement=False, *, generator, out):
    """Composite of ``multinomial``: inverse CDF with replacement, exponential races (radix argsort of E_i / p_i)
    without; RuntimeError for inf / NaN / negative probabilities or a row summing to <= 0.
    """
    E = _E()
    C = self.shape[-1]
    rows = self.reshape(-1, C) if self.dim() == 2 else self.reshape(1, C)
    R = rows.shape[0]
    cd = D.float64 if self.dtype is D.float64 else D.float32
    p = rows.to(cd)
    if p.numel():
        ok = E.bitwise_and(E.lt(E.abs(p), math.inf), logical_not(E.lt(p, 0)))   # finite (NaN fails lt) and >= 0
        if count(logical_not(ok)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = E.sum(p, 1, True)
    if R and count(logical_not(E.lt(E.mul(totals, -1.0), 0))):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if R == 0:
        return
    if replacement:
        # inverse CDF: the sample is the number of cdf entries <= u * total (zero-probability
        # categories, whose cdf entry repeats the previous one, are never chosen)
        cdf = cumsum(p, 1)
        u = E.mul(_unit((R, num_samples), cd, generator, self.device), totals)
        res = empty_on((R, num_samples), D.int64, self.device)
        step = builtins.max(1, (1 << 22) // builtins.max(R * C, 1))
        for s in range(0, num_samples, step):
            k = builtins.min(step, num_samples - s)
            below = logical_not(E.lt(u.narrow(1, s, k).unsqueeze(2), cdf.unsqueeze(1)))
            res.narrow(1, s, k).copy_(E.sum(below, 2))
        res = E.where(E.lt(res, C - 1), res, C - 1)
    else:
        # exponential races: category i finishes at E_i / p_i; the first num_samples to finish
        # are a draw without replacement. float32 keys >= 0 order as their int32 bit patterns.
        e = E.mul(E.log1p(E.mul(_unit((R, C), D.float32, generator, self.device), -1.0)), -1.0)
        keys = E.true_divide(e, p.to(D.float32))                 # p == 0 gives +inf: last
        kbits = keys.contiguous().view(D.int32).to(D.int64)
        res = radix_argsort(kbits, 31).narrow(1, 0, num_samples)
    out.copy_(res.view(out.shape))
