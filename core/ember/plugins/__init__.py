"""Plugin discovery and loading (pluggy).

Plugins are found through the entry-point group ``ember.plugins``, lazily, the first
time ember needs its registry. A plugin whose package carries a lazy-load manifest
(``ember_plugin.json`` beside its ``__init__.py``: the device types, layouts, dtypes and op
namespaces it registers) is imported only when one of those names is first used, so that
``ember.ones(3)`` imports ember-cpu and nothing else; a plugin without one is imported at
discovery, as before. Anything ember cannot find (a device type, an attribute, a kernel)
makes it load the remaining plugins before it says so. Environment variables:

- ``EMBER_PLUGINS=cpu,opencl`` - load only these (entry-point names);
- ``EMBER_DISABLE_PLUGINS=cuda`` - load all but these;
- ``EMBER_PLUGIN_AUTOLOAD=0`` - no discovery; ``ember.plugins.register(obj)`` loads one by hand.

A plugin that fails to import, validate or register is reported as a warning with its
name and error and skipped; ``ember.plugins.list()`` and ``ember info`` say why.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import warnings

import pluggy

from . import hookspecs
from .hookspecs import API_VERSION
from .._registry import KNOWN_PACKAGES

__all__ = ["hookimpl", "register", "unregister", "list", "PluginInfo", "PluginError", "API_VERSION",
           "ensure_loaded"]

hookimpl = pluggy.HookimplMarker("ember")

_list = list


class PluginError(RuntimeError):
    """A plugin could not be loaded: bad manifest, incompatible API version, failed registration."""


@dataclasses.dataclass
class PluginInfo:
    """One plugin as ``ember.plugins.list()`` reports it."""
    name: str                  # entry-point / registration name
    status: str                # "loaded" | "failed" | "disabled"
    version: str = ""
    api_version: str = ""
    source: str = ""           # "entry point <dist> <value>" or "manual"
    error: str = ""            # why it failed
    provides: dict = dataclasses.field(default_factory=dict)

    def __str__(self):
        tail = f" - {self.error}" if self.error else ""
        return f"{self.name} {self.version} [{self.status}]{tail}"


_pm = None
_plugins: dict = {}       # name -> PluginInfo
_pending: dict = {}       # name -> (entry point, source, lazy manifest) of plugins found but not imported yet
_triggers: dict = {}      # (kind, name) -> plugin name, from the lazy manifests ("device_types", "cuda") -> "cuda"
_dropped: list = []       # PluginInfo of entry points skipped for a duplicate name
_undo: dict = {}          # name -> rollback callables of a loaded plugin

#: device types only one package may register (a plugin that loads earlier cannot take them): the device types
#: of ember's own plugins, each owned by the top-level package of its distribution ("ember-cpu" -> ember_cpu)
RESERVED_DEVICE_TYPES = {name: dist.partition("[")[0].replace("-", "_") for name, dist in KNOWN_PACKAGES.items()}


def _manager() -> pluggy.PluginManager:
    global _pm
    if _pm is None:
        _pm = pluggy.PluginManager("ember")
        _pm.add_hookspecs(hookspecs)
    return _pm


def _env_list(name):
    v = os.environ.get(name, "")
    return {x.strip() for x in v.split(",") if x.strip()}


def _package(value: str) -> str:
    """The top-level package of an entry point's value ("ember_cpu" of "ember_cpu" or "ember_cpu.x:obj")."""
    return value.split(":")[0].split(".")[0].strip()


def _source(ep) -> str:
    return f"entry point {ep.value}" + (f" ({ep.dist.name} {ep.dist.version})" if ep.dist else "")


def _choose(eps):
    """One entry point per name. Where several share a name (a stale distribution beside the real one), the
    package that owns a reserved device type of that name wins, else the first; the others are reported."""
    by_name = {}
    for ep in eps:
        by_name.setdefault(ep.name, []).append(ep)
    chosen, dropped = [], []
    for name, group in by_name.items():
        owner = RESERVED_DEVICE_TYPES.get(name)
        best = next((ep for ep in group if owner and _package(ep.value) == owner), group[0])
        chosen.append(best)
        dropped += [(ep, best) for ep in group if ep is not best]
    return chosen, dropped


def _autoload():
    """Discover plugins through entry points (once), honouring the environment variables."""
    if os.environ.get("EMBER_PLUGIN_AUTOLOAD", "1").strip().lower() in ("0", "false", "no", "off"):
        return
    only, disabled = _env_list("EMBER_PLUGINS"), _env_list("EMBER_DISABLE_PLUGINS")
    chosen, dropped = _choose(importlib.metadata.entry_points(group="ember.plugins"))
    for ep, best in dropped:
        msg = (f"plugin '{ep.name}': {_source(ep)} was skipped: another entry point has the same name "
               f"({_source(best)}), and that one is loaded; uninstall the stale distribution")
        _dropped.append(PluginInfo(ep.name, "failed", source=_source(ep), error=msg))
        warnings.warn(f"ember: {msg}", RuntimeWarning, stacklevel=3)
    for ep in chosen:
        source = _source(ep)
        if (only and ep.name not in only) or ep.name in disabled:
            _plugins[ep.name] = PluginInfo(ep.name, "disabled", source=source,
                                           error="excluded by EMBER_PLUGINS / EMBER_DISABLE_PLUGINS")
            continue
        manifest = _lazy_manifest(ep)
        if manifest is None:
            _import_and_load(ep, source)
            continue
        _pending[ep.name] = (ep, source, manifest)
        for kind, names in manifest.items():
            for n in names:
                _triggers.setdefault((kind, n), ep.name)


#: what a lazy-load manifest may list: the names whose first use imports the plugin
LAZY_KINDS = ("device_types", "layouts", "dtypes", "ops")


def _lazy_manifest(ep):
    """The plugin's lazy-load manifest, ``ember_plugin.json`` in its package directory, read without
    importing the package: ``{"device_types": [...], "layouts": [...], "dtypes": [...], "ops": [...]}``
    (the names it registers; ``ops`` as namespaces). None when there is none, or it cannot be read
    (the plugin is then imported at discovery, and a malformed file is reported as a warning)."""
    import importlib.util
    import json
    try:
        spec = importlib.util.find_spec(_package(ep.value))    # a top-level name: imports nothing
    except (ImportError, ValueError):
        return None
    locations = _list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = os.path.join(folder, "ember_plugin.json")
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, dict) or not all(
                    isinstance(data.get(k, []), _list) and all(isinstance(n, str) for n in data.get(k, []))
                    for k in LAZY_KINDS):
                raise ValueError(f"expected {{{', '.join(repr(k) + ': [names]' for k in LAZY_KINDS)}}}")
        except (OSError, ValueError) as e:
            warnings.warn(f"ember: plugin '{ep.name}': its lazy-load manifest {path} is not valid ({e}); the plugin "
                          f"is imported at start-up instead", RuntimeWarning, stacklevel=4)
            return None
        return {k: _list(data.get(k, [])) for k in LAZY_KINDS}
    return None


def _import_and_load(ep, source):
    """Import an entry point's plugin and load it; a failure is recorded (and warned about), never raised."""
    try:
        obj = ep.load()
    except BaseException as e:  # noqa: BLE001 - any import failure (sys.exit() too) must not break ember
        if isinstance(e, KeyboardInterrupt):
            raise
        _fail(ep.name, source, f"import failed: {type(e).__name__}: {e}")
        return
    try:
        _load(obj, ep.name, source, package=_package(ep.value))
    except PluginError:
        pass  # already reported as a warning


def _load_pending(kind=None, name=None) -> bool:
    """Import the pending plugin whose lazy manifest lists ``name`` of ``kind`` (every pending plugin
    when ``kind`` is None); whether one was loaded now. The caller holds the registry's load lock."""
    if kind is None:
        todo = _list(_pending)
    else:
        owner = _triggers.get((kind, name))
        todo = [owner] if owner in _pending else []
    for plugin in todo:
        entry = _pending.pop(plugin, None)
        if entry is not None:
            _import_and_load(*entry[:2])
    return bool(todo)


def _fail(name, source, error, *, warn=True):
    _plugins[name] = PluginInfo(name, "failed", source=source, error=error)
    if warn:
        warnings.warn(f"ember: plugin '{name}' was skipped: {error}", RuntimeWarning, stacklevel=4)


def _check_api(name, api):
    try:
        major, minor = (int(x) for x in str(api).split(".")[:2])
    except ValueError:
        raise PluginError(f"plugin '{name}' declares a malformed api_version {api!r} (expected 'MAJOR.MINOR')")
    if major != API_VERSION[0] or minor > API_VERSION[1]:
        raise PluginError(f"plugin '{name}' was built for ember plugin API {major}.{minor}, but this ember "
                          f"provides plugin API {API_VERSION[0]}.{API_VERSION[1]}; install a version of the "
                          f"plugin built for API {API_VERSION[0]}.x")


def _manifest_provides(name, info) -> dict:
    """The manifest's ``provides`` checked: a dict whose device_types / layouts / dtypes / ops are lists of
    names; PluginError naming the plugin otherwise."""
    provides = info.get("provides", {})
    if provides is None:
        provides = {}
    if not isinstance(provides, dict):
        raise PluginError(f"plugin '{name}': its manifest's 'provides' must be a dict such as "
                          f"{{'device_types': ['mydev']}}, got {type(provides).__name__} {provides!r:.80}")
    for key in ("device_types", "layouts", "dtypes", "ops"):
        v = provides.get(key, [])
        if not isinstance(v, (_list, tuple)) or not all(isinstance(x, str) for x in v):
            raise PluginError(f"plugin '{name}': its manifest's provides['{key}'] must be a list of names, "
                              f"got {v!r:.80}")
    return {k: _list(v) if isinstance(v, (_list, tuple)) else v for k, v in provides.items()}


def _object_package(obj) -> str:
    """The top-level package a plugin object comes from (its module's, for a module)."""
    mod = getattr(obj, "__name__", None) if isinstance(obj, type(os)) else type(obj).__module__
    return (mod or "").split(".")[0]


def _load(obj, name, source, package=None):
    """Validate, register and run one plugin; all-or-nothing."""
    from ..library import Registry
    pm = _manager()
    if name in _plugins and _plugins[name].status == "loaded":
        raise PluginError(f"a plugin named '{name}' is already loaded")
    try:
        _validate_arguments(pm, obj, name)
        pm.register(obj, name=name)
    except PluginError as e:
        _fail(name, source, str(e))
        raise
    except (ValueError, pluggy.PluginValidationError) as e:
        msg = f"invalid plugin: {e}"
        _fail(name, source, msg)
        raise PluginError(f"plugin '{name}': {msg}") from None
    try:
        _validate_unknown_hooks(pm, obj, name)
        info_impls = [i for i in pm.hook.ember_plugin_info.get_hookimpls() if i.plugin is obj]
        if not info_impls:
            raise PluginError(f"plugin '{name}' does not implement ember_plugin_info (its manifest)")
        info = info_impls[0].function()
        if not isinstance(info, dict) or "api_version" not in info:
            raise PluginError(f"plugin '{name}': ember_plugin_info() must return a dict with 'name', 'version' "
                              f"and 'api_version', got {info!r}")
        _check_api(name, info["api_version"])
        provides = _manifest_provides(name, info)
        registry = Registry(name, provides=provides, package=package or _object_package(obj))
        for impl in pm.hook.ember_register.get_hookimpls():
            if impl.plugin is obj:
                try:
                    impl.function(registry=registry)
                except BaseException:
                    registry._rollback()
                    raise
        registry._commit()
    except BaseException as e:  # noqa: BLE001 - a failing plugin (sys.exit() too) is skipped, never fatal
        if isinstance(e, KeyboardInterrupt):
            raise
        pm.unregister(obj)
        err = str(e) if isinstance(e, PluginError) else f"registration failed: {type(e).__name__}: {e}"
        _fail(name, source, err)
        raise PluginError(err if isinstance(e, PluginError) else f"plugin '{name}': {err}") from e
    _undo[name] = registry
    _plugins[name] = PluginInfo(name, "loaded", version=str(info.get("version", "")),
                                api_version=str(info["api_version"]), source=source, provides=provides)


def _validate_arguments(pm, obj, name):
    """A hook implementation may take only arguments its spec has; say which ones it misspelt."""
    import inspect
    for attr in dir(obj):
        if not attr.startswith("ember_"):
            continue
        fn = getattr(obj, attr, None)
        caller = getattr(pm.hook, attr, None)
        if not callable(fn) or caller is None or caller.spec is None:
            continue
        if pm.parse_hookimpl_opts(obj, attr) is None:
            continue
        try:
            params = [p for p in inspect.signature(fn).parameters if p != "self"]
        except (TypeError, ValueError):
            continue
        spec_args = _list(caller.spec.argnames)
        extra = [p for p in params if p not in spec_args]
        if extra:
            raise PluginError(f"plugin '{name}': hook '{attr}' takes argument(s) {', '.join(map(repr, extra))} "
                              f"that its specification does not have; the spec is {attr}({', '.join(spec_args)})")


def _validate_unknown_hooks(pm, obj, name):
    # pluggy's check_pending, scoped to this plugin, with a message that names it
    for hook_name in dir(pm.hook):
        if hook_name.startswith("__"):
            continue
        caller = getattr(pm.hook, hook_name)
        if not caller.has_spec():
            for impl in caller.get_hookimpls():
                if impl.plugin is obj and not impl.optionalhook:
                    raise PluginError(f"plugin '{name}' implements unknown hook '{hook_name}' "
                                      f"(no such hook specification in ember.plugins.hookspecs)")


def ensure_loaded():
    """Run discovery now (it otherwise happens on first use of a device)."""
    from .. import _registry
    _registry.ensure_loaded()


def register(obj, name=None):
    """Load a plugin object by hand (e.g. with ``EMBER_PLUGIN_AUTOLOAD=0``, or in tests).

    :param obj: a module or object with ``ember_*`` hook implementations.
    :param name: its name (default: ``obj.__name__``).
    :raises PluginError: if it is invalid, built for an incompatible API version, or its
        registration fails (e.g. a kernel clashes with another plugin's); nothing of it is kept.
    """
    ensure_loaded()
    name = name or getattr(obj, "__name__", None) or type(obj).__name__
    _load(obj, name, "manual")
    return obj


def unregister(name):
    """Remove a loaded plugin and everything it registered."""
    registry = _undo.pop(name, None)
    if registry is None:
        raise ValueError(f"no loaded plugin named '{name}'")
    registry._rollback()
    pm = _manager()
    plugin = pm.get_plugin(name)
    if plugin is not None:
        pm.unregister(plugin)
    _plugins.pop(name, None)


def list():  # noqa: A001 - the documented name
    """Every plugin found: loaded, failed (with the error) or disabled, as ``PluginInfo``."""
    ensure_loaded()
    return _list(_plugins.values()) + _list(_dropped)


def _installed_entry_point(name) -> bool:
    """Whether an entry point ``name`` of the group ``ember.plugins`` is installed (loaded or not)."""
    return any(ep.name == name for ep in importlib.metadata.entry_points(group="ember.plugins"))


def _failed_for_device(device_type):
    for p in _plugins.values():
        if p.status == "failed" and p.name == device_type:
            return p.error
    return ""
