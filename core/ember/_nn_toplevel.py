"""The neural-network functions PyTorch also exposes at top level (torch.conv3d, torch.layer_norm,
torch.dropout, torch.max_pool2d, torch.ctc_loss, ...), as thin wrappers of ember.nn.functional. Each
keeps the top-level signature, which is the aten one and not always F's: ``dropout(input, p, train)``;
``batch_norm`` / ``instance_norm`` take weight and bias before the running statistics and end in
``cudnn_enabled``; the losses take ``reduction`` as aten's int (0 'none', 1 'mean', 2 'sum') and, as
torch's top-level functions do, default to 0 (unreduced); an int outside 0..2 raises ValueError (PyTorch
does not check it); ``max_pool*d`` return only the values while ``adaptive_max_pool1d`` and
``max_pool1d_with_indices`` return (values, indices); ``grid_sampler`` takes int modes. The computation,
the errors and the docs are F's.
"""
from __future__ import annotations

__all__ = ["conv1d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "layer_norm",
           "native_layer_norm",
           "group_norm", "rms_norm", "batch_norm", "instance_norm", "dropout", "dropout_", "alpha_dropout",
           "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "avg_pool1d",
           "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "bilinear", "cosine_similarity", "pairwise_distance", "pdist", "prelu", "rrelu",
           "rrelu_", "selu", "selu_", "celu", "celu_", "threshold", "threshold_", "kl_div", "poisson_nll_loss",
           "hinge_embedding_loss", "margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "binary_cross_entropy_with_logits", "ctc_loss", "affine_grid_generator", "grid_sampler",
           "grid_sampler_2d", "grid_sampler_3d", "conv_tbc"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _F():
    from .nn import functional
    return functional


def _reduction(r):
    """aten's int reduction -> F's string; ValueError for another value."""
    if isinstance(r, str):
        return r
    if r not in _REDUCTIONS:
        raise ValueError(f"{r} is not a valid value for reduction")
    return _REDUCTIONS[r]


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv1d: see ember.nn.functional.conv1d."""
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.conv3d: see ember.nn.functional.conv3d."""
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.conv_transpose1d: see ember.nn.functional.conv_transpose1d."""
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.conv_transpose2d: see ember.nn.functional.conv_transpose2d."""
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.conv_transpose3d: see ember.nn.functional.conv_transpose3d."""
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """torch.native_layer_norm: (out, mean, rstd), see ember.nn._layer_norm.native_layer_norm."""
    from .nn._layer_norm import native_layer_norm as op
    return op(input, list(normalized_shape), weight, bias, float(eps))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """torch.layer_norm (``cudnn_enable`` ignored): see ember.nn.functional.layer_norm."""
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """torch.group_norm (``cudnn_enabled`` ignored): see ember.nn.functional.group_norm."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """torch.rms_norm: see ember.nn.functional.rms_norm."""
    return _F().rms_norm(input, normalized_shape, weight, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """torch.batch_norm (aten's argument order: weight and bias first; ``cudnn_enabled`` ignored): see
    ember.nn.functional.batch_norm."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """torch.instance_norm (aten's argument order; ``cudnn_enabled`` ignored): see
    ember.nn.functional.instance_norm."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def dropout(input, p, train):
    """torch.dropout(input, p, train): see ember.nn.functional.dropout."""
    return _F().dropout(input, p, train)


def dropout_(input, p, train):
    """In-place torch.dropout_."""
    return _F().dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    """torch.alpha_dropout(input, p, train): see ember.nn.functional.alpha_dropout."""
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """In-place torch.alpha_dropout_."""
    return _F().alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout(input, p, train): see ember.nn.functional.feature_alpha_dropout."""
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """In-place torch.feature_alpha_dropout_."""
    return _F().feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train, *, _inplace=False):
    """torch.feature_dropout(input, p, train): each (sample, channel) slice of ``input`` (N, C, *) is zeroed
    with probability p and the rest scaled by 1 / (1 - p) in training; the identity otherwise.
    RuntimeError for fewer than 2 dims; ValueError for p outside [0, 1]."""
    from .nn._functional.misc import _check_p
    _check_p(p)
    if not train or p == 0.0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        out = input * 0.0
    else:
        noise = input.new_empty(tuple(input.shape[:2]) + (1,) * (input.dim() - 2)).bernoulli_(1.0 - p)
        out = input * (noise / (1.0 - p))
    return input.copy_(out) if _inplace else out


def feature_dropout_(input, p, train):
    """In-place torch.feature_dropout_."""
    return feature_dropout(input, p, train, _inplace=True)


def pixel_shuffle(input, upscale_factor):
    """torch.pixel_shuffle: see ember.nn.functional.pixel_shuffle."""
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """torch.pixel_unshuffle: see ember.nn.functional.pixel_unshuffle."""
    return _F().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    """torch.channel_shuffle: see ember.nn.functional.channel_shuffle."""
    return _F().channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """torch.native_channel_shuffle: see ember.nn.functional.native_channel_shuffle."""
    return _F().native_channel_shuffle(input, groups)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """torch.avg_pool1d (``stride=()`` means kernel_size): see ember.nn.functional.avg_pool1d."""
    return _F().avg_pool1d(input, kernel_size, stride if stride != () else None, padding, ceil_mode,
                           count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d: the values only; see ember.nn.functional.max_pool1d."""
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool2d: the values only; see ember.nn.functional.max_pool2d."""
    return _F().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool3d: the values only; see ember.nn.functional.max_pool3d."""
    return _F().max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d_with_indices: (values, int64 indices)."""
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def adaptive_avg_pool1d(input, output_size):
    """torch.adaptive_avg_pool1d: see ember.nn.functional.adaptive_avg_pool1d."""
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: (values, int64 indices), as aten's."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


def bilinear(input1, input2, weight, bias=None):
    """torch.bilinear: see ember.nn.functional.bilinear."""
    return _F().bilinear(input1, input2, weight, bias)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """torch.cosine_similarity: see ember.nn.functional.cosine_similarity."""
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """torch.pairwise_distance: see ember.nn.functional.pairwise_distance."""
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    """torch.pdist: see ember.nn.functional.pdist."""
    return _F().pdist(input, p)


def prelu(input, weight):
    """torch.prelu: see ember.nn.functional.prelu."""
    return _F().prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """torch.rrelu (``generator`` must be None in ember): see ember.nn.functional.rrelu."""
    if generator is not None:
        raise NotImplementedError("rrelu: an explicit generator is not supported by ember")
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """In-place torch.rrelu_."""
    if generator is not None:
        raise NotImplementedError("rrelu_: an explicit generator is not supported by ember")
    return _F().rrelu(input, lower, upper, training, inplace=True)


def selu(input):
    """torch.selu: see ember.nn.functional.selu."""
    return _F().selu(input)


def selu_(input):
    """In-place torch.selu_."""
    return _F().selu(input, inplace=True)


def celu(input, alpha=1.0):
    """torch.celu: see ember.nn.functional.celu."""
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place torch.celu_."""
    return _F().celu(input, alpha, inplace=True)


def threshold(input, threshold, value):
    """torch.threshold: see ember.nn.functional.threshold."""
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """In-place torch.threshold_."""
    return _F().threshold(input, threshold, value, inplace=True)


def kl_div(input, target, reduction=0, log_target=False):
    """torch.kl_div (int reduction, default 0 'none'): see ember.nn.functional.kl_div."""
    return _F().kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss (all arguments positional, int reduction): see ember.nn.functional.poisson_nll_loss."""
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """torch.hinge_embedding_loss (int reduction): see ember.nn.functional.hinge_embedding_loss."""
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.margin_ranking_loss (int reduction): see ember.nn.functional.margin_ranking_loss."""
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """torch.cosine_embedding_loss (int reduction): see ember.nn.functional.cosine_embedding_loss."""
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=0):
    """torch.triplet_margin_loss (int reduction): see ember.nn.functional.triplet_margin_loss."""
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    """torch.binary_cross_entropy_with_logits (int reduction): see
    ember.nn.functional.binary_cross_entropy_with_logits."""
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    """torch.ctc_loss (int reduction): see ember.nn.functional.ctc_loss."""
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                         zero_infinity)


def affine_grid_generator(theta, size, align_corners):
    """torch.affine_grid_generator: see ember.nn.functional.affine_grid."""
    return _F().affine_grid(theta, size, align_corners)


_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler (int modes: 0 bilinear / 1 nearest / 2 bicubic; 0 zeros / 1 border / 2 reflection):
    see ember.nn.functional.grid_sample."""
    return _F().grid_sample(input, grid, _GRID_MODES.get(interpolation_mode, interpolation_mode),
                            _GRID_PADDING.get(padding_mode, padding_mode), align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_2d: grid_sampler for 4-D inputs."""
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler_3d: grid_sampler for 5-D inputs."""
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def conv_tbc(input, weight, bias, pad=0):
    """torch.conv_tbc: see ember.nn.functional.conv_tbc."""
    return _F().conv_tbc(input, weight, bias, pad)
