"""The kernels of core ops at sparse_coo keys (add, sub, mul, true_divide, pow, the zero-preserving
unary ops, sum, mm, matmul, index_select, cat), and the ``transpose`` / ``narrow`` methods built from the ops.

The dispatcher runs the core-op kernels free-form with autograd on (see ``_dispatch._layout_call``), so they are
differentiable through the ``sparse::`` ops and dense ops they are built from. Split out of ``_kernels``.
"""
from __future__ import annotations

import math

import ember

from ._index import (I64, _coo, _is_sp, _sp, _vals, _wrap_dim, check_bounds, gather_at, linear_index,
                     sparse_sizes)


# ================================================================ kernels of core ops at sparse_coo keys
def _same_size(op, a, b):
    if a._shape != b._shape:
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(a._shape)} while other has size {list(b._shape)} (FYI: dense-sparse addition "
                           f"does not currently support broadcasting)")


def _result_dtype(a, b):
    return ember.result_type(a, b)


def add(self, other, alpha=1):
    """sparse + sparse -> sparse; dense + sparse and sparse + dense -> dense (PyTorch refuses
    sparse + dense; ember computes it, as addition commutes); scalars are refused (not zero-preserving)."""
    if not isinstance(other, ember.Tensor) or not isinstance(self, ember.Tensor):
        raise NotImplementedError("add(): adding a scalar to a sparse tensor is not supported (the result would "
                                  "be dense); use s.to_dense() + scalar")
    dt = _result_dtype(self, other)
    _same_size("add", self, other)
    if _is_sp(self) and _is_sp(other):
        if self.sparse_dim() != other.sparse_dim():
            raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse_dim, but got "
                               f"{self.sparse_dim()} and {other.sparse_dim()}")
        b = _vals(other).to(dt)
        if alpha != 1:
            b = b * alpha
        idx = ember.cat([self._sp_indices, other._sp_indices], 1)
        r = _coo(idx, ember.cat([_vals(self).to(dt), b]), self._shape, False)
        if self._sp_coalesced and other._sp_coalesced:
            r = r.coalesce()
        return r
    if _is_sp(other):      # dense + alpha * sparse
        dense, sp, a_d, a_s = self, other, 1, alpha
    else:                  # sparse + alpha * dense
        dense, sp, a_d, a_s = other, self, alpha, 1
    base = dense.to(dt)
    if a_d != 1:
        base = base * a_d
    k = sp.sparse_dim()
    sizes = sparse_sizes(sp)
    check_bounds(sp._sp_indices, sizes)
    flat = base.reshape((math.prod(sizes),) + tuple(base._shape[k:]))
    r = ember.index_add(flat, 0, linear_index(sp._sp_indices, sizes), _vals(sp).to(dt), alpha=a_s)
    return r.view(sp._shape)


def sub(self, other, alpha=1):
    """``self - alpha * other`` for sparse operands (see ``add``)."""
    return add(self, other, alpha=-alpha)


def _scalar_of(x):
    if isinstance(x, ember.Tensor) and not _is_sp(x) and x.dim() == 0:
        return x
    if isinstance(x, (int, float, complex, bool)):
        return x
    return None


def mul(self, other):
    """sparse * scalar (or 0-dim tensor), sparse * dense of the same shape, sparse * sparse (the
    intersection of the patterns); the result is sparse (matches torch.mul on sparse COO)."""
    if not _is_sp(self):
        self, other = other, self
    sc = _scalar_of(other)
    dt = _result_dtype(self, other)
    if sc is not None:
        return _coo(self._sp_indices, _vals(self).to(dt) * sc, self._shape, self._sp_coalesced)
    if not _is_sp(other):
        _same_size("mul", self, other)
        c = self
        return _coo(c._sp_indices, _vals(c).to(dt) * gather_at(other, c._sp_indices).to(dt), c._shape,
                    c._sp_coalesced)
    _same_size("mul", self, other)
    a, b = self.coalesce(), other.coalesce()
    sizes = sparse_sizes(a)
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError("mul: expected 'self' and 'other' to have same sparse_dim")
    la, lb = linear_index(a._sp_indices, sizes), linear_index(b._sp_indices, sizes)
    empty_v = ember.zeros((0,) + tuple(a._shape[a.sparse_dim():]), dtype=dt, device=a._device)
    if la.numel() == 0 or lb.numel() == 0:
        return _coo(ember.zeros((a.sparse_dim(), 0), dtype=I64, device=a._device), empty_v, a._shape, True)
    pos = ember.searchsorted(lb, la).clamp(max=lb.numel() - 1)
    sel = ember.nonzero(lb.index_select(0, pos) == la).view(-1)
    v = _vals(a).to(dt).index_select(0, sel) * _vals(b).to(dt).index_select(0, pos.index_select(0, sel))
    return _coo(a._sp_indices.index_select(1, sel), v, a._shape, True)


def true_divide(self, other):
    """sparse / scalar (or 0-dim tensor) -> sparse; other divisors are refused (not zero-preserving)."""
    sc = _scalar_of(other) if _is_sp(self) else None
    if sc is None:
        raise NotImplementedError("true_divide(): a sparse tensor can only be divided by a scalar or a 0-dim "
                                  "dense tensor (ember-sparse)")
    v = _vals(self)
    return _coo(self._sp_indices, v / sc, self._shape, self._sp_coalesced)


def pow(self, exponent):
    """sparse ** positive scalar -> sparse (coalesced first)."""
    if not _is_sp(self) or _scalar_of(exponent) is None or isinstance(exponent, ember.Tensor) \
            or not exponent > 0:
        raise NotImplementedError("pow(): only sparse ** (a positive Python scalar) keeps zeros zero "
                                  "(ember-sparse)")
    c = self.coalesce()
    return _coo(c._sp_indices, _vals(c) ** exponent, c._shape, True)


#: unary ops with f(0) == 0, applied to the values; ``True`` = linear (no need to coalesce first)
ZERO_PRESERVING_UNARY = {
    "neg": True, "positive": True, "abs": False, "sqrt": False, "sin": False, "tan": False, "tanh": False,
    "asin": False, "atan": False, "sinh": False, "asinh": False, "atanh": False, "expm1": False, "log1p": False,
    "trunc": False, "floor": False, "ceil": False, "round": False, "sign": False, "sgn": False, "square": False,
    "erf": False, "erfinv": False, "frac": False, "relu": False, "nan_to_num": False, "signbit": False,
    "isnan": False, "isinf": False, "isposinf": False, "isneginf": False, "rad2deg": True, "deg2rad": True,
}


def _make_unary(name, linear):
    fn = getattr(ember, name)

    def kernel(self, *args, **kwargs):
        c = self if linear else self.coalesce()
        return _coo(c._sp_indices, fn(_vals(c), *args, **kwargs), c._shape, c._sp_coalesced)
    kernel.__name__ = f"sparse_{name}"
    kernel.__doc__ = f"``{name}`` of a sparse tensor: applied to its values (f(0) == 0 keeps the pattern)."
    return kernel


def sum_(self, dim=None, keepdim=False, dtype=None):
    """Sum of a sparse tensor over ``dim``: ember.sparse.sum."""
    return _sp().sum(self, dim, keepdim, dtype=dtype)


def mm(self, mat2):
    """sparse @ dense, or dense @ sparse computed as (sparse^T @ dense^T)^T (matches torch.mm)."""
    if not _is_sp(self):
        if self.dim() != 2:
            raise RuntimeError("self must be a matrix")
        return _sp().mm(mat2.t(), self.t()).t()
    return _sp().mm(self, mat2)


def matmul(self, other):
    """sparse (n, k) @ dense (k, m) or (k,), and dense (m, n) or (n,) @ sparse (n, k) -> dense (matches
    torch.matmul with a sparse COO operand)."""
    if _is_sp(self) and _is_sp(other):
        raise NotImplementedError("matmul(): sparse @ sparse is not supported by ember-sparse")
    if not _is_sp(self):
        if other.dim() != 2 or self.dim() not in (1, 2):
            raise NotImplementedError(f"matmul(): a {self.dim()}-dim dense operand with a {other.dim()}-dim sparse "
                                      f"operand is not supported by ember-sparse (1-D or 2-D dense @ 2-D sparse only)")
        if self.dim() == 1:
            return _sp().mm(other.t(), self.unsqueeze(1)).squeeze(1)
        return _sp().mm(other.t(), self.t()).t()
    if self.dim() == 2 and other.dim() == 1:
        return _sp().mm(self, other.unsqueeze(1)).squeeze(1)
    if self.dim() == 2 and other.dim() == 2:
        return _sp().mm(self, other)
    raise NotImplementedError(f"matmul(): a sparse operand of {self.dim()} dims with a {other.dim()}-dim operand "
                              f"is not supported by ember-sparse (2-D sparse @ 1-D or 2-D dense only)")


def index_select(self, dim, index):
    """The entries whose index along ``dim`` is in ``index`` (repeated as often as it appears), renumbered
    (matches torch.index_select on sparse COO)."""
    if index.dim() > 1 or index._dtype not in (I64, ember.int32):
        raise IndexError("index_select(): Expected dtype int32/int64 for index") if index.dim() <= 1 else \
            IndexError("index_select(): Index is supposed to be a vector")
    d = _wrap_dim(dim, self.dim())
    k = self.sparse_dim()
    index = index.to(I64)
    n = self._shape[d]
    if index.numel():
        lo, hi = index.min().item(), index.max().item()
        if lo < -n or hi >= n:
            raise IndexError("index out of range in self")
        index = ember.where(index < 0, index + n, index)
    shape = self._shape[:d] + (index.numel(),) + self._shape[d + 1:]
    if d >= k:
        return _coo(self._sp_indices, _vals(self).index_select(d - k + 1, index), shape, self._sp_coalesced)
    idx = self._sp_indices
    nnz = idx._shape[1]
    if nnz == 0 or index.numel() == 0:
        return _coo(ember.zeros((k, 0), dtype=I64, device=self._device),
                    ember.zeros((0,) + tuple(self._shape[k:]), dtype=self._dtype, device=self._device), shape, True)
    sorted_idx, perm = ember.sort(index)
    x = idx[d].contiguous()
    left = ember.searchsorted(sorted_idx, x)
    right = ember.searchsorted(sorted_idx, x, right=True)
    cnt = right - left
    entry = ember.repeat_interleave(ember.arange(nnz, device=self._device), cnt)
    total = entry.numel()
    start = ember.cumsum(cnt, 0) - cnt
    offset = ember.arange(total, device=self._device) - ember.repeat_interleave(start, cnt)
    newpos = perm.index_select(0, left.index_select(0, entry) + offset)
    new_idx = idx.index_select(1, entry).clone()
    new_idx[d] = newpos
    return _coo(new_idx, _vals(self).index_select(0, entry), shape, False)


def cat(tensors, dim=0):
    """Sparse tensors concatenated along a sparse dim (matches torch.cat on sparse COO)."""
    ts = list(tensors)
    if not all(_is_sp(t) for t in ts):
        raise RuntimeError("cat(): expected all tensors to be sparse COO (mixing sparse and dense tensors is not "
                           "supported)")
    first = ts[0]
    d = _wrap_dim(dim, first.dim())
    k = first.sparse_dim()
    for t in ts[1:]:
        if t.sparse_dim() != k or t.dense_dim() != first.dense_dim():
            raise RuntimeError("cat(): all sparse tensors must have the same sparse_dim and dense_dim")
    if d >= k:
        raise NotImplementedError("cat(): concatenating sparse tensors along a dense dim is not supported by "
                                  "ember-sparse")
    dt = first._dtype
    for t in ts[1:]:
        dt = ember.promote_types(dt, t._dtype)
    idxs, vals, off = [], [], 0
    for t in ts:
        i = t._sp_indices
        if off:
            shift = ember.zeros((k, 1), dtype=I64, device=t._device)
            shift[d] = off
            i = i + shift
        idxs.append(i)
        vals.append(_vals(t).to(dt))
        off += t._shape[d]
    shape = first._shape[:d] + (off,) + first._shape[d + 1:]
    return _coo(ember.cat(idxs, 1), ember.cat(vals, 0), shape, False)


# ================================================================ methods built from the ops
def transpose(self, dim0, dim1):
    """Sparse transpose: permutes index rows (two sparse dims) or value dims (two dense dims); RuntimeError for a
    sparse and a dense dim.
    """
    n = self.dim()
    d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
    if d0 == d1:
        return self
    k = self.sparse_dim()
    shape = list(self._shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    if d0 < k and d1 < k:
        perm = list(range(k))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        idx = self._sp_indices.index_select(0, ember.tensor(perm, dtype=I64, device=self._device))
        return _coo(idx, _vals(self), shape, False)
    if d0 >= k and d1 >= k:
        v = _vals(self).transpose(d0 - k + 1, d1 - k + 1).contiguous()
        return _coo(self._sp_indices, v, shape, self._sp_coalesced)
    raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got sparse_dim: {k}, d0: {d0}, "
                       f"d1: {d1}")


def narrow(self, dim, start, length):
    """Sparse narrow (a copy): RuntimeError for a 0-dim tensor or start + length past the size, IndexError for start
    outside [-size, size].
    """
    n = self.dim()
    if n == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, n)
    size = self._shape[d]
    if isinstance(start, ember.Tensor):
        start = start.item()
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    k = self.sparse_dim()
    shape = self._shape[:d] + (length,) + self._shape[d + 1:]
    if d >= k:
        return _coo(self._sp_indices, _vals(self).narrow(d - k + 1, start, length).contiguous(), shape,
                    self._sp_coalesced)
    row = self._sp_indices[d]
    sel = ember.nonzero((row >= start) & (row < start + length)).view(-1)
    idx = self._sp_indices.index_select(1, sel)
    if start:
        shift = ember.zeros((k, 1), dtype=I64, device=self._device)
        shift[d] = start
        idx = idx - shift
    return _coo(idx, _vals(self).index_select(0, sel), shape, self._sp_coalesced)
