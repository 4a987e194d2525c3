"""Complex autograd against torch: ``.grad`` of real losses of complex leaves (PyTorch's conjugate
Wirtinger convention), gradcheck on complex inputs / outputs, in-place writes through real / imag views."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck, GradcheckError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
ZN = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
WN = RNG.standard_normal((4, 3)) + 1j * RNG.standard_normal((4, 3))
XN = RNG.standard_normal((3, 4))

#: real losses of complex leaves z (3, 4), w (4, 3) and a real leaf x (3, 4)
LOSSES = {
    "abs_of_mul_conj": lambda m, z, w, x: (z * w.mT.conj()).abs().sum(),
    "matmul_real": lambda m, z, w, x: (z @ w).real.sum(),
    "mm_bmm_abs": lambda m, z, w, x: m.mm(z, w).abs().sum() + m.bmm(z[None], w[None]).imag.sum(),
    "fft_chain": lambda m, z, w, x: m.fft.ifft(m.fft.fft(z, dim=-1) * 2).abs().pow(2).sum(),
    "rfft_chain": lambda m, z, w, x: m.fft.rfft(x * z.real).abs().sum(),
    "exp_log": lambda m, z, w, x: (z.exp() + (z + 3).log()).real.sum(),
    "trig": lambda m, z, w, x: (z.sin() * z.cos() + z.tanh()).imag.sum(),
    "hyperbolic_sigmoid": lambda m, z, w, x: (z.sinh() + z.cosh() + z.sigmoid()).abs().sum(),
    "sqrt_div": lambda m, z, w, x: (z.sqrt() / (z + 3)).real.sum() + (x / z).imag.sum(),
    "pow": lambda m, z, w, x: (z.pow(3) + z ** (0.5 + 1j) + 2 ** z).abs().sum(),
    "pow_tensor": lambda m, z, w, x: z.pow(w.mT).abs().sum(),
    "reciprocal_square": lambda m, z, w, x: (z.reciprocal() + z.square()).abs().sum(),
    "sum_mean": lambda m, z, w, x: z.sum(0).abs().sum() + z.mean().abs(),
    "shape_moves": lambda m, z, w, x: z.reshape(4, 3).permute(1, 0).contiguous().imag.sum() + z.t()[1].abs().sum(),
    "index_clone": lambda m, z, w, x: z.clone()[1:, ::2].angle().sum(),
    "real_to_complex": lambda m, z, w, x: (x.to(m.complex128) * z).imag.pow(2).sum(),
    "stack_cat": lambda m, z, w, x: m.stack([z, z.conj()]).exp().real.sum() + m.cat([z, w.mT]).cos().imag.sum(),
    "polar": lambda m, z, w, x: (m.polar(x.abs() + 0.1, x) * z).real.sum(),
    "complex": lambda m, z, w, x: (m.complex(x, x * 2) / z).abs().sum(),
    "views": lambda m, z, w, x: (m.view_as_real(z) ** 2).sum() +
    m.view_as_complex(m.view_as_real(z) * x[..., None]).angle().sum(),
    "expand_where": lambda m, z, w, x: (z[:1].expand(3, 4) * z).sin().real.sum() + m.where(x > 0, z, 2 * z).real.sum(),
    "adjoints": lambda m, z, w, x: (z @ z.mH).real.sum() + (z.H @ z).abs().sum() + z.adjoint().imag.sum(),
    "sgn": lambda m, z, w, x: (z.sgn() * w.mT).real.sum(),
    "conj_physical": lambda m, z, w, x: (m.conj_physical(z) * z.exp()).imag.sum(),
    "linear": lambda m, z, w, x: m.nn.functional.linear(z.unsqueeze(0), w.mT, z[0, :3]).abs().sum(),
    "einsum": lambda m, z, w, x: m.einsum("ij,jk->ik", z, w).real.sum(),
    "dot_vdot_mv": lambda m, z, w, x: m.vdot(z[0], w[:, 0]).abs() + m.dot(z[0], w[:, 0]).real +
    m.mv(z, w[:, 0]).abs().sum(),
    "prod": lambda m, z, w, x: z.prod(1).abs().sum(),
    "inverse_trig": lambda m, z, w, x: (z.asin() + z.acos() + z.atan() + z.asinh() + z.acosh() + z.atanh()).abs().sum(),
    "log_exp_family": lambda m, z, w, x: (z.exp2() + z.log2() + z.log10() + z.log1p() + z.expm1() + z.rsqrt() +
                                          z.tan()).abs().sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_matches_torch(name):
    grads = []
    for m in (torch, ember):
        z = m.tensor(ZN, requires_grad=True)
        w = m.tensor(WN, requires_grad=True)
        x = m.tensor(XN, requires_grad=True)
        loss = LOSSES[name](m, z, w, x)
        loss.backward()
        grads.append((loss.item(), [None if t.grad is None else np.asarray(t.grad.tolist()) for t in (z, w, x)]))
    (lt, gt), (le, ge) = grads
    assert abs(lt - le) <= 1e-9 * max(1.0, abs(lt))
    for a, b in zip(gt, ge):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)


def test_complex_leaf_requires_grad_and_grad_dtype():
    z = ember.tensor([1 + 2j], requires_grad=True)
    assert z.requires_grad and z.is_leaf
    z.abs().sum().backward()
    assert z.grad.dtype == ember.complex64


def _z(*shape):
    return ember.randn(*shape, dtype=ember.complex128, requires_grad=True)


@pytest.mark.parametrize("fn", [
    lambda z, w: z * w, lambda z, w: z / w, lambda z, w: z.exp() * w.conj(), lambda z, w: (z @ w.mT).sum(1),
    lambda z, w: z.real * w.imag, lambda z, w: ember.angle(z) + w.abs(), lambda z, w: ember.view_as_real(z * w),
    lambda z, w: z.pow(w), lambda z, w: ember.fft.fft(z * w),
], ids=["mul", "div", "exp_conj", "matmul", "real_imag", "angle_abs", "view_as_real", "pow", "fft"])
def test_gradcheck_complex(fn):
    assert gradcheck(fn, (_z(2, 3), _z(2, 3)))


def test_gradcheck_real_to_complex():
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    y = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(ember.complex, (x, y))
    assert gradcheck(lambda a, b: ember.polar(a.abs() + 0.5, b), (x, y))


def test_gradgradcheck_complex():
    assert gradgradcheck(lambda z: (z * z.exp()).abs(), (_z(3),))


def test_gradcheck_catches_a_wrong_complex_gradient():
    """A function whose backward ignores the conjugation must fail the complex check."""
    class NoConj(ember.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return 2 * g * z           # should be 2 * g * z.conj()

    with pytest.raises(GradcheckError):
        gradcheck(NoConj.apply, (_z(3),))
    assert not gradcheck(NoConj.apply, (_z(3),), raise_exception=False)


def test_op_without_complex_formula_raises_at_backward():
    z = _z(3, 3)
    y = ember.addcmul(z, z, z)              # addcmul's formula is not yet in COMPLEX_SAFE
    with pytest.raises(RuntimeError, match="not implemented for complex"):
        y.abs().sum().backward()


def test_inplace_through_real_imag_views_matches_torch():
    results = []
    for m in (torch, ember):
        z = m.tensor([1 + 2j, 3 - 4j, 0.5 + 1j], dtype=m.complex128, requires_grad=True)
        y = z * 2
        y.real.mul_(3)
        y.imag[1:].exp_()
        (y * y).abs().sum().backward()
        g1 = np.asarray(z.grad.tolist())
        z.grad = None
        y = z * 2
        r = y.imag
        y.mul_(1j)                     # the base written after the view was taken
        (r * r).sum().backward()
        g2 = np.asarray(z.grad.tolist())
        z.grad = None
        y = z * (1 + 1j)
        v = m.view_as_real(y)
        v[1].add_(v[0] * 2)
        y.abs().sum().backward()
        results.append((g1, g2, np.asarray(z.grad.tolist())))
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-6)


def test_inplace_on_view_of_complex_leaf_raises():
    for m in (torch, ember):
        z = m.tensor([1 + 2j], requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            z.real[0] = 5.0


# ---------------------------------------------------------------- second pass: norms, var / std, linalg
AN = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)) + 3 * np.eye(3)   # well conditioned
BN = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))

#: real losses of a complex square leaf a (3, 3) and a complex leaf b (3, 2)
SECOND_PASS = {
    "vector_norm": lambda m, a, b: m.linalg.vector_norm(a) + m.linalg.vector_norm(b, 1, dim=0).sum() +
    m.linalg.vector_norm(a, 3, dim=(0, 1)) + m.linalg.vector_norm(b, float("inf"), dim=1).sum(),
    "vector_norm_keepdim": lambda m, a, b: (m.linalg.vector_norm(a, 0.5, dim=1, keepdim=True) * a).abs().sum(),
    "norm": lambda m, a, b: m.linalg.norm(a) + m.linalg.norm(b[:, 0]) + m.linalg.norm(a, dim=1).sum(),
    "tensor_norm": lambda m, a, b: a.norm() + a.norm(p=1, dim=1).sum() + b.norm(p=2, dim=0).sum(),
    "matrix_norm_fro": lambda m, a, b: m.linalg.matrix_norm(a, "fro") + m.linalg.norm(b, "fro"),
    "var_std": lambda m, a, b: a.var() + a.var(1).sum() + b.std(0, correction=0).sum() + a.std(),
    "var_mean": lambda m, a, b: sum(t.abs().sum() for t in m.var_mean(a, 1)) +
    sum(t.abs().sum() for t in m.std_mean(b, 0)),
    "abs_reductions": lambda m, a, b: a.abs().amax() + a.abs().mean(1).sum() + b.abs().amin(0).sum(),
    "det": lambda m, a, b: m.linalg.det(a).abs() + m.det(a).real + m.linalg.det(m.stack([a, 2 * a])).imag.sum(),
    "inv": lambda m, a, b: m.linalg.inv(a).abs().sum() + m.inverse(a).real.sum(),
    "solve": lambda m, a, b: m.linalg.solve(a, b).abs().sum() + m.linalg.solve(a, b[:, 0]).real.sum() +
    m.linalg.solve(a, b.mT, left=False).imag.sum(),
    "solve_triangular": lambda m, a, b: m.linalg.solve_triangular(a.triu(), b, upper=True).abs().sum() +
    m.linalg.solve_triangular(a.tril(), b.mT, upper=False, left=False, unitriangular=True).real.sum(),
    "cholesky": lambda m, a, b: m.linalg.cholesky(a @ a.mH + m.eye(3)).abs().sum() +
    m.linalg.cholesky(a @ a.mH + m.eye(3), upper=True).real.sum(),
    "matrix_exp": lambda m, a, b: m.linalg.matrix_exp(a * 0.3).abs().sum(),
    "lu": lambda m, a, b: m.linalg.lu_factor(a)[0].abs().sum() +
    m.linalg.lu_solve(*m.linalg.lu_factor(a), b).abs().sum() +
    m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True).real.sum(),
    "matmul_square": lambda m, a, b: (a @ a @ b).abs().sum(),
    "cumprod": lambda m, a, b: a.cumprod(0).abs().sum() + (b * 0.5).cumprod(1).real.sum() +
    a.masked_fill(m.eye(3, dtype=m.bool), 0).cumprod(1).imag.sum(),
    "slogdet": lambda m, a, b: m.linalg.slogdet(a)[1] + m.linalg.slogdet(a)[0].imag * 2 +
    (m.slogdet(2 * a)[0] * m.linalg.slogdet(a)[1]).real,
}


@pytest.mark.parametrize("name", sorted(SECOND_PASS))
def test_second_pass_grad_matches_torch(name):
    grads = []
    for m in (torch, ember):
        a = m.tensor(AN, requires_grad=True)
        b = m.tensor(BN, requires_grad=True)
        loss = SECOND_PASS[name](m, a, b)
        ga, gb = m.autograd.grad(loss, (a, b), allow_unused=True)
        grads.append((loss.item(), [None if g is None else np.asarray(g.tolist()) for g in (ga, gb)]))
    (lt, gt), (le, ge) = grads
    assert abs(lt - le) <= 1e-9 * max(1.0, abs(lt))
    for x, y in zip(gt, ge):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(y, x, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("name", sorted(SECOND_PASS))
def test_second_pass_gradcheck(name):
    a = ember.tensor(AN, requires_grad=True)
    b = ember.tensor(BN, requires_grad=True)
    assert gradcheck(lambda a, b: SECOND_PASS[name](ember, a, b), (a, b))


@pytest.mark.parametrize("fn", [
    lambda a, b: ember.linalg.inv(a), lambda a, b: ember.linalg.solve(a, b), lambda a, b: ember.linalg.det(a),
    lambda a, b: ember.var_mean(a, 0), lambda a, b: ember.linalg.vector_norm(a, dim=0) * b[:, 0],
    lambda a, b: ember.linalg.slogdet(a),
], ids=["inv", "solve", "det", "var_mean", "vector_norm", "slogdet"])
def test_second_pass_gradcheck_complex_outputs(fn):
    """Complex (and real) outputs checked as their real and imaginary parts."""
    assert gradcheck(fn, (ember.tensor(AN, requires_grad=True), ember.tensor(BN, requires_grad=True)))


def test_slogdet_sign_of_real_input_requires_grad_but_gives_none():
    """As PyTorch: the sign output requires grad for real input too, and a loss of the sign alone gives no
    gradient (it is piecewise constant)."""
    for m in (torch, ember):
        a = m.tensor(XN[:, :3], requires_grad=True)
        sign, logabsdet = m.linalg.slogdet(a)
        assert sign.requires_grad and logabsdet.requires_grad
        assert m.autograd.grad(sign * 2, a, allow_unused=True) == (None,)
