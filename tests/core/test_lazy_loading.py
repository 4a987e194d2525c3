"""Issue 20 part 4: a plugin with a lazy-load manifest is imported on the first use of a name it
declares, not on the first use of any device. Each case runs in a fresh interpreter (which
modules a process has imported is the thing under test)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("ember_opencl", "ember_cuda", "ember_vdev", "ember_sparse", "ember_quantized", "pyopencl", "cupy")


def run(code, env=None):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def loaded_after(code):
    out = run(code + "\nimport sys\nprint(sorted(m for m in sys.modules if '.' not in m))\n")
    return set(eval(out.strip().splitlines()[-1]))


def test_cpu_work_imports_only_the_cpu_plugin():
    mods = loaded_after("import ember\nassert (ember.ones(3) + 1).tolist() == [2.0, 2.0, 2.0]")
    assert "ember_cpu" in mods
    assert not mods & set(HEAVY), mods & set(HEAVY)


def test_a_name_imports_the_plugin_that_declares_it():
    pytest.importorskip("ember_quantized")
    mods = loaded_after("import ember\nassert str(ember.qint8) == 'ember.qint8'")
    assert "ember_quantized" in mods
    assert not mods & {"ember_opencl", "ember_cuda", "ember_vdev", "ember_sparse", "pyopencl", "cupy"}


def test_a_device_type_imports_its_plugin():
    pytest.importorskip("ember_vdev")
    mods = loaded_after("import ember\nassert ember.ones(2, device='vdev').sum().item() == 2.0")
    assert "ember_vdev" in mods
    assert not mods & {"ember_opencl", "ember_cuda", "pyopencl", "cupy"}


def test_what_no_manifest_names_loads_everything_before_failing_or_succeeding():
    """A kernel only a not-yet-imported plugin has (to_sparse from ember-sparse, asked for on a cpu
    tensor without naming sparse_coo) is found: a miss loads the remaining plugins and looks again."""
    pytest.importorskip("ember_sparse")
    out = run("import ember\nprint(ember.ones(2, 2).to_sparse().layout)")
    assert out.strip() == "ember.sparse_coo"


def test_ember_info_lists_every_plugin():
    out = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, timeout=300).stdout
    for name in ("cpu", "sparse", "quantized"):
        assert f"  {name} " in out and "loaded" in out, out


def test_manual_seed_reaches_a_device_type_loaded_later():
    pytest.importorskip("ember_vdev")
    code = "import ember\n{pre}ember.manual_seed(3)\nprint(ember.randn(3, device='vdev').tolist())"
    late = run(code.format(pre=""))
    early = run(code.format(pre="ember.ones(1, device='vdev')\n"))
    assert late == early


def test_a_malformed_manifest_is_reported_and_the_plugin_imported_at_discovery(tmp_path):
    """A plugin whose ember_plugin.json is not a manifest still loads (eagerly), with a warning naming the file."""
    pkg = tmp_path / "ember_lazytest"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from ember.plugins import hookimpl, API_VERSION
        @hookimpl
        def ember_plugin_info():
            return {"name": "lazytest", "version": "0", "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
                    "provides": {}}
    """))
    (pkg / "ember_plugin.json").write_text(json.dumps({"device_types": "not a list"}))
    dist = tmp_path / "ember_lazytest-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ember-lazytest\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[ember.plugins]\nlazytest = ember_lazytest\n")
    code = """
        import warnings, sys
        warnings.simplefilter("always")
        import ember
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ember.ones(1)
        print([str(x.message) for x in w])
        print("ember_lazytest" in sys.modules)
    """
    out = run(code, env={"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    lines = out.strip().splitlines()
    assert "lazy-load manifest" in lines[-2] and "is not valid" in lines[-2], out
    assert lines[-1] == "True"


def test_import_ember_imports_no_plugin():
    mods = loaded_after("import ember, ember.profiler")
    assert not {m for m in mods if m.startswith("ember_")}, mods


def test_unpickling_a_dtype_or_layout_loads_only_its_plugin():
    pytest.importorskip("ember_quantized")
    pytest.importorskip("ember_sparse")
    import pickle
    import ember
    data = pickle.dumps((ember.qint8, ember.sparse_coo))
    mods = loaded_after(f"import pickle\nassert str(pickle.loads({data!r})) == '(ember.qint8, ember.sparse_coo)'")
    assert {"ember_quantized", "ember_sparse"} <= mods
    assert not mods & {"ember_opencl", "ember_cuda", "ember_vdev", "pyopencl", "cupy"}
