"""LKJCholesky(dim, concentration): Cholesky factors of LKJ-distributed correlation matrices
(matches torch.distributions.LKJCholesky)."""
import math

import ember

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Lower-triangular L with unit-norm rows (L Lᵀ a correlation matrix), density of LLᵀ proportional to
    det(LLᵀ)^(η - 1), η = ``concentration`` > 0; event shape (dim, dim), dim >= 2 (ValueError otherwise).
    Sampling is the onion method (Lewandowski, Kurowicka & Joe 2009, section 3.2): row i >= 1 is a uniform
    direction in its first i coordinates scaled by sqrt(Beta(i / 2, η + (dim - 1 - i) / 2)), the diagonal
    completes the unit norm, so each correlation r of L Lᵀ has (r + 1) / 2 ~ Beta(η - 1 + dim / 2, same).
    PyTorch 2.13 draws Beta(i - 1/2, ...) for rows i >= 2, whose correlations are wider than its own log_prob
    says (tests/distributions/test_distributions_second_batch.py measures both). No rsample (as in PyTorch)."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal = self.concentration + 0.5 * (dim - 2)
        offset = ember.arange(dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = ember.cat([ember.zeros((1,), dtype=offset.dtype, device=offset.device), offset])
        # row i >= 1 (offset i - 1): Beta(i / 2, η + (dim - 1 - i) / 2), the onion method's law; PyTorch 2.13 uses
        # offset + 0.5 = i - 1/2 for the first parameter, which for i >= 2 does not give the LKJ marginals
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), ember.Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=ember.Size()):
        """Cholesky factors of shape ``sample_shape + batch_shape + (dim, dim)``, not tracked by autograd."""
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            first_row = ember.arange(self.dim, device=u.device) == 0
            norm = u.norm(dim=-1, keepdim=True)
            direction = ember.where(first_row[:, None], 0.0, u / ember.where(first_row[:, None], 1.0, norm))
            w = ember.sqrt(y) * direction
            diag = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=ember.finfo(w.dtype).tiny).sqrt()
            return w + ember.diag_embed(diag)

    def log_prob(self, value):
        """Σ_i (2(η - 1) + dim - i) log L_ii (i = 2..dim) minus the log normaliser; shape: broadcast batch shape."""
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = ember.sum(order * diag.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_normalizer = 0.5 * dm1 * math.log(math.pi) + ember.mvlgamma(alpha - 0.5, dm1) - ember.lgamma(alpha) * dm1
        return unnormalized - log_normalizer
