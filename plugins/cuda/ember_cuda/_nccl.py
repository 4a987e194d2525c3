"""The "nccl" collective backend: NCCL through cupy (``cupy.cuda.nccl``), for cuda tensors.

Verified on one GPU (an H100: a one-rank group runs every collective through NCCL,
``tests/distributed/test_dist_nccl.py::test_nccl_one_gpu_smoke``); multi-GPU runs are untested: no
machine with two GPUs was available, and that test skips with the reason. ember-cuda
registers it in ``ember_register`` through ``registry.register_collective_backend`` - the same
call a vendor uses for its device's collectives - and cupy is imported only when the backend
is created.

Each collective is enqueued on the current cupy stream of the tensor's device; its ``Work``
records a cupy Event after it and polls ``Event.done`` with the group's deadline (on a
timeout the communicator is aborted, so the stream does not stay blocked). The tensors'
device addresses come from ``Tensor.data_ptr()``.

Rendezvous (the NCCL unique id): broadcast over MPI when the job was launched by
``mpiexec`` (mpi4py importable, more than one MPI process), otherwise through
``init_method="file://PATH"`` on a shared file system with explicit ``rank`` and
``world_size``.
"""
from __future__ import annotations

import os
import time

from ember.distributed import CollectiveBackend, DistBackendError, ReduceOp, Work
from ember.distributed._backend import CompletedWork

__all__ = ["NCCLBackend", "create", "is_available"]


def is_available() -> bool:
    """Whether cupy with NCCL support can be imported (imports cupy on first call)."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # cupy warns when libnccl is missing
            from cupy.cuda import nccl
        return bool(getattr(nccl, "available", True))
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False


_DTYPES = {"float16": "NCCL_FLOAT16", "bfloat16": "NCCL_BFLOAT16", "float32": "NCCL_FLOAT32",
           "float64": "NCCL_FLOAT64", "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
           "int64": "NCCL_INT64", "bool": "NCCL_UINT8"}
_OPS = {0: "NCCL_SUM", 1: "NCCL_AVG", 2: "NCCL_PROD", 3: "NCCL_MIN", 4: "NCCL_MAX"}


class _NCCLWork(Work):
    backend_name = "nccl"

    def __init__(self, backend, op_type, event, finish=None, numel_in=0, numel_out=0, result=None):
        super().__init__(op_type, backend._next_seq(), backend._rank, backend.timeout, numel_in, numel_out, result)
        self._backend, self._event, self._fin = backend, event, finish

    def _poll(self):
        return self._event.done

    def _finish(self):
        if self._fin is not None:
            self._fin()

    def _on_fatal(self):
        try:
            self._backend.comm.abort()
        except Exception:  # noqa: BLE001
            pass


class NCCLBackend(CollectiveBackend):
    """CollectiveBackend over a cupy NCCL communicator for cuda tensors: collectives are enqueued on the current
    stream and their Work waits on a recorded event. Unsupported dtypes, complex tensors and ReduceOps raise
    ValueError.
    """
    name = "nccl"

    def __init__(self, comm, rank, size, timeout, mpi_comm=None):
        super().__init__(rank, size, timeout)
        self.comm = comm
        self.mpi_comm = mpi_comm      # the MPI communicator of the rendezvous (None after file://)
        from cupy.cuda import nccl
        import cupy
        self._nccl, self._cupy = nccl, cupy

    def _dt(self, t):
        name = str(t._dtype).replace("ember.", "")
        if name not in _DTYPES or not hasattr(self._nccl, _DTYPES[name]):
            raise ValueError(f"nccl does not support dtype {t._dtype}")
        return getattr(self._nccl, _DTYPES[name])

    def _op(self, op, t):
        if op.value not in _OPS or not hasattr(self._nccl, _OPS[op.value]):
            raise ValueError(f"nccl does not support ReduceOp.{op.name}")
        if t._dtype.is_complex:
            raise ValueError("nccl: complex tensors are not supported")
        return getattr(self._nccl, _OPS[op.value])

    def _launch(self, op_type, tensor, fn, finish=None, numel_in=0, numel_out=0, result=None):
        cupy = self._cupy
        with cupy.cuda.Device(tensor._device.index or 0):
            stream = cupy.cuda.get_current_stream()
            fn(stream.ptr)
            ev = cupy.cuda.Event(disable_timing=True)
            ev.record(stream)
        return _NCCLWork(self, op_type, ev, finish, numel_in, numel_out, result)

    def allreduce(self, tensor, op):
        """CollectiveBackend.allreduce: ncclAllReduce in place on the current stream."""
        p, n = tensor.data_ptr(), tensor.numel()
        return self._launch("ALLREDUCE", tensor, lambda s: self.comm.allReduce(p, p, n, self._dt(tensor),
                                                                                self._op(op, tensor), s),
                            None, n, n, [tensor])

    def broadcast(self, tensor, root):
        """CollectiveBackend.broadcast: ncclBroadcast in place from ``root``."""
        p, n = tensor.data_ptr(), tensor.numel()
        return self._launch("BROADCAST", tensor, lambda s: self.comm.broadcast(p, p, n, self._dt(tensor), root, s),
                            None, n, n, [tensor])

    def reduce(self, tensor, root, op):
        """CollectiveBackend.reduce: ncclReduce into rank ``root``; the other ranks reduce into a scratch buffer, so
        their tensors stay unchanged (as PyTorch).
        """
        p, n = tensor.data_ptr(), tensor.numel()
        tmp = self._cupy.empty(n * tensor._dtype.itemsize, dtype=self._cupy.uint8) if self._rank != root else None
        out = p if tmp is None else tmp.data.ptr       # non-root tensors stay unchanged (as PyTorch)
        return self._launch("REDUCE", tensor, lambda s: self.comm.reduce(p, out, n, self._dt(tensor),
                                                                          self._op(op, tensor), root, s),
                            lambda: tmp, n, n, [tensor])

    def allgather_into_tensor(self, output, tensor):
        """CollectiveBackend.allgather_into_tensor: ncclAllGather into ``output``."""
        n = tensor.numel()
        return self._launch("_ALLGATHER_BASE", tensor,
                            lambda s: self.comm.allGather(tensor.data_ptr(), output.data_ptr(), n,
                                                          self._dt(tensor), s), None, n, output.numel(), [output])

    def allgather(self, output_list, tensor):
        """CollectiveBackend.allgather: allgather_into_tensor into a flat buffer, waited, then copied into
        ``output_list`` (equal sizes); returns a CompletedWork.
        """
        import ember
        flat = ember.empty(tensor.numel() * self._size, dtype=tensor._dtype, device=tensor._device)
        w = self.allgather_into_tensor(flat, tensor)
        w.wait()
        for i, o in enumerate(output_list):
            o.copy_(flat[i * tensor.numel():(i + 1) * tensor.numel()].view(o.shape))
        return CompletedWork("ALLGATHER", w.seq, self._rank, self.timeout, list(output_list), "nccl")

    def reduce_scatter_tensor(self, output, tensor, op):
        """CollectiveBackend.reduce_scatter_tensor: ncclReduceScatter into ``output``."""
        n = output.numel()
        return self._launch("_REDUCE_SCATTER_BASE", tensor,
                            lambda s: self.comm.reduceScatter(tensor.data_ptr(), output.data_ptr(), n,
                                                              self._dt(tensor), self._op(op, tensor), s),
                            None, tensor.numel(), n, [output])

    def _group_p2p(self, op_type, tensor, sends, recvs, result):
        nccl = self._nccl

        def run(s):
            nccl.groupStart()
            try:
                for t, peer in sends:
                    self.comm.send(t.data_ptr(), t.numel(), self._dt(t), peer, s)
                for t, peer in recvs:
                    self.comm.recv(t.data_ptr(), t.numel(), self._dt(t), peer, s)
            finally:
                nccl.groupEnd()
        return self._launch(op_type, tensor, run, None, tensor.numel(), tensor.numel(), result)

    def gather(self, gather_list, tensor, root):
        """CollectiveBackend.gather: grouped NCCL send / recv to ``root`` (the root copies its own tensor)."""
        if self._rank != root:
            return self._group_p2p("GATHER", tensor, [(tensor, root)], [], [])
        gather_list[root].copy_(tensor)
        return self._group_p2p("GATHER", tensor, [], [(gather_list[r], r) for r in range(self._size) if r != root],
                               gather_list)

    def scatter(self, tensor, scatter_list, root):
        """CollectiveBackend.scatter: grouped NCCL send / recv from ``root`` (the root copies its own chunk)."""
        if self._rank != root:
            return self._group_p2p("SCATTER", tensor, [], [(tensor, root)], [tensor])
        tensor.copy_(scatter_list[root])
        return self._group_p2p("SCATTER", tensor, [(scatter_list[r], r) for r in range(self._size) if r != root], [],
                               [tensor])

    def alltoall_single(self, output, tensor, output_split_sizes, input_split_sizes):
        """CollectiveBackend.alltoall_single: grouped NCCL send / recv of dim-0 chunks (equal chunks when the split
        sizes are empty).
        """
        def parts(t, splits):
            rows = t.shape[0]
            splits = list(splits) if splits else [rows // self._size] * self._size
            out, off = [], 0
            for s in splits:
                out.append(t.narrow(0, off, s))
                off += s
            return out
        ins, outs = parts(tensor, input_split_sizes), parts(output, output_split_sizes)
        return self._group_p2p("ALLTOALL_BASE", tensor, [(ins[r], r) for r in range(self._size)],
                               [(outs[r], r) for r in range(self._size)], [output])

    def send(self, tensor, dst, tag):
        """CollectiveBackend.send: an NCCL send to ``dst`` (``tag`` is ignored: NCCL has no tags)."""
        return self._group_p2p("SEND", tensor, [(tensor, dst)], [], [tensor])

    def recv(self, tensor, src, tag):
        """CollectiveBackend.recv: an NCCL recv from ``src``; RuntimeError when ``src`` is None (NCCL cannot receive
        from any source).
        """
        if src is None:
            raise RuntimeError("nccl: recv needs an explicit src (NCCL has no receive from any source)")
        w = self._group_p2p("RECV", tensor, [], [(tensor, src)], [tensor])
        w.source_rank = src
        return w

    def barrier(self):
        """CollectiveBackend.barrier: a SUM allreduce of a one-element cuda tensor."""
        import ember
        one = ember.ones(1, device="cuda")
        return self.allreduce(one, ReduceOp.SUM)

    def new_group(self, ranks, timeout):
        """A communicator of ``ranks``: a fresh NCCL unique id sent over the MPI communicator of the
        rendezvous (NotImplementedError after a ``file://`` rendezvous)."""
        if self.mpi_comm is None:
            raise NotImplementedError("nccl: new_group needs the job to be launched by mpiexec (the new "
                                      "communicator's id travels over MPI)")
        from mpi4py import MPI
        member = self._rank in ranks
        sub = self.mpi_comm.Split(0 if member else MPI.UNDEFINED, ranks.index(self._rank) if member else 0)
        if not member:
            return None
        uid = sub.bcast(self._nccl.get_unique_id() if sub.Get_rank() == 0 else None, root=0)
        comm = self._nccl.NcclCommunicator(sub.Get_size(), uid, sub.Get_rank())
        return NCCLBackend(comm, sub.Get_rank(), sub.Get_size(), timeout, sub)

    def shutdown(self):
        """CollectiveBackend.shutdown: destroy the NCCL communicator (errors ignored)."""
        if self.comm is not None:
            try:
                self.comm.destroy()
            except Exception:  # noqa: BLE001
                pass
            self.comm = None


def _unique_id_via_mpi(rank, nccl):
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    world = MPI.COMM_WORLD
    if world.Get_size() < 2:
        return None
    uid = nccl.get_unique_id() if world.Get_rank() == 0 else None
    return world.Get_rank(), world.Get_size(), world.bcast(uid, root=0), world.Dup()


def write_unique_id(path, uid) -> None:
    """Write NCCL's unique id (cupy gives a tuple of 128 small ints) as JSON, atomically: a format that holds
    data only, so a crafted rendezvous file cannot run code in the ranks that read it."""
    import json
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump({"nccl_unique_id": [int(v) for v in uid]}, f)
    os.replace(tmp, path)


def read_unique_id(path):
    """The unique id from ``write_unique_id``'s file; DistBackendError for anything else (never unpickled)."""
    import json
    try:
        with open(path) as f:
            doc = json.load(f)
        uid = doc["nccl_unique_id"]
        if not (isinstance(uid, list) and len(uid) == 128 and all(type(v) is int and -128 <= v < 256 for v in uid)):
            raise ValueError("expected a list of 128 byte values")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DistBackendError(f"nccl rendezvous file {path} is not a valid ember rendezvous file ({e})") from None
    return tuple(uid)


def _unique_id_via_file(path, rank, world_size, timeout, nccl):
    if rank == 0:
        uid = nccl.get_unique_id()
        write_unique_id(path, uid)
        return uid
    deadline = time.monotonic() + timeout.total_seconds()
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise DistBackendError(f"[Rank {rank}] nccl rendezvous timed out waiting for rank 0 to write {path}")
        time.sleep(0.01)
    return read_unique_id(path)


def create(rank, world_size, timeout, init_method=None):
    """The "nccl" backend's factory (see the module docstring for the rendezvous)."""
    if not is_available():
        raise RuntimeError("the 'nccl' backend needs cupy with NCCL (cupy.cuda.nccl could not be loaded): "
                           "pip install ember-cuda[cuda12] nvidia-nccl-cu12")
    from cupy.cuda import nccl
    import cupy
    via_mpi = _unique_id_via_mpi(rank, nccl)
    mpi_comm = None
    if via_mpi is not None:
        rank, world_size, uid, mpi_comm = via_mpi
    elif init_method and init_method.startswith("file://") and rank >= 0 and world_size > 0:
        uid = _unique_id_via_file(init_method[len("file://"):], rank, world_size, timeout, nccl)
    else:
        raise ValueError("the 'nccl' backend needs a launch by mpiexec, or init_method='file://PATH' with rank and "
                         "world_size")
    ndev = cupy.cuda.runtime.getDeviceCount()
    if ndev == 0:
        raise RuntimeError("the 'nccl' backend needs a cuda device; none is visible")
    cupy.cuda.Device(rank % ndev).use()
    comm = nccl.NcclCommunicator(world_size, uid, rank)
    return NCCLBackend(comm, rank, world_size, timeout, mpi_comm)
