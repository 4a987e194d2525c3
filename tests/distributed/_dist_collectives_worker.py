"""Collective tests, run on every rank of ``mpiexec -n N`` (N >= 2) by test_dist_collectives.py.

Each check compares with a numpy reference computed from values every rank can derive
(``value(rank)``). On success every rank prints ``RANK r/N PASSED k checks``; a failing check
prints its traceback and exits 1 (the other ranks then fail their next collective with the
group's short timeout, so the job ends in bounded time).

argv[1]: the backend string (default "mpi"); "nccl" runs the cuda variant.
"""
import datetime
import sys
import traceback

import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "mpi"
dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=20))
R, N = dist.get_rank(), dist.get_world_size()
DEVICES = ["cuda"] if BACKEND == "nccl" else ["cpu"] + [d for d in ("vdev", "opencl")
                                                         if getattr(ember, d).is_available()]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def value(rank, shape=(3, 4), dtype=np.float32):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    a = (a % 7) + rank * 3 + 1
    return a.astype(dtype)


def T(a, device):
    return ember.tensor(a, device=device)


def host(t):
    return t.cpu().numpy()


def test_all_reduce(device):
    for dt in (np.float32, np.float64, np.int64, np.int32):
        allv = np.stack([value(r, dtype=dt) for r in range(N)])
        refs = {ReduceOp.SUM: allv.sum(0), ReduceOp.MAX: allv.max(0), ReduceOp.MIN: allv.min(0),
                ReduceOp.PRODUCT: allv.prod(0)}
        if np.dtype(dt).kind == "f":
            refs[ReduceOp.AVG] = allv.sum(0) / N
        for op, ref in refs.items():
            t = T(value(R, dtype=dt), device)
            assert dist.all_reduce(t, op=op) is None
            check(np.allclose(host(t), ref, rtol=1e-6), f"all_reduce {op} {dt} {device}")
    for dt in ("float16", "bfloat16"):
        try:
            t = T(value(R), device).to(getattr(ember, dt))
        except (RuntimeError, NotImplementedError):
            continue                                    # the device has no such dtype (opencl: bfloat16)
        dist.all_reduce(t)
        check(np.allclose(host(t.float()), sum(value(r) for r in range(N)), rtol=1e-2), f"all_reduce {dt}")
    b = T(np.array([R == 0, R == 1, False, True]), device)
    dist.all_reduce(b, op=ReduceOp.SUM)                  # bool: logical or
    check(host(b).tolist() == [True, True, False, True], "all_reduce bool")
    i = T(np.array([R + 1, 6], dtype=np.int64), device)
    dist.all_reduce(i, op=ReduceOp.BOR)
    check(host(i)[0] == np.bitwise_or.reduce(np.arange(1, N + 1)), "all_reduce BOR")


def test_async(device):
    ts = [T(value(R, (1000,)), device) for _ in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    check(all(isinstance(w, dist.Work) for w in works), "async_op returns Work")
    for w in works:
        check(w.wait() is True, "wait returns True")
        check(w.is_completed() and w.is_success(), "completed after wait")
    for t in ts:
        check(np.allclose(host(t), sum(value(r, (1000,)) for r in range(N))), "async all_reduce value")
    # is_completed polls: a barrier started by everyone completes without wait()
    w = dist.barrier(async_op=True)
    while not w.is_completed():
        pass
    check(w.exception() is None, "barrier completes by polling")


def test_broadcast_reduce(device):
    for src in range(N):
        t = T(value(R), device)
        dist.broadcast(t, src=src)
        check(np.array_equal(host(t), value(src)), f"broadcast from {src}")
    t = T(value(R), device)
    dist.reduce(t, dst=N - 1, op=ReduceOp.SUM)
    ref = sum(value(r) for r in range(N)) if R == N - 1 else value(R)
    check(np.allclose(host(t), ref), "reduce: dst has the sum, others unchanged")
    t = T(value(R), device)
    dist.reduce(t, dst=0, op=ReduceOp.AVG)
    if R == 0:
        check(np.allclose(host(t), sum(value(r) for r in range(N)) / N), "reduce AVG")


def test_gathers(device):
    out = ember.zeros((N * 3, 4), device=device)
    dist.all_gather_into_tensor(out, T(value(R), device))
    check(np.array_equal(host(out), np.concatenate([value(r) for r in range(N)])), "all_gather_into_tensor")
    out = ember.zeros((N, 3, 4), device=device)            # stacked form
    dist.all_gather_into_tensor(out, T(value(R), device))
    check(np.array_equal(host(out), np.stack([value(r) for r in range(N)])), "all_gather_into_tensor stacked")
    lst = [ember.zeros((3, 4), device=device) for _ in range(N)]
    dist.all_gather(lst, T(value(R), device))
    check(all(np.array_equal(host(x), value(r)) for r, x in enumerate(lst)), "all_gather")
    gl = [ember.zeros((3, 4), device=device) for _ in range(N)] if R == 1 else None
    dist.gather(T(value(R), device), gl, dst=1)
    if R == 1:
        check(all(np.array_equal(host(x), value(r)) for r, x in enumerate(gl)), "gather")
    sl = [T(value(r + 10), device) for r in range(N)] if R == 0 else None
    t = ember.zeros((3, 4), device=device)
    dist.scatter(t, sl, src=0)
    check(np.array_equal(host(t), value(R + 10)), "scatter")


def test_reduce_scatter_alltoall(device):
    full = [value(r, (N * 2, 3)) for r in range(N)]
    out = ember.zeros((2, 3), device=device)
    dist.reduce_scatter_tensor(out, T(full[R], device))
    check(np.allclose(host(out), sum(full)[R * 2:(R + 1) * 2]), "reduce_scatter_tensor SUM")
    dist.reduce_scatter_tensor(out, T(full[R], device), op=ReduceOp.MAX)
    check(np.allclose(host(out), np.max(full, 0)[R * 2:(R + 1) * 2]), "reduce_scatter_tensor MAX")
    # all_to_all_single, equal splits: rank r sends block j to rank j
    inp = T(np.arange(N * 2, dtype=np.int64) + 100 * R, device)
    out = ember.zeros(N * 2, dtype=ember.int64, device=device)
    dist.all_to_all_single(out, inp)
    ref = np.concatenate([np.arange(R * 2, R * 2 + 2) + 100 * s for s in range(N)])
    check(np.array_equal(host(out), ref), "all_to_all_single")
    # uneven splits: rank r sends (j + 1) rows to rank j, so it receives (r + 1) rows from everyone
    in_splits = [j + 1 for j in range(N)]
    inp = T(np.repeat(np.arange(N)[:, None], 2, 1).repeat(in_splits, 0).astype(np.float32) + 10 * R, device)
    out = ember.zeros(((R + 1) * N, 2), device=device)
    dist.all_to_all_single(out, inp, output_split_sizes=[R + 1] * N, input_split_sizes=in_splits)
    ref = np.concatenate([np.full((R + 1, 2), R + 10 * s, np.float32) for s in range(N)])
    check(np.array_equal(host(out), ref), "all_to_all_single uneven")


def test_p2p(device):
    nxt, prv = (R + 1) % N, (R - 1) % N
    recv = ember.zeros((3, 4), device=device)
    w = dist.irecv(recv, src=prv, tag=7)
    dist.send(T(value(R), device), dst=nxt, tag=7)
    w.wait()
    check(np.array_equal(host(recv), value(prv)), "send/recv ring")
    if R == 0:
        got = set()
        for _ in range(N - 1):
            t = ember.zeros(1, dtype=ember.int64, device=device)
            sender = dist.recv(t, tag=3)                     # any source
            check(int(t.item()) == sender, "recv returns the sender's rank")
            got.add(sender)
        check(got == set(range(1, N)), "recv from any source")
    else:
        dist.send(ember.tensor([R], device=device), dst=0, tag=3)
    ops = [dist.P2POp(dist.isend, T(value(R), device), nxt), dist.P2POp(dist.irecv, recv, prv)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check(np.array_equal(host(recv), value(prv)), "batch_isend_irecv")


def test_groups():
    sub_ranks = list(range(0, N, 2))                 # the even ranks
    g = dist.new_group(sub_ranks)
    if R in sub_ranks:
        check(dist.get_rank(g) == sub_ranks.index(R) and dist.get_world_size(g) == len(sub_ranks), "group rank")
        t = ember.tensor([float(R)])
        dist.all_reduce(t, group=g)
        check(t.item() == sum(sub_ranks), "all_reduce in a sub-group")
        t = ember.tensor([float(R)])
        dist.broadcast(t, src=sub_ranks[-1], group=g)     # src is a global rank, as PyTorch
        check(t.item() == sub_ranks[-1], "broadcast in a sub-group (global src)")
        check(dist.get_global_rank(g, 0) == 0 and dist.get_process_group_ranks(g) == sub_ranks, "rank maps")
    else:
        check(g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1, "non-member")
        check(dist.all_reduce(ember.ones(1), group=g) is None, "non-member collective returns None")
    dist.barrier()


def test_objects():
    objs = [None] * N
    dist.all_gather_object(objs, {"rank": R, "s": "x" * R})
    check(objs == [{"rank": r, "s": "x" * r} for r in range(N)], "all_gather_object")
    lst = [R, "hello"] if R == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    check(lst == [0, "hello"], "broadcast_object_list")


def expect(exc, pattern, fn):
    try:
        fn()
    except exc as e:
        check(pattern in str(e), f"message {str(e)!r} lacks {pattern!r}")
        return
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


def test_errors():
    t = ember.zeros(4, 4)
    expect(ValueError, "Tensors must be contiguous", lambda: dist.all_reduce(t.t()))
    expect(TypeError, "Expected parameter `tensor` of type torch.Tensor", lambda: dist.all_reduce([1, 2]))
    expect(ValueError, "output tensor size must be equal to world_size times input tensor size",
           lambda: dist.all_gather_into_tensor(ember.zeros(3), ember.zeros(2)))
    expect(ValueError, "input tensor must be the same size as output size times world size",
           lambda: dist.reduce_scatter_tensor(ember.zeros(2), ember.zeros(2 * N + 1)))
    expect(ValueError, "should not be the same as rank of the current process", lambda: dist.send(t, dst=R))
    expect(ValueError, "ReduceOp.AVG is only supported for floating-point",
           lambda: dist.all_reduce(ember.ones(2, dtype=ember.int64), op=ReduceOp.AVG))
    expect(ValueError, "complex", lambda: dist.all_reduce(ember.ones(2, dtype=ember.complex64), op=ReduceOp.MAX))
    expect(ValueError, "Argument ``gather_list`` must be specified on destination rank",
           lambda: dist.gather(t, None, dst=R))
    expect(ValueError, "Invalid src rank", lambda: dist.broadcast(t, src=N))
    expect(ValueError, "trying to initialize the default process group twice!",
           lambda: dist.init_process_group("mpi"))
    # a failed argument check ran no collective: the group still works
    x = ember.ones(2)
    dist.all_reduce(x)
    check(x.tolist() == [N, N], "the group works after argument errors")


def run_all():
    for device in DEVICES:
        test_all_reduce(device)
        test_async(device)
        test_broadcast_reduce(device)
        test_gathers(device)
        test_reduce_scatter_alltoall(device)
        test_p2p(device)
    if BACKEND == "mpi":
        test_groups()
        test_objects()
        test_errors()


try:
    run_all()
    dist.barrier()
    dist.destroy_process_group()
    check(not dist.is_initialized(), "destroyed")
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    sys.exit(1)
print(f"RANK {R}/{N} PASSED {checks} checks on {', '.join(DEVICES)}", flush=True)
