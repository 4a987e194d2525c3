"""``swap_in_optimizer_params_and_state`` (matches torch.optim.swap_in_optimizer_params_and_state): run an
optimizer's API on other parameters and another ``state_dict()``-shaped state for the length of a ``with``
block, then put the live ones back.
"""
from __future__ import annotations

import contextlib
from collections import defaultdict

from .._tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_WHO = "swap_in_optimizer_params_and_state"


def _check_state(state):
    if not isinstance(state, dict):
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids "
                           f"to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_WHO} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _check_groups(optimizer, groups):
    if not isinstance(groups, list):
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, "
                           f"got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    return groups


def _check_group(idx, live, swapin):
    if not isinstance(swapin, dict):
        raise RuntimeError(f"{_WHO} requires each optimizer param group to be a dictionary.")
    ids = swapin.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed by "
                           "packed parameter ids.")
    if len(live["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params than the live "
                           "optimizer param group.")
    swapin_only = [k for k in swapin if k not in live]
    live_only = [k for k in live if k not in swapin]
    if swapin_only or live_only:
        raise RuntimeError(f"{_WHO} requires optimizer.state_dict()-style param group keys to exactly match the live "
                           f"optimizer group keys for group {idx}. Keys only in swap-in: {swapin_only}. Keys only "
                           f"in live: {live_only}.")
    return ids


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the block, ``optimizer`` works on ``swapin_parameters`` (a dict of tensors in the order of the
    optimizer's parameters, e.g. ``dict(model.named_parameters())``) with the state and hyperparameters of
    ``swapin_optim_state`` (an ``optimizer.state_dict()``-shaped dict: ``state`` keyed by packed ids,
    ``param_groups`` with packed ``params`` lists and the same keys as the live groups); on exit the live
    parameters, groups and state come back. In-place changes to the swapped-in state tensors (a ``step()``)
    reach ``swapin_optim_state``; new entries do not. RuntimeError, with PyTorch's messages, when the optimizer
    has no state yet or the swap-in state does not match it (matches
    torch.optim.swap_in_optimizer_params_and_state)."""
    if not optimizer.state:
        raise RuntimeError(f"{_WHO} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_WHO} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = _check_groups(optimizer, swapin_optim_state.get("param_groups"))
    flat = list(swapin_parameters.values())
    plan, offset, seen = [], 0, set()
    for idx, (live, swapin) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _check_group(idx, live, swapin)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_WHO} requires the explicit parameter state to match optimizer.param_groups "
                               "ordering.")
        plan.append((live, swapin, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_WHO} requires swapin_optim_state['state'] to be keyed only by packed parameter ids "
                           f"from param_groups[*]['params']; got extra keys {extra!r}.")

    live_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live, swapin, params in plan:
            live["params"] = params
            for key, value in swapin.items():
                if key != "params":
                    live[key] = value
            for p, pid in zip(params, swapin["params"]):
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snap in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snap)
        optimizer.state = live_state
