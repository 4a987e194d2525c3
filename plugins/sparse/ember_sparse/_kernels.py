"""The sparse COO kernels: ``sparse::`` ops and kernels of core ops at (ANY, sparse_coo, ANY).

Everything here is written with dense ember ops on the indices (int64) and values, so it runs
on every device whose dense kernels exist. Two kinds of functions:

- the kernels of the ``sparse::`` ops (coo_tensor, values, to_dense, to_sparse, coalesce, mm,
  sum, softmax, log_softmax): they run below autograd and each op has its own derivative
  (``register_autograd``), which gives sparse gradients with the input's pattern (PyTorch's
  masked semantics);
- the kernels of core ops at sparse_coo keys (add, mul, neg, index_select, cat, ...): the
  dispatcher runs them free-form *with autograd on* (see ``_dispatch._layout_call``), so they are
  differentiable through the ``sparse::`` ops and dense ops they are built from.
"""
from __future__ import annotations

import math

import ember
from ember.library import ANY, register_autograd

from ._tensor import SparseCOOTensor, make_sparse

I64 = ember.int64
LAYOUT = "sparse_coo"

#: ops with a kernel at sparse_coo keys, and the sparse:: ops (the manifest's ``provides.ops``)
OPS_PROVIDED = ("add", "sub", "mul", "true_divide", "pow", "sum", "mm", "matmul", "index_select", "cat", "neg",
                "abs", "sqrt", "sin", "tanh", "sign", "floor", "expm1", "sparse::coo_tensor", "sparse::values",
                "sparse::to_dense", "sparse::to_sparse", "sparse::coalesce", "sparse::mm", "sparse::sum",
                "sparse::softmax", "sparse::log_softmax")

_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _wrap_dim(dim, ndim):
    """``dim`` in [-ndim, ndim) made non-negative; IndexError in PyTorch's words otherwise."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _sp():
    return ember.ops.sparse


def _is_sp(x):
    return isinstance(x, SparseCOOTensor)


def _key(t):
    return t._device, (t._device.type, LAYOUT, t._dtype)


# ================================================================ index helpers (int64, no autograd)
def sparse_sizes(s):
    return s._shape[:s._sp_indices._shape[0]]


def linear_index(indices, sizes):
    """Row-major linear index (nnz,) of the sparse ``indices`` (k, nnz) into ``sizes`` (k ints)."""
    k, nnz = indices._shape
    if k == 0:
        return ember.zeros(nnz, dtype=I64, device=indices.device)
    lin = indices[0]
    for d in range(1, k):
        lin = lin * sizes[d] + indices[d]
    return lin


def unravel(lin, sizes):
    """Inverse of ``linear_index``: (k, nnz) int64 indices of the linear indices ``lin``."""
    k = len(sizes)
    if k == 0:
        return ember.zeros((0, lin.numel()), dtype=I64, device=lin.device)
    if k == 1:
        return lin.unsqueeze(0)
    rows = []
    r = lin
    for d in range(k - 1, 0, -1):
        rows.append(ember.remainder(r, sizes[d]))
        r = ember.floor_divide(r, sizes[d])
    rows.append(r)
    return ember.stack(rows[::-1])


def check_bounds(indices, sizes):
    """PyTorch's RuntimeError for a negative or out-of-bounds index (one reduction per row)."""
    k, nnz = indices._shape
    if not nnz or not k:
        return
    lo = indices.amin(1).tolist()
    hi = indices.amax(1).tolist()
    for d in range(k):
        if lo[d] < 0:
            raise RuntimeError(f"found negative index {lo[d]} for dim {d}")
        if hi[d] >= sizes[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {sizes[d]} but found "
                               f"index {hi[d]}")


def gather_at(g, indices):
    """The entries of ``g`` (dense, or sparse with the same sparse dims) at the sparse ``indices``
    (k, nnz): a dense (nnz,) + dense-dims tensor (zeros where a sparse ``g`` has no entry).
    Built from differentiable ops (double backward works)."""
    k, nnz = indices._shape
    sizes = tuple(g._shape[:k])
    dense = tuple(g._shape[k:])
    if _is_sp(g):
        if g._sp_indices is indices:
            return _sp().values(g)
        if g.sparse_dim() != k:
            g = g.to_dense()
        else:
            gc = g.coalesce()
            gl = linear_index(gc._sp_indices, sizes)
            gv = _sp().values(gc)
            if gl.numel() == 0 or nnz == 0:
                return ember.zeros((nnz,) + dense, dtype=g._dtype, device=g._device)
            il = linear_index(indices, sizes)
            pos = ember.searchsorted(gl, il).clamp(max=gl.numel() - 1)
            hit = (gl.index_select(0, pos) == il).to(g._dtype)
            return gv.index_select(0, pos) * hit.view((nnz,) + (1,) * len(dense))
    flat = g.reshape((math.prod(sizes),) + dense)
    return flat.index_select(0, linear_index(indices, sizes))


def _coo(indices, values, shape, coalesced=False):
    """A sparse tensor through the differentiable ``sparse::coo_tensor`` op (no checks)."""
    return _sp().coo_tensor(indices, values, list(shape), coalesced)


def _vals(s):
    """``s``'s values through the differentiable ``sparse::values`` op (no coalesced check)."""
    return _sp().values(s)


def _check_sparse(x, op, what="self"):
    if not _is_sp(x):
        layout = getattr(getattr(x, "_layout", None), "name", type(x).__name__)
        raise RuntimeError(f"{op} expected sparse coordinate tensor layout but got "
                           f"{'Strided' if layout == 'strided' else layout}")


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


# ================================================================ registration
def register_all(registry, layout):
    """Define the sparse:: ops and register every kernel (called from ``ember_register``)."""
    from ._tensor import SparseCOOTensor
    SparseCOOTensor._layout = layout
    lib = registry.library("sparse")
    lay = LAYOUT

    def define(schema, meta, kernel, backward=None, setup=None, key_layout=lay, doc=None):
        q = lib.define(schema, meta, structured=False, doc=doc)
        lib.impl(q, kernel, device=ANY, layout=key_layout, dtypes=ANY)
        if backward is not None:
            register_autograd(q, backward, setup_context=setup, lib=lib)
        return q

    define("coo_tensor(Tensor indices, Tensor values, int[] size, bool is_coalesced=False) -> Tensor",
           _coo_meta, _coo_kernel, _coo_backward, _coo_setup,
           doc="A sparse COO tensor over int64 ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense) "
               "(no bounds check; ember.sparse_coo_tensor is the checked public form).")
    define("values(Tensor self) -> Tensor", _values_meta, _values_kernel, _values_backward, _values_setup,
           doc="The values of a sparse tensor, differentiable (sparse gradient with the input's pattern).")
    define("to_dense(Tensor self) -> Tensor", _to_dense_meta, _to_dense_kernel, _to_dense_backward, _mask_setup,
           doc="Strided copy of a sparse tensor (duplicates summed); masked gradient.")
    define("to_sparse(Tensor self, int sparse_dim) -> Tensor", _to_sparse_meta, _to_sparse_kernel,
           _to_sparse_backward, None, key_layout="strided",
           doc="A coalesced sparse COO tensor of the nonzeros of a strided tensor.")
    define("coalesce(Tensor self) -> Tensor", _coalesce_meta, coalesce_raw, _coalesce_backward, None,
           doc="Indices sorted row-major, duplicates summed.")
    define("mm(Tensor self, Tensor mat2) -> Tensor", _mm_meta, mm_generic, _mm_backward, _mm_setup,
           doc="sparse (n, k) @ dense (k, m) -> dense (n, m); the gradient of self is sparse with its pattern.")
    define("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_meta, _sum_kernel, _sum_backward, _sum_setup,
           doc="Sum over dims: dense when every sparse dim is reduced, else sparse.")
    define("softmax(Tensor self, int dim) -> Tensor", _softmax_meta, _softmax_kernel, _softmax_backward,
           _softmax_setup, doc="Softmax over the specified entries (unspecified ones count as -inf).")
    define("log_softmax(Tensor self, int dim) -> Tensor", _softmax_meta, _log_softmax_kernel,
           _log_softmax_backward, _softmax_setup, doc="log of sparse softmax.")

    core = {"add": add, "sub": sub, "mul": mul, "true_divide": true_divide, "pow": pow, "sum": sum_,
            "mm": mm, "matmul": matmul, "index_select": index_select, "cat": cat}
    for name, linear in ZERO_PRESERVING_UNARY.items():
        if callable(getattr(ember, name, None)):
            core[name] = _make_unary(name, linear)
    for name, fn in core.items():
        try:
            lib.impl(name, fn, device=ANY, layout=lay, dtypes=ANY)
        except ValueError:      # not a dispatcher op in this ember version (a Python-level function)
            continue

    from . import _scipy
    _scipy.register(lib, lay)
