"""``ember`` command line: ``ember info``, ``ember ops``, ``ember conformance DEVICE``."""
from __future__ import annotations

import argparse
import sys


def info(out=None) -> int:
    """Print the plugins found (loaded / failed with the error / disabled), device types and counts
    to ``out`` (default: the current ``sys.stdout``); returns the exit status 0."""
    out = sys.stdout if out is None else out
    import ember
    from ember import _registry, plugins
    print(f"ember {ember.__version__} (plugin API {plugins.API_VERSION[0]}.{plugins.API_VERSION[1]})", file=out)
    found = plugins.list()
    print(f"plugins found: {len(found)}", file=out)
    for p in found:
        line = f"  {p.name:<12} {p.status:<9} {p.version:<8} {p.source}"
        print(line.rstrip(), file=out)
        if p.error:
            print(f"      error: {p.error}", file=out)
    print("device types:", file=out)
    if not _registry.device_types:
        print(f"  (none: {_registry.install_advice('cpu')})", file=out)
    for name, dt in _registry.device_types.items():
        rt = dt.runtime
        try:
            count = rt.device_count() if rt.is_available() else 0
        except Exception as e:  # noqa: BLE001 - info must print whatever it can
            count = f"error: {e}"
        print(f"  {name:<12} devices: {count:<4} plugin: {dt.plugin}", file=out)
        why = getattr(rt, "unavailable_reason", None)
        if count == 0 and why is not None and why():
            print(f"      not available: {why()}", file=out)
        details = getattr(rt, "info_lines", None)      # optional: a runtime's own detail lines
        if details is not None:
            try:
                for line in details():
                    print(f"      {line}", file=out)
            except Exception as e:  # noqa: BLE001 - info must print whatever it can
                print(f"      (details failed: {type(e).__name__}: {e})", file=out)
    print(f"layouts: {', '.join(sorted(_registry.layouts))}", file=out)
    from .distributed import _backend as collectives
    print("collective backends (ember.distributed):", file=out)
    for name, e in sorted(collectives.registered_backends().items()):
        ok = "available" if e.is_available is None or e.is_available() else "not available"
        print(f"  {name:<12} {ok:<14} devices: {', '.join(e.devices or ('any',))}  ({e.owner})", file=out)
    return 0


def main(argv=None) -> int:
    """The ``ember`` console script."""
    parser = argparse.ArgumentParser(prog="ember", description="ember: a PyTorch-style tensor framework")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("info", help="show installed plugins, device types and device counts")
    from . import _op_schemas
    _op_schemas.add_arguments(sub.add_parser(
        "ops", help="list the declared ops: schemas, calling conventions, native/composite/fallback per device"))
    from .testing.conformance import _main as conformance
    conformance.add_arguments(sub.add_parser(
        "conformance", help="run the conformance suite on a device and print the op x dtype matrix"))
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    if args.command == "ops":
        return _op_schemas.main(args)
    if args.command == "conformance":
        return conformance.main(args)
    parser.print_help()
    return 0
