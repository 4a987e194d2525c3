"""What plugins registered: device types and their runtimes, allocators, layouts, dtypes.

The plugin manager (``ember.plugins``) fills this in through ``ember_register`` hooks;
nothing here imports a plugin. Discovery is lazy: the first lookup that needs a
device type calls ``discover()``, and ``load_for`` imports the one plugin a name belongs to.
"""
from __future__ import annotations

import threading
import types

from ._device import device, layout, strided

__all__ = ["DeviceType", "device_type", "layouts", "default_device"]

#: device type name -> DeviceType
device_types: dict = {}
#: layout name -> layout
layouts: dict = {"strided": strided}

# pip package that provides a device type, for the "not available" message (and, in ember.plugins, the package
# that owns it: RESERVED_DEVICE_TYPES)
KNOWN_PACKAGES = {"cpu": "ember-cpu", "cuda": "ember-cuda[cuda12]", "opencl": "ember-opencl[cpu]"}


def install_advice(plugin: str, package: str = None) -> str:
    """How to get plugin ``plugin`` (the entry-point name: "cpu", "sparse", ...), for error messages.

    When the plugin is installed but was kept out by ``EMBER_PLUGINS`` / ``EMBER_DISABLE_PLUGINS`` /
    ``EMBER_PLUGIN_AUTOLOAD=0``, that is what it says; otherwise "pip install ember-X (from a checkout
    of ember: pip install ./plugins/X)" - ember is not on PyPI yet, so both are given."""
    import os
    from . import plugins
    info = plugins._plugins.get(plugin)
    if info is not None and info.status == "disabled":
        only = os.environ.get("EMBER_PLUGINS", "").strip()
        var = f"EMBER_PLUGINS={only}" if only else f"EMBER_DISABLE_PLUGINS={os.environ.get('EMBER_DISABLE_PLUGINS', '')}"
        return f"the plugin '{plugin}' is installed but excluded by {var}; change or unset that variable"
    if info is None and os.environ.get("EMBER_PLUGIN_AUTOLOAD", "1").strip().lower() in ("0", "false", "no", "off"):
        if plugins._installed_entry_point(plugin):
            return (f"the plugin '{plugin}' is installed but EMBER_PLUGIN_AUTOLOAD=0 turns off discovery; unset it, "
                    f"or load the plugin with ember.plugins.register(...)")
    package = package or KNOWN_PACKAGES.get(plugin, f"ember-{plugin}")
    base, _, extras = package.partition("[")
    local = f"./plugins/{base[len('ember-'):]}" + (f"[{extras}" if extras else "")
    if extras:
        package, local = f"'{package}'", f"'{local}'"
    return f"pip install {package} (from a checkout of ember: pip install {local})"

_discovered = False         # discovery has finished (or is running in the thread holding _load_lock)
_loaded = False             # ... and every plugin it found is loaded (none pending)
_loading = False
_load_lock = threading.RLock()


def discover():
    """Find the installed plugins (entry points) once per process: the plugins with a lazy-load manifest
    are noted, the others loaded (``ember.plugins``). Later calls do nothing.

    Thread-safe: a thread that calls this while another is loading waits until loading has finished
    (it never sees a half-filled registry); a call from inside loading (a plugin's registration) returns."""
    global _discovered, _loading
    if _discovered:
        return
    with _load_lock:
        if _discovered or _loading:
            return
        _loading = True
        try:
            from . import plugins
            plugins._autoload()
        finally:
            _loading = False
            _discovered = True


def load_for(kind: str, name: str) -> bool:
    """Discover, then load the plugin whose lazy-load manifest lists ``name`` of ``kind``
    ("device_types", "layouts", "dtypes" or "ops"); whether a plugin was loaded now."""
    global _loading
    discover()
    if _loaded:
        return False
    with _load_lock:
        from . import plugins
        if _loading or not plugins._pending:
            return False
        _loading = True          # a plugin's registration that looks something up does not load others
        try:
            return plugins._load_pending(kind, name)
        finally:
            _loading = False


def ensure_loaded():
    """Discover and load every installed plugin (the pending lazy ones too); later calls do nothing.
    Where ember needs the whole registry (``ember info``, ``plugins.list()``, the conformance suite)
    or cannot find a name, before it says so."""
    global _loaded, _loading
    if _loaded:
        return
    discover()
    with _load_lock:
        if _loaded or _loading:
            return
        from . import plugins
        _loading = True
        try:
            plugins._load_pending()
        finally:
            _loading = False
            _loaded = True


class DeviceType:
    """One registered device type: its runtime, its allocators (one per index), its module."""

    def __init__(self, name, runtime, plugin, caching_allocator):
        self.name = name
        self.runtime = runtime
        self.plugin = plugin
        self.caching_allocator = caching_allocator
        self.allocators = {}
        self.generators = {}
        self.module = None
        self.fallback = None
        self.fuser = None          # fuser(subgraph) -> callable | None, for ember.compile (register_fuser)
        self.fuser_features = frozenset()   # what its subgraphs may hold beyond plain elementwise runs

    def allocator(self, dev: device):
        """The allocator of device ``dev``'s index (CachingAllocator, or DirectAllocator when the type opted out),
        created on first use.
        """
        try:
            return self.allocators[dev.index]
        except KeyError:
            pass
        from ._allocator import CachingAllocator, DirectAllocator
        cls = CachingAllocator if self.caching_allocator else DirectAllocator
        a = self.allocators[dev.index] = cls(self.runtime, dev, device_label=str(dev).upper())
        return a

    def generator(self, dev: device):
        """The default Generator of device ``dev``'s index, created on first use."""
        try:
            return self.generators[dev.index]
        except KeyError:
            from . import _random_state
            g = self.generators[dev.index] = _random_state.Generator(dev)
            if _random_state.last_manual_seed is not None:      # this plugin loaded after ember.manual_seed
                g.manual_seed(_random_state.last_manual_seed)
            elif self.name == "cpu":                            # random per process, as PyTorch's cpu default
                g.manual_seed(_random_state.PROCESS_SEED)
            return g


def register_fuser(device_type: str, fuser, *, features=()):
    """Set ``fuser`` as device type ``device_type``'s fuser for ``ember.compile`` (None removes it); returns a
    function that puts the previous one back. ``fuser(subgraph)`` receives an ``ember.compiler._fusion.Subgraph``
    (a run of captured elementwise nodes) and returns one callable ``fused(*tensors)`` that does what the run
    did, or None to decline (docs/vendor-guide.md, "Fusers"). Plugins call ``registry.register_fuser`` in
    ``ember_register`` instead; graphs captured before keep what they were built with.

    ``features`` opts in to subgraphs beyond plain elementwise runs (``ember.compiler._fusion.FEATURES``):
    ``"broadcast"`` (read-only operands that broadcast to the run's shape, or are strided: ``Slot.strides``),
    ``"reduction"`` (runs that end in ``sum`` / ``amax`` nodes, then elementwise nodes on the reduced shape).
    A fuser registered without them never receives a subgraph that uses them.

    :raises RuntimeError: ``device_type`` is not registered (the message names the package to install).
    :raises TypeError: ``fuser`` is neither callable nor None.
    :raises ValueError: ``features`` names an unknown feature."""
    if fuser is not None and not callable(fuser):
        raise TypeError(f"register_fuser('{device_type}'): fuser must be callable, not {type(fuser).__name__}")
    from .compiler._fusion import FEATURES
    if isinstance(features, str):
        features = (features,)
    unknown = sorted(set(features) - set(FEATURES))
    if unknown:
        raise ValueError(f"register_fuser('{device_type}'): unknown fuser feature(s) {unknown}; known: "
                         f"{list(FEATURES)}")
    dt = _lookup_device_type(device_type)
    old = dt.fuser, dt.fuser_features
    dt.fuser, dt.fuser_features = fuser, frozenset(features) if fuser is not None else frozenset()

    def undo():
        dt.fuser, dt.fuser_features = old
    return undo


def not_available(name: str) -> RuntimeError:
    """The RuntimeError "device type 'NAME' is not available: pip install PKG ..." (``install_advice``; naming a
    plugin that failed to load);
    returned, not raised.
    """
    from . import plugins
    failed = plugins._failed_for_device(name)
    extra = f" (a plugin for it failed to load: {failed})" if failed else ""
    return RuntimeError(f"device type '{name}' is not available: {install_advice(name)}{extra}")


def device_type(name: str) -> DeviceType:
    """The DeviceType registered for ``name``; RuntimeError naming the package to install."""
    try:
        return device_types[name]
    except KeyError:
        if not load_for("device_types", name) or name not in device_types:
            ensure_loaded()      # a plugin without a lazy-load manifest may still register it
        try:
            return device_types[name]
        except KeyError:
            raise not_available(name) from None


_lookup_device_type = device_type      # (register_fuser's argument has the function's name)


# ---------------------------------------------------------------- default device
class _DefaultDevice(threading.local):
    """This thread's default device (per thread, as PyTorch's ``set_default_device`` and ``with device``)."""

    def __init__(self):
        self.stack = []          # pushed by ``with ember.device(...)``
        self.device = None       # set by ember.set_default_device


_default = _DefaultDevice()


def default_device() -> device:
    """The device factories use when none is given in this thread: ``with ember.device(...)``, else
    ``ember.set_default_device``, else cpu."""
    d = _default
    if d.stack:
        return d.stack[-1]
    return d.device or _CPU


_CPU = device("cpu")


def set_default_device(dev) -> None:
    """Set the device factories use by default in this thread (None: back to cpu); the device is canonicalised
    (index filled in)."""
    _default.device = None if dev is None else canonical_device(dev)


def push_default_device(dev):
    """Push a default device (the with ember.device(...) context, this thread); it wins over set_default_device
    until popped."""
    _default.stack.append(canonical_device(dev))


def pop_default_device():
    """Pop the device pushed last by push_default_device (this thread)."""
    _default.stack.pop()


def canonical_device(dev) -> device:
    """A device with its index filled in (the device type's current device) where the type is indexed."""
    if dev is None:
        return default_device()
    if not isinstance(dev, device):
        dev = device(dev)
    if dev.index is None:
        dt = device_type(dev.type)
        if dt.runtime.indexed:
            return device(dev.type, dt.runtime.current_device())
        return dev
    if dev.type == "cpu" and dev.index == 0:
        return _CPU
    dt = device_type(dev.type)
    if dt.runtime.indexed:
        n = dt.runtime.device_count()
        if dev.index >= n:
            why = getattr(dt.runtime, "unavailable_reason", None) if n == 0 else None
            why = f" ({why()})" if why is not None and why() else ""
            raise RuntimeError(f"Invalid device ordinal {dev}: {n} {dev.type} device(s) available{why}")
    return dev


def default_accelerator_type() -> str:
    """The current accelerator's device type: among available non-cpu types the highest accelerator_priority (then
    load order); 'cpu' when none.
    """
    ensure_loaded()
    # among the available ones, the highest ``accelerator_priority`` of its runtime (default 0; ember-cuda
    # sets 10, so a GPU is the current accelerator beside PoCL or the vdev emulator), then load order
    best, rank = "cpu", None
    for name, dt in device_types.items():
        if name != "cpu" and dt.runtime.is_available():
            r = getattr(dt.runtime, "accelerator_priority", 0)
            if rank is None or r > rank:
                best, rank = name, r
    return best


# ---------------------------------------------------------------- device modules
_MISSING_MODULES: dict = {}


def missing_device_module(name: str) -> types.ModuleType:
    """``ember.cuda`` when no plugin provides 'cuda': is_available() is False,
    device_count() is 0, anything else raises the not-available error (as a CPU-only
    PyTorch build answers torch.cuda)."""
    mod = _MISSING_MODULES.get(name)
    if mod is None:
        mod = _MissingDeviceModule(f"ember.{name}")
        mod._device_type = name
        _MISSING_MODULES[name] = mod
    return mod


class _MissingDeviceModule(types.ModuleType):
    def is_available(self):
        """False: no plugin provides this device type (as a CPU-only PyTorch's ``torch.cuda.is_available()``)."""
        return False

    def device_count(self):
        """0: no plugin provides this device type."""
        return 0

    def is_initialized(self):
        """False: there is nothing to initialise."""
        return False

    def unavailable_reason(self):
        """Why this device type is not available (no plugin provides it, or it was excluded)."""
        return str(not_available(self._device_type))

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr == "amp":     # torch.cuda.amp exists on a CPU-only build: its autocast warns and disables itself
            from .amp._aliases import device_amp_module
            mod = device_amp_module(self._device_type)
            if mod is not None:
                return mod
        raise not_available(self._device_type)
