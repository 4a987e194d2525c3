"""ember.linalg's decompositions, solvers and matrix functions side by side with torch.linalg 2.13:
values (decompositions through reconstructions and invariants), dtypes, shapes, gradients,
exception classes and messages, the ``*_ex`` info outputs, and the host path of a device
without LAPACK kernels (vdev)."""
import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

FLOATS = ["float32", "float64"]
ALL = ["float32", "float64", "complex64", "complex128"]


def _rand(shape, dtype, seed=0, shift=True):
    rs = np.random.RandomState(seed)
    a = rs.uniform(-1, 1, shape)
    if "complex" in dtype:
        a = a + 1j * rs.uniform(-1, 1, shape)
    if shift and len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + shape[-1] * np.eye(shape[-1])
    return a.astype(dtype)


def _pair(a, requires_grad=False):
    e = ember.tensor(a)
    t = torch.tensor(a)
    if requires_grad:
        e.requires_grad_()
        t.requires_grad_()
    return e, t


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().resolve_conj().resolve_neg().numpy()
    return np.asarray(x.detach().cpu().numpy())


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype in ("float32", "complex64") else dict(rtol=1e-9, atol=1e-9)


def _close(e, t, dtype="float64", **kw):
    tol = {**_tol(dtype), **kw}
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(e), _np(t), **tol)


def _herm(a):
    n = a.shape[-1]
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=a.dtype)


# ---------------------------------------------------------------- unique results: compared directly
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 3, 3), (1, 1)])
def test_det_slogdet_inv(dtype, shape):
    e, t = _pair(_rand(shape, dtype))
    _close(ember.linalg.det(e), torch.linalg.det(t), dtype)
    for a, b in zip(ember.linalg.slogdet(e), torch.linalg.slogdet(t)):
        _close(a, b, dtype)
    _close(ember.linalg.inv(e), torch.linalg.inv(t), dtype)
    ri, rt = ember.linalg.inv_ex(e), torch.linalg.inv_ex(t)
    _close(ri.info, rt.info)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shapes,left", [(((3, 3), (3, 2)), True), (((2, 3, 3), (3,)), True),
                                         (((2, 1, 3, 3), (4, 3, 2)), True), (((3, 3), (2, 3)), False),
                                         (((2, 3, 3), (2, 3)), True)])
def test_solve(dtype, shapes, left):
    (ea, ta), (eb, tb) = _pair(_rand(shapes[0], dtype)), _pair(_rand(shapes[1], dtype, 1, shift=False))
    _close(ember.linalg.solve(ea, eb, left=left), torch.linalg.solve(ta, tb, left=left), dtype)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, upper):
    h = _herm(_rand((2, 3, 3), dtype))
    e, t = _pair(h)
    _close(ember.linalg.cholesky(e, upper=upper), torch.linalg.cholesky(t, upper=upper), dtype)
    _close(ember.cholesky(e, upper), torch.cholesky(t, upper), dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_eigvalsh_svdvals_eigvals(dtype):
    a = _rand((2, 4, 4), dtype)
    e, t = _pair(_herm(a))
    _close(ember.linalg.eigvalsh(e), torch.linalg.eigvalsh(t), dtype)
    e, t = _pair(a)
    _close(ember.linalg.svdvals(e), torch.linalg.svdvals(t), dtype)
    ev = np.sort_complex(_np(ember.linalg.eigvals(e)).reshape(-1))
    tv = np.sort_complex(_np(torch.linalg.eigvals(t)).reshape(-1))
    np.testing.assert_allclose(ev, tv, **_tol(dtype))
    assert str(ember.linalg.eigvals(e).dtype).split(".")[-1] == str(torch.linalg.eigvals(t).dtype).split(".")[-1]


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_family(dtype):
    a = _rand((2, 4, 4), dtype, shift=False)
    e, t = _pair(a)
    for x, y in zip(ember.linalg.lu_factor(e), torch.linalg.lu_factor(t)):
        _close(x, y, dtype)
    for x, y in zip(ember.linalg.lu(e), torch.linalg.lu(t)):
        _close(x, y, dtype)
    r = _rand((4, 6), dtype, 2, shift=False)
    er, tr = _pair(r)
    for x, y in zip(ember.linalg.lu(er), torch.linalg.lu(tr)):
        _close(x, y, dtype)
    for x, y in zip(ember.lu_unpack(*ember.linalg.lu_factor(er)), torch.lu_unpack(*torch.linalg.lu_factor(tr))):
        _close(x, y, dtype)
    eb, tb = _pair(_rand((4, 2), dtype, 3, shift=False))
    for kw in ({}, {"adjoint": True}, {"left": False}):
        bb = (eb.mT, tb.mT) if kw.get("left") is False else (eb, tb)
        _close(ember.linalg.lu_solve(*ember.linalg.lu_factor(e), bb[0], **kw),
               torch.linalg.lu_solve(*torch.linalg.lu_factor(t), bb[1], **kw), dtype, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("kw", [{"upper": True}, {"upper": False, "unitriangular": True},
                                {"upper": True, "left": False}])
def test_solve_triangular(dtype, kw):
    ea, ta = _pair(_rand((2, 3, 3), dtype))
    shape = (2, 3) if kw.get("left") is False else (3, 2)
    eb, tb = _pair(_rand(shape, dtype, 1, shift=False))
    _close(ember.linalg.solve_triangular(ea, eb, **kw), torch.linalg.solve_triangular(ta, tb, **kw), dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_matrix_exp_power_multi_dot(dtype):
    e, t = _pair(_rand((2, 3, 3), dtype, shift=False))
    _close(ember.linalg.matrix_exp(e), torch.linalg.matrix_exp(t), dtype)
    for n in (0, 1, 3, -2):
        _close(ember.linalg.matrix_power(e + 3 * ember.eye(3, dtype=e.dtype), n),
               torch.linalg.matrix_power(t + 3 * torch.eye(3, dtype=t.dtype), n), dtype)
    v = _rand((3,), dtype, 4)
    ms = [_rand((3, 4), dtype, 5), _rand((4, 2), dtype, 6), _rand((2,), dtype, 7)]
    _close(ember.linalg.multi_dot([ember.tensor(v)] + [ember.tensor(m) for m in ms]),
           torch.linalg.multi_dot([torch.tensor(v)] + [torch.tensor(m) for m in ms]), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_composites(dtype):
    a = _rand((2, 5, 3), dtype, shift=False)
    e, t = _pair(a)
    _close(ember.linalg.pinv(e), torch.linalg.pinv(t), dtype)
    h = _herm(_rand((3, 3), dtype))
    _close(ember.linalg.pinv(ember.tensor(h), hermitian=True), torch.linalg.pinv(torch.tensor(h), hermitian=True),
           dtype)
    low = np.ones((3, 4), dtype)
    _close(ember.linalg.matrix_rank(ember.tensor(low)), torch.linalg.matrix_rank(torch.tensor(low)))
    _close(ember.linalg.matrix_rank(e), torch.linalg.matrix_rank(t))
    sq = _rand((3, 3), dtype)
    for p in (None, 2, -2, 1, -1, math.inf, "fro", "nuc"):
        _close(ember.linalg.cond(ember.tensor(sq), p), torch.linalg.cond(torch.tensor(sq), p), dtype)
    b = _rand((2, 5, 2), dtype, 1)
    for driver in (None, "gelsy", "gelsd", "gelss", "gels"):
        re, rt = ember.linalg.lstsq(e, ember.tensor(b), driver=driver), torch.linalg.lstsq(t, torch.tensor(b),
                                                                                              driver=driver)
        for x, y in zip(re, rt):
            _close(x, y, dtype, rtol=1e-3, atol=1e-3)
    x, y = _rand((4, 3), dtype, 8), _rand((4, 3), dtype, 9)
    _close(ember.linalg.cross(ember.tensor(x), ember.tensor(y)), torch.linalg.cross(torch.tensor(x), torch.tensor(y)),
           dtype)
    _close(ember.linalg.vander(ember.tensor(x[0])), torch.linalg.vander(torch.tensor(x[0])), dtype)
    _close(ember.linalg.vander(ember.tensor(x[0]), N=5), torch.linalg.vander(torch.tensor(x[0]), N=5), dtype)
    _close(ember.linalg.diagonal(e, offset=1), torch.linalg.diagonal(t, offset=1), dtype)
    ti = _rand((4, 6, 8, 3), dtype, 10, shift=False)
    _close(ember.linalg.tensorinv(ember.tensor(ti)), torch.linalg.tensorinv(torch.tensor(ti)), dtype, rtol=1e-3,
           atol=1e-3)
    A, B = _rand((2, 3, 6), dtype, 11, shift=False), _rand((2, 3), dtype, 12)
    _close(ember.linalg.tensorsolve(ember.tensor(A), ember.tensor(B)),
           torch.linalg.tensorsolve(torch.tensor(A), torch.tensor(B)), dtype, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- decompositions: reconstructions and invariants
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,mode", [((5, 3), "reduced"), ((3, 5), "reduced"), ((4, 4), "complete"),
                                        ((2, 5, 3), "complete"), ((5, 3), "r"), ((0, 3, 2), "reduced")])
def test_qr(dtype, shape, mode):
    e, t = _pair(_rand(shape, dtype, shift=False))
    (eq, er), (tq, tr) = ember.linalg.qr(e, mode), torch.linalg.qr(t, mode)
    assert tuple(eq.shape) == tuple(tq.shape) and tuple(er.shape) == tuple(tr.shape)
    _close(er.abs(), tr.abs(), dtype)
    if mode != "r":
        _close(eq @ er, t, dtype)
        k = eq.shape[-1]
        np.testing.assert_allclose(_np(ember.linalg._linalg_api._mH(eq) @ eq), np.broadcast_to(np.eye(k), eq.shape[:-2]
                                                                                         + (k, k)), **_tol(dtype))


@pytest.mark.parametrize("dtype", ALL)
def test_eigh(dtype):
    h = _herm(_rand((2, 4, 4), dtype))
    e, t = _pair(h)
    (ew, ev), (tw, tv) = ember.linalg.eigh(e), torch.linalg.eigh(t)
    _close(ew, tw, dtype)
    np.testing.assert_allclose(np.abs(_np(ev)), np.abs(_np(tv)), **_tol(dtype))   # columns up to sign / phase
    rec = (ev * ew.unsqueeze(-2).to(ev.dtype)) @ ember.linalg._linalg_api._mH(ev)
    np.testing.assert_allclose(_np(rec), h, **_tol(dtype))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,full", [((5, 3), False), ((3, 5), True), ((2, 4, 4), True), ((0, 3, 2), False)])
def test_svd(dtype, shape, full):
    a = _rand(shape, dtype, shift=False)
    e, t = _pair(a)
    (eu, es, evh), (tu, ts, tvh) = ember.linalg.svd(e, full), torch.linalg.svd(t, full)
    for x, y in ((eu, tu), (es, ts), (evh, tvh)):
        assert tuple(x.shape) == tuple(y.shape) and str(x.dtype)[6:] == str(y.dtype)[6:]
    _close(es, ts, dtype)
    k = es.shape[-1]
    rec = (eu[..., :, :k] * es.unsqueeze(-2).to(eu.dtype)) @ evh[..., :k, :]
    np.testing.assert_allclose(_np(rec), a, **_tol(dtype))
    # torch.svd: V, not Vh; some= / compute_uv=
    U, S, V = ember.svd(e)
    TU, TS, TV = torch.svd(t)
    assert tuple(V.shape) == tuple(TV.shape) and tuple(U.shape) == tuple(TU.shape)
    z = ember.svd(e, compute_uv=False)
    tz = torch.svd(t, compute_uv=False)
    _close(z.U, tz.U, dtype)
    _close(z.V, tz.V, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eig_reconstruction(dtype):
    a = _rand((2, 4, 4), dtype, shift=False)
    w, v = ember.linalg.eig(ember.tensor(a))
    tw, tv = torch.linalg.eig(torch.tensor(a))
    assert w.dtype == (ember.complex64 if dtype == "float32" else ember.complex128)
    assert str(tw.dtype)[6:] == str(w.dtype)[6:]
    W, V = _np(w), _np(v)
    np.testing.assert_allclose(a @ V, V * W[..., None, :], **_tol(dtype))


# ---------------------------------------------------------------- gradients (float64), against torch and gradcheck
def _grad_pair(fe, ft, *arrays):
    es = [ember.tensor(a).requires_grad_() for a in arrays]
    ts = [torch.tensor(a).requires_grad_() for a in arrays]
    oe, ot = fe(*es), ft(*ts)
    oe = oe if isinstance(oe, tuple) else (oe,)
    ot = ot if isinstance(ot, tuple) else (ot,)
    weights = [np.random.RandomState(40 + i).randn(*tuple(o.shape)) for i, o in enumerate(ot)]
    le = sum((o * ember.tensor(w)).sum() for o, w in zip(oe, weights))
    lt = sum((o * torch.tensor(w)).sum() for o, w in zip(ot, weights))
    ge = ember.autograd.grad(le, es)
    gt = torch.autograd.grad(lt, ts)
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-7, atol=1e-8)


def _sym(L, X):
    n = X.shape[-1]
    return X @ X.mT + n * L.eye(n, dtype=X.dtype)


_GRAD_CASES = {
    "det": (lambda L, A: L.linalg.det(A), [(2, 3, 3)]),
    "slogdet": (lambda L, A: L.linalg.slogdet(A)[1], [(3, 3)]),
    "inv": (lambda L, A: L.linalg.inv(A), [(2, 3, 3)]),
    "solve": (lambda L, A, B: L.linalg.solve(A, B), [(2, 3, 3), (3, 2)]),
    "solve_left_false": (lambda L, A, B: L.linalg.solve(A, B, left=False), [(3, 3), (2, 3)]),
    "cholesky": (lambda L, A: L.linalg.cholesky(_sym(L, A)), [(2, 3, 3)]),
    "cholesky_upper": (lambda L, A: L.linalg.cholesky(_sym(L, A), upper=True), [(3, 3)]),
    "qr_tall": (lambda L, A: L.linalg.qr(A), [(5, 3)]),
    "qr_wide": (lambda L, A: L.linalg.qr(A), [(3, 5)]),
    "eigh": (lambda L, A: (lambda w, v: (w, v.abs()))(*L.linalg.eigh(_sym(L, A))), [(2, 4, 4)]),
    "eigvalsh": (lambda L, A: L.linalg.eigvalsh(_sym(L, A)), [(4, 4)]),
    "svd": (lambda L, A: (lambda u, s, vh: (s, u @ vh, u.abs()))(*L.linalg.svd(A, full_matrices=False)), [(5, 3)]),
    "svd_wide": (lambda L, A: (lambda u, s, vh: (s, u @ vh))(*L.linalg.svd(A, full_matrices=False)), [(3, 5)]),
    "svdvals": (lambda L, A: L.linalg.svdvals(A), [(2, 4, 3)]),
    "pinv": (lambda L, A: L.linalg.pinv(A), [(5, 3)]),
    "lstsq": (lambda L, A, B: L.linalg.lstsq(A, B).solution, [(5, 3), (5, 2)]),
    "matrix_exp": (lambda L, A: L.linalg.matrix_exp(A), [(2, 3, 3)]),
    "solve_triangular": (lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True), [(3, 3), (3, 2)]),
    "solve_triangular_unit": (lambda L, A, B: L.linalg.solve_triangular(A, B, upper=False, left=False,
                                                                         unitriangular=True), [(3, 3), (2, 3)]),
    "lu_factor": (lambda L, A: L.linalg.lu_factor(A)[0], [(2, 3, 3)]),
    "lu": (lambda L, A: L.linalg.lu(A)[1:], [(3, 3)]),
    "lu_solve": (lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B), [(3, 3), (3, 2)]),
    "lu_solve_adjoint": (lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B, adjoint=True),
                         [(3, 3), (3, 2)]),
    "matrix_power": (lambda L, A: L.linalg.matrix_power(A, -3), [(3, 3)]),
    "cond": (lambda L, A: L.linalg.cond(A), [(3, 3)]),
    "trace": (lambda L, A: L.trace(A), [(3, 3)]),
    "diag_embed": (lambda L, A: L.diag_embed(A, 1), [(2, 3)]),
    "cholesky_solve": (lambda L, A, B: L.cholesky_solve(B, L.linalg.cholesky(_sym(L, A))), [(3, 3), (3, 2)]),
    "cdist": (lambda L, A, B: L.cdist(A, B), [(4, 3), (5, 3)]),
    "cov": (lambda L, A: L.cov(A), [(3, 6)]),
}


@pytest.mark.parametrize("case", sorted(_GRAD_CASES))
def test_gradients_match_torch(case):
    f, shapes = _GRAD_CASES[case]
    arrays = [_rand(s, "float64", seed=i) for i, s in enumerate(shapes)]
    _grad_pair(lambda *xs: f(ember, *xs), lambda *xs: f(torch, *xs), *arrays)


@pytest.mark.parametrize("case", ["det", "inv", "solve", "cholesky", "qr_tall", "eigh", "svd", "matrix_exp",
                                  "lu_solve", "solve_triangular"])
def test_gradcheck(case):
    f, shapes = _GRAD_CASES[case]
    xs = tuple(ember.tensor(_rand(s, "float64", seed=i)).requires_grad_() for i, s in enumerate(shapes))
    assert ember.autograd.gradcheck(lambda *a: f(ember, *a), xs)


def test_qr_mode_r_not_differentiable():
    a = ember.tensor(_rand((4, 3), "float64")).requires_grad_()
    t = torch.tensor(_rand((4, 3), "float64")).requires_grad_()
    with pytest.raises(RuntimeError) as te:
        torch.linalg.qr(t, "r")[1].sum().backward()
    with pytest.raises(RuntimeError) as ee:
        ember.linalg.qr(a, "r")[1].sum().backward()
    assert str(ee.value) == str(te.value)


# ---------------------------------------------------------------- errors
def _same_error(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    assert isinstance(ee.value, RuntimeError) == isinstance(te.value, RuntimeError)
    assert isinstance(ee.value, ember.linalg.LinAlgError) == isinstance(te.value, torch.linalg.LinAlgError)
    assert str(ee.value) == str(te.value)


def _singular(batch=True):
    a = np.tile(np.eye(3), (2, 1, 1))
    a[1, 2, :] = 0
    return a if batch else a[1]


@pytest.mark.parametrize("batch", [True, False])
def test_singular_errors(batch):
    e, t = _pair(_singular(batch))
    _same_error(lambda: ember.linalg.inv(e), lambda: torch.linalg.inv(t))
    _same_error(lambda: ember.inverse(e), lambda: torch.inverse(t))
    _same_error(lambda: ember.linalg.solve(e, e), lambda: torch.linalg.solve(t, t))
    _same_error(lambda: ember.linalg.cholesky(e), lambda: torch.linalg.cholesky(t))
    _same_error(lambda: ember.linalg.lu_factor(e), lambda: torch.linalg.lu_factor(t))
    for name in ("inv_ex", "cholesky_ex", "lu_factor_ex"):
        _same_error(lambda: getattr(ember.linalg, name)(e, check_errors=True),
                    lambda: getattr(torch.linalg, name)(t, check_errors=True))
    _same_error(lambda: ember.linalg.solve_ex(e, e, check_errors=True),
                lambda: torch.linalg.solve_ex(t, t, check_errors=True))


def test_ex_variants_return_info():
    e, t = _pair(_singular())
    for fe, ft in ((ember.linalg.inv_ex, torch.linalg.inv_ex), (ember.linalg.cholesky_ex, torch.linalg.cholesky_ex),
                   (ember.linalg.lu_factor_ex, torch.linalg.lu_factor_ex)):
        ie, it = fe(e).info, ft(t).info
        assert ie.dtype == ember.int32 and ie.tolist() == it.tolist()
    assert ember.linalg.solve_ex(e, e).info.tolist() == torch.linalg.solve_ex(t, t).info.tolist()
    np.testing.assert_allclose(_np(ember.linalg.inv_ex(e).inverse[0]), np.eye(3))


def test_argument_errors():
    f = lambda L, *s, dtype="float32": L.ones(*s, dtype=getattr(L, dtype))   # noqa: E731
    cases = [
        lambda L: L.linalg.inv(f(L, 2, 3)),
        lambda L: L.linalg.det(f(L, 3)),
        lambda L: L.linalg.inv(f(L, 3, 3, dtype="int64")),
        lambda L: L.linalg.inv(f(L, 3, 3, dtype="float16")),
        lambda L: L.linalg.solve(L.eye(3), f(L, 4)),
        lambda L: L.linalg.solve(L.eye(3), f(L, 3, dtype="float64")),
        lambda L: L.linalg.eigh(f(L, 2, 3)),
        lambda L: L.linalg.svd(f(L, 3, 3, dtype="int32")),
        lambda L: L.linalg.qr(f(L, 3, 3), mode="x"),
        lambda L: L.linalg.matrix_power(f(L, 2, 3), 2),
        lambda L: L.linalg.lstsq(f(L, 3, 3), f(L, 4, 3)),
        lambda L: L.linalg.cholesky(f(L, 2, 3)),
        lambda L: L.linalg.cross(f(L, 3, 2), f(L, 3, 2)),
        lambda L: L.linalg.multi_dot([f(L, 3)]),
        lambda L: L.trace(f(L, 3)),
        lambda L: L.diag(f(L, 2, 2, 2)),
        lambda L: L.cdist(f(L, 3, 2), f(L, 3, 3)),
        lambda L: L.cov(f(L, 2, 2, 2)),
    ]
    for c in cases:
        _same_error(lambda: c(ember), lambda: c(torch))


# ---------------------------------------------------------------- top level and Tensor methods
def test_top_level_and_methods():
    a = _rand((3, 3), "float64")
    v = _rand((4,), "float64", 1, shift=False)
    e, t = _pair(a)
    h = _herm(a)
    L = np.linalg.cholesky(h)
    b = _rand((3, 2), "float64", 2)
    m = _rand((3, 6), "float64", 3, shift=False)
    pairs = [
        (lambda T, x: T.det(x), a), (lambda T, x: x.det(), a), (lambda T, x: x.logdet(), h),
        (lambda T, x: T.logdet(-x), h), (lambda T, x: x.slogdet(), a), (lambda T, x: x.inverse(), a),
        (lambda T, x: x.pinverse(), m), (lambda T, x: x.matrix_exp(), a), (lambda T, x: T.matrix_power(x, 3), a),
        (lambda T, x: x.trace(), a), (lambda T, x: x.diag(), a), (lambda T, x: T.diag(x, -1), v),
        (lambda T, x: T.diag_embed(x, 1, 0, 2), m), (lambda T, x: T.diagflat(x, 2), v),
        (lambda T, x: T.block_diag(x, x[0], x[0, 0]), a), (lambda T, x: T.cross(x, x.flip((0,)), dim=0), a),
        (lambda T, x: T.dist(x, x.T, 3), a), (lambda T, x: x.cov(), m), (lambda T, x: x.corrcoef(), m),
        (lambda T, x: x.renorm(2, 0, 1.5), a), (lambda T, x: T.cholesky_inverse(x), L),
        (lambda T, x: x.cholesky_solve(x @ x.T), L), (lambda T, x: T.triangular_solve(x[:, :2], x, upper=False), a),
        (lambda T, x: T.qr(x, some=False)[1].abs(), m.T.copy()), (lambda T, x: T.svd(x)[1], m),
        (lambda T, x: T.cdist(x, x[:2], p=1), a), (lambda T, x: x.cholesky(), h),
    ]
    for fn, arr in pairs:
        re, rt = fn(ember, ember.tensor(arr)), fn(torch, torch.tensor(arr))
        re, rt = (re, rt) if isinstance(rt, tuple) else ((re,), (rt,))
        for x, y in zip(re, rt):
            assert tuple(x.shape) == tuple(y.shape)
            np.testing.assert_allclose(_np(x), _np(y), rtol=1e-9, atol=1e-9)
    assert type(ember.svd(e)).__name__ == "svd" and ember.svd(e)._fields == ("U", "S", "V")
    assert ember.linalg.svd(e)._fields == ("U", "S", "Vh")
    _close(ember.trace(ember.arange(9).reshape(3, 3)), torch.trace(torch.arange(9).reshape(3, 3)))
    _close(ember.cholesky_solve(ember.tensor(b), ember.tensor(L)), torch.cholesky_solve(torch.tensor(b),
                                                                                        torch.tensor(L)))


def test_same_program_under_both():
    """A small program that runs unchanged with ``import torch`` and ``import ember as torch``."""
    def program(T):
        T.manual_seed(0)
        A = T.tensor(_rand((3, 3), "float64"))
        b = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
        x = T.linalg.solve(A, b)
        L = T.linalg.cholesky(A @ A.mT)
        res = (A @ x - b).abs().max()
        return x, T.linalg.det(L).square(), res
    for x, y in zip(program(ember), program(torch)):
        np.testing.assert_allclose(_np(x), _np(y), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- host path on a device without LAPACK kernels
def test_host_path_on_vdev_is_visible():
    from ember import profiler, _dispatch
    try:
        A = ember.tensor(_rand((2, 3, 3), "float64")).to("vdev")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"vdev not available: {e}")
    _dispatch._fallback_warned.discard("linalg_solve_ex")
    with warnings.catch_warnings(record=True) as w, profiler.record_fallbacks() as rec:
        warnings.simplefilter("always")
        x = ember.linalg.solve(A, A)
    assert x.device.type == "vdev"
    assert rec.counts.get("linalg_solve_ex") == 1
    assert any("running it through its host path" in str(m.message) for m in w)
    np.testing.assert_allclose(_np(x), np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-12)
    assert _dispatch.ops["linalg_solve_ex"].source(("vdev", "strided", ember.float64)) == "fallback"
    assert _dispatch.ops["linalg_solve_ex"].source(("cpu", "strided", ember.float64)) == "native"


def test_host_path_error_mode(monkeypatch):
    monkeypatch.setenv("EMBER_FALLBACK_WARN", "error")
    try:
        A = ember.tensor(_rand((3, 3), "float64")).to("vdev")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"vdev not available: {e}")
    with pytest.raises(RuntimeError, match="EMBER_FALLBACK_WARN=error forbids running it through its host path"):
        ember.linalg.det(A)


# ---------------------------------------------------------------- Householder and LDL^T
@pytest.mark.parametrize("dtype", ALL)
def test_geqrf_householder_ormqr(dtype):
    a = _rand((2, 5, 3), dtype, shift=False)
    e, t = _pair(a)
    (ea, etau), (ta, ttau) = ember.geqrf(e), torch.geqrf(t)
    _close(ea, ta, dtype)
    _close(etau, ttau, dtype)
    _close(ember.linalg.householder_product(ea, etau), torch.linalg.householder_product(ta, ttau), dtype)
    _close(ember.linalg.householder_product(ea, etau[..., :2]), torch.linalg.householder_product(ta, ttau[..., :2]),
           dtype)
    for shape, left in (((2, 5, 2), True), ((2, 5), False)):
        c = _rand(shape if left else (2, 2, 5), dtype, 1, shift=False)
        for tr in (False, True):
            _close(ember.ormqr(ea, etau, ember.tensor(c), left, tr), torch.ormqr(ta, ttau, torch.tensor(c), left, tr),
                   dtype)
    _close(e.geqrf()[0], t.geqrf()[0], dtype)


@pytest.mark.parametrize("dtype", ALL)
def test_ldl(dtype):
    x = _rand((2, 4, 4), dtype, shift=False)
    s = x + np.conj(np.swapaxes(x, -1, -2))
    herm = "complex" in dtype
    e, t = _pair(s)
    re, rt = ember.linalg.ldl_factor_ex(e, hermitian=herm), torch.linalg.ldl_factor_ex(t, hermitian=herm)
    for p, q in zip(re, rt):
        _close(p, q, dtype)
    b = _rand((2, 4, 3), dtype, 1, shift=False)
    _close(ember.linalg.ldl_solve(re.LD, re.pivots, ember.tensor(b), hermitian=herm),
           torch.linalg.ldl_solve(rt.LD, rt.pivots, torch.tensor(b), hermitian=herm), dtype, rtol=1e-3, atol=1e-3)
    LD, piv = ember.linalg.ldl_factor(e, hermitian=herm)
    assert piv.dtype == ember.int32 and tuple(LD.shape) == (2, 4, 4)


def test_not_differentiable_like_torch():
    a = ember.tensor(_rand((3, 3), "float64")).requires_grad_()
    # torch raises NotImplementedError (a RuntimeError subclass); ember's generic node a RuntimeError
    with pytest.raises(RuntimeError, match="the derivative for 'geqrf' is not implemented"):
        ember.geqrf(a)[0].sum().backward()
    with pytest.raises(RuntimeError, match="linalg_ldl_factor_ex"):
        ember.linalg.ldl_factor(a)[0].sum().backward()


def test_shape_errors_householder_ldl():
    f = lambda L, *s: L.ones(*s)   # noqa: E731
    cases = [
        lambda L: L.linalg.householder_product(f(L, 3, 5), f(L, 2)),
        lambda L: L.linalg.householder_product(f(L, 5, 3), f(L, 4)),
        lambda L: L.geqrf(f(L, 3)),
        lambda L: L.ormqr(f(L, 5, 3), f(L, 3), f(L, 4, 2)),
        lambda L: L.linalg.ldl_factor(f(L, 2, 3)),
        lambda L: L.linalg.ldl_solve(L.eye(3), L.ones(3, dtype=L.int32), f(L, 4, 1)),
    ]
    for c in cases:
        _same_error(lambda: c(ember), lambda: c(torch))
