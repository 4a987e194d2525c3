"""cpu kernels of ember.linalg's decompositions and solvers: LAPACK through numpy.linalg and
scipy.linalg, batched (numpy's gufuncs and scipy's batch support broadcast the leading dims).

numpy raises ``LinAlgError`` on a singular / non-positive-definite matrix without saying
where; the kernels then compute PyTorch's ``info`` per matrix (the first exactly-zero
diagonal element of the LU factor, or LAPACK potrf's failing minor) and leave the
results of the failing matrices NaN. The public functions raise from ``info``.
float32 / float64 / complex64 / complex128 only (the ops' metas refuse the rest).
"""
from __future__ import annotations

import warnings

import numpy as np
import ember

from ._util import np_view

DTYPES = frozenset({ember.float32, ember.float64, ember.complex64, ember.complex128})


def _sla():
    """scipy.linalg, imported on first use (it costs ~0.2 s; most programs never call a decomposition)."""
    import scipy.linalg
    return scipy.linalg


def _a(t):
    return np_view(t)


def _put(out, value):
    np.copyto(np_view(out), value, casting="unsafe")


def _lu(a):
    """(lu, 0-based pivots) of ``a`` (*, m, n) with scipy's batched getrf, singular matrices allowed."""
    if a.size == 0:
        k = min(a.shape[-2:])
        return a.copy(), np.zeros(a.shape[:-2] + (k,), np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _sla().LinAlgWarning)
        lu, piv = _sla().lu_factor(a, check_finite=False)
    return lu, piv


def _lu_info(lu):
    """getrf's info per matrix: 1 + the index of the first exactly-zero diagonal element of U, else 0."""
    d = np.diagonal(lu, axis1=-2, axis2=-1) == 0
    if d.shape[-1] == 0:
        return np.zeros(d.shape[:-1], np.int32)
    return np.where(d.any(-1), d.argmax(-1) + 1, 0).astype(np.int32)


def _batch(a, b):
    """``a`` (*, n, n) and ``b`` (*, n, k) with their batch dims broadcast."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])


# ---------------------------------------------------------------- determinants and inverses
def linalg_det(A, *, out):
    """cpu kernel of ``linalg_det``: np.linalg.det of (*, n, n) into ``out`` (*)."""
    _put(out, np.linalg.det(_a(A)))


def linalg_slogdet(A, *, out):
    """cpu kernel of ``linalg_slogdet``: np.linalg.slogdet into (sign, logabsdet)."""
    s, l = np.linalg.slogdet(_a(A))
    _put(out[0], s)
    _put(out[1], l)


def linalg_inv_ex(A, *, out):
    """cpu kernel of ``linalg_inv_ex``: np.linalg.inv; for a batch with a singular matrix, getrf's info and NaN
    for the singular matrices' inverses."""
    a = _a(A)
    try:
        _put(out[0], np.linalg.inv(a))
        _put(out[1], 0)
        return
    except np.linalg.LinAlgError:
        pass
    lu, _ = _lu(a)
    info = _lu_info(lu)
    bad = info != 0
    inv = np.full(a.shape, np.nan, dtype=a.dtype)
    inv[~bad] = np.linalg.inv(a[~bad])
    _put(out[0], inv)
    _put(out[1], info)


def linalg_solve_ex(A, B, *, out):
    """cpu kernel of ``linalg_solve_ex``: np.linalg.solve (A (*, n, n), B (*, n, k), batches broadcast); info as
    getrf's for a batch with a singular matrix (NaN results there)."""
    a, b = _batch(_a(A), _a(B))
    try:
        _put(out[0], np.linalg.solve(a, b))
        _put(out[1], 0)
        return
    except np.linalg.LinAlgError:
        pass
    info = _lu_info(_lu(a)[0])
    bad = info != 0
    x = np.full(b.shape, np.nan, dtype=b.dtype)
    x[~bad] = np.linalg.solve(a[~bad], b[~bad])
    _put(out[0], x)
    _put(out[1], info)


# ---------------------------------------------------------------- factorizations
def _potrf_info(a, lower):
    """potrf's info per matrix of ``a`` (*, n, n)."""
    flat = a.reshape((-1,) + a.shape[-2:])
    potrf = _sla().lapack.get_lapack_funcs("potrf", (flat,))
    info = np.array([potrf(m, lower=lower, clean=True)[1] for m in flat], np.int32)
    return info.reshape(a.shape[:-2])


def linalg_cholesky_ex(A, *, upper=False, out):
    """cpu kernel of ``linalg_cholesky_ex``: np.linalg.cholesky (lower triangle read); for a batch with a matrix
    that is not positive-definite, potrf's info (the failing minor) and NaN factors there."""
    a = _a(A)
    try:
        _put(out[0], np.linalg.cholesky(a, upper=upper))
        _put(out[1], 0)
        return
    except np.linalg.LinAlgError:
        pass
    info = _potrf_info(a, lower=True)
    bad = info != 0
    L = np.full(a.shape, np.nan, dtype=a.dtype)
    L[~bad] = np.linalg.cholesky(a[~bad], upper=upper)
    _put(out[0], L)
    _put(out[1], info)


def linalg_qr(A, mode="reduced", *, out):
    """cpu kernel of ``linalg_qr``: np.linalg.qr (Householder, LAPACK geqrf / orgqr)."""
    a = _a(A)
    if a.size == 0:
        m, n = a.shape[-2:]
        if mode != "r":
            q = np.zeros(out[0].shape, a.dtype)
            k = min(q.shape[-1], m)
            q[..., range(k), range(k)] = 1
            _put(out[0], q)
        _put(out[1], 0)
        return
    if mode == "r":
        _put(out[1], np.linalg.qr(a, mode="r"))
        return
    q, r = np.linalg.qr(a, mode=mode)
    _put(out[0], q)
    _put(out[1], r)


def linalg_eigh(A, UPLO="L", *, out):
    """cpu kernel of ``linalg_eigh``: np.linalg.eigh (LAPACK syevd / heevd), eigenvalues ascending."""
    a = _a(A)
    if a.size == 0:
        _put(out[1], 0)
        return
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    _put(out[0], w)
    _put(out[1], v)


def linalg_eig(A, *, out):
    """cpu kernel of ``linalg_eig``: np.linalg.eig (LAPACK geev), complex results."""
    a = _a(A)
    if a.size == 0:
        return
    w, v = np.linalg.eig(a)
    _put(out[0], w)
    _put(out[1], v)


def linalg_svd(A, full_matrices=True, *, out):
    """cpu kernel of ``linalg_svd``: np.linalg.svd (LAPACK gesdd), singular values descending."""
    a = _a(A)
    if a.size == 0:
        for o in (out[0], out[2]):
            e = np.zeros(o.shape, a.dtype)
            k = min(o.shape[-2:])
            e[..., range(k), range(k)] = 1
            _put(o, e)
        return
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    _put(out[0], u)
    _put(out[1], s)
    _put(out[2], vh)


def linalg_lu_factor_ex(A, *, pivot=True, out):
    """cpu kernel of ``linalg_lu_factor_ex``: scipy.linalg.lu_factor (getrf, batched); pivots 1-based as LAPACK's."""
    lu, piv = _lu(_a(A))
    _put(out[0], lu)
    _put(out[1], piv + 1)
    _put(out[2], _lu_info(lu))


# ---------------------------------------------------------------- solvers and functions of matrices
def linalg_lu_solve(LU, pivots, B, *, adjoint=False, out):
    """cpu kernel of ``linalg_lu_solve``: scipy.linalg.lu_solve (getrs) with A or A^H, batches broadcast."""
    lu, b = _batch(_a(LU), _a(B))
    piv = np.broadcast_to(_a(pivots), lu.shape[:-1]) - 1
    if b.size == 0:
        return
    trans = (2 if np.iscomplexobj(lu) else 1) if adjoint else 0
    _put(out, _sla().lu_solve((lu, piv), b, trans=trans, check_finite=False))


def linalg_solve_triangular(A, B, *, upper, unitriangular=False, out):
    """cpu kernel of ``linalg_solve_triangular``: scipy.linalg.solve_triangular (trtrs), batches broadcast."""
    a, b = _batch(_a(A), _a(B))
    if b.size == 0:
        return
    _put(out, _sla().solve_triangular(a, b, lower=not upper, unit_diagonal=unitriangular, check_finite=False))


def linalg_matrix_exp(A, *, out):
    """cpu kernel of ``linalg_matrix_exp``: scipy.linalg.expm (Pade approximation with scaling and squaring)."""
    a = _a(A)
    if a.size == 0:
        return
    _put(out, _sla().expm(a))


# ---------------------------------------------------------------- Householder and LDL^T: LAPACK per matrix
def _lapack(name, a):
    """The LAPACK routine ``name`` without its type letter ('geqrf' -> dgeqrf / cgeqrf ...) for ``a``'s dtype."""
    return _sla().lapack.get_lapack_funcs(name, (a,))


def _each(a):
    """The batch indices of ``a`` (*, r, c): one () for a single matrix."""
    return np.ndindex(a.shape[:-2])


def geqrf(self, *, out):
    """cpu kernel of ``geqrf``: LAPACK geqrf per matrix (Householder vectors below the diagonal, R on and above)."""
    a = _a(self)
    qr, tau = np.array(a, copy=True), np.zeros(out[1].shape, a.dtype)
    if a.size:
        f = _lapack("geqrf", a)
        for idx in _each(a):
            r = f(a[idx])
            qr[idx], tau[idx] = r[0], r[1]
    _put(out[0], qr)
    _put(out[1], tau)


def linalg_householder_product(A, tau, *, out):
    """cpu kernel of ``linalg_householder_product``: LAPACK orgqr / ungqr per matrix (m >= n >= k)."""
    a, t = _a(A), _a(tau)
    q = np.zeros(a.shape, a.dtype)
    if a.size:
        f = _lapack("ungqr" if np.iscomplexobj(a) else "orgqr", a)
        for idx in _each(a):
            if t.shape[-1] == 0:
                q[idx] = np.eye(*a.shape[-2:], dtype=a.dtype)
            else:
                q[idx] = f(a[idx], t[idx])[0]
    _put(out, q)


def ormqr(self, input2, input3, left=True, transpose=False, *, out):
    """cpu kernel of ``ormqr``: LAPACK ormqr / unmqr per matrix: Q C, Q^H C, C Q or C Q^H with Q from geqrf's
    reflectors (``self``, ``input2`` = tau)."""
    a, t, c = _a(self), _a(input2), _a(input3)
    batch = np.broadcast_shapes(a.shape[:-2], t.shape[:-1], c.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    t = np.broadcast_to(t, batch + t.shape[-1:])
    c = np.broadcast_to(c, batch + c.shape[-2:])
    r = np.array(c, copy=True)
    k = t.shape[-1]
    if r.size and k:
        cplx = np.iscomplexobj(a)
        f = _lapack("unmqr" if cplx else "ormqr", a)
        trans = ("C" if cplx else "T") if transpose else "N"
        side = "L" if left else "R"
        for idx in _each(r):
            m = c.shape[-2] if left else c.shape[-1]
            lwork = max(1, 64 * max(c.shape[-2:]))
            r[idx] = f(side, trans, np.ascontiguousarray(a[idx][:m, :k]), t[idx], c[idx], lwork)[0]
    _put(out, r)


def linalg_ldl_factor_ex(self, *, hermitian=False, out):
    """cpu kernel of ``linalg_ldl_factor_ex``: LAPACK sytrf (hetrf for complex Hermitian) on the lower triangle;
    LD is the lower triangle of the factor, pivots LAPACK's (1-based; negative for 2x2 blocks)."""
    a = _a(self)
    ld = np.zeros(a.shape, a.dtype)
    piv = np.zeros(a.shape[:-1], np.int32)
    info = np.zeros(a.shape[:-2], np.int32)
    if a.size:
        f = _lapack("hetrf" if hermitian and np.iscomplexobj(a) else "sytrf", a)
        for idx in _each(a):
            r = f(a[idx], lower=1)
            ld[idx], piv[idx], info[idx] = np.tril(r[0]), r[1], r[2]
    _put(out[0], ld)
    _put(out[1], piv)
    _put(out[2], info)


def linalg_ldl_solve(LD, pivots, B, *, hermitian=False, out):
    """cpu kernel of ``linalg_ldl_solve``: LAPACK sytrs / hetrs per matrix, batches broadcast."""
    ld, b = _batch(_a(LD), _a(B))
    piv = np.broadcast_to(_a(pivots), ld.shape[:-1])
    x = np.array(b, copy=True)
    if x.size:
        f = _lapack("hetrs" if hermitian and np.iscomplexobj(ld) else "sytrs", ld)
        for idx in _each(ld):
            x[idx] = f(ld[idx], piv[idx], b[idx], lower=1)[0]
    _put(out, x)


def register(lib):
    """Register the decomposition and solver kernels for device 'cpu' (float32 / float64 / complex64 /
    complex128) on ``lib``."""
    for name in ("linalg_det", "linalg_slogdet", "linalg_inv_ex", "linalg_solve_ex", "linalg_cholesky_ex",
                 "linalg_qr", "linalg_eigh", "linalg_eig", "linalg_svd", "linalg_lu_factor_ex", "linalg_lu_solve",
                 "linalg_solve_triangular", "linalg_matrix_exp", "geqrf", "linalg_householder_product", "ormqr",
                 "linalg_ldl_factor_ex", "linalg_ldl_solve"):
        lib.impl(name, globals()[name], device="cpu", dtypes=DTYPES)
