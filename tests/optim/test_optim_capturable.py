"""capturable=True: the step counters stay 0-dim tensors on the parameter's device and a step never
reads a number back to the host; 20-step float64 trajectories against PyTorch's own capturable path.
differentiable=True: gradients through several steps against PyTorch's.

PyTorch refuses capturable on cpu parameters (AssertionError) and so does ember, so ember runs on the
vdev reference plugin. PyTorch skips that device check while torch.compile traces, so the reference
runs PyTorch's capturable arithmetic on cpu with ``torch.compiler.is_compiling`` patched to True.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.optim as optim

pytest.importorskip("ember_vdev")
DEV = "vdev"

CASES = [
    ("Adam", {}), ("Adam", dict(amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(decoupled_weight_decay=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(amsgrad=True)), ("Adamax", dict(weight_decay=0.1)), ("NAdam", {}),
    ("NAdam", dict(decoupled_weight_decay=True, weight_decay=0.1)), ("RAdam", {}), ("RAdam", dict(weight_decay=0.1)),
    ("RMSprop", dict(momentum=0.9, centered=True)), ("Adadelta", {}), ("ASGD", dict(t0=5)), ("Rprop", dict(lr=0.5)),
]
ALL = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adadelta", "ASGD", "Rprop"]


def _problem(n_steps=20, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, 3)), [rng.standard_normal((4, 3)) for _ in range(n_steps)]


@pytest.fixture
def no_host_reads(monkeypatch):
    """Inside ``with no_host_reads():`` every way a tensor's value reaches Python raises."""
    import contextlib

    @contextlib.contextmanager
    def guard():
        with monkeypatch.context() as m:
            def boom(self, *a, **k):
                raise AssertionError("a capturable step read a tensor back to the host")
            for name in ("item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__"):
                m.setattr(ember.Tensor, name, boom)
            yield
    return guard


def _torch_capturable(torch, monkeypatch, name, kw, init, grads):
    with monkeypatch.context() as m:
        m.setattr(torch.compiler, "is_compiling", lambda: True)    # lets PyTorch's capturable path run on cpu
        p = torch.tensor(init, requires_grad=True)
        opt = getattr(torch.optim, name)([p], capturable=True, foreach=False, **kw)
        for g in grads:
            p.grad = torch.tensor(g)
            opt.step()
    return p.detach().numpy(), opt.state[p]


@pytest.mark.parametrize("default64", [False, True], ids=["step_float32", "step_float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_capturable_matches_pytorch_without_host_reads(name, kw, default64, monkeypatch, no_host_reads):
    torch = pytest.importorskip("torch")
    if default64:
        torch.set_default_dtype(torch.float64)
        ember.set_default_dtype(ember.float64)
    try:
        init, grads = _problem()
        expected, t_state = _torch_capturable(torch, monkeypatch, name, kw, init, grads)
        p = ember.tensor(init, device=DEV, requires_grad=True)
        opt = getattr(optim, name)([p], capturable=True, **kw)
        ember_grads = [ember.tensor(g, device=DEV) for g in grads]
        with no_host_reads():
            for g in ember_grads:
                p.grad = g
                opt.step()
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)
    st = opt.state[p]
    for key, t in t_state.items():
        if t.dim() == 0:       # step (and NAdam's mu_product, ASGD's eta / mu): on the device, PyTorch's dtype
            assert st[key].device.type == DEV, key
            assert str(st[key].dtype) == str(t.dtype).replace("torch", "ember"), key
    assert st["step"].item() == 20
    # Tolerances: with a float64 'step' only the last bits differ (vdev's add(alpha=) / addcmul round
    # without PyTorch's fused multiply-add). With a float32 'step', numpy's float32 power loop rounds
    # beta**t to nearest where PyTorch's powf is an ulp off, so the float32 bias corrections differ by an
    # ulp (about 6e-8 relative) — far below the ~1e-6 a host-computed float64 correction would move.
    rtol, atol = (1e-13, 1e-15) if default64 else (1e-6, 1e-7)
    np.testing.assert_allclose(p.detach().cpu().numpy(), expected, rtol=rtol, atol=atol)


def test_capturable_bias_correction_moves_with_the_step_tensor(no_host_reads):
    """The step count advances on the device: rewinding the device-side 'step' changes the next update,
    which a bias correction baked in as a host number at some step could not do."""
    init, grads = _problem(3)
    p = ember.tensor(init, device=DEV, requires_grad=True)
    q = ember.tensor(init, device=DEV, requires_grad=True)
    a, b = optim.Adam([p], lr=0.1, capturable=True), optim.Adam([q], lr=0.1, capturable=True)
    for g in grads[:2]:
        p.grad, q.grad = ember.tensor(g, device=DEV), ember.tensor(g, device=DEV)
        with no_host_reads():
            a.step()
            b.step()
    b.state[q]["step"].fill_(0.0)       # q's next step is a "first" step again: bias corrections 0.1 and 0.001
    p.grad, q.grad = ember.tensor(grads[2], device=DEV), ember.tensor(grads[2], device=DEV)
    with no_host_reads():
        a.step()
        b.step()
    assert a.state[p]["step"].item() == 3 and b.state[q]["step"].item() == 1
    assert not np.allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy())


@pytest.mark.parametrize("name", ALL)
def test_capturable_refuses_cpu_parameters_as_pytorch(name):
    torch = pytest.importorskip("torch")
    tp = torch.zeros(2, requires_grad=True)
    tp.grad = torch.ones(2)
    with pytest.raises(AssertionError) as t_info:
        getattr(torch.optim, name)([tp], capturable=True).step()
    p = ember.zeros(2, requires_grad=True)
    p.grad = ember.ones(2)
    with pytest.raises(AssertionError) as e_info:
        getattr(optim, name)([p], capturable=True).step()
    t_msg, e_msg = str(t_info.value), str(e_info.value)
    # same sentence; the list names each framework's own accelerator types
    assert e_msg.split(":")[0] == t_msg.split(":")[0]
    assert "'cpu'" not in e_msg and f"'{DEV}'" in e_msg


def test_capturable_load_state_dict_moves_step_to_the_device():
    init, grads = _problem(2)
    p = ember.tensor(init, requires_grad=True)
    opt = optim.Adam([p])
    for g in grads:
        p.grad = ember.tensor(g)
        opt.step()
    sd = opt.state_dict()
    for group in sd["param_groups"]:
        group["capturable"] = True
    q = ember.tensor(init, device=DEV, requires_grad=True)
    opt2 = optim.Adam([q], capturable=True)
    opt2.load_state_dict(sd)
    step = opt2.state[q]["step"]
    assert step.device.type == DEV and step.dtype == ember.float32 and step.item() == 2
    assert opt2.state[q]["exp_avg"].device.type == DEV


# ---------------------------------------------------------------- differentiable=True
DIFF_CASES = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
              ("Adam", dict(lr=0.1)), ("Adam", dict(lr=0.1, weight_decay=0.1)), ("AdamW", dict(lr=0.1, maximize=True)),
              ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)), ("RMSprop", dict(lr=0.01)),
              ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1)), ("Adadelta", dict(weight_decay=0.1))]


def _differentiable_run(m, name, kw, init, grads):
    """4 steps of a non-leaf parameter p = w.clone() with gradients that require grad; the gradient of
    |p|^2 + |state|^2 with respect to w and to every gradient fed in."""
    w = m.tensor(init, requires_grad=True)
    gs = [m.tensor(g, requires_grad=True) for g in grads]
    p = w.clone()
    opt = getattr(m.optim, name)([p], differentiable=True, **kw)
    for g in gs:
        p.grad = g
        opt.step()
    loss = (p * p).sum() + sum((v * v).sum() for k, v in opt.state[p].items() if k != "step" and v.requires_grad)
    return p.detach().numpy(), [o.numpy() for o in m.autograd.grad(loss, [w] + gs)]


@pytest.mark.parametrize("name,kw", DIFF_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(DIFF_CASES)])
def test_differentiable_gradients_match_pytorch(name, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    init, grads = rng.standard_normal((3, 2)), [rng.standard_normal((3, 2)) for _ in range(4)]
    torch.set_default_dtype(torch.float64)      # a float64 'step': the tensor bias corrections round alike
    ember.set_default_dtype(ember.float64)
    try:
        t_p, t_grads = _differentiable_run(torch, name, kw, init, grads)
        e_p, e_grads = _differentiable_run(ember, name, kw, init, grads)
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)
    np.testing.assert_allclose(e_p, t_p, rtol=1e-14, atol=1e-15)
    for t_g, e_g in zip(t_grads, e_grads):     # measured within 8e-16 of PyTorch's
        np.testing.assert_allclose(e_g, t_g, rtol=1e-12, atol=1e-14)


def test_differentiable_leaf_parameter_refused_as_pytorch():
    w = ember.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, differentiable=True)
    w.grad = ember.ones(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        opt.step()


def test_plain_step_still_records_nothing():
    p = ember.ones(2, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)               # differentiable=False: the step runs under no_grad
    p.grad = ember.ones(2, requires_grad=True)
    opt.step()
    assert p.grad_fn is None and opt.state[p]["exp_avg"].grad_fn is None
    assert not opt.state[p]["exp_avg"].requires_grad


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_differentiable_refused_where_not_written_for_autograd(name):
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"`differentiable=True` is not supported by ember's {name}: .*no_grad"):
        getattr(optim, name)([p], differentiable=True)
