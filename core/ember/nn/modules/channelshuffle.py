"""ChannelShuffle (matches torch.nn.ChannelShuffle); computed by ember.nn.functional.channel_shuffle."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Interleave the channels of (N, C, *) input across ``groups`` groups (matches torch.nn.ChannelShuffle;
    errors as F.channel_shuffle)."""

    __constants__ = ["groups"]

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        """F.channel_shuffle(input, groups): same shape and dtype."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        """Settings shown inside the repr: ``groups=...``."""
        return f"groups={self.groups}"
