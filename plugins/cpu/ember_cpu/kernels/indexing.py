"""Indexing kernels: numpy fancy indexing, ``take_along_axis`` and ``ufunc.at`` over strided views.

Every kernel checks its index values before it writes anything (an in-place op that
raises leaves its destination untouched). Out-of-place kernels copy ``self`` into
``out`` and then work in place on ``out``. float16 / bfloat16 accumulate in float32.
A source that shares memory with the destination is copied first.
"""
from __future__ import annotations

import numpy as np

import ember

from ._jit import jit_kernels
from ._util import ALL, LOWP, np_view


# ---------------------------------------------------------------- helpers
def _bad(i, lo, hi):
    """The first value of ``i`` outside [lo, hi), or None."""
    if i.size == 0:
        return None
    if i.min() >= lo and i.max() < hi:
        return None
    flat = i.reshape(-1)
    return int(flat[np.argmax((flat < lo) | (flat >= hi))])


def _wrapped(i, size, dim, exc=IndexError, fmt="index {v} is out of bounds for dimension {dim} with size {size}"):
    """``i`` (negative counts from the end) as intp after a bounds check."""
    v = _bad(i, -size, size)
    if v is not None:
        raise exc(fmt.format(v=v, dim=dim, size=size))
    i = i.astype(np.intp, copy=False)
    return np.where(i < 0, i + size, i) if i.size and i.min() < 0 else i


def _checked(i, size, dim, exc=RuntimeError, fmt="index {v} is out of bounds for dimension {dim} with size {size}"):
    """``i`` as intp after a check that every value is in [0, size) (no wrapping)."""
    v = _bad(i, 0, size)
    if v is not None:
        raise exc(fmt.format(v=v, dim=dim, size=size))
    return i.astype(np.intp, copy=False)


def _init_out(self, out):
    """``out``'s numpy view holding a copy of ``self`` (broadcast), unless out is self."""
    o = np_view(out)
    if out is not self:
        np.copyto(o, np.broadcast_to(np_view(self), o.shape))
    return o


def _separate(src, dst):
    """``src``, copied when it shares memory with ``dst``."""
    return src.copy() if isinstance(src, np.ndarray) and np.may_share_memory(src, dst) else src


class _Work:
    """The array to accumulate in: ``o`` itself, or a float32 copy for float16 / bfloat16."""

    def __init__(self, o):
        self.o = o
        self.a = o.astype(np.float32) if o.dtype in LOWP else o

    def done(self):
        """Write a float32 working copy back into ``o`` (rounded to its dtype); nothing when ``o`` was used."""
        if self.a is not self.o:
            np.copyto(self.o, self.a, casting="unsafe")


def _scalar(value, dtype):
    """A Python number as a 0-dim array of ``dtype``, cast as C does (-1 -> 255 for uint8, 2.7 -> 2)."""
    return np.asarray(value).astype(dtype)


def _dim(dim, ndim):
    """``dim`` made non-negative (the meta function already checked its range)."""
    return dim + max(ndim, 1) if dim < 0 else dim


def _at_1d(x):
    """A 0-dim array as 1-D (PyTorch treats a 0-dim tensor as one dim of size 1 here)."""
    return x.reshape(1) if x.ndim == 0 else x


# ---------------------------------------------------------------- index / index_put
def _index_tuple(a, indices):
    idx = []
    k = 0
    for d, t in enumerate(indices):
        if t is None:
            idx.append(slice(None))
        else:
            idx.append(_wrapped(np_view(t), a.shape[d], k))
            k += 1
    return tuple(idx)


def index(self, indices, *, out):
    """cpu kernel of ``index`` (advanced indexing ``self[indices]``), all dtypes: ``indices`` holds an int64 / bool
    index tensor or None (a full slice) per leading dim; writes the gathered elements into ``out``. IndexError
    "index v is out of bounds for dimension d with size n".
    """
    a = np_view(self)
    idx = _index_tuple(a, indices)
    np.copyto(np_view(out), a[idx] if idx else a)


def index_put(self, indices, values, accumulate=False, *, out):
    """cpu kernel of ``index_put``, all dtypes: copy ``self`` into ``out`` (unless in place), then write ``values``
    at ``indices`` (summed, float16 / bfloat16 in float32, with ``accumulate``). IndexError for an out-of-range
    index. Indices are checked before anything is written.
    """
    a = np_view(self)
    idx = _index_tuple(a, indices)          # checks before anything is written
    o = _init_out(self, out)
    v = _separate(np_view(values), o)
    if not idx:
        idx = (Ellipsis,)
    if not accumulate:
        o[idx] = v
        return
    w = _Work(o)
    np.add.at(w.a, idx, v.astype(w.a.dtype, copy=False))
    w.done()


# ---------------------------------------------------------------- gather / scatter
def _scatter_coords(i, dim):
    """An advanced-index tuple reaching, for each element of ``i``, position i[...] along dim."""
    n = i.ndim
    return tuple(i if d == dim else np.arange(i.shape[d]).reshape([-1 if k == d else 1 for k in range(n)])
                 for d in range(n))


def _leading(x, shape):
    """``x[:shape[0], :shape[1], ...]``."""
    return x[tuple(slice(0, s) for s in shape)]


def gather(self, dim, index, *, sparse_grad=False, out):
    """cpu kernel of ``gather``, all dtypes: out[i][j] = self[index[i][j]][j] (for dim 0, likewise for others),
    ``out`` of index's shape. RuntimeError "index v is out of bounds for dimension d with size n".
    """
    i = _at_1d(np_view(index))
    if i.size == 0:
        return
    a = _at_1d(np_view(self))
    dim = _dim(dim, a.ndim)
    i = _checked(i, a.shape[dim], dim)
    sub = a[tuple(slice(None) if d == dim else slice(0, i.shape[d]) for d in range(a.ndim))]
    np.copyto(np_view(out), np.take_along_axis(sub, i, axis=dim).reshape(out._shape))


def _scatter_prep(self, dim, index, out):
    dim = _dim(dim, len(self._shape))
    i = _at_1d(np_view(index))
    dim = _dim(dim, len(self._shape))
    size = _at_1d(np_view(self)).shape[dim]
    i = _checked(i, size, dim)              # before anything is written
    o = _init_out(self, out)
    return _at_1d(o), i, dim


def scatter(self, dim, index, src, *, reduce=None, out):
    """cpu kernel of ``scatter``, all dtypes: copy ``self`` into ``out`` (unless in place), then write ``src`` (a
    tensor or a scalar) at the positions ``index`` names along ``dim``; ``reduce`` 'add' / 'multiply' combine
    instead. RuntimeError for an out-of-range index. Indices are checked before anything is written.
    """
    o, i, dim = _scatter_prep(self, dim, index, out)
    if i.size == 0:
        return
    coords = _scatter_coords(i, dim)
    if isinstance(src, ember.Tensor):
        v = _separate(_leading(_at_1d(np_view(src)), i.shape), o)
    else:
        v = _scalar(src, o.dtype)
    if reduce is None:
        o[coords] = v
        return
    w = _Work(o)
    v = np.asarray(v).astype(w.a.dtype) if not isinstance(v, np.ndarray) else v.astype(w.a.dtype, copy=False)
    (np.add if reduce == "add" else np.multiply).at(w.a, coords, np.broadcast_to(v, i.shape))
    w.done()


def scatter_add(self, dim, index, src, *, out):
    """cpu kernel of ``scatter_add``, all dtypes: copy ``self`` into ``out`` (unless in place), then add ``src`` at
    the positions ``index`` names along ``dim`` (duplicates accumulate; float16 / bfloat16 in float32).
    RuntimeError for an out-of-range index. Indices are checked before anything is written.
    """
    o, i, dim = _scatter_prep(self, dim, index, out)
    if i.size == 0:
        return
    w = _Work(o)
    v = _separate(_leading(_at_1d(np_view(src)), i.shape), o)
    np.add.at(w.a, _scatter_coords(i, dim), v.astype(w.a.dtype, copy=False))
    w.done()


def _identity(reduce, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.kind == "b":
        return reduce == "amin"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True, out):
    """cpu kernel of ``scatter_reduce``, all dtypes: copy ``self`` into ``out`` (unless in place), then reduce
    ``src`` into the positions ``index`` names along ``dim`` with 'sum', 'prod', 'mean' (floor division for
    integers), 'amax' or 'amin'; ``include_self=False`` drops the existing values of the positions hit.
    RuntimeError for an out-of-range index (bool 'mean' is refused by the meta function, before any write).
    """
    o, i, dim = _scatter_prep(self, dim, index, out)
    if i.size == 0:
        return
    coords = _scatter_coords(i, dim)
    w = _Work(o)
    a = w.a
    v = _separate(_leading(_at_1d(np_view(src)), i.shape), o).astype(a.dtype, copy=False)
    if not include_self:
        a[coords] = _identity(reduce, a.dtype)
    with np.errstate(all="ignore"):
        _UFUNC[reduce].at(a, coords, v)
        if reduce == "mean":
            count = np.ones(a.shape, np.int64) if include_self else np.zeros(a.shape, np.int64)
            np.add.at(count, coords, 1)
            count[count == 0] = 1
            if a.dtype.kind in "iu":
                np.floor_divide(a, count, out=a, casting="unsafe")
            else:
                np.divide(a, count, out=a, casting="unsafe")
    w.done()


# ---------------------------------------------------------------- index_select / index_add / index_copy / index_fill
def _moved(x, dim):
    """``x`` with ``dim`` first (a 0-dim array as 1-D)."""
    return np.moveaxis(x, dim, 0) if x.ndim else x.reshape(1)


def index_select(self, dim, index, *, out):
    """cpu kernel of ``index_select``, all dtypes: write the slices of ``self`` at the 1-D ``index`` along ``dim``
    into ``out``. IndexError "index out of range in self".
    """
    a = _at_1d(np_view(self))
    dim = _dim(dim, a.ndim)
    i = _checked(np_view(index).reshape(-1), a.shape[dim], dim, IndexError, "index out of range in self")
    np.copyto(np_view(out), np.take(a, i, axis=dim).reshape(out._shape))


def index_add(self, dim, index, source, *, alpha=1, out):
    """cpu kernel of ``index_add``, all dtypes: copy ``self`` into ``out`` (unless in place), then add ``alpha *
    source`` slice k to slice index[k] along ``dim`` (duplicates accumulate). RuntimeError for an out-of-range
    index. Indices are checked before anything is written.
    """
    dim = _dim(dim, len(self._shape))
    size = _at_1d(np_view(self)).shape[dim]
    i = _checked(np_view(index).reshape(-1), size, dim)
    o = _init_out(self, out)
    w = _Work(o)
    s = _moved(_separate(np_view(source), o), dim).astype(w.a.dtype, copy=False)
    if alpha != 1:
        if w.a.dtype.kind in "iu":
            alpha = int(alpha)
        s = (s * alpha).astype(w.a.dtype, copy=False)
    a = _moved(w.a, dim)
    if not _add_rows(a, i, s):
        np.add.at(a, i, s)
    w.done()


_JIT_ROWS = (np.dtype(np.float32), np.dtype(np.float64))


def _add_rows(a, i, s) -> bool:
    """``np.add.at(a, i, s)`` for a C-contiguous ``a`` with wide rows (an embedding's gradient): float32 / float64
    through the compiled loop (``_jit``: 200 x 128 from 700 indices, 13 µs) where numba runs; otherwise in rounds: round r
    adds the r-th occurrence of every index with one fancy-indexed ``+=`` (unique indices within a round), so each
    row still receives its additions in index order - the same sums as add.at, bit for bit - while add.at walks
    every element on its own (96 x 64 rows from 512 indices, float32: 284 -> 102 µs; 200 x 128 from 700: 774 ->
    130 µs, one thread). Returns False (nothing done) where add.at is as fast: narrow rows, few indices, or an
    index repeated so often that the rounds would be many."""
    n = i.size
    if n < 64 or a.ndim < 2 or not a.flags.c_contiguous or a.size // max(a.shape[0], 1) < 16:
        return False
    jit = jit_kernels()
    if jit is not None and a.dtype in _JIT_ROWS and s.dtype == a.dtype:
        jit.add_rows(a.reshape(a.shape[0], -1), i.astype(np.int64, copy=False),
                     np.ascontiguousarray(s).reshape(n, -1))
        return True
    order = np.argsort(i, kind="stable")
    si = i[order]
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(si[1:], si[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, n))
    rounds = int(counts.max())
    if rounds > n // 16:
        return False
    rank = np.arange(n) - np.repeat(starts, counts)      # occurrence number of each sorted index
    for r in range(rounds):
        k = order[rank == r]
        a[i[k]] += s[k]
    return True


def index_copy(self, dim, index, source, *, out):
    """cpu kernel of ``index_copy``, all dtypes: copy ``self`` into ``out`` (unless in place), then write
    ``source`` slice k to slice index[k] along ``dim``. IndexError "index_copy_(): index v is out of bounds for
    dimension d with size n". Indices are checked before anything is written.
    """
    dim = _dim(dim, len(self._shape))
    size = _at_1d(np_view(self)).shape[dim]
    i = _checked(np_view(index).reshape(-1), size, dim, IndexError,
                 "index_copy_(): index {v} is out of bounds for dimension {dim} with size {size}")
    o = _init_out(self, out)
    s = _separate(np_view(source), o)
    _moved(o, dim)[i] = _moved(s, dim)


def index_fill(self, dim, index, value, *, out):
    """cpu kernel of ``index_fill``, all dtypes: copy ``self`` into ``out`` (unless in place), then fill the slices
    at ``index`` (negative counts from the end) along ``dim`` with ``value`` (cast to the dtype). IndexError for
    an out-of-range index. Indices are checked before anything is written.
    """
    dim = _dim(dim, len(self._shape))
    size = _at_1d(np_view(self)).shape[dim]
    i = _wrapped(np_view(index).reshape(-1), size, dim)
    o = _init_out(self, out)
    _moved(o, dim)[i] = _scalar(value, o.dtype)


# ---------------------------------------------------------------- take
def take(self, index, *, out):
    """cpu kernel of ``take``, all dtypes: write self.flatten()[index] (negative counts from the end) into ``out``,
    of index's shape. IndexError "take(): tried to take from an empty tensor" and "out of range: tried to access
    index v on a tensor of n elements."
    """
    a = np_view(self)
    i = np_view(index)
    if a.size == 0 and i.size:
        raise IndexError("take(): tried to take from an empty tensor")
    i = _wrapped(i, a.size, 0, IndexError, "out of range: tried to access index {v} on a tensor of {size} elements.")
    np.copyto(np_view(out), a.reshape(-1)[i])


# ---------------------------------------------------------------- masked ops
def masked_fill(self, mask, value, *, out):
    """cpu kernel of ``masked_fill``, all dtypes: copy ``self`` into ``out`` (unless in place), then set ``value``
    (cast to the dtype) where the broadcast bool ``mask`` is True.
    """
    o = _init_out(self, out)
    v = _scalar(value, o.dtype)
    m = np_view(mask)
    rows = _row_mask(m, o)
    if rows is not None:
        o.reshape(rows.size, -1)[rows] = v
        return
    np.copyto(o, v, where=np.broadcast_to(m, o.shape))


def _row_mask(m, o):
    """For a C-contiguous ``o`` and a mask ``m`` that broadcasts along ``o``'s trailing dims (attention's (..., L, 1)
    mask of fully masked rows): the mask over the leading dims, flattened - so the fill writes whole rows, where
    ``copyto(where=)`` walks a broadcast mask element by element (4-5x slower). None otherwise."""
    if m.ndim > o.ndim or not o.flags.c_contiguous or o.size == 0:
        return None
    shape = (1,) * (o.ndim - m.ndim) + m.shape
    k = 0
    while k < o.ndim and shape[o.ndim - 1 - k] == 1:
        k += 1
    if k == 0:
        return None
    lead = o.shape[:o.ndim - k]
    return np.broadcast_to(m.reshape(shape[:o.ndim - k]), lead).reshape(-1)


def masked_select(self, mask):
    """cpu kernel of ``masked_select``, all dtypes: return a new 1-D tensor of the elements of ``self`` where
    ``mask`` (both broadcast) is True, in row-major order.
    """
    a, m = np.broadcast_arrays(np_view(self), np_view(mask))
    r = a[m]
    out = ember.empty((r.size,), dtype=self._dtype, device=self._device)
    np.copyto(np_view(out), r)
    return out


def masked_scatter(self, mask, source, *, out):
    """cpu kernel of ``masked_scatter``, all dtypes: copy ``self`` into ``out`` (unless in place), then write the
    first n elements of ``source`` to the n True positions of ``mask``, in row-major order. RuntimeError "Number
    of elements of source < number of ones in mask" before anything is written.
    """
    m = np.broadcast_to(np_view(mask), out._shape)
    n = int(np.count_nonzero(m))
    if source.numel() < n:                  # before anything is written
        raise RuntimeError("Number of elements of source < number of ones in mask")
    o = _init_out(self, out)
    o[m] = _separate(np_view(source), o).reshape(-1)[:n]


# ---------------------------------------------------------------- nonzero
def nonzero(self):
    """cpu kernel of ``nonzero``, all dtypes: return a new int64 tensor (n, self.dim()) of the coordinates of the
    nonzero elements, in row-major order.
    """
    a = np_view(self)
    r = np.argwhere(a.astype(np.float32) if a.dtype in LOWP else a)
    out = ember.empty(r.shape, dtype=ember.int64, device=self._device)
    np.copyto(np_view(out), r)
    return out


def register(lib):
    """Register the indexing kernels above for device 'cpu', all dtypes, on ``lib``."""
    for name, fn in (("index", index), ("index_put", index_put), ("gather", gather), ("scatter", scatter),
                     ("scatter_add", scatter_add), ("scatter_reduce", scatter_reduce),
                     ("index_select", index_select), ("index_add", index_add), ("index_copy", index_copy),
                     ("index_fill", index_fill), ("take", take), ("masked_fill", masked_fill),
                     ("masked_select", masked_select), ("masked_scatter", masked_scatter), ("nonzero", nonzero)):
        lib.impl(name, fn, device="cpu", dtypes=ALL)
