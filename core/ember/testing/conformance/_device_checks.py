"""Device-level checks: what every device type must get right beside its op kernels.

Each check is ``check_<name>(target)``: it returns when the device passes, raises
``ConformanceFailure`` with a readable message when it does not, and ``NotApplicable`` when
the device does not declare what the check needs (the report says why). A runtime declares
its optional services in ``DeviceRuntime.services``; for each one the suite knows
(``streams``, ``events``, ``pinned_memory``) a declared service must work and an undeclared
one must raise ``NotImplementedError`` — never do nothing.

The checks are named ``device_<name>`` in reports and xfails files. ``device_roundtrip``
(``_roundtrip``) runs once per registered dtype, its results scoped to that dtype (an xfail
``device_roundtrip * qint8 reason`` names one); ``device_modules`` (``_smoke``) trains a tiny MLP
and CNN on the device and on cpu and compares them.
"""
from __future__ import annotations

import gc
import io
import warnings

import numpy as np

from ._check_common import fail, host, same
from ._roundtrip import check_roundtrip, roundtrip_dtypes
from ._runner import ConformanceFailure, NotApplicable
from ._smoke import check_modules

__all__ = ["DEVICE_CHECKS", "PER_DTYPE", "device_check_cases", "run_device_check"]

#: services the suite knows how to check
KNOWN_SERVICES = ("streams", "events", "pinned_memory")


def _sample(dtype_name, shape=(3, 4), seed=0):
    import ember
    from .._opinfo import make_tensor
    return make_tensor(shape, dtype=getattr(ember, dtype_name), seed=seed)


def _runtime(target):
    from ember import _registry
    return _registry.device_type(target.device_type).runtime


def _module(target):
    from ember import _registry
    return _registry.device_type(target.device_type).module


# ---------------------------------------------------------------- data movement
def check_copies(target):
    """copy_ within the device (with a dtype cast, into a non-contiguous destination), and between
    two devices of the type when device_count() > 1."""
    import ember
    dev, problems = target.device, []
    floats = [d for d in ("float32", "float64", "float16") if d in target.dtypes]
    ints = [d for d in ("int32", "int64", "int16") if d in target.dtypes]
    x = _sample(floats[0] if floats else target.dtypes[-1], (3, 4), seed=2)
    xd = x.to(dev)
    try:
        y = ember.empty((3, 4), dtype=x.dtype, device=dev)
        y.copy_(xd)
        problems.append(same(y, x, "copy_ within the device"))
        z = ember.empty((4, 3), dtype=x.dtype, device=dev).t()      # non-contiguous destination
        z.copy_(xd)
        problems.append(same(z, x, "copy_ into a transposed destination"))
        w = ember.empty((3, 2), dtype=x.dtype, device=dev)
        w.copy_(xd[:, ::2])                                          # non-contiguous source
        problems.append(same(w, x[:, ::2], "copy_ from a sliced source"))
        h = ember.empty((3, 4), dtype=x.dtype)
        h.copy_(xd)                                                  # device -> host through copy_
        problems.append(same(h, x, "copy_ device -> cpu"))
        if ints and floats:
            c = ember.empty((3, 4), dtype=getattr(ember, ints[0]), device=dev)
            c.copy_(xd)
            problems.append(same(c, x.to(getattr(ember, ints[0])), f"copy_ with a cast {x.dtype.name} -> {ints[0]}"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}")
    if target.second is not None:
        try:
            o = xd.to(target.second)
            if o.device != target.second:
                problems.append(f".to({target.second}) gave a tensor on {o.device}")
            problems.append(same(o, x, f"{dev} -> {target.second}"))
            back = ember.empty((3, 4), dtype=x.dtype, device=dev)
            back.copy_(o)
            problems.append(same(back, x, f"copy_ {target.second} -> {dev}"))
        except Exception as e:  # noqa: BLE001
            problems.append(f"between {dev} and {target.second}: {type(e).__name__}: {e}")
    problems = [p for p in problems if p]
    if problems:
        fail("copies", target, problems)


def check_peer_copy(target):
    """Copies between the first two devices of the type, both ways: contiguous, from a non-contiguous
    source, into a non-contiguous destination, with a cast and with broadcasting; values as on cpu, and
    the destination's other memory untouched. Whichever path the copies take (the runtime's
    ``copy_across``, or the core's staging through host memory) must give the same values; the report
    lists the paths."""
    import ember
    if target.second is None:
        raise NotApplicable(f"one {target.device_type} device: nothing to copy between")
    floats = [d for d in ("float32", "float64", "float16") if d in target.dtypes]
    ints = [d for d in ("int32", "int64", "int16") if d in target.dtypes]
    x = _sample(floats[0] if floats else target.dtypes[-1], (4, 6), seed=3)
    problems = []
    for a, b in ((target.device, target.second), (target.second, target.device)):
        xa, where = x.to(a), f"{a} -> {b}"
        try:
            problems.append(same(xa.to(b), x, f"{where}: .to"))
            problems.append(same(xa[:, 1::2].to(b), x[:, 1::2], f"{where}: a sliced source"))
            d = ember.empty((6, 4), dtype=x.dtype, device=b).t()
            d.copy_(xa)
            problems.append(same(d, x, f"{where}: into a transposed destination"))
            wide = ember.zeros((4, 8), dtype=x.dtype, device=b)
            wide[:, 1:7].copy_(xa)                  # a window: the columns around it stay zero
            problems.append(same(wide[:, 1:7], x, f"{where}: into a window") or
                            same(wide[:, ::7], ember.zeros((4, 2), dtype=x.dtype), f"{where}: around the window"))
            r = ember.empty((2, 4, 6), dtype=x.dtype, device=b)
            r.copy_(xa)
            problems.append(same(r, x.expand(2, 4, 6), f"{where}: broadcast to (2, 4, 6)"))
            if ints and floats:
                c = ember.empty((4, 6), dtype=getattr(ember, ints[0]), device=b)
                c.copy_(xa)
                problems.append(same(c, x.to(getattr(ember, ints[0])), f"{where}: with a cast to {ints[0]}"))
        except Exception as e:  # noqa: BLE001
            problems.append(f"{where}: {type(e).__name__}: {e}")
    problems = [p for p in problems if p]
    if problems:
        fail("peer_copy", target, problems)


def check_views(target):
    """view, t(), slicing, as_strided and contiguous on the device: values, strides, shared storage."""
    import ember
    d = "float32" if "float32" in target.dtypes else target.dtypes[-1]
    base_np = np.arange(24).reshape(4, 6)
    x = ember.tensor(base_np, dtype=getattr(ember, d)).to(target.device)
    ref = base_np.astype(np.float64)
    problems = []
    ptr = x.untyped_storage().data_ptr()
    cases = [
        ("view(6, 4)", lambda t: t.view(6, 4), ref.reshape(6, 4), (4, 1)),
        ("t()", lambda t: t.t(), ref.T, (1, 6)),
        ("[1:, ::2]", lambda t: t[1:, ::2], ref[1:, ::2], (6, 2)),
        ("as_strided((2, 3), (1, 2), 3)", lambda t: t.as_strided((2, 3), (1, 2), 3),
         np.lib.stride_tricks.as_strided(ref.reshape(-1)[3:], (2, 3), (8, 16)), (1, 2)),
    ]
    for name, fn, exp, stride in cases:
        try:
            v = fn(x)
            if v.untyped_storage().data_ptr() != ptr:
                problems.append(f"{name}: does not share storage with its base")
            if tuple(v.stride()) != stride:
                problems.append(f"{name}: stride {tuple(v.stride())}, expected {stride}")
            problems.append(same(v.to(ember.float64), exp, name))
        except Exception as e:  # noqa: BLE001
            problems.append(f"{name}: {type(e).__name__}: {e}")
    try:
        v = x.t()
        c = v.contiguous()
        if not c.is_contiguous() or tuple(c.stride()) != (4, 1):
            problems.append(f"t().contiguous(): stride {tuple(c.stride())}, expected (4, 1)")
        problems.append(same(c.to(ember.float64), ref.T, "t().contiguous()"))
        if x.contiguous() is not x:
            problems.append("contiguous() of a contiguous tensor is not the tensor itself")
        w = x[1:3, 2:4]
        w.fill_(-1)                                           # a write through a view reaches the base
        ref2 = ref.copy()
        ref2[1:3, 2:4] = -1
        problems.append(same(x.to(ember.float64), ref2, "fill_ through a slice"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"contiguous / write through a view: {type(e).__name__}: {e}")
    problems = [p for p in problems if p]
    if problems:
        fail("views", target, problems)


# ---------------------------------------------------------------- memory
def check_memory_stats(target):
    """The allocator statistics have the fixed schema; allocated grows on allocation and returns to
    its start after ``del`` + ``empty_cache``."""
    import ember
    from ember._allocator import STAT_KEYS
    mod, dev, problems = _module(target), target.device, []
    gc.collect()
    stats = mod.memory_stats(dev)
    if set(stats) != set(STAT_KEYS):
        problems.append(f"memory_stats() keys differ from the fixed schema: missing "
                        f"{sorted(set(STAT_KEYS) - set(stats))}, extra {sorted(set(stats) - set(STAT_KEYS))}")
    start = mod.memory_allocated(dev)
    x = ember.empty(1 << 18, dtype=ember.uint8, device=dev)
    grown = mod.memory_allocated(dev)
    if grown < start + (1 << 18):
        problems.append(f"memory_allocated() went from {start} to {grown} after allocating {1 << 18} bytes")
    if mod.memory_reserved(dev) < grown:
        problems.append(f"memory_reserved() {mod.memory_reserved(dev)} < memory_allocated() {grown}")
    if mod.max_memory_allocated(dev) < grown:
        problems.append(f"max_memory_allocated() {mod.max_memory_allocated(dev)} < memory_allocated() {grown}")
    del x
    gc.collect()
    mod.empty_cache()
    end = mod.memory_allocated(dev)
    if end != start:
        problems.append(f"memory_allocated() is {end} after del + empty_cache(), expected its start {start}")
    if mod.memory_reserved(dev) < end:
        problems.append("memory_reserved() < memory_allocated() after empty_cache()")
    mod.reset_peak_memory_stats(dev)
    if mod.max_memory_allocated(dev) != mod.memory_allocated(dev):
        problems.append("after reset_peak_memory_stats(), max_memory_allocated() != memory_allocated()")
    via_memory = ember.memory.memory_allocated(dev)
    if via_memory != mod.memory_allocated(dev):
        problems.append(f"ember.memory.memory_allocated({dev}) = {via_memory} disagrees with "
                        f"ember.{dev.type}.memory_allocated() = {mod.memory_allocated(dev)}")
    if problems:
        fail("memory_stats", target, problems)


def check_oom(target):
    """An impossible allocation raises ember.OutOfMemoryError and leaves the allocator usable."""
    import ember
    mod, dev, problems = _module(target), target.device, []
    gc.collect()
    before = mod.memory_allocated(dev)
    huge = 1 << 60
    try:
        ember.empty(huge, dtype=ember.uint8, device=dev)
        problems.append(f"allocating {huge} bytes did not raise")
    except ember.OutOfMemoryError as e:
        if "tried to allocate" not in str(e):
            problems.append(f"OutOfMemoryError's message does not say what was requested: {e}")
    except Exception as e:  # noqa: BLE001
        problems.append(f"allocating {huge} bytes raised {type(e).__module__}.{type(e).__name__}: {e}, "
                        f"expected ember.OutOfMemoryError (a RuntimeError)")
    gc.collect()
    after = mod.memory_allocated(dev)
    if after != before:
        problems.append(f"memory_allocated() is {after} after the failed allocation, was {before} "
                        f"(the statistics were corrupted)")
    try:
        y = ember.ones(16, device=dev)
        if y.to("cpu").tolist() != [1.0] * 16:
            problems.append("a tensor allocated after the failure holds wrong values")
    except Exception as e:  # noqa: BLE001
        problems.append(f"allocating after the failure raised {type(e).__name__}: {e}")
    if problems:
        fail("oom", target, problems)


# ---------------------------------------------------------------- RNG, sync, services
def check_rng(target):
    """The same seed gives the same numbers on the device, different seeds differ."""
    import ember
    mod, dev, problems = _module(target), target.device, []
    d = getattr(ember, "float32" if "float32" in target.dtypes else "float64")
    try:
        mod.manual_seed(1234)
        a = ember.rand(64, device=dev, dtype=d)
        mod.manual_seed(1234)
        b = ember.rand(64, device=dev, dtype=d)
        mod.manual_seed(4321)
        c = ember.rand(64, device=dev, dtype=d)
        if a.device != dev:
            problems.append(f"rand(device={dev}) gave a tensor on {a.device}")
        problems.append(same(b, a, "rand after the same manual_seed"))
        if same(c, a, "") is None:     # 64 independent draws of >= 2**24 values each coincide w.p. <= 2**-1536
            problems.append("rand after different seeds gave the same numbers")
        ha = host(a)
        if not ((ha >= 0) & (ha < 1)).all():
            problems.append("rand gave values outside [0, 1)")
        g = ember.Generator(dev).manual_seed(7)
        r1 = ember.randn(32, device=dev, dtype=d, generator=g)
        g.manual_seed(7)
        r2 = ember.randn(32, device=dev, dtype=d, generator=g)
        problems.append(same(r2, r1, "randn with a re-seeded ember.Generator"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}")
    problems = [p for p in problems if p]
    if problems:
        fail("rng", target, problems)


def check_synchronize(target):
    """synchronize() (current device, and with a device argument) returns after queued work."""
    import ember
    mod, problems = _module(target), []
    try:
        x = ember.ones(8, device=target.device) * 3
        mod.synchronize()
        mod.synchronize(target.device)
        if x.to("cpu").tolist() != [3.0] * 8:
            problems.append("values after synchronize() are wrong")
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}")
    if problems:
        fail("synchronize", target, problems)


def _undeclared(target, service, call, problems):
    """An undeclared service: ``call()`` must raise NotImplementedError (or the name be absent)."""
    try:
        call()
    except (NotImplementedError, AttributeError):
        return
    except Exception as e:  # noqa: BLE001
        problems.append(f"'{service}' is not declared in services; using it raised {type(e).__name__}: {e}, "
                        f"expected NotImplementedError")
        return
    problems.append(f"'{service}' is not declared in the runtime's services, but using it did not raise "
                    f"NotImplementedError (a silent no-op); declare the service or make it raise")


def check_streams(target):
    """Streams and events where the runtime declares them ('streams', 'events'); else NotImplementedError."""
    import ember
    rt, mod, problems = _runtime(target), _module(target), []
    services = set(rt.services)
    if "streams" in services:
        try:
            s = mod.Stream()
            with mod.stream(s):
                y = ember.ones(8, device=target.device) + 1
                if mod.current_stream() != s:
                    problems.append("current_stream() inside `with stream(s)` is not s")
            s.synchronize()
            if y.to("cpu").tolist() != [2.0] * 8:
                problems.append("values computed on a stream are wrong after s.synchronize()")
        except Exception as e:  # noqa: BLE001
            problems.append(f"streams: {type(e).__name__}: {e}")
    else:
        _undeclared(target, "streams", lambda: mod.Stream(), problems)
    if "events" in services or "streams" in services and hasattr(mod, "Event"):
        try:
            e1 = mod.Event(enable_timing=True) if "events" in services else mod.Event()
            e1.record()
            e1.synchronize()
            if not e1.query():
                problems.append("Event.query() is False after Event.synchronize()")
        except Exception as e:  # noqa: BLE001
            problems.append(f"events: {type(e).__name__}: {e}")
    else:
        _undeclared(target, "events", lambda: mod.Event(), problems)
    if problems:
        fail("streams", target, problems)


def check_pin_memory(target):
    """pin_memory / non_blocking where the runtime declares 'pinned_memory'; else the runtime's
    pin_memory raises NotImplementedError. non_blocking copies give the right values either way."""
    import ember
    rt, mod, problems = _runtime(target), _module(target), []
    x = _sample("float32" if "float32" in target.dtypes else target.dtypes[-1], (4, 5), seed=3)
    if "pinned_memory" in rt.services and target.device_type != "cpu":
        try:
            p = x.pin_memory(device=target.device_type)
            if not p.is_pinned(device=target.device_type):
                problems.append("pin_memory() gave a tensor whose is_pinned() is False")
            problems.append(same(p, x, "pin_memory()"))
            y = p.to(target.device, non_blocking=True)
            mod.synchronize()
            problems.append(same(y, x, "pinned -> device with non_blocking=True"))
        except Exception as e:  # noqa: BLE001
            problems.append(f"pinned_memory: {type(e).__name__}: {e}")
    else:
        _undeclared(target, "pinned_memory", lambda: rt.pin_memory(x), problems)
    try:
        y = x.to(target.device, non_blocking=True)
        back = y.to("cpu", non_blocking=True)
        mod.synchronize()
        problems.append(same(back, x, "non_blocking=True copies to the device and back"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"non_blocking: {type(e).__name__}: {e}")
    unknown = sorted(set(rt.services) - set(KNOWN_SERVICES))
    problems = [p for p in problems if p]
    if problems:
        fail("pin_memory", target, problems + ([f"(services not checked by the suite: {unknown})"] if unknown else []))


# ---------------------------------------------------------------- serialization, autograd
def check_save_load(target):
    """ember.save / ember.load of device tensors: same device and values, views keep sharing storage,
    map_location='cpu' loads onto the host."""
    import ember
    problems = []
    x = _sample("float32" if "float32" in target.dtypes else target.dtypes[-1], (3, 4), seed=4).to(target.device)
    try:
        buf = io.BytesIO()
        ember.save({"a": x, "b": x[1:]}, buf)
        buf.seek(0)
        got = ember.load(buf)
        if got["a"].device != target.device:
            problems.append(f"loaded onto {got['a'].device}, expected {target.device}")
        problems.append(same(got["a"], x, "loaded tensor"))
        problems.append(same(got["b"], x[1:], "loaded view"))
        if got["a"].untyped_storage().data_ptr() != got["b"].untyped_storage().data_ptr():
            problems.append("a tensor and its view no longer share storage after save/load")
        buf.seek(0)
        c = ember.load(buf, map_location="cpu")["a"]
        if c.device != ember.device("cpu"):
            problems.append(f"map_location='cpu' loaded onto {c.device}")
        problems.append(same(c, x, "loaded with map_location='cpu'"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"{type(e).__name__}: {e}")
    problems = [p for p in problems if p]
    if problems:
        fail("save_load", target, problems)


def check_autograd(target):
    """gradcheck of a few ops on the device (float64, or float32 with loose tolerances)."""
    import ember
    from ember.autograd import gradcheck
    d = "float64" if "float64" in target.dtypes else "float32"
    if d not in target.dtypes:
        raise NotApplicable("the device has neither float64 nor float32")
    kw = dict(eps=1e-6, atol=1e-5, rtol=1e-3) if d == "float64" else dict(eps=1e-3, atol=1e-2, rtol=1e-2)
    dt = getattr(ember, d)

    def leaf(shape, seed, low=-2.0, high=2.0):
        from .._opinfo import make_tensor
        return make_tensor(shape, dtype=dt, seed=seed, low=low, high=high).to(target.device).requires_grad_(True)

    fns = [
        ("(x * y + x).sum()", lambda x, y: (x * y + x).sum(), ((3, 4), (3, 4))),
        ("exp(x) / y broadcast", lambda x, y: x.exp() / (y * y + 1), ((3, 4), (4,))),
        ("x @ y", lambda x, y: x @ y, ((3, 4), (4, 2))),
        ("x.t()[1:].pow(2)", lambda x: x.t()[1:] ** 2, ((3, 4),)),
    ]
    problems = []
    for name, fn, shapes in fns:
        args = tuple(leaf(s, i + 10) for i, s in enumerate(shapes))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gradcheck(fn, args, **kw)
            out = fn(*args)
            out.sum().backward()
            for a in args:
                if a.grad is None or a.grad.device != target.device:
                    problems.append(f"{name}: a gradient is {'missing' if a.grad is None else 'on ' + str(a.grad.device)}")
        except Exception as e:  # noqa: BLE001
            problems.append(f"{name} ({d}): {type(e).__name__}: {e}")
    if problems:
        fail("autograd", target, problems)


#: name -> check, in the order they run
DEVICE_CHECKS = {
    "roundtrip": check_roundtrip, "copies": check_copies, "peer_copy": check_peer_copy, "views": check_views,
    "memory_stats": check_memory_stats, "oom": check_oom, "rng": check_rng, "synchronize": check_synchronize,
    "streams": check_streams, "pin_memory": check_pin_memory, "save_load": check_save_load,
    "autograd": check_autograd, "modules": check_modules,
}

#: checks that run once per dtype (``check_<name>(target, dtype)``) -> the function giving their dtypes
PER_DTYPE = {"roundtrip": roundtrip_dtypes}


def device_check_cases(target) -> list:
    """(name, dtype) of every device check to run on ``target``, in order: dtype ``"*"`` for a check that
    runs once, each dtype name for a per-dtype check (``device_roundtrip``: every registered dtype)."""
    out = []
    for name in DEVICE_CHECKS:
        out += [(name, d) for d in PER_DTYPE[name](target)] if name in PER_DTYPE else [(name, "*")]
    return out


def run_device_check(name, target, dtype="*"):
    """Run ``device_<name>`` (for ``dtype``, when it is a per-dtype check); an unexpected exception becomes a
    ConformanceFailure.

    The checks that are not per dtype use the target's dense dtypes (a plugin dtype such as qint8, asked
    for with ``--dtype``, is tested by its plugin's OpInfos and by ``device_roundtrip``); with none, the
    device's own dtypes."""
    from ember.library import ALL_DENSE
    dense = {d.name for d in ALL_DENSE}
    if any(d not in dense for d in target.dtypes):
        import dataclasses
        from ._runner import device_dtypes
        target = dataclasses.replace(target, dtypes=[d for d in target.dtypes if d in dense] or
                                     [d for d in device_dtypes(target.device_type) if d in dense])
    try:
        if name in PER_DTYPE:
            DEVICE_CHECKS[name](target, dtype)
        else:
            DEVICE_CHECKS[name](target)
    except (ConformanceFailure, NotApplicable):
        raise
    except Exception as e:  # noqa: BLE001
        what = "" if dtype == "*" else f", dtype {dtype}"
        raise ConformanceFailure(f"device_{name} failed on device {target.device}{what}: "
                                 f"{type(e).__name__}: {e}") from e
