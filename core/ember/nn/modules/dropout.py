"""Dropout layers (matches torch.nn): in training mode zero each element (Dropout) or each
channel (Dropout1d/2d/3d) with probability ``p`` and scale the rest by 1 / (1 - p); the
identity in eval mode. ValueError "dropout probability has to be between 0 and 1, but got p"."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Elementwise dropout, any shape (matches torch.nn.Dropout)."""

    def forward(self, input):
        """F.dropout in training mode, identity in eval: any shape -> same shape and dtype; ``inplace`` writes into
        ``input`` (matches torch.nn.Dropout.forward).
        """
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Channel dropout for (N, C, L) or (C, L) inputs (matches torch.nn.Dropout1d)."""

    def forward(self, input):
        """F.dropout1d (whole channels zeroed) in training mode, identity in eval: (N, C, L) or (C, L) -> same
        shape and dtype (matches torch.nn.Dropout1d.forward).
        """
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Channel dropout for (N, C, H, W) or (C, H, W) inputs (matches torch.nn.Dropout2d)."""

    def forward(self, input):
        """F.dropout2d (whole channels zeroed) in training mode, identity in eval: (N, C, H, W) or (C, H, W) ->
        same shape and dtype (matches torch.nn.Dropout2d.forward).
        """
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) inputs (matches torch.nn.Dropout3d)."""

    def forward(self, input):
        """F.dropout3d (whole channels zeroed) in training mode, identity in eval: (N, C, D, H, W) or (C, D, H, W)
        -> same shape and dtype (matches torch.nn.Dropout3d.forward).
        """
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the mean and variance of SELU activations (matches torch.nn.AlphaDropout)."""

    def forward(self, input):
        """F.alpha_dropout in training mode, identity in eval: any shape -> same shape and dtype (matches
        torch.nn.AlphaDropout.forward).
        """
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of (N, C, *) inputs, keeping SELU's mean and variance (matches
    torch.nn.FeatureAlphaDropout)."""

    def forward(self, input):
        """F.feature_alpha_dropout in training mode, identity in eval: (N, C, *) -> same shape and dtype."""
        return F.feature_alpha_dropout(input, self.p, self.training)
