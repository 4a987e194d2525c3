"""ember.nn.functional: the functional forms of the layers, activations and losses (matches torch.nn.functional).

Everything is written with ember ops, so it runs on every device and is differentiable
through the core's autograd; the few ops that need their own kernels for speed
(convolution's im2col / col2im, pooling, softmax, nll_loss, ...) are declared in
``ember._ops._nn`` with composites, so a device plugin may also supply native kernels.

One private module per category, re-exported here:

_functional.conv           conv1d, conv2d, conv_transpose2d, unfold, fold
_functional.pooling        max_pool1d/2d, avg_pool2d, adaptive_avg_pool2d, lp_pool1d/2d, ...
_functional.activation     relu, gelu, silu, softmax, log_softmax, ...
_functional.loss           mse_loss, cross_entropy, nll_loss, binary_cross_entropy, triplet_margin_loss, ...
_functional.normalization  batch_norm, layer_norm, group_norm, normalize
_functional.misc           linear, bilinear, dropout, embedding, one_hot, pad, interpolate
_functional.attention      scaled_dot_product_attention, multi_head_attention_forward
_functional.shuffle        pixel_shuffle, pixel_unshuffle, channel_shuffle
"""
from ._functional.conv import *  # noqa: F401,F403
from ._functional.pooling import *  # noqa: F401,F403
from ._functional.activation import *  # noqa: F401,F403
from ._functional.loss import *  # noqa: F401,F403
from ._functional.normalization import *  # noqa: F401,F403
from ._functional.misc import *  # noqa: F401,F403
from ._functional.attention import *  # noqa: F401,F403
from ._functional.shuffle import *  # noqa: F401,F403
