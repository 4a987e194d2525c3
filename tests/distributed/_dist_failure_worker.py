"""Failure scenarios, run under mpiexec by test_dist_failures.py; argv[1] picks one.

- ``dead``: rank 1 exits before an all_reduce; rank 0 must fail with a DistBackendError that
  names the collective and rank 1 (launched with ``mpiexec -disable-auto-cleanup``, otherwise
  mpiexec itself kills the job when a rank dies).
- ``late``: rank 1 joins the all_reduce after rank 0's timeout; rank 0 must name the collective.
- ``mismatch`` / ``mismatch_op``: ranks pass tensors of different shapes / call different
  collectives (by default: the always-on quick check; with TORCH_DISTRIBUTED_DEBUG=DETAIL: the full
  gather); every rank must report the mismatch and the group must keep working afterwards.
Each rank prints ``CAUGHT <ExceptionClass>: <message>`` for the error it got.
"""
import datetime
import os
import sys
import time

import ember
import ember.distributed as dist

scenario = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=float(os.environ.get("DIST_TIMEOUT", "3"))))
R = dist.get_rank()
t = ember.ones(8)
dist.all_reduce(t)                                   # everyone is there
assert t[0].item() == dist.get_world_size()


def caught(e):
    print(f"CAUGHT {type(e).__name__}: {e}", flush=True)


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

elif scenario in ("mismatch", "mismatch_op"):
    try:
        if scenario == "mismatch":
            dist.all_reduce(ember.ones(4 + R))
        elif R == 0:
            dist.all_reduce(ember.ones(4))
        else:
            dist.broadcast(ember.ones(4), src=0)
        print("NO ERROR", flush=True)
    except RuntimeError as e:
        caught(e)
    x = ember.ones(3)
    dist.all_reduce(x)                              # the check consumed no data: the group still works
    print(f"AFTER {x.tolist()}", flush=True)
    dist.destroy_process_group()
