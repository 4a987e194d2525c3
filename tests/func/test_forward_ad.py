"""``ember.autograd.forward_ad`` against ``torch.autograd.forward_ad`` side by side: the tangents of the
same programs (elementwise ops, matmul, reductions, softmax, conv2d, an MLP, several duals) agree, and
levels, ``UnpackedDualTensor`` and the errors behave as PyTorch's.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as efw

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as tfw  # noqa: E402


def _t(lib, shape, seed):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=lib.float64)


def _np(t):
    return None if t is None else np.array(t.detach().tolist())


PROGRAMS = {
    "elementwise": ((3, 4), lambda lib, x: (x.sin() * x.exp() + x.tanh() / (1 + x * x)).sigmoid()),
    "pow_abs_where": ((5,), lambda lib, x: lib.where(x > 0, x ** 3, x.abs().sqrt())),
    "matmul": ((3, 4), lambda lib, x: x @ _t(lib, (4, 2), 9) + (x.T @ x).sum(0, keepdim=True).T[:3]),
    "reductions": ((3, 4), lambda lib, x: lib.stack([x.sum(), x.mean(), x.prod(), x.amax(), x.norm(), x.var()])),
    "reductions_dim": ((3, 4), lambda lib, x: x.logsumexp(1) + x.std(1) + x.max(1).values),
    "softmax": ((2, 5), lambda lib, x: lib.nn.functional.softmax(x, dim=-1) * lib.nn.functional.log_softmax(x, 0)),
    "conv2d": ((1, 2, 6, 6), lambda lib, x: lib.nn.functional.conv2d(x, _t(lib, (3, 2, 3, 3), 8), _t(lib, (3,), 7),
                                                                      stride=2, padding=1)),
    "views": ((2, 3, 4), lambda lib, x: x.permute(2, 0, 1).reshape(4, 6)[1:, ::2] * x.flatten()[:12].view(4, 3)[1:]),
    "mlp": ((5, 4), lambda lib, x: lib.nn.functional.gelu(lib.tanh(x @ _t(lib, (4, 8), 6) + _t(lib, (8,), 5))
                                                         @ _t(lib, (8, 3), 4)).relu()),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tangents_match_torch(name):
    shape, f = PROGRAMS[name]
    got = []
    for lib, fw in ((ember, efw), (torch, tfw)):
        x, t = _t(lib, shape, 1), _t(lib, shape, 2)
        with fw.dual_level():
            y = f(lib, fw.make_dual(x, t))
            p, tan = fw.unpack_dual(y)
            got.append((_np(p), _np(tan), type(fw.unpack_dual(y)).__name__))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-9, atol=1e-11)
    assert got[0][2] == got[1][2] == "UnpackedDualTensor"


def test_two_duals_and_a_module():
    got = []
    for lib, fw in ((ember, efw), (torch, tfw)):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            lin.weight.copy_(_t(lib, (2, 3), 3))
            lin.bias.copy_(_t(lib, (2,), 4))
        with fw.dual_level():
            a = fw.make_dual(_t(lib, (4, 3), 1), _t(lib, (4, 3), 2))
            b = fw.make_dual(_t(lib, (4, 2), 5), _t(lib, (4, 2), 6))
            y = lin(a) * b
            un = fw.unpack_dual(y)
            got.append((_np(un.primal), _np(un.tangent), _np(fw.unpack_dual(a).tangent)))
            # the primal carries no tangent; a tensor without duals has none
            assert fw.unpack_dual(un.primal).tangent is None
            assert fw.unpack_dual(_t(lib, (2,), 1)).tangent is None
        assert fw.unpack_dual(y).tangent is None                        # the level is gone
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_forward_over_reverse_hvp():
    got = []
    for lib, fw in ((ember, efw), (torch, tfw)):
        x, v = _t(lib, (4,), 1), _t(lib, (4,), 2)
        with fw.dual_level():
            d = fw.make_dual(x, v)
            with lib.enable_grad():
                d2 = d if d.requires_grad else d.requires_grad_(True)
                g, = lib.autograd.grad((d2.sin() * d2.exp()).sum(), [d2], create_graph=True)
            got.append(_np(fw.unpack_dual(g).tangent))
    np.testing.assert_allclose(got[0], got[1], rtol=1e-10)


def test_errors_as_torch():
    for lib, fw in ((ember, efw), (torch, tfw)):
        x = lib.ones(3)
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(x, x)
        assert fw.unpack_dual(x).tangent is None
        with fw.dual_level():
            with pytest.raises(RuntimeError, match="different size than that of the original Tensor"):
                fw.make_dual(x, lib.ones(2))
            with pytest.raises(ValueError, match="Expected primal to be floating point"):
                fw.make_dual(lib.ones(3, dtype=lib.int64), lib.ones(3, dtype=lib.int64))
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
                fw.enter_dual_level()
            with pytest.raises(RuntimeError, match="Invalid level"):
                fw.make_dual(x, x, level=3)
        assert fw.enter_dual_level() == 0
        fw.exit_dual_level()
        with pytest.raises(RuntimeError):
            fw.exit_dual_level()
    assert sorted(efw.__all__) == sorted(tfw.__all__)
    assert efw.UnpackedDualTensor._fields == tfw.UnpackedDualTensor._fields
