"""ember.optim.lr_scheduler: closed forms, hand-checked sequences, warnings, state dicts, errors;
identical lr sequences to PyTorch's where installed."""
from __future__ import annotations

import math
import warnings

import pytest

import ember
import ember.optim as optim
from ember.optim import lr_scheduler as S


def _opt(lrs=(0.1, 0.2), cls=optim.SGD, **kw):
    return cls([{"params": [ember.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs], **kw)


def _lrs(opt, sched, n, metrics=None):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            opt.step()
            sched.step() if metrics is None else sched.step(metrics[i])
            out.append([g["lr"] for g in opt.param_groups])
    return out


def test_closed_forms():
    o = _opt()
    got = _lrs(o, S.StepLR(o, 3, gamma=0.5), 10)
    assert got == [[b * 0.5 ** (e // 3) for b in (0.1, 0.2)] for e in range(1, 11)]
    o = _opt()
    got = _lrs(o, S.MultiStepLR(o, [2, 5], gamma=0.1), 7)
    assert [g[0] for g in got] == pytest.approx([0.1, 0.01, 0.01, 0.01, 0.001, 0.001, 0.001], rel=1e-14)
    o = _opt()
    got = _lrs(o, S.ExponentialLR(o, 0.9), 6)
    assert [g[1] for g in got] == pytest.approx([0.2 * 0.9 ** e for e in range(1, 7)], rel=1e-14)
    o = _opt()
    got = _lrs(o, S.CosineAnnealingLR(o, 10, eta_min=0.01), 10)
    assert [g[0] for g in got] == pytest.approx(
        [0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(1, 11)], rel=1e-12)
    o = _opt()
    got = _lrs(o, S.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 2.0]), 3)
    assert got == [[0.1 / 2, 0.4], [0.1 / 3, 0.4], [0.1 / 4, 0.4]]
    o = _opt()
    got = _lrs(o, S.LinearLR(o, start_factor=0.5, total_iters=4), 6)
    assert [g[0] for g in got] == pytest.approx([0.0625, 0.075, 0.0875, 0.1, 0.1, 0.1], rel=1e-14)
    o = _opt()
    got = _lrs(o, S.ConstantLR(o, factor=0.5, total_iters=2), 3)
    assert [g[0] for g in got] == pytest.approx([0.05, 0.1, 0.1], rel=1e-14)
    o = _opt((1.0,))
    assert [g[0] for g in _lrs(o, S.MultiplicativeLR(o, lambda e: 0.5), 3)] == [0.5, 0.25, 0.125]


def test_initial_lr_and_base_lrs():
    o = _opt()
    s = S.StepLR(o, 2)
    assert [g["initial_lr"] for g in o.param_groups] == [0.1, 0.2] and s.base_lrs == [0.1, 0.2]
    assert s.last_epoch == 0 and s.get_last_lr() == [0.1, 0.2]
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\] when resuming"):
        S.StepLR(_opt(), 2, last_epoch=3)


def test_order_warning_and_get_lr_warning():
    o = _opt()
    s = S.ExponentialLR(o, 0.5)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        s.step()
    o = _opt()
    s = S.ExponentialLR(o, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o.step()
        s.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        s.step(4)
    assert s.get_last_lr() == [0.1 * 0.5 ** 4, 0.2 * 0.5 ** 4]


def test_state_dict_round_trip():
    o = _opt()
    s = S.CosineAnnealingLR(o, 6)
    _lrs(o, s, 3)
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3 and sd["T_max"] == 6
    o2 = _opt()
    o2.load_state_dict(o.state_dict())
    s2 = S.CosineAnnealingLR(o2, 99)
    s2.load_state_dict(sd)
    assert _lrs(o2, s2, 5) == _lrs(o, s, 5)


def test_onecycle():
    o = _opt((0.1,), momentum=0.9)
    s = S.OneCycleLR(o, max_lr=1.0, total_steps=10)
    g = o.param_groups[0]
    assert g["lr"] == pytest.approx(1.0 / 25) and g["momentum"] == 0.95
    lrs = [g[0] for g in _lrs(o, s, 9)]
    assert max(lrs) == pytest.approx(1.0) and lrs.index(max(lrs)) == 1   # peak at step pct_start * 10 - 1 = 2
    assert lrs[-1] == pytest.approx(1.0 / 25 / 1e4)
    s.step()                   # step 10 is the last allowed
    with pytest.raises(ValueError, match="^Tried to step 11 times. The specified number of total steps is 10$"):
        s.step()
    a = _opt((0.1,), cls=optim.Adam)
    S.OneCycleLR(a, max_lr=0.5, epochs=2, steps_per_epoch=5)
    assert a.param_groups[0]["betas"] == (0.95, 0.999)
    for kw, msg in [({}, "You must define either total_steps OR (epochs AND steps_per_epoch)"),
                    (dict(total_steps=0), "Expected positive integer total_steps, but got 0"),
                    (dict(total_steps=5, pct_start=2.0), "Expected float between 0 and 1 pct_start, but got 2.0"),
                    (dict(total_steps=5, anneal_strategy="x"),
                     "anneal_strategy must be one of 'cos' or 'linear', instead got x")]:
        with pytest.raises(ValueError) as info:
            S.OneCycleLR(_opt((0.1,), momentum=0.9), 1.0, **kw)
        assert str(info.value) == msg
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(_opt((0.1,), cls=optim.Adagrad), 1.0, total_steps=5)


def test_reduce_lr_on_plateau():
    o = _opt((1.0,))
    s = S.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, min_lr=0.2)
    got = [g[0] for g in _lrs(o, s, 11, metrics=[5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4])]
    # reduce after 2 bad epochs (patience 1), then 1 cooldown epoch; never below min_lr
    assert got == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2, 0.2]
    o = _opt((1.0,))
    s = S.ReduceLROnPlateau(o, mode="max", threshold_mode="abs", threshold=0.5, patience=0)
    assert [g[0] for g in _lrs(o, s, 3, metrics=[1.0, 1.4, 2.0])] == [1.0, 0.1, 0.1]
    for kw, msg in [(dict(factor=1.0), "Factor should be < 1.0."), (dict(mode="x"), "mode x is unknown!"),
                    (dict(threshold_mode="y"), "threshold mode y is unknown!"),
                    (dict(min_lr=[0.1]), "expected 2 min_lrs, got 1")]:
        with pytest.raises(ValueError) as info:
            S.ReduceLROnPlateau(_opt(), **kw)
        assert str(info.value) == msg


def test_sequential():
    o = _opt((1.0,))
    s = S.SequentialLR(o, [S.ConstantLR(o, 0.5, total_iters=10), S.ExponentialLR(o, 0.5)], milestones=[2])
    assert o.param_groups[0]["lr"] == 0.5
    assert [g[0] for g in _lrs(o, s, 4)] == [0.5, 1.0, 0.5, 0.25]
    with pytest.raises(ValueError, match="expects number of schedulers provided to be one more than the number of "
                                         "milestone points, but got number of schedulers 2 and the number of "
                                         "milestones to be equal to 0"):
        S.SequentialLR(o, [S.StepLR(o, 1), S.StepLR(o, 1)], milestones=[])
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        S.SequentialLR(o, [], milestones=[])


def test_construction_errors():
    with pytest.raises(ValueError, match="^Starting multiplicative factor expected to be greater than 0"):
        S.LinearLR(_opt(), start_factor=0)
    with pytest.raises(ValueError, match="^Ending multiplicative factor expected to be between 0 and 1.$"):
        S.LinearLR(_opt(), end_factor=2)
    with pytest.raises(ValueError, match="^Constant multiplicative factor expected to be between 0 and 1.$"):
        S.ConstantLR(_opt(), factor=2)
    with pytest.raises(ValueError, match="^Expected 2 lr_lambdas, but got 1$"):
        S.LambdaLR(_opt(), [lambda e: 1.0])
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), 1)


# ---------------------------------------------------------------- against PyTorch (exact floats)
def _torch_vs_ember(torch, opt_name, make, n=30, okw=None, metrics=None):
    okw = okw or {}
    tp = [torch.nn.Parameter(torch.zeros(1)) for _ in range(2)]
    ep = [ember.zeros(1, requires_grad=True) for _ in range(2)]
    to = getattr(torch.optim, opt_name)([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(tp)], **okw)
    eo = getattr(optim, opt_name)([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ep)], **okw)
    ts, es = make(torch.optim.lr_scheduler, to), make(S, eo)
    out_t, out_e = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            to.step()
            eo.step()
            if metrics:
                ts.step(metrics[i])
                es.step(metrics[i])
            else:
                ts.step()
                es.step()
            for opt, out in ((to, out_t), (eo, out_e)):
                out.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups])
    assert out_t == out_e
    assert ts.get_last_lr() == es.get_last_lr()


_METRICS = [1.0 / (i + 1) if i < 8 else 0.2 + 0.001 * ((i * 7) % 5) for i in range(40)]
SCHEDULES = {
    "StepLR": ("SGD", lambda m, o: m.StepLR(o, 3, gamma=0.7), {}),
    "MultiStepLR": ("SGD", lambda m, o: m.MultiStepLR(o, [2, 5, 5, 9], gamma=0.3), {}),
    "ExponentialLR": ("SGD", lambda m, o: m.ExponentialLR(o, 0.93), {}),
    "CosineAnnealingLR": ("SGD", lambda m, o: m.CosineAnnealingLR(o, 7, eta_min=0.001), {}),
    "CosineAnnealingLR-cycles": ("SGD", lambda m, o: m.CosineAnnealingLR(o, 4), {}),
    "LambdaLR": ("SGD", lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e), {}),
    "MultiplicativeLR": ("SGD", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95), {}),
    "ConstantLR": ("SGD", lambda m, o: m.ConstantLR(o, 0.5, total_iters=4), {}),
    "LinearLR": ("SGD", lambda m, o: m.LinearLR(o, 0.25, 0.9, total_iters=7), {}),
    "OneCycleLR": ("SGD", lambda m, o: m.OneCycleLR(o, [1.0, 2.0], total_steps=30), dict(momentum=0.9)),
    "OneCycleLR-linear-3phase-adam": ("Adam", lambda m, o: m.OneCycleLR(
        o, 0.5, epochs=3, steps_per_epoch=10, anneal_strategy="linear", three_phase=True, pct_start=0.25), {}),
    "SequentialLR": ("SGD", lambda m, o: m.SequentialLR(o, [m.LinearLR(o, 0.1, total_iters=4), m.CosineAnnealingLR(
        o, 10), m.ExponentialLR(o, 0.9)], milestones=[4, 12]), {}),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_same_sequence_as_torch(name):
    torch = pytest.importorskip("torch")
    opt_name, make, okw = SCHEDULES[name]
    _torch_vs_ember(torch, opt_name, make, okw=okw)


def test_plateau_same_as_torch():
    torch = pytest.importorskip("torch")
    _torch_vs_ember(torch, "SGD", lambda m, o: m.ReduceLROnPlateau(o, patience=2, cooldown=1, min_lr=[0.001, 0.02]),
                    n=40, metrics=_METRICS)
    _torch_vs_ember(torch, "SGD", lambda m, o: m.ReduceLROnPlateau(o, mode="max", threshold_mode="abs",
                                                                  threshold=0.01, factor=0.5, patience=1),
                    n=40, metrics=[-x for x in _METRICS])
