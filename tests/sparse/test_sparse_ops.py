"""ember-sparse ops against PyTorch 2.13 (values, layout, shape, nnz) on every available device."""
from __future__ import annotations

import ember
import numpy as np
import pytest
from _sparse_helpers import DEVICES, dense_of, needs_torch, random_coo, to_np, torch

pytestmark = needs_torch


def _pair(shape, device, *, nnz=12, sparse_dim=None, seed=0, duplicates=True, dtype=np.float64):
    idx, vals = random_coo(shape, nnz=nnz, sparse_dim=sparse_dim, seed=seed, duplicates=duplicates, dtype=dtype)
    e = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), shape, device=device)
    t = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), shape, check_invariants=False)
    return e, t


def _same(e, t, *, nnz=False):
    assert e.is_sparse == t.is_sparse, (e.layout, t.layout)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).replace("torch.", "")
    exp = (t.to_dense() if t.is_sparse else t).detach().numpy()
    np.testing.assert_allclose(to_np(e), exp, rtol=1e-6, atol=1e-9)
    if nnz and e.is_sparse:
        assert e.coalesce()._nnz() == t.coalesce()._nnz()


def _dense(shape, device, seed=5):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(a, device=device), torch.tensor(a)


@pytest.mark.parametrize("device", DEVICES)
def test_add_sub_mul(device):
    a, ta = _pair((5, 6), device, seed=1)
    b, tb = _pair((5, 6), device, seed=2, duplicates=False)
    d, td = _dense((5, 6), device)
    _same(a + b, ta + tb)
    _same(ember.add(a, b, alpha=2.5), torch.add(ta, tb, alpha=2.5))
    _same(a - b, ta - tb)
    _same(d + a, td + ta)
    _same(d - a, td - ta)
    _same(a * b, ta * tb)   # same values; ember keeps only the intersection (PyTorch: explicit zeros)
    _same(a * d, ta * td)
    _same(d * a, td * ta)
    _same(a * 3, ta * 3)
    _same(2 * a, 2 * ta)
    _same(a / 4, ta / 4)
    _same(-a, -ta)
    # sparse + dense: PyTorch refuses it; ember computes the (dense) sum
    np.testing.assert_allclose(to_np(a + d), (ta.to_dense() + td).numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_hybrid_elementwise(device):
    a, ta = _pair((4, 3, 2), device, sparse_dim=2, seed=3)
    b, tb = _pair((4, 3, 2), device, sparse_dim=2, seed=4)
    d, td = _dense((4, 3, 2), device)
    _same(a + b, ta + tb)
    _same(d + a, td + ta)
    _same(a * d, ta * td)
    _same(a * 0.5, ta * 0.5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["abs", "neg", "sin", "tanh", "sqrt", "square", "sign", "floor", "expm1"])
def test_zero_preserving_unary(device, name):
    a, ta = _pair((5, 4), device, seed=7)
    if name == "sqrt":
        a, ta = a.abs(), ta.abs()
    r = getattr(ember, name)(a)
    assert r.is_sparse
    _same(r, getattr(torch, name)(ta))


@pytest.mark.parametrize("device", DEVICES)
def test_pow_scalar(device):
    a, ta = _pair((5, 4), device, seed=8)
    _same(a ** 2, ta ** 2)


@pytest.mark.parametrize("device", DEVICES)
def test_sum(device):
    a, ta = _pair((4, 5, 3), device, seed=9)
    _same(a.sum(), ta.sum())
    _same(ember.sum(a), torch.sum(ta))
    for dim in (0, 1, 2, (0, 2), (0, 1), (0, 1, 2), -1):
        _same(a.sum(dim), ta.sum(dim))
        _same(ember.sparse.sum(a, dim), torch.sparse.sum(ta, dim))
    h, th = _pair((4, 5, 3), device, sparse_dim=2, seed=10)
    for dim in (0, 2, (0, 1), (1, 2)):
        _same(ember.sparse.sum(h, dim), torch.sparse.sum(th, dim))
    i, ti = _pair((4, 5), device, seed=11, dtype=np.int32)
    r = ember.sparse.sum(i)
    assert r.dtype == ember.int64 and int(r) == int(torch.sparse.sum(ti))


@pytest.mark.parametrize("device", DEVICES)
def test_transpose_narrow_index_select_cat(device):
    a, ta = _pair((5, 6), device, seed=12)
    _same(a.t(), ta.t())
    _same(a.transpose(0, 1), ta.transpose(0, 1))
    h, th = _pair((3, 4, 2, 5), device, sparse_dim=2, seed=13)
    # dense dims too (PyTorch: "transposed dimensions must be sparse"; ember transposes the values)
    np.testing.assert_allclose(to_np(h.transpose(-1, -2)), th.to_dense().transpose(-1, -2).numpy())
    with pytest.raises(RuntimeError, match="sparse transpose: transposed dimensions must be sparse"):
        h.transpose(0, 3)
    np.testing.assert_allclose(to_np(a.narrow(1, 2, 3)), ta.to_dense().narrow(1, 2, 3).numpy())
    np.testing.assert_allclose(to_np(h.narrow(3, 1, 2)), th.to_dense().narrow(3, 1, 2).numpy())
    idx = [4, 0, 4, 2]
    _same(a.index_select(1, ember.tensor(idx, device=device)), ta.index_select(1, torch.tensor(idx)))
    _same(ember.index_select(a, 0, ember.tensor([1, 1], device=device)), torch.index_select(ta, 0, torch.tensor([1, 1])))
    _same(h.index_select(2, ember.tensor([1, 0], device=device)), th.index_select(2, torch.tensor([1, 0])))
    b, tb = _pair((5, 2), device, seed=14)
    _same(ember.cat([a, b], 1), torch.cat([ta, tb], 1))
    _same(ember.cat([a, a], 0), torch.cat([ta, ta], 0))


@pytest.mark.parametrize("device", DEVICES)
def test_mm_matmul_addmm(device):
    a, ta = _pair((6, 5), device, nnz=14, seed=15)
    d, td = _dense((5, 3), device)
    _same(ember.sparse.mm(a, d), torch.sparse.mm(ta, td))
    _same(a @ d, ta @ td)
    _same(ember.mm(a, d), torch.mm(ta, td))
    _same(ember.matmul(a, d[:, 0]), torch.matmul(ta, td[:, 0]))
    m, tm = _dense((6, 3), device, seed=2)
    _same(ember.sparse.addmm(m, a, d, beta=0.5, alpha=2.0), torch.sparse.addmm(tm, ta, td, beta=0.5, alpha=2.0))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(6x5 and 4x3\)"):
        ember.sparse.mm(a, ember.ones(4, 3, dtype=ember.float64, device=device))


def test_mm_float32_cpu_fast_path_and_generic_agree():
    from ember_sparse import _kernels
    a, ta = _pair((40, 30), "cpu", nnz=200, seed=16, dtype=np.float32)
    d = ember.randn(30, 8)
    fast = ember.sparse.mm(a, d)
    generic = _kernels.mm_generic(a, d)
    np.testing.assert_allclose(fast.numpy(), generic.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fast.numpy(), torch.sparse.mm(ta, torch.tensor(d.numpy())).numpy(), rtol=1e-5,
                               atol=1e-5)
    assert ember.ops.sparse.mm._op.source(("cpu", "sparse_coo", ember.float32)) == "native"


def test_coalesce_fast_path_and_generic_agree():
    from ember_sparse import _kernels, _scipy
    idx, vals = random_coo((50, 40), nnz=500, duplicates=True, seed=17)
    s = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), (50, 40))
    a, b = _scipy.coalesce_scipy(s), _kernels.coalesce_raw(s)
    assert a.indices().tolist() == b.indices().tolist()
    np.testing.assert_allclose(a.values().numpy(), b.values().numpy())
    np.testing.assert_allclose(a.to_dense().numpy(), dense_of(idx, vals, (50, 40)))


@pytest.mark.parametrize("device", DEVICES)
def test_softmax(device):
    a, ta = _pair((5, 7), device, nnz=15, seed=18)
    for dim in (0, 1):
        _same(ember.sparse.softmax(a, dim), torch.sparse.softmax(ta, dim))
        _same(ember.sparse.log_softmax(a, dim), torch.sparse.log_softmax(ta, dim))
    h, th = _pair((4, 3, 2), device, sparse_dim=2, seed=19)
    _same(ember.sparse.softmax(h, 0), torch.sparse.softmax(th, 0))
    _same(ember.sparse.softmax(h, 2), torch.sparse.softmax(th, 2))


@pytest.mark.parametrize("device", DEVICES)
def test_empty_sparse(device):
    e = ember.sparse_coo_tensor(ember.zeros((2, 0), dtype=ember.int64), ember.zeros(0), (3, 4), device=device)
    assert e._nnz() == 0 and e.to_dense().tolist() == [[0.0] * 4] * 3
    assert e.coalesce()._nnz() == 0
    assert ember.sparse.mm(e, ember.ones(4, 2, device=device)).tolist() == [[0.0, 0.0]] * 3
    assert float(e.sum()) == 0.0 and (e * e)._nnz() == 0


def test_mixed_errors():
    a, _ = _pair((3, 4), "cpu")
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of tensor b \(5\)"):
        a + ember.sparse_coo_tensor(ember.tensor([[0], [0]]), ember.tensor([1.0]), (3, 5), dtype=ember.float64)
    with pytest.raises(NotImplementedError, match="scalar"):
        a + 1
    with pytest.raises(NotImplementedError, match="true_divide"):
        a / ember.ones(3, 4, dtype=ember.float64)


@pytest.mark.parametrize("device", DEVICES)
def test_dense_at_sparse(device):
    a, ta = _pair((5, 4), device, seed=21)
    d, td = _dense((3, 5), device)
    _same(d @ a, td @ ta)
    _same(ember.mm(d, a), torch.mm(td, ta))
    _same(d[0] @ a, td[0] @ ta)
    # the meta cache must tell dense @ dense from dense @ sparse of the same shapes
    np.testing.assert_allclose((d @ a.to_dense()).cpu().numpy(), (td @ ta.to_dense()).numpy())


def test_inplace_unary_and_sparse_in_an_undispatched_position():
    a, ta = _pair((4, 4), "cpu", seed=22)
    b = a.clone()
    assert b.abs_() is b and b.is_sparse
    _same(b, ta.abs())
    with pytest.raises(NotImplementedError, match="sparse_coo tensor was passed to a kernel for strided tensors"):
        ember.where(ember.ones(4, 4, dtype=ember.bool), a, ember.zeros(4, 4, dtype=ember.float64))
    with pytest.raises(NotImplementedError, match="sparse_coo"):
        ember.cat([ember.zeros(4, 4, dtype=ember.float64), a])
    assert a.data.is_sparse and not a.data.requires_grad
