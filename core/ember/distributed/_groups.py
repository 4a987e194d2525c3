"""Process groups (matches torch.distributed's group functions): the default group, sub-groups,
backend availability, ranks.

A ``ProcessGroup`` maps each device type to the ``CollectiveBackend`` instance that carries its
collectives (``"cpu:mpi,cuda:nccl"``); ``init_process_group`` creates the default one.
"""
from __future__ import annotations

import datetime
import os

from ._backend import backend_entry
from . import _backend

__all__ = ["Backend", "ProcessGroup", "GroupMember", "group", "init_process_group", "destroy_process_group",
           "is_initialized", "is_mpi_available", "is_nccl_available", "is_gloo_available", "is_backend_available",
           "get_rank", "get_world_size", "get_backend", "new_group", "get_global_rank", "get_group_rank",
           "get_process_group_ranks"]


class Backend(str):
    """A backend name (matches torch.distributed.Backend): ``Backend("MPI") == "mpi"``.
    ``Backend.register_backend`` adds a collective backend."""

    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"
    UNDEFINED = "undefined"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return super().__new__(cls, name.lower())

    @classmethod
    def register_backend(cls, name, func, extended_api=False, devices=None):
        """Register collective backend ``name`` (matches torch.distributed.Backend.register_backend).

        :param func: ``func(rank, world_size, timeout, init_method) -> CollectiveBackend``.
        :param devices: the device types it serves (str or list); None: all.
        :raises ValueError: if the name is taken. ``extended_api`` is accepted and ignored.
        """
        _backend.register_backend(name, func, devices=devices, owner="Backend.register_backend")
        setattr(cls, name.upper(), name.lower())


class ProcessGroup:
    """A set of ranks and the backends that carry their collectives, one per device type.

    ``rank()`` / ``size()`` are this process's rank in the group and the group's size;
    ``ranks`` the members' global ranks, in group-rank order.
    """

    def __init__(self, backends: dict, ranks: list, global_rank: int, name: str, backend_str: str,
                 timeout: datetime.timedelta):
        self._backends = backends      # device type (or "*") -> CollectiveBackend
        self.ranks = ranks
        self._rank = ranks.index(global_rank)
        self._name = name
        self._backend_str = backend_str
        self.timeout = timeout
        self._seq = 0
        self._by_type = {}             # device type -> backend, resolved

    def rank(self) -> int:
        """This process's rank within the group."""
        return self._rank

    def size(self) -> int:
        """The number of ranks in the group."""
        return len(self.ranks)

    def name(self) -> str:
        """The group's name."""
        return self._name

    def __repr__(self):
        return f"ProcessGroup(name={self._name!r}, backend={self._backend_str!r}, ranks={self.ranks})"

    def _get_backend(self, device_type: str):
        b = self._by_type.get(device_type)
        if b is None:
            b = self._backends.get(device_type) or self._backends.get("*")
            if b is None:
                raise RuntimeError(f"No backend type associated with device type {device_type}")
            self._by_type[device_type] = b
        return b

    def _unique_backends(self):
        seen = []
        for b in self._backends.values():
            if all(b is not s for s in seen):
                seen.append(b)
        return seen


class _GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


GroupMember = _GroupMember


class _Group:
    """``group.WORLD``: the default process group (matches torch.distributed.group)."""

    @property
    def WORLD(self):
        return _state.world


group = _Group()


class _State:
    world: ProcessGroup | None = None
    groups: list = []
    check: str = "QUICK"      # QUICK | DETAIL | OFF: the collective-mismatch check (init_process_group)


_state = _State()


# ---------------------------------------------------------------------------------------
# availability
# ---------------------------------------------------------------------------------------

def is_backend_available(backend: str) -> bool:
    """Whether the collective backend ``backend`` is registered and its library importable."""
    try:
        e = backend_entry(backend)
    except ValueError:
        return False
    return True if e.is_available is None else bool(e.is_available())


def is_mpi_available() -> bool:
    """Whether the "mpi" backend can be used (mpi4py importable)."""
    return is_backend_available("mpi")


def is_nccl_available() -> bool:
    """Whether the "nccl" backend can be used (cupy with NCCL importable)."""
    return is_backend_available("nccl")


def is_gloo_available() -> bool:
    """False: ember has no gloo backend (use "mpi")."""
    return False


def is_initialized() -> bool:
    """Whether the default process group was initialised."""
    return _state.world is not None


def _world() -> ProcessGroup:
    if _state.world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _state.world


# ---------------------------------------------------------------------------------------
# process groups
# ---------------------------------------------------------------------------------------

def _parse_backend(backend):
    """``"mpi"`` or ``"cpu:mpi,cuda:nccl"`` -> ({device type or "*": name}, canonical string)."""
    if backend is None:
        backend = "mpi,cuda:nccl" if is_nccl_available() else "mpi"
    if not isinstance(backend, str):
        raise ValueError(f"Backend name must be a string, but got: {backend!r}")
    mapping = {}
    for item in backend.lower().replace(" ", "").split(","):
        if not item:
            continue
        if ":" in item:
            dev, name = item.split(":", 1)
            backend_entry(name)
            mapping[dev] = name
        else:
            e = backend_entry(item)
            for dev in (e.devices or ("*",)):
                mapping.setdefault(dev, item)
    if not mapping:
        raise ValueError(f"Invalid backend: '{backend}'")
    return mapping, backend.lower()


def _timeout(timeout):
    if timeout is None:
        return datetime.timedelta(minutes=30)
    if isinstance(timeout, (int, float)):
        return datetime.timedelta(seconds=timeout)
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    return timeout


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None) -> None:
    """Initialise the default process group (matches torch.distributed.init_process_group).

    :param backend: ``"mpi"`` (any device; default), ``"nccl"`` (cuda), a registered plugin
        backend, or a per-device list ``"cpu:mpi,cuda:nccl"``; None picks "mpi" (and "nccl"
        for cuda tensors when available).
    :param init_method: rendezvous URL; the "mpi" backend ignores it (the MPI launcher did the
        rendezvous), "nccl" accepts ``"file://PATH"`` when not launched by MPI.
    :param timeout: ``datetime.timedelta`` (or seconds) after which a collective that has not
        completed raises ``DistBackendError``; default 30 minutes, as PyTorch.
    :param world_size, rank: optional for "mpi" (taken from MPI; ValueError if they disagree).
    :raises ValueError: when already initialised ("trying to initialize the default process
        group twice!") or the backend name is unknown; RuntimeError when the backend's library is
        missing.
    """
    if _state.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("init_process_group(store=...) is not supported by ember's backends; the mpi backend "
                         "rendezvouses through the MPI launcher")
    timeout = _timeout(timeout)
    mapping, bstr = _parse_backend(backend)
    instances = {}
    backends = {}
    try:
        for dev, name in mapping.items():
            if name not in instances:
                instances[name] = backend_entry(name).factory(rank, world_size, timeout, init_method)
            backends[dev] = instances[name]
    except Exception:
        for b in instances.values():
            b.shutdown()
        raise
    sizes = {(b.rank(), b.size()) for b in instances.values()}
    if len(sizes) != 1:
        raise RuntimeError(f"init_process_group: the backends disagree on this process's (rank, world size): "
                           f"{sorted(sizes)}")
    r, n = sizes.pop()
    _state.world = ProcessGroup(backends, list(range(n)), r, "0", bstr, timeout)
    _state.groups = [_state.world]
    _GroupMember.WORLD = _state.world
    # the check that all ranks call the same collective with the same shapes: a one-message MAX
    # all-reduce by default, a full gather of each rank's signature with DETAIL, none with
    # EMBER_DISTRIBUTED_CHECK=0 (PyTorch checks only with DETAIL; a silent wrong result is worse)
    flag = (os.environ.get("TORCH_DISTRIBUTED_DEBUG") or os.environ.get("EMBER_DISTRIBUTED_DEBUG") or "").upper()
    _state.check = "DETAIL" if flag == "DETAIL" else (
        "OFF" if os.environ.get("EMBER_DISTRIBUTED_CHECK", "1") == "0" else "QUICK")


def destroy_process_group(group=None) -> None:
    """Destroy ``group`` (default: all groups, the default one included), releasing its backends
    (matches torch.distributed.destroy_process_group)."""
    if group is None or group is _state.world:
        for g in _state.groups:
            for b in g._unique_backends():
                b.shutdown()
        _state.world = None
        _state.groups = []
        _GroupMember.WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    for b in group._unique_backends():
        b.shutdown()
    _state.groups = [g for g in _state.groups if g is not group]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A process group of ``ranks`` (global ranks; default all), matches torch.distributed.new_group.

    Every rank of the default group must call it, in the same order, with the same ranks.
    Returns the group, or ``GroupMember.NON_GROUP_MEMBER`` on a rank that is not in ``ranks``.

    :raises ValueError: for a rank outside the world ("The new group's rank should be within
        the world_size set by init_process_group"); RuntimeError for a backend other than
        the default group's.
    """
    world = _world()
    ranks = sorted(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError("The new group's rank should be within the world_size set by init_process_group")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: duplicate ranks in {ranks}")
    if backend is not None and _parse_backend(backend)[1] != world._backend_str:
        raise RuntimeError(f"new_group(backend={backend!r}): ember creates sub-groups on the default group's "
                           f"backend ({world._backend_str!r})")
    timeout = _timeout(timeout) if timeout is not None else world.timeout
    subs = {}
    backends = {}
    for dev, b in world._backends.items():
        key = id(b)
        if key not in subs:
            subs[key] = b.new_group(ranks, timeout)
        backends[dev] = subs[key]
    if world.rank() not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(backends, ranks, world.rank(), str(len(_state.groups)), world._backend_str, timeout)
    _state.groups.append(g)
    return g


def _group(group):
    return _world() if group is None else group


def _not_member(group) -> bool:
    return group is GroupMember.NON_GROUP_MEMBER


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (default: the world); -1 when it is not a member."""
    if _not_member(group):
        return -1
    return _group(group).rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (default: the world); -1 when this process is not a member."""
    if _not_member(group):
        return -1
    return _group(group).size()


def get_backend(group=None) -> str:
    """The backend string of ``group`` ("mpi", "cpu:mpi,cuda:nccl", ...)."""
    if _not_member(group):
        raise ValueError("Invalid process group specified")
    return Backend(_group(group)._backend_str)


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s members, in group-rank order."""
    return list(_group(group).ranks)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``."""
    g = _group(group)
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g.ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank in ``group`` of global rank ``global_rank``."""
    g = _group(group)
    try:
        return g.ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {g}") from None
