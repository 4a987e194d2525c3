"""constraints.check, transforms (values, inverses, log|det J| against torch and against autograd),
biject_to / transform_to."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as ED
from ember.distributions import constraints as EC
from ember.distributions import transforms as ET

torch = pytest.importorskip("torch")
import torch.distributions as TD  # noqa: E402

C_CASES = [
    ("real", [1.0, float("nan"), float("inf")]),
    ("positive", [1.0, 0.0, -2.0]),
    ("nonnegative", [1.0, 0.0, -2.0]),
    ("unit_interval", [0.0, 0.5, 1.0, 1.5]),
    ("boolean", [0.0, 1.0, 0.5]),
    ("nonnegative_integer", [0.0, 3.0, -1.0, 2.5]),
    ("positive_integer", [0.0, 3.0, 2.5]),
    ("simplex", [[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]]),
    ("one_hot", [[0.0, 1.0], [1.0, 1.0]]),
    ("real_vector", [[0.0, 1.0], [float("nan"), 1.0]]),
    ("lower_cholesky", [[[1.0, 0.0], [2.0, 1.0]], [[1.0, 1.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]]),
    ("lower_triangular", [[[1.0, 0.0], [2.0, -1.0]], [[1.0, 1.0], [0.0, 1.0]]]),
    ("positive_definite", [[[2.0, 0.5], [0.5, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.5], [0.0, 1.0]]]),
    ("positive_semidefinite", [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("symmetric", [[[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.5], [0.0, 1.0]]]),
    ("square", [[[1.0, 2.0], [2.0, 1.0]]]),
]
FACTORY_CASES = [
    (lambda c: c.greater_than(1.0), [0.5, 1.0, 2.0]),
    (lambda c: c.greater_than_eq(1.0), [0.5, 1.0, 2.0]),
    (lambda c: c.less_than(1.0), [0.5, 1.0, 2.0]),
    (lambda c: c.interval(-1.0, 1.0), [-1.0, 1.0, 2.0]),
    (lambda c: c.half_open_interval(-1.0, 1.0), [-1.0, 1.0, 0.0]),
    (lambda c: c.integer_interval(0, 3), [0.0, 3.0, 4.0, 1.5]),
    (lambda c: c.independent(c.positive, 1), [[1.0, 2.0], [1.0, -1.0]]),
    (lambda c: c.multinomial(3), [[1.0, 2.0], [3.0, 1.0]]),
]


@pytest.mark.parametrize("name,value", C_CASES, ids=[c[0] for c in C_CASES])
def test_constraint_check_matches_torch(name, value):
    ec, tc = getattr(EC, name), getattr(TD.constraints, name)
    e, t = ec.check(ember.tensor(value)), tc.check(torch.tensor(value))
    assert e.dtype == ember.bool and e.tolist() == t.tolist()
    assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete
    assert repr(ec) == repr(tc)


@pytest.mark.parametrize("i", range(len(FACTORY_CASES)))
def test_constraint_factories_match_torch(i):
    make, value = FACTORY_CASES[i]
    ec, tc = make(EC), make(TD.constraints)
    assert ec.check(ember.tensor(value)).tolist() == tc.check(torch.tensor(value)).tolist()
    assert repr(ec) == repr(tc)
    assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete


def test_dependent_cannot_check():
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        EC.dependent.check(ember.ones(1))
    assert EC.is_dependent(EC.dependent) and not EC.is_dependent(EC.real)


T_CASES = [
    ("ExpTransform", lambda m: m.distributions.transforms.ExpTransform(), [[-1.0, 0.5, 2.0]]),
    ("SigmoidTransform", lambda m: m.distributions.transforms.SigmoidTransform(), [[-3.0, 0.5, 2.0]]),
    ("TanhTransform", lambda m: m.distributions.transforms.TanhTransform(), [[-1.5, 0.5, 2.0]]),
    ("SoftplusTransform", lambda m: m.distributions.transforms.SoftplusTransform(), [[-1.5, 0.5, 2.0]]),
    ("AffineTransform", lambda m: m.distributions.transforms.AffineTransform(m.tensor(1.5, dtype=m.float64),
                                                                             m.tensor([2.0, -0.5, 3.0], dtype=m.float64)),
     [[-1.5, 0.5, 2.0]]),
    ("AffineTransform_event", lambda m: m.distributions.transforms.AffineTransform(1.0, 2.0, event_dim=1),
     [[-1.5, 0.5, 2.0]]),
    ("PowerTransform", lambda m: m.distributions.transforms.PowerTransform(m.tensor(2.5, dtype=m.float64)),
     [[0.3, 0.5, 2.0]]),
    ("StickBreakingTransform", lambda m: m.distributions.transforms.StickBreakingTransform(), [[-1.5, 0.5, 2.0]]),
    ("ComposeTransform", lambda m: m.distributions.transforms.ComposeTransform(
        [m.distributions.transforms.AffineTransform(0.5, 2.0), m.distributions.transforms.ExpTransform()]),
     [[-1.5, 0.5, 2.0]]),
    ("IndependentTransform", lambda m: m.distributions.transforms.IndependentTransform(
        m.distributions.transforms.ExpTransform(), 1), [[-1.5, 0.5, 2.0], [0.0, 1.0, 2.0]]),
    ("inv", lambda m: m.distributions.transforms.ExpTransform().inv, [[0.5, 1.0, 3.0]]),
]


@pytest.mark.parametrize("name,build,x", T_CASES, ids=[c[0] for c in T_CASES])
def test_transform_matches_torch(name, build, x):
    et, tt = build(ember), build(torch)
    ex, tx = ember.tensor(x, dtype=ember.float64), torch.tensor(x, dtype=torch.float64)
    ey, ty = et(ex), tt(tx)
    np.testing.assert_allclose(ey.numpy(), ty.numpy(), rtol=1e-12)
    np.testing.assert_allclose(et.inv(ey).numpy(), tt.inv(ty).numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(et.log_abs_det_jacobian(ex, ey).numpy(), tt.log_abs_det_jacobian(tx, ty).numpy(),
                               rtol=1e-10, atol=1e-12)
    assert tuple(et.forward_shape((2, 3))) == tuple(tt.forward_shape((2, 3)))
    assert et.bijective == tt.bijective
    assert et.domain.event_dim == tt.domain.event_dim and et.codomain.event_dim == tt.codomain.event_dim


def test_softmax_transform_matches_torch():
    x = [[-1.0, 0.5, 2.0]]
    e, t = ET.SoftmaxTransform()(ember.tensor(x)), TD.transforms.SoftmaxTransform()(torch.tensor(x))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_log_abs_det_jacobian_is_autograds():
    x = ember.tensor([-0.7, 0.3, 1.2], dtype=ember.float64)
    for t in (ET.ExpTransform(), ET.SigmoidTransform(), ET.TanhTransform(), ET.SoftplusTransform(),
              ET.AffineTransform(0.3, -2.0), ET.PowerTransform(ember.tensor(3.0, dtype=ember.float64))):
        xx = x.abs() if isinstance(t, ET.PowerTransform) else x
        jac = ember.autograd.functional.jacobian(t, xx) if hasattr(ember.autograd, "functional") else None
        if jac is None:
            pytest.skip("ember.autograd.functional.jacobian missing")
        np.testing.assert_allclose(t.log_abs_det_jacobian(xx, t(xx)).numpy(), np.log(np.abs(np.diag(jac.numpy()))),
                                   rtol=1e-9, err_msg=repr(t))


def test_cache_returns_the_same_object():
    t = ET.ExpTransform(cache_size=1)
    x = ember.randn(3)
    y = t(x)
    assert t.inv(y) is x and t(x) is y
    with pytest.raises(ValueError):
        ET.ExpTransform(cache_size=2)


@pytest.mark.parametrize("name", ["real", "positive", "unit_interval", "simplex", "real_vector"])
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_biject_to_transform_to_match_torch(name, registry):
    c_e, c_t = getattr(EC, name), getattr(TD.constraints, name)
    te, tt = getattr(ED, registry)(c_e), getattr(TD, registry)(c_t)
    assert type(te).__name__ == type(tt).__name__
    x = [[-1.0, 0.5, 2.0]]
    y = te(ember.tensor(x, dtype=ember.float64))
    np.testing.assert_allclose(y.numpy(), tt(torch.tensor(x, dtype=torch.float64)).numpy(), rtol=1e-12)
    assert bool(c_e.check(y).all())


def test_biject_to_factories_and_unknown():
    for c in (EC.greater_than(2.0), EC.less_than(-1.0), EC.interval(-2.0, 3.0)):
        y = ED.biject_to(c)(ember.tensor([-3.0, 0.0, 4.0], dtype=ember.float64))
        assert bool(c.check(y).all())
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        ED.biject_to(EC.boolean)
