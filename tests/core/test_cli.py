"""``ember info`` / ``python -m ember info``: plugins found, their status (and errors),
device types and device counts. Run in subprocesses, as a user runs them."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import ember
from ember import _cli


def _run(*args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "ember", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_python_m_ember_info_lists_plugins_devices_and_counts():
    r = _run("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    lines = out.splitlines()
    assert lines[0] == f"ember {ember.__version__} (plugin API {ember.plugins.API_VERSION[0]}.{ember.plugins.API_VERSION[1]})"
    n = int(next(line for line in lines if line.startswith("plugins found:")).split(":")[1])
    assert n >= 1
    cpu = next(line for line in lines if line.split()[:1] == ["cpu"] and "loaded" in line)
    assert "0.1.0" in cpu and "ember-cpu" in cpu
    i = lines.index("device types:")
    dev = next(line for line in lines[i + 1:] if line.split()[:1] == ["cpu"])
    assert "devices: 1" in dev and "plugin: cpu" in dev
    assert any(line.startswith("layouts:") and "strided" in line for line in lines)


def test_info_with_a_disabled_plugin_and_no_device_types():
    # every installed device plugin disabled (the reference vdev plugin may be installed beside cpu)
    r = _run("info", env_extra={"EMBER_PLUGINS": "no-such-plugin"})
    assert r.returncode == 0, r.stderr
    assert any(line.split()[:2] == ["cpu", "disabled"] for line in r.stdout.splitlines())
    assert "error: excluded by EMBER_PLUGINS / EMBER_DISABLE_PLUGINS" in r.stdout
    assert "(none: the plugin 'cpu' is installed but excluded by EMBER_PLUGINS=no-such-plugin" in r.stdout


def test_info_with_autoload_off():
    r = _run("info", env_extra={"EMBER_PLUGIN_AUTOLOAD": "0"})
    assert r.returncode == 0, r.stderr
    assert "plugins found: 0" in r.stdout


def test_no_command_prints_help():
    r = _run()
    assert r.returncode == 0
    assert "info" in r.stdout and "usage: ember" in r.stdout
    r = _run("nonsense")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_info_in_process_matches_registry():
    buf = io.StringIO()
    assert _cli.info(out=buf) == 0
    text = buf.getvalue()
    for p in ember.plugins.list():
        assert p.name in text
    for name in ember._registry.device_types:
        assert name in text
    assert _cli.main(["info"]) == 0
