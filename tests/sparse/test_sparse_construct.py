"""ember-sparse: construction, accessors, errors, printing, devices, and the plugin-missing message."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import ember
import numpy as np
import pytest
from _sparse_helpers import DEVICES, dense_of, needs_torch, random_coo, to_np, torch


def _s(device="cpu", **kw):
    return ember.sparse_coo_tensor(ember.tensor([[0, 1, 1], [2, 0, 2]]), ember.tensor([3.0, 4.0, 5.0]), (2, 3),
                                   device=device, **kw)


def test_layout_is_registered():
    assert isinstance(ember.sparse_coo, ember.layout)
    assert ember.sparse_coo.name == "sparse_coo"
    s = _s()
    assert s.layout is ember.sparse_coo and s.is_sparse
    assert isinstance(s, ember.Tensor)
    assert not ember.zeros(2).is_sparse


def test_accessors():
    s = _s()
    assert s.shape == (2, 3) and s.dtype == ember.float32 and s.device == ember.device("cpu")
    assert s._nnz() == 3 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert not s.is_coalesced()
    assert s._indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    assert s._values().tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor, please call "
                                           r"\.coalesce\(\) first"):
        s.indices()
    with pytest.raises(RuntimeError, match="Cannot get values on an uncoalesced tensor"):
        s.values()
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    assert c.indices().tolist() == [[0, 1, 1], [2, 0, 2]]
    assert c.to_dense().tolist() == [[0, 0, 3], [4, 0, 5]]


def test_coalesce_sums_duplicates_and_sorts():
    i = ember.tensor([[1, 0, 1, 0], [2, 1, 2, 0]])
    v = ember.tensor([1.0, 2.0, 3.0, 4.0])
    c = ember.sparse_coo_tensor(i, v, (2, 3)).coalesce()
    assert c.indices().tolist() == [[0, 0, 1], [0, 1, 2]]
    assert c.values().tolist() == [4.0, 2.0, 4.0]
    assert c._nnz() == 3


@pytest.mark.parametrize("device", DEVICES)
def test_coalesce_random_with_duplicates_matches_numpy(device):
    idx, vals = random_coo((7, 9, 4), nnz=60, duplicates=True, seed=3)
    s = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), (7, 9, 4), device=device)
    c = s.coalesce()
    lin = np.ravel_multi_index(tuple(c.indices().cpu().numpy()), (7, 9, 4))
    assert np.all(np.diff(lin) > 0)
    np.testing.assert_allclose(to_np(c), dense_of(idx, vals, (7, 9, 4)))
    assert c.device == s.device


def test_size_inferred_and_hybrid():
    s = ember.sparse_coo_tensor([[0, 2], [1, 0]], [[1.0, 2.0], [3.0, 4.0]])
    assert s.shape == (3, 2, 2) and s.sparse_dim() == 2 and s.dense_dim() == 1
    d = s.to_dense()
    assert d[0, 1].tolist() == [1.0, 2.0] and d[2, 0].tolist() == [3.0, 4.0]
    assert float(d.sum()) == 10.0


def test_dtype_device_requires_grad_kwargs():
    s = ember.sparse_coo_tensor([[0, 1]], [1, 2], (4,), dtype=ember.float64, requires_grad=True)
    assert s.dtype == ember.float64 and s.requires_grad and s.is_leaf
    assert s._indices().dtype == ember.int64
    # float indices are converted to int64, as PyTorch does
    s2 = ember.sparse_coo_tensor(ember.tensor([[0.0, 2.0]]), ember.tensor([1.0, 2.0]), (3,))
    assert s2._indices().dtype == ember.int64 and s2.to_dense().tolist() == [1.0, 0.0, 2.0]


def test_construction_errors_match_pytorch():
    v = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size is 3 but found "
                                           "index 5"):
        ember.sparse_coo_tensor(ember.tensor([[0, 5]]), v, (3,), check_invariants=True)
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        ember.sparse_coo_tensor(ember.tensor([[0, -1]]), v, (3,), check_invariants=True)
    with pytest.raises(RuntimeError, match="indices and values must have same nnz, but got nnz from indices: 2, "
                                           "nnz from values: 3"):
        ember.sparse_coo_tensor(ember.tensor([[0, 1]]), ember.tensor([1.0, 2.0, 3.0]), (3,))
    with pytest.raises(RuntimeError, match=r"'len\(size\) == sparse_dim \+ dense_dim' is not satisfied: "
                                           r"len\(size\) = 2, sparse_dim = 1, dense_dim = 0"):
        ember.sparse_coo_tensor(ember.tensor([[0, 1]]), v, (3, 3))
    with pytest.raises(RuntimeError, match=r"indices must be sparse_dim x nnz, but got: \[2\]"):
        ember.sparse_coo_tensor(ember.tensor([0, 1]), v, (3,))
    with pytest.raises(RuntimeError, match="indices must be an int64 tensor"):
        ember.sparse_coo_tensor(ember.tensor([[True, False]]), v, (3,))


def test_check_invariants_context_manager():
    with ember.sparse.check_sparse_tensor_invariants(), pytest.raises(RuntimeError, match="size is inconsistent"):
        ember.sparse_coo_tensor(ember.tensor([[0, 5]]), ember.tensor([1.0, 2.0]), (3,))
    assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()


@pytest.mark.parametrize("device", DEVICES)
def test_unchecked_out_of_bounds_raises_at_use_never_wrong(device):
    s = ember.sparse_coo_tensor(ember.tensor([[0, 5]]), ember.tensor([1.0, 2.0]), (3,), device=device)
    for fn in (lambda: s.to_dense(), lambda: s.coalesce()):
        with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size is 3 but "
                                               "found index 5"):
            fn()
    m = ember.sparse_coo_tensor(ember.tensor([[0, 1], [0, 9]]), ember.tensor([1.0, 2.0]), (2, 3), device=device)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1, size is 3 but found "
                                           "index 9"):
        ember.sparse.mm(m, ember.ones(3, 2, device=device))


def test_strided_tensors_sparse_methods():
    x = ember.ones(2, 3)
    assert x.to_dense() is x and x.sparse_dim() == 0 and x.dense_dim() == 2
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout but got Strided"):
        x.indices()
    with pytest.raises(RuntimeError, match="values expected sparse tensor layout but got Strided"):
        x.values()
    with pytest.raises(RuntimeError, match="coalesce expected sparse coordinate tensor layout but got Strided"):
        x.coalesce()
    with pytest.raises(NotImplementedError, match="_nnz"):
        x._nnz()


def test_to_sparse_roundtrip_and_hybrid():
    d = ember.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0]])
    s = d.to_sparse()
    assert s.is_coalesced() and s._nnz() == 2
    assert s.indices().tolist() == [[0, 1], [1, 0]] and s.values().tolist() == [1.5, 2.0]
    assert s.to_dense().tolist() == d.tolist()
    h = d.to_sparse(1)
    assert h.sparse_dim() == 1 and h.dense_dim() == 1 and h._nnz() == 2
    assert h.values().tolist() == [[0.0, 1.5, 0.0], [2.0, 0.0, 0.0]]
    assert s.to_sparse() is s


def test_unsupported_methods_name_op_and_layout():
    s = _s()
    with pytest.raises(NotImplementedError, match=r"Could not run 'view' with arguments from the "
                                                  r"\(cpu, sparse_coo, float32\) key"):
        s.view(6)
    with pytest.raises(NotImplementedError, match=r"Could not run 'exp' with arguments from the "
                                                  r"\(cpu, sparse_coo, float32\) key"):
        ember.exp(s)
    with pytest.raises(NotImplementedError, match="cumsum"):
        ember.cumsum(s, 0)
    with pytest.raises(RuntimeError, match="Sparse CPU tensors do not have strides"):
        s.stride()
    with pytest.raises(NotImplementedError, match="out= is not supported"):
        ember.neg(s, out=ember.empty(2, 3))


@needs_torch
def test_repr_matches_pytorch_format():
    s = _s()
    t = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3.0, 4.0, 5.0]), (2, 3))
    assert repr(s) == repr(t).replace("torch.", "ember.")
    cases = [
        (ember.sparse_coo_tensor(ember.zeros((2, 0), dtype=ember.int64), ember.zeros(0), (2, 3)),
         torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (2, 3))),
        (ember.sparse_coo_tensor([[0, 1]], ember.tensor([[1.0, 2], [3, 4]], dtype=ember.float64), (2, 2),
                                 requires_grad=True),
         torch.sparse_coo_tensor([[0, 1]], torch.tensor([[1.0, 2], [3, 4]], dtype=torch.float64), (2, 2),
                                 requires_grad=True)),
        (ember.sparse_coo_tensor([[0, 1]], ember.tensor([1, 2], dtype=ember.int32), (2,)) * 2,
         torch.sparse_coo_tensor([[0, 1]], torch.tensor([1, 2], dtype=torch.int32), (2,)) * 2),
        (ember.sparse_coo_tensor([[0, 1]], [1, 2], (2,)), torch.sparse_coo_tensor([[0, 1]], [1, 2], (2,))),
    ]
    for e, t in cases:
        assert repr(e) == repr(t).replace("torch.", "ember."), (repr(e), repr(t))
    assert "grad_fn=<" in repr(_s().double().requires_grad_() * 2)


@pytest.mark.parametrize("device", DEVICES[1:] or ["cpu"])
def test_to_device_and_back(device):
    s = _s()
    g = s.to(device)
    assert g.is_sparse and g.device.type == device and g._indices().device.type == device
    assert g._values().device.type == device
    back = g.cpu()
    assert back.device.type == "cpu" and back.to_dense().tolist() == s.to_dense().tolist()
    assert s.double().dtype == ember.float64 and s.double().is_sparse


def test_clone_detach_inplace():
    s = _s()
    c = s.clone()
    assert c._values() is not s._values() and c.to_dense().tolist() == s.to_dense().tolist()
    s2 = s.clone()
    s2.mul_(2)
    assert s2.to_dense().tolist() == (s.to_dense() * 2).tolist()
    assert s.to_dense().tolist() == [[0, 0, 3], [4, 0, 5]]
    s2.add_(s)
    assert s2.to_dense().tolist() == (s.to_dense() * 3).tolist()
    alias = s2
    s2 += s
    s2 *= 0.5
    s2 -= s
    s2 /= 2
    assert s2 is alias
    np.testing.assert_allclose(s2.to_dense().numpy(), (s.to_dense() * 0.5).numpy())   # ((3s + s) / 2 - s) / 2
    s2.zero_()
    assert s2._nnz() == 0 and s2.to_dense().tolist() == [[0, 0, 0], [0, 0, 0]]


def test_without_plugin_message_names_the_package():
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    env["EMBER_DISABLE_PLUGINS"] = "sparse"
    code = textwrap.dedent("""
        import ember
        for f in (lambda: ember.sparse_coo_tensor([[0]], [1.0], (2,)), lambda: ember.ones(2).to_sparse(),
                  lambda: ember.sparse.mm(None, None)):
            try:
                f()
            except RuntimeError as e:
                print("ERR", e)
        print(hasattr(ember, "sparse_coo"))
    """)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    excluded = "the plugin 'sparse' is installed but excluded by EMBER_DISABLE_PLUGINS=sparse"
    assert len([ln for ln in lines if ln.startswith("ERR") and excluded in ln]) == 3, r.stdout
    assert lines[-1] == "False"
