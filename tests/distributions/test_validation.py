"""validate_args: constructor and log_prob errors with PyTorch's exception classes and messages."""
from __future__ import annotations

import pytest

import ember
import ember.distributions as ED

torch = pytest.importorskip("torch")
import torch.distributions as TD  # noqa: E402


BAD_PARAMS = [
    lambda m: m.distributions.Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, -1.0]), validate_args=True),
    lambda m: m.distributions.Normal(m.tensor([0.0, float("nan")]), m.tensor([1.0, 1.0]), validate_args=True),
    lambda m: m.distributions.Bernoulli(probs=m.tensor([0.5, 1.5]), validate_args=True),
    lambda m: m.distributions.Categorical(probs=m.tensor([0.5, -0.5, 1.0]), validate_args=True),
    lambda m: m.distributions.Exponential(m.tensor([0.0]), validate_args=True),
    lambda m: m.distributions.Gamma(m.tensor([1.0]), m.tensor([-2.0]), validate_args=True),
    lambda m: m.distributions.Beta(m.tensor([-1.0]), m.tensor([2.0]), validate_args=True),
    lambda m: m.distributions.Dirichlet(m.tensor([1.0, 0.0]), validate_args=True),
    lambda m: m.distributions.MultivariateNormal(m.zeros(2), scale_tril=m.tensor([[1.0, 0.0], [0.0, -1.0]]),
                                                 validate_args=True),
    lambda m: m.distributions.MultivariateNormal(m.zeros(2), covariance_matrix=m.tensor([[1.0, 2.0], [2.0, 1.0]]),
                                                 validate_args=True),
    lambda m: m.distributions.Uniform(m.tensor([1.0]), m.tensor([0.0]), validate_args=True),
    lambda m: m.distributions.Poisson(m.tensor([-1.0]), validate_args=True),
    lambda m: m.distributions.Laplace(0.0, -1.0, validate_args=True),
    lambda m: m.distributions.Normal(m.tensor([0.0]), m.tensor([1.0]), validate_args=True).log_prob([0.0]),
    lambda m: m.distributions.Exponential(m.tensor([1.0]), validate_args=True).log_prob(m.tensor([-1.0])),
    lambda m: m.distributions.Bernoulli(probs=m.tensor([0.5]), validate_args=True).log_prob(m.tensor([0.5])),
    lambda m: m.distributions.Categorical(probs=m.tensor([0.5, 0.5]), validate_args=True).log_prob(m.tensor([2])),
    lambda m: m.distributions.Normal(m.zeros(3), m.ones(3), validate_args=True).log_prob(m.zeros(2)),
    lambda m: m.distributions.MultivariateNormal(m.zeros(3), m.eye(3), validate_args=True).log_prob(m.zeros(2)),
    lambda m: m.distributions.Normal(m.zeros(2), m.ones(2), validate_args=True).icdf(m.tensor([0.5, 2.0])) * 0
    + m.distributions.Beta(m.tensor(2.0), m.tensor(2.0), validate_args=True).log_prob(m.tensor(1.5)),
    lambda m: m.distributions.Bernoulli(m.tensor(0.5), m.tensor(0.0)),
    lambda m: m.distributions.Categorical(),
    lambda m: m.distributions.MultivariateNormal(m.zeros(2)),
    lambda m: m.distributions.Independent(m.distributions.Normal(m.zeros(2), m.ones(2)), 2),
    lambda m: m.distributions.Distribution.set_default_validate_args(3),
]


@pytest.mark.parametrize("i", range(len(BAD_PARAMS)))
def test_error_matches_torch(i, torch_match):
    torch_match.same_error(BAD_PARAMS[i])


def test_full_message_of_the_documented_example():
    with pytest.raises(ValueError) as ee:
        ED.Normal(ember.tensor([0.0, 1.0]), ember.tensor([1.0, -1.0]), validate_args=True)
    assert str(ee.value).startswith(
        "Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: ember.Size([2]), scale: "
        "ember.Size([2])) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values:\n")


def test_validate_args_false_and_the_default_switch():
    d = ED.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)   # no check
    assert d.scale.item() == -1.0
    before = ED.Distribution._validate_args
    try:
        ED.Distribution.set_default_validate_args(False)
        ED.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
        ED.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError):
            ED.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
    finally:
        ED.Distribution.set_default_validate_args(before)


def test_not_implemented_messages_match_torch():
    class Bare(ED.Distribution):
        arg_constraints = {}

    class TBare(TD.Distribution):
        arg_constraints = {}

    for what in ("mean", "variance", "mode"):
        with pytest.raises(NotImplementedError) as ee:
            getattr(Bare(), what)
        with pytest.raises(NotImplementedError) as te:
            getattr(TBare(), what)
        assert str(ee.value).split(">")[-1] == str(te.value).split(">")[-1], what
    with pytest.raises(NotImplementedError):
        Bare().rsample()
