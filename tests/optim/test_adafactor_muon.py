"""ember.optim.Adafactor and ember.optim.Muon against torch.optim.Adafactor / torch.optim.Muon:
float64 trajectories over many steps, the state they keep, Muon's bfloat16 Newton-Schulz iteration
bit for bit, and the errors (class and message) for bad hyperparameters and parameters."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.optim as optim

torch = pytest.importorskip("torch")


def _problem(shapes, n_steps, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(n_steps)]
    return init, grads


def _side_by_side(name, kw, shapes, n_steps, dtype=np.float64, seed=0):
    """(torch params, torch optimizer, ember params, ember optimizer) after ``n_steps`` steps on the same grads."""
    init, grads = _problem(shapes, n_steps, seed)
    tp = [torch.tensor(x.astype(dtype), requires_grad=True) for x in init]
    ep = [ember.tensor(x.astype(dtype), requires_grad=True) for x in init]
    to, eo = getattr(torch.optim, name)(tp, **kw), getattr(optim, name)(ep, **kw)
    for gs in grads:
        for a, b, g in zip(tp, ep, gs):
            a.grad, b.grad = torch.tensor(g.astype(dtype)), ember.tensor(g.astype(dtype))
        to.step()
        eo.step()
    return tp, to, ep, eo


def _assert_states_close(tp, to, ep, eo, rtol, atol):
    for a, b in zip(tp, ep):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=rtol, atol=atol)
        t_state, e_state = to.state[a], eo.state[b]
        assert sorted(t_state) == sorted(e_state)
        for key, tv in t_state.items():
            ev = e_state[key]
            assert tuple(ev.shape) == tuple(tv.shape), key
            assert str(ev.dtype) == str(tv.dtype).replace("torch", "ember"), key
            np.testing.assert_allclose(ev.numpy(), tv.numpy(), rtol=rtol, atol=atol, err_msg=key)


# Tolerance (float64): ember's whole-tensor and per-row norms and means sum in another order than
# PyTorch's vectorized reductions, so RMS(p), RMS(U) and the factors differ in the last bit or two;
# over 100 steps the parameters stay within 1e-15 of PyTorch's (measured 4e-16), asserted at 1e-13.
ADAFACTOR_CASES = [
    ({}, [(5, 4), (4,), (3, 2, 6)]),
    (dict(lr=0.1, weight_decay=0.1, maximize=True, eps=(1e-30, 1e-3), d=2.0), [(5, 4), (4,), ()]),
    (dict(beta2_decay=-0.5, eps=(1e-8, 1e-2)), [(7, 1), (1, 7), (2, 3, 4, 5)]),
]


@pytest.mark.parametrize("kw,shapes", ADAFACTOR_CASES)
def test_adafactor_matches_pytorch_float64(kw, shapes):
    tp, to, ep, eo = _side_by_side("Adafactor", kw, shapes, 100)
    _assert_states_close(tp, to, ep, eo, rtol=1e-13, atol=1e-13)
    assert eo.state[ep[0]]["step"].item() == 100


def test_adafactor_float32_eps1_from_dtype():
    # eps1=None takes finfo(float32).eps; float32 reductions round more, so a float32 tolerance
    tp, to, ep, eo = _side_by_side("Adafactor", {}, [(6, 5), (5,)], 30, dtype=np.float32)
    _assert_states_close(tp, to, ep, eo, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,shapes", [("Adafactor", [(4, 3), (3,)]), ("Muon", [(4, 3), (2, 5)])])
def test_state_dict_round_trip_continues_the_same_trajectory(name, shapes):
    init, grads = _problem(shapes, 10, seed=4)

    def run(ps, opt, gs_list):
        for gs in gs_list:
            for p, g in zip(ps, gs):
                p.grad = ember.tensor(g)
            opt.step()

    want = [ember.tensor(x, requires_grad=True) for x in init]
    run(want, getattr(optim, name)(want, lr=0.05), grads)
    ps = [ember.tensor(x, requires_grad=True) for x in init]
    opt = getattr(optim, name)(ps, lr=0.05)
    run(ps, opt, grads[:5])
    qs = [ember.tensor(p.detach().numpy(), requires_grad=True) for p in ps]
    opt2 = getattr(optim, name)(qs)
    opt2.load_state_dict(opt.state_dict())
    assert opt2.param_groups[0]["lr"] == 0.05
    run(qs, opt2, grads[5:])
    for q, w in zip(qs, want):
        assert np.array_equal(q.detach().numpy(), w.detach().numpy())


# Muon: the orthogonalization runs in bfloat16. ember's bfloat16 addmm rounds as PyTorch's in almost every
# Newton-Schulz run (measured: 24 of 1500 random runs differ, each in one element by one bfloat16 ulp,
# where PyTorch's float32 accumulation order and ember's land on two sides of a rounding boundary), and
# one such flip moves a parameter by adjusted_lr * 2**-8 or so. So the trajectory is checked step by step:
# each step from the same state must land within one bfloat16 ulp of the update (2**-7 relative to 1, the
# largest entry of an orthogonalized matrix is below 1.5) of PyTorch's, most steps bit for bit, and the
# state is then re-synchronized so that one flip does not carry over into the next steps.
MUON_CASES = [
    ({}, [(5, 4), (4, 7)]),
    (dict(nesterov=False, adjust_lr_fn="match_rms_adamw", lr=0.02), [(6, 3), (3, 3)]),
    (dict(momentum=0.0, weight_decay=0.0, ns_steps=3, adjust_lr_fn="original"), [(2, 9)]),
    (dict(ns_coefficients=(2.0, -1.5, 0.5), eps=1e-5), [(8, 8)]),
]


@pytest.mark.parametrize("kw,shapes", MUON_CASES)
def test_muon_matches_pytorch_float64(kw, shapes):
    from ember.optim.muon import _adjust_lr
    init, grads = _problem(shapes, 60, seed=1)
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    ep = [ember.tensor(x, requires_grad=True) for x in init]
    to, eo = torch.optim.Muon(tp, **kw), optim.Muon(ep, **kw)
    lr = eo.defaults["lr"]
    exact = total = 0
    for gs in grads:
        for a, b, g in zip(tp, ep, gs):
            a.grad, b.grad = torch.tensor(g), ember.tensor(g)
        to.step()
        eo.step()
        for a, b in zip(tp, ep):
            want, got = a.detach().numpy(), b.detach().numpy()
            ulp_of_update = _adjust_lr(lr, kw.get("adjust_lr_fn"), want.shape) * 1.5 * 2.0 ** -7
            np.testing.assert_allclose(got, want, rtol=0, atol=ulp_of_update + 1e-15)
            buf_t, buf_e = to.state[a]["momentum_buffer"].numpy(), eo.state[b]["momentum_buffer"].numpy()
            assert np.array_equal(buf_e, buf_t)          # float64 lerps: the same bits as PyTorch
            exact += bool(np.max(np.abs(got - want)) <= 4e-16 * max(1.0, np.max(np.abs(want))))
            total += 1
            b.data.copy_(ember.tensor(want))             # re-synchronize (see above)
    assert exact >= 0.9 * total, f"only {exact} of {total} steps within rounding of PyTorch's"


@pytest.mark.parametrize("shape", [(5, 4), (4, 7), (16, 16), (1, 5)])
def test_muon_newton_schulz_bit_identical(shape):
    from ember.optim.muon import _zeropower_via_newtonschulz
    t_ns = pytest.importorskip("torch.optim._muon")._zeropower_via_newtonschulz
    x = np.random.default_rng(7).standard_normal(shape)
    coeffs = (3.4445, -4.7750, 2.0315)
    expected = t_ns(torch.tensor(x), coeffs, 5, 1e-7)
    got = _zeropower_via_newtonschulz(ember.tensor(x), coeffs, 5, 1e-7)
    assert got.dtype == ember.bfloat16 and tuple(got.shape) == shape
    assert np.array_equal(got.float().numpy(), expected.float().numpy())


def test_muon_orthogonalizes():
    # the documented property, without PyTorch: singular values of NS(G) land near 1 (0.5 .. 1.5)
    from ember.optim.muon import _zeropower_via_newtonschulz
    g = np.random.default_rng(3).standard_normal((6, 10))
    s = np.linalg.svd(_zeropower_via_newtonschulz(ember.tensor(g), (3.4445, -4.7750, 2.0315), 5, 1e-7)
                      .float().numpy(), compute_uv=False)
    assert s.min() > 0.5 and s.max() < 1.5


# ---------------------------------------------------------------- errors, compared with PyTorch's
def _same_error(make):
    """``make(module)`` raises the same class and message with torch and with ember."""
    with pytest.raises(Exception) as t_info:
        make(torch)
    with pytest.raises(Exception) as e_info:
        make(ember)
    assert type(e_info.value) is type(t_info.value)
    assert str(e_info.value) == str(t_info.value).replace("torch.", "ember.")


@pytest.mark.parametrize("kw", [dict(lr=-1.0), dict(beta2_decay=0.5), dict(eps=(-1.0, 1e-3)), dict(eps=(None, -1.0)),
                                dict(d=0.5), dict(weight_decay=-0.1)])
def test_adafactor_bad_hyperparameters(kw):
    _same_error(lambda m: m.optim.Adafactor([m.zeros(2, 2, requires_grad=True)], **kw))


def test_adafactor_tensor_lr_must_have_one_element():
    _same_error(lambda m: m.optim.Adafactor([m.zeros(2, requires_grad=True)], lr=m.tensor([0.1, 0.2])))


@pytest.mark.parametrize("kw", [dict(lr=-1.0), dict(momentum=-0.5), dict(weight_decay=-0.1),
                                dict(adjust_lr_fn="spectral")])
def test_muon_bad_hyperparameters(kw):
    _same_error(lambda m: m.optim.Muon([m.zeros(2, 2, requires_grad=True)], **kw))


@pytest.mark.parametrize("shape", [(3,), (2, 2, 2)])
def test_muon_refuses_non_2d_parameters(shape):
    _same_error(lambda m: m.optim.Muon([m.zeros(*shape, requires_grad=True)]))


@pytest.mark.parametrize("kw", [dict(ns_steps=100), dict(ns_coefficients=(1.0, 2.0))])
def test_muon_bad_newton_schulz_settings_raise_at_step(kw):
    def make(m):
        p = m.ones(2, 3, requires_grad=True)
        opt = m.optim.Muon([p], **kw)
        p.grad = m.ones(2, 3)
        opt.step()
    _same_error(make)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_sparse_gradients_refused(name):
    def make(m):
        p = m.zeros(2, 3, requires_grad=True)
        opt = getattr(m.optim, name)([p])
        p.grad = m.ones(2, 3).to_sparse()
        opt.step()
    _same_error(make)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_complex_parameters_refused(name):
    def make(m):
        p = m.zeros(2, 3, dtype=m.complex64, requires_grad=True)
        opt = getattr(m.optim, name)([p])
        p.grad = m.ones(2, 3, dtype=m.complex64)
        opt.step()
    _same_error(make)


def test_exported_with_the_other_optimizers():
    assert {"Adafactor", "Muon"} <= set(optim.__all__)
    assert optim.Adafactor.__doc__ and "torch.optim.Adafactor" in optim.Adafactor.__doc__
    assert optim.Muon.__doc__ and "torch.optim.Muon" in optim.Muon.__doc__
