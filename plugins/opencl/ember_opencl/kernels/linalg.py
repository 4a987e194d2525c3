"""bmm on opencl: a tiled GEMM with local-memory tiles and register blocking, for any strides.

``bmm(self, mat2, out=)`` computes ``out[b] = self[b] @ mat2[b]`` for (b, n, m) @ (b, m, p). No
operand is made contiguous: the kernels read ``self`` / ``mat2`` through their strides and
storage offsets while packing tiles into local memory, and write ``out`` through its strides.
(An ``out`` sharing memory with an operand is computed into a temporary first.)

The computation type: float32 / float64 in their own precision; every integer type in the
unsigned integer of its accumulator width (``uint`` for 8-32 bit, ``ulong`` for int64), so
that overflow wraps as PyTorch's (signed overflow is undefined in C) - the low bits of a
wrapped product sum are the same in any wider type, and the store casts them back.

The computation type of float16 is float (stored back rounded to nearest even); float16 is
registered where the plugin declares it, i.e. when every device reports cl_khr_fp16.

Two shapes of the same computation, picked by the device type:

- CPU devices (PoCL, Intel's CPU runtime): one work item per (tm x tn) output tile. It packs a
  (tm x tk) panel of ``self`` and a (tk x tn) panel of ``mat2`` into local memory, then runs a
  6 x (2 * VW) register-blocked micro-kernel (12 vector accumulators, VW = 8 floats / 4
  doubles: the AVX2 register file) over the panel - the layout BLAS libraries use. The panel of
  ``self`` is row-major when its k stride is 1 and k-major otherwise, so packing it is a
  contiguous copy for row- and column-major ``self`` alike (the transposing pack of a row-major
  ``self`` that this replaced cost about a quarter of the GEMM's time on both runtimes). The
  runtime tile is clamped to the problem, and rows are split further until every compute unit
  has a tile, so small matrices do not pay for the full tile. ``c += a * b`` rather than ``fma()``, and vectors read by
  dereferencing an under-aligned vector type rather than ``vloadN``: PoCL contracts the first
  to a vfmadd and the second to an unaligned vector load, while its ``fma()`` and ``vloadN`` for
  vectors are library calls (Intel's compiler emits the same inner loop: 12 vfmadd231ps, 6
  broadcasts, 2 loads).
- other devices (GPUs): a work group of (tn / NR) x (tm / GPU_RM) work items shares tm x tn
  local tiles, loaded cooperatively; each work item keeps a GPU_RM x NR block of ``out`` in
  registers. (Tested on PoCL and Intel's CPU runtime by forcing it with ``FORCE_SHAPE = "gpu"``;
  not tuned on a GPU.)

Launch parameters come from the device, once per (device, dtypes) - ``plan_for``: the tile sizes
and the ``__local`` array sizes (compile-time constants of the source) are the largest from a
starting tile whose panels, in the accumulator type, fit CL_DEVICE_LOCAL_MEM_SIZE (``cpu_tiles``,
``gpu_tiles``); the built kernel's CL_KERNEL_LOCAL_MEM_SIZE is checked against it. The GPU work
group is sized to the kernel's CL_KERNEL_WORK_GROUP_SIZE (its register use can lower it below the
device's maximum) and grown towards its preferred work-group size multiple. A launch the runtime
still refuses with OUT_OF_RESOURCES is retried once with tiles of half the local memory. (The CPU
shape's work group is one work item: the kernel is vectorized by hand, so the preferred multiple,
which counts work items for a runtime's implicit vectorizer, does not apply.) Intel's CPU runtime
(256 KiB of local memory) refused the former fixed 96 x 64 x 256 tiles of the 8-byte types
(320 KiB); the 96 x 128 x 128 starting tile takes 224 KiB for them, and a device with less local
memory gets shallower, then smaller tiles.

Measured on a 2-core AMD EPYC shared with other jobs, 1024 x 1024 float32, old and new kernels
interleaved in one process: per CPU-second (i.e. per core, the figure load disturbs least) PoCL
(znver3 / AVX2 target) went from 40-55 to 78-93 GFLOP/s and Intel's runtime from 42-51 to 76-92,
against 55-117 for numpy's BLAS (AVX-512); at a quiet moment Intel's runtime ran at 187 GFLOP/s
and numpy at 207. float64 gains 10-20 % on PoCL. Tile sizes 48..192 x 64..256 x 64..256 measure
within 10 % of each other; the row-major panel of ``self`` brought most of the gain.
"""
from __future__ import annotations

import functools
import weakref
from typing import NamedTuple

import numpy as np

import ember

from .. import _codegen as cg

NO_BOOL = ("uint8", "int8", "int16", "int32", "int64", "float32", "float64")
RM = 6                      # micro-tile rows (CPU kernel)
#: the CPU tile bmm starts from: 96 x 128 outputs, 128-deep panels (112 KiB of float, 224 KiB of double
#: in local memory); ``cpu_tiles`` shrinks it until the panels fit the device's local memory
TM_PREF, TN_PREF, TK_PREF = 96, 128, 128
#: the GPU tile bmm starts from (64 x 64 outputs, 16-deep panels) and the rows per work item;
#: ``gpu_tiles`` resizes it to the kernel's work-group limits and the device's local memory
GPU_TM, GPU_TN, GPU_TK, GPU_RM = 64, 64, 16, 8
GPU_TILE_MAX = 128          # largest GPU tile side grown to reach the preferred work-group multiple

#: "cpu" or "gpu" forces a kernel shape (tests run both on PoCL); None picks by device type
FORCE_SHAPE = None


def acc_type(dtype) -> str:
    """The C type bmm accumulates ``dtype`` in (float16 in float)."""
    c = cg.ctype(dtype)
    if c in ("float", "double"):
        return c
    if c == "half":
        return "float"
    return "ulong" if c == "long" else "uint"


def _vw(at: str) -> int:
    return 4 if at in ("double", "ulong") else 8


def _esize(at: str) -> int:
    """Bytes of one accumulator-type element (the local tiles hold accumulator values)."""
    return 8 if at in ("double", "ulong") else 4


def _load(at: str, src_c: str, ptr: str, idx: str) -> str:
    """``ptr[idx]`` (of C type src_c) converted to accumulator type ``at`` (integers sign-extend first,
    half goes through ``vload_half``)."""
    if src_c == "half":
        return f"vload_half({idx}, {ptr})"
    if at in ("uint", "ulong") and src_c != at:
        wide = "long" if at == "ulong" else "int"
        return f"({at})({wide})({ptr}[{idx}])"
    return f"({at})({ptr}[{idx}])"


def _store(oc: str, at: str, idx: str, value: str) -> str:
    """C statement writing accumulator ``value`` to ``C[idx]`` (half rounds to nearest even)."""
    if oc == "half":
        return f"vstore_half_rte({value}, {idx}, C);"
    cast = f"({oc})" if oc != at else ""
    return f"C[{idx}] = {cast}{value};"


# ---------------------------------------------------------------- tile sizes from the device's limits
def _cpu_bytes(tm, tn, tk, esize):
    return esize * tk * (tm + tn)


def _shrink_cpu(tm, tn, tk, nr, rm=RM):
    """The next smaller CPU tile: shallower panels first (down to 64 deep), then fewer rows, fewer columns,
    then shallower still; None when it is already one micro-tile by one k."""
    if tk > 64:
        return tm, tn, tk // 2
    if tm > rm and tm >= tn:
        return max(rm, tm // 2 // rm * rm), tn, tk
    if tn > nr:
        return tm, max(nr, tn // 2 // nr * nr), tk
    if tm > rm:
        return max(rm, tm // 2 // rm * rm), tn, tk
    if tk > 1:
        return tm, tn, tk // 2
    return None


def cpu_tiles(local_mem_size: int, esize: int, nr: int, rm: int = RM, start=None):
    """``(tm, tn, tk)`` of the CPU kernel: ``start`` (default TM_PREF x TN_PREF x TK_PREF) shrunk until the
    packed panels, ``esize * tk * (tm + tn)`` bytes, fit in ``local_mem_size``. tm is a multiple of ``rm``,
    tn of ``nr``. ValueError when not even one micro-tile fits."""
    tm, tn, tk = start or (TM_PREF, TN_PREF, TK_PREF)
    tm, tn = max(rm, tm // rm * rm), max(nr, tn // nr * nr)
    while _cpu_bytes(tm, tn, tk, esize) > local_mem_size:
        nxt = _shrink_cpu(tm, tn, tk, nr, rm)
        if nxt is None:
            raise ValueError(f"ember-opencl bmm: a {rm} x {nr} tile of {esize}-byte elements needs "
                             f"{_cpu_bytes(tm, tn, tk, esize)} bytes of local memory; the device has {local_mem_size}")
        tm, tn, tk = nxt
    return tm, tn, tk


def gpu_tiles(local_mem_size: int, esize: int, nr: int, max_items: int, multiple: int = 1, rm: int = GPU_RM):
    """``(tm, tn, tk)`` of the GPU kernel, whose work group is ``(tn / nr) x (tm / rm)`` work items.

    From GPU_TM x GPU_TN x GPU_TK: grown (tm, then tn, doubling up to GPU_TILE_MAX) while the group is
    smaller than the preferred multiple ``multiple``, then shrunk (halving the larger side, then the
    depth) until the group has at most ``max_items`` work items and the panels, ``esize * tk * (tm + tn)``
    bytes, fit in ``local_mem_size``. ValueError when not even one work item's block fits."""
    tm, tn, tk = GPU_TM, GPU_TN, GPU_TK

    def fits(tm, tn, tk):
        return (tn // nr) * (tm // rm) <= max_items and esize * tk * (tm + tn) <= local_mem_size

    while (tn // nr) * (tm // rm) < multiple:
        bigger = (2 * tm, tn, tk) if tm <= tn else (tm, 2 * tn, tk)
        if max(bigger[:2]) > GPU_TILE_MAX or not fits(*bigger):
            break
        tm, tn, tk = bigger
    while not fits(tm, tn, tk):
        if tm > rm and tm >= tn // nr * rm:
            tm = max(rm, tm // 2 // rm * rm)
        elif tn > nr:
            tn = max(nr, tn // 2 // nr * nr)
        elif tm > rm:
            tm = max(rm, tm // 2 // rm * rm)
        elif tk > 1:
            tk //= 2
        else:
            raise ValueError(f"ember-opencl bmm: one {rm} x {nr} block of {esize}-byte elements does not fit "
                             f"{max_items} work items and {local_mem_size} bytes of local memory")
    return tm, tn, tk


def _pack(at, ac, bc):
    """C statements packing A (tm x tk, k-major) into As and B (tk x tn) into Bs, zero-padded, shared
    by the work items of a group (item ``lo_a`` of ``st_a``) - the GPU kernel's packing."""
    a = _load(at, ac, "A", "(m0 + i) * sam + (k0 + k) * sak")
    b = _load(at, bc, "B", "(k0 + k) * sbk + (n0 + j) * sbn")
    return f"""
        if (sak == 1) {{
            for (int i = lo_a; i < tm; i += st_a) for (int k = 0; k < tk; k++)
                As[k * tm + i] = (m0 + i < M && k0 + k < K) ? {a} : ({at})0;
        }} else {{
            for (int e = lo_a; e < tm * tk; e += st_a) {{ int k = e / tm, i = e - k * tm;
                As[k * tm + i] = (m0 + i < M && k0 + k < K) ? {a} : ({at})0; }}
        }}
        if (sbn == 1) {{
            for (int e = lo_a; e < tn * tk; e += st_a) {{ int k = e / tn, j = e - k * tn;
                Bs[k * tn + j] = (n0 + j < N && k0 + k < K) ? {b} : ({at})0; }}
        }} else {{
            for (int j = lo_a; j < tn; j += st_a) for (int k = 0; k < tk; k++)
                Bs[k * tn + j] = (n0 + j < N && k0 + k < K) ? {b} : ({at})0;
        }}"""


def _typedef(at: str, vw: int) -> str:
    """An under-aligned vector type: dereferencing it is an unaligned vector load (PoCL's vloadN is a
    library call, several times slower)."""
    return f"typedef {at}{vw} {at}{vw}_u __attribute__((aligned({_esize(at)})));"


def _pack_cpu(at, ac, bc):
    """C statements (one work item) packing A's rows m0.. into As and B's k-rows into Bs.

    As is row-major (``As[i * TK_MAX + k]``) when A's k stride is 1 and k-major (``As[k * tm + i]``)
    otherwise, so that packing A is a contiguous copy whenever either of its strides is 1 (the
    micro-kernel reads either layout at the same cost). Bs is k-major (``Bs[k * tn + j]``): the
    micro-kernel loads vectors along n. Only ``tk`` k-values are packed (the micro-kernel runs
    k < tk); rows / columns beyond M / N are zero. No division per element, the inner loops walk
    the operand's unit-stride dim."""
    a = lambda idx: _load(at, ac, "ap_", idx)
    b = lambda idx: _load(at, bc, "bp_", idx)
    return f"""
        const int mi = min(tm, M - m0), nj = min(tn, N - n0);
        if (sak == 1) {{
            for (int i = 0; i < mi; i++) {{ __global const {ac}* ap_ = A + (m0 + i) * sam + k0;
                for (int k = 0; k < tk; k++) As[i * TK_MAX + k] = {a("k")}; }}
            for (int i = mi; i < tm; i++) for (int k = 0; k < tk; k++) As[i * TK_MAX + k] = ({at})0;
        }} else {{
            for (int k = 0; k < tk; k++) {{ __global const {ac}* ap_ = A + m0 * sam + (k0 + k) * sak;
                for (int i = 0; i < mi; i++) As[k * tm + i] = {a("i * sam")};
                for (int i = mi; i < tm; i++) As[k * tm + i] = ({at})0; }}
        }}
        if (sbn == 1) {{
            for (int k = 0; k < tk; k++) {{ __global const {bc}* bp_ = B + (k0 + k) * sbk + n0;
                for (int j = 0; j < nj; j++) Bs[k * tn + j] = {b("j")};
                for (int j = nj; j < tn; j++) Bs[k * tn + j] = ({at})0; }}
        }} else {{
            for (int j = 0; j < nj; j++) {{ __global const {bc}* bp_ = B + n0 * sbn + j * sbn + k0 * sbk;
                for (int k = 0; k < tk; k++) Bs[k * tn + j] = {b("k * sbk")}; }}
            for (int k = 0; k < tk; k++) for (int j = nj; j < tn; j++) Bs[k * tn + j] = ({at})0;
        }}"""


_PARAMS = """__global const {ac}* A, long a_off, long sab, long sam, long sak,
    __global const {bc}* B, long b_off, long sbb, long sbk, long sbn,
    __global {oc}* C, long c_off, long scb, long scm, long scn, int M, int N, int K"""


def _store_out(oc, at, vw, acc0, acc1, row, col):
    """C statements storing the 2*VW accumulators ``acc0``/``acc1`` of row ``row`` from column ``col``."""
    store = _store(oc, at, "i_ * scm + j_ * scn", "t_[c_]")
    return f"""{{ int i_ = {row}; if (i_ < M) {{ {at} t_[{2 * vw}]; vstore{vw}({acc0}, 0, t_); vstore{vw}({acc1}, 1, t_);
            for (int c_ = 0; c_ < {2 * vw}; c_++) {{ int j_ = {col} + c_; if (j_ < N) {store} }} }} }}"""


@functools.lru_cache(maxsize=None)
def cpu_source(a_name: str, b_name: str, out_name: str, tm_max: int = TM_PREF, tn_max: int = TN_PREF,
               tk_max: int = TK_PREF) -> str:
    """One work item per output tile. The local panels are sized for a ``tm_max`` x ``tn_max`` tile
    ``tk_max`` deep (compile-time constants, from ``cpu_tiles``); the runtime arguments tm (a multiple of
    RM), tn (of 2 VW) <= those clamp the tile to small problems."""
    ac, bc, oc = cg.ctype(a_name), cg.ctype(b_name), cg.ctype(out_name)
    at = acc_type(out_name)
    vw = _vw(at)
    nr = 2 * vw
    assert tm_max % RM == 0 and tn_max % nr == 0, (tm_max, tn_max)
    vt = f"{at}{vw}"
    regs = [(r, h) for r in range(RM) for h in range(2)]
    load_acc = " ".join(f"{vt} c{r}{h} = acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r + h}];" for r, h in regs)
    save_acc = " ".join(f"acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r + h}] = c{r}{h};" for r, h in regs)

    def micro(a_tile, a_step_k, a_step_r):
        """The loop over the micro-tiles of the packed panels, As read from ``a_tile`` (the micro-tile's
        first row) with strides ``a_step_k`` along k and ``a_step_r`` between rows."""
        fmas = "\n                ".join(f"a = ({vt})(ap[{r} * {a_step_r}]); c{r}0 += a * b0; c{r}1 += a * b1;"
                                        for r in range(RM))
        return f"""for (int x = 0; x < tm / {RM}; x++) for (int y = 0; y < tn / {nr}; y++) {{
            {load_acc}
            __local const {at}* ap = {a_tile};
            __local const {at}* bp = Bs + y * {nr};
            for (int k = 0; k < tk; k++, ap += {a_step_k}, bp += tn) {{
                {vt} b0 = ((__local const {vt}_u*)bp)[0], b1 = ((__local const {vt}_u*)bp)[1], a;
                {fmas}
            }}
            {save_acc}
        }}"""
    stores = "\n        ".join(
        _store_out(oc, at, vw, f"acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r}]",
                   f"acc[(x * (TN_MAX / {nr}) + y) * {2 * RM} + {2 * r + 1}]", f"m0 + x * {RM} + {r}", f"n0 + y * {nr}")
        for r in range(RM))
    return f"""{_typedef(at, vw)}
#define TM_MAX {tm_max}
#define TN_MAX {tn_max}
#define TK_MAX {tk_max}
__kernel void ember_bmm_cpu({_PARAMS.format(ac=ac, bc=bc, oc=oc)}, int tm, int tn)
{{
    const int n0 = get_group_id(0) * tn, m0 = get_group_id(1) * tm;
    const long b = get_group_id(2);
    __local {at} As[TK_MAX * TM_MAX];
    __local {at} Bs[TK_MAX * TN_MAX];
    {vt} acc[(TM_MAX / {RM}) * (TN_MAX / {nr}) * {2 * RM}];
    A += a_off + b * sab; B += b_off + b * sbb; C += c_off + b * scb;
    for (int e = 0; e < (TM_MAX / {RM}) * (TN_MAX / {nr}) * {2 * RM}; e++) acc[e] = ({vt})(0);
    for (int k0 = 0; k0 < K; k0 += TK_MAX) {{
        const int tk = min(TK_MAX, K - k0);
        {_pack_cpu(at, ac, bc)}
        if (sak == 1) {{
            {micro("As + x * " + str(RM) + " * TK_MAX", "1", "TK_MAX")}
        }} else {{
            {micro("As + x * " + str(RM), "tm", "1")}
        }}
    }}
    for (int x = 0; x < tm / {RM}; x++) for (int y = 0; y < tn / {nr}; y++) {{
        {stores}
    }}
}}
"""


@functools.lru_cache(maxsize=None)
def gpu_source(a_name: str, b_name: str, out_name: str, tm: int = GPU_TM, tn: int = GPU_TN,
               tk: int = GPU_TK) -> str:
    """A work group of (tn / NR) x (tm / GPU_RM) work items per tm x tn tile (compile-time constants, from
    ``gpu_tiles``); each work item an GPU_RM x NR register block of it."""
    ac, bc, oc = cg.ctype(a_name), cg.ctype(b_name), cg.ctype(out_name)
    at = acc_type(out_name)
    vw = _vw(at)
    nr = 2 * vw
    assert tm % GPU_RM == 0 and tn % nr == 0, (tm, tn)
    vt = f"{at}{vw}"
    wx, wy = tn // nr, tm // GPU_RM
    return f"""{_typedef(at, vw)}
__kernel void ember_bmm_gpu({_PARAMS.format(ac=ac, bc=bc, oc=oc)})
{{
    const int tm = {tm}, tn = {tn};
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int lo_a = ty * {wx} + tx, st_a = {wx * wy};
    const int n0 = get_group_id(0) * tn, m0 = get_group_id(1) * tm;
    const long b = get_group_id(2);
    __local {at} As[{tk * tm}];
    __local {at} Bs[{tk * tn}];
    {vt} c0[{GPU_RM}], c1[{GPU_RM}];
    for (int r = 0; r < {GPU_RM}; r++) {{ c0[r] = ({vt})(0); c1[r] = ({vt})(0); }}
    A += a_off + b * sab; B += b_off + b * sbb; C += c_off + b * scb;
    for (int k0 = 0; k0 < K; k0 += {tk}) {{
        const int tk = min({tk}, K - k0);
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


# ---------------------------------------------------------------- launch plans, per (device, dtypes)
class Plan(NamedTuple):
    """How bmm launches on one device for one (self, mat2, out) dtype triple."""
    shape: str          # "cpu" (one work item per tile) or "gpu" (a work group per tile)
    tm: int             # tile rows, columns and panel depth (the kernel's compile-time constants)
    tn: int
    tk: int
    nr: int             # columns of a micro-tile (tm is a multiple of RM on CPU, of GPU_RM on GPU; tn of nr)
    local_size: tuple   # the work group: (1, 1, 1) on CPU, (tn / nr, tm / GPU_RM, 1) on GPU
    kernel: object      # the built cl.Kernel
    units: int = 1      # the device's compute units (CPU: a launch splits rows until each has a tile)


#: DeviceState -> {(shape, dtype names): Plan}; weak, so a discarded state takes its plans along
_PLANS = weakref.WeakKeyDictionary()


def _kernel_info(state, kernel, what: str):
    """``kernel.get_work_group_info(CL_KERNEL_<what>)`` on ``state``'s device, or None where the runtime
    does not answer."""
    import pyopencl as cl
    try:
        return int(kernel.get_work_group_info(getattr(cl.kernel_work_group_info, what), state.device))
    except Exception:  # noqa: BLE001 - an optional query (cl.Error, or a stand-in device in tests)
        return None


def _cpu_plan(state, names, local_budget=None, start=None) -> Plan:
    """The CPU plan: the largest tile from ``start`` whose panels fit the device's local memory (or
    ``local_budget``), checked against the local memory the built kernel reports."""
    at = acc_type(names[2])
    es, nr = _esize(at), 2 * _vw(at)
    limit = int(state.local_mem_size) if local_budget is None else local_budget
    budget = limit
    for _ in range(4):
        tm, tn, tk = cpu_tiles(budget, es, nr, start=start)
        k = cg.build(state, cpu_source(*names, tm, tn, tk), "ember_bmm_cpu")
        used = _kernel_info(state, k, "LOCAL_MEM_SIZE")
        if used is None or used <= limit:
            break
        # the runtime adds local memory of its own beyond the panels: leave room for it
        budget = limit - (used - _cpu_bytes(tm, tn, tk, es))
        start = (tm, tn, tk)
    return Plan("cpu", tm, tn, tk, nr, (1, 1, 1), k, int(getattr(state.device, "max_compute_units", 1) or 1))


def _gpu_plan(state, names, local_budget=None, item_budget=None) -> Plan:
    """The GPU plan: ``gpu_tiles`` for the device's limits (or ``local_budget`` bytes and ``item_budget``
    work items), then again for the built kernel's own (work-group size, preferred multiple, local
    memory) until the tile no longer changes."""
    at = acc_type(names[2])
    es, nr = _esize(at), 2 * _vw(at)
    local = int(state.local_mem_size) if local_budget is None else local_budget
    items = int(state.max_work_group_size) if item_budget is None else item_budget
    max_items, multiple, overhead = items, 1, 0
    tiles = gpu_tiles(local, es, nr, max_items, multiple)
    for _ in range(4):
        tm, tn, tk = tiles
        k = cg.build(state, gpu_source(*names, tm, tn, tk), "ember_bmm_gpu")
        # the kernel's own limits: its register / private memory use can lower the work-group size
        wg = _kernel_info(state, k, "WORK_GROUP_SIZE")
        multiple = _kernel_info(state, k, "PREFERRED_WORK_GROUP_SIZE_MULTIPLE") or multiple
        used = _kernel_info(state, k, "LOCAL_MEM_SIZE")
        if wg is not None:
            max_items = min(items, wg)
        if used is not None:
            overhead = max(overhead, used - es * tk * (tm + tn))
        tiles = gpu_tiles(local - overhead, es, nr, max_items, multiple)
        if tiles == (tm, tn, tk):
            break
    else:
        tm, tn, tk = tiles
        k = cg.build(state, gpu_source(*names, tm, tn, tk), "ember_bmm_gpu")
    return Plan("gpu", tm, tn, tk, nr, (tn // nr, tm // GPU_RM, 1), k)


def _smaller(state, names, plan: Plan) -> Plan:
    """A plan with at most half ``plan``'s local memory (and on GPU, half its work items: there the
    refusal is as often registers x work items) - the OUT_OF_RESOURCES fallback."""
    es = _esize(acc_type(names[2]))
    half = es * plan.tk * (plan.tm + plan.tn) // 2
    if plan.shape == "cpu":
        return _cpu_plan(state, names, local_budget=half, start=(plan.tm, plan.tn, plan.tk))
    return _gpu_plan(state, names, local_budget=half,
                     item_budget=max(1, plan.local_size[0] * plan.local_size[1] // 2))


def plan_for(state, names, shape) -> Plan:
    """The launch plan of bmm with dtype names ``(self, mat2, out)`` on ``state``'s device, made once per
    (device, dtypes, shape) from the device's limits and the built kernel's own."""
    plans = _PLANS.setdefault(state, {})
    key = (shape, tuple(names))
    p = plans.get(key)
    if p is None:
        p = plans[key] = (_cpu_plan if shape == "cpu" else _gpu_plan)(state, tuple(names))
    return p


def _launch(state, plan: Plan, M, N, nb, args):
    if plan.shape == "cpu":
        tm, tn = min(plan.tm, _round_up(M, RM)), min(plan.tn, _round_up(N, plan.nr))
        while tm > RM and nb * -(-M // tm) * -(-N // tn) < plan.units:   # a tile for every compute unit
            tm = max(RM, _round_up(tm // 2, RM))
        return cg.launch(state, plan.kernel, (-(-N // tn), -(-M // tm), nb), args + [np.int32(tm), np.int32(tn)],
                         local_size=(1, 1, 1))
    wx, wy, _ = plan.local_size
    return cg.launch(state, plan.kernel, (-(-N // plan.tn) * wx, -(-M // plan.tm) * wy, nb), args,
                     local_size=plan.local_size)


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
    plan = plan_for(state, names, shape)
    try:
        _launch(state, plan, M, N, nb, args)
    except Exception as e:
        if getattr(e, "code", None) != -5:          # CL_OUT_OF_RESOURCES
            raise
        # The tiles fit every limit the device and the kernel report, yet the runtime refused the launch
        # (a runtime can reserve memory it does not report). Fall back once to tiles of half the local
        # memory, keep them for this device and dtype, and let a second refusal raise.
        plan = _PLANS[state][(shape, names)] = _smaller(state, names, plan)
        _launch(state, plan, M, N, nb, args)


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
    narrowed to ``dtypes`` when given; float16 too when ``dtypes`` declares it (the plugin declares it
    only when every device reports cl_khr_fp16).
    """
    names = {d.name for d in dtypes} if dtypes is not None else set(NO_BOOL)
    lib.impl("bmm", bmm, device="opencl", dtypes=[getattr(ember, n) for n in NO_BOOL + ("float16",) if n in names])
