"""The public registration API: what a plugin - ours or a vendor's - uses to extend ember.

- ``DeviceRuntime``: the runtime primitives a device type must supply.
- ``Registry``: handed to ``ember_register(registry)``; registers device types, layouts,
  dtypes and fallbacks, all-or-nothing.
- ``Library``: registers kernels for existing ops per dispatch key (``impl``) and
  declares new ops in the plugin's own namespace (``define``), as torch.library does.
"""
from __future__ import annotations

import threading
import types

from . import _dispatch, _registry
from ._dispatch import ANY
from ._device import layout as _layout_cls, device as _device_cls
from ._dtype import dtype as _dtype_cls, ALL_DENSE, FLOATING, INTEGRAL, COMPLEX
from ._dtype import new_dtype  # noqa: F401  (a plugin's own dtype, for register_dtype)

__all__ = ["DeviceRuntime", "Registry", "Library", "ANY", "ALL_DENSE", "FLOATING", "INTEGRAL", "COMPLEX",
           "register_autograd", "cpu_fallback", "new_dtype", "PhiloxState", "parse_to_args",
           "out_of_descriptors_error", "native_view", "geometry", "op_schemas"]


def op_schemas(device_types=None) -> list:
    """Every declared op with its schema, calling convention (what a kernel receives for each
    argument), variants, whether it is a primitive, the ops its composite calls, and per device
    type and dtype whether it resolves native / composite / fallback / missing: a list of
    ``OpSchema`` (``ember ops`` prints it). Loads every plugin.

    :param device_types: device types to resolve for (default: every registered one).
    Since plugin API 1.1.
    """
    from ._op_schemas import op_schemas as _op_schemas
    return _op_schemas(device_types)


def native_view(tensor, build):
    """The backend's native view of ``tensor`` (a numpy array over its memory, a device-array object,
    ...), built by ``build(tensor)`` the first time and cached on the tensor after that.

    This is the fast path of a kernel: operands that live across ops (parameters, activations)
    are built once, and only the new output of each op pays for ``build``. The cache is the
    tensor's own: a view op makes a new tensor (so a new cache), and the core drops the cache
    whenever a tensor's geometry or storage changes (``out=`` resizing, ``set_``, loading). A
    runtime whose allocation is itself a native array (``native_empty``) gets outputs with the
    cache already filled. ember-cpu and the reference plugin (examples/vendor_plugin) both use it.

    :param build: ``build(tensor) -> native view``; it may use ``geometry(tensor)``.
    :returns: what ``build`` returned (for this tensor, always the same object).
    Since plugin API 1.1.
    """
    v = tensor._native
    if v is None:
        v = tensor._native = build(tensor)
    return v


def geometry(tensor) -> tuple:
    """``(handle, shape, strides, offset, dtype)`` of a strided tensor, in one call and without
    building objects: the storage's handle (what the runtime's ``allocate`` returned), the shape
    and the strides (tuples of ints, strides and offset in elements, as ``Tensor.stride()`` and
    ``storage_offset()``) and the ember dtype. For a ``native_view`` builder; the same numbers as
    ``t.untyped_storage().handle``, ``tuple(t.shape)``, ``t.stride()``, ``t.storage_offset()``,
    ``t.dtype``, at ~1/10 of their cost. Since plugin API 1.1.
    """
    return tensor._storage._handle, tensor._shape, tensor._stride, tensor._offset, tensor._dtype


def out_of_descriptors_error(what: str) -> RuntimeError:
    """The error for running out of file descriptors while sharing memory between processes: a
    RuntimeError (PyTorch's class for it) naming this process's open-file limit and the fix. For a
    runtime's ``share_memory`` / ``storage_from_shared`` when they get EMFILE / ENFILE, and for
    ember.multiprocessing when a descriptor cannot be received.

    :param what: what failed, e.g. "moving a tensor to shared memory".
    """
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit = f"the limit is {soft} open files for this process (hard limit {hard})"
    except (ImportError, OSError, ValueError):
        limit = "the process's open-file limit is reached"
    return RuntimeError(
        f"ember: {what} failed: too many open files ({limit}). Each CPU tensor in shared memory holds a file "
        f"descriptor while it lives (a DataLoader batch from a worker is one such tensor per field). Raise the "
        f"limit (`ulimit -n 65536` in the shell, or resource.setrlimit(resource.RLIMIT_NOFILE, ...) in Python), "
        f"or keep fewer shared tensors / batches alive at once.")


def parse_to_args(args, kwargs) -> tuple:
    """``(device or None, dtype or None, copy, non_blocking)`` from the arguments of a ``to(...)`` call,
    parsed exactly as ``Tensor.to`` / ``Module.to`` parse them (``to(device)``, ``to(dtype)``,
    ``to(device, dtype)``, ``to(other)``, an int for the default accelerator's device, keywords
    ``device``, ``dtype``, ``non_blocking``, ``copy``, ``memory_format``), for a plugin whose tensors
    implement ``to`` themselves (ember-sparse). ``kwargs`` is consumed. TypeError for anything else,
    in PyTorch's words; the device comes back canonical (RuntimeError for an unknown device type)."""
    from ._ops._copy import _parse_to
    return _parse_to(args, kwargs)


class PhiloxState:
    """A device generator's state for a counter-based generator such as Philox4x32-10 (the
    family of cuRAND's and PyTorch's CUDA generator): a 64-bit key (the seed) and a 64-bit
    counter offset that every random kernel advances. A device runtime's
    ``new_generator_state(seed, index)`` may return one.

    ``reserve(n)`` returns the offset a kernel drawing ``n`` counter values starts at and moves
    the state past them, so consecutive calls never reuse a counter. ``get_state()`` /
    ``set_state(raw)`` round-trip it as 16 bytes (seed, offset as little-endian uint64);
    ``set_state`` raises RuntimeError for any other length.
    """

    def __init__(self, seed: int):
        self.seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self.offset = 0
        self._lock = threading.Lock()

    def reserve(self, n: int) -> int:
        """Return the counter offset a kernel drawing ``n`` values starts at, and advance the offset by ``n`` (mod
        2**64). Thread-safe: two threads drawing from one generator never get overlapping counters.
        """
        with self._lock:
            start = self.offset
            self.offset = (self.offset + int(n)) & 0xFFFF_FFFF_FFFF_FFFF
        return start

    def get_state(self) -> bytes:
        """The state as 16 bytes: seed then offset, each a little-endian uint64."""
        return self.seed.to_bytes(8, "little") + self.offset.to_bytes(8, "little")

    def set_state(self, raw: bytes) -> None:
        """Restore a state from ``get_state``'s 16 bytes; RuntimeError "set_state: a Philox generator state is 16
        bytes (seed, offset), got N" for any other length.
        """
        raw = bytes(raw)
        if len(raw) != 16:
            raise RuntimeError(f"set_state: a Philox generator state is 16 bytes (seed, offset), got {len(raw)}")
        self.seed, self.offset = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")

    def __repr__(self):
        return f"PhiloxState(seed={self.seed}, offset={self.offset})"


class DeviceRuntime:
    """The runtime primitives of one device type; subclass it in a device plugin.

    Everything a device must supply is grouped here, each failing loudly when missing.
    Compute kernels are registered separately, per op, through ``Library.impl``; the
    vendor guide (docs/vendor-guide.md) lists the primitive op set.
    """

    #: the device type name ("cpu", "cuda", "npu")
    name: str = ""
    #: whether devices of this type carry an index (cuda:0); cpu has none
    indexed: bool = True
    #: whether storage handles are host memory that numpy can view without a copy
    host_memory: bool = False
    #: the services this runtime provides beyond the basics ("streams", "pinned_memory", ...)
    services: frozenset = frozenset()
    #: whether kernels are queued and return before they finish (the host may run other work meanwhile, and
    #: ``synchronize`` waits for them); False for a runtime that computes in the calling thread. Schedulers read
    #: it: ``nn.parallel.Pipe`` issues the partitions on asynchronous devices before the synchronous ones
    asynchronous: bool = False

    # -- discovery -------------------------------------------------------
    def is_available(self) -> bool:
        """Whether at least one device of this type can be used (must not raise)."""
        return self.device_count() > 0

    def device_count(self) -> int:
        """How many devices of this type exist (0 when none); required, the base raises NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need device_count")

    def current_device(self) -> int:
        """The index ``set_device`` last selected (0 by default)."""
        return getattr(self, "_current", 0)

    def set_device(self, index: int) -> None:
        """Make device ``index`` current; RuntimeError "Invalid device ordinal NAME:i" unless 0 <= index <
        device_count().
        """
        if not 0 <= index < self.device_count():
            raise RuntimeError(f"Invalid device ordinal {self.name}:{index}")
        self._current = index

    def get_device_name(self, index: int) -> str:
        """A human-readable name of device ``index`` (default "NAME:index")."""
        return f"{self.name}:{index}"

    def total_memory(self, index: int) -> int:
        """Optional: the memory of device ``index`` in bytes (``ember.<type>.get_device_properties``,
        and the default total of ``set_per_process_memory_fraction``). The base raises
        NotImplementedError; ember then asks the user for ``total_memory=``."""
        raise NotImplementedError(f"{self.name}: does not report its total memory")

    def synchronize(self, index: int) -> None:
        """Wait for all work queued on device ``index``."""
        raise NotImplementedError(f"{self.name}: need synchronize")

    # -- memory (raw; the core's allocator caches on top) -------------------
    def allocate(self, nbytes: int, device_index: int):
        """Allocate ``nbytes`` on device ``device_index``; return an opaque handle.
        Raise MemoryError when the device is out of memory (the core then frees its cache and retries)."""
        raise NotImplementedError(f"{self.name}: need allocate")

    def free(self, handle) -> None:
        """Release a handle from ``allocate`` (called by the core's caching allocator); required, the base raises
        NotImplementedError.
        """
        raise NotImplementedError(f"{self.name}: need free")

    def data_ptr(self, handle) -> int:
        """The device address of a handle (for ``data_ptr()`` and DLPack)."""
        return id(handle)

    # -- host transfers ------------------------------------------------------
    def to_numpy(self, tensor):
        """A numpy array with ``tensor``'s shape and values (a view where ``host_memory``)."""
        raise NotImplementedError(f"{self.name}: need to_numpy")

    def from_numpy(self, tensor, array) -> None:
        """Write the numpy ``array`` (same shape, dtype) into the strided ``tensor``."""
        raise NotImplementedError(f"{self.name}: need from_numpy")

    # -- sharing memory between processes (optional) --------------------------
    # Tensor.share_memory_() and ember.multiprocessing call these; a runtime that leaves them out
    # cannot share (share_memory_ raises; ember.multiprocessing then sends its tensors by copy).
    # The memory is the runtime's business (only it knows what a storage handle is); moving the
    # file descriptor between processes is ember.multiprocessing's (SCM_RIGHTS / pass_fds).
    def share_memory(self, storage) -> None:
        """Move ``storage``'s bytes into memory that another process can map, in place.

        Set ``storage._handle`` to a handle over the shared memory holding the same bytes, and
        ``storage._shared`` to an object that keeps it alive, with ``fd`` (a file descriptor of the
        memory, which ember.multiprocessing sends to other processes) and ``key`` (hashable and
        equal in every process that maps the same memory). Called only for a storage that is not
        shared yet; the core then drops the cached native views of tensors over the storage.
        """
        raise RuntimeError(f"share_memory_(): tensors on device type '{self.name}' cannot be moved to shared "
                           "memory (its runtime does not implement DeviceRuntime.share_memory)")

    def storage_from_shared(self, fd: int, nbytes: int, device_index: int):
        """Map ``nbytes`` of memory another process shared as ``fd`` (which this call takes over):
        return ``(handle, shared)``, the values ``share_memory`` gives ``storage._handle`` and
        ``storage._shared``. Writes through either process's storage are seen by the other."""
        raise RuntimeError(f"device type '{self.name}' cannot map shared memory (its runtime does not implement "
                           "DeviceRuntime.storage_from_shared)")

    # -- optional: direct copies between devices ---------------------------------
    def copy_across(self, dst, src, non_blocking: bool = False) -> bool:
        """Copy ``src`` into ``dst`` directly (peer-to-peer, DMA) when they are on different devices
        and one of them is of this type; return True when done, False to let the core stage the copy
        through host memory (``to_numpy`` on the source's runtime, ``from_numpy`` on the
        destination's) — the default.

        Called by ``copy_`` / ``.to`` for every copy between two devices (dst's runtime first, then
        src's), after the core has checked shapes: ``src`` broadcasts to ``dst``'s shape, either may be
        non-contiguous, and their dtypes may differ (a C-style cast, as ``copy_``). Declining some
        cases (say, everything but contiguous same-dtype copies) is fine. ``ember.profiler.record_copies``
        shows which path each copy took; the conformance check ``device_peer_copy`` copies between the
        first two devices of the type both ways and lists the paths in the report.
        """
        return False

    # -- random numbers --------------------------------------------------------
    def new_generator_state(self, seed: int, device_index: int):
        """A fresh random state seeded with ``seed``; kernels for rand/randn/... use it."""
        raise NotImplementedError(f"{self.name}: need new_generator_state (random numbers)")

    # -- optional service "pinned_memory" (list it in ``services``) --------------
    def pin_memory(self, tensor):
        """A cpu tensor with ``tensor``'s shape, dtype and values in page-locked host memory,
        from which copies to this device can run asynchronously.

        Called by ``Tensor.pin_memory()`` and ``DataLoader(pin_memory=True)`` when this is the
        current accelerator, with a cpu tensor that ``is_pinned`` says is not pinned yet.
        """
        raise NotImplementedError(f"{self.name}: need pin_memory (service 'pinned_memory')")

    def is_pinned(self, tensor) -> bool:
        """Whether the cpu ``tensor``'s memory was pinned by this runtime (``Tensor.is_pinned``)."""
        return False

    # -- the device module (ember.<name>) ------------------------------------
    def module_extras(self) -> dict:
        """Extra names for the device module (Stream, Event, get_device_properties, ...)."""
        return {}


class Registry:
    """What ``ember_register(registry)`` receives: registration bound to one plugin.

    Registrations are staged and take effect together when the hook returns; if the
    hook raises, none of them is kept.

    A plugin registers only what its manifest's ``provides`` declares: device types, layouts
    and dtypes it names, kernels and fallbacks for those (or for ops it defines). A device
    type that belongs to another plugin, or a name that would shadow an attribute of
    ``ember``, is refused with a RuntimeError naming both, so a broken or hostile plugin
    cannot take over another's device (``ember.plugins.RESERVED_DEVICE_TYPES``: cpu, cuda and
    opencl belong to ember-cpu, ember-cuda and ember-opencl whatever the load order).
    """

    def __init__(self, plugin: str, *, provides: dict = None, package: str = None):
        self.plugin = plugin
        self.provides = provides     # the manifest's provides; None: a Registry made by hand (no checks)
        self.package = package       # the plugin's top-level package (who may take a reserved device type)
        self._staged = []    # callables that apply a registration and return its undo
        self._undo = []
        self._libraries = []

    def _defined_ops(self) -> set:
        """The dispatcher names of the ops this plugin's libraries define (staged or committed)."""
        return {n for lib in self._libraries for n in lib._ops}

    # -- what the manifest declares
    def _declared(self, kind: str) -> set:
        return set((self.provides or {}).get(kind, ()))

    def _require_declared(self, kind: str, name: str, what: str):
        if self.provides is not None and name not in self._declared(kind):
            raise RuntimeError(f"plugin '{self.plugin}' registers {what} '{name}', which its manifest does not "
                               f"declare (provides['{kind}'] = {sorted(self._declared(kind))}); a plugin may "
                               f"register only what its manifest declares")

    def _require_unshadowed(self, name: str, what: str):
        import ember
        if name in ember.__dict__:
            raise RuntimeError(f"plugin '{self.plugin}' registers {what} '{name}', which would replace "
                               f"ember.{name} ({type(ember.__dict__[name]).__name__}); refused")

    def owns_key(self, op_name: str, device, layout, dtypes) -> bool:
        """Whether this plugin may register a kernel of ``op_name`` at (device, layout, dtypes): the key names
        a device type, layout or (non-core) dtype its manifest declares, or the op is one it defines."""
        if self.provides is None:
            return True
        if op_name in self._defined_ops():
            return True
        if device is not ANY and device in self._declared("device_types"):
            return True
        if layout is not ANY and layout != "strided" and layout in self._declared("layouts"):
            return True
        own = self._declared("dtypes") - {d.name for d in ALL_DENSE}
        return bool(own) and dtypes not in (None, ANY) and all(d.name in own for d in dtypes)

    def register_device_type(self, name: str, runtime: DeviceRuntime, *, caching_allocator: bool = True):
        """Add device type ``name`` with its runtime; ``caching_allocator=False`` uses the
        core's non-caching DirectAllocator (host memory)."""
        if not isinstance(runtime, DeviceRuntime):
            raise TypeError(f"register_device_type('{name}'): runtime must be an ember.library.DeviceRuntime")
        self._require_declared("device_types", name, "device type")
        from .plugins import RESERVED_DEVICE_TYPES
        owner_pkg = RESERVED_DEVICE_TYPES.get(name)
        if owner_pkg is not None and self.provides is not None and self.package != owner_pkg:
            raise RuntimeError(f"plugin '{self.plugin}' (package {self.package}) registers device type '{name}', "
                               f"which belongs to plugin '{name}' (package {owner_pkg}); refused")
        if name in _registry.device_types:
            raise RuntimeError(f"device type '{name}' is registered twice: by plugin "
                               f"'{_registry.device_types[name].plugin}' and by plugin '{self.plugin}'")

        def apply():
            if name in _registry.device_types:
                owner = _registry.device_types[name].plugin
                raise RuntimeError(f"device type '{name}' is registered twice: by plugin '{owner}' and by "
                                   f"plugin '{self.plugin}'")
            from . import _device_module
            dt = _registry.DeviceType(name, runtime, self.plugin, caching_allocator)
            dt.module = _device_module.make_device_module(dt)
            _registry.device_types[name] = dt

            def undo():
                _registry.device_types.pop(name, None)
                _device_module.remove_device_module(name)
                from . import _factory
                for d in [d for d in _factory._allocators if d.type == name]:
                    del _factory._allocators[d]
            return undo
        self._staged.append(apply)

    def register_fallback(self, device_type: str, fallback):
        """``fallback(op, args, kwargs)`` runs ops that have no kernel for ``device_type``
        (``ember.library.cpu_fallback`` copies to cpu, runs, copies back)."""
        if self.provides is not None and device_type not in self._declared("device_types"):
            owner = _registry.device_types[device_type].plugin if device_type in _registry.device_types else None
            raise RuntimeError(f"plugin '{self.plugin}' registers a fallback for device type '{device_type}', which "
                               f"is not its own" + (f" (it belongs to plugin '{owner}')" if owner else "") +
                               "; refused")

        def apply():
            dt = _registry.device_type(device_type) if device_type in _registry.device_types else None
            if dt is None:
                raise RuntimeError(f"register_fallback: unknown device type '{device_type}'")
            old, dt.fallback = dt.fallback, fallback
            _dispatch.invalidate_caches()

            def undo():
                dt.fallback = old
                _dispatch.invalidate_caches()
            return undo
        self._staged.append(apply)

    def register_fuser(self, device_type: str, fuser, *, features=()):
        """``fuser(subgraph)`` fuses runs of elementwise nodes that ``ember.compile`` captured on
        ``device_type`` (one of this plugin's): it receives an ``ember.compiler._fusion.Subgraph`` and returns
        one callable ``fused(*tensors)`` (the subgraph's slot tensors, in order) that does what the run did, or
        None to decline. ``features`` (``"broadcast"``, ``"reduction"``) opts in to richer runs; without them
        the fuser receives plain elementwise runs only. See docs/vendor-guide.md, "Fusers"."""
        if not callable(fuser):
            raise TypeError(f"register_fuser('{device_type}'): fuser must be callable, not {type(fuser).__name__}")
        if self.provides is not None and device_type not in self._declared("device_types"):
            raise RuntimeError(f"plugin '{self.plugin}' registers a fuser for device type '{device_type}', which "
                               f"is not its own; refused")
        from .compiler._fusion import FEATURES
        feats = (features,) if isinstance(features, str) else tuple(features)
        unknown = sorted(set(feats) - set(FEATURES))
        if unknown:
            raise ValueError(f"register_fuser('{device_type}'): unknown fuser feature(s) {unknown}; known: "
                             f"{list(FEATURES)}")

        def apply():
            if device_type not in _registry.device_types:
                raise RuntimeError(f"register_fuser: unknown device type '{device_type}'")
            return _registry.register_fuser(device_type, fuser, features=feats)
        self._staged.append(apply)

    def register_layout(self, name: str) -> _layout_cls:
        """A new layout (``ember.<name>``); returns it."""
        self._require_declared("layouts", name, "layout")
        if name not in _registry.layouts:
            self._require_unshadowed(name, "layout")
        lay = _layout_cls(name)

        def apply():
            if name in _registry.layouts:
                raise RuntimeError(f"layout '{name}' is already registered")
            _registry.layouts[name] = lay
            import ember
            setattr(ember, name, lay)

            def undo():
                _registry.layouts.pop(name, None)
                import ember
                if ember.__dict__.get(name) is lay:      # only what this registration set
                    del ember.__dict__[name]
            return undo
        self._staged.append(apply)
        return lay

    def register_dtype(self, d: _dtype_cls):
        """A new dtype (``ember.<name>``), e.g. ember-quantized's qint8."""
        self._require_declared("dtypes", d.name, "dtype")
        self._require_unshadowed(d.name, "dtype")

        def apply():
            from . import _dtype
            if d.name in _dtype._BY_NAME:
                raise RuntimeError(f"plugin '{self.plugin}' registers dtype '{d.name}', which exists already")
            _dtype._register_dtype(d)
            import ember
            setattr(ember, d.name, d)

            def undo():
                from . import _dtype
                if _dtype._BY_NAME.get(d.name) is d:
                    del _dtype._BY_NAME[d.name]
                import ember
                if ember.__dict__.get(d.name) is d:      # only what this registration set
                    del ember.__dict__[d.name]
            return undo
        self._staged.append(apply)

    def register_collective_backend(self, name: str, factory, *, devices=None, is_available=None):
        """A collective backend ``name`` for ``ember.distributed`` (e.g. a vendor's for its device
        type): ``factory(rank, world_size, timeout, init_method)`` returns an
        ``ember.distributed.CollectiveBackend``; ``devices`` lists the device types it serves
        (None: all). ``init_process_group(backend=name)`` or ``"cpu:mpi,<type>:<name>"`` uses it."""
        def apply():
            from .distributed import _backend
            _backend.register_backend(name, factory, devices=devices, owner=f"plugin '{self.plugin}'",
                                      is_available=is_available)
            return lambda: _backend.unregister_backend(name)
        self._staged.append(apply)

    def library(self, namespace: str) -> "Library":
        """A ``Library`` whose registrations are part of this plugin's (all-or-nothing)."""
        lib = Library(namespace, _registry=self)
        self._libraries.append(lib)
        return lib

    def _commit(self):
        try:
            for apply in self._staged:
                self._undo.append(apply())
        except Exception:
            self._rollback()
            raise
        self._staged = []

    def _rollback(self):
        for undo in reversed(self._undo):
            undo()
        self._undo = []
        self._staged = []


def _key_args(device, layout, dtypes):
    device = ANY if device is None or device is ANY else (device.type if isinstance(device, _device_cls) else device)
    lay = layout if layout is not None else _registry.layouts["strided"]
    lay = ANY if lay is ANY else (lay.name if isinstance(lay, _layout_cls) else lay)
    if dtypes is not None and dtypes is not ANY:
        dtypes = [dtypes] if isinstance(dtypes, _dtype_cls) else list(dtypes)
    return device, lay, dtypes


class Library:
    """Kernels and new ops from one namespace (matches torch.library.Library in spirit).

    ``Library("myplugin")`` used directly registers immediately (and ``_destroy()``
    removes its registrations); from ``registry.library(ns)`` inside ``ember_register``
    it is part of the plugin's all-or-nothing registration.
    """

    def __init__(self, namespace: str, kind: str = "IMPL", *, _registry=None):
        self.ns = namespace
        self._registry = _registry
        self._undo = []
        self._ops = []

    def _do(self, apply):
        if self._registry is not None:
            self._registry._staged.append(apply)
        else:
            self._undo.append(apply())

    def _op_name(self, op_name: str) -> str:
        """The dispatcher's name for ``op_name``: "add", "add.out" (an overload suffix is
        accepted), "myns::scaled" or, for an op this namespace defined, "scaled" -> "myns_scaled"."""
        if "::" in op_name:
            ns, _, rest = op_name.partition("::")
            return rest if ns == "aten" or ns == "ember" else f"{ns}_{rest}"
        base = op_name.split(".")[0]
        own = f"{self.ns}_{base}"
        if base not in _dispatch.ops and (own in _dispatch.ops or own in self._pending_defs()):
            return f"{self.ns}_{op_name}"
        return op_name

    def _pending_defs(self) -> set:
        # ops defined by a staged (not yet committed) define of this plugin, so that a plugin
        # may define an op and register its kernels in the same ember_register
        if self._registry is None:
            return set()
        return self._registry._defined_ops()

    def impl(self, op_name: str, fn=None, *, device=ANY, layout=None, dtypes=None, priority: int = 0):
        """Register ``fn`` as the kernel of ``op_name`` for (device, layout, each dtype).

        ``op_name`` is a core op ("add"; an overload suffix such as "add.out" is accepted)
        or a defined one ("myns::scaled", or "scaled" from the library that defined it).
        ``device``/``dtypes`` may be ``ANY``; ``layout`` defaults to ``ember.strided``.
        Structured ops' kernels take the op's arguments plus ``out=``; free-form kernels
        return their outputs. Usable as a decorator. Raises ValueError for an unknown op,
        and RuntimeError naming both owners if another library registered the same
        (op, key) with no higher priority.
        """
        if fn is None:
            return lambda f: self.impl(op_name, f, device=device, layout=layout, dtypes=dtypes, priority=priority)
        name = self._op_name(op_name)
        if name.split(".")[0] not in self._pending_defs():
            _dispatch.lookup(name)          # ValueError now for an unknown op
        key = _key_args(device, layout, dtypes)
        if self._registry is not None and priority <= 0 and not self._registry.owns_key(name, *key):
            dev_owner = _registry.device_types[key[0]].plugin if key[0] in _registry.device_types else None
            where = ", ".join("any" if k is ANY or k is None else ("/".join(d.name for d in k) if isinstance(k, list)
                                                                      else str(k)) for k in key)
            raise RuntimeError(
                f"plugin '{self._registry.plugin}' may not register a kernel of '{name}' at ({where}): that device "
                f"type, layout and dtype are not its own" +
                (f" (device type '{key[0]}' belongs to plugin '{dev_owner}')" if dev_owner else "") +
                "; a plugin registers kernels for the device types, layouts or dtypes its manifest declares, "
                "or for ops it defines (an explicit override of another plugin's kernels needs priority > 0)")
        owner = self._registry.plugin if self._registry is not None else self.ns
        self._do(lambda: _dispatch.lookup(name).register(key[0], key[1], key[2], fn, owner, priority))
        return fn

    def define(self, schema: str, meta, *, structured=True, composite=None, inplace=False, doc=None,
               multi_output_type=None) -> str:
        """Declare a new op ``<namespace>::<name>``; it becomes ``ember.ops.<namespace>.<name>``
        (and ``<name>_`` with ``inplace=True``).

        ``meta`` does shape/dtype inference and checks, as for core ops (see ``_dispatch.declare``).
        Returns the qualified name ``"<namespace>::<name>"`` (torch.library returns the bare
        name); ``impl`` accepts it. RuntimeError if the op is already declared.
        """
        from . import ops as ops_mod
        sch = schema.split("::", 1)[1] if "::" in schema else schema
        short = sch.split("(", 1)[0].split(".")[0].strip()
        if short.startswith(self.ns + "_"):
            short = short[len(self.ns) + 1:]
        else:
            sch = f"{self.ns}_{sch.strip()}"
        self._ops.append(f"{self.ns}_{short}")

        def apply():
            fn = _dispatch.declare(sch, meta, structured=structured, composite=composite, inplace=inplace,
                                   doc=doc, multi_output_type=multi_output_type)
            # who defined it: saved ember.jit graphs name the op and its plugin, so loading without it says so
            fn._op.qualname = f"{self.ns}::{short}"
            fn._op.plugin = self._registry.plugin if self._registry is not None else None
            ns_obj = ops_mod.__dict__.setdefault(self.ns, types.SimpleNamespace())
            setattr(ns_obj, short, fn)
            if inplace:
                setattr(ns_obj, short + "_", fn.inplace)

            def undo():
                _dispatch.ops.pop(fn._op.name, None)
                ns_obj.__dict__.pop(short, None)
                ns_obj.__dict__.pop(short + "_", None)
                if not ns_obj.__dict__:
                    ops_mod.__dict__.pop(self.ns, None)
                _dispatch.invalidate_caches()
            return undo
        self._do(apply)
        return f"{self.ns}::{short}"

    def _destroy(self):
        """Remove everything this library registered."""
        for undo in reversed(self._undo):
            undo()
        self._undo = []


def register_autograd(op_name: str, backward, *, setup_context=None, lib=None):
    """Make a plugin-defined op differentiable (matches torch.library.register_autograd).

    :param op_name: ``"<namespace>::<name>"`` as returned by ``Library.define`` (or the op's
        dispatcher name ``"<namespace>_<name>"``).
    :param backward: ``backward(ctx, *grad_outputs)`` returning one gradient (or None) per
        argument of the op's schema, in order.
    :param setup_context: ``setup_context(ctx, inputs, output)`` run after the forward;
        it may call ``ctx.save_for_backward(...)`` and set attributes on ``ctx``.
    :param lib: the ``Library`` that defined the op; inside ``ember_register`` (a library from
        ``registry.library``) the registration is staged with the plugin's, after its ``define``.
    :raises ValueError: for an unknown op.
    """
    if lib is not None and lib._registry is not None:
        def apply():
            register_autograd(op_name, backward, setup_context=setup_context)
            return lambda: None          # the op itself goes away with the define's undo
        lib._do(apply)
        return
    from .autograd.function import CustomOpDerivative
    op = _dispatch.lookup(op_name.replace("::", "_"))
    op.autograd = CustomOpDerivative(op, backward, setup_context)
    from .autograd._fastpath import generic_recorder
    op.rec = generic_recorder(op)
    _dispatch.invalidate_caches()


def cpu_fallback(op, args, kwargs):
    """A fallback a device plugin may register: copy tensor arguments to cpu, run the cpu
    kernel, copy results (and ``out=`` tensors) back to the original device."""
    from ._tensor import Tensor
    cpu = _device_cls("cpu")
    device = next(a.device for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor))

    def to_cpu(x):
        if isinstance(x, Tensor):
            return x.to(cpu)
        if isinstance(x, (list, tuple)):
            return type(x)(to_cpu(v) for v in x)
        return x
    cargs = [to_cpu(a) for a in args]
    ckw = {k: to_cpu(v) for k, v in kwargs.items()}
    out = kwargs.get("out")
    # the cpu key is the one the op's meta computes for the cpu copies (its compute dtype,
    # e.g. float32 for int64 + 2.5), not simply the first tensor's dtype
    key = op.meta(*cargs, **{k: v for k, v in ckw.items() if k != "out"})[1]
    kernel = op.resolve(key)
    result = kernel(*cargs, **ckw)
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        couts = ckw["out"] if isinstance(ckw["out"], tuple) else (ckw["out"],)
        for o, c in zip(outs, couts):
            o.copy_(c)
        return None
    if isinstance(result, Tensor):
        return result.to(device)
    if isinstance(result, tuple):
        moved = [r.to(device) if isinstance(r, Tensor) else r for r in result]
        return type(result)(*moved) if hasattr(result, "_fields") else type(result)(moved)
    return result
