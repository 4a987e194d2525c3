"""unique / unique_consecutive on opencl: a native path for ``dim=None``.

``dim=None`` (the flattened input), all on the device but for one host read of the output size:

1. ``unique`` sorts the flattened input with ``ember.sort`` (the native stable merge sort of
   ``sort_scan.py``: values ``s`` and the permutation ``p``); ``unique_consecutive`` uses the
   flattened input itself (a view when the input allows one, else a native copy) and no ``p``.
2. ``ember_unique_mark`` writes ``flag[i] = 1`` where a run starts (``i == 0`` or
   ``s[i] != s[i-1]``; ``!=`` is true for NaN, so every NaN is its own run, as ember-cpu /
   ``numpy.unique(equal_nan=False)`` does; ``-0.0`` and ``0.0`` are one run), else 0.
3. ``ember.cumsum`` (native scan) of the flags: ``gid[i]`` is 1 + the run of element ``i``; the
   last entry is the number of runs ``k`` (the one host read, it sizes the outputs).
4. ``ember_unique_write`` (per element): at a run start, ``values[g] = s[i]`` and
   ``first[g] = i``; every element writes ``inverse[p[i]] = g`` (``inverse[i] = g`` without ``p``).
5. ``ember_unique_counts`` (per run): ``counts[g] = first[g + 1] - first[g]`` (``n`` past the end).

The kernels read ``s`` with any 1-D stride and storage offset (float16 with ``vload_half``, compared
as float, so ``-0.0 == 0.0`` and NaN != NaN hold without half arithmetic); each work item takes one contiguous
range of indices (``_codegen.loop_grid`` work items: suits PoCL's CPU threads). The result is
sorted whatever ``sorted`` says (as ember-cpu and PoCL's reference, PyTorch's cpu kernel).

``dim=k`` (unique slices along a dim) calls the core's composite
(``ember._ops._reduction_composites.unique`` / ``unique_consecutive``), which itself runs on
native opencl ops (ne, amax, cumsum, gather, scatter_add, ...); it is registered here only so that
both entry points of the op are one kernel.
"""
from __future__ import annotations

import functools

import ember
from ember.library import ALL_DENSE

from .. import _codegen as cg

_RANGE = """const long G_ = get_global_size(0);
    const long per_ = (n + G_ - 1) / G_;
    const long lo_ = get_global_id(0) * per_, hi_ = min(n, lo_ + per_);"""


@functools.lru_cache(maxsize=None)
def _mark_source(c: str) -> str:
    cur, prev = cg.load("x", "x_off + i * x_s", c), cg.load("x", "x_off + (i - 1) * x_s", c)   # half: vload_half
    return f"""
__kernel void ember_unique_mark(long n, __global const {c}* x, long x_off, long x_s, __global long* flag)
{{
    {_RANGE}
    for (long i = lo_; i < hi_; i++)
        flag[i] = (i == 0 || {cur} != {prev}) ? 1 : 0;
}}
"""


@functools.lru_cache(maxsize=None)
def _write_source(c: str, has_perm: bool) -> str:
    dest = "p[p_off + i * p_s]" if has_perm else "i"
    keep = cg.store("vals", "g", c, cg.load("x", "x_off + i * x_s", c))      # half: exact through float
    return f"""
__kernel void ember_unique_write(long n, __global const {c}* x, long x_off, long x_s,
                                 __global const long* gid, __global const long* p, long p_off, long p_s,
                                 __global {c}* vals, __global long* first, __global long* inv)
{{
    {_RANGE}
    for (long i = lo_; i < hi_; i++) {{
        const long g = gid[i] - 1;
        if (i == 0 || gid[i] != gid[i - 1]) {{ {keep} first[g] = i; }}
        inv[{dest}] = g;
    }}
}}
"""


_COUNTS_SOURCE = """
__kernel void ember_unique_counts(long n, long total, __global const long* first, __global long* counts)
{
    """ + _RANGE + """
    for (long g = lo_; g < hi_; g++)
        counts[g] = (g + 1 < n ? first[g + 1] : total) - first[g];
}
"""


def _runs(self, s, p):
    """(values, inverse shaped like ``self``, counts) of the runs of the 1-D opencl tensor ``s``;
    ``p`` (int64, 1-D, or None) maps position ``i`` of ``s`` to its flattened position in ``self``."""
    n = s.shape[0]
    dev = s.device
    if n == 0:
        return (ember.empty((0,), dtype=self.dtype, device=dev),
                ember.empty(tuple(self.shape), dtype=ember.int64, device=dev),
                ember.empty((0,), dtype=ember.int64, device=dev))
    state = cg.state_of(s)
    c = cg.ctype(s.dtype)
    grid = cg.loop_grid(state, n)
    xs = [cg.buffer(s), cg.i64(s.storage_offset()), cg.i64(s.stride()[0])]
    flag = ember.empty((n,), dtype=ember.int64, device=dev)
    cg.launch(state, cg.build(state, _mark_source(c), "ember_unique_mark"), grid,
              [cg.i64(n), *xs, cg.buffer(flag)])
    gid = ember.cumsum(flag, 0)
    k = int(gid[n - 1].item())                      # the one data-dependent size: a host read
    vals = ember.empty((k,), dtype=s.dtype, device=dev)
    first = ember.empty((k,), dtype=ember.int64, device=dev)
    inv = ember.empty((n,), dtype=ember.int64, device=dev)
    pa = [cg.buffer(p), cg.i64(p.storage_offset()), cg.i64(p.stride()[0])] if p is not None else \
        [cg.buffer(gid), cg.i64(0), cg.i64(0)]      # unused placeholder
    cg.launch(state, cg.build(state, _write_source(c, p is not None), "ember_unique_write"), grid,
              [cg.i64(n), *xs, cg.buffer(gid), *pa, cg.buffer(vals), cg.buffer(first), cg.buffer(inv)])
    counts = ember.empty((k,), dtype=ember.int64, device=dev)
    cg.launch(state, cg.build(state, _COUNTS_SOURCE, "ember_unique_counts"), cg.loop_grid(state, k),
              [cg.i64(k), cg.i64(n), cg.buffer(first), cg.buffer(counts)])
    return vals, inv.reshape(tuple(self.shape)), counts


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """opencl kernel of ``unique``: with ``dim=None``, return new tensors (sorted unique values, int64 inverse of
    the input's shape, int64 counts) computed on the device (one host read of the count); with ``dim`` the
    core's composite. Always sorted.
    """
    if dim is not None:
        from ember._ops import _reduction_composites as comp
        return comp.unique(self, sorted, return_inverse, return_counts, dim)
    x = self.reshape(-1)
    s, p = ember.sort(x, 0)                         # native, stable
    return _runs(self, s, p)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """opencl kernel of ``unique_consecutive``: with ``dim=None``, return new tensors (values with runs of equal
    consecutive elements collapsed, int64 inverse of the input's shape, int64 run lengths); with ``dim`` the
    core's composite.
    """
    if dim is not None:
        from ember._ops import _reduction_composites as comp
        return comp.unique_consecutive(self, return_inverse, return_counts, dim)
    return _runs(self, self.reshape(-1), None)


def register(lib, dtypes=None):
    """Register unique and unique_consecutive for device 'opencl' on ``lib``, for the dtypes with an OpenCL C type
    (narrowed to ``dtypes`` when given: the device's dtypes, float16 only where it reports cl_khr_fp16).
    """
    dtypes = [d for d in (dtypes or ALL_DENSE) if d.name in cg.CTYPES]
    lib.impl("unique", unique, device="opencl", dtypes=dtypes)
    lib.impl("unique_consecutive", unique_consecutive, device="opencl", dtypes=dtypes)
