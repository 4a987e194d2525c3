"""LinearCrossEntropyLoss and LinearCrossEntropyOptions (matches torch.nn): a linear layer fused, in PyTorch,
with the cross entropy that follows it. ember computes it on PyTorch's reference path
(``F.linear_cross_entropy``); the options are validated and kept so that code passing them runs unchanged,
and the chunking they ask for is not done.
"""
from __future__ import annotations

import dataclasses
import math

from ... import _dtype as D
from .. import functional as F
from .linear import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """The chunking options of ``F.linear_cross_entropy`` (matches torch.nn.LinearCrossEntropyOptions: same
    fields, defaults and ValueErrors). ``allow_retain_graph`` (bool), ``batch_chunk_size`` (positive int or
    None), ``chunking_method`` ('auto', 'aspect_ratio', 'aspect_ratio:N' or None), ``acc_policy`` ('auto',
    'accurate', 'balanced', 'compact'), ``acc_dtype`` (None or a floating dtype). ember's computation does
    not chunk: the values only select PyTorch's path, and the loss is the same on both."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (D.float16, D.bfloat16, D.float32, D.float64):
            raise ValueError("acc_dtype must be one of {None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             "automatically.")


class LinearCrossEntropyLoss(_WeightedLoss):
    """A ``Linear(in_features, num_classes * prod(out_features), bias)`` followed by cross entropy against
    ``target`` (matches torch.nn.LinearCrossEntropyLoss; the weight is held 2-D in ``self.linear`` and
    reshaped to (num_classes, *out_features, in_features) on each call). Input (N, in_features) or
    (in_features,); target as ``F.linear_cross_entropy``. RuntimeError, as PyTorch, for a class ``weight``
    not of shape (num_classes,) or ``label_smoothing`` outside [0, 1]."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes), bias=bias,
                             device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        b = (self.linear.bias.reshape((self.num_classes, *self.out_features)) if self.linear.bias is not None
             else None)
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
