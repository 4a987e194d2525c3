"""Linear algebra against numpy references: matmul and its special cases, the add-multiply
forms, einsum, tensordot, kron, outer and ember.linalg norms; dtypes, broadcasting batches,
non-contiguous inputs, out=, in-place variants, composites and error messages."""
import math

import numpy as np
import pytest

import ember
import ember.linalg

RNG = np.random.default_rng(0)
DTYPES = [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64, ember.int32, ember.int8,
          ember.complex64]
TOL = {ember.float16: 2e-2, ember.bfloat16: 8e-2, ember.float32: 1e-5, ember.complex64: 1e-5}


def arr(shape, dtype=ember.float64):
    if dtype.is_complex:
        return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    if dtype.is_floating_point:
        return RNG.standard_normal(shape)
    return RNG.integers(-4, 5, shape)


def mk(a, dtype=ember.float64):
    a = np.asarray(a)
    if a.ndim == 0:
        return ember.full((), a.item(), dtype=dtype)
    return ember.tensor(a, dtype=dtype)


def ref_cast(a, dtype):
    """The values numpy sees after a round trip through ``dtype``."""
    return np.asarray(mk(a, dtype).numpy()).astype(np.complex128 if dtype.is_complex else np.float64)


def check(t, expected, dtype=None, rtol=None):
    dtype = dtype or t.dtype
    got = np.asarray(t.numpy()).astype(np.complex128 if t.dtype.is_complex else np.float64)
    tol = TOL.get(dtype, 1e-10) if rtol is None else rtol
    if dtype.is_floating_point or dtype.is_complex:
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * 10)
    else:
        np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------- matmul shapes
MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)),
                 ((5, 2, 3), (3, 4)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
                 ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (6, 3, 1)), ((0, 3), (3, 2)), ((2, 0), (0, 4)),
                 ((4, 0, 2, 3), (3, 2))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes_match_numpy(sa, sb):
    a, b = arr(sa), arr(sb)
    r = ember.matmul(mk(a), mk(b))
    assert r.shape == np.matmul(a, b).shape
    check(r, np.matmul(a, b))
    check(mk(a) @ mk(b), np.matmul(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_dtypes(dtype):
    a, b = arr((3, 2, 4), dtype), arr((4, 5), dtype)
    r = ember.matmul(mk(a, dtype), mk(b, dtype))
    assert r.dtype is dtype
    check(r, np.matmul(ref_cast(a, dtype), ref_cast(b, dtype)), rtol=TOL.get(dtype, 1e-10) * 4)


def test_matmul_integer_overflow_wraps_like_pytorch():
    a = np.full((2, 2), 100, np.int8)
    r = ember.mm(mk(a, ember.int8), mk(a, ember.int8))
    np.testing.assert_array_equal(r.numpy(), np.matmul(a, a))


def test_matmul_noncontiguous_inputs():
    a, b = arr((4, 3)), arr((5, 4))
    ta, tb = mk(a).t(), mk(b).t()          # (3, 4), (4, 5) transposed views
    assert not ta.is_contiguous()
    check(ember.matmul(ta, tb), a.T @ b.T)
    c = arr((3, 6, 4))
    tc = mk(c).transpose(0, 1).narrow(0, 1, 3)    # (3, 3, 4), strided
    check(ember.matmul(tc, mk(b).t()), np.matmul(c.transpose(1, 0, 2)[1:4], b.T))
    e = mk(arr((1, 4))).expand(3, 4)
    check(ember.matmul(e, mk(b).t()), np.matmul(e.numpy(), b.T))


def test_matmul_out_and_operators():
    a, b = arr((2, 3)), arr((3, 4))
    out = ember.empty(2, 4, dtype=ember.float64)
    r = ember.matmul(mk(a), mk(b), out=out)
    assert r is out
    check(out, a @ b)
    big = ember.zeros(4, 6, dtype=ember.float64)
    ember.mm(mk(a), mk(b), out=big.t().t().narrow(1, 1, 4).narrow(0, 0, 2))
    check(big.narrow(1, 1, 4).narrow(0, 0, 2), a @ b)
    check(big.narrow(1, 0, 1), np.zeros((4, 1)))
    check(mk(b).__rmatmul__(mk(a)), a @ b)
    x = mk(a)
    y = x
    x @= mk(b)                             # rebinds, as for torch.Tensor
    assert x.shape == (2, 4) and y.shape == (2, 3)
    check(x, a @ b)
    with pytest.warns(UserWarning, match="resized"):
        ember.matmul(mk(a), mk(b), out=ember.empty(3, 3, dtype=ember.float64))


def test_matmul_out_aliasing_an_input():
    a = arr((3, 3))
    x = mk(a)
    ember.matmul(x, mk(a), out=x)
    check(x, a @ a)


def test_matmul_composite_path_matches_native():
    from ember._ops import _linalg
    comp = _linalg._matmul._op.composite
    for sa, sb in MATMUL_SHAPES[:11]:
        a, b = arr(sa), arr(sb)
        out = ember.empty(np.matmul(a, b).shape, dtype=ember.float64)
        comp(mk(a), mk(b), out=out)
        check(out, np.matmul(a, b))
    for name, args in (("mm", ((2, 3), (3, 4))), ("mv", ((2, 3), (3,))), ("dot", ((3,), (3,)))):
        a, b = arr(args[0]), arr(args[1])
        out = ember.empty(np.matmul(a, b).shape, dtype=ember.float64)
        getattr(_linalg, name)._op.composite(mk(a), mk(b), out=out)
        check(out, np.matmul(a, b))


@pytest.mark.parametrize("sa,sb,cls,msg", [
    ((2, 3), (4, 5), RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((3,), (4, 5), RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    ((5, 2, 3), (4, 5), RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(10x3 and 4x5\)"),
    ((3,), (4,), RuntimeError, r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
    ((2, 3), (4,), RuntimeError, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    ((2, 2, 3), (4,), RuntimeError, r"size mismatch, got input \(4\), mat \(4x3\), vec \(4\)"),
    ((5, 2, 3), (4, 3, 5), RuntimeError, r"The size of tensor a \(5\) must match the size of tensor b \(4\)"),
    ((5, 2, 3), (5, 4, 5), RuntimeError, r"Expected size for first two dimensions of batch2 tensor to be: "
                                         r"\[5, 3\] but got: \[5, 4\]\."),
    ((), (4,), RuntimeError, "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
])
def test_matmul_errors(sa, sb, cls, msg):
    with pytest.raises(cls, match=msg):
        ember.matmul(mk(arr(sa)), mk(arr(sb)))


def test_matmul_dtype_mismatch_messages():
    f, d = ember.float32, ember.float64
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        ember.matmul(ember.ones(2, 3), ember.ones(3, 4, dtype=d))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but found Float and "
                                           "Double"):
        ember.matmul(ember.ones(3), ember.ones(3, dtype=d))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.matmul(ember.ones(2, 2, 3, dtype=f), ember.ones(2, 3, 4, dtype=d))
    with pytest.raises(RuntimeError, match="long int != c10::Half"):
        ember.mm(ember.ones(2, 3, dtype=ember.int64), ember.ones(3, 4, dtype=ember.float16))
    with pytest.raises(NotImplementedError):
        ember.mm(ember.ones(2, 2, dtype=ember.bool), ember.ones(2, 2, dtype=ember.bool))
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.matmul(ember.ones(2, 2), [[1.0, 2.0]])


# ---------------------------------------------------------------- mm, bmm, mv, dot, vdot, outer
def test_mm_bmm_mv_dot_vdot():
    a, b = arr((2, 3)), arr((3, 4))
    check(ember.mm(mk(a), mk(b)), a @ b)
    check(mk(a).mm(mk(b)), a @ b)
    x, y = arr((4, 2, 3)), arr((4, 3, 5))
    check(ember.bmm(mk(x), mk(y)), np.matmul(x, y))
    v = arr((3,))
    check(ember.mv(mk(a), mk(v)), a @ v)
    check(ember.dot(mk(v), mk(v)), np.dot(v, v))
    check(mk(v).dot(mk(v)), np.dot(v, v))
    c = arr((3,), ember.complex128)
    d = arr((3,), ember.complex128)
    check(ember.vdot(mk(c, ember.complex128), mk(d, ember.complex128)), np.vdot(c, d))
    check(ember.dot(mk(c, ember.complex128), mk(d, ember.complex128)), np.dot(c, d))
    check(ember.dot(mk(v.astype(np.int64), ember.int64), mk(v.astype(np.int64), ember.int64)),
          np.dot(v.astype(np.int64), v.astype(np.int64)))
    p, q = arr((2, 3)), arr((4, 3))
    check(ember.inner(mk(p), mk(q)), np.inner(p, q))


@pytest.mark.parametrize("fn,sa,sb,msg", [
    ("mm", (3,), (3, 4), "self must be a matrix"),
    ("mm", (2, 3), (3,), "mat2 must be a matrix"),
    ("bmm", (2, 3), (3, 4), "batch1 must be a 3D tensor"),
    ("bmm", (2, 2, 3), (3, 4), "batch2 must be a 3D tensor"),
    ("bmm", (2, 2, 3), (3, 3, 5), r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but "
                                  r"got: \[3, 3\]\."),
    ("mv", (3, 4), (3,), r"size mismatch, got input \(3\), mat \(3x4\), vec \(3\)"),
    ("mv", (3,), (3,), "vector \\+ matrix @ vector expected, got 1, 1, 1"),
    ("dot", (3, 1), (3,), "1D tensors expected, but got 2D and 1D tensors"),
    ("vdot", (3,), (4,), "inconsistent tensor size"),
    ("outer", (3, 2), (4,), "outer: Expected 1-D argument self, but got 2-D"),
])
def test_product_errors(fn, sa, sb, msg):
    with pytest.raises(RuntimeError, match=msg):
        getattr(ember, fn)(mk(arr(sa)), mk(arr(sb)))


def test_mv_dtype_message():
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype, but got Double, Float, "
                                           "and Double"):
        ember.mv(ember.ones(3, 4), ember.ones(4, dtype=ember.float64))


@pytest.mark.parametrize("da,db", [(ember.float32, ember.float64), (ember.int64, ember.float32),
                                   (ember.bool, ember.bool), (ember.int32, ember.int32)])
def test_outer_promotes(da, db):
    a, b = arr((3,), da) if da is not ember.bool else np.array([1, 0, 1]), \
        arr((4,), db) if db is not ember.bool else np.array([0, 1, 1, 0])
    r = ember.outer(mk(a, da), mk(b, db))
    assert r.dtype is ember.promote_types(da, db)
    check(r, np.outer(ref_cast(a, da), ref_cast(b, db)))
    check(ember.ger(mk(a, da), mk(b, db)), np.outer(ref_cast(a, da), ref_cast(b, db)))


# ---------------------------------------------------------------- addmm family
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.float16])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1), (2, 0.5)])
def test_addmm(dtype, beta, alpha):
    inp, m1, m2 = arr((4,), dtype), arr((2, 3), dtype), arr((3, 4), dtype)
    r = ember.addmm(mk(inp, dtype), mk(m1, dtype), mk(m2, dtype), beta=beta, alpha=alpha)
    cast = (lambda s: int(s)) if not dtype.is_floating_point else (lambda s: s)
    exp = cast(alpha) * (ref_cast(m1, dtype) @ ref_cast(m2, dtype))
    if beta != 0:
        exp = exp + cast(beta) * ref_cast(inp, dtype)
    assert r.shape == (2, 4) and r.dtype is dtype
    check(r, exp, rtol=TOL.get(dtype, 1e-10) * 4)


def test_addmm_beta_zero_ignores_nan_and_inplace():
    inp = ember.full((2, 4), float("nan"), dtype=ember.float64)
    m1, m2 = arr((2, 3)), arr((3, 4))
    check(ember.addmm(inp, mk(m1), mk(m2), beta=0), m1 @ m2)
    base = arr((2, 4))
    x = mk(base)
    r = x.addmm_(mk(m1), mk(m2), alpha=2)
    assert r is x
    check(x, base + 2 * (m1 @ m2))
    with pytest.raises(RuntimeError, match=r"Bad in-place call: input tensor size \[1, 4\] and output tensor size "
                                           r"\[2, 4\] should match"):
        mk(arr((1, 4))).addmm_(mk(m1), mk(m2))
    out = ember.empty(2, 4, dtype=ember.float64)
    ember.addmm(mk(base), mk(m1), mk(m2), out=out)
    check(out, base + m1 @ m2)


@pytest.mark.parametrize("args,msg", [
    (((4,), (2, 3), (3, 3)), r"The expanded size of the tensor \(3\) must match the existing size \(4\) at "
                             r"non-singleton dimension 1"),
    (((2, 3), (2, 3), (4, 3)), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x3\)"),
    (((2, 3), (2, 3), (3,)), "mat2 must be a matrix, got 1-D tensor"),
])
def test_addmm_errors(args, msg):
    with pytest.raises(RuntimeError, match=msg):
        ember.addmm(*(mk(arr(s)) for s in args))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Double and Float"):
        ember.addmm(ember.ones(2, 3, dtype=ember.float64), ember.ones(2, 3), ember.ones(3, 3))


def test_addmv_baddbmm_addbmm_addr():
    inp, mat, vec = arr((2,)), arr((2, 3)), arr((3,))
    check(ember.addmv(mk(inp), mk(mat), mk(vec), beta=2, alpha=3), 2 * inp + 3 * (mat @ vec))
    x = mk(inp)
    x.addmv_(mk(mat), mk(vec))
    check(x, inp + mat @ vec)
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"):
        ember.addmv(mk(inp), mk(mat), mk(arr((4,))))
    b1, b2, bi = arr((4, 2, 3)), arr((4, 3, 5)), arr((2, 5))
    check(ember.baddbmm(mk(bi), mk(b1), mk(b2), alpha=0.5), bi + 0.5 * np.matmul(b1, b2))
    y = mk(np.broadcast_to(bi, (4, 2, 5)).copy())
    y.baddbmm_(mk(b1), mk(b2))
    check(y, bi + np.matmul(b1, b2))
    check(ember.addbmm(mk(bi), mk(b1), mk(b2), beta=0.5), 0.5 * bi + np.matmul(b1, b2).sum(0))
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have same number of batches, got 4 and 5"):
        ember.addbmm(mk(bi), mk(b1), mk(arr((5, 3, 5))))
    with pytest.raises(RuntimeError, match=r"Bad in-place call: input tensor size \[2, 5\] and output tensor size "
                                           r"\[4, 2, 5\] should match"):
        mk(bi).baddbmm_(mk(b1), mk(b2))
    v1, v2 = arr((2,)), arr((5,))
    check(ember.addr(mk(bi), mk(v1), mk(v2), alpha=2), bi + 2 * np.outer(v1, v2))


def test_addmm_family_composites():
    from ember._ops import _linalg
    inp, m1, m2 = arr((2, 4)), arr((2, 3)), arr((3, 4))
    out = ember.empty(2, 4, dtype=ember.float64)
    _linalg._addmm._op.composite(mk(inp), mk(m1), mk(m2), beta=2, alpha=3, out=out)
    check(out, 2 * inp + 3 * (m1 @ m2))
    b1, b2 = arr((4, 2, 3)), arr((4, 3, 4))
    _linalg._addbmm._op.composite(mk(inp), mk(b1), mk(b2), beta=1, alpha=1, out=out)
    check(out, inp + np.matmul(b1, b2).sum(0))


# ---------------------------------------------------------------- einsum, tensordot, kron
@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("i,j->ij", [(2,), (3,)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("Ab,bA->", [(2, 3), (3, 2)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]), ("ba", [(2, 3)]),
    ("i,->i", [(2,), ()]),
])
def test_einsum_matches_numpy(eq, shapes):
    ops = [arr(s) for s in shapes]
    r = ember.einsum(eq, *[mk(o) for o in ops])
    check(r, np.einsum(eq.replace(" ", ""), *ops))
    check(ember.einsum(eq, [mk(o) for o in ops]), np.einsum(eq.replace(" ", ""), *ops))


def test_einsum_broadcasts_size_one_labels_and_dtypes():
    a, b = arr((1, 2, 3)), arr((5, 3, 4))
    check(ember.einsum("bij,bjk->bik", mk(a), mk(b)), np.einsum("bij,bjk->bik", np.broadcast_to(a, (5, 2, 3)), b))
    r = ember.einsum("i->", ember.ones(3, dtype=ember.int32))
    assert r.dtype is ember.int64 and r.item() == 3
    r = ember.einsum("ij,jk->ik", ember.ones(2, 3, dtype=ember.int32), ember.ones(3, 4, dtype=ember.int32))
    assert r.dtype is ember.int32
    h = ember.einsum("i,j->ij", ember.ones(2, dtype=ember.float16), ember.ones(3, dtype=ember.float16))
    assert h.dtype is ember.float16 and h.shape == (2, 3)
    check(ember.einsum(mk(a[0, 0]), [0], mk(a[0, 0]), [0], []), np.dot(a[0, 0], a[0, 0]))
    out = ember.empty(2, 4, dtype=ember.float64)
    x, y = arr((2, 3)), arr((4, 3))
    ember.einsum("ij,kj->ik", mk(x), mk(y).t().t(), out=out)
    check(out, x @ y.T)


@pytest.mark.parametrize("eq,shapes,msg", [
    ("ij,jk->ik", [(2, 3), (4, 4)], "subscript j has size 4 for operand 1 which does not broadcast with previously "
                                    "seen size 3"),
    ("ij,jk->ik", [(2, 3)], "fewer operands were provided than specified in the equation"),
    ("ij->ik", [(2, 3)], "output subscript k does not appear in the equation for any input operand"),
    ("ijk->ik", [(2, 3)], r"the number of subscripts in the equation \(3\) does not match the number of dimensions "
                          r"\(2\) for operand 0 and no ellipsis was given"),
    ("ii->i", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("ij->jii", [(2, 3)], "output subscript i appears more than once in the output"),
    ("i1->", [(2,)], "invalid subscript given at index 1 in the equation string, subscripts must be in"),
])
def test_einsum_errors(eq, shapes, msg):
    with pytest.raises(RuntimeError, match=msg):
        ember.einsum(eq, *[mk(arr(s)) for s in shapes])
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.einsum("ij,jk->ik", ember.ones(2, 3), ember.ones(3, 4, dtype=ember.float64))


@pytest.mark.parametrize("sa,sb,dims", [((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (3, 4, 5), ([1, 2], [0, 1])),
                                        ((2, 3), (3, 2), 0), ((2, 3), (3, 2), [[1], [0]]),
                                        ((2, 3), (3, 2), ([1, 0], [0, 1])), ((4, 3, 2), (2, 5, 4), ([0, 2], [2, 0]))])
def test_tensordot(sa, sb, dims):
    a, b = arr(sa), arr(sb)
    check(ember.tensordot(mk(a), mk(b), dims), np.tensordot(a, b, dims))
    out = ember.empty(np.tensordot(a, b, dims).shape, dtype=ember.float64)
    assert ember.tensordot(mk(a), mk(b), dims, out=out) is out
    check(out, np.tensordot(a, b, dims))


@pytest.mark.parametrize("dims,msg", [
    (([1, 2], [0]), "both dimension lists should have same length"),
    (([0], [0]), "contracted dimensions need to match, but first has size 2 in dim 0 and second has size 3 in dim 0"),
    (-1, "tensordot expects dims >= 0, but got dims=-1"),
    (4, "tensordot expects dims < ndim_a or ndim_b, but got dims=4"),
])
def test_tensordot_errors(dims, msg):
    with pytest.raises(RuntimeError, match=msg):
        ember.tensordot(ember.ones(2, 3, 4), ember.ones(3, 4, 5), dims)
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ember.tensordot(ember.ones(2, 3, 4), ember.ones(3, 4, 5, dtype=ember.float64), 2)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4,)), ((2, 2), (3, 3)), ((), (4,)), ((2, 1, 3), (2, 2))])
def test_kron(sa, sb):
    a, b = arr(sa), arr(sb, ember.int64)
    r = ember.kron(mk(a), mk(b, ember.int64))
    assert r.dtype is ember.float64
    check(r, np.kron(a, b))


# ---------------------------------------------------------------- norms
@pytest.mark.parametrize("ord", [2, 1, 0, math.inf, -math.inf, 3, 0.5, -1])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm(ord, dim, keepdim):
    a = arr((2, 3, 4))
    r = ember.linalg.vector_norm(mk(a), ord, dim, keepdim)
    axis = None if dim is None else dim
    flat = np.abs(a)
    if ord == math.inf:
        exp = flat.max(axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        exp = flat.min(axis=axis, keepdims=keepdim)
    elif ord == 0:
        exp = (flat != 0).sum(axis=axis, keepdims=keepdim).astype(float)
    else:
        exp = (flat ** ord).sum(axis=axis, keepdims=keepdim) ** (1 / ord)
    check(r, exp)


@pytest.mark.parametrize("dtype,out_dtype", [(ember.float32, ember.float32), (ember.float16, ember.float16),
                                             (ember.bfloat16, ember.bfloat16), (ember.complex64, ember.float32),
                                             (ember.complex128, ember.float64)])
def test_vector_norm_dtypes(dtype, out_dtype):
    a = arr((3, 4), dtype)
    r = ember.linalg.vector_norm(mk(a, dtype))
    assert r.dtype is out_dtype
    check(r, np.linalg.norm(ref_cast(a, dtype).ravel()), dtype=out_dtype, rtol=TOL.get(out_dtype, 1e-10) * 4)
    r = ember.linalg.norm(mk(a, dtype).t(), dim=0)
    check(r, np.linalg.norm(ref_cast(a, dtype).T, axis=0), dtype=out_dtype, rtol=TOL.get(out_dtype, 1e-10) * 4)


def test_vector_norm_dtype_argument_and_errors():
    r = ember.linalg.vector_norm(ember.ones(3), dtype=ember.float64)
    assert r.dtype is ember.float64 and abs(r.item() - math.sqrt(3)) < 1e-12
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        ember.linalg.vector_norm(ember.ones(3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"the dtype of the input \(Double\) should be convertible without "
                                           r"narrowing to the specified dtype \(Float\)"):
        ember.linalg.vector_norm(ember.ones(3, dtype=ember.float64), dtype=ember.float32)
    with pytest.raises(RuntimeError, match="dtype should be real for real inputs, but got ComplexFloat"):
        ember.linalg.vector_norm(ember.ones(3), dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ember.linalg.vector_norm(ember.ones(0), ord=math.inf)
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on the dimension 0"):
        ember.linalg.vector_norm(ember.ones(0, 3), ord=-1, dim=0)
    assert ember.linalg.vector_norm(ember.ones(0, 3), ord=math.inf, dim=1).shape == (0,)
    assert ember.linalg.vector_norm(ember.ones(0), ord=0).item() == 0
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        ember.linalg.vector_norm(ember.ones(2, 3), dim=(0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.linalg.vector_norm(ember.ones(2, 3), dim=3)
    with pytest.raises(TypeError, match="argument 'ord' must be Number, not str"):
        ember.linalg.vector_norm(ember.ones(3), ord="fro")
    out = ember.empty((), dtype=ember.float32)
    assert ember.linalg.vector_norm(ember.ones(4), out=out) is out and out.item() == 2


@pytest.mark.parametrize("ord", ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2])
def test_matrix_norm(ord):
    a = arr((3, 4, 5))
    r = ember.linalg.matrix_norm(mk(a), ord)
    check(r, np.linalg.norm(a, ord=ord, axis=(-2, -1)), rtol=1e-8)
    r = ember.linalg.matrix_norm(mk(a), ord, dim=(0, 2), keepdim=True)
    check(r, np.linalg.norm(a, ord=ord, axis=(0, 2), keepdims=True), rtol=1e-8)
    c = arr((4, 4), ember.complex64)
    r = ember.linalg.matrix_norm(mk(c, ember.complex64), ord)
    assert r.dtype is ember.float32
    check(r, np.linalg.norm(ref_cast(c, ember.complex64), ord=ord), rtol=1e-4)
    assert ember.linalg.matrix_norm(ember.ones(0, 3), ord).item() == 0


def test_matrix_norm_errors_and_norm_dispatch():
    with pytest.raises(RuntimeError, match="The input tensor A must have at least 2 dimensions"):
        ember.linalg.matrix_norm(ember.ones(3))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        ember.linalg.matrix_norm(ember.ones(3, 3), ord=3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order abc not supported."):
        ember.linalg.matrix_norm(ember.ones(3, 3), ord="abc")
    with pytest.raises(RuntimeError, match=r"dims must be different. Got \(0, 0\)"):
        ember.linalg.matrix_norm(ember.ones(3, 3), dim=(0, 0))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        ember.linalg.matrix_norm(ember.ones(3, 3, dtype=ember.float16), ord="nuc")
    assert ember.linalg.matrix_norm(ember.ones(2, 3, 3, dtype=ember.float16), ord=1).dtype is ember.float16
    a = arr((3, 4))
    check(ember.linalg.norm(mk(a)), np.linalg.norm(a))
    check(ember.linalg.norm(mk(a), 2), np.linalg.norm(a, 2))
    check(ember.linalg.norm(mk(a), "nuc"), np.linalg.norm(a, "nuc"))
    check(ember.linalg.norm(mk(a[0]), 3), np.linalg.norm(a[0], 3))
    check(ember.linalg.norm(mk(a), dim=(0, 1)), np.linalg.norm(a))
    b = arr((2, 3, 4))
    check(ember.linalg.norm(mk(b)), np.linalg.norm(b.ravel()))
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        ember.linalg.norm(mk(b), 2)
    with pytest.raises(RuntimeError, match=r"If dim is specified, it must be of length 1 or 2. Got \[0, 1, 2\]"):
        ember.linalg.norm(mk(b), dim=(0, 1, 2))


def test_linalg_matmul_and_vecdot():
    a, b = arr((2, 4)), arr((3, 1, 4))
    check(ember.linalg.matmul(mk(a), mk(a).t()), a @ a.T)
    check(ember.linalg.vecdot(mk(a), mk(b)), (a * b).sum(-1))
    check(ember.linalg.vecdot(mk(a), mk(a), dim=0), (a * a).sum(0))
    with pytest.raises(RuntimeError, match="Expected x and y to have the same dtype, but found x of type Double and "
                                           "y of type Float instead"):
        ember.linalg.vecdot(ember.ones(4, dtype=ember.float64), ember.ones(4))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        ember.linalg.vecdot(ember.ones(4, dtype=ember.int64), ember.ones(4, dtype=ember.int64))


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    a, b = arr((3, 2, 4)), arr((4, 5))
    np.testing.assert_allclose(ember.matmul(mk(a), mk(b)).numpy(),
                               torch.matmul(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-12)
