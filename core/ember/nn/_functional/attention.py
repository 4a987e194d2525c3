"""ember.nn.functional: attention (matches torch.nn.functional.scaled_dot_product_attention
and multi_head_attention_forward).

Shapes follow PyTorch: sdpa takes (..., L, E) queries against (..., S, E) keys and
(..., S, Ev) values; multi_head_attention_forward takes sequence-first (L, N, E) inputs
(or unbatched (L, E)). Mask conventions differ between the two, as in PyTorch: a bool
``attn_mask`` of sdpa marks the positions that TAKE PART, a bool mask of
multi_head_attention_forward (``attn_mask``, ``key_padding_mask``) marks those that are
MASKED OUT.
"""
from __future__ import annotations

import math
import warnings

import ember
from ..._autocast_state import autocast_function
from ... import _dtype as D
from .activation import softmax
from .misc import dropout, linear, pad

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _dtype_name(d):
    return {"float64": "double", "float32": "float", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "bool": "bool"}.get(d.name, d.name)


@autocast_function
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, with dropout on the attention weights
    (matches torch.nn.functional.scaled_dot_product_attention).

    query (..., Hq, L, E), key (..., H, S, E), value (..., H, S, Ev) -> (..., Hq, L, Ev); ``scale``
    defaults to 1 / sqrt(E). ``attn_mask`` broadcasts to (..., L, S): bool (True = attend) or float
    (added to the scores). ``is_causal`` attends to positions j <= i only (the top-left aligned lower
    triangle). ``enable_gqa`` repeats each key/value head for Hq / H query heads. A query row with
    every position masked out gives zeros, as PyTorch's.

    RuntimeError "_scaled_dot_product_attention: Explicit attn_mask should not be set when
    is_causal=True", and PyTorch's dtype errors for mismatched query/key/value or a mask of
    another dtype.
    """
    if not (query._dtype == key._dtype == value._dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_dtype_name(query._dtype)} key.dtype: {_dtype_name(key._dtype)} and value.dtype: "
                           f"{_dtype_name(value._dtype)} instead.")
    if attn_mask is not None and attn_mask._dtype != D.bool and attn_mask._dtype != query._dtype:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_dtype_name(attn_mask._dtype)} and  query.dtype: "
                           f"{_dtype_name(query._dtype)} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    L, S = query._shape[-2], key._shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(query._shape[-1])
    if enable_gqa and query.dim() >= 3 and key._shape[-3] != query._shape[-3]:
        hq, hk = query._shape[-3], key._shape[-3]
        if hq % hk:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        key = key.repeat_interleave(hq // hk, -3)
        value = value.repeat_interleave(hq // hk, -3)
    scores = query.matmul(key.transpose(-2, -1)) * scale
    masked = None                       # bool, True where a position is masked out
    if is_causal:
        masked = ember.ones((L, S), dtype=D.bool, device=query.device).tril().logical_not()
    elif attn_mask is not None:
        if attn_mask._dtype == D.bool:
            masked = attn_mask.logical_not()
        else:
            scores = scores + attn_mask
    if masked is not None:
        scores = scores.masked_fill(masked, float("-inf"))
    if masked is not None or (attn_mask is not None and attn_mask._dtype != D.bool):
        # rows with every position masked give zeros, not NaN, in values and gradients (PyTorch's _safe_softmax)
        weights = ember._safe_softmax(scores, -1)
    else:
        weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


def _canonical_mask(mask, name, other_type, other_name, target_type, check_other=True):
    """A float mask (0 where kept, -inf where masked) from a bool (True = masked) or float one."""
    if mask is None:
        return None
    if mask._dtype != D.bool and not mask._dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if check_other and other_type is not None and mask._dtype != other_type:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=3)
    if mask._dtype == D.bool:
        return ember.zeros(mask._shape, dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention of sequence-first inputs (matches torch.nn.functional.multi_head_attention_forward).

    query (L, N, E) or (L, E), key (S, N, kdim), value (S, N, vdim); ``in_proj_weight`` (3E, E) packs the
    query, key and value projections (or ``q/k/v_proj_weight`` with ``use_separate_proj_weight``);
    ``key_padding_mask`` (N, S) and ``attn_mask`` (L, S) or (N * num_heads, L, S), bool (True = masked out)
    or float (added). Returns (attn_output (L, N, E), attn_weights (N, L, S) averaged over heads, or
    (N, num_heads, L, S), or None when not ``need_weights``); unbatched inputs drop the N dim.

    AssertionError "was expecting embedding dimension of E, but got E'" and PyTorch's other shape checks.
    """
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query._shape
    src_len = key._shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key._shape[:2] != value._shape[:2]:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask._dtype, "attn_mask", query._dtype)
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query._dtype, check_other=False)

    # ---- input projections
    if not use_separate_proj_weight:
        if query is key and key is value:
            q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
            b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
            q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
    else:
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask._shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask._shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    # ---- extra key/value rows: learned biases, then zeros
    if bias_k is not None and bias_v is not None:
        k = ember.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = ember.cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None

    # ---- heads: (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (k.reshape(k._shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k)
    v = (v.reshape(v._shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v)
    if add_zero_attn:
        k = ember.cat([k, k.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        v = ember.cat([v, v.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        attn_mask = pad(attn_mask, (0, 1)) if attn_mask is not None else None
        key_padding_mask = pad(key_padding_mask, (0, 1)) if key_padding_mask is not None else None
    src_len = k._shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask._shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = weights.matmul(v)                                       # (N * H, L, head_dim)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len) if attn_mask._shape[0] != 1 \
            else attn_mask.unsqueeze(0)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, False)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
