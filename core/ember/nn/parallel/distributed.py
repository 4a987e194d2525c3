"""DistributedDataParallel (matches torch.nn.parallel.DistributedDataParallel).

The design is the one of the PyTorch DDP paper (Li et al., VLDB 2020):

1. At construction the module's parameters and buffers are broadcast from rank 0, after a
   check that every rank holds the same parameter shapes.
2. Parameters are assigned to buckets in *reverse* registration order (roughly the order in
   which backward produces their gradients), per (device, dtype), each bucket up to
   ``bucket_cap_mb`` (the first one 1 MiB, so communication starts early).
3. A gradient hook on every parameter (it fires during backward as soon as that
   parameter's gradient is ready: ember's engine runs a leaf's AccumulateGrad node first,
   as PyTorch's does) copies the gradient into its bucket; when a bucket is full its
   all-reduce (``ReduceOp.AVG``) is launched with ``async_op=True``, so communication
   overlaps the rest of backward. Buckets are launched in bucket order on every rank (the
   order collectives must match in), each as soon as it and all earlier ones are ready.
4. When the engine accumulates the gradients into ``.grad`` (the post-accumulate-grad
   hook), DDP waits for the buckets and writes the averaged gradients into ``.grad``.

``no_sync()`` skips step 3-4 (gradients accumulate locally; the next synchronised
backward all-reduces the accumulated sum). ``find_unused_parameters=True`` walks the
autograd graph after each forward and marks parameters it cannot reach ready (with zero
gradient), and all-reduces a used-parameter map so that a parameter no rank used keeps
its ``.grad``. ``broadcast_buffers=True`` broadcasts buffers (BatchNorm statistics) from
rank 0 before each forward (as PyTorch, not after a forward that did not synchronise gradients).
"""
from __future__ import annotations

import contextlib

import ember
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


class _Bucket:
    __slots__ = ("params", "indices", "offsets", "flat", "pending", "work", "size")

    def __init__(self, params, indices, device, dtype):
        self.params = params
        self.indices = indices
        self.offsets = []
        off = 0
        for p in params:
            self.offsets.append(off)
            off += p.numel()
        self.size = off
        self.flat = ember.zeros(off, dtype=dtype, device=device)
        self.pending = len(params)
        self.work = None

    def view(self, k):
        p = self.params[k]
        return self.flat[self.offsets[k]:self.offsets[k] + p.numel()].view(p.shape)


def _tensors_in(obj, out):
    if isinstance(obj, ember.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


class DistributedDataParallel(Module):
    """Data parallelism across processes: each rank runs the module on its own batch and the
    gradients are averaged over ranks during backward (matches
    torch.nn.parallel.DistributedDataParallel).

    :param module: the module to replicate (the same architecture on every rank).
    :param device_ids, output_device, dim: accepted for compatibility (one device per process;
        the module stays where it is).
    :param broadcast_buffers: broadcast rank 0's buffers before each forward (default True).
    :param init_sync: broadcast rank 0's parameters and buffers at construction (default True).
    :param process_group: the group to average over (default: the world).
    :param bucket_cap_mb: bucket size in MiB (default 25, as PyTorch).
    :param find_unused_parameters: allow parameters that get no gradient in some iterations.
    :param gradient_as_bucket_view: not supported (NotImplementedError when True).
    :raises ValueError: when no process group is initialised; RuntimeError when the module has no
        parameter that requires grad, or ranks hold different parameter shapes.

    After ``loss.backward()`` every rank's ``.grad`` holds the average over ranks, identical bit
    for bit on every rank, so identical optimizers keep the parameters identical.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None, skip_all_reduce_unused_params=False):
        super().__init__()
        from ... import distributed as dist
        if gradient_as_bucket_view:
            raise NotImplementedError("DistributedDataParallel(gradient_as_bucket_view=True) is not supported by "
                                      "ember: gradients are copied out of the buckets")
        self._dist = dist
        self.module = module
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        if self.process_group is None:
            dist.get_world_size()           # raises PyTorch's "Default process group has not been initialized"
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._param_names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._verify_shapes()
        if init_sync:
            self._broadcast_coalesced(self._params + list(module.buffers()))
        self._build_buckets()
        self._hook_handles = []
        for i, p in enumerate(self._params):
            self._hook_handles.append(p.register_hook(self._grad_hook(i)))
            self._hook_handles.append(p.register_post_accumulate_grad_hook(self._post_hook))
        self._reset()

    # ------------------------------------------------------------------ construction
    def _verify_shapes(self):
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        g = self.process_group
        theirs = [None] * self._dist.get_world_size(g)
        self._dist.all_gather_object(theirs, mine, group=g)
        for r, other in enumerate(theirs):
            if other != mine:
                if len(other) != len(mine):
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank {self._dist.get_rank(g)} "
                                       f"has {len(mine)} params, while rank {r} has inconsistent {len(other)} "
                                       "params.")
                k = next(i for i, (a, b) in enumerate(zip(mine, other)) if a != b)
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {self._dist.get_rank(g)} "
                                   f"has parameter {self._param_names[k]} of shape {list(mine[k][0])} "
                                   f"({mine[k][1]}), while rank {r} has {list(other[k][0])} ({other[k][1]}).")

    def _broadcast_coalesced(self, tensors):
        """Broadcast ``tensors`` from the group's rank 0, one flat message per (device, dtype)."""
        if not tensors:
            return
        g = self.process_group
        src = self._dist.get_global_rank(g, 0)
        groups = {}
        for t in tensors:
            groups.setdefault((t.device, t.dtype), []).append(t)
        with ember.no_grad():
            for ts in groups.values():
                flat = ember.cat([t.detach().reshape(-1) for t in ts]) if len(ts) > 1 else \
                    ts[0].detach().reshape(-1).clone()
                self._dist.broadcast(flat, src=src, group=g)
                off = 0
                for t in ts:
                    n = t.numel()
                    t.detach().copy_(flat[off:off + n].view(t.shape))
                    off += n

    def _build_buckets(self):
        """Reverse registration order, per (device, dtype), up to the size cap (first bucket 1 MiB)."""
        open_ = {}
        done = []
        limit = {}
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            key = (p.device, p.dtype)
            cur = open_.setdefault(key, [[], 0])
            cur[0].append(i)
            cur[1] += p.numel() * p.dtype.itemsize
            cap = limit.get(key, min(_DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap))
            if cur[1] >= cap:
                done.append(cur[0])
                open_[key] = [[], 0]
                limit[key] = self.bucket_bytes_cap
        done.extend(c[0] for c in open_.values() if c[0])
        self._buckets = []
        self._where = [None] * len(self._params)       # param index -> (bucket, position)
        for idx in done:
            p0 = self._params[idx[0]]
            b = _Bucket([self._params[i] for i in idx], idx, p0.device, p0.dtype)
            for k, i in enumerate(idx):
                self._where[i] = (b, k)
            self._buckets.append(b)

    # ------------------------------------------------------------------ per iteration
    def _reset(self):
        self._syncing = False            # this backward all-reduces
        self._ready = [False] * len(self._params)
        self._used = None
        self._next = 0                   # next bucket to launch
        self._finalized = True
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module on the inputs (broadcasting buffers from rank 0 first when ``broadcast_buffers``)
        and arm the gradient all-reduce for the next backward when grad mode is on and not in ``no_sync()``;
        returns the module's output unchanged.

        RuntimeError "Expected to have finished reduction in the prior iteration before starting a new one. ..."
        when the previous synchronised backward left some parameters unreduced (unused parameters without
        ``find_unused_parameters=True``). Matches torch.nn.parallel.DistributedDataParallel.forward.
        """
        if not self._finalized and any(self._ready):
            self._reset()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.")
        self._reset()
        if self.broadcast_buffers and self.require_forward_param_sync:
            bufs = list(self.module.buffers())
            if bufs:
                self._broadcast_coalesced(bufs)
        out = self.module(*inputs, **kwargs)
        if ember.is_grad_enabled() and self.require_backward_grad_sync:
            self._syncing = True
            self._finalized = False
            self.require_forward_param_sync = True
            if self.find_unused_parameters:
                self._mark_unused(out)
        else:
            # as PyTorch: after a forward that will not synchronise (no_grad, no_sync), the next
            # forward does not broadcast buffers either
            self.require_forward_param_sync = False
        return out

    def _mark_unused(self, out):
        """Walk the graph from the outputs; parameters it does not reach are ready (zero gradient)."""
        from ...autograd.graph import grad_edge
        reach = set()
        stack = [e[0] for e in (grad_edge(t) for t in _tensors_in(out, []) if t.requires_grad) if e is not None]
        seen = set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            v = getattr(n, "variable", None)
            if v is not None:
                reach.add(id(v))
            stack.extend(e[0] for e in n.next_edges if e is not None and e[0] not in seen)
        self._used = ember.zeros(len(self._params), dtype=ember.int32)
        for i, p in enumerate(self._params):
            if id(p) in reach:
                self._used[i] = 1
        for i, p in enumerate(self._params):
            if id(p) not in reach:
                b, k = self._where[i]
                v = b.view(k)
                if p.grad is not None:
                    v.copy_(p.grad)
                else:
                    v.zero_()
                self._mark_ready(i)

    def _grad_hook(self, i):
        def hook(grad):
            if not self._syncing:
                return None
            b, k = self._where[i]
            v = b.view(k)
            p = self._params[i]
            v.copy_(grad)
            if p.grad is not None:          # gradients accumulated under no_sync() join this reduction
                v.add_(p.grad)
            self._mark_ready(i)
            return None
        return hook

    def _mark_ready(self, i):
        if self._ready[i]:
            raise RuntimeError(f"Expected to mark a variable ready only once. Parameter {self._param_names[i]} "
                               "(index {i}) was marked ready twice in one iteration: a parameter can take part in "
                               "only one backward per forward under DistributedDataParallel.")
        self._ready[i] = True
        b, _ = self._where[i]
        b.pending -= 1
        bs = self._buckets
        while self._next < len(bs) and bs[self._next].pending == 0:
            b = bs[self._next]
            b.work = self._dist.all_reduce(b.flat, op=self._dist.ReduceOp.AVG, group=self.process_group,
                                           async_op=True)
            self._next += 1
        for b in bs[:self._next]:            # give the transport a chance to progress (MPI moves data
            if b.work is not None:           # only inside MPI calls)
                b.work.is_completed()

    def _post_hook(self, param):
        # the engine calls these after accumulating every gradient of the backward: the first call
        # finishes the reduction for all parameters
        if not self._syncing or self._finalized:
            return
        self._finalized = True
        self._syncing = False
        missing = [n for n, r in zip(self._param_names, self._ready) if not r]
        if missing:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                f"participate in calculating loss. Parameters that did not receive grad: {', '.join(missing)}")
        used = None
        if self._used is not None:
            self._dist.all_reduce(self._used, op=self._dist.ReduceOp.MAX, group=self.process_group)
            used = self._used.tolist()
        with ember.no_grad():
            for b in self._buckets:
                b.work.wait()
                for k, i in enumerate(b.indices):
                    p = self._params[i]
                    if used is not None and not used[i]:
                        continue              # no rank used it: its .grad stays as it was
                    if p.grad is None:
                        p.grad = b.view(k).clone()
                    else:
                        p.grad.copy_(b.view(k))

    @contextlib.contextmanager
    def no_sync(self):
        """Within this context, backward accumulates gradients locally without all-reducing them;
        the first backward after it all-reduces the accumulated gradients (matches
        DistributedDataParallel.no_sync)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def __getstate__(self):
        raise RuntimeError("DistributedDataParallel cannot be pickled; save ddp.module.state_dict() instead")
