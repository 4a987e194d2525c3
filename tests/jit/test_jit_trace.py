"""ember.jit.trace on ember.compile's capture: the graph, running it (values and gradients), warnings, errors,
side by side with torch.jit.trace where both behave alike."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.examples.digits import build_model


def _lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Dropout(0.5), nn.Flatten(), nn.Linear(6 * 14 * 14, 10))


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_traced_module_matches_eager_on_other_batch_sizes(kind):
    m = build_model(kind).eval()
    t = ember.jit.trace(m, ember.randn(2, 1, 8, 8))
    assert isinstance(t, ember.jit.ScriptModule) and isinstance(t, nn.Module)
    for b in (1, 5):
        x = ember.randn(b, 1, 8, 8)
        assert ember.equal(t(x), m(x))


def test_script_module_shares_parameters_and_state_dict_keys():
    m = _lenet().eval()
    t = ember.jit.trace(m, ember.randn(2, 1, 28, 28))
    assert list(t.state_dict()) == list(m.state_dict())
    assert {id(p) for p in t.parameters()} == {id(p) for p in m.parameters()}
    with ember.no_grad():
        m[0].weight.mul_(2)              # shared: the traced module sees the change
    x = ember.randn(3, 1, 28, 28)
    assert ember.equal(t(x), m(x))
    assert t.training is False
    t.train()
    assert t.training and all(c.training for c in t.modules())
    t.eval()
    assert not t.training


def test_graph_prints_one_line_per_node_with_shapes_and_dtypes():
    m = build_model("mlp").eval()
    t = ember.jit.trace(m, ember.randn(2, 1, 8, 8))
    lines = str(t.graph).splitlines()
    ops = [ln.split(" = ")[1].split("(")[0] for ln in lines[1:-1]]
    assert ops == ["reshape", "linear", "relu", "linear"]
    assert "float32[2, 128]" in lines[3] and "float32[128, 64]" in lines[0]
    assert lines[-1].strip().startswith("return")
    assert "ember.linear(" in t.code and t.code.startswith("def forward(self, x0):")


def test_batchnorm_eval_decomposes_and_dropout_vanishes():
    m = _lenet().eval()
    with ember.no_grad():
        m[1].running_mean.normal_()
        m[1].running_var.uniform_(0.5, 2.0)
    t = ember.jit.trace(m, ember.randn(2, 1, 28, 28))
    ops = [n["op"] for n in t.graph.nodes]
    assert "rsqrt" in ops and not any("bernoulli" in o for o in ops)
    x = ember.randn(4, 1, 28, 28)
    np.testing.assert_allclose(t(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_traced_function_views_copies_inplace_and_gradients():
    def f(x, w):
        y = F.log_softmax(x.float() * 2, 1) + F.softmax(x, -1).sum(0) + x.t().contiguous().t() + x[:, 1:2]
        z = ember.tanh(ember.sigmoid(x)).mean(dim=1, keepdim=True) + ember.cat([x, x], 0)[:3]
        z = z + x.to(ember.float64).to(ember.float32) @ w
        x2 = x.clone()
        x2.add_(1)
        x2.relu_()
        return y, z + x2
    x, w = ember.randn(3, 4), ember.randn(4, 4)
    tf = ember.jit.trace(f, (x, w))
    assert isinstance(tf, ember.jit.ScriptFunction)
    x = ember.randn(3, 4, requires_grad=True)
    w = ember.randn(4, 4, requires_grad=True)
    got, want = tf(x, w), f(x, w)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    (got[0].sum() + got[1].pow(2).sum()).backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    (want[0].sum() + want[1].pow(2).sum()).backward()
    np.testing.assert_allclose(gx.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw.numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_traced_module_forward_is_differentiable_wrt_parameters():
    ember.manual_seed(0)
    m = build_model("cnn").eval()
    t = ember.jit.trace(m, ember.randn(2, 1, 8, 8))
    x, y = ember.randn(4, 1, 8, 8), ember.tensor([1, 2, 3, 4])
    F.cross_entropy(t(x), y).backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    F.cross_entropy(m(x), y).backward()
    for g, p in zip(got, m.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_host_read_in_user_code_warns_tracer_warning_like_torch():
    torch = pytest.importorskip("torch")

    def f(x):
        if x.sum() > 0:          # a Python bool: the branch is fixed in the trace
            return x * 2
        return x - 1
    with pytest.warns(ember.jit.TracerWarning, match="might cause the trace to be incorrect"):
        tf = ember.jit.trace(f, ember.ones(3))
    with pytest.warns(torch.jit.TracerWarning, match="might cause the trace to be incorrect"):
        torch.jit.trace(f, torch.ones(3))
    assert tf(-ember.ones(3)).tolist() == [-2.0, -2.0, -2.0]     # the traced branch, as in PyTorch


def test_check_trace_warns_when_the_trace_does_not_reproduce():
    def f(x):
        return x + ember.rand(x.shape)
    with pytest.warns(ember.jit.TracerWarning, match="does not match"):
        ember.jit.trace(f, ember.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.jit.trace(f, ember.ones(3), check_trace=False)


def test_strict_warns_for_list_and_refuses_dict_outputs_as_torch():
    torch = pytest.importorskip("torch")

    def f(x):
        return [x * 2, x + 1]

    def g(x):
        return {"a": x * 2}
    with pytest.warns(ember.jit.TracerWarning, match="Encountering a list at the output of the tracer"):
        tf = ember.jit.trace(f, ember.ones(2))
    with pytest.warns(torch.jit.TracerWarning, match="Encountering a list at the output of the tracer"):
        torch.jit.trace(f, torch.ones(2))
    out = tf(ember.full((2,), 3.0))
    assert isinstance(out, list) and out[0].tolist() == [6.0, 6.0] and out[1].tolist() == [4.0, 4.0]
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="Encountering a dict at the output of the tracer"):
            lib.jit.trace(g, lib.ones(2))
    tg = ember.jit.trace(g, ember.ones(2), strict=False)
    assert tg(ember.ones(2))["a"].tolist() == [2.0, 2.0]


def test_write_into_a_view_is_refused():
    def f(x):
        y = x.clone()
        y[0].mul_(2)
        return y
    with pytest.raises(RuntimeError, match="view of another tensor"):
        ember.jit.trace(f, ember.ones(2, 2))


def test_script_raises_and_helpers_have_torch_meaning():
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError, match="ember.jit.trace"):
        ember.jit.script(nn.Linear(2, 2))
    assert ember.jit.is_scripting() is False and torch.jit.is_scripting() is False
    assert ember.jit.is_tracing() is False and torch.jit.is_tracing() is False
    seen = []

    def f(x):
        seen.append(ember.jit.is_tracing())
        return x + 1
    ember.jit.trace(f, ember.ones(1), check_trace=False)
    assert seen == [True]

    @ember.jit.ignore
    def g(x):
        return x
    assert g(3) == 3 and ember.jit.ignore(drop=True)(g) is g and ember.jit.unused(g) is g


def test_trace_argument_errors():
    with pytest.raises(TypeError, match="tensor"):
        ember.jit.trace(lambda x: x, 3)
    t = ember.jit.trace(nn.Linear(3, 2), ember.ones(1, 3))
    with pytest.raises(RuntimeError, match="takes 1 tensor input"):
        t(ember.ones(1, 3), ember.ones(1, 3))


def test_views_become_reshape_slice_permute_not_raw_strides():
    def f(x):
        return x[:, 1:3], x[1], x.t()[2:], x[:, ::2], ember.cat([x, x], 0)[:3], x.view(4, 3, 2).transpose(1, 2)
    x = ember.randn(4, 6)
    t = ember.jit.trace(f, x)
    assert {n["op"] for n in t.graph.nodes} <= {"cat", "slice", "permute", "reshape"}
    for a, b in zip(t(x), f(x)):
        assert ember.equal(a, b)
    x = ember.randn(7, 6)                    # a leading dim that is not sliced follows the input
    assert ember.equal(t(x)[0], x[:, 1:3]) and ember.equal(t(x)[3], x[:, ::2])


def test_batchnorm_in_training_mode_updates_running_stats_like_eager():
    import copy
    ember.manual_seed(4)
    m = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3))
    twin = copy.deepcopy(m)
    x = ember.randn(4, 1, 6, 6)
    t = ember.jit.trace(m, x, check_trace=False)      # the trace itself ran the step once on m
    assert {n for n, _ in t.graph.updates} == {"1.running_mean", "1.running_var", "1.num_batches_tracked"}
    twin(x)
    y = t(x)
    want = twin(x)
    assert ember.allclose(y, want, atol=1e-6)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert ember.allclose(getattr(m[1], name).double(), getattr(twin[1], name).double())


def test_to_moves_constants_too():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x) + ember.tensor([0.0, 1.0, 2.0])     # a tensor the graph holds as a constant
    m = M().eval()
    t = ember.jit.trace(m, ember.ones(2, 3))
    assert len(t.graph.constants) == 1
    t.double()
    assert all(c.dtype == ember.float64 for c in t.graph.constants.values())
    x = ember.randn(2, 3, dtype=ember.float64)
    assert ember.allclose(t(x), m.double()(x))


def test_module_classes_and_annotate_as_torch():
    torch = pytest.importorskip("torch")
    t = ember.jit.trace(nn.Linear(2, 2), ember.ones(1, 2))
    tt = torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))
    for lib, obj in ((ember, t), (torch, tt)):
        assert isinstance(obj, lib.jit.TopLevelTracedModule) and isinstance(obj, lib.jit.TracedModule)
        assert isinstance(obj, lib.jit.ScriptModule) and isinstance(obj, lib.nn.Module)
    assert ember.jit.annotate(list, [1]) == torch.jit.annotate(list, [1]) == [1]
