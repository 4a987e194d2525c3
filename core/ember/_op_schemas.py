"""The public list of ops: schemas, calling conventions and, per device, where each resolves.

``ember.library.op_schemas()`` and ``ember ops`` (the CLI) are built on this module: what a
vendor needs to know about each declared op without reading ``ember._dispatch``. Which form a
kernel receives for each argument is the dispatcher's calling convention (``_schema.normaliser``,
docs/vendor-guide.md "Calling conventions").
"""
from __future__ import annotations

import dataclasses
import types

from . import _dispatch, _registry
from ._dispatch import ANY
from ._schema import normaliser

__all__ = ["OpSchema", "op_schemas", "kernel_form"]


@dataclasses.dataclass(frozen=True)
class OpSchema:
    """One declared op, as ``ember.library.op_schemas()`` describes it."""
    name: str                 # the op's name: ``lib.impl(name, ...)`` registers a kernel for it
    schema: str               # the schema text, PyTorch's syntax
    structured: bool          # the kernel writes into ``out=`` (allocated by the dispatcher); else it returns
    variants: tuple           # "functional", "in-place" (``x.op_()``: out is self), "out=" (``op(..., out=t)``)
    outputs: int              # how many tensors it returns (a structured multi-output kernel gets ``out`` as a tuple)
    primitive: bool           # no composite: each device needs a kernel of its own (or its fallback)
    composite_calls: tuple    # ops the composite's code calls (read from its code, one level of helpers deep)
    arguments: tuple          # ((name, schema type, default or None, what a kernel receives), ...)
    sources: dict             # device type -> {dtype name: "native" | "composite" | "fallback" | "missing"}

    def source_summary(self, device_type: str) -> str:
        """One word for a device: the common source of its dtypes, or "mixed" (e.g. native for floats,
        composite for integers); "" when the device is not listed."""
        found = set(self.sources.get(device_type, {}).values())
        return "" if not found else found.pop() if len(found) == 1 else "mixed"

    def as_dict(self) -> dict:
        """A JSON-ready dict (``ember ops --json``)."""
        d = dataclasses.asdict(self)
        d["arguments"] = [dict(zip(("name", "type", "default", "kernel_receives"), a)) for a in self.arguments]
        return d


def kernel_form(arg, op_name: str) -> str:
    """What a kernel receives for schema argument ``arg`` (a ``_schema.Argument``), in words."""
    base, optional = arg.type.rstrip("?"), arg.type.endswith("?")
    if normaliser(arg, op_name) is None:
        form = {"Tensor": "a Tensor (for an elementwise operand: also a 0-dim cpu Tensor or a Python scalar)",
                "Tensor[]": "a sequence of Tensors", "Scalar": "a Python number (or a 0-dim Tensor)",
                "int": "a Python int", "float": "a Python float or int", "bool": "a Python bool",
                "str": "a str"}.get(base, f"the value as passed ({base})")
    elif base in ("int[]", "bool[]"):
        what = "ints" if base == "int[]" else "bools"
        form = (f"a tuple of {arg.size} {what} (a single value is repeated)" if arg.size else
                f"a tuple of {what}")
    elif base == "ScalarType":
        form = "an ember.dtype"
    elif base == "Device":
        form = "an ember.device"
    else:
        form = f"the value as passed ({base})"
    return form + (", or None" if optional else "")


def _code_names(fn, depth=1) -> set:
    """Global names ``fn``'s code (its nested functions too) reads, following module-level helpers it calls
    ``depth`` levels deep."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return set()
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    if depth > 0:
        g = getattr(fn, "__globals__", {})
        for n in list(names):
            helper = g.get(n)
            if isinstance(helper, types.FunctionType) and helper.__module__ == fn.__module__:
                names |= _code_names(helper, depth - 1)
    return names


def _dtypes_of(device_type) -> list:
    """The dtypes to report for a device: those its plugin's manifest declares, else the core's dense ones."""
    from . import _dtype, plugins
    from .library import ALL_DENSE
    dt = _registry.device_types[device_type]
    declared = getattr(plugins._plugins.get(dt.plugin), "provides", {}).get("dtypes") or []
    named = [_dtype._BY_NAME[n] for n in declared if n in _dtype._BY_NAME]
    return named or list(ALL_DENSE)


def op_schemas(device_types=None) -> list:
    """Every declared op as an ``OpSchema``, sorted by name (matches nothing in PyTorch: ember's own
    reference for plugin authors, ``ember ops`` prints it).

    :param device_types: the device types to resolve each op for (default: every registered one);
        resolution is per (device type, strided, dtype) for the dtypes the device's manifest declares.
    """
    _registry.ensure_loaded()
    devs = list(_registry.device_types) if device_types is None else list(device_types)
    dtypes = {d: _dtypes_of(d) for d in devs}
    op_names = set(_dispatch.ops)
    out = []
    for name in sorted(_dispatch.ops):
        op = _dispatch.ops[name]
        sch = op.schema
        variants = ("functional",) + (("in-place",) if op.inplace else ()) + (("out=",) if op.structured else ())
        calls = () if op.composite is None else tuple(sorted((_code_names(op.composite) & op_names) - {name}))
        args = tuple((a.name, a.type.replace("[]", f"[{a.size}]") if a.size else a.type,
                      None if not a.has_default else a.default, kernel_form(a, name)) for a in sch.arguments)
        sources = {d: {str(t).replace("ember.", ""): op.source((d, "strided", t)) for t in dtypes[d]} for d in devs}
        out.append(OpSchema(name, sch.text, op.structured, variants, len(sch.returns), op.composite is None, calls,
                            args, sources))
    return out


def _letter(source: str) -> str:
    return {"native": "N", "composite": "C", "fallback": "F", "missing": "-", "mixed": "~"}.get(source, " ")


def main(args) -> int:
    """``ember ops [NAME ...] [--device DEV] [--missing] [--json]``."""
    import json
    import sys
    devs = [args.device] if args.device else None
    if args.device:
        _registry.device_type(args.device)           # RuntimeError naming the package when it is not there
    found = op_schemas(devs)
    if args.names:
        wanted = set(args.names)
        unknown = wanted - {s.name for s in found}
        if unknown:
            print(f"ember ops: no op named {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        found = [s for s in found if s.name in wanted]
    if args.missing:
        dev = args.device or "cpu"
        found = [s for s in found if "missing" in s.sources.get(dev, {}).values()]
    if args.json:
        json.dump([s.as_dict() for s in found], sys.stdout, indent=1, default=str)
        print()
        return 0
    devs = devs or list(_registry.device_types)
    if args.names:
        for s in found:
            print(s.schema)
            print(f"  {'structured: the kernel writes into out=' if s.structured else 'free-form: the kernel returns'}"
                  f"{f' (out is a tuple of {s.outputs})' if s.structured and s.outputs > 1 else ''}; "
                  f"variants: {', '.join(s.variants)}")
            host = getattr(_dispatch.ops.get(s.name), "host", None) is not None
            kind = ("no composite: its host path runs the cpu kernel on devices without a kernel" if host else
                    "primitive (no composite)")
            print(f"  {kind if s.primitive else 'composite over: ' + (', '.join(s.composite_calls) or '?')}")
            for a in s.arguments:
                print(f"  {a[0]}: {a[1]}{'' if a[2] is None else ' = ' + repr(a[2])} -> {a[3]}")
            for d in devs:
                by = {}
                for t, src in s.sources[d].items():
                    by.setdefault(src, []).append(t)
                print(f"  {d}: " + "; ".join(f"{src} ({', '.join(ts)})" for src, ts in by.items()))
        return 0
    print(f"{'op':<28}{'kind':<7}{'prim':<6}" + "".join(f"{d[:9]:<10}" for d in devs))
    for s in found:
        print(f"{s.name:<28}{'S' if s.structured else 'F':<7}{'yes' if s.primitive else '':<6}"
              + "".join(f"{_letter(s.source_summary(d)):<10}" for d in devs))
    print(f"\n{len(found)} op(s). kind: S structured (writes out=), F free-form. Per device: N native, C composite, "
          f"F fallback, - missing, ~ mixed over dtypes (ember ops NAME shows which).")
    return 0


def add_arguments(p) -> None:
    """The ``ember ops`` arguments."""
    p.add_argument("names", nargs="*", help="ops to describe in full (schema, arguments, per-dtype sources)")
    p.add_argument("--device", help="resolve for this device type only")
    p.add_argument("--missing", action="store_true", help="only ops with a dtype that resolves to nothing on "
                   "--device (default cpu)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
