#!/usr/bin/env python3
"""Set up and run ember from a checkout, with only Python and pip on the machine.

    python3 dev.py demo    create .venv, install the core and every plugin this machine
                           can run, and run the main job: train a classifier on scikit-learn's
                           handwritten digits (arguments after 'demo' go to it, e.g. --model cnn)
    python3 dev.py test    the same install plus ember-cuda, MPI, the test tools and the reference
                           vendor plugin (examples/vendor_plugin), then the whole test suite and the
                           conformance suite against each device plugin (opencl on each CPU OpenCL
                           runtime), the sparse layout and the quantized dtypes (`ember conformance cpu`,
                           `... vdev`, `... cpu --layout sparse_coo`, `... cpu --dtype qint8`, ...); ends
                           with a table of every step's passed / failed / skipped counts, and fails if
                           any step failed. A run whose device is unusable here is skipped, with the reason

    python3 dev.py coverage
                           regenerate docs/coverage/ (the committed conformance tables) from the same
                           runs, in the environment `dev.py test` made; a run whose device is unusable
                           here keeps its old table and is named

EMBER_TEST_WITH_TORCH=1 python3 dev.py test also installs torch==2.13.0 (CPU), so the tests that compare
with PyTorch side by side run rather than skip (CI does this).

Standard library only, so it runs before anything is installed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("EMBER_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def _has_nvidia_gpu() -> bool:
    return Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") is not None


# plugins in the order they are installed: name -> (pip extras, the check that this machine can run it,
# given whether this is the test install). OpenCL runs anywhere: its [cpu] extra brings two CPU OpenCL
# platforms from PyPI, PoCL and Intel's CPU runtime, and ember-opencl probes them and uses one that can
# build kernels on this CPU (none working: its tests and conformance runs skip with the reason).
# ember-cuda (with cupy-cuda12x) is installed for the main job where there is an NVIDIA GPU, and always
# for the tests, which check that without a GPU it imports, ember.cuda.is_available() is False,
# `ember info` says why, and its GPU tests skip with that reason.
# sparse and quantized are a layout and dtypes that run on every device.
PLUGINS = {
    "cpu": ("", lambda test: True),
    "opencl": ("[cpu]", lambda test: True),
    "cuda": ("[cuda12]", lambda test: (test or _has_nvidia_gpu()) and sys.platform != "darwin"),
    "sparse": ("", lambda test: True),
    "quantized": ("", lambda test: True),
}


def run(*cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], **kw).returncode


def ensure_venv():
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
        run(PY, "-m", "pip", "install", "-q", "--upgrade", "pip")


# the reference out-of-tree device plugin, installed from its own directory as a vendor's would be;
# the test command runs the conformance suite against it and against every plugin above
VENDOR_PLUGIN = ROOT / "examples" / "vendor_plugin"
# (label, device, extra arguments, extra environment) for each `ember conformance` run of the test command:
# every device plugin (opencl on each CPU OpenCL runtime), the sparse layout and the quantized dtypes on
# cpu and opencl, and ember-cuda's kernels on its host emulation (cuda_emu: the same kernel code over numpy;
# the real cuda device needs a GPU). A run whose device is not usable here (e.g. a runtime that cannot build
# kernels on this CPU) is reported as skipped, with the reason.
CONFORMANCE_RUNS = [
    ("cpu", "cpu", [], {}),
    ("vdev", "vdev", [], {}),
    ("opencl (intel)", "opencl", [], {"EMBER_OPENCL_PLATFORM": "intel"}),
    ("opencl (pocl)", "opencl", [], {"EMBER_OPENCL_PLATFORM": "pocl"}),
    ("cpu sparse_coo", "cpu", ["--layout", "sparse_coo"], {}),
    ("opencl (intel) sparse_coo", "opencl", ["--layout", "sparse_coo"], {"EMBER_OPENCL_PLATFORM": "intel"}),
    ("opencl (pocl) sparse_coo", "opencl", ["--layout", "sparse_coo"], {"EMBER_OPENCL_PLATFORM": "pocl"}),
    ("cpu qint8", "cpu", ["--dtype", "qint8"], {}),
    ("opencl (intel) qint8", "opencl", ["--dtype", "qint8"], {"EMBER_OPENCL_PLATFORM": "intel"}),
    ("opencl (pocl) qint8", "opencl", ["--dtype", "qint8"], {"EMBER_OPENCL_PLATFORM": "pocl"}),
    ("cuda_emu", "cuda_emu", [], {"EMBER_CUDA_EMULATE": "1"}),
]


def install(test=False):
    ensure_venv()
    # the tests also need MPI (ember.distributed's mpi backend: mpi4py + mpich from PyPI) and onnx / onnxruntime
    # (ember.onnx.export's tests run the exported models)
    core = f"{ROOT}[examples,plot,distributed,onnx]" if test else f"{ROOT}[examples,plot]"
    pkgs = [core] + [f"{ROOT / 'plugins' / name}{extras}" for name, (extras, ok) in PLUGINS.items() if ok(test)]
    extra = ["pytest>=7", "hypothesis>=6", str(VENDOR_PLUGIN)] if test else []
    if run(PY, "-m", "pip", "install", "-q", *pkgs, *extra) != 0:
        sys.exit("pip install failed")


def demo(args):
    install()
    return run(PY, "-m", "ember.examples.digits", *args)


def _pytest_counts(junit: Path) -> dict:
    """passed / failed / skipped from pytest's JUnit XML (errors count as failed)."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return {}
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    n = {k: sum(int(x.get(k, 0)) for x in suites) for k in ("tests", "failures", "errors", "skipped")}
    return {"passed": n["tests"] - n["failures"] - n["errors"] - n["skipped"],
            "failed": n["failures"] + n["errors"], "skipped": n["skipped"]}


def _conformance_counts(report: Path) -> dict:
    """passed / failed / skipped checks from an `ember conformance --report x.json` (a skipped run: the reason)."""
    import json
    try:
        r = json.loads(report.read_text())
    except (OSError, ValueError):
        return {}
    if "skipped" in r:
        return {"passed": 0, "failed": 0, "skipped": "all", "why": r["skipped"]}
    checks = r["totals"]["checks"]
    return {"passed": checks.get("passed", 0) + checks.get("xfailed", 0),
            "failed": r["totals"]["unexpected_failures"] + r["totals"]["unexpected_passes"], "skipped": 0}


def _summary(steps) -> None:
    """The closing table: each step with its counts and result, then the totals on one line."""
    print("\n" + "=" * 30 + " dev.py test: summary " + "=" * 30)
    w = max(len(s[0]) for s in steps)
    print(f"{'step'.ljust(w)}  {'passed':>7} {'failed':>7} {'skipped':>7}  result")
    tot = {"passed": 0, "failed": 0, "skipped": 0}
    for name, rc, c in steps:
        result = "FAILED" if rc else ("skipped" if c.get("skipped") == "all" else "ok")
        if rc and not c:
            result += f" (exit status {rc}, no counts)"
        print(f"{name.ljust(w)}  {c.get('passed', '?'):>7} {c.get('failed', '?'):>7} {c.get('skipped', '?'):>7}  {result}")
        if c.get("why"):
            print(f"{''.ljust(w)}  why: {c['why'][:300]}")
        for k in tot:
            tot[k] += c.get(k, 0) if isinstance(c.get(k), int) else (1 if c.get(k) == "all" else 0)
        if rc and not c.get("failed"):      # a step that failed without counting a failure (a crash)
            tot["failed"] += 1
    print(f"total: {tot['passed']} passed, {tot['failed']} failed, {tot['skipped']} skipped")


def test(args):
    install(test=True)
    if os.environ.get("EMBER_TEST_WITH_TORCH") == "1":
        # the side-by-side comparisons with PyTorch (a few hundred tests skip without it). CI sets this:
        # its machines hold the torch 2.13.0 CPU wheel locally; elsewhere pip may fetch a large build
        if run(PY, "-m", "pip", "install", "-q", "torch==2.13.0") != 0:
            print("torch 2.13.0 could not be installed: the comparisons with PyTorch will skip", file=sys.stderr)
    import tempfile
    out = Path(tempfile.mkdtemp(prefix="ember-dev-test-"))
    junit = out / "pytest.xml"
    rc = run(PY, "-m", "pytest", ROOT / "tests", "-q", f"--junitxml={junit}", *args, cwd=ROOT)
    counts = _pytest_counts(junit)
    if rc == 5 or (rc == 0 and not counts.get("passed")):
        print("pytest ran no test: treating this as a failure", file=sys.stderr)
        rc = 1
    steps = [("pytest", rc, counts)]
    if not args:                  # a selection of tests was asked for: no conformance runs
        ember = BIN / ("ember.exe" if os.name == "nt" else "ember")
        for i, (label, device, extra, env) in enumerate(CONFORMANCE_RUNS):
            report = out / f"conformance-{i}.json"
            crc = run(ember, "conformance", device, *extra, "-q", "--skip-unavailable", "--report", report,
                      env={**os.environ, **env})
            steps.append((f"conformance {label}", crc, _conformance_counts(report)))
    shutil.rmtree(out, ignore_errors=True)
    _summary(steps)
    return 1 if any(step_rc for _, step_rc, _ in steps) else 0


def coverage(args):
    """Regenerate docs/coverage/ from CONFORMANCE_RUNS (opencl runs get their runtime as the file suffix)."""
    if not PY.exists():
        print(f"no environment at {VENV}: run `python3 dev.py test` first", file=sys.stderr)
        return 2
    ember = BIN / ("ember.exe" if os.name == "nt" else "ember")
    steps = []
    for label, device, extra, env in CONFORMANCE_RUNS:
        suffix = ["--coverage-suffix", env["EMBER_OPENCL_PLATFORM"]] if "EMBER_OPENCL_PLATFORM" in env else []
        # no --skip-unavailable: an unusable device must fail loudly here rather than leave a stale table silently
        crc = run(ember, "conformance", device, *extra, *suffix, "-q", "--write-coverage", ROOT / "docs" / "coverage",
                  *args, env={**os.environ, **env})
        steps.append((label, crc))
    print("\n" + "=" * 30 + " dev.py coverage: summary " + "=" * 30)
    for label, crc in steps:
        print(f"{label:<28} {'FAILED (exit status %d)' % crc if crc else 'ok'}")
    return 1 if any(crc for _, crc in steps) else 0


def main(argv):
    commands = {"demo": demo, "test": test, "coverage": coverage}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
