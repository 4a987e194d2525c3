"""Composites for the indexing, shape and sequence ops, written over the primitive set only.

The primitive set (docs/vendor-guide.md): copy_ / fill_, the elementwise add, mul,
true_divide, div_trunc, fmod, eq, lt, where, bitwise_*, floor, the reductions sum / amax,
and gather / scatter_add. Every function here calls only those (and views, which need no
kernel), directly or through the helpers below, so a device that implements the
primitives runs index, index_put, index_select, index_add, index_copy, index_fill, take,
scatter, scatter_reduce, masked_fill / masked_select / masked_scatter and nonzero without
kernels of its own (``_shape_composites`` and ``_random_composites`` build on these helpers).

How they work:

- every scatter-like op is reduced to one flat problem: a 1-D destination of M elements,
  N target positions ``E`` (int64) and N values ``V``. ``scatter_add`` then accumulates;
  an overwrite (scatter, index_put, index_copy) keeps, for each target, the last writer
  (numpy's and the cpu kernel's rule; PyTorch leaves duplicates unspecified) and reads its
  value with ``gather``, so values are copied bit for bit (NaN, -0.0, bool, complex);
  prod / amax / amin are applied in rounds, one writer per target per round, in index order.
- the last (or first) writer per target is found bit by bit from the high bit of the
  writer's position down, with one ``scatter_add`` of candidate counts per bit.
- a cumulative sum is a log-step (Hillis-Steele) scan of ``add`` over shifted slices;
  ``arange`` is ``fill_`` + log-step doubling with ``add``.
- data-dependent shapes (nonzero, masked_select, repeat_interleave) read one count with
  ``.item()``; index checks read one flag with ``.item()`` (and, to word the error, the
  first offending value). Nothing else goes through the host.
"""
from __future__ import annotations

import builtins
import math

from .. import _dtype as D
from .._factory import empty_on

_LOWP = ("float16", "bfloat16")


def _E():
    import ember
    return ember


# ---------------------------------------------------------------- small primitive-only helpers
def full(shape, value, dtype, device):
    """A new tensor filled with ``value`` (``fill_``)."""
    t = empty_on(tuple(shape), dtype, device)
    if t.numel():
        t.fill_(value)
    return t


def scalar(value, dtype, device):
    """``value`` as a 0-dim tensor of ``dtype``, converted as a C cast does (0.5 -> True for bool)."""
    if dtype is D.bool and not isinstance(value, bool):
        value = value != 0
    return full((), value, dtype, device)


def iota(n, device, dtype=None):
    """``[0, 1, ..., n-1]`` as int64: ``fill_(0)`` of the first element, then log-step doubling
    (``out[k:2k] = out[:k] + k``) with ``add``. Cast to ``dtype`` when given."""
    out = empty_on((n,), D.int64, device)
    if n:
        out.narrow(0, 0, 1).fill_(0)
    k = 1
    while k < n:
        m = builtins.min(k, n - k)
        out.narrow(0, k, m).copy_(_E().add(out.narrow(0, 0, m), k))
        k += m
    return out if dtype is None or dtype is D.int64 else out.to(dtype)


def along(v, dim, ndim):
    """1-D ``v`` viewed to broadcast along ``dim`` of an ``ndim``-dim tensor."""
    return v.view(tuple(v.shape[0] if i == dim else 1 for i in range(ndim)))


def logical_not(b):
    """Elementwise not of the bool tensor ``b``: bitwise_xor(b, True)."""
    return _E().bitwise_xor(b, True)


def ne0(x):
    """``x != 0`` (bool) with eq; NaN counts as nonzero, as in ``nonzero``."""
    return logical_not(_E().eq(x, 0))


def cumsum(x, dim=0):
    """Inclusive cumulative sum along ``dim`` (a new tensor): a log-step scan, exact for integers."""
    E = _E()
    x = x.clone()
    n = x.shape[dim] if x.dim() else 1
    k = 1
    while k < n:
        s = E.add(x.narrow(dim, k, n - k), x.narrow(dim, 0, n - k))
        x.narrow(dim, k, n - k).copy_(s)
        k *= 2
    return x


def count(mask) -> int:
    """The number of True elements of a bool tensor (one scalar read)."""
    return int(_E().sum(mask).item()) if mask.numel() else 0


def first_true_value(bad, values):
    """The element of ``values`` at the first True of ``bad`` (same shape), for error messages."""
    E = _E()
    b, v = bad.reshape(-1), values.reshape(-1)
    n = b.numel()
    p = n - int(E.amax(E.where(b, E.add(E.mul(iota(n, b.device), -1), n), 0)).item())
    return int(E.gather(v, 0, scalar(p, D.int64, b.device).view(1)).item())


def check_range(i, lo, hi, exc, message):
    """Raise ``exc(message.format(v=first bad value))`` when an element of the int64 tensor ``i``
    lies outside [lo, hi); one scalar read when all are inside."""
    if not i.numel():
        return
    E = _E()
    bad = E.bitwise_or(E.lt(i, lo), logical_not(E.lt(i, hi)))
    if count(bad):
        raise exc(message.format(v=first_true_value(bad, i)))


def wrap(i, size):
    """Negative indices counted from the end."""
    E = _E()
    return E.where(E.lt(i, 0), E.add(i, size), i)


def as_int64(index):
    """``index`` as int64 (returned as is when it already is int64)."""
    return index if index.dtype is D.int64 else index.to(D.int64)


def row_major_strides(shape):
    """The contiguous (row-major) strides, in elements, of ``shape`` as a list."""
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return st[::-1]


def flat_copy(t):
    """``t`` as a 1-D tensor in row-major order (a view when possible)."""
    return t.reshape(-1) if t.dim() else t.reshape(1)


def floor_div_pos(a, c):
    """floor(a / c) for integers with c > 0 (div_trunc, then one step down for negative remainders)."""
    E = _E()
    q = E.div(a, c, rounding_mode="trunc")
    return E.where(E.lt(E.fmod(a, c), 0), E.add(q, -1), q)


# ---------------------------------------------------------------- flat scatter machinery
def _writer_selection(E_, M, active, last):
    """Per target, the last (or first) active writer: a bool mask over the N writers.

    Bit by bit from the high bit of the writer's position: among the candidates of a target,
    keep those with the bit set (last) or clear (first) if any of them has it.
    """
    E = _E()
    N = E_.numel()
    dev = E_.device
    p = iota(N, dev)
    cand = active
    for b in reversed(range(builtins.max(N - 1, 1).bit_length())):
        has_bit = ne0(E.bitwise_and(p, 1 << b))
        want = E.bitwise_and(cand, has_bit if last else logical_not(has_bit))
        c = E.scatter_add(full((M,), 0, D.int64, dev), 0, E_, want.to(D.int64))
        cand = E.where(ne0(E.gather(c, 0, E_)), want, cand)
    return cand


def _hits(E_, M, sel):
    """(hit, pos): which targets a selected writer reaches, and that writer's position (int64)."""
    E = _E()
    dev = E_.device
    si = sel.to(D.int64)
    hit = ne0(E.scatter_add(full((M,), 0, D.int64, dev), 0, E_, si))
    pos = E.scatter_add(full((M,), 0, D.int64, dev), 0, E_, E.mul(si, iota(E_.numel(), dev)))
    return hit, pos


def multiplicity(E_, M) -> int:
    """The largest number of writers aimed at one target (one scalar read)."""
    E = _E()
    c = E.scatter_add(full((M,), 0, D.int64, E_.device), 0, E_, full(E_.shape, 1, D.int64, E_.device))
    return int(E.amax(c).item())


def scatter_set(base, E_, V):
    """A copy of the 1-D ``base`` with ``base[E[j]] = V[j]``; for repeated targets the last writer wins."""
    E = _E()
    N, M = E_.numel(), base.numel()
    if N == 0:
        return base
    sel = full((N,), True, D.bool, E_.device)
    if multiplicity(E_, M) > 1:
        sel = _writer_selection(E_, M, sel, last=True)
    hit, pos = _hits(E_, M, sel)
    return E.where(hit, E.gather(V, 0, pos), base)


def scatter_combine(base, E_, V, fn):
    """``base[E[j]] = fn(base[E[j]], V[j])`` for j in increasing order (one writer per target per round)."""
    E = _E()
    N, M = E_.numel(), base.numel()
    if N == 0:
        return base
    active = full((N,), True, D.bool, E_.device)
    rounds = multiplicity(E_, M)
    for r in range(rounds):
        sel = active if rounds == 1 else _writer_selection(E_, M, active, last=False)
        hit, pos = _hits(E_, M, sel)
        base = E.where(hit, fn(base, E.gather(V, 0, pos)), base)
        if r + 1 < rounds:
            active = E.bitwise_and(active, logical_not(sel))
    return base


def _scatter_targets(shape, dim, index):
    """The flat (row-major) destination of every element of ``index`` in a tensor of ``shape``
    when ``index`` gives the position along ``dim`` (gather / scatter addressing)."""
    E = _E()
    st = row_major_strides(shape)
    n = index.dim()
    t = E.mul(as_int64(index), st[dim])
    for j in range(n):
        if j != dim and index.shape[j] > 1:
            t = E.add(t, along(E.mul(iota(index.shape[j], index.device), st[j]), j, n))
    return flat_copy(t.expand(index.shape) if t.shape != index.shape else t)


def _leading(src, shape):
    for j, s in enumerate(shape):
        if src.shape[j] != s:
            src = src.narrow(j, 0, s)
    return src


def _as_nd(t):
    return t if t.dim() else t.reshape(1)


def _wrap_dim(dim, n):
    return dim + builtins.max(n, 1) if dim < 0 else dim


def _oob(dim, size):
    return "index {v} is out of bounds for dimension " + f"{dim} with size {size}"


def _scatter_problem(self, dim, index, src):
    """(base flat copy of self, targets, values) for scatter / scatter_add / scatter_reduce;
    None when the index is empty. RuntimeError for an index outside [0, size)."""
    x = _as_nd(self)
    d = _wrap_dim(dim, self.dim())
    i = as_int64(_as_nd(index))
    check_range(i, 0, x.shape[d], RuntimeError, _oob(d, x.shape[d]))
    if i.numel() == 0:
        return None
    E_ = _scatter_targets(x.shape, d, i)
    if hasattr(src, "dtype") and hasattr(src, "shape"):
        V = flat_copy(_leading(_as_nd(src), i.shape))
    else:
        V = scalar(src, self.dtype, self.device).expand(E_.shape[0])
    return flat_copy(x).clone(), E_, V


# ---------------------------------------------------------------- gather / scatter family
def scatter(self, dim, index, src, *, reduce=None, out):
    """Composite of ``scatter`` (src tensor or scalar): last writer wins per target (reduce=None), scatter_add for
    'add', rounds of mul for 'multiply'; float16 / bfloat16 reduce in float32.
    """
    prob = _scatter_problem(self, dim, index, src)
    if prob is None:
        out.copy_(self)
        return
    base, E_, V = prob
    E = _E()
    low = self.dtype.name in _LOWP and reduce is not None
    if low:                      # the cpu kernel accumulates float16 / bfloat16 in float32
        base, V = base.to(D.float32), V.to(D.float32)
    if reduce is None:
        r = scatter_set(base, E_, V)
    elif reduce == "add":
        r = E.scatter_add(base, 0, E_, V)
    else:
        r = scatter_combine(base, E_, V, E.mul)
    out.copy_(r.view(out.shape))


def _maximum(a, b):
    E = _E()
    if a.dtype is D.bool:
        return E.bitwise_or(a, b)
    r = E.where(E.lt(a, b), b, a)
    return E.where(E.eq(b, b), r, b) if a.dtype.is_floating_point else r


def _minimum(a, b):
    E = _E()
    if a.dtype is D.bool:
        return E.bitwise_and(a, b)
    r = E.where(E.lt(b, a), b, a)
    return E.where(E.eq(b, b), r, b) if a.dtype.is_floating_point else r


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype is D.bool:
        return reduce == "amin"
    if dtype.is_floating_point:
        return -math.inf if reduce == "amax" else math.inf
    info = D.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True, out):
    """Composite of ``scatter_reduce``: 'sum' / 'mean' via scatter_add (integer mean floors), 'prod' / 'amax' / 'amin'
    in rounds of one writer per target; include_self=False starts hit targets from the identity.
    """
    prob = _scatter_problem(self, dim, index, src)
    if prob is None:
        out.copy_(self)
        return
    base, E_, V = prob
    E = _E()
    if self.dtype.name in _LOWP:
        base, V = base.to(D.float32), V.to(D.float32)
    M = base.numel()
    hit = None
    if not include_self or reduce == "mean":
        hit = ne0(E.scatter_add(full((M,), 0, D.int64, base.device), 0, E_,
                                full(E_.shape, 1, D.int64, base.device)))
    if not include_self:
        base = E.where(hit, scalar(_identity(reduce, base.dtype), base.dtype, base.device), base)
    if reduce in ("sum", "mean"):
        r = E.scatter_add(base, 0, E_, V)
        if reduce == "mean":
            ones = full(E_.shape, 1, D.int64, base.device)
            cnt = E.scatter_add(full((M,), 1 if include_self else 0, D.int64, base.device), 0, E_, ones)
            cnt = E.where(E.eq(cnt, 0), 1, cnt)
            r = floor_div_pos(r, cnt) if not r.dtype.is_floating_point and not r.dtype.is_complex \
                else E.true_divide(r, cnt)
    else:
        fn = {"prod": E.mul, "amax": _maximum, "amin": _minimum}[reduce]
        r = scatter_combine(base, E_, V, fn)
    out.copy_(r.view(out.shape))


def index_select(self, dim, index, *, out):
    """Composite of ``index_select``: gather along ``dim`` with the 1-D index expanded; IndexError('index out of range
    in self') for an index outside [0, size).
    """
    E = _E()
    x = _as_nd(self)
    d = _wrap_dim(dim, self.dim())
    i = as_int64(index.reshape(-1))
    check_range(i, 0, x.shape[d], IndexError, "index out of range in self")
    r = gather_along(x, d, i)
    if r.numel() == out.numel():
        out.copy_(r.view(out.shape))


def gather_along(x, d, i):
    """``x`` indexed along ``d`` by the 1-D int64 ``i`` (in range): ``gather`` with i expanded."""
    shape = list(x.shape)
    shape[d] = i.shape[0]
    return _E().gather(x, d, along(i, d, x.dim()).expand(tuple(shape)))


def index_add(self, dim, index, source, *, alpha=1, out):
    """Composite of ``index_add``: scatter_add of alpha * source along ``dim``; RuntimeError for an index outside [0,
    size).
    """
    E = _E()
    x = _as_nd(self)
    d = _wrap_dim(dim, self.dim())
    i = as_int64(index.reshape(-1))
    check_range(i, 0, x.shape[d], RuntimeError, _oob(d, x.shape[d]))
    s = _as_nd(source)
    if alpha != 1:
        if not (self.dtype.is_floating_point or self.dtype.is_complex):
            alpha = int(alpha)
        s = E.mul(s, alpha)
        if s.dtype is not self.dtype:
            s = s.to(self.dtype)
    if i.numel() == 0:
        out.copy_(self)
        return
    r = E.scatter_add(x, d, along(i, d, s.dim()).expand(s.shape), s)
    out.copy_(r.view(out.shape))


def index_copy(self, dim, index, source, *, out):
    """Composite of ``index_copy``: where() over the indexed slices, the last of duplicate indices winning; IndexError
    for an index outside [0, size).
    """
    E = _E()
    x = _as_nd(self)
    d = _wrap_dim(dim, self.dim())
    i = as_int64(index.reshape(-1))
    S = x.shape[d]
    check_range(i, 0, S, IndexError, "index_copy_(): index {v} is out of bounds for dimension " + f"{d} with size {S}")
    if i.numel() == 0:
        out.copy_(self)
        return
    xm = x.movedim(d, 0)
    rest = xm.shape[1:]
    sm = source.movedim(d, 0) if source.dim() else source.reshape((1,) + (1,) * len(rest))
    sm = sm.expand((i.shape[0],) + rest)
    sel = full((i.shape[0],), True, D.bool, i.device)
    if multiplicity(i, S) > 1:
        sel = _writer_selection(i, S, sel, last=True)
    hit, pos = _hits(i, S, sel)
    picked = gather_along(sm, 0, pos)
    r = E.where(along(hit, 0, len(rest) + 1), picked, xm).movedim(0, d)
    out.copy_(r.view(out.shape))


def index_fill(self, dim, index, value, *, out):
    """Composite of ``index_fill``: where(slice is indexed, value, self) along ``dim`` (negative indices wrap);
    IndexError for an index outside [-size, size).
    """
    E = _E()
    x = _as_nd(self)
    d = _wrap_dim(dim, self.dim())
    S = x.shape[d]
    i = as_int64(index.reshape(-1))
    check_range(i, -S, S, IndexError, _oob(d, S))
    if i.numel() == 0:
        out.copy_(self)
        return
    i = wrap(i, S)
    hit = ne0(E.scatter_add(full((S,), 0, D.int64, i.device), 0, i, full(i.shape, 1, D.int64, i.device)))
    r = E.where(along(hit, d, x.dim()), scalar(value, self.dtype, self.device), x)
    out.copy_(r.view(out.shape))


def take(self, index, *, out):
    """Composite of ``take``: gather from the flattened input (negative indices wrap); IndexError for an empty input
    or an index outside [-n, n).
    """
    n = self.numel()
    i = as_int64(index)
    if n == 0 and i.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    check_range(i, -n, n, IndexError, "out of range: tried to access index {v} on a tensor of " + f"{n} elements.")
    if i.numel() == 0:
        return
    r = _E().gather(flat_copy(self), 0, wrap(flat_copy(i), n))
    out.copy_(r.view(out.shape))


# ---------------------------------------------------------------- index / index_put (advanced indexing)
def _broadcast(*shapes):
    from ._meta import broadcast_shapes
    return tuple(broadcast_shapes(*shapes))


def _adv_parts(self, indices):
    """(dims, bshape, rest dims, [wrapped int64 index tensors]) for ``self[indices]``, after the
    cpu kernel's checks (IndexError naming the index's position among the index tensors)."""
    dims = [d for d, t in enumerate(indices) if t is not None]
    bshape = _broadcast(*(indices[d].shape for d in dims))
    rest = [d for d in range(self.dim()) if d not in dims]
    idx = []
    for k, d in enumerate(dims):
        size = self.shape[d]
        i = as_int64(indices[d])
        check_range(i, -size, size, IndexError, _oob(k, size))
        idx.append(wrap(i, size))
    return dims, bshape, rest, idx


def _adjacent(dims):
    return dims[-1] - dims[0] + 1 == len(dims)


def index(self, indices, *, out):
    """Composite of ``index`` (advanced indexing, None for a full dim): gather through a row-major linear index over
    the indexed dims, placed as PyTorch places the broadcast dims; IndexError out of range.
    """
    E = _E()
    if builtins.all(t is None for t in indices):
        out.copy_(self)
        return
    dims, bshape, rest, idx = _adv_parts(self, indices)
    lin = None
    for d, i in zip(dims, idx):                 # a row-major linear index over the indexed dims
        lin = i if lin is None else E.add(E.mul(lin, self.shape[d]), i)
    N = math.prod(bshape)
    rest_shape = tuple(self.shape[d] for d in rest)
    x = self.permute(tuple(dims + rest)).reshape((math.prod(self.shape[d] for d in dims),) + rest_shape)
    lin = lin.expand(bshape).reshape(-1) if tuple(lin.shape) != bshape else lin.reshape(-1)
    r = E.gather(x, 0, along(lin, 0, x.dim()).expand((N,) + rest_shape)) if N else \
        empty_on((0,) + rest_shape, self.dtype, self.device)
    r = r.view(bshape + rest_shape)
    if _adjacent(dims):                         # the broadcast dims replace the indexed ones in place
        nb, before = len(bshape), dims[0]
        r = r.permute(tuple(range(nb, nb + before)) + tuple(range(nb)) + tuple(range(nb + before, nb + len(rest))))
    out.copy_(r)


def index_put(self, indices, values, accumulate=False, *, out):
    """Composite of ``index_put``: flat targets of the advanced index, then scatter_add (accumulate) or last-writer-
    wins set; IndexError out of range.
    """
    E = _E()
    if builtins.all(t is None for t in indices):
        out.copy_(E.add(self, values) if accumulate else values.expand(self.shape))
        return
    dims, bshape, rest, idx = _adv_parts(self, indices)
    st = row_major_strides(self.shape)
    nb, nr = len(bshape), len(rest)
    tgt = None                                  # flat targets in "broadcast dims first" layout
    for d, i in zip(dims, idx):
        t = E.mul(i, st[d])
        tgt = t if tgt is None else E.add(tgt, t)
    tgt = tgt.view(tuple(tgt.shape) + (1,) * nr) if tgt.dim() else tgt.view((1,) * (nb + nr))
    for j, d in enumerate(rest):
        if self.shape[d] > 1:
            tgt = E.add(tgt, along(E.mul(iota(self.shape[d], self.device), st[d]), nb + j, nb + nr))
    full_shape = bshape + tuple(self.shape[d] for d in rest)
    E_ = flat_copy(tgt.expand(full_shape))
    if _adjacent(dims):                         # values are laid out with the broadcast dims in place
        before = dims[0]
        res_shape = tuple(self.shape[d] for d in rest[:before]) + bshape + tuple(self.shape[d] for d in rest[before:])
        v = values.expand(res_shape)
        v = v.permute(tuple(range(before, before + nb)) + tuple(range(before)) + tuple(range(before + nb, nb + nr)))
    else:
        v = values.expand(full_shape)
    V = flat_copy(v)
    base = flat_copy(self)
    if E_.numel() == 0:
        out.copy_(self)
        return
    r = E.scatter_add(base, 0, E_, V) if accumulate else scatter_set(base, E_, V)
    out.copy_(r.view(self.shape))


# ---------------------------------------------------------------- masks and nonzero
def true_positions(m):
    """The flat positions of the True elements of the 1-D bool ``m``, in order (one count read)."""
    E = _E()
    n = count(m)
    N = m.numel()
    if n == 0:
        return empty_on((0,), D.int64, m.device)
    mi = m.to(D.int64)
    slot = E.where(m, E.add(cumsum(mi), -1), n)         # a spare slot n for the False elements
    table = E.scatter_add(full((n + 1,), 0, D.int64, m.device), 0, slot, E.mul(mi, iota(N, m.device)))
    return table.narrow(0, 0, n)


def masked_fill(self, mask, value, *, out):
    """Composite of ``masked_fill``: where(mask, value, self)."""
    out.copy_(_E().where(mask, scalar(value, self.dtype, self.device), self))


def masked_select(self, mask):
    """Composite of ``masked_select``: the 1-D tensor of the elements where the broadcast mask is True, gathered at
    the True positions (one count read).
    """
    shape = _broadcast(self.shape, mask.shape)
    m = flat_copy(mask.expand(shape))
    pos = true_positions(m)
    if pos.numel() == 0:
        return empty_on((0,), self.dtype, self.device)
    return _E().gather(flat_copy(self.expand(shape)), 0, pos)


def masked_scatter(self, mask, source, *, out):
    """Composite of ``masked_scatter``: the k-th True position takes source's k-th element (cumsum of the mask,
    gather); RuntimeError when source has fewer elements than the mask's Trues.
    """
    E = _E()
    shape = tuple(out.shape)
    m = flat_copy(mask.expand(shape))
    n = count(m)
    if source.numel() < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if n == 0:
        out.copy_(self.expand(shape))
        return
    k = E.where(m, E.add(cumsum(m.to(D.int64)), -1), 0)     # the source element each True takes
    vals = E.gather(flat_copy(source), 0, k)
    out.copy_(E.where(m, vals, flat_copy(self.expand(shape))).view(shape))


def nonzero(self):
    """Composite of ``nonzero``: the (n, ndim) int64 coordinates of the nonzero elements (NaN counts as nonzero) in
    row-major order (one count read).
    """
    E = _E()
    nd = self.dim()
    pos = true_positions(flat_copy(ne0(self)))
    n = pos.numel()
    out = empty_on((n, nd), D.int64, self.device)
    if n:
        for j, (s, st) in enumerate(zip(self.shape, row_major_strides(self.shape))):
            out.select(1, j).copy_(E.fmod(E.div(pos, st, rounding_mode="trunc"), s))
    return out
