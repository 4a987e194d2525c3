"""Helpers shared by the distributions (matches torch.distributions.utils)."""
import numbers
from functools import update_wrapper

import ember

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]

euler_constant = 0.57721566490153286060   # Euler–Mascheroni constant


def broadcast_all(*values):
    """Broadcast tensors and Python numbers to one shape; numbers take the dtype and device of the first
    tensor (the default dtype when there is none). Raises ValueError for anything else."""
    if not all(isinstance(v, (ember.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, ember.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, ember.Tensor)), None)
        options = dict(dtype=ember.get_default_dtype()) if like is None else dict(dtype=like.dtype, device=like.device)
        values = [v if isinstance(v, ember.Tensor) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.randn(shape, dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum the ``dim`` rightmost dims of ``value`` (``dim`` == 0: unchanged)."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Sigmoid (binary) or softmax over the last dim of ``logits``."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp into [eps, 1 - eps] of ``probs``' dtype, so that logs of them stay finite."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log(p) - log1p(-p) (binary) or log(p) (categorical) after clamping p."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed once per instance on first access, then stored as a plain attribute."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What ``lazy_property`` looks like on the class (so that ``isinstance(..., property)`` holds)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    arange = ember.arange(n, device=mat.device)
    tril_mask = arange < arange.view(-1, 1) + (diag + 1)
    return mat[..., tril_mask]


def _batch_shape_of(raw_values, broadcast):
    """The batch shape of a distribution built from ``raw_values`` (as given) broadcast to ``broadcast``:
    ember.Size() when every raw value is a Python number (PyTorch's rule), else the broadcast shape."""
    if all(isinstance(v, numbers.Number) for v in raw_values):
        return ember.Size()
    return broadcast.size()


def _expand_params(dist, cls, batch_shape, _instance, names):
    """``dist.expand(batch_shape)`` for a Distribution ``cls`` whose state is the tensors ``names``: each is
    expanded (a view, not a copy) and the new instance skips validation but keeps ``dist``'s setting."""
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = ember.Size(batch_shape)
    for name in names:
        setattr(new, name, getattr(dist, name).expand(batch_shape))
    super(cls, new).__init__(batch_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of ``tril_matrix_to_vec``: (..., N) -> (..., n, n), the vector filling the triangle on and
    below diagonal ``diag`` row by row, zeros elsewhere (differentiable: a gather from the vector padded with one
    zero). When N is no such triangle's size: ValueError if it falls short of the nearest one, RuntimeError if it
    exceeds it (the classes PyTorch's version raises)."""
    N = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * N + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > ember.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {N} which cannot be expressed as the lower triangular part "
                         "of a square D x D matrix.")
    n = round(n)
    arange = ember.arange(n, device=vec.device)
    tril_mask = (arange < arange.view(-1, 1) + (diag + 1)).reshape(-1)
    if int(tril_mask.sum()) != N:
        raise RuntimeError(f"shape mismatch: value tensor of shape [{N}] cannot be broadcast to indexing result of "
                           f"shape [{int(tril_mask.sum())}]")
    # position k of the flattened matrix reads vec[rank of k among the mask's True entries], or the padded zero
    index = ember.where(tril_mask, tril_mask.long().cumsum(0) - 1, N)
    padded = ember.cat([vec, ember.zeros(tuple(vec.shape[:-1]) + (1,), dtype=vec.dtype, device=vec.device)], -1)
    return padded[..., index].reshape(tuple(vec.shape[:-1]) + (n, n))


def _inherit_docstrings(cls):
    """Give each public method / property of ``cls`` that has no docstring the one of the nearest base class
    defining it (an override keeps the contract of what it overrides: ``Normal.mean`` is documented by
    ``Distribution.mean``). Called from ``__init_subclass__`` of Distribution, Transform and Constraint."""
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        target = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if not callable(target) or (getattr(value, "__doc__", None) or "").strip():
            continue
        for base in cls.__mro__[1:]:
            doc = getattr(base.__dict__.get(name), "__doc__", None)
            if doc and doc.strip():
                try:
                    value.__doc__ = doc
                except AttributeError:   # builtins and slotted objects keep their (empty) docstring
                    pass
                break
