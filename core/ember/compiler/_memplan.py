"""Memory planning for ``ember.compile``: a captured graph's intermediates share buffers by liveness.

Eager code allocates each op's output and frees it when the last Python reference goes; a captured
graph keeps every tensor it recorded alive between replays, so without planning a step's memory is
the sum of all its intermediates. After a capture (and fusion), ``plan`` gives each *intermediate*
storage an interval of node indices [first use, last use] and packs the intervals into as few
buffers as it can (greedy, by first use, best fit by size): two storages share a buffer only when one
is last used strictly before the other is first written. The tensors on a planned storage are then
pointed at their buffer (same offsets, strides and dtype), so the recorded calls run unchanged.

A storage is an intermediate - safe to share - when all of these hold:

- a recorded kernel call writes it before anything reads it (its first appearance is as ``out=`` of
  a kernel call, not as an input of the same call): its value from the previous replay is never
  used;
- nothing but the graph holds any tensor on it (reference counts, as the fusion pass counts them:
  an output, a ``.grad``, optimizer or module state, a static input, a closure, a view's ``_base``
  or a user's list all hold one), and nothing but those tensors holds the storage;
- it comes from the device's allocator (not shared memory, not memory ember did not allocate).

A fused run (``_fusion``) is one kernel: every storage it touches is live over the whole run, so
no two of its tensors share memory (elements of different dtypes would overlap across work items).
``ember.compiler.config.memory_planning = False`` (or ``EMBER_COMPILE_MEMPLAN=0``) turns it off.
"""
from __future__ import annotations

import sys

__all__ = ["plan"]


def _tensors_in(x, out):
    from .._tensor import Tensor
    if isinstance(x, Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for y in x:
            if isinstance(y, Tensor):
                out.append(y)


def _storage_base():
    class _S:
        pass
    s = _S()
    return sys.getrefcount(s) - 1        # minus the local ``s``


_SBASE = _storage_base()


def _walk(graph, program, deltas, fused_ranges):
    """Per storage: first / last use (node indices), whether its first use only writes it, whether it must not
    move, its tensors; per tensor: the references the graph's own structures hold (the fusion pass's count, plus
    the fused runs' own tuples of slot tensors). (A function of its own, so that no local variable of the caller
    holds a tensor while reference counts are read.)"""
    from . import _capture
    from ._fusion import _graph_refs
    nodes = graph.nodes
    span = {}                   # node index -> (lo, hi) of the fused run it is in
    for lo, hi in fused_ranges:
        for i in range(lo, hi + 1):
            span[i] = (lo, hi)
    first, last, fresh, blocked = {}, {}, {}, set()
    tensors = {}                # id(storage) -> {id(tensor): tensor}

    def use(t, i, write_only):
        sid = id(t._storage)
        lo, hi = span.get(i, (i, i))
        if sid not in first:
            first[sid] = lo
            fresh[sid] = write_only
        last[sid] = max(last.get(sid, hi), hi)
        tensors.setdefault(sid, {})[id(t)] = t

    for i, n in enumerate(nodes):
        if isinstance(n, _capture.Node):
            ins, outs = [], []
            for a in n.args:
                _tensors_in(a, ins)
            for k, v in n.kwargs.items():
                _tensors_in(v, outs if k == "out" else ins)
            read = {id(t._storage) for t in ins}
            for t in ins:
                use(t, i, False)
            for t in outs:
                use(t, i, id(t._storage) not in read)
            if type(n) is not _capture.Node:          # a Producer: its results are copied into on replay
                blocked.update(id(r[1]._storage) for r in getattr(n, "results", ()))
        elif getattr(n, "tensor", None) is not None:  # a ValueGuard reads its tensor on the host
            blocked.add(id(n.tensor._storage))
    refs, _ = _graph_refs(nodes, graph.versions, deltas)
    node_args = {id(n.args) for n in nodes if isinstance(n, _capture.Node)}
    for entry in program:                             # a fused run's own tuple of slot tensors
        if id(entry[1]) not in node_args:
            ts = []
            _tensors_in(entry[1], ts)
            for t in ts:
                refs[id(t)] = refs.get(id(t), 0) + 1
    return first, last, fresh, blocked, tensors, refs


def plan(graph, program, deltas, fused_ranges=()):
    """Share the buffers of ``graph``'s intermediates (see the module doc); ``program`` is the replay's list of
    ``(fn, args, kwargs)`` and ``fused_ranges`` the node index ranges fused runs replaced. Returns
    ``{"planned": storages, "bytes_before": their bytes, "buffers": buffers, "bytes_after": their bytes}``."""
    from ._fusion import _BASE, _raw_refs
    from .. import empty
    from .. import uint8
    first, last, fresh, blocked, tensors, refs = _walk(graph, program, deltas, fused_ranges)
    cands = {}
    for sid, ts in tensors.items():
        if not fresh[sid] or sid in blocked:
            continue
        st = next(iter(ts.values()))._storage
        alloc = st._allocator
        if alloc is None or type(alloc).__name__ == "_Foreign" or getattr(st, "_shared", None) is not None \
                or st._nbytes == 0:
            continue
        cands[sid] = ts
    # reference counts: every tensor on a candidate storage held by the graph alone, the storage by its tensors
    flat = {tid: t for ts in cands.values() for tid, t in ts.items()}
    raw = _raw_refs(flat)
    # (held here by ``flat`` (counted in _BASE) and by the ``tensors`` / ``cands`` tables' shared dict: 1)
    for sid in list(cands):
        ts = cands[sid]
        if any(raw[tid] - _BASE - 1 > refs.get(tid, 0) for tid in ts):
            del cands[sid]
            continue
        st = next(iter(ts.values()))._storage
        if sys.getrefcount(st) - _SBASE - 1 > len(ts):     # (minus the ``st`` local)
            del cands[sid]
    flat.clear()
    del raw
    if not cands:
        return {"planned": 0, "bytes_before": 0, "buffers": 0, "bytes_after": 0}

    # greedy packing per device: by first use; a buffer is free once its last user's interval has ended
    order = sorted(cands, key=lambda sid: (first[sid], last[sid]))
    buffers = []                # [device, size, last use]
    assign = {}
    before = 0
    for sid in order:
        st = next(iter(cands[sid].values()))._storage
        need, dev = st._nbytes, st.device
        before += need
        free = [b for b in buffers if b[0] == dev and b[2] < first[sid]]
        fits = [b for b in free if b[1] >= need]
        if fits:
            b = min(fits, key=lambda b: b[1])
        elif free:
            b = max(free, key=lambda b: b[1])
            b[1] = need
        else:
            b = [dev, need, -1]
            buffers.append(b)
        b[2] = last[sid]
        assign[sid] = b
    storage_of = {}
    for b in buffers:
        storage_of[id(b)] = empty((b[1],), dtype=uint8, device=b[0])._storage
    for sid, ts in cands.items():
        new = storage_of[id(assign[sid])]
        for t in ts.values():
            t._storage = new
            t._native = None
    return {"planned": len(cands), "bytes_before": before, "buffers": len(buffers),
            "bytes_after": sum(b[1] for b in buffers)}
