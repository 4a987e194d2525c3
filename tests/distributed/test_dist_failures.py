"""A rank that dies or is late, and mismatched collectives: the other ranks fail with a clear
error naming the collective and the rank, in bounded time (short timeouts), never hang.

What mpich's launcher (hydra) does to the other ranks when one dies is part of the picture:
docs/reliability.md ("Distributed failures") records it; the tests below pin it down."""
import re
import time

import pytest

from _dist_launch import mpirun, require_hydra, worker

NO_CLEANUP = "-disable-auto-cleanup (keep the survivors of a dead rank running)"


def reports(tmp_path, ranks):
    """The CAUGHT lines each of ``ranks`` wrote to its report file (mpiexec's own output
    forwarding loses the lines of ranks it ends)."""
    out = {}
    for r in ranks:
        p = tmp_path / f"rank{r}.txt"
        out[r] = p.read_text() if p.exists() else ""
    return out


def test_dead_rank_is_named():
    require_hydra(NO_CLEANUP)
    t0 = time.monotonic()
    # -disable-auto-cleanup: without it mpiexec kills the whole job as soon as a rank dies
    rc, out, err = mpirun(2, [worker("_dist_failure_worker.py"), "dead"], mpiexec_args=["-disable-auto-cleanup"],
                          env={"DIST_TIMEOUT": "20"}, timeout=60)
    assert time.monotonic() - t0 < 15                # found by the liveness check, not by the 20 s timeout
    assert rc != 0                                  # rank 1 died (exit 3), rank 0 leaves with status 1
    assert "CAUGHT DistBackendError: [Rank 0] WorkMPI(" in out, out + err
    assert "OpType=ALLREDUCE" in out and "rank 1 (pid" in out and "exited while this collective waited" in out, out
    assert "the process group is broken by an earlier failure" in out, out


def test_rank_dying_mid_collective_is_named_by_every_survivor(tmp_path):
    """Rank 1 dies of an uncaught exception in the middle of a stream of all_reduces: each of the
    3 survivors raises DistBackendError naming the collective and rank 1, within ~1 s of a 30 s
    timeout (before: they waited for the timeout, or mpich's SIGUSR1 ended them without a word)."""
    require_hydra(NO_CLEANUP)
    t0 = time.monotonic()
    rc, out, err = mpirun(4, [worker("_dist_failure_worker.py"), "killed"], mpiexec_args=["-disable-auto-cleanup"],
                          env={"DIST_TIMEOUT": "30", "DEATH": "raise", "REPORT_DIR": str(tmp_path)}, timeout=90)
    assert time.monotonic() - t0 < 25, out + err
    assert "MemoryError: rank 1 ran out of memory" in err
    for r, text in reports(tmp_path, (0, 2, 3)).items():
        assert text.startswith(f"CAUGHT DistBackendError: [Rank {r}] WorkMPI("), (r, text, out, err)
        assert "OpType=ALLREDUCE" in text and "rank 1 (pid" in text, text
        assert "exited while this collective waited for it" in text, text


def test_rank_killed_by_a_signal_ends_the_job():
    """SIGKILL of a rank while the others are in a collective with it: mpich's hydra ends the job
    (its proxy kills the other ranks within milliseconds, even with -disable-auto-cleanup, in most
    runs); survivors it spares raise DistBackendError as above. Either way no rank hangs."""
    require_hydra(NO_CLEANUP)
    t0 = time.monotonic()
    rc, out, err = mpirun(4, [worker("_dist_failure_worker.py"), "killed"], mpiexec_args=["-disable-auto-cleanup"],
                          env={"DIST_TIMEOUT": "60", "DEATH": "signal"}, timeout=120)
    assert time.monotonic() - t0 < 40, out + err       # well before the 60 s timeout: nobody waited for it
    assert rc != 0
    assert "Killed (signal 9)" in out + err
    for line in out.splitlines():
        if line.startswith("CAUGHT"):
            assert "DistBackendError" in line and "rank 1 (pid" in line, line


def test_rank_dead_before_init_process_group(tmp_path):
    """Rank 1 exits before init_process_group: ranks 0 and 2 raise DistBackendError after the 3 s
    timeout, naming rank 1 (before: they waited in MPI_Init forever, mpiexec does not end them)."""
    require_hydra(NO_CLEANUP)
    t0 = time.monotonic()
    # (without -disable-auto-cleanup the first survivor to leave makes mpiexec kill the other)
    rc, out, err = mpirun(3, [worker("_dist_failure_worker.py"), "dead_before_init"],
                          mpiexec_args=["-disable-auto-cleanup"],
                          env={"DIST_TIMEOUT": "3", "REPORT_DIR": str(tmp_path)}, timeout=60)
    assert time.monotonic() - t0 < 30, out + err
    for r, text in reports(tmp_path, (0, 2)).items():
        assert text.startswith("CAUGHT DistBackendError: init_process_group(backend='mpi'): MPI_Init did not "
                               "complete within the timeout (3 s)"), (r, text, out, err)
        # rank 1, and possibly the other survivor when it timed out and left a moment earlier
        m = re.search(r"Rank\(s\) ([0-9, ]+) of this host are no longer running", text)
        assert m and "1" in m.group(1).split(", "), text


def test_late_rank_times_out_with_the_collective_named():
    require_hydra(NO_CLEANUP)
    rc, out, err = mpirun(2, [worker("_dist_failure_worker.py"), "late"], mpiexec_args=["-disable-auto-cleanup"],
                          env={"DIST_TIMEOUT": "2"}, timeout=60)
    assert "CAUGHT DistBackendError: [Rank 0] Watchdog caught collective operation timeout" in out, out + err
    assert "OpType=ALLREDUCE" in out and "Timeout(ms)=2000" in out
    assert "Rank(s) 1 on this host are alive" in out


@pytest.mark.parametrize("debug", ["", "DETAIL"])   # the always-on quick check, and DETAIL's full gather
@pytest.mark.parametrize("scenario,expect", [
    ("mismatch", "TensorShape=[4]"),
    ("mismatch_op", "OpType=BROADCAST"),
    ("mismatch_redop", "ReduceOp=MAX"),             # before: the ranks silently computed different results
    ("mismatch_root", "Root=1"),                    # before: each rank kept its own tensor
])
def test_mismatch_detected(scenario, expect, debug):
    rc, out, err = mpirun(2, [worker("_dist_failure_worker.py"), scenario],
                          env={"TORCH_DISTRIBUTED_DEBUG": debug, "DIST_TIMEOUT": "20"}, timeout=60)
    assert rc == 0, out + err
    assert out.count("CAUGHT RuntimeError: Detected mismatch between collectives on ranks") == 2, out
    assert expect in out
    assert out.count("AFTER [2.0, 2.0, 2.0]") == 2, out       # the group keeps working


@pytest.mark.parametrize("debug", ["", "DETAIL"])
def test_extra_collective_makes_the_next_barrier_raise(debug):
    """Rank 0 runs one all_reduce the others do not: rank 1's barrier raises the mismatch instead
    of passing (before: the barrier matched rank 0's all_reduce and passed)."""
    rc, out, err = mpirun(2, [worker("_dist_failure_worker.py"), "extra"],
                          env={"TORCH_DISTRIBUTED_DEBUG": debug, "DIST_TIMEOUT": "20"}, timeout=60)
    assert rc == 0, out + err
    assert ("CAUGHT RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=2, OpType=BARRIER") in out, out
    assert "but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=2, OpType=ALLREDUCE" in out, out
    assert out.count("AFTER [2.0, 2.0, 2.0]") == 2, out
