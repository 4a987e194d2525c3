"""ember.nn.functional: embedding_bag, ctc_loss, feature_alpha_dropout and gumbel_softmax.

All three are composites of ordinary ember ops, so they run and differentiate on every
device. embedding_bag looks the rows up with ``index_select`` and reduces each bag with
``index_add`` (sum / mean) or a max over a padded (bag, position) gather. ctc_loss runs
the standard CTC forward (alpha) recursion in log space over the extended label sequence
(blank, l1, blank, l2, ..., blank), vectorised over batch and states and looped over time;
its gradient is autograd's through that recursion. Impossible states carry a large finite
negative number instead of -inf so that no 0 * inf reaches the gradient; a loss that stays
at that level is reported as inf, as PyTorch.
"""
from __future__ import annotations

import numbers
import warnings

import ember
from ... import _dtype as D
from .loss import _reduce
from .misc import _check_p, _embedding_renorm_

__all__ = ["embedding_bag", "ctc_loss", "feature_alpha_dropout"]   # gumbel_softmax: activation.py


# ----------------------------------------------------------------------------- embedding_bag
def _bags(input, offsets, include_last_offset):
    """(flat indices, bag id of each, number of bags) from PyTorch's two input forms."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        B, L = input.shape
        return input.reshape(-1), [b for b in range(B) for _ in range(L)], B
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    offs = [int(o) for o in offsets.tolist()]
    n = input.shape[0]
    if offs and offs[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {offs[0]}")
    ends = offs[1:] if include_last_offset else offs[1:] + [n]
    B = len(ends)
    bag = []
    for b, (s, e) in enumerate(zip(offs, ends)):
        bag += [b] * (min(e, n) - s)
    return input, bag, B


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of rows of ``weight`` (num_embeddings, embedding_dim) (matches
    torch.nn.functional.embedding_bag).

    ``input`` (B, L) holds B bags of L indices (``offsets`` None), or ``input`` (n,) holds the bags one after
    the other, bag i starting at ``offsets[i]`` (``include_last_offset``: offsets has B + 1 entries, the last
    one the end). -> (B, embedding_dim), empty bags give zeros. ``per_sample_weights`` (same shape as input,
    mode 'sum' only) scales each row; entries equal to ``padding_idx`` are left out (not counted in a mean);
    ``max_norm`` renormalises the looked-up rows in place, as embedding. ``scale_grad_by_freq`` and ``sparse``
    are not supported (NotImplementedError when set). ValueError / NotImplementedError / RuntimeError as
    PyTorch's for bad forms, an invalid mode, misplaced per_sample_weights and out-of-range indices.
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding_bag)")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not supported by ember")
    n_emb = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n_emb, "padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n_emb, "padding_idx must be within num_embeddings"
            padding_idx = n_emb + padding_idx
    flat, bag, B = _bags(input, offsets, include_last_offset)
    flat = flat.reshape(-1)[:len(bag)].to(ember.int64)
    vals = flat.tolist()
    for i, v in enumerate(vals):
        if not 0 <= v < n_emb:
            raise RuntimeError(f"Index {i} of input takes value {v} which is not in the valid range [0, {n_emb})")
    if max_norm is not None:
        _embedding_renorm_(weight, flat, max_norm, norm_type)
    keep = [i for i, v in enumerate(vals) if v != padding_idx]
    dev = weight.device
    sel = ember.tensor(keep, dtype=D.int64, device=dev)
    rows = weight.index_select(0, flat.index_select(0, sel))                   # (n_kept, dim)
    bag_kept = [bag[i] for i in keep]
    out_shape = (B, weight.shape[1])
    if mode == "max":
        if not keep:
            return weight.new_zeros(out_shape)
        per_bag = [[] for _ in range(B)]
        for j, b in enumerate(bag_kept):
            per_bag[b].append(j)
        width = max(len(p) for p in per_bag)
        pad = len(keep)                                                          # a row of -inf appended below
        grid = ember.tensor([p + [pad] * (width - len(p)) for p in per_bag], dtype=D.int64, device=dev)
        ext = ember.cat([rows, ember.full((1, weight.shape[1]), float("-inf"), dtype=weight.dtype, device=dev)])
        best = ext.index_select(0, grid.reshape(-1)).reshape(B, width, -1).max(1).values
        empty = ember.tensor([not p for p in per_bag], device=dev).reshape(B, 1)
        return ember.where(empty, ember.zeros((), dtype=weight.dtype, device=dev), best)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1).index_select(0, sel).unsqueeze(1)
    out = weight.new_zeros(out_shape).index_add(0, ember.tensor(bag_kept, dtype=D.int64, device=dev), rows)
    if mode == "mean":
        counts = [0] * B
        for b in bag_kept:
            counts[b] += 1
        out = out / ember.tensor([max(c, 1) for c in counts], dtype=weight.dtype, device=dev).reshape(B, 1)
    return out


# ----------------------------------------------------------------------------- ctc_loss
def _lengths(v, name):
    if isinstance(v, ember.Tensor):
        return [int(a) for a in v.reshape(-1).tolist()]
    if isinstance(v, numbers.Integral):
        raise TypeError(f"ctc_loss() received an invalid combination of arguments - got int for '{name}', but "
                        "expected a tuple of ints or a Tensor")
    return [int(a) for a in v]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist Temporal Classification loss (matches torch.nn.functional.ctc_loss).

    ``log_probs`` (T, N, C) (or unbatched (T, C)) log-probabilities over C classes, ``blank`` among them;
    ``targets`` (N, S) padded or the N target sequences concatenated (sum(target_lengths),) (or (S,)
    unbatched); ``input_lengths`` / ``target_lengths`` (N,) ints or tensors. The loss of a sequence is
    -log of the total probability of its alignments; an impossible one is inf (0 with ``zero_infinity``).
    ``reduction`` 'mean' (each loss divided by its target length, then the batch mean), 'sum' or 'none' (N,).
    Differentiable in log_probs: ember's gradient is the exact derivative with respect to log_probs, while
    PyTorch's kernel returns exp(log_probs) minus the alignment posterior (its derivative assuming log_probs
    come from log_softmax); the two agree once propagated through log_softmax, the usual case.
    RuntimeError in PyTorch's words for a blank out of range, lengths larger
    than the tensors and a wrong number of lengths; ValueError for an unknown reduction.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    in_len, tg_len = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    if len(in_len) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tg_len) != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in in_len:
        if v > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {v} (while "
                               "checking arguments for ctc_loss_allocate_outputs)")
    tg = targets.unsqueeze(0) if unbatched and targets.dim() == 1 else targets
    tl = tg.tolist()
    if tg.dim() == 2:
        for v in tg_len:
            if v > tg.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {v} at dimension 1, but got size "
                                   f"{tg.shape[1]} for argument #2 'targets' (while checking arguments for "
                                   "ctc_loss_allocate_outputs)")
        seqs = [row[:n] for row, n in zip(tl, tg_len)]
    else:
        seqs, pos = [], 0
        for n in tg_len:
            seqs.append(tl[pos:pos + n])
            pos += n
    S = max(tg_len) if tg_len else 0
    L = 2 * S + 1
    ext = [[blank] * L for _ in range(N)]
    allow2 = [[False] * L for _ in range(N)]
    for b, seq in enumerate(seqs):
        for i, c in enumerate(seq):
            ext[b][2 * i + 1] = int(c)
            if i > 0 and int(c) != int(seq[i - 1]):
                allow2[b][2 * i + 1] = True
    dev, dt = lp.device, lp.dtype
    neg = -1e30
    ext_t = ember.tensor(ext, dtype=D.int64, device=dev)                       # (N, L)
    emit = lp.gather(2, ext_t.unsqueeze(0).expand(T, N, L))                    # (T, N, L)
    a2 = ember.tensor(allow2, device=dev)
    negs = ember.full((N, L), neg, dtype=dt, device=dev)
    start = ember.tensor([[s < 2 for s in range(L)]] * N, device=dev)
    alpha = ember.where(start, emit[0], negs)
    col = ember.full((N, 1), neg, dtype=dt, device=dev)
    col2 = ember.full((N, 2), neg, dtype=dt, device=dev)
    for t in range(1, T):
        prev1 = ember.cat([col, alpha[:, :-1]], 1)
        prev2 = ember.where(a2, ember.cat([col2, alpha[:, :-2]], 1), negs)
        m = ember.maximum(ember.maximum(alpha, prev1), prev2).detach()
        lse = m + ember.log(ember.exp(alpha - m) + ember.exp(prev1 - m) + ember.exp(prev2 - m))
        nxt = lse + emit[t]
        live = ember.tensor([[t < n] for n in in_len], device=dev)
        alpha = ember.where(live, nxt, alpha)
    last = ember.tensor([[2 * n, max(2 * n - 1, 0)] for n in tg_len], dtype=D.int64, device=dev)
    ends = alpha.gather(1, last)                                               # (N, 2)
    one = ember.tensor([[True, n > 0] for n in tg_len], device=dev)
    ends = ember.where(one, ends, ember.full((N, 2), neg, dtype=dt, device=dev))
    m = ends.max(1, keepdim=True).values.detach()
    total = (m + ember.log(ember.exp(ends - m).sum(1, keepdim=True))).squeeze(1)
    impossible = total < neg / 2
    inf = ember.full((N,), float("inf"), dtype=dt, device=dev)
    loss = ember.where(impossible, ember.zeros_like(inf) if zero_infinity else inf, -total)
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "mean":
        div = ember.tensor([max(n, 1) for n in tg_len], dtype=dt, device=dev)
        return (loss / (div.squeeze(0) if unbatched else div)).mean()
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- feature_alpha_dropout
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (matches torch.nn.functional.feature_alpha_dropout): in training, each
    (sample, channel) slice of ``input`` (N, C, *) is kept with probability 1 - p and mapped to a * x + a alpha' p,
    or dropped to a alpha' (p - 1), alpha' = 1.7580993408473766, a = ((alpha'^2 p + 1)(1 - p)) ** -0.5, so SELU's
    mean and variance are kept; the identity in eval mode. ValueError for p outside [0, 1], RuntimeError for
    an input with fewer than 2 dims."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        out = input * 0.0
    else:
        alpha = 1.7580993408473766
        a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
        noise = input.new_empty(tuple(input.shape[:2]) + (1,) * (input.dim() - 2)).bernoulli_(1.0 - p)
        b = (noise - 1) * (alpha * a) + alpha * a * p
        out = input * (noise * a) + b
    return input.copy_(out) if inplace else out
