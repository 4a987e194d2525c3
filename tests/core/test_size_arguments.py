"""Sizes as varargs, as one sequence and as the ``size=`` / ``dims=`` keyword, in the factories and the
methods that take them, side by side with PyTorch (shapes, values, exception classes)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _run(m, f):
    try:
        r = f(m)
    except Exception as exc:     # noqa: BLE001 - compared with PyTorch's class
        return type(exc).__name__
    if isinstance(r, (ember.Size, torch.Size)):
        return tuple(r)
    return tuple(r.shape), str(r.dtype).split(".")[1], r.detach().double().numpy().round(6).tolist()


def _same(f):
    e, t = _run(ember, f), _run(torch, f)
    assert e == t, (e, t)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("form", ["varargs", "tuple", "list", "Size", "size=", "size=list", "size=Size", "none",
                                  "both", "0-dim", "size=int", "dtype"])
def test_factory_size_forms(name, form):
    call = {"varargs": lambda f, m: f(2, 3), "tuple": lambda f, m: f((2, 3)), "list": lambda f, m: f([2, 3]),
            "Size": lambda f, m: f(m.Size([2, 3])), "size=": lambda f, m: f(size=(2, 3)),
            "size=list": lambda f, m: f(size=[2, 3]), "size=Size": lambda f, m: f(size=m.Size([4])),
            "none": lambda f, m: f(), "both": lambda f, m: f(2, size=(2, 3)), "0-dim": lambda f, m: f(()),
            "size=int": lambda f, m: f(size=2), "dtype": lambda f, m: f(2, 3, dtype=m.float64)}[form]

    def shape_only(m):
        r = call(getattr(m, name), m)
        return r.shape if name in ("empty", "rand", "randn") else r
    _same(shape_only)


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
@pytest.mark.parametrize("form", ["varargs", "tuple", "int", "size=", "size=int", "none", "dtype", "both"])
def test_new_factory_size_forms(name, form):
    call = {"varargs": lambda f, m: f(2, 3), "tuple": lambda f, m: f((2, 3)), "int": lambda f, m: f(4),
            "size=": lambda f, m: f(size=(2, 3)), "size=int": lambda f, m: f(size=2), "none": lambda f, m: f(),
            "dtype": lambda f, m: f(2, 3, dtype=m.int32), "both": lambda f, m: f(2, size=(3,))}[form]

    def run(m):
        r = call(getattr(m.ones(1, dtype=m.float16), name), m)
        return r if name != "new_empty" else m.zeros(r.shape, dtype=r.dtype)   # uninitialised: shape, dtype
    _same(run)


def test_new_full_size_keyword():
    _same(lambda m: m.ones(1).new_full(size=(2, 3), fill_value=2.5))
    _same(lambda m: m.ones(1).new_full((2,), 7, dtype=m.int64))


def _x(m):
    return m.arange(24.0).reshape(2, 3, 4)


METHOD_CASES = [
    ("view", (6, 4), {}), ("view", ((6, 4),), {}), ("view", ([6, 4],), {}), ("view", (2, -1), {}),
    ("view", (), {"size": (6, 4)}), ("view", (), {}), ("view", (6,), {"size": (6, 4)}), ("view", (), {"shape": (24,)}),
    ("view", (2.0, 12), {}), ("reshape", (6, 4), {}), ("reshape", ((6, 4),), {}), ("reshape", ([6, 4],), {}),
    ("reshape", (), {"shape": (6, 4)}), ("reshape", (), {"shape": 24}), ("reshape", (), {}), ("reshape", (-1,), {}),
    ("expand", (2, 2, 3, 4), {}), ("expand", ((2, 2, 3, 4),), {}), ("expand", (), {"size": (2, 2, 3, 4)}),
    ("expand", (), {"size": 4}), ("expand", (), {}), ("expand", (2, (3, 4)), {}),
    ("repeat", (1, 2, 1), {}), ("repeat", ((1, 2, 1),), {}), ("repeat", ([1, 2, 1],), {}),
    ("repeat", (), {"repeats": (1, 2, 1)}), ("repeat", (), {"repeats": 2}), ("repeat", (), {}),
    ("repeat", (1, 2.0, 1), {}), ("permute", (2, 0, 1), {}), ("permute", ((2, 0, 1),), {}),
    ("permute", ([2, 0, 1],), {}), ("permute", (), {"dims": (2, 0, 1)}), ("permute", (), {}),
    ("permute", ((0, 1, 2), 1), {}), ("tile", (2,), {}), ("tile", ((2,),), {}), ("tile", (2, 1), {}),
    ("tile", (), {"dims": (2,)}), ("tile", (), {"dims": 2}), ("tile", (), {}), ("flip", (1,), {}), ("flip", (0, 1), {}),
    ("flip", ((0, 1),), {}), ("flip", ([0, 2],), {}), ("flip", (), {"dims": (0,)}), ("flip", (), {"dims": 0}),
    ("flip", (), {}), ("flip", (0, 0), {}), ("flip", (0.5,), {}), ("flip", (3,), {}), ("roll", (1,), {}),
    ("roll", (1, 1), {}), ("roll", ((1, 2), (0, 1)), {}), ("roll", (), {"shifts": 1, "dims": 0}),
]


@pytest.mark.parametrize("meth,args,kwargs", METHOD_CASES,
                         ids=[f"{m}{a}{k or ''}" for m, a, k in METHOD_CASES])
def test_method_size_forms(meth, args, kwargs):
    _same(lambda m: getattr(_x(m), meth)(*args, **kwargs))


def test_method_forms_record_gradients():
    for m in (ember, torch):
        x = m.arange(6.0).reshape(2, 3).requires_grad_()
        w = m.arange(24.0).reshape(2, 3, 4)
        y = x.flip(0, 1).tile(2, 1).view(2, 2, 3).permute(2, 0, 1).expand(2, 3, 2, 2).reshape(24)
        (y * w.reshape(24)).sum().backward()
        if m is ember:
            got = x.grad.numpy()
        else:
            np.testing.assert_allclose(got, x.grad.numpy())


def test_zero_dim_permute_takes_an_empty_tuple():
    for m in (ember, torch):
        assert m.ones(()).permute(()).shape == () and m.ones(()).view(()).shape == ()
    assert ember.ones(()).T.shape == ()
