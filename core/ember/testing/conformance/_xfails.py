"""Expected failures: data, scoped to (test, op id, dtype) — never a blanket skip.

Two sources, merged for the device under test:

1. ``OpInfo.xfails``: a set of ``(test, device type or "*", dtype or "*")`` with the reasons in
   ``OpInfo.xfail_reasons`` (keyed by the same tuple).
2. A plugin's xfails file, named in its manifest (``ember_plugin_info()``) as
   ``"conformance_xfails": "<path relative to the plugin's package>"``. It applies when the
   device under test is one of the plugin's device types. ``ember conformance --xfails FILE``
   (``pytest --ember-xfails FILE``) adds more files.

The xfails file format
----------------------
Plain text, one expected failure a line, ``#`` starts a comment, fields separated by
whitespace::

    # test      op id           dtype      reason (the rest of the line)
    op          erfinv          float16    vdev's erfinv composite loses precision in half
    grad        linalg.norm     *          no double-backward for norm on vdev
    *           sort            bfloat16   stable sort of bfloat16 is not implemented
    device_oom  *               *          the arena cannot refuse an allocation yet
    device_roundtrip *          qint8      our copy kernel drops the sign of qint8 (tracked in #7)

- ``test``: one of the suite's tests — ``samples`` (building the op's samples), ``op`` (values
  against the reference), ``out``,
  ``inplace``, ``view``, ``errors``, ``grad`` — or a device check (``device_roundtrip``,
  ``device_oom``, ... as listed by ``ember conformance DEVICE --list-checks``); the ``test_``
  prefix of the pytest names is accepted (``test_op`` = ``op``). ``*`` matches every test.
- ``op id``: ``OpInfo.id`` (``name`` or ``name.variant``); ``*`` matches every op.
- ``dtype``: a dtype name; ``*`` matches every dtype. The device checks run once (dtype ``*``), except
  ``device_roundtrip``, which runs once per registered dtype: name one to scope an xfail to it.
- ``reason``: required; it is printed in the report.

A file whose name ends in ``.json`` may instead hold a list of objects with the keys
``test``, ``op``, ``dtype`` and ``reason``.

Semantics: a (test, op, dtype) group under an xfail is *expected* to fail; when every sample
of the group passes, the suite reports an *unexpected pass* (and fails), so stale entries are
found and removed.
"""
from __future__ import annotations

import dataclasses
import json
import os

__all__ = ["Xfail", "XfailSet", "parse_xfails", "load_xfails_file", "plugin_xfails", "normalize_test"]


def normalize_test(name: str) -> str:
    """``test_op`` -> ``op``; ``*`` stays."""
    return name[5:] if name.startswith("test_") else name


@dataclasses.dataclass(frozen=True)
class Xfail:
    """One expected failure: test, op id and dtype ('*' matches any), the reason and where it was declared."""
    test: str
    op: str
    dtype: str
    reason: str
    source: str = ""     # where it came from (file:line, or "OpInfo")

    def matches(self, test: str, op: str, dtype: str) -> bool:
        """Whether this entry covers (test, op, dtype); '*' fields match anything - except that a test of '*'
        does not cover ``compiled``, which compares a replay with the op's own eager result (an op that is wrong
        eagerly is replayed just as wrong: only an entry naming ``compiled`` expects that check to fail)."""
        t = normalize_test(test)
        return (((self.test == "*" and t != "compiled") or self.test == t) and (self.op == "*" or self.op == op)
                and (self.dtype == "*" or self.dtype == dtype))


class XfailSet:
    """All xfails in force for one run; ``lookup(test, op id, dtype)`` -> Xfail or None."""

    def __init__(self, entries=()):
        self.entries = list(entries)

    def add(self, entries):
        """Add xfail entries to the set."""
        self.entries.extend(entries)

    def lookup(self, test: str, op: str, dtype: str):
        """The first entry matching (test, op, dtype), or None."""
        for e in self.entries:
            if e.matches(test, op, dtype):
                return e
        return None

    def __len__(self):
        return len(self.entries)


def parse_xfails(text: str, source: str = "<xfails>") -> list:
    """Parse the text format above; ValueError naming the file and line for a malformed line."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 3)
        if len(parts) < 4:
            raise ValueError(f"{source}:{n}: an xfail line needs 4 fields 'test op dtype reason', got {line!r}")
        test, op, dtype, reason = parts
        out.append(Xfail(normalize_test(test), op, dtype, reason.strip(), f"{source}:{n}"))
    return out


def load_xfails_file(path) -> list:
    """The entries of an xfails file (text, or JSON when the name ends in .json)."""
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        data = json.loads(text)
        out = []
        for i, d in enumerate(data):
            missing = [k for k in ("test", "op", "dtype", "reason") if k not in d]
            if missing:
                raise ValueError(f"{path}: entry {i} lacks {', '.join(missing)}")
            out.append(Xfail(normalize_test(d["test"]), d["op"], d["dtype"], d["reason"], f"{path}[{i}]"))
        return out
    return parse_xfails(text, path)


def opinfo_xfails(opinfo, device_type: str) -> list:
    """The entries of ``OpInfo.xfails`` that apply to ``device_type``."""
    out = []
    for entry in getattr(opinfo, "xfails", ()) or ():
        test, dev, dtype = entry
        if dev not in ("*", device_type):
            continue
        reason = (opinfo.xfail_reasons or {}).get(entry, "expected failure (OpInfo.xfails)")
        out.append(Xfail(normalize_test(test), opinfo.id, dtype, reason, f"OpInfo {opinfo.id}"))
    return out


def plugin_xfails(device_type: str) -> list:
    """The xfails files of the plugin that registered ``device_type`` (manifest key
    ``conformance_xfails``, a path relative to the plugin's package)."""
    from ember import _registry, plugins
    dt = _registry.device_type(device_type)
    pm = plugins._manager()
    obj = pm.get_plugin(dt.plugin)
    if obj is None:
        return []
    try:
        manifest = obj.ember_plugin_info() or {}
    except Exception:  # noqa: BLE001 - a broken manifest was reported at load time
        return []
    rel = manifest.get("conformance_xfails")
    if not rel:
        return []
    base = _package_dir(obj)
    path = rel if os.path.isabs(rel) else os.path.join(base, rel)
    if not os.path.exists(path):
        raise FileNotFoundError(f"plugin '{dt.plugin}' names the xfails file {rel!r} in its manifest "
                                f"(conformance_xfails), but {path} does not exist")
    return load_xfails_file(path)


def _package_dir(obj):
    import sys
    f = getattr(obj, "__file__", None)
    if f is None:
        mod = sys.modules.get(getattr(type(obj), "__module__", ""), None)
        f = getattr(mod, "__file__", None)
    return os.path.dirname(os.path.abspath(f)) if f else os.getcwd()
