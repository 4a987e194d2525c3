"""Tensor methods and top-level names that are thin forms of existing ops (ember._tensor_extras), side by side
with PyTorch 2.13."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_is_inference_follows_inference_mode_and_views():
    for lib in (torch, ember):
        t = lib.ones(2, 3)
        with lib.inference_mode():
            u = lib.ones(2, 3)
        assert (t.is_inference(), u.is_inference(), u[0].is_inference(), (t + 1).is_inference()) == \
            (False, True, True, False)


@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_dim_order(perm):
    a, b = torch.ones(2, 3, 4).permute(*perm), ember.ones(2, 3, 4).permute(*perm)
    assert a.dim_order() == b.dim_order()
    assert torch.ones(3, 1, 2).dim_order() == ember.ones(3, 1, 2).dim_order()


def test_new_forms():
    for args in [(2, 3), ([1.0, 2.0],), ()]:
        a, b = torch.ones(1, dtype=torch.float64).new(*args), ember.ones(1, dtype=ember.float64).new(*args)
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype)[6:] == str(b.dtype)[6:]
    assert ember.ones(1).new([1.0, 2.0]).tolist() == [1.0, 2.0]


def test_isreal():
    z = np.array([1 + 0j, 1 + 1j, -0.0 + 0j])
    assert torch.isreal(torch.tensor(z)).tolist() == ember.isreal(ember.tensor(z)).tolist()
    assert ember.ones(3).isreal().tolist() == [True] * 3


def test_lu_lu_solve_orgqr_match_torch():
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 3))
    LU_t, piv_t = torch.lu(torch.tensor(A))
    LU_e, piv_e = ember.lu(ember.tensor(A))
    np.testing.assert_allclose(LU_e.numpy(), LU_t.numpy(), rtol=1e-12, atol=1e-12)
    assert piv_e.tolist() == piv_t.tolist()
    x_t = torch.lu_solve(torch.tensor(b), LU_t, piv_t)
    x_e = ember.tensor(b).lu_solve(LU_e, piv_e)
    np.testing.assert_allclose(x_e.numpy(), x_t.numpy(), rtol=1e-10, atol=1e-12)
    _, _, infos = ember.lu(ember.tensor(A), get_infos=True)
    assert infos.tolist() == [0, 0]
    a, tau = torch.geqrf(torch.tensor(A[0]))
    np.testing.assert_allclose(ember.orgqr(ember.tensor(a.numpy()), ember.tensor(tau.numpy())).numpy(),
                               torch.orgqr(a, tau).numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["eig", "symeig", "solve", "lstsq"])
def test_removed_methods_raise_pytorchs_error(name):
    with pytest.raises(RuntimeError) as te:
        getattr(torch.ones(2, 2), name)(torch.ones(2, 2))
    with pytest.raises(RuntimeError) as ee:
        getattr(ember.ones(2, 2), name)(ember.ones(2, 2))
    assert str(ee.value) == str(te.value)


def test_method_forms_of_functional_ops():
    x = np.linspace(-1, 1, 7)
    assert ember.tensor(x).hardshrink(0.3).tolist() == torch.tensor(x).hardshrink(0.3).tolist()
    w = [0.25]
    assert ember.tensor(x).prelu(ember.tensor(w, dtype=ember.float64)).tolist() == \
        torch.tensor(x).prelu(torch.tensor(w, dtype=torch.float64)).tolist()
    sig = np.sin(np.arange(64.0))
    win_t, win_e = torch.hann_window(16, dtype=torch.float64), ember.hann_window(16, dtype=ember.float64)
    st = torch.tensor(sig).stft(16, window=win_t, return_complex=True)
    se = ember.tensor(sig).stft(16, window=win_e, return_complex=True)
    np.testing.assert_allclose(se.numpy(), st.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(se.istft(16, window=win_e).numpy(), st.istft(16, window=win_t).numpy(),
                               rtol=1e-10, atol=1e-10)
    t = ember.ones(3)
    assert t.const_data_ptr() == t.data_ptr()
    with pytest.raises(RuntimeError, match="xpu"):
        t.xpu()


def test_enforce_grad_layout_policy_as_torch():
    """With the policy relaxed a stealable gradient keeps its own strides; enforced, .grad follows the
    parameter's layout; per thread; usable as a context manager and a decorator."""
    for lib in (torch, ember):
        p = lib.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
        (p * 2).sum().backward()
        enforced = p.grad.stride()
        p.grad = None
        with lib.autograd.enforce_grad_layout_policy(False):
            (p * 2).sum().backward()
        relaxed = p.grad.stride()

        @lib.autograd.enforce_grad_layout_policy(False)
        def again():
            p.grad = None
            (p * 2).sum().backward()
            return p.grad.stride()
        assert (enforced, relaxed, again()) == ((1, 12, 4), (6, 3, 1), (6, 3, 1)), lib.__name__
        p.grad = None
        (p * 2).sum().backward()
        assert p.grad.stride() == (1, 12, 4)
    assert ember.random.thread_safe_generator() is None and torch.random.thread_safe_generator() is None
