"""Op database entries: indexing (index, index_put, gather, scatter, scatter_add, scatter_reduce,
index_select, index_add, index_copy, index_fill, take, masked_fill, masked_select,
masked_scatter, nonzero).

Index samples never repeat a position where PyTorch leaves the winner unspecified (scatter,
index_copy, index_put without accumulate); accumulating ops (scatter_add, index_add,
index_put with accumulate, scatter_reduce) get repeated positions on purpose.
"""
from __future__ import annotations


import numpy as np

from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import ALL_DTYPES, NUMERIC, seed_for, with_grad
from .reduction import upcast

__all__ = ["OPINFOS", "op_db"]


class _Mk:
    def __init__(self, op, device, dtype, requires_grad):
        self.op, self.device, self.dtype, self.rg, self.k = op, device, dtype, requires_grad, 0

    def seed(self):
        self.k += 1
        return seed_for(self.op, self.dtype, self.k)

    def __call__(self, shape, *, t=False, nc=False, dtype=None, low=None, high=None, grad=True):
        kw = dict(device=self.device, dtype=dtype or self.dtype, seed=self.seed(), low=low, high=high)
        if t:
            x = make_tensor(tuple(reversed(shape)), **kw).permute(tuple(reversed(range(len(shape)))))
        elif nc:
            x = make_tensor(shape, noncontiguous=True, **kw)
        else:
            x = make_tensor(shape, **kw)
        return with_grad(x, self.rg and grad)

    def idx(self, shape, high, *, low=0, dtype=None):
        import ember
        return make_tensor(shape, device=self.device, dtype=dtype or ember.int64, low=low, high=high, seed=self.seed())

    def perm_idx(self, shape, dim, size):
        """An index of ``shape`` whose entries along ``dim`` are distinct values in [0, size)."""
        import ember
        rng = np.random.default_rng(self.seed())
        moved = list(shape)
        n = moved.pop(dim)
        rows = [rng.permutation(size)[:n] for _ in range(int(np.prod(moved)) if moved else 1)]
        a = np.array(rows, dtype=np.int64).reshape(tuple(moved) + (n,))
        return ember.tensor(np.moveaxis(a, -1, dim), device=self.device)

    def mask(self, shape):
        import ember
        return make_tensor(shape, device=self.device, dtype=ember.bool, seed=self.seed())


def _vec(v, device, dt=None):
    import ember
    return ember.tensor(list(v), dtype=dt or ember.int64, device=device)


# ---------------------------------------------------------------- index / index_put
def _np_index(indices):
    return tuple(slice(None) if i is None else i for i in indices)


def _index_ref(a, indices):
    return a[_np_index(indices)]


def _index_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((5,)), ([m.idx((3,), 5)],), name="1-D")
    yield SampleInput(m((4, 3)), ([m.idx((2, 2), 4, low=-4)],), name="2-D index, negative entries")
    yield SampleInput(m((3, 4), t=True), ([None, m.idx((5,), 4)],), name="transposed, None then index")
    yield SampleInput(m((3, 4, 5), nc=True), ([m.idx((2,), 3), None, m.idx((2,), 5)],),
                      name="separated indices (front)")
    yield SampleInput(m((3, 4, 5)), ([None, m.idx((2, 1), 4), m.idx((3,), 5)],), name="adjacent, broadcast")
    yield SampleInput(m((3, 4)), ([m.idx((0,), 3)],), name="empty index")
    yield SampleInput(m((3, 4)), ([m.idx((2,), 3, dtype=__import__("ember").int32)],), name="int32 index")


def _index_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ([_vec([0], device), _vec([1], device), _vec([1], device)],)), IndexError,
                     r"too many indices for tensor of dimension 2 \(got 3\)")
    yield ErrorInput(SampleInput(x, ([ember.tensor([0.0], device=device)],)), IndexError,
                     r"tensors used as indices must be long, int, byte or bool tensors")
    yield ErrorInput(SampleInput(x, ([_vec([0, 1], device), _vec([0, 1, 2], device)],)), IndexError,
                     r"shape mismatch: indexing tensors could not be broadcast together with shapes \[2\], \[3\]")
    yield ErrorInput(SampleInput(x, ([_vec([3], device)],)), IndexError,
                     r"index 3 is out of bounds for dimension 0 with size 3")


def _index_put_ref(a, indices, values, accumulate=False):
    out = a.copy()
    idx = []
    for i in indices:    # bool masks become the indices of their True elements
        if isinstance(i, np.ndarray) and i.dtype == np.bool_:
            idx.extend(np.nonzero(i))
        else:
            idx.append(slice(None) if i is None else i)
    idx = tuple(idx)
    if accumulate:
        acc = out.astype(np.complex128 if out.dtype.kind == "c" else np.float64 if out.dtype.kind == "f" else
                         np.int64 if out.dtype.kind != "b" else np.bool_)
        sel = np.zeros_like(acc)
        np.add.at(acc, idx, np.broadcast_to(values, out[idx].shape).astype(acc.dtype)) if out.dtype.kind != "b" \
            else np.logical_or.at(acc, idx, np.broadcast_to(values, out[idx].shape))
        del sel
        return acc.astype(a.dtype)
    out[idx] = values
    return out


def _index_put_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((5,)), ((m.perm_idx((3,), 0, 5),), m((3,))), name="1-D")
    yield SampleInput(m((4, 3), t=True), ((m.perm_idx((2,), 0, 4), None), m((2, 3))), name="transposed, rows")
    yield SampleInput(m((3, 4)), ((None, m.perm_idx((2,), 0, 4)), m(())), name="broadcast value")
    yield SampleInput(m((3, 4), nc=True), ((m.mask((3, 4)),), m(())), name="bool mask")
    yield SampleInput(m((5,)), ((m.idx((8,), 5),), m((8,))), {"accumulate": True}, name="accumulate, repeats")
    yield SampleInput(m((3, 4)), ((m.idx((6,), 3), m.idx((6,), 4)), m((6,))), {"accumulate": True},
                      name="accumulate, 2 indices")
    yield SampleInput(m((3, 4)), ((m.idx((0,), 3),), m((0, 4))), name="empty index")


def _index_put_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ((_vec([0], device),), make_tensor((4,), device=device, dtype=ember.float64,
                                                                      seed=2))),
                     RuntimeError, r"Index put requires the source and destination dtypes match, got Float for the "
                     r"destination and Double for the source.")
    yield ErrorInput(SampleInput(x, ((_vec([0, 1], device),), make_tensor((3,), device=device, seed=2))),
                     RuntimeError, r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to indexing "
                     r"result of shape \[2, 4\]")


# ---------------------------------------------------------------- gather / scatter family
def _positions(index, dim):
    """(index position, target position along ``dim``) pairs."""
    for p in np.ndindex(*index.shape):
        q = list(p)
        q[dim] = int(index[p])
        yield p, tuple(q)


def _gather_ref(a, dim, index, *, sparse_grad=False):
    if a.ndim == 0:
        return a.reshape(()).copy() if index.ndim == 0 else np.broadcast_to(a, index.shape).copy()
    d = dim % a.ndim
    out = np.empty(index.shape, dtype=a.dtype)
    for p, q in _positions(index, d):
        out[p] = a[q]
    return out


def _gather_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 4)), (1, m.idx((3, 6), 4)), name="dim=1, repeats")
    yield SampleInput(m((3, 4), t=True), (0, m.idx((2, 3), 3)), name="transposed, smaller index")
    yield SampleInput(m((2, 3, 4), nc=True), (-1, m.idx((2, 3, 2), 4)), name="noncontiguous, dim=-1")
    yield SampleInput(m((5,)), (0, m.idx((0,), 5)), name="empty index")
    yield SampleInput(m(()), (0, m.idx((), 1)), name="0-dim")


def _gather_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (1, ember.tensor([[0.0]], device=device))), RuntimeError,
                     r"gather\(\): Expected dtype int32/int64 for index")
    yield ErrorInput(SampleInput(x, (1, _vec([0], device))), RuntimeError,
                     r"Index tensor must have the same number of dimensions as input tensor")
    yield ErrorInput(SampleInput(x, (1, ember.zeros((4, 1), dtype=ember.int64, device=device))), RuntimeError,
                     r"Size does not match at dimension 0 expected index \[4, 1\] to be no larger than self \[3, 4\] "
                     r"apart from dimension 1")


def _red_acc(dt):
    return np.complex128 if dt.kind == "c" else np.float64 if dt.kind == "f" else np.int64


def _scatter_ref(a, dim, index, src=None, *, value=None, reduce=None):
    src = value if src is None else src
    if a.ndim == 0:
        a, index, sa = a.reshape(1), index.reshape(1), (np.asarray(src).reshape(1) if np.ndim(src) else src)
        return _scatter_ref(a, 0, index, sa, reduce=reduce).reshape(())
    d = dim % a.ndim
    out = a.astype(_red_acc(a.dtype)) if a.dtype.kind != "b" else a.copy()
    for p, q in _positions(index, d):
        v = src[p] if isinstance(src, np.ndarray) and src.ndim else src
        if reduce == "add":
            out[q] = out[q] + v
        elif reduce == "multiply":
            out[q] = out[q] * v
        else:
            out[q] = v
    return out.astype(a.dtype)


def _scatter_add_ref(a, dim, index, src):
    return _scatter_ref(a, dim, index, src, reduce="add") if a.dtype.kind != "b" else _scatter_or(a, dim, index, src)


def _scatter_or(a, dim, index, src):
    if a.ndim == 0:
        return _scatter_or(a.reshape(1), 0, index.reshape(1), src.reshape(1)).reshape(())
    out = a.copy()
    d = dim % max(a.ndim, 1)
    for p, q in _positions(index, d):
        out[q] = out[q] or src[p]
    return out


def _scatter_reduce_ref(a, dim, index, src, reduce, *, include_self=True):
    d = dim % max(a.ndim, 1)
    acc = _red_acc(a.dtype)
    x = a.reshape(1) if a.ndim == 0 else a
    idx = index.reshape(1) if index.ndim == 0 else index
    s = src.reshape(1) if src.ndim == 0 else src
    groups = {}
    for p, q in _positions(idx, d):
        groups.setdefault(q, []).append(s[p])
    out = x.astype(acc)
    for q, vals in groups.items():
        vals = list(np.asarray(vals, dtype=acc))
        if include_self:
            vals.append(x[q].astype(acc))
        v = np.asarray(vals)
        if reduce == "sum":
            r = v.sum()
        elif reduce == "prod":
            r = np.prod(v)
        elif reduce == "amax":
            r = np.max(v)
        elif reduce == "amin":
            r = np.min(v)
        else:
            r = v.sum() // len(v) if acc is np.int64 else v.sum() / len(v)
        out[q] = r
    return out.astype(a.dtype).reshape(a.shape)


def _scatter_samples(op, device, dtype, requires_grad=False):
    """scatter: no repeated target within a sample (the winner would be unspecified)."""
    m = _Mk(op, device, dtype, requires_grad)
    # a src larger than the index: PyTorch's backward refuses a gradient for it (ScatterBackward0 returns an
    # index-shaped gradient), and so does ember's, so src takes no gradient in this sample
    yield SampleInput(m((3, 5)), (1, m.perm_idx((3, 2), 1, 5), m((3, 4), grad=False)), name="dim=1, larger src")
    yield SampleInput(m((4, 3), t=True), (0, m.perm_idx((2, 3), 0, 3), m((2, 3))), name="transposed self")
    yield SampleInput(m((2, 3, 4), nc=True), (-1, m.perm_idx((2, 3, 3), 2, 4), m((2, 3, 3), nc=True)),
                      name="noncontiguous, dim=-1")
    yield SampleInput(m((3, 4)), (0, m.idx((0, 4), 3), m((0, 4))), name="empty index")
    if op.name == "scatter":
        yield SampleInput(m((3, 5)), (1, m.perm_idx((3, 2), 1, 5)), {"value": 2}, name="value")
        if dtype.name != "bool":
            # PyTorch has no derivative for scatter with reduce=: these samples need no grad
            yield SampleInput(m((3, 5), grad=False), (1, m.idx((3, 4), 5), m((3, 4), grad=False)),
                              {"reduce": "add"}, name="reduce='add', repeats")
            yield SampleInput(m((3, 5), low=-2, high=2, grad=False),
                              (1, m.idx((3, 4), 5), m((3, 4), low=-2, high=2, grad=False)),
                              {"reduce": "multiply"}, name="reduce='multiply', repeats")


def _scatter_add_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 5)), (1, m.idx((3, 6), 5), m((3, 6))), name="dim=1, repeats")
    yield SampleInput(m((4, 3), t=True), (0, m.idx((5, 3), 4), m((5, 3), t=True)), name="transposed")
    yield SampleInput(m((2, 3, 4), nc=True), (-2, m.idx((2, 4, 2), 3), m((2, 4, 2))), name="noncontiguous, dim=-2")
    yield SampleInput(m(()), (0, m.idx((), 1), m(())), name="0-dim")
    yield SampleInput(m((3, 4)), (0, m.idx((0, 4), 3), m((0, 4))), name="empty index")


def _scatter_reduce_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    reds = ("sum", "prod", "mean") + (() if dtype.is_complex else ("amax", "amin"))
    for i, r in enumerate(reds):
        lo, hi = (-2, 3) if r == "prod" else (None, None)
        g = r != "prod"     # ember has no derivative for scatter_reduce 'prod' (PyTorch has one)
        x = m((3, 5), low=lo, high=hi, grad=g) if i % 2 == 0 else m((3, 5), t=True, low=lo, high=hi, grad=g)
        src = m((3, 6), low=lo, high=hi, grad=g)
        for inc in (True, False):
            yield SampleInput(x, (1, m.idx((3, 6), 5), src, r), {"include_self": inc},
                              name=f"{r}, include_self={inc}")
    yield SampleInput(m((3, 4)), (0, m.idx((0, 4), 3), m((0, 4)), "sum"), name="empty index")


def _scatter_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    idx = ember.zeros((3, 4), dtype=ember.int64, device=device)
    extra = ("sum",) if op.name == "scatter_reduce" else ()
    if op.name == "scatter":
        yield ErrorInput(SampleInput(x, (1, idx, make_tensor((3, 4), device=device, dtype=ember.float64, seed=2))),
                         RuntimeError, r"scatter\(\): Expected self.dtype to be equal to src.dtype")
        yield ErrorInput(SampleInput(x, (1, idx, x), {"reduce": "max"}), RuntimeError,
                         r"reduce argument must be either add or multiply.")
    if op.name == "scatter_reduce":
        yield ErrorInput(SampleInput(x, (1, idx, x, "max")), RuntimeError,
                         r"reduce argument must be either sum, prod, mean, amax or amin, got max")
    yield ErrorInput(SampleInput(x, (1, _vec([0], device), x) + extra), RuntimeError,
                     r"Index tensor must have the same number of dimensions as self tensor")
    yield ErrorInput(SampleInput(x, (1, ember.zeros((3, 4), device=device), x) + extra), RuntimeError,
                     r"Expected dtype int32/int64 for index")


# ---------------------------------------------------------------- index_select / index_add / index_copy / index_fill
def _index_select_ref(a, dim, index):
    if a.ndim == 0:
        return a.copy()
    return np.take(a, index.reshape(-1), axis=dim % a.ndim)


def _index_select_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 4)), (0, m.idx((5,), 3)), name="dim=0, repeats")
    yield SampleInput(m((3, 4), t=True), (1, m.idx((2,), 4, dtype=ember.int32)), name="transposed, int32")
    yield SampleInput(m((2, 3, 4), nc=True), (-1, m.idx((3,), 4)), name="noncontiguous")
    yield SampleInput(m((3, 4)), (1, m.idx((0,), 4)), name="empty index")
    yield SampleInput(m(()), (0, m.idx((), 1)), name="0-dim")
    yield SampleInput(m((5,)), (0, m.idx((), 5)), name="0-dim index")


def _index_select_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (0, ember.zeros((2, 2), dtype=ember.int64, device=device))), IndexError,
                     r"index_select\(\): Index is supposed to be a vector")
    yield ErrorInput(SampleInput(x, (0, ember.zeros((2,), device=device))), RuntimeError,
                     r"index_select\(\): Expected dtype int32 or int64 for index")
    yield ErrorInput(SampleInput(x, (0, _vec([3], device))), IndexError, r"index out of range in self")


def _along(a, dim, i):
    sl = [slice(None)] * a.ndim
    sl[dim] = i
    return tuple(sl)


def _index_add_ref(a, dim, index, source, *, alpha=1):
    x = a.reshape(1) if a.ndim == 0 else a
    s = source.reshape(1) if source.ndim == 0 else source
    d = dim % x.ndim
    acc = _red_acc(a.dtype) if a.dtype.kind != "b" else np.bool_
    out = x.astype(acc)
    for j, i in enumerate(index.reshape(-1)):
        if acc is np.bool_:
            out[_along(out, d, i)] |= s[_along(s, d, j)] & bool(alpha)
        else:
            out[_along(out, d, i)] += alpha * s[_along(s, d, j)].astype(acc)
    return out.astype(a.dtype).reshape(a.shape)


def _index_copy_ref(a, dim, index, source):
    x = a.reshape(1) if a.ndim == 0 else a.copy()
    s = source.reshape(1) if source.ndim == 0 else source
    d = dim % x.ndim
    for j, i in enumerate(index.reshape(-1)):
        x[_along(x, d, i)] = s[_along(s, d, j)]
    return x.reshape(a.shape)


def _index_fill_ref(a, dim, index, value):
    x = a.reshape(1) if a.ndim == 0 else a.copy()
    d = dim % x.ndim
    for i in index.reshape(-1):
        x[_along(x, d, i)] = value
    return x.reshape(a.shape)


def _index_add_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    copy = op.name == "index_copy"
    pick = (lambda n, size: m.perm_idx((n,), 0, size)) if copy else (lambda n, size: m.idx((n,), size))
    yield SampleInput(m((4, 3)), (0, pick(3, 4), m((3, 3))), name="dim=0" + ("" if copy else ", repeats"))
    yield SampleInput(m((3, 4), t=True), (1, pick(2, 4), m((3, 2), t=True)), name="transposed, dim=1")
    yield SampleInput(m((2, 3, 4), nc=True), (-1, pick(3, 4), m((2, 3, 3))), name="noncontiguous, dim=-1")
    yield SampleInput(m((3, 4)), (0, m.idx((0,), 3), m((0, 4))), name="empty index")
    yield SampleInput(m(()), (0, m.idx((1,), 1), m(())), name="0-dim")
    if op.name == "index_add":
        alpha = 2 if not (dtype.is_floating_point or dtype.is_complex) else -1.5
        if dtype.name == "bool":
            alpha = True
        yield SampleInput(m((4, 3)), (0, m.idx((5,), 4), m((5, 3))), {"alpha": alpha}, name=f"alpha={alpha}")
        yield SampleInput(m((4, 3)), (1, m.idx((2,), 3, dtype=ember.int32), m((4, 2))), name="int32 index")


def _index_fill_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    v = True if dtype.name == "bool" else (1.5 - 2j if dtype.is_complex else 2.5 if dtype.is_floating_point else 3)
    yield SampleInput(m((4, 3)), (0, m.idx((3,), 4), v), name="dim=0, repeats")
    yield SampleInput(m((3, 4), t=True), (1, m.idx((2,), 4, low=-4), v), name="transposed, negative index")
    yield SampleInput(m((2, 3, 4), nc=True), (-1, m.idx((3,), 4), v), name="noncontiguous")
    yield SampleInput(m((3, 4)), (0, m.idx((0,), 3), v), name="empty index")
    yield SampleInput(m(()), (0, m.idx((), 1), v), name="0-dim")
    if dtype.is_floating_point or dtype.is_complex:
        # a 0-dim tensor value gets a gradient too (the sum of grad over the filled positions)
        yield SampleInput(m((4, 3)), (1, m.idx((2,), 3), m(())), name="0-dim tensor value")


def _index_add_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    if op.name == "index_add":
        yield ErrorInput(SampleInput(x, (0, _vec([0, 1], device), make_tensor((3, 4), device=device, seed=2))),
                         RuntimeError, r"index_add_\(\): Number of indices \(2\) should be equal to "
                                       r"source.size\(dim\): \(3\)")
        yield ErrorInput(SampleInput(x, (0, _vec([0], device),
                                         make_tensor((1, 4), device=device, dtype=ember.float64, seed=2))),
                         RuntimeError, r"index_add_\(\): self \(Float\) and source \(Double\) must have the same "
                                       r"scalar type")
    else:
        yield ErrorInput(SampleInput(x, (0, _vec([0, 1], device), make_tensor((3, 4), device=device, seed=2))),
                         IndexError, r"index_copy_\(\): Number of indices \(2\) should be equal to "
                                     r"source.size\(dim\) \(3\)")
        yield ErrorInput(SampleInput(x, (0, _vec([0], device, ember.int32), make_tensor((1, 4), device=device,
                                                                                      seed=2))),
                         RuntimeError, r"index_copy_\(\): Expected a long tensor for index, but got Int")


def _index_fill_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (0, _vec([0], device, ember.int32), 1.0)), IndexError,
                     r"index_fill_\(\): Expected dtype int64 for index.")
    yield ErrorInput(SampleInput(x, (0, ember.zeros((1, 1), dtype=ember.int64, device=device), 1.0)), RuntimeError,
                     r"Index has to be a vector/scalar")


# ---------------------------------------------------------------- take / masked_* / nonzero
def _take_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 4)), (m.idx((5,), 12),), name="2-D, repeats")
    yield SampleInput(m((3, 4), t=True), (m.idx((2, 3), 12, low=-12),), name="transposed, negative, 2-D index")
    yield SampleInput(m((2, 3, 4), nc=True), (m.idx((), 24),), name="noncontiguous, 0-dim index")
    yield SampleInput(m(()), (m.idx((2,), 1),), name="0-dim")
    yield SampleInput(m((3, 4)), (m.idx((0,), 12),), name="empty index")


def _take_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (_vec([0], device, ember.int32),)), RuntimeError,
                     r"take\(\): Expected a long tensor for index, but got Int")
    yield ErrorInput(SampleInput(x, (_vec([12], device),)), IndexError,
                     r"out of range: tried to access index 12 on a tensor of 12 elements")


def _masked_fill_ref(a, mask, value):
    return np.where(mask, np.asarray(value).astype(a.dtype), a).astype(a.dtype)


def _masked_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    v = True if dtype.name == "bool" else (1.5 - 2j if dtype.is_complex else 2.5 if dtype.is_floating_point else 3)
    if op.name == "masked_fill":
        extra = lambda shape: (v,)
    elif op.name == "masked_select":
        extra = lambda shape: ()
    else:
        extra = lambda shape: (m((int(np.prod(shape)) + 2,)),)
    for name, xs, ms, kw in (("same shape", (3, 4), (3, 4), {}), ("broadcast mask", (3, 4), (4,), {}),
                             ("transposed", (3, 4), (3, 4), {"t": True}),
                             ("noncontiguous", (2, 3, 4), (3, 1), {"nc": True}), ("0-dim", (), (), {}),
                             ("empty", (0, 4), (4,), {})):
        x = m(xs, **kw)
        if op.name == "masked_select" and name == "broadcast mask":
            x, ms = m((4,)), (3, 4)          # masked_select broadcasts both ways
        yield SampleInput(x, (m.mask(ms),) + extra(tuple(np.broadcast_shapes(x.shape, ms))), name=name)
    if op.name == "masked_fill" and (dtype.is_floating_point or dtype.is_complex):
        # a 0-dim tensor value gets a gradient too (the sum of grad over the filled positions)
        yield SampleInput(m((3, 4)), (m.mask((3, 4)), m(())), name="0-dim tensor value")
        yield SampleInput(m((2, 1)), (m.mask((3,)), m(())), name="0-dim tensor value, broadcast mask")


def _masked_select_ref(a, mask):
    x, mk = np.broadcast_arrays(a, mask)
    return x[mk]


def _masked_scatter_ref(a, mask, source):
    out = a.copy()
    mk = np.broadcast_to(mask, a.shape)
    out[mk] = source.reshape(-1)[:int(mk.sum())]
    return out


def _masked_errors(op, device):
    import ember
    x = make_tensor((3, 4), device=device, seed=1)
    im = ember.zeros((3, 4), dtype=ember.int64, device=device)
    if op.name == "masked_fill":
        yield ErrorInput(SampleInput(x, (im, 1.0)), RuntimeError,
                         r"masked_fill_ only supports boolean masks, but got mask with dtype long int")
        yield ErrorInput(SampleInput(x, (ember.ones((3, 4), dtype=ember.bool, device=device), ember.ones(2))),
                         RuntimeError, r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                                       r"with 1 dimension\(s\).")
    elif op.name == "masked_select":
        yield ErrorInput(SampleInput(x, (im,)), RuntimeError, r"masked_select: expected BoolTensor for mask")
    else:
        yield ErrorInput(SampleInput(x, (im, x)), RuntimeError,
                         r"masked_scatter_ only supports boolean masks, but got mask with dtype Long")
        yield ErrorInput(SampleInput(x, (ember.ones((3, 4), dtype=ember.bool, device=device),
                                         make_tensor((12,), device=device, dtype=ember.float64, seed=2))),
                         RuntimeError, r"masked_scatter: expected self and source to have same dtypes but got")


def _nonzero_ref(a):
    return np.argwhere(a).astype(np.int64) if a.ndim else np.zeros((int(a != 0), 0), dtype=np.int64)


def _nonzero_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, False)
    lo, hi = (0, 2) if dtype.name != "bool" else (None, None)
    yield SampleInput(m((3, 4), low=lo, high=hi), name="2-D")
    yield SampleInput(m((3, 4), t=True, low=lo, high=hi), name="transposed")
    yield SampleInput(m((2, 3, 4), nc=True, low=lo, high=hi), name="noncontiguous 3-D")
    yield SampleInput(m((5,), low=lo, high=hi), name="1-D")
    yield SampleInput(m((0, 3), low=lo, high=hi), name="empty")
    yield SampleInput(m((), low=1 if lo is not None else None, high=hi), name="0-dim")
    import ember
    yield SampleInput(ember.zeros((2, 3), dtype=dtype, device=device), name="all zero")
    if dtype.is_floating_point:
        from .reduction import with_nan
        yield SampleInput(with_nan((4,), device, dtype, 3, where=(2,)), name="NaN is non-zero")


def _build():
    import ember as E
    from ember._ops import _indexing as I
    ops = []
    add = ops.append
    ag = dict(supports_autograd=True, exact=True)
    add(OpInfo("index", op=I._index, ref=_index_ref, dtypes=ALL_DTYPES, sample_inputs=_index_samples,
               error_inputs=_index_errors, **ag))
    add(OpInfo("index_put", op=E.index_put, ref=upcast(_index_put_ref), dtypes=ALL_DTYPES, sample_inputs=_index_put_samples,
               error_inputs=_index_put_errors, inplace=lambda t, *a, **k: t.index_put_(*a, **k),
               tolerances={"float16": (1e-3, 1e-2), "bfloat16": (1.6e-2, 5e-2)},
               supports_autograd=True))
    add(OpInfo("gather", ref=_gather_ref, dtypes=ALL_DTYPES, sample_inputs=_gather_samples,
               error_inputs=_gather_errors, supports_out=True, **ag))
    add(OpInfo("scatter", op=E.scatter, ref=upcast(_scatter_ref), dtypes=ALL_DTYPES, sample_inputs=_scatter_samples,
               error_inputs=_scatter_errors, inplace=lambda t, *a, **k: t.scatter_(*a, **k), supports_out=True,
               supports_autograd=True, tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 1e-1)}))
    add(OpInfo("scatter_add", ref=upcast(_scatter_add_ref), dtypes=ALL_DTYPES, sample_inputs=_scatter_add_samples,
               error_inputs=_scatter_errors, inplace=lambda t, *a, **k: t.scatter_add_(*a, **k), supports_out=True,
               supports_autograd=True, tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 1e-1)}))
    add(OpInfo("scatter_reduce", ref=upcast(_scatter_reduce_ref), dtypes=NUMERIC,
               sample_inputs=_scatter_reduce_samples, error_inputs=_scatter_errors,
               inplace=lambda t, *a, **k: t.scatter_reduce_(*a, **k), supports_out=True, supports_autograd=True,
               tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 1e-1)}))
    add(OpInfo("index_select", ref=_index_select_ref, dtypes=ALL_DTYPES, sample_inputs=_index_select_samples,
               error_inputs=_index_select_errors, supports_out=True, **ag))
    add(OpInfo("index_add", ref=upcast(_index_add_ref), dtypes=ALL_DTYPES, sample_inputs=_index_add_samples,
               error_inputs=_index_add_errors, inplace=lambda t, *a, **k: t.index_add_(*a, **k), supports_out=True,
               supports_autograd=True, tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 1e-1)}))
    add(OpInfo("index_copy", ref=_index_copy_ref, dtypes=ALL_DTYPES, sample_inputs=_index_add_samples,
               error_inputs=_index_add_errors, inplace=lambda t, *a, **k: t.index_copy_(*a, **k), supports_out=True,
               **ag))
    add(OpInfo("index_fill", op=E.index_fill, ref=_index_fill_ref, dtypes=ALL_DTYPES,
               sample_inputs=_index_fill_samples, error_inputs=_index_fill_errors,
               inplace=lambda t, *a, **k: t.index_fill_(*a, **k), **ag))
    add(OpInfo("take", ref=lambda a, index: np.take(a.reshape(-1), index), dtypes=ALL_DTYPES,
               sample_inputs=_take_samples, error_inputs=_take_errors, supports_out=True, **ag))
    add(OpInfo("masked_fill", op=E.masked_fill, ref=_masked_fill_ref, dtypes=ALL_DTYPES,
               sample_inputs=_masked_samples, error_inputs=_masked_errors,
               inplace=lambda t, *a, **k: t.masked_fill_(*a, **k), **ag))
    add(OpInfo("masked_select", ref=_masked_select_ref, dtypes=ALL_DTYPES, sample_inputs=_masked_samples,
               error_inputs=_masked_errors, supports_out=True, **ag))
    add(OpInfo("masked_scatter", ref=_masked_scatter_ref, dtypes=ALL_DTYPES, sample_inputs=_masked_samples,
               error_inputs=_masked_errors, inplace=lambda t, *a, **k: t.masked_scatter_(*a, **k), **ag))
    add(OpInfo("nonzero", op=E.nonzero, ref=_nonzero_ref, dtypes=ALL_DTYPES, sample_inputs=_nonzero_samples,
               exact=True, supports_out=True))
    return ops


OPINFOS = _build()
op_db = OPINFOS
