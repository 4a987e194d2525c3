"""ember.nn.utils: clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import (clip_grad_norm_, clip_grad_value_, get_total_norm, parameters_to_vector,
                            vector_to_parameters)


def params_with_grads(*grads):
    ps = []
    for g in grads:
        p = nn.Parameter(ember.zeros(len(g)))
        p.grad = ember.tensor(np.asarray(g, np.float32))
        ps.append(p)
    return ps


def test_clip_grad_norm_scales():
    ps = params_with_grads([3.0, 0.0], [0.0, 4.0])
    total = clip_grad_norm_(ps, max_norm=1.0)
    assert isinstance(total, ember.Tensor) and total.dim() == 0
    assert total.item() == pytest.approx(5.0)
    coef = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(ps[0].grad.numpy(), [3 * coef, 0], rtol=1e-6)
    np.testing.assert_allclose(ps[1].grad.numpy(), [0, 4 * coef], rtol=1e-6)


def test_clip_grad_norm_no_change_below_max_and_generator():
    ps = params_with_grads([0.3, 0.4])
    total = clip_grad_norm_((p for p in ps), max_norm=10.0)          # a generator works
    assert total.item() == pytest.approx(0.5)
    np.testing.assert_allclose(ps[0].grad.numpy(), [0.3, 0.4], rtol=1e-6)


@pytest.mark.parametrize("norm_type, expected", [(1, 10.0), (2, math.sqrt(30)), (float("inf"), 4.0),
                                                 (3, 100 ** (1 / 3))])
def test_clip_grad_norm_types(norm_type, expected):
    ps = params_with_grads([1.0, -2.0], [3.0, -4.0])
    assert clip_grad_norm_(ps, max_norm=100.0, norm_type=norm_type).item() == pytest.approx(expected, rel=1e-5)
    assert get_total_norm([p.grad for p in ps], norm_type).item() == pytest.approx(expected, rel=1e-5)


def test_clip_grad_norm_single_tensor_and_no_grads():
    p = params_with_grads([6.0, 8.0])[0]
    clip_grad_norm_(p, 5.0)
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 4.0], rtol=1e-5)
    q = nn.Parameter(ember.ones(2))
    assert clip_grad_norm_([q], 1.0).item() == 0.0


def test_clip_grad_norm_nonfinite():
    ps = params_with_grads([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(params_with_grads([float("inf"), 1.0]), 1.0)
    assert math.isinf(total.item())


def test_clip_grad_value():
    ps = params_with_grads([-3.0, 0.5, 2.0])
    clip_grad_value_(ps, 1.0)
    assert ps[0].grad.tolist() == [-1.0, 0.5, 1.0]


def test_clip_after_backward_on_module():
    m = nn.Linear(3, 2)
    (m(ember.ones(4, 3)) * 100).sum().backward()
    before = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in m.parameters()))
    total = clip_grad_norm_(m.parameters(), 1.0)
    assert total.item() == pytest.approx(before, rel=1e-5)
    after = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in m.parameters()))
    assert after == pytest.approx(1.0, rel=1e-4)


def test_parameters_to_vector_round_trip():
    m = nn.Linear(3, 2)
    v = parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    np.testing.assert_array_equal(v.detach().numpy()[:6], m.weight.detach().numpy().ravel())
    np.testing.assert_array_equal(v.detach().numpy()[6:], m.bias.detach().numpy())
    v.sum().backward()                                      # differentiable
    assert m.weight.grad.tolist() == [[1.0] * 3] * 2
    new = ember.arange(8, dtype=ember.float32)
    vector_to_parameters(new, m.parameters())
    assert m.weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and m.bias.tolist() == [6.0, 7.0]
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    with pytest.raises(TypeError, match="expected ember.Tensor, but got: list"):
        vector_to_parameters([1.0], m.parameters())


def test_clip_against_torch():
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    for norm_type in (2.0, 1.0, float("inf")):
        ep = params_with_grads(*g)
        tp = [torch.nn.Parameter(torch.zeros(5)) for _ in range(3)]
        for p, row in zip(tp, g):
            p.grad = torch.tensor(row)
        et = clip_grad_norm_(ep, 0.7, norm_type)
        tt = torch.nn.utils.clip_grad_norm_(tp, 0.7, norm_type)
        assert et.item() == pytest.approx(tt.item(), rel=1e-5)
        for a, b in zip(ep, tp):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)
