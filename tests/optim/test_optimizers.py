"""ember.optim optimizers: numpy references of the documented algorithms, hand-checked steps,
state_dict round trips, errors; bit-identical float64 trajectories against PyTorch where installed."""
from __future__ import annotations

import contextlib
import warnings
from fractions import Fraction

import numpy as np
import pytest

import ember
import ember.optim as optim

SHAPES = [(5, 4), (4,), (3,)]


def _problem(n_steps, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(n_steps)]
    return init, grads


def _run_ember(cls, kw, init, grads):
    ps = [ember.tensor(x, requires_grad=True) for x in init]
    opt = cls(ps, **kw)
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = ember.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in ps], opt, ps


# ---------------------------------------------------------------- numpy references (documented algorithms)
def ref_sgd(x, gs, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
    buf = None
    for g in gs:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        x = x - lr * g
    return x


def ref_adam(x, gs, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
             decoupled=False):
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    vmax = np.zeros_like(x)
    for t, g in enumerate(gs, 1):
        g = -g if maximize else g
        if weight_decay and decoupled:
            x = x * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * x
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        if amsgrad:
            vmax = np.maximum(vmax, v)
        vv = vmax if amsgrad else v
        x = x - lr / (1 - betas[0] ** t) * m / (np.sqrt(vv) / np.sqrt(1 - betas[1] ** t) + eps)
    return x


def ref_rmsprop(x, gs, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, maximize=False):
    v = np.zeros_like(x)
    ga = np.zeros_like(x)
    buf = np.zeros_like(x)
    for g in gs:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = np.sqrt(v - ga * ga) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            x = x - lr * buf
        else:
            x = x - lr * g / avg
    return x


def ref_adagrad(x, gs, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, maximize=False):
    s = np.full_like(x, initial_accumulator_value)
    for t, g in enumerate(gs, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        x = x - clr * g / (np.sqrt(s) + eps)
    return x


CASES = [
    (optim.SGD, ref_sgd, {}),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9)),
    (optim.SGD, ref_sgd, dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (optim.SGD, ref_sgd, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1, maximize=True)),
    (optim.Adam, ref_adam, {}),
    (optim.Adam, ref_adam, dict(lr=0.01, weight_decay=0.1)),
    (optim.Adam, ref_adam, dict(amsgrad=True, betas=(0.8, 0.9))),
    (optim.Adam, ref_adam, dict(maximize=True, eps=1e-3)),
    (optim.AdamW, ref_adam, dict(lr=0.01)),
    (optim.AdamW, ref_adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (optim.RMSprop, ref_rmsprop, {}),
    (optim.RMSprop, ref_rmsprop, dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    (optim.RMSprop, ref_rmsprop, dict(momentum=0.9, centered=True)),
    (optim.RMSprop, ref_rmsprop, dict(centered=True, maximize=True)),
    (optim.Adagrad, ref_adagrad, {}),
    (optim.Adagrad, ref_adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
    (optim.Adagrad, ref_adagrad, dict(initial_accumulator_value=0.5, eps=1e-3, maximize=True)),
]
IDS = [f"{c.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for c, _, kw in CASES]


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=IDS)
def test_matches_numpy_reference(cls, ref, kw):
    init, grads = _problem(8)
    got, _, _ = _run_ember(cls, kw, init, grads)
    rkw = dict(kw)
    if cls is optim.AdamW:
        rkw.setdefault("weight_decay", 1e-2)
        rkw["decoupled"] = True
    for i, x in enumerate(init):
        want = ref(x, [gs[i] for gs in grads], **rkw)
        np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-14)


def test_hand_checked_single_steps():
    p = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([0.5, 0.25], dtype=ember.float64)
    optim.SGD([p], lr=0.5).step()
    assert p.detach().tolist() == [0.75, -2.125]
    # Adam's first step moves every coordinate by lr * sign(g) (up to eps)
    p = ember.tensor([1.0, -2.0, 0.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([3.0, -0.5, 1e-3], dtype=ember.float64)
    optim.Adam([p], lr=0.1, eps=0.0).step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -1.9, -0.1], rtol=0, atol=1e-15)
    # Adagrad: p - lr * g / |g| on the first step
    p = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([4.0], dtype=ember.float64)
    optim.Adagrad([p], lr=0.5, eps=0.0).step()
    assert p.item() == 0.5
    # RMSprop: v = (1 - alpha) g^2, p - lr * g / (sqrt(v) + eps)
    p = ember.tensor([0.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([2.0], dtype=ember.float64)
    optim.RMSprop([p], lr=0.1, alpha=0.75, eps=0.0).step()
    assert p.item() == pytest.approx(-0.1 * 2.0 / 1.0, rel=1e-15)
    # AdamW decays the weight before the update: p * (1 - lr * wd)
    p = ember.tensor([2.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([0.0], dtype=ember.float64)
    optim.AdamW([p], lr=0.1, weight_decay=0.5).step()
    assert p.item() == 2.0 * (1 - 0.1 * 0.5)


def test_float32_params_and_state_dtypes():
    p = ember.randn(3, 2, requires_grad=True)
    p.grad = ember.randn(3, 2)
    opt = optim.Adam([p])
    opt.step()
    st = opt.state[p]
    assert st["exp_avg"].dtype is ember.float32 and st["exp_avg"].shape == (3, 2)
    assert st["step"].dtype is ember.float32 and st["step"].shape == () and st["step"].item() == 1.0
    assert not p.grad.requires_grad and p.requires_grad and p.grad_fn is None


def test_skips_params_without_grad_and_closure():
    a = ember.tensor([1.0], requires_grad=True)
    b = ember.tensor([1.0], requires_grad=True)
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9)

    def closure():
        opt.zero_grad()
        loss = (a * 3.0).sum()
        assert ember.is_grad_enabled()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 3.0
    assert a.item() == pytest.approx(0.7) and b.item() == 1.0
    assert b not in opt.state and "momentum_buffer" in opt.state[a]


def test_step_runs_without_grad_recording():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    p.grad = ember.ones(2)
    seen = []

    class Probe(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 1.0})

        def step(self, closure=None):
            seen.append(ember.is_grad_enabled())
            return "done"

    assert Probe([p]).step() == "done"
    assert seen == [False] and ember.is_grad_enabled()
    optim.SGD([p], lr=1.0).step()
    assert p.grad_fn is None and p.is_leaf


def test_zero_grad():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    p.grad = ember.ones(2)
    opt = optim.SGD([p], lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_param_groups_and_add_param_group():
    a, b, c = (ember.zeros(2, requires_grad=True) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["momentum"] == 0.9
    opt.add_param_group({"params": c, "lr": 2.0})
    assert opt.param_groups[2]["lr"] == 2.0 and opt.param_groups[2]["nesterov"] is False
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="^param_group must be a dict, but got <class 'list'>$"):
        opt.add_param_group([c])
    with pytest.raises(TypeError, match="ordering of tensors in sets will change between runs"):
        opt.add_param_group({"params": {ember.zeros(1, requires_grad=True)}})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a])


def test_constructor_errors():
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable of Tensors "
                                        "or dicts, but got ember.FloatTensor$"):
        optim.SGD(p)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.Adam([])
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the params is int$"):
        optim.SGD([1])
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        optim.SGD([p * 2])
    cases = [
        (lambda: optim.SGD([p], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda: optim.SGD([p], momentum=-1), "Invalid momentum value: -1"),
        (lambda: optim.SGD([p], weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda: optim.SGD([p], nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        (lambda: optim.SGD([p], momentum=0.9, dampening=0.1, nesterov=True),
         "Nesterov momentum requires a momentum and zero dampening"),
        (lambda: optim.Adam([p], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda: optim.Adam([p], eps=-1), "Invalid epsilon value: -1"),
        (lambda: optim.Adam([p], betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        (lambda: optim.AdamW([p], betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (lambda: optim.Adam([p], weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda: optim.RMSprop([p], alpha=-1), "Invalid alpha value: -1"),
        (lambda: optim.RMSprop([p], momentum=-1), "Invalid momentum value: -1"),
        (lambda: optim.Adagrad([p], lr_decay=-1), "Invalid lr_decay value: -1"),
        (lambda: optim.Adagrad([p], initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
        (lambda: optim.Adagrad([p], eps=-1), "Invalid epsilon value: -1"),
    ]
    for make, msg in cases:
        with pytest.raises(ValueError) as info:
            make()
        assert str(info.value) == msg


def test_required_hyperparameter():
    class Custom(optim.Optimizer):
        def __init__(self, params, lr=optim.optimizer.required):
            super().__init__(params, {"lr": lr})

    p = ember.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="^parameter group didn't specify a value of required optimization "
                                         "parameter lr$"):
        Custom([p])
    assert Custom([{"params": [p], "lr": 0.3}]).param_groups[0]["lr"] == 0.3


def test_repr():
    p = ember.zeros(1, requires_grad=True)
    q = ember.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    opt.add_param_group({"params": q, "lr": 0.5})
    assert repr(opt) == (
        "SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n    fused: None\n"
        "    lr: 0.1\n    maximize: False\n    momentum: 0\n    nesterov: False\n    weight_decay: 0\n\n"
        "Parameter Group 1\n    dampening: 0\n    differentiable: False\n    foreach: None\n    fused: None\n"
        "    lr: 0.5\n    maximize: False\n    momentum: 0\n    nesterov: False\n    weight_decay: 0\n)")
    assert repr(optim.Adam([p])).startswith("Adam (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n")


def test_sparse_grads_refused():
    p = ember.zeros(2, requires_grad=True)

    class FakeSparse:          # a grad whose layout is not strided (ember's sparse tensors live in a plugin)
        name = "sparse_coo"

    g = ember.ones(2)
    g._layout = FakeSparse()
    p._grad = g
    with pytest.raises(RuntimeError, match="^Adam does not support sparse gradients, please consider SparseAdam "
                                           "instead$"):
        optim.Adam([p]).step()
    with pytest.raises(RuntimeError, match="^RMSprop does not support sparse gradients$"):
        optim.RMSprop([p]).step()
    with pytest.raises(RuntimeError, match="^SGD does not support sparse gradients$"):
        optim.SGD([p]).step()


def test_step_hooks():
    p = ember.zeros(1, requires_grad=True)
    p.grad = ember.ones(1)
    opt = optim.SGD([p], lr=1.0)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt, p.item())))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", p.item())))
    g = optim.optimizer.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global",)))
    opt.step()
    assert calls == [("global",), ("pre", True, 0.0), ("post", -1.0)]
    h1.remove()
    h2.remove()
    g.remove()
    opt.step()
    assert len(calls) == 3 and p.item() == -2.0


# ---------------------------------------------------------------- state_dict
@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
                                    (optim.Adam, dict(lr=0.01, amsgrad=True)), (optim.AdamW, dict(lr=0.01)),
                                    (optim.RMSprop, dict(momentum=0.5, centered=True)),
                                    (optim.Adagrad, dict(lr_decay=0.1))])
def test_state_dict_round_trip_continues_the_same_trajectory(cls, kw):
    init, grads = _problem(10, seed=3)
    want, _, _ = _run_ember(cls, kw, init, grads)
    mid, opt, ps = _run_ember(cls, kw, init, grads[:4])
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0]["params"] == [0, 1, 2]
    assert set(sd["state"]) <= {0, 1, 2}
    # a fresh optimizer over fresh parameters holding the same values
    ps2 = [ember.tensor(x, requires_grad=True) for x in mid]
    opt2 = cls(ps2, **{**kw, "lr": 123.0})
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kw.get("lr", opt.defaults["lr"])
    assert opt2.param_groups[0]["params"] == ps2
    for gs in grads[4:]:
        for p, g in zip(ps2, gs):
            p.grad = ember.tensor(g)
        opt2.step()
    for a, b in zip(ps2, want):
        np.testing.assert_array_equal(a.detach().numpy(), b)


def test_load_state_dict_casts_state_but_keeps_step():
    p = ember.zeros(2, dtype=ember.float64, requires_grad=True)
    sd = {"state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.ones(2), "exp_avg_sq": ember.ones(2)}},
          "param_groups": [{**optim.Adam([ember.zeros(1, requires_grad=True)]).defaults, "params": [0]}]}
    opt = optim.Adam([p])
    opt.load_state_dict(sd)
    st = opt.state[p]
    assert st["exp_avg"].dtype is ember.float64 and st["step"].dtype is ember.float32
    assert st["step"] is sd["state"][0]["step"]


def test_load_state_dict_errors():
    a, b = ember.zeros(1, requires_grad=True), ember.zeros(1, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b]}])
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="^loaded state dict has a different number of parameter groups$"):
        opt.load_state_dict({"state": {}, "param_groups": sd["param_groups"][:1]})
    sd["param_groups"][1]["params"] = [1, 2]
    with pytest.raises(ValueError, match="^loaded state dict contains a parameter group that doesn't match the size "
                                         "of optimizer's group$"):
        opt.load_state_dict(sd)


def test_tensor_lr():
    init, grads = _problem(3)
    want, _, _ = _run_ember(optim.Adam, dict(lr=0.01), init, grads)
    got, _, _ = _run_ember(optim.Adam, dict(lr=ember.tensor(0.01, dtype=ember.float64)), init, grads)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- the fused multiply-add underneath
def _fma(a, b, c):
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def test_float64_lerp_addcmul_add_alpha_round_once():
    """PyTorch's cpu kernels fuse the multiply-add of lerp, addcmul and add(alpha=): ember's float64
    kernels round once too (checked against exact rational arithmetic)."""
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(200) * rng.choice([1e-8, 1.0, 1e8], 200) for _ in range(3))
    ea, eb, ec = (ember.tensor(x) for x in (a, b, c))
    d = b - a
    assert ember.lerp(ea, eb, 0.1).tolist() == [_fma(0.1, x, y) for x, y in zip(d, a)]
    assert ember.lerp(ea, eb, 0.9).tolist() == [_fma(0.9 - 1.0, x, y) for x, y in zip(d, b)]
    assert ember.addcmul(ea, eb, ec, value=0.3).tolist() == [_fma(0.3 * x, y, z) for x, y, z in zip(b, c, a)]
    assert ember.add(ea, eb, alpha=-0.7).tolist() == [_fma(-0.7, x, y) for x, y in zip(b, a)]
    assert ember.sub(ea, eb, alpha=0.7).tolist() == [_fma(-0.7, x, y) for x, y in zip(b, a)]
    f64 = ember.float64
    out = ember.tensor([np.inf, np.nan, 1e308], dtype=f64).add(ember.tensor([1.0, 1.0, 1e308], dtype=f64), alpha=10.0)
    assert out.tolist()[0] == np.inf and np.isnan(out.tolist()[1]) and out.tolist()[2] == np.inf


# ---------------------------------------------------------------- against PyTorch (bit for bit)
@contextlib.contextmanager
def _correctly_rounded_sqrt(torch):
    """PyTorch's float64 cpu sqrt goes through MKL's vector math (about 1% of values 1 ulp off the
    correctly rounded root that IEEE and numpy give); the reference swaps in a correctly rounded
    sqrt so that every other operation of the update is compared bit for bit."""
    orig, orig_ = torch.Tensor.sqrt, torch.Tensor.sqrt_

    def sqrt(self):
        return torch.from_numpy(np.sqrt(self.detach().numpy()))

    def sqrt_(self):
        return self.copy_(sqrt(self))

    torch.Tensor.sqrt, torch.Tensor.sqrt_ = sqrt, sqrt_
    try:
        yield
    finally:
        torch.Tensor.sqrt, torch.Tensor.sqrt_ = orig, orig_


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=IDS)
def test_bit_identical_to_torch(cls, ref, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    shapes = [(40, 30), (30,), (7,)]
    init = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(12)]
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    ep = [ember.tensor(x, requires_grad=True) for x in init]
    topt = getattr(torch.optim, cls.__name__)(tp, foreach=False, **kw)
    eopt = cls(ep, **kw)
    with _correctly_rounded_sqrt(torch):
        for step, gs in enumerate(grads):
            for t, e, g in zip(tp, ep, gs):
                t.grad = torch.tensor(g)
                e.grad = None if step == 3 and g.ndim == 1 else ember.tensor(g)
                if e.grad is None:
                    t.grad = None
            topt.step()
            eopt.step()
    for t, e in zip(tp, ep):
        assert (t.detach().numpy() == e.detach().numpy()).all()
    tsd, esd = topt.state_dict(), eopt.state_dict()
    assert [{k: v for k, v in g.items() if k != "foreach"} for g in tsd["param_groups"]] == \
        [{k: v for k, v in g.items() if k != "foreach"} for g in esd["param_groups"]]
    for i in tsd["state"]:
        assert sorted(tsd["state"][i]) == sorted(esd["state"][i])
        for k, v in tsd["state"][i].items():
            assert (v.numpy() == esd["state"][i][k].numpy()).all(), k


def test_torch_state_dict_loads_into_ember():
    torch = pytest.importorskip("torch")
    init, grads = _problem(6, seed=4)
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    topt = torch.optim.Adam(tp, lr=0.01, foreach=False)
    for gs in grads[:3]:
        for t, g in zip(tp, gs):
            t.grad = torch.tensor(g)
        topt.step()
    tsd = topt.state_dict()
    esd = {"state": {i: {k: ember.tensor(v.numpy()) for k, v in s.items()} for i, s in tsd["state"].items()},
           "param_groups": tsd["param_groups"]}
    ep = [ember.tensor(t.detach().numpy(), requires_grad=True) for t in tp]
    eopt = optim.Adam(ep)
    eopt.load_state_dict(esd)
    with _correctly_rounded_sqrt(torch):
        for gs in grads[3:]:
            for t, e, g in zip(tp, ep, gs):
                t.grad, e.grad = torch.tensor(g), ember.tensor(g)
            topt.step()
            eopt.step()
    for t, e in zip(tp, ep):
        assert (t.detach().numpy() == e.detach().numpy()).all()
