"""gather and scatter_add on opencl: one work item per index element, any strides.

``gather(self, dim, index)``: ``out[c] = self[c with c[dim] = index[c]]``;
``scatter_add(self, dim, index, src)``: ``out = self`` (unless in place), then
``out[c with c[dim] = index[c]] += src[c]`` for every coordinate ``c`` of ``index`` - only the
leading ``index.shape`` block of ``src`` is read. 0-dim tensors act as 1-element vectors.

Index checks come first, on the device: a check kernel records the smallest flat position of an
index outside ``[0, size)`` with ``atomic_min``; one 4-byte read tells the host whether to raise
``RuntimeError("index 4 is out of bounds for dimension 1 with size 4")`` (ember-cpu's message,
naming the first bad value in row-major order) - before anything is written.

scatter_add accumulates with atomics, so duplicate indices add up:

- int32 / int64: ``atomic_add`` / ``atom_add`` (cl_khr_int64_base_atomics);
- float32 / float64: a compare-and-swap loop on the value's bits (32- or 64-bit);
- int8 / uint8 / int16 and bool: a compare-and-swap loop on the aligned 32-bit word holding the
  element (OpenCL has no 8 / 16-bit atomics; ember's buffers are multiples of 512 bytes, so the
  word is always inside the buffer); bool adds as a logical or, as numpy's ``add.at``.

Float sums with duplicate indices are therefore added in an unspecified order (results may
differ from ember-cpu in the last bits, like PyTorch's CUDA scatter_add); integers are exact.
float16 accumulates in a float32 copy of ``self`` (float atomics) that is rounded once into
``out`` (``vstore_half_rte``), as ember-cpu does - OpenCL has no 16-bit atomics, and a CAS loop
on half would round after every add. gather moves float16 elements as their 16 bits (``ushort``,
``move_ctype``): no half arithmetic, so nothing here needs cl_khr_fp16.
"""
from __future__ import annotations

import functools

import numpy as np

import ember
from ember.library import ALL_DENSE

from .. import _codegen as cg
from .copy import contiguous_copy

INT64_ATOMICS = "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
NO_BAD = np.iinfo(np.int32).max


# ---------------------------------------------------------------- helpers
def move_ctype(dtype) -> str:
    """The C type data-movement kernels (gather, index_select, take, ...) copy ``dtype``'s elements as: its own,
    but ushort for float16 - the bits move unchanged, with or without cl_khr_fp16."""
    c = cg.ctype(dtype)
    return "ushort" if c == "half" else c


def move_scalar(value, dtype):
    """``value`` as a kernel scalar of ``move_ctype(dtype)`` (float16: the bits of the nearest half)."""
    v = cg.scalar(value, dtype)
    return v.view(np.uint16) if cg.ctype(dtype) == "half" else v


def _at_1d(t):
    """(shape, strides) of ``t``, a 0-dim tensor as a 1-element vector."""
    if t.dim() == 0:
        return (1,), (0,)
    return tuple(t.shape), tuple(t.stride())


@functools.lru_cache(maxsize=None)
def _check_source(rank: int) -> str:
    return f"""
__kernel void ember_index_check(long total, long size, {cg.shape_params(rank)},
                                {cg.tensor_params("idx", "long", rank, const=True)}, __global int* bad)
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    const long v = idx[{cg.offset("idx", rank)}];
    if (v < 0 || v >= size) atomic_min(bad, (int)i);
}}
"""


def check_index(index, size: int, dim: int):
    """RuntimeError (ember-cpu's message) when a value of ``index`` is outside [0, size)."""
    n = index.numel()
    if n == 0:
        return
    if n >= NO_BAD:
        raise RuntimeError(f"ember-opencl: an index tensor of {n} elements is too large (at most {NO_BAD - 1})")
    shape, strides = _at_1d(index)
    state = cg.state_of(index)
    bad = ember.full((1,), NO_BAD, dtype=ember.int32, device=index.device)
    k = cg.build(state, _check_source(len(shape)), "ember_index_check")
    cg.launch(state, k, n, [cg.i64(n), cg.i64(size), *cg.shape_args(shape), cg.buffer(index),
                            cg.i64(index.storage_offset()), *map(cg.i64, strides), cg.buffer(bad)])
    pos = int(bad.item())
    if pos != NO_BAD:
        v = int(index.cpu().numpy().reshape(-1)[pos])
        raise RuntimeError(f"index {v} is out of bounds for dimension {dim} with size {size}")


# ---------------------------------------------------------------- gather
@functools.lru_cache(maxsize=None)
def _gather_source(c: str, rank: int, dim: int) -> str:
    src_off = " + ".join(["x_off"] + [f"c{d} * x_s{d}" if d != dim else f"j * x_s{d}" for d in range(rank)])
    return f"""
__kernel void ember_gather(long total, {cg.shape_params(rank)},
                           {cg.tensor_params("out", c, rank)},
                           {cg.tensor_params("x", c, rank, const=True)},
                           {cg.tensor_params("idx", "long", rank, const=True)})
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    const long j = idx[{cg.offset("idx", rank)}];
    out[{cg.offset("out", rank)}] = x[{src_off}];
}}
"""


def gather(self, dim, index, *, sparse_grad=False, out):
    """opencl kernel of ``gather``: out[c] = self[c with c[dim] = index[c]], ``out`` of index's shape, any strides
    (a snapshot of ``self`` first when ``out`` shares its storage). RuntimeError "index v is out of bounds for
    dimension d with size n" before anything is written.
    """
    xshape, xstr = _at_1d(self)
    dim = dim % len(xshape)
    check_index(index, xshape[dim], dim)
    n = index.numel()
    if n == 0:
        return
    ishape, istr = _at_1d(index)
    ostr = _at_1d(out)[1]
    if out.untyped_storage().handle is self.untyped_storage().handle:
        self = contiguous_copy(self)             # out= overlapping the source: read a snapshot
        xstr = _at_1d(self)[1]
    r = len(ishape)
    state = cg.state_of(out)
    k = cg.build(state, _gather_source(move_ctype(out.dtype), r, dim), "ember_gather")
    cg.launch(state, k, n, [cg.i64(n), *cg.shape_args(ishape), cg.buffer(out), cg.i64(out.storage_offset()),
                            *map(cg.i64, ostr), cg.buffer(self), cg.i64(self.storage_offset()),
                            *map(cg.i64, xstr), cg.buffer(index), cg.i64(index.storage_offset()),
                            *map(cg.i64, istr)])


# ---------------------------------------------------------------- scatter_add
def _atomic_add(c: str) -> str:
    """C statements adding ``v`` (type c) to ``*p`` (``__global c* p``) atomically."""
    if c == "int":
        return "atomic_add((volatile __global int*)p, v);"
    if c == "long":
        return "atom_add((volatile __global long*)p, v);"
    if c == "float":
        return """union { uint u; float f; } o_, n_;
        do { o_.f = *p; n_.f = o_.f + v; }
        while (atomic_cmpxchg((volatile __global uint*)p, o_.u, n_.u) != o_.u);"""
    if c == "double":
        return """union { ulong u; double f; } o_, n_;
        do { o_.f = *p; n_.f = o_.f + v; }
        while (atom_cmpxchg((volatile __global ulong*)p, o_.u, n_.u) != o_.u);"""
    # 8 / 16-bit: a CAS loop on the aligned 32-bit word that holds the element
    bits = 16 if c == "short" else 8
    mask = "0xFFFFu" if bits == 16 else "0xFFu"
    add = "((cur_ != 0u) | (v != 0)) ? 1u : 0u" if c == "bool" else f"(uint)(cur_ + (uint)v) & {mask}"
    return f"""const ulong a_ = (ulong)p;
        volatile __global uint* w_ = (volatile __global uint*)(a_ & ~(ulong)3);
#ifdef __ENDIAN_LITTLE__
        const uint sh_ = (uint)(a_ & 3) * 8u;
#else
        const uint sh_ = (uint)(({4 - bits // 8} - (a_ & 3))) * 8u;
#endif
        uint o_, n_;
        do {{ o_ = *w_; uint cur_ = (o_ >> sh_) & {mask};
              n_ = (o_ & ~({mask} << sh_)) | (({add}) << sh_); }}
        while (atomic_cmpxchg(w_, o_, n_) != o_);"""


@functools.lru_cache(maxsize=None)
def _scatter_add_source(name: str, src_c: str, rank: int, dim: int) -> str:
    c = cg.ctype(name)
    kind = "bool" if name == "bool" else c
    dst_off = " + ".join(["out_off"] + [f"c{d} * out_s{d}" if d != dim else f"j * out_s{d}" for d in range(rank)])
    pragma = INT64_ATOMICS if c in ("long", "double") else ""
    value = f"({c})({cg.load('src', cg.offset('src', rank), src_c)})"      # half: vload_half
    return f"""{pragma}
__kernel void ember_scatter_add(long total, {cg.shape_params(rank)},
                                {cg.tensor_params("out", c, rank)},
                                {cg.tensor_params("src", src_c, rank, const=True)},
                                {cg.tensor_params("idx", "long", rank, const=True)})
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    const long j = idx[{cg.offset("idx", rank)}];
    __global {c}* p = out + ({dst_off});
    const {c} v = {value};
    {_atomic_add(kind)}
}}
"""


def scatter_add(self, dim, index, src, *, out):
    """opencl kernel of ``scatter_add``: copy ``self`` into ``out`` (unless in place), then atomically add src[c]
    at out[c with c[dim] = index[c]] for each coordinate of ``index`` (repeats accumulate; float sums in
    unspecified order). RuntimeError for an out-of-range index (before any write) and for int64 / float64 on a
    device without cl_khr_int64_base_atomics.
    """
    if out.dtype == ember.float16:               # accumulate in float32, rounded once into out (as ember-cpu)
        acc = self.to(ember.float32)
        scatter_add(acc, dim, index, src, out=acc)   # checks the index before out is written
        out.copy_(acc)
        return
    oshape, _ = _at_1d(self)
    dim = dim % len(oshape)
    check_index(index, oshape[dim], dim)         # before anything is written
    state = cg.state_of(out)
    c = cg.ctype(out.dtype)
    if c in ("long", "double") and not state.int64_atomics:
        raise RuntimeError(f"ember-opencl: scatter_add on {out.dtype} needs cl_khr_int64_base_atomics, which "
                           f"device {state.label} ('{state.device.name}') does not report")
    if src.untyped_storage().handle is out.untyped_storage().handle:
        src = contiguous_copy(src)               # src may alias out: read it as it was
    if out is not self:
        out.copy_(self)
    n = index.numel()
    if n == 0:
        return
    ishape, istr = _at_1d(index)
    r = len(ishape)
    k = cg.build(state, _scatter_add_source(out.dtype.name, cg.ctype(src.dtype), r, dim), "ember_scatter_add")
    cg.launch(state, k, n, [cg.i64(n), *cg.shape_args(ishape), cg.buffer(out), cg.i64(out.storage_offset()),
                            *map(cg.i64, _at_1d(out)[1]), cg.buffer(src), cg.i64(src.storage_offset()),
                            *map(cg.i64, _at_1d(src)[1]), cg.buffer(index), cg.i64(index.storage_offset()),
                            *map(cg.i64, istr)])


def register(lib, dtypes=None):
    """Register gather and scatter_add for device 'opencl' on ``lib``, for the dtypes with an OpenCL C type
    (narrowed to ``dtypes`` when given: the device's dtypes, float16 only where it reports cl_khr_fp16).
    """
    dtypes = [d for d in (dtypes or ALL_DENSE) if d.name in cg.CTYPES]
    lib.impl("gather", gather, device="opencl", dtypes=dtypes)
    lib.impl("scatter_add", scatter_add, device="opencl", dtypes=dtypes)
