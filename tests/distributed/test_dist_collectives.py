"""Collectives of the "mpi" backend on 2 and 3 ranks (cpu, and vdev / opencl tensors staged through
host memory when those plugins are installed), and a vendor backend registered through the plugin
hook. Each test launches ``mpiexec -n N`` itself (see _dist_launch.py)."""
import re

import pytest

from _dist_launch import mpirun, worker


def _passed(out, n):
    ranks = sorted(int(m) for m in re.findall(r"RANK (\d+)/%d PASSED \d+ checks" % n, out))
    return ranks == list(range(n))


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_under_mpiexec(n):
    rc, out, err = mpirun(n, ["-W", "ignore::UserWarning", worker("_dist_collectives_worker.py")], timeout=180)
    assert rc == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert _passed(out, n), out


def test_vendor_backend_registered_through_the_plugin_hook():
    rc, out, err = mpirun(2, [worker("_dist_plugin_worker.py")], timeout=120)
    assert rc == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert _passed(out, 2), out
