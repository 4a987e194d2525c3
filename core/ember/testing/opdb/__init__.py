"""The op database: ``op_db()`` lists every ``OpInfo`` (core categories + plugin contributions).

Core entries live in one module per category (``elementwise``, ``compare``, ``copy``,
``creation``, ``random``, ``reduction``, ``linalg``, ``linalg_decomp``, ``shape``, ``indexing``, ``nn``, ``fft``, ``special``, ``complex``,
``more``, ``nn_functional``), each
with a module-level list ``op_db``. Plugins contribute entries for their own ops through
the ``ember_opinfos()`` hook (or the older ``ember_opinfo_entries(device_type)``).
``missing_ops()`` names the declared ops that have no entry (the coverage check).
"""
from __future__ import annotations

import importlib
import warnings

__all__ = ["CATEGORIES", "op_db", "core_op_db", "plugin_op_db", "opinfo", "opinfos", "missing_ops"]

#: the category modules, in the order their entries are listed
CATEGORIES = ("elementwise", "compare", "copy", "creation", "random",
              "reduction", "linalg", "linalg_decomp", "shape", "indexing", "nn", "special", "quantized", "fft",
              "complex", "more", "nn_functional")

#: ops declared for the dispatcher's own use that a user never calls directly and that are
#: covered by another op's entries (name -> the entry that covers it)
COVERED_BY = {"fft_c2c": "fft.fft", "fft_r2c": "fft.rfft", "fft_c2r": "fft.irfft"}   # ember.fft's primitives

_core_cache = None


def core_op_db() -> list:
    """The core entries (cached: the modules build them once). A category module that is
    missing or fails to import is reported with a warning and skipped."""
    global _core_cache
    if _core_cache is None:
        entries = []
        for cat in CATEGORIES:
            try:
                mod = importlib.import_module(f"{__name__}.{cat}")
            except ModuleNotFoundError as e:
                if e.name == f"{__name__}.{cat}":
                    continue        # category not written yet
                raise
            entries.extend(getattr(mod, "op_db", []))
        _core_cache = entries
    return list(_core_cache)


def plugin_op_db(device_type=None) -> list:
    """Entries contributed by plugins through the ``ember_opinfos()`` hook (and the
    ``ember_opinfo_entries(device_type)`` hook, when a plugin implements that one)."""
    from ember import _registry, plugins
    _registry.ensure_loaded()
    from .._opinfo import OpInfo
    pm = plugins._manager()
    out = []
    for hook_name, kwargs in (("ember_opinfos", {}), ("ember_opinfo_entries", {"device_type": device_type or "cpu"})):
        caller = getattr(pm.hook, hook_name, None)
        if caller is None:
            continue
        for impl in reversed(caller.get_hookimpls()):    # pluggy's call order; a broken plugin is named, skipped
            plugin = pm.get_name(impl.plugin) or repr(impl.plugin)
            try:
                res = impl.function(**{k: v for k, v in kwargs.items() if k in impl.argnames})
                res = list(res or [])
                bad = [e for e in res if not isinstance(e, OpInfo)]
                if bad:
                    raise TypeError(f"expected a list of ember.testing.OpInfo, got {type(bad[0]).__name__} "
                                    f"{bad[0]!r:.80}")
            except Exception as e:  # noqa: BLE001 - one plugin's broken hook must not hide the others'
                warnings.warn(f"ember.testing: plugin '{plugin}': its {hook_name}() hook failed "
                              f"({type(e).__name__}: {e}); its entries are left out", RuntimeWarning, stacklevel=2)
                continue
            out.extend(res)
    return out


def op_db(device_type=None) -> list:
    """Every OpInfo: the core categories' entries, then the plugins' (``device_type`` is passed
    to plugins that want it). An entry whose id repeats a core one is ignored with a warning."""
    entries = core_op_db()
    seen = {e.id for e in entries}
    for e in plugin_op_db(device_type):
        if e.id in seen:
            warnings.warn(f"ember.testing: a plugin's OpInfo '{e.id}' repeats an existing entry; ignored",
                          stacklevel=2)
            continue
        seen.add(e.id)
        entries.append(e)
    return entries


def opinfos(name, device_type=None) -> list:
    """Every entry (all variants) for the op ``name``."""
    return [e for e in op_db(device_type) if e.name == name]


def opinfo(name, device_type=None):
    """The entry with id ``name`` ("add" or "add.alpha"); KeyError naming close ids if none."""
    entries = op_db(device_type)
    for e in entries:
        if e.id == name:
            return e
    for e in entries:
        if e.name == name:
            return e
    close = sorted(e.id for e in entries if name.split(".")[0] in e.id)[:8]
    raise KeyError(f"no OpInfo with id '{name}'" + (f"; close: {', '.join(close)}" if close else ""))


def missing_ops(device_type=None) -> list:
    """Declared ops (``ember._dispatch.ops``) with no OpInfo, sorted."""
    from ember import _dispatch, _registry
    _registry.ensure_loaded()
    have = {e.name for e in op_db(device_type)} | set(COVERED_BY)
    return sorted(n for n in _dispatch.ops if n not in have)
