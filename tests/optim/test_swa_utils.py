"""ember.optim.swa_utils: AveragedModel (SWA / EMA, avg_fn / multi_avg_fn, use_buffers), SWALR,
update_bn; checked by hand and bit for bit against PyTorch where installed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.optim as optim
from ember.optim import swa_utils as W


def _net(fw):
    nn = fw.nn
    return nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2)).to(fw.float64)


def _states(n, seed=0):
    """n random float64 values for every parameter and float buffer of _net, plus a num_batches_tracked."""
    rng = np.random.default_rng(seed)
    shapes = {"0.weight": (5, 4), "0.bias": (5,), "1.weight": (5,), "1.bias": (5,), "1.running_mean": (5,),
              "1.running_var": (5,), "3.weight": (2, 5), "3.bias": (2,)}
    out = []
    for i in range(n):
        sd = {k: rng.standard_normal(s) for k, s in shapes.items()}
        sd["1.running_var"] = np.abs(sd["1.running_var"]) + 0.5
        sd["1.num_batches_tracked"] = np.array(3 * i + 1, dtype=np.int64)
        out.append(sd)
    return out


def _load(fw, model, sd):
    model.load_state_dict({k: fw.tensor(v) for k, v in sd.items()})


def _numpy_state(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def test_swa_is_the_mean():
    states = _states(5)
    m = _net(ember)
    avg = W.AveragedModel(m)
    for sd in states:
        _load(ember, m, sd)
        avg.update_parameters(m)
    assert avg.n_averaged.item() == 5 and avg.n_averaged.dtype is ember.int64
    got = _numpy_state(avg.module)
    for k in ("0.weight", "1.bias", "3.weight"):
        np.testing.assert_allclose(got[k], np.mean([s[k] for s in states], axis=0), rtol=1e-14)
    # buffers are copied from the last model unless use_buffers
    assert (got["1.running_mean"] == states[-1]["1.running_mean"]).all()
    assert got["1.num_batches_tracked"] == states[-1]["1.num_batches_tracked"]
    x = ember.randn(3, 4, dtype=ember.float64)
    avg.eval()
    assert (avg(x).detach().numpy() == avg.module(x).detach().numpy()).all()


def test_ema_functions_by_hand():
    a, p = ember.tensor([1.0, 2.0], dtype=ember.float64), ember.tensor([3.0, -2.0], dtype=ember.float64)
    assert W.get_ema_avg_fn(0.75)(a, p, 4).tolist() == [1.5, 1.0]
    assert W.get_swa_avg_fn()(a, p, ember.tensor(3)).tolist() == [1.5, 1.0]
    W.get_ema_multi_avg_fn(0.5)([a], [p], 1)
    assert a.tolist() == [2.0, 0.0]
    W.get_swa_multi_avg_fn()([a], [p], 1)
    assert a.tolist() == [2.5, -1.0]
    for fn in (W.get_ema_avg_fn, W.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=r"^Invalid decay value 1.5 provided. Please provide a value in \[0,1\] "
                                             "range.$"):
            fn(1.5)
    with pytest.raises(AssertionError, match="^Only one of avg_fn and multi_avg_fn should be provided$"):
        W.AveragedModel(_net(ember), avg_fn=W.get_ema_avg_fn(), multi_avg_fn=W.get_ema_multi_avg_fn())


def test_swalr_errors_and_by_hand():
    p = ember.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    with pytest.raises(ValueError, match="^anneal_strategy must be one of 'cos' or 'linear', instead got x$"):
        W.SWALR(opt, 0.1, anneal_strategy="x")
    with pytest.raises(ValueError, match="^anneal_epochs must be equal or greater than 0, got -1$"):
        W.SWALR(opt, 0.1, anneal_epochs=-1)
    s = W.SWALR(opt, swa_lr=0.2, anneal_epochs=4, anneal_strategy="linear")
    lrs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(6):
            opt.step()
            s.step()
            lrs.append(opt.param_groups[0]["lr"])
    assert lrs == pytest.approx([0.8, 0.6, 0.4, 0.2, 0.2, 0.2], rel=1e-12)
    sd = s.state_dict()
    assert "anneal_func" not in sd and sd["_anneal_strategy"] == "linear"


def test_update_bn():
    rng = np.random.default_rng(2)
    data = [ember.tensor(rng.standard_normal((8, 4)) * 3 + 1) for _ in range(4)]
    m = _net(ember)
    m.eval()
    bn = m[1]
    bn.momentum = 0.3
    W.update_bn(((x, "label") for x in data), m)
    assert not m.training and bn.momentum == 0.3
    # the cumulative average over the batches of the batch statistics of the first layer's output
    with ember.no_grad():
        h = [m[0](x).numpy() for x in data]
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in h], axis=0), rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), np.mean([x.var(0, ddof=1) for x in h], axis=0), rtol=1e-12)
    assert bn.num_batches_tracked.item() == 4
    lin = ember.nn.Linear(2, 2)
    W.update_bn(data, lin)                   # nothing to do without BatchNorm


# ---------------------------------------------------------------- against PyTorch
AVG_CASES = {
    "swa": lambda w: {},
    "ema-avg_fn": lambda w: dict(avg_fn=w.get_ema_avg_fn(0.9)),
    "ema-multi": lambda w: dict(multi_avg_fn=w.get_ema_multi_avg_fn(0.95)),
    "swa-multi": lambda w: dict(multi_avg_fn=w.get_swa_multi_avg_fn()),
    "swa-buffers": lambda w: dict(use_buffers=True),
    "ema-multi-buffers": lambda w: dict(multi_avg_fn=w.get_ema_multi_avg_fn(0.8), use_buffers=True),
    "swa-avg_fn-buffers": lambda w: dict(avg_fn=w.get_swa_avg_fn(), use_buffers=True),
}


@pytest.mark.parametrize("name", list(AVG_CASES))
def test_averaged_model_bit_identical_to_torch(name):
    torch = pytest.importorskip("torch")
    import torch.optim.swa_utils as TW
    states = _states(60, seed=1)
    tm, em = _net(torch), _net(ember)
    ta, ea = TW.AveragedModel(tm, **AVG_CASES[name](TW)), W.AveragedModel(em, **AVG_CASES[name](W))
    for sd in states:
        _load(torch, tm, sd)
        _load(ember, em, sd)
        ta.update_parameters(tm)
        ea.update_parameters(em)
    tsd, esd = _numpy_state(ta), _numpy_state(ea)
    assert list(tsd) == list(esd)
    for k in tsd:
        assert tsd[k].dtype == esd[k].dtype, k
        assert (tsd[k] == esd[k]).all(), k


def test_update_bn_same_as_torch():
    torch = pytest.importorskip("torch")
    import torch.optim.swa_utils as TW
    rng = np.random.default_rng(3)
    data = [rng.standard_normal((16, 4)) * 2 - 1 for _ in range(5)]
    sd = _states(1, seed=4)[0]
    tm, em = _net(torch), _net(ember)
    _load(torch, tm, sd)
    _load(ember, em, sd)
    TW.update_bn([torch.tensor(x) for x in data], tm)
    W.update_bn([ember.tensor(x) for x in data], em)
    tsd, esd = _numpy_state(tm), _numpy_state(em)
    for k in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(esd[k], tsd[k], rtol=1e-13, atol=0)
    assert tm.training == em.training and tm[1].momentum == em[1].momentum


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=[0.01, 0.5], anneal_epochs=7, anneal_strategy="linear"),
                                dict(swa_lr=0.02, anneal_epochs=0), dict(swa_lr=0.3, anneal_epochs=1)])
def test_swalr_same_as_torch(kw):
    torch = pytest.importorskip("torch")
    import torch.optim.swa_utils as TW
    tp = [torch.nn.Parameter(torch.zeros(1)) for _ in range(2)]
    ep = [ember.zeros(1, requires_grad=True) for _ in range(2)]
    to = torch.optim.SGD([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(tp)], momentum=0.9)
    eo = optim.SGD([{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ep)], momentum=0.9)
    ts, es = TW.SWALR(to, **kw), W.SWALR(eo, **kw)
    out_t, out_e = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(60):
            to.step()
            eo.step()
            ts.step()
            es.step()
            out_t.append([g["lr"] for g in to.param_groups])
            out_e.append([g["lr"] for g in eo.param_groups])
    assert out_t == out_e and ts.get_last_lr() == es.get_last_lr()
