"""ember.nn.functional: grid_sample, affine_grid and the bicubic / area modes of interpolate.

Composites of ordinary ember ops (gather, where, floor, matmul, ...), so they run and
differentiate on every device, with respect to the input and to the grid / theta: the
sampling positions are computed with ember ops, the taps gathered from the flattened
image and mixed with their weights. Bicubic interpolation is separable: one 4-tap pass
per spatial dim with PyTorch's cubic convolution kernel (A = -0.75) and borders clamped.
"""
from __future__ import annotations

import itertools
import math
import warnings

import ember
from ... import _dtype as D

__all__ = ["grid_sample", "affine_grid"]

_A = -0.75


def _cubic_weights(t):
    """PyTorch's cubic convolution coefficients for the taps at floor - 1 .. floor + 2 (fraction ``t``)."""
    def near(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def far(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def cubic_along(x, d, n_in, n_out, step, align_corners):
    """Bicubic (one dim of it) interpolation of ``x`` along dim ``d`` from n_in to n_out samples; ``step``
    is the source step (PyTorch's area_pixel_compute_scale)."""
    idx = [[] for _ in range(4)]
    wts = [[] for _ in range(4)]
    for j in range(n_out):
        src = j * step if align_corners else (j + 0.5) * step - 0.5
        lo = math.floor(src)
        for k, w in enumerate(_cubic_weights(src - lo)):
            idx[k].append(min(max(lo - 1 + k, 0), n_in - 1))
            wts[k].append(w)
    dev = x.device
    shape = (n_out,) + (1,) * (x.dim() - d - 1)
    out = None
    for k in range(4):
        tap = x.index_select(d, ember.tensor(idx[k], dtype=D.int64, device=dev))
        term = tap * ember.tensor(wts[k], dtype=x.dtype, device=dev).reshape(shape)
        out = term if out is None else out + term
    return out


def _unnormalize(g, size, align_corners):
    """Grid coordinates in [-1, 1] -> pixel coordinates (PyTorch's grid_sampler_unnormalize)."""
    if align_corners:
        return (g + 1) / 2 * (size - 1)
    return ((g + 1) * size - 1) / 2


def _reflect(c, twice_low, twice_high):
    """Reflects coordinates into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates)."""
    if twice_low == twice_high:
        return ember.zeros_like(c)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (c - lo).abs()
    extra = ember.fmod(c, span)
    flips = ember.floor(c / span)
    even = ember.fmod(flips, 2) == 0
    return ember.where(even, extra + lo, span - extra + lo)


def _source(g, size, padding_mode, align_corners):
    c = _unnormalize(g, size, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
    return c


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples ``input`` (N, C, H_in, W_in) at the positions of ``grid`` (N, H_out, W_out, 2), whose last dim
    is (x, y) normalised to [-1, 1] -> (N, C, H_out, W_out); or ``input`` (N, C, D_in, H_in, W_in) at ``grid``
    (N, D_out, H_out, W_out, 3) holding (x, y, z) -> (N, C, D_out, H_out, W_out) (matches
    torch.nn.functional.grid_sample).

    ``mode`` 'bilinear' (trilinear for 5-D inputs) or 'nearest' (ties round half to even); ``padding_mode``
    'zeros' (outside taps are 0), 'border' (clamped) or 'reflection' (mirrored at the borders);
    ``align_corners`` (default False) maps -1 and 1 to the centres of the corner pixels instead of their outer
    edges. Differentiable in input and grid. ValueError for an unknown mode / padding_mode, RuntimeError for
    mismatched shapes or dtypes; NotImplementedError for mode 'bicubic' (not in ember yet).
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    align_corners = bool(align_corners)
    if input.dim() != grid.dim() or input.dim() not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    nd = input.dim() - 2
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode 'bicubic' is not supported by ember yet")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{ember._torch_name(input.dtype)} and grid has {ember._torch_name(grid.dtype)}")
    N, C = input.shape[:2]
    sizes = tuple(input.shape[2:])                                        # (D,) H, W
    out = tuple(grid.shape[1:-1])
    L = math.prod(out)
    strides = [math.prod(sizes[i + 1:]) for i in range(nd)]
    # grid's last dim is (x, y[, z]): x indexes the last spatial dim
    coords = [_source(grid[..., nd - 1 - i], sizes[i], padding_mode, align_corners) for i in range(nd)]
    flat = input.reshape(N, C, -1)

    def tap(pos):
        """Values at integer positions ``pos`` (one (N, *out) tensor per dim), 0 outside: (N, C, *out)."""
        inside, idx = None, None
        for p, n, st in zip(pos, sizes, strides):
            ok = (p >= 0) & (p <= n - 1)
            inside = ok if inside is None else inside & ok
            term = p.clamp(0, n - 1).to(ember.int64) * st
            idx = term if idx is None else idx + term
        v = flat.gather(2, idx.reshape(N, 1, L).expand(N, C, L)).reshape((N, C) + out)
        return v * inside.unsqueeze(1).to(v.dtype)

    if mode == "nearest":
        return tap([ember.round(c) for c in coords])
    lows = [ember.floor(c) for c in coords]
    fracs = [(c - lo).unsqueeze(1) for c, lo in zip(coords, lows)]
    res = None
    for corner in itertools.product((0, 1), repeat=nd):
        w = None
        for bit, f in zip(corner, fracs):
            wi = f if bit else 1 - f
            w = wi if w is None else w * wi
        term = tap([lo + bit for lo, bit in zip(lows, corner)]) * w
        res = term if res is None else res + term
    return res


def _base(n, align_corners, like):
    """The n normalised sample positions in [-1, 1] along one dim (PyTorch's affine_grid base grid)."""
    if n <= 1:
        return ember.zeros(n, dtype=like.dtype, device=like.device)
    r = ember.linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the affine maps ``theta`` (N, 2, 3) for an output of ``size`` (N, C, H, W) ->
    (N, H, W, 2), or of ``theta`` (N, 3, 4) for (N, C, D, H, W) -> (N, D, H, W, 3) (matches
    torch.nn.functional.affine_grid; ``align_corners`` default False). Floating ``theta``: ValueError
    otherwise, for a theta shape that does not fit ``size``, for sizes other than 4-D / 5-D and for
    a non-positive spatial size.
    """
    align_corners = bool(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {ember.Size(size)}. "
                             f"Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {ember.Size(size)}. "
                             f"Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {ember.Size(size)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {ember.Size(size)}")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    N = size[0]
    if theta.shape[0] != N:
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {ember.Size(size)}. "
                         f"Got {theta.shape}." if len(size) == 4 else
                         f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {ember.Size(size)}. "
                         f"Got {theta.shape}.")
    axes = [_base(n, align_corners, theta) for n in spatial]            # (D,) H, W
    grids = ember.meshgrid(*axes, indexing="ij")
    # columns x (last dim), y, (z), 1
    cols = list(reversed(grids)) + [ember.ones_like(grids[0])]
    base = ember.stack(cols, -1).reshape(1, -1, len(cols))               # (1, prod(spatial), nd + 1)
    out = base.matmul(theta.transpose(1, 2))                             # (N, prod(spatial), nd)
    return out.reshape([N] + spatial + [len(spatial)])
