"""A rank that dies or is late, and mismatched collectives: the other ranks fail with a clear
error naming the collective and the rank, in bounded time (short timeouts), never hang."""
import time

import pytest

from _dist_launch import mpirun, require_hydra, worker


def test_dead_rank_is_named():
    require_hydra("-disable-auto-cleanup (keep the survivors of a dead rank running)")
    t0 = time.monotonic()
    # -disable-auto-cleanup: without it mpiexec kills the whole job as soon as a rank dies
    rc, out, err = mpirun(2, [worker("_dist_failure_worker.py"), "dead"], mpiexec_args=["-disable-auto-cleanup"],
                          env={"DIST_TIMEOUT": "2"}, timeout=60)
    assert time.monotonic() - t0 < 40
    assert rc != 0                                  # rank 1 died (exit 3), rank 0 leaves with status 1
    assert "CAUGHT DistBackendError: [Rank 0] Watchdog caught collective operation timeout" in out, out + err
    assert "OpType=ALLREDUCE" in out and "rank 1 (pid" in out and "exited before joining" in out, out
    assert "the process group is broken by an earlier failure" in out, out


def test_late_rank_times_out_with_the_collective_named():
    require_hydra("-disable-auto-cleanup (keep the survivors of a dead rank running)")
    rc, out, err = mpirun(2, [worker("_dist_failure_worker.py"), "late"], mpiexec_args=["-disable-auto-cleanup"],
                          env={"DIST_TIMEOUT": "2"}, timeout=60)
    assert "CAUGHT DistBackendError: [Rank 0] Watchdog caught collective operation timeout" in out, out + err
    assert "OpType=ALLREDUCE" in out and "Timeout(ms)=2000" in out
    assert "Rank(s) 1 on this host are alive" in out


@pytest.mark.parametrize("debug", ["", "DETAIL"])   # the always-on quick check, and DETAIL's full gather
@pytest.mark.parametrize("scenario,expect", [
    ("mismatch", "TensorShape=[4]"),
    ("mismatch_op", "OpType=BROADCAST"),
])
def test_mismatch_detected(scenario, expect, debug):
    rc, out, err = mpirun(2, [worker("_dist_failure_worker.py"), scenario],
                          env={"TORCH_DISTRIBUTED_DEBUG": debug, "DIST_TIMEOUT": "20"}, timeout=60)
    assert rc == 0, out + err
    assert out.count("CAUGHT RuntimeError: Detected mismatch between collectives on ranks") == 2, out
    assert expect in out
    assert out.count("AFTER [2.0, 2.0, 2.0]") == 2, out       # the group keeps working
