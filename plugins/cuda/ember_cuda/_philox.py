"""Philox4x32-10, the counter-based generator of cuRAND and PyTorch's CUDA, in array ops.

Written against an array module ``xp`` (cupy on the GPU, numpy in the host emulation), so a
seed gives the same bits on both: the generator is checked on a machine without a GPU against
the published known-answer vectors of Random123 (Salmon et al., SC'11), and the GPU run is
bit-for-bit the same computation (uint64 products split into high and low 32-bit words).

A generator state is a 64-bit key (the seed) and a 64-bit counter offset; each kernel reserves
the counters it consumes (``PhiloxState.reserve``), so consecutive calls never reuse a counter and
a saved state replays exactly. Counter ``n`` is the 128-bit block ``(lo32(n), hi32(n), 0, 0)``;
each block gives four 32-bit words.
"""
from __future__ import annotations

import numpy as np

from ember.library import PhiloxState  # noqa: F401 - re-exported: the generator state of this module's kernels

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFF_FFFF


def philox4x32_10(xp, c0, c1, c2, c3, k0: int, k1: int):
    """Ten Philox rounds on counter words ``c0..c3`` (uint64 arrays holding 32-bit values) with
    key ``(k0, k1)``; returns the four output words (uint64 arrays holding 32-bit values)."""
    u64 = xp.uint64
    m0, m1, mask, s32 = u64(M0), u64(M1), u64(MASK32), u64(32)
    for r in range(10):
        ka, kb = u64((k0 + r * W0) & MASK32), u64((k1 + r * W1) & MASK32)
        p0 = c0 * m0
        p1 = c2 * m1
        c0, c1, c2, c3 = (p1 >> s32) ^ c1 ^ ka, p1 & mask, (p0 >> s32) ^ c3 ^ kb, p0 & mask
    return c0, c1, c2, c3


def random_bits(xp, state: PhiloxState, n: int):
    """``n`` uniformly distributed 32-bit words (a uint32 array) from ``state``, advancing it."""
    blocks = (int(n) + 3) // 4
    start = state.reserve(blocks)
    ctr = xp.arange(blocks, dtype=xp.uint64) + xp.uint64(start)      # wraps modulo 2**64
    zero = xp.zeros(blocks, dtype=xp.uint64)
    lo, hi = ctr & xp.uint64(MASK32), ctr >> xp.uint64(32)
    words = philox4x32_10(xp, lo, hi, zero, zero, state.seed & MASK32, state.seed >> 32)
    return xp.stack(words, axis=1).reshape(-1)[:n].astype(xp.uint32)


#: mantissa bits a uniform sample of each float kind gets (it is then exactly representable)
_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def uniform01(xp, state: PhiloxState, n: int, kind: str):
    """``n`` samples in [0, 1), each a multiple of 2**-bits for ``kind`` ("float16", "bfloat16",
    "float32", "float64"); float64 for "float64", float32 otherwise."""
    bits = _BITS[kind]
    if kind == "float64":
        w = random_bits(xp, state, 2 * n).reshape(n, 2).astype(xp.uint64)
        m = ((w[:, 0] >> xp.uint64(11)) << xp.uint64(32)) | w[:, 1]            # 21 + 32 = 53 bits
        return m.astype(xp.float64) * (2.0 ** -53)
    w = random_bits(xp, state, n)
    return (w >> xp.uint32(32 - bits)).astype(xp.float32) * xp.float32(2.0 ** -bits)
