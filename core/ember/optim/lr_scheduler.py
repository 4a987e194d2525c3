"""Learning-rate schedulers (matches torch.optim.lr_scheduler).

A scheduler owns an optimizer and rewrites each param group's ``'lr'`` when ``step()`` is
called, once per epoch (or per batch, for OneCycleLR). Like PyTorch's, the schedulers are
chainable: ``get_lr()`` computes the next lr from the group's current one (the recursive
form), so two schedulers may act on one optimizer; ``step(epoch)`` (deprecated) uses the
closed form where one exists. The arithmetic follows PyTorch's, so the lr sequences are
the same floats.
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from functools import partial

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "OneCycleLR", "ReduceLROnPlateau", "PolynomialLR",
           "ChainedScheduler", "CyclicLR", "CosineAnnealingWarmRestarts"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available. Please open an issue if "
    "you are unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")

_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should "
    "call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
    "result in PyTorch skipping the first value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate")


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _format_param(name, optimizer, param):
    """One value per param group: a list/tuple of the right length, or a single value repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, got {len(param)}")
        return list(param)
    return [param] * len(optimizer.param_groups)


class LRScheduler:
    """Base class of the lr schedulers (matches torch.optim.lr_scheduler.LRScheduler).

    :param optimizer: the ember Optimizer whose groups' ``'lr'`` is scheduled.
    :param last_epoch: index of the last epoch; -1 (the default) starts a schedule, setting
        each group's ``'initial_lr'`` to its ``'lr'``. Resuming (last_epoch >= 0) needs
        ``'initial_lr'`` in every group (KeyError otherwise).
    Construction performs the initial ``step()`` (epoch 0). ``step()`` before any
    ``optimizer.step()`` warns as PyTorch does (the first lr of the schedule is skipped).
    """

    _get_lr_called_within_step = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming an "
                                   "optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        """The step made at construction: last_epoch -> last_epoch + 1, without the order warning."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict:
        """Every attribute but the optimizer (matches PyTorch)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore attributes saved by ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The lr of each group set by the last ``step()``."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next lr of each group (called by ``step()``; subclasses implement it)."""
        raise NotImplementedError

    def _warn_get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)

    def step(self, epoch=None):
        """Advance the schedule one epoch (or jump to ``epoch``, deprecated) and set each group's lr."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=2)     # the first step after construction
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
                self.last_epoch = epoch
                values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            if isinstance(group["lr"], Tensor):
                group["lr"].fill_(lr)
            else:
                group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch) (matches torch.optim.lr_scheduler.LambdaLR).

    ``lr_lambda``: a function of the epoch, or a list of them (one per group; ValueError
    "Expected N lr_lambdas, but got M" otherwise)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """As the base, with callable objects' ``__dict__`` in place of the lambdas (functions: None)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)
        for i, fn in enumerate(self.lr_lambdas):
            if not isinstance(fn, types.FunctionType):
                state["lr_lambdas"][i] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        """Restore a ``state_dict()``: the scheduler's attributes, and each callable object's ``__dict__`` (plain
        functions are kept as they are).
        """
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lr_lambdas
        for i, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[i].__dict__.update(fn)

    def get_lr(self):
        """[base_lr * lr_lambda(last_epoch)] per param group; UserWarning when called outside ``step()`` (use
        get_last_lr()).
        """
        self._warn_get_lr()
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(LambdaLR):
    """lr = lr * lr_lambda(epoch) for epoch > 0 (matches torch.optim.lr_scheduler.MultiplicativeLR)."""

    def get_lr(self):
        """[lr * lr_lambda(last_epoch)] per param group for epoch > 0, the current lrs at epoch 0; UserWarning when
        called outside ``step()``.
        """
        self._warn_get_lr()
        if self.last_epoch > 0:
            return [group["lr"] * lmbda(self.last_epoch)
                    for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups)]
        return [group["lr"] for group in self.optimizer.param_groups]


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size) (matches torch.optim.lr_scheduler.StepLR)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lrs times ``gamma`` when last_epoch is a positive multiple of ``step_size``, else unchanged;
        UserWarning when called outside ``step()``.
        """
        self._warn_get_lr()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr multiplied by gamma at each milestone epoch (matches torch.optim.lr_scheduler.MultiStepLR);
    a milestone listed twice multiplies by gamma ** 2."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lrs times gamma ** (times last_epoch is listed in milestones), unchanged between milestones;
        UserWarning when called outside ``step()``.
        """
        self._warn_get_lr()
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until epoch ``total_iters``, then initial_lr (matches
    torch.optim.lr_scheduler.ConstantLR). ValueError unless 0 <= factor <= 1."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """lr * factor at epoch 0, lr / factor at epoch ``total_iters``, unchanged otherwise; UserWarning when
        called outside ``step()``.
        """
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return [group["lr"] for group in groups]
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """lr factor moving linearly from ``start_factor`` to ``end_factor`` over ``total_iters``
    epochs (matches torch.optim.lr_scheduler.LinearLR). ValueError for 0 < start_factor <= 1
    or 0 <= end_factor <= 1 violated."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The recursive step of the linear factor ramp (start_factor at epoch 0, end_factor from epoch
        ``total_iters``); UserWarning when called outside ``step()``.
        """
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        d = self.end_factor - self.start_factor
        return [group["lr"] * (1.0 + d / (self.total_iters * self.start_factor + (self.last_epoch - 1) * d))
                for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = lr * gamma every epoch (matches torch.optim.lr_scheduler.ExponentialLR)."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lrs times ``gamma`` (unchanged at epoch 0); UserWarning when called outside ``step()``.
        """
        self._warn_get_lr()
        if self.last_epoch == 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (matches
    torch.optim.lr_scheduler.CosineAnnealingLR, including its recursive form, which keeps
    cycling past T_max and composes with other schedulers)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The recursive cosine-annealing step between the lr and ``eta_min`` over ``T_max`` epochs (closed form on
        the first step after resuming); UserWarning when called outside ``step()``.
        """
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        e, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if e == 0:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and e > 0:
            return [eta_min + (base_lr - eta_min) * (1 + math.cos(e * math.pi / T)) / 2
                    for base_lr in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [group["lr"] + (base_lr - eta_min) * (1 - math.cos(math.pi / T)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (group["lr"] - eta_min)
                + eta_min for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at the epochs in ``milestones``
    (matches torch.optim.lr_scheduler.SequentialLR). ValueError when no scheduler is given,
    when one belongs to another optimizer, or when len(milestones) != len(schedulers) - 1."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError(f"{self.__class__.__name__} expects at least one scheduler, but got no scheduler.")
        for idx, sched in enumerate(schedulers):
            if not hasattr(sched, "optimizer"):
                raise TypeError(f"{self.__class__.__name__} at index {idx} should have `optimizer` as its attribute.")
            if isinstance(sched, ReduceLROnPlateau):
                raise ValueError(f"{self.__class__.__name__} does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling `step`, but got one at "
                                 f"index {idx} in the given schedulers sequence.")
            if optimizer != sched.optimizer:
                raise ValueError(f"{self.__class__.__name__} expects all schedulers to belong to the same optimizer, "
                                 f"but got scheduler {sched.__class__.__name__} at index {idx} has {sched.optimizer}, "
                                 f"which is different from {optimizer.__class__.__name__}.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        _check_optimizer(optimizer)
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:       # back to the initial lrs ...
            group["lr"] = group["initial_lr"]
        for sched in schedulers:                   # ... undoing the schedulers' initial steps
            sched.last_epoch -= 1
        schedulers[0]._initial_step()              # and only the first one starts
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        """Step the scheduler in charge of this epoch (a new one starts at its epoch 0)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                sched.step(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    def state_dict(self):
        """The scheduler's attributes without the optimizer, with each child scheduler's state_dict under
        ``_schedulers``.
        """
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Restore a ``state_dict()``, including each child scheduler's state."""
        scheds = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = scheds
        for i, s in enumerate(scheds):
            self._schedulers[i].load_state_dict(s)


def _annealing_cos(start, end, pct):
    """Cosine from ``start`` (pct 0) to ``end`` (pct 1)."""
    cos_out = math.cos(math.pi * pct) + 1
    return end + (start - end) / 2.0 * cos_out


def _annealing_linear(start, end, pct):
    """Straight line from ``start`` (pct 0) to ``end`` (pct 1)."""
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy (matches torch.optim.lr_scheduler.OneCycleLR): the lr rises from
    max_lr / div_factor to max_lr over ``pct_start`` of ``total_steps`` steps, then anneals to
    initial_lr / final_div_factor (three_phase: back to initial_lr first); the momentum (or
    Adam's beta1) cycles the other way between max_momentum and base_momentum.
    Step it after every batch. ValueError with PyTorch's messages for bad totals, pct_start,
    anneal_strategy, for an optimizer without momentum when cycle_momentum, and when stepped
    past total_steps."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1, "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for idx, group in enumerate(optimizer.param_groups):
                group["initial_lr"] = max_lrs[idx] / div_factor
                group["max_lr"] = max_lrs[idx]
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_momentum, *group["betas"][1:])
                    else:
                        group["momentum"] = m_momentum
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        return (_annealing_cos if self._anneal_func_type == "cos" else _annealing_linear)(start, end, pct)

    def get_lr(self):
        """The lr of each group for step ``last_epoch`` (annealed within its phase), also setting the group's
        momentum or beta1 when ``cycle_momentum``; ValueError "Tried to step N times. The specified number of
        total steps is T" past total_steps; UserWarning when called outside ``step()``.
        """
        self._warn_get_lr()
        lrs = []
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total steps is "
                             f"{self.total_steps}")
        phases = self._schedule_phases
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal_func(group[phase["start_momentum"]], group[phase["end_momentum"]],
                                                     pct)
                    break
                start_step = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when a metric has stopped improving for ``patience``
    epochs (matches torch.optim.lr_scheduler.ReduceLROnPlateau). ``step(metric)`` each epoch.

    mode 'min' / 'max'; threshold_mode 'rel' (better than best * (1 -+ threshold)) or 'abs'
    (best -+ threshold); ``cooldown`` epochs ignored after a reduction; lrs never go below
    ``min_lr`` (a number or one per group) and changes smaller than ``eps`` are skipped.
    ValueError with PyTorch's messages for factor >= 1, an unknown mode / threshold_mode,
    or a min_lr list of the wrong length.
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        """Record this epoch's ``metrics`` (a number or one-element tensor) and reduce the lr if due."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self, epoch):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError("The number of param groups in the `optimizer` "
                                   f"({len(groups)}) differs from when `ReduceLROnPlateau` was initialized "
                                   f"({len(self.min_lrs)}), usually due to a new param group being added to the "
                                   "optimizer. Please modify the `min_lrs` field to match the length of the "
                                   "`optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, group in enumerate(groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                if isinstance(group["lr"], Tensor):
                    group["lr"].fill_(new_lr)
                else:
                    group["lr"] = new_lr

    @property
    def in_cooldown(self):
        """Whether a reduction happened less than ``cooldown`` epochs ago."""
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        """Whether metric ``a`` improves on ``best`` under mode / threshold_mode."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict):
        """Restore a ``state_dict()`` and rebuild the comparison from its mode / threshold / threshold_mode.
        """
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode)


def _set_lr(group, lr):
    """Write ``lr`` into a param group (in place when the group's lr is a tensor)."""
    if isinstance(group["lr"], Tensor):
        group["lr"].fill_(lr)
    else:
        group["lr"] = lr


def _check_chainable(name, schedulers, optimizer):
    """ValueError / TypeError (PyTorch's messages) unless every scheduler has ``optimizer`` as its optimizer and
    none is a ReduceLROnPlateau."""
    for idx, sched in enumerate(schedulers):
        if not hasattr(sched, "optimizer"):
            raise TypeError(f"{name} at index {idx} should have `optimizer` as its attribute.")
        if isinstance(sched, ReduceLROnPlateau):
            raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs "
                             f"to be specified when calling `step`, but got one at index {idx} in the given "
                             "schedulers sequence.")
        if optimizer != sched.optimizer:
            raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{sched.__class__.__name__} at index {idx} has {sched.optimizer}, which is different "
                             f"from {optimizer.__class__.__name__}.")


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power (matches
    torch.optim.lr_scheduler.PolynomialLR; chainable: each step multiplies the current lr by
    the ratio of consecutive factors, then the lr stays at 0 after ``total_iters`` epochs)."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The current lrs times the decay of this epoch; UserWarning when called outside ``step()``."""
        self._warn_get_lr()
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        e, T = self.last_epoch, self.total_iters
        decay_factor = ((1.0 - e / T) / (1.0 - (e - 1) / T)) ** self.power
        return [group["lr"] * decay_factor for group in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base_lr in self.base_lrs]


class ChainedScheduler(LRScheduler):
    """Step several schedulers of one optimizer together, each acting on the lr the previous one
    left (matches torch.optim.lr_scheduler.ChainedScheduler). ValueError when ``schedulers`` is
    empty, when one belongs to another optimizer or is a ReduceLROnPlateau; TypeError for an
    object without ``optimizer``."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{self.__class__.__name__} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_chainable(self.__class__.__name__, schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = [group["lr"] for group in schedulers[-1].optimizer.param_groups]

    def step(self):
        """Step every chained scheduler, in order."""
        for sched in self._schedulers:
            sched.step()
        self._last_lr = [group["lr"] for group in self._schedulers[-1].optimizer.param_groups]

    def state_dict(self):
        """The attributes without the optimizer, each chained scheduler's state_dict under ``_schedulers``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        """Restore a ``state_dict()``, including each chained scheduler's state."""
        scheds = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = scheds
        for i, s in enumerate(scheds):
            self._schedulers[i].load_state_dict(s)


class CyclicLR(LRScheduler):
    """Cyclical learning rate (matches torch.optim.lr_scheduler.CyclicLR): the lr goes from
    ``base_lr`` up to ``max_lr`` in ``step_size_up`` steps and back in ``step_size_down``
    (default: the same), the amplitude scaled per cycle ('triangular': 1, 'triangular2': halved
    each cycle) or per iteration ('exp_range': gamma ** iteration), or by ``scale_fn`` with
    ``scale_mode`` 'cycle' / 'iterations'. With ``cycle_momentum`` the momentum (or Adam's
    beta1) cycles the other way between ``max_momentum`` and ``base_momentum``. Step it after
    every batch. Construction sets each group's lr to base_lr. ValueError "mode is invalid and
    scale_fn is None", "optimizer must support momentum or beta1 with `cycle_momentum` option
    enabled", and for per-group lists of the wrong length."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_lr(group, lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(self.max_momentums, self.base_momentums,
                                                         optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_momentum, *group["betas"][1:])
                    else:
                        group["momentum"] = m_momentum
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x):
        """The amplitude scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x):
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x):
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma, x):
        return gamma ** x

    def get_lr(self):
        """The lr of each group at iteration ``last_epoch`` (setting momentum / beta1 when cycling it);
        UserWarning when called outside ``step()``."""
        self._warn_get_lr()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * self.scale_fn(at)
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base_m, max_m in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                momentum = max_m - (max_m - base_m) * scale_factor * self.scale_fn(at)
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs

    def state_dict(self):
        """As the base, without the built-in scale function; a custom callable object's ``__dict__``
        in place of ``scale_fn`` (a plain function: None)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        """Restore a ``state_dict()`` (the custom scale function's attributes too) and rebuild the scale function."""
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        state_dict["_scale_fn_custom"] = fn
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing with warm restarts, SGDR (matches
    torch.optim.lr_scheduler.CosineAnnealingWarmRestarts): lr = eta_min + (initial_lr - eta_min)
    * (1 + cos(pi * T_cur / T_i)) / 2, where T_cur counts epochs since the last restart and the
    period T_i starts at ``T_0`` and is multiplied by ``T_mult`` at each restart. ``step(epoch)``
    accepts fractional epochs (per-batch updates). ValueError "Expected positive integer T_0",
    "Expected integer T_mult >= 1", "Expected float or int eta_min", "Expected non-negative epoch"."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The lr of each group at T_cur of the current period; UserWarning when called outside ``step()``."""
        self._warn_get_lr()
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None):
        """Advance one epoch, or go to the (possibly fractional) ``epoch``; restarts when a period ends."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False) and not self._is_initial:
            warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_lr(group, lr)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
