"""Wishart(df, covariance_matrix | precision_matrix | scale_tril) (matches torch.distributions.Wishart).

Sampling is the Bartlett decomposition (Odell & Feiveson 1966; Sawyer 2007): S = (L A)(L A)ᵀ with L the scale's
Cholesky factor and A lower triangular, A_ii = sqrt(Chi2(df - i)), A_ij ~ N(0, 1) below the diagonal; the
chi-square draws are reparameterised (through Gamma), so rsample is differentiable in df and in the scale.
"""
import math
import numbers
import warnings

import ember

from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma Σ_{i<p} digamma(x - i/2) (the derivative of mvlgamma(x, p)); needs x > (p-1)/2."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = ember.arange(p, dtype=x.dtype, device=x.device) / 2
    return ember.digamma(x.unsqueeze(-1) - offsets).sum(-1)


class Wishart(ExponentialFamily):
    """Symmetric positive definite (p, p) matrices with density proportional to
    |X|^((df - p - 1)/2) exp(-tr(Σ⁻¹ X) / 2); Σ given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` (Σ⁻¹) or ``scale_tril`` (Cholesky factor of Σ); df > p - 1 (ValueError otherwise;
    a warning for df < p, where samples are likely singular). Event shape (p, p)."""
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = [(name, p) for name, p in (("covariance_matrix", covariance_matrix),
                                           ("precision_matrix", precision_matrix), ("scale_tril", scale_tril))
                 if p is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = ember.Size(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = ember.Size(ember.broadcast_shapes(param.shape[:-2], df.shape))
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(tuple(batch_shape) + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = param
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(param)
        self._dist_chi2 = self._bartlett_chi2()

    def _bartlett_chi2(self):
        """Chi2(df - i), i = 0..p-1, batch shape ``batch_shape + (p,)``: the Bartlett diagonal's squares."""
        p = self._event_shape[-1]
        like = self._unbroadcasted_scale_tril
        offsets = ember.arange(p, dtype=like.dtype, device=like.device)
        return Chi2(df=self.df.unsqueeze(-1) - offsets.expand(tuple(self._batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = ember.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2()
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        identity = ember.eye(self._event_shape[-1], device=L.device, dtype=L.dtype)
        return ember.cholesky_solve(identity, L).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def _df_matrix(self, df):
        return df.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        """df Σ, shape ``batch_shape + (p, p)``."""
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        """(df - p - 1) Σ; nan where df <= p + 1 (no mode inside the support)."""
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        return self._df_matrix(ember.where(factor > 0, factor, math.nan)) * self.covariance_matrix

    @property
    def variance(self):
        """Var(S_ij) = df (Σ_ij² + Σ_ii Σ_jj), shape ``batch_shape + (p, p)``."""
        V = self.covariance_matrix
        diag = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=ember.finfo(self.df.dtype).eps)
        below = ember.randn(tuple(diag.shape) + (diag.shape[-1],), dtype=diag.dtype, device=diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (ember.diag_embed(diag) + below)
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=ember.Size(), max_try_correction=None):
        """Samples of shape ``sample_shape + batch_shape + (p, p)``. A sample that is singular (possible for
        df < p) is drawn again, up to ``max_try_correction`` (default 10) times, with a "Singular sample
        detected." warning; one that stays singular is returned (its log_prob is -inf)."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = ember.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample = ember.where(singular[..., None, None], self._bartlett_sampling(sample_shape), sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def _log_det_term(self):
        """p log(2) / 2 + log |L|: the scale's share of the log normaliser (per unit of df)."""
        p = self._event_shape[-1]
        return p * _LOG_2 / 2 + self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        """log density at ``value`` (shape ``... + (p, p)``), shape: broadcast of its batch dims and batch_shape."""
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = ember.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(dim=-1)
        return (-nu * self._log_det_term() - ember.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        """Differential entropy, shape ``batch_shape``."""
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * self._log_det_term() + ember.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + ember.mvlgamma(y + (p + 1) / 2, p=p))
