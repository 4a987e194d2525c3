"""Instance normalisation: InstanceNorm1d, InstanceNorm2d, InstanceNorm3d (matches torch.nn).

Each (sample, channel) is normalised over its spatial dims. Defaults differ from batch
norm as in PyTorch: ``affine=False`` and ``track_running_stats=False``; with running
statistics tracked, training updates them with the batch average of the per-instance
statistics and eval mode normalises with them. Unbatched input (C, *) is accepted. The
computation is ember.nn.functional.instance_norm.
"""
from __future__ import annotations

import warnings

from .. import functional as F
from .batchnorm import _LazyNormBase, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
           "LazyInstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Shared forward of the instance-norm layers; ``_no_batch_dim`` is the rank of unbatched input."""

    _no_batch_dim = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
                         bias=bias)

    def _check_input_dim(self, input):
        ranks = (self._no_batch_dim, self._no_batch_dim + 1)
        if input.dim() not in ranks:
            raise ValueError(f"expected {ranks[0]}D or {ranks[1]}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        """Normalise (N, C, *) or unbatched (C, *) input per instance and channel: same shape and dtype
        (matches torch.nn.InstanceNorm*d.forward). ValueError for the wrong rank, and for a channel count
        other than ``num_features`` when ``affine`` (a UserWarning otherwise, as PyTorch)."""
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm of (N, C, L) or (C, L) input (matches torch.nn.InstanceNorm1d)."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance norm of (N, C, H, W) or (C, H, W) input (matches torch.nn.InstanceNorm2d)."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance norm of (N, C, D, H, W) or (C, D, H, W) input (matches torch.nn.InstanceNorm3d)."""

    _no_batch_dim = 4


class _LazyInstanceNorm(_LazyNormBase, _InstanceNorm):
    """Lazy instance norm. Its defaults are the lazy batch norms' (affine=True, track_running_stats=True),
    unlike the eager InstanceNorm's, as in PyTorch."""


class LazyInstanceNorm1d(_LazyInstanceNorm):
    """An InstanceNorm1d whose num_features is input.shape[1] of the first input (matches
    torch.nn.LazyInstanceNorm1d)."""

    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyInstanceNorm):
    """An InstanceNorm2d whose num_features is input.shape[1] of the first input (matches
    torch.nn.LazyInstanceNorm2d)."""

    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyInstanceNorm):
    """An InstanceNorm3d whose num_features is input.shape[1] of the first input (matches
    torch.nn.LazyInstanceNorm3d)."""

    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4
