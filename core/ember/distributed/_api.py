"""The torch.distributed collectives (the front end).

Each collective checks its arguments here (same exception classes and messages as
PyTorch), picks the backend that serves the tensors' device type in the group, and
calls it. A backend (``_backend.CollectiveBackend``) only moves bytes. Process groups
are in ``_groups.py``.
"""
from __future__ import annotations

import pickle
import zlib

from ._backend import _OPS, DistBackendError, ReduceOp, canonical_op
from ._groups import *  # noqa: F401,F403 - re-exported: ember.distributed's names come from here
from ._groups import __all__ as _groups_all
from ._groups import _state, _group, _not_member, get_group_rank

__all__ = list(_groups_all) + [
    "barrier", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
    "gather", "scatter", "send", "recv", "isend", "irecv", "all_to_all_single", "all_gather_object",
    "broadcast_object_list", "P2POp", "batch_isend_irecv"]

# ---------------------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------------------

def _check_tensor(t, name):
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(t)} instead.")
    if not t.is_contiguous():
        raise ValueError("Tensors must be contiguous")
    if t._layout.name != "strided":
        raise RuntimeError(f"collectives support only strided tensors, got layout {t._layout}")


def _check_list(ts, name):
    from .._tensor import Tensor
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(ts)} instead.")
    for t in ts:
        _check_tensor(t, name)


def _same_device(*ts):
    dev = None
    for t in ts:
        if dev is None:
            dev = t._device
        elif t._device != dev:
            raise ValueError(f"Expected all tensors to be on the same device, but found at least two devices, "
                             f"{dev} and {t._device}!")


def _peer(g, rank, group_rank, what):
    """The group rank for a global ``rank`` or a ``group_rank`` argument."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank is not None:
        if not 0 <= group_rank < g.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {g}")
        return group_rank
    if rank is None:
        rank = 0
    if g is _state.world:
        if not 0 <= rank < g.size():
            raise ValueError(f"Invalid {what} rank {rank}: the world has ranks 0..{g.size() - 1}")
        return rank
    return get_group_rank(g, rank)


_OP_CODES = {"ALLREDUCE": 1, "BROADCAST": 2, "REDUCE": 3, "ALLGATHER": 4, "_ALLGATHER_BASE": 5,
             "_REDUCE_SCATTER_BASE": 6, "GATHER": 7, "SCATTER": 8, "ALLTOALL_BASE": 9, "BARRIER": 10}


def _signature(g, op_type, tensors, op=None, root=None):
    """What every rank must agree on for this collective: [sequence number, op type, dtype, device
    type, reduce op (value + 1, 0: none), root (group rank + 1, 0: none), ndim, shape (8 dims,
    padded)]. all_to_all_single's dim 0 may differ across ranks (uneven splits), so it is left out
    there."""
    t0 = tensors[0] if tensors else None
    shape = list(t0._shape) if t0 is not None else []
    if op_type == "ALLTOALL_BASE":
        shape = shape[1:]
    return [g._seq, _OP_CODES.get(op_type, 0), zlib.crc32(str(t0._dtype).encode()) if t0 is not None else 0,
            zlib.crc32(t0._device.type.encode()) if t0 is not None else 0,
            0 if op is None else op.value + 1, 0 if root is None else root + 1,
            len(shape)] + (shape + [0] * 8)[:8]


_SIG_SHAPE = 7       # where the shape starts in a signature (its ndim is just before)


def _quick_check(g, op_type, tensors, device="cpu", op=None, root=None):
    """Always on: every rank's backend agrees on the call's signature with one tiny MAX
    all-reduce of it and its negation (max == -max(-x) iff all equal) - one small-message
    latency. On a mismatch every rank runs ``_fingerprint``, which gathers the signatures and
    raises the described error on every rank."""
    dev = tensors[0]._device if tensors else device
    try:
        same = g._get_backend(device).agree(_signature(g, op_type, tensors, op, root), dev)
    except DistBackendError as e:      # a dead or late peer: name the collective the user called
        raise DistBackendError(f"{e} (in the check that every rank calls {op_type} SeqNum={g._seq} with the same "
                               f"arguments)") from None
    if not same:
        _fingerprint(g, op_type, tensors, device, op, root)


def _fingerprint(g, op_type, tensors, device="cpu", op=None, root=None):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL (or a mismatch found by ``_quick_check``): every rank checks
    that all call the same collective with tensors of the same shape, dtype and device type (one
    small all_gather), and raises PyTorch's "Detected mismatch between collectives" message (with
    the reduce op and the root where they differ, which PyTorch does not check)."""
    import ember
    rec = _signature(g, op_type, tensors, op, root)
    dev = tensors[0]._device if tensors else device
    mine = ember.tensor(rec, dtype=ember.int64, device=dev)
    allr = ember.empty(g.size() * len(rec), dtype=ember.int64, device=dev)
    g._get_backend(device).allgather_into_tensor(allr, mine).wait()
    rows = allr.view(g.size(), len(rec)).tolist()
    mine = rows[g.rank()]
    if all(row == mine for row in rows):
        return

    from .. import _dtype, _registry
    names = {v: k for k, v in _OP_CODES.items()}
    dtypes = {zlib.crc32(str(d).encode()): str(d).replace("ember.", "") for d in _dtype._BY_NAME.values()}
    devices = {zlib.crc32(n.encode()): n for n in _registry.device_types}

    ops = {o.value + 1: o.name for o in _OPS.values()}

    def describe(row):
        shp = row[_SIG_SHAPE:_SIG_SHAPE + row[_SIG_SHAPE - 1]]
        dt = dtypes.get(row[2], f"<dtype #{row[2]}>") if row[2] else "none"
        dv = devices.get(row[3], f"<device #{row[3]}>") if row[3] else "none"
        extra = (f", ReduceOp={ops.get(row[4], row[4])}" if row[4] else "") + (f", Root={row[5] - 1}" if row[5] else "")
        return (f"CollectiveFingerPrint(SequenceNumber={row[0]}, OpType={names.get(row[1], row[1])}, "
                f"TensorShape={shp}, TensorDtypes={dt}, TensorDeviceTypes={dv}{extra})")
    r = next(r for r, row in enumerate(rows) if row != mine)
    raise RuntimeError(f"Detected mismatch between collectives on ranks. Rank {g.rank()} is running collective: "
                       f"{describe(mine)}, but Rank {r} is running collective: {describe(rows[r])}.")


def _check_call(g, op_type, tensors, dev, op=None, root=None):
    """The cross-rank check of one collective (see ``_quick_check``), unless turned off."""
    if _state.check == "OFF":
        return
    g._seq += 1
    if _state.check == "DETAIL":
        _fingerprint(g, op_type, tensors, dev, op, root)
    else:
        _quick_check(g, op_type, tensors, dev, op, root)


def _run(g, op_type, tensors, call, async_op, op=None, root=None):
    dev = tensors[0]._device.type if tensors else "cpu"
    _check_call(g, op_type, tensors, dev, op, root)
    work = call(g._get_backend(dev))
    if async_op:
        return work
    work.wait()
    return None


# ---------------------------------------------------------------------------------------
# collectives
# ---------------------------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across all ranks of ``group`` in place; every rank gets the result
    (matches torch.distributed.all_reduce).

    :param tensor: a contiguous tensor, same shape and dtype on every rank.
    :param op: ``ReduceOp.SUM`` (default), ``AVG`` (floating / complex only), ``PRODUCT``,
        ``MIN``, ``MAX`` (not complex), ``BAND``/``BOR``/``BXOR`` (integers, bool).
    :returns: a ``Work`` when ``async_op``, else None.
    :raises TypeError: not a tensor; ValueError: non-contiguous ("Tensors must be contiguous") or
        an op the dtype does not support; DistBackendError: a peer failed or the timeout passed.
    """
    _check_tensor(tensor, "tensor")
    op = canonical_op(op)
    if _not_member(group):
        return None
    g = _group(group)
    return _run(g, "ALLREDUCE", [tensor], lambda b: b.allreduce(tensor, op), async_op, op=op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` from rank ``src`` (a global rank; or ``group_src`` in the group) to every rank
    of ``group`` (matches torch.distributed.broadcast)."""
    _check_tensor(tensor, "tensor")
    if _not_member(group):
        return None
    g = _group(group)
    root = _peer(g, src, group_src, "src")
    return _run(g, "BROADCAST", [tensor], lambda b: b.broadcast(tensor, root), async_op, root=root)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across ranks into rank ``dst``'s tensor; the other ranks' tensors are
    unchanged (matches torch.distributed.reduce)."""
    _check_tensor(tensor, "tensor")
    op = canonical_op(op)
    if _not_member(group):
        return None
    g = _group(group)
    root = _peer(g, dst, group_dst, "dst")
    return _run(g, "REDUCE", [tensor], lambda b: b.reduce(tensor, root, op), async_op, op=op, root=root)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather ``tensor`` from every rank into ``tensor_list`` (one tensor per rank, in rank
    order), matches torch.distributed.all_gather.

    :raises ValueError: when ``len(tensor_list)`` is not the group size, or dtypes differ.
    """
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    if _not_member(group):
        return None
    g = _group(group)
    if len(tensor_list) != g.size():
        raise ValueError(f"all_gather: tensor_list must have one tensor per rank ({g.size()}), got "
                         f"{len(tensor_list)}")
    for t in tensor_list:
        if t._dtype is not tensor._dtype:
            raise ValueError(f"all_gather: output tensors must have the input's dtype {tensor._dtype}, got {t._dtype}")
    _same_device(tensor, *tensor_list)
    return _run(g, "ALLGATHER", [tensor], lambda b: b.allgather(list(tensor_list), tensor), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's ``input_tensor`` into ``output_tensor`` (concatenated along dim 0, or
    stacked), matches torch.distributed.all_gather_into_tensor.

    :raises ValueError: "output tensor size must be equal to world_size times input tensor size"
        and for differing dtypes.
    """
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    if _not_member(group):
        return None
    g = _group(group)
    if output_tensor.numel() != input_tensor.numel() * g.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    if output_tensor._dtype is not input_tensor._dtype:
        raise ValueError("output tensor must have the same type as input tensor")
    _same_device(output_tensor, input_tensor)
    return _run(g, "_ALLGATHER_BASE", [input_tensor], lambda b: b.allgather_into_tensor(output_tensor, input_tensor),
                async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` across ranks and give rank ``i`` the ``i``-th of ``size`` equal chunks
    (matches torch.distributed.reduce_scatter_tensor).

    :raises ValueError: "input tensor must be the same size as output size times world size".
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    op = canonical_op(op)
    if _not_member(group):
        return None
    g = _group(group)
    if input.numel() != output.numel() * g.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    if output._dtype is not input._dtype:
        raise ValueError("output tensor must have the same type as input tensor")
    _same_device(output, input)
    return _run(g, "_REDUCE_SCATTER_BASE", [input], lambda b: b.reduce_scatter_tensor(output, input, op), async_op,
                op=op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gather ``tensor`` from every rank into ``gather_list`` on rank ``dst`` (matches
    torch.distributed.gather). ``gather_list`` must be given on ``dst`` only.

    :raises ValueError: "Argument ``gather_list`` must be specified on destination rank." /
        "Argument ``gather_list`` must NOT be specified on non-destination ranks."
    """
    _check_tensor(tensor, "tensor")
    if gather_list:
        _check_list(gather_list, "gather_list")
    else:
        gather_list = []
    if _not_member(group):
        return None
    g = _group(group)
    root = _peer(g, dst, group_dst, "dst")
    if g.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        if len(gather_list) != g.size():
            raise ValueError(f"gather: gather_list must have one tensor per rank ({g.size()}), got {len(gather_list)}")
        for t in gather_list:
            if t._dtype is not tensor._dtype or t.numel() != tensor.numel():
                raise ValueError("gather: every tensor of gather_list must have the input's size and dtype")
        _same_device(tensor, *gather_list)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    return _run(g, "GATHER", [tensor], lambda b: b.gather(list(gather_list), tensor, root), async_op,
                root=root)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Give rank ``i`` the tensor ``scatter_list[i]`` of rank ``src`` (matches torch.distributed.scatter).

    :raises ValueError: "Argument ``scatter_list`` must be specified on source rank." /
        "Argument ``scatter_list`` must NOT be specified on non-source ranks."
    """
    _check_tensor(tensor, "tensor")
    if scatter_list:
        _check_list(scatter_list, "scatter_list")
    else:
        scatter_list = []
    if _not_member(group):
        return None
    g = _group(group)
    root = _peer(g, src, group_src, "src")
    if g.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        if len(scatter_list) != g.size():
            raise ValueError(f"scatter: scatter_list must have one tensor per rank ({g.size()}), got "
                             f"{len(scatter_list)}")
        for t in scatter_list:
            if t._dtype is not tensor._dtype or t.numel() != tensor.numel():
                raise ValueError("scatter: every tensor of scatter_list must have the output's size and dtype")
        _same_device(tensor, *scatter_list)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    return _run(g, "SCATTER", [tensor], lambda b: b.scatter(tensor, list(scatter_list), root), async_op,
                root=root)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Split ``input`` along dim 0 (``input_split_sizes`` rows per rank, default equal), send part
    ``i`` to rank ``i`` and concatenate what arrives into ``output`` (matches
    torch.distributed.all_to_all_single).

    :raises ValueError: when split sizes do not add up to dim 0 or have the wrong length.
    """
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    if _not_member(group):
        return None
    g = _group(group)
    if output._dtype is not input._dtype:
        raise ValueError("output tensor must have the same type as input tensor")
    _same_device(output, input)
    for name, t, splits in (("input", input, input_split_sizes), ("output", output, output_split_sizes)):
        rows = t._shape[0] if t._shape else 1
        if splits:
            if len(splits) != g.size():
                raise ValueError(f"all_to_all_single: {name}_split_sizes must have {g.size()} entries, got "
                                 f"{len(splits)}")
            if sum(splits) != rows:
                raise ValueError(f"Split sizes doesn't match total dim 0 size: {name}_split_sizes sum to "
                                 f"{sum(splits)}, {name} has {rows} rows")
        elif rows % g.size():
            raise ValueError(f"Tensor's dim 0 does not divide equally across group size: {name} has {rows} rows, "
                             f"group size {g.size()}")
    return _run(g, "ALLTOALL_BASE", [input],
                lambda b: b.alltoall_single(output, input, output_split_sizes, input_split_sizes), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Block until every rank of ``group`` reached the barrier (matches torch.distributed.barrier).

    Checked like every collective: a rank that ran one collective more or fewer than the others
    makes the barrier raise "Detected mismatch between collectives" on every rank instead of
    passing (PyTorch checks this only with TORCH_DISTRIBUTED_DEBUG=DETAIL).
    """
    if _not_member(group):
        return None
    g = _group(group)
    dev = "cpu" if "cpu" in g._backends or "*" in g._backends else next(iter(g._backends))
    _check_call(g, "BARRIER", [], dev)
    work = g._get_backend(dev).barrier()
    if async_op:
        return work
    work.wait()
    return None


# -- point to point -----------------------------------------------------------------------

def _p2p_peer(g, peer, group_peer, what):
    if peer is None and group_peer is None:
        return None
    p = _peer(g, peer, group_peer, what)
    if p is not None and p == g.rank():
        kind = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {kind} rank: should not be the same as rank of the current process.")
    return p


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` without blocking; returns a ``Work`` (matches torch.distributed.isend)."""
    _check_tensor(tensor, "tensor")
    if _not_member(group):
        return None
    g = _group(group)
    if dst is None and group_dst is None:
        raise ValueError("isend: dst (or group_dst) must be given")
    peer = _p2p_peer(g, dst, group_dst, "dst")
    return g._get_backend(tensor._device.type).send(tensor, peer, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (None: any) without blocking; returns a ``Work``
    whose ``source_rank`` is the sender's group rank (matches torch.distributed.irecv)."""
    _check_tensor(tensor, "tensor")
    if _not_member(group):
        return None
    g = _group(group)
    peer = _p2p_peer(g, src, group_src, "src")
    return g._get_backend(tensor._device.type).recv(tensor, peer, tag)


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it was sent (matches torch.distributed.send)."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor`` from ``src`` (None: any rank); returns the sender's global rank, or
    -1 when this process is not in ``group`` (matches torch.distributed.recv)."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    g = _group(group)
    r = getattr(w, "source_rank", None)
    if r is None:
        r = _peer(g, src, group_src, "src")
    return g.ranks[r]


class P2POp:
    """A point-to-point operation for ``batch_isend_irecv`` (matches torch.distributed.P2POp)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, \
            group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every ``P2POp`` of the list; returns their ``Work`` handles (matches
    torch.distributed.batch_isend_irecv)."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, **({"group_dst": p.group_peer} if p.op is isend
                                                       else {"group_src": p.group_peer})) for p in p2p_op_list]


# -- picklable objects (over the cpu backend) -------------------------------------------------

def _obj_tensor(obj):
    import ember
    import numpy as np
    return ember.from_numpy(np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy())


def all_gather_object(object_list, obj, group=None) -> None:
    """Gather a picklable ``obj`` from every rank into ``object_list`` (matches
    torch.distributed.all_gather_object; like it, unpickles what peers send: use with trusted peers)."""
    import ember
    if _not_member(group):
        return
    g = _group(group)
    if len(object_list) != g.size():
        raise ValueError(f"all_gather_object: object_list must have {g.size()} entries, got {len(object_list)}")
    data = _obj_tensor(obj)
    sizes = ember.zeros(g.size(), dtype=ember.int64)
    all_gather_into_tensor(sizes, ember.tensor([data.numel()], dtype=ember.int64), group=group)
    n = int(sizes.max().item())
    padded = ember.zeros(n, dtype=ember.uint8)
    padded[:data.numel()] = data
    out = ember.zeros(n * g.size(), dtype=ember.uint8)
    all_gather_into_tensor(out, padded, group=group)
    raw = out.numpy()
    for i, s in enumerate(sizes.tolist()):
        object_list[i] = pickle.loads(raw[i * n:i * n + s].tobytes())


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Replace ``object_list``'s entries by rank ``src``'s (matches torch.distributed.broadcast_object_list)."""
    import ember
    if _not_member(group):
        return
    g = _group(group)
    root = _peer(g, src, group_src, "src")
    size = ember.zeros(1, dtype=ember.int64)
    data = None
    if g.rank() == root:
        data = _obj_tensor(list(object_list))
        size[0] = data.numel()
    broadcast(size, group=group, group_src=root)
    if data is None:
        data = ember.zeros(int(size.item()), dtype=ember.uint8)
    broadcast(data, group=group, group_src=root)
    if g.rank() != root:
        object_list[:] = pickle.loads(data.numpy().tobytes())
