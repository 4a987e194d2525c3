"""Collective backends: the contract a backend implements, the registry, and work handles.

A collective backend moves the bytes of contiguous tensors between the ranks of one
process group. ``ember.distributed``'s front end checks every argument (types,
contiguity, sizes, ranks) before it calls a backend, so a backend only transports.
ember ships two: ``"mpi"`` (mpi4py, any device, staging through host memory) and
``"nccl"`` (cupy.cuda.nccl, cuda tensors). A plugin registers its own for its device
type through ``registry.register_collective_backend`` in ``ember_register``, or a user
calls ``ember.distributed.Backend.register_backend``.
"""
from __future__ import annotations

import datetime
import time

__all__ = ["ReduceOp", "CollectiveBackend", "Work", "DistBackendError", "register_backend",
           "unregister_backend", "backend_entry", "registered_backends"]


class DistBackendError(RuntimeError):
    """A collective failed in its backend: a peer died, it timed out, or the transport
    reported an error (matches torch.distributed.DistBackendError, a RuntimeError)."""


class ReduceOp:
    """Reduction operations for ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor``
    (matches torch.distributed.ReduceOp: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``,
    ``MAX``, ``BAND``, ``BOR``, ``BXOR``)."""

    class RedOpType:
        """One reduction operation (name, value); equal to another RedOpType or ReduceOp of the same value (matches
        torch.distributed.ReduceOp.RedOpType).
        """
        __slots__ = ("name", "value")

        def __init__(self, name, value):
            self.name, self.value = name, value

        def __repr__(self):
            return f"<RedOpType.{self.name}: {self.value}>"

        def __eq__(self, other):
            if isinstance(other, ReduceOp):
                other = other.op
            return isinstance(other, ReduceOp.RedOpType) and other.value == self.value

        def __hash__(self):
            return hash(self.value)

    SUM = RedOpType("SUM", 0)
    AVG = RedOpType("AVG", 1)
    PRODUCT = RedOpType("PRODUCT", 2)
    MIN = RedOpType("MIN", 3)
    MAX = RedOpType("MAX", 4)
    BAND = RedOpType("BAND", 5)
    BOR = RedOpType("BOR", 6)
    BXOR = RedOpType("BXOR", 7)

    def __init__(self, op):
        self.op = op.op if isinstance(op, ReduceOp) else op

    def __eq__(self, other):
        return self.op == other

    def __hash__(self):
        return hash(self.op)


_OPS = {o.name: o for o in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX,
                            ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)}


def canonical_op(op) -> "ReduceOp.RedOpType":
    """``op`` as a RedOpType; ValueError for anything else."""
    if isinstance(op, ReduceOp):
        op = op.op
    if isinstance(op, ReduceOp.RedOpType):
        return op
    if isinstance(op, str) and op.upper() in _OPS:
        return _OPS[op.upper()]
    raise ValueError(f"Invalid reduce op {op!r}: expected a torch.distributed.ReduceOp")


class Work:
    """The handle of a collective started with ``async_op=True`` (matches
    torch.distributed.Work): ``wait()`` blocks until it is done (raising its error),
    ``is_completed()`` polls, ``is_success()``, ``exception()``, ``result()``.

    A backend subclasses it and implements ``_poll() -> bool`` (test for completion without
    blocking; raise on a transport error) and optionally ``_finish()`` (runs once on
    completion: copies staged results back into the output tensors). ``wait`` polls until
    done or until the group's timeout, then raises ``DistBackendError`` naming the
    collective, its sequence number, this rank and, where the backend knows, the ranks
    that did not take part.
    """

    #: seconds of busy polling before the waiter yields the cpu every 64 polls (yielding early costs a
    #: scheduler time slice, ~4 ms, whenever other processes compete for the cores), and before it
    #: sleeps 1 ms between polls (a long wait: a slow rank; no need to burn a core)
    SPIN_S = 20e-3
    YIELD_S = 1.0

    def __init__(self, op_type: str, seq: int, rank: int, timeout: datetime.timedelta, numel_in: int = 0,
                 numel_out: int = 0, result=None):
        self.op_type = op_type        # "ALLREDUCE", "BROADCAST", ...
        self.seq = seq                # the group's collective sequence number
        self.rank = rank              # this process's rank in the group
        self.timeout = timeout
        self.numel_in, self.numel_out = numel_in, numel_out
        self._result = result if result is not None else []
        self._done = False
        self._error = None
        self._start = time.monotonic()

    # -- what a backend implements ------------------------------------------------
    def _poll(self) -> bool:
        raise NotImplementedError(f"{type(self).__name__}: need _poll")

    def _finish(self) -> None:
        pass

    def _missing_ranks(self) -> str:
        """Text naming the ranks that did not join (for the timeout message); '' if unknown."""
        return ""

    # -- the public handle ----------------------------------------------------------
    def __repr__(self):
        return (f"Work{self.backend_name.upper()}(SeqNum={self.seq}, OpType={self.op_type}, "
                f"NumelIn={self.numel_in}, NumelOut={self.numel_out}, "
                f"Timeout(ms)={int(self.timeout.total_seconds() * 1000)})")

    backend_name = ""

    def _check(self) -> bool:
        if self._done:
            return True
        if self._error is not None:
            raise self._error
        try:
            done = self._poll()
        except DistBackendError as e:
            self._error = e
            raise
        except Exception as e:  # noqa: BLE001 - a transport error becomes the collective's error
            self._error = DistBackendError(f"[Rank {self.rank}] {self!r} failed: {type(e).__name__}: {e}")
            raise self._error from e
        if done:
            self._finish()
            self._done = True
        return done

    def is_completed(self) -> bool:
        """Whether the collective finished, successfully or with an error (polls once; never blocks;
        ``wait()`` or ``exception()`` tell the error), as torch.distributed.Work.is_completed."""
        try:
            return self._check()
        except RuntimeError:
            return True

    def is_success(self) -> bool:
        """Whether it completed without error (polls once)."""
        try:
            return self._check()
        except RuntimeError:
            return False

    def exception(self):
        """The error it failed with, or None."""
        return self._error

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Block until the collective completed; returns True (matches torch.distributed.Work.wait).

        :param timeout: overrides the group's timeout for this wait.
        :raises DistBackendError: (a RuntimeError) when it fails or does not finish in time; the
            message names the collective, its sequence number, this rank and the ranks it waited for.
        """
        if self._check():
            return True
        limit = (timeout or self.timeout).total_seconds()
        spin_until = time.monotonic() + getattr(self, "spin_s", self.SPIN_S)
        yield_until = spin_until + self.YIELD_S
        polls = 0
        while True:
            if self._check():
                return True
            polls += 1
            if polls & 63 == 0:
                now = time.monotonic()
                if now - self._start > limit:
                    ms = int((now - self._start) * 1000)
                    missing = self._missing_ranks()
                    self._error = DistBackendError(
                        f"[Rank {self.rank}] Watchdog caught collective operation timeout: {self!r} ran for {ms} "
                        f"milliseconds before timing out." + (f" {missing}" if missing else "")
                        + " (If the ranks called different collectives or passed tensors of different sizes, "
                        "TORCH_DISTRIBUTED_DEBUG=DETAIL reports the mismatch.)")
                    self._on_fatal()
                    raise self._error
                if now > yield_until:
                    time.sleep(1e-3)
                elif now > spin_until:
                    time.sleep(0)       # yield the core (more ranks than cores), keep polling

    def _on_fatal(self) -> None:
        """Called once when the collective timed out (the backend marks its communicator broken)."""

    def result(self) -> list:
        """The output tensors (after ``wait``)."""
        return self._result

    def get_future(self):
        """Not supported: always raises NotImplementedError (use ``wait()``)."""
        raise NotImplementedError("Work.get_future() is not supported by ember's collective backends; use wait()")


class CompletedWork(Work):
    """A work handle that is already done (for operations a backend runs synchronously)."""

    def __init__(self, op_type="", seq=0, rank=0, timeout=datetime.timedelta(seconds=1), result=None,
                 backend_name=""):
        super().__init__(op_type, seq, rank, timeout, result=result)
        self.backend_name = backend_name
        self._done = True

    def _poll(self):
        return True


class CollectiveBackend:
    """The contract of a collective backend (subclass it; register it with
    ``register_backend`` / ``registry.register_collective_backend``).

    One instance serves one process group. Each method takes *contiguous* tensors on the
    backend's device type, ranks within the group (``0 .. size-1``), a canonical
    ``ReduceOp.RedOpType`` for reductions, and returns a ``Work`` (``CompletedWork`` for
    a synchronous implementation). The front end has already checked the arguments;
    outputs must hold the results once the work's ``wait()`` returned.
    """

    #: the backend's name ("mpi", "nccl", ...)
    name: str = ""

    def __init__(self, rank: int, size: int, timeout: datetime.timedelta):
        self._rank, self._size, self.timeout = rank, size, timeout
        self.seq = 0

    def rank(self) -> int:
        """This process's rank within the group."""
        return self._rank

    def size(self) -> int:
        """The number of ranks in the group."""
        return self._size

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def agree(self, values: list, device="cpu") -> bool:
        """Whether every rank passed the same list of integers (the front end's always-on check
        that all ranks call the same collective with the same shapes). Blocking, bounded by the
        timeout. This default runs one MAX ``allreduce`` of ``values + [-v for v in values]`` on
        ``device``; a backend may override it with something cheaper (the mpi backend does)."""
        import ember
        buf = ember.tensor(list(values) + [-v for v in values], dtype=ember.int64, device=device)
        self.allreduce(buf, ReduceOp.MAX).wait()
        v, n = buf.tolist(), len(values)
        return all(v[i] == -v[n + i] for i in range(n))

    # -- collectives (each returns a Work) -------------------------------------------
    def allreduce(self, tensor, op) -> Work:
        """Reduce ``tensor`` with ``op`` over all ranks, in place on every rank; required, the base raises
        NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need allreduce")

    def broadcast(self, tensor, root: int) -> Work:
        """Copy ``tensor`` of rank ``root`` into ``tensor`` on every rank; required, the base raises
        NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need broadcast")

    def reduce(self, tensor, root: int, op) -> Work:
        """Reduce ``tensor`` with ``op`` into rank ``root``'s tensor; required, the base raises NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need reduce")

    def allgather(self, output_list, tensor) -> Work:
        """Gather every rank's ``tensor`` into ``output_list`` (one tensor per rank) on every rank; required, the base
        raises NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need allgather")

    def allgather_into_tensor(self, output, tensor) -> Work:
        """Gather every rank's ``tensor`` into ``output``, concatenated along dim 0 in rank order; required, the base
        raises NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need allgather_into_tensor")

    def reduce_scatter_tensor(self, output, tensor, op) -> Work:
        """Reduce ``tensor`` over ranks with ``op`` and give rank r the r-th dim-0 chunk in ``output``; required, the
        base raises NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need reduce_scatter_tensor")

    def gather(self, gather_list, tensor, root: int) -> Work:
        """Gather every rank's ``tensor`` into ``gather_list`` on rank ``root``; required, the base raises
        NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need gather")

    def scatter(self, tensor, scatter_list, root: int) -> Work:
        """Give rank r the r-th tensor of ``scatter_list`` from rank ``root``, written into ``tensor``; required, the
        base raises NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need scatter")

    def alltoall_single(self, output, tensor, output_split_sizes, input_split_sizes) -> Work:
        """Exchange dim-0 chunks of ``tensor`` (sizes ``input_split_sizes``, None: equal) into ``output``
        (``output_split_sizes``); required, the base raises NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need alltoall_single")

    def send(self, tensor, dst: int, tag: int) -> Work:
        """Send ``tensor`` to rank ``dst`` with ``tag``; required, the base raises NotImplementedError."""
        raise NotImplementedError(f"{self.name}: need send")

    def recv(self, tensor, src: int | None, tag: int) -> Work:
        """Receive into ``tensor`` from ``src`` (None: any rank); the work's ``source_rank`` is the sender."""
        raise NotImplementedError(f"{self.name}: need recv")

    def barrier(self) -> Work:
        """A work done once every rank has entered the barrier; required, the base raises NotImplementedError."""
        raise NotImplementedError(f"{self.name}: need barrier")

    # -- groups and lifetime --------------------------------------------------------
    def new_group(self, ranks: list, timeout: datetime.timedelta):
        """A backend for the sub-group of ``ranks`` (group ranks of this backend, sorted); called
        by every rank of this group; returns None on a rank that is not in ``ranks``."""
        raise NotImplementedError(f"{self.name}: need new_group")

    def shutdown(self) -> None:
        """Release the backend's resources (``destroy_process_group``)."""


# ---------------------------------------------------------------------------------------
# registry: backend name -> (factory, device types)
# ---------------------------------------------------------------------------------------

class _Entry:
    __slots__ = ("name", "factory", "devices", "owner", "is_available")

    def __init__(self, name, factory, devices, owner, is_available):
        self.name, self.factory, self.devices, self.owner = name, factory, devices, owner
        self.is_available = is_available


_backends: dict = {}


def register_backend(name: str, factory, *, devices=None, owner: str = "user", is_available=None):
    """Register collective backend ``name``.

    :param factory: ``factory(rank, world_size, timeout, init_method) -> CollectiveBackend``,
        called by ``init_process_group`` on every rank.
    :param devices: the device types it serves (e.g. ``["vdev"]``); None: every device type.
    :param is_available: optional ``() -> bool`` (its library is importable) for ``is_<name>_available``.
    :raises ValueError: when ``name`` is already registered (naming its owner).
    """
    name = name.lower()
    if name in _backends:
        raise ValueError(f"collective backend '{name}' is already registered (by {_backends[name].owner})")
    devs = None if devices is None else tuple(devices if not isinstance(devices, str) else [devices])
    _backends[name] = _Entry(name, factory, devs, owner, is_available)


def unregister_backend(name: str) -> None:
    """Remove collective backend ``name`` (case-insensitive); no error when it is not registered."""
    _backends.pop(name.lower(), None)


def backend_entry(name: str) -> _Entry:
    """The registered backend ``name``; plugins are loaded first. ValueError if unknown."""
    name = name.lower()
    if name not in _backends:
        from .. import _registry
        _registry.ensure_loaded()
    try:
        return _backends[name]
    except KeyError:
        hint = f" (the '{name}' backend comes with {_PROVIDERS[name]}: " \
               f"{_registry.install_advice(_PROVIDERS[name][len('ember-'):])})" if name in _PROVIDERS else ""
        raise ValueError(f"Invalid backend: '{name}'; registered collective backends: "
                         f"{', '.join(sorted(_backends)) or 'none'}{hint}") from None


#: backends that plugins of this project provide, for the "Invalid backend" message
_PROVIDERS = {"nccl": "ember-cuda"}


def registered_backends() -> dict:
    """A copy of the registry: backend name -> its entry (factory, device types, owner, is_available)."""
    return dict(_backends)
