"""Gradients of ember.linalg's decompositions for complex inputs, side by side with torch 2.13:
qr, eig / eigvals, eigh / eigvalsh, svd / svdvals (gauge-invariant losses, as PyTorch requires) and
householder_product (real and complex, both inputs), ember's gradcheck on complex inputs, and the
phase (gauge) errors of eig / eigh / svd with PyTorch's class and message."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


def _c(shape, seed):
    rs = np.random.RandomState(seed)
    return rs.uniform(-1, 1, shape) + 1j * rs.uniform(-1, 1, shape)


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().resolve_conj().resolve_neg().numpy()
    return x.detach().numpy()


def _loss(m, outs):
    """A real loss of every output: random real weights on the real and imaginary parts."""
    outs = outs if isinstance(outs, tuple) else (outs,)
    total = 0
    for i, o in enumerate(outs):
        w = m.tensor(np.random.RandomState(40 + i).randn(*tuple(o.shape)))
        if o.dtype.is_complex:
            w2 = m.tensor(np.random.RandomState(80 + i).randn(*tuple(o.shape)))
            total = total + (o.real * w).sum() + (o.imag * w2).sum()
        else:
            total = total + (o * w).sum()
    return total


def _grads(m, f, arrays):
    xs = [m.tensor(a).requires_grad_() for a in arrays]
    return m.autograd.grad(_loss(m, f(m, *xs)), xs)


def _herm(m, A):
    return A + A.mH


def _mul_cols(m, U, S):
    return U * S.unsqueeze(-2).to(U.dtype)


# name -> (f(module, *inputs) -> output(s) whose loss does not depend on the phases, input arrays)
CASES = {
    "qr_tall": (lambda m, A: tuple(m.linalg.qr(A)), [_c((2, 5, 3), 0)]),
    "qr_wide": (lambda m, A: tuple(m.linalg.qr(A)), [_c((2, 3, 5), 1)]),
    "qr_square_complete": (lambda m, A: tuple(m.linalg.qr(A, mode="complete")), [_c((4, 4), 2)]),
    "eigh": (lambda m, A: (lambda w, V: (w, V.abs(), (_mul_cols(m, V, w) @ V.mH)))(*m.linalg.eigh(_herm(m, A))),
             [_c((2, 4, 4), 3)]),
    "eigh_upper_vectors_only": (lambda m, A: m.linalg.eigh(_herm(m, A), UPLO="U")[1].abs() ** 2, [_c((3, 3), 4)]),
    "eigvalsh": (lambda m, A: m.linalg.eigvalsh(_herm(m, A)), [_c((2, 4, 4), 5)]),
    "eig": (lambda m, A: (lambda w, V: (w, V.abs()))(*m.linalg.eig(A)), [_c((2, 4, 4), 6)]),
    "eig_vectors_only": (lambda m, A: m.linalg.eig(A)[1].abs(), [_c((3, 3), 7)]),
    "eigvals": (lambda m, A: m.linalg.eigvals(A), [_c((2, 4, 4), 8)]),
    "svd_reduced_tall": (lambda m, A: (lambda U, S, Vh: (S, U @ Vh, U.abs(), Vh.abs() ** 2,
                                                         _mul_cols(m, U, S) @ Vh))(*m.linalg.svd(A, False)),
                         [_c((2, 5, 3), 9)]),
    "svd_reduced_wide": (lambda m, A: (lambda U, S, Vh: (S, U @ Vh, U.abs()))(*m.linalg.svd(A, False)),
                         [_c((2, 3, 5), 10)]),
    "svd_full_square": (lambda m, A: (lambda U, S, Vh: (S, U @ Vh, Vh.abs()))(*m.linalg.svd(A)), [_c((4, 4), 11)]),
    "svd_full_tall": (lambda m, A: (lambda U, S, Vh: (S, U[..., :3] @ Vh, U[..., :3].abs()))(*m.linalg.svd(A)),
                      [_c((5, 3), 12)]),
    "svd_u_only": (lambda m, A: m.linalg.svd(A, False)[0].abs(), [_c((4, 3), 13)]),
    "svdvals": (lambda m, A: m.linalg.svdvals(A), [_c((2, 4, 3), 14)]),
}


def _householder_inputs(shape, k, dtype, seed):
    a = _c(shape, seed) if dtype == "complex128" else np.random.RandomState(seed).uniform(-1, 1, shape)
    A, tau = torch.geqrf(torch.tensor(a))
    return [A.numpy(), tau[..., :k].contiguous().numpy()]


HOUSEHOLDER = {
    "complex_tall_batched": ((2, 5, 3), 3, "complex128"),
    "complex_square": ((3, 3), 3, "complex128"),
    "complex_fewer_reflectors": ((5, 3), 2, "complex128"),
    "real_tall_batched": ((2, 5, 3), 3, "float64"),
    "real_fewer_reflectors": ((4, 3), 1, "float64"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_complex_gradients_match_torch(case):
    f, arrays = CASES[case]
    ge, gt = _grads(ember, f, arrays), _grads(torch, f, arrays)
    for a, b in zip(ge, gt):
        assert a.dtype == ember.complex128
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("case", sorted(CASES))
def test_complex_gradcheck(case):
    f, arrays = CASES[case]
    xs = tuple(ember.tensor(a[(0,) * (a.ndim - 2)]).requires_grad_() for a in arrays)   # one matrix each
    assert gradcheck(lambda *a: f(ember, *a), xs)


@pytest.mark.parametrize("case", sorted(HOUSEHOLDER))
def test_householder_product_gradients_match_torch(case):
    arrays = _householder_inputs(*HOUSEHOLDER[case], seed=20)
    f = lambda m, A, tau: m.linalg.householder_product(A, tau)   # noqa: E731
    ge, gt = _grads(ember, f, arrays), _grads(torch, f, arrays)
    assert len(ge) == 2
    for a, b in zip(ge, gt):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("case", ["complex_tall_batched", "complex_fewer_reflectors", "real_tall_batched"])
def test_householder_product_gradcheck(case):
    A, tau = (ember.tensor(a).requires_grad_() for a in _householder_inputs(*HOUSEHOLDER[case], seed=21))
    assert gradcheck(ember.linalg.householder_product, (A, tau))


def test_householder_product_gradgradcheck():
    A, tau = (ember.tensor(a).requires_grad_() for a in _householder_inputs((4, 3), 2, "complex128", seed=22))
    assert gradgradcheck(ember.linalg.householder_product, (A, tau))


def test_householder_product_orgqr_method_backward():
    A, tau = _householder_inputs((5, 3), 3, "complex128", seed=23)
    res = []
    for m in (torch, ember):
        a, t = m.tensor(A).requires_grad_(), m.tensor(tau).requires_grad_()
        a.orgqr(t).abs().sum().backward()
        res.append((_np(a.grad), _np(t.grad)))
    for x, y in zip(*res):
        np.testing.assert_allclose(x, y, rtol=1e-7, atol=1e-9)


def test_qr_square_gradgradcheck():
    A = ember.tensor(_c((3, 3), 30)).requires_grad_()
    assert gradgradcheck(lambda a: ember.linalg.qr(a).Q.abs(), (A,))


# ---------------------------------------------------------------- phase-dependent losses: PyTorch's error
GAUGE = {
    "svd_U": lambda m, A: m.linalg.svd(A)[0].real.sum(),
    "svd_Vh_reduced": lambda m, A: m.linalg.svd(A, full_matrices=False)[2].imag.sum(),
    "eigh": lambda m, A: m.linalg.eigh(A + A.mH)[1].real.sum(),
    "eig": lambda m, A: m.linalg.eig(A)[1].sum().abs(),
    "eig_real_input": lambda m, A: m.linalg.eig(A.real)[1].imag.sum(),
}


@pytest.mark.parametrize("case", sorted(GAUGE))
def test_phase_dependent_loss_raises_like_torch(case):
    a = _c((3, 3), 40)
    errors = []
    for m in (torch, ember):
        x = m.tensor(a).requires_grad_()
        with pytest.raises(Exception) as info:
            GAUGE[case](m, x).backward()
        errors.append(info.value)
    te, ee = errors
    assert type(ee) is type(te) is RuntimeError
    assert str(ee) == str(te)


LAX = {
    "svd_U": lambda m, A: (lambda U, S, Vh: S.sum() + 1e-4 * U.real.sum())(*m.linalg.svd(A)),
    "svd_U_Vh": lambda m, A: (lambda U, S, Vh: (U @ Vh).abs().sum() + 1e-4 * Vh.imag.sum())(*m.linalg.svd(A)),
    "eigh_with_values": lambda m, A: (lambda w, V: w.sum() + 1e-4 * V.real.sum())(*m.linalg.eigh(A + A.mH)),
    "eigh_vectors_only": lambda m, A: (lambda w, V: V.abs().sum() + 1e-4 * V.real.sum())(*m.linalg.eigh(A + A.mH)),
    "eig_with_values": lambda m, A: (lambda w, V: w.abs().sum() + 1e-4 * V.real.sum())(*m.linalg.eig(A)),
    "eig_vectors_only": lambda m, A: (lambda w, V: V.abs().sum() + 1e-4 * V.imag.sum())(*m.linalg.eig(A)),
}


@pytest.mark.parametrize("case", sorted(LAX))
def test_phase_check_is_lax_like_torch(case):
    """A loss whose phase dependence is below PyTorch's tolerance (1e-2) passes, with torch's gradient."""
    a = _c((3, 3), 41)
    grads = []
    for m in (torch, ember):
        x = m.tensor(a).requires_grad_()
        LAX[case](m, x).backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-7, atol=1e-9)


def test_real_float64_unchanged():
    """Real inputs keep real gradients (and eig of a real matrix a real gradient), equal to torch's."""
    a = np.random.RandomState(50).uniform(-1, 1, (2, 4, 3))
    sq = np.random.RandomState(51).uniform(-1, 1, (4, 4))
    fs = [
        (lambda m, A: tuple(m.linalg.qr(A)), a),
        (lambda m, A: (lambda U, S, Vh: (S, U @ Vh, U.abs()))(*m.linalg.svd(A, False)), a),
        (lambda m, A: (lambda w, V: (w.abs(), V.abs()))(*m.linalg.eig(A)), sq),
        (lambda m, A: (lambda w, V: (w, V.abs()))(*m.linalg.eigh(A + A.mT)), sq),
    ]
    for f, arr in fs:
        (ge,), (gt,) = _grads(ember, f, [arr]), _grads(torch, f, [arr])
        assert ge.dtype == ember.float64
        np.testing.assert_allclose(_np(ge), _np(gt), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (5, 1)])
@pytest.mark.parametrize("left,transpose", [(True, False), (True, True), (False, False), (False, True)])
def test_ormqr_gradients_match_torch(dtype, shape, left, transpose):
    """ormqr(A, tau, C) = op(Q) C or C op(Q): gradients for all three inputs, batched, as torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    m, n = shape

    def rand(*s):
        x = rng.standard_normal(s)
        return x + 1j * rng.standard_normal(s) if dtype == "complex128" else x
    a, c = rand(2, m, n), rand(2, m, 3) if left else rand(2, 3, m)
    w = rand(*c.shape)
    g, tau = torch.geqrf(torch.tensor(a))
    tin = [g.clone().requires_grad_(), tau.clone().requires_grad_(), torch.tensor(c).requires_grad_()]
    (torch.ormqr(*tin, left=left, transpose=transpose) * torch.tensor(w).conj()).real.sum().backward()
    ein = [ember.tensor(x.detach().numpy()).requires_grad_() for x in tin]
    (ember.ormqr(*ein, left=left, transpose=transpose) * ember.tensor(w).conj()).real.sum().backward()
    for e, t in zip(ein, tin):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
