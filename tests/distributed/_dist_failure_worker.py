"""Failure scenarios, run under mpiexec by test_dist_failures.py; argv[1] picks one.

- ``dead``: rank 1 exits before an all_reduce; rank 0 must fail with a DistBackendError that
  names the collective and rank 1 (launched with ``mpiexec -disable-auto-cleanup``, otherwise
  mpiexec itself kills the job when a rank dies).
- ``dead_before_init``: rank 1 exits before init_process_group; the others must raise
  DistBackendError within the timeout (MPI_Init alone waits forever).
- ``killed``: rank 1 dies in the middle of a stream of all_reduces (DEATH=raise: an uncaught
  exception; DEATH=signal: SIGKILL); every survivor must raise DistBackendError naming the
  collective and rank 1, long before the timeout (with DEATH=signal, mpich's launcher usually
  kills the survivors first: see docs/reliability.md).
- ``mismatch_redop`` / ``mismatch_root``: ranks pass different reduce ops / broadcast roots.
- ``extra``: rank 0 runs one all_reduce the others do not; the others' next barrier must raise.
- ``late``: rank 1 joins the all_reduce after rank 0's timeout; rank 0 must name the collective.
- ``mismatch`` / ``mismatch_op``: ranks pass tensors of different shapes / call different
  collectives (by default: the always-on quick check; with TORCH_DISTRIBUTED_DEBUG=DETAIL: the full
  gather); every rank must report the mismatch and the group must keep working afterwards.

Each rank prints ``CAUGHT <ExceptionClass>: <message>`` for the error it got, and appends it to
``$REPORT_DIR/rank<N>.txt`` when REPORT_DIR is set (mpiexec's output forwarding loses lines of
ranks it kills).
"""
import datetime
import os
import signal
import sys
import time

import ember
import ember.distributed as dist

scenario = sys.argv[1]
TIMEOUT = datetime.timedelta(seconds=float(os.environ.get("DIST_TIMEOUT", "3")))


def caught(e):
    line = f"CAUGHT {type(e).__name__}: {e}"
    print(line, flush=True)
    if os.environ.get("REPORT_DIR"):      # mpiexec's output forwarding loses lines when it ends a job
        with open(os.path.join(os.environ["REPORT_DIR"], f"rank{os.environ.get('PMI_RANK', '')}.txt"), "a") as f:
            f.write(line + "\n")


if scenario == "dead_before_init":
    if os.environ.get("PMI_RANK") == "1":
        sys.exit(0)
    t0 = time.monotonic()
    try:
        dist.init_process_group("mpi", timeout=TIMEOUT)
        print("NO ERROR", flush=True)
    except RuntimeError as e:
        caught(e)
        print(f"AFTER {time.monotonic() - t0:.1f} s", flush=True)
    time.sleep(float(os.environ.get("SURVIVOR_SLEEP", "1.0")))    # as in "killed" below
    sys.exit(0)

dist.init_process_group("mpi", timeout=TIMEOUT)
R = dist.get_rank()
t = ember.ones(8)
dist.all_reduce(t)                                   # everyone is there
assert t[0].item() == dist.get_world_size()


if scenario == "dead":
    if R == 1:
        os._exit(3)
    try:
        dist.all_reduce(ember.ones(8))
        print("NO ERROR", flush=True)
    except RuntimeError as e:
        caught(e)
        try:                                        # the group is broken now: later calls fail at once
            dist.broadcast(ember.ones(2), src=0)
        except RuntimeError as e2:
            caught(e2)
    sys.exit(0)

elif scenario == "late":
    if R == 1:
        time.sleep(float(os.environ.get("DIST_TIMEOUT", "3")) * 2)
    try:
        w = dist.all_reduce(ember.ones(8), async_op=True)
        w.wait()
        print("NO ERROR", flush=True)
    except RuntimeError as e:
        caught(e)
    sys.exit(0)

elif scenario == "killed":
    death = os.environ.get("DEATH", "raise")      # how rank 1 dies in the middle of the stream
    t0 = time.monotonic()
    try:
        for i in range(100_000):
            if R == 1 and i == 200:
                if death == "signal":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise MemoryError("rank 1 ran out of memory")   # uncaught: the process exits with status 1
            dist.all_reduce(ember.ones(100_000))
        print("NO ERROR", flush=True)
    except RuntimeError as e:
        caught(e)
        print(f"AFTER {time.monotonic() - t0:.1f} s", flush=True)
    # mpiexec ends the job once another rank exits after a failure: give each survivor time to report
    time.sleep(float(os.environ.get("SURVIVOR_SLEEP", "1.0")))
    sys.exit(0)

elif scenario == "extra":
    if R == 0:
        try:
            dist.all_reduce(ember.ones(4))           # one collective more than the others
        except RuntimeError as e:
            caught(e)
    try:
        dist.barrier()
        print("BARRIER PASSED", flush=True)
    except RuntimeError as e:
        caught(e)
        dist.barrier()                               # in step with rank 0's barrier again
    y = ember.ones(3)
    dist.all_reduce(y)
    print(f"AFTER {y.tolist()}", flush=True)
    dist.destroy_process_group()

elif scenario.startswith("mismatch"):
    calls = {
        "mismatch": lambda: dist.all_reduce(ember.ones(4 + R)),
        "mismatch_op": lambda: dist.all_reduce(ember.ones(4)) if R == 0 else dist.broadcast(ember.ones(4), src=0),
        "mismatch_redop": lambda: dist.all_reduce(ember.ones(4), op=dist.ReduceOp.SUM if R == 0 else dist.ReduceOp.MAX),
        "mismatch_root": lambda: dist.broadcast(ember.ones(4), src=R),      # every rank names itself the root
    }
    try:
        calls[scenario]()
        print("NO ERROR", flush=True)
    except RuntimeError as e:
        caught(e)
    x = ember.ones(3)
    dist.all_reduce(x)                              # the check consumed no data: the group still works
    print(f"AFTER {x.tolist()}", flush=True)
    dist.destroy_process_group()
