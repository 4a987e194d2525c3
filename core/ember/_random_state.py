"""ember.Generator and the global seeding functions (match torch.Generator, torch.manual_seed).

A generator belongs to one device; its state object comes from that device's runtime
(``DeviceRuntime.new_generator_state``), created lazily, and random kernels draw
from it. ``ember.manual_seed`` seeds the default generator of every device.

Seeds as in PyTorch: the cpu default generator starts from a seed drawn from the OS once per
process (``ember.initial_seed()`` differs between processes; ``manual_seed`` makes runs
repeatable); a new ``ember.Generator()`` and the default generators of the other devices start
from the fixed ``DEFAULT_SEED``, as PyTorch's ``torch.Generator()`` and cuda generators do.
"""
from __future__ import annotations

import random as _pyrandom

from . import _registry

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator"]

DEFAULT_SEED = 67280421310721  # PyTorch's default seed

#: the cpu default generator's first seed in this process: 64 random bits from the OS (PyTorch's
#: getNonDeterministicRandom), drawn when this module is imported
PROCESS_SEED = _pyrandom.SystemRandom().getrandbits(64)


class Generator:
    """A random number generator on one device (matches torch.Generator).

    ``manual_seed(seed)`` returns self; ``initial_seed()``; ``seed()`` picks a
    non-deterministic seed; ``get_state()`` / ``set_state(t)`` round-trip the state as
    a uint8 cpu tensor. Raises RuntimeError for a negative or too-large seed.
    """

    def __init__(self, device="cpu"):
        self.device = _registry.canonical_device(device)
        self._seed = DEFAULT_SEED
        self._state = None

    @property
    def state(self):
        """The device runtime's state object (created on first use)."""
        if self._state is None:
            rt = _registry.device_type(self.device.type).runtime
            self._state = rt.new_generator_state(self._seed, self.device.index or 0)
        return self._state

    def manual_seed(self, seed) -> "Generator":
        """Seed this generator (the seed is taken mod 2**64; the state is recreated on next use); returns self.
        RuntimeError 'Overflow when unpacking long long int...' outside [-2**63, 2**64) (matches
        torch.Generator.manual_seed).
        """
        seed = int(seed)
        if seed < -(1 << 63) or seed >= (1 << 64):
            raise RuntimeError(f"Overflow when unpacking long long int: seed {seed} is out of range")
        self._seed = seed % (1 << 64)
        self._state = None
        return self

    def seed(self) -> int:
        """Seed with a non-deterministic 63-bit value from the OS and return it (matches torch.Generator.seed)."""
        s = _pyrandom.SystemRandom().getrandbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed last set (matches torch.Generator.initial_seed)."""
        return self._seed

    def get_state(self):
        """The runtime state's bytes as a cpu uint8 tensor (matches torch.Generator.get_state)."""
        from . import _ops
        raw = self.state.get_state()
        return _ops.frombuffer_bytes(raw)

    def set_state(self, new_state) -> "Generator":
        """Restore a state from ``get_state``'s uint8 tensor (the runtime raises for a foreign state); returns self.
        """
        self.state.set_state(bytes(new_state.numpy().tobytes()))
        return self

    def __repr__(self):
        return f"<ember.Generator object, device={self.device}>"


def _default(device="cpu"):
    dev = _registry.canonical_device(device)
    return _registry.device_type(dev.type).generator(dev)


class _DefaultGenerator:
    """``ember.default_generator``: the cpu device's default generator, resolved on use."""

    def __getattr__(self, name):
        return getattr(_default("cpu"), name)

    def __repr__(self):
        return "<ember default cpu Generator>"


default_generator = _DefaultGenerator()


#: the seed of the last ``manual_seed``: the default generator of a device type whose plugin loads later
#: starts from it too (``DeviceType.generator``), as if it had been loaded when the seed was set
last_manual_seed = None


def manual_seed(seed) -> Generator:
    """Seed the default generator of every device (matches torch.manual_seed); returns cpu's."""
    global last_manual_seed
    _registry.discover()
    last_manual_seed = seed
    for name, dt in _registry.device_types.items():
        if dt.runtime.is_available():
            for i in range(max(dt.runtime.device_count(), 1) if dt.runtime.indexed else 1):
                from ._device import device
                dt.generator(device(name, i) if dt.runtime.indexed else device(name)).manual_seed(seed)
    return _default("cpu")


def seed() -> int:
    """Seed every device with a non-deterministic seed; return it."""
    s = _pyrandom.SystemRandom().getrandbits(63)
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The cpu default generator's initial seed (matches torch.initial_seed)."""
    return _default("cpu").initial_seed()


def get_rng_state():
    """The cpu default generator's state as a uint8 tensor."""
    return _default("cpu").get_state()


def set_rng_state(new_state) -> None:
    """Restore the cpu default generator from a uint8 state tensor (matches torch.set_rng_state)."""
    _default("cpu").set_state(new_state)


#: called (no arguments) by every random op before it draws, when set: ``ember.func.vmap`` with
#: ``randomness="error"`` sets it to raise PyTorch's RuntimeError
on_draw = None


def resolve(generator, device):
    """The generator a random op on ``device`` uses: the given one (checked) or the device default."""
    if on_draw is not None:
        on_draw()
    if generator is None:
        return _registry.device_type(device.type).generator(device)
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator
