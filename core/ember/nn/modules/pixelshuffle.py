"""PixelShuffle and PixelUnshuffle (matches torch.nn); computed by ember.nn.functional."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """(*, C * r**2, H, W) -> (*, C, H * r, W * r) with r = ``upscale_factor`` (matches torch.nn.PixelShuffle;
    errors as F.pixel_shuffle)."""

    __constants__ = ["upscale_factor"]

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        """F.pixel_shuffle(input, upscale_factor): same dtype, shape as in the class docstring."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        """Settings shown inside the repr: ``upscale_factor=...``."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) -> (*, C * r**2, H, W) with r = ``downscale_factor`` (matches
    torch.nn.PixelUnshuffle; errors as F.pixel_unshuffle)."""

    __constants__ = ["downscale_factor"]

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        """F.pixel_unshuffle(input, downscale_factor): same dtype, shape as in the class docstring."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        """Settings shown inside the repr: ``downscale_factor=...``."""
        return f"downscale_factor={self.downscale_factor}"
