"""ember.optim.lr_scheduler's PolynomialLR, ChainedScheduler, CyclicLR and CosineAnnealingWarmRestarts:
closed forms, errors, state dicts, and the same lr (and momentum) sequences as PyTorch's, float for float."""
from __future__ import annotations

import math
import warnings

import pytest

import ember
import ember.optim as optim
from ember.optim import lr_scheduler as S


def _opt(lrs=(0.1, 0.2), cls=optim.SGD, **kw):
    return cls([{"params": [ember.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs], **kw)


def _lrs(opt, sched, n, epochs=None):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            opt.step()
            sched.step() if epochs is None else sched.step(epochs[i])
            out.append([g["lr"] for g in opt.param_groups])
    return out


def test_all_of_torchs_schedulers_exist():
    torch = pytest.importorskip("torch")
    missing = [n for n in torch.optim.lr_scheduler.__all__ if not hasattr(S, n)]
    assert missing == []


def test_polynomial_closed_form():
    o = _opt()
    got = _lrs(o, S.PolynomialLR(o, total_iters=4, power=2.0), 7)
    want = [b * (1 - min(e, 4) / 4) ** 2 for e in range(1, 8) for b in (0.1, 0.2)]
    assert [x for row in got for x in row] == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert got[-1] == [0.0, 0.0]


def test_cyclic_triangular_by_hand():
    o = _opt((0.1,), momentum=0.9)
    s = S.CyclicLR(o, base_lr=1.0, max_lr=3.0, step_size_up=2, step_size_down=1)
    g = o.param_groups[0]
    assert g["lr"] == 1.0 and g["momentum"] == 0.9     # iteration 0: base lr, max momentum
    got = []
    for _ in range(6):
        got.append((_lrs(o, s, 1)[0][0], o.param_groups[0]["momentum"]))
    assert [x[0] for x in got] == pytest.approx([2.0, 3.0, 1.0, 2.0, 3.0, 1.0])
    assert [x[1] for x in got] == pytest.approx([0.85, 0.8, 0.9, 0.85, 0.8, 0.9])
    o = _opt((0.1,))
    s = S.CyclicLR(o, 0.0, 4.0, step_size_up=1, mode="triangular2", cycle_momentum=False)
    assert [x[0] for x in _lrs(o, s, 6)] == pytest.approx([4.0, 0.0, 2.0, 0.0, 1.0, 0.0])


def test_warm_restarts_closed_form():
    o = _opt((1.0,))
    s = S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.0)
    got = [x[0] for x in _lrs(o, s, 7)]
    # periods 2, 4, 8: T_cur runs 1 | 0 1 2 3 | 0 1 2 ...
    want = [(1 + math.cos(math.pi * tc / ti)) / 2 for tc, ti in [(1, 2), (0, 4), (1, 4), (2, 4), (3, 4), (0, 8),
                                                                (1, 8)]]
    assert got == pytest.approx(want, rel=1e-14)
    o = _opt((1.0,))
    s = S.CosineAnnealingWarmRestarts(o, T_0=3)
    assert [x[0] for x in _lrs(o, s, 3, epochs=[0.5, 3.0, 7.5])] == pytest.approx(
        [(1 + math.cos(math.pi * e / 3)) / 2 for e in (0.5, 0.0, 1.5)], rel=1e-14)


def test_chained():
    o = _opt((1.0,))
    s = S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=2), S.ExponentialLR(o, gamma=0.5)])
    assert o.param_groups[0]["lr"] == 0.5
    # ConstantLR restores the factor at its epoch 2; ExponentialLR halves at every step
    assert [x[0] for x in _lrs(o, s, 4)] == [0.25, 0.25, 0.125, 0.0625]
    assert s.get_last_lr() == [0.0625]


def test_errors():
    cases = [
        (lambda: S.CosineAnnealingWarmRestarts(_opt(), T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
        (lambda: S.CosineAnnealingWarmRestarts(_opt(), T_0=2.0), ValueError,
         "Expected positive integer T_0, but got 2.0"),
        (lambda: S.CosineAnnealingWarmRestarts(_opt(), T_0=2, T_mult=0), ValueError,
         "Expected integer T_mult >= 1, but got 0"),
        (lambda: S.CosineAnnealingWarmRestarts(_opt(), T_0=2, eta_min="x"), ValueError,
         "Expected float or int eta_min, but got x of type <class 'str'>"),
        (lambda: S.CyclicLR(_opt(), 0.1, 1.0, mode="x"), ValueError, "mode is invalid and scale_fn is None"),
        (lambda: S.CyclicLR(_opt(cls=optim.Adagrad), 0.1, 1.0), ValueError,
         "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
        (lambda: S.CyclicLR(_opt(), [0.1], 1.0), ValueError, "expected 2 values for base_lr, got 1"),
        (lambda: S.ChainedScheduler([]), ValueError,
         "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
        (lambda: S.CyclicLR(object(), 0.1, 1.0), TypeError, "object is not an Optimizer"),
    ]
    for make, exc, msg in cases:
        with pytest.raises(exc) as info:
            make()
        assert str(info.value) == msg
    o, o2 = _opt(), _opt()
    with pytest.raises(ValueError, match="ChainedScheduler expects all schedulers to belong to the same optimizer"):
        S.ChainedScheduler([S.StepLR(o, 1), S.StepLR(o2, 1)])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.ChainedScheduler([S.StepLR(o, 1), S.ReduceLROnPlateau(o)])
    s = S.CosineAnnealingWarmRestarts(_opt(), T_0=2)
    with pytest.raises(ValueError, match="^Expected non-negative epoch, but got -1$"), warnings.catch_warnings():
        warnings.simplefilter("ignore")            # stepping before the optimizer: PyTorch's order warning
        s.step(-1)


def test_state_dict_round_trips():
    class Scale:
        def __init__(self):
            self.k = 0.5

        def __call__(self, x):
            return self.k ** x

    for make in (lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=3, scale_fn=Scale(), scale_mode="iterations"),
                 lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=3, mode="exp_range", gamma=0.9),
                 lambda o: S.CosineAnnealingWarmRestarts(o, 3, T_mult=2),
                 lambda o: S.PolynomialLR(o, 9, power=0.5),
                 lambda o: S.ChainedScheduler([S.StepLR(o, 2), S.ExponentialLR(o, 0.9)])):
        o = _opt(momentum=0.9)
        s = make(o)
        _lrs(o, s, 4)
        sd = s.state_dict()
        assert "optimizer" not in sd
        o2 = _opt(momentum=0.9)
        o2.load_state_dict(o.state_dict())
        s2 = make(o2)
        if isinstance(s2, S.CyclicLR) and s2._scale_fn_custom is not None:
            s2._scale_fn_custom.k = 0.0           # restored from the state dict
        s2.load_state_dict(sd)
        assert _lrs(o2, s2, 9) == _lrs(o, s, 9)


# ---------------------------------------------------------------- against PyTorch (exact floats)
def _torch_vs_ember(torch, opt_name, make, n=80, okw=None, epochs=None):
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
            if epochs:
                ts.step(epochs[i])
                es.step(epochs[i])
            else:
                ts.step()
                es.step()
            for opt, out in ((to, out_t), (eo, out_e)):
                out.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups])
    assert out_t == out_e
    assert ts.get_last_lr() == es.get_last_lr()
    assert len({x[0][0] for x in out_e}) > 2          # the schedule did move


SCHEDULES = {
    "PolynomialLR": ("SGD", lambda m, o: m.PolynomialLR(o, total_iters=50, power=1.7), {}),
    "PolynomialLR-linear": ("SGD", lambda m, o: m.PolynomialLR(o, total_iters=33), {}),
    "CyclicLR-triangular": ("SGD", lambda m, o: m.CyclicLR(o, 0.01, [0.5, 1.0], step_size_up=7, step_size_down=4),
                            dict(momentum=0.9)),
    "CyclicLR-triangular2": ("SGD", lambda m, o: m.CyclicLR(o, [0.01, 0.02], 0.3, step_size_up=5,
                                                           mode="triangular2", base_momentum=0.7,
                                                           max_momentum=[0.95, 0.99]), dict(momentum=0.9)),
    "CyclicLR-exp_range-adam": ("Adam", lambda m, o: m.CyclicLR(o, 0.001, 0.1, step_size_up=6, mode="exp_range",
                                                               gamma=0.97), {}),
    "CyclicLR-scale_fn-no-momentum": ("Adagrad", lambda m, o: m.CyclicLR(
        o, 0.001, 0.1, step_size_up=3, scale_fn=lambda x: 1 / (1 + 0.1 * x), scale_mode="iterations",
        cycle_momentum=False), {}),
    "CosineAnnealingWarmRestarts": ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, 5, eta_min=0.001), {}),
    "CosineAnnealingWarmRestarts-Tmult": ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, T_mult=2), {}),
    "ChainedScheduler": ("SGD", lambda m, o: m.ChainedScheduler([m.LinearLR(o, 0.1, total_iters=6),
                                                                 m.CosineAnnealingLR(o, 10, eta_min=0.01),
                                                                 m.PolynomialLR(o, 40, 2.0)]), {}),
    "ChainedScheduler-cyclic": ("SGD", lambda m, o: m.ChainedScheduler([m.ExponentialLR(o, 0.99),
                                                                        m.StepLR(o, 9, 0.5)], optimizer=o), {}),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_same_sequence_as_torch(name):
    torch = pytest.importorskip("torch")
    opt_name, make, okw = SCHEDULES[name]
    _torch_vs_ember(torch, opt_name, make, okw=okw)


def test_warm_restarts_fractional_epochs_same_as_torch():
    torch = pytest.importorskip("torch")
    epochs = [i * 0.37 for i in range(90)]
    _torch_vs_ember(torch, "SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, 4, T_mult=2, eta_min=0.002),
                    n=90, epochs=epochs)
    _torch_vs_ember(torch, "SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, 4), n=90, epochs=epochs)
