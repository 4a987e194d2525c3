"""The "mpi" collective backend: MPI through mpi4py, for tensors on any device.

Every collective is MPI's non-blocking one (``Iallreduce``, ``Ibcast``, ...), so
``async_op=True`` returns at once and ``Work.wait`` polls the request with a deadline:
a peer that died or hangs makes this rank raise ``DistBackendError`` naming the
collective and the rank instead of blocking forever. The communicator is a duplicate of
``COMM_WORLD`` with ``MPI.ERRORS_RETURN``, so transport errors come back as exceptions.

Failures end in errors, not hangs (see docs/reliability.md for what mpich can and cannot
guarantee): ``MPI_Init`` runs with the group's timeout (a rank that died before
``init_process_group`` leaves the others waiting in it forever otherwise); while a collective
waits, this rank checks every half second, and at once when mpich's launcher signals a failed
process (SIGUSR1, under ``mpiexec -disable-auto-cleanup``), whether a peer on this host has
exited, and then raises ``DistBackendError`` naming the collective and the dead rank.

cpu tensors (any device whose runtime has ``host_memory``) are handed to MPI as numpy
views of their storage: no copy. Tensors on other devices are staged through a host
numpy copy (``DeviceRuntime.to_numpy`` / ``from_numpy``). float16 and bfloat16 are
reduced in float32 (MPI has no half types everywhere) and cast back; every transfer
that does not reduce moves raw bytes.

mpi4py is imported here only, when the backend is first created.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import sys
import threading
import time

import numpy as np

from ._backend import CollectiveBackend, Work, DistBackendError

__all__ = ["MPIBackend", "create", "is_available"]

_MPI = None


def _mpi():
    global _MPI
    if _MPI is None:
        if "mpi4py.MPI" not in sys.modules:
            import mpi4py
            # ember initialises MPI itself, with a deadline (_init_mpi), and finalises it at exit
            mpi4py.rc.initialize = False
            mpi4py.rc.finalize = True
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


def _libmpi():
    """The MPI library mpi4py loaded (from this process's memory map), as a ctypes handle; None
    where it cannot be found (then MPI is initialised on the calling thread, without a deadline)."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split()[-1] for ln in f if "/libmpi" in ln and ln.split()[-1].startswith("/")})
        for path in paths:
            lib = ctypes.CDLL(path)
            if hasattr(lib, "MPI_Init_thread"):
                return lib
    except OSError:
        pass
    return None


def _init_mpi(MPI, timeout):
    """MPI_Init_thread(MPI_THREAD_MULTIPLE), bounded by ``timeout``.

    MPI_Init waits in the launcher's rendezvous for every rank of the job; a rank that exited or
    crashed before it leaves the others there forever. Here the call runs on a helper thread
    (through ctypes, which releases the GIL) and this thread waits for it at most ``timeout``,
    then raises DistBackendError naming the ranks of this host that are gone. With
    ``EMBER_MPI_INIT=main`` (an MPI library without MPI_THREAD_SERIALIZED support), MPI is
    initialised on this thread without a deadline.
    """
    if MPI.Is_initialized():
        return
    lib = None if os.environ.get("EMBER_MPI_INIT") == "main" else _libmpi()
    if lib is None:
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
        return
    box = {}

    def init():
        provided = ctypes.c_int(-1)
        box["rc"] = lib.MPI_Init_thread(None, None, ctypes.c_int(MPI.THREAD_MULTIPLE), ctypes.byref(provided))
        box["provided"] = provided.value
    th = threading.Thread(target=init, name="ember-mpi-init", daemon=True)
    th.start()
    th.join(timeout.total_seconds())
    if th.is_alive():
        gone = _missing_local_ranks()
        raise DistBackendError(
            f"init_process_group(backend='mpi'): MPI_Init did not complete within the timeout "
            f"({timeout.total_seconds():g} s): not every rank of the job reached init_process_group. "
            + (f"Rank(s) {', '.join(map(str, gone))} of this host are no longer running (they exited or crashed "
               f"before init_process_group). " if gone else
               "A rank exited or crashed before init_process_group, or is slower than the timeout. ")
            + "(mpich's mpiexec does not end a job whose rank exits before MPI_Init.)")
    if box.get("rc") != 0:
        raise DistBackendError(f"init_process_group(backend='mpi'): MPI_Init_thread failed (error code {box.get('rc')})")
    if box["provided"] < MPI.THREAD_SERIALIZED:
        raise DistBackendError(
            f"init_process_group(backend='mpi'): this MPI library provides thread level {box['provided']} only "
            f"(MPI_THREAD_SERIALIZED needed to initialise it with a deadline); set EMBER_MPI_INIT=main")


def _missing_local_ranks() -> list:
    """Ranks that the MPI launcher started on this host and that are no longer running, found
    from this process's siblings (the launcher's proxy started them all); [] when unknown."""
    env = os.environ
    try:
        size, local = int(env["PMI_SIZE"]), int(env.get("MPI_LOCALNRANKS", "-1"))
    except (KeyError, ValueError):
        return []
    if local != size:           # some ranks run on other hosts: which ones is not known here
        return []
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/task/{ppid}/children") as f:
            children = [int(p) for p in f.read().split()]
    except OSError:
        return []
    running = set()
    for pid in children:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                for item in f.read().split(b"\0"):
                    if item.startswith(b"PMI_RANK="):
                        running.add(int(item[9:]))
        except (OSError, ValueError):
            continue
    if int(env.get("PMI_RANK", "-1")) not in running:       # not the launcher's layout this assumes
        return []
    return sorted(set(range(size)) - running)


# mpich's launcher (hydra) signals SIGUSR1 to every process of a job when one of them failed (only
# under -disable-auto-cleanup; by default it kills them all): the time it came, for _MPIWork._watch
_launcher_failure = [0.0]


def _on_launcher_signal(signum, frame):
    _launcher_failure[0] = time.monotonic()


def _watch_launcher_signal():
    """Catch hydra's failure signal (SIGUSR1), whose default action ends the process without a
    word, when launched by hydra (PMI_FD / PMI_PORT set) and nobody else handles SIGUSR1; only
    from the main thread (signal.signal's rule)."""
    if not ("PMI_FD" in os.environ or "PMI_PORT" in os.environ):
        return
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGUSR1, _on_launcher_signal)


def _host_id() -> str:
    """This host and pid namespace (pids are compared only within one): hostname, boot id and the
    pid namespace's inode."""
    parts = [socket.gethostname()]
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            parts.append(f.read().strip())
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:
        pass
    return "|".join(parts)


def is_available() -> bool:
    """Whether mpi4py (and an MPI library) can be imported."""
    try:
        import importlib.util
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


# ---------------------------------------------------------------------------------------
# host views of tensors
# ---------------------------------------------------------------------------------------

_runtimes: dict = {}


def _runtime(t):
    rt = _runtimes.get(t._device.type)
    if rt is None:
        from .. import _registry
        rt = _runtimes[t._device.type] = _registry.device_type(t._device.type).runtime
    return rt


class _Host:
    """A tensor's values as a flat host numpy array: a view of the storage for host-memory
    devices, else a copy that ``store()`` writes back."""
    __slots__ = ("t", "arr", "staged", "rt")

    def __init__(self, t, load=True):
        rt = self.rt = _runtime(t)
        self.t = t
        self.staged = not rt.host_memory
        # (an output on a staged device is copied in too: simpler than a dtype table, and the
        # device -> host copy is small beside the transfer)
        self.arr = rt.to_numpy(t).reshape(-1)

    def bytes(self):
        """The values as a flat uint8 array over the same memory (what MPI moves as MPI.BYTE)."""
        return self.arr.view(np.uint8)

    def store(self):
        """Write the host copy back into the tensor (staged devices only; a host view already is the tensor)."""
        if self.staged:
            self.rt.from_numpy(self.t, self.arr.reshape(self.t._shape))


_HALF = ("e", "E")     # float16, bfloat16: reduced in float32


def _check_reduce_dtype(arr, op, name):
    kind, v = arr.dtype.kind, op.value
    if v == 0 and kind in "fiu":             # the common case: SUM of a number type
        return
    if v >= 5 and kind not in "biu":         # BAND, BOR, BXOR
        raise ValueError(f"{name}: ReduceOp.{op.name} is only supported for integer and bool tensors, got "
                         f"{arr.dtype}")
    if kind == "c" and v in (3, 4):          # MIN, MAX
        raise ValueError(f"{name} does not support ReduceOp.{op.name} on complex tensors")
    if v == 1 and kind not in "fcV" and arr.dtype.char not in _HALF:     # AVG
        raise ValueError(f"{name}: ReduceOp.AVG is only supported for floating-point and complex tensors "
                         f"(got {arr.dtype}); use ReduceOp.SUM and divide")


_OPS = None


def _mpi_op(op, arr):
    global _OPS
    if _OPS is None:
        MPI = _mpi()
        _OPS = ({0: MPI.SUM, 1: MPI.SUM, 2: MPI.PROD, 3: MPI.MIN, 4: MPI.MAX, 5: MPI.BAND, 6: MPI.BOR, 7: MPI.BXOR},
                # bool: logical reductions (PyTorch reduces bool as or / and)
                {0: MPI.LOR, 2: MPI.LAND, 3: MPI.LAND, 4: MPI.LOR, 5: MPI.LAND, 6: MPI.LOR, 7: MPI.LXOR})
    return _OPS[arr.dtype.kind == "b"][op.value]


def _red_buffer(arr):
    """The array MPI reduces: ``arr`` itself, or a float32 copy for half types."""
    if arr.dtype.char in _HALF:
        return arr.astype(np.float32)
    return arr


# ---------------------------------------------------------------------------------------
# work handles
# ---------------------------------------------------------------------------------------

class _MPIWork(Work):
    backend_name = "mpi"

    #: seconds between checks, while waiting, that the peers on this host are still running
    WATCH_S = 0.5

    def __init__(self, backend, op_type, reqs, finish=None, numel_in=0, numel_out=0, result=None, peer=None):
        super().__init__(op_type, backend._next_seq(), backend._rank, backend.timeout, numel_in, numel_out, result)
        self._backend = backend
        self._reqs = reqs
        self._fin = finish
        self._peer = peer             # the one rank a SEND / RECV waits for (None: every rank of the group)
        self._next_watch = self._start + self.WATCH_S
        self._seen_signal = _launcher_failure[0]
        self.source_rank = None
        self.spin_s = backend.spin_s

    def _poll(self):
        if self.op_type == "RECV":
            st = _mpi().Status()
            done = self._reqs[0].Test(st)
            if done:
                self.source_rank = st.Get_source()
            return done
        if len(self._reqs) == 1:
            return self._reqs[0].Test()
        return _mpi().Request.Testall(self._reqs)

    def _finish(self):
        if self._fin is not None:
            self._fin()
            self._fin = None
        self._reqs = None

    def _check(self):
        if self._backend._broken is not None and not self._done:
            raise DistBackendError(f"[Rank {self.rank}] {self!r} cannot run: the process group is broken by an "
                                   f"earlier failure: {self._backend._broken}")
        try:
            done = super()._check()
            if not done:
                self._watch()
            return done
        except DistBackendError as e:
            self._on_fatal(str(e))
            raise

    def _watch(self):
        """Raise DistBackendError when a rank this collective waits for has exited (checked every
        WATCH_S seconds, and at once after the launcher's failure signal)."""
        signalled = _launcher_failure[0] != self._seen_signal
        now = time.monotonic()
        if not signalled and now < self._next_watch:
            return
        self._seen_signal = _launcher_failure[0]
        self._next_watch = now + self.WATCH_S
        dead = self._backend._dead_peers(self._peer)
        if dead:
            who = ", ".join(f"rank {r} (pid {pid})" for r, pid in dead)
            self._error = DistBackendError(
                f"[Rank {self.rank}] {self!r} failed after {int((now - self._start) * 1000)} milliseconds: {who} "
                f"exited while this collective waited for it" + (" (mpiexec reported a failed process)" if signalled
                                                                  else "") + ".")
            raise self._error

    def _missing_ranks(self):
        return self._backend._describe_peers()

    def _on_fatal(self, msg=""):
        self._backend._mark_broken(msg or str(self._error))


# ---------------------------------------------------------------------------------------
# the backend
# ---------------------------------------------------------------------------------------

_exit_installed = False


def _exit_without_finalize():
    # MPI_Finalize waits for the requests of a failed collective (a dead peer's never complete):
    # after a collective failed, leave without it, as PyTorch's watchdog tears a failed process down.
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(1)


class MPIBackend(CollectiveBackend):
    """Collectives on an MPI communicator (one per process group)."""

    name = "mpi"

    def __init__(self, comm, timeout, peers):
        super().__init__(comm.Get_rank(), comm.Get_size(), timeout)
        self.comm = comm
        self.peers = peers            # [(host id, pid)] per group rank (_host_id: hostname|boot id|pid namespace)
        self._broken = None
        # more ranks on this host than cores: a waiting rank yields its core at once (the rank it waits
        # for may need it); otherwise it spins a while first (yielding costs a time slice under load)
        self._host = host = peers[self._rank][0]      # this process's own entry (_host_id at init)
        local = sum(1 for h, _ in peers if h == host)
        self.spin_s = 0.0 if local > (os.cpu_count() or 1) else Work.SPIN_S

    # -- failure handling ------------------------------------------------------------
    def _mark_broken(self, msg):
        global _exit_installed
        if self._broken is None:
            self._broken = msg
        if not _exit_installed:
            _exit_installed = True
            atexit.register(_exit_without_finalize)

    def _dead_peers(self, peer=None):
        """[(rank, pid)] of the group's ranks on this host (only ``peer``, when given) that are no longer running."""
        ranks = range(len(self.peers)) if peer is None else (peer,)
        return [(r, self.peers[r][1]) for r in ranks
                if r != self._rank and self.peers[r][0] == self._host and not _alive(self.peers[r][1])]

    def _describe_peers(self):
        host = self._host
        dead, alive, remote = [], [], []
        for r, (h, pid) in enumerate(self.peers):
            if r == self._rank:
                continue
            if h != host:
                remote.append(r)
            elif _alive(pid):
                alive.append(r)
            else:
                dead.append(f"rank {r} (pid {pid})")
        parts = []
        if dead:
            parts.append(f"{', '.join(dead)} exited before joining the collective.")
        if alive:
            parts.append(f"Rank(s) {', '.join(map(str, alive))} on this host are alive but at least one of them "
                         "has not called this collective (it is slower, stuck, or called another one).")
        if remote:
            parts.append(f"Rank(s) {', '.join(map(str, remote))} run on other hosts (not checked).")
        return " ".join(parts)

    def _work(self, op_type, reqs, finish=None, numel_in=0, numel_out=0, result=None, peer=None):
        if self._broken is not None:
            raise DistBackendError(f"[Rank {self._rank}] {op_type} cannot run: the process group is broken by an "
                                   f"earlier failure: {self._broken}")
        return _MPIWork(self, op_type, reqs, finish, numel_in, numel_out, result, peer)

    def _start(self, fn, *args):
        """Start a non-blocking MPI call; a transport error becomes a DistBackendError."""
        if self._broken is not None:
            raise DistBackendError(f"[Rank {self._rank}] the process group is broken by an earlier failure: "
                                   f"{self._broken}")
        try:
            return fn(*args)
        except _mpi().Exception as e:
            msg = f"[Rank {self._rank}] MPI error starting {fn.__name__}: {e}"
            self._mark_broken(msg)
            raise DistBackendError(msg) from None

    def agree(self, values, device="cpu"):
        """One MPI_Iallreduce(MAX) of ``values`` and their negations on a numpy buffer (no ember
        tensor), polled like every collective, so a dead peer still ends in a timeout error."""
        MPI = _mpi()
        buf = np.array(list(values) + [-v for v in values], dtype=np.int64)
        req = self._start(self.comm.Iallreduce, MPI.IN_PLACE, buf, MPI.MAX)
        done = False
        try:
            for _ in range(64):      # the usual case (peers are in step): done within a few us
                if req.Test():
                    done = True
                    break
        except MPI.Exception:
            pass
        if not done:                 # a late or dead peer, an MPI error: the polled wait, its timeout and message
            self._work("ALLREDUCE", [req]).wait()
        n = len(values)
        return bool((buf[:n] == -buf[n:]).all())

    # -- collectives ---------------------------------------------------------------
    def allreduce(self, tensor, op):
        """CollectiveBackend.allreduce: MPI Iallreduce in place on a host copy (float16 / bfloat16 reduced in float32,
        AVG divides the SUM), stored back at wait.
        """
        MPI = _mpi()
        h = _Host(tensor)
        _check_reduce_dtype(h.arr, op, "all_reduce")
        buf = _red_buffer(h.arr)
        req = self._start(self.comm.Iallreduce, MPI.IN_PLACE, buf, _mpi_op(op, buf))
        n = tensor.numel()
        return self._work("ALLREDUCE", [req], self._finisher(h, buf, op.value == 1), n, n, [tensor])

    def _finisher(self, h, buf, avg, active=True):
        size = self._size

        def finish():
            if not active:
                return
            if avg:
                np.divide(buf, size, out=buf, casting="unsafe")
            if buf is not h.arr:
                h.arr[...] = buf
            h.store()
        return finish

    def broadcast(self, tensor, root):
        """CollectiveBackend.broadcast: MPI Ibcast of the tensor's bytes from ``root``; non-root ranks store the
        result at wait.
        """
        MPI = _mpi()
        h = _Host(tensor)
        req = self._start(self.comm.Ibcast, [h.bytes(), MPI.BYTE], root)
        n = tensor.numel()
        return self._work("BROADCAST", [req], self._finisher(h, h.arr, False, self._rank != root), n, n,
                          [tensor])

    def reduce(self, tensor, root, op):
        """CollectiveBackend.reduce: MPI Ireduce into rank ``root`` (in place there), as allreduce for dtypes and AVG;
        only the root's tensor changes.
        """
        MPI = _mpi()
        h = _Host(tensor)
        _check_reduce_dtype(h.arr, op, "reduce")
        buf = _red_buffer(h.arr)
        mop = _mpi_op(op, buf)
        if self._rank == root:
            req = self._start(self.comm.Ireduce, MPI.IN_PLACE, buf, mop, root)
        else:
            req = self._start(self.comm.Ireduce, buf, None, mop, root)
        n = tensor.numel()
        return self._work("REDUCE", [req], self._finisher(h, buf, op.value == 1, self._rank == root), n, n,
                          [tensor])

    def allgather_into_tensor(self, output, tensor):
        """CollectiveBackend.allgather_into_tensor: MPI Iallgather of the bytes into ``output`` in rank order."""
        MPI = _mpi()
        src = _Host(tensor)
        out = _Host(output, load=False)
        req = self._start(self.comm.Iallgather, [src.bytes(), MPI.BYTE], [out.bytes(), MPI.BYTE])
        return self._work("_ALLGATHER_BASE", [req], out.store, tensor.numel(), output.numel(), [output])

    def allgather(self, output_list, tensor):
        """CollectiveBackend.allgather: MPI Iallgatherv of the bytes, unpacked into ``output_list`` at wait (per-rank
        sizes may differ).
        """
        MPI = _mpi()
        src = _Host(tensor)
        counts = [o.numel() * o._dtype.itemsize for o in output_list]
        flat = np.empty(sum(counts), dtype=np.uint8)
        req = self._start(self.comm.Iallgatherv, [src.bytes(), MPI.BYTE], [flat, (counts, None), MPI.BYTE])

        def finish():
            _unpack(flat, counts, output_list)
        return self._work("ALLGATHER", [req], finish, tensor.numel(), sum(o.numel() for o in output_list),
                          output_list)

    def reduce_scatter_tensor(self, output, tensor, op):
        """CollectiveBackend.reduce_scatter_tensor: MPI Ireduce_scatter_block (half types reduced in float32, AVG
        divides the SUM).
        """
        src = _Host(tensor)
        _check_reduce_dtype(src.arr, op, "reduce_scatter_tensor")
        out = _Host(output, load=False)
        sbuf = _red_buffer(src.arr)
        rbuf = _red_buffer(out.arr) if out.arr.dtype.char in _HALF else out.arr
        req = self._start(self.comm.Ireduce_scatter_block, sbuf, rbuf, _mpi_op(op, sbuf))
        return self._work("_REDUCE_SCATTER_BASE", [req], self._finisher(out, rbuf, op.value == 1),
                          tensor.numel(), output.numel(), [output])

    def gather(self, gather_list, tensor, root):
        """CollectiveBackend.gather: MPI Igatherv of the bytes to ``root``, unpacked into ``gather_list`` there at
        wait.
        """
        MPI = _mpi()
        src = _Host(tensor)
        if self._rank == root:
            counts = [o.numel() * o._dtype.itemsize for o in gather_list]
            flat = np.empty(sum(counts), dtype=np.uint8)
            req = self._start(self.comm.Igatherv, [src.bytes(), MPI.BYTE], [flat, (counts, None), MPI.BYTE], root)
            return self._work("GATHER", [req], lambda: _unpack(flat, counts, gather_list), tensor.numel(),
                              sum(o.numel() for o in gather_list), gather_list)
        req = self._start(self.comm.Igatherv, [src.bytes(), MPI.BYTE], None, root)
        return self._work("GATHER", [req], None, tensor.numel(), 0, [])

    def scatter(self, tensor, scatter_list, root):
        """CollectiveBackend.scatter: MPI Iscatterv of ``scatter_list``'s bytes from ``root`` into each rank's
        ``tensor``.
        """
        MPI = _mpi()
        out = _Host(tensor, load=False)
        if self._rank == root:
            counts = [s.numel() * s._dtype.itemsize for s in scatter_list]
            flat = np.concatenate([_Host(s).bytes() for s in scatter_list]) if scatter_list else \
                np.empty(0, np.uint8)
            req = self._start(self.comm.Iscatterv, [flat, (counts, None), MPI.BYTE], [out.bytes(), MPI.BYTE], root)
        else:
            req = self._start(self.comm.Iscatterv, None, [out.bytes(), MPI.BYTE], root)
        return self._work("SCATTER", [req], out.store, tensor.numel(), tensor.numel(), [tensor])

    def alltoall_single(self, output, tensor, output_split_sizes, input_split_sizes):
        """CollectiveBackend.alltoall_single: MPI Ialltoallv of dim-0 row chunks (equal chunks when the split sizes
        are empty).
        """
        MPI = _mpi()
        src = _Host(tensor)
        out = _Host(output, load=False)

        def spec(t, splits):
            rows = t._shape[0] if t._shape else 1
            row = (t.numel() // rows if rows else 0) * t._dtype.itemsize
            if not splits:
                counts = [rows // self._size * row] * self._size
            else:
                counts = [int(s) * row for s in splits]
            displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
            return counts, displs
        sc, sd = spec(tensor, input_split_sizes)
        rc, rd = spec(output, output_split_sizes)
        req = self._start(self.comm.Ialltoallv, [src.bytes(), (sc, sd), MPI.BYTE], [out.bytes(), (rc, rd), MPI.BYTE])
        return self._work("ALLTOALL_BASE", [req], out.store, tensor.numel(), output.numel(), [output])

    def send(self, tensor, dst, tag):
        """CollectiveBackend.send: MPI Isend of the tensor's bytes to ``dst`` with ``tag``, keeping the host copy
        until completion.
        """
        MPI = _mpi()
        h = _Host(tensor)
        req = self._start(self.comm.Isend, [h.bytes(), MPI.BYTE], dst, tag)
        # the finisher holds the (possibly staged) host copy until the send completed
        return self._work("SEND", [req], lambda h=h: None, tensor.numel(), 0, [tensor], peer=dst)

    def recv(self, tensor, src, tag):
        """CollectiveBackend.recv: MPI Irecv of the bytes from ``src`` (None: MPI.ANY_SOURCE) with ``tag``, stored
        into ``tensor`` at wait.
        """
        MPI = _mpi()
        h = _Host(tensor, load=False)
        req = self._start(self.comm.Irecv, [h.bytes(), MPI.BYTE], MPI.ANY_SOURCE if src is None else src, tag)
        return self._work("RECV", [req], h.store, 0, tensor.numel(), [tensor], peer=src)

    def barrier(self):
        """CollectiveBackend.barrier: a polled MPI Ibarrier."""
        return self._work("BARRIER", [self._start(self.comm.Ibarrier)])

    # -- groups ----------------------------------------------------------------------
    def new_group(self, ranks, timeout):
        """CollectiveBackend.new_group: Comm.Split into the sub-communicator of ``ranks`` (errors returned, not
        fatal); None on a non-member rank.
        """
        MPI = _mpi()
        member = self._rank in ranks
        sub = self.comm.Split(0 if member else MPI.UNDEFINED, ranks.index(self._rank) if member else 0)
        if not member:
            return None
        sub.Set_errhandler(MPI.ERRORS_RETURN)
        return MPIBackend(sub, timeout, [self.peers[r] for r in ranks])

    def shutdown(self):
        """CollectiveBackend.shutdown: free the communicator unless it is broken (errors at teardown are ignored)."""
        if self._broken is None and self.comm is not None:
            try:
                self.comm.Free()
            except Exception:  # noqa: BLE001 - freeing at teardown must not raise
                pass
        self.comm = None


def _unpack(flat, counts, tensors):
    off = 0
    for c, t in zip(counts, tensors):
        h = _Host(t, load=False)
        h.bytes()[...] = flat[off:off + c]
        h.store()
        off += c


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"      # a zombie has exited
    except OSError:
        return True


def create(rank, world_size, timeout, init_method=None):
    """The "mpi" backend's factory: the world communicator of the MPI job this process was launched in.

    The rank and world size come from MPI (``mpiexec -n N``); ``rank`` / ``world_size`` given
    to ``init_process_group`` must agree with them (ValueError otherwise). ``init_method`` is
    not used (MPI's launcher did the rendezvous).
    """
    try:
        MPI = _mpi()
    except ImportError as e:
        raise RuntimeError(f"the 'mpi' backend needs mpi4py and an MPI library: pip install mpi4py mpich ({e})") \
            from None
    _init_mpi(MPI, timeout)
    _watch_launcher_signal()
    world = MPI.COMM_WORLD
    r, n = world.Get_rank(), world.Get_size()
    if rank not in (-1, None) and rank != r:
        raise ValueError(f"init_process_group(backend='mpi'): rank={rank}, but MPI launched this process as rank {r} "
                         f"of {n} (the mpi backend takes the rank and world size from the MPI launcher)")
    if world_size not in (-1, None) and world_size != n:
        raise ValueError(f"init_process_group(backend='mpi'): world_size={world_size}, but MPI launched {n} "
                         f"process(es) (the mpi backend takes the rank and world size from the MPI launcher)")
    comm = world.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    peers = comm.allgather((_host_id(), os.getpid()))
    backend = MPIBackend(comm, timeout, peers)
    global _exit_barrier_installed
    if not _exit_barrier_installed:
        _exit_barrier_installed = True
        exit_comm = world.Dup()
        exit_comm.Set_errhandler(MPI.ERRORS_RETURN)
        atexit.register(_exit_barrier, MPIBackend(exit_comm, timeout, peers))
    return backend


_exit_barrier_installed = False


def _exit_barrier(backend):
    """At interpreter exit, before mpi4py's MPI_Finalize: wait (up to the group's timeout) until every
    rank reached its exit. MPI_Finalize hangs forever when a peer died without it; then this rank
    leaves without it (exit status 1) and says why, rather than hanging."""
    if backend._broken is not None:
        return
    if getattr(sys, "last_value", None) is not None:
        # dying of an uncaught exception: the other ranks are likely blocked in a collective with this
        # one, so no barrier; leave at once (mpiexec then ends the job, or the others time out)
        _exit_without_finalize()
    try:
        req = backend.comm.Ibarrier()
        deadline = time.monotonic() + backend.timeout.total_seconds()
        next_check = time.monotonic() + 0.5
        while not req.Test():
            now = time.monotonic()
            if now > next_check:
                next_check = now + 0.5
                missing = [r for r, _ in backend._dead_peers()]
                if missing:
                    raise TimeoutError(f"rank(s) {', '.join(map(str, missing))} exited without finishing the job")
            if now > deadline:
                raise TimeoutError(f"not every rank reached the end of the job within the timeout "
                                   f"({backend.timeout.total_seconds():.0f} s)")
            time.sleep(1e-3)
    except Exception as e:  # noqa: BLE001 - leave without MPI_Finalize, which would hang
        print(f"ember.distributed: [Rank {backend._rank}] exiting without MPI_Finalize: {e}", file=sys.stderr)
        _exit_without_finalize()
