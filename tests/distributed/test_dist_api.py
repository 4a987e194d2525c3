"""ember.distributed in one process: optional imports, errors before init, the backend registry and
plugin hook (a tiny in-test single-rank backend), Work timeouts, DDP mechanics on one rank, and
DistributedSampler index for index against PyTorch's."""
import datetime
import subprocess
import sys

import pytest

import ember
import ember.distributed as dist
from ember.distributed import CollectiveBackend, ReduceOp, Work, DistBackendError
from ember.distributed._backend import CompletedWork
from ember.utils.data import DistributedSampler


def test_import_ember_does_not_import_mpi4py_or_cupy():
    code = ("import sys, ember, ember.distributed as d; assert d.is_available(); "
            "print('mpi4py' in sys.modules, 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_public_names_match_torch():
    for name in ("init_process_group", "destroy_process_group", "is_initialized", "is_available", "get_rank",
                 "get_world_size", "barrier", "new_group", "ReduceOp", "all_reduce", "broadcast", "reduce",
                 "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "gather", "scatter", "send",
                 "recv", "isend", "irecv", "all_to_all_single", "Work", "Backend", "group", "GroupMember"):
        assert hasattr(dist, name), name
    assert ember.nn.parallel.DistributedDataParallel is not None
    assert ember.distributed is dist
    assert {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX} == \
        {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX}
    assert ReduceOp(ReduceOp.MAX) == ReduceOp.MAX and ReduceOp.MAX != ReduceOp.MIN
    assert dist.Backend("MPI") == "mpi" == dist.Backend.MPI


def test_errors_before_init():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(ValueError, match="Invalid backend: 'nosuch'"):
        dist.init_process_group("nosuch")
    with pytest.raises(ValueError, match="Invalid reduce op"):
        dist.all_reduce(ember.ones(2), op="median")


def test_nccl_unavailable_is_reported_not_raised():
    assert isinstance(dist.is_nccl_available(), bool)
    assert dist.is_gloo_available() is False


# ---------------------------------------------------------------- a tiny single-rank backend, via the plugin hook

class Loop(CollectiveBackend):
    """World size 1: every collective leaves (or copies) the data; it records what it was asked."""
    name = "loop"

    def __init__(self, timeout):
        super().__init__(0, 1, timeout)
        self.log = []

    def _w(self, op, res):
        self.log.append(op)
        return CompletedWork(op, self._next_seq(), 0, self.timeout, res, "loop")

    def allreduce(self, tensor, op):
        return self._w(("allreduce", op.name), [tensor])

    def broadcast(self, tensor, root):
        return self._w(("broadcast", root), [tensor])

    def allgather_into_tensor(self, output, tensor):
        output.copy_(tensor.view(output.shape))
        return self._w(("allgather_into_tensor",), [output])

    def barrier(self):
        return self._w(("barrier",), [])


created = []


class LoopPlugin:
    @ember.plugins.hookimpl
    def ember_plugin_info(self):
        return {"name": "loop", "version": "0", "api_version": "1.0"}

    @ember.plugins.hookimpl
    def ember_register(self, registry):
        def factory(rank, world_size, timeout, init_method):
            b = Loop(timeout)
            created.append(b)
            return b
        registry.register_collective_backend("loop", factory, devices=["cpu"])


@pytest.fixture
def loop_group():
    ember.plugins.register(LoopPlugin(), name="loop-plugin")
    created.clear()
    dist.init_process_group("loop", timeout=datetime.timedelta(seconds=5))
    try:
        yield created[0]
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        ember.plugins.unregister("loop-plugin")


def test_plugin_backend_serves_its_device_type(loop_group):
    assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.get_backend() == "loop"
    t = ember.ones(3)
    dist.all_reduce(t, op=ReduceOp.MAX)
    w = dist.broadcast(t, src=0, async_op=True)
    assert isinstance(w, Work) and w.wait() and w.is_completed() and w.result() == [t]
    # each collective is preceded by the always-on mismatch check: one MAX all-reduce of its signature
    assert loop_group.log == [("allreduce", "MAX"), ("allreduce", "MAX"), ("allreduce", "MAX"), ("broadcast", 0)]
    with pytest.raises(NotImplementedError, match="loop: need reduce"):
        dist.reduce(t, dst=0)
    if ember.vdev.is_available():
        with pytest.raises(RuntimeError, match="No backend type associated with device type vdev"):
            dist.all_reduce(ember.ones(2, device="vdev"))
    with pytest.raises(ValueError, match="trying to initialize the default process group twice!"):
        dist.init_process_group("loop")


def test_plugin_backend_goes_away_with_its_plugin():
    ember.plugins.register(LoopPlugin(), name="loop-plugin")
    assert dist.is_backend_available("loop")
    ember.plugins.unregister("loop-plugin")
    assert not dist.is_backend_available("loop")
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("loop")


def test_register_backend_twice_is_refused():
    dist.Backend.register_backend("twice", lambda *a: Loop(datetime.timedelta(seconds=1)), devices="cpu")
    try:
        with pytest.raises(ValueError, match="collective backend 'twice' is already registered"):
            dist.Backend.register_backend("twice", lambda *a: None)
    finally:
        dist._backend.unregister_backend("twice")


def test_argument_checks_raise_pytorchs_errors(loop_group):
    with pytest.raises(ValueError, match="Tensors must be contiguous"):
        dist.all_reduce(ember.zeros(3, 4).t())
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type torch.Tensor"):
        dist.broadcast([1.0], src=0)
    with pytest.raises(ValueError, match="output tensor size must be equal to world_size times input tensor size"):
        dist.all_gather_into_tensor(ember.zeros(3), ember.zeros(2))
    with pytest.raises(ValueError, match="Invalid src rank 1"):
        dist.broadcast(ember.zeros(2), src=1)
    assert loop_group.log == []                        # no collective ran


def test_debug_detail_fingerprint_single_rank(loop_group, monkeypatch):
    # with DETAIL, each collective first all-gathers its fingerprint (here: one rank, so it matches)
    monkeypatch.setattr(dist._api._state, "check", "DETAIL")
    dist.all_reduce(ember.ones(2))
    assert loop_group.log == [("allgather_into_tensor",), ("allreduce", "SUM")]
    monkeypatch.setattr(dist._api._state, "check", "OFF")     # EMBER_DISTRIBUTED_CHECK=0
    dist.all_reduce(ember.ones(2))
    assert loop_group.log[2:] == [("allreduce", "SUM")]


# ---------------------------------------------------------------- Work: timeouts

class NeverDone(Work):
    backend_name = "fake"

    def _poll(self):
        return False

    def _missing_ranks(self):
        return "rank 3 never came."


def test_work_wait_times_out_with_the_collective_and_rank_named():
    w = NeverDone("ALLREDUCE", 7, 2, datetime.timedelta(milliseconds=200), 10, 10)
    assert not w.is_completed()
    with pytest.raises(DistBackendError, match=r"\[Rank 2\] Watchdog caught collective operation timeout: "
                                               r"WorkFAKE\(SeqNum=7, OpType=ALLREDUCE.*Timeout\(ms\)=200\).*"
                                               r"rank 3 never came"):
        w.wait()
    assert isinstance(w.exception(), RuntimeError) and not w.is_success()


# ---------------------------------------------------------------- DDP on one rank

def test_ddp_single_rank_buckets_and_gradients(loop_group):
    from ember.nn.parallel import DistributedDataParallel as DDP
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(4, 64), ember.nn.ReLU(), ember.nn.Linear(64, 2))
    ref = ember.nn.Sequential(ember.nn.Linear(4, 64), ember.nn.ReLU(), ember.nn.Linear(64, 2))
    ref.load_state_dict(m.state_dict())
    ddp = DDP(m, bucket_cap_mb=0.0005)
    assert [b.indices for b in ddp._buckets] == [[3, 2, 1], [0]]    # reverse order, closed past ~0.5 KB
    x = ember.randn(5, 4)
    ddp(x).sum().backward()
    ref(x).sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        assert ember.equal(p.grad, q.grad)
    launched = [e for e in loop_group.log if e[0] == "allreduce" and e[1] != "MAX"]   # (MAX: mismatch checks)
    assert launched == [("allreduce", "AVG")] * 2
    loop_group.log.clear()
    with ddp.no_sync():
        ddp(x).sum().backward()
    assert [e for e in loop_group.log if e[0] == "allreduce"] == []
    with pytest.raises(NotImplementedError, match="gradient_as_bucket_view"):
        DDP(m, gradient_as_bucket_view=True)


# ---------------------------------------------------------------- DistributedSampler

def test_distributed_sampler_matches_torch_index_for_index():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: nothing to compare with")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for n in (0 + 1, 10, 23, 1797):
        data = list(range(n))
        for reps in (1, 2, 3, 4):
            for kw in (dict(), dict(shuffle=False), dict(drop_last=True), dict(seed=7, drop_last=True),
                       dict(seed=2 ** 33 + 5)):
                for rank in range(reps):
                    e = DistributedSampler(data, num_replicas=reps, rank=rank, **kw)
                    t = TorchSampler(data, num_replicas=reps, rank=rank, **kw)
                    for epoch in (0, 3):
                        e.set_epoch(epoch)
                        t.set_epoch(epoch)
                        assert list(e) == list(t) and len(e) == len(t), (n, reps, kw, rank, epoch)
    del torch


def test_distributed_sampler_partitions_and_errors():
    data = list(range(10))
    parts = [list(DistributedSampler(data, num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]          # padded with the first indices
    s = DistributedSampler(data, num_replicas=3, rank=0, seed=1)
    a = list(s)
    s.set_epoch(1)
    assert list(s) != a and sorted(set(list(s) + a)) == sorted(set(a + list(s)))
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(data, num_replicas=3, rank=3)
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(data)


def test_leaf_gradient_hooks_fire_during_backward():
    """DDP's overlap rests on this: a parameter's gradient hook runs as soon as its gradient is
    ready (its AccumulateGrad node runs first, as in PyTorch), before backward reaches earlier layers."""
    order = []
    lin1, lin2, lin3 = ember.nn.Linear(4, 8), ember.nn.Linear(8, 8), ember.nn.Linear(8, 2)
    lin3.weight.register_hook(lambda g: order.append("lin3.weight"))
    lin1.weight.register_hook(lambda g: order.append("lin1.weight"))
    for _ in range(2):               # the second pass is the steady state: every node is newer than the
        order.clear()                # parameters' AccumulateGrad nodes, made in the first
        h1 = lin1(ember.randn(3, 4)).tanh()
        h1.register_hook(lambda g: order.append("h1"))
        lin3(lin2(h1).tanh()).sum().backward()
        assert order == ["lin3.weight", "h1", "lin1.weight"]
