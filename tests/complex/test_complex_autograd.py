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
    z = _z(3)
    y = z.cumprod(0)
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
