"""The ember-opencl runtime: devices, raw memory, host transfers, random state.

Devices: ``_enumerate`` lists every platform (after ``_icd`` made pip-installed runtimes
visible to the ICD loader), keeps those ``EMBER_OPENCL_PLATFORM=<substring>`` selects, and
*probes* each candidate device: a trivial kernel is built and run on it, once per process, and
only a device that passes counts. Non-CPU devices come first (``opencl:0``, ``opencl:1``, ...
in platform order), then the CPU through one platform: the first in ``CPU_PREFERENCE`` that
passes (the same CPU is never exposed twice). Discovery runs on the first call that needs it;
the probe's context and queue become the device's ``DeviceState``. With no usable device the
runtime reports ``device_count() == 0``, ``is_available() is False``, and
``ember.opencl.unavailable_reason()`` gives the runtime's own message and the fix;
``ember info`` lists every platform and device with its probe result (``info_lines``).

Memory: the raw allocator hands out one ``cl.Buffer`` per allocation (the storage's handle)
under the core's ``CachingAllocator``; views address it through their storage offset, which
kernels receive as an argument, so a view never needs a sub-buffer or a copy. ``allocate``
raises ``MemoryError`` (which the core turns into ``ember.OutOfMemoryError`` after freeing its
cache) beyond the device's ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` or its global memory.

Transfers: ``to_numpy`` reads the byte span a strided tensor covers and views it with the
tensor's strides on the host (a sparse view of a big storage is first gathered on the
device); ``from_numpy`` writes contiguous destinations directly and strided ones through a
contiguous device temporary and the copy kernel.
"""
from __future__ import annotations

import os
import time

import numpy as np

from ember.library import DeviceRuntime, PhiloxState

from . import _codegen


class DeviceState:
    """One OpenCL device in use: its context, in-order queue and compiled-kernel cache."""

    def __init__(self, index: int, device, platform=None, context=None, queue=None):
        import pyopencl as cl
        self.index = index
        self.label = f"opencl:{index}"
        self.device = device
        self.platform = platform if platform is not None else device.platform
        self.runtime_label = platform_label(self.platform)
        self.context = context if context is not None else cl.Context([device])
        # in-order: kernels run in launch order
        self.queue = queue if queue is not None else cl.CommandQueue(self.context, device)
        exts = device.extensions.split()
        self.fp64 = "cl_khr_fp64" in exts
        self.fp16 = "cl_khr_fp16" in exts
        self.int64_atomics = "cl_khr_int64_base_atomics" in exts
        self.max_work_group_size = device.max_work_group_size
        self.local_mem_size = device.local_mem_size
        self.build_options = []
        self.kernels = {}            # (source, name) -> cl.Kernel (see _codegen.build)
        self.compiles = 0            # programs built in this process (cache misses)

    def __repr__(self):
        return f"DeviceState({self.label}, {self.device.name!r})"


#: CPU platforms in order of preference when several work (see docs/opencl.md for the measurements)
CPU_PREFERENCE = ("intel", "pocl")
#: install advice for a machine without a working CPU OpenCL platform
FIX = ("pip install 'ember-opencl[cpu]' (from a checkout: pip install './plugins/opencl[cpu]'), which brings "
       "PoCL and Intel's CPU runtime (it runs on any x86-64 CPU); select a platform with "
       "EMBER_OPENCL_PLATFORM=<name>, or turn the plugin off with EMBER_DISABLE_PLUGINS=opencl")
#: the probe: a trivial kernel built and run on every candidate device before it counts as available
PROBE_SOURCE = """__kernel void ember_probe(__global int* a) {
    int i = get_global_id(0); a[i] = 3 * i + 1;
}"""


def platform_alias(platform) -> str:
    """A short name for a platform: "intel" (Intel's CPU runtime), "pocl", or its lower-cased name."""
    name = platform.name.strip()
    if "Portable Computing Language" in name or "pocl" in platform.vendor.lower():
        return "pocl"
    if name.startswith("Intel(R) OpenCL") and "Graphics" not in name and "FPGA" not in name:
        return "intel"
    return name.lower()


def platform_label(platform) -> str:
    """``'NAME' (VERSION)`` of a platform, for reports."""
    return f"'{platform.name.strip()}' ({platform.version.strip()})"


def _matches(platform, want: str) -> bool:
    """Whether EMBER_OPENCL_PLATFORM=``want`` (a substring, case-insensitive) selects ``platform``."""
    hay = f"{platform.name} {platform.vendor} {platform_alias(platform)}".lower()
    return want in hay


def probe(device):
    """Build and run ``PROBE_SOURCE`` on ``device``: ``(context, queue)`` when it works, else raise
    RuntimeError with the runtime's own message (the first lines of the build log)."""
    import pyopencl as cl
    try:
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx, device)
        try:
            prg = _codegen.build_program(ctx, PROBE_SOURCE)
        except cl.Error as e:
            lines = [ln.strip() for ln in _codegen.build_log(e).strip().splitlines() if ln.strip()]
            raise RuntimeError("building a trivial kernel failed: " + " | ".join(lines[:6])) from None
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
        prg.ember_probe(queue, (4,), None, buf)
        out = np.zeros(4, np.int32)
        cl.enqueue_copy(queue, out, buf, is_blocking=True)
        buf.release()
    except RuntimeError:
        raise
    except Exception as e:  # noqa: BLE001 - cl.Error, driver faults: all mean "not usable"
        raise RuntimeError(f"{type(e).__name__}: {e}") from None
    if out.tolist() != [1, 4, 7, 10]:
        raise RuntimeError(f"a trivial kernel gave wrong results ({out.tolist()} instead of [1, 4, 7, 10])")
    return ctx, queue


class DeviceReport:
    """What discovery found out about one device (or a platform without devices), for ``ember info``."""

    def __init__(self, platform, device, status, detail="", seconds=0.0):
        self.platform, self.device, self.status, self.detail, self.seconds = platform, device, status, detail, seconds

    def line(self) -> str:
        """One line: platform, device, status, detail (and the probe time)."""
        dev = f"'{self.device.name.strip()}'" if self.device is not None else "(no device)"
        t = f" (probe {self.seconds * 1000:.0f} ms)" if self.seconds else ""
        return f"{platform_label(self.platform)} {dev}: {self.status}{t}" + (f" - {self.detail}" if self.detail else "")


def _is_cpu(device) -> bool:
    import pyopencl as cl
    return bool(device.type & cl.device_type.CPU)


def _enumerate(probe_fn=None):
    """Discover, probe and select the devices ember uses.

    Returns ``(devices, reason, reports, probed)``: ``[(platform, device)]`` in use (ordered: non-CPU
    devices in platform order, then the CPU platform chosen), the reason when there is none, a
    ``DeviceReport`` per device seen, and ``{device.int_ptr: (context, queue)}`` from the probes."""
    from . import _icd
    probe_fn = probe_fn or probe
    exposed = _icd.expose_installed_runtimes()
    problems = [f"{n}: {why}" for n, why in exposed.problems]
    try:
        import pyopencl as cl
    except Exception as e:  # noqa: BLE001 - a broken install must not break ember
        return [], f"pyopencl cannot be imported ({type(e).__name__}: {e}); {FIX}", [], {}
    try:
        platforms = cl.get_platforms()
    except Exception as e:  # noqa: BLE001 - e.g. cl.LogicError PLATFORM_NOT_FOUND_KHR
        platforms, err = [], f"{type(e).__name__}: {e}"
    else:
        err = None
    want = os.environ.get("EMBER_OPENCL_PLATFORM", "").strip().lower()
    reports, seen, kept = [], set(), []
    for p in platforms:
        key = (p.name.strip(), p.version.strip(), p.vendor.strip())
        if key in seen:                 # the same runtime listed twice (two ICD files naming it)
            continue
        seen.add(key)
        try:
            devs = p.get_devices()
        except Exception as e:  # noqa: BLE001 - a platform without devices
            reports.append(DeviceReport(p, None, "no devices", f"{type(e).__name__}: {e}"))
            continue
        if want and not _matches(p, want):
            reports.extend(DeviceReport(p, d, "not used", f"EMBER_OPENCL_PLATFORM={want!r} selects another "
                                                           f"platform") for d in devs)
            continue
        kept.append((p, devs))
    # non-CPU platforms in their order, then CPU platforms in order of preference
    def rank(item):
        p, devs = item
        cpu = all(_is_cpu(d) for d in devs)
        alias = platform_alias(p)
        return (cpu, CPU_PREFERENCE.index(alias) if cpu and alias in CPU_PREFERENCE else len(CPU_PREFERENCE))
    kept.sort(key=rank)
    used, probed, cpu_chosen = [], {}, None
    for p, devs in kept:
        for d in devs:
            if _is_cpu(d) and cpu_chosen is not None and cpu_chosen is not p:
                reports.append(DeviceReport(p, d, "not used", f"the CPU is already used through "
                                                              f"{platform_label(cpu_chosen)}; "
                                                              f"EMBER_OPENCL_PLATFORM={platform_alias(p)} selects this one"))
                continue
            t0 = time.perf_counter()
            try:
                probed[d.int_ptr] = probe_fn(d)
            except Exception as e:  # noqa: BLE001 - any failure means the device is not usable
                reports.append(DeviceReport(p, d, "failed the probe", str(e), time.perf_counter() - t0))
                continue
            reports.append(DeviceReport(p, d, "available", "", time.perf_counter() - t0))
            used.append((p, d))
            if _is_cpu(d):
                cpu_chosen = p
    if used:
        return used, None, reports, probed
    if not platforms:
        why = "no OpenCL platform found" + (f" ({err})" if err else "")
    elif not kept:
        names = ", ".join(platform_label(p) for p in platforms)
        why = f"no OpenCL platform matches EMBER_OPENCL_PLATFORM={want!r} (platforms: {names})"
    else:
        failed = [r for r in reports if r.status in ("failed the probe", "no devices")]
        why = "no usable OpenCL device: " + "; ".join(r.line() for r in failed) if failed else \
            "no OpenCL device on the platforms " + ", ".join(platform_label(p) for p, _ in kept)
    if problems:
        why += " (installed but unusable: " + "; ".join(problems) + ")"
    return [], f"{why}. Fix: {FIX}", reports, probed


class OpenCLRuntime(DeviceRuntime):
    """Every OpenCL device of every platform; one context and in-order queue each, lazily."""

    name = "opencl"
    indexed = True
    host_memory = False          # tensor.numpy() refuses, as for cuda: the memory is on the device
    services = frozenset()       # no streams / events / pinned memory: nothing declared that does not work
    asynchronous = True          # kernels are enqueued on the in-order queue; host reads and writes block

    def __init__(self, probe_fn=None):
        self._devices = None     # [(platform, device)] in use, found on first need
        self._reason = None
        self._reports = []       # DeviceReport per device seen
        self._probed = {}        # device.int_ptr -> (context, queue) made by the probe
        self._probe_fn = probe_fn
        self._states = {}
        self._used = {}          # device index -> bytes held in raw buffers

    # -- discovery
    def devices(self):
        """The [(platform, device)] pyopencl pairs in use: found, probed (a trivial kernel built and run)
        and selected once, on first call (see ``_enumerate``)."""
        if self._devices is None:
            self._devices, self._reason, self._reports, self._probed = _enumerate(self._probe_fn)
        return self._devices

    def reports(self):
        """A ``DeviceReport`` per OpenCL device seen: available, failed the probe (why), not used (why)."""
        self.devices()
        return list(self._reports)

    def info_lines(self):
        """Lines for ``ember info``: the ICD set-up and every platform / device with its probe result."""
        from . import _icd
        self.devices()
        lines = []
        e = _icd.EXPOSED
        if e.vendors_dir:
            lines.append(f"OCL_ICD_VENDORS set by ember-opencl to make {', '.join(e.added)} visible")
        elif e.respected_user:
            lines.append(f"OCL_ICD_VENDORS={e.respected_user} (set by the user; kept as it is)")
        lines += [f"{n}: {why}" for n, why in e.problems]
        lines += [r.line() for r in self._reports]
        return lines

    def unavailable_reason(self):
        """Why there is no opencl device (None when there is one)."""
        self.devices()
        return self._reason

    def is_available(self):
        """DeviceRuntime.is_available: whether any OpenCL device was found (False on any enumeration error)."""
        try:
            return len(self.devices()) > 0
        except Exception:  # noqa: BLE001 - must not raise
            return False

    def device_count(self):
        """DeviceRuntime.device_count: the number of OpenCL devices found."""
        return len(self.devices())

    def _check_index(self, index):
        n = self.device_count()
        if not 0 <= index < n:
            why = f" ({self._reason})" if n == 0 and self._reason else ""
            raise RuntimeError(f"Invalid device ordinal opencl:{index}: there {'is' if n == 1 else 'are'} {n} "
                               f"opencl device{'' if n == 1 else 's'}{why}")

    def state(self, index: int) -> DeviceState:
        """The device's state, creating its context and queue on first use."""
        st = self._states.get(index)
        if st is None:
            self._check_index(index)
            p, d = self.devices()[index]
            ctx, queue = self._probed.get(d.int_ptr, (None, None))
            st = self._states[index] = DeviceState(index, d, p, ctx, queue)
        return st

    def get_device_name(self, index):
        """DeviceRuntime.get_device_name: 'DEVICE (PLATFORM)'; RuntimeError 'Invalid device ordinal opencl:i ...' for
        a bad index.
        """
        self._check_index(index)
        p, d = self.devices()[index]
        return f"{d.name.strip()} ({p.name.strip()})"

    def total_memory(self, index):
        """The device's CL_DEVICE_GLOBAL_MEM_SIZE in bytes; RuntimeError for a bad index."""
        self._check_index(index)
        return int(self.devices()[index][1].global_mem_size)

    def synchronize(self, index):
        """DeviceRuntime.synchronize: finish the device's queue (nothing to do for a device never used)."""
        st = self._states.get(index)
        if st is not None:       # a device never used has nothing queued
            st.queue.finish()

    # -- raw memory (the core's CachingAllocator calls these)
    def allocate(self, nbytes, device_index):
        """DeviceRuntime.allocate: a READ_WRITE cl.Buffer of ``nbytes`` (at least 1); MemoryError past
        CL_DEVICE_MAX_MEM_ALLOC_SIZE, past the device's global memory as counted by ember, or when clCreateBuffer
        fails.
        """
        import pyopencl as cl
        st = self.state(device_index)
        d = st.device
        nbytes = max(int(nbytes), 1)
        used = self._used.get(device_index, 0)
        if nbytes > d.max_mem_alloc_size or used + nbytes > d.global_mem_size:
            raise MemoryError(
                f"opencl:{device_index} ('{d.name.strip()}') cannot allocate {nbytes} bytes: "
                f"{used} of {d.global_mem_size} bytes are in use by ember and one buffer may hold at most "
                f"{d.max_mem_alloc_size} bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE); free tensors or call "
                f"ember.opencl.empty_cache()")
        try:
            buf = cl.Buffer(st.context, cl.mem_flags.READ_WRITE, nbytes)
        except (cl.MemoryError, cl.RuntimeError) as e:
            raise MemoryError(f"opencl:{device_index}: clCreateBuffer({nbytes} bytes) failed: {e}") from None
        buf.ember_device = device_index
        self._used[device_index] = used + nbytes
        return buf

    def sub_allocation(self, handle, offset, nbytes):
        """A sub-buffer for ``nbytes`` bytes at ``offset`` of ``handle`` (the core's small pool
        carves 512-byte-aligned blocks from 2 MiB buffers with it). Freed with ``free`` like any
        buffer; it does not count against the device's memory (its parent does)."""
        import pyopencl as cl
        sub = handle.get_sub_region(offset, nbytes, cl.mem_flags.READ_WRITE)
        sub.ember_device = handle.ember_device
        sub.ember_sub = True
        return sub

    def free(self, handle):
        """DeviceRuntime.free: release the buffer (or sub-buffer) and uncount its bytes."""
        if getattr(handle, "ember_sub", False):
            handle.release()
            return
        i = handle.ember_device
        self._used[i] = self._used.get(i, 0) - handle.size
        handle.release()

    def data_ptr(self, handle):
        """DeviceRuntime.data_ptr: the buffer's cl_mem handle as an int."""
        return handle.int_ptr        # the cl_mem handle: unique per buffer, shared by its views

    # -- host transfers
    def to_numpy(self, tensor):
        """DeviceRuntime.to_numpy: a blocking read of the tensor's span into a new host array (sparse views of big
        storages are made contiguous on the device first).
        """
        import pyopencl as cl
        shape, dt = tuple(tensor.shape), tensor.dtype.numpy_dtype
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if n == 0:
            return np.empty(shape, dt)
        strides, off = tuple(tensor.stride()), tensor.storage_offset()
        lo = off + sum((k - 1) * s for k, s in zip(shape, strides) if s < 0)
        hi = off + sum((k - 1) * s for k, s in zip(shape, strides) if s > 0)
        span = hi - lo + 1
        if span > 2 * n + 4096:                     # a sparse view of a big storage: gather on the device
            from .kernels.copy import contiguous_copy
            return self.to_numpy(contiguous_copy(tensor))
        st = self.state(tensor.device.index or 0)
        host = np.empty(span, dt)
        cl.enqueue_copy(st.queue, host, tensor.untyped_storage().handle, src_offset=lo * dt.itemsize,
                        is_blocking=True)
        isz = dt.itemsize
        v = np.lib.stride_tricks.as_strided(host[off - lo:], shape, tuple(s * isz for s in strides))
        if span == n and _c_contiguous(shape, strides):
            return host.reshape(shape)
        return v.copy()

    def from_numpy(self, tensor, array):
        """DeviceRuntime.from_numpy: cast / broadcast ``array`` to the tensor, blocking write (contiguous) or write to
        a temporary then a strided copy kernel.
        """
        import pyopencl as cl
        shape, dt = tuple(tensor.shape), tensor.dtype.numpy_dtype
        if 0 in shape:
            return
        a = np.asarray(array)
        if a.shape != shape:
            a = np.broadcast_to(a, shape)
        if a.dtype != dt:
            a = a.astype(dt)                         # C-style cast (bool: != 0)
        if _c_contiguous(shape, tuple(tensor.stride())):
            a = np.ascontiguousarray(a)
            st = self.state(tensor.device.index or 0)
            cl.enqueue_copy(st.queue, tensor.untyped_storage().handle, a,
                            dst_offset=tensor.storage_offset() * dt.itemsize, is_blocking=True)
            return
        import ember
        tmp = ember.empty(shape, dtype=tensor.dtype, device=tensor.device)   # through the caching allocator
        self.from_numpy(tmp, a)
        from .kernels.copy import strided_copy
        strided_copy(tensor, tmp)

    # -- random numbers
    def new_generator_state(self, seed, device_index):
        """DeviceRuntime.new_generator_state: a counter-based PhiloxState seeded with ``seed``."""
        return PhiloxState(seed)

    # -- the device module: ember.opencl.<extra>
    def module_extras(self):
        """DeviceRuntime.module_extras: unavailable_reason, get_device_properties and kernel_cache_info for
        ember.opencl.
        """
        def unavailable_reason():
            """Why ember.opencl.is_available() is False (None when a device is available)."""
            return self.unavailable_reason()

        def get_device_properties(device=None):
            """Name, platform, memory and extensions of an opencl device (default: the current one)."""
            i = _index(device, self.current_device())
            self._check_index(i)
            p, d = self.devices()[i]
            exts = d.extensions.split()
            return {"name": d.name.strip(), "platform": p.name.strip(), "platform_version": p.version.strip(),
                    "runtime": platform_alias(p), "vendor": d.vendor.strip(),
                    "version": d.version.strip(), "total_memory": int(d.global_mem_size),
                    "max_alloc": int(d.max_mem_alloc_size), "compute_units": int(d.max_compute_units),
                    "max_work_group_size": int(d.max_work_group_size), "local_mem_size": int(d.local_mem_size),
                    "fp64": "cl_khr_fp64" in exts, "fp16": "cl_khr_fp16" in exts, "extensions": exts}

        def kernel_cache_info(device=None):
            """Programs compiled by this process (cache misses) and kernels cached, per device."""
            i = _index(device, self.current_device())
            st = self._states.get(i)
            return {"compiles": st.compiles if st else 0, "cached_kernels": len(st.kernels) if st else 0}
        return {"unavailable_reason": unavailable_reason, "get_device_properties": get_device_properties,
                "kernel_cache_info": kernel_cache_info}


def _index(device, default):
    if device is None:
        return default
    if isinstance(device, int):
        return device
    import ember
    return ember.device(device).index or 0


def _c_contiguous(shape, strides) -> bool:
    expect = 1
    for k, s in zip(reversed(shape), reversed(strides)):
        if k != 1 and s != expect:
            return False
        expect *= k
    return True


RUNTIME = OpenCLRuntime()
