"""Results of a conformance run, the op x dtype matrix, and the text / Markdown / JSON reports.

A cell of the matrix is one (op, dtype) on the device under test:

==========  ===============================================================================
``N``       every check passed; the op's dispatch key resolved to a native kernel
``C``       passed through a composite (the op's decomposition into other ops)
``F``       passed, but some op ran through the device's fallback (copy to cpu and back)
``xf``      an expected failure (OpInfo.xfails or the plugin's xfails file) failed as expected
``FAIL``    an unexpected failure
``XP``      an unexpected pass: an xfail whose checks all passed (remove the xfail)
``-``       not tested: the op does not support the dtype
==========  ===============================================================================

A column is the dtype of the samples' inputs; the source is that of the kernels the op's entry points
actually resolved for them, the least native one counting: ``exp`` of an int64 tensor dispatches at its
computation dtype (float32), so a device with a native float32 kernel shows ``N`` in the int64 column.

The ``grad`` and ``err`` columns are per op (gradcheck, error inputs), with ``ok`` for passed; a
cell whose samples could not be built shows the op's ``samples`` check (``FAIL``).

Counting, the same in ``ember conformance`` and the pytest form (where each check is one test):
every check is passed, failed, skipped (not applicable), xfailed (failed under an expected
failure) or xpassed (passed under one, as pytest's ``xfail(strict=False)``). A (test, op, dtype)
group under an expected failure none of whose checks failed is an *unexpected pass*: the run
fails. ``result`` is PASSED exactly when there is no unexpected failure and no unexpected pass.
"""
from __future__ import annotations

import collections
import dataclasses
import json

__all__ = ["Outcome", "Results", "render_text", "render_markdown", "result_line", "to_json", "CODES"]

CODES = {"native": "N", "composite": "C", "fallback": "F", "missing": "M", "xfail": "xf", "failing": "FAIL",
         "xpass": "XP", "untested": "-", "passed": "ok"}

_SHORT = {"bool": "b", "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex64": "c64",
          "complex128": "c128"}


@dataclasses.dataclass
class Outcome:
    """One check's result. ``status``: passed | failed | skipped | xfailed | xpassed."""
    test: str          # samples, op, out, inplace, view, errors, grad, device_<name>, or collection
    op: str            # OpInfo id ("*" for a device check)
    dtype: str         # dtype name ("-" for errors, "*" for a device check)
    sample: str        # "3 'broadcast'" or ""
    status: str
    message: str = ""
    reason: str = ""   # the xfail's reason (xfailed, xpassed)


class Results:
    """Everything a run found; ``finalize(xfails)`` applies the expected failures."""

    def __init__(self, target, opinfos=()):
        self.target = target
        self.fast = getattr(target, "fast", False)    # only the first sample of each op x dtype was checked
        self.device = str(target.device)
        self.layout = target.layout
        self.dtypes = list(target.dtypes)
        self.ops = [o.id for o in opinfos]
        self.op_dtypes = {o.id: [] for o in opinfos}     # op id -> dtypes tested
        self.outcomes: list = []
        self.sources: dict = {}       # (op, dtype) -> native | composite | fallback | missing
        self.fallbacks: dict = {}     # (op, dtype) -> {op name: calls}
        self.unexpected_passes: list = []   # (test, op, dtype, reason)
        self.unbuilt: set = set()     # (op, dtype) whose samples could not be built (see the op's samples check)
        self.finalized = False
        self.copy_paths: dict = {}    # (src type, dst type, "direct" | "host") -> copies made by the device checks

    def add(self, outcome: Outcome):
        """Record one test outcome."""
        self.outcomes.append(outcome)

    # ------------------------------------------------------------ xfails
    def finalize(self, xfails):
        """Under a matching expected failure, turn each failed check into xfailed and each passed one
        into xpassed (as pytest counts them), and list the groups with no failure as unexpected passes."""
        groups = collections.defaultdict(list)
        for o in self.outcomes:
            groups[(o.test, o.op, o.dtype)].append(o)
        for (test, op, dtype), outs in groups.items():
            x = xfails.lookup(test, op, dtype)
            if x is None:
                continue
            failed = [o for o in outs if o.status == "failed"]
            passed = [o for o in outs if o.status == "passed"]
            for o in failed:
                o.status, o.reason = "xfailed", x.reason
            for o in passed:
                o.status, o.reason = "xpassed", x.reason
            if passed and not failed:
                self.unexpected_passes.append((test, op, dtype, f"{x.reason} [{x.source}]"))
        self.finalized = True
        return self

    # ------------------------------------------------------------ queries
    @property
    def failures(self) -> list:
        """The outcomes whose status is 'failed' (unexpected failures, after finalize)."""
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def exit_code(self) -> int:
        """0 when nothing failed unexpectedly and nothing passed unexpectedly, else 1."""
        return 1 if self.failures or self.unexpected_passes else 0

    def _unexpected(self, tests, op, dtype=None) -> bool:
        return any(t in tests and o == op and (dtype is None or d == dtype) for t, o, d, _ in self.unexpected_passes)

    def cell(self, op, dtype) -> str:
        """The matrix status of (op, dtype): failing / xpass / xfail / native / composite / fallback / untested."""
        if dtype not in self.op_dtypes.get(op, ()):
            return "untested"
        if (op, dtype) in self.unbuilt:      # no sample: the op's samples check says why
            return {"failing": "failing", "xfail": "xfail"}.get(self.op_column(op, "samples"), "untested")
        st = {o.status for o in self._by_cell().get((op, dtype), ())}
        if "failed" in st:
            return "failing"
        if self._unexpected(("op", "out", "inplace", "view"), op, dtype):
            return "xpass"
        if "xfailed" in st:
            return "xfail"
        return self.sources.get((op, dtype), "composite")

    def op_column(self, op, test) -> str:
        """The summary status of ``test`` for ``op``: 'untested', 'failing', 'xpass', 'xfail' or 'passed'."""
        st = {o.status for o in self.outcomes if o.op == op and o.test == test}
        if not st or st == {"skipped"}:
            return "untested"
        if "failed" in st:
            return "failing"
        if self._unexpected((test,), op):
            return "xpass"
        return "xfail" if "xfailed" in st else "passed"

    def _by_cell(self):
        if getattr(self, "_cells", None) is None or self._cells_n != len(self.outcomes):
            cells = collections.defaultdict(list)
            for o in self.outcomes:
                if o.test in ("op", "out", "inplace", "view"):
                    cells[(o.op, o.dtype)].append(o)
            self._cells, self._cells_n = cells, len(self.outcomes)
        return self._cells

    def device_checks(self) -> list:
        """The outcomes of the device-level checks (tests named 'device_*')."""
        return [o for o in self.outcomes if o.test.startswith("device_")]

    def totals(self) -> dict:
        """Counts for the summary: matrix cells by status (untested left out), checks by status, unexpected failures
        (all of them, in cells or not) and unexpected passes (xfail groups with no failure).
        """
        cells = collections.Counter(self.cell(op, d) for op in self.ops for d in self.dtypes)
        cells.pop("untested", None)
        checks = collections.Counter(o.status for o in self.outcomes)
        return {"cells": dict(cells), "checks": dict(checks), "unexpected_failures": len(self.failures),
                "unexpected_passes": len(self.unexpected_passes)}


# ---------------------------------------------------------------- rendering
def _matrix_rows(r: Results):
    cols = [_SHORT.get(d, d) for d in r.dtypes] + ["grad", "err", "compiled"]
    rows = []
    for op in r.ops:
        row = [CODES[r.cell(op, d)] for d in r.dtypes]
        row += [CODES[r.op_column(op, "grad")], CODES[r.op_column(op, "errors")], CODES[r.op_column(op, "compiled")]]
        rows.append((op, row))
    return cols, rows


def _failures_by_test(r: Results) -> str:
    per_test = collections.Counter(o.test for o in r.failures)
    return ", ".join(f"{t} {n}" for t, n in sorted(per_test.items()))


def result_line(r: Results) -> str:
    """``result: PASSED`` or ``result: FAILED``, with the counts the verdict is made of (the exit status's)."""
    n_fail, n_xpass = len(r.failures), len(r.unexpected_passes)
    where = f" ({_failures_by_test(r)})" if n_fail else ""
    return (f"result: {'PASSED' if r.exit_code == 0 else 'FAILED'} - {n_fail} unexpected failure(s){where}, "
            f"{n_xpass} unexpected pass(es)")


def _summary_lines(r: Results) -> list:
    t = r.totals()
    c = t["cells"]
    ck = t["checks"]
    lines = [f"op x dtype cells: {sum(c.values())} tested - "
             + ", ".join(f"{c.get(k, 0)} {k}" for k in ("native", "composite", "fallback", "xfail", "failing",
                                                          "xpass", "missing") if c.get(k, 0) or k in
                         ("native", "composite", "fallback", "failing")),
             f"checks: {ck.get('passed', 0)} passed, {ck.get('failed', 0)} failed"
             + (f" ({_failures_by_test(r)})" if ck.get("failed", 0) else "")
             + f", {ck.get('xfailed', 0)} xfailed, {ck.get('xpassed', 0)} xpassed, "
             f"{ck.get('skipped', 0)} not applicable"]
    if r.unexpected_passes:
        lines.append(f"unexpected passes: {len(r.unexpected_passes)} expected failure(s) with no failing check")
    if r.fast:
        lines.append("FAST run (--fast): only the first sample of each op x dtype and one gradient sample per op "
                     "were checked; run without --fast before a release")
    dev = r.device_checks()
    if dev:
        dc = collections.Counter(o.status for o in dev)
        lines.append(f"device checks: {dc.get('passed', 0)} passed, {dc.get('failed', 0)} failed, "
                     f"{dc.get('xfailed', 0)} xfailed, {dc.get('skipped', 0)} not declared by the device")
    if r.copy_paths:
        lines.append("copies between devices: " + ", ".join(
            f"{s} -> {d} {path}" for (s, d, path) in sorted(r.copy_paths))
            + " (direct: the runtime's copy_across; host: staged through host memory)")
    return lines


def _check_name(o) -> str:
    """A device check's name in the report: ``device_roundtrip qint8`` for a per-dtype check."""
    return o.test if o.dtype in ("*", "-") else f"{o.test} {o.dtype}"


#: checks that run once per op (their skips are listed with the reason)
_PER_OP = ("samples", "errors")


def _not_run_lines(r: Results) -> list:
    """The per-op checks that did not apply, with the reason (e.g. a plugin's dtype is missing); left out:
    the samples of ops with no dtype on the device (their row of the matrix says so)."""
    return [f"{o.test} {o.op}: {o.message}" for o in r.outcomes if o.status == "skipped" and o.test in _PER_OP
            and (o.test == "errors" or r.op_dtypes.get(o.op))]


def _fallback_lines(r: Results) -> list:
    per_op = collections.Counter()
    for (_, _), counts in r.fallbacks.items():
        per_op.update(counts)
    return [f"{name}: {n} call(s)" for name, n in sorted(per_op.items(), key=lambda kv: (-kv[1], kv[0]))]


def render_text(r: Results, *, max_failures: int = 20) -> str:
    """The console report: matrix, totals, failures (first ``max_failures`` in full)."""
    cols, rows = _matrix_rows(r)
    w = max([len(op) for op, _ in rows] + [2])
    cw = [max(len(c), 4) for c in cols]
    out = [f"ember conformance: device {r.device}, layout {r.layout}, {len(r.ops)} ops x {len(r.dtypes)} dtypes"
           + (" (FAST run: first sample per op x dtype)" if r.fast else ""), ""]
    out.append(" " * w + "  " + " ".join(c.rjust(n) for c, n in zip(cols, cw)))
    for op, row in rows:
        out.append(op.ljust(w) + "  " + " ".join(v.rjust(n) for v, n in zip(row, cw)))
    out.append("")
    out.append("legend: N native, C composite, F fallback, xf expected failure, FAIL failing, XP unexpected pass, "
               "- not tested, ok passed")
    dev = r.device_checks()
    if dev:
        out.append("")
        out.append("device checks:")
        for o in dev:
            tail = f" ({o.reason or o.message.splitlines()[0] if o.message else ''})" if o.status != "passed" else ""
            out.append(f"  {_check_name(o):<28} {o.status}{tail}")
    fb = _fallback_lines(r)
    if fb:
        out += ["", "ops that ran through the fallback:"] + ["  " + x for x in fb]
    skipped = _not_run_lines(r)
    if skipped:
        out += ["", "per-op checks not run:"] + ["  " + x for x in skipped]
    out.append("")
    out += _summary_lines(r)
    if r.unexpected_passes:
        out += ["", "unexpected passes (remove these xfails):"]
        out += [f"  {t} {op} {d}: {why}" for t, op, d, why in r.unexpected_passes]
    fails = r.failures
    if fails:
        out += ["", f"failures ({len(fails)}):"]
        for o in fails[:max_failures]:
            out.append("")
            out.append(o.message)
        if len(fails) > max_failures:
            out.append(f"\n... and {len(fails) - max_failures} more (--report report.md or report.json lists "
                       f"them all)")
    out.append("")
    out.append(result_line(r))
    return "\n".join(out) + "\n"


def render_markdown(r: Results, *, title: str = None, coverage: bool = False, command: str = None) -> str:
    """The Markdown report: the result line, the matrix, and every failure, grouped by op. With
    ``coverage=True`` it is the committed coverage table (docs/coverage/<device>.md): failures
    listed by (test, op, dtype) without their messages, so the file holds no machine paths;
    deterministic for a given run, no timestamps. ``command`` is the command line that produced it
    (default: one rebuilt from the device and layout)."""
    cols, rows = _matrix_rows(r)
    if command is None:
        how = "--write-coverage" if coverage else "--report ..."
        command = (f"ember conformance {r.target.device_type}"
                   f"{'' if r.layout == 'strided' else ' --layout ' + r.layout} {how}")
    out = [f"# {title or f'Conformance of `{r.device}`'}", "",
           f"Generated by `{command}` — do not edit by hand.", ""]
    out += ["- " + x for x in _summary_lines(r) + [result_line(r)]]
    out += ["", "Legend: **N** native kernel, **C** composite, **F** fallback, **xf** expected failure, "
                "**FAIL** failing, **XP** unexpected pass, **-** not tested (dtype not supported by the op), "
                "**ok** passed.", ""]
    out.append("| op | " + " | ".join(cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    for op, row in rows:
        out.append(f"| `{op}` | " + " | ".join(f"**{v}**" if v in ("FAIL", "XP") else v for v in row) + " |")
    dev = r.device_checks()
    if dev:
        out += ["", "## Device checks", "", "| check | result |", "|---|---|"]
        for o in dev:
            note = f" — {o.reason}" if o.reason else (
                f" — {o.message.splitlines()[0]}" if o.status == "skipped" and o.message else "")
            out.append(f"| `{_check_name(o)}` | {o.status}{note} |")
    fb = _fallback_lines(r)
    if fb:
        out += ["", "## Fallbacks", ""] + [f"- {x}" for x in fb]
    skipped = _not_run_lines(r)
    if skipped:
        out += ["", "## Per-op checks not run", ""] + [f"- {x}" for x in skipped]
    xf = sorted({(o.test, o.op, o.dtype, o.reason) for o in r.outcomes if o.status == "xfailed"})
    if xf:
        out += ["", "## Expected failures", ""] + [f"- `{t}` `{op}` {d}: {why}" for t, op, d, why in xf]
    if r.unexpected_passes:
        out += ["", "## Unexpected passes", ""] + [f"- `{t}` `{op}` {d}: {why}" for t, op, d, why in
                                                    r.unexpected_passes]
    if r.failures and coverage:
        groups = collections.Counter((o.test, o.op, o.dtype) for o in r.failures)
        out += ["", f"## Failures ({len(r.failures)})", ""]
        out += [f"- `{t}` `{op}` {d}: {n} check(s)" for (t, op, d), n in sorted(groups.items())]
    elif r.failures:
        out += ["", f"## Failures ({len(r.failures)})", ""]
        by_op = collections.defaultdict(list)
        for o in r.failures:
            by_op[o.op].append(o)
        for op, fails in by_op.items():
            out += [f"### `{op}` ({len(fails)})", ""]
            for o in fails:
                out += ["```", o.message, "```", ""]
    return "\n".join(out).rstrip() + "\n"


def to_json(r: Results) -> dict:
    """Everything, machine-readable."""
    return {
        "device": r.device, "layout": r.layout, "dtypes": r.dtypes, "exit_code": r.exit_code, "fast": r.fast,
        "totals": r.totals(),
        "matrix": {op: {d: r.cell(op, d) for d in r.dtypes} | {"grad": r.op_column(op, "grad"),
                                                                "errors": r.op_column(op, "errors"),
                                                                "compiled": r.op_column(op, "compiled")}
                   for op in r.ops},
        "fallbacks": {f"{op}/{d}": c for (op, d), c in r.fallbacks.items()},
        "copy_paths": [{"src": s, "dst": d, "path": p, "copies": n} for (s, d, p), n in sorted(r.copy_paths.items())],
        "unexpected_passes": [dict(zip(("test", "op", "dtype", "reason"), u)) for u in r.unexpected_passes],
        "outcomes": [dataclasses.asdict(o) for o in r.outcomes if o.status != "passed"],
        "passed": sum(o.status == "passed" for o in r.outcomes),
    }


def write_report(r: Results, path, *, coverage: bool = False, command: str = None) -> None:
    """Write ``r`` to ``path``: JSON when it ends in .json, else Markdown (the coverage table
    with ``coverage=True``; ``command`` as for ``render_markdown``)."""
    import os
    path = os.fspath(path)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        if path.endswith(".json"):
            json.dump(to_json(r), f, indent=1, default=str)
            f.write("\n")
        else:
            f.write(render_markdown(r, coverage=coverage, command=command))
