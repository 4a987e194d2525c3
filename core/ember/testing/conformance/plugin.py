"""The pytest plugin of the conformance suite (entry point ``pytest11``: ``ember``).

``pytest --pyargs ember.testing.conformance --ember-device DEVICE [--ember-dtype float32,int64]
[--ember-op add,sum*] [--ember-layout sparse_coo] [--ember-xfails FILE] [--ember-fast]`` runs the suite's test
modules (``test_ops.py``: samples per op, op x dtype x sample; ``test_device.py``: the device
checks) on DEVICE, and counts every check as ``ember conformance`` does (see ``_report``).

Loaded in every pytest run once ember is installed, so it stays inert: importing it imports
no ember, and it only parametrises tests that ask for its fixtures (``ember_case``,
``ember_device_check``) — which only the suite's own modules do. Without ``--ember-device``
those modules run on ``cpu``.

Expected failures come from OpInfo.xfails, the plugin's xfails file and ``--ember-xfails``;
they are marked ``xfail(strict=False)`` per sample (a failing sample is xfailed, a passing one
xpassed, as ``ember conformance`` counts them), and a (test, op, dtype) group whose samples all
pass is reported at the end as an *unexpected pass* and fails the session.
"""
from __future__ import annotations

import pytest

_STATE_KEY = "_ember_conformance_state"


def pytest_addoption(parser):
    """Add the ``--ember-device``, ``--ember-dtype``, ``--ember-op``, ``--ember-layout``, ``--ember-xfails``,
    ``--ember-opinfos`` and ``--ember-fast`` options (group "ember").
    """
    g = parser.getgroup("ember", "ember conformance suite (pytest --pyargs ember.testing.conformance)")
    g.addoption("--ember-device", default=None, help="device to run the conformance suite on (default cpu)")
    g.addoption("--ember-dtype", default=None, help="comma-separated dtype names (default: all the device declares)")
    g.addoption("--ember-op", default=None, help="comma-separated op ids or fnmatch patterns")
    g.addoption("--ember-layout", default="strided", help="layout to test (default strided)")
    g.addoption("--ember-xfails", action="append", default=[], help="an extra xfails file (repeatable)")
    g.addoption("--ember-opinfos", default=None, help="MODULE:ATTR, OpInfo list used instead of the op database")
    g.addoption("--ember-fast", action="store_true", default=False,
                help="quick iteration: only the first sample of each op x dtype (and one gradient sample per op)")


class _State:
    """The target, the op list and the xfails, built once per session on first use."""

    def __init__(self, config):
        from . import _xfails
        from ._main import _resolve
        from ._runner import load_opinfos, make_target, opinfos_for_layout
        opt = config.getoption
        self.target = make_target(opt("--ember-device") or "cpu", opt("--ember-dtype"), opt("--ember-layout"),
                                  fast=bool(opt("--ember-fast")))
        spec = opt("--ember-opinfos")
        self.opinfos = load_opinfos(opt("--ember-op"), _resolve(spec) if spec else None, self.target.device_type)
        self.opinfos = opinfos_for_layout(self.opinfos, self.target.layout)
        self.xfails = _xfails.XfailSet(_xfails.plugin_xfails(self.target.device_type))
        for f in opt("--ember-xfails"):
            self.xfails.add(_xfails.load_xfails_file(f))
        for o in self.opinfos:
            self.xfails.add(_xfails.opinfo_xfails(o, self.target.device_type))
        self.groups = {}        # (test, op, dtype) -> [xfail reason, failed-as-expected count, passed count]


def _state(config) -> _State:
    st = getattr(config, _STATE_KEY, None)
    if st is None:
        st = _State(config)
        setattr(config, _STATE_KEY, st)
    return st


def pytest_generate_tests(metafunc):
    """Parametrise tests that request ``ember_case`` (one param per (op, dtype, sample) case, xfail-marked from the
    xfail sets) or ``ember_device_check`` (one per device check); others are left alone.
    """
    names = metafunc.fixturenames
    if "ember_case" not in names and "ember_device_check" not in names:
        return
    st = _state(metafunc.config)
    if "ember_device_check" in names:
        from ._device_checks import device_check_cases
        params = []
        for n, d in device_check_cases(st.target):      # (name, dtype): dtype "*" unless a per-dtype check
            x = st.xfails.lookup(f"device_{n}", "*", d)
            marks = [pytest.mark.xfail(reason=x.reason, strict=False)] if x else []
            params.append(pytest.param((n, d), id=n if d == "*" else f"{n}-{d}", marks=marks))
        metafunc.parametrize("ember_device_check", params)
        return
    from ._runner import cases_for
    from ._xfails import normalize_test
    test = normalize_test(metafunc.function.__name__)
    params = []
    for c in cases_for(test, st.target, st.opinfos):
        x = st.xfails.lookup(test, c.op_id, c.dtype)
        marks = []
        if x is not None:
            marks = [pytest.mark.xfail(reason=f"{x.reason} [{x.source}]", strict=False)]
            st.groups.setdefault((test, c.op_id, c.dtype), [x.reason, 0, 0])
        params.append(pytest.param(c, id=c.id, marks=marks))
    metafunc.parametrize("ember_case", params)


@pytest.fixture(scope="session")
def ember_target(request):
    """The device under test (``ember.testing.conformance._runner.Target``)."""
    return _state(request.config).target


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Hook wrapper: count, per (test, op, dtype) group with an expected failure, the samples that failed as
    expected and those that passed.
    """
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not hasattr(item, "callspec"):
        return
    case = item.callspec.params.get("ember_case")
    key = None
    if case is not None:
        from ._xfails import normalize_test
        key = (normalize_test(item.originalname), case.op_id, case.dtype)
    elif "ember_device_check" in item.callspec.params:
        name, dtype = item.callspec.params["ember_device_check"]
        key = (f"device_{name}", "*", dtype)
    st = getattr(item.config, _STATE_KEY, None)
    if key is None or st is None:
        return
    if key[0].startswith("device_") and hasattr(rep, "wasxfail"):
        st.groups.setdefault(key, [rep.wasxfail, 0, 0])
    g = st.groups.get(key)
    if g is None or not hasattr(rep, "wasxfail"):
        return
    if rep.skipped:
        g[1] += 1         # failed, as expected
    elif rep.passed:
        g[2] += 1


def _unexpected(config):
    st = getattr(config, _STATE_KEY, None)
    if st is None:
        return []
    return [(k, g[0]) for k, g in sorted(st.groups.items()) if g[1] == 0 and g[2] > 0]


def pytest_sessionfinish(session, exitstatus):
    """Set the exit status to 1 when a session that otherwise passed has unexpected passes."""
    if _unexpected(session.config) and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Print the target (device, layout, op count, dtypes) and list the unexpected passes, if any."""
    st = getattr(config, _STATE_KEY, None)
    if st is None:
        return
    tr = terminalreporter
    tr.write_sep("-", f"ember conformance: device {st.target.device}, layout {st.target.layout}, "
                      f"{len(st.opinfos)} ops, dtypes {', '.join(st.target.dtypes)}"
                      + (", FAST run (--ember-fast: first sample of each op x dtype only)" if st.target.fast else ""))
    bad = _unexpected(config)
    if bad:
        tr.write_line("unexpected passes (every sample of an expected failure passed; remove the xfail):")
        for (test, op, dtype), reason in bad:
            tr.write_line(f"  {test} {op} {dtype}: {reason}")


def run_pytest_case(case, target):
    """What the suite's test functions call: run ``case``, a failure printed as its message only."""
    from ._runner import ConformanceFailure, NotApplicable, run_case
    failure = None
    try:
        run_case(case, target)
    except NotApplicable as e:
        pytest.skip(str(e))
    except ConformanceFailure as e:
        failure = str(e)
    if failure is not None:          # outside the except: pytest prints the message alone
        pytest.fail(failure, pytrace=False)
