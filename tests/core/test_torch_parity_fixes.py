"""Side-by-side checks against PyTorch for ops ember already had but got wrong (issue 18,
part 7): each test runs the same expression under ``torch`` and ``ember`` and compares
values, dtypes, shapes, gradients and exception classes."""
import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def run(fn):
    """fn(module) under torch and ember: (value or exception, value or exception)."""
    out = []
    for m in (torch, ember):
        try:
            out.append(fn(m))
        except Exception as e:   # noqa: BLE001 - the exception class is what is compared
            out.append(e)
    return out


def same(a, b, *, exact_dtype=True, atol=1e-6, rtol=1e-5):
    """Recursively compare a torch result with an ember result."""
    if isinstance(a, BaseException) or isinstance(b, BaseException):
        assert type(a) is type(b), f"torch: {a!r}  ember: {b!r}"
        return
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y, exact_dtype=exact_dtype, atol=atol, rtol=rtol)
        return
    if a is None or b is None:
        assert a is None and b is None, f"torch: {a!r}  ember: {b!r}"
        return
    if isinstance(a, torch.Tensor):
        assert isinstance(b, ember.Tensor), b
        assert tuple(a.shape) == tuple(b.shape)
        if exact_dtype:
            assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
        if a.dtype == torch.bfloat16:
            a, b = a.float(), b.float()
        np.testing.assert_allclose(b.detach().cpu().numpy(), a.detach().numpy(), atol=atol, rtol=rtol, equal_nan=True)
        return
    if isinstance(a, torch.dtype):
        assert str(a).split(".")[1] == str(b).split(".")[1]
        return
    assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), (a, b)


def check(fn, **kw):
    a, b = run(fn)
    same(a, b, **kw)
    return a, b


# ----------------------------------------------------------------------------- 1. cosine_similarity
def test_cosine_similarity_broadcasts_before_normalising():
    rs = np.random.RandomState(0)
    a, b = rs.randn(1, 2, 3).astype("float32"), rs.randn(2, 1, 3).astype("float32")

    def f(m):
        x1, x2 = m.tensor(a, requires_grad=True), m.tensor(b, requires_grad=True)
        r = m.nn.functional.cosine_similarity(x1, x2, dim=-2)
        (r * m.arange(6.0).reshape(2, 3)).sum().backward()
        return r, x1.grad, x2.grad

    t, e = check(f, atol=1e-5)
    assert float(e[0].abs().max()) <= 1.0


@pytest.mark.parametrize("dt1,dt2", [("int64", "float32"), ("int64", "int64"), ("float64", "float32")])
def test_cosine_similarity_dtypes(dt1, dt2):
    check(lambda m: m.nn.functional.cosine_similarity(m.tensor([[1, 2, 3]], dtype=getattr(m, dt1)),
                                                      m.tensor([[1, 0, 1]], dtype=getattr(m, dt2))))


def test_cosine_similarity_eps_gradient():
    # the eps clamp happens outside autograd in torch: the norm's gradient flows unclamped
    def f(m):
        x = m.tensor([[1e-10, 0.0], [1.0, 2.0]], requires_grad=True)
        y = m.tensor([[1.0, 1.0]], requires_grad=True)
        m.nn.functional.cosine_similarity(x, y, dim=1).sum().backward()
        z = m.zeros(2, 3, requires_grad=True)
        m.nn.functional.cosine_similarity(z, m.ones(2, 3)).sum().backward()
        return x.grad, y.grad, z.grad

    check(f, rtol=1e-4)


# ----------------------------------------------------------------------------- 2. masked_fill / index_fill value grad
@pytest.mark.parametrize("inplace", [False, True])
def test_masked_fill_value_tensor_gets_gradient(inplace):
    def f(m):
        v = m.tensor(2.0, dtype=m.float64, requires_grad=True)
        x = m.zeros(2, 3, requires_grad=True)
        mask = m.tensor([True, False, True])
        y = (x * 1).masked_fill_(mask, v) if inplace else (x * 1).masked_fill(mask, v)
        (y * m.arange(6.0).reshape(2, 3)).sum().backward()
        return y, v.grad, x.grad

    check(f)


def test_masked_fill_value_grad_broadcast_mask():
    def f(m):
        v = m.tensor(2.0, requires_grad=True)
        x = m.zeros(2, 1, requires_grad=True)
        y = x.masked_fill(m.tensor([True, False, True]), v)
        (y * m.arange(6.0).reshape(2, 3)).sum().backward()
        return y, v.grad, x.grad

    check(f)


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("dim,idx", [(0, [0, 2]), (1, [1]), (-1, [0, 1]), (0, [5])])
def test_index_fill_value_tensor_gets_gradient(inplace, dim, idx):
    def f(m):
        v = m.tensor(2.0, requires_grad=True)
        x = m.zeros(3, 2, requires_grad=True)
        i = m.tensor(idx)
        y = (x * 1).index_fill_(dim, i, v) if inplace else (x * 1).index_fill(dim, i, v)
        (y * m.arange(6.0).reshape(3, 2)).sum().backward()
        return y, v.grad, x.grad

    check(f)


def test_index_fill_value_grad_0dim_self():
    def f(m):
        v = m.tensor(2.0, requires_grad=True)
        x = m.tensor(1.0, requires_grad=True)
        y = x.index_fill(0, m.tensor([0]), v)
        y.backward()
        return y, v.grad, x.grad

    check(f)


# ----------------------------------------------------------------------------- 3. circular pad, negative amounts
@pytest.mark.parametrize("shape,pad", [
    ((1, 2, 4), (-1, 2)), ((1, 2, 4), (-2, -2)), ((1, 2, 4), (-3, -2)), ((1, 2, 4), (-2, 1)), ((1, 2, 4), (1, -3)),
    ((1, 2, 4), (-1, -1)), ((1, 2, 4), (2, -1)), ((1, 2, 4), (5, 0)), ((1, 2, 3, 4), (-1, 2, 1, -2)),
    ((2, 3, 4), (1, -1, -1, 2)), ((1, 1, 2, 3, 4), (-1, 1, 1, -1, 0, 2))])
def test_pad_circular_negative(shape, pad):
    def f(m):
        x = m.arange(float(np.prod(shape))).reshape(shape).requires_grad_()
        y = m.nn.functional.pad(x, pad, mode="circular")
        (y * m.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return y, x.grad

    check(f)


# ----------------------------------------------------------------------------- 4. hinge_embedding_loss
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("target", [[1.0, -1.0, 0.0, 2.0, -3.0], [1, -1, 1, 5, 0]])
def test_hinge_embedding_loss_targets_outside_pm1(reduction, target):
    def f(m):
        x = m.tensor([0.5, 2.0, -1.0, 3.0, 0.25], requires_grad=True)
        loss = m.nn.functional.hinge_embedding_loss(x, m.tensor(target), margin=1.5, reduction=reduction)
        loss.sum().backward()
        return loss, x.grad

    check(f)


# ----------------------------------------------------------------------------- 5. arange / linspace / logspace
@pytest.mark.parametrize("args,dt", [
    ((0.5, 5.7), "int64"), ((-2.5, 3.9, 0.7), "int32"), ((0.5, 5.7, 0.5), "int64"), ((0.5, 5.7, 0.5), "int32"),
    ((0.5, 5.7, 1.5), "int64"), ((0.5, 5.7, 1.5), "int16"), ((5.7, 0.5, -1.5), "int64"), ((5.7, -0.5, -1.5), "int64"),
    ((-0.5, 5.7), "uint8"), ((0.5, 5.7), "bool"), ((2.9, 0.5, -1), "int64"), ((0.9,), "int64"),
    ((0.5, 3.5, 1), "float32"), ((-2.5, 3.9, 0.7), "int64"), ((3, 1, 1), "int64"), ((0.2, 0.9, 1), "int64"),
    ((-0.5, 0.2, 1), "int64"), ((0.0, 5.0, 1.0), "int8"), ((0, 7, 2), "int64"), ((7.5, 0, -2), "int8")])
def test_arange_float_bounds_integer_dtype(args, dt):
    check(lambda m: m.arange(*args, dtype=getattr(m, dt)))


@pytest.mark.parametrize("fn", ["linspace", "logspace"])
@pytest.mark.parametrize("args,dt", [
    ((0.5, 5.7, 5), "int64"), ((-0.5, 5.7, 5), "int32"), ((5.7, 0.5, 4), "int64"), ((0.5, 5.7, 1), "int64"),
    ((0.5, 5.7, 5), "uint8"), ((0.5, 5.7, 5), "bool"), ((-3.9, 3.9, 7), "int64"), ((0.5, 1.0, 3), "int64"),
    ((0.5, 2.7, 5), "float64"), ((0, 1, 0), "int64")])
def test_space_float_bounds_integer_dtype(fn, args, dt):
    check(lambda m: getattr(m, fn)(*args, dtype=getattr(m, dt)))
    check(lambda m: getattr(m, fn)(*args, base=2, dtype=getattr(m, dt)) if fn == "logspace" else m.tensor(0))


@pytest.mark.parametrize("fn", ["linspace", "logspace"])
@pytest.mark.parametrize("bounds", [(0.5, 2.0), (1, 5), (-1.5, 2)])
def test_space_0dim_tensor_bounds(fn, bounds):
    check(lambda m: getattr(m, fn)(m.tensor(bounds[0]), m.tensor(bounds[1]), 4))
    check(lambda m: getattr(m, fn)(m.tensor(bounds[0]), bounds[1], 4, dtype=m.float64))
    check(lambda m: getattr(m, fn)(bounds[0], m.tensor(bounds[1], requires_grad=isinstance(bounds[1], float)), 3))


@pytest.mark.parametrize("fn", ["linspace", "logspace"])
def test_space_errors(fn):
    check(lambda m: getattr(m, fn)(m.ones(2), 1, 3))
    check(lambda m: getattr(m, fn)(0, m.ones(1, 1), 3))
    check(lambda m: getattr(m, fn)(0, 1, -1))
    check(lambda m: getattr(m, fn)(0, 1, 2.5))


# ----------------------------------------------------------------------------- 6. addr on bool (and its scalar checks)
_ADDR_KW = [{}, {"beta": 0}, {"beta": False}, {"alpha": False}, {"beta": 2}, {"alpha": 2}, {"alpha": 0.5},
            {"beta": 1.5}, {"alpha": True}, {"beta": 1j}]


@pytest.mark.parametrize("kw", _ADDR_KW)
@pytest.mark.parametrize("dts", [("bool", "bool", "bool"), ("int64", "int64", "int64"), ("int64", "bool", "bool"),
                                 ("bool", "int64", "int64"), ("bool", "bool", "float32"), ("float32", "int64", "int64")])
def test_addr_dtypes_and_scalars(kw, dts):
    def f(m):
        a = m.tensor([[True, False], [False, False]]).to(getattr(m, dts[0]))
        v1 = m.tensor([True, False]).to(getattr(m, dts[1]))
        v2 = m.tensor([False, True]).to(getattr(m, dts[2]))
        return m.addr(a, v1, v2, **kw), m.addr(a, v1, v2, out=m.empty(2, 2, dtype=a.dtype), **kw)

    check(f)


@pytest.mark.parametrize("self_shape,dt", [((2,), "float32"), ((2, 2), "int64"), ((2, 2), "float64"), ((1, 2), "float32"),
                                           ((2, 2), "bool")])
def test_addr_inplace(self_shape, dt):
    def f(m):
        s = m.ones(self_shape, dtype=getattr(m, dt))
        r = s.addr_(m.tensor([1, 0]).to(s.dtype), m.tensor([1, 3]).to(s.dtype if dt != "float64" else m.float32))
        return r is s, s

    check(f)


# ----------------------------------------------------------------------------- 7. prelu / unfold on 0-dim input
@pytest.mark.parametrize("x,w", [((), (1,)), ((), ()), ((), (2,)), ((3,), (1,)), ((3,), (3,)), ((3,), (2,)),
                                 ((2, 3), (3,)), ((2, 3, 4), (3,)), ((2, 3, 4), (4,)), ((2, 3), (1, 1)),
                                 ((2, 3), (3, 1)), ((2, 3), ())])
def test_prelu_shapes(x, w):
    def f(m):
        a = (m.arange(float(np.prod(x))).reshape(x) - 2).requires_grad_()
        b = m.full(w, 0.25, requires_grad=True)
        r = m.nn.functional.prelu(a, b)
        r.sum().backward()
        return r, a.grad, b.grad

    check(f)


def test_prelu_dtype_mismatch():
    check(lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(1, dtype=m.float64)))


@pytest.mark.parametrize("args", [(0, 1, 1), (0, 1, 2), (-1, 1, 1), (1, 1, 1), (0, 0, 1), (0, 1, 0), (0, 2, 1),
                                  (0, 1, -1), (0, -1, 1), (-2, 1, 1)])
def test_unfold_0dim(args):
    def f(m):
        x = m.tensor(3.0, requires_grad=True)
        r = x.unfold(*args)
        (r * 2).sum().backward()
        return r, r.stride(), x.grad

    check(f)


@pytest.mark.parametrize("args", [(0, 0, 1), (0, 1, 0), (0, 5, 1), (1, 1, 1), (0, 1, -1), (0, -1, 1), (0, 2, 3)])
def test_unfold_1dim_errors(args):
    check(lambda m: (lambda r: (r, r.stride()))(m.arange(4.0).unfold(*args)))


# ----------------------------------------------------------------------------- 8. NaN through threshold / shrinks
_SPECIALS = [float("nan"), 0.1, 2.0, -3.0, float("inf"), -float("inf"), 0.5, -0.5]


@pytest.mark.parametrize("fn,kw", [("hardshrink", {}), ("softshrink", {}), ("softshrink", {"lambd": -1.0}),
                                   ("softshrink", {"lambd": 0.0}), ("hardshrink", {"lambd": -1.0}),
                                   ("threshold", {"threshold": 0.5, "value": 7.0})])
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "bool", "complex64"])
def test_nan_passes_through(fn, kw, dt):
    def f(m):
        x = m.tensor(_SPECIALS).to(getattr(m, dt))
        if x.is_floating_point():
            x.requires_grad_()
        r = getattr(m.nn.functional, fn)(x, **kw)
        if x.requires_grad:
            r.sum().backward()
            # torch's vectorised float64 kernels give grad 0 at NaN, its scalar ones 1: compare the rest
            return r, x.grad[1:]
        return r

    check(f, atol=1e-2 if dt in ("float16", "bfloat16") else 1e-6)


# ----------------------------------------------------------------------------- 9. integer pools / hardtanh / relu6
_INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8", "bool"]


def _ints(m, shape, dt):
    x = m.arange(int(np.prod(shape))).reshape(shape)
    if dt not in ("uint8", "bool"):
        x = x - 3 * x.numel() // 4
    return x.to(getattr(m, dt))


@pytest.mark.parametrize("dt", _INT_DTYPES + ["float32"])
@pytest.mark.parametrize("fn,shape,args,kw", [
    ("avg_pool1d", (1, 2, 6), (2,), {}), ("avg_pool1d", (1, 2, 6), (4, 2, 2), {"ceil_mode": True}),
    ("avg_pool1d", (1, 2, 6), (4, 2, 2), {"count_include_pad": False}), ("avg_pool2d", (1, 2, 4, 4), (2,), {}),
    ("avg_pool2d", (1, 1, 6, 6), (3, 2, 1), {}), ("avg_pool2d", (1, 1, 6, 6), (3, 2, 1), {"divisor_override": 2}),
    ("avg_pool2d", (1, 1, 6, 6), (3, 2, 1), {"count_include_pad": False}),
    ("adaptive_avg_pool1d", (1, 2, 5), (3,), {}), ("adaptive_avg_pool1d", (1, 2, 5), (1,), {}),
    ("adaptive_avg_pool2d", (1, 2, 4, 4), (2,), {}), ("adaptive_avg_pool2d", (1, 2, 5, 4), (3,), {}),
    ("adaptive_avg_pool2d", (2, 4, 4), (1,), {}), ("adaptive_max_pool2d", (1, 2, 4, 4), (2,), {}),
    ("hardtanh", (2, 5), (), {}), ("hardtanh", (2, 5), (-2.5, 3.5), {}), ("hardtanh", (2, 5), (0.5, 1.5), {}),
    ("hardtanh", (2, 5), (0.0, 3.0), {}), ("relu6", (3, 8), (), {})])
def test_integer_inputs(fn, shape, args, kw, dt):
    check(lambda m: (lambda r: (r.dtype, r))(getattr(m.nn.functional, fn)(_ints(m, shape, dt), *args, **kw)))


@pytest.mark.parametrize("dt", ["int64", "int32", "uint8"])
def test_integer_hardtanh_inplace(dt):
    def f(m):
        x = _ints(m, (2, 5), dt)
        r = m.nn.functional.hardtanh(x, 0.0, 3.5, inplace=True)
        return r is x, x

    check(f)


@pytest.mark.parametrize("fn,shape,osz", [
    ("adaptive_avg_pool1d", (1, 2, 0), 2), ("adaptive_avg_pool1d", (1, 2, 4), 0), ("adaptive_avg_pool1d", (1, 0, 4), 2),
    ("adaptive_avg_pool1d", (4,), 2), ("adaptive_avg_pool1d", (1, 1, 1, 4), 2), ("adaptive_avg_pool1d", (1, 2, 4), -1),
    ("adaptive_avg_pool1d", (1, 2, 0), 1), ("adaptive_avg_pool2d", (1, 2, 0, 4), 2), ("adaptive_avg_pool2d", (1, 2, 4, 4), 0),
    ("adaptive_avg_pool2d", (1, 2, 4, 4), (2, 0)), ("adaptive_avg_pool2d", (1, 2, 4, 4), (None, 0)),
    ("adaptive_avg_pool2d", (0, 2, 4, 4), 2), ("adaptive_avg_pool2d", (0, 4, 4), 2), ("adaptive_avg_pool2d", (1, 0, 4, 4), 2),
    ("adaptive_avg_pool2d", (4, 4), 2), ("adaptive_avg_pool2d", (4, 4), 1), ("adaptive_avg_pool2d", (1, 0, 4), 1),
    ("adaptive_avg_pool2d", (1, 2, 4, 4), -1), ("adaptive_avg_pool2d", (1, 2, 4, 4), (2, 2, 2)),
    ("adaptive_max_pool2d", (1, 2, 0, 4), 2), ("adaptive_max_pool2d", (1, 2, 4, 4), 0), ("adaptive_max_pool2d", (1, 0, 4, 4), 2),
    ("adaptive_max_pool2d", (0, 4, 4), 2), ("adaptive_max_pool2d", (1, 4, 4), (2, 0)), ("adaptive_max_pool2d", (4, 4), 2)])
def test_adaptive_pool_empty_sizes(fn, shape, osz):
    check(lambda m: getattr(m.nn.functional, fn)(m.ones(shape), osz))

    def f(m):
        x = m.ones(shape, requires_grad=True)
        getattr(m.nn.functional, fn)(x, osz).sum().backward()
        return x.grad

    t, e = run(f)
    if isinstance(t, RuntimeError) and "Expected grad_output to have non-zero size" in str(t):
        # PyTorch's backward refuses an empty output; ember's gives the (zero) gradient
        assert not isinstance(e, Exception) and float(e.abs().sum()) == 0.0
    else:
        same(t, e)


# ----------------------------------------------------------------------------- 10. conv dtypes
_CONV_CASES = {
    "c1": lambda m, x, w: m.nn.functional.conv1d(x[..., 0, :], w[..., 0, :], m.ones(3, dtype=x.dtype)),
    "c1dil": lambda m, x, w: m.nn.functional.conv1d(x[..., 0, :], w[..., 0, :], dilation=2),
    "c2": lambda m, x, w: m.nn.functional.conv2d(x, w, stride=2, padding=1),
    "c2same": lambda m, x, w: m.nn.functional.conv2d(x, w, padding="same", dilation=2),
    "c2g": lambda m, x, w: m.nn.functional.conv2d(x, w[:2, :1], groups=2),
    "ct2": lambda m, x, w: m.nn.functional.conv_transpose2d(x, w.transpose(0, 1)),
    "ct1": lambda m, x, w: m.nn.functional.conv_transpose1d(x[..., 0, :], w.transpose(0, 1)[..., 0, :]),
}


@pytest.mark.parametrize("case", sorted(_CONV_CASES))
@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "int32", "int64", "bool", "complex64", "complex128"])
def test_conv_integer_and_complex(case, dt):
    def f(m):
        x = (m.arange(32).reshape(1, 2, 4, 4) * 7 - 50).to(getattr(m, dt))
        w = (m.arange(24).reshape(3, 2, 2, 2) - 5).to(getattr(m, dt))
        if dt.startswith("complex"):
            x, w = x * (1 + 2j), w * (1 - 1j)
        r = _CONV_CASES[case](m, x, w)
        return r.dtype, r

    check(f)


# ----------------------------------------------------------------------------- 11. out=
_X = [-1.0, 0.5, 2.0, -0.25]
_OUT_CASES = {
    "clamp_min": lambda m: (m.clamp_min, (m.tensor(_X), 0.0)),
    "clamp_max": lambda m: (m.clamp_max, (m.tensor(_X), m.tensor(0.0))),
    "masked_select": lambda m: (m.masked_select, (m.tensor(_X), m.tensor(_X) > 0)),
    "nonzero": lambda m: (m.nonzero, (m.tensor(_X) > 0,)),
    "linear": lambda m: (m.nn.functional.linear, (m.tensor(_X), m.ones(2, 4), m.ones(2))),
    "gelu": lambda m: (m.nn.functional.gelu, (m.tensor(_X),)),
    "gelu_tanh": lambda m: (lambda x, out: m.nn.functional.gelu(x, approximate="tanh", out=out), (m.tensor(_X),)),
    "softplus": lambda m: (m.nn.functional.softplus, (m.tensor(_X), 2.0)),
    "logsigmoid": lambda m: (m.nn.functional.logsigmoid, (m.tensor(_X),)),
    "hardshrink": lambda m: (m.nn.functional.hardshrink, (m.tensor(_X),)),
    "softshrink": lambda m: (m.nn.functional.softshrink, (m.tensor(_X), 0.3)),
    "avg_pool2d": lambda m: (m.nn.functional.avg_pool2d, (m.arange(32.0).reshape(1, 2, 4, 4), 2)),
    "normalize": lambda m: (m.nn.functional.normalize, (m.tensor([_X, _X]),)),
}
_OUT_LIKE = {"nonzero": "int64"}


@pytest.mark.parametrize("name", sorted(_OUT_CASES))
@pytest.mark.parametrize("out_kind", ["empty", "right shape", "wrong shape", "wrong dtype", "requires grad input"])
def test_out_argument(name, out_kind):
    def f(m):
        fn, args = _OUT_CASES[name](m)
        ref = fn(*args)
        dt = getattr(m, _OUT_LIKE.get(name, "float32"))
        if out_kind == "empty":
            out = m.empty(0, dtype=dt)
        elif out_kind == "right shape":
            out = m.full(tuple(ref.shape), 7, dtype=dt)
        elif out_kind == "wrong shape":
            out = m.empty(0, 0, dtype=dt) if ref.dim() != 2 else m.empty(0, dtype=dt)
        elif out_kind == "wrong dtype":
            out = m.empty(0, dtype=m.int32 if dt == m.float32 else m.float32)
        else:
            args = tuple(a.clone().requires_grad_() if isinstance(a, m.Tensor) and a.is_floating_point() else a
                         for a in args)
            out = m.empty(0, dtype=dt)
        r = fn(*args, out=out)
        return r is out, out, ref

    t, e = run(f)
    if out_kind == "wrong dtype" and name in ("clamp_min", "clamp_max"):
        # PyTorch's messages differ between its own ops here; the class is what matters
        assert isinstance(t, RuntimeError) and isinstance(e, RuntimeError)
        return
    same(t, e)


# ----------------------------------------------------------------------------- 12. error classes
@pytest.mark.parametrize("src,dst", [((0, 0), (1, 2)), ((0, 1), (2, 2)), ((0, -3), (1, 2)), ((0, 1), (-1, 2)),
                                     ((0, 1), (2,)), (3, 0), ((0, 1), (2, 0)), (-1, 0)])
def test_movedim_errors(src, dst):
    def f(m):
        x = m.ones(2, 3, 4)
        return m.movedim(x, src, dst).shape, x.movedim(src, dst).shape, m.moveaxis(x, src, dst).shape

    a, b = check(f)
    if isinstance(a, RuntimeError):
        assert str(a) == str(b)


_SCALAR_FIRST = ["eq", "ne", "lt", "le", "gt", "ge", "fmod", "copysign", "atan2", "hypot", "maximum", "minimum",
                 "fmax", "fmin", "logical_and", "logical_or", "logical_xor", "add", "sub", "mul", "div", "remainder",
                 "true_divide", "floor_divide", "pow"]


@pytest.mark.parametrize("name", _SCALAR_FIRST)
def test_binary_python_scalar_operands(name):
    check(lambda m: getattr(m, name)(2, m.ones(2)))
    check(lambda m: getattr(m, name)(m.ones(2), 2))
    check(lambda m: getattr(m, name)(m.ones(2), m.tensor(2.0)))
    check(lambda m: getattr(m.ones(2), name)(2))


def test_composites_without_scalar_first_operands():
    # ops whose composites used to call lt(0, x) / atan2(x, 1.0) internally
    check(lambda m: (m.sign(m.tensor([-2.0, 0.0, 3.0, float("nan")])), m.atan(m.tensor([-1.0, 0.5])),
                     m.round(m.tensor([0.5, 1.5, 2.5, -0.5])), m.any(m.tensor([[0, 1], [0, 0]]), 1)))


@pytest.mark.parametrize("case", range(12))
def test_error_classes_cat_linspace_kthvalue_embedding(case):
    cases = [
        lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)], 0),
        lambda m: m.cat([m.ones(2, 3), m.ones(2)], 0),
        lambda m: m.cat([m.tensor(1.0), m.tensor(2.0)]),
        lambda m: m.cat([m.ones(2, 3)], 2),
        lambda m: m.linspace(0, 1, -1),
        lambda m: m.logspace(0, 1, -2),
        lambda m: m.kthvalue(m.ones(3), 4),
        lambda m: m.kthvalue(m.ones(3), 0),
        lambda m: m.kthvalue(m.ones(0), 1),
        lambda m: m.nn.functional.embedding(m.tensor([3]), m.ones(3, 2)),
        lambda m: m.nn.functional.embedding(m.tensor([-4]), m.ones(3, 2)),
        lambda m: m.nn.functional.embedding(m.tensor([1.0]), m.ones(3, 2)),
    ]
    check(cases[case])
