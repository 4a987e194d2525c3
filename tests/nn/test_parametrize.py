"""Module full backward hooks, nn.utils.parametrize, parametrizations.weight_norm / spectral_norm, the
legacy weight_norm / spectral_norm hooks and clip_grad_norm_(foreach=...), against torch: gradients
seen by the hooks, parametrized values and gradients in float64, state-dict keys, buffers of the
power method, removal, and PyTorch's errors."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import parametrize as P

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrize

rng = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy().copy()


def _linear_pair(lib, i=3, o=4):
    m = lib.nn.Linear(i, o).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor(np.linspace(-1, 1, i * o).reshape(o, i)))
        m.bias.copy_(lib.tensor(np.linspace(0, 0.5, o)))
    return m


# ----------------------------------------------------------------------------- full backward hooks
def _hook_run(lib, input_grad, modify):
    m = _linear_pair(lib)
    act = lib.nn.Tanh()
    log = []

    def pre(mod, go):
        log.append(("pre", [_np(g).round(10).tolist() for g in go]))
        return (go[0] * 2,) if modify else None

    def hook(mod, gi, go):
        log.append(("hook", [None if g is None else _np(g).round(10).tolist() for g in gi],
                    [_np(g).round(10).tolist() for g in go]))
        return (gi[0] + 1,) if modify and gi[0] is not None else None
    h1 = m.register_full_backward_pre_hook(pre)
    h2 = m.register_full_backward_hook(hook)
    x = lib.tensor(np.linspace(-1, 2, 6).reshape(2, 3), requires_grad=input_grad)
    act(m(x)).pow(2).sum().backward()
    out = (log, None if x.grad is None else _np(x.grad).tolist(), _np(m.weight.grad).tolist())
    h1.remove(), h2.remove()
    m.weight.grad = None
    act(m(x)).sum().backward()
    return out, len(log)


@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("modify", [False, True])
def test_full_backward_hooks_match_torch(input_grad, modify):
    with pytest.warns(UserWarning, match="Full backward hook is firing") if not input_grad else _nowarn():
        te, ne = _hook_run(torch, input_grad, modify)
    with pytest.warns(UserWarning, match="Full backward hook is firing") if not input_grad else _nowarn():
        ee, nn_ = _hook_run(ember, input_grad, modify)
    assert ee[0] == te[0]
    if te[1] is None:
        assert ee[1] is None
    else:
        np.testing.assert_allclose(ee[1], te[1], rtol=1e-12)
    np.testing.assert_allclose(ee[2], te[2], rtol=1e-12)
    assert nn_ == ne == 2           # removed handles: no further calls


class _nowarn:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_backward_hook_multiple_inputs_and_outputs():
    class Two(nn.Module):
        def forward(self, a, scale, b):
            return a * b * scale, a + b

    m = Two()
    seen = {}
    m.register_full_backward_hook(lambda mod, gi, go: seen.update(gi=gi, go=go))
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0])
    x, y = m(a, 2.0, b)
    (x.sum() + 3 * y.sum()).backward()
    # one entry per positional arg, as PyTorch: None for the float, zeros for b (needs no grad)
    assert len(seen["gi"]) == 3 and seen["gi"][1] is None
    np.testing.assert_allclose(_np(seen["gi"][0]), [3 * 2 + 3, 4 * 2 + 3])
    np.testing.assert_array_equal(_np(seen["gi"][2]), [0.0, 0.0])
    assert len(seen["go"]) == 2
    with pytest.raises(RuntimeError, match="invalid number of grad_input"):
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        m(a, 2.0, b)[0].sum().backward()


# ----------------------------------------------------------------------------- parametrize
class _Symmetric:
    @staticmethod
    def make(lib):
        class Symmetric(lib.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

            def right_inverse(self, A):
                return A.triu()
        return Symmetric()


def _scale(lib):
    class Scale(lib.nn.Module):
        def forward(self, X):
            return X * 3

        def right_inverse(self, A):
            return A / 3
    return Scale()


def test_register_parametrization_matches_torch():
    res = {}
    for lib, par in ((ember, P), (torch, TP)):
        m = _linear_pair(lib, 4, 4)
        par.register_parametrization(m, "weight", _Symmetric.make(lib))
        par.register_parametrization(m, "weight", _scale(lib))
        assert type(m).__name__ == "ParametrizedLinear" and par.is_parametrized(m)
        assert par.is_parametrized(m, "weight") and not par.is_parametrized(m, "bias")
        assert par.type_before_parametrizations(m) is lib.nn.Linear
        keys = list(m.state_dict())
        x = lib.tensor(np.linspace(-1, 1, 8).reshape(2, 4), requires_grad=True)
        y = m(x)
        y.pow(2).sum().backward()
        orig = m.parametrizations.weight.original
        res[lib.__name__] = (keys, _np(y), _np(orig.grad), _np(x.grad), _np(m.weight))
        m.weight = lib.eye(4, dtype=lib.float64) * 6          # right_inverse chain
        res[lib.__name__] += (_np(orig), _np(m.weight))
        with par.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight
        par.remove_parametrizations(m, "weight", leave_parametrized=True)
        assert type(m) is lib.nn.Linear and m.weight is orig and list(m.state_dict()) == ["bias", "weight"]
        res[lib.__name__] += (_np(m.weight),)
    for a, b in zip(res["ember"], res["torch"]):
        if isinstance(a, list):
            assert a == b
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_parametrize_errors_and_remove_unparametrized():
    for lib, par in ((ember, P), (torch, TP)):
        m = lib.nn.Linear(3, 4)
        with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
            par.register_parametrization(m, "nope", _scale(lib))

        class Shrink(lib.nn.Module):
            def forward(self, X):
                return X[:2]
        with pytest.raises(ValueError, match="may not change the shape"):
            par.register_parametrization(m, "weight", Shrink())
        with pytest.raises(ValueError):
            par.remove_parametrizations(m, "weight")
        par.register_parametrization(m, "weight", _scale(lib))
        orig = _np(m.parametrizations.weight.original).copy()
        par.remove_parametrizations(m, "weight", leave_parametrized=False)
        np.testing.assert_array_equal(_np(m.weight), orig)


def test_parametrized_module_deepcopies_and_optimizes():
    m = _linear_pair(ember, 3, 3)
    P.register_parametrization(m, "weight", _Symmetric.make(ember))
    c = copy.deepcopy(m)
    assert type(c) is type(m) and c.parametrizations.weight.original is not m.parametrizations.weight.original
    np.testing.assert_array_equal(_np(c.weight), _np(m.weight))
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    m(ember.ones(2, 3, dtype=ember.float64)).sum().backward()
    opt.step()
    w = _np(m.weight)
    np.testing.assert_allclose(w, w.T)
    np.testing.assert_array_equal(_np(c.weight), _np(copy.deepcopy(c).weight))


# ----------------------------------------------------------------------------- weight_norm, spectral_norm
@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm(dim):
    out = {}
    for lib in (ember, torch):
        m = lib.nn.utils.parametrizations.weight_norm(_linear_pair(lib), dim=dim)
        keys = list(m.state_dict())
        g = m.parametrizations.weight.original0
        x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
        m(x).pow(2).sum().backward()
        out[lib.__name__] = (keys, _np(m.weight), _np(g), _np(g.grad), _np(m.parametrizations.weight.original1.grad))
    for a, b in zip(out["ember"], out["torch"]):
        if isinstance(a, list):
            assert a == b
        else:
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)


def _copy_state(src, dst):
    dst.load_state_dict({k: ember.tensor(v.numpy()) for k, v in src.state_dict().items()})


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("conv", [False, True])
def test_spectral_norm_matches_torch_given_the_same_start(legacy, conv):
    def build(lib):
        m = (lib.nn.ConvTranspose2d(3, 2, 2) if conv else lib.nn.Linear(5, 4)).double()
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.sin(np.arange(m.weight.numel())).reshape(tuple(m.weight.shape))))
        if legacy:
            return lib.nn.utils.spectral_norm(m, n_power_iterations=2)
        return lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=2)
    tm, em = build(torch), build(ember)
    assert list(em.state_dict()) == list(tm.state_dict())
    _copy_state(tm, em)                      # the random start vectors come from each library's generator
    x = np.cos(np.arange(2 * 3 * 3 * 3)).reshape(2, 3, 3, 3) if conv else np.cos(np.arange(10)).reshape(2, 5)
    for step in range(3):                    # training: power iterations run on each call
        ye, yt = em(ember.tensor(x)), tm(torch.tensor(x))
        np.testing.assert_allclose(_np(ye), yt.detach().numpy(), rtol=1e-10)
    ye.sum().backward(), yt.sum().backward()
    for (n, pe), (_, pt) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=n)
    for (n, be), (_, bt) in zip(em.named_buffers(), tm.named_buffers()):
        np.testing.assert_allclose(_np(be), bt.numpy(), rtol=1e-10, err_msg=n)
    em.eval(), tm.eval()
    np.testing.assert_allclose(_np(em(ember.tensor(x))), tm(torch.tensor(x)).detach().numpy(), rtol=1e-10)
    # the weight is divided by (about) its largest singular value
    w = _np(em.weight) if not conv else _np(em.weight).transpose(1, 0, 2, 3).reshape(2, -1)
    assert abs(np.linalg.svd(w.reshape(w.shape[0], -1), compute_uv=False)[0] - 1) < 0.05


def test_legacy_weight_norm_and_removal():
    out = {}
    for lib in (ember, torch):
        with pytest.warns(FutureWarning, match="weight_norm` is deprecated"):
            m = lib.nn.utils.weight_norm(_linear_pair(lib), dim=0)
        keys = list(m.state_dict())
        x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
        m(x).pow(2).sum().backward()
        grads = (_np(m.weight_g.grad), _np(m.weight_v.grad))
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
            lib.nn.utils.weight_norm(m)
        lib.nn.utils.remove_weight_norm(m)
        with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
            lib.nn.utils.remove_weight_norm(m)
        out[lib.__name__] = (keys, list(m.state_dict())) + grads + (_np(m.weight),)
    for a, b in zip(out["ember"], out["torch"]):
        if isinstance(a, list):
            assert a == b
        else:
            np.testing.assert_allclose(a, b, rtol=1e-11)


def test_legacy_spectral_norm_errors_and_removal():
    for lib in (ember, torch):
        m = lib.nn.utils.spectral_norm(lib.nn.Linear(3, 4))
        with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
            lib.nn.utils.spectral_norm(m)
        lib.nn.utils.remove_spectral_norm(m)
        assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, lib.nn.Parameter)
        with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
            lib.nn.utils.remove_spectral_norm(m)
        with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
            lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(3, 4), n_power_iterations=0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(3, 4), dim=2)


@pytest.mark.parametrize("foreach", [None, False, True])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_foreach(foreach, norm_type):
    grads = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    res = []
    for lib in (ember, torch):
        ps = [lib.nn.Parameter(lib.zeros(*g.shape, dtype=lib.float64)) for g in grads]
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g)
        total = lib.nn.utils.clip_grad_norm_(ps, 0.5, norm_type=norm_type, foreach=foreach)
        res.append((total.item(), [_np(p.grad) for p in ps]))
    assert res[0][0] == pytest.approx(res[1][0], rel=1e-12)
    for a, b in zip(res[0][1], res[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
