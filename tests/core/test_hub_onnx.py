"""ember.hub (cache only, no network) and ember.onnx (importable), side by side
with torch.hub where the cached paths behave alike."""
import os

import pytest

import ember
import ember.hub
import ember.onnx

torch = pytest.importorskip("torch")


@pytest.fixture
def hub_dirs(tmp_path):
    old_e, old_t = ember.hub.get_dir(), torch.hub.get_dir()
    ember.hub.set_dir(tmp_path / "ember")
    torch.hub.set_dir(str(tmp_path / "torch"))
    yield tmp_path
    ember.hub.set_dir(old_e)
    torch.hub.set_dir(old_t)


def test_get_dir_follows_ember_home(monkeypatch):
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    monkeypatch.setenv("EMBER_HOME", "/some/where")
    assert ember.hub.get_dir() == os.path.join("/some/where", "hub")
    monkeypatch.delenv("EMBER_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert ember.hub.get_dir() == os.path.join("/xdg", "ember", "hub")


def test_load_state_dict_from_url_reads_the_cache_as_torch(hub_dirs):
    url = "https://example.invalid/models/tiny-0123abcd.pth"
    for m in (ember, torch):
        ckpt = os.path.join(m.hub.get_dir(), "checkpoints")
        os.makedirs(ckpt)
        m.save({"w": m.arange(4.0)}, os.path.join(ckpt, "tiny-0123abcd.pth"))
        sd = m.hub.load_state_dict_from_url(url, map_location="cpu")
        assert sd["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
        m.save({"b": m.ones(2)}, os.path.join(str(hub_dirs), "other.pth"))
        assert m.hub.load_state_dict_from_url(url, model_dir=str(hub_dirs), file_name="other.pth")["b"].tolist() \
            == [1.0, 1.0]


def test_no_network_is_a_clear_runtime_error(hub_dirs):
    url = "https://example.invalid/models/absent.pth"
    expected = os.path.join(ember.hub.get_dir(), "checkpoints", "absent.pth")
    with pytest.raises(RuntimeError, match="ember.hub does not download") as info:
        ember.hub.load_state_dict_from_url(url)
    assert expected in str(info.value)
    with pytest.raises(RuntimeError, match="does not download"):
        ember.hub.load("someone/somerepo", "model")
    with pytest.raises(RuntimeError, match="does not download"):
        ember.hub.download_url_to_file(url, str(hub_dirs / "x"))


HUBCONF = '''
dependencies = []


def tiny(n=2, scale=3):
    """Multiplies n by scale."""
    return n * scale


def _private():
    return None
'''


def test_local_and_cached_repositories_run_hubconf_as_torch(hub_dirs):
    repo = hub_dirs / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    for m in (ember, torch):
        assert m.hub.load(str(repo), "tiny", 5, source="local", scale=2) == 10
    cached = os.path.join(ember.hub.get_dir(), "someone_somerepo_main")
    os.makedirs(cached)
    (repo / "hubconf.py").rename(os.path.join(cached, "hubconf.py"))
    assert ember.hub.load("someone/somerepo", "tiny") == 6 and ember.hub.load("someone/somerepo:main", "tiny") == 6
    assert "tiny" in ember.hub.list("someone/somerepo") and "_private" not in ember.hub.list("someone/somerepo")
    assert ember.hub.help("someone/somerepo", "tiny").strip() == "Multiplies n by scale."
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        ember.hub.load("someone/somerepo", "nope")
    with pytest.raises(ValueError, match="Unknown source"):
        ember.hub.load(str(repo), "tiny", source="ftp")


def test_onnx_is_importable_and_dynamo_export_says_it_is_missing():
    # the exporter itself is tested in tests/jit/test_onnx_export.py
    assert ember.onnx.is_in_onnx_export() is False and torch.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="ember.onnx.export"):
        ember.onnx.dynamo_export(ember.nn.Linear(2, 2), ember.ones(1, 2))
