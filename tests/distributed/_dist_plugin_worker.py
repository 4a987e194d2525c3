"""A vendor's collective backend, registered through the plugin hook, across real processes.

Run under ``mpiexec -n N`` by test_dist_plugin_backend.py. The tiny backend "tinyccl" serves
the device type "vdev" (the reference vendor plugin); it moves host copies with mpi4py's
pickle-based lowercase API (a stand-in for a vendor's own transport). The job initialises
``"cpu:mpi,vdev:tinyccl"`` and checks that vdev tensors go through tinyccl and cpu tensors
through mpi. Prints ``RANK r/N PASSED k checks``.
"""
import datetime
import sys
import traceback

import numpy as np
from mpi4py import MPI

import ember
import ember.distributed as dist
from ember.distributed import CollectiveBackend, ReduceOp
from ember.distributed._backend import CompletedWork

calls = []


class TinyCCL(CollectiveBackend):
    name = "tinyccl"

    def __init__(self, comm, timeout):
        super().__init__(comm.Get_rank(), comm.Get_size(), timeout)
        self.comm = comm

    def _done(self, op, result):
        calls.append(op)
        return CompletedWork(op, self._next_seq(), self._rank, self.timeout, result, "tinyccl")

    def allreduce(self, tensor, op):
        host = tensor.cpu().numpy()
        fn = {ReduceOp.SUM: np.add, ReduceOp.MAX: np.maximum}[op]
        parts = self.comm.allgather(host)
        total = parts[0].copy()
        for p in parts[1:]:
            total = fn(total, p)
        tensor.copy_(ember.from_numpy(total).to(tensor.device))
        return self._done("ALLREDUCE", [tensor])

    def broadcast(self, tensor, root):
        data = self.comm.bcast(tensor.cpu().numpy(), root=root)
        tensor.copy_(ember.from_numpy(data).to(tensor.device))
        return self._done("BROADCAST", [tensor])

    def barrier(self):
        self.comm.barrier()
        return self._done("BARRIER", [])

    def shutdown(self):
        calls.append("shutdown")


def tiny_factory(rank, world_size, timeout, init_method):
    return TinyCCL(MPI.COMM_WORLD.Dup(), timeout)


class TinyPlugin:
    @ember.plugins.hookimpl
    def ember_plugin_info(self):
        return {"name": "tinyccl", "version": "0.0", "api_version": "1.0"}

    @ember.plugins.hookimpl
    def ember_register(self, registry):
        registry.register_collective_backend("tinyccl", tiny_factory, devices=["vdev"])


checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


try:
    check(not dist.is_backend_available("tinyccl"), "not registered before the plugin loads")
    ember.plugins.register(TinyPlugin(), name="tinyccl")
    check(dist.is_backend_available("tinyccl"), "registered through the hook")
    dist.init_process_group("cpu:mpi,vdev:tinyccl", timeout=datetime.timedelta(seconds=20))
    R, N = dist.get_rank(), dist.get_world_size()
    v = ember.full((3,), float(R + 1), device="vdev")
    dist.all_reduce(v)
    # (the first ALLREDUCE is the always-on mismatch check, on the tensor's own backend)
    check(v.cpu().tolist() == [N * (N + 1) / 2] * 3 and calls == ["ALLREDUCE"] * 2, f"vdev all_reduce via tinyccl {calls}")
    c = ember.full((3,), float(R + 1))
    dist.all_reduce(c, op=ReduceOp.MAX)
    check(c.tolist() == [float(N)] * 3 and calls == ["ALLREDUCE"] * 2, "cpu all_reduce via mpi")
    dist.broadcast(v, src=N - 1)
    check(calls[-1] == "BROADCAST" and v.cpu().tolist() == [N * (N + 1) / 2] * 3, "broadcast via tinyccl")
    try:
        dist.reduce_scatter_tensor(ember.zeros(1, device="vdev"), ember.zeros(N, device="vdev"))
    except NotImplementedError as e:
        check("tinyccl: need reduce_scatter_tensor" in str(e), f"missing op message: {e}")
    else:
        raise AssertionError("an op the backend lacks did not raise")
    if ember.opencl.is_available():
        try:
            dist.all_reduce(ember.ones(2, device="opencl"))
        except RuntimeError as e:
            check("No backend type associated with device type opencl" in str(e), f"no backend message: {e}")
        else:
            raise AssertionError("a device type without a backend did not raise")
    dist.destroy_process_group()
    check("shutdown" in calls, "destroy shuts the plugin backend down")
    ember.plugins.unregister("tinyccl")
    check(not dist.is_backend_available("tinyccl"), "unregistering the plugin removes its backend")
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    sys.exit(1)
print(f"RANK {R}/{N} PASSED {checks} checks", flush=True)
