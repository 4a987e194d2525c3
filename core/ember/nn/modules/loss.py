"""Loss modules (matches torch.nn's losses): thin Modules over ember.nn.functional.

Every loss takes ``reduction`` = 'mean' | 'sum' | 'none' (PyTorch's deprecated
``size_average`` / ``reduce`` are still accepted, with their warning). Class weights and
``pos_weight`` are registered as buffers, as PyTorch does, so they follow ``.to()`` and
appear in ``state_dict()`` when given.
"""
from __future__ import annotations

from .. import functional as F
from .._functional.loss import legacy_reduction
from .distance import PairwiseDistance
from .module import Module

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "SoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
           "CosineEmbeddingLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
           "MultiLabelSoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss", "NLLLoss2d"]


class _Loss(Module):
    """Base of the losses: holds ``reduction``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error |input - target| (matches torch.nn.L1Loss; see F.l1_loss)."""

    __constants__ = ["reduction"]

    def forward(self, input, target):
        """F.l1_loss of input (*) and target of the same shape -> a 0-dim tensor for reduction 'mean' / 'sum', the
        elementwise loss for 'none' (matches torch.nn.L1Loss.forward).
        """
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error (input - target) ** 2 (matches torch.nn.MSELoss; see F.mse_loss)."""

    __constants__ = ["reduction"]

    def forward(self, input, target):
        """F.mse_loss of input (*) and target of the same shape -> a 0-dim tensor for reduction 'mean' / 'sum', the
        elementwise loss for 'none' (matches torch.nn.MSELoss.forward).
        """
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above (matches torch.nn.SmoothL1Loss; see F.smooth_l1_loss)."""

    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        """F.smooth_l1_loss of input (*) and target of the same shape -> a 0-dim tensor for reduction 'mean' /
        'sum', the elementwise loss for 'none' (matches torch.nn.SmoothL1Loss.forward).
        """
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, delta-scaled absolute error above (matches torch.nn.HuberLoss)."""

    __constants__ = ["reduction", "delta"]

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        """F.huber_loss of input (*) and target of the same shape -> a 0-dim tensor for reduction 'mean' / 'sum',
        the elementwise loss for 'none' (matches torch.nn.HuberLoss.forward).
        """
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits (N, C) / (N, C, d1, ...) / (C,) against class indices or class
    probabilities; ``weight`` (C,) buffer, ``ignore_index``, ``label_smoothing``
    (matches torch.nn.CrossEntropyLoss; see F.cross_entropy)."""

    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """F.cross_entropy of logits (N, C), (N, C, d1, ...) or (C,) against int64 class indices (N) / (N, d1, ...)
        / () or class probabilities of the input's shape -> a 0-dim tensor for reduction 'mean' / 'sum', the
        elementwise loss for 'none' ((N, d1, ...)) (matches torch.nn.CrossEntropyLoss.forward).
        """
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities against class indices; ``weight`` (C,) buffer,
    ``ignore_index`` (matches torch.nn.NLLLoss; see F.nll_loss)."""

    __constants__ = ["ignore_index", "reduction"]

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        """F.nll_loss of log-probabilities (N, C), (N, C, d1, ...) or (C,) against int64 class indices (N) / (N,
        d1, ...) / () -> a 0-dim tensor for reduction 'mean' / 'sum', the elementwise loss for 'none'; 'mean'
        divides by the summed weights of the non-ignored targets (matches torch.nn.NLLLoss.forward).
        """
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities; ``weight`` buffer broadcast to the input
    (matches torch.nn.BCELoss; see F.binary_cross_entropy)."""

    __constants__ = ["reduction"]

    def forward(self, input, target):
        """F.binary_cross_entropy of probabilities input (*) in [0, 1] and target of the same shape -> a 0-dim
        tensor for reduction 'mean' / 'sum', the elementwise loss for 'none' (matches torch.nn.BCELoss.forward).
        """
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits, computed stably; ``weight`` and ``pos_weight`` buffers
    (matches torch.nn.BCEWithLogitsLoss; see F.binary_cross_entropy_with_logits)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        """F.binary_cross_entropy_with_logits of logits input (*) and target of the same shape -> a 0-dim tensor
        for reduction 'mean' / 'sum', the elementwise loss for 'none' (matches
        torch.nn.BCEWithLogitsLoss.forward).
        """
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities; reduction also 'batchmean'; ``log_target``
    (matches torch.nn.KLDivLoss; see F.kl_div)."""

    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        """F.kl_div of log-probabilities input (*) against target (*) (log-probabilities with ``log_target``) -> a
        0-dim tensor for 'mean' / 'sum' / 'batchmean', the elementwise loss for 'none' (matches
        torch.nn.KLDivLoss.forward).
        """
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * input)) (matches torch.nn.SoftMarginLoss)."""

    __constants__ = ["reduction"]

    def forward(self, input, target):
        """F.soft_margin_loss of input (*) and target of +1 / -1 of the same shape -> a 0-dim tensor for reduction
        'mean' / 'sum', the elementwise loss for 'none' (matches torch.nn.SoftMarginLoss.forward).
        """
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood (matches torch.nn.PoissonNLLLoss)."""

    __constants__ = ["log_input", "full", "eps", "reduction"]

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        """F.poisson_nll_loss of log_input (*) (a rate, or its log with ``log_input=True``) and target (*) -> a
        0-dim tensor for reduction 'mean' / 'sum', the elementwise loss for 'none' (matches
        torch.nn.PoissonNLLLoss.forward).
        """
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood (matches torch.nn.GaussianNLLLoss)."""

    __constants__ = ["full", "eps", "reduction"]

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        """F.gaussian_nll_loss of input (N, *) and target (N, *) with variance ``var`` of the same shape, one fewer
        trailing dim or a trailing 1 -> a 0-dim tensor for reduction 'mean' / 'sum', the elementwise loss for
        'none' (matches torch.nn.GaussianNLLLoss.forward).
        """
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine embedding loss (matches torch.nn.CosineEmbeddingLoss)."""

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        """F.cosine_embedding_loss of input1, input2 (N, D) or (D) and target (N) or () of +1 / -1 -> a 0-dim
        tensor for reduction 'mean' / 'sum', the elementwise loss for 'none' (N) (matches
        torch.nn.CosineEmbeddingLoss.forward).
        """
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -target * (x1 - x2) + margin) (matches torch.nn.MarginRankingLoss)."""

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        """F.margin_ranking_loss of input1, input2 (N) or () and target of +1 / -1 of the same shape -> a 0-dim
        tensor for reduction 'mean' / 'sum', the elementwise loss for 'none' (matches
        torch.nn.MarginRankingLoss.forward).
        """
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """x for target 1, max(0, margin - x) for target -1 (matches torch.nn.HingeEmbeddingLoss)."""

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        """F.hinge_embedding_loss of input (*) and target of +1 / -1 of the same shape -> a 0-dim tensor for
        reduction 'mean' / 'sum', the elementwise loss for 'none' (matches torch.nn.HingeEmbeddingLoss.forward).
        """
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (matches torch.nn.MultiMarginLoss; see F.multi_margin_loss). ValueError
    "only p == 1 and p == 2 supported" / "weight must be one-dimensional" at construction."""

    __constants__ = ["p", "margin", "reduction"]

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError("weight must be one-dimensional")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        """F.multi_margin_loss of input (N, C) or (C,) and int64 target (N,) or () -> 0-dim, or (N,) for
        'none'."""
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over class-index targets ended by -1 (matches torch.nn.MultiLabelMarginLoss;
    see F.multilabel_margin_loss)."""

    __constants__ = ["reduction"]

    def forward(self, input, target):
        """F.multilabel_margin_loss of input (N, C) or (C,) and an int64 target of the same shape -> 0-dim, or
        (N,) for 'none'."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss (matches torch.nn.MultiLabelSoftMarginLoss; see
    F.multilabel_soft_margin_loss)."""

    __constants__ = ["reduction"]

    def forward(self, input, target):
        """F.multilabel_soft_margin_loss of input (N, C) and 0 / 1 target (N, C) -> 0-dim, or (N,) for 'none'."""
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) with the p-norm distance (matches torch.nn.TripletMarginLoss; see
    F.triplet_margin_loss). ValueError "TripletMarginLoss: expected margin to be greater than 0, got M
    instead" at construction."""

    __constants__ = ["margin", "p", "eps", "swap", "reduction"]

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        """F.triplet_margin_loss of (N, D) or (D,) inputs -> 0-dim, or (N,) for 'none'."""
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function (matches torch.nn.TripletMarginWithDistanceLoss; see
    F.triplet_margin_with_distance_loss). ValueError "TripletMarginWithDistanceLoss: expected margin to be
    greater than 0, got M instead" at construction."""

    __constants__ = ["margin", "swap", "reduction"]

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        """F.triplet_margin_with_distance_loss with the stored settings -> 0-dim, or (N,) for 'none'."""
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss over log-probabilities (T, N, C) (matches torch.nn.CTCLoss);
    ``blank`` class index, ``zero_infinity`` replaces impossible (inf) losses by 0. See F.ctc_loss."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        """F.ctc_loss: a scalar for 'mean' / 'sum', (N,) for 'none', the dtype of log_probs."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class NLLLoss2d(NLLLoss):
    """Deprecated alias of NLLLoss (matches torch.nn.NLLLoss2d): FutureWarning on construction."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        import warnings
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and "
                      "see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


# torch.nn.modules.loss also holds LinearCrossEntropyLoss (defined beside Linear; imported last: it subclasses
# _WeightedLoss above)
from .linear_cross_entropy import LinearCrossEntropyLoss  # noqa: E402,F401
