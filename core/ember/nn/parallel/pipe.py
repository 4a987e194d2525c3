"""Pipe: GPipe-style pipeline parallelism over devices of any types (the torchgpipe / former
``torch.distributed.pipeline.sync.Pipe`` contract; Huang et al., "GPipe", NeurIPS 2019; Kim et al.,
"torchgpipe", 2020).

An ``nn.Sequential`` is cut into *partitions* (stages), one per device, and each mini-batch into
``chunks`` *micro-batches* along dim 0. Micro-batch i runs on partition j at clock cycle i + j, so
that partition j can work on micro-batch i while partition j + 1 works on micro-batch i - 1.

ember issues each clock cycle's tasks from one thread in two passes. First every task's input is
moved to its partition's device with ``.to(device)`` (through the runtime's ``copy_across`` where it
has one; differentiable, so the backward graph crosses devices on its own). The copy of micro-batch
i - 1 out of stage k's device then waits only for that micro-batch's own work: ember-opencl's copies
to and from a device wait for its whole in-order queue, which at that moment holds nothing newer.
Then the partitions run, those on asynchronous devices first (``DeviceRuntime.asynchronous``:
ember-opencl, ember-cuda), whose kernels are queued and run in the background, then those on
synchronous devices (ember-cpu, vdev), which compute in the calling thread meanwhile. With
opencl:0 -> cpu the OpenCL device computes micro-batch i while the cpu computes stage 1 of micro-batch
i - 1; with cpu -> opencl:0 the OpenCL stage of micro-batch i - 1 runs while the cpu computes
micro-batch i; two asynchronous devices both run in the background. Partitions on synchronous devices
only (vdev:0 + vdev:1, cpu + vdev) still run one after another. The order changes no value: the tasks
of one clock cycle touch different micro-batches and partitions, and each group keeps its order, so
every device's generator sees the same draws (dropout masks) as with lower partitions first. Whether
the overlap pays depends on the hardware: an OpenCL *CPU* runtime shares its cores with numpy, and on
the shared 2-core machine of docs/benchmarks.md ("Issue 24") the time per forward or step with this
order, over the former one, scattered (0.69-1.24) as widely as with one micro-batch, where both orders
are the same (0.87-1.23): no speed-up resolvable there; a GPU was not measured. Backward runs in the
autograd engine's order (not pipelined).

Activation checkpointing per micro-batch: ``checkpoint="always"`` checkpoints every micro-batch on
every partition, ``"except_last"`` (default) all but the last micro-batch (its backward starts at
once, so recomputing it would only cost time), ``"never"`` none; underneath is
``ember.utils.checkpoint.checkpoint(..., use_reentrant=False)``, which replays the random state (dropout
masks are the same in the recomputation). With grad mode off nothing is checkpointed.

BatchNorm: per micro-batch, a training-mode BatchNorm would normalise with micro-batch statistics and
update its running statistics once per micro-batch (and again when a checkpointed micro-batch is
recomputed). torchgpipe's answer is ``deferred_batch_norm``; ember's Pipe does not implement it and
refuses a training-mode BatchNorm with running statistics when it would see more than one micro-batch
or a recomputation (ValueError naming the layer); in eval mode, or with ``chunks=1`` and
``checkpoint="never"``, BatchNorm runs as in the unsplit model.
"""
from __future__ import annotations

import ember
from ..modules.container import ModuleList, Sequential
from ..modules.module import Module

__all__ = ["Pipe"]

_CHECKPOINT_MODES = ("always", "except_last", "never")


def _asynchronous(device):
    """Whether ``device``'s runtime queues kernels and returns before they finish (``DeviceRuntime.asynchronous``)."""
    from ... import _registry
    return bool(getattr(_registry.device_type(device.type).runtime, "asynchronous", False))


def _module_device(module, default):
    for t in (*module.parameters(), *module.buffers()):
        return t.device
    return default


class Pipe(Module):
    """Pipeline parallelism for an ``nn.Sequential`` over several devices (matches torchgpipe's GPipe and
    the former torch Pipe).

    :param module: an ``nn.Sequential``. Without ``balance`` its children must already sit on their devices;
        consecutive children on one device form a partition (a child without parameters or buffers joins
        the partition before it).
    :param chunks: micro-batches per mini-batch (``Tensor.chunk`` along dim 0).
    :param checkpoint: ``"always"``, ``"except_last"`` or ``"never"``.
    :param devices: with ``balance``: the devices to place the partitions on, in order (strings or
        ember.device, any mix of device types).
    :param balance: with ``devices``: the number of children per partition; the children are moved.
    :param deferred_batch_norm: not supported (False only; see the module docstring).
    :raises TypeError: ``module`` is not an ``nn.Sequential``.
    :raises ValueError: ``chunks`` < 1, an unknown ``checkpoint``, ``balance`` that does not add up to
        ``len(module)`` or has a non-positive entry, ``deferred_batch_norm=True``.
    :raises IndexError: fewer ``devices`` than partitions in ``balance``.

    ``forward(input)`` takes a tensor or a tuple of tensors on the first partition's device (batch in dim
    0) and returns the output on the last partition's device; ValueError when the input is elsewhere or
    when ``chunks`` exceeds the batch size. ``partitions`` (a ModuleList of Sequentials: state_dict keys
    ``partitions.<stage>.<index in stage>...``, as torchgpipe's) and ``devices`` are attributes, and the Pipe
    indexes, iterates and measures (``len``) like the Sequential it splits.
    """

    #: internal: False issues each clock cycle's tasks in the former order (lower partitions first, each copying its
    #: input just before it runs), for benchmarks/bench_parallel.py's side-by-side figures; results are the same
    _overlap = True

    def __init__(self, module, chunks=1, checkpoint="except_last", devices=None, balance=None,
                 deferred_batch_norm=False):
        super().__init__()
        if not isinstance(module, Sequential):
            raise TypeError("module must be nn.Sequential to be partitioned")
        if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks <= 0:
            raise ValueError("number of chunks must be positive integer")
        if checkpoint not in _CHECKPOINT_MODES:
            raise ValueError("checkpoint is not one of 'always', 'except_last', or 'never'")
        if deferred_batch_norm:
            raise ValueError("Pipe: deferred_batch_norm is not supported by ember; use eval-mode BatchNorm, or "
                             "chunks=1 with checkpoint='never'")
        children = list(module)
        if balance is not None:
            balance = list(balance)
            if sum(balance) != len(children):
                raise ValueError(f"module and sum of balance have different length (module: {len(children)}, sum "
                                 f"of balance: {sum(balance)})")
            if any(b <= 0 for b in balance):
                raise ValueError(f"all balance numbers must be positive integer (balance: {balance})")
            if devices is None:
                raise ValueError("Pipe: balance= needs devices= (where to place each partition)")
            devices = [ember.device(d) for d in devices]
            if len(devices) < len(balance):
                raise IndexError(f"too few devices to hold given partitions (devices: {len(devices)}, partitions: "
                                 f"{len(balance)})")
            groups, at = [], 0
            for n, dev in zip(balance, devices):
                groups.append((dev, [c.to(dev) for c in children[at:at + n]]))
                at += n
        else:
            groups = []
            for c in children:
                dev = _module_device(c, groups[-1][0] if groups else ember.device("cpu"))
                if groups and groups[-1][0] == dev:
                    groups[-1][1].append(c)
                else:
                    groups.append((dev, [c]))
        self.partitions = ModuleList([Sequential(*cs) for _, cs in groups])
        self.devices = [dev for dev, _ in groups]
        self.chunks = chunks
        self.checkpoint = checkpoint

    def _children_in_order(self):
        return [c for part in self.partitions for c in part]

    def __len__(self):
        return sum(len(p) for p in self.partitions)

    def __getitem__(self, index):
        return self._children_in_order()[index]

    def __iter__(self):
        return iter(self._children_in_order())

    def _check_batch_norm(self, n_micro, checkpointing):
        if not self.training or (n_micro == 1 and not checkpointing):
            return
        from ..modules.batchnorm import _BatchNorm
        named = ((f"{i}.{sub}" if sub else str(i), m) for i, child in enumerate(self._children_in_order())
                 for sub, m in child.named_modules())     # named as in the Sequential the Pipe splits
        for name, m in named:
            if isinstance(m, _BatchNorm) and m.training and m.track_running_stats:
                raise ValueError(f"Pipe: BatchNorm layer '{name}' is in training mode and would update its running "
                                 f"statistics once per micro-batch ({n_micro} here)"
                                 + (" and again when a checkpointed micro-batch is recomputed" if checkpointing
                                    else "") + "; use chunks=1 with checkpoint='never', or eval mode for it")

    def forward(self, input):
        """Run the GPipe schedule on ``input`` (a tensor or a tuple of tensors, batch in dim 0) and return the
        concatenated outputs on the last partition's device."""
        tensors = input if isinstance(input, tuple) else (input,)
        if not tensors or not all(isinstance(t, ember.Tensor) for t in tensors):
            raise TypeError(f"Pipe: input must be a Tensor or a tuple of Tensors, got {type(input).__name__}")
        first = self.devices[0]
        for t in tensors:
            if t.device != first:
                raise ValueError(f"Pipe: the input is on {t.device}, but the first partition is on {first}: "
                                 f"move the input with .to('{first}')")
        batch = tensors[0].shape[0] if tensors[0].dim() > 0 else 0
        if self.chunks > batch:
            raise ValueError(f"Pipe: chunks ({self.chunks}) must not exceed the batch size ({batch})")
        pieces = [t.chunk(self.chunks, 0) for t in tensors]
        micro = [tuple(p[i] for p in pieces) for i in range(len(pieces[0]))]
        n, m = len(micro), len(self.partitions)
        stop = {"always": n, "except_last": n - 1, "never": 0}[self.checkpoint] if ember.is_grad_enabled() else 0
        self._check_batch_norm(n, stop > 0)
        outs = [x if isinstance(input, tuple) else x[0] for x in micro]
        asynchronous = [_asynchronous(d) for d in self.devices]
        for clock in range(n + m - 1):                     # GPipe: micro-batch i on partition j at clock i + j
            tasks = [(j, clock - j) for j in range(max(0, clock - n + 1), min(m, clock + 1))]
            if not self._overlap:                          # the former order (kept for the benchmark)
                for j, i in tasks:
                    outs[i] = self._compute(j, self._to_stage(j, outs[i]), checkpointed=i < stop)
                continue
            for j, i in tasks:                             # 1. every input to its partition's device
                outs[i] = self._to_stage(j, outs[i])
            # 2. partitions on asynchronous devices first (queued, they run while the host computes), then the
            # synchronous ones; a stable sort keeps each group's order, so no generator sees another draw order
            for j, i in sorted(tasks, key=lambda t: not asynchronous[t[0]]):
                outs[i] = self._compute(j, outs[i], checkpointed=i < stop)
        if isinstance(outs[0], tuple):
            return tuple(ember.cat([o[k] for o in outs]) for k in range(len(outs[0])))
        return ember.cat(outs)

    def _to_stage(self, j, x):
        """``x`` (a tensor or a tuple) moved to partition ``j``'s device (differentiable ``.to``)."""
        dev = self.devices[j]
        return tuple(t.to(dev) for t in x) if isinstance(x, tuple) else x.to(dev)

    def _compute(self, j, x, checkpointed):
        """Partition ``j`` on ``x`` (already on its device), under activation checkpointing when asked."""
        part = self.partitions[j]
        if not checkpointed:
            return part(*x) if isinstance(x, tuple) else part(x)
        from ...utils.checkpoint import checkpoint
        return (checkpoint(part, *x, use_reentrant=False) if isinstance(x, tuple)
                else checkpoint(part, x, use_reentrant=False))
