"""uniform on opencl: the counter-based Philox4x32-10 generator (Salmon et al., SC'11).

Philox4x32-10 maps a 128-bit counter and a 64-bit key to four random 32-bit words through ten
rounds of two 32 x 32 -> 64-bit multiplications; nothing is stored between calls but the key
(the seed) and a 64-bit counter offset - the device's ``PhiloxState`` (``_runtime.py``). A call
drawing ``n`` blocks reserves counters ``[offset, offset + n)`` (the state advances by ``n``), and
work item ``g`` computes block ``offset + g`` (the 64-bit counter in words 0-1, words 2-3 zero):
the same seed gives the same numbers on every run and every device, the numbers do not depend on
the work-group shape, and consecutive calls never reuse a counter.

Block ``g`` gives the samples of elements ``4g .. 4g + 3`` (float32: the top 24 bits of each word,
``u = (w >> 8) * 2**-24``; float16: the top 11, ``u = (w >> 21) * 2**-11``, as many bits as a half
holds, like ember-cpu) or ``2g .. 2g + 1`` (float64: 53 bits of two words, ``u = b * 2**-53``),
elements counted in the row-major order of ``out``'s shape, written through ``out``'s strides.
``low + u * (high - low)`` rounded to the dtype can land on ``high``; such a sample becomes the
largest value below ``high`` (``nextafter``; for float16 ``top``, computed on the host), so samples
are always in ``[low, high)`` (for ``low < high``; ``low == high`` gives ``low``). float16 is computed
in float and rounded once by ``vstore_half_rte`` (the check rounds through a private half the same
way), so the kernel needs no half arithmetic.
"""
from __future__ import annotations

import functools

import numpy as np

import ember

from .. import _codegen as cg

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57        # round multipliers
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85        # key schedule (golden ratio, sqrt(3) - 1)
ROUNDS = 10

PHILOX_C = f"""
inline uint4 philox4x32_10(uint4 c, uint2 k) {{
    for (int r = 0; r < {ROUNDS}; r++) {{
        const uint hi0 = mul_hi({PHILOX_M0:#x}u, c.x), lo0 = {PHILOX_M0:#x}u * c.x;
        const uint hi1 = mul_hi({PHILOX_M1:#x}u, c.z), lo1 = {PHILOX_M1:#x}u * c.z;
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += (uint2)({PHILOX_W0:#x}u, {PHILOX_W1:#x}u);
    }}
    return c;
}}
"""


def philox4x32_10(counter, key):
    """Reference Philox4x32-10 in Python (four 32-bit counter words, two key words) -> four words."""
    c, k, m = list(counter), list(key), 0xFFFFFFFF
    for _ in range(ROUNDS):
        p0, p1 = PHILOX_M0 * c[0], PHILOX_M1 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & m, (p0 >> 32) ^ c[3] ^ k[1], p0 & m]
        k = [(k[0] + PHILOX_W0) & m, (k[1] + PHILOX_W1) & m]
    return c


@functools.lru_cache(maxsize=None)
def _uniform_source(c: str, rank: int) -> str:
    per = 2 if c == "double" else 4
    if c == "float":
        samples = "const float u[4] = {(w.x >> 8) * 0x1p-24f, (w.y >> 8) * 0x1p-24f, (w.z >> 8) * 0x1p-24f, " \
                  "(w.w >> 8) * 0x1p-24f};"
    elif c == "half":
        samples = "const float u[4] = {(w.x >> 21) * 0x1p-11f, (w.y >> 21) * 0x1p-11f, (w.z >> 21) * 0x1p-11f, " \
                  "(w.w >> 21) * 0x1p-11f};"
    else:
        samples = "const double u[2] = {(double)((((ulong)w.x << 32) | w.y) >> 11) * 0x1p-53, " \
                  "(double)((((ulong)w.z << 32) | w.w) >> 11) * 0x1p-53};"
    if c == "half":                              # r rounded to half (through a private half) must stay below high
        vt = "float"
        clamp = """ushort h_;
        vstore_half_rte(r, 0, (__private half*)&h_);
        if (vload_half(0, (__private const half*)&h_) >= high) r = top;"""
    else:
        vt = c
        clamp = "if (r >= high) r = nextafter(high, low);"
    return f"""{PHILOX_C}
__kernel void ember_uniform(long total, ulong offset, uint key0, uint key1, {vt} low, {vt} high, {vt} top,
                            {cg.shape_params(rank)}, {cg.tensor_params("out", c, rank)})
{{
    const long g = get_global_id(0);
    if (g * {per} >= total) return;
    const ulong ctr = offset + (ulong)g;
    const uint4 w = philox4x32_10((uint4)((uint)ctr, (uint)(ctr >> 32), 0u, 0u), (uint2)(key0, key1));
    {samples}
    for (int l = 0; l < {per}; l++) {{
        const long i = g * {per} + l;
        if (i >= total) break;
        {cg.unravel(rank)}
        {vt} r = low + u[l] * (high - low);
        {clamp}
        {cg.store("out", cg.offset("out", rank), c, "r")}
    }}
}}
"""


def uniform(self, low=0.0, high=1.0, *, generator, out):
    """opencl kernel of ``uniform_``, float16 / float32 / float64: fill ``out`` with U[low, high) from Philox4x32-10
    counters reserved on ``generator.state`` (a PhiloxState), any strides; deterministic for a seed.
    """
    n = out.numel()
    if n == 0:
        return
    c = cg.ctype(out.dtype)
    per = 2 if c == "double" else 4
    blocks = -(-n // per)
    ps = generator.state                         # the device's PhiloxState
    start = ps.reserve(blocks)
    shape, (st,) = cg.collapse(tuple(out.shape), out.stride()) if out.dim() else ((1,), [(0,)])
    state = cg.state_of(out)
    k = cg.build(state, _uniform_source(c, len(shape)), "ember_uniform")
    seed = ps.seed
    if c == "half":                              # float arguments; top: the largest half below high (as ember-cpu)
        top = np.float16(high)
        if float(top) >= high:
            top = np.nextafter(top, np.float16(low))
        bounds = [np.float32(low), np.float32(high), np.float32(top)]
    else:
        bounds = [cg.scalar(low, out.dtype), cg.scalar(high, out.dtype), cg.scalar(0, out.dtype)]   # top unused
    cg.launch(state, k, blocks, [cg.i64(n), np.uint64(start), np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32),
                                 *bounds, *cg.shape_args(shape), *cg.tensor_args(out, st)])


def register(lib, dtypes=None):
    """Register uniform for device 'opencl' on ``lib``, for float16 / float32 / float64 (narrowed to ``dtypes`` when
    given: the device's dtypes, float16 only where it reports cl_khr_fp16).
    """
    names = {d.name for d in dtypes} if dtypes is not None else {"float32", "float64"}
    lib.impl("uniform", uniform, device="opencl",
             dtypes=[getattr(ember, n) for n in ("float16", "float32", "float64") if n in names])
