"""ember-sparse autograd: gradients of sparse.mm, to_dense, construction, values; masked gradcheck;
sparse gradient accumulation; agreement with PyTorch's sparse gradients."""
from __future__ import annotations

import ember
import numpy as np
import pytest
from _sparse_helpers import DEVICES, needs_torch, random_coo, to_np, torch
from ember.autograd import gradcheck

F64 = ember.float64


def _sp(device="cpu", requires_grad=False, seed=0, shape=(4, 5), nnz=9, duplicates=True, sparse_dim=None):
    idx, vals = random_coo(shape, nnz=nnz, seed=seed, duplicates=duplicates, sparse_dim=sparse_dim)
    return ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), shape, device=device,
                                   requires_grad=requires_grad), idx, vals


@pytest.mark.parametrize("device", DEVICES)
def test_mm_gradients_dense_and_sparse(device):
    s, idx, _ = _sp(device, requires_grad=True)
    d = ember.randn(5, 3, dtype=F64, device=device, requires_grad=True)
    g = ember.randn(4, 3, dtype=F64, device=device)
    ember.sparse.mm(s, d).backward(g)
    # d: S^T @ g ; s: sparse with s's pattern, values g[row] . d[col]
    dense_s = to_np(s)
    np.testing.assert_allclose(d.grad.cpu().numpy(), dense_s.T @ g.cpu().numpy(), rtol=1e-10)
    assert s.grad.is_sparse and s.grad.shape == s.shape
    assert s.grad._indices().tolist() == s._indices().tolist()
    exp = (g.cpu().numpy()[idx[0]] * d.detach().cpu().numpy()[idx[1]]).sum(1)
    np.testing.assert_allclose(s.grad._values().cpu().numpy(), exp, rtol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_construction_gradient_wrt_values(device):
    idx, vals = random_coo((4, 5), nnz=9, duplicates=True, seed=1)
    v = ember.tensor(vals, device=device, requires_grad=True)
    s = ember.sparse_coo_tensor(ember.tensor(idx, device=device), v, (4, 5))
    assert s.grad_fn is not None and s.requires_grad
    w = np.random.default_rng(2).standard_normal((4, 5))
    (s.to_dense() * ember.tensor(w, device=device)).sum().backward()
    # each specified value (duplicates too) receives the weight at its position
    np.testing.assert_allclose(v.grad.cpu().numpy(), w[idx[0], idx[1]])


def test_to_dense_gradient_is_masked_sparse():
    s, idx, _ = _sp(requires_grad=True)
    (s.to_dense() ** 2).sum().backward()
    assert s.grad.is_sparse and s.grad._indices().tolist() == idx.tolist()
    # d/dv of sum(dense^2) = 2 * dense[at v's position] (duplicates summed in dense)
    dense = to_np(s)
    np.testing.assert_allclose(s.grad._values().numpy(), 2 * dense[idx[0], idx[1]])


def test_sparse_grads_accumulate():
    s, _, _ = _sp(requires_grad=True)
    d = ember.randn(5, 2, dtype=F64)
    ember.sparse.mm(s, d).sum().backward()
    first = to_np(s.grad)
    ember.sparse.mm(s, d).sum().backward()
    assert s.grad.is_sparse
    np.testing.assert_allclose(to_np(s.grad), 2 * first)
    (s.to_dense() * 0 + 1).sum().backward()     # a sparse gradient added to a sparse .grad once more
    assert s.grad.is_sparse


def test_values_gradient_and_chain_through_ops():
    s, _, _ = _sp(requires_grad=True, duplicates=False)
    c = s.coalesce()
    (c.values() * 3).sum().backward()
    np.testing.assert_allclose(to_np(s.grad), (to_np(s.detach()) != 0) * 3.0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ["mm", "mm_dense_arg", "softmax", "log_softmax", "sum_dim", "sum_all", "mul_dense",
                                  "mul_sparse", "add_dense", "t_abs", "index_select", "cat", "narrow", "addmm",
                                  "matmul_vec", "hybrid_sum"])
def test_gradcheck_masked(device, case):
    shape = (3, 4, 2) if case == "hybrid_sum" else (4, 5)
    s, _, _ = _sp(device, requires_grad=True, seed=3, shape=shape, nnz=8,
                       sparse_dim=2 if case == "hybrid_sum" else None)
    d = ember.randn(5, 3, dtype=F64, device=device, requires_grad=True)
    dd = ember.randn(4, 5, dtype=F64, device=device, requires_grad=True)
    m = ember.randn(4, 3, dtype=F64, device=device, requires_grad=True)
    fns = {
        "mm": (lambda a: ember.sparse.mm(a, d.detach()), (s,)),
        "mm_dense_arg": (lambda a, b: ember.sparse.mm(a, b), (s, d)),
        "softmax": (lambda a: ember.sparse.softmax(a, 1), (s,)),
        "log_softmax": (lambda a: ember.sparse.log_softmax(a, 0), (s,)),
        "sum_dim": (lambda a: ember.sparse.sum(a, 1), (s,)),
        "sum_all": (lambda a: a.sum(), (s,)),
        "mul_dense": (lambda a, b: a * b, (s, dd)),
        "mul_sparse": (lambda a: a * a, (s,)),
        "add_dense": (lambda a, b: b + a * 2, (s, dd)),
        "t_abs": (lambda a: a.t().abs() * 3, (s,)),
        "index_select": (lambda a: a.index_select(1, ember.tensor([4, 0, 4], device=device)), (s,)),
        "cat": (lambda a: ember.cat([a, a * 2], 0), (s,)),
        "narrow": (lambda a: a.narrow(1, 1, 3), (s,)),
        "addmm": (lambda a, b, c: ember.sparse.addmm(c, a, b, beta=0.5, alpha=2.0), (s, d, m)),
        "matmul_vec": (lambda a, b: a @ b[:, 0], (s, d)),
        "hybrid_sum": (lambda a: ember.sparse.sum(a, (0, 2)), (s,)),
    }
    fn, args = fns[case]
    assert gradcheck(fn, args, eps=1e-6, atol=1e-5, rtol=1e-3)


@needs_torch
def test_gradients_match_pytorch():
    idx, vals = random_coo((4, 5), nnz=9, duplicates=True, seed=4)
    dm = np.random.default_rng(5).standard_normal((5, 3))
    s = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), (4, 5)).coalesce().requires_grad_()
    t = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), (4, 5),
                                check_invariants=False).coalesce().requires_grad_()
    d, td = ember.tensor(dm, requires_grad=True), torch.tensor(dm, requires_grad=True)
    (ember.sparse.mm(s, d) ** 2).sum().backward()
    (torch.sparse.mm(t, td) ** 2).sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(to_np(s.grad), t.grad.to_dense().numpy(), rtol=1e-10)
    s.grad = None
    t.grad = None
    ember.sparse.softmax(s, 1).to_dense().pow(2).sum().backward()
    torch.sparse.softmax(t, 1).to_dense().pow(2).sum().backward()
    np.testing.assert_allclose(to_np(s.grad), t.grad.to_dense().numpy(), rtol=1e-9, atol=1e-12)


def test_gradcheck_reports_a_wrong_sparse_gradient():
    # the masked gradcheck must be able to fail: a deliberately wrong backward is caught
    s, _, _ = _sp(requires_grad=True, seed=6)

    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.a = a
            return a.detach().to_dense() * 2

        @staticmethod
        def backward(ctx, g):
            return ember.ops.sparse.coo_tensor(ctx.a._indices(), ember.ones(ctx.a._nnz(), dtype=F64),
                                               list(ctx.a.shape))
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        gradcheck(lambda a: Wrong.apply(a), (s,))
