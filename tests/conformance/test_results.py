"""What a conformance run reports: sample-building errors (once per op, with the frame that raised),
the summary agreeing with the result, every failure in the Markdown report, a run without
ember-quantized, and the same counts from ``ember conformance`` and the pytest form."""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import pytest

import ember
from ember.testing import ErrorInput, OpInfo, SampleInput
from ember.testing.conformance import _xfails
from ember.testing.conformance._main import run_conformance
from ember.testing.conformance._report import Outcome, Results, render_markdown, render_text
from ember.testing.conformance._runner import make_target

import _fake_device as F
from test_runner import _pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _raise_line():
    """file:line of the ``raise`` in _fake_device._bad_shape."""
    lines, first = inspect.getsourcelines(F._bad_shape)
    n = first + next(i for i, ln in enumerate(lines) if "raise ValueError" in ln)
    return f"{F.__file__}:{n}"


# ---------------------------------------------------------------- sample-building errors
def test_a_sample_building_error_is_reported_once_with_the_frame_that_raised_it():
    r = run_conformance("cpu", opinfos=F.broken_sampler_opinfos, dtypes="float32,float64", device_checks=False)
    [failure] = r.failures                                 # not one per dtype, nor one more for grad
    assert (failure.test, failure.op) == ("samples", "exp")
    assert "building the samples raised ValueError: bad shape (2, -1)" in failure.message
    assert f"at {_raise_line()} in _bad_shape" in failure.message          # the innermost frame first
    assert "float32, float64, float64 (gradient samples)" in failure.message
    assert r.cell("exp", "float32") == "failing" and r.cell("exp", "float64") == "failing"
    assert r.cell("add", "float32") == "native" and r.op_column("add", "samples") == "passed"
    assert not [o for o in r.outcomes if o.op == "exp" and o.test in ("op", "grad")]     # nothing else ran for exp


def test_the_pytest_form_reports_a_sample_building_error_once_and_runs_the_other_ops():
    p = _pytest("--pyargs", "ember.testing.conformance", "--ember-device", "cpu", "--ember-opinfos",
                "_fake_device:broken_sampler_opinfos", "--ember-dtype", "float32,float64", "-k", "not test_device")
    assert p.returncode == 1, p.stdout[-3000:]
    assert "error" not in p.stdout.splitlines()[-1]        # no collection error hiding the other ops
    failed = [ln for ln in p.stdout.splitlines() if ln.startswith("FAILED ")]
    assert len(failed) == 1 and "test_samples[exp-_]" in failed[0], failed
    assert f"at {_raise_line()} in _bad_shape" in p.stdout
    assert re.search(r"1 failed, \d+ passed", p.stdout.splitlines()[-1])


def test_an_error_building_the_error_inputs_names_its_frame():
    def broken_errors(op, device):
        yield ErrorInput(SampleInput(ember.ones(2, device=device)), RuntimeError, "x")
        raise KeyError("no such error input")

    info = OpInfo("neg", ref=lambda a: -a, dtypes=("float32",), sample_inputs=F._unary, error_inputs=broken_errors)
    r = run_conformance("cpu", opinfos=[info], dtypes="float32", device_checks=False)
    [failure] = r.failures
    assert failure.test == "errors" and "building the error inputs raised KeyError: 'no such error input'" in \
        failure.message
    assert f"at {__file__}:" in failure.message and "in broken_errors" in failure.message


# ---------------------------------------------------------------- the summary agrees with the result
def test_the_summary_counts_failures_outside_the_matrix_and_agrees_with_the_result():
    def wrong_errors(op, device):
        yield ErrorInput(SampleInput(ember.ones(2, device=device)), RuntimeError, "never raised")

    info = OpInfo("neg", ref=lambda a: -a, dtypes=("float32",), sample_inputs=F._unary, error_inputs=wrong_errors)
    r = run_conformance("cpu", opinfos=[info], dtypes="float32", device_checks=False)
    assert r.cell("neg", "float32") == "native" and r.exit_code == 1       # the matrix itself has no FAIL
    text = render_text(r)
    assert "checks: 4 passed, 1 failed (errors 1)," in text          # samples, op, grad, compiled
    assert text.rstrip().endswith("result: FAILED - 1 unexpected failure(s) (errors 1), 0 unexpected pass(es)")
    assert "result: FAILED - 1 unexpected failure(s) (errors 1)" in render_markdown(r)
    passing = run_conformance("cpu", opinfos=F.passing_opinfos, dtypes="float32", device_checks=False)
    assert render_text(passing).rstrip().endswith("result: PASSED - 0 unexpected failure(s), 0 unexpected pass(es)")


# ---------------------------------------------------------------- the Markdown report lists every failure
def test_the_markdown_report_lists_every_failure_grouped_by_op():
    infos = [OpInfo(name, ref=lambda a: a) for name in ("neg", "abs", "exp")]
    r = Results(make_target("cpu", "float32"), infos)
    for i in range(146):
        op = infos[i % 3].id
        r.add(Outcome("op", op, "float32", str(i), "failed", f"op failed: op '{op}', failure number {i}"))
    md = render_markdown(r.finalize(_xfails.XfailSet([])))
    assert "## Failures (146)" in md
    assert all(f"failure number {i}\n" in md for i in range(146))
    assert "### `neg` (49)" in md and "### `abs` (49)" in md and "### `exp` (48)" in md
    section = md[md.index("### `abs`"):md.index("### `exp`")]
    assert section.count("op failed: op 'abs'") == 49 and "op 'neg'" not in section


# ---------------------------------------------------------------- without ember-quantized
@pytest.mark.parametrize("device", ["cpu", "vdev"])
def test_the_suite_runs_without_ember_quantized(device):
    env = dict(os.environ, EMBER_DISABLE_PLUGINS="quantized")
    p = subprocess.run([sys.executable, "-m", "ember", "conformance", device, "--op", "quantize*,dequantize,add",
                        "--no-device-checks"], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "errors quantize_per_tensor: needs dtype qint8" in p.stdout
    assert "excluded by EMBER_DISABLE_PLUGINS=quantized" in p.stdout
    assert "result: PASSED - 0 unexpected failure(s), 0 unexpected pass(es)" in p.stdout


# ---------------------------------------------------------------- the CLI and pytest count alike
def _pytest_counts(last_line):
    counts = {k: 0 for k in ("passed", "failed", "skipped", "xfailed", "xpassed")}
    for n, what in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed)", last_line):
        counts[what] = int(n)
    return counts


def test_the_cli_and_the_pytest_form_count_expected_failures_alike(tmp_path):
    xf = tmp_path / "xf.txt"
    xf.write_text("op  neg  float32  the 0-dim sample's reference is wrong: one sample fails, one passes\n"
                  "op  abs  float32  the reference is wrong: every sample fails\n"
                  "op  add  float32  stale: every sample passes\n")
    r = run_conformance("cpu", opinfos=F.xfail_opinfos, dtypes="float32", xfail_files=[xf], device_checks=False)
    cli = {k: r.totals()["checks"].get(k, 0) for k in ("passed", "failed", "skipped", "xfailed", "xpassed")}
    assert cli["xfailed"] == 3 and cli["xpassed"] == 2           # neg: 1 + 1; abs: 2 + 0; add: 0 + 1
    assert [u[:3] for u in r.unexpected_passes] == [("op", "add", "float32")] and r.exit_code == 1
    p = _pytest("--pyargs", "ember.testing.conformance", "--ember-device", "cpu", "--ember-opinfos",
                "_fake_device:xfail_opinfos", "--ember-dtype", "float32", "--ember-xfails", str(xf),
                "-k", "not test_device")
    assert p.returncode == 1, p.stdout[-3000:]
    assert _pytest_counts(p.stdout.strip().splitlines()[-1]) == cli, p.stdout[-2000:]
    assert "op add float32: stale" in p.stdout
