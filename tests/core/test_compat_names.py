"""The remaining public names of torch.autograd / torch.func / torch.nn.init that programs reach for,
side by side with PyTorch."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
FW = [pytest.param(torch, id="torch"), pytest.param(ember, id="ember")]


def _np(t):
    return t.detach().cpu().numpy()


def test_variable_and_variable_function():
    for fw in (torch, ember):
        x = fw.tensor([1., 2.])
        a = fw.autograd.Variable(x)
        assert a is not x and a.data_ptr() == x.data_ptr() and not a.requires_grad
        v = fw.autograd.Variable(x, requires_grad=True)
        assert v.requires_grad and v.is_leaf and v is not x and v.data_ptr() == x.data_ptr()
        assert isinstance(x, fw.autograd.Variable) and not isinstance(1.0, fw.autograd.Variable)
        assert tuple(fw.autograd.Variable().shape) == (0,)
        with pytest.raises(RuntimeError, match=r"torch.autograd.variable\(\.\.\.\) is deprecated"):
            fw.autograd.variable(1)


def test_flags_and_predicates():
    for fw in (torch, ember):
        x = fw.ones(2)
        assert fw.autograd.is_tensor_like(x) and not fw.autograd.is_tensor_like([1.0])
        assert fw.autograd.has_torch_function((x,)) is False
        assert fw.autograd.is_view_replay_enabled() is False
        assert fw.autograd.is_multithreading_enabled() is True
        with fw.autograd.set_multithreading_enabled(False):
            assert fw.autograd.is_multithreading_enabled() is False
        assert fw.autograd.is_multithreading_enabled() is True
    assert ember.autograd.kineto_available() is False           # (torch's answer depends on its build)
    seen = []
    with ember.autograd.set_multithreading_enabled(False):
        t = threading.Thread(target=lambda: seen.append(ember.autograd.is_multithreading_enabled()))
        t.start()
        t.join()
    assert seen == [True]                                       # per thread


def test_saved_tensor_is_the_graphs():
    assert ember.autograd.SavedTensor is ember.autograd.graph.SavedTensor


@pytest.mark.parametrize("fw", FW)
def test_linearize(fw):
    x = fw.tensor([0.5, 1.0, 2.0], dtype=fw.float64)
    out, jvp_fn = fw.func.linearize(lambda t: (t.sin() * t).sum(), x)
    t = fw.tensor([1.0, -1.0, 0.5], dtype=fw.float64)
    want = ((x.cos() * x + x.sin()) * t).sum()
    np.testing.assert_allclose(_np(jvp_fn(t)), _np(want), rtol=1e-12)
    np.testing.assert_allclose(_np(out), _np((x.sin() * x).sum()), rtol=1e-12)


def test_stack_module_state_and_batch_norm_replacement_match_torch():
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    res = {}
    for fw in (torch, ember):
        ms = [fw.nn.Linear(3, 2) for _ in ws]
        for m, w in zip(ms, ws):
            with fw.no_grad():
                m.weight.copy_(fw.tensor(w))
        params, buffers = fw.func.stack_module_state(ms)
        assert params["weight"].requires_grad and params["weight"].is_leaf and buffers == {}
        res[fw.__name__] = _np(params["weight"])
        with pytest.raises(RuntimeError, match="Expected at least one model"):
            fw.func.stack_module_state([])
        bn = fw.nn.Sequential(fw.nn.Linear(3, 3), fw.nn.BatchNorm1d(3))
        assert fw.func.replace_all_batch_norm_modules_(bn) is bn
        assert bn[1].running_mean is None and bn[1].running_var is None and not bn[1].track_running_stats
        x = fw.tensor(rng.standard_normal((4, 3)).astype(np.float32))
        assert fw.func.debug_unwrap(x) is x
    np.testing.assert_array_equal(res["torch"], res["ember"])


@pytest.mark.parametrize("name", ["eye", "dirac"])
def test_deprecated_init_aliases(name):
    for fw in (torch, ember):
        t = fw.empty(3, 3) if name == "eye" else fw.empty(2, 2, 3)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            getattr(fw.nn.init, name)(t)
        assert w and w[0].category is FutureWarning and f"`nn.init.{name}` is now deprecated" in str(w[0].message)
    np.testing.assert_array_equal(_np(ember.nn.init.eye_(ember.empty(3, 3))), np.eye(3, dtype=np.float32))
