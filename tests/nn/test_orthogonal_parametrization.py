"""nn.utils.parametrizations.orthogonal against PyTorch 2.13: the parametrized weight, its orthogonality,
gradients through every map, assignment, and the errors."""
import numpy as np
import pytest

import ember
from ember.nn.utils.parametrizations import orthogonal

torch = pytest.importorskip("torch")
from torch.nn.utils.parametrizations import orthogonal as torch_orthogonal  # noqa: E402


def _pair(shape, orthogonal_map, triv, seed=0):
    w = np.random.default_rng(seed).standard_normal(shape)
    em, tm = ember.nn.Linear(shape[1], shape[0]).double(), torch.nn.Linear(shape[1], shape[0]).double()
    b = np.random.default_rng(seed + 1).standard_normal(shape[0])
    with ember.no_grad():
        em.weight.copy_(ember.tensor(w))
        em.bias.copy_(ember.tensor(b))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
        tm.bias.copy_(torch.tensor(b))
    orthogonal(em, orthogonal_map=orthogonal_map, use_trivialization=triv)
    torch_orthogonal(tm, orthogonal_map=orthogonal_map, use_trivialization=triv)
    return em, tm


CASES = [((5, 5), None, True), ((6, 3), None, True), ((3, 6), None, True), ((6, 3), "cayley", True),
         ((5, 5), "cayley", True), ((4, 4), "householder", True), ((6, 3), "householder", False),
         ((3, 5), "householder", False), ((4, 4), "matrix_exp", True)]


@pytest.mark.parametrize("shape,orthogonal_map,triv", CASES)
def test_weight_values_and_gradients_match_torch(shape, orthogonal_map, triv):
    em, tm = _pair(shape, orthogonal_map, triv)
    if triv and shape[0] != shape[1]:
        # a non-square weight's base is completed with random columns (randn: another generator than torch's);
        # they do not change the weight but do change the gradient, so ember takes torch's base
        em.parametrizations.weight[0].base = ember.tensor(tm.parametrizations.weight[0].base.numpy())
    W, T = em.weight, tm.weight
    np.testing.assert_allclose(W.detach().numpy(), T.detach().numpy(), atol=1e-12)
    k = min(shape)
    G = W.mT @ W if shape[0] >= shape[1] else W @ W.mT
    np.testing.assert_allclose(G.detach().numpy(), np.eye(k), atol=1e-12)
    x = np.random.default_rng(1).standard_normal((3, shape[1]))
    (em(ember.tensor(x)) ** 2).sum().backward()
    (tm(torch.tensor(x)) ** 2).sum().backward()
    ge = em.parametrizations.weight.original.grad.numpy()
    gt = tm.parametrizations.weight.original.grad.numpy()
    np.testing.assert_allclose(ge, gt, rtol=1e-9, atol=1e-12)


def test_assignment_and_training_keep_it_orthogonal():
    ember.manual_seed(0)
    m = orthogonal(ember.nn.Linear(4, 4))
    Q = ember.linalg.qr(ember.randn(4, 4)).Q
    m.weight = Q
    np.testing.assert_allclose(m.weight.detach().numpy(), Q.numpy(), atol=1e-5)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        (m(ember.randn(8, 4)) ** 2).sum().backward()
        opt.step()
    W = m.weight.detach()
    np.testing.assert_allclose((W.mT @ W).numpy(), np.eye(4), atol=1e-5)


def test_errors_match_torch():
    for lib, orth in ((torch, torch_orthogonal), (ember, orthogonal)):
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"):
            orth(lib.nn.BatchNorm1d(3))
        with pytest.raises(ValueError, match='orthogonal_map has to be one of'):
            orth(lib.nn.Linear(3, 3), orthogonal_map="qr")
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
            orth(lib.nn.Linear(3, 3), name="nope")
        m = orth(lib.nn.Linear(3, 3), orthogonal_map="matrix_exp", use_trivialization=False)
        with pytest.raises(NotImplementedError, match="not possible to assign"):
            m.weight = lib.eye(3)
