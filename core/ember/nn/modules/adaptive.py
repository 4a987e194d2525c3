"""AdaptiveLogSoftmaxWithLoss (matches torch.nn.AdaptiveLogSoftmaxWithLoss): the efficient softmax of
Grave et al. (2016) for large vocabularies. The frequent classes (below ``cutoffs[0]``) and one entry per
tail cluster share the head's softmax; each tail cluster has its own low-rank projection and softmax.

Written with out-of-place ember ops (index_select, gather, index_add, where), so it runs and
differentiates on every device; the submodule names (head, tail.i.0, tail.i.1) are PyTorch's, so
state dicts transfer both ways.
"""
from __future__ import annotations

from collections import namedtuple

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over ``n_classes`` classes of ``in_features``-sized inputs, split by ``cutoffs``
    (sorted unique ints in [1, n_classes - 1]); tail cluster i projects to in_features // div_value ** (i + 1)
    features first. ``forward(input (N, in_features) or (in_features,), target (N,) or ())`` returns the
    named tuple (output: the target log-probabilities (N,), loss: their negated mean); ``log_prob(input)`` the
    full (N, n_classes) log-probabilities; ``predict(input)`` the most likely classes (N,). ValueError for bad
    cutoffs; RuntimeError in PyTorch's words for mismatched shapes and out-of-range targets.
    """

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None,
                 dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = dict(device=device, dtype=dtype)
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self):
        """Re-draw the head's and every tail projection's parameters."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        """(output, loss): the log-probability of each target (N,) (or () unbatched) and -output.mean()."""
        from ... import int64, tensor, zeros
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        B = target.size(0)
        tl = [int(v) for v in target.tolist()]
        bad = [v for v in tl if not 0 <= v < self.n_classes]
        if bad:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{min(tl)}, {max(tl)}] were found. ")
        dev = input.device
        output = zeros(B, dtype=input.dtype, device=dev)
        head_index = list(tl)                       # the head entry of each row: its class or its cluster
        bounds = [0] + self.cutoffs
        for i in range(1, len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            rows = [r for r, v in enumerate(tl) if lo <= v < hi]
            if not rows:
                continue
            for r in rows:
                head_index[r] = self.shortlist_size + i - 1
            ri = tensor(rows, dtype=int64, device=dev)
            rel = tensor([[tl[r] - lo] for r in rows], dtype=int64, device=dev)
            logp = F.log_softmax(self.tail[i - 1](input.index_select(0, ri)), dim=1).gather(1, rel).squeeze(1)
            output = output.index_add(0, ri, logp)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        hi_t = tensor(head_index, dtype=int64, device=dev).unsqueeze(1)
        output = output + head_logprob.gather(1, hi_t).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        from ... import cat
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of every class: (N, in_features) -> (N, n_classes), (in_features,) -> (n_classes,)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each input: (N, in_features) -> (N,) int64, (in_features,) -> ()."""
        from ... import where
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        head_output = self.head(x)
        best = head_output.argmax(1)
        outside = best >= self.shortlist_size
        if bool(outside.any()):
            best = where(outside, self._get_full_log_prob(x, head_output).argmax(1), best)
        return best if batched else best.squeeze(0)
