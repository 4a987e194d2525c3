"""ember-sparse: sparse tensors round-trip through ember.save / ember.load (weights_only by default)
on every device, and a crafted file cannot build an out-of-bounds sparse tensor."""
from __future__ import annotations

import io
import zipfile

import ember
import pytest
from _sparse_helpers import DEVICES, random_coo, to_np


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kw)


@pytest.mark.parametrize("device", DEVICES)
def test_roundtrip_on_device(device):
    idx, vals = random_coo((6, 5, 2), nnz=10, sparse_dim=2, duplicates=True, seed=1)
    s = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals, dtype=ember.float32), (6, 5, 2), device=device)
    c = s.coalesce()
    p = ember.nn.Parameter(ember.ones(2, device=device))
    r = _roundtrip({"s": s, "c": c, "p": p, "list": [s]})
    for key, orig in (("s", s), ("c", c)):
        got = r[key]
        assert got.is_sparse and got.device == orig.device and got.dtype == orig.dtype and got.shape == orig.shape
        assert got.is_coalesced() == orig.is_coalesced() and got._nnz() == orig._nnz()
        assert got._indices().tolist() == orig._indices().tolist()
        assert (to_np(got) == to_np(orig)).all()
    assert r["list"][0].is_sparse
    assert isinstance(r["p"], ember.nn.Parameter)


def test_requires_grad_and_map_location():
    s = ember.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,), requires_grad=True)
    r = _roundtrip(s)
    assert r.requires_grad and r.is_leaf and r.to_dense().tolist() == [1.0, 0.0, 2.0]
    if "opencl" in DEVICES:
        g = _roundtrip(s.detach().to("opencl"), map_location="cpu")
        assert g.device.type == "cpu" and g.is_sparse


def test_crafted_out_of_bounds_file_is_refused():
    s = ember.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,))
    buf = io.BytesIO()
    ember.save(s, buf)
    # rewrite the pickled size (3,) as (2,): index 2 is then out of bounds
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("data.pkl"):
                assert data.count(b"K\x03\x85") == 1      # BININT1 3, TUPLE1: the size (3,)
                data = data.replace(b"K\x03\x85", b"K\x02\x85")
            dst.writestr(info, data)
    out.seek(0)
    with pytest.raises(Exception, match="size is inconsistent with indices: for dim 0, size is 2 but found index 2"):
        ember.load(out)


def test_weights_only_allows_the_rebuild_function():
    from ember import serialization as S
    assert "ember.sparse._rebuild_sparse_coo" in S._DEFAULT_SAFE_NAMES
