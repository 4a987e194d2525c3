"""bmm on opencl: a tiled GEMM with local-memory tiles and register blocking, for any strides.

``bmm(self, mat2, out=)`` computes ``out[b] = self[b] @ mat2[b]`` for (b, n, m) @ (b, m, p). No
operand is made contiguous: the kernels read ``self`` / ``mat2`` through their strides and
storage offsets while packing tiles into local memory, and write ``out`` through its strides.
(An ``out`` sharing memory with an operand is computed into a temporary first.)

The computation type: float32 / float64 in their own precision; every integer type in the
unsigned integer of its accumulator width (``uint`` for 8-32 bit, ``ulong`` for int64), so
that overflow wraps as PyTorch's (signed overflow is undefined in C) - the low bits of a
wrapped product sum are the same in any wider type, and the store casts them back.

Two shapes of the same computation, picked by the device type:

- CPU devices (PoCL): one work item per (tm x tn) output tile. It packs a (tm x kc) panel of
  ``self`` (transposed, k-major) and a (kc x tn) panel of ``mat2`` into local memory, then runs
  a 6 x (2 * VW) register-blocked micro-kernel (12 vector accumulators, VW = 8 floats / 4
  doubles: the AVX2 register file) over the panel - the layout BLAS libraries use. Tile sizes are
  runtime arguments clamped to the problem, so small matrices do not pay for 96 x 64 tiles.
  ``c += a * b`` rather than ``fma()``, and vectors read by dereferencing an under-aligned
  vector type rather than ``vloadN``: PoCL contracts the first to a vfmadd and the second to an
  unaligned vector load, while its ``fma()`` and ``vloadN`` for vectors are library calls. Packing
  walks each operand's unit-stride dim without a division per element.
- other devices (GPUs): a work group of (TN / NR) x (TM / RM) work items shares 64 x 64 local
  tiles, loaded cooperatively; each work item keeps an RM x NR block of ``out`` in registers.
  (Tested on PoCL by forcing it with ``FORCE_SHAPE = "gpu"``; not tuned on a GPU.)

Measured on a 2-core AMD EPYC (pocl-binary-distribution, znver3 / AVX2 target), 1024 x 1024
float32 matmul: about 140 GFLOP/s, against 200 GFLOP/s for numpy's BLAS (AVX-512) on the same machine - the
vload / fma / packing fixes took it from 11 GFLOP/s. Tile sizes 48..144 x 64..128 x 128..256
all measure within 10% of each other.
"""
from __future__ import annotations

import functools

import numpy as np

import ember

from .. import _codegen as cg

NO_BOOL = ("uint8", "int8", "int16", "int32", "int64", "float32", "float64")
RM = 6                      # micro-tile rows (CPU kernel)
TM_MAX, TN_MAX, TK_MAX = 96, 64, 256   # CPU tile: 96 x 64 outputs, 256-deep panels (160 KiB float)

#: "cpu" or "gpu" forces a kernel shape (tests run both on PoCL); None picks by device type
FORCE_SHAPE = None


def acc_type(dtype) -> str:
    """The C type bmm accumulates ``dtype`` in."""
    c = cg.ctype(dtype)
    if c in ("float", "double"):
        return c
    return "ulong" if c == "long" else "uint"


def _vw(at: str) -> int:
    return 4 if at in ("double", "ulong") else 8


def _load(at: str, src_c: str, expr: str) -> str:
    """``expr`` (of C type src_c) converted to accumulator type ``at`` (integers sign-extend first)."""
    if at in ("uint", "ulong") and src_c != at:
        wide = "long" if at == "ulong" else "int"
        return f"({at})({wide})({expr})"
    return f"({at})({expr})"


def _pack(at, ac, bc, tn_expr="tn", tm_expr="tm"):
    """C statements packing A (tm x tk, k-major) into As and B (tk x tn) into Bs, zero-padded, shared
    by the work items of a group (item ``lo_a`` of ``st_a``) - the GPU kernel's packing."""
    return f"""
        if (sak == 1) {{
            for (int i = lo_a; i < {tm_expr}; i += st_a) for (int k = 0; k < tk; k++)
                As[k * {tm_expr} + i] = (m0 + i < M && k0 + k < K) ? {_load(at, ac, "A[(m0 + i) * sam + (k0 + k) * sak]")} : ({at})0;
        }} else {{
            for (int e = lo_a; e < {tm_expr} * tk; e += st_a) {{ int k = e / {tm_expr}, i = e - k * {tm_expr};
                As[k * {tm_expr} + i] = (m0 + i < M && k0 + k < K) ? {_load(at, ac, "A[(m0 + i) * sam + (k0 + k) * sak]")} : ({at})0; }}
        }}
        if (sbn == 1) {{
            for (int e = lo_a; e < {tn_expr} * tk; e += st_a) {{ int k = e / {tn_expr}, j = e - k * {tn_expr};
                Bs[k * {tn_expr} + j] = (n0 + j < N && k0 + k < K) ? {_load(at, bc, "B[(k0 + k) * sbk + (n0 + j) * sbn]")} : ({at})0; }}
        }} else {{
            for (int j = lo_a; j < {tn_expr}; j += st_a) for (int k = 0; k < tk; k++)
                Bs[k * {tn_expr} + j] = (n0 + j < N && k0 + k < K) ? {_load(at, bc, "B[(k0 + k) * sbk + (n0 + j) * sbn]")} : ({at})0;
        }}"""


def _typedef(at: str, vw: int) -> str:
    """An under-aligned vector type: dereferencing it is an unaligned vector load (PoCL's vloadN is a
    library call, several times slower)."""
    size = 8 if at in ("double", "ulong") else 4
    return f"typedef {at}{vw} {at}{vw}_u __attribute__((aligned({size})));"


def _pack_cpu(at, ac, bc):
    """C statements (one work item) packing A's rows m0.. (k-major) into As and B's k-rows into Bs.

    Only ``tk`` k-values are packed (the micro-kernel runs k < tk); rows / columns beyond M / N
    are zero. No division per element, the inner loop walks the operand's unit-stride dim."""
    a = _load(at, ac, "ap_[{}]")
    b = _load(at, bc, "bp_[{}]")
    return f"""
        const int mi = min(tm, M - m0), nj = min(tn, N - n0);
        if (sak == 1) {{
            for (int i = 0; i < mi; i++) {{ __global const {ac}* ap_ = A + (m0 + i) * sam + k0;
                for (int k = 0; k < tk; k++) As[k * tm + i] = {a.format("k")}; }}
        }} else {{
            for (int k = 0; k < tk; k++) {{ __global const {ac}* ap_ = A + m0 * sam + (k0 + k) * sak;
                for (int i = 0; i < mi; i++) As[k * tm + i] = {a.format("i * sam")}; }}
        }}
        for (int k = 0; k < tk; k++) for (int i = mi; i < tm; i++) As[k * tm + i] = ({at})0;
        if (sbn == 1) {{
            for (int k = 0; k < tk; k++) {{ __global const {bc}* bp_ = B + (k0 + k) * sbk + n0;
                for (int j = 0; j < nj; j++) Bs[k * tn + j] = {b.format("j")};
                for (int j = nj; j < tn; j++) Bs[k * tn + j] = ({at})0; }}
        }} else {{
            for (int j = 0; j < nj; j++) {{ __global const {bc}* bp_ = B + n0 * sbn + j * sbn + k0 * sbk;
                for (int k = 0; k < tk; k++) Bs[k * tn + j] = {b.format("k * sbk")}; }}
            for (int k = 0; k < tk; k++) for (int j = nj; j < tn; j++) Bs[k * tn + j] = ({at})0;
        }}"""


_PARAMS = """__global const {ac}* A, long a_off, long sab, long sam, long sak,
    __global const {bc}* B, long b_off, long sbb, long sbk, long sbn,
    __global {oc}* C, long c_off, long scb, long scm, long scn, int M, int N, int K"""


def _store_out(oc, at, vw, acc0, acc1, row, col):
    """C statements storing the 2*VW accumulators ``acc0``/``acc1`` of row ``row`` from column ``col``."""
    cast = f"({oc})" if oc != at else ""
    return f"""{{ int i_ = {row}; if (i_ < M) {{ {at} t_[{2 * vw}]; vstore{vw}({acc0}, 0, t_); vstore{vw}({acc1}, 1, t_);
            for (int c_ = 0; c_ < {2 * vw}; c_++) {{ int j_ = {col} + c_; if (j_ < N) C[i_ * scm + j_ * scn] = {cast}t_[c_]; }} }} }}"""


@functools.lru_cache(maxsize=None)
def cpu_source(a_name: str, b_name: str, out_name: str) -> str:
    """One work item per output tile; runtime tile sizes tm (multiple of RM), tn (of 2 VW), tk."""
    ac, bc, oc = cg.ctype(a_name), cg.ctype(b_name), cg.ctype(out_name)
    at = acc_type(getattr(ember, out_name))
    vw = _vw(at)
    nr = 2 * vw
    vt = f"{at}{vw}"
    regs = [(r, h) for r in range(RM) for h in range(2)]
    load_acc = " ".join(f"{vt} c{r}{h} = acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r + h}];" for r, h in regs)
    save_acc = " ".join(f"acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r + h}] = c{r}{h};" for r, h in regs)
    fmas = "\n                ".join(f"a = ({vt})(ap[{r}]); c{r}0 += a * b0; c{r}1 += a * b1;" for r in range(RM))
    stores = "\n        ".join(
        _store_out(oc, at, vw, f"acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r}]",
                   f"acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r + 1}]", f"m0 + x * {RM} + {r}", f"n0 + y * {nr}")
        for r in range(RM))
    return f"""{_typedef(at, vw)}
#define TM_MAX {TM_MAX}
#define TN_MAX {TN_MAX}
#define TK_MAX {TK_MAX}
__kernel void ember_bmm_cpu({_PARAMS.format(ac=ac, bc=bc, oc=oc)}, int tm, int tn, int tkmax)
{{
    const int n0 = get_group_id(0) * tn, m0 = get_group_id(1) * tm;
    const long b = get_group_id(2);
    __local {at} As[TK_MAX * TM_MAX];
    __local {at} Bs[TK_MAX * TN_MAX];
    {vt} acc[(TM_MAX / {RM}) * (TN_MAX / {nr}) * {2 * RM}];
    A += a_off + b * sab; B += b_off + b * sbb; C += c_off + b * scb;
    for (int e = 0; e < (TM_MAX / {RM}) * (TN_MAX / {nr}) * {2 * RM}; e++) acc[e] = ({vt})(0);
    for (int k0 = 0; k0 < K; k0 += tkmax) {{
        const int tk = min(tkmax, K - k0);
        {_pack_cpu(at, ac, bc)}
        for (int x = 0; x < tm / {RM}; x++) for (int y = 0; y < tn / {nr}; y++) {{
            {load_acc}
            __local const {at}* ap = As + x * {RM};
            __local const {at}* bp = Bs + y * {nr};
            for (int k = 0; k < tk; k++, ap += tm, bp += tn) {{
                {vt} b0 = ((__local const {vt}_u*)bp)[0], b1 = ((__local const {vt}_u*)bp)[1], a;
                {fmas}
            }}
            {save_acc}
        }}
    }}
    for (int x = 0; x < tm / {RM}; x++) for (int y = 0; y < tn / {nr}; y++) {{
        {stores}
    }}
}}
"""


GPU_TM, GPU_TN, GPU_TK, GPU_RM = 64, 64, 16, 8


@functools.lru_cache(maxsize=None)
def gpu_source(a_name: str, b_name: str, out_name: str) -> str:
    """A work group per 64 x 64 tile; each work item an RM x NR register block of it."""
    ac, bc, oc = cg.ctype(a_name), cg.ctype(b_name), cg.ctype(out_name)
    at = acc_type(getattr(ember, out_name))
    vw = _vw(at)
    nr = 2 * vw
    vt = f"{at}{vw}"
    wx, wy = GPU_TN // nr, GPU_TM // GPU_RM
    return f"""{_typedef(at, vw)}
__kernel void ember_bmm_gpu({_PARAMS.format(ac=ac, bc=bc, oc=oc)})
{{
    const int tm = {GPU_TM}, tn = {GPU_TN};
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int lo_a = ty * {wx} + tx, st_a = {wx * wy};
    const int n0 = get_group_id(0) * tn, m0 = get_group_id(1) * tm;
    const long b = get_group_id(2);
    __local {at} As[{GPU_TK * GPU_TM}];
    __local {at} Bs[{GPU_TK * GPU_TN}];
    {vt} c0[{GPU_RM}], c1[{GPU_RM}];
    for (int r = 0; r < {GPU_RM}; r++) {{ c0[r] = ({vt})(0); c1[r] = ({vt})(0); }}
    A += a_off + b * sab; B += b_off + b * sbb; C += c_off + b * scb;
    for (int k0 = 0; k0 < K; k0 += {GPU_TK}) {{
        const int tk = min({GPU_TK}, K - k0);
        {_pack(at, ac, bc)}
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < tk; k++) {{
            {vt} b0 = ((__local const {vt}_u*)(Bs + k * tn + tx * {nr}))[0];
            {vt} b1 = ((__local const {vt}_u*)(Bs + k * tn + tx * {nr}))[1];
            for (int r = 0; r < {GPU_RM}; r++) {{
                {vt} a = ({vt})(As[k * tm + ty * {GPU_RM} + r]); c0[r] += a * b0; c1[r] += a * b1; }}
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
    }}
    for (int r = 0; r < {GPU_RM}; r++)
        {_store_out(oc, at, vw, "c0[r]", "c1[r]", f"m0 + ty * {GPU_RM} + r", f"n0 + tx * {nr}")}
}}
"""


def _shares_memory(a, b) -> bool:
    return isinstance(b, ember.Tensor) and a.untyped_storage().handle is b.untyped_storage().handle


def _round_up(v, m):
    return (v + m - 1) // m * m


def gemm_into(out, a, b):
    """``out[i] = a[i] @ b[i]`` for 3-D opencl tensors (any strides); one kernel launch."""
    nb, M, K = a.shape
    N = b.shape[2]
    if nb == 0 or M == 0 or N == 0:
        return
    if K == 0:
        out.fill_(0)
        return
    state = cg.state_of(out)
    shape = FORCE_SHAPE
    if shape is None:
        import pyopencl as cl
        shape = "cpu" if state.device.type & cl.device_type.CPU else "gpu"
    names = (a.dtype.name, b.dtype.name, out.dtype.name)
    args = [*cg.tensor_args(a), *cg.tensor_args(b), *cg.tensor_args(out), np.int32(M), np.int32(N), np.int32(K)]
    if shape == "cpu":
        nr = 2 * _vw(acc_type(out.dtype))
        tm, tn = min(TM_MAX, _round_up(M, RM)), min(TN_MAX, _round_up(N, nr))
        k = cg.build(state, cpu_source(*names), "ember_bmm_cpu")
        cg.launch(state, k, (-(-N // tn), -(-M // tm), nb), args + [np.int32(tm), np.int32(tn), np.int32(TK_MAX)],
                  local_size=(1, 1, 1))
    else:
        nr = 2 * _vw(acc_type(out.dtype))
        wx, wy = GPU_TN // nr, GPU_TM // GPU_RM
        k = cg.build(state, gpu_source(*names), "ember_bmm_gpu")
        cg.launch(state, k, (-(-N // GPU_TN) * wx, -(-M // GPU_TM) * wy, nb), args, local_size=(wx, wy, 1))


def bmm(self, mat2, *, out):
    """opencl kernel of ``bmm``: write self (b, n, m) @ mat2 (b, m, p) into ``out`` (b, n, p) with the tiled GEMM,
    any strides (through a temporary when ``out`` shares memory with an operand); integers wrap on overflow.
    """
    if _shares_memory(out, self) or _shares_memory(out, mat2):
        tmp = ember.empty(tuple(out.shape), dtype=out.dtype, device=out.device)
        gemm_into(tmp, self, mat2)
        out.copy_(tmp)
        return
    gemm_into(out, self, mat2)


def register(lib, dtypes=None):
    """Register bmm for device 'opencl' on ``lib``, for float32 / float64 and the integer dtypes (no bool),
    narrowed to ``dtypes`` when given.
    """
    names = {d.name for d in dtypes} if dtypes is not None else set(NO_BOOL)
    lib.impl("bmm", bmm, device="opencl", dtypes=[getattr(ember, n) for n in NO_BOOL if n in names])
