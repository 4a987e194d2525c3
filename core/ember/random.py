"""ember.random: seeding and the random state (matches torch.random).

``manual_seed``, ``seed``, ``initial_seed``, ``get_rng_state`` and ``set_rng_state`` are ember's
top-level functions (``ember._random_state``); ``fork_rng`` saves the cpu state and the states of
an accelerator's devices and restores them after the block. The cpu default generator starts
from a random seed per process, as PyTorch's (``initial_seed()`` differs between processes);
``manual_seed`` makes a run repeatable.
"""
from __future__ import annotations

import contextlib
import warnings

from . import _registry
from ._random_state import manual_seed, seed, initial_seed, get_rng_state, set_rng_state, default_generator

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng", "default_generator",
           "thread_safe_generator"]

_fork_rng_warned_already = False


def _device_generators(device_type, devices, caller, devices_kw):
    """The default generators fork_rng saves: of ``devices`` (indices) of ``device_type``, all of its
    devices when None (warning once when there are several, as PyTorch)."""
    global _fork_rng_warned_already
    from ._device import device
    if device_type not in _registry.device_types and not _registry.load_for("device_types", device_type):
        _registry.ensure_loaded()
    dt = _registry.device_types.get(device_type)
    if devices is None:
        n = dt.runtime.device_count() if dt is not None and dt.runtime.is_available() else 0
        if n > 1 and not _fork_rng_warned_already:
            name = device_type.upper()
            warnings.warn(f"{name} reports that you have {n} available devices, and you have used {caller} without "
                          f"explicitly specifying which devices are being used. For safety, we initialize *every* "
                          f"{name} device by default, which can be quite slow if you have a lot of {name}s. Pass "
                          f"the '{devices_kw}' keyword argument of {caller} with the devices you use, e.g. "
                          f"devices=[0], or devices=range(ember.{device_type}.device_count()) to fork all of them "
                          f"and suppress this warning.", stacklevel=4)
            _fork_rng_warned_already = True
        devices = range(n)
    devices = list(devices)
    if devices and dt is None:
        raise _registry.not_available(device_type)
    return [dt.generator(device(device_type, int(getattr(i, "index", i) or 0)) if dt.runtime.indexed
                         else device(device_type)) for i in devices]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Inside the block, random ops may change the generators freely: on exit the cpu default
    generator and those of ``devices`` of ``device_type`` (default: the current accelerator's type,
    else "cuda"; all its devices when ``devices`` is None) get back the states they had on entry.
    ``enabled=False`` forks nothing. Matches torch.random.fork_rng."""
    if device_type == "meta" or not enabled:
        yield
        return
    if device_type is None:
        from .accelerator import current_accelerator
        acc = current_accelerator()
        device_type = acc.type if acc is not None else "cuda"
    gens = _device_generators(device_type, devices, _caller, _devices_kw)
    cpu_state = get_rng_state()
    states = [(g, g.get_state()) for g in gens]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for g, st in states:
            g.set_state(st)


def thread_safe_generator():
    """The generator a transform should draw from in a DataLoader worker (matches
    torch.random.thread_safe_generator): a thread worker's own generator; None in the main process and in
    process workers, whose default generator is already their own (ember's DataLoader workers are
    processes, so this is None everywhere today - random functions given ``generator=None`` use the
    default generator)."""
    from .utils.data import get_worker_info
    info = get_worker_info()
    return getattr(info, "generator", None) if info is not None else None
