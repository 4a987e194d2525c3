"""Tests of the device checks added for issue item 6: every registered dtype through ``device_roundtrip``,
the module smoke runs (``device_modules``), and the fast mode (``--fast`` / ``--ember-fast``), on fake
devices with deliberate bugs (``_fake_device.QUIRKS``) and on cpu / vdev."""
from __future__ import annotations

import contextlib
import json
import warnings

import pytest

import ember
from ember import _cli, _dtype
from ember.testing.conformance._device_checks import device_check_cases, run_device_check
from ember.testing.conformance._main import run_conformance
from ember.testing.conformance._report import render_markdown, render_text, to_json
from ember.testing.conformance._runner import ConformanceFailure, NotApplicable, make_target

import _fake_device as F
from test_runner import _pytest


@contextlib.contextmanager
def fake(*quirks):
    """The 'fakedev' plugin with ``quirks`` registered for the block."""
    ember.plugins.list()
    before = dict(ember.plugins._plugins)
    ember.plugins.register(F.FakePlugin(quirks=quirks), name="fakedev")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # the fallback's once-per-op warnings
            yield
    finally:
        ember.plugins.unregister("fakedev")
        ember.plugins._plugins.clear()
        ember.plugins._plugins.update(before)


def _roundtrip(r) -> dict:
    return {o.dtype: o for o in r.device_checks() if o.test == "device_roundtrip"}


# ---------------------------------------------------------------- every registered dtype
def test_every_registered_dtype_gets_its_own_roundtrip_result_and_passes_on_cpu():
    r = run_conformance("cpu", opinfos=F.passing_opinfos, ops="t")
    rt = _roundtrip(r)
    assert set(rt) == set(_dtype._BY_NAME)            # the core's dense dtypes and ember-quantized's
    assert {"qint8", "quint8", "qint32"} <= set(rt)
    assert {o.status for o in rt.values()} == {"passed"}, {d: o.message for d, o in rt.items()}
    assert "device_roundtrip qint8" in render_text(r) and "| `device_roundtrip qint8` | passed |" in render_markdown(r)


def test_a_dtype_restricted_run_round_trips_the_dtypes_asked_for():
    t = make_target("cpu", "float32,qint8")
    assert [d for n, d in device_check_cases(t) if n == "roundtrip"] == ["float32", "qint8"]
    assert ("modules", "*") in device_check_cases(t)


def test_a_broken_qint8_round_trip_is_caught_and_names_the_dtype():
    with fake("qint8_unsigned"):
        r = run_conformance("fakedev", opinfos=F.passing_opinfos)
        rt = _roundtrip(r)
        assert rt["qint8"].status == "failed"
        msg = rt["qint8"].message
        assert msg.startswith("device_roundtrip failed on device fakedev:0, dtype qint8:")
        assert "qint8 clone() on fakedev:0" in msg and "got 0, expected -" in msg
        assert "qint8 (stored as int8) is not declared by device type 'fakedev'" in msg   # what it owes, said once
        assert all(o.status == "passed" for d, o in rt.items() if d != "qint8"), {d: o.status for d, o in rt.items()}
        assert r.exit_code == 1 and "device_roundtrip 1" in render_text(r).splitlines()[-1]


def test_a_roundtrip_xfail_is_scoped_to_its_dtype(tmp_path):
    xf = tmp_path / "xf.txt"
    xf.write_text("device_roundtrip  *  qint8  our qint8 copy drops the sign (tracked)\n"
                  "device_modules    *  *      fakedev's float32 exp is wrong and the CNN's cross-entropy runs it\n")
    with fake("qint8_unsigned"):
        r = run_conformance("fakedev", opinfos=F.passing_opinfos, xfail_files=[xf])
        rt = _roundtrip(r)
        assert rt["qint8"].status == "xfailed" and rt["quint8"].status == "passed"
        assert r.exit_code == 0, [o.message for o in r.failures]


def test_an_undeclared_dtype_may_raise_a_clear_error_but_not_return_garbage():
    with fake("complex_unsupported", "int16_garbage"):
        t = make_target("fakedev")
        with pytest.raises(NotApplicable, match=r"complex64 is not declared by device type 'fakedev' .*it raised a "
                                                r"clear error: .*TypeError: fakedev cannot hold complex64"):
            run_device_check("roundtrip", t, "complex64")
        with pytest.raises(ConformanceFailure, match=r"int16 \(3, 4\) round trip cpu -> fakedev:0 -> cpu: 12 of 12 "
                                                     r"elements differ") as e:
            run_device_check("roundtrip", t, "int16")
        assert "never with wrong values" in str(e.value)
        run_device_check("roundtrip", t, "int8")          # undeclared too, but it works: passes
        r = run_conformance("fakedev", opinfos=F.passing_opinfos, ops="t")
        assert _roundtrip(r)["complex64"].status == "skipped"
        assert "2 not declared by the device" in render_text(r)        # complex64, complex128


def test_an_unclear_error_for_an_undeclared_dtype_fails():
    with fake("int16_keyerror"):
        with pytest.raises(ConformanceFailure, match=r"raised KeyError: 'int16'"):
            run_device_check("roundtrip", make_target("fakedev"), "int16")


def test_a_declared_dtype_must_round_trip_a_clear_error_is_not_enough(monkeypatch):
    from ember.testing.conformance import _roundtrip
    declared = _roundtrip.device_dtypes
    with fake("complex_unsupported"):
        t = make_target("fakedev")
        assert _roundtrip.dtype_standing(t, "complex64")[0] == "undeclared"
        assert _roundtrip.dtype_standing(t, "qint8")[0] == "undeclared"          # stored as int8: not declared
        assert _roundtrip.dtype_standing(make_target("vdev"), "qint8")[0] == "generic"
        monkeypatch.setattr(_roundtrip, "device_dtypes", lambda dt: declared(dt) + ["complex64"])
        assert _roundtrip.dtype_standing(t, "complex64")[0] == "declared"
        with pytest.raises(ConformanceFailure, match=r"complex64 .*raised TypeError: fakedev cannot hold complex64"):
            run_device_check("roundtrip", t, "complex64")


# ---------------------------------------------------------------- module smoke runs
@pytest.mark.parametrize("device", ["cpu", "vdev"])
def test_the_module_smoke_run_passes_on_a_correct_device(device):
    run_device_check("modules", make_target(device))


def test_the_module_smoke_run_catches_a_wrong_kernel():
    with fake("relu_identity"):
        with pytest.raises(ConformanceFailure) as e:
            run_device_check("modules", make_target("fakedev", "float32,float64"))
    msg = str(e.value)
    assert "mlp (float32): the losses of steps 1..3 differ from cpu's" in msg
    assert "cnn (float32)" in msg and "parameter 0.weight after 3 steps" in msg
    assert "(float64)" not in msg                      # the wrong relu is float32's only


def test_the_module_smoke_run_catches_a_wrong_kernel_only_the_cnn_runs():
    with fake():                                        # fakedev's float32 exp: cross-entropy's log_softmax
        with pytest.raises(ConformanceFailure, match=r"cnn \(float32\): the losses") as e:
            run_device_check("modules", make_target("fakedev"))
    assert "mlp" not in str(e.value)


# ---------------------------------------------------------------- --fast
def test_fast_runs_one_sample_per_op_and_dtype_and_says_so():
    full = run_conformance("cpu", opinfos=F.passing_opinfos, dtypes="float32,int64", device_checks=False)
    fast = run_conformance("cpu", opinfos=F.passing_opinfos, dtypes="float32,int64", device_checks=False, fast=True)
    n_full, n_fast = (sum(r.totals()["checks"].values()) for r in (full, fast))
    assert n_fast < n_full
    per_sample = [o for o in fast.outcomes if o.test in ("op", "out", "inplace", "view", "grad")]
    assert per_sample and {o.sample.split()[0] for o in per_sample} == {"0"}
    assert fast.cell("add", "float32") == full.cell("add", "float32") == "native"
    text = render_text(fast)
    assert "(FAST run: first sample per op x dtype)" in text.splitlines()[0]
    assert "FAST run (--fast): only the first sample" in text and "FAST run" not in render_text(full)
    assert to_json(fast)["fast"] is True and "FAST run" in render_markdown(fast)


def test_the_fast_cli_flag(tmp_path, capsys):
    js = tmp_path / "r.json"
    rc = _cli.main(["conformance", "cpu", "--opinfos", "_fake_device:passing_opinfos", "--fast",
                    "--no-device-checks", "--report", str(js)])
    assert rc == 0
    assert "FAST run (--fast)" in capsys.readouterr().out
    assert json.loads(js.read_text())["fast"] is True
    assert _cli.main(["conformance", "cpu", "--op", "add", "--fast", "--write-coverage", str(tmp_path)]) == 2
    assert "--write-coverage needs a full run" in capsys.readouterr().err


def test_the_pytest_form_has_ember_fast_and_a_roundtrip_test_per_dtype():
    base = ["--pyargs", "ember.testing.conformance", "--ember-device", "cpu", "--ember-opinfos",
            "_fake_device:passing_opinfos", "--collect-only"]
    full, fast = _pytest(*base), _pytest(*base, "--ember-fast")
    assert full.returncode == 0 and fast.returncode == 0, full.stdout[-2000:] + fast.stdout[-2000:]
    ids = lambda p: [ln for ln in p.stdout.splitlines() if "::" in ln]       # noqa: E731
    assert 0 < len([i for i in ids(fast) if "test_op[" in i]) < len([i for i in ids(full) if "test_op[" in i])
    assert "test_device.py::test_device[roundtrip-qint8]" in full.stdout
    assert "test_device.py::test_device[modules]" in full.stdout
    p = _pytest("--pyargs", "ember.testing.conformance", "--ember-device", "cpu", "--ember-opinfos",
                "_fake_device:passing_opinfos", "--ember-fast", "-k", "test_op or roundtrip-qint8 or modules")
    assert p.returncode == 0, p.stdout[-3000:]
    assert "FAST run (--ember-fast" in p.stdout
