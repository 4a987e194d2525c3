"""DistributedDataParallel checks, run on every rank of ``mpiexec -n N`` by test_dist_ddp.py.

Each rank derives every rank's batch (seeded by rank), so it can compute the single-process
reference - the gradient of the mean of the ranks' losses - locally and compare it with what
DDP left in ``.grad``. Prints ``RANK r/N PASSED k checks``; exits 1 on a failed check.
"""
import copy
import datetime
import sys
import traceback

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=20))
R, N = dist.get_rank(), dist.get_world_size()
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(f"rank {R}: {what}")
    checks += 1


def batch(rank, step=0, n=6):
    g = ember.Generator().manual_seed(1000 * step + rank)
    return ember.randn(n, 8, generator=g), ember.randint(0, 4, (n,), generator=g)


def model_for_rank(rank):
    ember.manual_seed(rank)               # a different initialisation on every rank: DDP must broadcast
    return nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))


def same_on_all_ranks(tensors):
    flat = ember.cat([t.detach().reshape(-1) for t in tensors]).view(ember.int32)   # the bits
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    verdict = ember.tensor([int(ember.equal(flat, ref))])
    dist.all_reduce(verdict, op=dist.ReduceOp.MIN)           # the same answer on every rank
    return bool(verdict.item())


def reference_grads(model0, steps):
    """The single-process gradient: mean over ranks of each rank's loss gradient, summed over ``steps``."""
    ref = copy.deepcopy(model0)
    ref.zero_grad()
    for step in steps:
        for r in range(N):
            x, y = batch(r, step)
            (nn.functional.cross_entropy(ref(x), y) / N).backward()
    return [p.grad for p in ref.parameters()]


def close(a, b):
    return bool(ember.allclose(a, b, rtol=1e-5, atol=1e-6))


def test_broadcast_and_gradients():
    m = model_for_rank(R)
    ddp = DDP(m, bucket_cap_mb=0.0005)    # ~0.5 KB buckets: several of them
    check(len(ddp._buckets) >= 3, f"several buckets, got {len(ddp._buckets)}")
    check(same_on_all_ranks(list(m.parameters())), "parameters broadcast from rank 0 at construction")
    ref0 = model_for_rank(0)
    check(all(ember.equal(p, q) for p, q in zip(m.parameters(), ref0.parameters())), "rank 0's parameters")
    # buckets hold parameters in reverse registration order
    order = [i for b in ddp._buckets for i in b.indices]
    check(order == sorted(order, reverse=True), f"reverse order buckets {order}")
    x, y = batch(R)
    nn.functional.cross_entropy(ddp(x), y).backward()
    ref = reference_grads(m_before := copy.deepcopy(ref0), [0])
    del m_before
    for (name, p), g in zip(m.named_parameters(), ref):
        check(close(p.grad, g), f"averaged gradient of {name}")
    check(same_on_all_ranks([p.grad for p in m.parameters()]), "gradients bit-identical on all ranks")


def test_overlap():
    """The first bucket's all-reduce is launched while backward still runs (before the first
    layer's gradient exists)."""
    m = model_for_rank(0)
    ddp = DDP(m, bucket_cap_mb=0.0005)
    seen = {}
    first = m[0].weight                    # registered first: its gradient comes last

    def hook(grad):
        seen["launched"] = [b.work is not None for b in ddp._buckets]
    first.register_hook(hook)              # runs after DDP's hook for this parameter
    x, y = batch(R)
    nn.functional.cross_entropy(ddp(x), y).backward()
    check(seen["launched"][0], f"bucket 0 launched before the last gradient: {seen['launched']}")


def test_no_sync_and_steps():
    m = model_for_rank(R)
    ddp = DDP(m, bucket_cap_mb=0.0005)
    ref_model = model_for_rank(0)
    with ddp.no_sync():
        x, y = batch(R, 0)
        nn.functional.cross_entropy(ddp(x), y).backward()
    check(not same_on_all_ranks([m[0].weight.grad]) or N == 1, "no_sync: gradients stay local")
    x, y = batch(R, 1)
    nn.functional.cross_entropy(ddp(x), y).backward()     # synchronises the accumulated sum
    for (name, p), g in zip(m.named_parameters(), reference_grads(ref_model, [0, 1])):
        check(close(p.grad, g), f"no_sync accumulated + averaged gradient of {name}")
    # optimizer steps keep parameters bit-identical
    opt = ember.optim.Adam(ddp.parameters(), lr=1e-2)
    for step in range(5):
        opt.zero_grad()
        x, y = batch(R, 10 + step)
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        check(same_on_all_ranks(list(m.parameters())), f"parameters bit-identical after step {step}")


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)
        self.b = nn.Linear(8, 4)           # used on rank 0 only
        self.never = nn.Linear(8, 4)       # used by no rank

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


def test_find_unused_parameters():
    ember.manual_seed(0)
    m = Branchy()
    ref = copy.deepcopy(m)
    ddp = DDP(m, find_unused_parameters=True)
    x, y = batch(R)
    nn.functional.cross_entropy(ddp(x, R == 0), y).backward()
    for r in range(N):
        xr, yr = batch(r)
        (nn.functional.cross_entropy(ref(xr, r == 0), yr) / N).backward()
    check(close(m.a.weight.grad, ref.a.weight.grad), "used parameter averaged")
    check(m.b.weight.grad is not None and close(m.b.weight.grad, ref.b.weight.grad),
          "parameter used on rank 0 only: every rank gets rank 0's gradient / N")
    check(m.never.weight.grad is None, "parameter no rank used keeps grad None")
    # a second iteration works (state reset)
    ddp.zero_grad()
    nn.functional.cross_entropy(ddp(x, True), y).backward()
    check(m.b.weight.grad is not None, "second iteration")


def test_unused_without_flag_is_an_error():
    ember.manual_seed(0)
    ddp = DDP(Branchy())
    x, y = batch(R)
    try:
        nn.functional.cross_entropy(ddp(x, True), y).backward()    # 'never' gets no gradient
    except RuntimeError as e:
        check("find_unused_parameters=True" in str(e) and "never.weight" in str(e), f"message: {e}")
    else:
        raise AssertionError("an unused parameter without find_unused_parameters did not raise")


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)
        self.register_buffer("scale", ember.ones(4))

    def forward(self, x):
        return self.lin(x) * self.scale


def test_broadcast_buffers():
    m = WithBuffer()
    ddp = DDP(m)
    m.scale.fill_(float(R + 2))            # ranks diverge
    with ember.no_grad():
        ddp(batch(R)[0])
    check(m.scale.tolist() == [2.0] * 4, "buffers broadcast from rank 0 before forward")
    # as PyTorch: a forward that will not synchronise gradients (no_grad) turns the next broadcast off,
    # a synchronising forward turns it back on
    m.scale.fill_(float(R + 5))
    with ember.no_grad():
        ddp(batch(R)[0])
    check(m.scale.tolist() == [float(R + 5)] * 4, "no broadcast after a no_grad forward")
    ddp(batch(R)[0]).sum().backward()
    ddp(batch(R)[0])
    check(m.scale.tolist() == [5.0] * 4, "broadcast again after a synchronising forward")
    ddp2 = DDP(WithBuffer(), broadcast_buffers=False)
    ddp2.module.scale.fill_(float(R + 2))
    with ember.no_grad():
        ddp2(batch(R)[0])
    check(ddp2.module.scale.tolist() == [float(R + 2)] * 4, "broadcast_buffers=False leaves them")


def test_misc():
    ddp = DDP(model_for_rank(0))
    check(list(ddp.state_dict())[0].startswith("module."), "state_dict keys under module.")
    try:
        DDP(nn.ReLU())
    except RuntimeError as e:
        check("doesn't have any parameter that requires a gradient" in str(e), "no-parameter message")
    else:
        raise AssertionError("DDP of a module without parameters did not raise")
    lin = nn.Linear(4 + (R % 2), 2)        # ranks disagree on the architecture (N >= 2)
    try:
        DDP(lin)
    except RuntimeError as e:
        check("DDP expects same model across all ranks" in str(e), f"shape mismatch message: {e}")
    else:
        raise AssertionError("different models on different ranks were not detected")


def test_other_device():
    """DDP on a non-host device (the vendor plugin's vdev): buckets live on the device, the mpi
    backend stages them through host memory."""
    if not ember.vdev.is_available():
        return
    m = model_for_rank(R).to("vdev")
    ddp = DDP(m, bucket_cap_mb=0.0005)
    check(all(b.flat.device.type == "vdev" for b in ddp._buckets), "buckets on the device")
    x, y = batch(R)
    nn.functional.cross_entropy(ddp(x.to("vdev")), y.to("vdev")).backward()
    for (name, p), g in zip(m.named_parameters(), reference_grads(model_for_rank(0), [0])):
        check(p.grad.device.type == "vdev" and close(p.grad.cpu(), g), f"vdev averaged gradient of {name}")


try:
    for fn in (test_other_device, test_broadcast_and_gradients, test_overlap, test_no_sync_and_steps, test_find_unused_parameters,
               test_unused_without_flag_is_an_error, test_broadcast_buffers, test_misc):
        fn()
        dist.barrier()
    dist.destroy_process_group()
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    sys.exit(1)
print(f"RANK {R}/{N} PASSED {checks} checks", flush=True)
