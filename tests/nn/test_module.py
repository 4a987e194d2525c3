"""ember.nn.Module, Parameter and the containers: registration, iteration, state_dict,
hooks, conversion, repr (expectations written out by hand; PyTorch comparisons are guarded)."""
from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("steps", ember.zeros(()))
        self.register_buffer("scratch", ember.ones(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Affine(nn.Module):
    """A module with its own parameters that needs no F.* function."""

    def __init__(self, n=3):
        super().__init__()
        self.weight = nn.Parameter(ember.ones(n))
        self.bias = nn.Parameter(ember.zeros(n))

    def forward(self, x):
        return x * self.weight + self.bias


# ---------------------------------------------------------------- Parameter
def test_parameter_is_a_tensor_and_a_leaf():
    data = ember.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.data_ptr() == data.data_ptr()               # shares storage
    assert not isinstance(p * 2, nn.Parameter)           # ops give plain tensors
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_parameter_repr():
    assert repr(nn.Parameter(ember.tensor([1.0, 2.0]))) == \
        "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    assert repr(nn.Parameter(ember.tensor([1.0, 2.0]), requires_grad=False)) == \
        "Parameter containing:\ntensor([1., 2.])"


def test_parameter_errors():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        nn.Parameter(ember.tensor([1, 2]))
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])
    assert nn.Parameter(ember.tensor([1, 2]), requires_grad=False).dtype == ember.int64


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q.data_ptr() != p.data_ptr()
    assert q.tolist() == [1.0, 2.0]
    fn, args = p.__reduce_ex__(2)[:2]
    r = fn(*args)
    assert isinstance(r, nn.Parameter) and r.requires_grad and r.tolist() == [1.0, 2.0]


def test_parameter_in_binary_ops_keeps_shape():
    # a Tensor subclass as the second operand of a binary op must be keyed by its shape
    x = ember.ones(3)
    assert (x + nn.Parameter(ember.ones(2, 3))).shape == (2, 3)
    assert (x + nn.Parameter(ember.ones(4, 3))).shape == (4, 3)


def test_parameter_gradient_flows():
    m = Affine()
    out = m(ember.tensor([1.0, 2.0, 3.0])).sum()
    out.backward()
    assert m.weight.grad.tolist() == [1.0, 2.0, 3.0]
    assert m.bias.grad.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- registration
def test_attribute_registration():
    m = Net()
    assert list(m._parameters) == []
    assert list(m._modules) == ["fc1", "act", "fc2"]
    assert list(m._buffers) == ["steps", "scratch"]
    assert [n for n, _ in m.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "scratch"]
    assert m.fc2.bias is None and "bias" in m.fc2._parameters
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert len(list(m.modules())) == 4 and len(list(m.children())) == 3


def test_attribute_lookup_is_synced():
    m = Affine()
    assert m.__dict__["weight"] is m._parameters["weight"]
    p = nn.Parameter(ember.zeros(3))
    m.weight = p
    assert m.weight is p and m._parameters["weight"] is p
    m._parameters["weight"] = nn.Parameter(ember.ones(2))      # direct dict edits stay in sync
    assert m.weight.shape == (2,)
    del m.weight
    assert "weight" not in m._parameters and not hasattr(m, "weight")
    m.weight = None
    assert m.weight is None and "weight" not in m._parameters  # a plain attribute now


def test_reassigning_kinds():
    m = nn.Module()
    m.x = nn.Parameter(ember.ones(1))
    m.x = None                                  # stays a (None) parameter
    assert "x" in m._parameters and m.x is None
    with pytest.raises(TypeError, match="cannot assign 'ember.nn.modules.activation.ReLU' as parameter 'x'"):
        m.x = nn.ReLU()                         # as PyTorch: a parameter name takes parameters only
    m.y = nn.ReLU()
    m.y = nn.Parameter(ember.ones(1))           # a parameter replaces a module
    assert "y" not in m._modules and isinstance(m._parameters["y"], nn.Parameter)
    m.register_buffer("b", ember.ones(2))
    m.b = ember.zeros(2)                        # a tensor assigned to a buffer name stays a buffer
    assert m._buffers["b"].tolist() == [0.0, 0.0]
    m.c = nn.Buffer(ember.ones(1), persistent=False)
    assert "c" in m._buffers and "c" in m._non_persistent_buffers_set
    assert "c" not in m.state_dict()


@pytest.mark.parametrize("fn, exc, msg", [
    (lambda m: setattr(m, "weight", 3), TypeError,
     "cannot assign 'int' as parameter 'weight' (ember.nn.Parameter or None expected)"),
    (lambda m: m.register_parameter("a.b", None), KeyError, 'parameter name can\'t contain "."'),
    (lambda m: m.register_parameter("", None), KeyError, 'parameter name can\'t be empty string ""'),
    (lambda m: m.register_parameter("training", None), KeyError, "attribute 'training' already exists"),
    (lambda m: m.register_parameter("x", ember.ones(2)), TypeError,
     "cannot assign 'ember.FloatTensor' object to parameter 'x' (ember.nn.Parameter or None required)"),
    (lambda m: m.register_parameter(3, None), TypeError, "parameter name should be a string. Got int"),
    (lambda m: m.register_buffer("x", 3), TypeError,
     "cannot assign 'int' object to buffer 'x' (ember Tensor or None required)"),
    (lambda m: m.register_buffer("a.b", None), KeyError, 'buffer name can\'t contain "."'),
    (lambda m: m.register_buffer("weight", None), KeyError, "attribute 'weight' already exists"),
    (lambda m: m.add_module("x", 3), TypeError, "int is not a Module subclass"),
    (lambda m: m.add_module("a.b", nn.ReLU()), KeyError, 'module name can\'t contain ".", got: a.b'),
    (lambda m: m.add_module("", nn.ReLU()), KeyError, 'module name can\'t be empty string ""'),
    (lambda m: m.add_module("weight", nn.ReLU()), KeyError, "attribute 'weight' already exists"),
    (lambda m: m.nonexistent, AttributeError, "'Affine' object has no attribute 'nonexistent'"),
    (lambda m: m.train(1), ValueError, "training mode is expected to be boolean"),
    (lambda m: m.load_state_dict(3), TypeError, "Expected state_dict to be dict-like, got <class 'int'>."),
    (lambda m: m.to(ember.int32), TypeError,
     "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=ember.int32"),
])
def test_registration_errors(fn, exc, msg):
    m = Affine()
    with pytest.raises(exc) as info:
        fn(m)
    got = info.value.args[0] if exc is KeyError else str(info.value)
    assert got == msg


def test_assign_before_init():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.ones(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Bad()

    class Bad2(nn.Module):
        def __init__(self):
            self.m = nn.ReLU()

    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        Bad2()


def test_forward_missing():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


def test_shared_parameters_deduplicated():
    m = nn.Module()
    m.a = Affine()
    m.b = Affine()
    m.b.weight = m.a.weight
    names = [n for n, _ in m.named_parameters()]
    assert names == ["a.weight", "a.bias", "b.bias"]
    assert len([n for n, _ in m.named_parameters(remove_duplicate=False)]) == 4
    assert [n for n, _ in m.named_parameters(prefix="model")][0] == "model.a.weight"
    assert [n for n, _ in m.named_parameters(recurse=False)] == []
    m.c = m.a                                    # the same module twice
    assert [n for n, _ in m.named_modules()] == ["", "a", "b"]
    assert len(list(m.children())) == 2


def test_get_submodule_and_parameter():
    m = nn.Sequential(Net())
    assert m.get_submodule("0.fc1") is m[0].fc1
    assert m.get_submodule("") is m
    assert m.get_parameter("0.fc1.weight") is m[0].fc1.weight
    assert m.get_buffer("0.steps") is m[0].steps
    with pytest.raises(AttributeError, match="Net has no attribute `nope`"):
        m.get_submodule("0.nope")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.get_submodule("0.fc1.weight")
    with pytest.raises(AttributeError, match="`in_features` is not an nn.Parameter"):
        m.get_parameter("0.fc1.in_features")


def test_dir_lists_members():
    m = Net()
    d = dir(m)
    assert {"fc1", "fc2", "steps", "forward", "training"} <= set(d)
    s = nn.Sequential(nn.ReLU())
    assert not any(k[0].isdigit() for k in dir(s))


# ---------------------------------------------------------------- state_dict
def test_state_dict_contents():
    m = Net()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight"]     # no non-persistent buffer
    assert not sd["fc1.weight"].requires_grad and not isinstance(sd["fc1.weight"], nn.Parameter)
    assert sd["fc1.weight"].data_ptr() == m.fc1.weight.data_ptr()
    assert m.state_dict(keep_vars=True)["fc1.weight"] is m.fc1.weight
    assert list(m.state_dict(prefix="p."))[1] == "p.fc1.weight"
    assert sd._metadata[""] == {"version": 1} and "fc1" in sd._metadata


def test_state_dict_round_trip():
    ember.manual_seed(0)
    a, b = Net(), Net()
    b.steps.fill_(7.0)
    r = a.load_state_dict(b.state_dict())
    assert r.missing_keys == [] and r.unexpected_keys == []
    assert repr(r) == "<All keys matched successfully>"
    for (n, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert a.steps.item() == 7.0
    assert a.fc1.weight.data_ptr() != b.fc1.weight.data_ptr()    # copied, not shared
    assert a.fc1.weight.requires_grad and a.fc1.weight.is_leaf


def test_load_state_dict_strict_messages():
    m = nn.Linear(2, 3) if hasattr(nn.functional, "linear") else None
    if m is None:
        pytest.skip("F.linear not available yet")
    sd = {"weight": ember.ones(4, 2), "bias": ember.ones(3), "x": ember.ones(1)}
    before = m.weight.clone()
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    assert str(info.value) == (
        'Error(s) in loading state_dict for Linear:\n\tUnexpected key(s) in state_dict: "x". \n\t'
        "size mismatch for weight: copying a param with shape ember.Size([4, 2]) from checkpoint, "
        "the shape in current model is ember.Size([3, 2]).")
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict({"weight": ember.ones(3, 2)})
    assert str(info.value) == 'Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". '
    assert ember.equal(m.weight, before)                 # nothing was copied
    r = m.load_state_dict({"weight": ember.ones(3, 2), "y": ember.ones(1)}, strict=False)
    assert r == (["bias"], ["y"])
    assert repr(r) == "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['y'])"
    assert m.weight.tolist() == [[1.0, 1.0]] * 3
    with pytest.raises(RuntimeError, match='While copying the parameter named "weight", expected ember.Tensor or '
                                           "Tensor-like object from checkpoint but received <class 'int'>"):
        m.load_state_dict({"weight": 3, "bias": ember.ones(3)})


def test_load_state_dict_nothing_changed_on_error():
    m = nn.Module()
    m.a = Affine(2)
    m.b = Affine(3)
    sd = {"a.weight": ember.full((2,), 5.0), "a.bias": ember.full((2,), 5.0),
          "b.weight": ember.ones(4), "b.bias": ember.zeros(3)}
    with pytest.raises(RuntimeError, match="size mismatch for b.weight"):
        m.load_state_dict(sd)
    assert m.a.weight.tolist() == [1.0, 1.0]              # a.* not copied either
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "a.bias", "b.weight", "b.bias". '):
        m.load_state_dict({"a.weight": ember.zeros(2)})
    assert m.a.weight.tolist() == [1.0, 1.0]


def test_load_state_dict_assign_and_dtype_cast():
    m = Affine(2)
    m.load_state_dict({"weight": ember.tensor([2.0, 3.0], dtype=ember.float64), "bias": ember.zeros(2)})
    assert m.weight.dtype == ember.float32 and m.weight.tolist() == [2.0, 3.0]
    w = ember.tensor([4.0, 5.0])
    m.load_state_dict({"weight": w, "bias": ember.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.data_ptr() == w.data_ptr()


def test_load_state_dict_post_hook():
    m = Affine(2)
    seen = []
    h = m.register_load_state_dict_post_hook(lambda mod, keys: seen.append(keys.missing_keys))
    m.load_state_dict({"weight": ember.ones(2)}, strict=False)
    h.remove()
    m.load_state_dict({"weight": ember.ones(2)}, strict=False)
    assert seen == [["bias"]]


def test_extra_state():
    class WithExtra(Affine):
        def get_extra_state(self):
            return {"n": 5}

        def set_extra_state(self, state):
            self.got = state

    m = WithExtra(2)
    sd = m.state_dict()
    assert sd["_extra_state"] == {"n": 5}
    m.load_state_dict(sd)
    assert m.got == {"n": 5}


# ---------------------------------------------------------------- modes, grads, conversion
def test_train_eval():
    m = nn.Sequential(nn.Dropout(), nn.Sequential(nn.Dropout()))
    assert m.training and m[1][0].training
    assert m.eval() is m
    assert not m.training and not m[1][0].training
    m.train()
    assert m[1][0].training


def test_zero_grad_and_requires_grad():
    m = Affine()
    m(ember.ones(3)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert m.weight.grad.tolist() == [0.0, 0.0, 0.0]
    m.zero_grad()
    assert m.weight.grad is None
    assert m.requires_grad_(False) is m
    assert not m.weight.requires_grad and not m.bias.requires_grad


def test_apply_and_to_dtype():
    m = Net()
    visited = []
    m.apply(lambda mod: visited.append(type(mod).__name__))
    assert visited == ["Linear", "ReLU", "Linear", "Net"]
    w = m.fc1.weight
    m.fc1.weight.grad = ember.ones(4, 3)
    m.register_buffer("count", ember.tensor(3))
    assert m.to(ember.float64) is m
    assert m.fc1.weight is w and w.dtype == ember.float64 and isinstance(w, nn.Parameter)
    assert w.grad.dtype == ember.float64
    assert m.count.dtype == ember.int64                  # integer buffers keep their dtype
    assert m.steps.dtype == ember.float64
    m.float()
    assert w.dtype == ember.float32
    m.half()
    assert w.dtype == ember.float16
    m.double()
    assert w.dtype == ember.float64
    m.to("cpu", ember.float32)
    m.to(ember.zeros(1, dtype=ember.float64))
    assert w.dtype == ember.float64 and w.device == ember.device("cpu")
    m.cpu()
    assert m.to(device="cpu", non_blocking=True) is m


def test_share_memory():
    m = Affine()
    if not hasattr(ember.Tensor, "is_shared"):
        pytest.skip("Tensor.is_shared not available yet")
    m.share_memory()
    assert m.weight.is_shared() and isinstance(m.weight, nn.Parameter)


def test_pickle_and_deepcopy_module():
    m = Affine()
    m.weight.data.fill_(2.0)
    c = copy.deepcopy(m)
    assert c.weight is not m.weight and c.weight.tolist() == [2.0] * 3
    assert c._parameters["weight"] is c.weight
    c.weight = nn.Parameter(ember.zeros(3))
    assert m.weight.tolist() == [2.0] * 3                 # the original is untouched
    s = copy.copy(m)
    s.bias = nn.Parameter(ember.ones(3))
    assert m.bias.tolist() == [0.0] * 3
    r = pickle.loads(pickle.dumps(m))
    assert isinstance(r.weight, nn.Parameter) and r.weight.requires_grad and r.weight.tolist() == [2.0] * 3
    assert r._parameters["weight"] is r.weight
    r.bias = nn.Parameter(ember.ones(3))              # the rebuilt dicts are bound to the new module
    assert r._parameters["bias"] is r.bias and m.bias.tolist() == [0.0] * 3


# ---------------------------------------------------------------- hooks
def test_forward_hooks():
    m = Affine()
    calls = []

    def pre(mod, args):
        calls.append("pre")
        return (args[0] * 2,)

    def post(mod, args, out):
        calls.append("post")
        return out + 1

    h1 = m.register_forward_pre_hook(pre)
    h2 = m.register_forward_hook(post)
    assert m(ember.ones(3)).tolist() == [3.0, 3.0, 3.0]
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    h2.remove()                                           # a second remove does nothing
    assert m(ember.ones(3)).tolist() == [1.0, 1.0, 1.0]
    assert not m._forward_hooks and not m._forward_pre_hooks


def test_forward_hooks_kwargs_prepend_and_single_value():
    class Scale(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 3.0}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs), with_kwargs=True)
    assert m(ember.ones(1)).item() == 3.0 and seen == [{"scale": 3.0}]
    order = []
    m2 = Affine()
    m2.register_forward_pre_hook(lambda mod, a: order.append(1))
    m2.register_forward_pre_hook(lambda mod, a: order.append(0), prepend=True)
    m2.register_forward_pre_hook(lambda mod, a: ember.zeros(3))          # a non-tuple becomes (value,)
    assert m2(ember.ones(3)).tolist() == [0.0] * 3 and order == [0, 1]
    bad = Affine()
    bad.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        bad(ember.ones(3))


def test_forward_hook_always_call():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, a, out: seen.append("always"), always_call=True)
    m.register_forward_hook(lambda mod, a, out: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert seen == ["always"]


def test_hook_handle_context_manager():
    m = Affine()
    with m.register_forward_hook(lambda mod, a, o: o * 0):
        assert m(ember.ones(3)).tolist() == [0.0] * 3
    assert m(ember.ones(3)).tolist() == [1.0] * 3


def test_call_and_attribute_reads_take_the_fast_paths(monkeypatch):
    # what keeps a module call cheap, checked structurally (speed itself is benchmarks/bench_nn.py's
    # business, never a timed test): without hooks __call__ goes straight to forward, and parameters
    # are plain instance attributes, read without Module.__getattr__
    m = Affine()
    x = ember.ones(3)

    def slow(*args, **kwargs):
        raise AssertionError("the slow path ran")
    monkeypatch.setattr(nn.Module, "_call_with_hooks", slow)
    monkeypatch.setattr(nn.Module, "__getattr__", slow)
    assert "weight" in m.__dict__ and m.weight is m._parameters["weight"]
    assert m(x).tolist() == m.forward(x).tolist()
    monkeypatch.undo()
    m.register_forward_hook(lambda mod, inp, out: out * 2)     # with a hook, the slow path
    assert m(x).tolist() == [2 * v for v in m.forward(x).tolist()]


# ---------------------------------------------------------------- repr
def test_repr_nested():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU(inplace=True)
            self.seq = nn.Sequential(nn.Tanh(), nn.GELU(approximate="tanh"))

        def extra_repr(self):
            return "custom=1"

    assert repr(Block()) == (
        "Block(\n"
        "  custom=1\n"
        "  (act): ReLU(inplace=True)\n"
        "  (seq): Sequential(\n"
        "    (0): Tanh()\n"
        "    (1): GELU(approximate='tanh')\n"
        "  )\n"
        ")")
    assert repr(nn.Module()) == "Module()"


# ---------------------------------------------------------------- containers
def test_sequential():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    s = nn.Sequential(a, b)
    assert len(s) == 2 and s[0] is a and s[-1] is b
    assert list(s) == [a, b]
    s.append(c)
    assert s[2] is c
    sl = s[1:]
    assert isinstance(sl, nn.Sequential) and list(sl) == [b, c] and list(sl._modules) == ["1", "2"]
    s.insert(0, nn.Identity())
    assert list(s._modules) == ["0", "1", "2", "3"] and s[1] is a
    del s[0]
    assert list(s) == [a, b, c] and list(s._modules) == ["0", "1", "2"]
    s[1] = nn.ELU()
    assert isinstance(s[1], nn.ELU) and s._modules["1"] is s[1]
    s.extend([nn.Identity()])
    assert len(s) == 4
    assert s.pop(3).__class__ is nn.Identity and len(s) == 3
    with pytest.raises(IndexError, match="index 5 is out of range"):
        s[5]
    with pytest.raises(IndexError, match="Index out of range: 9"):
        s.insert(9, nn.ReLU())
    named = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert named.first is a and list(named._modules) == ["first", "second"]
    assert len(s + named) == 5 and len(named * 2) == 4
    x = ember.tensor([-1.0, 2.0])
    out = nn.Sequential(nn.ReLU(), Affine(2))(x)
    assert out.tolist() == [0.0, 2.0]


def test_module_list():
    ml = nn.ModuleList([Affine(1), Affine(1)])
    assert len(ml) == 2 and len(list(ml.parameters())) == 4
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml.insert(0, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["Identity", "Affine", "Affine", "ReLU", "Tanh"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    ml += [nn.ReLU()]
    assert len(ml) == 5
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.ReLU(), nn.Tanh()])) == (
        "ModuleList(\n  (0-2): 3 x ReLU()\n  (3): Tanh()\n)")


def test_module_dict():
    md = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    md["c"] = nn.Sigmoid()
    assert isinstance(md.c, nn.Sigmoid)
    assert isinstance(md.pop("a"), nn.ReLU) and list(md) == ["b", "c"]
    md.update([("d", nn.Identity())])
    assert list(md.keys()) == ["b", "c", "d"]
    md.clear()
    assert len(md) == 0
    assert repr(nn.ModuleDict({"a": nn.ReLU()})) == "ModuleDict(\n  (a): ReLU()\n)"


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(ember.ones(2, 3)), ember.zeros(1)])
    assert len(pl) == 2 and isinstance(pl[1], nn.Parameter)
    assert len(list(pl.parameters())) == 2
    assert repr(pl) == ("ParameterList(\n    (0): Parameter containing: [ember.float32 of size 2x3]\n"
                        "    (1): Parameter containing: [ember.float32 of size 1]\n)")
    pd = nn.ParameterDict({"w": ember.ones(2)})
    pd["v"] = nn.Parameter(ember.zeros(1))
    assert list(pd.keys()) == ["w", "v"] and isinstance(pd["w"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["w", "v"]


# ---------------------------------------------------------------- against PyTorch
def test_state_dict_keys_match_torch():
    torch = pytest.importorskip("torch")
    if not hasattr(nn.functional, "linear"):
        pytest.skip("F.linear not available yet")

    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(),
                                 lib.nn.ModuleList([lib.nn.Linear(4, 2, bias=False)]))

    e, t = build(ember), build(torch)
    assert list(e.state_dict()) == list(t.state_dict())
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert repr(e) == repr(t)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    for k, v in e.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), t.state_dict()[k].numpy())


def test_parameterdict_popitem_on_empty_raises_keyerror():
    pd = nn.ParameterDict({"w": ember.ones(2)})
    assert pd.popitem()[0] == "w"
    with pytest.raises(KeyError, match="popitem\\(\\): dictionary is empty"):
        pd.popitem()
