"""``ember.func`` against ``torch.func`` side by side: the same programs (written once, run with
``lib = ember`` and ``lib = torch``) give the same values, shapes, output structures and exception
classes / messages: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap (in_dims / out_dims,
nested, closures, randomness) and functional_call.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.func

torch = pytest.importorskip("torch")
import torch.func  # noqa: E402

LIBS = [ember, torch]


def _np(r):
    """Nested structure of numpy arrays (tensors -> arrays, containers kept)."""
    if isinstance(r, (tuple, list)):
        return type(r)(_np(x) for x in r)
    if isinstance(r, dict):
        return {k: _np(v) for k, v in r.items()}
    if isinstance(r, (ember.Tensor, torch.Tensor)):
        return np.array(r.detach().tolist(), dtype=np.float64)
    return r


def _same(a, b, rtol=1e-10, atol=1e-12):
    a, b = _np(a), _np(b)
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, rtol, atol)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k], rtol, atol)
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    else:
        assert a == b


def _both(program):
    """Run ``program(lib)`` with ember and torch; return both results."""
    return program(ember), program(torch)


def _t(lib, shape, seed=0):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=lib.float64)


def _errors(program):
    got = []
    for lib in LIBS:
        with pytest.raises(Exception) as info:
            program(lib)
        got.append(info.value)
    assert type(got[0]) is type(got[1]), (got[0], got[1])
    return [str(e) for e in got]


# ----------------------------------------------------------------------------- grad & co

def _loss(lib):
    def f(x, w, scale=1.0):
        return (lib.tanh(x @ w).square().sum() + (x * x).sum()) * scale
    return f


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,), -1])
def test_grad_and_value_argnums(argnums):
    _same(*_both(lambda lib: lib.func.grad_and_value(_loss(lib), argnums=argnums)(_t(lib, (3, 4)), _t(lib, (4, 2), 1),
                                                                                   scale=0.5)))


def test_grad_has_aux_pytree_inputs_and_nesting():
    def prog(lib):
        def f(d):
            y = (d["a"].sin() * d["b"][0]).sum() + d["b"][1].cos().sum()
            return y, {"y": y, "n": (d["a"] * 2,)}
        g, aux = lib.func.grad(f, has_aux=True)({"a": _t(lib, (3,)), "b": (_t(lib, (3,), 1), _t(lib, (2,), 2))})
        gg = lib.func.grad(lib.func.grad(lambda x: x.sin() * x.exp()))(_t(lib, ()))
        ggg = lib.func.grad(lambda x: lib.func.grad(lambda y: (y ** 3).sum())(x).sum())(_t(lib, (2,)))
        return g, aux, gg, ggg
    _same(*_both(prog))


def test_grad_results_do_not_require_grad_unless_outside_tensors_do():
    for lib in LIBS:
        x = _t(lib, (3,))
        assert not lib.func.grad(lambda x: x.sin().sum())(x).requires_grad
        w = _t(lib, (3,)).requires_grad_(True)
        g = lib.func.grad(lambda x: (x.sin() * w).sum())(x)            # closes over a tensor requiring grad
        assert g.requires_grad
        gw, = lib.autograd.grad(g.sum(), [w])
        np.testing.assert_allclose(_np(gw), np.cos(_np(x)))


def test_grad_errors_as_torch():
    x = lambda lib: lib.ones(3)  # noqa: E731
    m = _errors(lambda lib: lib.func.grad(lambda x: x)(x(lib)))
    assert m[0] == m[1].replace("torch", "ember")
    m = _errors(lambda lib: lib.func.grad(lambda x: 1.0)(x(lib)))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.grad(lambda x: x.sum(), has_aux=True)(x(lib)))
    assert m[0] == m[1]
    for bad in (3, 1.5, ()):
        m = _errors(lambda lib: lib.func.grad(lambda x: x.sum(), argnums=bad)(x(lib)))
        assert m[0] == m[1]


# ----------------------------------------------------------------------------- vjp / jvp

def test_vjp_structures_aux_and_repeated_calls():
    def prog(lib):
        f = lambda x, y: ({"s": (x * y).sin(), "t": (x.exp(), y.sum())}, x.sum())  # noqa: E731
        out, fn, aux = lib.func.vjp(f, _t(lib, (3,)), _t(lib, (3,), 1), has_aux=True)
        cot = {"s": _t(lib, (3,), 2), "t": (_t(lib, (3,), 3), _t(lib, (), 4))}
        return out, aux, fn(cot), fn(cot)
    _same(*_both(prog))


def test_vjp_errors_as_torch():
    m = _errors(lambda lib: lib.func.vjp(lambda x: x, lib.ones(3))[1](lib.ones(2)))
    assert m[0] == m[1].replace("torch", "ember")
    m = _errors(lambda lib: lib.func.vjp(lambda x: (x, x), lib.ones(3))[1](lib.ones(3)))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.vjp(lambda x: 3, lib.ones(3)))
    assert m[0] == m[1]


def test_jvp_values_and_aux():
    def prog(lib):
        def f(x, y):
            return (x @ y).tanh(), {"aux": x.sum()}
        x, y = _t(lib, (2, 3)), _t(lib, (3, 4), 1)
        out, t, aux = lib.func.jvp(f, (x, y), (_t(lib, (2, 3), 2), _t(lib, (3, 4), 3)), has_aux=True)
        return out, t, aux, lib.func.jvp(lambda x: (x.sin(), x.cos().sum()), (x,), (lib.ones_like(x),))
    _same(*_both(prog))


def test_jvp_errors_as_torch():
    x = lambda lib: lib.ones(3)  # noqa: E731
    m = _errors(lambda lib: lib.func.jvp(lambda x: x, [x(lib)], [x(lib)]))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.jvp(lambda x: x, (x(lib),), (lib.ones(2),)))
    assert m[0] == m[1]
    _errors(lambda lib: lib.func.jvp(lambda x: x, (x(lib),), (x(lib), x(lib))))


# ----------------------------------------------------------------------------- Jacobians

@pytest.mark.parametrize("which", ["jacrev", "jacfwd"])
def test_jacobians(which):
    def prog(lib):
        jac = getattr(lib.func, which)
        f = lambda x, y: {"a": (x[:, None] * y).sin(), "b": x.sum() * y}  # noqa: E731
        x, y = _t(lib, (3,)), _t(lib, (2,), 1)
        return (jac(f)(x, y), jac(f, argnums=(0, 1))(x, y),
                jac(lambda x: (x.exp(), x.sum()), has_aux=True)(x),
                jac(lambda m: m @ m.T)(_t(lib, (2, 3), 2)))
    _same(*_both(prog))


def test_hessian_and_jacobian_of_mlp():
    def prog(lib):
        w1, w2 = _t(lib, (4, 3), 1), _t(lib, (2, 4), 2)
        f = lambda x: (lib.tanh(x @ w1.T) @ w2.T).sin().sum()  # noqa: E731
        x = _t(lib, (3,))
        return lib.func.hessian(f)(x), lib.func.jacrev(lib.func.jacrev(f))(x), lib.func.jacfwd(lib.func.jacfwd(f))(x)
    _same(*_both(prog))


# ----------------------------------------------------------------------------- vmap

def test_vmap_in_dims_out_dims_and_closures():
    def prog(lib):
        w = _t(lib, (4, 3), 5)
        f = lambda x, b: (w @ x + b, x.sum())  # noqa: E731
        xs = _t(lib, (3, 6))                 # batch along dim 1
        r1 = lib.func.vmap(f, in_dims=(1, None))(xs, _t(lib, (4,), 1))
        r2 = lib.func.vmap(f, in_dims=(1, None), out_dims=(1, 0))(xs, _t(lib, (4,), 1))
        r3 = lib.func.vmap(lambda d: d["a"] * d["b"], in_dims=({"a": 0, "b": None},))(
            {"a": _t(lib, (5, 2)), "b": _t(lib, (2,), 2)})
        r4 = lib.func.vmap(lib.dot)(_t(lib, (5, 3)), _t(lib, (5, 3), 3))
        r5 = lib.func.vmap(lambda x: x.sum(), in_dims=-1)(_t(lib, (2, 4)))
        r6 = lib.func.vmap(lambda x, n: x * n, in_dims=(0, None))(_t(lib, (3, 2)), 2)
        return r1, r2, r3, r4, r5, r6
    _same(*_both(prog))


def test_vmap_nested_and_with_grad():
    def prog(lib):
        a, b = _t(lib, (3, 4)), _t(lib, (5, 4), 1)
        outer = lib.func.vmap(lib.func.vmap(lambda u, v: (u * v).sum(), in_dims=(None, 0)), in_dims=(0, None))(a, b)
        w = _t(lib, (4,), 2)
        per_sample = lib.func.vmap(lib.func.grad(lambda w, x: lib.tanh(x @ w) ** 2), in_dims=(None, 0))(w, b)
        jac = lib.func.vmap(lib.func.jacrev(lib.sin))(a)
        return outer, per_sample, jac
    _same(*_both(prog))


def test_vmap_errors_as_torch():
    m = _errors(lambda lib: lib.func.vmap(lambda a, b: a + b)(lib.ones(2, 3), lib.ones(3, 3)))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.vmap(lib.sin)(lib.tensor(1.0)))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.vmap(lambda x: x, in_dims=(0, 0))(lib.ones(2)))
    m = _errors(lambda lib: lib.func.vmap(lambda x, n: x, in_dims=(0, 0))(lib.ones(2), 3))
    assert m[0].split("<inputs>")[1] == m[1].split("<inputs>")[1]
    m = _errors(lambda lib: lib.func.vmap(lambda x: 3)(lib.ones(2)))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.vmap(lambda x: x, in_dims=None)(lib.ones(2)))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.vmap(lambda x: x)())
    m = _errors(lambda lib: lib.func.grad(lambda x: (x.sum(), 3), has_aux=True)(lib.ones(2)))
    assert m[0] == m[1]
    m = _errors(lambda lib: lib.func.vmap(lib.sin, randomness="x")(lib.ones(2)))
    assert m[0] == m[1]


def test_vmap_randomness():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
            lib.func.vmap(lambda x: x + lib.rand(2))(lib.ones(3, 2))
        with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
            lib.func.vmap(lambda x: lib.nn.functional.dropout(x, 0.5, True))(lib.ones(3, 2))
        lib.manual_seed(0)
        same = lib.func.vmap(lambda x: x + lib.rand(4), randomness="same")(lib.zeros(3, 4))
        assert all(lib.equal(same[0], same[i]) for i in range(3))
        diff = lib.func.vmap(lambda x: x + lib.rand(4), randomness="different")(lib.zeros(3, 4))
        assert not lib.equal(diff[0], diff[1])
        lib.rand(2)                                   # random ops work again after vmap


# ----------------------------------------------------------------------------- functional_call

def test_functional_call_matches_torch_and_restores_the_module():
    def prog(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2)).double()
        m.eval()
        rng = np.random.default_rng(0)
        params = {k: lib.tensor(rng.standard_normal(tuple(v.shape)), dtype=lib.float64)
                  for k, v in m.named_parameters()}
        bufs = {"1.running_mean": lib.tensor(rng.standard_normal(4), dtype=lib.float64)}
        x = _t(lib, (5, 3))
        before = [p.detach().clone() for p in m.parameters()]
        y = lib.func.functional_call(m, (params, bufs), (x,))
        y1 = lib.func.functional_call(m, params, x)
        after = [p for p in m.parameters()]
        assert all(lib.equal(a, b) for a, b in zip(before, after))
        assert isinstance(m[0].weight, lib.nn.Parameter)
        # gradients of a loss with respect to the dict of parameters
        g = lib.func.grad(lambda p: lib.func.functional_call(m, p, (x,)).square().sum())(params)
        return y, y1, g
    e, t = _both(prog)
    _same(e[:2], t[:2])
    _same(e[2], t[2])


def test_functional_call_errors_and_tied_weights():
    for lib in LIBS:
        lin = lib.nn.Linear(2, 2)
        with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
            lib.func.functional_call(lin, ({"bias": lib.zeros(2)}, {"bias": lib.zeros(2)}), (lib.ones(2),))
        with pytest.raises(RuntimeError, match="Missing key"):
            lib.func.functional_call(lin, {"bias": lib.zeros(2)}, (lib.ones(2),), strict=True)
        m = lib.nn.Sequential(lin, lib.nn.Linear(2, 2))
        m[1].weight = m[0].weight                                   # tied
        y = lib.func.functional_call(m, {"0.weight": lib.zeros(2, 2)}, (lib.ones(2),))
        expected = m[1].bias.detach()                               # both weights replaced by zeros
        np.testing.assert_allclose(_np(y), _np(expected))


# ----------------------------------------------------------------------------- autograd.functional

@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_autograd_functional_matches_torch(name):
    def prog(lib):
        F = lib.autograd.functional
        x, y = _t(lib, (3,)), _t(lib, (3,), 1)
        v = _t(lib, (3,), 2)
        if name == "jacobian":
            return F.jacobian(lambda a, b: (a * b.exp(), a.sum()), (x, y))
        f = lambda a, b: (a.sin() * b).sum()  # noqa: E731
        if name == "hessian":
            return F.hessian(f, (x, y))
        if name == "vjp":
            return F.vjp(lambda a: a.sin() * 2, x, v)
        if name == "jvp":
            return F.jvp(lambda a: a.sin() * 2, x, v)
        return getattr(F, name)(f, (x, y), (v, v))
    _same(*_both(prog))


def test_per_sample_gradients_recipe():
    # torch.func's tutorial recipe, unchanged under ``import ember as torch``
    def prog(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3)).double()
        rng = np.random.default_rng(3)
        params = {k: lib.tensor(rng.standard_normal(tuple(v.shape)), dtype=lib.float64)
                  for k, v in model.named_parameters()}
        x, y = _t(lib, (6, 4)), lib.tensor([0, 2, 1, 1, 0, 2])

        def loss(p, xi, yi):
            out = lib.func.functional_call(model, p, (xi.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, yi.unsqueeze(0))
        return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    _same(*_both(prog))
