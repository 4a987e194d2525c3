"""Discovery, probing and platform selection of ember-opencl (issue: a runtime that lists a device but
cannot build kernels must not count as available).

A device counts only after a trivial kernel was built and run on it. The failing cases are simulated
(a probe function that raises, a platform filter), so these tests mean the same on every machine;
the ones that need a real OpenCL platform skip with the probe's reason where there is none."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import ember

from _opencl_helpers import NO_DEVICE, NO_PLUGIN, has_device, plugin_loaded  # noqa: E402

pytest.importorskip("ember_opencl", reason="ember-opencl is not installed")
from ember_opencl import _icd, _runtime  # noqa: E402

needs_device = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)
needs_plugin = pytest.mark.skipif(not plugin_loaded(), reason=NO_PLUGIN)


def _run(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=e,
                          timeout=180)


def _failing_probe(device):
    raise RuntimeError("building a trivial kernel failed: error: unknown target CPU 'generic'")


@needs_device
def test_a_device_that_fails_the_probe_is_not_available():
    rt = _runtime.OpenCLRuntime(probe_fn=_failing_probe)
    assert rt.is_available() is False and rt.device_count() == 0
    why = rt.unavailable_reason()
    assert why.startswith("no usable OpenCL device: ")
    assert "failed the probe" in why and "unknown target CPU 'generic'" in why     # the runtime's own words
    assert "pip install 'ember-opencl[cpu]'" in why and "EMBER_DISABLE_PLUGINS=opencl" in why
    assert all(r.status in ("failed the probe", "not used", "no devices") for r in rt.reports())
    with pytest.raises(RuntimeError, match=r"Invalid device ordinal opencl:0: there are 0 opencl devices "
                                           r"\(no usable OpenCL device"):
        rt.state(0)


@needs_device
def test_the_first_working_cpu_platform_is_chosen_in_order_of_preference():
    tried = []

    def probe_failing_first(device):
        tried.append(device.platform.name)
        if len(tried) == 1:
            raise RuntimeError("simulated: cannot build kernels")
        return _runtime.probe(device)

    want = os.environ.get("EMBER_OPENCL_PLATFORM", "").strip().lower()
    pairs = [(p, d) for p, d in _all_pairs() if not want or _runtime._matches(p, want)]
    if len({(p.name, p.version) for p, d in pairs if _runtime._is_cpu(d)}) < 2:
        pytest.skip("one CPU OpenCL platform here (or selected by EMBER_OPENCL_PLATFORM): the fallback to a "
                    "second one cannot be shown")
    rt = _runtime.OpenCLRuntime(probe_fn=probe_failing_first)
    assert rt.device_count() >= 1
    statuses = [r.status for r in rt.reports()]
    assert "failed the probe" in statuses and "available" in statuses
    used = [r for r in rt.reports() if r.status == "available"]
    assert used[0].platform.name == tried[1]         # the second platform in order was probed and used


def _all_pairs():
    import pyopencl as cl
    return [(p, d) for p in cl.get_platforms() for d in p.get_devices()]


@needs_device
def test_one_cpu_platform_is_used_and_the_others_say_why():
    rt = _runtime.OpenCLRuntime()
    cpus = [(p, d) for p, d in rt.devices() if _runtime._is_cpu(d)]
    assert len({p.name for p, _ in cpus}) <= 1            # the same CPU is never exposed twice
    for r in rt.reports():
        if r.status == "not used":
            assert "EMBER_OPENCL_PLATFORM" in r.detail
        if r.status == "available":
            assert 0 < r.seconds < 30


@needs_device
def test_ember_info_lists_each_platform_with_its_probe_result():
    r = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    opencl = r.stdout[r.stdout.index("  opencl "):]
    assert "available (probe " in opencl


def test_the_platform_filter_selects_by_name_or_alias():
    class P:
        def __init__(self, name, vendor):
            self.name, self.vendor = name, vendor
    pocl = P("Portable Computing Language", "The pocl project")
    intel = P("Intel(R) OpenCL", "Intel(R) Corporation")
    assert _runtime.platform_alias(pocl) == "pocl" and _runtime.platform_alias(intel) == "intel"
    assert _runtime._matches(pocl, "pocl") and not _runtime._matches(intel, "pocl")
    assert _runtime._matches(intel, "intel") and _runtime._matches(pocl, "portable")
    assert _runtime.platform_alias(P("Intel(R) OpenCL Graphics", "Intel(R) Corporation")) == \
        "intel(r) opencl graphics"


@needs_plugin
def test_an_unusable_plugin_is_reported_everywhere_and_the_main_job_ends_with_one_line():
    """'Installed but unusable', simulated with a platform filter that matches nothing."""
    r = _run("""
        import ember
        print(ember.opencl.is_available())
        print(ember.opencl.unavailable_reason())
        try:
            ember.ones(2, device="opencl")
        except RuntimeError as e:
            print("ERR", e)
    """, EMBER_OPENCL_PLATFORM="no-such-platform")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "False" and "EMBER_OPENCL_PLATFORM='no-such-platform'" in out[1]
    assert out[2].startswith("ERR Invalid device ordinal opencl:0")
    r = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, EMBER_OPENCL_PLATFORM="no-such-platform"))
    assert "opencl       devices: 0" in r.stdout and "not available: no OpenCL platform matches" in r.stdout
    r = subprocess.run([sys.executable, "-m", "ember.examples.digits", "--device", "opencl", "--epochs", "1"],
                       capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, EMBER_OPENCL_PLATFORM="no-such-platform"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0, r.stderr               # one line
    assert r.stderr.startswith("digits: --device opencl is not available: no OpenCL platform matches")


# ---------------------------------------------------------------- ICD files
def test_vendors_dir_names_the_installed_runtimes_and_keeps_the_system_ones(tmp_path, monkeypatch):
    lib = tmp_path / "libfakeocl.so"
    lib.write_bytes(b"")
    sysdir = tmp_path / "etc-vendors"
    sysdir.mkdir()
    (sysdir / "gpu.icd").write_text("/opt/gpu/libgpuocl.so\n")
    monkeypatch.setattr(_icd, "SYSTEM_VENDORS", sysdir)
    monkeypatch.setattr(_icd, "installed_runtimes", lambda: [_icd.InstalledRuntime("intel", "intel-opencl-rt",
                                                                                   str(lib))])
    monkeypatch.setattr(_icd, "EXPOSED", _icd._Exposed())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    e = _icd.expose_installed_runtimes()
    d = os.environ["OCL_ICD_VENDORS"]
    assert e.vendors_dir == d and e.added == ("intel",) and d.startswith(str(tmp_path / "cache"))
    files = {f: open(os.path.join(d, f)).read().strip() for f in os.listdir(d)}
    assert files == {"gpu.icd": "/opt/gpu/libgpuocl.so", "ember-intel.icd": str(lib)}
    # the same contents -> the same directory, reused (no rewrite, no pile-up)
    monkeypatch.setattr(_icd, "EXPOSED", _icd._Exposed())
    monkeypatch.delenv("OCL_ICD_VENDORS")
    assert _icd.expose_installed_runtimes().vendors_dir == d
    assert len(os.listdir(tmp_path / "cache" / "ember" / "opencl-vendors")) == 1


def test_a_users_ocl_icd_vendors_is_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(_icd, "EXPOSED", _icd._Exposed())
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    e = _icd.expose_installed_runtimes()
    assert e.respected_user == str(tmp_path) and not e.vendors_dir
    assert os.environ["OCL_ICD_VENDORS"] == str(tmp_path)


def test_intel_runtime_without_its_compiler_libraries_says_what_to_install(monkeypatch, tmp_path):
    lib = tmp_path / "libintelocl.so"
    lib.write_bytes(b"")
    monkeypatch.setattr(_icd, "_dist_file", lambda dist, name: str(lib))
    monkeypatch.setattr(_icd.importlib.metadata, "distribution", lambda name: object())
    rt = _icd._intel()
    assert rt is not None and "libimf.so" in rt.problem and "pip install intel-cmplr-lib-rt" in rt.problem
    for n in ("libimf.so", "libsvml.so", "libirng.so"):
        (tmp_path / n).write_bytes(b"")
    assert _icd._intel().problem == ""


def test_a_kernel_that_fails_to_build_after_the_probe_names_runtime_device_and_fix():
    if not has_device():
        pytest.skip(NO_DEVICE)
    from ember_opencl import _codegen as cg
    st = _runtime.RUNTIME.state(0)
    with pytest.raises(RuntimeError) as e:
        cg.build(st, "__kernel void ember_broken(__global float* a) { a[0] = undefined_name; }", "ember_broken")
    msg = str(e.value)
    assert "building OpenCL kernel 'ember_broken' failed on opencl:0" in msg
    assert st.runtime_label in msg and "EMBER_OPENCL_PLATFORM" in msg and "undefined_name" in msg


def test_an_icd_file_naming_a_missing_library_is_reported(tmp_path, monkeypatch):
    """The ICD loader skips such a runtime silently; ember names the file, the library and the fix."""
    sysdir = tmp_path / "etc-vendors"
    sysdir.mkdir()
    (sysdir / "gone.icd").write_text(str(tmp_path / "libgoneocl.so") + "\n")
    monkeypatch.setattr(_icd, "SYSTEM_VENDORS", sysdir)
    monkeypatch.setattr(_icd, "installed_runtimes", lambda: [])
    monkeypatch.setattr(_icd, "EXPOSED", _icd._Exposed())
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))             # leave the environment alone
    problems = dict(_icd.expose_installed_runtimes().problems)
    assert "gone.icd" in problems
    assert "libgoneocl.so, which does not exist" in problems["gone.icd"] and "reinstall it" in problems["gone.icd"]
