"""Helpers the derivative formulas call, written with ember ops (so they run on every
device and are differentiable again, for double backward)."""
from __future__ import annotations

import builtins
import math

from .._tensor import Tensor
from .function import Function

__all__ = ["sum_to", "unsqueeze_dims", "reduce_grad", "evenly_distribute", "value_selecting", "ViewScatter",
           "AsStridedScatter", "matmul_grad", "masked_grad", "as_tensor_like", "norm_grad", "cumprod_grad",
           "var_grad", "logsumexp_grad", "einsum_grad", "index_put_values_grad", "scatter_reduce_grad",
           "prod_grad", "dims_of", "sort_grad", "select_grad_along", "nan_to_num_grad",
           "fft_c2c_grad", "fft_r2c_grad", "fft_c2r_grad"]


def sum_to(g, shape):
    """Sum ``g`` over the dims that were broadcast from ``shape`` (matches at::sum_to)."""
    shape = tuple(shape)
    if g._shape == shape:
        return g
    lead = len(g._shape) - len(shape)
    if lead < 0:
        raise RuntimeError(f"gradient of shape {list(g._shape)} cannot be summed to shape {list(shape)}")
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and g._shape[lead + i] != 1:
            dims.append(lead + i)
        elif s != g._shape[lead + i]:
            raise RuntimeError(f"gradient of shape {list(g._shape)} cannot be summed to shape {list(shape)}")
    r = g.sum(dims, keepdim=True) if dims else g
    return r.reshape(shape)


def dims_of(dim, ndim):
    """``dim`` (None, int, or list) as sorted non-negative dims of an ``ndim``-dim tensor."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    n = builtins.max(ndim, 1)
    return sorted(d % n for d in dim)


def unsqueeze_dims(g, dims, ndim):
    """``g`` (reduced over ``dims`` without keepdim) with those dims put back as size 1."""
    for d in dims:
        if ndim and len(g._shape) < ndim:
            g = g.unsqueeze(d)
    return g


def reduce_grad(grad, shape, dim, keepdim):
    """The gradient of a sum over ``dim``: ``grad`` broadcast back to ``shape``."""
    dims = dims_of(dim, len(shape))
    if not keepdim:
        grad = unsqueeze_dims(grad, dims, len(shape))
    return grad.expand(shape)


def as_tensor_like(value, like):
    """``value`` (a number or tensor) as a tensor on ``like``'s device and dtype."""
    from .._ops._creation import tensor
    if isinstance(value, Tensor):
        return value
    return tensor(value, dtype=like._dtype, device=like._device)


def masked_grad(grad, mask):
    """``grad`` where ``mask`` is true, else 0."""
    return grad * mask.to(grad._dtype)


def evenly_distribute(grad, self, result, dim=None, keepdim=False, nan_aware=False):
    """Gradient of max/min/amax/amin/median (no indices): shared evenly among the tied elements.

    ``nan_aware`` (max() / min() / median(), PyTorch's evenly_distribute_backward): a NaN result
    came from the NaN elements; without it (amax, aminmax: scale_grad_by_count) such slices get NaN.
    """
    dims = dims_of(dim, self.dim())
    r, g = result, grad
    if not keepdim and self.dim():
        r, g = unsqueeze_dims(r, dims, self.dim()), unsqueeze_dims(g, dims, self.dim())
    mask = self == r
    if nan_aware:
        mask = mask.logical_or(self.isnan().logical_and(r.isnan()))
    mask = mask.to(grad._dtype)
    count = mask.sum(dims, keepdim=True) if self.dim() else mask
    return mask * (g / count)


def value_selecting(grad, dim, indices, shape, keepdim):
    """Gradient of an op that picks ``indices`` along ``dim`` (max(dim), sort, topk, ...)."""
    from .._ops._creation import zeros
    ndim = len(shape)
    if ndim == 0:
        return grad.reshape(())
    d = dim % ndim
    if not keepdim and len(indices._shape) < ndim:
        grad, indices = grad.unsqueeze(d), indices.unsqueeze(d)
    z = zeros(shape, dtype=grad._dtype, device=grad._device)
    return z.scatter(d, indices, grad)


def sort_grad(grad, dim, indices, shape):
    """Gradient of sort / topk / cummax: scatter-add the gradient back to where values came from."""
    from .._ops._creation import zeros
    ndim = len(shape)
    if ndim == 0:
        return grad.reshape(())
    z = zeros(shape, dtype=grad._dtype, device=grad._device)
    return z.scatter_add(dim % ndim, indices, grad)



def select_grad_along(grad, dim, index, shape):
    """Gradient of index_select: index_add of ``grad`` into zeros of ``shape``."""
    from .._ops._creation import zeros
    z = zeros(shape, dtype=grad._dtype, device=grad._device)
    if not shape:
        return grad.sum().reshape(())
    return z.index_add(dim % len(shape), index, grad)


def matmul_grad(grad, self, other, which):
    """Gradient of matmul (with 1-D and batch-broadcast operands) for ``which`` = 'self' | 'other'
    (``grad @ other.mH`` / ``self.mH @ grad``: conjugated for complex operands, as PyTorch)."""
    a, b, g = self, other, grad
    a1, b1 = a.dim() == 1, b.dim() == 1
    if a1 and b1:                       # a dot product: the gradient is 0-dim
        return g * (b if which == "self" else a).conj()
    if a1:
        a = a.unsqueeze(0)
        g = g.unsqueeze(-2)
    if b1:
        b = b.unsqueeze(-1)
        g = g.unsqueeze(-1)
    if which == "self":
        r = g.matmul(b.mH)
        r = sum_to(r, a._shape)
        return r.squeeze(0) if a1 else r
    r = a.mH.matmul(g)
    r = sum_to(r, b._shape)
    return r.squeeze(-1) if b1 else r


def norm_grad(grad, self, p, result, dim, keepdim):
    """Gradient of the vector p-norm over ``dim``, branch by branch as PyTorch's norm_backward
    (0 where the norm is 0 for p >= 1, 0 at x = 0 for p < 2, ties of the inf-norms shared evenly)."""
    from .._ops._creation import zeros_like
    p = 2.0 if p is None else builtins.float(p)
    nd = self.dim()
    dims = dims_of(dim, nd)
    if not keepdim and nd:
        grad, result = unsqueeze_dims(grad, dims, nd), unsqueeze_dims(result, dims, nd)
    if p == 0:
        return zeros_like(self)
    if p == 1:
        return self.sgn() * grad
    if p == 2:
        safe = result.masked_fill(result == 0, 1)
        return self * (grad / safe) * (result != 0).to(grad._dtype)
    if math.isinf(p):
        a = self.abs()
        mask = (a == result).logical_or(a.isnan()).to(grad._dtype)
        count = mask.sum(dims, keepdim=True)
        return self.sgn() * mask * grad / count
    if p < 1:
        scaled = self.sgn() * self.abs().pow(p - 1).masked_fill(self == 0, 0)
        return scaled * grad * result.pow(1 - p)
    scaled = self.sgn() * self.abs().pow(p - 1) if p < 2 else self * self.abs().pow(p - 2)
    safe = result.masked_fill(result == 0, 1)
    return scaled * (grad / safe.pow(p - 1)) * (result != 0).to(grad._dtype)


def var_grad(grad, self, dim, correction, keepdim):
    """Gradient of var: 2 (x - mean) / (N - correction) * grad."""
    nd = self.dim()
    dims = dims_of(dim, nd)
    n = math.prod(self._shape[d] for d in dims) if nd else 1
    c = 1 if correction is None else correction
    if not keepdim and nd:
        grad = unsqueeze_dims(grad, dims, nd)
    mean = self.mean(dims, keepdim=True) if nd else self
    dof = n - c
    if dof <= 0 and (dim is None or nd == 0):
        # PyTorch's var_backward: 2 / dof is inf; NaN where x == mean (inf * 0), inf elsewhere
        from .._ops._elementwise import where
        return grad * where(self == mean, math.nan, math.inf)
    return (2.0 / dof if dof else math.inf) * grad * (self - mean)


def logsumexp_grad(grad, self, result, dim, keepdim):
    """Gradient of logsumexp: grad * exp(x - result)."""
    nd = self.dim()
    dims = dims_of(dim, nd)
    if not keepdim and nd:
        grad, result = unsqueeze_dims(grad, dims, nd), unsqueeze_dims(result, dims, nd)
    return grad * (self - result).exp()


def prod_grad(grad, self, result, dim, keepdim):
    """Gradient of prod (all or over one dim), exact when inputs contain zeros."""
    nd = self.dim()
    if dim is None:
        flat = self.reshape(-1)
        return _prod_grad_1d(grad.reshape(()), flat, 0).reshape(self._shape)
    d = dim % builtins.max(nd, 1)
    if nd == 0:
        return grad.clone()
    if not keepdim:
        grad = grad.unsqueeze(d)
    return _prod_grad_1d(grad, self, d)


def _prod_grad_1d(grad, x, d):
    """d/dx_k prod_j x_j = prod_{j != k} x_j, via exclusive cumulative products from both ends."""
    from .._ops._creation import ones
    n = x._shape[d] if x.dim() else 1
    if n == 0:
        return x * 0
    shape1 = list(x._shape)
    shape1[d] = 1
    one = ones(shape1, dtype=x._dtype, device=x._device)
    left = x.narrow(d, 0, n - 1).cumprod(d) if n > 1 else None
    left = one if left is None else __import__("ember").cat([one, left], d)
    rev = x.flip([d])
    right = rev.narrow(d, 0, n - 1).cumprod(d) if n > 1 else None
    right = one if right is None else __import__("ember").cat([one, right], d)
    return grad * (left * right.flip([d])).conj()     # conjugated for complex values (PyTorch's convention)


def cumprod_grad(grad, self, dim):
    """Gradient of cumprod along ``dim``, exact with zeros (sum over j >= k of grad_j * conj(prod_{i<=j, i!=k} x_i);
    the conj is PyTorch's convention for complex values, the identity for real ones)."""
    import ember
    nd = self.dim()
    if nd == 0:
        return grad.clone()
    d = dim % nd
    n = self._shape[d]
    parts = []
    for k in range(n):
        # x with x_k replaced by 1; cumprod of it from k on gives prod_{i<=j, i!=k} x_i for j >= k
        pieces = [self.narrow(d, 0, k), ember.ones_like(self.narrow(d, k, 1)), self.narrow(d, k + 1, n - k - 1)]
        xk = ember.cat([p for p in pieces], d)
        cp = xk.cumprod(d).narrow(d, k, n - k).conj()
        parts.append((grad.narrow(d, k, n - k) * cp).sum(d, keepdim=True))
    return ember.cat(parts, d)


def nan_to_num_grad(grad, self):
    """Gradient of nan_to_num: passes where the input was finite, 0 elsewhere."""
    return grad * self.isfinite().to(grad._dtype)


def einsum_grad(grad, equation, tensors, i):
    """Gradient of einsum for operand ``i``: one einsum of the output gradient with the other operands.

    ``...`` becomes explicit labels; a label repeated in operand ``i`` (a diagonal, as in
    ``'ii->i'``) gets a fresh label tied to it by an identity matrix; a label summed by
    operand ``i`` alone is broadcast back; size-1 dims that broadcast are summed by the node.
    """
    import string
    import ember
    from .._ops._linalg import _parse_einsum
    subs, out, _, ell = _parse_einsum(equation, [t._shape for t in tensors])
    used = set("".join(l for s in subs for l in s))
    spare = iter(c for c in string.ascii_letters if c not in used)
    ell_labels = [next(spare) for _ in ell]

    def explicit(labels, ndim):
        k = ndim - (len(labels) - 1)            # dims the ellipsis covers in this operand
        return [x for l in labels for x in ((ell_labels[len(ell_labels) - k:] if k else []) if l == "." else [l])]

    subs = [explicit(s, t.dim()) if "." in s else list(s) for s, t in zip(subs, tensors)]
    out = [x for l in out for x in (ell_labels if l == "." else [l])]
    mine, shape = subs[i], tensors[i]._shape
    operands = [grad] + [t for j, t in enumerate(tensors) if j != i]
    in_subs = ["".join(out)] + ["".join(s) for j, s in enumerate(subs) if j != i]
    keep, seen = [], set()
    for pos, c in enumerate(mine):
        if c in seen:
            d = next(spare)
            operands.append(ember.eye(shape[pos], dtype=grad._dtype, device=grad._device))
            in_subs.append(c + d)
            c = d
        seen.add(c)
        keep.append(c)
    present = set("".join(in_subs))
    g = ember.einsum(",".join(in_subs) + "->" + "".join(c for c in keep if c in present), *operands)
    if len(g._shape) != len(shape):
        for pos, c in enumerate(keep):
            if c not in present:
                g = g.unsqueeze(pos)
        g = g.expand([shape[p] if c not in present else -1 for p, c in enumerate(keep)])
    return g


def index_put_values_grad(grad, indices, values_shape):
    """Gradient of index_put w.r.t. ``values``: the gradient read at the indices, summed to values' shape."""
    return sum_to(_index(grad, indices), values_shape)


def _index(t, indices):
    from .._ops._indexing import _index as index_op
    return index_op(t, indices)


def scatter_reduce_grad(grad, self, index, src, result, dim, reduce, include_self, which):
    """Gradient of scatter_reduce for 'sum', 'mean', 'amax', 'amin' (w.r.t. self or src), as PyTorch's
    scatter_reduce_backward; with ``include_self=False`` the written positions of self get no gradient."""
    import ember
    d = dim
    if reduce == "sum":
        g_self, g_src = grad, grad.gather(d, index) if which == "src" else None
    elif reduce == "mean":
        count = ember.ones_like(grad) if include_self else ember.zeros_like(grad)
        count = count.scatter_add(d, index, ember.ones_like(src))
        g = grad / count.masked_fill(count == 0, 1)
        g_self, g_src = g, g.gather(d, index) if which == "src" else None
    elif reduce in ("amax", "amin"):
        self_hit = (self == result).to(grad._dtype)
        if not include_self:
            self_hit = self_hit.scatter(d, index, 0)
        src_hit = (src == result.gather(d, index)).to(grad._dtype)
        count = self_hit.scatter_add(d, index, src_hit)
        g = grad / count.masked_fill(count == 0, 1)
        g_self, g_src = g * self_hit, g.gather(d, index) * src_hit if which == "src" else None
    else:
        raise NotImplementedError(f"the derivative for 'scatter_reduce' with reduce='{reduce}' is not implemented.")
    if which == "src":
        return g_src
    return g_self if include_self else g_self.scatter(d, index, 0)


# ---------------------------------------------------------------- view backward as differentiable functions
def _overlapping(t):
    from ._record import _overlaps
    return _overlaps(t._shape, t._stride)


class ViewScatter(Function):
    """grad of a view op: zeros of the input's shape with the gradient written where the view
    (replayed on the zeros) selects; its own backward is the view op again."""

    @staticmethod
    def forward(ctx, g, in_meta, replay):
        """Zeros of the input's shape with ``g`` written (or index_add-ed, for overlapping views) where the replayed
        view selects.
        """
        from .._ops._creation import zeros, arange
        shape, dtype, device = in_meta
        ctx.replay = replay
        z = zeros(shape, dtype=g._dtype, device=device)
        v = replay(z)
        if v._storage is z._storage and not _overlapping(v):
            v.copy_(g)
            return z
        idx = replay(arange(math.prod(shape), device=device).reshape(shape))
        flat = z.reshape(-1)
        flat.index_add_(0, idx.reshape(-1), g.reshape(-1))
        return z

    @staticmethod
    def backward(ctx, gg):
        """The view op replayed on ``gg`` (no gradient for the metadata arguments)."""
        return ctx.replay(gg), None, None


class AsStridedScatter(Function):
    """grad of a view known by storage geometry: the gradient scattered into a zero tensor laid out
    like the base; its own backward reads the geometry again."""

    @staticmethod
    def forward(ctx, g, base_meta, geometry):
        """Zeros laid out like the base with ``g`` scattered into the view's geometry (shape, stride, offset)."""
        from ._record import _scatter_into
        shape, stride, dtype, device = base_meta
        ctx.meta = (base_meta, geometry)
        real_view = dtype.is_complex and not g._dtype.is_complex and g._dtype.itemsize * 2 == dtype.itemsize
        ctx.real_view = g._dtype if real_view else None
        from .._ops._creation import empty_strided
        vshape, vstride, voff = geometry
        if real_view:                                       # a real / imag view of a complex base
            from ._record import _real_target
            z = empty_strided(shape, stride, dtype=dtype, device=device).zero_()
            _scatter_into(_real_target(z, g._dtype), vshape, vstride, voff, g)
            return z
        z = empty_strided(shape, stride, dtype=g._dtype, device=device).zero_()
        return _scatter_into(z, vshape, vstride, voff, g)

    @staticmethod
    def backward(ctx, gg):
        """``gg`` copied into the base's layout and read back through the view's geometry."""
        from .._ops._creation import empty_strided
        (shape, stride, dtype, device), (vshape, vstride, voff) = ctx.meta
        t = empty_strided(shape, stride, dtype=gg._dtype, device=device)
        t.copy_(gg)
        if ctx.real_view:
            from ._record import _real_target
            t = _real_target(t, ctx.real_view)
        return t.as_strided(vshape, vstride, t._offset + voff), None, None


# ---------------------------------------------------------------- fft primitives
# The adjoints of the three DFT primitives (the math of PyTorch's FunctionsManual.cpp,
# fft_r2c_backward / fft_c2r_backward). A DFT's adjoint is the DFT of the other direction
# with the same scale; the real transforms add the Hermitian halving / doubling.

def _last_dim_weights(n_full, m, device, dtype):
    """Weights along a onesided last dim of m = n_full // 2 + 1 entries: 1 for the zero frequency (and
    the Nyquist one when n_full is even), ``w`` = 0.5 for the others (each stands for two entries)."""
    from .._ops._creation import tensor
    w = [1.0] + [0.5] * (m - 1)
    if n_full % 2 == 0 and m > 1:
        w[-1] = 1.0
    return tensor(w, dtype=dtype, device=device)


def _along(w, d, nd):
    return w.reshape([w.shape[0] if i == d else 1 for i in range(nd)])


def fft_c2c_grad(grad, dim, normalization, forward):
    """Gradient of fft_c2c: the DFT of the opposite direction, same normalization."""
    from .._ops._fft import fft_c2c
    return fft_c2c(grad, dim, normalization, not forward)


def fft_r2c_grad(grad, self_shape, dim, normalization, onesided):
    """Gradient of fft_r2c for its real input: Re(sum_k g_k exp(+2 pi i jk / n)) over the kept frequencies.
    Onesided: halve the entries that stand for a conjugate pair too, then the real inverse (fft_c2r)
    computes exactly that sum; full spectrum: the real part of the inverse c2c."""
    from .._ops._fft import fft_c2c, fft_c2r
    last = dim[-1] % len(self_shape)
    n = self_shape[last]
    if onesided:
        w = _last_dim_weights(n, grad._shape[last], grad._device, grad._dtype.to_real)
        return fft_c2r(grad * _along(w, last, grad.dim()), dim, normalization, n)
    return fft_c2c(grad, dim, normalization, False).to(grad._dtype.to_real)


def fft_c2r_grad(grad, self_shape, dim, normalization):
    """Gradient of fft_c2r for its complex (Hermitian half) input: the onesided forward DFT of the real grad
    with the entries that stand for a conjugate pair doubled (PyTorch's fft_c2r_backward), padded /
    trimmed to the input's size along the last dim (entries past n // 2 + 1 are ignored by c2r)."""
    from .._ops._fft import fft_r2c
    last = dim[-1] % len(self_shape)
    n = grad._shape[last]
    g = fft_r2c(grad, dim, normalization, True)
    w = _last_dim_weights(n, g._shape[last], grad._device, grad._dtype)
    g = g * _along(1.0 / w, last, g.dim())
    m = self_shape[last]
    if m < g._shape[last]:
        g = g.narrow(last, 0, m)
    elif m > g._shape[last]:
        pad = [0] * (2 * (g.dim() - last))
        pad[-1] = m - g._shape[last]
        from ..nn.functional import pad as _pad
        g = _pad(g, tuple(pad))
    return g
