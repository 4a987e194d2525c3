"""examples/vendor_plugin is a valid distribution: `pip install ./examples/vendor_plugin` would install
ember-vdev with its entry point. Checked by reading the metadata; nothing is built or installed."""
from __future__ import annotations

import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin"


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_pyproject_declares_the_distribution_and_entry_point():
    meta = _project()
    assert meta["build-system"]["build-backend"] == "setuptools.build_meta"
    p = meta["project"]
    assert p["name"] == "ember-vdev" and re.fullmatch(r"\d+\.\d+\.\d+", p["version"])
    assert any(re.match(r"ember\b", d) for d in p["dependencies"])
    assert p["entry-points"]["ember.plugins"] == {"vdev": "ember_vdev"}
    assert meta["tool"]["setuptools"]["packages"]["find"]["include"] == ["ember_vdev*"]


def test_dependencies_are_valid_requirements():
    packaging = __import__("pytest").importorskip("packaging.requirements")
    names = {packaging.Requirement(d).name for d in _project()["project"]["dependencies"]}
    assert {"ember", "numpy", "scipy"} <= names


def test_entry_point_target_is_the_package_with_both_hooks():
    pkg = ROOT / "ember_vdev"
    src = (pkg / "__init__.py").read_text()
    assert "def ember_plugin_info(" in src and "def ember_register(" in src
    assert re.search(r'__version__ = "' + re.escape(_project()["project"]["version"]) + '"', src)
    for module in ("runtime.py", "kernels.py", "ops.py"):
        assert (pkg / module).is_file()
    # the xfails file the manifest names ships with the package (package-data)
    assert re.search(r'"conformance_xfails": "conformance_xfails.txt"', src)
    assert (pkg / "conformance_xfails.txt").is_file()
    assert "conformance_xfails.txt" in _project()["tool"]["setuptools"]["package-data"]["ember_vdev"]
