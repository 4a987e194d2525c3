"""ember.nn.functional: pixel_shuffle, pixel_unshuffle, channel_shuffle (matches the
torch.nn.functional functions of the same names).

Each is a composite of reshape and permute, so it runs on every device and autograd
flows through it (the gradient is the inverse rearrangement). Leading batch dims are
allowed: the last three dims are (C, H, W) for the pixel shuffles, and dim 1 holds the
channels for channel_shuffle.
"""
from __future__ import annotations

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _check_rank(input, name):
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")


def pixel_shuffle(input, upscale_factor):
    """(*, C * r**2, H, W) -> (*, C, H * r, W * r) with r = ``upscale_factor``: the r**2 channels of each
    output channel become an r x r block of pixels (matches torch.nn.functional.pixel_shuffle).

    RuntimeError (PyTorch's messages) for fewer than 3 dims, r <= 0, or C * r**2 not divisible by r**2.
    """
    _check_rank(input, "pixel_shuffle")
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    oc = c // (r * r)
    # (*, oc, r, r, h, w) -> (*, oc, h, r, w, r)
    x = input.reshape(*lead, oc, r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r**2, H, W) with r = ``downscale_factor``, the inverse of
    pixel_shuffle (matches torch.nn.functional.pixel_unshuffle).

    RuntimeError (PyTorch's messages) for fewer than 3 dims, r <= 0, or H or W not divisible by r.
    """
    _check_rank(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    # (*, c, h/r, r, w/r, r) -> (*, c, r, r, h/r, w/r)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """Rearrange the C channels of (N, C, *) as (groups, C / groups) and transpose to (C / groups,
    groups): channel g * (C / groups) + k goes to k * groups + g (matches
    torch.nn.functional.channel_shuffle, ShuffleNet's channel shuffle).

    RuntimeError (PyTorch's messages) for fewer than 3 dims, groups <= 0, or C not divisible by groups.
    """
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    g = int(groups)
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {g} groups.")
    return input.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(n, c, *rest)


def native_channel_shuffle(input, groups):
    """channel_shuffle under the name of PyTorch's native kernel (matches
    torch.nn.functional.native_channel_shuffle)."""
    return channel_shuffle(input, groups)
