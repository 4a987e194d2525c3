"""TransformerEncoderLayer and TransformerEncoder (matches torch.nn's)."""
from __future__ import annotations

import copy
import warnings

import ember
from .. import functional as F
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "generate_square_subsequent_mask"]


def generate_square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above it (a causal mask for
    MultiheadAttention; matches torch.nn.Transformer.generate_square_subsequent_mask)."""
    return ember.full((sz, sz), float("-inf"), device=device, dtype=dtype).triu(1)


def _activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention followed by a feed-forward block, each with a residual connection, dropout and
    LayerNorm (post-norm by default, pre-norm with ``norm_first``) (matches torch.nn.TransformerEncoderLayer).

    ``TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',
    layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)``; ``activation`` is 'relu',
    'gelu' or a callable (a Module is registered as a submodule). ``forward(src, src_mask=None,
    src_key_padding_mask=None, is_causal=False)`` on (S, N, E) ((N, S, E) with batch_first; unbatched
    (S, E)). RuntimeError "activation should be relu/gelu, not X".
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation_relu_or_gelu = 1 if activation in ("relu", F.relu) or isinstance(activation, ReLU) else \
            2 if activation in ("gelu", F.gelu) or isinstance(activation, GELU) else 0
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """Self-attention block then feed-forward block, each residual with dropout and LayerNorm (applied first
        with ``norm_first``): src (S, N, E), (N, S, E) with batch_first, or unbatched (S, E) -> same shape and
        dtype; ``src_mask`` (S, S) and ``src_key_padding_mask`` (N, S) go to self_attn (matches
        torch.nn.TransformerEncoderLayer.forward).
        """
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer``, then an optional ``norm``
    (matches torch.nn.TransformerEncoder; nested tensors are not used).

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``.
    """

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check
        if enable_nested_tensor:
            why = None
            if not isinstance(encoder_layer, TransformerEncoderLayer):
                why = f"{type(encoder_layer).__name__} was not TransformerEncoderLayer"
            elif encoder_layer.norm_first:
                why = "encoder_layer.norm_first was True"
            elif not encoder_layer.self_attn.batch_first:
                why = ("encoder_layer.self_attn.batch_first was not True"
                       "(use batch_first for better inference performance)")
            if why is not None:
                warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why}",
                              stacklevel=2)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Run ``src`` through every layer (passing ``mask``, ``src_key_padding_mask`` and ``is_causal``) then
        ``norm`` if set: same shape and dtype as ``src`` (matches torch.nn.TransformerEncoder.forward, without
        nested tensors).
        """
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, is_causal=bool(is_causal), src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            out = self.norm(out)
        return out
