"""Transforms built from other transforms or distributions, and the matrix ones (matches the same-named classes
of torch.distributions.transforms): CatTransform, StackTransform, CumulativeDistributionTransform,
CorrCholeskyTransform, PositiveDefiniteTransform. Re-exported by ember.distributions.transforms."""
import math

import ember

from . import constraints
from .transforms import LowerCholeskyTransform, Transform
from .utils import _sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform", "PositiveDefiniteTransform",
           "StackTransform"]


def _check_along(t, dim, size, what, letter, owner):
    """AssertionError (PyTorch's class and wording) unless ``t`` (called ``letter``; ``owner`` in the dim message)
    has ``dim`` and ``t.size(dim) == size``."""
    if not -t.dim() <= dim < t.dim():
        raise AssertionError(f"dim {dim} out of range for {owner} with {t.dim()} dimensions")
    if t.size(dim) != size:
        raise AssertionError(f"{letter}.size({dim}) = {t.size(dim)} must equal {what}")


class _ComponentwiseTransform(Transform):
    """What CatTransform and StackTransform share: a list of transforms applied to pieces of ``dim``."""

    def __init__(self, tseq, dim, cache_size):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    def _map(self, z, method):
        """Apply ``method(transform, piece)`` to each piece of ``z`` and join the results."""
        return self._join([method(t, piece) for t, piece in zip(self.transforms, self._pieces(z))])

    def _call(self, x):
        self._check(x, "x", "tensor")
        return self._map(x, lambda t, piece: t(piece))

    def _inverse(self, y):
        self._check(y, "y", "tensor")
        return self._map(y, lambda t, piece: t.inv(piece))

    def _check_pair(self, x, y):
        self._check(x, "x", "x")
        self._check(y, "y", "y")


class CatTransform(_ComponentwiseTransform):
    """Applies ``tseq[i]`` to the i-th slice of length ``lengths[i]`` (default 1) along ``dim`` and concatenates,
    as ember.cat would; AssertionError for a mismatched size along ``dim``."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        """sum(lengths): the size along ``dim`` this transform expects."""
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, t, letter, owner):
        _check_along(t, self.dim, self.length, f"length {self.length}", letter, owner)

    def _pieces(self, z):
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [z.narrow(self.dim, start, length) for start, length in zip(starts, self.lengths)]

    def _join(self, pieces):
        return ember.cat(pieces, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        """Each piece's log|det J| summed to this transform's event_dim, then concatenated along ``dim`` (summed
        when ``dim`` lies inside the event)."""
        self._check_pair(x, y)
        parts = [_sum_rightmost(t.log_abs_det_jacobian(xp, yp), self.event_dim - t.event_dim)
                 for t, xp, yp in zip(self.transforms, self._pieces(x), self._pieces(y))]
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return ember.cat(parts, dim=dim) if dim < 0 else sum(parts)

    @constraints.dependent_property
    def domain(self):
        """The Constraint that inputs x satisfy."""
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        """The Constraint that outputs y satisfy."""
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(_ComponentwiseTransform):
    """Applies ``tseq[i]`` to ``x.select(dim, i)`` and stacks the results along ``dim``, as ember.stack would;
    AssertionError unless ``x.size(dim) == len(tseq)``."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(tseq, dim, cache_size)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _check(self, t, letter, owner):
        _check_along(t, self.dim, len(self.transforms), f"len(transforms) {len(self.transforms)}", letter, owner)

    def _pieces(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _join(self, pieces):
        return ember.stack(pieces, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        """Each slice's log|det J|, stacked along ``dim``."""
        self._check_pair(x, y)
        return ember.stack([t.log_abs_det_jacobian(xp, yp)
                            for t, xp, yp in zip(self.transforms, self._pieces(x), self._pieces(y))], dim=self.dim)

    @constraints.dependent_property
    def domain(self):
        """The Constraint that inputs x satisfy."""
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        """The Constraint that outputs y satisfy."""
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """y = F(x), F the cdf of ``distribution`` (a univariate continuous one): maps its support onto [0, 1];
    the inverse is its icdf and log|det J| its log_prob (e.g. for copulas)."""
    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        """The Constraint that inputs x satisfy."""
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


class CorrCholeskyTransform(Transform):
    """R^(D(D-1)/2) -> Cholesky factors of D x D correlation matrices (lower triangular, unit-norm rows, positive
    diagonal): the vector fills the strict lower triangle row by row, tanh maps it into (-1, 1), and each row
    goes through a signed stick-breaking so that its squares sum to 1 (LKJ 2009, section 3.2; Stan's
    corr_matrix transform). ValueError for a last dim that is not D(D-1)/2 or a non-square inverse input."""
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    def _call(self, x):
        eps = ember.finfo(x.dtype).eps
        r = vec_to_tril_matrix(ember.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        remaining = (1 - r ** 2).sqrt().cumprod(-1)   # the stick left after each entry of a row
        r = r + ember.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * ember.nn.functional.pad(remaining[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        remaining = 1 - ember.cumsum(y * y, dim=-1)
        remaining = ember.nn.functional.pad(remaining[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(remaining, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2   # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        """Stick breaking's 1/2 Σ log(1 - Σ_{k<=j} y_ik²) (below the sub-diagonal) plus tanh's
        Σ log(1 - tanh(x)²) = -2 Σ (x + softplus(-2x) - log 2)."""
        stick = 0.5 * tril_matrix_to_vec(1 - (y * y).cumsum(dim=-1), diag=-2).log().sum(-1)
        tanh = -2 * (x + ember.nn.functional.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return ember.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return ember.Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class PositiveDefiniteTransform(Transform):
    """Square matrices -> positive definite ones: L Lᵀ with L = LowerCholeskyTransform()(x); the inverse takes
    the Cholesky factor. No log_abs_det_jacobian (as in PyTorch)."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.transpose(-2, -1)

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))
