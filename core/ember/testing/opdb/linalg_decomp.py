"""Op database entries: ember.linalg's decompositions and solvers (the ops of ``_linalg_decomp``).

Samples are well-conditioned by construction (uniform entries in [-1, 1) plus n on the
diagonal; Hermitian positive-definite inputs are built inside the entry's ``op`` as
A A^H + n I, so a gradient check perturbs A freely), batched, non-contiguous (transposed
and stride-2 views), with a 0-size batch and 1x1 matrices. Decompositions that are unique
only up to signs / phases are compared through invariants (reconstructions and absolute
values), which are also what the gradient checks differentiate (gauge-invariant losses, as
PyTorch's own OpInfos do). References are numpy.linalg / scipy.linalg in float64 /
complex128.
"""
from __future__ import annotations

import numpy as np

from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import seed_for, with_grad

__all__ = ["OPINFOS", "op_db"]

DTYPES = ("float32", "float64", "complex64", "complex128")
REAL = ("float32", "float64")
TOL = {"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4), "float64": (1e-7, 1e-7), "complex128": (1e-7, 1e-7)}


def _ember():
    import ember
    return ember


def _mH(x):
    from ember._linalg_api import _mH as mh
    return mh(x)


# ---------------------------------------------------------------- samples
class _Mk:
    """Well-conditioned matrices: uniform [-1, 1) entries plus ``shift`` * n on the diagonal."""

    def __init__(self, op, device, dtype, requires_grad):
        self.op, self.device, self.dtype, self.rg, self.k = op, device, dtype, requires_grad, 0

    def __call__(self, shape, *, shift=1.0, view=None, grad=True, tri=None):
        ember = _ember()
        self.k += 1
        x = make_tensor(shape, device=self.device, dtype=self.dtype, low=-1, high=1,
                        seed=seed_for(self.op, self.dtype, self.k))
        if shift and len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1] > 0:
            x = x + shift * shape[-1] * ember.eye(shape[-1], dtype=self.dtype, device=self.device)
        if tri == "upper":
            x = x.triu()
        elif tri == "lower":
            x = x.tril()
        if view == "t":                     # transposed strides
            x = x.mT.contiguous().mT
        elif view == "step" and x.numel():  # every other column of a wider matrix
            z = ember.zeros(shape[:-1] + (2 * shape[-1],), dtype=self.dtype, device=self.device)
            z[..., ::2] = x
            x = z[..., ::2]
        return with_grad(x.detach(), self.rg and grad)


def _square_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 3)), name="3x3")
    yield SampleInput(m((2, 4, 4)), name="batched")
    yield SampleInput(m((2, 3, 3), view="t"), name="transposed (noncontiguous)")
    yield SampleInput(m((3, 3), view="step"), name="stride-2 view")
    yield SampleInput(m((1, 1)), name="1x1")
    yield SampleInput(m((0, 3, 3)), name="0-size batch")


def _rect_samples(op, device, dtype, requires_grad=False):
    yield from _square_samples(op, device, dtype, requires_grad)
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((5, 3)), name="tall")
    yield SampleInput(m((2, 3, 5), view="t"), name="wide, batched, transposed")


def _solve_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 3)), (m((3, 2), shift=0),), name="matrix B")
    yield SampleInput(m((2, 3, 3)), (m((3,), shift=0),), name="vector B")
    yield SampleInput(m((2, 1, 3, 3), view="t"), (m((4, 3, 2), shift=0, view="step"),), name="broadcast, views")
    yield SampleInput(m((3, 3)), (m((2, 3), shift=0),), {"left": False}, name="left=False")
    yield SampleInput(m((0, 3, 3)), (m((0, 3, 1), shift=0),), name="0-size batch")


def _tri_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 3), tri="upper"), (m((3, 2), shift=0),), {"upper": True}, name="upper")
    yield SampleInput(m((2, 3, 3), tri="lower", view="t"), (m((3, 4), shift=0),), {"upper": False},
                      name="lower, batched, transposed")
    yield SampleInput(m((3, 3), tri="upper"), (m((2, 3), shift=0),), {"upper": True, "left": False,
                                                                      "unitriangular": True},
                      name="left=False, unitriangular")
    yield SampleInput(m((0, 3, 3)), (m((0, 3, 1), shift=0),), {"upper": True}, name="0-size batch")


def _exp_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 3), shift=0), name="3x3")
    yield SampleInput(m((2, 4, 4), shift=0, view="t"), name="batched, transposed")
    yield SampleInput(m((0, 2, 2), shift=0), name="0-size batch")


def _qr_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((4, 3)), name="tall, reduced")
    yield SampleInput(m((2, 3, 5), view="t"), name="wide, batched, transposed")
    yield SampleInput(m((3, 3)), ("complete",), name="square, complete")
    yield SampleInput(m((4, 3), grad=False), ("r",), name="mode r (not differentiable: no Q)")
    yield SampleInput(m((0, 3, 2)), name="0-size batch")


def _svd_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((4, 3), shift=0), (False,), name="tall, reduced")
    yield SampleInput(m((2, 3, 5), shift=0, view="t"), (False,), name="wide, batched, transposed")
    yield SampleInput(m((3, 3)), (True,), name="square, full")
    yield SampleInput(m((4, 2), shift=0), (True,), name="tall, full_matrices")
    yield SampleInput(m((0, 3, 2)), (False,), name="0-size batch")


# ---------------------------------------------------------------- ops under test (invariants) and references
def _herm(A):
    """A A^H + n I: Hermitian positive-definite, differentiable in A."""
    ember = _ember()
    n = A.shape[-1]
    return A @ _mH(A) + n * ember.eye(n, dtype=A.dtype, device=A.device)


def _np_herm(a):
    n = a.shape[-1]
    return a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)


def _up(a):
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def _real_of(like):
    return np.float32 if like.dtype in (np.float32, np.complex64) else np.float64


def _det_ref(a):
    return np.linalg.det(_up(a)).astype(a.dtype)


def _slogdet_ref(a):
    s, l = np.linalg.slogdet(_up(a))
    return s.astype(a.dtype), l.astype(_real_of(a))


def _inv_ex_ref(a):
    return np.linalg.inv(_up(a)).astype(a.dtype), np.zeros(a.shape[:-2], np.int32)


def _solve_ex_ref(a, b, left=True):
    a, b0 = _up(a), _up(b)
    vec = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    bm = b0[..., None] if vec else b0
    if not left:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(bm, -1, -2)), -1, -2)
    else:
        batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
        x = np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(bm, batch + bm.shape[-2:]))
    x = x[..., 0] if vec else x
    return x.astype(b.dtype), np.zeros(np.broadcast_shapes(a.shape[:-2], bm.shape[:-2]), np.int32)


def _cholesky_op(A, upper=False):
    from ember import linalg as L
    return L.cholesky_ex(_herm(A), upper=upper)


def _cholesky_ref(a, upper=False):
    L = np.linalg.cholesky(_np_herm(_up(a)))
    if upper:
        L = np.conj(np.swapaxes(L, -1, -2))
    return L.astype(a.dtype), np.zeros(a.shape[:-2], np.int32)


def _qr_op(A, mode="reduced"):
    from ember import linalg as L
    Q, R = L.qr(A, mode)
    if mode == "r":
        return R.abs()
    return Q @ R, R.abs()


def _qr_ref(a, mode="reduced"):
    R = np.linalg.qr(_up(a), mode="r" if mode == "r" else mode)
    R = R if mode == "r" else R[1]
    if mode == "r":
        return np.abs(R).astype(_real_of(a))
    return a, np.abs(R).astype(_real_of(a))


def _eigh_op(A):
    from ember import linalg as L
    w, V = L.eigh(_herm(A))
    return w, (V * w.unsqueeze(-2).to(V.dtype)) @ _mH(V)


def _eigh_ref(a):
    h = _np_herm(_up(a))
    return np.linalg.eigvalsh(h).astype(_real_of(a)), h.astype(a.dtype)


def _eig_op(A):
    from ember import linalg as L
    return L.eigvals(A)


def _eig_ref(a):
    w = np.linalg.eig(_up(a))[0].astype(np.complex128)
    return w.astype(np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128)


def _svd_op(A, full_matrices=True):
    from ember import linalg as L
    U, S, Vh = L.svd(A, full_matrices)
    k = S.shape[-1]
    return S, (U[..., :, :k] * S.unsqueeze(-2).to(U.dtype)) @ Vh[..., :k, :]


def _svd_ref(a, full_matrices=True):
    return np.linalg.svd(_up(a), compute_uv=False).astype(_real_of(a)) if a.size else \
        np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), _real_of(a)), a


def _lu_factor_ref(a):
    import scipy.linalg as sla
    if a.size == 0:
        return a, np.zeros(a.shape[:-1], np.int32), np.zeros(a.shape[:-2], np.int32)
    lu, piv = sla.lu_factor(_up(a))
    return lu.astype(a.dtype), (piv + 1).astype(np.int32), np.zeros(a.shape[:-2], np.int32)


def _lu_solve_op(A, B, left=True, adjoint=False):
    from ember import linalg as L
    LU, piv = L.lu_factor(A)
    return L.lu_solve(LU, piv, B, left=left, adjoint=adjoint)


def _lu_solve_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((3, 3)), (m((3, 2), shift=0),), name="matrix B")
    yield SampleInput(m((2, 3, 3), view="t"), (m((3, 4), shift=0, view="step"),), {"adjoint": True},
                      name="adjoint, broadcast, views")
    yield SampleInput(m((3, 3)), (m((2, 3), shift=0),), {"left": False}, name="left=False")
    yield SampleInput(m((0, 3, 3)), (m((0, 3, 1), shift=0),), name="0-size batch")


def _lu_solve_ref(a, b, left=True, adjoint=False):
    a = _up(a)
    if adjoint:
        a = np.conj(np.swapaxes(a, -1, -2))
    if not left:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(_up(b), -1, -2)), -1, -2)
        return x.astype(b.dtype)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(_up(b), batch + b.shape[-2:])
                           ).astype(b.dtype)


def _tri_ref(a, b, upper, left=True, unitriangular=False):
    import scipy.linalg as sla
    a, b0 = _up(a), _up(b)
    if not left:
        a, b0, upper = np.swapaxes(a, -1, -2), np.swapaxes(b0, -1, -2), not upper
    batch = np.broadcast_shapes(a.shape[:-2], b0.shape[:-2])
    a, b0 = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b0, batch + b0.shape[-2:])
    x = sla.solve_triangular(a, b0, lower=not upper, unit_diagonal=unitriangular) if b0.size else b0
    return (np.swapaxes(x, -1, -2) if not left else x).astype(b.dtype)


def _expm_ref(a):
    import scipy.linalg as sla
    return (sla.expm(_up(a)) if a.size else a).astype(a.dtype)


# ---------------------------------------------------------------- Householder and LDL^T (references built per matrix)
def _lapack_each(name, a, fn):
    """``fn(routine, matrix index)`` over the batch of ``a`` with the LAPACK routine ``name`` for its dtype."""
    from scipy.linalg import lapack
    f = lapack.get_lapack_funcs(name, (a,))
    for idx in np.ndindex(a.shape[:-2]):
        fn(f, idx)


def _geqrf_ref(a):
    a64 = _up(a)
    qr, tau = a64.copy(), np.zeros(a.shape[:-1][:-1] + (min(a.shape[-2:]),), a64.dtype)
    if a.size:
        def one(f, idx):
            r = f(a64[idx])
            qr[idx], tau[idx] = r[0], r[1]
        _lapack_each("geqrf", a64, one)
    return qr.astype(a.dtype), tau.astype(a.dtype)


def _reflectors_q(a, tau):
    """The full m x m Q = H_1 ... H_k of geqrf's reflectors (numpy, one matrix)."""
    m = a.shape[0]
    q = np.eye(m, dtype=a.dtype)
    for i in range(tau.shape[0]):
        v = np.zeros(m, a.dtype)
        v[i], v[i + 1:] = 1, a[i + 1:, i]
        q = q @ (np.eye(m, dtype=a.dtype) - tau[i] * np.outer(v, np.conj(v)))
    return q


def _householder_ref(a, tau):
    a64, t64 = _up(a), _up(tau)
    out = np.zeros(a.shape, a64.dtype)
    for idx in np.ndindex(a.shape[:-2]):
        out[idx] = _reflectors_q(a64[idx], t64[idx])[:, :a.shape[-1]]
    return out.astype(a.dtype)


def _ormqr_ref(a, tau, c, left=True, transpose=False):
    a64, t64, c64 = _up(a), _up(tau), _up(c)
    out = np.zeros(c.shape, c64.dtype)
    for idx in np.ndindex(c.shape[:-2]):
        q = _reflectors_q(a64[idx], t64[idx])
        q = np.conj(q.T) if transpose else q
        out[idx] = q @ c64[idx] if left else c64[idx] @ q
    return out.astype(c.dtype)


def _qr_packed(op, device, dtype, shapes):
    """(a, tau) of geqrf for random matrices of ``shapes`` (computed on the device by geqrf)."""
    import ember
    m = _Mk(op, device, dtype, False)
    for shape in shapes:
        yield tuple(ember.geqrf(m(shape, shift=0)))


def _householder_samples(op, device, dtype, requires_grad=False):
    names = ("tall", "batched", "square")
    for (a, tau), name in zip(_qr_packed(op, device, dtype, [(5, 3), (2, 4, 3), (3, 3)]), names):
        yield SampleInput(with_grad(a, requires_grad), (with_grad(tau, requires_grad),), name=name)
    a, tau = next(_qr_packed(op, device, dtype, [(5, 3)]))
    yield SampleInput(with_grad(a, requires_grad), (with_grad(tau[..., :2], requires_grad),),
                      name="fewer reflectors than columns")


def _ormqr_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    (a, tau), (b, taub) = _qr_packed(op, device, dtype, [(5, 3), (2, 4, 4)])
    a, tau, b, taub = (with_grad(x, requires_grad) for x in (a, tau, b, taub))
    yield SampleInput(a, (tau, m((5, 2), shift=0)), name="Q C")
    yield SampleInput(a, (tau, m((2, 5), shift=0), False, True), name="C Q^H")
    yield SampleInput(b, (taub, m((2, 4, 3), shift=0, view="t"), True, True), name="Q^H C, batched, transposed C")


def _ldl_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, False)
    herm = dtype.is_complex
    for shape, name in (((4, 4), "4x4"), ((2, 3, 3), "batched"), ((0, 3, 3), "0-size batch")):
        x = m(shape, shift=0)
        yield SampleInput(x + _mH(x), (), {"hermitian": herm}, name=name)
    x = m((3, 3), shift=0)
    yield SampleInput((x + x.mT).mT.contiguous().mT, (), {"hermitian": False},
                      name="symmetric, transposed strides")


def _ldl_ref(a, hermitian=False):
    a64 = _up(a)
    ld = np.zeros(a.shape, a64.dtype)
    piv = np.zeros(a.shape[:-1], np.int32)
    info = np.zeros(a.shape[:-2], np.int32)
    if a.size:
        def one(f, idx):
            r = f(a64[idx], lower=1)
            ld[idx], piv[idx], info[idx] = np.tril(r[0]), r[1], r[2]
        _lapack_each("hetrf" if hermitian and np.iscomplexobj(a64) else "sytrf", a64, one)
    return ld.astype(a.dtype), piv, info


def _ldl_solve_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, False)
    herm = dtype.is_complex
    x = m((2, 4, 4), shift=0)
    LD, piv = ember.linalg.ldl_factor(x + _mH(x), hermitian=herm)
    yield SampleInput(LD, (piv, m((2, 4, 3), shift=0)), {"hermitian": herm}, name="batched")
    yield SampleInput(LD[0], (piv[0], m((3, 4, 2), shift=0, view="step")), {"hermitian": herm},
                      name="broadcast, stride-2 B")


def _ldl_solve_ref(ld, piv, b, hermitian=False):
    ld64, b64 = _up(ld), _up(b)
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld64 = np.broadcast_to(ld64, batch + ld.shape[-2:])
    piv = np.broadcast_to(piv, batch + piv.shape[-1:])
    b64 = np.broadcast_to(b64, batch + b.shape[-2:])
    out = np.zeros(b64.shape, b64.dtype)

    def one(f, idx):
        out[idx] = f(ld64[idx], piv[idx], b64[idx], lower=1)[0]
    _lapack_each("hetrs" if hermitian and np.iscomplexobj(ld64) else "sytrs", ld64, one)
    return out.astype(b.dtype)


# ---------------------------------------------------------------- errors
def _errors(kind):
    def gen(op, device):
        import ember
        from ember.linalg import LinAlgError
        f = lambda s, **k: make_tensor(s, device=device, seed=3, **k)   # noqa: E731
        name = {"det": "linalg.det", "inv": "linalg.inv", "cholesky": "linalg.cholesky", "eigh": "linalg.eigh",
                "eig": "linalg.eig", "slogdet": "linalg.slogdet", "exp": "linalg.matrix_exp"}.get(kind)
        if name:
            yield ErrorInput(SampleInput(f((2, 3))), RuntimeError,
                             rf"{name}: A must be batches of square matrices, but they are 2 by 3 matrices")
            yield ErrorInput(SampleInput(f((3,))), RuntimeError,
                             rf"{name}: The input tensor A must have at least 2 dimensions.")
            yield ErrorInput(SampleInput(f((3, 3), dtype=ember.int64)), RuntimeError,
                             rf"{name}: Expected a floating point or complex tensor as input. Got Long")
        if kind == "inv":
            s = ember.eye(3, device=device)
            s[2, 2] = 0
            yield ErrorInput(SampleInput(s, (), {"check_errors": True}), LinAlgError,
                             r"linalg.inv_ex: The diagonal element 3 is zero, the inversion could not be completed "
                             r"because the input matrix is singular.")
        if kind == "cholesky":
            yield ErrorInput(SampleInput(f((2, 3))), RuntimeError,
                             r"A must be batches of square matrices, but they are 2 by 3 matrices")
        if kind == "solve":
            a = f((3, 3))
            yield ErrorInput(SampleInput(a, (f((4,)),)), RuntimeError,
                             r"linalg.solve: Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x1\)")
            yield ErrorInput(SampleInput(a, (f((3,), dtype=ember.float64),)), RuntimeError,
                             r"linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B "
                             r"of type Double instead")
            s = ember.zeros(2, 3, 3, device=device)
            yield ErrorInput(SampleInput(s, (f((2, 3, 1)),), {"check_errors": True}), LinAlgError,
                             r"torch.linalg.solve_ex: \(Batch element 0\): The solver failed because the input matrix "
                             r"is singular.")
        if kind == "qr":
            yield ErrorInput(SampleInput(f((3, 3)), ("x",)), RuntimeError, r"qr received unrecognized mode 'x'")
        if kind == "svd":
            yield ErrorInput(SampleInput(f((3, 3), dtype=ember.int32)), RuntimeError,
                             r"linalg.svd: Expected a floating point or complex tensor as input. Got Int")
        if kind == "lu":
            s = ember.zeros(2, 3, 3, device=device)
            yield ErrorInput(SampleInput(s, (), {"check_errors": True}), RuntimeError,
                             r"torch.linalg.lu_factor_ex: \(Batch element 0\): U\[1,1\] is zero")
    return gen


def _cholesky_errors(op, device):
    import ember
    from ember.linalg import LinAlgError
    yield ErrorInput(SampleInput(-ember.eye(3, device=device)), LinAlgError,
                     r"linalg.cholesky: The factorization could not be completed because the input is not "
                     r"positive-definite \(the leading minor of order 1 is not positive-definite\).")
    yield ErrorInput(SampleInput(make_tensor((2, 3), device=device, seed=1)), RuntimeError,
                     r"linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices")


def _build():
    from ember import linalg as L
    ops = []
    add = ops.append
    ag = dict(supports_autograd=True, dtypes=DTYPES, tolerances=TOL)
    add(OpInfo("linalg_det", op=L.det, ref=_det_ref, sample_inputs=_square_samples, error_inputs=_errors("det"),
               supports_out=True, **ag))
    add(OpInfo("linalg_slogdet", op=L.slogdet, ref=_slogdet_ref, sample_inputs=_square_samples,
               error_inputs=_errors("slogdet"), **ag))
    add(OpInfo("linalg_inv_ex", op=L.inv_ex, ref=_inv_ex_ref, sample_inputs=_square_samples,
               error_inputs=_errors("inv"), **ag))
    add(OpInfo("linalg_solve_ex", op=L.solve_ex, ref=_solve_ex_ref, sample_inputs=_solve_samples,
               error_inputs=_errors("solve"), **ag))
    add(OpInfo("linalg_cholesky_ex", op=_cholesky_op, ref=_cholesky_ref, sample_inputs=_square_samples, **ag))
    add(OpInfo("linalg_cholesky_ex", variant="errors", op=L.cholesky, error_inputs=_cholesky_errors,
               dtypes=DTYPES))
    add(OpInfo("linalg_qr", op=_qr_op, ref=_qr_ref, sample_inputs=_qr_samples, error_inputs=_errors("qr"), **ag))
    add(OpInfo("linalg_eigh", op=_eigh_op, ref=_eigh_ref, sample_inputs=_square_samples, **ag))
    add(OpInfo("linalg_eigh", variant="errors", op=L.eigh, error_inputs=_errors("eigh"), dtypes=DTYPES))
    add(OpInfo("linalg_eig", op=_eig_op, ref=_eig_ref, sample_inputs=_square_samples, error_inputs=_errors("eig"),
               **ag))
    add(OpInfo("linalg_svd", op=_svd_op, ref=_svd_ref, sample_inputs=_svd_samples, error_inputs=_errors("svd"), **ag))
    add(OpInfo("linalg_lu_factor_ex", op=L.lu_factor_ex, ref=_lu_factor_ref, sample_inputs=_square_samples,
               error_inputs=_errors("lu"), **ag))
    add(OpInfo("linalg_lu_solve", op=_lu_solve_op, ref=_lu_solve_ref, sample_inputs=_lu_solve_samples, **ag))
    add(OpInfo("linalg_solve_triangular", op=L.solve_triangular, ref=_tri_ref, sample_inputs=_tri_samples, **ag))
    add(OpInfo("linalg_matrix_exp", op=L.matrix_exp, ref=_expm_ref, sample_inputs=_exp_samples,
               error_inputs=_errors("exp"), **ag))
    add(OpInfo("geqrf", op=_ember().geqrf, ref=_geqrf_ref, sample_inputs=_rect_samples, dtypes=DTYPES,
               tolerances=TOL))
    add(OpInfo("linalg_householder_product", op=L.householder_product, ref=_householder_ref,
               sample_inputs=_householder_samples, **ag))
    add(OpInfo("ormqr", op=_ember().ormqr, ref=_ormqr_ref, sample_inputs=_ormqr_samples, **ag))
    add(OpInfo("linalg_ldl_factor_ex", op=L.ldl_factor_ex, ref=_ldl_ref, sample_inputs=_ldl_samples, dtypes=DTYPES,
               tolerances=TOL))
    add(OpInfo("linalg_ldl_solve", op=L.ldl_solve, ref=_ldl_solve_ref, sample_inputs=_ldl_solve_samples,
               dtypes=DTYPES, tolerances=TOL))
    return ops


OPINFOS = _build()
op_db = OPINFOS
