"""DistributedDataParallel on 2 and 3 ranks, and the main job (digits) trained with
``mpiexec -n 2`` and ``-n 4 python -m ember.examples.digits --distributed``: the accuracy bar of
the single-process run (MLP >= 97 %) and bit-identical parameters on every rank after every step."""
import re

import pytest

from _dist_launch import mpirun, worker


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_under_mpiexec(n):
    rc, out, err = mpirun(n, [worker("_dist_ddp_worker.py")], timeout=180)
    assert rc == 0, f"stdout:\n{out}\nstderr:\n{err}"
    ranks = sorted(int(m) for m in re.findall(r"RANK (\d+)/%d PASSED \d+ checks" % n, out))
    assert ranks == list(range(n)), out


@pytest.mark.parametrize("n", [2, 4])
def test_digits_distributed_reaches_the_bar_with_identical_parameters(n):
    pytest.importorskip("sklearn", reason="the digits example needs scikit-learn")
    rc, out, err = mpirun(n, ["-m", "ember.examples.digits", "--distributed", "--verify-sync", "--no-progress"],
                          timeout=300)
    assert rc == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert f"{n} ranks (DistributedDataParallel)" in out
    acc = float(re.search(r"test accuracy: ([\d.]+) %", out).group(1))
    assert acc >= 97.0, out
    steps = re.findall(r"rank (\d+): parameters bit-identical to rank 0's after every one of (\d+) steps", out)
    assert sorted(int(r) for r, _ in steps) == list(range(n)), out
    assert all(int(s) == int(steps[0][1]) > 100 for _, s in steps), out
