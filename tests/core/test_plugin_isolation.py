"""One broken plugin never breaks another (issue 17, part 2).

Each case installs a fake distribution on PYTHONPATH (so its entry point loads *before* ember-cpu's)
and runs a fresh interpreter: the broken plugin is marked failed with the reason, and cpu keeps
working. Rule: a plugin registers only what its manifest declares; another plugin's device type, a
name that would shadow an ember attribute, or a default-priority kernel for a device type that is not
its own is refused, naming both; BaseExceptions from a plugin's import or registration are contained;
a failure leaves no partial state."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHECK_CPU = textwrap.dedent("""
    import warnings
    warnings.simplefilter("always")
    import ember
    print("CPU", (ember.ones(2) + 1).tolist(), ember.zeros(1).tolist(), ember.exp(ember.zeros(1)).tolist())
    for p in ember.plugins.list():
        print("PLUGIN", p.name, p.status, "|", p.error)
""")


def fake_dist(tmp_path, dist, ep_name, module, source):
    """A directory holding an installed-looking distribution ``dist`` whose entry point ``ep_name`` (group
    ember.plugins) is module ``module`` with ``source``."""
    info = tmp_path / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ember.plugins]\n{ep_name} = {module}\n")
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    return tmp_path


def run(path, code=CHECK_CPU):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    env["PYTHONPATH"] = str(path) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def plugin_line(r, name):
    return next(line for line in r.stdout.splitlines() if line.startswith(f"PLUGIN {name} "))


MANIFEST = """
from ember.plugins import hookimpl, API_VERSION
INFO = {{"name": "{name}", "version": "0.1", "api_version": "%d.%d" % API_VERSION, "provides": {provides}}}

@hookimpl
def ember_plugin_info():
    return INFO
"""


def assert_cpu_works(r):
    assert "CPU [2.0, 2.0] [0.0] [1.0]" in r.stdout, r.stdout + r.stderr
    assert plugin_line(r, "cpu").startswith("PLUGIN cpu loaded")


def test_a_manifest_whose_provides_is_not_a_dict(tmp_path):
    path = fake_dist(tmp_path, "ember-badmanifest", "badmanifest", "badmanifest_plugin",
                     MANIFEST.format(name="badmanifest", provides='["cpu"]'))
    r = run(path)
    assert_cpu_works(r)
    assert "PLUGIN badmanifest failed | plugin 'badmanifest': its manifest's 'provides' must be a dict" in r.stdout


def test_sys_exit_at_plugin_import(tmp_path):
    path = fake_dist(tmp_path, "ember-exiter", "exiter", "exiter_plugin", "import sys\nsys.exit(3)\n")
    r = run(path)
    assert_cpu_works(r)
    assert "PLUGIN exiter failed | import failed: SystemExit: 3" in r.stdout


def test_sys_exit_inside_registration(tmp_path):
    src = MANIFEST.format(name="regexit", provides='{"device_types": ["regexitdev"]}') + """
@hookimpl
def ember_register(registry):
    raise SystemExit("vendor SDK called exit()")
"""
    r = run(fake_dist(tmp_path, "ember-regexit", "regexit", "regexit_plugin", src))
    assert_cpu_works(r)
    assert "PLUGIN regexit failed | registration failed: SystemExit: vendor SDK called exit()" in r.stdout


def test_a_cpu_kernel_registered_before_ember_cpu_loads(tmp_path):
    src = MANIFEST.format(name="sneaky", provides='{"device_types": []}') + """
@hookimpl
def ember_register(registry):
    registry.library("sneaky").impl("exp", lambda self, *, out: out.fill_(42), device="cpu")
"""
    r = run(fake_dist(tmp_path, "ember-sneaky", "sneaky", "sneaky_plugin", src))
    assert_cpu_works(r)                                     # ember.exp is cpu's, not the newcomer's 42
    line = plugin_line(r, "sneaky")
    assert "failed" in line and "plugin 'sneaky' may not register a kernel of 'exp' at (cpu, strided, any)" in line


def test_an_explicit_override_loaded_before_ember_cpu_does_not_break_it(tmp_path):
    """A kernel override with priority > 0 (e.g. a vendor's faster cpu kernels) is allowed; ember-cpu, loading
    after it, keeps its own kernel shadowed and gets it back when the override goes."""
    src = MANIFEST.format(name="override", provides='{"device_types": []}') + """
import ember
@hookimpl
def ember_register(registry):
    registry.library("override").impl("neg", lambda self, *, out: out.fill_(7), device="cpu",
                                      dtypes=[ember.float32], priority=10)
"""
    code = CHECK_CPU + textwrap.dedent("""
        print("NEG", ember.neg(ember.ones(1)).tolist())
        ember.plugins.unregister("override")
        print("NEG", ember.neg(ember.ones(1)).tolist())
    """)
    r = run(fake_dist(tmp_path, "ember-override", "override", "override_plugin", src), code)
    assert_cpu_works(r)
    assert plugin_line(r, "override").startswith("PLUGIN override loaded")
    assert "NEG [7.0]\nNEG [-1.0]" in r.stdout


@pytest.mark.parametrize("name, declared, device, refusal", [
    # another plugin's device type, even when the newcomer's manifest declares it
    ("usurper", '["cpu"]', "cpu", "registers device type 'cpu', which belongs to plugin 'cpu' (package ember_cpu)"),
    # a device type the manifest does not declare
    ("undeclared", "[]", "mydev", "registers device type 'mydev', which its manifest does not declare"),
])
def test_a_device_type_the_plugin_may_not_register_is_refused(tmp_path, name, declared, device, refusal):
    src = MANIFEST.format(name=name, provides=f'{{"device_types": {declared}}}') + f"""
@hookimpl
def ember_register(registry):
    from ember.testing import HostMemoryRuntime
    registry.register_device_type("{device}", HostMemoryRuntime(), caching_allocator=False)
"""
    r = run(fake_dist(tmp_path, f"ember-{name}", name, f"{name}_plugin", src))
    assert_cpu_works(r)
    line = plugin_line(r, name)
    assert "failed" in line and refusal in line


def test_a_stale_distribution_with_an_entry_point_also_named_cpu(tmp_path):
    src = MANIFEST.format(name="cpu", provides='{"device_types": ["cpu"]}') + """
@hookimpl
def ember_register(registry):
    raise RuntimeError("old ember-cpu 0.0.1")
"""
    r = run(fake_dist(tmp_path, "ember-cpu-old", "cpu", "old_ember_cpu", src))
    assert_cpu_works(r)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("PLUGIN cpu ")]
    assert len(lines) == 2 and lines[0].startswith("PLUGIN cpu loaded")
    assert "another entry point has the same name" in lines[1] and "ember-cpu-old" in lines[1]
    assert "uninstall the stale distribution" in lines[1]


def test_a_failed_plugin_registering_a_dtype_named_zeros_leaves_ember_zeros(tmp_path):
    src = MANIFEST.format(name="shadow", provides='{"dtypes": ["zeros"]}') + """
import ember.library as L
@hookimpl
def ember_register(registry):
    registry.register_dtype(L.new_dtype("zeros", 1, is_signed=True, storage="int8"))
"""
    r = run(fake_dist(tmp_path, "ember-shadow", "shadow", "shadow_plugin", src))
    assert_cpu_works(r)                                     # ember.zeros(1) still works
    assert "registers dtype 'zeros', which would replace ember.zeros (function); refused" in plugin_line(r, "shadow")


def test_an_opinfos_hook_returning_garbage_is_named_and_skipped(tmp_path):
    src = MANIFEST.format(name="garbage", provides='{"device_types": []}') + """
@hookimpl
def ember_opinfos():
    return ["not an OpInfo"]
"""
    code = textwrap.dedent("""
        import warnings
        import ember
        from ember.testing.opdb import op_db
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            n = len(op_db())
        print("OPDB", n > 100, [str(x.message) for x in w if "garbage" in str(x.message)])
    """)
    r = run(fake_dist(tmp_path, "ember-garbage", "garbage", "garbage_plugin", src), code)
    assert "OPDB True" in r.stdout
    assert "plugin 'garbage': its ember_opinfos() hook failed (TypeError: expected a list of " \
           "ember.testing.OpInfo, got str" in r.stdout


@pytest.mark.parametrize("provides", ['{"device_types": "cpu"}', '{"dtypes": [1, 2]}'])
def test_malformed_provides_values(tmp_path, provides):
    r = run(fake_dist(tmp_path, "ember-malformed", "malformed", "malformed_plugin",
                      MANIFEST.format(name="malformed", provides=provides)))
    assert_cpu_works(r)
    assert "must be a list of names" in plugin_line(r, "malformed")
