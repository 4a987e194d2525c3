"""Elementwise and shape helpers of the derivative table (written with ember ops)."""
from __future__ import annotations

import builtins
import math
import numbers

from .._tensor import Tensor
from ._helpers import dims_of, reduce_grad, sum_to, unsqueeze_dims

__all__ = ["cj", "sgn_grad", "scale", "count", "atan2_recip", "nanmean_grad", "copysign_grad", "minmax_grad", "fminmax_grad",
           "pow_self_grad", "pow_exponent_grad", "clamp_grad", "clamp_bound_grad", "matrix_norm_grad", "cumsum_grad",
           "cat_grad", "roll_grad", "repeat_grad", "repeat_interleave_grad", "take_grad", "index_select_like",
           "masked_scatter_grad", "masked_select_grad", "scatter_self_grad", "scatter_src_grad",
           "softmax_grad", "log_softmax_grad", "max_pool_double_backward", "pad_grad", "embedding_backward",
           "linear_weight_grad", "linear_bias_grad"]


def _ember():
    import ember
    return ember


def scale(grad, factor):
    """``grad * factor``, skipping the multiply when the factor is 1."""
    if isinstance(factor, numbers.Number) and factor == 1:
        return grad
    return grad * factor


def count(shape, dim):
    """Number of elements reduced when reducing ``shape`` over ``dim``."""
    return math.prod(shape[d] for d in dims_of(dim, len(shape))) if shape else 1


def nanmean_grad(grad, self, dim, keepdim):
    """Gradient of nanmean: the mean's gradient over the non-NaN elements only."""
    keep = self.isnan().logical_not()
    n = keep.sum(dims_of(dim, self.dim()), keepdim=True) if self.dim() else keep.to(grad._dtype)
    g = reduce_grad(grad, self._shape, dim, keepdim)
    return g * keep.to(grad._dtype) / n


def copysign_grad(grad, self, result):
    """d copysign(x, y) / dx = sign(x) * sign(result), 0 at x = 0."""
    ember = _ember()
    nz = self != 0
    ratio = ember.where(nz, result / self.masked_fill(self == 0, 1), ember.zeros_like(result))
    return grad * ratio


def atan2_recip(self, other):
    """1 / (self^2 + other^2) for atan2's gradient, 0 where both are 0 (as PyTorch); no inf is formed,
    so double backward stays finite there too."""
    d = self * self + other * other
    zero = d == 0
    return (1 / d.masked_fill(zero, 1)).masked_fill(zero, 0)


def minmax_grad(grad, x, y, is_max):
    """Gradient of maximum / minimum w.r.t. ``x``: all of it unless x loses, half where x == y
    (as PyTorch: where a NaN is compared, both operands get the whole gradient)."""
    if not isinstance(y, Tensor):
        y = _ember().tensor(y, dtype=x._dtype, device=x._device)
    lose = (x < y) if is_max else (x > y)
    tie = (x == y)
    return grad * (lose.logical_not().to(grad._dtype) - 0.5 * tie.to(grad._dtype))


def fminmax_grad(grad, self, other, is_max, for_other=False):
    """Gradient of fmax / fmin w.r.t. ``self`` (or ``other`` when ``for_other``): self takes it where
    self is chosen (ties and a NaN ``other`` included), other everywhere else (as PyTorch)."""
    if not isinstance(other, Tensor):
        other = _ember().tensor(other, dtype=self._dtype, device=self._device)
    if not isinstance(self, Tensor):
        self = _ember().tensor(self, dtype=other._dtype, device=other._device)
    chosen = ((self >= other) if is_max else (self <= other)).logical_or(other.isnan())
    if for_other:
        chosen = chosen.logical_not()
    return grad * chosen.to(grad._dtype)


def cj(x):
    """The complex conjugate of a tensor or a Python number (a real one is itself): the ``conj`` that
    derivative formulas write where PyTorch's derivatives.yaml does, whatever the operand's type."""
    return x.conj() if isinstance(x, Tensor) else x.conjugate()


def sgn_grad(grad, self, result):
    """Gradient of sgn: 0 for real input (piecewise constant); for complex z with s = z / |z|,
    (grad - s * Re(conj(s) * grad)) / |z|, 0 where z == 0 (PyTorch's sgn_backward)."""
    ember = _ember()
    if not self._dtype.is_complex:
        return ember.zeros_like(grad)
    a = self.abs()
    zero = a == 0
    r = (grad - result * (result.conj() * grad).real) / a.masked_fill(zero, 1)
    return r.masked_fill(zero, 0)


def pow_self_grad(grad, self, exponent):
    """d x**e / dx = e * x**(e - 1), conjugated for complex values (0 where e == 0)."""
    ember = _ember()
    if isinstance(exponent, numbers.Number):
        if exponent == 0:
            return ember.zeros_like(self)
        return grad * cj(exponent * self.pow(exponent - 1))
    r = grad * cj(exponent * self.pow(exponent - 1))
    return ember.where(exponent == 0, ember.zeros_like(r), r)


def pow_exponent_grad(grad, self, exponent, result):
    """d x**e / de = x**e * log(x), conjugated for complex values (0 where x == 0 and e >= 0)."""
    ember = _ember()
    if isinstance(self, builtins.complex):
        import cmath
        return grad * cj(result * cmath.log(self)) if self != 0 else ember.zeros_like(result)
    if isinstance(self, numbers.Number):
        return grad * cj(result) * math.log(self) if self > 0 else grad * result * float("nan") if self < 0 \
            else ember.zeros_like(result)
    r = grad * (result * self.log()).conj()
    e = exponent.real if isinstance(exponent, Tensor) and exponent._dtype.is_complex else exponent
    mask = (self == 0).logical_and(e >= 0) if isinstance(exponent, Tensor) else (self == 0)
    return ember.where(mask, ember.zeros_like(r), r)


def clamp_grad(grad, self, min, max):
    """Gradient of clamp w.r.t. self: passes where min <= x <= max."""
    mask = None
    if min is not None:
        mask = self >= min
    if max is not None:
        m = self <= max
        mask = m if mask is None else mask.logical_and(m)
    # where, not grad * mask: a nan / inf gradient from outside the clamped range must not leak through (PyTorch's
    # clamp_backward masks the same way)
    return _ember().where(mask, grad, _ember().zeros_like(grad))


def clamp_bound_grad(grad, self, min, max, is_min):
    """Gradient of clamp w.r.t. a tensor bound: where that bound is the result."""
    ember = _ember()
    if is_min:
        mask = self < min
        if max is not None:   # equal bounds: the result is max (PyTorch's clamp_backward_min_max)
            mask = mask.logical_and(ember.as_tensor(min < max) if not isinstance(min, Tensor) else min < max)
    else:
        lower = self if min is None else ember.maximum(self, min if isinstance(min, Tensor) else
                                                       ember.full_like(self, min))
        mask = lower > max
    return ember.where(mask, grad, ember.zeros_like(grad))


def matrix_norm_grad(grad, self, ord, result, dim, keepdim):
    """Gradient of linalg.matrix_norm for ord 'fro', 1, -1, inf, -inf (others: NotImplementedError).

    For the 1 / inf norms the gradient is shared evenly among tied extreme columns / rows.
    """
    from ._helpers import norm_grad
    if ord == "fro":
        return norm_grad(grad, self, 2, result, dim, keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        nd = self.dim()
        d0, d1 = (d % nd for d in dim)
        sum_dim, ext_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = self.abs().sum(sum_dim, keepdim=True)
        g, r = grad, result
        if not keepdim:
            for d in sorted((d0, d1)):
                g, r = g.unsqueeze(d), r.unsqueeze(d)
        mask = (sums == r).to(grad._dtype)
        cnt = mask.sum(ext_dim, keepdim=True)
        return self.sgn() * (mask * g / cnt)
    raise NotImplementedError(f"the derivative for 'linalg_matrix_norm' with ord={ord!r} is not implemented.")


def cumsum_grad(grad, dim):
    """Gradient of cumsum: the reversed cumulative sum of the gradient."""
    if grad.dim() == 0:
        return grad
    return grad.flip([dim]).cumsum(dim).flip([dim])


def cat_grad(grad, shapes, dim):
    """Gradient of cat: the slice of ``grad`` each input contributed (None for skipped 1-D empties)."""
    nd = grad.dim()
    d = dim % builtins.max(nd, 1)
    out, start = [], 0
    for s in shapes:
        if s == (0,) and nd != 1:
            out.append(None)
            continue
        out.append(grad.narrow(d, start, s[d]))
        start += s[d]
    return out


def roll_grad(grad, shifts, dims):
    """Gradient of roll: roll back by the negated shifts."""
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    return _ember().roll(grad, [-s for s in shifts], list(dims) if dims else None)


def repeat_grad(grad, self_shape, repeats):
    """Gradient of repeat: sum the tiles back onto the input's shape."""
    repeats = list(repeats)
    lead = len(repeats) - len(self_shape)
    shape = (1,) * lead + tuple(self_shape)
    split = []
    for r, s in zip(repeats, shape):
        split += [r, s]
    g = grad.reshape(split)
    g = g.sum(list(range(0, 2 * len(shape), 2)))
    return g.reshape(self_shape)


def repeat_interleave_grad(grad, self_shape, repeats, dim):
    """Gradient of repeat_interleave: sum each run of repeated elements."""
    ember = _ember()
    if dim is None:
        n = math.prod(self_shape)
        idx = ember.arange(n, device=grad._device).repeat_interleave(repeats)
        z = ember.zeros(n, dtype=grad._dtype, device=grad._device)
        return z.index_add(0, idx, grad.reshape(-1)).reshape(self_shape)
    d = dim % len(self_shape)
    idx = ember.arange(self_shape[d], device=grad._device).repeat_interleave(repeats)
    z = ember.zeros(self_shape, dtype=grad._dtype, device=grad._device)
    return z.index_add(d, idx, grad)


def take_grad(grad, self_shape, index):
    """Gradient of take: accumulate the gradient at the flat indices."""
    ember = _ember()
    n = math.prod(self_shape)
    idx = index.reshape(-1)
    idx = ember.where(idx < 0, idx + n, idx)
    z = ember.zeros(n, dtype=grad._dtype, device=grad._device)
    return z.index_add(0, idx, grad.reshape(-1)).reshape(self_shape)


def index_select_like(grad, dim, index, source_shape):
    """``grad.index_select(dim, index)`` shaped like ``source`` (0-dim sources included)."""
    if grad.dim() == 0:
        return grad.reshape(source_shape)
    return grad.index_select(dim, index.reshape(-1)).reshape(source_shape)


def masked_scatter_grad(grad, mask, source_shape):
    """Gradient of masked_scatter w.r.t. source: the masked gradient, zero-padded to source's size."""
    ember = _ember()
    m = mask.expand(grad._shape) if mask._shape != grad._shape else mask
    picked = grad.masked_select(m)
    n = math.prod(source_shape)
    if picked.numel() < n:
        picked = ember.cat([picked, ember.zeros(n - picked.numel(), dtype=grad._dtype, device=grad._device)])
    return picked.reshape(source_shape)


def masked_select_grad(grad, self_shape, mask):
    """Gradient of masked_select: the gradient scattered back where the mask is true."""
    ember = _ember()
    shape = ember.broadcast_shapes(tuple(self_shape), tuple(mask._shape))
    z = ember.zeros(shape, dtype=grad._dtype, device=grad._device)
    return sum_to(z.masked_scatter(mask.expand(shape), grad), self_shape)


def scatter_self_grad(grad, dim, index, reduce):
    """Gradient of scatter (no reduce) w.r.t. self: zero where something was written."""
    if reduce is not None:
        raise NotImplementedError("the derivative for 'scatter' with reduce is not implemented.")
    return grad.scatter(dim, index, 0)


def scatter_src_grad(grad, dim, index, reduce):
    """Gradient of scatter (no reduce) w.r.t. src: the gradient read at the written positions."""
    if reduce is not None:
        raise NotImplementedError("the derivative for 'scatter' with reduce is not implemented.")
    return grad.gather(dim, index)


# ---------------------------------------------------------------- nn ops (_ops/_nn.py)
def linear_weight_grad(grad, input):
    """Gradient of linear w.r.t. weight (out, in): grad^T @ input over every leading dim."""
    nd = input.dim()
    if nd == 2:
        return grad.t().mm(input)
    if nd == 1:
        return grad.unsqueeze(1) * input
    return grad.reshape(-1, grad.shape[-1]).t().mm(input.reshape(-1, input.shape[-1]))


def linear_bias_grad(grad):
    """Gradient of linear w.r.t. bias: grad summed over every leading dim (the node sums a
    broadcast bias of shape (1,) or () further)."""
    nd = grad.dim()
    return grad if nd == 1 else grad.sum(0) if nd == 2 else grad.reshape(-1, grad.shape[-1]).sum(0)


def softmax_grad(grad, result, dim):
    """Gradient of softmax from its result: result * (grad - sum(grad * result, dim)), one op
    (``_softmax_backward_data``, PyTorch's)."""
    return _ember()._softmax_backward_data(grad, result, dim, result.dtype)


def log_softmax_grad(grad, result, dim):
    """Gradient of log_softmax from its result: grad - exp(result) * sum(grad, dim), one op
    (``_log_softmax_backward_data``, PyTorch's)."""
    return _ember()._log_softmax_backward_data(grad, result, dim, result.dtype)


def max_pool_double_backward(grad, indices):
    """Gradient of max_pool2d_with_indices_backward w.r.t. grad_output: ``grad`` read at the argmax indices."""
    lead = indices._shape[:-2]
    g = grad.reshape(lead + (-1,))
    return g.gather(-1, indices.reshape(lead + (-1,))).reshape(indices._shape)


def pad_grad(grad, pad):
    """Gradient of constant_pad_nd: the same pad negated (negative pads crop, positive ones restore)."""
    return _ember().constant_pad_nd(grad, [-p for p in pad])


def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    """Gradient of embedding w.r.t. weight (dense): the rows of ``grad`` added at their indices; the padding_idx
    row gets none; with ``scale_grad_by_freq`` each row is divided by its index's count in ``indices``."""
    ember = _ember()
    idx = indices.reshape(-1)
    if idx._dtype is not ember.int64:
        idx = idx.to(ember.int64)
    g = grad.reshape(idx.numel(), -1)
    if padding_idx is not None and padding_idx >= 0:
        g = g * (idx != padding_idx).unsqueeze(1)
    if scale_grad_by_freq:
        counts = ember.zeros(num_weights, dtype=grad._dtype, device=grad._device).index_add(
            0, idx, ember.ones(idx._shape, dtype=grad._dtype, device=grad._device))
        g = g / counts.index_select(0, idx).unsqueeze(1)
    return ember.zeros((num_weights, g._shape[1]), dtype=grad._dtype, device=grad._device).index_add(0, idx, g)
