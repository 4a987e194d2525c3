"""ember.nn.functional: losses (matches torch.nn.functional's losses).

Every loss takes ``reduction`` = 'mean' | 'sum' | 'none' (PyTorch's deprecated
``size_average`` / ``reduce`` pair is still accepted, with its warning) and returns a
0-dim tensor, or the elementwise losses for 'none'. cross_entropy with class indices is
``log_softmax`` followed by ``nll_loss``: two autograd nodes when the core declares the
``ember.log_softmax`` / ``ember.nll_loss`` ops; otherwise both are composed of ember ops.
"""
from __future__ import annotations

import warnings

import ember
from ..._autocast_state import autocast_function
from ... import _dtype as D
from .activation import log_softmax, logsigmoid
from .misc import one_hot as F_one_hot, pairwise_distance

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss",
           "hinge_embedding_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss"]

_ENUM = {"none": 0, "mean": 1, "sum": 2}


def legacy_reduction(size_average, reduce, emit_warning=True):
    """The reduction string PyTorch's deprecated ``size_average`` / ``reduce`` pair stands for
    (None counts as True), with PyTorch's deprecation warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                      stacklevel=3)
    return ret


def _enum(reduction):
    """0 / 1 / 2 for 'none' / 'mean' / 'sum'; ValueError "<r> is not a valid value for reduction" otherwise."""
    try:
        return _ENUM[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _warn_size(input, target):
    """PyTorch's UserWarning for a target that only broadcasts to the input."""
    if target._shape != input._shape:
        warnings.warn(f"Using a target size ({_size(target)}) that is different to the input size ({_size(input)}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _size(t):
    return f"ember.Size({list(t._shape)})"


def _weighted(loss, weight, reduction, mean_by_weight):
    """Elementwise ``loss`` times ``weight`` (same shape as the input), reduced; 'mean' divides by
    the sum of the weights when ``mean_by_weight`` (mse_loss, l1_loss) and by the count otherwise."""
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def _check_weight(input, weight):
    if weight._shape != input._shape:
        raise ValueError("Weights and input must have the same size.")


# ----------------------------------------------------------------------------- regression
@autocast_function
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (input - target) ** 2; target broadcasts to input (with PyTorch's UserWarning
    when the sizes differ); ``weight`` (input's shape) scales each term and 'mean' then divides by its sum
    (matches torch.nn.functional.mse_loss)."""
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    diff = input - target
    if weight is not None:
        _check_weight(input, weight)
        return _weighted(diff * diff, weight, reduction, True)
    _enum(reduction)
    return _reduce(diff * diff, reduction)


@autocast_function
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error |input - target| (matches torch.nn.functional.l1_loss; broadcasting,
    warning and ``weight`` as mse_loss)."""
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    diff = (input - target).abs()
    if weight is not None:
        _check_weight(input, weight)
        return _weighted(diff, weight, reduction, True)
    _enum(reduction)
    return _reduce(diff, reduction)


@autocast_function
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d ** 2 / beta where d = |input - target| < beta, else d - 0.5 beta; beta = 0 is l1_loss
    (matches torch.nn.functional.smooth_l1_loss).

    RuntimeError "smooth_l1_loss does not support negative values for beta." for beta < 0.
    """
    _warn_size(input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    _enum(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(ember.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


@autocast_function
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d ** 2 where d = |input - target| < delta, else delta (d - 0.5 delta); ``weight`` (input's
    shape) scales each term (matches torch.nn.functional.huber_loss).

    RuntimeError "huber_loss does not support non-positive values for delta." for delta <= 0.
    """
    _warn_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    loss = ember.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        _check_weight(input, weight)
        return _weighted(loss, weight, reduction, False)
    _enum(reduction)
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- classification
_nll_loss_op = getattr(ember, "nll_loss", None)


def _check_nll(input, target, weight):
    """PyTorch's argument errors for nll_loss (input (C,), (N, C) or (N, C, d1, ...))."""
    if target._dtype not in (D.int64, D.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {D.torch_name(target._dtype)}")
    nd = input.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd != 1 and input._shape[0] != (target._shape[0] if target.dim() else 0) and nd <= 2:
        raise ValueError(f"Expected input batch_size ({input._shape[0]}) to match target batch_size "
                         f"({target._shape[0] if target.dim() else 0}).")
    if nd <= 2 and target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if nd > 2:
        expect = (input._shape[0],) + tuple(input._shape[2:])
        if tuple(target._shape) != expect:
            if target.dim() == nd - 1 and target._shape[0] == input._shape[0]:
                raise RuntimeError(f"size mismatch (got input: {list(input._shape)} , "
                                   f"target: {list(target._shape)}")
            raise RuntimeError(f"Expected target size {list(expect)}, got {list(target._shape)}")
    c = input._shape[1] if nd >= 2 else input._shape[0]
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight._shape)}")


def _nll_composite(input, target, weight, reduction, ignore_index):
    """nll_loss composed of ember ops: -input[n, target[n], ...] * weight[target[n]], ignored targets 0."""
    _check_nll(input, target, weight)
    cdim = 1 if input.dim() >= 2 else 0
    c = input._shape[cdim]
    valid = target != ignore_index
    safe = ember.where(valid, target, 0).long()
    bad = valid & ((safe < 0) | (safe >= c))
    if bool(bad.any()):
        raise IndexError(f"Target {int(target[bad].reshape(-1)[0])} is out of bounds.")
    picked = input.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim)
    w = valid.to(input._dtype) if weight is None else weight[safe] * valid
    loss = -picked * w
    if reduction == 0:
        return loss
    if reduction == 2:
        return loss.sum()
    return loss.sum() / w.sum()


@autocast_function
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood: -input[n, target[n]] * weight[target[n]], for log-probabilities
    ``input`` (C,), (N, C) or (N, C, d1, ...) and int64 class indices ``target`` (), (N,) or
    (N, d1, ...); targets equal to ``ignore_index`` add nothing; 'mean' divides by the total weight
    of the counted targets (matches torch.nn.functional.nll_loss).

    Errors as PyTorch's: wrong target dtype, batch size or shape, weight of the wrong length
    (RuntimeError / ValueError), a target out of [0, C) (IndexError "Target 9 is out of bounds.").
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    r = _enum(reduction)
    if _nll_loss_op is not None:
        return _nll_loss_op(input, target, weight, r, ignore_index)
    return _nll_composite(input, target, weight, r, ignore_index)


@autocast_function
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy between ``input`` logits (C,), (N, C) or (N, C, d1, ...) and ``target`` given as
    int64 class indices (shape of input without the class dim) or as class probabilities (input's shape,
    floating) (matches torch.nn.functional.cross_entropy).

    ``weight`` (C,) rescales each class; ``ignore_index`` (index targets) drops targets; ``label_smoothing``
    in [0, 1] mixes the target with the uniform distribution. With index targets 'mean' divides by the
    total weight of the counted targets, with probabilities by the number of samples.
    Errors: nll_loss's; RuntimeError "label_smoothing must be between 0.0 and 1.0. Got: X"; RuntimeError
    "Expected floating point type for target with class probabilities, got Long".
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    cdim = 1 if input.dim() >= 2 else 0
    if target._shape == input._shape:
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, cdim)
    if label_smoothing == 0.0:      # the common path: two ops
        return nll_loss(log_softmax(input, cdim), target, weight, None, ignore_index, None, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    logp = log_softmax(input, cdim)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    # the smoothing term: -sum_c weight_c * logp_c / C per sample, ignored targets 0, reduced like nll
    c = input._shape[cdim]
    if weight is not None:
        logp = logp * weight.reshape((c,) + (1,) * (input.dim() - cdim - 1))
    ignored = target == ignore_index
    smooth = (-logp.sum(cdim)).masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is None:
            smooth = smooth.sum() / (~ignored).sum()
        else:
            safe = ember.where(ignored, 0, target)
            smooth = smooth.sum() / weight[safe].masked_fill(ignored, 0.0).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / c)


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing, cdim):
    if not target._dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           f"got {D.torch_name(target._dtype)}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    c = input._shape[cdim]
    if label_smoothing > 0:
        target = target * (1.0 - label_smoothing) + label_smoothing / c
    logp = log_softmax(input, cdim)
    if weight is not None:
        logp = logp * weight.reshape((c,) + (1,) * (input.dim() - cdim - 1))
    loss = -(logp * target).sum(cdim)
    if reduction == "mean":
        return loss.sum() / (input.numel() // c) if input.numel() else loss.sum() / 0.0
    return _reduce(loss, reduction)


@autocast_function
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)) * weight for probabilities ``input`` in [0, 1], each log
    clamped to >= -100 as PyTorch does; ``weight`` broadcasts to the input
    (matches torch.nn.functional.binary_cross_entropy).

    ValueError "Using a target size (...) that is different to the input size (...) is deprecated. ..."
    when the shapes differ; RuntimeError "all elements of input should be between 0 and 1".
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if target._shape != input._shape:
        raise ValueError(f"Using a target size ({_size(target)}) that is different to the input size "
                         f"({_size(input)}) is deprecated. Please ensure they have the same size.")
    _enum(reduction)
    if bool(((input < 0) | (input > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = -(target * ember.log(input).clamp(min=-100) + (1 - target) * ember.log(1 - input).clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) computed stably from the logits; ``pos_weight``
    (broadcast along the last dim) weighs the positive term, ``weight`` broadcasts to the input
    (matches torch.nn.functional.binary_cross_entropy_with_logits).

    ValueError "Target size (...) must be the same as input size (...)" when the shapes differ.
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if target._shape != input._shape:
        raise ValueError(f"Target size ({_size(target)}) must be the same as input size ({_size(input)})")
    _enum(reduction)
    # log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)): no overflow for any x; max(-x, 0) written
    # (|x| - x) / 2 so that the gradient at x = 0 is -sigmoid(0) = -1/2 (a clamp would give -1)
    a = input.abs()
    log_sig_neg = (a - input) * 0.5 + ember.log1p(ember.exp(-a))
    if pos_weight is None:
        loss = (1 - target) * input + log_sig_neg
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence target * (log target - input) for log-probabilities ``input``
    (``target`` in log space too when ``log_target``); terms with target = 0 are 0
    (matches torch.nn.functional.kl_div).

    reduction 'batchmean' divides the sum by the batch size (input.size(0)); 'mean' (the default,
    which divides by the number of elements) warns as PyTorch does.
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if reduction != "batchmean":
        _enum(reduction)
    if log_target:
        loss = ember.exp(target) * (target - input)
    else:
        positive = target > 0
        loss = target * (ember.log(ember.where(positive, target, 1)) - input)
    if reduction == "batchmean":
        return loss.sum() / input._shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- less common
@autocast_function
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)) (matches torch.nn.functional.soft_margin_loss)."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    z = -target * input
    return _reduce(z.clamp(min=0) + ember.log1p(ember.exp(-z.abs())), reduction)


@autocast_function
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log likelihood (matches torch.nn.functional.poisson_nll_loss)."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if log_input:
        loss = ember.exp(input) - target * input
    else:
        loss = input - target * ember.log(input + eps)
    if full:
        import math
        stirling = target * ember.log(ember.where(target > 1, target, 1)) - target \
            + ember.log(ember.where(target > 1, target, 1) * (2 * math.pi)) * 0.5
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log likelihood 0.5 (log var + (input - target) ** 2 / var), plus 0.5 log(2 pi)
    with ``full`` (matches torch.nn.functional.gaussian_nll_loss).

    ``var``: a float, a tensor of the input's shape, of the input's shape without its last dim, or
    differing from it in one dim of size 1 (broadcast). Entries below ``eps`` are raised to ``eps`` for
    the value only: the gradient flows to ``var`` as if unclamped, as in PyTorch. ValueError "var has
    negative entry/entries", "var is of incorrect size", "<r> is not valid".
    """
    import math
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = ember.full_like(input, float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var._shape != input._shape:
        if input._shape[:-1] == var._shape:
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and sum(v for i, v in zip(input._shape, var._shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in _ENUM:
        raise ValueError(f"{reduction} is not valid")
    # clamp the value, not the gradient (PyTorch clamps a clone under no_grad)
    var = var + (var.clamp(min=eps) - var).detach()
    loss = (ember.log(var) + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_function
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1
    (matches torch.nn.functional.cosine_embedding_loss)."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    eps = 1e-12
    dim = input1.dim() - 1
    prod = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = prod / mag.sqrt()
    loss = ember.where(target == 1, 1 - cos, 0) + ember.where(target == -1, (cos - margin).clamp(min=0), 0)
    return _reduce(loss, reduction)


@autocast_function
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (x1 - x2) + margin) (matches torch.nn.functional.margin_ranking_loss)."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@autocast_function
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x for target 1, max(0, margin - x) for target -1 (matches torch.nn.functional.hinge_embedding_loss).

    Like PyTorch, a target outside {1, -1} gets both terms: where(target != 1, max(0, margin - x), 0)
    + where(target != -1, x, 0).
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    loss = ember.where(target != 1, (margin - input).clamp(min=0), 0) + ember.where(target != -1, input, 0)
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- margin losses over classes
def _check_long_target(target):
    if target._dtype != D.int64:
        raise RuntimeError(f"expected scalar type Long but found {D.torch_name(target._dtype)}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss: for each sample, sum over classes j != y of
    weight[y] * max(0, margin - x[y] + x[j]) ** p, divided by C (matches torch.nn.functional.multi_margin_loss).

    input (N, C) or (C,), target (N,) or () int64 class indices, weight (C,). Returns a 0-dim tensor, or
    (N,) for 'none'. ValueError "only p == 1 and p == 2 supported" / "weight must be one-dimensional";
    RuntimeError (PyTorch's messages) for a wrong input rank, target size or dtype, a class index out of
    range, or a weight of the wrong length.
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, emit_warning=False)
    _enum(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if input.dim() > 2 or (input.dim() >= 1 and input.numel() == 0 and input.dim() != 2):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input._shape)}")
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    n, c = x._shape
    if target.numel() != n or (not unbatched and target.dim() != 1) or (unbatched and target.dim() > 1):
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target._shape)}. Input "
                           f"has shape {list(input._shape)}.")
    _check_long_target(target)
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight._shape)}")
    y = target.reshape(n, 1)
    if n and bool(((y < 0) | (y >= c)).any()):
        raise RuntimeError("target out of range")
    z = (x - x.gather(1, y) + margin).clamp(min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.gather(0, y.reshape(-1)).reshape(n, 1)
    # the j == y term is margin ** p (times the weight), not part of the loss
    z = z.masked_fill(F_one_hot(y.reshape(-1), c).bool(), 0)
    loss = z.sum(1) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: each row of ``target`` lists the sample's classes, ended by the first -1;
    the loss is sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])), divided by C (matches
    torch.nn.functional.multilabel_margin_loss).

    input (N, C) or (C,), target int64 of the same shape. Returns a 0-dim tensor, or (N,) for 'none'.
    RuntimeError "inconsistent target size: ... for input of size: ..." and "argument #2 'target' is out
    of range" as PyTorch.
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, emit_warning=False)
    _enum(reduction)
    if input.dim() > 2:
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input._shape)}")
    if target._shape != input._shape:
        raise RuntimeError(f"inconsistent target size: {list(target._shape)} for input of size: "
                           f"{list(input._shape)}")
    _check_long_target(target)
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    t = target.reshape(1, -1) if unbatched else target
    n, c = x._shape
    if t.numel() and bool(((t < -1) | (t >= c)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    # listed[k, j]: entry j of row k comes before the row's first -1
    listed = (t != -1).to(D.int64).cumprod(1).bool()
    idx = t.clamp(min=0)
    is_target = (F_one_hot(idx, c).bool() & listed.unsqueeze(-1)).any(1)          # (N, C)
    x_listed = x.gather(1, idx)                                                   # (N, C) values x[y_j]
    hinge = (1 - x_listed.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)            # (N, j, i)
    keep = listed.unsqueeze(2) & (~is_target).unsqueeze(1)
    loss = hinge.masked_fill(~keep, 0).sum((1, 2)) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-label one-versus-all logistic loss: -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), times
    ``weight``, averaged over the class (last) dim (matches torch.nn.functional.multilabel_soft_margin_loss).

    input (N, C) or (C,), target of the same shape with 0 / 1 entries, weight broadcastable to the input.
    Returns a 0-dim tensor, or (N,) for 'none'. ValueError "<r> is not valid" for a bad reduction.
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, emit_warning=False)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input._shape[class_dim]
    if reduction not in _ENUM:
        raise ValueError(f"{reduction} is not valid")
    return _reduce(loss, reduction)


# ----------------------------------------------------------------------------- triplet losses
def _check_triplet(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) with d the p-norm pairwise distance (plus ``eps``) along the last
    dim; ``swap`` uses min(d(a, n), d(p, n)) (matches torch.nn.functional.triplet_margin_loss).

    anchor, positive, negative (N, D) or (D,) (same rank). Returns a 0-dim tensor, or (N,) for 'none'.
    ValueError "margin must be greater than 0, got M"; RuntimeError when the ranks differ.
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, emit_warning=False)
    _enum(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ember.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """triplet_margin_loss with any ``distance_function(x1, x2)`` (default: pairwise_distance) (matches
    torch.nn.functional.triplet_margin_with_distance_loss). ValueError for a bad reduction or margin <= 0;
    RuntimeError when the ranks differ.
    """
    if reduction not in _ENUM:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet(anchor, positive, negative)
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = ember.minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)
