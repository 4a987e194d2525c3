"""The conformance suite: the op database and the device-level checks, run on any device.

Two ways to run it (they run the same checks, ``_runner`` and ``_device_checks``)::

    ember conformance DEVICE [--dtype float32,int64] [--op add,sum*] [--layout sparse_coo]
                             [--report report.md|report.json] [--xfails FILE] [--write-coverage [DIR]] [--fast]
    pytest --pyargs ember.testing.conformance --ember-device DEVICE [--ember-dtype ...] [--ember-op ...]
                             [--ember-layout ...] [--ember-xfails FILE] [--ember-fast]

``ember conformance`` prints an op x dtype matrix (N native, C composite, F fallback,
xf expected failure, FAIL failing, XP unexpected pass) with totals, the device checks and each
failure (op, device, dtype, the sample's inputs as ``Tensor[size=(3, 4), device="vdev:0",
dtype=float32]`` and the first mismatching elements), and exits 1 on any unexpected failure or
unexpected pass (2 for a usage error). ``--write-coverage`` writes ``docs/coverage/<device>.md``.

The pytest form is a plugin registered through the ``pytest11`` entry point
(``ember.testing.conformance.plugin``); it parametrises ``test_ops.py`` by op x dtype x sample
and ``test_device.py`` by device check.

Tests: ``samples`` (the op's samples build; an error is reported once, with its frame), ``op``
(values against the numpy reference / the cpu result), ``out``, ``inplace``,
``view``, ``errors``, ``grad`` and the device checks ``device_roundtrip`` (once per registered
dtype, plugin dtypes such as qint8 included: ``_roundtrip``), ``device_copies``,
``device_views``, ``device_memory_stats``, ``device_oom``, ``device_rng``,
``device_synchronize``, ``device_streams``, ``device_pin_memory``, ``device_save_load``,
``device_autograd``, ``device_modules`` (a tiny MLP and CNN trained on the device and on cpu:
``_smoke``). ``--fast`` checks the first sample of each op x dtype only, and says so.
Expected failures are data: ``OpInfo.xfails`` and a plugin's xfails file
(manifest key ``conformance_xfails``; the format is documented in ``_xfails``).
"""
from ._main import run_conformance  # noqa: F401
from ._xfails import parse_xfails, load_xfails_file  # noqa: F401

__all__ = ["run_conformance", "parse_xfails", "load_xfails_file"]
