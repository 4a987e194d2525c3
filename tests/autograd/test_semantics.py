"""PyTorch's autograd semantics in ember: requires_grad, grad_fn / next_functions, leaves,
retain_grad, detach, backward / autograd.grad / autograd.backward and their arguments,
tensor hooks, grad modes (as context managers and decorators), anomaly mode, and the
error cases with PyTorch's messages (freed graph, non-scalar backward, saved tensors
modified in place, in-place ops on leaves, out= arguments). A failing backward must leave
every ``.grad`` as it was.

Expected values are worked out by hand (or with numpy); no torch needed.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember
from ember.autograd.graph import AccumulateGrad, Node


def _leaf(values, dtype=None):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


def _np(t):
    return np.array(t.detach().tolist())


@pytest.fixture(autouse=True)
def _grad_mode_is_restored():
    """Every test starts and ends with grad mode on and anomaly mode off."""
    assert ember.is_grad_enabled() and not ember.autograd.is_anomaly_enabled()
    yield
    leaked = (ember.is_grad_enabled(), ember.autograd.is_anomaly_enabled(), ember.is_inference_mode_enabled())
    ember.set_grad_enabled(True)
    ember.autograd.set_detect_anomaly(False)
    assert leaked == (True, False, False), "a test leaked grad / anomaly / inference mode"


# ---------------------------------------------------------------- requires_grad
@pytest.mark.parametrize("make", [
    lambda: ember.tensor([1.0, 2.0], requires_grad=True),
    lambda: ember.ones(2, requires_grad=True),
    lambda: ember.zeros(2, 3, requires_grad=True),
    lambda: ember.rand(2, requires_grad=True),
    lambda: ember.full((2,), 3.0, requires_grad=True),
    lambda: ember.empty(2, dtype=ember.float64, requires_grad=True),
], ids=["tensor", "ones", "zeros", "rand", "full", "empty"])
def test_requires_grad_factory_argument(make):
    x = make()
    assert x.requires_grad and x.is_leaf and x.grad_fn is None and x.grad is None


def test_requires_grad_defaults_to_false_and_results_follow_inputs():
    a, b = ember.ones(2), ember.ones(2)
    assert not a.requires_grad
    c = a * b
    assert not c.requires_grad and c.grad_fn is None and c.is_leaf
    d = c * _leaf([1.0, 2.0])
    assert d.requires_grad and d.grad_fn is not None and not d.is_leaf


def test_requires_grad_method_and_setter():
    x = ember.ones(3)
    assert x.requires_grad_() is x and x.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf
    x.requires_grad = False
    assert not x.requires_grad


_INT_MSG = re.compile(r"(?i)only Tensors of floating point and complex dtype can require gradients")


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "bool"])
def test_requires_grad_on_integer_or_bool_tensor_raises(dtype):
    dt = getattr(ember, dtype)
    with pytest.raises(RuntimeError, match=_INT_MSG):
        ember.zeros(2, dtype=dt).requires_grad_()
    with pytest.raises(RuntimeError, match=_INT_MSG):
        ember.zeros(2, dtype=dt, requires_grad=True)
    with pytest.raises(RuntimeError, match=_INT_MSG):
        ember.zeros(2, dtype=dt).requires_grad = True
    ember.zeros(2, dtype=dt).requires_grad_(False)     # turning it off is always fine


def test_requires_grad_on_integer_tensor_factory():
    with pytest.raises(RuntimeError, match=_INT_MSG):
        ember.tensor([1, 2], requires_grad=True)


def test_requires_grad_false_on_non_leaf_raises():
    y = _leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match=re.escape(
            "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in "
            "a subgraph that doesn't require differentiation use var_no_grad = var.detach().")):
        y.requires_grad_(False)
    y.requires_grad_(True)         # already requires grad: allowed


def test_complex_leaves_can_require_grad():
    z = ember.zeros(2, dtype=ember.complex64).requires_grad_()      # complex autograd: tests/complex
    assert z.requires_grad and z.is_leaf


# ---------------------------------------------------------------- grad_fn, next_functions, leaves
@pytest.mark.parametrize("expr, name", [
    ("x * y", "MulBackward0"), ("x + y", "AddBackward0"), ("x - y", "SubBackward0"), ("x / y", "DivBackward0"),
    ("x * 2", "MulBackward0"), ("x + 1", "AddBackward0"), ("-x", "NegBackward0"),
    ("x.sum()", "SumBackward0"), ("x.mean()", "MeanBackward0"), ("x.prod()", "ProdBackward0"),
    ("x.max()", "MaxBackward1"), ("x.exp()", "ExpBackward0"), ("x.log()", "LogBackward0"),
    ("x.sin()", "SinBackward0"), ("x.sqrt()", "SqrtBackward0"), ("x.tanh()", "TanhBackward0"),
    ("x.sigmoid()", "SigmoidBackward0"), ("x.abs()", "AbsBackward0"), ("x ** 2", "PowBackward0"),
    ("x.clone()", "CloneBackward0"), ("x.t()", "TBackward0"), ("x[0]", "SelectBackward0"),
    ("x[:, 1:]", "SliceBackward0"), ("x.view(-1)", "ViewBackward0"), ("x.permute(1, 0)", "PermuteBackward0"),
    ("x.transpose(0, 1)", "TransposeBackward0"), ("x.unsqueeze(0)", "UnsqueezeBackward0"),
    ("x.expand(2, 2, 3)", "ExpandBackward0"), ("x.squeeze()", "SqueezeBackward0"),
    ("ember.cat([x, y])", "CatBackward0"), ("x[x > 0]", "IndexBackward0"), ("x.to(ember.float64)", "ToCopyBackward0"),
    ("x.where(x > 0, y)", "WhereBackward0"), ("x.min(0)[0]", "MinBackward0"),
])
def test_grad_fn_names_match_pytorch(expr, name):
    x = ember.rand(2, 3, requires_grad=True)
    y = ember.rand(2, 3, requires_grad=True)
    out = eval(expr, {"x": x, "y": y, "ember": ember})
    assert out.grad_fn.name() == name
    assert type(out.grad_fn).__name__ == name or repr(out.grad_fn).startswith(f"<{name} object")
    assert f"grad_fn=<{name}>" in repr(out)


def test_next_functions_structure_with_accumulate_grad():
    x = _leaf([1.0, 2.0, 3.0])
    w = ember.tensor([4.0, 5.0, 6.0])            # does not require grad
    y = x * w
    z = y + x
    s = z.sum()
    (add, nr), = s.grad_fn.next_functions
    assert add is z.grad_fn and nr == 0 and add.name() == "AddBackward0"
    (mul, mul_nr), (acc, acc_nr) = add.next_functions
    assert mul is y.grad_fn and mul.name() == "MulBackward0" and mul_nr == 0
    assert isinstance(acc, AccumulateGrad) and acc.name() == "AccumulateGrad" and acc_nr == 0
    assert acc.variable is x
    assert acc.next_functions == ()
    (acc2, _), (none, none_nr) = mul.next_functions
    assert acc2 is acc                       # one AccumulateGrad per leaf
    assert none is None and none_nr == 0     # w needs no gradient
    assert isinstance(mul, Node) and isinstance(acc, Node)


def test_next_functions_output_nr_of_multi_output_node():
    x = ember.rand(3, 2, requires_grad=True)
    values, indices = x.max(0)
    assert values.requires_grad and not indices.requires_grad and indices.grad_fn is None
    out = values * 2
    (node, nr), _ = out.grad_fn.next_functions
    assert node is values.grad_fn and nr == 0


def test_calling_a_node_gives_input_gradients():
    x, y = _leaf([1.0, 2.0]), _leaf([3.0, 5.0])
    z = x * y
    gx, gy = z.grad_fn(ember.tensor([1.0, 10.0]))
    assert gx.tolist() == [3.0, 50.0] and gy.tolist() == [1.0, 20.0]


def test_node_hooks_and_prehooks():
    x = _leaf([1.0, 2.0])
    y = x * 3
    seen = []
    h1 = y.grad_fn.register_prehook(lambda grad_outputs: seen.append(("pre", grad_outputs[0].tolist())))
    h2 = y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 0 + 7,))
    y.backward(ember.tensor([1.0, 2.0]), retain_graph=True)
    assert seen == [("pre", [1.0, 2.0])]
    assert x.grad.tolist() == [7.0, 7.0]
    h1.remove()
    h2.remove()
    x.grad = None
    y.backward(ember.tensor([1.0, 2.0]))
    assert seen == [("pre", [1.0, 2.0])] and x.grad.tolist() == [3.0, 6.0]


def test_is_leaf():
    a = ember.ones(2)
    assert a.is_leaf                               # no requires_grad: a leaf
    x = _leaf([1.0, 2.0])
    assert x.is_leaf
    y = x * 2
    assert not y.is_leaf
    assert (a * 2).is_leaf                         # computed from tensors that need no grad
    assert y.detach().is_leaf
    with ember.no_grad():
        assert (x * 2).is_leaf


# ---------------------------------------------------------------- retain_grad / .grad of non-leaves
def test_retain_grad_keeps_non_leaf_gradient():
    x = _leaf([1.0, 2.0, 3.0])
    y = x * x
    assert not y.retains_grad and not x.retains_grad
    y.retain_grad()
    assert y.retains_grad
    y.retain_grad()                # twice is fine
    (y * 2).sum().backward()
    assert y.grad.tolist() == [2.0, 2.0, 2.0]
    assert x.grad.tolist() == [4.0, 8.0, 12.0]


def test_retain_grad_on_leaf_is_a_no_op_and_requires_grad_is_needed():
    x = _leaf([1.0])
    x.retain_grad()
    assert not x.retains_grad                      # leaves keep .grad anyway
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        ember.ones(2).retain_grad()


def test_retained_grad_accumulates_and_sees_hooked_value():
    x = _leaf([1.0, 2.0])
    y = x * 1
    y.retain_grad()                               # registered before the hook: still sees the final value
    y.register_hook(lambda g: g * 10)
    y.sum().backward(retain_graph=True)
    assert y.grad.tolist() == [10.0, 10.0] and x.grad.tolist() == [10.0, 10.0]
    y.sum().backward()
    assert y.grad.tolist() == [20.0, 20.0] and x.grad.tolist() == [20.0, 20.0]


def test_retain_grad_follows_the_tensor_through_in_place_ops():
    x = _leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    y.mul_(3)                    # a new grad_fn: the retained grad is the one of the new value
    (y * y).sum().backward()
    assert y.grad.tolist() == [12.0, 24.0] and x.grad.tolist() == [72.0, 144.0]


def test_grad_of_non_leaf_warns():
    y = _leaf([1.0]) * 2
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor is being "
                                         "accessed"):
        assert y.grad is None


def test_grad_assignment_is_validated():
    x = _leaf([1.0, 2.0])
    x.grad = ember.tensor([3.0, 4.0])
    assert x.grad.tolist() == [3.0, 4.0]
    x.grad = None
    assert x.grad is None
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = ember.ones(3)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = ember.ones(2, dtype=ember.float64)
    with pytest.raises(TypeError):
        x.grad = [1.0, 2.0]


# ---------------------------------------------------------------- detach / detach_
def test_detach_shares_storage_and_version_counter():
    x = _leaf([1.0, 2.0, 3.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d[0] = 10.0
    assert y.tolist() == [10.0, 4.0, 6.0]         # same storage
    assert y._version == d._version == 1          # same version counter
    x2 = _leaf([1.0, 2.0])
    y2 = x2 * 2
    z2 = y2 * y2                                    # saves y2
    y2.detach().add_(1)                             # an in-place write through the alias is seen
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z2.sum().backward()


def test_detach_of_leaf_does_not_require_grad():
    x = _leaf([1.0])
    d = x.detach()
    assert not d.requires_grad and x.requires_grad
    d.add_(1.0)                                     # allowed: d is not the leaf
    assert x.tolist() == [2.0]


def test_detach_in_place():
    x = _leaf([1.0, 2.0])
    y = x * 2
    assert y.detach_() is y
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    z = y * x
    z.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]           # no gradient through y


def test_detach_in_place_on_view_raises():
    v = (_leaf([1.0, 2.0]) * 2)[0:1]
    with pytest.raises(RuntimeError, match=re.escape("Can't detach views in-place. Use detach() instead.")):
        v.detach_()


# ---------------------------------------------------------------- backward
def test_backward_scalar_and_accumulation_across_calls():
    x = _leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    g = x.grad
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0, 9.0]
    assert x.grad is g                              # accumulated in place
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_backward_with_gradient_argument():
    x = _leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(gradient=ember.tensor([1.0, 0.0, 10.0]))
    assert x.grad.tolist() == [2.0, 0.0, 60.0]


def test_backward_gradient_shape_mismatch():
    y = _leaf([1.0, 2.0, 3.0]) * 2
    with pytest.raises(RuntimeError, match=re.escape(
            "Mismatch in shape: grad_output[0] has a shape of ember.Size([2]) and output[0] has a shape of "
            "ember.Size([3]).")):
        y.backward(ember.ones(2))


def test_backward_non_scalar_without_gradient_raises():
    y = _leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()


def test_backward_of_tensor_that_does_not_require_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ember.ones(1).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ember.autograd.backward(ember.ones(1, dtype=ember.int64))


def test_second_backward_without_retain_graph_raises():
    x = _leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=re.escape(
            "Trying to backward through the graph a second time (or directly access saved tensors after they have "
            "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
            "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
            "if you need to access saved tensors after calling backward.")):
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0]            # the failed call changed nothing


def test_retain_graph_allows_second_backward():
    x = _leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [6.0, 12.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_graph_without_saved_tensors_can_be_run_twice():
    x = _leaf([1.0, 2.0])
    y = (x + 1).sum()                              # add saves nothing: no buffers to free
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_create_graph_makes_grad_differentiable():
    x = _leaf([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.tolist() == [3.0, 12.0] and g.requires_grad and g.grad_fn is not None
    gg, = ember.autograd.grad(g.sum(), x)
    assert gg.tolist() == [6.0, 12.0]


def test_backward_inputs_restricts_accumulation():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    assert x.grad.tolist() == [3.0, 4.0] and w.grad is None
    (x * w).sum().backward(inputs=w)
    assert x.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]


def test_backward_inputs_may_be_non_leaf():
    x = _leaf([1.0, 2.0, 3.0])
    y = x * x
    (y * 2).sum().backward(inputs=[y])
    assert y.grad.tolist() == [2.0, 2.0, 2.0]
    assert x.grad is None


def test_backward_empty_inputs_raises():
    y = (_leaf([1.0]) * 2).sum()
    with pytest.raises(RuntimeError, match=re.escape("'inputs' argument to backward() cannot be empty.")):
        y.backward(inputs=[])


def test_autograd_backward_several_tensors():
    x = _leaf([1.0, 2.0])
    ember.autograd.backward([(x * x).sum(), x * 3], [None, ember.tensor([1.0, 10.0])])
    assert x.grad.tolist() == [5.0, 34.0]
    ember.autograd.backward(x * 2, grad_tensors=ember.ones(2))
    assert x.grad.tolist() == [7.0, 36.0]
    w = _leaf([1.0, 1.0])
    ember.autograd.backward([(x * w).sum()], inputs=[w])
    assert w.grad.tolist() == [1.0, 2.0] and x.grad.tolist() == [7.0, 36.0]


def test_deep_graph_has_no_recursion_limit():
    x = _leaf([1.0])
    y = x
    for _ in range(3000):
        y = y + 1
    y = y * 2
    y.sum().backward(retain_graph=True)
    assert x.grad.tolist() == [2.0]
    assert y.tolist() == [6002.0]
    g, = ember.autograd.grad((y * y).sum(), x)
    assert g.tolist() == [4 * 6002.0]


def test_gradient_flows_through_shared_subexpressions_once():
    x = _leaf([2.0])
    y = x * x            # used three times
    z = y * y + y
    z.backward()
    # z = x^4 + x^2: dz/dx = 4x^3 + 2x
    assert x.grad.tolist() == [4 * 8.0 + 4.0]


# ---------------------------------------------------------------- autograd.grad
def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    gx, gw = ember.autograd.grad((x * w).sum(), [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    single = ember.autograd.grad((x * w).sum(), x)
    assert isinstance(single, tuple) and len(single) == 1


def test_grad_with_grad_outputs():
    x = _leaf([1.0, 2.0, 3.0])
    g, = ember.autograd.grad(x * x, x, grad_outputs=ember.tensor([1.0, 0.0, 2.0]))
    assert g.tolist() == [2.0, 0.0, 12.0]
    a, b = ember.autograd.grad([x * 2, (x * x).sum()], [x], grad_outputs=[ember.ones(3), None])[0], None
    assert a.tolist() == [4.0, 6.0, 8.0] and b is None


def test_grad_with_respect_to_non_leaf():
    x = _leaf([1.0, 2.0])
    y = x * 3
    z = (y * y).sum()
    gy, = ember.autograd.grad(z, y)
    assert gy.tolist() == [6.0, 12.0]


def test_grad_unused_input():
    x, u = _leaf([1.0, 2.0]), _leaf([5.0, 6.0])
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match=re.escape(
            "The differentiated Tensor at index 1 appears to not have been used in the graph. Set "
            "allow_unused=True if this is the desired behavior.")):
        ember.autograd.grad(y, [x, u], retain_graph=True)
    gx, gu = ember.autograd.grad(y, [x, u], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 4.0] and gu is None
    gx, gu = ember.autograd.grad(y, [x, u], materialize_grads=True, retain_graph=True)
    assert gu.tolist() == [0.0, 0.0] and gu.shape == u.shape
    with pytest.raises(ValueError, match=re.escape(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
            "allow_unused=False.")):
        ember.autograd.grad(y, [x, u], materialize_grads=True, allow_unused=False)


def test_grad_and_backward_argument_counts():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        ember.autograd.backward([x.sum(), x.sum()], [None])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        ember.autograd.grad([x.sum(), x.sum()], x, [None])
    with pytest.raises(RuntimeError, match=re.escape("`inputs` argument to `grad()` cannot be empty.")):
        ember.autograd.grad(x.sum(), [])


def test_grad_input_not_requiring_grad():
    x = _leaf([1.0])
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        ember.autograd.grad((x * 2).sum(), ember.ones(1))


def test_grad_create_graph_and_retain_graph():
    x = _leaf([1.0, 2.0])
    y = (x ** 3).sum()
    g, = ember.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.tolist() == [3.0, 12.0]
    g2, = ember.autograd.grad(g.sum(), x, create_graph=True)        # 6x
    assert g2.tolist() == [6.0, 12.0]
    g3, = ember.autograd.grad(g2.sum(), x)                           # 6
    assert g3.tolist() == [6.0, 6.0]
    y2 = (x ** 3).sum()
    ember.autograd.grad(y2, x)                                       # retain_graph defaults to create_graph
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        ember.autograd.grad(y2, x)


def test_grad_without_create_graph_gives_constant():
    x = _leaf([1.0, 2.0])
    g, = ember.autograd.grad((x ** 3).sum(), x)
    assert not g.requires_grad and g.grad_fn is None


# ---------------------------------------------------------------- tensor hooks
def test_hook_replaces_leaf_gradient_and_remove():
    x = _leaf([1.0, 2.0])
    h = x.register_hook(lambda g: g * 100)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [200.0, 200.0]
    h.remove()
    h.remove()                 # twice is harmless
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_hook_replaces_non_leaf_gradient_upstream():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    y = x * w
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert x.grad.tolist() == [30.0, 40.0] and w.grad.tolist() == [10.0, 20.0]


def test_hook_returning_none_observes_and_hooks_chain_in_order():
    x = _leaf([1.0, 2.0])
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(("a", g.tolist())))
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: seen.append(("c", g.tolist())))
    y.sum().backward()
    assert seen == [("a", [1.0, 1.0]), ("c", [2.0, 2.0])]
    assert x.grad.tolist() == [2.0, 2.0]


def test_hook_sees_summed_gradient_once():
    x = _leaf([1.0, 2.0])
    calls = []
    x.register_hook(lambda g: calls.append(g.tolist()))
    (x * 2 + x * 3).sum().backward()
    assert calls == [[5.0, 5.0]]


def test_hook_changing_size_raises():
    y = _leaf([1.0, 2.0]) * 2

    def shrink(g):
        return g.sum()
    y.register_hook(shrink)
    with pytest.raises(RuntimeError, match="hook 'shrink' has changed the size of value"):
        y.sum().backward()


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ember.ones(2).register_hook(lambda g: g)


def test_post_accumulate_grad_hook():
    x = _leaf([1.0, 2.0])
    seen = []
    h = x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad.tolist())))
    (x * 3).sum().backward()
    (x * 1).sum().backward()
    assert seen == [(True, [3.0, 3.0]), (True, [4.0, 4.0])]      # runs after accumulation
    h.remove()
    (x * 1).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook_can_update_the_leaf():
    x = _leaf([1.0, 2.0])

    def sgd_step(t):
        with ember.no_grad():
            t.sub_(t.grad)
        t.grad = None
    x.register_post_accumulate_grad_hook(sgd_step)
    (x * x).sum().backward()
    assert x.tolist() == [-1.0, -2.0] and x.grad is None


# ---------------------------------------------------------------- a failing backward changes no .grad
def _grads(*ts):
    return [None if t.grad is None else t.grad.tolist() for t in ts]


def test_failing_hook_midway_leaves_grads_unchanged():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    (x * w).sum().backward()
    before = _grads(x, w)
    post = []
    x.register_post_accumulate_grad_hook(lambda t: post.append(1))
    a = x * 2
    b = w * 3

    def boom(g):
        raise ValueError("boom")
    b.register_hook(boom)
    r = a * a
    r.retain_grad()
    with pytest.raises(ValueError, match="boom"):
        (r + b).sum().backward()
    assert _grads(x, w) == before and post == []
    assert r._grad is None


def test_version_error_in_one_branch_leaves_grads_unchanged():
    x = _leaf([1.0, 2.0, 3.0])
    x.grad = ember.ones(3)
    u = _leaf([1.0, 1.0, 1.0])
    a = x * 2
    b = a.sin()                  # saves a
    c = (x * u) * 3              # a healthy branch that runs first
    loss = (c * c).sum() + b.sum()
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0] and u.grad is None


# ---------------------------------------------------------------- error cases with PyTorch's messages
def test_saved_tensor_modified_in_place_message():
    x = _leaf([1.0, 2.0, 3.0])
    b = x * 2
    c = b * b               # saves b, output 0 of MulBackward0, at version 0
    b.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[ember.FloatTensor [3]], which is output 0 of MulBackward0, is at version 1; expected version 0 "
            "instead.")):
        c.sum().backward()


def test_saved_tensor_version_counts_every_write():
    x = _leaf([1.0, 2.0, 3.0])
    b = x * 2
    b.add_(1)                    # version 1 before being saved
    c = b.exp()                  # saves its result
    d = b * b                    # saves b at version 1
    b.mul_(3)
    with pytest.raises(RuntimeError, match=re.escape("is at version 2; expected version 1 instead.")):
        d.sum().backward()
    c.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "[ember.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0")):
        c.sum().backward()


def test_saved_double_tensor_type_in_message():
    x = _leaf([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64)
    b = x * 1
    c = b.sin()
    b.zero_()
    with pytest.raises(RuntimeError, match=re.escape("[ember.DoubleTensor [2, 2]], which is output 0 of MulBackward0")):
        c.sum().backward()


def test_in_place_on_leaf_requiring_grad_raises():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "a leaf Variable that requires grad is being used in an in-place operation.")):
        x.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "a view of a leaf Variable that requires grad is being used in an in-place operation.")):
        x[0].mul_(2)
    assert x.tolist() == [1.0, 2.0] and x._version == 0
    with ember.no_grad():
        x.add_(1)                # allowed without grad mode
    assert x.tolist() == [2.0, 3.0]


def test_in_place_on_non_leaf_is_recorded():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 5.0])
    y = x * 2
    y.mul_(w)                    # y = 2xw
    assert y.grad_fn.name() == "MulBackward0" and y._version == 1
    y.add_(y)                    # y = 4xw (add saves nothing)
    y.sum().backward()
    assert x.grad.tolist() == [12.0, 20.0] and w.grad.tolist() == [4.0, 8.0]


def test_in_place_with_itself_as_saved_argument_raises_as_pytorch():
    x = _leaf([1.0, 2.0])
    y = x * 2
    y.mul_(y)                    # `other` is saved before the write: PyTorch refuses the backward
    with pytest.raises(RuntimeError, match=re.escape(
            "[ember.FloatTensor [2]], which is output 0 of MulBackward0, is at version 1; expected version 0")):
        y.sum().backward()


def test_out_argument_with_requires_grad_raises():
    x = _leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "add(): functions with out=... arguments don't support automatic differentiation, but one of the "
            "arguments requires grad.")):
        ember.add(x, x, out=ember.empty(2))
    with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic "
                                           "differentiation"):
        ember.mul(x, 2, out=ember.empty(2))
    out = ember.empty(2)
    with ember.no_grad():
        ember.add(x, x, out=out)
    assert out.tolist() == [2.0, 4.0] and not out.requires_grad


@pytest.mark.parametrize("expr", ["x.argmax()", "x.argmin(0)", "ember.eq(x, x)", "x > 0", "x.long()",
                                  "x.argsort()", "x.isnan()", "x.max(0)[1]", "x.sign() == 1"])
def test_integer_and_bool_outputs_do_not_require_grad(expr):
    x = ember.rand(2, 3, requires_grad=True)
    out = eval(expr, {"x": x, "ember": ember})
    assert not out.dtype.is_floating_point
    assert not out.requires_grad and out.grad_fn is None


# ---------------------------------------------------------------- grad modes
def test_is_grad_enabled_and_no_grad_context():
    x = _leaf([1.0])
    assert ember.is_grad_enabled() and ember.autograd.is_grad_enabled()
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
        with ember.enable_grad():
            assert ember.is_grad_enabled()
            z = x * 2
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None


def test_grad_mode_is_restored_after_exception():
    with pytest.raises(ZeroDivisionError):
        with ember.no_grad():
            1 / 0
    assert ember.is_grad_enabled()
    with ember.no_grad():
        with pytest.raises(ZeroDivisionError):
            with ember.enable_grad():
                1 / 0
        assert not ember.is_grad_enabled()


def test_set_grad_enabled_as_function_context_and_decorator():
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    assert ember.is_grad_enabled()
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
        with ember.set_grad_enabled(True):
            assert ember.is_grad_enabled()
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()

    @ember.set_grad_enabled(False)
    def f():
        return ember.is_grad_enabled()
    assert ember.is_grad_enabled()             # decorating does not change the mode
    assert f() is False and ember.is_grad_enabled()
    with pytest.raises(TypeError):
        ember.set_grad_enabled("no")


@pytest.mark.parametrize("bare", [False, True])
def test_no_grad_and_enable_grad_decorators(bare):
    x = _leaf([1.0])

    def double(t):
        return t * 2, ember.is_grad_enabled()
    ng = ember.no_grad(double) if bare else ember.no_grad()(double)
    eg = ember.enable_grad(double) if bare else ember.enable_grad()(double)
    y, mode = ng(x)
    assert mode is False and not y.requires_grad and ember.is_grad_enabled()
    assert ng.__name__ == "double"
    with ember.no_grad():
        y, mode = eg(x)
        assert mode is True and y.requires_grad
        assert not ember.is_grad_enabled()


def test_grad_mode_decorators_on_generator_functions():
    @ember.no_grad()
    def gen(t):
        for _ in range(2):
            received = yield (t * 2).requires_grad, ember.is_grad_enabled()
            assert received == "ping"

    g = gen(_leaf([1.0]))
    assert next(g) == (False, False)
    assert ember.is_grad_enabled()           # the caller's mode between steps
    assert g.send("ping") == (False, False)
    assert ember.is_grad_enabled()
    with pytest.raises(StopIteration):
        g.send("ping")

    @ember.enable_grad()
    def gen2():
        yield ember.is_grad_enabled()
    with ember.no_grad():
        assert list(gen2()) == [True]
        assert not ember.is_grad_enabled()


def test_inference_mode():
    x = _leaf([1.0])
    assert not ember.is_inference_mode_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not ember.is_grad_enabled()
        y = x * 2
        with ember.inference_mode(False):
            assert not ember.is_inference_mode_enabled()
    assert not y.requires_grad
    assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()

    @ember.inference_mode()
    def f():
        return ember.is_inference_mode_enabled(), ember.is_grad_enabled()

    @ember.inference_mode
    def g():
        return ember.is_inference_mode_enabled()
    assert f() == (True, False) and g() is True
    assert not ember.is_inference_mode_enabled()


def test_grad_mode_classes_are_exported_from_autograd():
    assert ember.autograd.no_grad is ember.no_grad
    assert ember.autograd.enable_grad is ember.enable_grad
    assert ember.autograd.set_grad_enabled is ember.set_grad_enabled
    assert ember.autograd.inference_mode is ember.inference_mode


# ---------------------------------------------------------------- anomaly mode
class _NaNBackward(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def test_set_detect_anomaly_function_and_context():
    assert not ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(True)
    assert ember.autograd.is_anomaly_enabled()
    ember.autograd.set_detect_anomaly(False)
    assert not ember.autograd.is_anomaly_enabled()
    with ember.autograd.set_detect_anomaly(True):
        assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()


def test_detect_anomaly_warns_and_works_as_decorator():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with ember.autograd.detect_anomaly():
            assert ember.autograd.is_anomaly_enabled()
    assert not ember.autograd.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        @ember.autograd.detect_anomaly()
        def f():
            return ember.autograd.is_anomaly_enabled()
    assert f() is True and not ember.autograd.is_anomaly_enabled()


def test_anomaly_names_node_and_forward_traceback_of_custom_function():
    x = _leaf([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with ember.autograd.detect_anomaly():
            y = _NaNBackward.apply(x)  # the line the traceback must show
            with pytest.raises(RuntimeError) as info:
                y.sum().backward()
    msg = str(info.value)
    assert msg.startswith("Function '_NaNBackwardBackward' returned nan values in its 0th output.")
    assert "test_semantics.py" in msg and "y = _NaNBackward.apply(x)  # the line the traceback must show" in msg
    assert x.grad is None


def test_anomaly_nan_from_sqrt_at_zero():
    x = _leaf([0.0, 4.0])
    with ember.autograd.set_detect_anomaly(True):
        y = x.sqrt() * 0
        with pytest.raises(RuntimeError, match=re.escape(
                "Function 'SqrtBackward0' returned nan values in its 0th output.")) as info:
            y.sum().backward()
    assert "y = x.sqrt() * 0" in str(info.value) and "test_semantics.py" in str(info.value)
    assert x.grad is None


def test_nan_gradient_without_anomaly_mode_or_check_nan_off():
    x = _leaf([0.0, 4.0])
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.tolist()[0]) and x.grad.tolist()[1] == 0.0
    x.grad = None
    with ember.autograd.set_detect_anomaly(True, check_nan=False):
        (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.tolist()[0])
