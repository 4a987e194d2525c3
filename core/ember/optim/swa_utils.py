"""Stochastic weight averaging and exponential moving averages of models (matches torch.optim.swa_utils).

``AveragedModel`` keeps a copy of a model whose parameters (and optionally buffers) are a
running average of the model's; ``SWALR`` anneals each group's lr towards a constant SWA lr;
``update_bn`` recomputes BatchNorm statistics for the averaged weights with one pass over the
data. The averaging functions do PyTorch's operations in PyTorch's order (on the cpu PyTorch
uses its per-tensor formula ``avg + (p - avg) / (n + 1)``, and ``lerp`` for the multi-tensor
ones), so float64 averages are bit-identical to PyTorch's.
"""
from __future__ import annotations

import copy
import itertools
import math
import warnings

import ember

from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """``fn(ema_params, params, n_averaged)`` updating each ema tensor in place to
    ``lerp(ema, p, 1 - decay)`` (integer tensors: ``ema * decay + p * (1 - decay)``).
    ValueError unless 0 <= decay <= 1."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with ember.no_grad():
            if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """``fn(avg_params, params, n_averaged)`` updating each average in place to the mean of the
    ``n_averaged + 1`` models seen: ``lerp(avg, p, 1 / (n + 1))``, the weight computed as PyTorch
    does (a tensor of the default float dtype when ``n_averaged`` is a tensor)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with ember.no_grad():
            if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
                if isinstance(num_averaged, ember.Tensor):
                    weight = (num_averaged + 1).reciprocal().item()     # PyTorch's 1 / tensor
                else:
                    weight = 1 / (num_averaged + 1)
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    diff = p_model - p_avg
                    if isinstance(num_averaged, ember.Tensor):
                        p_avg.addcdiv_(diff, num_averaged + 1)
                    else:
                        p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``fn(ema, p, n_averaged) -> decay * ema + (1 - decay) * p`` (a new tensor).
    ValueError unless 0 <= decay <= 1."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with ember.no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """``fn(avg, p, n_averaged) -> avg + (p - avg) / (n_averaged + 1)`` (a new tensor): the mean of
    the ``n_averaged + 1`` models seen."""

    def swa_update(averaged_param, current_param, num_averaged):
        with ember.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are averaged over the models passed to
    ``update_parameters`` (matches torch.optim.swa_utils.AveragedModel).

    :param model: the module to average (deep-copied; moved to ``device`` if given).
    :param avg_fn: ``fn(avg, p, n_averaged) -> new avg`` per tensor, or
    :param multi_avg_fn: ``fn(avg_list, p_list, n_averaged)`` updating in place, called once per
        (device, dtype) group. With neither: the equally weighted mean (SWA).
    :param use_buffers: average the buffers too (otherwise they are copied from the model).

    The first ``update_parameters`` copies the model; ``n_averaged`` (an int64 buffer) counts the
    updates. ``forward`` calls the copy. AssertionError when both avg_fn and multi_avg_fn are given.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current parameters (and buffers, with use_buffers) into the average."""
        with ember.no_grad():
            self._update(model)

    def _update(self, model):
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        averaged, current = [], []
        first = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            averaged.append(p_averaged.detach())
            current.append(p_model_)
            if first:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups: dict = {}
                for a, c in zip(averaged, current):
                    pair = groups.setdefault((a.device, a.dtype), ([], []))
                    pair[0].append(a)
                    pair[1].append(c)
                for (device, _), (avg_group, cur_group) in groups.items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(avg_group, cur_group, n_averaged)
                    else:      # PyTorch's per-tensor formula (it has no multi-tensor kernels on the cpu)
                        avg_fn = get_swa_avg_fn()
                        for a, c in zip(avg_group, cur_group):
                            a.copy_(avg_fn(a, c, n_averaged))
            else:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


def update_bn(loader, model, device=None):
    """Recompute the running statistics of every BatchNorm layer of ``model`` with one pass over
    ``loader`` (batches, or (input, ...) tuples whose first item is the input; moved to ``device``
    if given), as cumulative averages (matches torch.optim.swa_utils.update_bn). The layers'
    momentum and the model's training mode are restored afterwards; a model without BatchNorm
    is left untouched."""
    with ember.no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr from its current value to ``swa_lr`` (a number or one per group)
    over ``anneal_epochs`` epochs, then hold it (matches torch.optim.swa_utils.SWALR).
    ``anneal_strategy``: 'cos' or 'linear'. ValueError "anneal_strategy must be one of 'cos' or
    'linear', instead got ..." and "anneal_epochs must be equal or greater than 0, got ..."."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self):
        """The lr of each group after this step of the annealing; UserWarning when called outside ``step()``."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # recover the lr the annealing started from, then move one step further
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self):
        """The attributes without the optimizer and the anneal function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore a ``state_dict()`` and the anneal function it names."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
