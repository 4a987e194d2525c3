"""ember.amp.GradScaler compared step by step with torch.amp.GradScaler on cpu: the scale, the growth
tracker and the parameters after every step, with inf and nan injected into some steps' gradients;
unscale_ before clipping; state_dict round trips; the errors of misuse."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# the steps with injected nan run numpy kernels on nan, which warn where PyTorch is silent
# (docs/architecture.md, "The CPU plugin"): not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

_rng = np.random.default_rng(1)
_W, _B = _rng.standard_normal((3, 5)).astype(np.float32), _rng.standard_normal(3).astype(np.float32)
_X, _Y = _rng.standard_normal((16, 5)).astype(np.float32), _rng.standard_normal((16, 3)).astype(np.float32)

#: steps whose loss is multiplied by inf / nan (their gradients are then non-finite)
_BAD = {2: float("inf"), 3: float("nan"), 9: float("inf")}


def _trajectory(lib, steps=14, autocast=False, unscale_first=False, **scaler_kw):
    model = lib.nn.Linear(5, 3)
    with lib.no_grad():
        model.weight.copy_(lib.tensor(_W))
        model.bias.copy_(lib.tensor(_B))
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", **scaler_kw)
    x, y = lib.tensor(_X), lib.tensor(_Y)
    rows = []
    for i in range(steps):
        opt.zero_grad()
        with lib.autocast("cpu", enabled=autocast):
            out = model(x)
            loss = ((out.float() - y) ** 2).mean()
        if i in _BAD:
            loss = loss * _BAD[i]
        scaler.scale(loss).backward()
        if unscale_first:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        rows.append((scaler.get_scale(), scaler.state_dict()["_growth_tracker"],
                     model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy()))
    return rows


@pytest.mark.parametrize("kw", [dict(init_scale=2.0 ** 16, growth_interval=3),
                                dict(init_scale=1024.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=2),
                                dict()])
@pytest.mark.parametrize("unscale_first", [False, True])
def test_trajectory_matches_torch(kw, unscale_first):
    e = _trajectory(ember, unscale_first=unscale_first, **kw)
    t = _trajectory(torch, unscale_first=unscale_first, **kw)
    for i, (er, tr) in enumerate(zip(e, t)):
        assert er[0] == tr[0], f"scale differs after step {i}"
        assert er[1] == tr[1], f"growth tracker differs after step {i}"
        np.testing.assert_allclose(er[2], tr[2], rtol=1e-5, atol=1e-6, err_msg=f"weight after step {i}")
        np.testing.assert_allclose(er[3], tr[3], rtol=1e-5, atol=1e-6, err_msg=f"bias after step {i}")
    scales = [r[0] for r in e]
    assert min(scales) < scales[0] or kw.get("growth_interval", 2000) > 14   # the injected infs did back off


def test_skipped_steps_leave_parameters_unchanged():
    rows = _trajectory(ember, init_scale=8.0, growth_interval=100)
    for i in _BAD:
        np.testing.assert_array_equal(rows[i][2], rows[i - 1][2])
        assert rows[i][0] == rows[i - 1][0] / 2


def test_trajectory_with_bfloat16_autocast_matches_torch():
    e = _trajectory(ember, autocast=True, init_scale=256.0, growth_interval=4)
    t = _trajectory(torch, autocast=True, init_scale=256.0, growth_interval=4)
    assert [r[0] for r in e] == [r[0] for r in t]
    assert [r[1] for r in e] == [r[1] for r in t]
    for er, tr in zip(e, t):
        np.testing.assert_allclose(er[2], tr[2], rtol=2e-2, atol=2e-2)


def test_scale_growth_stops_at_float32_max():
    """A growth that would overflow float32 leaves the scale as it was (and resets the tracker), as torch."""
    got = {}
    for lib in (ember, torch):
        p = lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1)
        s = lib.amp.GradScaler("cpu", init_scale=2.0 ** 110, growth_factor=2.0 ** 10, growth_interval=1)
        trail = []
        for _ in range(3):
            s.scale(p.sum()).backward()
            s.step(opt)
            s.update()
            trail.append((s.get_scale(), s.state_dict()["_growth_tracker"]))
        got[lib.__name__] = trail
    assert got["ember"] == got["torch"] == [(2.0 ** 120, 0), (2.0 ** 120, 0), (2.0 ** 120, 0)]


def test_scale_of_containers_and_disabled():
    for lib in (ember, torch):
        s = lib.amp.GradScaler("cpu", init_scale=4.0)
        a, b = lib.ones(2), lib.ones(3)
        out = s.scale([a, (b, a)])
        assert isinstance(out, list) and isinstance(out[1], tuple)
        assert out[1][0].tolist() == [4.0] * 3
        with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
            s.scale([a, 3])
        off = lib.amp.GradScaler("cpu", enabled=False)
        assert off.scale(a) is a and off.get_scale() == 1.0 and off.state_dict() == {} and not off.is_enabled()


def test_state_dict_round_trip():
    for lib in (ember, torch):
        s = lib.amp.GradScaler("cpu", init_scale=64.0, growth_interval=2)
        p = lib.ones(1, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1)
        s.scale(p.sum()).backward()
        s.step(opt)
        s.update()
        sd = s.state_dict()
        assert sd == {"scale": 64.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2,
                      "_growth_tracker": 1}
        s2 = lib.amp.GradScaler("cpu")
        s2.load_state_dict(sd)
        assert s2.state_dict() == sd
        s3 = pickle.loads(pickle.dumps(s))
        assert s3.state_dict() == sd
        with pytest.raises(RuntimeError, match="The source state dict is empty"):
            s2.load_state_dict({})


def test_misuse_errors_match_torch():
    for lib in (ember, torch):
        p = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1)
        s = lib.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
            s.step(opt)
        with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
            lib.amp.GradScaler("cpu", backoff_factor=1.0)
        s.scale(p.sum()).backward()
        s.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
            s.unscale_(opt)
        s.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update"):
            s.step(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
            s.unscale_(opt)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            s.step(opt, closure=lambda: None)
        s.update()
        with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
            s.update()
        s.update(3.0)
        assert s.get_scale() == 3.0
        s.update(lib.tensor(5.0))
        assert s.get_scale() == 5.0
        with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
            s.update(lib.tensor([1.0, 2.0]))
        h = lib.ones(2, dtype=lib.float16, requires_grad=True)
        oh = lib.optim.SGD([h], lr=0.1)
        s.scale(h.sum().float()).backward()
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
            s.unscale_(oh)
