"""Shared pieces of weight and spectral normalisation (parametrized and legacy forms)."""
from __future__ import annotations

import ember


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (dim -1: the norm of the
    whole tensor, 0-dim) (matches torch.norm_except_dim)."""
    if dim == -1:
        return ember.linalg.vector_norm(v, pow)
    dims = tuple(d for d in range(v.dim()) if d != dim)
    return ember.linalg.vector_norm(v, pow, dim=dims, keepdim=True)


def weight_norm(v, g, dim=0):
    """v * (g / ||v||) with the norm taken over every dim but ``dim`` (matches torch._weight_norm)."""
    return v * (g / norm_except_dim(v, 2, dim))


def reshape_to_matrix(weight, dim):
    """``weight`` with ``dim`` moved first and the rest flattened: (size of dim, rest)."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.dim()) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def default_spectral_dim(module):
    """1 for transposed convolutions (their weight is (in, out, ...)), else 0, as PyTorch."""
    from ..modules.conv import _ConvTransposeNd
    return 1 if isinstance(module, _ConvTransposeNd) else 0
