"""The composites of the reduction / scan / sorting ops and of the linear-algebra ops, on cpu.

Each check calls ``ember._dispatch.ops[name].composite`` (outputs allocated from the op's meta,
as the dispatcher does) and the cpu kernel the same way, and compares: exactly for integers,
bool, indices and orderings; within DEFAULT_TOLERANCES for floating dtypes.

Every composite runs in "primitive mode": each other op it calls is routed to that op's
composite too (recursively), so only primitives reach a kernel; a non-primitive op without
a composite is recorded and reported in the failure message.
"""
from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest

import ember
from ember import _dispatch
from ember._dispatch import ops
from ember.testing._opinfo import DEFAULT_TOLERANCES

#: the primitive set (plus the runtime ops every device supplies)
PRIMITIVES = {
    "add", "mul", "true_divide", "div_trunc", "fmod", "pow", "atan2", "abs", "eq", "lt", "where", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "floor", "exp", "expm1", "log",
    "log1p", "sin", "cos", "sqrt", "erf", "erfc", "erfinv", "sum", "amax", "bmm", "gather", "scatter_add",
    "uniform", "copy_", "fill_",
}

F = [ember.float32, ember.float64]
LOWP = [ember.float16, ember.bfloat16]
INTS = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64]
C = [ember.complex64, ember.complex128]
NONPRIM_USED: set = set()


# ---------------------------------------------------------------- primitive mode
@contextlib.contextmanager
def primitive_mode():
    """Route every non-primitive op on cpu to its composite (recording those without one)."""
    from ember import _registry
    _registry.ensure_loaded()          # plugin discovery would clear the caches filled below
    dts = list(ember.library.ALL_DENSE)
    for name, op in ops.items():
        if name in PRIMITIVES:
            continue
        if op.composite is not None:
            fn = _dispatch._below_autograd(op.composite)
        else:
            fn = _recorder(name, op)
        for dt in dts:
            op.cache[("cpu", "strided", dt)] = fn
    try:
        yield
    finally:
        _dispatch.invalidate_caches()


def _recorder(name, op):
    def run(*args, **kwargs):
        NONPRIM_USED.add(name)
        key = next(k for k in op.kernels if k[0] == "cpu")
        return op.kernels[key].fn(*args, **kwargs)
    return run


# ---------------------------------------------------------------- calling a kernel or a composite
def _alloc(op, args, kwargs):
    m = op.meta(*args, **kwargs)
    if len(m) == 4:
        return ember.empty(m[2], dtype=m[3])
    return tuple(ember.empty(s, dtype=d) for s, d in m[2])


def call(name, *args, composite, **kwargs):
    op = ops[name]
    if composite:
        fn = op.composite
    else:
        key = op.meta(*args, **kwargs)[1]
        fn = next(e.fn for k, e in op.kernels.items() if k[0] == "cpu" and k[2] in (key[2], _dispatch.ANY))
    if not op.structured:
        if composite:
            with primitive_mode():
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)
    out = _alloc(op, args, kwargs)
    if composite:
        with primitive_mode():
            fn(*args, **kwargs, out=out)
    else:
        fn(*args, **kwargs, out=out)
    return out


def _np(t):
    return t.numpy() if isinstance(t, ember.Tensor) else np.asarray(t)


def assert_same(a, b, what=""):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{what}[{i}]")
        return
    assert tuple(a.shape) == tuple(b.shape), f"{what}: shape {tuple(a.shape)} != {tuple(b.shape)}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    x, y = _np(a), _np(b)
    dt = a.dtype
    if dt.is_floating_point or dt.is_complex:
        rtol, atol = DEFAULT_TOLERANCES[dt.name]
        x = x.astype(np.complex128 if dt.is_complex else np.float64)
        y = y.astype(x.dtype)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(x, y, err_msg=what)


def check(name, *args, **kwargs):
    """composite(args) == cpu kernel(args); non-primitive ops used without composites are reported."""
    NONPRIM_USED.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = call(name, *args, composite=False, **kwargs)
        got = call(name, *args, composite=True, **kwargs)
    assert not NONPRIM_USED, f"{name}: composite reached non-primitive ops without composites: {NONPRIM_USED}"
    assert_same(got, want, f"{name}{_desc(args, kwargs)}")
    return got


def _desc(args, kwargs):
    def d(x):
        return f"T{tuple(x.shape)}:{x.dtype.name}" if isinstance(x, ember.Tensor) else repr(x)
    return "(" + ", ".join([d(a) for a in args] + [f"{k}={d(v)}" for k, v in kwargs.items()]) + ")"


# ---------------------------------------------------------------- inputs
_rng = np.random.default_rng(0)


def T(a, dtype):
    return ember.tensor(np.asarray(a)).to(dtype)


def rand(shape, dtype, *, lo=-4, hi=5, nan=False, ties=True):
    """Small integers (ties likely) or floats; with ``nan`` a few NaNs; bool as 0/1."""
    if dtype is ember.bool:
        return ember.tensor(_rng.integers(0, 2, shape).astype(bool))
    if dtype.is_complex:
        a = _rng.integers(lo, hi, shape) + 1j * _rng.integers(lo, hi, shape)
        return ember.tensor(a.astype(np.complex128)).to(dtype)
    if dtype is ember.uint8:
        lo, hi = 0, hi + 4
    a = _rng.integers(lo, hi, shape).astype(np.float64) if ties else _rng.standard_normal(shape)
    if nan and dtype.is_floating_point and a.size:
        a.reshape(-1)[_rng.integers(0, a.size, max(1, a.size // 5))] = np.nan
    return ember.tensor(a).to(dtype)


def noncontig(x):
    """``x`` as a non-contiguous view (a transposed copy transposed back)."""
    if x.dim() < 2:
        return x
    return x.transpose(0, 1).contiguous().transpose(0, 1)


ALL_REAL = F + LOWP + INTS
SHAPES = [(), (5,), (3, 4), (2, 3, 4), (0,), (2, 0, 3)]


# ---------------------------------------------------------------- sum family, prod, mean
@pytest.mark.parametrize("dtype", F + LOWP + INTS + [ember.bool] + C)
def test_prod_nansum_count(dtype):
    for shape in SHAPES:
        x = rand(shape, dtype, lo=-3, hi=4, nan=True)
        check("prod", x)
        check("prod", x, dtype=ember.float64 if not dtype.is_complex else None)
        if dtype is not ember.bool and not dtype.is_complex:
            check("nansum", x)
        check("count_nonzero", x)
        for d in range(-len(shape), len(shape)):
            check("prod", x, d)
            check("prod", noncontig(x), d, True)
            check("count_nonzero", x, d)
            if dtype is not ember.bool and not dtype.is_complex:
                check("nansum", x, [d], True)


def test_prod_int_overflow_wraps():
    x = T([2 ** 40, 2 ** 30, 3, 7, 2 ** 20], ember.int64)
    check("prod", x)
    check("prod", T([100, 100, 100, 7], ember.int8))           # int8 -> int64, no wrap
    check("prod", T([100, 100, 100, 7], ember.int8), dtype=ember.int8)
    check("cumprod", T([2 ** 40, 2 ** 30, 3], ember.int64), 0)


@pytest.mark.parametrize("dtype", F + LOWP + C)
def test_mean_nanmean_var_std(dtype):
    for shape in SHAPES:
        x = rand(shape, dtype, nan=False, ties=False) if not dtype.is_complex else rand(shape, dtype)
        xn = rand(shape, dtype, nan=True) if not dtype.is_complex else x
        check("mean", x)
        check("nanmean", xn)
        check("var", x)
        check("std", x, correction=0)
        for d in range(-len(shape), len(shape)):
            check("mean", noncontig(x), [d], True)
            check("nanmean", xn, [d])
            check("var", x, [d], correction=2.5, keepdim=True)
            check("std", noncontig(x), [d])
        if len(shape) == 3:
            check("mean", x, [0, 2])
            check("var", x, [2, 0], correction=0)
    check("mean", rand((3, 4), ember.int32), dtype=ember.float64)


# ---------------------------------------------------------------- max / min family
@pytest.mark.parametrize("dtype", ALL_REAL + [ember.bool])
def test_extremes(dtype):
    for shape in [(), (5,), (3, 4), (2, 3, 4)]:
        x = rand(shape, dtype, nan=True)
        check("amin", x)
        check("max", x)
        check("min", x)
        check("aminmax", x)
        check("aminmax", x, keepdim=True)
        if dtype is not ember.bool:
            check("argmax", x)
            check("argmin", noncontig(x), keepdim=True)
        for d in range(-len(shape), len(shape)) if shape else [0, -1]:
            check("amin", noncontig(x), [d], True)
            check("max_dim", x, d)
            check("min_dim", noncontig(x), d, True)
            check("aminmax", x, dim=d)
            if dtype is not ember.bool:
                check("argmax", x, d)
                check("argmin", x, d, True)
    # empty non-reduced dims, NaN ties, infinities, signed zeros
    check("max_dim", rand((0, 3), dtype), 1)
    if dtype.is_floating_point:
        y = T([[1, math.nan, 3, math.nan], [-math.inf, -math.inf, math.inf, 0.0], [-0.0, 0.0, -0.0, 1]], dtype)
        for name in ("max_dim", "min_dim", "argmax", "argmin"):
            check(name, y, 1)
            check(name, y, 0)


# ---------------------------------------------------------------- norms, logsumexp
@pytest.mark.parametrize("dtype", F + LOWP + C)
def test_norms(dtype):
    x = rand((3, 4), dtype, ties=False) if not dtype.is_complex else rand((3, 4), dtype)
    for p in (2, 1, 0, 3, 0.5, -1, math.inf, -math.inf):
        check("norm", x, p)
        check("norm", x, p, [1], True)
        check("linalg_vector_norm", x, p)
        check("linalg_vector_norm", noncontig(x), p, (0,), True)
    check("norm", x, 2, [], dtype=ember.complex128 if dtype.is_complex else ember.float64)
    check("norm", rand((0, 3), dtype), 2)
    check("norm", rand((0, 3), dtype), math.inf, [1])
    check("linalg_vector_norm", rand((), dtype), 2)
    m = rand((2, 3, 4), dtype, ties=False) if not dtype.is_complex else rand((2, 3, 4), dtype)
    for o in ("fro", 1, -1, math.inf, -math.inf):
        check("linalg_matrix_norm", m, o)
        check("linalg_matrix_norm", m, o, (0, 2), True)
    check("linalg_matrix_norm", rand((3, 0), dtype), "fro")
    if dtype not in LOWP:
        for o in ("nuc", 2, -2):
            check("linalg_matrix_norm", m, o)
            check("linalg_matrix_norm", m, o, (-1, 0), True)
        check("norm", m, "nuc", [1, 2])


@pytest.mark.parametrize("dtype", F + LOWP + C + [ember.int32, ember.bool])
def test_logsumexp(dtype):
    x = rand((3, 4), dtype, nan=True, ties=False) if dtype.is_floating_point else rand((3, 4), dtype)
    check("logsumexp", x, [1])
    check("logsumexp", noncontig(x), [0, 1], True)
    check("logsumexp", rand((0, 3), dtype), [0])
    check("logsumexp", rand((), dtype), [0])
    if dtype.is_floating_point:
        check("logsumexp", T([[math.inf, 1.0], [-math.inf, -math.inf], [math.inf, -math.inf]], dtype), [1])


@pytest.mark.parametrize("dtype", ALL_REAL + [ember.bool] + C)
def test_all_any(dtype):
    for shape in SHAPES:
        x = rand(shape, dtype, lo=0, hi=3, nan=True)
        check("all", x)
        check("any", x)
        for d in range(-len(shape), len(shape)):
            check("all", noncontig(x), [d], True)
            check("any", x, [d])


# ---------------------------------------------------------------- scans
@pytest.mark.parametrize("dtype", ALL_REAL + [ember.bool])
def test_scans(dtype):
    for shape in [(), (7,), (3, 5), (2, 0, 3)]:
        x = rand(shape, dtype, lo=-2, hi=3, nan=True)
        for d in range(-len(shape), len(shape)) if shape else [0]:
            check("cumsum", x, d)
            check("cumprod", noncontig(x), d)
            check("cummax", x, d)
            check("cummin", noncontig(x), d)
    check("cumsum", rand((4,), dtype), 0, dtype=ember.float64)


@pytest.mark.parametrize("dtype", C)
def test_complex_scans(dtype):
    x = rand((3, 5), dtype, lo=-2, hi=3)
    for d in (0, 1, -1):
        check("cumsum", x, d)
        check("cumprod", noncontig(x), d)


# ---------------------------------------------------------------- sorting and order statistics
@pytest.mark.parametrize("dtype", ALL_REAL + [ember.bool])
def test_sort_topk_kthvalue(dtype):
    for shape in [(), (9,), (3, 6), (2, 3, 4), (0,), (3, 0)]:
        x = rand(shape, dtype, lo=-3, hi=3, nan=True)
        for d in range(-len(shape), len(shape)) if shape else [0]:
            check("sort", x, d)
            check("sort", noncontig(x), d, True)
            n = x.shape[d] if shape else 1
            if dtype is not ember.bool:
                for k in ({k for k in (0, 1, n // 2, n) if k <= n} if shape else {1}):
                    check("topk", x, k, d)
                    check("topk", noncontig(x), k, d, False)
                if n:
                    check("kthvalue", x, 1, d)
                    check("kthvalue", x, n, d, True)
                    check("kthvalue", x, (n + 1) // 2, d)


@pytest.mark.parametrize("dtype", ALL_REAL + [ember.bool])
def test_median_mode(dtype):
    for shape in [(), (7,), (4,), (3, 6), (2, 3, 4)]:
        x = rand(shape, dtype, lo=-2, hi=2, nan=True)
        if dtype is not ember.bool:
            check("median", x)
            check("nanmedian", x)
        for d in range(-len(shape), len(shape)) if shape else [0]:
            check("mode", x, d)
            check("mode", noncontig(x), d, True)
            if dtype is not ember.bool:
                check("median_dim", x, d)
                check("nanmedian_dim", noncontig(x), d, True)
    if dtype.is_floating_point:
        allnan = T([[math.nan, math.nan, 1], [math.nan, math.nan, math.nan]], dtype)
        check("nanmedian_dim", allnan, 1)
        check("median_dim", allnan, 1)
        check("nanmedian", T([math.nan, math.nan], dtype))
        check("median", rand((0,), dtype))


@pytest.mark.parametrize("dtype", ALL_REAL + [ember.bool])
def test_unique(dtype):
    for shape in [(), (9,), (3, 4), (0,), (2, 0)]:
        x = rand(shape, dtype, lo=-2, hi=2, nan=True)
        for ri in (False, True):
            check("unique", x, True, ri, True, None)
            check("unique_consecutive", noncontig(x), ri, True, None)
    m = T([[1, 2, 1, 1], [3, 0, 3, 3], [1, 2, 1, 1]], dtype)
    for d in (0, 1, -1):
        check("unique", m, True, True, True, d)
        check("unique_consecutive", m, True, True, d)
    check("unique", rand((0, 3), dtype), True, True, True, 1)
    check("unique", rand((2, 0), dtype), True, True, True, 0)
    check("unique_consecutive", T([[1, 1, 2], [1, 1, 2]], dtype), True, True, 1)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.int32, ember.uint8])
def test_searchsorted(dtype):
    b = T([0, 1, 1, 3, 5, 5, 8], dtype)
    v = T([[-1, 0, 1, 2], [5, 8, 9, 3]], dtype)
    for right in (False, True):
        check("searchsorted", b, v, right=right)
        check("searchsorted", b, v, side="right" if right else "left", out_int32=True)
        check("searchsorted", b, 4, right=right)
    bn = T([[0, 1, 1, 3], [2, 2, 6, 9]], dtype)
    check("searchsorted", bn, v, right=True)
    check("searchsorted", noncontig(bn), v)
    unsorted = T([5, 0, 3, 1], dtype)
    check("searchsorted", unsorted, v, sorter=T([1, 3, 2, 0], ember.int64))
    if dtype.is_floating_point:
        bnan = T([0, 1, 2, math.nan, math.nan], dtype)
        vnan = T([math.nan, 1, math.inf, -math.inf], dtype)
        check("searchsorted", bnan, vnan)
        check("searchsorted", bnan, vnan, right=True)
    check("searchsorted", T([1, 2, 3], dtype), T([2, 3], ember.float64))     # promotes


# ---------------------------------------------------------------- linear algebra
@pytest.mark.parametrize("dtype", F + LOWP + INTS + C)
def test_products(dtype):
    a, b = rand((3, 4), dtype), rand((4, 2), dtype)
    v, w = rand((4,), dtype), rand((4,), dtype)
    check("mm", a, b)
    check("mm", noncontig(a), noncontig(b))
    check("mv", a, v)
    check("dot", v, w)
    check("vdot", v, w)
    check("matmul", v, w)
    check("matmul", rand((2, 1, 3, 4), dtype), rand((5, 4, 2), dtype))
    check("matmul", rand((2, 3, 4), dtype), v)
    check("matmul", v, rand((2, 4, 3), dtype))
    check("matmul", rand((0, 4), dtype), b)
    kw = dict(beta=2, alpha=3) if not dtype.is_complex else dict(beta=2 - 1j, alpha=0.5j)
    c = rand((3, 2), dtype)
    check("addmm", c, a, b, **kw)
    check("addmm", rand((2,), dtype), a, b, beta=0)
    check("addmv", rand((3,), dtype), a, v, **kw)
    check("baddbmm", rand((2, 3, 2), dtype), rand((2, 3, 4), dtype), rand((2, 4, 2), dtype), **kw)
    check("addbmm", c, rand((2, 3, 4), dtype), rand((2, 4, 2), dtype), **kw)
    if not (dtype.is_floating_point or dtype.is_complex):
        check("addmm", c, a, b, beta=2.7, alpha=1.5)      # scalars truncated for integer results


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.int32, ember.int64,
                                   ember.bool, ember.complex64])
def test_einsum(dtype):
    a, b, c = rand((2, 3), dtype), rand((3, 4), dtype), rand((4, 2), dtype)
    sq = rand((3, 3), dtype)
    cases = [
        ("ij,jk->ik", [a, b]), ("ij,jk", [a, b]), ("ij,jk,kl->il", [a, b, c]), ("ii->i", [sq]), ("ii", [sq]),
        ("ij->", [a]), ("ij->ji", [a]), ("ij", [a]), ("i,i->", [b[0], b[1]]), ("i,j->ij", [a[0], b[0]]),
        ("bij,bjk->bik", [rand((2, 2, 3), dtype), rand((2, 3, 4), dtype)]),
        ("...ij,...jk->...ik", [rand((2, 2, 3), dtype), rand((3, 4), dtype)]),
        ("i...->...", [rand((2, 3, 4), dtype)]), ("iij->j", [rand((3, 3, 2), dtype)]),
        ("ij,ij->i", [rand((1, 3), dtype), rand((4, 3), dtype)]),          # labelled size-1 broadcast
        ("ab,cd->", [a, b]), ("ijk,jil->kl", [rand((2, 3, 4), dtype), rand((3, 2, 5), dtype)]),
    ]
    for eq, ts in cases:
        check("einsum", eq, ts)
    check("einsum", "ij,jk->ik", [noncontig(rand((3, 3), dtype)), sq])


# ---------------------------------------------------------------- on the primitive-only device
def _vdev():
    """The vdev reference plugin (examples/vendor_plugin): installed, or registered from the source tree."""
    from ember import _registry
    _registry.ensure_loaded()
    if _registry.device_types.get("vdev") is None:
        import os
        import sys
        src = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "vendor_plugin")
        if not os.path.isdir(os.path.join(src, "ember_vdev")):
            pytest.skip("the vdev reference plugin (examples/vendor_plugin) is not available")
        sys.path.insert(0, os.path.abspath(src))
        import ember_vdev
        ember.plugins.register(ember_vdev)
    return "vdev:0"


_VDEV_OPS = {
    "sort": lambda t: ember.sort(t, 1, True), "topk": lambda t: ember.topk(t, 2), "kthvalue": lambda t: ember.kthvalue(t, 2),
    "median": lambda t: ember.median(t, 1), "nanmedian": lambda t: ember.nanmedian(t), "mode": lambda t: ember.mode(t, 0),
    "cumsum": lambda t: ember.cumsum(t, 0), "cumprod": lambda t: ember.cumprod(t, 1), "cummax": lambda t: ember.cummax(t, 1),
    "cummin": lambda t: ember.cummin(t, 0), "max": lambda t: ember.max(t, 1), "min": lambda t: ember.min(t),
    "argmax": lambda t: ember.argmax(t), "aminmax": lambda t: ember.aminmax(t, dim=0), "amin": lambda t: ember.amin(t, 1),
    "prod": lambda t: ember.prod(t, 1), "all": lambda t: ember.all(t, 1), "any": lambda t: ember.any(t),
    "count_nonzero": lambda t: ember.count_nonzero(t, 1),
    "unique": lambda t: ember.unique(t, return_inverse=True, return_counts=True),
    "unique_dim": lambda t: ember.unique(t, return_inverse=True, return_counts=True, dim=0),
    "unique_consecutive": lambda t: ember.unique_consecutive(t, return_inverse=True, return_counts=True),
    "searchsorted": lambda t: ember.searchsorted(ember.sort(t, 1).values, t, right=True),
    "einsum": lambda t: ember.einsum("ij,kj->ik", t, t), "matmul": lambda t: ember.matmul(t, t[0]),
    "addmm": lambda t: ember.addmm(t[:, :3], t, t.T[:, :3], beta=2),
}
_VDEV_FLOAT_OPS = {
    "mean": lambda t: ember.mean(t), "nanmean": lambda t: ember.nanmean(t, 1), "var": lambda t: ember.var(t, 1),
    "std": lambda t: ember.std(t, 0), "logsumexp": lambda t: ember.logsumexp(t, 1), "nansum": lambda t: ember.nansum(t),
    "norm": lambda t: ember.norm(t, 3), "vector_norm": lambda t: ember.linalg.vector_norm(t, math.inf, 1),
    "matrix_norm": lambda t: ember.linalg.matrix_norm(t, 2), "vdot": lambda t: ember.vdot(t[0], t[1]),
}


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64])
def test_vdev_end_to_end(dtype):
    dev = _vdev()
    x = rand((3, 5), dtype, lo=-2, hi=3)
    fns = dict(_VDEV_OPS, **(_VDEV_FLOAT_OPS if dtype.is_floating_point else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn in fns.items():
            want, got = fn(x), fn(x.to(dev))
            want = want if isinstance(want, tuple) else (want,)
            got = got if isinstance(got, tuple) else (got,)
            assert all(g.device.type == "vdev" for g in got), name
            assert_same(tuple(g.to("cpu") for g in got), want, f"vdev {name}")
