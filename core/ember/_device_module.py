"""Device modules: ``ember.<type>`` built from a device type's runtime.

Every device module has the same surface - is_available, device_count, current_device,
set_device, device(i) context manager, get_device_name, synchronize, manual_seed,
manual_seed_all, initial_seed, the memory statistics - plus what the runtime adds
(``module_extras``: Stream, Event, ...). A service the runtime did not provide
raises NotImplementedError naming the plugin and the service; it never does nothing.
"""
from __future__ import annotations

import functools
import sys
import types

from . import memory as _memory

_MEMORY_FUNCS = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                 "reset_peak_memory_stats", "memory_stats", "memory_summary", "set_per_process_memory_fraction")


class _DeviceContext:
    """``ember.<type>.device(i)``: makes device i current (and the default for factories) inside."""

    def __init__(self, dt, index):
        from ._device import device
        self.dt = dt
        self.dev = device(dt.name, index) if not isinstance(index, device) else index
        self.prev = None

    def __enter__(self):
        from . import _registry
        self.prev = self.dt.runtime.current_device()
        self.dt.runtime.set_device(self.dev.index)
        _registry.push_default_device(self.dev)
        return self

    def __exit__(self, *exc):
        from . import _registry
        _registry.pop_default_device()
        self.dt.runtime.set_device(self.prev)


def make_device_module(dt) -> types.ModuleType:
    """Build the ``ember.<name>`` module of device type ``dt``: is_available, device_count, set_device, synchronize,
    device contexts, seeding, empty_cache and the runtime's module_extras.
    """
    from ._device import device
    rt = dt.runtime
    mod = types.ModuleType(f"ember.{dt.name}", f"Device module of '{dt.name}' (plugin '{dt.plugin}').")

    def _dev(d):
        if d is None:
            return device(dt.name, rt.current_device()) if rt.indexed else device(dt.name)
        if isinstance(d, int):
            return device(dt.name, d)
        return device(d)

    mod.is_available = rt.is_available
    mod.device_count = rt.device_count
    mod.current_device = rt.current_device
    mod.set_device = lambda d: rt.set_device(_dev(d).index or 0)
    mod.get_device_name = lambda d=None: rt.get_device_name(_dev(d).index or 0)
    mod.synchronize = lambda d=None: rt.synchronize(_dev(d).index or 0)
    mod.device = lambda i: _DeviceContext(dt, i)
    mod.is_initialized = lambda: True

    def manual_seed(seed):
        """Seed the current device's generator."""
        dt.generator(_dev(None)).manual_seed(seed)

    def manual_seed_all(seed):
        """Seed every device of this type."""
        for i in range(max(rt.device_count(), 1)):
            dt.generator(device(dt.name, i) if rt.indexed else device(dt.name)).manual_seed(seed)

    mod.manual_seed, mod.manual_seed_all = manual_seed, manual_seed_all
    mod.initial_seed = lambda: dt.generator(_dev(None)).initial_seed()
    for name in _MEMORY_FUNCS:
        setattr(mod, name, _bind(getattr(_memory, name), _dev))

    def empty_cache():
        """Return cached, unused blocks of every device of this type."""
        for _, a in _allocs(dt.name):
            a.empty_cache()
    mod.empty_cache = empty_cache
    mod.OutOfMemoryError = _memory.OutOfMemoryError
    for k, v in rt.module_extras().items():
        setattr(mod, k, v)
    from .amp._aliases import device_amp_module
    amp = device_amp_module(dt.name)       # ember.cpu.amp / ember.cuda.amp (PyTorch's deprecated spellings)
    if amp is not None:
        mod.amp = amp
    sys.modules[mod.__name__] = mod
    return mod


def _allocs(name):
    from . import _factory
    return [(d, a) for d, a in _factory._allocators.items() if d.type == name]


def _bind(f, dev):
    """``f`` with this module's device as the default ``device``."""
    if f is _memory.set_per_process_memory_fraction:
        def g(fraction, device=None, **kw):
            return f(fraction, device=dev(device), **kw)
    else:
        def g(device=None, **kw):
            return f(device=dev(device), **kw)
    return functools.wraps(f)(g)


def remove_device_module(name):
    """Drop ``ember.<name>`` from sys.modules (when its device type is unregistered)."""
    sys.modules.pop(f"ember.{name}", None)
