"""ember.nn.functional: the functional forms of the layers, activations and losses (matches torch.nn.functional).

Everything is written with ember ops, so it runs on every device and is differentiable
through the core's autograd; the few ops that need their own kernels for speed
(convolution's im2col / col2im, pooling, softmax, nll_loss, ...) are declared in
``ember._ops._nn`` with composites, so a device plugin may also supply native kernels.

One private module per category, re-exported here:

_functional.conv           conv1d, conv2d, conv_transpose2d, unfold, fold
_functional.conv3d         conv3d, conv_transpose3d (composites of the 2-D ops)
_functional.pooling        max_pool1d/2d, avg_pool2d, adaptive_avg_pool2d, lp_pool1d/2d, ...
_functional.pooling3d      max/avg/adaptive/lp pooling in 3-D, adaptive_max_pool1d, max_unpool1d/2d/3d
_functional.activation     relu, gelu, silu, softmax, log_softmax, ...
_functional.loss           mse_loss, cross_entropy, nll_loss, binary_cross_entropy, triplet_margin_loss, ...
_functional.normalization  batch_norm, layer_norm, group_norm, normalize
_functional.misc           linear, bilinear, dropout, embedding, one_hot, pad, interpolate
_functional.sampling       grid_sample, affine_grid (and interpolate's bicubic pass)
_functional.extras         embedding_bag, ctc_loss, feature_alpha_dropout
_functional.attention      scaled_dot_product_attention, multi_head_attention_forward
_functional.shuffle        pixel_shuffle, pixel_unshuffle, channel_shuffle
_functional.grouped        grouped_mm, linear_cross_entropy, boolean_dispatch, has_torch_function*
"""
from ._functional.conv import *  # noqa: F401,F403
from ._functional.conv3d import *  # noqa: F401,F403
from ._functional.pooling import *  # noqa: F401,F403
from ._functional.pooling3d import *  # noqa: F401,F403
from ._functional.activation import *  # noqa: F401,F403
from ._functional.loss import *  # noqa: F401,F403
from ._functional.normalization import *  # noqa: F401,F403
from ._functional.misc import *  # noqa: F401,F403
from ._functional.sampling import *  # noqa: F401,F403
from ._functional.extras import *  # noqa: F401,F403
from ._functional.attention import *  # noqa: F401,F403
from ._functional.shuffle import *  # noqa: F401,F403
from ._functional.grouped import *  # noqa: F401,F403


from ember import Tensor  # noqa: E402,F401  (torch.nn.functional.Tensor is torch.Tensor)


def assert_int_or_pair(arg, arg_name, message):
    """AssertionError ``message.format(arg_name)`` unless ``arg`` is an int or has two entries (matches
    torch.nn.functional.assert_int_or_pair)."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
