"""The kernels of the ``sparse::`` ops (coo_tensor, values, to_dense, to_sparse, coalesce, mm, sum,
softmax, log_softmax), with their meta functions and derivatives (``register_autograd`` pieces).

They run below autograd; ``_kernels.register_all`` defines the ops and registers these. Split out of ``_kernels``.
"""
from __future__ import annotations

import math

import ember

from ._index import (I64, _check_sparse, _coo, _is_sp, _key, _sp, _wrap_dim, check_bounds, gather_at,
                     linear_index, sparse_sizes, unravel)
from ._tensor import make_sparse

_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


# ================================================================ sparse:: ops
def _coo_meta(indices, values, size, is_coalesced=False):
    if not isinstance(indices, ember.Tensor) or not isinstance(values, ember.Tensor):
        raise TypeError("sparse_coo_tensor(): indices and values must be Tensors")
    if indices._layout.name != "strided" or values._layout.name != "strided":
        raise RuntimeError("sparse_coo_tensor(): indices and values must be strided tensors")
    if indices._dtype is not I64:
        raise RuntimeError("indices must be an int64 tensor")
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices._shape)}")
    if values.dim() == 0:
        raise RuntimeError("values must be a tensor with at least one dimension (nnz x dense dims)")
    k, nnz = indices._shape
    if values._shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {values._shape[0]}")
    size = tuple(size)
    dd = values.dim() - 1
    if len(size) != k + dd:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {k}, dense_dim = {dd}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    if tuple(values._shape[1:]) != size[k:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz] + list(size[k:])}, got "
                           f"{list(values._shape)}")
    if indices._device != values._device:
        raise RuntimeError(f"device of indices ({indices._device}) must match device of values ({values._device})")
    return _key(values)


def _coo_kernel(indices, values, size, is_coalesced=False):
    # the tensor keeps plain data; its own autograd identity is the op's output
    if values._requires_grad or values._grad_fn is not None:
        values = values.detach()
    if indices._requires_grad:
        indices = indices.detach()
    return make_sparse(indices, values, size, is_coalesced)


def _coo_setup(ctx, inputs, output):
    ctx.indices = inputs[0]


def _coo_backward(ctx, grad):
    return None, gather_at(grad, ctx.indices), None, None


def _values_meta(self):
    _check_sparse(self, "values", "self")
    return _key(self)


def _values_kernel(self):
    return self._sp_values.detach()


def _values_setup(ctx, inputs, output):
    s = inputs[0]
    ctx.indices, ctx.shape, ctx.coalesced = s._sp_indices, s._shape, s._sp_coalesced


def _values_backward(ctx, grad):
    return (_coo(ctx.indices, grad, ctx.shape, ctx.coalesced),)


def _to_dense_meta(self):
    _check_sparse(self, "to_dense")
    return _key(self)


def _to_dense_kernel(self):
    sizes = sparse_sizes(self)
    idx, val = self._sp_indices, self._sp_values
    dense = tuple(val._shape[1:])
    out = ember.zeros((math.prod(sizes),) + dense, dtype=self._dtype, device=self._device)
    if idx._shape[1]:
        check_bounds(idx, sizes)
        out.index_add_(0, linear_index(idx, sizes), val)
    return out.view(self._shape)


def _mask_setup(ctx, inputs, output):
    s = inputs[0]
    ctx.indices, ctx.shape, ctx.coalesced = s._sp_indices, s._shape, s._sp_coalesced


def _to_dense_backward(ctx, grad):
    # the gradient is masked to the input's pattern (torch's masked semantics, sparse_mask)
    return (_coo(ctx.indices, gather_at(grad, ctx.indices), ctx.shape, ctx.coalesced),)


def _to_sparse_meta(self, sparse_dim):
    if not isinstance(self, ember.Tensor):
        raise TypeError(f"to_sparse(): argument 'self' must be Tensor, not {type(self).__name__}")
    if not 0 <= sparse_dim <= self.dim():
        raise RuntimeError(f"sparse_dim must be in [0, {self.dim()}], but got {sparse_dim}")
    return self._device, (self._device.type, "strided", self._dtype)


def _to_sparse_kernel(self, sparse_dim):
    k = sparse_dim
    sizes, dense = tuple(self._shape[:k]), tuple(self._shape[k:])
    n = math.prod(sizes)
    flat = self.reshape((n,) + dense)
    nz = flat != 0
    if dense:
        nz = nz.reshape(n, -1).any(1) if n else nz.reshape(0)
    lin = ember.nonzero(nz).view(-1)
    return make_sparse(unravel(lin, sizes), flat.index_select(0, lin), self._shape, True)


def _to_sparse_backward(ctx, grad):
    return (grad.to_dense() if _is_sp(grad) else grad), None


def _coalesce_meta(self):
    _check_sparse(self, "coalesce")
    return _key(self)


def coalesce_raw(self):
    """Sort the indices row-major and sum duplicates (device-generic: unique + index_add)."""
    sizes = sparse_sizes(self)
    idx, val = self._sp_indices, self._sp_values
    nnz = idx._shape[1]
    check_bounds(idx, sizes)
    if nnz <= 1:
        return make_sparse(idx, val, self._shape, True)
    lin = linear_index(idx, sizes)
    uniq, inv = ember.unique(lin, sorted=True, return_inverse=True)
    new_val = ember.zeros((uniq.numel(),) + tuple(val._shape[1:]), dtype=val._dtype, device=val._device)
    new_val.index_add_(0, inv, val)
    return make_sparse(unravel(uniq, sizes), new_val, self._shape, True)


def _coalesce_backward(ctx, grad):
    # the coalesced result is the same tensor in dense terms: its gradient passes unchanged
    return (grad,)


# ---------------------------------------------------------------- mm
def _mm_meta(self, mat2):
    _check_sparse(self, "mm", "self")
    if not isinstance(mat2, ember.Tensor):
        raise TypeError(f"mm(): argument 'mat2' (position 2) must be Tensor, not {type(mat2).__name__}")
    if _is_sp(mat2):
        raise NotImplementedError("ember.sparse.mm: sparse @ sparse is not supported by ember-sparse (use "
                                  "mat2.to_dense())")
    if self.sparse_dim() != 2 or self.dense_dim() != 0:
        raise RuntimeError(f"mm: sparse matrix must have 2 sparse dims and no dense dims, but got sparse_dim "
                           f"{self.sparse_dim()}, dense_dim {self.dense_dim()}")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self._shape[1] != mat2._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self._shape[0]}x{self._shape[1]} and "
                           f"{mat2._shape[0]}x{mat2._shape[1]})")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{_C_NAMES.get(self._dtype.name, self._dtype.name)} != "
                           f"{_C_NAMES.get(mat2._dtype.name, mat2._dtype.name)}")
    if self._device != mat2._device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{self._device} and {mat2._device}!")
    return _key(self)


def mm_generic(self, mat2):
    """(n, k) sparse @ (k, m) dense: index_add of value-scaled rows of mat2 (any device)."""
    idx, val = self._sp_indices, self._sp_values
    n, m = self._shape[0], mat2._shape[1]
    out = ember.zeros((n, m), dtype=self._dtype, device=self._device)
    if idx._shape[1]:
        check_bounds(idx, self._shape)
        contrib = mat2.index_select(0, idx[1]) * val.unsqueeze(1)
        out.index_add_(0, idx[0], contrib)
    return out


def _mm_setup(ctx, inputs, output):
    ctx.s, ctx.mat2 = inputs


def _mm_backward(ctx, grad):
    s, mat2 = ctx.s, ctx.mat2
    gs = gm = None
    if ctx.needs_input_grad[0]:
        idx = s._sp_indices
        v = (grad.index_select(0, idx[0]) * mat2.index_select(0, idx[1])).sum(1)
        gs = _coo(idx, v, s._shape, s._sp_coalesced)
    if ctx.needs_input_grad[1]:
        gm = _sp().mm(s.detach().t(), grad)
    return gs, gm


# ---------------------------------------------------------------- sum
def _sum_dims(self, dim):
    n = self.dim()
    if dim is None:
        return tuple(range(n))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return tuple(range(n))
    out = []
    for d in dims:
        w = _wrap_dim(d, n)
        if w in out:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        out.append(w)
    return tuple(sorted(out))


def _sum_meta(self, dim=None, keepdim=False, dtype=None):
    _check_sparse(self, "sparse.sum")
    _sum_dims(self, dim)
    if keepdim:
        raise RuntimeError("sum(): keepdim=True is not supported for sparse tensors")
    return _key(self)


def _sum_kernel(self, dim=None, keepdim=False, dtype=None):
    dims = _sum_dims(self, dim)
    k = self.sparse_dim()
    val = self._sp_values
    if dtype is not None:
        val = val.to(dtype)
    sdims = [d for d in dims if d < k]
    ddims = [d - k + 1 for d in dims if d >= k]
    if ddims:
        val = val.sum(ddims) if val._dtype is not ember.bool else val.to(I64).sum(ddims)
    elif val._dtype is ember.bool or (not val._dtype.is_floating_point and not val._dtype.is_complex
                                      and val._dtype is not I64):
        val = val.to(I64)     # integer sums accumulate in int64 (as torch.sum)
    if len(sdims) == k:      # every sparse dim reduced: dense result
        return val.sum(0)
    keep = [d for d in range(k) if d not in sdims]
    shape = tuple(s for i, s in enumerate(self._shape) if i not in dims)
    if not sdims:
        return make_sparse(self._sp_indices, val, shape, self._sp_coalesced)
    idx = self._sp_indices.index_select(0, ember.tensor(keep, dtype=I64, device=self._device))
    return coalesce_raw(make_sparse(idx, val, shape, False))


def _sum_setup(ctx, inputs, output):
    s = inputs[0]
    ctx.s, ctx.dims = s, _sum_dims(s, inputs[1])


def _sum_backward(ctx, grad):
    s, dims = ctx.s, ctx.dims
    k = s.sparse_dim()
    idx = s._sp_indices
    nnz = idx._shape[1]
    sdims = [d for d in dims if d < k]
    keep = [d for d in range(k) if d not in sdims]
    if not keep:                                  # grad is dense over the remaining dense dims
        gv = grad.unsqueeze(0)
    elif not sdims:
        gv = gather_at(grad, idx)
    else:
        gv = gather_at(grad, idx.index_select(0, ember.tensor(keep, dtype=I64, device=s._device)))
    for d in dims:                                # re-insert the reduced dense dims
        if d >= k:
            gv = gv.unsqueeze(d - k + 1)
    gv = gv.expand((nnz,) + tuple(s._shape[k:])).to(s._dtype)
    return _coo(idx, gv.contiguous(), s._shape, s._sp_coalesced), None, None, None


# ---------------------------------------------------------------- softmax / log_softmax
def _softmax_meta(self, dim):
    _check_sparse(self, "softmax")
    _wrap_dim(dim, self.dim())
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise RuntimeError(f"softmax: expected a floating point sparse tensor, got {self._dtype.name}")
    return _key(self)


def _groups(c, d):
    """(group id per entry, number of groups) of coalesced ``c``: entries sharing every sparse index
    but dim ``d``."""
    k = c.sparse_dim()
    idx = c._sp_indices
    other = [i for i in range(k) if i != d]
    sizes = sparse_sizes(c)
    if not other:
        return ember.zeros(idx._shape[1], dtype=I64, device=c._device), 1
    sel = idx.index_select(0, ember.tensor(other, dtype=I64, device=c._device))
    key = linear_index(sel, [sizes[i] for i in other])
    uniq, inv = ember.unique(key, sorted=True, return_inverse=True)
    return inv, uniq.numel()


def _group_sum(x, inv, g):
    return ember.zeros((g,) + tuple(x._shape[1:]), dtype=x._dtype, device=x._device).index_add_(0, inv, x)


def _expand_inv(inv, like):
    return inv.view((-1,) + (1,) * (like.dim() - 1)).expand(like._shape)


def _softmax_impl(self, dim, log):
    d = _wrap_dim(dim, self.dim())
    c = self if self._sp_coalesced else coalesce_raw(self)
    k = c.sparse_dim()
    v = c._sp_values
    if d >= k:
        out = v.log_softmax(d - k + 1) if log else v.softmax(d - k + 1)
        return make_sparse(c._sp_indices, out, c._shape, True), None, None
    inv, g = _groups(c, d)
    if v._shape[0] == 0:
        return make_sparse(c._sp_indices, v.clone(), c._shape, True), inv, g
    mx = ember.full((g,) + tuple(v._shape[1:]), -math.inf, dtype=v._dtype, device=v._device)
    mx = mx.scatter_reduce(0, _expand_inv(inv, v), v, "amax")
    shifted = v - mx.index_select(0, inv)
    e = shifted.exp()
    s = _group_sum(e, inv, g)
    out = shifted - s.log().index_select(0, inv) if log else e / s.index_select(0, inv)
    return make_sparse(c._sp_indices, out, c._shape, True), inv, g


def _softmax_kernel(self, dim):
    return _softmax_impl(self, dim, False)[0]


def _log_softmax_kernel(self, dim):
    return _softmax_impl(self, dim, True)[0]


def _softmax_setup(ctx, inputs, output):
    s, dim = inputs
    ctx.dim = _wrap_dim(dim, s.dim())
    ctx.out = output
    ctx.in_coalesced = s._sp_coalesced


def _softmax_backward_impl(ctx, grad, log):
    y = ctx.out
    k = y.sparse_dim()
    yv = y._sp_values
    gv = gather_at(grad, y._sp_indices)
    if ctx.dim >= k:
        dd = ctx.dim - k + 1
        if log:
            gx = gv - yv.exp() * gv.sum(dd, keepdim=True)
        else:
            gx = yv * (gv - (gv * yv).sum(dd, keepdim=True))
    else:
        inv, g = _groups(y, ctx.dim)
        if log:
            gx = gv - yv.exp() * _group_sum(gv, inv, g).index_select(0, inv)
        else:
            gx = yv * (gv - _group_sum(gv * yv, inv, g).index_select(0, inv))
    return _coo(y._sp_indices, gx, y._shape, True), None


def _softmax_backward(ctx, grad):
    return _softmax_backward_impl(ctx, grad, False)


def _log_softmax_backward(ctx, grad):
    return _softmax_backward_impl(ctx, grad, True)

