"""ember.save / ember.load: the zip format, shared storages, map_location, weights_only,
corrupted inputs and atomic saves."""
from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import ember
from ember import serialization
from ember.serialization import load, save

DTYPES = [ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.int8, ember.uint8, ember.int16,
          ember.int32, ember.int64, ember.bool, ember.complex64, ember.complex128]


def _sample(dtype, shape=(2, 3)):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) - 2.5
    if dtype is ember.bool:
        return ember.tensor(a > 0)
    t = ember.tensor(a).to(dtype)
    return t + 1j * t if dtype.is_complex else t


def _values(t):
    t = t.detach()
    return np.asarray(t.to(ember.float32) if t.dtype is ember.bfloat16 else t)


def _same(a, b):
    assert a.shape == b.shape and a.dtype is b.dtype and a.device == b.device
    assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
    np.testing.assert_array_equal(_values(a), _values(b))


def _roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **load_kwargs)


def _saved(obj) -> bytes:
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


def _rewrite(data: bytes, changes: dict) -> bytes:
    """The archive with some records replaced: name -> new bytes, or a callable old -> new."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            body = src.read(name)
            if name in changes:
                c = changes[name]
                body = c(body) if callable(c) else c
            dst.writestr(name, body)
    return out.getvalue()


def _with_location(data: bytes, location: str) -> bytes:
    """A saved cpu archive whose storages claim to come from ``location`` (BINUNICODE is length-prefixed)."""
    old = b"X\x03\x00\x00\x00cpu"
    new = b"X" + len(location).to_bytes(4, "little") + location.encode()
    return _rewrite(data, {"archive/data.pkl": lambda b: b.replace(old, new)})


# ---------------------------------------------------------------- format
def test_archive_layout_and_alignment():
    x = ember.arange(10.)
    data = _saved({"a": x, "b": ember.ones(3, dtype=ember.int64)})
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    assert names[0] == "archive/data.pkl"
    assert set(names) == {"archive/data.pkl", "archive/byteorder", "archive/data/0", "archive/data/1",
                          "archive/version"}
    assert z.read("archive/version") == b"1\n"
    assert z.read("archive/byteorder") in (b"little", b"big")
    assert z.read("archive/data/0") == x.numpy().tobytes()
    for name in ("archive/data/0", "archive/data/1"):
        info = z.getinfo(name)
        assert info.compress_type == zipfile.ZIP_STORED
        n, m = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little"), \
            int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
        assert (info.header_offset + 30 + n + m) % 64 == 0


def test_shared_storage_written_once_and_loaded_shared():
    x = ember.arange(12.).reshape(3, 4)
    sd = {"x": x, "row": x[1], "col": x[:, 2], "t": x.t()}
    data = _saved(sd)
    assert [n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if "/data/" in n] == ["archive/data/0"]
    r = load(io.BytesIO(data))
    st = r["x"].untyped_storage()
    assert all(r[k].untyped_storage() is st for k in sd)
    for k in sd:
        _same(sd[k], r[k])
    r["x"][1, 2] = -5.
    assert r["row"][2].item() == -5. and r["col"][1].item() == -5. and r["t"][2, 1].item() == -5.


# ---------------------------------------------------------------- values
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype(dtype):
    t = _sample(dtype)
    _same(t, _roundtrip(t))


@pytest.mark.parametrize("make", [lambda: ember.tensor(-1.25), lambda: ember.tensor(True), lambda: ember.zeros(0),
                                  lambda: ember.zeros(2, 0, 3), lambda: ember.arange(24.).reshape(2, 3, 4)[:, 1:, ::2],
                                  lambda: ember.arange(6.).reshape(2, 3).t(), lambda: ember.ones(3).expand(2, 3)],
                         ids=["0dim", "0dim_bool", "empty", "empty3d", "noncontig", "transposed", "expanded"])
def test_geometry(make):
    t = make()
    _same(t, _roundtrip(t))


def test_nested_containers_and_python_values():
    obj = {"list": [ember.ones(2), (ember.zeros(1), {"deep": ember.arange(3)})], "int": 3, "float": 2.5,
           "str": "s", "none": None, "bool": True, "bytes": b"\x00\xff", "set": {1, 2}, "complex": 1 + 2j,
           "size": ember.Size([2, 3]), "dtype": ember.float16, "device": ember.device("cpu"),
           "od": collections.OrderedDict(a=1)}
    r = _roundtrip(obj)
    assert r["list"][1][1]["deep"].tolist() == [0, 1, 2] and isinstance(r["list"][1], tuple)
    for k in ("int", "float", "str", "none", "bool", "bytes", "set", "complex", "size", "dtype", "device", "od"):
        assert r[k] == obj[k] and type(r[k]) is type(obj[k]), k
    assert r["dtype"] is ember.float16 and r["device"] is ember.device("cpu")


def test_state_dict_round_trip():
    nn = pytest.importorskip("ember.nn")
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    sd = model.state_dict()
    r = _roundtrip(sd)
    assert isinstance(r, collections.OrderedDict) and list(r) == list(sd)
    for k in sd:
        _same(sd[k], r[k])
    other = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    other.load_state_dict(r)
    x = ember.randn(5, 4)
    np.testing.assert_array_equal(model(x).detach().numpy(), other(x).detach().numpy())


def test_parameters_and_requires_grad():
    nn = pytest.importorskip("ember.nn")
    p = nn.Parameter(ember.randn(3))
    a = ember.randn(2, requires_grad=True)
    r = _roundtrip({"p": p, "a": a, "nonleaf": a * 2})
    assert type(r["p"]) is nn.Parameter and r["p"].requires_grad
    assert r["a"].requires_grad and r["a"].is_leaf
    assert r["nonleaf"].requires_grad and r["nonleaf"].is_leaf        # as torch.load
    _same(p, r["p"])


def test_storage_and_byteorder_swap():
    t = ember.tensor([1.5, -2.25, 3e10], dtype=ember.float64)
    data = _saved(t)
    other = "big" if os.sys.byteorder == "little" else "little"
    swapped = _rewrite(data, {"archive/byteorder": other.encode(),
                              "archive/data/0": lambda b: np.frombuffer(b, np.float64).byteswap().tobytes()})
    _same(t, load(io.BytesIO(swapped)))


def test_path_and_pathlike(tmp_path):
    t = ember.randn(4)
    save(t, str(tmp_path / "a.pt"))
    save(t, tmp_path / "b.pt")
    _same(t, load(str(tmp_path / "a.pt")))
    _same(t, load(tmp_path / "b.pt"))
    assert sorted(os.listdir(tmp_path)) == ["a.pt", "b.pt"]


def test_file_objects(tmp_path):
    t = ember.arange(5.)

    class WriteOnly:                      # not seekable: zipfile writes data descriptors
        def __init__(self):
            self.chunks = []

        def write(self, b):
            self.chunks.append(bytes(b))
            return len(b)

        def flush(self):
            pass

    w = WriteOnly()
    save(t, w)
    _same(t, load(io.BytesIO(b"".join(w.chunks))))
    with open(tmp_path / "f.pt", "wb") as fh:
        save(t, fh)
    with open(tmp_path / "f.pt", "rb") as fh:
        _same(t, load(fh))


def test_mmap(tmp_path):
    x = ember.arange(6.).reshape(2, 3)
    save({"x": x, "v": x[1]}, tmp_path / "m.pt")
    r = load(tmp_path / "m.pt", mmap=True)
    _same(x, r["x"])
    assert r["v"].untyped_storage() is r["x"].untyped_storage()
    r["x"][0, 0] = 42.                                     # copy-on-write: the file is unchanged
    assert load(tmp_path / "m.pt")["x"][0, 0].item() == 0.
    with pytest.raises(ValueError, match="mmap"):
        load(io.BytesIO(_saved(x)), mmap=True)


# ---------------------------------------------------------------- map_location
def test_map_location_forms():
    t = ember.arange(3.)
    data = _with_location(_saved({"t": t, "v": t[1:]}), "cuda:0")
    for ml in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, {"cuda:0": ember.device("cpu")}):
        r = load(io.BytesIO(data), map_location=ml)
        assert r["t"].device == ember.device("cpu") and r["t"].tolist() == [0., 1., 2.]
        assert r["v"].untyped_storage() is r["t"].untyped_storage()
    calls = []

    def to_cpu(storage, location):
        calls.append((type(storage), location))
        return storage

    r = load(io.BytesIO(data), map_location=to_cpu)
    assert calls == [(ember.UntypedStorage, "cuda:0")] and r["t"].tolist() == [0., 1., 2.]
    # a callable returning None falls back to the default restore (here: cpu, its saved location)
    r = load(io.BytesIO(_saved(t)), map_location=lambda s, loc: None)
    assert r.tolist() == [0., 1., 2.]
    # a dict that does not mention the location leaves it alone
    assert load(io.BytesIO(_saved(t)), map_location={"cuda:1": "cpu"}).tolist() == [0., 1., 2.]
    with pytest.raises(TypeError, match="map_location"):
        load(io.BytesIO(_saved(t)), map_location=3)


def test_missing_device_plugin_suggests_map_location():
    data = _with_location(_saved(ember.ones(2)), "npu:1")
    with pytest.raises(RuntimeError, match=r"Attempting to deserialize object on a 'npu' device but the plugin for "
                                           r"it \(pip install ember-npu.*map_location='cpu'"):
        load(io.BytesIO(data))


def test_missing_cuda_plugin_suggests_map_location(tmp_path):
    # ember-cuda disabled in a fresh interpreter, so this runs where it is installed too
    import subprocess
    import sys
    path = tmp_path / "on_cuda.pt"
    path.write_bytes(_with_location(_saved(ember.ones(2)), "cuda:0"))
    code = ("import ember, pytest\n"
            "with pytest.raises(RuntimeError, match=r\"on a 'cuda' device but the plugin for it \\(pip install "
            "ember-cuda.*map_location='cpu'\"):\n"
            f"    ember.load({str(path)!r})\n"
            f"assert ember.load({str(path)!r}, map_location='cpu').tolist() == [1.0, 1.0]\n"
            "print('OK')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    r = subprocess.run([sys.executable, "-c", code], env={**env, "EMBER_DISABLE_PLUGINS": "cuda"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr


# ---------------------------------------------------------------- weights_only
class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _make_marker(path):
    with open(path, "w") as fh:
        fh.write("pwned")
    return "done"


class _CallsHelper:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (_make_marker, (self.marker,))


def _evil_archive(payload) -> bytes:
    """An archive with a valid layout whose data.pkl holds ``payload``'s pickle."""
    return _rewrite(_saved({"w": ember.ones(2)}), {"archive/data.pkl": pickle.dumps({"w": payload}, protocol=2)})


def test_reduce_payload_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "marker"
    data = _evil_archive(_Evil(marker))
    with pytest.raises(pickle.UnpicklingError, match=r"(posix|nt)\.system whose module (posix|nt) is blocked") as e:
        load(io.BytesIO(data))
    assert "weights_only" in str(e.value) and "trust" in str(e.value)
    assert not marker.exists()
    # also through save's own pickler and a path
    save({"x": _Evil(marker)}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError):
        load(tmp_path / "evil.pt")
    assert not marker.exists()


def test_unknown_global_names_the_fix_and_weights_only_false_is_the_users_choice(tmp_path):
    marker = tmp_path / "marker2"
    data = _evil_archive(_CallsHelper(str(marker)))
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL [\w.]+\._make_marker was not an "
                                                     r"allowed global by default.*add_safe_globals"):
        load(io.BytesIO(data))
    assert not marker.exists()
    assert load(io.BytesIO(data), weights_only=False)["w"] == "done"     # trusted file: runs
    assert marker.exists()


def test_build_on_a_tensor_is_refused():
    from ember import _serialization_support as S

    class Sneaky:
        def __reduce__(self):
            t = ember.ones(2)
            return (S._rebuild_tensor, (t.untyped_storage(), 0, (2,), (1,), ember.float32, False),
                    {"_grad_fn": "x"})

    with pytest.raises(pickle.UnpicklingError, match="Can only build"):
        load(io.BytesIO(_saved(Sneaky())))


def test_out_of_bounds_geometry_is_refused():
    from ember import _serialization_support as S

    class Oob:
        def __reduce__(self):
            t = ember.ones(2)
            return (S._rebuild_tensor, (t.untyped_storage(), 0, (100,), (1,), ember.float32, False))

    with pytest.raises(pickle.UnpicklingError, match="need a storage of 400 bytes, but it has 8"):
        load(io.BytesIO(_saved(Oob())))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def test_safe_globals():
    data = _saved({"p": Point(1, ember.ones(2))})
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        load(io.BytesIO(data))
    with serialization.safe_globals([Point]):
        r = load(io.BytesIO(data))
        assert Point in serialization.get_safe_globals()
    assert isinstance(r["p"], Point) and r["p"].x == 1 and r["p"].y.tolist() == [1., 1.]
    assert Point not in serialization.get_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        load(io.BytesIO(data))
    try:
        serialization.add_safe_globals([Point])
        assert isinstance(load(io.BytesIO(data))["p"], Point)
    finally:
        serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []


def test_weights_only_with_pickle_module_is_refused():
    data = _saved(ember.ones(1))
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    assert load(io.BytesIO(data), pickle_module=pickle).tolist() == [1.]     # weights_only defaults to False then


# ---------------------------------------------------------------- corrupted inputs
@pytest.mark.parametrize("cut", [0, 10, 100, 0.5, -30])
def test_truncated_file(cut):
    data = _saved({"w": ember.randn(50)})
    n = int(len(data) * cut) if isinstance(cut, float) else (cut if cut >= 0 else len(data) + cut)
    with pytest.raises(RuntimeError, match="failed reading zip archive"):
        load(io.BytesIO(data[:n]))


def test_not_an_ember_file(tmp_path):
    for junk in (b"hello world", pickle.dumps({"a": 1}), b"\0" * 1000):
        with pytest.raises(RuntimeError, match="failed reading zip archive: failed finding central directory"):
            load(io.BytesIO(junk))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("other/file.txt", b"x")
    with pytest.raises(RuntimeError, match="no data.pkl record"):
        load(io.BytesIO(buf.getvalue()))
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(RuntimeError, match="failed reading zip archive"):
        load(tmp_path / "empty.pt")


def test_corrupted_storage_record_fails_its_checksum():
    t = ember.arange(64.)
    data = bytearray(_saved(t))
    i = bytes(data).find(t.numpy().tobytes())
    data[i + 40] ^= 0xFF
    with pytest.raises(RuntimeError, match="failed reading zip archive: record 'archive/data/0'.*CRC"):
        load(io.BytesIO(bytes(data)))


def test_corrupted_structure_and_records():
    data = _saved({"w": ember.ones(3)})
    with pytest.raises(pickle.UnpicklingError):
        load(io.BytesIO(_rewrite(data, {"archive/data.pkl": lambda b: b[:len(b) // 2]})))
    with pytest.raises(RuntimeError, match="holds 4 bytes, expected 12"):
        load(io.BytesIO(_rewrite(data, {"archive/data/0": b"\0" * 4})))
    with pytest.raises(RuntimeError, match="newer ember"):
        load(io.BytesIO(_rewrite(data, {"archive/version": b"99\n"})))
    with pytest.raises(RuntimeError, match="malformed version"):
        load(io.BytesIO(_rewrite(data, {"archive/version": b"x"})))


# ---------------------------------------------------------------- atomic save
def test_failed_save_leaves_existing_file_untouched(tmp_path):
    target = tmp_path / "ckpt.pt"
    save({"w": ember.ones(2)}, target)
    before = target.read_bytes()
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        save({"w": ember.zeros(2), "f": lambda x: x}, target)            # unpicklable
    assert target.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]


def test_interrupted_write_leaves_no_half_file(tmp_path, monkeypatch):
    target = tmp_path / "ckpt.pt"
    save(ember.ones(2), target)
    before = target.read_bytes()
    real = serialization._write_archive

    def dies_halfway(fh, *args):
        real(fh, *args)
        fh.seek(len(before) // 2)
        fh.truncate()
        raise KeyboardInterrupt                                            # e.g. Ctrl-C mid-write

    monkeypatch.setattr(serialization, "_write_archive", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        save(ember.zeros(1000), target)
    assert target.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pt"]
    monkeypatch.undo()
    new = tmp_path / "new.pt"
    monkeypatch.setattr(serialization, "_write_archive", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        save(ember.zeros(1000), new)
    assert not new.exists() and os.listdir(tmp_path) == ["ckpt.pt"]


def test_save_keeps_mode_and_replaces(tmp_path):
    target = tmp_path / "c.pt"
    save(ember.ones(1), target)
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask
    os.chmod(target, 0o600)
    save(ember.zeros(1), target)
    assert target.stat().st_mode & 0o777 == 0o600 and load(target).tolist() == [0.]
    with pytest.raises(IsADirectoryError):
        save(ember.ones(1), tmp_path)
    with pytest.raises(RuntimeError, match="Parent directory .*missing does not exist"):
        save(ember.ones(1), tmp_path / "missing" / "x.pt")


def test_save_through_a_symlink_keeps_the_link(tmp_path):
    real = tmp_path / "real.pt"
    save(ember.ones(1), real)
    link = tmp_path / "link.pt"
    link.symlink_to(real)
    save(ember.zeros(2), link)
    assert link.is_symlink() and load(real).tolist() == [0., 0.]
    assert sorted(os.listdir(tmp_path)) == ["link.pt", "real.pt"]


def test_torch_agrees_on_map_location_callable_and_missing_device_behaviour():
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"t": torch.arange(3.), "v": torch.arange(3.)}, buf)
    seen = []
    buf.seek(0)
    torch.load(buf, map_location=lambda s, loc: seen.append(loc))
    assert seen == ["cpu", "cpu"]            # torch calls it once per storage, with the saved location
    buf.seek(0)
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module"):
        torch.load(buf, pickle_module=pickle, weights_only=True)


def test_exported_as_ember_save_and_load():
    assert ember.save is save and ember.load is load
    assert ember.serialization.DEFAULT_PROTOCOL == 2
