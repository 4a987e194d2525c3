"""Gradients of ember.special against torch.special (float64) and ember.autograd.gradcheck; the
non-differentiable functions and the derivatives PyTorch does not implement behave as PyTorch's."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

torch = pytest.importorskip("torch")

X = np.array([0.3, 0.7, 1.2, 2.5, 4.0, 7.5])
NEG = np.array([-2.7, -1.3, -0.4, 0.6, 1.9, 3.3])
UNIT = np.array([0.05, 0.2, 0.45, 0.6, 0.8, 0.97])

#: name -> (function of the module, input values)
UNARY = {
    "digamma": (lambda m, x: m.special.digamma(x), X), "psi": (lambda m, x: m.special.psi(x), X),
    "lgamma": (lambda m, x: m.lgamma(x), NEG), "gammaln": (lambda m, x: m.special.gammaln(x), X),
    "i0": (lambda m, x: m.i0(x), NEG), "i0e": (lambda m, x: m.special.i0e(x), NEG),
    "i1": (lambda m, x: m.special.i1(x), NEG), "i1e": (lambda m, x: m.special.i1e(x), NEG),
    "sinc": (lambda m, x: m.sinc(x), NEG), "entr": (lambda m, x: m.special.entr(x), X),
    "erfcx": (lambda m, x: m.special.erfcx(x), NEG), "ndtri": (lambda m, x: m.special.ndtri(x), UNIT),
    "log_ndtr": (lambda m, x: m.special.log_ndtr(x), NEG * 3), "ndtr": (lambda m, x: m.special.ndtr(x), NEG),
    "logit": (lambda m, x: m.logit(x), UNIT), "logit_eps": (lambda m, x: m.special.logit(x, eps=0.1), UNIT),
    "polygamma0": (lambda m, x: m.polygamma(0, x), X), "polygamma1": (lambda m, x: m.special.polygamma(1, x), X),
    "polygamma3": (lambda m, x: m.polygamma(3, x), X), "mvlgamma3": (lambda m, x: m.mvlgamma(x + 1, 3), X),
    "multigammaln": (lambda m, x: m.special.multigammaln(x + 2, 4), X),
}
BINARY = {
    "xlogy": (lambda m, a, b: m.xlogy(a, b), NEG, X),
    "xlog1py": (lambda m, a, b: m.special.xlog1py(a, b), NEG, X - 0.2),
}


def _pair(vals):
    return (ember.tensor(vals, dtype=ember.float64, requires_grad=True),
            torch.tensor(vals, dtype=torch.float64, requires_grad=True))


def _close(a, b, rtol=1e-9, atol=1e-12):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_grad_matches_torch(name):
    f, vals = UNARY[name]
    e, t = _pair(vals)
    ye, yt = f(ember, e), f(torch, t)
    g = np.linspace(-1, 1, len(vals))
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    _close(e.grad, t.grad)
    # second order, through the same formulas (create_graph)
    e2, t2 = _pair(vals)
    (ge,) = ember.autograd.grad(f(ember, e2).sum(), e2, create_graph=True)
    (gt,) = torch.autograd.grad(f(torch, t2).sum(), t2, create_graph=True)
    _close(ge, gt)
    if name not in ("polygamma3",):   # polygamma(4) exists in both; one second-order check suffices
        ge.sum().backward()
        gt.sum().backward()
        _close(e2.grad, t2.grad, rtol=1e-7)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_gradcheck(name):
    f, vals = UNARY[name]
    x = ember.tensor(vals, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x: f(ember, x), (x,))


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_grad(name):
    f, a, b = BINARY[name]
    ea, ta = _pair(a)
    eb, tb = _pair(b)
    f(ember, ea, eb).sum().backward()
    f(torch, ta, tb).sum().backward()
    _close(ea.grad, ta.grad)
    _close(eb.grad, tb.grad)
    assert gradcheck(lambda x, y: f(ember, x, y), (ember.tensor(a, dtype=ember.float64, requires_grad=True),
                                                   ember.tensor(b, dtype=ember.float64, requires_grad=True)))
    # the number-first form: only the tensor gets a gradient
    eb, tb = _pair(b)
    f(ember, 2.0, eb).sum().backward()
    f(torch, 2.0, tb).sum().backward()
    _close(eb.grad, tb.grad)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_gradient_at_zero_self(name):
    e, t = _pair([0.0, 1.0, 0.0, 0.0, 0.0])
    ey, ty = _pair([0.0, 2.0, 3.0, -1.0, -2.0])
    getattr(ember.special, name)(e, ey).sum().backward()
    getattr(torch.special, name)(t, ty).sum().backward()
    _close(e.grad, t.grad)
    _close(ey.grad, ty.grad)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc", "zeta"])
def test_second_argument_grad_and_first_raises(name):
    a, x = np.array([0.6, 1.5, 2.5, 4.0]), np.array([0.3, 1.0, 2.2, 5.0])
    if name == "zeta":
        a = a + 1.0
    ea, ta = ember.tensor(a, dtype=ember.float64), torch.tensor(a, dtype=torch.float64)
    ex, tx = _pair(x)
    getattr(ember.special, name)(ea, ex).sum().backward()
    getattr(torch.special, name)(ta, tx).sum().backward()
    _close(ex.grad, tx.grad)
    assert gradcheck(lambda x: getattr(ember.special, name)(ea, x), (ember.tensor(x, dtype=ember.float64,
                                                                                  requires_grad=True),))
    # the first argument: PyTorch records the op, and backward raises NotImplementedError
    ea, ta = _pair(a)
    ye, yt = getattr(ember.special, name)(ea, ember.tensor(x)), getattr(torch.special, name)(ta, torch.tensor(x))
    assert ye.requires_grad and yt.requires_grad
    with pytest.raises(NotImplementedError) as te:
        yt.sum().backward()
    with pytest.raises(NotImplementedError) as ee:
        ye.sum().backward()
    assert str(ee.value) == str(te.value)


NONDIFF = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "spherical_bessel_j0"]


@pytest.mark.parametrize("name", NONDIFF + ["chebyshev_polynomial_t", "hermite_polynomial_h", "legendre_polynomial_p",
                                            "laguerre_polynomial_l", "shifted_chebyshev_polynomial_w"])
def test_not_differentiable_like_torch(name):
    e, t = _pair([0.3, 0.7, 1.4])
    args_e, args_t = ((e, 3), (t, 3)) if "polynomial" in name else ((e,), (t,))
    ye, yt = getattr(ember.special, name)(*args_e), getattr(torch.special, name)(*args_t)
    assert yt.requires_grad is False and yt.grad_fn is None
    assert ye.requires_grad is False and ye.grad_fn is None


def test_grad_fn_names():
    e, t = _pair([0.5, 1.5])
    for f in (lambda m, x: m.digamma(x), lambda m, x: m.lgamma(x), lambda m, x: m.polygamma(2, x),
              lambda m, x: m.xlogy(x, x), lambda m, x: m.special.i0e(x), lambda m, x: m.special.erfcx(x),
              lambda m, x: m.mvlgamma(x + 1, 2), lambda m, x: m.logit(x / 2), lambda m, x: m.special.i1e(x),
              lambda m, x: m.special.i1(x), lambda m, x: m.special.xlog1py(x, x), lambda m, x: m.sinc(x),
              lambda m, x: m.special.entr(x), lambda m, x: m.special.ndtri(x / 2), lambda m, x: m.special.log_ndtr(x),
              lambda m, x: m.special.zeta(x + 1, x), lambda m, x: m.igamma(x, x), lambda m, x: m.igammac(x, x),
              lambda m, x: m.i0(x)):
        assert type(f(ember, e).grad_fn).__name__ == f(torch, t).grad_fn.name()
