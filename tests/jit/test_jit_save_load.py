"""ember.jit.save / ember.jit.load: a zip of versioned JSON graph + ember.save tensors; loading in a fresh process
that never imports the model's code; refusal of unknown ops, schema mismatches, wrong versions."""
import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.examples.digits import build_model


class _Mine(nn.Module):
    """A model class the loading process never sees."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        h = nn.functional.max_pool2d(nn.functional.relu(self.bn(self.conv(x))), 2)
        return self.head(h.flatten(1)).softmax(-1), h.mean()


def _saved(m, x):
    buf = io.BytesIO()
    ember.jit.save(ember.jit.trace(m, x), buf)
    return buf.getvalue()


def _rewrite(data, edit):
    """The archive ``data`` with graph.json changed by ``edit(dict)``."""
    zin = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name in zin.namelist():
            raw = zin.read(name)
            if name.endswith("graph.json"):
                j = json.loads(raw)
                edit(j)
                raw = json.dumps(j)
            z.writestr(name, raw)
    return out.getvalue()


def test_round_trip_in_memory_module_and_function(tmp_path):
    ember.manual_seed(0)
    m = _Mine().eval()
    x = ember.randn(2, 1, 8, 8)
    t = ember.jit.trace(m, x)
    path = tmp_path / "m.pt"
    t.save(str(path))
    t2 = ember.jit.load(str(path))
    assert isinstance(t2, ember.jit.ScriptModule) and not t2.training
    assert list(t2.state_dict()) == list(m.state_dict())
    x = ember.randn(5, 1, 8, 8)
    for a, b in zip(t2(x), m(x)):
        assert ember.equal(a, b)
    f = ember.jit.trace(lambda a, b: (a @ b).relu() + 1, (ember.randn(2, 3), ember.randn(3, 2)))
    buf = io.BytesIO()
    ember.jit.save(f, buf)
    f2 = ember.jit.load(io.BytesIO(buf.getvalue()))
    a, b = ember.randn(2, 3), ember.randn(3, 2)
    assert isinstance(f2, ember.jit.ScriptFunction) and ember.equal(f2(a, b), (a @ b).relu() + 1)


def test_archive_is_json_and_ember_save_never_pickled_code():
    data = _saved(build_model("cnn").eval(), ember.randn(2, 1, 8, 8))
    z = zipfile.ZipFile(io.BytesIO(data))
    j = json.loads(z.read("archive/graph.json"))
    assert j["format"] == "ember.jit.graph" and j["version"] == ember.jit.VERSION == 1
    assert [n["op"] for n in j["nodes"]][:2] == ["conv2d", "relu"]
    assert j["nodes"][0]["schema"] == ember._dispatch.ops["conv2d"].schema.text
    state = ember.load(io.BytesIO(z.read("archive/state.ember")), weights_only=True)
    assert set(state) == set(build_model("cnn").state_dict())


def test_load_in_a_fresh_process_without_the_model_code(tmp_path):
    ember.manual_seed(1)
    m = _Mine().eval()
    with ember.no_grad():
        m.bn.running_mean.normal_()
        m.bn.running_var.uniform_(0.5, 2.0)
    path = tmp_path / "mine.pt"
    ember.jit.save(ember.jit.trace(m, ember.randn(2, 1, 8, 8)), str(path))
    x = ember.randn(3, 1, 8, 8)
    np.save(tmp_path / "x.npy", x.numpy())
    want = [t.detach().numpy() for t in m(x)]
    code = ("import sys, numpy as np, ember\n"
            "m = ember.jit.load(sys.argv[1])\n"
            "y, s = m(ember.from_numpy(np.load(sys.argv[2])))\n"
            "np.save(sys.argv[3], y.detach().numpy()); np.save(sys.argv[4], s.detach().numpy())\n"
            "assert 'test_jit_save_load' not in sys.modules and not any('tests' in k for k in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
                        str(tmp_path / "s.npy")], capture_output=True, text=True, timeout=120, env=dict(os.environ),
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(tmp_path / "y.npy"), want[0])
    assert np.array_equal(np.load(tmp_path / "s.npy"), want[1])


def test_load_onto_vdev_with_map_location():
    ember.manual_seed(2)
    m = build_model("mlp").eval()
    data = _saved(m, ember.randn(2, 1, 8, 8))
    try:
        t = ember.jit.load(io.BytesIO(data), map_location="vdev")
    except RuntimeError as e:
        pytest.skip(f"the vdev reference plugin is not available: {e}")
    assert all(p.device.type == "vdev" for p in t.parameters())
    x = ember.randn(4, 1, 8, 8)
    got = t(x.to("vdev"))
    assert got.device.type == "vdev"
    np.testing.assert_allclose(got.cpu().detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_refuses_unknown_ops_schema_mismatch_and_versions():
    data = _saved(build_model("mlp").eval(), ember.randn(2, 1, 8, 8))

    def unknown(j):
        j["nodes"][1]["op"] = "os_system"

    def schema(j):
        j["nodes"][1]["schema"] = "linear(Tensor input, Tensor weight) -> Tensor"

    def version(j):
        j["version"] = 99

    def undefined(j):
        j["nodes"][1]["args"][0] = {"v": 12345}

    def const(j):
        j["nodes"][0]["args"][1] = {"c": {"pickle": "cos\nsystem\n"}}
    for edit, msg in [(unknown, "unknown op 'os_system'"), (schema, "schema"), (version, "version 99"),
                      (undefined, "before it is defined"), (const, "constant the graph format does not know")]:
        with pytest.raises(RuntimeError, match=msg):
            ember.jit.load(io.BytesIO(_rewrite(data, edit)))
    with pytest.raises(RuntimeError, match="not an ember.jit archive"):
        ember.jit.load(io.BytesIO(b"not a zip"))
    with pytest.raises(RuntimeError, match="ScriptModule or ScriptFunction"):
        ember.jit.save(nn.Linear(2, 2), io.BytesIO())
