"""``ember.autograd.functional`` (jacobian, hessian, vjp, jvp, hvp, vhp) against values
worked out by hand / with numpy, with torch.autograd.functional's output structure; and
``gradcheck`` / ``gradgradcheck`` themselves: they pass correct gradients, catch wrong
first and second derivatives with a GradcheckError (a RuntimeError) showing both
Jacobians, and honour ``eps`` / ``atol`` / ``rtol`` / ``raise_exception``.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from ember.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp

F64 = ember.float64
X = [0.5, -1.0, 2.0]
Y = [1.5, 0.25, -0.75]


def _t(values, requires_grad=False):
    return ember.tensor(values, dtype=F64, requires_grad=requires_grad)


def _close(t, expected):
    assert isinstance(t, ember.Tensor), type(t)
    np.testing.assert_allclose(np.array(t.tolist()), np.asarray(expected, dtype=np.float64), rtol=1e-10, atol=1e-12)


def _structure(r):
    """Nested tuples of shapes, to compare with torch.autograd.functional's output structure."""
    if isinstance(r, tuple):
        return tuple(_structure(e) for e in r)
    assert isinstance(r, ember.Tensor)
    return tuple(r.shape)


x_np, y_np = np.array(X), np.array(Y)


# ---------------------------------------------------------------- jacobian
def test_jacobian_single_input_single_output():
    J = jacobian(lambda x: x ** 2, _t(X))
    _close(J, np.diag(2 * x_np))
    assert not J.requires_grad


def test_jacobian_scalar_output_and_matrix_input():
    a = np.array([[1.0, 2.0], [3.0, -1.0]])
    J = jacobian(lambda m: (m * m).sum(), _t(a.tolist()))
    assert tuple(J.shape) == (2, 2)
    _close(J, 2 * a)
    J = jacobian(lambda m: m.sum(0), _t(a.tolist()))                # out (2,) x in (2, 2)
    assert tuple(J.shape) == (2, 2, 2)
    _close(J, np.array([[[1, 0], [1, 0]], [[0, 1], [0, 1]]], dtype=float))


def test_jacobian_multiple_inputs_and_outputs():
    J = jacobian(lambda x, y: (x * y, x.sin() + y), (_t(X), _t(Y)))
    assert _structure(J) == (((3, 3), (3, 3)), ((3, 3), (3, 3)))
    _close(J[0][0], np.diag(y_np))
    _close(J[0][1], np.diag(x_np))
    _close(J[1][0], np.diag(np.cos(x_np)))
    _close(J[1][1], np.eye(3))


def test_jacobian_structure_follows_tuples():
    assert _structure(jacobian(lambda x: x * 2, (_t(X),))) == ((3, 3),)
    assert _structure(jacobian(lambda x: (x * 2,), _t(X))) == ((3, 3),)
    assert _structure(jacobian(lambda x, y: (x * y).sum(), (_t(X), _t(Y)))) == ((3,), (3,))
    J = jacobian(lambda x, y: x @ y, (_t(X), _t(Y)))           # scalar output, two inputs
    _close(J[0], y_np)
    _close(J[1], x_np)


def test_jacobian_of_output_independent_of_input():
    J = jacobian(lambda x: ember.ones(2, dtype=F64), _t(X))
    _close(J, np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match=re.escape(
            "Output 0 of the user-provided function does not require gradients. The outputs must be computed in a "
            "differentiable manner from the input when running in strict mode.")):
        jacobian(lambda x: ember.ones(2, dtype=F64), _t(X), strict=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Output 0 of the user-provided function is independent of input 1. This is not allowed in strict "
            "mode.")):
        jacobian(lambda x, y: x * 2, (_t(X), _t(Y)), strict=True)
    J = jacobian(lambda x, y: x * 2, (_t(X), _t(Y)))
    _close(J[1], np.zeros((3, 3)))


def test_jacobian_create_graph_is_differentiable():
    x = _t(X, requires_grad=True)
    J = jacobian(lambda t: t ** 3, x, create_graph=True)
    assert J.requires_grad
    _close(J, np.diag(3 * x_np ** 2))
    g, = ember.autograd.grad(J.sum(), x)
    _close(g, 6 * x_np)
    assert x.grad is None


def test_jacobian_leaves_caller_tensors_alone():
    x = _t(X, requires_grad=True)
    c = _t(Y)
    jacobian(lambda t: t * c, x)
    assert x.grad is None and not c.requires_grad and x.requires_grad


def test_inputs_must_be_tensors():
    with pytest.raises(TypeError, match=re.escape(
            "The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the value at index 1 "
            "has type <class 'float'>.")):
        jacobian(lambda x, y: x * y, (_t(X), 2.0))


# ---------------------------------------------------------------- hessian
def test_hessian_single_input():
    H = hessian(lambda x: (x ** 3).sum(), _t(X))
    _close(H, np.diag(6 * x_np))
    assert not H.requires_grad


def test_hessian_matrix_input_against_numpy():
    a = np.array([[1.0, 2.0], [0.5, -1.0]])
    # f(m) = sum(m_ij^2 * m_00): d2f/dm_ij dm_kl by hand
    H = hessian(lambda m: (m * m * m[0, 0]).sum(), _t(a.tolist()))
    assert tuple(H.shape) == (2, 2, 2, 2)
    expected = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            expected[i, j, i, j] += 2 * a[0, 0]
            expected[i, j, 0, 0] += 2 * a[i, j]
            expected[0, 0, i, j] += 2 * a[i, j]
    _close(H, expected)


def test_hessian_multiple_inputs():
    # f(x, y) = sum(x * exp(y)): Hxx = 0, Hxy = diag(exp y), Hyy = diag(x exp y)
    H = hessian(lambda x, y: (x * y.exp()).sum(), (_t(X), _t(Y)))
    assert _structure(H) == (((3, 3), (3, 3)), ((3, 3), (3, 3)))
    _close(H[0][0], np.zeros((3, 3)))
    _close(H[0][1], np.diag(np.exp(y_np)))
    _close(H[1][0], np.diag(np.exp(y_np)))
    _close(H[1][1], np.diag(x_np * np.exp(y_np)))


def test_hessian_needs_scalar_function():
    with pytest.raises(RuntimeError, match=re.escape(
            "The Tensor returned by the function given to hessian should contain a single element")):
        hessian(lambda x: x ** 2, _t(X))
    with pytest.raises(RuntimeError, match=re.escape("The function given to hessian should return a single Tensor")):
        hessian(lambda x: ((x ** 2).sum(),), _t(X))


# ---------------------------------------------------------------- vjp / jvp
def test_vjp_values_and_structure():
    out, v = vjp(lambda x: (x ** 2).sum(), _t(X))                 # v may be omitted for a scalar output
    _close(out, (x_np ** 2).sum())
    _close(v, 2 * x_np)
    out, v = vjp(lambda x: x ** 2, _t(X), _t([1.0, 0.0, 2.0]))
    _close(out, x_np ** 2)
    _close(v, 2 * x_np * [1.0, 0.0, 2.0])
    assert not out.requires_grad and not v.requires_grad


def test_vjp_multiple_inputs_and_outputs():
    u0, u1 = np.array([1.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0])
    outs, vs = vjp(lambda x, y: (x * y, x.sin() + y), (_t(X), _t(Y)), (_t(u0.tolist()), _t(u1.tolist())))
    assert _structure(outs) == ((3,), (3,)) and _structure(vs) == ((3,), (3,))
    _close(vs[0], u0 * y_np + u1 * np.cos(x_np))
    _close(vs[1], u0 * x_np + u1)
    out, vs = vjp(lambda x: x * 2, (_t(X),), (_t(u0.tolist()),))
    assert isinstance(out, ember.Tensor) and _structure(vs) == ((3,),)


def test_vjp_v_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "The vector v can only be None if the user-provided function returns a single Tensor with a single "
            "element.")):
        vjp(lambda x: x ** 2, _t(X))
    with pytest.raises(RuntimeError, match=re.escape(
            "v has invalid size: should be ember.Size([3]) but got ember.Size([2]).")):
        vjp(lambda x: x ** 2, _t(X), _t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=re.escape("v is a tuple of invalid length: should be 2 but got 1.")):
        vjp(lambda x: (x, x * 2), _t(X), (_t(X),))


def test_vjp_create_graph():
    x = _t(X, requires_grad=True)
    out, v = vjp(lambda t: (t ** 3).sum(), x, create_graph=True)
    assert out.requires_grad and v.requires_grad
    g, = ember.autograd.grad(v.sum(), x)
    _close(g, 6 * x_np)


def test_jvp_values_and_structure():
    u = np.array([1.0, 0.0, 2.0])
    out, jv = jvp(lambda x: x ** 2, _t(X), _t(u.tolist()))
    _close(out, x_np ** 2)
    _close(jv, 2 * x_np * u)
    out, jv = jvp(lambda x: x.sum() * x[0], _t(X), _t(u.tolist()))    # J = [sum + x0, x0, x0]
    _close(jv, (x_np.sum() + x_np[0]) * u[0] + x_np[0] * (u[1] + u[2]))
    assert tuple(jv.shape) == ()


def test_jvp_multiple_inputs_and_outputs():
    vx, vy = np.array([1.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0])
    outs, jv = jvp(lambda x, y: (x * y, x.sin() + y), (_t(X), _t(Y)), (_t(vx.tolist()), _t(vy.tolist())))
    assert _structure(outs) == ((3,), (3,)) and _structure(jv) == ((3,), (3,))
    _close(jv[0], y_np * vx + x_np * vy)
    _close(jv[1], np.cos(x_np) * vx + vy)
    out, jv = jvp(lambda x: (x ** 2,), _t(X), _t(vx.tolist()))
    assert _structure(out) == ((3,),) and _structure(jv) == ((3,),)


def test_jvp_v_none_only_for_single_element_input():
    out, jv = jvp(lambda x: x ** 3, _t([2.0]))
    _close(jv, [12.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
            "single element.")):
        jvp(lambda x: x ** 2, _t(X))


def test_jvp_of_linear_function_and_independent_output():
    _, jv = jvp(lambda x: x * 3, _t(X), _t([1.0, 2.0, 3.0]))
    _close(jv, [3.0, 6.0, 9.0])
    _, jv = jvp(lambda x, y: x * 2, (_t(X), _t(Y)), (_t(X), _t(Y)))
    _close(jv, 2 * x_np)


# ---------------------------------------------------------------- hvp / vhp
@pytest.mark.parametrize("fn", [hvp, vhp], ids=["hvp", "vhp"])
def test_hessian_vector_products_single_input(fn):
    v = np.array([1.0, 0.0, 2.0])
    out, hv = fn(lambda x: (x ** 3).sum(), _t(X), _t(v.tolist()))
    _close(out, (x_np ** 3).sum())
    _close(hv, 6 * x_np * v)
    assert not hv.requires_grad


@pytest.mark.parametrize("fn", [hvp, vhp], ids=["hvp", "vhp"])
def test_hessian_vector_products_multiple_inputs(fn):
    # f(x, y) = sum(x^2 * y): H = [[diag(2y), diag(2x)], [diag(2x), 0]]
    vx, vy = np.array([1.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0])
    out, hv = fn(lambda x, y: (x * x * y).sum(), (_t(X), _t(Y)), (_t(vx.tolist()), _t(vy.tolist())))
    assert _structure(hv) == ((3,), (3,)) and tuple(out.shape) == ()
    _close(hv[0], 2 * y_np * vx + 2 * x_np * vy)
    _close(hv[1], 2 * x_np * vx)


def test_hvp_of_linear_function_is_zero_and_errors():
    _, hv = hvp(lambda x: (x * 2).sum(), _t(X), _t(X))
    _close(hv, np.zeros(3))
    with pytest.raises(RuntimeError, match=re.escape(
            "The Tensor returned by the function given to hvp should contain a single element")):
        hvp(lambda x: x ** 2, _t(X), _t(X))
    with pytest.raises(RuntimeError, match=re.escape(
            "The Tensor returned by the function given to vhp should contain a single element")):
        vhp(lambda x: x ** 2, _t(X), _t(X))


def test_hvp_create_graph():
    x = _t(X, requires_grad=True)
    _, hv = hvp(lambda t: (t ** 4).sum(), x, _t([1.0, 1.0, 1.0]), create_graph=True)   # 12 x^2
    _close(hv, 12 * x_np ** 2)
    g, = ember.autograd.grad(hv.sum(), x)
    _close(g, 24 * x_np)


# ---------------------------------------------------------------- the same structures as PyTorch
@pytest.mark.parametrize("name, fn, n_in, with_v", [
    ("jacobian", lambda m, x, y=None: (x * y, x.sin() + y), 2, None),
    ("hessian", lambda m, x, y=None: (x * y.exp()).sum(), 2, None),
    ("vjp", lambda m, x, y=None: (x * y, x + y), 2, "out"),
    ("jvp", lambda m, x, y=None: (x * y, x + y), 2, "in"),
    ("hvp", lambda m, x, y=None: (x * x * y).sum(), 2, "in"),
    ("vhp", lambda m, x: (x ** 3).sum(), 1, "in"),
    ("jacobian", lambda m, x: x ** 2, 1, None),
])
def test_matches_torch_autograd_functional(name, fn, n_in, with_v):
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF
    import ember.autograd.functional as EF
    ins = [X, Y][:n_in]
    t_in = tuple(torch.tensor(a, dtype=torch.float64) for a in ins)
    e_in = tuple(_t(a) for a in ins)
    if n_in == 1:
        t_in, e_in = t_in[0], e_in[0]
    args_t, args_e = [], []
    if with_v == "out":
        args_t.append((torch.ones(3, dtype=torch.float64), torch.arange(3, dtype=torch.float64)))
        args_e.append((ember.ones(3, dtype=F64), ember.arange(3, dtype=F64)))
    elif with_v == "in":
        vt = tuple(torch.arange(3, dtype=torch.float64) + i for i in range(n_in))
        ve = tuple(ember.arange(3, dtype=F64) + i for i in range(n_in))
        args_t.append(vt if n_in > 1 else vt[0])
        args_e.append(ve if n_in > 1 else ve[0])
    rt = getattr(TF, name)(lambda *a: fn(torch, *a), t_in, *args_t)
    re_ = getattr(EF, name)(lambda *a: fn(ember, *a), e_in, *args_e)

    def compare(a, b):
        if isinstance(a, tuple):
            assert isinstance(b, tuple) and len(a) == len(b)
            for p, q in zip(a, b):
                compare(p, q)
        else:
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.detach().numpy(), np.array(b.tolist()), rtol=1e-10, atol=1e-12)
    compare(rt, re_)


# ---------------------------------------------------------------- gradcheck
class _TwiceWrongBackward(Function):
    """2x with a backward that says 3."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


class _SquareWrongSecondDerivative(Function):
    """x^2 whose backward (2x, written with a wrong Function) is right, but differentiates to 3."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * _TwiceWrongBackward.apply(x)


def test_gradcheck_passes_correct_functions():
    x = _t(X, requires_grad=True)
    y = _t(Y, requires_grad=True)
    assert gradcheck(lambda a: (a * a.exp()).sum(), (x,))
    assert gradcheck(lambda a, b: (a * b, a.sin() + b), (x, y))
    assert gradcheck(lambda a: a * 2, x)                                 # a single tensor, not a tuple
    m = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]], dtype=F64).t().detach().requires_grad_()
    assert not m.is_contiguous()
    assert gradcheck(lambda a: (a * a).sum(0), (m,))
    assert gradcheck(lambda a, k: a * k, (x, 3.0))                     # non-tensor inputs are passed through
    assert gradcheck(lambda a, b: a * b, (x, _t(Y)))                    # inputs without requires_grad not checked


def test_gradcheck_wrong_backward_raises_showing_both_jacobians():
    x = _t([1.0, 2.0], requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(_TwiceWrongBackward.apply, (x,))
    assert isinstance(info.value, RuntimeError)
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,")
    numerical = msg[msg.index("numerical:"):msg.index("analytical:")]
    analytical = msg[msg.index("analytical:"):]
    assert "2.0000" in numerical and "3." not in numerical
    assert "3." in analytical and "2." not in analytical
    assert gradcheck(_TwiceWrongBackward.apply, (x,), raise_exception=False) is False


def test_gradcheck_names_the_output_and_input():
    x, y = _t(X, requires_grad=True), _t(Y, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 1 with respect to input 1,"):
        gradcheck(lambda a, b: (a * b, a + _TwiceWrongBackward.apply(b)), (x, y))


def test_gradcheck_eps_atol_rtol():
    one = _t([1.0], requires_grad=True)
    cube = lambda t: t ** 3                                              # noqa: E731
    # central differences of x^3 with step eps are off by eps^2: 3.01 instead of 3 at eps=0.1
    assert gradcheck(cube, (one,))
    with pytest.raises(GradcheckError, match=r"numerical:tensor\(\[\[3\.0100\]\]"):
        gradcheck(cube, (one,), eps=0.1)
    assert gradcheck(cube, (one,), eps=0.1, atol=0.02)
    assert gradcheck(cube, (one,), eps=0.1, rtol=0.01)
    assert not gradcheck(cube, (one,), eps=0.1, atol=0.005, rtol=0.0, raise_exception=False)


def test_gradcheck_warns_for_single_precision_and_needs_an_input_requiring_grad():
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision floating point"):
        gradcheck(lambda a: a * 2, (ember.ones(2, requires_grad=True),), eps=1e-3, atol=1e-2)
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (ember.ones(2, dtype=F64),))


def test_gradcheck_refuses_overlapping_input():
    x = _t(X).expand(2, 3).requires_grad_()
    with pytest.raises(RuntimeError, match=re.escape(
            "The 0th input has a dimension with stride 0. gradcheck only supports inputs that are non-overlapping")):
        gradcheck(lambda a: a.sum(), (x,))


def test_gradgradcheck():
    x = _t(X, requires_grad=True)
    assert gradgradcheck(lambda a: a ** 3, (x,))
    assert gradgradcheck(lambda a, b: (a * b.exp()).sum(), (x, _t(Y, requires_grad=True)))
    assert gradgradcheck(lambda a: a ** 3, (x,), (_t([1.0, -2.0, 0.5]).requires_grad_(),))
    # the first derivative of the wrong-second-derivative function is right ...
    assert gradcheck(_SquareWrongSecondDerivative.apply, (x,))
    # ... gradgradcheck catches the second
    with pytest.raises(GradcheckError, match="Jacobian mismatch") as info:
        gradgradcheck(_SquareWrongSecondDerivative.apply, (x,))
    assert isinstance(info.value, RuntimeError)
    assert "numerical:" in str(info.value) and "analytical:" in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradgradcheck(_SquareWrongSecondDerivative.apply, (x,), raise_exception=False) is False
