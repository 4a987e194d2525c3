"""Parametrizations built on ember.nn.utils.parametrize: weight_norm and spectral_norm (matches
torch.nn.utils.parametrizations).

``weight_norm`` stores ``original0`` = g (the norm over every dim but ``dim``) and ``original1``
= v, and computes weight = v * g / ||v||. ``spectral_norm`` keeps the original weight and
divides it by an estimate of its largest singular value, refined by ``n_power_iterations``
steps of the power method on every access in training mode (buffers ``_u``, ``_v`` of the
parametrization; 15 steps at registration). ``orthogonal`` keeps a matrix (or a batch) orthogonal
(unitary) through ``matrix_exp``, the Cayley map or Householder reflectors (ember.linalg).
"""
from __future__ import annotations

import ember
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ._norms import default_spectral_dim, norm_except_dim, reshape_to_matrix, weight_norm as _weight_norm

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


class _WeightNorm(Module):
    """weight = v * g / ||v|| (norm over every dim but ``dim``; the whole tensor for dim None)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as magnitude g (``parametrizations.<name>.original0``) times direction
    v / ||v|| (``original1``), the norm taken over every dim but ``dim`` (all dims for None). Returns the
    module (matches torch.nn.utils.parametrizations.weight_norm)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the power-method estimate of weight's largest singular value (weight reshaped
    to a matrix with ``dim`` first); a 1-D weight is just normalised."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = reshape_to_matrix(weight.detach(), self.dim)
            h, w = weight_mat.shape
            u = ember.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            v = ember.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat, n_power_iterations):
        # u and v are updated in place: they are buffers, and a later state dict must see the new values
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = reshape_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated with the power method (see the module
    docstring); ``dim`` defaults to 1 for transposed convolutions and 0 otherwise. Returns the module.
    ValueError "Module '...' has no parameter or buffer with name '...'"; IndexError / ValueError for a bad
    dim or n_power_iterations (matches torch.nn.utils.parametrizations.spectral_norm)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = default_spectral_dim(module)
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ---------------------------------------------------------------- orthogonal
_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def _tall(X):
    """(X as a tall matrix, whether it was transposed)."""
    return (X.mT, True) if X.shape[-2] < X.shape[-1] else (X, False)


def _orthonormal_q(A):
    """The Q of A = QR (A tall, maybe complex) with diag(R) real and >= 0: the QR through geqrf, with each
    column's sign (phase) set by R's diagonal."""
    X, tau = ember.geqrf(A)
    Q = ember.linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_q(A, tau):
    """``linalg.householder_product(A, tau)`` as rank-1 updates of the identity, Q <- Q - tau_i (Q v_i) v_i^H
    (v_i: column i of A below the diagonal, 1 on it): differentiable through ember's matmuls, which the
    householder_product op is not."""
    n, k = A.shape[-2], A.shape[-1]
    rows = ember.arange(n, device=A.device)
    Q = ember.eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = A[..., :, i] * (rows > i) + (rows == i).to(A.dtype)
        Q = Q - tau[..., i, None, None] * ((Q @ v.unsqueeze(-1)) @ v.conj().unsqueeze(-2))
    return Q[..., :k]


def _is_orthonormal(Q):
    k = Q.shape[-1]
    eps = 10.0 * Q.shape[-2] * ember.finfo(Q.dtype).eps
    return ember.allclose(Q.mH @ Q, ember.eye(k, dtype=Q.dtype, device=Q.device), atol=eps)


class _Orthogonal(Module):
    """The parametrization ``orthogonal`` registers: ``forward`` maps an unconstrained tensor to an orthogonal
    (unitary) one, ``right_inverse`` maps an orthogonal one (or any, orthogonalised by QR) back."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        X, transposed = _tall(X)
        n, k = X.shape[-2], X.shape[-1]
        if self.orthogonal_map == "householder":
            # the strictly lower part holds the reflectors; the diagonal's signs (1 / -1) flip columns
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_q(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            # a skew-symmetric (skew-hermitian) A from the lower triangle, square-padded, then exp or Cayley
            X = X.tril()
            if n != k:
                X = ember.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = ember.matrix_exp(A)
            else:
                Id = ember.eye(n, dtype=A.dtype, device=A.device)
                Q = ember.linalg.solve(ember.add(Id, A, alpha=-0.5), ember.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            Q, transposed = _tall(Q)
            n, k = Q.shape[-2], Q.shape[-1]
            if not hasattr(self, "base"):
                if self.orthogonal_map != "householder":
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the "
                                              "Cayley parametrizations when use_trivialization=False.")
                # reflectors of Q's QR, with R's diagonal signs on the diagonal (a zero tau: flipped)
                A, tau = ember.geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1)
                d.copy_(ember.where(tau == 0.0, -d.sign(), d.sign()))
                return A.mT if transposed else A
            if n == k:
                Q = Q.clone() if _is_orthonormal(Q) else _orthonormal_q(Q)
            else:                    # complete the columns to a square orthogonal basis
                N = ember.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _orthonormal_q(ember.cat([Q, N], dim=-1))
            self.base = Q
            # -I: the householder map sends it (and the others send it, through base) to the base itself
            neg_id = ember.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Keep ``module.<name>`` (a matrix or a batch of matrices, real or complex) orthogonal - unitary - through
    a parametrization (matches torch.nn.utils.parametrizations.orthogonal).

    ``orthogonal_map``: ``"matrix_exp"`` (default for square or complex weights), ``"cayley"``, or
    ``"householder"`` (default otherwise; real only). With ``use_trivialization`` (default) an extra
    ``base`` buffer holds the current orthogonal matrix and the parameter moves around it. The initial weight
    is kept if it is orthogonal and orthogonalised by QR otherwise. ValueError for a missing name, a tensor of
    fewer than 2 dims or an unknown map; returns ``module``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, ember.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
