"""Tests of the conformance runner itself (ember.testing.conformance), on a fake device plugin
registered in-test whose exp kernel is deliberately wrong, and on cpu with a few OpInfos."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

import ember
from ember import _cli, _dispatch, profiler
from ember.testing.conformance import _xfails
from ember.testing.conformance._main import run_conformance
from ember.testing.conformance._report import render_markdown, render_text, to_json

import _fake_device as F

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def fakedev():
    """The 'fakedev' plugin registered for one test (with an xfails file named in its manifest
    when the test asks for one through ``request.param``)."""
    ember.plugins.list()
    before = dict(ember.plugins._plugins)
    plugin = F.FakePlugin()
    ember.plugins.register(plugin, name="fakedev")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # the fallback's once-per-op warnings
            yield plugin
    finally:
        ember.plugins.unregister("fakedev")
        ember.plugins._plugins.clear()
        ember.plugins._plugins.update(before)


# ---------------------------------------------------------------- failures are found and readable
def test_a_wrong_kernel_is_reported_failing_with_a_readable_message(fakedev):
    r = run_conformance("fakedev", opinfos=F.opinfos, dtypes="float32,int64", device_checks=False)
    assert r.exit_code == 1
    assert r.cell("exp", "float32") == "failing"
    assert r.cell("add", "float32") == "fallback" and r.cell("add", "int64") == "fallback"
    assert r.cell("t", "float32") == "composite" and r.cell("exp", "int64") == "untested"   # t: a view, no kernel
    assert r.fallbacks[("add", "float32")]["add"] >= 1
    msg = r.failures[0].message
    assert "op failed: op 'exp' on device fakedev:0, dtype float32, sample 0 '2-D'" in msg
    assert 'SampleInput[2-D](Tensor[size=(3, 4), device="fakedev:0", dtype=float32])' in msg
    assert "result differs from the cpu result: 12 of 12 elements differ" in msg
    assert "result differs from the numpy reference" in msg
    first = [ln for ln in msg.splitlines() if ln.strip().startswith("index (0, 0)")][0]
    got, expected = (float(x) for x in first.split("got ")[1].split(", expected "))
    assert got == pytest.approx(expected + 1, rel=1e-5)        # the kernel's deliberate +1
    text = render_text(r)
    assert "exp" in text and "FAIL" in text and "result: FAILED" in text
    assert "ops that ran through the fallback:" in text


def test_passing_ops_exit_zero_and_device_checks_pass_on_the_fake_device(fakedev, tmp_path):
    # fakedev's float32 exp is wrong: the passing entries do not call it, but the smoke CNN's cross-entropy
    # does, so device_modules fails - expected here, through an xfail scoped to that check
    xf = tmp_path / "xf.txt"
    xf.write_text("device_modules * * fakedev's float32 exp is wrong and the CNN's cross-entropy runs it\n")
    r = run_conformance("fakedev", opinfos=F.passing_opinfos, xfail_files=[xf])
    bad = [o.message for o in r.outcomes if o.status == "failed"]
    assert not bad, bad
    assert r.exit_code == 0
    checks = {(o.test, o.dtype): o.status for o in r.device_checks()}
    assert checks.pop(("device_modules", "*")) == "xfailed"
    assert checks[("device_copies", "*")] == "passed"            # includes fakedev:0 <-> fakedev:1
    assert r.target.second == ember.device("fakedev", 1)
    assert set(checks.values()) == {"passed"}, checks
    assert r.op_column("add", "errors") == "passed" and r.op_column("add", "grad") == "passed"


# ---------------------------------------------------------------- xfails
def test_xfails_turn_failures_into_xfail_and_a_passing_xfail_is_reported(fakedev, tmp_path):
    f = tmp_path / "xf.txt"
    f.write_text("# test op dtype reason\n"
                 "*    exp  float32  the fake exp is off by one (values and, through them, gradients)\n"
                 "test_op  add  int64  stale entry: add works\n")
    r = run_conformance("fakedev", opinfos=F.opinfos, dtypes="float32,int64", xfail_files=[f],
                        device_checks=False)
    assert r.cell("exp", "float32") == "xfail"
    assert not r.failures
    assert r.unexpected_passes and r.unexpected_passes[0][:3] == ("op", "add", "int64")
    assert r.cell("add", "int64") == "xpass"
    assert r.exit_code == 1
    assert "unexpected passes (remove these xfails):" in render_text(r)


def test_an_opinfo_xfail_and_the_plugins_manifest_xfails_file_apply(fakedev):
    fakedev.xfails = "fake_xfails.txt"       # next to _fake_device.py: xfails exp float32
    infos = F.opinfos()
    infos[1].xfails = {("op", "fakedev", "int64")}
    infos[1].xfail_reasons = {("op", "fakedev", "int64"): "pretend"}
    r = run_conformance("fakedev", opinfos=infos, dtypes="float32,int64", device_checks=False)
    assert r.cell("exp", "float32") == "xfail"
    assert ("op", "add", "int64", "pretend [OpInfo add]") in r.unexpected_passes


def test_xfails_file_format_errors_name_the_line(tmp_path):
    with pytest.raises(ValueError, match=r"xf.txt:2: an xfail line needs 4 fields"):
        _xfails.parse_xfails("op add float32 why\nop add\n", "xf.txt")
    j = tmp_path / "xf.json"
    j.write_text(json.dumps([{"test": "test_grad", "op": "*", "dtype": "float32", "reason": "r"}]))
    [x] = _xfails.load_xfails_file(j)
    assert x.test == "grad" and x.matches("test_grad", "sum", "float32") and not x.matches("op", "sum", "float32")


# ---------------------------------------------------------------- the CLI
def test_cli_exit_codes_and_report_formats(fakedev, tmp_path, capsys):
    js, md = tmp_path / "r.json", tmp_path / "r.md"
    rc = _cli.main(["conformance", "fakedev", "--opinfos", "_fake_device:opinfos", "--dtype", "float32",
                    "--no-device-checks", "--report", str(js)])
    assert rc == 1
    out = capsys.readouterr().out
    assert "ember conformance: device fakedev:0" in out and "result: FAILED" in out
    data = json.loads(js.read_text())
    assert data["exit_code"] == 1 and data["matrix"]["exp"]["float32"] == "failing"
    assert data["totals"]["unexpected_failures"] == 4     # 2 samples x (op, grad: exp's backward uses its result)
    assert any("op 'exp'" in o["message"] for o in data["outcomes"] if o["status"] == "failed")
    rc = _cli.main(["conformance", "fakedev", "--opinfos", "_fake_device:opinfos", "--op", "add,t",
                    "--dtype", "float32", "--no-device-checks", "--report", str(md),
                    "--write-coverage", str(tmp_path / "cov")])
    assert rc == 0
    text = md.read_text()
    assert text.startswith("# Conformance of `fakedev:0`") and "| `add` | F | ok | ok |" in text and "| `t` | C | - | - |" in text
    cov = (tmp_path / "cov" / "fakedev.md").read_text()
    assert cov.startswith("# Conformance of `fakedev:0`") and "| `add` | F | ok | ok |" in cov
    assert "--write-coverage" in cov
    assert _cli.main(["conformance", "nosuchdevice", "--op", "add"]) == 2
    assert "device type 'nosuchdevice' is not available" in capsys.readouterr().err


def test_markdown_report_lists_device_checks_and_failures(fakedev):
    r = run_conformance("fakedev", opinfos=F.opinfos, dtypes="float32", ops="exp")
    md = render_markdown(r)
    assert "| `exp` | **FAIL** | **FAIL** | - |" in md and "## Device checks" in md
    # 2 samples x (op, grad), device_autograd, whose gradcheck of exp(x) / y meets the wrong exp, and
    # device_modules, whose CNN's cross-entropy does
    assert "## Failures (6)" in md and "| `device_autograd` | failed |" in md
    assert "| `device_modules` | failed |" in md and "| `device_roundtrip float32` | passed |" in md
    assert to_json(r)["matrix"]["exp"]["float32"] == "failing"


# ---------------------------------------------------------------- fallback visibility
def test_fallback_warn_modes_and_counts(fakedev, monkeypatch):
    monkeypatch.setattr(_dispatch, "_fallback_warned", set())
    x = ember.ones(3, device="fakedev")
    with profiler.record_fallbacks() as rec:
        monkeypatch.setenv("EMBER_FALLBACK_WARN", "once")
        with pytest.warns(UserWarning, match=r"'mul' has no kernel for \(fakedev, strided, float32\)"):
            x * 2
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x * 3                                   # once per op: silent now
        monkeypatch.setenv("EMBER_FALLBACK_WARN", "always")
        with pytest.warns(UserWarning, match="EMBER_FALLBACK_WARN=always"):
            x * 4
        monkeypatch.setenv("EMBER_FALLBACK_WARN", "error")
        with pytest.raises(RuntimeError, match=r"'mul' has no kernel for \(fakedev, strided, float32\), and "
                                               r"EMBER_FALLBACK_WARN=error forbids"):
            x * 5
        monkeypatch.setenv("EMBER_FALLBACK_WARN", "sometimes")
        with pytest.raises(ValueError, match="EMBER_FALLBACK_WARN='sometimes' is not one of once, always, error"):
            x * 6
    assert rec.counts == {"mul": 3} and rec.total == 3
    assert rec.by_key == {("mul", "fakedev", "strided", "float32"): 3}
    assert profiler.fallback_counts()["mul"] >= 3
    assert profiler.fallback_counts(by_key=True)[("mul", "fakedev", "strided", "float32")] >= 3


# ---------------------------------------------------------------- the pytest plugin
def _pytest(*args):
    from importlib.metadata import entry_points
    installed = any(ep.value == "ember.testing.conformance.plugin" for ep in entry_points(group="pytest11"))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if not installed:
        cmd += ["-p", "ember.testing.conformance.plugin"]
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=env, cwd=HERE, timeout=300)


def test_pytest_plugin_runs_the_suite_and_reports_unexpected_passes(tmp_path):
    base = ["--pyargs", "ember.testing.conformance", "--ember-device", "cpu", "--ember-opinfos",
            "_fake_device:opinfos", "--ember-dtype", "float32,int64", "-k", "not test_device"]
    p = _pytest(*base)
    assert p.returncode == 0, p.stdout[-3000:]
    assert "test_op" not in p.stdout and " passed" in p.stdout
    assert "ember conformance: device cpu" in p.stdout
    xf = tmp_path / "xf.txt"
    xf.write_text("op add int64 stale\n")
    p = _pytest(*base, "--ember-xfails", str(xf), "-rX")
    assert p.returncode == 1, p.stdout[-3000:]
    assert "unexpected passes" in p.stdout and "op add int64: stale" in p.stdout


# ---------------------------------------------------------------- a failing call writes nothing
def test_errors_check_catches_a_failing_call_that_wrote_first():
    """The op database sweep (issue 17): an op whose out= / in-place variant writes before it raises is
    reported, and a well-behaved one is not."""
    from ember.testing import SampleInput
    from ember.testing.conformance import _runner

    class FakeInfo:
        supports_out = True

        def __init__(self, writes_first):
            self.writes_first = writes_first
            self.inplace = self.op_

        def op(self, x, *, out=None):
            if out is not None and self.writes_first:
                out.fill_(0)                       # writes, then finds the argument bad
            raise RuntimeError("bad argument")

        def op_(self, x):
            if self.writes_first:
                x.fill_(0)
            raise RuntimeError("bad argument")

    s = SampleInput(ember.ones(3))
    for writes, expect in ((True, 2), (False, 0)):
        problems = []
        _runner._failing_call_writes_nothing(FakeInfo(writes), s, 1, problems)
        assert len(problems) == expect, problems
        if writes:
            assert "the out= variant failed but wrote into its out= tensor first" in problems[0]
            assert "the in-place variant failed but wrote into a tensor first" in problems[1]
    assert s.input.tolist() == [1.0, 1.0, 1.0]         # the sweep works on copies of the sample's input
