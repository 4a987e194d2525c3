"""PairwiseDistance and CosineSimilarity (matches torch.nn); computed by ember.nn.functional."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """p-norm of x1 - x2 + eps along the last dim (matches torch.nn.PairwiseDistance; F.pairwise_distance)."""

    __constants__ = ["norm", "eps", "keepdim"]

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        """(N, D) or (D,) inputs (broadcastable) -> (N,) or () (keepdim keeps the last dim as 1)."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """x1 . x2 / max(|x1| |x2|, eps) along ``dim`` (matches torch.nn.CosineSimilarity; F.cosine_similarity)."""

    __constants__ = ["dim", "eps"]

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        """Broadcastable inputs -> their shape without ``dim``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
