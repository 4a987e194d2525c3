"""The plugin system: lazy discovery, the environment variables, failing plugins (on
import, in ember_register, clashing kernels, incompatible API versions, malformed
manifests, unknown hooks, misspelt hook arguments), a vendor device plugin written in
the test (runtime, caching allocator, fallback, OutOfMemoryError) and the device module
of a device type whose plugin is missing.

Throwaway plugins are registered with ``ember.plugins.register(obj, name=...)`` and
removed with ``ember.plugins.unregister(name)``; environment variables are tested in
subprocesses.
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ember
from ember import library as L
from ember.plugins import PluginError, hookimpl
from ember.testing import HostMemoryRuntime

_names = itertools.count()


# ---------------------------------------------------------------- helpers
def _env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    env.update(extra or {})
    return env


def run_python(code, env_extra=None):
    """``code`` run in a fresh interpreter with ``env_extra`` set (EMBER_* variables cleared)."""
    return subprocess.run([sys.executable, "-c", code], env=_env(env_extra), capture_output=True, text=True,
                          timeout=60)


def _plugin(name, *, api="1.0", register=None, info=None, provides=None, **extra_hooks):
    """A plugin object named ``name``: a manifest (declaring ``provides``), optionally ``ember_register`` and more
    hooks."""
    ns = {}

    def ember_plugin_info(self):
        return info if info is not None else {"name": name, "version": "0.0.1", "api_version": api,
                                              "provides": provides or {"device_types": []}}
    ns["ember_plugin_info"] = hookimpl(ember_plugin_info)
    if register is not None:
        ns["ember_register"] = hookimpl(lambda self, registry: register(registry))
    for hook, fn in extra_hooks.items():
        ns[hook] = hookimpl(fn)
    return type(f"Plugin_{name}", (), ns)()


@pytest.fixture
def plugins():
    """Register throwaway plugins; everything registered (or recorded as failed) is removed after."""
    ember.plugins.list()        # discover the installed plugins first, so the snapshot holds them
    before = dict(ember.plugins._plugins)
    loaded = []

    def register(obj, name):
        ember.plugins.register(obj, name=name)
        loaded.append(name)
        return obj
    yield register
    for name in reversed(loaded):
        if name in ember.plugins._undo:
            ember.plugins.unregister(name)
    ember.plugins._plugins.clear()
    ember.plugins._plugins.update(before)


def _load_failing(obj, name):
    """Register a plugin expected to fail: returns (PluginError, [warning messages])."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(PluginError) as ei:
            ember.plugins.register(obj, name=name)
    return ei.value, [str(x.message) for x in w]


def _status(name):
    return next((p for p in ember.plugins.list() if p.name == name), None)


# ---------------------------------------------------------------- discovery and environment
def test_import_is_lazy_and_first_use_loads():
    r = run_python(textwrap.dedent("""
        import sys, ember
        print(ember._registry._discovered, "ember_cpu" in sys.modules)
        ember.zeros(1)
        print(ember._registry._discovered, "ember_cpu" in sys.modules)
    """))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "True", "True"]


def test_ember_plugins_restricts():
    r = run_python("import ember; print(ember.zeros(3).tolist()); "
                   "print(sorted((p.name, p.status) for p in ember.plugins.list()))",
                   {"EMBER_PLUGINS": "cpu"})
    assert r.returncode == 0, r.stderr
    assert "[0.0, 0.0, 0.0]" in r.stdout and "('cpu', 'loaded')" in r.stdout


def test_ember_disable_plugins_excludes_cpu():
    r = run_python(textwrap.dedent("""
        import ember
        try:
            ember.zeros(3)
        except RuntimeError as e:
            print("ERR", e)
        p = [p for p in ember.plugins.list() if p.name == "cpu"][0]
        print("STATUS", p.status, "|", p.error)
    """), {"EMBER_DISABLE_PLUGINS": "cpu"})
    assert r.returncode == 0, r.stderr
    # an installed but excluded plugin: the message says so, not "pip install"
    assert ("ERR device type 'cpu' is not available: the plugin 'cpu' is installed but excluded by "
            "EMBER_DISABLE_PLUGINS=cpu; change or unset that variable") in r.stdout
    assert "pip install" not in r.stdout
    assert "STATUS disabled | excluded by EMBER_PLUGINS / EMBER_DISABLE_PLUGINS" in r.stdout
    # EMBER_PLUGINS naming another plugin disables cpu as well, and the message names that variable
    r = run_python(textwrap.dedent("""
        import ember
        print([(p.name, p.status) for p in ember.plugins.list()])
        try:
            ember.zeros(3)
        except RuntimeError as e:
            print("ERR", e)
    """), {"EMBER_PLUGINS": "opencl"})
    assert "('cpu', 'disabled')" in r.stdout
    assert "installed but excluded by EMBER_PLUGINS=opencl" in r.stdout


def test_not_installed_device_names_pip_and_the_checkout_path():
    """A device type no plugin provides: pip install with the checkout path, while ember is unpublished."""
    from ember import _registry
    msg = str(_registry.not_available("npu"))
    assert msg == ("device type 'npu' is not available: pip install ember-npu "
                   "(from a checkout of ember: pip install ./plugins/npu)")
    assert _registry.install_advice("npu", "ember-npu[cpu]") == \
        "pip install 'ember-npu[cpu]' (from a checkout of ember: pip install './plugins/npu[cpu]')"


def test_autoload_off_then_register_by_hand():
    r = run_python(textwrap.dedent("""
        import ember
        print("LIST", ember.plugins.list())
        try:
            ember.zeros(3)
        except RuntimeError as e:
            print("ERR", e)
        import ember_cpu
        ember.plugins.register(ember_cpu)
        print("OK", ember.zeros(3).tolist(), [(p.name, p.status, p.source) for p in ember.plugins.list()])
    """), {"EMBER_PLUGIN_AUTOLOAD": "0"})
    assert r.returncode == 0, r.stderr
    assert "LIST []" in r.stdout
    assert ("ERR device type 'cpu' is not available: the plugin 'cpu' is installed but EMBER_PLUGIN_AUTOLOAD=0 "
            "turns off discovery") in r.stdout
    assert "OK [0.0, 0.0, 0.0] [('ember_cpu', 'loaded', 'manual')]" in r.stdout


@pytest.fixture
def broken_distribution(tmp_path):
    """A directory with a fake installed distribution whose ember.plugins entry point
    names a module that raises on import."""
    dist = tmp_path / "ember_broken-0.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ember-broken\nVersion: 0.3\n")
    (dist / "entry_points.txt").write_text("[ember.plugins]\nbroken = ember_broken_plugin\n")
    (tmp_path / "ember_broken_plugin.py").write_text('raise ImportError("libbroken.so: cannot open shared object")\n')
    return tmp_path


def test_plugin_failing_on_import_is_skipped_with_a_warning(broken_distribution):
    r = run_python(textwrap.dedent("""
        import warnings
        warnings.simplefilter("always")
        import ember
        print("VALUES", ember.ones(2).tolist())
        for p in ember.plugins.list():
            print("PLUGIN", p.name, p.status, p.error)
    """), {"PYTHONPATH": str(broken_distribution)})
    assert r.returncode == 0, r.stderr
    assert "VALUES [1.0, 1.0]" in r.stdout
    assert "PLUGIN cpu loaded" in r.stdout
    assert "PLUGIN broken failed import failed: ImportError: libbroken.so: cannot open shared object" in r.stdout
    assert "RuntimeWarning: ember: plugin 'broken' was skipped: import failed: ImportError: libbroken.so" in r.stderr
    # ember info shows it, with the error
    info = subprocess.run([sys.executable, "-m", "ember", "info"], env=_env({"PYTHONPATH": str(broken_distribution)}),
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    lines = info.stdout.splitlines()
    row = next(line for line in lines if line.split()[:1] == ["broken"])
    assert "failed" in row and "ember-broken 0.3" in row
    assert "error: import failed: ImportError: libbroken.so: cannot open shared object" in info.stdout
    assert any(line.split()[:2] == ["cpu", "loaded"] for line in lines)


# ---------------------------------------------------------------- failing registration
class _NullRuntime(L.DeviceRuntime):
    name = "nullrt"

    def device_count(self):
        return 1


def test_plugin_raising_in_register_is_skipped_and_rolled_back(plugins):
    name = f"halfway{next(_names)}"
    dev = f"halfdev{next(_names)}"

    def register(registry):
        registry.register_device_type(dev, _NullRuntime())
        registry.register_layout(f"{dev}_layout")
        registry.library("halfway").impl("neg", lambda self, *, out: None, device=dev)
        raise ValueError("vendor SDK missing")
    err, warns = _load_failing(_plugin(name, register=register, provides={"device_types": [dev],
                                                                         "layouts": [f"{dev}_layout"]}), name)
    assert f"plugin '{name}'" in str(err) and "registration failed: ValueError: vendor SDK missing" in str(err)
    assert any(f"ember: plugin '{name}' was skipped" in w and "vendor SDK missing" in w for w in warns)
    assert dev not in ember._registry.device_types
    assert f"{dev}_layout" not in ember._registry.layouts
    assert not any(k[0] == dev for k in ember.neg._op.kernels)
    with pytest.raises(RuntimeError, match=f"device type '{dev}' is not available"):
        ember.zeros(1, device=dev)
    p = _status(name)
    assert p.status == "failed" and "vendor SDK missing" in p.error
    assert ember.ones(2).tolist() == [1.0, 1.0]      # ember keeps working


def test_registration_applied_together_only_when_the_hook_returns(plugins):
    name = f"staged{next(_names)}"
    dev = f"stageddev{next(_names)}"
    seen = {}

    def register(registry):
        registry.register_device_type(dev, _NullRuntime())
        seen["during"] = dev in ember._registry.device_types
    plugins(_plugin(name, register=register, provides={"device_types": [dev]}), name)
    assert seen["during"] is False
    assert dev in ember._registry.device_types
    assert _status(name).status == "loaded"
    ember.plugins.unregister(name)
    assert dev not in ember._registry.device_types
    assert _status(name) is None


def test_two_plugins_registering_the_same_key(plugins):
    a, b, c = (f"clash{next(_names)}" for _ in range(3))

    def reg(priority):
        def kernel(self, *, out):          # a distinct kernel per plugin
            out.fill_(42)
        return lambda registry: registry.library("clash").impl("exp", kernel, device="cpu",
                                                               dtypes=[ember.float64], priority=priority)
    # at the default priority, a kernel for another plugin's device type is refused, naming both
    err, _ = _load_failing(_plugin(a, register=reg(0)), a)
    assert f"plugin '{a}' may not register a kernel of 'exp' at (cpu, strided, float64)" in str(err)
    assert "device type 'cpu' belongs to plugin 'cpu'" in str(err)
    assert ember.exp(ember.zeros(1, dtype=ember.float64)).tolist() == [1.0]
    # a higher priority overrides ...
    plugins(_plugin(b, register=reg(5)), b)
    assert ember.exp(ember.zeros(1, dtype=ember.float64)).tolist() == [42.0]
    # ... and a third at the same priority clashes with the second, naming both
    err, _ = _load_failing(_plugin(c, register=reg(5)), c)
    assert f"registered twice: by '{b}' and by '{c}'" in str(err)
    ember.plugins.unregister(b)
    assert ember.exp(ember.zeros(1, dtype=ember.float64)).tolist() == [1.0]


@pytest.mark.parametrize("api", ["2.0", "1.99", "0.9"])
def test_incompatible_api_version_is_refused(plugins, api):
    name = f"api{next(_names)}"
    err, warns = _load_failing(_plugin(name, api=api), name)
    msg = str(err)
    assert f"plugin '{name}' was built for ember plugin API {api}" in msg
    assert "this ember provides plugin API 1.1" in msg
    assert any(api in w for w in warns)
    assert _status(name).status == "failed"


def test_compatible_api_version_is_accepted(plugins):
    name = f"api{next(_names)}"
    plugins(_plugin(name, api="1.0"), name)
    p = _status(name)
    assert (p.status, p.api_version, p.version, p.source) == ("loaded", "1.0", "0.0.1", "manual")


@pytest.mark.parametrize("info, match", [
    (["not", "a", "dict"], "must return a dict with 'name', 'version' and 'api_version'"),
    ({"name": "x", "version": "1"}, "must return a dict with 'name', 'version' and 'api_version'"),
    ({"name": "x", "version": "1", "api_version": "one"}, "malformed api_version 'one'"),
    ({"name": "x", "version": "1", "api_version": None}, "malformed api_version None"),
])
def test_malformed_manifest_is_refused(plugins, info, match):
    name = f"manifest{next(_names)}"
    err, _ = _load_failing(_plugin(name, info=info), name)
    assert match in str(err) and f"'{name}'" in str(err)


def test_missing_manifest_is_refused(plugins):
    name = f"nomanifest{next(_names)}"

    class NoInfo:
        @hookimpl
        def ember_register(self, registry):
            pass
    err, _ = _load_failing(NoInfo(), name)
    assert f"plugin '{name}' does not implement ember_plugin_info" in str(err)


def test_unknown_hook_is_refused_naming_plugin_and_hook(plugins):
    name = f"typo{next(_names)}"
    err, warns = _load_failing(_plugin(name, ember_regsiter=lambda self, registry: None), name)
    assert f"plugin '{name}' implements unknown hook 'ember_regsiter'" in str(err)
    assert any("ember_regsiter" in w for w in warns)


def test_hookimpl_marker_on_a_non_hook_function_is_refused(plugins):
    # a stray @hookimpl (e.g. a decorator left above a helper inserted before ember_register)
    name = f"stray{next(_names)}"
    err, _ = _load_failing(_plugin(name, _helper=lambda self: None), name)
    assert f"plugin '{name}' implements unknown hook '_helper'" in str(err)


def test_misspelt_hook_argument_is_refused_naming_plugin_hook_and_argument(plugins):
    name = f"argtypo{next(_names)}"

    class Bad:
        @hookimpl
        def ember_plugin_info(self):
            return {"name": name, "version": "1", "api_version": "1.0"}

        @hookimpl
        def ember_register(self, registy):
            pass
    err, _ = _load_failing(Bad(), name)
    assert str(err) == (f"plugin '{name}': hook 'ember_register' takes argument(s) 'registy' that its "
                        f"specification does not have; the spec is ember_register(registry)")


def test_registering_the_same_name_twice_is_refused(plugins):
    name = f"twice{next(_names)}"
    plugins(_plugin(name), name)
    with pytest.raises(PluginError, match=f"a plugin named '{name}' is already loaded"):
        ember.plugins.register(_plugin(name), name=name)
    with pytest.raises(ValueError, match="no loaded plugin named 'never-loaded'"):
        ember.plugins.unregister("never-loaded")


# ---------------------------------------------------------------- a vendor device plugin
class ToyRuntime(HostMemoryRuntime):
    """A fake accelerator: device memory is numpy byte buffers, tracked so the test can
    see raw allocations; ``fail`` makes the next allocations raise MemoryError."""

    name = "toy"

    def __init__(self):
        self.live = {}
        self.raw_allocs = 0
        self.fail = 0

    def allocate(self, nbytes, device_index):
        if self.fail:
            self.fail -= 1
            raise MemoryError("toy device memory exhausted")
        self.raw_allocs += 1
        buf = np.zeros(nbytes, np.uint8)
        self.live[id(buf)] = buf
        return buf

    def free(self, handle):
        self.live.pop(id(handle), None)


@pytest.fixture
def toy(plugins, monkeypatch):
    """The 'toy' device: kernels for copy_ and fill_ only, plus the cpu fallback."""
    from ember import _dispatch
    monkeypatch.setattr(_dispatch, "_fallback_warned", set())
    rt = ToyRuntime()

    def register(registry):
        registry.register_device_type("toy", rt)
        rt.register_copy_and_fill(registry.library("toy"))
        registry.register_fallback("toy", L.cpu_fallback)
    plugins(_plugin("toy", register=register, info={"name": "toy", "version": "0.1", "api_version": "1.0",
                                                    "provides": {"device_types": ["toy"]}}), "toy")
    yield rt
    assert "toy" in ember._registry.device_types


def test_vendor_device_runs_ops_through_the_fallback_with_one_warning_per_op(toy):
    x = ember.ones(3, device="toy")
    assert x.device == ember.device("toy", 0) and str(x.device) == "toy:0"
    assert x.tolist() == [1.0, 1.0, 1.0]
    with pytest.warns(UserWarning, match=r"'add' has no kernel for \(toy, strided, float32\); running it through "
                                         r"the 'toy' device's fallback"):
        y = x + 1
    assert y.device == x.device and y.tolist() == [2.0, 2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # once per op: no second warning
        z = ember.add(x, x, alpha=3)
    assert z.tolist() == [4.0, 4.0, 4.0]
    with pytest.warns(UserWarning, match="'mul' has no kernel"):
        m = x * 2.5
    assert m.tolist() == [2.5, 2.5, 2.5]
    # in-place and out= go through the fallback too, and write the device tensor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x.add_(10)
        assert x.tolist() == [11.0, 11.0, 11.0]
        o = ember.empty(3, device="toy")
        ember.mul(x, 2, out=o)
        assert o.tolist() == [22.0] * 3 and o.device.type == "toy"
        # the cpu kernel is chosen by the op's compute dtype (int64 + 2.5 -> float32)
        i = ember.full((2,), 3, dtype=ember.int64, device="toy")
        r = i + 2.5
        assert r.dtype is ember.float32 and r.tolist() == [5.5, 5.5] and r.device.type == "toy"


def test_vendor_device_module_and_caching_allocator(toy):
    assert ember.toy.is_available() and ember.toy.device_count() == 1 and ember.toy.current_device() == 0
    ember.toy.empty_cache()
    base_alloc = ember.toy.memory_allocated()
    a = ember.empty(100, device="toy")               # 400 bytes -> one 512-byte block
    assert ember.toy.memory_allocated() == base_alloc + 512
    reserved = ember.toy.memory_reserved()
    raw = toy.raw_allocs
    del a
    assert ember.toy.memory_allocated() == base_alloc
    assert ember.toy.memory_reserved() == reserved   # cached, not returned
    for _ in range(20):                              # the cached block is reused
        b = ember.empty(100, device="toy")
        del b
    assert toy.raw_allocs == raw
    assert ember.toy.memory_reserved() == reserved
    assert ember.toy.max_memory_allocated() >= base_alloc + 512
    stats = ember.toy.memory_stats()
    assert set(stats) >= {"allocated_bytes.all.current", "reserved_bytes.all.current", "num_alloc_retries",
                          "num_ooms"}
    live_before = len(toy.live)
    ember.toy.empty_cache()
    assert ember.toy.memory_reserved() == ember.toy.memory_allocated() == base_alloc
    assert len(toy.live) == live_before - 1          # the cached block went back to the device
    assert "memory summary" in ember.toy.memory_summary()
    assert ember.memory.memory_allocated("toy:0") == ember.toy.memory_allocated()


def test_vendor_device_out_of_memory_retries_once_then_raises(toy):
    keep = ember.empty(300, device="toy")            # a live block
    spare = ember.empty(10, device="toy")
    del spare                                        # a cached block the retry can free
    retries = ember.toy.memory_stats()["num_alloc_retries"]
    toy.fail = 1                                     # the first raw attempt fails, the retry succeeds
    t = ember.empty(5000, device="toy")
    assert ember.toy.memory_stats()["num_alloc_retries"] == retries + 1
    assert tuple(t.shape) == (5000,)
    toy.fail = 2                                     # both attempts fail
    with pytest.raises(ember.OutOfMemoryError) as ei:
        ember.empty(1 << 18, device="toy")           # 1 MiB
    assert isinstance(ei.value, RuntimeError)
    assert ember.toy.OutOfMemoryError is ember.OutOfMemoryError
    msg = str(ei.value)
    assert "tried to allocate 2.00 MiB" in msg and "toy device memory exhausted" in msg
    assert ember.toy.memory_stats()["num_alloc_retries"] == retries + 2
    assert ember.toy.memory_stats()["num_ooms"] >= 1
    del keep, t


def test_op_with_no_kernel_and_no_fallback_raises_naming_everything(plugins):
    rt = ToyRuntime()
    rt.name = "bare"

    def register(registry):
        registry.register_device_type("bare", rt)
        registry.library("bare").impl("fill_", lambda self, value: rt.view(self).fill(value) or self,
                                      device="bare", dtypes=L.ALL_DENSE)
    name = f"bare{next(_names)}"
    plugins(_plugin(name, register=register, provides={"device_types": ["bare"]}), name)
    x = ember.zeros(2, device="bare")
    with pytest.raises(NotImplementedError) as ei:
        x + 1
    msg = str(ei.value)
    assert "Could not run 'add' with arguments from the (bare, strided, float32) key" in msg
    assert f"Installed plugins: [" in msg and "cpu" in msg and name in msg
    assert "(cpu, strided, float32)" in msg.split("Keys with kernels for 'add'")[1]


def test_missing_cuda_device_module():
    # without ember-cuda (disabled here, so this runs where it is installed too): ember.cuda answers as
    # a CPU-only PyTorch build's torch.cuda does, and everything else says why (here: excluded)
    r = run_python(textwrap.dedent("""
        import pytest, ember
        assert ember.cuda.is_available() is False
        assert ember.cuda.device_count() == 0
        for call in (lambda: ember.cuda.current_device(), lambda: ember.cuda.memory_allocated(),
                     lambda: ember.zeros(2, device="cuda")):
            with pytest.raises(RuntimeError, match="device type 'cuda' is not available: the plugin 'cuda' is "
                                                   "installed but excluded by EMBER_DISABLE_PLUGINS=cuda"):
                call()
        with pytest.raises(AttributeError, match="module 'ember' has no attribute 'not_a_device_xyz'"):
            ember.not_a_device_xyz
        print("OK")
    """), {"EMBER_DISABLE_PLUGINS": "cuda"})
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr


def test_plugin_list_reports_the_cpu_plugin():
    cpu = _status("cpu")
    assert cpu.status == "loaded" and cpu.api_version == "{}.{}".format(*ember.plugins.API_VERSION)
    assert "cpu" in cpu.provides["device_types"]
    assert "ember-cpu" in cpu.source
    assert str(cpu).startswith("cpu 0.1.0 [loaded]")


def test_cpu_fallback_preserves_named_tuple_results():
    # a free-form kernel returning a named tuple survives the trip back from cpu
    import collections
    Pair = collections.namedtuple("Pair", "a b")

    class FakeOp:
        meta = staticmethod(lambda x: (x.device, ("cpu", "strided", x.dtype)))

        @staticmethod
        def resolve(key):
            return lambda x: Pair(x + 1, 5)
    r = L.cpu_fallback(FakeOp, (ember.ones(2),), {})
    assert isinstance(r, Pair) and r.a.tolist() == [2.0, 2.0] and r.b == 5


def test_set_num_threads_controls_the_cpu_blas_pool():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            ember.set_num_threads(0)
        with pytest.raises(TypeError, match="must be int, not float"):
            ember.set_num_threads(1.5)
        assert ember.get_num_threads() == 1                # a refused call changes nothing
    finally:
        ember.set_num_threads(before)
    assert ember.get_num_threads() == before
