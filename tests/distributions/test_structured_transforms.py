"""CatTransform, StackTransform, CumulativeDistributionTransform, CorrCholeskyTransform and
PositiveDefiniteTransform against torch.distributions.transforms in float64: forward, inverse, log|det J|,
shapes, domains, gradients, the biject_to / transform_to registrations and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as ED

torch = pytest.importorskip("torch")
import torch.distributions as TD  # noqa: E402


def _x(mod, v):
    return mod.tensor(v, dtype=mod.float64)


RNG = np.random.default_rng(0)
# name -> (build(mod) -> transform, x as nested lists)
CASES = {
    "Cat_dim0": (lambda m: m.distributions.transforms.CatTransform(
        [m.distributions.transforms.ExpTransform(), m.distributions.transforms.AffineTransform(1.0, -2.0)],
        dim=0, lengths=[2, 3]), RNG.normal(size=(5, 2)).tolist()),
    "Cat_last_dim_event": (lambda m: m.distributions.transforms.CatTransform(
        [m.distributions.transforms.SigmoidTransform(),
         m.distributions.transforms.IndependentTransform(m.distributions.transforms.ExpTransform(), 1)],
        dim=-1, lengths=[1, 3]), RNG.normal(size=(3, 4)).tolist()),
    "Cat_nested": (lambda m: m.distributions.transforms.CatTransform(
        [m.distributions.transforms.CatTransform([m.distributions.transforms.ExpTransform(),
                                                  m.distributions.transforms.identity_transform], 0, [1, 1])] * 2,
        dim=0, lengths=[2, 2]), RNG.normal(size=(4,)).tolist()),
    "Stack": (lambda m: m.distributions.transforms.StackTransform(
        [m.distributions.transforms.ExpTransform(), m.distributions.transforms.AffineTransform(1.0, 2.0),
         m.distributions.transforms.TanhTransform()], dim=1), RNG.normal(size=(4, 3)).tolist()),
    "CDF_normal": (lambda m: m.distributions.transforms.CumulativeDistributionTransform(
        m.distributions.Normal(_x(m, [0.5, -1.0]), _x(m, [1.0, 2.0]))), RNG.normal(size=(3, 2)).tolist()),
    "CorrCholesky_2": (lambda m: m.distributions.transforms.CorrCholeskyTransform(), RNG.normal(size=(4, 1)).tolist()),
    "CorrCholesky_4": (lambda m: m.distributions.transforms.CorrCholeskyTransform(),
                       (2 * RNG.normal(size=(2, 3, 6))).tolist()),
    "PositiveDefinite": (lambda m: m.distributions.transforms.PositiveDefiniteTransform(),
                         RNG.normal(size=(2, 3, 3)).tolist()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_torch(name, torch_match):
    build, x = CASES[name]
    te, tt = build(ember), build(torch)
    xe, xt = _x(ember, x), _x(torch, x)
    ye, yt = te(xe), tt(xt)
    torch_match.close(ye, yt, f"{name} forward")
    torch_match.close(te.inv(ye), tt.inv(yt), f"{name} inverse")
    if tt.bijective:   # a round trip (PositiveDefiniteTransform only keeps the lower triangle)
        np.testing.assert_allclose(te.inv(ye).numpy(), np.asarray(x), rtol=1e-8, atol=1e-10, err_msg=name)
    try:
        expected = tt.log_abs_det_jacobian(xt, yt)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            te.log_abs_det_jacobian(xe, ye)
    else:
        torch_match.close(te.log_abs_det_jacobian(xe, ye), expected, f"{name} log_abs_det_jacobian")
    assert te.bijective == tt.bijective
    assert te.domain.event_dim == tt.domain.event_dim and te.codomain.event_dim == tt.codomain.event_dim
    assert type(te.codomain).__name__ == type(tt.codomain).__name__
    assert tuple(te.forward_shape(tuple(xe.shape))) == tuple(tt.forward_shape(tuple(xt.shape)))
    assert tuple(te.inverse_shape(tuple(ye.shape))) == tuple(tt.inverse_shape(tuple(yt.shape)))
    if name != "Cat_last_dim_event":   # torch's cat constraint cannot check parts of different event dims
        assert bool(tt.codomain.check(torch.from_numpy(ye.numpy())).all()), name


@pytest.mark.parametrize("name", ["Cat_dim0", "Stack", "CDF_normal", "CorrCholesky_4", "PositiveDefinite"])
def test_gradients_match_torch(name):
    """d/dx of sum(w * t(x)) + sum(log|det J|) against torch's autograd."""
    build, x = CASES[name]
    grads = []
    for mod in (ember, torch):
        t = build(mod)
        xx = mod.tensor(x, dtype=mod.float64, requires_grad=True)
        y = t(xx)
        w = mod.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)), dtype=mod.float64)
        total = (w * y).sum()
        if name != "PositiveDefinite":
            total = total + t.log_abs_det_jacobian(xx, y).sum()
        total.backward()
        grads.append(xx.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-11)


def test_corr_cholesky_log_det_is_the_jacobians():
    """log|det J| of x -> the strict lower triangle of y, from the full Jacobian by autograd (D = 3)."""
    t = ED.transforms.CorrCholeskyTransform()
    x = ember.tensor([0.3, -1.2, 0.5], dtype=ember.float64)
    rows, cols = np.tril_indices(3, -1)
    jac = np.stack([
        ember.autograd.grad(t(xi)[int(r), int(c)], xi)[0].numpy()
        for r, c in zip(rows, cols)
        for xi in [x.clone().requires_grad_()]])
    assert t.log_abs_det_jacobian(x, t(x)).item() == pytest.approx(np.linalg.slogdet(jac)[1], rel=1e-12)


def test_copula_log_prob_matches_torch(torch_match):
    """TransformedDistribution(base, CumulativeDistributionTransform(Normal(0, 1))): PyTorch's documented copula."""
    out = []
    for mod in (ember, torch):
        base = mod.distributions.MultivariateNormal(_x(mod, [0.0, 0.0]),
                                                    scale_tril=_x(mod, [[1.0, 0.0], [0.6, 0.8]]))
        copula = mod.distributions.TransformedDistribution(
            base, [mod.distributions.transforms.CumulativeDistributionTransform(mod.distributions.Normal(0.0, 1.0))])
        out.append(copula.log_prob(_x(mod, [[0.2, 0.7], [0.9, 0.4]])))
    torch_match.close(out[0], out[1], "copula")


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registry_matches_torch(registry):
    cases = [lambda m: m.distributions.constraints.corr_cholesky,
             lambda m: m.distributions.constraints.cat([m.distributions.constraints.positive,
                                                        m.distributions.constraints.real], 0, [2, 1]),
             lambda m: m.distributions.constraints.stack([m.distributions.constraints.unit_interval,
                                                          m.distributions.constraints.positive], 1)]
    if registry == "transform_to":
        cases += [lambda m: m.distributions.constraints.positive_definite,
                  lambda m: m.distributions.constraints.positive_semidefinite]
    for c in cases:
        e = getattr(ED, registry)(c(ember))
        t = getattr(TD, registry)(c(torch))
        assert type(e).__name__ == type(t).__name__
        if isinstance(t, (TD.transforms.CatTransform, TD.transforms.StackTransform)):
            assert [type(p).__name__ for p in e.transforms] == [type(p).__name__ for p in t.transforms]
    with pytest.raises(NotImplementedError):
        TD.biject_to(TD.constraints.positive_definite)
    with pytest.raises(NotImplementedError):
        ED.biject_to(ED.constraints.positive_definite)


ERRORS = [
    lambda m: m.distributions.transforms.CatTransform([m.distributions.transforms.ExpTransform()], 0, [1, 2]),
    lambda m: m.distributions.transforms.CatTransform([m.distributions.transforms.ExpTransform()], 0, [2])(m.zeros(3)),
    lambda m: m.distributions.transforms.CatTransform([m.distributions.transforms.ExpTransform()], 2, [2])(m.zeros(2)),
    lambda m: m.distributions.transforms.CatTransform([m.distributions.transforms.ExpTransform()], 0, [2]).inv(
        m.zeros(3)),
    lambda m: m.distributions.transforms.StackTransform([m.distributions.transforms.ExpTransform()] * 2)(m.zeros(3)),
    lambda m: m.distributions.transforms.StackTransform([1]),
    lambda m: m.distributions.transforms.CorrCholeskyTransform().forward_shape((4,)),
    lambda m: m.distributions.transforms.CorrCholeskyTransform().inverse_shape((2, 3)),
    lambda m: m.distributions.transforms.CorrCholeskyTransform()(m.zeros(4)),
    lambda m: m.distributions.transforms.PositiveDefiniteTransform().log_abs_det_jacobian(m.eye(2), m.eye(2)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i, torch_match):
    torch_match.same_error(ERRORS[i])


def test_with_cache_and_equality():
    for build in (lambda: ED.transforms.CatTransform([ED.transforms.ExpTransform()], 0, [2]),
                  lambda: ED.transforms.StackTransform([ED.transforms.ExpTransform()]),
                  lambda: ED.transforms.CumulativeDistributionTransform(ED.Normal(0.0, 1.0))):
        t = build()
        c = t.with_cache(1)
        assert c is not t and c._cache_size == 1 and c.with_cache(1) is c
        x = ember.ones(2, 1)[:, 0] if not isinstance(t, ED.transforms.StackTransform) else ember.ones(1, 3)
        assert c.inv(c(x)) is x
    assert ED.transforms.CorrCholeskyTransform() == ED.transforms.CorrCholeskyTransform()
    assert ED.transforms.PositiveDefiniteTransform() == ED.transforms.PositiveDefiniteTransform()
