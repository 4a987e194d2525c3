"""ember.load stays bounded on crafted files (issue 17, part 3): tiny files cannot build huge objects,
compressed or duplicated records are refused before anything is inflated, saved geometry and quantizer
parameters are validated, saved attributes cannot replace Tensor methods, interrupted saves do not pile
up temporaries, and ember-cuda's NCCL rendezvous file is data, not a pickle."""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import time
import zipfile

import pytest

import ember


def archive(data_pkl: bytes, records=None, compress=zipfile.ZIP_STORED, extra_names=()):
    """An ember-shaped zip with ``data_pkl`` as archive/data.pkl and ``records`` (name -> bytes) under data/."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl"), data_pkl, compress_type=compress)
        z.writestr("archive/byteorder", b"little")
        for name, data in (records or {}).items():
            z.writestr(f"archive/data/{name}", data)
        z.writestr("archive/version", b"1\n")
        for name in extra_names:
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # zipfile warns about the duplicate name itself
                z.writestr(name, b"x")
    b.seek(0)
    return b


class _Reduce:
    """Pickles as ``fn(*args)``: a crafted global call."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


def crafted(obj) -> bytes:
    return pickle.dumps(obj, protocol=2)


@pytest.mark.parametrize("obj, what", [
    (_Reduce(list, _Reduce(range, 40_000_000)), "list"),
    (_Reduce(bytearray, 2 ** 34), "bytearray"),
    (_Reduce(bytes, 2 ** 34), "bytes"),
    (_Reduce(set, _Reduce(range, 40_000_000)), "set"),
    (_Reduce(frozenset, _Reduce(range, 40_000_000)), "frozenset"),
])
def test_tiny_files_cannot_build_huge_objects(obj, what):
    data = crafted(obj)
    assert len(data) < 400
    t0 = time.perf_counter()
    with pytest.raises(pickle.UnpicklingError):
        ember.load(archive(data))
    assert time.perf_counter() - t0 < 5          # refused up front, nothing built (not a timing test of speed)


def test_what_ember_save_writes_still_loads():
    import collections
    obj = {"od": collections.OrderedDict(a=1), "set": {1, 2}, "fs": frozenset({3}), "b": b"", "b2": b"xy",
           "ba": bytearray(b"xy"), "ba0": bytearray(), "c": complex(1, 2), "s": slice(1, 5, 2), "r": range(3),
           "size": ember.ones(2, 3).shape, "t": ember.arange(4.0)}
    b = io.BytesIO()
    ember.save(obj, b)
    b.seek(0)
    out = ember.load(b)
    assert out["od"] == obj["od"] and out["set"] == {1, 2} and out["ba"] == bytearray(b"xy") and out["r"] == range(3)
    assert out["size"] == (2, 3) and out["t"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_compressed_record_is_refused_before_inflating():
    """A deflate bomb: a few kB that inflate to 1 GB. ember.save never compresses, so it is refused unread."""
    bomb = b"\\x80\\x02" + b"N" * (2 ** 30)          # would inflate to 1 GiB
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl"), bomb, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("archive/version", b"1\n")
    assert b.tell() < 2_000_000
    b.seek(0)
    with pytest.raises(RuntimeError, match="is compressed; ember.save never compresses records"):
        ember.load(b)


def test_duplicate_record_names_are_refused():
    with pytest.raises(RuntimeError, match="appears more than once"):
        ember.load(archive(crafted(1), extra_names=["archive/version"]))


def _tensor_pickle(size, stride, offset=0, nbytes=16, state=None, cls=None):
    from ember._serialization_support import _rebuild_tensor
    from ember._dtype import _dtype_by_name

    class P:
        def __reduce__(self):
            return _rebuild_tensor, (Storage(), offset, size, stride, _Reduce(_dtype_by_name, "float32"), False,
                                     cls, state)

    class Storage:
        pass

    class Pickler(pickle.Pickler):
        def persistent_id(self, o):
            return ("storage", "0", "cpu", nbytes, "float32") if isinstance(o, Storage) else None
    b = io.BytesIO()
    Pickler(b, protocol=2).dump(P())
    return b.getvalue()


@pytest.mark.parametrize("size, stride, offset", [
    ((2 ** 63,), (1,), 0),                    # a size beyond int64
    ((4,), (2 ** 63,), 0),
    ((1,), (1,), 2 ** 63),
    ((8,), (1,), 0),                           # inconsistent with the 16-byte record
    (tuple([1] * 65), tuple([1] * 65), 0),     # more dims than PyTorch allows
])
def test_saved_geometry_is_validated(size, stride, offset):
    data = _tensor_pickle(size, stride, offset)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(archive(data, {"0": bytes(16)}))


def test_a_huge_lazy_size_is_refused_without_materialising_it():
    data = _tensor_pickle(_Reduce(range, 40_000_000), (1,))
    with pytest.raises(pickle.UnpicklingError):
        ember.load(archive(data, {"0": bytes(16)}))


def test_a_record_whose_declared_size_differs_is_refused_unread():
    data = _tensor_pickle((4,), (1,), nbytes=16)
    with pytest.raises(RuntimeError, match="holds 8 bytes, expected 16"):
        ember.load(archive(data, {"0": bytes(8)}))


def test_saved_attributes_cannot_replace_tensor_methods():
    for value, weights_only in ((3, True), (list, False)):       # list is not even an allowed global with True
        t = ember.ones(2)
        t.size = value
        b = io.BytesIO()
        ember.save(t, b)
        b.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="may not replace Tensor.size"):
            ember.load(b, weights_only=weights_only)
    t2 = ember.ones(2)
    t2.note = "kept"                          # an attribute of its own still round-trips
    b = io.BytesIO()
    ember.save(t2, b)
    b.seek(0)
    assert ember.load(b).note == "kept"


@pytest.mark.parametrize("params, match", [
    ((float("inf"), 0), "finite and positive"),
    ((-0.1, 0), "finite and positive"),
    ((float("nan"), 0), "finite and positive"),
    ((0.1, 300), "zero_point 300 in \\[-128, 127\\]"),
])
def test_quantizer_parameters_are_validated(params, match):
    pytest.importorskip("ember_quantized")
    from ember._ops._quantized import _rebuild_qtensor
    from ember._serialization_support import _rebuild_tensor  # noqa: F401

    class Storage:
        pass

    class P:
        def __reduce__(self):
            return _rebuild_qtensor, (Storage(), 0, (4,), (1,), "qint8", params)

    class Pickler(pickle.Pickler):
        def persistent_id(self, o):
            return ("storage", "0", "cpu", 4, "qint8") if isinstance(o, Storage) else None
    b = io.BytesIO()
    Pickler(b, protocol=2).dump(P())
    with pytest.raises(pickle.UnpicklingError, match=match):
        ember.load(archive(b.getvalue(), {"0": bytes(4)}))


def test_an_interrupted_save_leaves_no_temporaries_behind_for_long(tmp_path):
    path = tmp_path / "model.pt"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()                  # a pid that has exited
    stale = tmp_path / f".model.pt.{dead}.abc123.tmp"
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / f".model.pt.{os.getppid()}.def456.tmp"         # a running process's save: kept
    live.write_bytes(b"y")
    other = tmp_path / f".other.pt.{dead}.ghi.tmp"                  # another path's: not ours to remove
    other.write_bytes(b"z")
    ember.save(ember.ones(2), path)
    assert not stale.exists() and live.exists() and other.exists()
    assert ember.load(path).tolist() == [1.0, 1.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["model.pt", live.name, other.name])


def test_a_save_killed_midway_is_cleaned_up_by_the_next_save(tmp_path):
    path = tmp_path / "big.pt"
    code = ("import ember, os, signal\n"
            "import ember.serialization as s\n"
            "orig = s._write_archive\n"
            "def die(*a, **k):\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "s._write_archive = die\n"
            f"ember.save(ember.ones(1000), {str(path)!r})\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    left = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1                       # the killed save's temporary
    ember.save(ember.ones(2), path)
    assert [p.name for p in tmp_path.iterdir()] == ["big.pt"]


def test_nccl_rendezvous_file_is_data_not_a_pickle(tmp_path):
    pytest.importorskip("ember_cuda")
    from ember_cuda import _nccl
    from ember.distributed import DistBackendError
    uid = tuple(range(-64, 64))
    path = str(tmp_path / "rdv")
    _nccl.write_unique_id(path, uid)
    assert _nccl.read_unique_id(path) == uid
    marker = tmp_path / "pwned"
    with open(path, "wb") as f:                 # what a hostile file would hold: a pickle that runs code
        pickle.dump(_Reduce(os.system, f"touch {marker}"), f)
    with pytest.raises(DistBackendError, match="not a valid ember rendezvous file"):
        _nccl.read_unique_id(path)
    assert not marker.exists()
