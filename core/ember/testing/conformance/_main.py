"""``ember conformance DEVICE``: runs the suite without pytest and prints the op x dtype matrix."""
from __future__ import annotations

import sys
import warnings

from ..._dtype import ALL_DENSE
from . import _xfails
from ._device_checks import DEVICE_CHECKS, device_check_cases, run_device_check
from ._report import Outcome, Results, render_text, write_report
from .._opinfo import MissingDtype
from ._runner import (ConformanceFailure, NotApplicable, SampleBuildError, applies, check_compiled, check_errors,
                      check_grad,
                      check_samples, dispatch_source, grad_dtype, grad_samples, load_opinfos, make_target, op_dtypes,
                      opinfos_for_layout, record_keys, run_case, samples_of, Case, raised_at)

__all__ = ["run_conformance", "add_arguments", "main"]

_PER_SAMPLE = ("op", "out", "inplace", "view")


def _outcome(test, op, dtype, sample, fn):
    try:
        fn()
    except NotApplicable as e:
        return Outcome(test, op, dtype, sample, "skipped", str(e))
    except ConformanceFailure as e:
        return Outcome(test, op, dtype, sample, "failed", str(e))
    except Exception as e:  # noqa: BLE001 - a crash in a check is reported, never fatal
        return Outcome(test, op, dtype, sample, "failed",
                       f"{test} failed: op '{op}', dtype {dtype}: {type(e).__name__}: {e}\n{raised_at(e)}")
    return Outcome(test, op, dtype, sample, "passed")


def run_conformance(device, *, dtypes=None, ops=None, layout="strided", opinfos=None, xfail_files=(),
                    device_checks=True, progress=None, fast=False) -> Results:
    """Run the suite on ``device`` and return the finalized ``Results``.

    :param device: "cpu", "vdev", "vdev:1", ...
    :param dtypes: dtype names (list or comma-separated) to test; default: all the device declares.
    :param ops: op ids / fnmatch patterns (list or comma-separated); default: all.
    :param layout: "strided", or a layout whose samplers the OpInfos have ("sparse_coo").
    :param opinfos: a list (or callable returning one) used instead of ``ember.testing.opdb.op_db()``.
    :param xfail_files: extra xfails files (format: ``ember.testing.conformance._xfails``).
    :param device_checks: also run the device-level checks.
    :param progress: optional callable(str) told about each op as it starts.
    :param fast: check only the first sample of each op x dtype (and the first gradient sample of each op),
        for quick iteration; the summary says the run was fast. The device checks all run.
    """
    with warnings.catch_warnings():
        # the samples include NaN, inf, overflow and empty reductions on purpose: numpy's and ember's
        # warnings about them are expected and would bury the report (results are what is checked)
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        return _run_conformance(device, dtypes, ops, layout, opinfos, xfail_files, device_checks, progress, fast)


def _run_conformance(device, dtypes, ops, layout, opinfos, xfail_files, device_checks, progress, fast):
    from ember import profiler
    target = make_target(device, dtypes, layout, fast=fast)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        infos = load_opinfos(ops, opinfos, target.device_type)
    infos = opinfos_for_layout(infos, layout)
    results = Results(target, infos)
    for w in caught:      # a plugin's ember_opinfos() hook that failed: its entries are missing from the run
        if str(w.message).startswith("ember.testing: plugin") and "hook failed" in str(w.message):
            results.add(Outcome("collection", "*", "-", "", "failed", f"collection failed: {w.message}"))
    xf = _xfails.XfailSet(_xfails.plugin_xfails(target.device_type))
    for f in xfail_files or ():
        xf.add(_xfails.load_xfails_file(f))
    for n, o in enumerate(infos, 1):
        if progress:
            progress(f"[{n}/{len(infos)}] {o.id}")
        xf.add(_xfails.opinfo_xfails(o, target.device_type))
        if applies("samples", o):
            results.add(_outcome("samples", o.id, "-", "", lambda o=o: check_samples(o, target)))
        for d in op_dtypes(o, target):
            results.op_dtypes[o.id].append(d)
            try:
                samples = samples_of(o, target, d)
            except (SampleBuildError, MissingDtype):
                results.unbuilt.add((o.id, d))     # reported once, by the op's samples check
                continue
            with profiler.record_fallbacks() as rec, record_keys(o) as keys:
                for i, s in enumerate(samples):
                    label = f"{i}" + (f" '{s.name}'" if s.name else "")
                    for test in _PER_SAMPLE:
                        if applies(test, o):
                            case = Case(test, o, d, i, s.name)
                            results.add(_outcome(test, o.id, d, label, lambda c=case: run_case(c, target)))
            if samples and applies("compiled", o):     # replay through ember.compile: the first sample
                results.add(_outcome("compiled", o.id, d, "0", lambda o=o, d=d, s=samples[0]:
                                     check_compiled(o, target, d, 0, s)))
            try:
                src = dispatch_source(o, target, d, keys)
            except Exception:  # noqa: BLE001
                src = "missing"
            if rec.total:
                src = "fallback"
                results.fallbacks[(o.id, d)] = dict(rec.counts)
            results.sources[(o.id, d)] = src
        if applies("errors", o):
            results.add(_outcome("errors", o.id, "-", "", lambda o=o: check_errors(o, target)))
        if applies("grad", o):
            gd = grad_dtype(o, target)
            if gd is not None:
                for i, s in grad_samples(o, target, gd)[:1 if target.fast else None]:
                    label = f"{i}" + (f" '{s.name}'" if s.name else "")
                    results.add(_outcome("grad", o.id, gd, label,
                                         lambda o=o, i=i, s=s: check_grad(o, target, gd, i, s)))
    if device_checks:
        with profiler.record_copies() as copies:
            for name, dtype in device_check_cases(target):
                if progress:
                    progress(f"device_{name}" + ("" if dtype == "*" else f" {dtype}"))
                results.add(_outcome(f"device_{name}", "*", dtype, "",
                                     lambda n=name, d=dtype: run_device_check(n, target, d)))
        results.copy_paths = {k: n for k, n in copies.items() if target.device_type in k[:2]}
    return results.finalize(xf)


def add_arguments(p) -> None:
    """The ``ember conformance`` options (shared with ``python -m ember.testing.conformance``)."""
    p.add_argument("device", help="device to test: cpu, vdev, vdev:1, ...")
    p.add_argument("--dtype", default=None, help="comma-separated dtype names to test (default: every dtype the "
                                                 "device declares)")
    p.add_argument("--op", default=None, help="comma-separated op ids or patterns (add,sum*,nn.*)")
    p.add_argument("--layout", default="strided", help="layout to test (e.g. sparse_coo; default strided)")
    p.add_argument("--report", default=None, help="write a report: report.md (Markdown) or report.json")
    p.add_argument("--xfails", action="append", default=[], help="an extra xfails file (repeatable)")
    p.add_argument("--opinfos", default=None, help="MODULE:ATTR, a list (or function returning one) of OpInfo "
                                                   "to test instead of the op database")
    p.add_argument("--no-device-checks", action="store_true", help="skip the device-level checks")
    p.add_argument("--fast", action="store_true", help="quick iteration: check only the first sample of each "
                                                       "op x dtype (and one gradient sample per op); the summary "
                                                       "says the run was fast. Run without it before a release")
    p.add_argument("--write-coverage", nargs="?", const="docs/coverage", default=None, metavar="DIR",
                   help="write the matrix to DIR/<device type>.md, DIR/<device type>-<layout>.md for a non-strided "
                        "layout, DIR/<device type>-<dtypes>.md for a run restricted to plugin dtypes "
                        "(default DIR: docs/coverage)")
    p.add_argument("--skip-unavailable", action="store_true",
                   help="when the device type is not installed or has no usable device, print why and exit 0 "
                        "(a JSON --report records it as skipped) instead of failing with exit status 2")
    p.add_argument("--coverage-suffix", default="", metavar="SUFFIX",
                   help="with --write-coverage: append -SUFFIX to the file name (e.g. opencl-intel.md for a run "
                        "on one of several runtimes of a device type)")
    p.add_argument("--list-checks", action="store_true", help="list the test and device-check names and exit")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the totals and the failures")
    p.add_argument("-v", "--verbose", action="store_true", help="print each op as it starts (to stderr)")


def _resolve(spec):
    import importlib
    mod, _, attr = spec.partition(":")
    obj = importlib.import_module(mod)
    for part in (attr or "op_db").split("."):
        obj = getattr(obj, part)
    return obj


def unavailable_reason(device) -> str | None:
    """Why ``device`` ("opencl", "cuda:1", ...) cannot be tested here (its plugin is not installed, excluded or
    has no usable device), or None when it can."""
    from ember import _registry
    try:
        dev = _registry.canonical_device(device)
        rt = _registry.device_type(dev.type).runtime
    except (RuntimeError, ValueError) as e:
        return str(e)
    if rt.is_available():
        return None
    why = getattr(rt, "unavailable_reason", None)
    return (why() if why is not None else None) or f"device type '{dev.type}' has no available device"


def _coverage_command(args) -> str:
    """The command line a coverage table says it was generated by (its selection arguments, no paths)."""
    parts = ["ember conformance", args.device]
    for flag, value in (("--layout", args.layout if args.layout != "strided" else None), ("--dtype", args.dtype),
                        ("--op", args.op), ("--coverage-suffix", getattr(args, "coverage_suffix", "") or None)):
        if value:
            parts += [flag, value]
    return " ".join(parts + ["--write-coverage"])


def main(args, out=None) -> int:
    """Run ``ember conformance`` with parsed ``args``; the exit status (0 passed, or skipped with
    ``--skip-unavailable``; 1 failures or unexpected passes; 2 usage errors)."""
    out = sys.stdout if out is None else out
    if getattr(args, "skip_unavailable", False):
        why = unavailable_reason(args.device)
        if why is not None:
            print(f"ember conformance: SKIPPED: device '{args.device}' is not available: {why}", file=out)
            if args.report and args.report.endswith(".json"):
                import json
                with open(args.report, "w", encoding="utf-8") as f:
                    json.dump({"device": args.device, "skipped": why, "exit_code": 0}, f, indent=1)
            return 0
    if args.list_checks:
        from ._runner import TESTS
        print("tests: " + ", ".join(TESTS), file=out)
        print("device checks: " + ", ".join(f"device_{n}" for n in DEVICE_CHECKS)
              + " (device_roundtrip once per registered dtype)", file=out)
        return 0
    if getattr(args, "fast", False) and args.write_coverage:
        print("ember conformance: error: --write-coverage needs a full run (the coverage tables are committed); "
              "drop --fast", file=sys.stderr)
        return 2
    try:
        opinfos = _resolve(args.opinfos) if args.opinfos else None
        progress = (lambda m: print(m, file=sys.stderr, flush=True)) if args.verbose else None
        results = run_conformance(args.device, dtypes=args.dtype, ops=args.op, layout=args.layout,
                                  opinfos=opinfos, xfail_files=args.xfails,
                                  device_checks=not args.no_device_checks, progress=progress,
                                  fast=getattr(args, "fast", False))
    except (RuntimeError, ValueError, ImportError, AttributeError, FileNotFoundError) as e:
        print(f"ember conformance: error: {e}", file=sys.stderr)
        return 2
    text = render_text(results)
    if args.quiet:
        text = text[text.index("op x dtype cells:"):] if "op x dtype cells:" in text else text
    print(text, end="", file=out)
    if args.report:
        write_report(results, args.report)
        print(f"report written to {args.report}", file=out)
    if args.write_coverage:
        import os
        name = results.target.device_type
        if args.layout != "strided":
            name += f"-{args.layout}"
        elif args.dtype and not any(d.strip() in {d.name for d in ALL_DENSE} for d in args.dtype.split(",")):
            name += "-" + args.dtype.replace(",", "-")        # e.g. cpu-qint8.md (a dtype plugin's run)
        if getattr(args, "coverage_suffix", ""):
            name += f"-{args.coverage_suffix}"
        path = os.path.join(args.write_coverage, f"{name}.md")
        write_report(results, path, coverage=True, command=_coverage_command(args))
        print(f"coverage table written to {path}", file=out)
    return results.exit_code
