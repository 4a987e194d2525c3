#!/usr/bin/env python3
"""Set up and run ember from a checkout, with only Python and pip on the machine.

    python3 dev.py demo    create .venv, install the core and every plugin this machine
                           can run, and run the main job: train a classifier on scikit-learn's
                           handwritten digits (arguments after 'demo' go to it, e.g. --model cnn)
    python3 dev.py test    the same install plus ember-cuda, MPI, the test tools and the reference
                           vendor plugin (examples/vendor_plugin), then the whole test suite and the
                           conformance suite against each device plugin, the sparse layout and the
                           quantized dtypes (`ember conformance cpu`, `... vdev`, `... cpu --layout
                           sparse_coo`, `... cpu --dtype qint8`, ...)

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
# given whether this is the test install). OpenCL runs anywhere: its [pocl] extra brings PoCL, a CPU
# OpenCL platform, from PyPI. ember-cuda (with cupy-cuda12x) is installed for the main job where there
# is an NVIDIA GPU, and always for the tests, which check that without a GPU it imports,
# ember.cuda.is_available() is False, `ember info` says why, and its GPU tests skip with that reason.
# sparse and quantized are a layout and dtypes that run on every device.
PLUGINS = {
    "cpu": ("", lambda test: True),
    "opencl": ("[pocl]", lambda test: True),
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
# (device, extra arguments, extra environment) for each `ember conformance` run of the test command:
# every device plugin, the sparse layout and the quantized dtypes on cpu and opencl, and ember-cuda's
# kernels on its host emulation (cuda_emu: the same kernel code over numpy; the real cuda device
# needs a GPU)
CONFORMANCE_RUNS = [
    ("cpu", [], {}),
    ("vdev", [], {}),
    ("opencl", [], {}),
    ("cpu", ["--layout", "sparse_coo"], {}),
    ("opencl", ["--layout", "sparse_coo"], {}),
    ("cpu", ["--dtype", "qint8"], {}),
    ("opencl", ["--dtype", "qint8"], {}),
    ("cuda_emu", [], {"EMBER_CUDA_EMULATE": "1"}),
]


def install(test=False):
    ensure_venv()
    # the tests also need MPI (ember.distributed's mpi backend: mpi4py + mpich from PyPI)
    core = f"{ROOT}[examples,plot,distributed]" if test else f"{ROOT}[examples,plot]"
    pkgs = [core] + [f"{ROOT / 'plugins' / name}{extras}" for name, (extras, ok) in PLUGINS.items() if ok(test)]
    extra = ["pytest>=7", "hypothesis>=6", str(VENDOR_PLUGIN)] if test else []
    if run(PY, "-m", "pip", "install", "-q", *pkgs, *extra) != 0:
        sys.exit("pip install failed")


def demo(args):
    install()
    return run(PY, "-m", "ember.examples.digits", *args)


def test(args):
    install(test=True)
    if os.environ.get("EMBER_TEST_WITH_TORCH") == "1":
        # the side-by-side comparisons with PyTorch (a few hundred tests skip without it). CI sets this:
        # its machines hold the torch 2.13.0 CPU wheel locally; elsewhere pip may fetch a large build
        if run(PY, "-m", "pip", "install", "-q", "torch==2.13.0") != 0:
            print("torch 2.13.0 could not be installed: the comparisons with PyTorch will skip", file=sys.stderr)
    rc = run(PY, "-m", "pytest", ROOT / "tests", "-q", *args, cwd=ROOT)
    if rc == 5:
        print("pytest collected no tests: treating this as a failure", file=sys.stderr)
        return 1
    if args:                      # a selection of tests was asked for: no conformance runs
        return rc
    ember = BIN / ("ember.exe" if os.name == "nt" else "ember")
    for device, extra, env in CONFORMANCE_RUNS:
        rc = run(ember, "conformance", device, *extra, "-q", env={**os.environ, **env}) or rc
    return rc


def main(argv):
    if not argv or argv[0] not in ("demo", "test"):
        print(__doc__)
        return 2
    return demo(argv[1:]) if argv[0] == "demo" else test(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
