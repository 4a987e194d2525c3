"""The core op set, one private module per category, re-exported through ``ember``.

_copy         copy_, fill_, clone, to
_creation     tensor, zeros, arange, ...
_elementwise  unary / binary / ternary elementwise ops and operator dunders
_reduction    sum, mean, max, var, cumsum, sort, topk, ...
_linalg       matmul, mm, bmm, einsum, linalg norms, ...
_shape        cat, stack, flip, roll, repeat, tril, ...
_indexing     gather, scatter, index_*, masked_*, nonzero, advanced __getitem__ / __setitem__
_compare      equal, allclose, isclose
_nn           linear, relu, softmax, log_softmax, nll_loss, im2col / col2im, max pooling, padding, embedding
_conv         conv2d and its input / weight gradients
_nn           relu, softmax, log_softmax, nll_loss, im2col / col2im, max pooling, constant_pad_nd, embedding
_special      digamma, lgamma, polygamma, i0, xlogy, ..., the ops behind ember.special
_random       rand, randn, randint, randperm, normal, bernoulli, ...
_fft          fft_c2c, fft_r2c, fft_c2r (the primitives of ember.fft; not exported at top level)
_complex      view_as_real / view_as_complex, real / imag views, conj, angle, polar, complex
"""
import warnings

# numpy's floating-point RuntimeWarnings from the host conversions here (an overflowing cast in
# ember.tensor([1e40], dtype=ember.float32)) are not shown: PyTorch gives the same IEEE result silently.
# The filter matches these modules only; the user's own numpy code keeps its warnings.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\._ops(\.|$)")

from . import _copy, _creation, _elementwise, _reduction, _linalg, _shape, _indexing, _random, _compare, _nn, _conv  # noqa: F401,E402
from . import _special  # noqa: F401  (digamma, lgamma, ...: the ops behind ember.special)
from . import _quantized  # noqa: F401  (quantized tensors: the ops ember-quantized implements)
from . import _sparse  # noqa: F401  (sparse_coo_tensor, to_sparse / to_dense: ember-sparse's entry points)
from . import _fft  # noqa: F401  (fft_c2c / fft_r2c / fft_c2r: the primitives behind ember.fft)
from . import _complex  # noqa: F401,E402  (view_as_real / real / imag / conj / angle / polar / complex)
from ._creation import frombuffer_bytes  # noqa: F401

MODULES = (_copy, _creation, _elementwise, _reduction, _linalg, _shape, _indexing, _random, _compare, _nn, _conv,
           _special, _quantized, _sparse, _complex)
