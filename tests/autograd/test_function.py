"""Custom differentiable functions: ``ember.autograd.Function`` (static forward / backward,
``apply``, ``ctx.save_for_backward`` / ``saved_tensors`` with version checks,
``needs_input_grad``, ``mark_dirty``, ``mark_non_differentiable``,
``set_materialize_grads``, ``once_differentiable``, non-tensor arguments, double backward,
``setup_context``) and ``ember.library.register_autograd`` for an op a plugin defines in its
own namespace. Behaviour and messages follow torch.autograd.Function / torch.library.
"""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import ember
from ember.autograd import Function, once_differentiable
from ember.autograd.graph import AccumulateGrad
from ember.library import Library, register_autograd

F64 = ember.float64


def _leaf(values, dtype=None):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return grad * y


class Cube(Function):
    """x^3 with a backward written in ember ops: differentiable again."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 3 * x * x


# ---------------------------------------------------------------- basics
def test_forward_backward_and_grad_fn():
    x = _leaf([0.0, 1.0, -2.0], dtype=F64)
    y = Exp.apply(x)
    np.testing.assert_allclose(y.tolist(), np.exp([0.0, 1.0, -2.0]))
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "ExpBackward"
    (acc, nr), = y.grad_fn.next_functions
    assert isinstance(acc, AccumulateGrad) and acc.variable is x and nr == 0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.tolist(), np.exp([0.0, 1.0, -2.0]))


def test_function_composes_with_ops():
    x = _leaf([1.0, 2.0], dtype=F64)
    z = (Exp.apply(x * 2) * 3).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.tolist(), 6 * np.exp([2.0, 4.0]))


def test_forward_runs_without_grad_mode_and_records_nothing_inside():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["mode"] = ember.is_grad_enabled()
            inner = x * 2
            seen["inner"] = inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, g):
            seen["backward_mode"] = ember.is_grad_enabled()
            return g * 2
    x = _leaf([1.0])
    y = Probe.apply(x)
    assert seen == {"mode": False, "inner": False}
    assert ember.is_grad_enabled()
    y.backward()
    assert seen["backward_mode"] is False              # no create_graph
    ember.autograd.grad(Probe.apply(x), x, create_graph=True)
    assert seen["backward_mode"] is True
    assert x.grad.tolist() == [2.0]


def test_no_recording_without_inputs_requiring_grad_or_in_no_grad():
    assert Exp.apply(ember.ones(2)).grad_fn is None
    x = _leaf([1.0])
    with ember.no_grad():
        y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_non_tensor_arguments_and_needs_input_grad():
    seen = {}

    class Affine(Function):
        @staticmethod
        def forward(ctx, x, scale, bias, mode):
            assert mode == "affine"
            ctx.scale = scale
            return x * scale + bias

        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            return g * ctx.scale, None, (g if ctx.needs_input_grad[2] else None), None
    x, b = _leaf([1.0, 2.0]), ember.tensor([10.0, 20.0])
    y = Affine.apply(x, 3.0, b, "affine")
    assert y.tolist() == [13.0, 26.0]
    y.sum().backward()
    assert seen["needs"] == (True, False, False, False)
    assert x.grad.tolist() == [3.0, 3.0]
    b.requires_grad_()
    Affine.apply(x, 2, b, "affine").sum().backward()
    assert seen["needs"] == (True, False, True, False)
    assert b.grad.tolist() == [1.0, 1.0] and x.grad.tolist() == [5.0, 5.0]


def test_multiple_outputs_and_unused_output_gets_zeros():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1.tolist(), g2.tolist()))
            return g1 + 2 * g2
    x = _leaf([1.0, 2.0])
    a, b = Two.apply(x)
    assert a.grad_fn is b.grad_fn
    b.sum().backward()
    assert seen == [([0.0, 0.0], [1.0, 1.0])]          # materialized zeros for a
    assert x.grad.tolist() == [2.0, 2.0]


def test_set_materialize_grads_false_passes_none():
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1 is None, g2 is None))
            out = None
            for g, k in ((g1, 1), (g2, 2)):
                if g is not None:
                    out = g * k if out is None else out + g * k
            return out
    x = _leaf([1.0, 2.0])
    a, b = Two.apply(x)
    a.sum().backward()
    assert seen == [(False, True)] and x.grad.tolist() == [1.0, 1.0]


def test_non_tensor_outputs_pass_through():
    class WithInfo(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, "info", 3

        @staticmethod
        def backward(ctx, g, g_info, g_n):
            assert g_info is None and g_n is None
            return g * 2
    x = _leaf([1.0])
    y, info, n = WithInfo.apply(x)
    assert info == "info" and n == 3
    y.backward()
    assert x.grad.tolist() == [2.0]


def test_setup_context_style():
    class Scale(Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.k = k
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * ctx.k, None
    x = _leaf([1.0, 2.0])
    g, = ember.autograd.grad(Scale.apply(x, 3.0).sum(), x)
    assert g.tolist() == [3.0, 3.0]


def test_backward_gradient_is_summed_to_input_shape():
    class Broadcast(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g * ember.ones(2, 3)            # broadcastable to (3,): summed over the leading dim
    x = _leaf([1.0, 2.0, 3.0])
    Broadcast.apply(x).backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# ---------------------------------------------------------------- errors of a wrong backward
def test_wrong_number_of_gradients():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, g
    with pytest.raises(RuntimeError, match=re.escape(
            "function FBackward returned an incorrect number of gradients (expected 1, got 2)")):
        F.apply(_leaf([1.0, 2.0])).sum().backward()


def test_extra_none_gradients_are_allowed():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None
    x = _leaf([1.0])
    F.apply(x).backward()
    assert x.grad.tolist() == [2.0]


def test_wrong_gradient_shape():
    class G(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum() * ember.ones(3)
    with pytest.raises(RuntimeError, match=re.escape(
            "Function GBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible "
            "with [2]")):
        G.apply(_leaf([1.0, 2.0])).sum().backward()


def test_backward_returning_none_for_input_gives_no_gradient():
    class Stop(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None
    x = _leaf([1.0, 2.0])
    Stop.apply(x).sum().backward()
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(Stop.apply(x).sum(), x)


# ---------------------------------------------------------------- saved tensors
def test_saved_tensors_are_version_checked():
    x = _leaf([1.0, 2.0])
    a = x * 1
    y = Cube.apply(a)
    a.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[ember.FloatTensor [2]], which is output 0 of MulBackward0, is at version 1; expected version 0 "
            "instead.")):
        y.sum().backward()
    assert x.grad is None


def test_saved_output_is_version_checked():
    x = _leaf([0.0, 1.0])
    y = Exp.apply(x)
    y.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "[ember.FloatTensor [2]], which is output 0 of ExpBackward, is at version 1; expected version 0")):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    x = _leaf([1.0, 2.0])
    y = Cube.apply(x)
    y.sum().backward(retain_graph=True)
    assert [t.tolist() for t in y.grad_fn.saved_tensors] == [[1.0, 2.0]]
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


def test_save_for_backward_accepts_none_and_non_inputs():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            helper = ember.full_like(x, 5.0)
            ctx.save_for_backward(None, helper, x)
            return x * helper

        @staticmethod
        def backward(ctx, g):
            none, helper, x = ctx.saved_tensors
            assert none is None
            return g * helper
    x = _leaf([1.0, 2.0])
    F.apply(x).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


# ---------------------------------------------------------------- mark_dirty / non-differentiable / identity
class AddOneInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.add_(1)

    @staticmethod
    def backward(ctx, g):
        return g


def test_mark_dirty_in_place_function():
    x = _leaf([1.0, 2.0])
    a = x * 3
    out = AddOneInPlace.apply(a)
    assert out is a and a.tolist() == [4.0, 7.0]
    assert a.grad_fn.name() == "AddOneInPlaceBackward"
    (a * a).sum().backward()
    assert x.grad.tolist() == [24.0, 42.0]            # d((3x+1)^2)/dx = 6(3x+1)


def test_mark_dirty_on_view_rewrites_the_base():
    x = _leaf([1.0, 2.0, 3.0])
    a = x * 2
    AddOneInPlace.apply(a[1:])
    assert a.tolist() == [2.0, 5.0, 7.0]
    (a * a).sum().backward()
    assert x.grad.tolist() == [8.0, 20.0, 28.0]        # 2a * 2


def test_mark_dirty_on_leaf_raises():
    with pytest.raises(RuntimeError, match=re.escape(
            "a leaf Variable that requires grad has been used in an in-place operation.")):
        AddOneInPlace.apply(_leaf([1.0]))


def test_mark_non_differentiable():
    seen = []

    class SortWithIndices(Function):
        @staticmethod
        def forward(ctx, x):
            values, indices = x.sort()
            ctx.mark_non_differentiable(indices)
            ctx.save_for_backward(indices)
            return values, indices

        @staticmethod
        def backward(ctx, g_values, g_indices):
            seen.append((g_indices.tolist(), g_indices.dtype))
            indices, = ctx.saved_tensors
            out = ember.zeros_like(g_values)
            out[indices] = g_values
            return out
    x = _leaf([3.0, 1.0, 2.0])
    values, indices = SortWithIndices.apply(x)
    assert values.requires_grad and not indices.requires_grad and indices.grad_fn is None
    (values * ember.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert seen == [([0, 0, 0], ember.int64)]          # zeros for the non-differentiable output
    assert x.grad.tolist() == [100.0, 1.0, 10.0]


def test_mark_non_differentiable_float_output():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            mask = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            return x * 2, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            return g * 2
    y, mask = F.apply(_leaf([-1.0, 1.0]))
    assert y.requires_grad and not mask.requires_grad


def test_returning_an_input_unchanged():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5
    x = _leaf([1.0, 2.0])
    y = Identity.apply(x)
    assert y is not x and y.grad_fn.name() == "IdentityBackward"
    assert x.grad_fn is None and x.is_leaf
    assert y.tolist() == [1.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    a = x * 1
    b = Identity.apply(a)
    assert b is not a and a.grad_fn.name() == "MulBackward0"
    assert b.grad_fn.next_functions[0][0] is a.grad_fn


def test_returning_a_view_of_an_input_keeps_the_custom_backward():
    class Head(Function):
        @staticmethod
        def forward(ctx, x):
            return x[0:2]

        @staticmethod
        def backward(ctx, g):
            r = ember.zeros(3)
            r[0:2] = g * 10
            return r
    for make in (lambda x: x, lambda x: x * 1):
        x = _leaf([1.0, 2.0, 3.0])
        y = Head.apply(make(x))
        assert y.grad_fn.name() == "HeadBackward"
        assert (y * 1).grad_fn.next_functions[0][0] is y.grad_fn
        (y * 1).sum().backward()
        assert x.grad.tolist() == [10.0, 10.0, 0.0]


# ---------------------------------------------------------------- higher order
def test_differentiable_backward_gives_double_backward():
    x = _leaf([1.0, 2.0], dtype=F64)
    g, = ember.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [3.0, 12.0] and g.requires_grad
    gg, = ember.autograd.grad(g.sum(), x)
    assert gg.tolist() == [6.0, 12.0]
    assert ember.autograd.gradgradcheck(Cube.apply, (ember.tensor([0.5, -1.5], dtype=F64, requires_grad=True),))


class OnceSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        assert not ember.is_grad_enabled()
        x, = ctx.saved_tensors
        return 2 * g * x


def test_once_differentiable_first_order_works():
    x = _leaf([1.0, 3.0])
    OnceSquare.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 6.0]


def test_once_differentiable_double_backward_raises():
    x = _leaf([1.0, 3.0])
    y = OnceSquare.apply(x)
    g, = ember.autograd.grad((y * y).sum(), x, create_graph=True)    # the incoming gradient requires grad
    assert g.tolist() == [4.0, 108.0] and g.requires_grad
    with pytest.raises(RuntimeError, match=re.escape(
            "trying to differentiate twice a function that was marked with @once_differentiable")):
        g.sum().backward()


def test_once_differentiable_with_constant_incoming_gradient_is_constant():
    x = _leaf([1.0, 3.0])
    g, = ember.autograd.grad(OnceSquare.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad                                          # as in PyTorch


# ---------------------------------------------------------------- register_autograd for a plugin op
_ns_counter = itertools.count()


def _meta(self, other, scale=2.0):
    return self.device, (self.device.type, self.layout.name, self.dtype), tuple(self.shape), self.dtype


@pytest.fixture
def scaled_mul():
    """An op ``<ns>::scaled_mul(Tensor self, Tensor other, float scale=2.0) -> Tensor`` with a cpu kernel."""
    lib = Library(f"agfn{next(_ns_counter)}")
    name = lib.define("scaled_mul(Tensor self, Tensor other, float scale=2.0) -> Tensor", _meta)
    lib.impl("scaled_mul", lambda self, other, scale=2.0, *, out: out.copy_(self * other * scale), device="cpu")
    yield name, getattr(ember.ops, lib.ns).scaled_mul
    lib._destroy()


def test_plugin_op_without_registered_autograd_raises(scaled_mul):
    name, op = scaled_mul
    y = op(_leaf([1.0]), ember.ones(1), 3.0)
    assert y.tolist() == [3.0]
    with pytest.raises(RuntimeError, match=name.replace("::", "_")):
        y.sum().backward()


def test_register_autograd_gradients_and_saved_tensors(scaled_mul):
    name, op = scaled_mul
    seen = {}

    def setup_context(ctx, inputs, output):
        a, b, scale = inputs
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        seen["output"] = output.tolist()

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        seen["needs"] = ctx.needs_input_grad
        return g * b * ctx.scale, g * a * ctx.scale, None
    register_autograd(name, backward, setup_context=setup_context)
    x, w = _leaf([1.0, 2.0, 3.0]), _leaf([4.0, 5.0, 6.0])
    z = op(x, w, 3.0)
    assert z.tolist() == [12.0, 30.0, 54.0] and seen["output"] == [12.0, 30.0, 54.0]
    assert z.requires_grad and z.grad_fn is not None
    assert [type(n).__name__ if n is not None else None for n, _ in z.grad_fn.next_functions] == \
        ["AccumulateGrad", "AccumulateGrad"]
    z.sum().backward()
    assert x.grad.tolist() == [12.0, 15.0, 18.0] and w.grad.tolist() == [3.0, 6.0, 9.0]
    assert seen["needs"] == (True, True, False)
    op(x, ember.ones(3), 1.0).sum().backward()
    assert seen["needs"] == (True, False, False)
    assert x.grad.tolist() == [13.0, 16.0, 19.0]
    # the saved tensors are version-checked
    a = x * 1
    z = op(a, w)
    a.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "[ember.FloatTensor [3]], which is output 0 of MulBackward0, is at version 1; expected version 0")):
        z.sum().backward()


def test_register_autograd_double_backward_and_gradcheck(scaled_mul):
    name, op = scaled_mul

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1])
        ctx.scale = inputs[2]

    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b * ctx.scale, g * a * ctx.scale, None
    register_autograd(name, backward, setup_context=setup_context)
    x = ember.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    w = ember.tensor([1.5, 0.25, -3.0], dtype=F64, requires_grad=True)
    gx, = ember.autograd.grad((op(x, w, 2.0) * x).sum(), x, create_graph=True)     # 2*scale*x*w
    np.testing.assert_allclose(gx.tolist(), [4 * 0.5 * 1.5, 4 * -1.0 * 0.25, 4 * 2.0 * -3.0])
    gw, = ember.autograd.grad(gx.sum(), w)
    np.testing.assert_allclose(gw.tolist(), [2.0, -4.0, 8.0])                     # 4x
    assert ember.autograd.gradcheck(lambda a, b: op(a, b, 1.5), (x, w))
    assert ember.autograd.gradgradcheck(lambda a, b: op(a, b, 1.5), (x, w))


def test_register_autograd_unknown_op():
    with pytest.raises(ValueError):
        register_autograd("nosuchns::nosuchop", lambda ctx, g: g)

