"""DataParallel: one module replicated over several devices of one machine and one device type
(matches torch.nn.DataParallel and torch.nn.parallel.{replicate, scatter, gather, parallel_apply,
data_parallel}).

Each forward:

1. **scatter** the inputs along ``dim``: every tensor is cut into ``len(device_ids)`` chunks with
   ``Tensor.chunk`` (so a batch of 5 over 2 devices gives 3 + 2; a batch smaller than the device count
   uses fewer devices) and each chunk is copied to its device; tuples, lists and dicts are scattered
   element-wise and other objects are passed to every replica as they are. Keyword arguments likewise.
2. **replicate** the module onto each device: a shallow copy of every submodule whose parameters are
   ``param.to(device)`` — differentiable copies, so each replica's gradient flows back into the one
   original parameter and the gradients of all replicas are summed there — and whose buffers are copies
   too. On ``device_ids[0]`` (where the module must live) ``.to`` returns the tensors themselves: the
   first replica shares parameters and buffers with the module, so in-place updates there (BatchNorm's
   running statistics) are kept, as PyTorch guarantees; updates made on other replicas are lost.
3. **parallel_apply**: each replica runs on its chunk in its own thread, with the caller's grad mode and
   autocast state (thread-local in ember as in PyTorch). An exception in a replica is raised again in
   the caller, same class, naming the replica and device.
4. **gather** the outputs on ``output_device`` (default ``device_ids[0]``) by concatenating along
   ``dim`` (differentiable; 0-dim outputs are unsqueezed to a vector with a warning, as PyTorch does).

Copies between devices go through the runtime's ``copy_across`` where it has one (vdev:0 <-> vdev:1
arena to arena) and through host memory otherwise (``ember.profiler.record_copies`` shows which).

**Concurrency.** The replicas' threads overlap only where kernels release the GIL or run
asynchronously: numpy-based kernels (ember-cpu, the reference plugin vdev) release it inside large
ufuncs and BLAS calls only, so small models run mostly one replica at a time; ember-opencl and ember-cuda
queue kernels asynchronously, so replicas on different devices overlap there. DataParallel over vdev is a
correctness tool and a model of the data flow, not a speed-up (docs/benchmarks.md has the figures).
"""
from __future__ import annotations

import threading
import warnings

import ember
from ..modules.module import Module, _SyncDict

__all__ = ["DataParallel", "data_parallel", "replicate", "scatter", "scatter_kwargs", "gather", "parallel_apply"]


# ---------------------------------------------------------------- devices
def _default_device_type():
    """The accelerator DataParallel uses when ``device_ids`` is None, or None when no accelerator is
    usable (then DataParallel runs the module as it is, as PyTorch does without CUDA)."""
    from ... import _registry
    name = _registry.default_accelerator_type()
    if name is None or name == "cpu":
        return None
    try:
        return name if getattr(ember, name).is_available() else None
    except (AttributeError, RuntimeError):
        return None


def _as_devices(ids, default_type):
    """``device_ids`` (ints of ``default_type``, strings or ember.device) -> a list of ember.device of one type;
    ValueError when they name several device types."""
    out = []
    for i in ids:
        if isinstance(i, int):
            if default_type is None:
                raise ValueError(f"DataParallel: device id {i} is an index, but no accelerator is available; name "
                                 f"the devices (e.g. 'vdev:0' or 'cpu')")
            out.append(ember.device(default_type, i))
        else:
            d = ember.device(i)
            if d.index is None and d.type != "cpu":
                d = ember.device(d.type, 0)
            out.append(d)
    types = sorted({d.type for d in out})
    if len(types) > 1:
        raise ValueError(f"DataParallel: device_ids must be devices of one device type, got {', '.join(map(str, out))}")
    return out


def _output_device(output_device, devices):
    if output_device is None:
        return devices[0]
    if isinstance(output_device, int):
        return ember.device("cpu") if output_device == -1 else ember.device(devices[0].type, output_device)
    return ember.device(output_device)


# ---------------------------------------------------------------- scatter / gather
def scatter(inputs, target_gpus, dim=0):
    """Cut every tensor in ``inputs`` (a tensor, or nested tuples / lists / dicts) into
    ``len(target_gpus)`` chunks along ``dim`` (``Tensor.chunk``) and copy chunk i to device i; other
    objects are repeated. Returns one entry per chunk: fewer than the devices when a tensor has fewer
    elements along ``dim`` (matches torch.nn.parallel.scatter). Differentiable."""
    devices = _as_devices(target_gpus, _default_device_type())

    def scatter_map(obj):
        if isinstance(obj, ember.Tensor):
            return [c.to(d) for c, d in zip(obj.chunk(len(devices), dim), devices)]
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):          # a namedtuple
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None      # a recursive closure: break the cycle (as PyTorch does)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """``scatter`` of the positional and the keyword arguments, padded to the same number of chunks
    (matches torch.nn.parallel.scatter_kwargs)."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Gather the replicas' ``outputs`` on ``target_device``: tensors are moved there and concatenated
    along ``dim`` (0-dim tensors are unsqueezed first, with a warning), dicts and sequences element-wise,
    None stays None (matches torch.nn.parallel.gather; -1 means cpu). Differentiable."""
    if isinstance(target_device, int):
        target_device = "cpu" if target_device == -1 else ember.device(_default_device_type() or "cpu",
                                                                      target_device)
    target = ember.device(target_device)

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, ember.Tensor):
            if all(o.dim() == 0 for o in outs) and dim == 0:
                warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will "
                              "instead unsqueeze and return a vector.")
                outs = [o.unsqueeze(0) for o in outs]
            return ember.cat([o.to(target) for o in outs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if isinstance(out, tuple) and hasattr(out, "_fields"):
            return type(out)._make(map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None


# ---------------------------------------------------------------- replicate
def replicate(network, devices, detach=False):
    """One replica of ``network`` per device (matches torch.nn.parallel.replicate): shallow copies of every
    submodule (shared submodules stay shared) whose parameters and buffers are ``.to(device)`` copies —
    differentiable unless ``detach`` or grad mode is off — and which hold the original's other attributes.
    Replica 0 shares tensors with ``network`` where ``network`` already lives on ``devices[0]``."""
    devices = _as_devices(devices, _default_device_type())
    return [_replicate_module(network, d, detach, {}) for d in devices]


def _replicate_module(module, device, detach, memo):
    if id(module) in memo:
        return memo[id(module)]
    replica = module.__new__(type(module))
    memo[id(module)] = replica
    d = replica.__dict__
    d.update(module.__dict__)
    copy = (lambda t: t.detach().to(device)) if detach else (lambda t: t.to(device))
    d["_parameters"] = _SyncDict(replica, {k: None if p is None else copy(p)
                                           for k, p in module._parameters.items()})
    d["_buffers"] = _SyncDict(replica, {k: None if b is None else b.to(device) if b._requires_grad and not detach
                                        else b.detach().to(device) for k, b in module._buffers.items()})
    d["_modules"] = _SyncDict(replica, {k: None if m is None else _replicate_module(m, device, detach, memo)
                                        for k, m in module._modules.items()})
    d["_is_replica"] = True
    return replica


# ---------------------------------------------------------------- parallel_apply
def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """Run ``modules[i](*inputs[i], **kwargs_tup[i])`` for every i, each in its own thread with the caller's
    grad mode and autocast state (matches torch.nn.parallel.parallel_apply); returns the outputs in order.
    An exception in one replica is raised again here: same class, the message naming the replica and
    its device (PyTorch's "Caught ... in replica i on device d")."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    kwargs_tup = tuple(kwargs_tup) if kwargs_tup is not None else ({},) * len(modules)
    if len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of kwargs "
                             f"{len(kwargs_tup)}")
    devices = [None] * len(modules) if devices is None else list(devices)
    grad_enabled = ember.is_grad_enabled()
    results = [None] * len(modules)

    def worker(i, module, inp, kw, device):
        try:
            with ember.set_grad_enabled(grad_enabled), _autocast_like_caller(device):
                if not isinstance(inp, (list, tuple)):
                    inp = (inp,)
                results[i] = ("ok", module(*inp, **kw))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            results[i] = ("error", e)

    args = list(zip(range(len(modules)), modules, inputs, kwargs_tup, devices))
    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=a, name=f"ember-data-parallel-{a[0]}") for a in args]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        worker(*args[0])
    outputs = []
    for i, (status, value) in enumerate(results):
        if status == "error":
            where = f"replica {i}" + (f" on device {devices[i]}" if devices[i] is not None else "")
            raise _rewrapped(value, where) from value
        outputs.append(value)
    return outputs


def _autocast_like_caller(device):
    """The caller's autocast state for ``device``'s type in the worker thread (autocast is per thread)."""
    import contextlib
    amp = getattr(ember, "amp", None)
    if device is None or amp is None or not hasattr(ember, "is_autocast_enabled"):
        return contextlib.nullcontext()
    dtype_ = ember.device(device).type
    try:
        if not ember.is_autocast_enabled(dtype_):
            return contextlib.nullcontext()
        return amp.autocast(dtype_, dtype=ember.get_autocast_dtype(dtype_))
    except (RuntimeError, ValueError, TypeError):
        return contextlib.nullcontext()


def _rewrapped(e, where):
    msg = f"Caught {type(e).__name__} in {where}.\nOriginal error: {e}"
    try:
        return type(e)(msg)
    except Exception:  # noqa: BLE001 - an exception class with another constructor
        return RuntimeError(msg)


# ---------------------------------------------------------------- the module
class DataParallel(Module):
    """Data parallelism over the devices of one device type (matches torch.nn.DataParallel).

    :param module: the module, living on ``device_ids[0]``; reachable as ``.module`` (so ``state_dict``
        keys start with ``module.``, as PyTorch's).
    :param device_ids: devices of one type: ints (of the default accelerator type), strings
        (``"vdev:0"``) or ember.device; default: every device of the type ``module`` lives on (PyTorch: every
        CUDA device), and for a module on cpu (or without tensors) forward runs ``module`` as it is, as
        PyTorch does without CUDA. ``["cpu"]`` is one device: forward runs the module on its input.
    :param output_device: where outputs are gathered (default ``device_ids[0]``; -1 means cpu).
    :param dim: the dimension inputs are scattered and outputs gathered along.
    :raises ValueError: for device_ids of several device types.
    :raises RuntimeError: at forward, when a parameter or buffer of ``module`` is not on ``device_ids[0]``.

    Gradients of the replicas are summed into the module's parameters; buffers are copied from the
    module each forward, and only the first replica's in-place buffer updates are kept (see the module
    docstring). Batch size per replica: ``Tensor.chunk`` sizes.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        default_type = _default_device_type()
        if device_ids is None:
            # PyTorch takes every CUDA device when CUDA is available. ember may have several accelerator types
            # (and a CPU OpenCL runtime is no reason to move a cpu model), so it takes every device of the type
            # the module lives on: a cpu module (or one without tensors) runs as it is, as in PyTorch without CUDA
            held = next(iter((*module.parameters(), *module.buffers())), None)
            if held is None or held.device.type == "cpu":
                self.device_ids, self.output_device, self.src_device_obj = [], None, None
                return
            default_type = held.device.type
            device_ids = list(range(getattr(ember, default_type).device_count()))
        self.device_ids = _as_devices(list(device_ids), default_type)
        if not self.device_ids:
            raise ValueError("DataParallel: device_ids is empty")
        self.output_device = _output_device(output_device, self.device_ids)
        self.src_device_obj = self.device_ids[0]

    def _check_module_device(self):
        src = self.src_device_obj
        for t in (*self.module.parameters(), *self.module.buffers()):
            if t.device != src:
                raise RuntimeError(f"module must have its parameters and buffers on device {src} (device_ids[0]) "
                                   f"but found one of them on device: {t.device}")

    def forward(self, *inputs, **kwargs):
        """Scatter ``inputs`` / ``kwargs`` along ``dim``, run the replicas, gather their outputs."""
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        self._check_module_device()
        inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
        if not inputs and not module_kwargs:
            inputs, module_kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        used = self.device_ids[:len(inputs)]
        replicas = self.replicate(self.module, used)
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module, device_ids):
        """``replicate(module, device_ids, not ember.is_grad_enabled())``."""
        return replicate(module, device_ids, not ember.is_grad_enabled())

    def scatter(self, inputs, kwargs, device_ids):
        """``scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)``."""
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        """``parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])``."""
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        """``gather(outputs, output_device, dim=self.dim)``."""
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional form of DataParallel: ``module`` evaluated on ``inputs`` (a tensor or a tuple)
    over ``device_ids`` (matches torch.nn.parallel.data_parallel)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    dp = DataParallel(module, device_ids, output_device, dim)
    return dp(*inputs, **(module_kwargs or {}))
