"""copy_ and fill_ on opencl: one generated kernel each, for any strides, ranks and dtype pairs.

``copy_(self, src)`` copies within one device (the core routes copies between devices and
to / from the host through ``to_numpy`` / ``from_numpy``): ``src`` broadcasts to ``self``
(expanded with 0-strides), converts with C-style casts (float -> int truncates toward zero,
through ``long`` so that -1.0 -> 255 for uint8 as on the host; -> bool is ``!= 0``), and when
``src`` overlaps ``self`` in memory it is first copied to a temporary. ``fill_(self, value)``
writes one kernel scalar (C conversion: 2.7 -> 2, -1 -> 255 for uint8) into every element.
"""
from __future__ import annotations

import functools

import numpy as np

import ember
from ember.library import ALL_DENSE

from .. import _codegen as cg

FLOAT_C = ("half", "float", "double")
SMALL_INT_C = ("uchar", "char", "short", "int")


def cast(expr: str, src_dtype, dst_dtype) -> str:
    """C expression converting ``expr`` (of ``src_dtype``) to ``dst_dtype`` as numpy / PyTorch do."""
    s, d = cg.ctype(src_dtype), cg.ctype(dst_dtype)
    if s == "half":
        s = "float"                               # vload_half gives a float
    if d == "half":                               # vstore_half_rte takes float (or double) and rounds
        return f"({expr})" if s in ("float", "double") else f"(float)({expr})"
    if dst_dtype == ember.bool:
        return f"(uchar)(({expr}) != 0)"
    if s == d:
        return f"({expr})"
    if s in FLOAT_C and d in SMALL_INT_C:
        return f"({d})(long)({expr})"             # wrap like a C integer conversion, not saturate
    return f"({d})({expr})"


@functools.lru_cache(maxsize=None)
def _copy_source(dst_name: str, src_name: str, rank: int, inner: tuple) -> str:
    dst, src = getattr(ember, dst_name), getattr(ember, src_name)
    dc, sc = cg.ctype(dst), cg.ctype(src)
    body = cg.store("dst", "o_dst", dc, cast(cg.load("src", "o_src", sc), src, dst))
    return f"""
__kernel void ember_copy(long total, {cg.shape_params(rank)},
                         {cg.tensor_params("dst", dc, rank)},
                         {cg.tensor_params("src", sc, rank, const=True)}) {{
    {cg.loop(rank, ("dst", "src"), body, inner)}
}}
"""


@functools.lru_cache(maxsize=None)
def _fill_source(dst_name: str, rank: int, inner: tuple) -> str:
    dc = cg.ctype(dst_name)
    vc = "float" if dc == "half" else dc          # a half value travels as the float it rounds to
    return f"""
__kernel void ember_fill(long total, {cg.shape_params(rank)}, {cg.tensor_params("dst", dc, rank)}, {vc} value) {{
    {cg.loop(rank, ("dst",), cg.store("dst", "o_dst", dc, "value"), inner)}
}}
"""


def expanded_strides(t, shape):
    """``t``'s strides broadcast to ``shape`` (0 for new leading dims and expanded size-1 dims)."""
    lead = len(shape) - t.dim()
    st = [0] * lead
    for k, (n, s) in enumerate(zip(t.shape, t.stride())):
        st.append(0 if n == 1 and shape[lead + k] != 1 else s)
    return st


def _byte_range(t):
    isz = t.dtype.itemsize
    off = t.storage_offset()
    lo = off + sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if s < 0)
    hi = off + sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if s > 0)
    return lo * isz, (hi + 1) * isz


def _overlaps(a, b) -> bool:
    if a.untyped_storage().handle is not b.untyped_storage().handle:
        return False
    if (a.dtype == b.dtype and a.storage_offset() == b.storage_offset() and tuple(a.shape) == tuple(b.shape)
            and tuple(a.stride()) == tuple(b.stride())):
        return False                               # element i reads and writes the same place: safe
    (alo, ahi), (blo, bhi) = _byte_range(a), _byte_range(b)
    return alo < bhi and blo < ahi


def strided_copy(dst, src):
    """Write ``src`` (same device; broadcastable to dst; any dtype) into ``dst``: one kernel launch."""
    shape = tuple(dst.shape)
    n = dst.numel()
    if n == 0:
        return dst
    if _overlaps(dst, src):
        src = contiguous_copy(src)
    shape, (ds, ss) = cg.collapse(shape, dst.stride(), expanded_strides(src, shape))
    r = len(shape)
    state = cg.state_of(dst)
    inner = (cg.inner_class(ds[-1]), cg.inner_class(ss[-1]))
    k = cg.build(state, _copy_source(dst.dtype.name, src.dtype.name, r, inner), "ember_copy")
    cg.launch_loop(state, k, n, [cg.i64(n), *cg.shape_args(shape), *cg.tensor_args(dst, ds), *cg.tensor_args(src, ss)])
    return dst


def contiguous_copy(t):
    """A new contiguous tensor on ``t``'s device with ``t``'s values (through the caching allocator)."""
    out = ember.empty(tuple(t.shape), dtype=t.dtype, device=t.device)
    return strided_copy(out, t)


def copy_(self, src, non_blocking=False):
    """opencl kernel of ``copy_``: copy ``src`` (broadcast, C-style dtype conversion; a snapshot first when it
    overlaps ``self``) into ``self`` through any strides; a ``src`` on another device is moved here first.
    Returns ``self``.
    """
    if src.device != self.device:                  # the core routes these through the host; be safe
        self.copy_(src.to(self.device))
        return self
    strided_copy(self, src)
    return self


def fill_(self, value):
    """opencl kernel of ``fill_``: write ``value`` (C conversion: 2.7 -> 2, -1 -> 255 for uint8) into every element
    of ``self``, any strides; returns ``self``.
    """
    n = self.numel()
    if n == 0:
        return self
    shape, (ds,) = cg.collapse(tuple(self.shape), self.stride())
    r = len(shape)
    state = cg.state_of(self)
    k = cg.build(state, _fill_source(self.dtype.name, r, (cg.inner_class(ds[-1]),)), "ember_fill")
    v = cg.scalar(value, self.dtype)
    if self.dtype == ember.float16:
        v = np.float32(v)                         # exactly the float16 value, passed as float
    cg.launch_loop(state, k, n, [cg.i64(n), *cg.shape_args(shape), *cg.tensor_args(self, ds), v])
    return self


def register(lib, dtypes=ALL_DENSE):
    """Register copy_ and fill_ for device 'opencl' on ``lib``, for ``dtypes`` (default all dense) that have an
    OpenCL C type, plus float16 storage even without cl_khr_fp16.
    """
    # copy_ / fill_ also serve float16 storage on devices without cl_khr_fp16 (vload_half / vstore_half_rte),
    # so that .half() / .to(float16) work there; arithmetic in float16 still needs the extension
    names = {d.name for d in dtypes} | {"float16"}
    dtypes = [d for d in ALL_DENSE if d.name in names and d.name in cg.CTYPES]
    lib.impl("copy_", copy_, device="opencl", dtypes=dtypes)
    lib.impl("fill_", fill_, device="opencl", dtypes=dtypes)
