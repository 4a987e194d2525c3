"""Run a script under ``mpiexec -n N`` from a normal pytest test (loopback only, bounded in time).

The distributed tests need nothing beyond ``pytest tests``: each test launches its MPI job
as a subprocess with a timeout and asserts the job's exit code and output. They skip, with
the reason, only when mpi4py or mpiexec is missing (``pip install mpi4py mpich``).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def mpiexec_path():
    # the mpiexec of the MPI that mpi4py was built against sits beside the interpreter (pip install mpich)
    return shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")


_hydra = None


def is_hydra() -> bool:
    """Whether mpiexec is mpich's hydra (pip install mpich), whose options the tests use."""
    global _hydra
    if _hydra is None:
        try:
            out = subprocess.run([mpiexec_path(), "--version"], capture_output=True, text=True, timeout=30)
            _hydra = "HYDRA" in out.stdout + out.stderr
        except (OSError, subprocess.SubprocessError):
            _hydra = False
    return _hydra


def require_hydra(why):
    require_mpi()
    if not is_hydra():
        pytest.skip(f"{why} needs mpich's mpiexec (hydra); this mpiexec is another MPI's")


def require_mpi():
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install mpi4py mpich)")
    if mpiexec_path() is None:
        pytest.skip("no mpiexec on PATH or beside the interpreter (pip install mpich)")


def mpirun(n, args, *, timeout=120, mpiexec_args=(), env=None):
    """Run ``python ARGS`` on ``n`` ranks; returns ``(returncode, stdout, stderr)``.

    ``pytest.fail`` with the output when the job outlives ``timeout`` seconds (the whole process
    group is killed first, so no rank is left behind)."""
    require_mpi()
    local = ["-launcher", "fork"] if is_hydra() else []        # loopback only: no ssh
    cmd = [mpiexec_path(), *local, "-n", str(n), *mpiexec_args, sys.executable, *args]
    full_env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                    PYTHONUNBUFFERED="1")
    full_env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    full_env.pop("EMBER_DISTRIBUTED_DEBUG", None)
    full_env.update(env or {})
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env, cwd=HERE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"mpiexec -n {n} {' '.join(args)} did not finish in {timeout} s\n--- stdout\n{out}\n"
                    f"--- stderr\n{err}")
    return p.returncode, out, err


def worker(name):
    return os.path.join(HERE, name)
