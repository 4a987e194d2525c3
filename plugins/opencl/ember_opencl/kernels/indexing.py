"""index_select, scatter (overwrite), index_add, masked_fill, take and ``index`` (advanced
indexing) on opencl: generated kernels for any strides and storage offsets, one work item per
element (masked_fill: the row-walking ``cg.loop`` pattern).

Semantics are ember-cpu's (``plugins/cpu/ember_cpu/kernels/indexing.py``):

- ``index_select(self, dim, index)``: ``out[c] = self[c with c[dim] = index[c[dim]]]``; index
  values in ``[0, size)``, else ``IndexError("index out of range in self")``;
- ``scatter(self, dim, index, src, reduce=None)``: ``out = self`` (unless in place), then
  ``out[c with c[dim] = index[c]] = src[c]`` (src a tensor: its leading ``index.shape`` block) or
  ``= value`` (src a number, C conversion); index values in ``[0, size)`` else RuntimeError.
  Where an index repeats, which write lands is unspecified (as in PyTorch). ``reduce='add' /
  'multiply'`` runs the core's composite (over native ops);
- ``index_add(self, dim, index, source, alpha=1)``: ``out[.., index[j], ..] += alpha * source[.., j, ..]``
  with atomics (``kernels/index.py``'s ``_atomic_add``: repeats accumulate; float sums of
  repeated indices in an unspecified order); index values in ``[0, size)`` else RuntimeError;
- ``masked_fill(self, mask, value)``: ``out = where(mask, value, self)`` over the broadcast shape;
- ``take(self, index)``: ``self`` read as 1-D in row-major order (any strides), negative values
  count from the end; IndexError outside ``[-n, n)``;
- ``index(self, indices)``: ``self[indices]`` for a list of int32 / int64 tensors or None, the
  tensors broadcast together; negative values count from the end; IndexError outside
  ``[-size, size)`` naming the index tensor's position among the tensors (as ember-cpu does).

Every index check runs on the device first (a kernel records the smallest row-major position of
a bad value with ``atomic_min``; one 4-byte read), and raises ember-cpu's error before anything
is written.

float16 needs no half arithmetic here: the kernels that move elements copy its 16 bits
(``index.move_ctype``: ushort; a scalar ``value`` travels as the bits of the nearest half), and
index_add accumulates in a float32 copy rounded once into ``out``, as ember-cpu does.
"""
from __future__ import annotations

import functools

import numpy as np

import ember
from ember.library import ALL_DENSE

from .. import _codegen as cg
from .copy import _overlaps, contiguous_copy, expanded_strides
from .index import INT64_ATOMICS, NO_BAD, _at_1d, _atomic_add, move_ctype, move_scalar


# ---------------------------------------------------------------- the device-side range check
@functools.lru_cache(maxsize=None)
def _range_source(ic: str, rank: int) -> str:
    return f"""
__kernel void ember_range_check(long total, long lo, long hi, {cg.shape_params(rank)},
                                {cg.tensor_params("idx", ic, rank, const=True)}, __global int* bad)
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    const long v = (long)idx[{cg.offset("idx", rank)}];
    if (v < lo || v >= hi) atomic_min(bad, (int)i);
}}
"""


def first_bad(index, lo: int, hi: int):
    """The first value (row-major) of ``index`` outside ``[lo, hi)``, or None; one flag read."""
    n = index.numel()
    if n == 0:
        return None
    if n >= NO_BAD:
        raise RuntimeError(f"ember-opencl: an index tensor of {n} elements is too large (at most {NO_BAD - 1})")
    shape, strides = _at_1d(index)
    state = cg.state_of(index)
    bad = ember.full((1,), NO_BAD, dtype=ember.int32, device=index.device)
    k = cg.build(state, _range_source(cg.ctype(index.dtype), len(shape)), "ember_range_check")
    cg.launch(state, k, n, [cg.i64(n), cg.i64(lo), cg.i64(hi), *cg.shape_args(shape), cg.buffer(index),
                            cg.i64(index.storage_offset()), *map(cg.i64, strides), cg.buffer(bad)])
    pos = int(bad.item())
    if pos == NO_BAD:
        return None
    coords = np.unravel_index(pos, shape)
    t = index if index.dim() else index.reshape(1)
    return int(t[tuple(int(c) for c in coords)].item())


def _check(index, lo, hi, exc, msg):
    v = first_bad(index, lo, hi)
    if v is not None:
        raise exc(msg.format(v=v))


def _oob(dim, size):
    return "index {v} is out of bounds for dimension " + f"{dim} with size {size}"


def _need_int64_atomics(state, dtype, op):
    if cg.ctype(dtype) in ("long", "double") and not state.int64_atomics:
        raise RuntimeError(f"ember-opencl: {op} on {dtype} needs cl_khr_int64_base_atomics, which device "
                           f"{state.label} ('{state.device.name}') does not report")


def _targs(t, strides):
    return [cg.buffer(t), cg.i64(t.storage_offset()), *map(cg.i64, strides)]


def _sub(name: str, rank: int, dim: int, j: str) -> str:
    """Offset of ``name`` at coordinates ``c*`` with coordinate ``dim`` replaced by ``j``."""
    return " + ".join([f"{name}_off"] + [f"c{d} * {name}_s{d}" if d != dim else f"{j} * {name}_s{d}"
                                          for d in range(rank)])


# ---------------------------------------------------------------- index_select
@functools.lru_cache(maxsize=None)
def _index_select_source(c: str, ic: str, rank: int, dim: int) -> str:
    return f"""
__kernel void ember_index_select(long total, {cg.shape_params(rank)},
                                 {cg.tensor_params("out", c, rank)},
                                 {cg.tensor_params("x", c, rank, const=True)},
                                 __global const {ic}* idx, long idx_off, long idx_s0)
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    const long j = (long)idx[idx_off + c{dim} * idx_s0];
    out[{cg.offset("out", rank)}] = x[{_sub("x", rank, dim, "j")}];
}}
"""


def index_select(self, dim, index, *, out):
    """opencl kernel of ``index_select``: write the slices of ``self`` at the 1-D ``index`` along ``dim`` into
    ``out``. IndexError "index out of range in self" before anything is written.
    """
    xshape, xstr = _at_1d(self)
    dim = dim % len(xshape)
    _check(index, 0, xshape[dim], IndexError, "index out of range in self")
    n = out.numel()
    if n == 0:
        return
    shape = list(xshape)
    shape[dim] = index.numel()
    ostr = tuple(out.stride()) if out.dim() else (0,)
    if out.untyped_storage().handle is self.untyped_storage().handle:
        self = contiguous_copy(self)
        xstr = _at_1d(self)[1]
    istr = _at_1d(index)[1]
    r = len(shape)
    state = cg.state_of(out)
    k = cg.build(state, _index_select_source(move_ctype(out.dtype), cg.ctype(index.dtype), r, dim),
                 "ember_index_select")
    cg.launch(state, k, n, [cg.i64(n), *cg.shape_args(shape), *_targs(out, ostr), *_targs(self, xstr),
                            cg.buffer(index), cg.i64(index.storage_offset()), cg.i64(istr[0])])


# ---------------------------------------------------------------- scatter (overwrite)
@functools.lru_cache(maxsize=None)
def _scatter_source(c: str, ic: str, rank: int, dim: int, scalar: bool) -> str:
    src = f"{c} value" if scalar else cg.tensor_params("src", c, rank, const=True)
    val = "value" if scalar else f"src[{cg.offset('src', rank)}]"
    return f"""
__kernel void ember_scatter(long total, {cg.shape_params(rank)},
                            {cg.tensor_params("out", c, rank)},
                            {cg.tensor_params("idx", ic, rank, const=True)}, {src})
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    const long j = (long)idx[{cg.offset("idx", rank)}];
    out[{_sub("out", rank, dim, "j")}] = {val};
}}
"""


def scatter(self, dim, index, src, *, reduce=None, out):
    """opencl kernel of ``scatter``: copy ``self`` into ``out`` (unless in place), then write ``src`` (a tensor or
    a number) at out[c with c[dim] = index[c]]; ``reduce`` 'add' / 'multiply' runs the core's composite.
    RuntimeError for an out-of-range index, before anything is written.
    """
    if reduce is not None:                       # 'add' / 'multiply': the core's composite over native ops
        from ember._ops import _indexing_composites as composites
        return composites.scatter(self, dim, index, src, reduce=reduce, out=out)
    oshape, _ = _at_1d(self)
    dim = dim % len(oshape)
    _check(index, 0, oshape[dim], RuntimeError, _oob(dim, oshape[dim]))   # before anything is written
    is_tensor = isinstance(src, ember.Tensor)
    if is_tensor and src.untyped_storage().handle is out.untyped_storage().handle:
        src = contiguous_copy(src)               # src may alias out: read it as it was
    if out is not self:
        out.copy_(self)
    n = index.numel()
    if n == 0:
        return
    ishape, istr = _at_1d(index)
    r = len(ishape)
    state = cg.state_of(out)
    c = move_ctype(out.dtype)
    k = cg.build(state, _scatter_source(c, cg.ctype(index.dtype), r, dim, not is_tensor), "ember_scatter")
    last = [*_targs(src, _at_1d(src)[1])] if is_tensor else [move_scalar(src, out.dtype)]
    cg.launch(state, k, n, [cg.i64(n), *cg.shape_args(ishape), *_targs(out, _at_1d(out)[1]),
                            *_targs(index, istr), *last])


# ---------------------------------------------------------------- index_add
@functools.lru_cache(maxsize=None)
def _index_add_source(name: str, ic: str, rank: int, dim: int, scaled: bool, src_c: str | None = None) -> str:
    c = cg.ctype(name)
    src_c = src_c or c
    kind = "bool" if name == "bool" else c
    pragma = INT64_ATOMICS if c in ("long", "double") else ""
    value = cg.load("src", cg.offset("src", rank), src_c)       # half: vload_half
    if src_c != c:
        value = f"({c})({value})"
    if scaled:
        value = f"({c})({value} * alpha)"
    return f"""{pragma}
__kernel void ember_index_add(long total, {cg.shape_params(rank)},
                              {cg.tensor_params("out", c, rank)},
                              {cg.tensor_params("src", src_c, rank, const=True)},
                              __global const {ic}* idx, long idx_off, long idx_s0, {c} alpha)
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    const long j = (long)idx[idx_off + c{dim} * idx_s0];
    __global {c}* p = out + ({_sub("out", rank, dim, "j")});
    const {c} v = {value};
    {_atomic_add(kind)}
}}
"""


def index_add(self, dim, index, source, *, alpha=1, out):
    """opencl kernel of ``index_add``: copy ``self`` into ``out`` (unless in place), then atomically add ``alpha *
    source`` slice j to slice index[j] along ``dim``. RuntimeError for an out-of-range index (before any write)
    and for int64 / float64 without cl_khr_int64_base_atomics.
    """
    if out.dtype == ember.float16:               # accumulate in float32, rounded once into out (as ember-cpu)
        acc = self.to(ember.float32)
        index_add(acc, dim, index, source, alpha=alpha, out=acc)   # checks the index before out is written
        out.copy_(acc)
        return
    oshape, _ = _at_1d(self)
    dim = dim % len(oshape)
    _check(index, 0, oshape[dim], RuntimeError, _oob(dim, oshape[dim]))  # before anything is written
    state = cg.state_of(out)
    _need_int64_atomics(state, out.dtype, "index_add")
    if source.untyped_storage().handle is out.untyped_storage().handle:
        source = contiguous_copy(source)
    if out is not self:
        out.copy_(self)
    n = source.numel()
    if n == 0 or index.numel() == 0:
        return
    if out.dtype == ember.bool:                  # bool: alpha * s != 0 is s and alpha != 0
        if not alpha:
            return
        alpha = 1
    elif not out.dtype.is_floating_point:
        alpha = int(alpha)
    scaled = alpha != 1
    sshape, sstr = _at_1d(source)
    r = len(sshape)
    istr = _at_1d(index)[1]
    k = cg.build(state, _index_add_source(out.dtype.name, cg.ctype(index.dtype), r, dim, scaled,
                                          cg.ctype(source.dtype)), "ember_index_add")
    cg.launch(state, k, n, [cg.i64(n), *cg.shape_args(sshape), *_targs(out, _at_1d(out)[1]),
                            *_targs(source, sstr), cg.buffer(index), cg.i64(index.storage_offset()),
                            cg.i64(istr[0]), cg.scalar(alpha, out.dtype)])


# ---------------------------------------------------------------- masked_fill
@functools.lru_cache(maxsize=None)
def _masked_fill_source(c: str, rank: int, inner: tuple, inplace: bool) -> str:
    other = "" if inplace else f" else out[o_out] = x[o_x];"
    names = ("out", "m") if inplace else ("out", "x", "m")
    params = [cg.tensor_params("out", c, rank)]
    if not inplace:
        params.append(cg.tensor_params("x", c, rank, const=True))
    params.append(cg.tensor_params("m", "uchar", rank, const=True))
    return f"""
__kernel void ember_masked_fill(long total, {cg.shape_params(rank)}, {", ".join(params)}, {c} value)
{{
    {cg.loop(rank, names, f"if (m[o_m]) out[o_out] = value;{other}", inner)}
}}
"""


def masked_fill(self, mask, value, *, out):
    """opencl kernel of ``masked_fill``: write where(mask, value, self) over the broadcast shape into ``out`` (in
    place when ``out`` is ``self``).
    """
    n = out.numel()
    if n == 0:
        return
    shape = tuple(out.shape)
    inplace = (self.untyped_storage().handle is out.untyped_storage().handle
               and not _overlaps(out, self) and tuple(self.shape) == shape)
    if not inplace and _overlaps(out, self):
        self = contiguous_copy(self)
    if _overlaps(out, mask):
        mask = contiguous_copy(mask)
    strides = [out.stride()] + ([] if inplace else [expanded_strides(self, shape)]) + \
        [expanded_strides(mask, shape)]
    cshape, cstr = cg.collapse(shape, *strides)
    r = len(cshape)
    tensors = [out] + ([] if inplace else [self]) + [mask]
    state = cg.state_of(out)
    c = move_ctype(out.dtype)
    k = cg.build(state, _masked_fill_source(c, r, tuple(cg.inner_class(s[-1]) for s in cstr), inplace),
                 "ember_masked_fill")
    args = [cg.i64(n), *cg.shape_args(cshape)]
    for t, s in zip(tensors, cstr):
        args += cg.tensor_args(t, s)
    cg.launch_loop(state, k, n, args + [move_scalar(value, out.dtype)])


# ---------------------------------------------------------------- take
@functools.lru_cache(maxsize=None)
def _take_source(c: str, ic: str, ri: int, rx: int) -> str:
    return f"""
__kernel void ember_take(long total, long numel, {cg.shape_params(ri)}, {cg.shape_params(rx, "m")},
                         {cg.tensor_params("out", c, ri)},
                         {cg.tensor_params("idx", ic, ri, const=True)},
                         {cg.tensor_params("x", c, rx, const=True)})
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(ri)}
    long j = (long)idx[{cg.offset("idx", ri)}];
    if (j < 0) j += numel;
    {cg.unravel(rx, index="j", prefix="m", coord="d")}
    out[{cg.offset("out", ri)}] = x[{cg.offset("x", rx, coord="d")}];
}}
"""


def take(self, index, *, out):
    """opencl kernel of ``take``: write self.flatten()[index] (negative values count from the end) into ``out``, of
    index's shape. IndexError "take(): tried to take from an empty tensor" and "out of range: tried to access
    index v on a tensor of n elements." before anything is written.
    """
    n = self.numel()
    if n == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    _check(index, -n, n, IndexError, "out of range: tried to access index {v} on a tensor of " + f"{n} elements.")
    m = index.numel()
    if m == 0:
        return
    if out.untyped_storage().handle is self.untyped_storage().handle:
        self = contiguous_copy(self)
    ishape, istr = _at_1d(index)
    ostr = _at_1d(out)[1]
    xshape, xstr = cg.collapse(tuple(self.shape), self.stride())
    xstr = xstr[0]
    state = cg.state_of(out)
    k = cg.build(state, _take_source(move_ctype(out.dtype), cg.ctype(index.dtype), len(ishape), len(xshape)),
                 "ember_take")
    cg.launch(state, k, m, [cg.i64(m), cg.i64(n), *cg.shape_args(ishape), *cg.shape_args(xshape),
                            *_targs(out, ostr), *_targs(index, istr), *_targs(self, xstr)])


# ---------------------------------------------------------------- index (advanced indexing)
@functools.lru_cache(maxsize=None)
def _index_source(c: str, ics: tuple, rank: int) -> str:
    k = len(ics)
    idx_params = "".join(f",\n    {cg.tensor_params(f'i{q}', ic, rank, const=True)}, long size{q}, long xs{q}"
                         for q, ic in enumerate(ics))
    reads = "\n    ".join(
        f"long j{q} = (long)i{q}[{cg.offset(f'i{q}', rank)}]; if (j{q} < 0) j{q} += size{q}; xo += j{q} * xs{q};"
        for q in range(k))
    return f"""
__kernel void ember_index(long total, {cg.shape_params(rank)},
    {cg.tensor_params("out", c, rank)},
    {cg.tensor_params("x", c, rank, const=True)}{idx_params})
{{
    const long i = get_global_id(0);
    if (i >= total) return;
    {cg.unravel(rank)}
    long xo = {cg.offset("x", rank)};
    {reads}
    out[{cg.offset("out", rank)}] = x[xo];
}}
"""


def index(self, indices, *, out):
    """opencl kernel of ``index`` (advanced indexing ``self[indices]``): ``indices`` is a list of int32 / int64
    tensors or None (full slices), the tensors broadcast together; negative values count from the end; writes
    ``out``. IndexError for an out-of-range value, before anything is written.
    """
    dims = [d for d, t in enumerate(indices) if t is not None]
    tensors = [indices[d] for d in dims]
    xshape, xstr = tuple(self.shape), tuple(self.stride())
    for q, (d, t) in enumerate(zip(dims, tensors)):      # before anything is written
        _check(t, -xshape[d], xshape[d], IndexError, _oob(q, xshape[d]))
    if not dims:
        out.copy_(self)
        return
    n = out.numel()
    if n == 0:
        return
    if out.untyped_storage().handle is self.untyped_storage().handle:
        self = contiguous_copy(self)
        xstr = tuple(self.stride())
    bshape = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    nb = len(bshape)
    rest = [d for d in range(len(xshape)) if d not in dims]
    # each out dim: ("b", k) a broadcast dim of the index tensors, or ("s", d) a dim of self
    if dims[-1] - dims[0] + 1 == len(dims):
        layout = ([("s", d) for d in rest if d < dims[0]] + [("b", q) for q in range(nb)]
                  + [("s", d) for d in rest if d > dims[-1]])
    else:
        layout = [("b", q) for q in range(nb)] + [("s", d) for d in rest]
    oshape = tuple(bshape[v] if kind == "b" else xshape[v] for kind, v in layout)
    assert oshape == tuple(out.shape), (oshape, tuple(out.shape))
    x_per = [xstr[v] if kind == "s" else 0 for kind, v in layout]
    idx_per = []
    for t in tensors:
        bs = expanded_strides(t, bshape)
        idx_per.append([bs[v] if kind == "b" else 0 for kind, v in layout])
    cshape, cstr = cg.collapse(oshape, tuple(out.stride()), tuple(x_per), *map(tuple, idx_per))
    r = len(cshape)
    state = cg.state_of(out)
    ics = tuple(cg.ctype(t.dtype) for t in tensors)
    kern = cg.build(state, _index_source(move_ctype(out.dtype), ics, r), "ember_index")
    args = [cg.i64(n), *cg.shape_args(cshape), *_targs(out, cstr[0]), *_targs(self, cstr[1])]
    for q, (d, t) in enumerate(zip(dims, tensors)):
        args += [*_targs(t, cstr[2 + q]), cg.i64(xshape[d]), cg.i64(xstr[d])]
    cg.launch(state, kern, n, args)


def register(lib, dtypes=None):
    """Register index_select, scatter, index_add, masked_fill, take and index for device 'opencl' on ``lib``, for
    the dtypes with an OpenCL C type (narrowed to ``dtypes`` when given: the device's dtypes, float16 only where
    it reports cl_khr_fp16).
    """
    dtypes = [d for d in (dtypes or ALL_DENSE) if d.name in cg.CTYPES]
    for name, fn in (("index_select", index_select), ("scatter", scatter), ("index_add", index_add),
                     ("masked_fill", masked_fill), ("take", take), ("index", index)):
        lib.impl(name, fn, device="opencl", dtypes=dtypes)
