"""The decompositions, solvers and matrix functions of ``ember.linalg`` (matches torch.linalg 2.13).

Thin functions over the ops of ``_linalg_decomp`` (which a device implements or runs on the
host) plus composites written with ember ops (pinv, matrix_rank, matrix_power, multi_dot,
cross, cond, tensorinv, tensorsolve, vander, lstsq, lu, lu_unpack): shapes, dtypes, error
classes and messages are PyTorch's. A singular or non-positive-definite input raises
``LinAlgError`` (a RuntimeError) with PyTorch's message; the ``*_ex`` variants return
``info`` (int32, 0 = success) instead, unless ``check_errors=True``.

Gradients: the ops are differentiable in float32 / float64 / complex64 / complex128 (derivatives
from PyTorch's FunctionsManual, in ``autograd/_linalg_formulas.py``) except ldl_factor and
ldl_solve; the composites differentiate through the ops they are built from. For complex eig /
eigh / svd the loss must not depend on the phase of the eigen- / singular vectors: backward raises
PyTorch's RuntimeError ("... specified up to multiplication by e^{i phi} ...") when it does.
"""
from __future__ import annotations

import builtins
import math

import ember
from . import _dtype as D
from . import return_types as RT
from . import _linalg_decomp as K
from ._linalg_decomp import check_float, check_matrix, check_same_dtype, check_square
from ._ops._linalg import _finish, matmul
from ._ops._meta import broadcast_shapes, check_tensor
from ._tensor import Tensor, _wrap_dim

__all__ = ["LinAlgError", "det", "slogdet", "inv", "inv_ex", "solve", "solve_ex", "cholesky", "cholesky_ex", "qr",
           "eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "lstsq", "pinv", "matrix_rank", "matrix_power",
           "multi_dot", "cross", "diagonal", "solve_triangular", "lu_factor", "lu_factor_ex", "lu", "lu_solve",
           "matrix_exp", "cond", "tensorinv", "tensorsolve", "vander", "lu_unpack", "householder_product",
           "ldl_factor", "ldl_factor_ex", "ldl_solve"]


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular / not positive-definite matrix): matches
    torch.linalg.LinAlgError, a RuntimeError subclass."""


LinAlgError.__module__ = "ember.linalg"


def _mH(x):
    """The conjugate transpose of the last two dims, for complex tensors too (ember's exact conj)."""
    from ._ops._linalg_composites import conj
    return conj(x.mT)


# ---------------------------------------------------------------- info -> errors
def _first_failure(info):
    """(flat batch index, info value) of the first failing matrix, or None (one host read when all succeeded)."""
    if info.numel() == 0 or not builtins.bool((info != 0).any()):
        return None
    vals = info.reshape(-1).tolist()
    i = next(j for j, v in enumerate(vals) if v != 0)
    return i, vals[i]


def _check_info(info, batched, message, cls=LinAlgError):
    """Raise ``cls(message(info value))`` for the first failing matrix, prefixed with its batch element."""
    bad = _first_failure(info)
    if bad is None:
        return
    i, v = bad
    text = message(v)
    if batched:
        head, _, tail = text.partition(": ")
        text = f"{head}: (Batch element {i}): {tail}"
    raise cls(text)


def _inv_msg(v, op="linalg.inv"):
    return (f"{op}: The diagonal element {v} is zero, the inversion could not be completed because the input "
            f"matrix is singular.")


def _solve_msg(v, op="torch.linalg.solve"):
    return f"{op}: The solver failed because the input matrix is singular."


def _cholesky_msg(v, op="linalg.cholesky"):
    return (f"{op}: The factorization could not be completed because the input is not positive-definite "
            f"(the leading minor of order {v} is not positive-definite).")


def _lu_msg(v, op="torch.linalg.lu_factor"):
    return (f"{op}: U[{v},{v}] is zero and using it on lu_solve would result in a division by "
            f"zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
            f"linalg.lu_factor_ex(A, pivot)")


def _finish_many(result, out, cls):
    """``result`` (a tuple), or copied into the tensors of ``out`` (a tuple of the same length)."""
    if out is None:
        return result
    return cls(*(_finish(r, o) for r, o in zip(result, out)))


# ---------------------------------------------------------------- determinants and inverses
def det(A, *, out=None):
    """Determinant of ``A`` (*, n, n) -> (*) (matches torch.linalg.det; LU with partial pivoting). float32 / float64
    / complex64 / complex128; RuntimeError for fewer than 2 dims, non-square matrices or other dtypes."""
    return K.linalg_det(A, out=out)


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of ``A`` (*, n, n) (matches torch.linalg.slogdet): det = sign * exp(logabsdet);
    ``sign`` is 0 and ``logabsdet`` -inf for a singular matrix; for complex ``A`` ``sign`` is the phase (complex)
    and ``logabsdet`` real."""
    return K.linalg_slogdet(A, out=out)


def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)`` of ``A`` (*, n, n) (matches torch.linalg.inv_ex): info (*) int32 is 0, or i > 0 when
    U[i, i] of A's LU factorization is exactly zero (the inverse is then not meaningful). With
    ``check_errors=True`` raises LinAlgError as ``inv`` does."""
    r = K.linalg_inv_ex(A)
    if check_errors:
        _check_info(r.info, A.dim() > 2, lambda v: _inv_msg(v, "linalg.inv_ex"))
    return _finish_many(r, out, RT.linalg_inv_ex)


def inv(A, *, out=None):
    """Inverse of ``A`` (*, n, n) (matches torch.linalg.inv). LinAlgError "linalg.inv: The diagonal element i is
    zero, ..." for a singular matrix; RuntimeError for non-square matrices or non-float dtypes."""
    r = K.linalg_inv_ex(A)
    _check_info(r.info, A.dim() > 2, _inv_msg)
    return _finish(r.inverse, out)


def _solve_args(op, A, B, left):
    """(A', B', vector_case) for the matrix op: B as (*, n, k), ``left=False`` as the transposed system."""
    check_square(op, A)
    check_tensor(B, op.replace(".", "_"), "B")
    check_float(op, A)
    check_same_dtype(op, A, B)
    n = A._shape[-1]
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and B._shape == A._shape[:-1])
    if vector:
        if B._shape[-1] != n:
            raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                               f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B._shape[-1]}x1)")
        B = B.unsqueeze(-1)
        if not left:
            raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not supported for left=False. "
                               f"In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    if not left:
        A, B = A.mT, B.mT
    return A, B, vector


def _solve(A, B, left):
    A2, B2, vector = _solve_args("linalg.solve", A, B, left)
    x, info = K.linalg_solve_ex(A2, B2)
    if not left:
        x = x.mT
    if vector:
        x = x.squeeze(-1)
    return x, info


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)`` of the system A X = B (``left``) or X A = B (matches torch.linalg.solve_ex): A (*, n, n),
    B (*, n, k) or a vector (n) / (*, n); batch dims broadcast. info (*) int32 as ``inv_ex``'s. RuntimeError for
    incompatible shapes or dtypes (A and B must share one)."""
    x, info = _solve(A, B, left)
    if check_errors:
        _check_info(info, A.dim() > 2, lambda v: _solve_msg(v, "torch.linalg.solve_ex"))
    return _finish_many(RT.linalg_solve_ex(x, info), out, RT.linalg_solve_ex)


def solve(A, B, *, left=True, out=None):
    """X with A X = B (or X A = B for ``left=False``) (matches torch.linalg.solve; LU with partial pivoting).
    Shapes as ``solve_ex``; LinAlgError "torch.linalg.solve: The solver failed because the input matrix is
    singular." for a singular A."""
    x, info = _solve(A, B, left)
    _check_info(info, A.dim() > 2, _solve_msg)
    return _finish(x, out)


# ---------------------------------------------------------------- factorizations
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``: the Cholesky factor of Hermitian positive-definite ``A`` (*, n, n) (matches
    torch.linalg.cholesky_ex; only the lower triangle is read); info (*) int32 is 0 or the order of the leading
    minor that is not positive-definite."""
    r = K.linalg_cholesky_ex(A, upper=upper)
    if check_errors:
        _check_info(r.info, A.dim() > 2, lambda v: _cholesky_msg(v, "linalg.cholesky_ex"))
    return _finish_many(r, out, RT.linalg_cholesky_ex)


def cholesky(A, *, upper=False, out=None):
    """Cholesky factor L (A = L L^H; or U with A = U^H U for ``upper``) of Hermitian positive-definite ``A``
    (*, n, n) (matches torch.linalg.cholesky). LinAlgError naming the leading minor for a matrix that is not
    positive-definite."""
    r = K.linalg_cholesky_ex(A, upper=upper)
    _check_info(r.info, A.dim() > 2, _cholesky_msg)
    return _finish(r.L, out)


def qr(A, mode="reduced", *, out=None):
    """``(Q, R)`` with A = Q R for ``A`` (*, m, n) (matches torch.linalg.qr; Householder): mode 'reduced' Q (*, m, k),
    R (*, k, n), k = min(m, n); 'complete' Q (*, m, m), R (*, m, n); 'r' an empty Q and R (*, k, n)."""
    return K.linalg_qr(A, mode, out=out)


def eigh(A, UPLO="L", *, out=None):
    """``(eigenvalues, eigenvectors)`` of Hermitian ``A`` (*, n, n) (matches torch.linalg.eigh): eigenvalues (*, n)
    real, ascending; eigenvectors (*, n, n) as columns, each defined up to sign (phase). Only the triangle
    ``UPLO`` ('L' or 'U') is read."""
    return K.linalg_eigh(A, UPLO, out=out)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (*, n), real and ascending, of Hermitian ``A`` (matches torch.linalg.eigvalsh)."""
    return _finish(K.linalg_eigh(A, UPLO).eigenvalues, out)


def eig(A, *, out=None):
    """``(eigenvalues, eigenvectors)`` of square ``A`` (*, n, n) (matches torch.linalg.eig): complex64 for float32
    input, complex128 for float64; eigenvectors of norm 1, each defined up to a phase."""
    return K.linalg_eig(A, out=out)


def eigvals(A, *, out=None):
    """Eigenvalues (*, n) of square ``A`` (matches torch.linalg.eigvals; complex)."""
    return _finish(K.linalg_eig(A).eigenvalues, out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """``(U, S, Vh)`` with A = U diag(S) Vh for ``A`` (*, m, n) (matches torch.linalg.svd): S (*, k) real,
    descending; U (*, m, m) / Vh (*, n, n) (``full_matrices``) or (*, m, k) / (*, k, n). ``driver`` is for CUDA in
    PyTorch; only None is accepted here."""
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    return K.linalg_svd(A, full_matrices, out=out)


def svdvals(A, *, driver=None, out=None):
    """Singular values (*, k), real, descending, of ``A`` (*, m, n) (matches torch.linalg.svdvals)."""
    return _finish(svd(A, False, driver=driver).S, out)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """``(LU, pivots, info)`` of ``A`` (*, m, n) (matches torch.linalg.lu_factor_ex; LAPACK getrf): L (unit lower,
    below the diagonal) and U packed in LU; pivots (*, min(m, n)) int32, 1-based row swaps; info (*) int32."""
    r = K.linalg_lu_factor_ex(A, pivot=pivot)
    if check_errors:
        _check_info(r.info, A.dim() > 2, lambda v: _lu_msg(v, "torch.linalg.lu_factor_ex"), RuntimeError)
    return _finish_many(r, out, RT.linalg_lu_factor_ex)


def lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)`` of ``A`` (matches torch.linalg.lu_factor). RuntimeError (as PyTorch's, not LinAlgError)
    when U has an exactly zero diagonal element."""
    r = K.linalg_lu_factor_ex(A, pivot=pivot)
    _check_info(r.info, A.dim() > 2, _lu_msg, RuntimeError)
    return _finish_many(RT.linalg_lu_factor(r.LU, r.pivots), out, RT.linalg_lu_factor)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from the packed ``lu_factor`` result (matches torch.lu_unpack): P (*, m, m) permutation,
    L (*, m, k) unit lower triangular, U (*, k, n) upper triangular, k = min(m, n); A = P L U. The permutation is
    built on the host from the pivots (small int data); L and U are views/ops of ``LU_data`` (differentiable)."""
    check_matrix("linalg.lu_unpack", LU_data, "LU_data")
    *b, m, n = LU_data._shape
    k = min(m, n)
    if unpack_data:
        eye_mk = ember.eye(m, k, dtype=LU_data._dtype, device=LU_data._device)
        L = LU_data[..., :, :k].tril(-1) + eye_mk
        U = LU_data[..., :k, :].triu()
    else:
        L = ember.empty(0, dtype=LU_data._dtype, device=LU_data._device)
        U = ember.empty(0, dtype=LU_data._dtype, device=LU_data._device)
    if unpack_pivots:
        P = _perm_from_pivots(LU_pivots, tuple(b), m, LU_data)
    else:
        P = ember.empty(0, dtype=LU_data._dtype, device=LU_data._device)
    return _finish_many(RT.lu_unpack(P, L, U), out, RT.lu_unpack)


def _perm_from_pivots(pivots, batch, m, like):
    """P (*, m, m) with A = P L U from LAPACK's 1-based row swaps (built on the host, copied to ``like``'s device)."""
    import numpy as np
    piv = np.asarray(pivots.detach().cpu().numpy(), dtype=np.int64)
    piv = piv.reshape((-1, pivots._shape[-1]) if pivots.dim() else (1, 0))
    nb = math.prod(batch)
    perms = np.tile(np.arange(m), (nb, 1))
    for j in range(piv.shape[-1]):
        r = piv[:nb, j] - 1
        idx = np.arange(nb)
        a, c = perms[idx, j].copy(), perms[idx, r].copy()
        perms[idx, j], perms[idx, r] = c, a
    P = np.zeros((nb, m, m), dtype=like._dtype.numpy_dtype)
    # row i of P^T is e_{perm[i]}: (P^T A)[i] = A[perm[i]], so P[perm[i], i] = 1
    bi, ci = np.repeat(np.arange(nb), m), np.tile(np.arange(m), nb)
    P[bi, perms.reshape(-1), ci] = 1
    return ember.tensor(P.reshape(batch + (m, m)), device=like._device)


def lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with A = P L U for ``A`` (*, m, n) (matches torch.linalg.lu; partial pivoting)."""
    LU, piv, _ = lu_factor_ex(A, pivot=pivot)
    P, L, U = lu_unpack(LU, piv)
    return _finish_many(RT.linalg_lu(P, L, U), out, RT.linalg_lu)


# ---------------------------------------------------------------- solvers and functions of matrices
def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B from ``lu_factor``'s (LU, pivots) (matches torch.linalg.lu_solve): ``adjoint`` solves
    A^H X = B, ``left=False`` X A = B; B (*, n, k), batch dims broadcast."""
    if not left:
        return _finish(_mH(K.linalg_lu_solve(LU, pivots, _mH(B), adjoint=not adjoint)), out)
    return K.linalg_lu_solve(LU, pivots, B, adjoint=adjoint, out=out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (``left``) or X A = B for triangular ``A`` (*, n, n) (matches torch.linalg.solve_triangular):
    only the ``upper`` / lower triangle is read, and with ``unitriangular`` not its diagonal (taken as ones)."""
    if not left:
        check_tensor(B, "linalg_solve_triangular", "B")
        return _finish(K.linalg_solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT, out)
    return K.linalg_solve_triangular(A, B, upper=upper, unitriangular=unitriangular, out=out)


def matrix_exp(A):
    """exp(A) of square ``A`` (*, n, n) (matches torch.linalg.matrix_exp; Pade with scaling and squaring)."""
    return K.linalg_matrix_exp(A)


def _tolerance(op, A, S_max, atol, rtol):
    """max(atol, rtol * S_max) with PyTorch's defaults (rtol = eps * max(m, n) when neither is given)."""
    eps = D.finfo(A._dtype.to_real).eps
    if rtol is None:
        rtol = eps * max(A._shape[-2], A._shape[-1]) if atol is None or (isinstance(atol, (int, float)) and
                                                                        atol <= 0) else 0.0
    atol = 0.0 if atol is None else atol
    return ember.maximum(_as_tensor(atol, S_max), _as_tensor(rtol, S_max) * S_max)


def _as_tensor(v, like):
    if isinstance(v, Tensor):
        return v.to(like._dtype)
    return ember.full((), v, dtype=like._dtype, device=like._device)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse (*, n, m) of ``A`` (*, m, n) (matches torch.linalg.pinv): from the SVD (or
    eigh for ``hermitian``), singular values <= max(atol, rtol * largest) treated as zero."""
    check_matrix("linalg.pinv", A)
    check_float("linalg.pinv", A)
    if A.numel() == 0:
        return _finish(ember.zeros(A._shape[:-2] + (A._shape[-1], A._shape[-2]), dtype=A._dtype,
                                   device=A._device), out)
    if hermitian:
        L, V = eigh(A)
        absL = L.abs()
        tol = _tolerance("linalg.pinv", A, absL.amax(-1, keepdim=True), atol, rtol)
        inv_l = ember.where(absL > tol, 1 / L, ember.zeros_like(L))
        return _finish(matmul(V * inv_l.unsqueeze(-2).to(V._dtype), _mH(V)), out)
    U, S, Vh = svd(A, full_matrices=False)
    tol = _tolerance("linalg.pinv", A, S[..., :1], atol, rtol)
    inv_s = ember.where(S > tol, 1 / S, ember.zeros_like(S))
    return _finish(matmul(_mH(Vh) * inv_s.unsqueeze(-2).to(A._dtype), _mH(U)), out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Number of singular values (|eigenvalues| for ``hermitian``) above max(atol, rtol * largest) of ``A``
    (*, m, n) -> (*) int64 (matches torch.linalg.matrix_rank)."""
    check_matrix("linalg.matrix_rank", A)
    check_float("linalg.matrix_rank", A)
    if A.numel() == 0:
        return _finish(ember.zeros(A._shape[:-2], dtype=ember.int64, device=A._device), out)
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    tol = _tolerance("linalg.matrix_rank", A, S.amax(-1, keepdim=True), atol, rtol)
    return _finish((S > tol).sum(-1), out)


def matrix_power(A, n, *, out=None):
    """A^n for square ``A`` (*, m, m) and an integer ``n`` (matches torch.linalg.matrix_power): repeated squaring;
    n = 0 gives the identity, n < 0 the power of the inverse (float / complex only)."""
    check_square("linalg.matrix_power", A)
    if isinstance(n, builtins.bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if n == 0:
        eye = ember.eye(A._shape[-1], dtype=A._dtype, device=A._device)
        return _finish(eye.expand(A._shape).clone(), out)
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return _finish(result.clone() if result is A else result, out)


def multi_dot(tensors, *, out=None):
    """The product of a list of matrices (matches torch.linalg.multi_dot): the first may be 1-D (a row vector), the
    last 1-D (a column vector), the others 2-D; evaluated left to right."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vec, last_vec = tensors[0].dim() == 1, tensors[-1].dim() == 1
    for i, t in enumerate(tensors):
        want = 1 if (i == 0 and first_vec) or (i == len(tensors) - 1 and last_vec) else 2
        if t.dim() != want and not (t.dim() in (1, 2) and i in (0, len(tensors) - 1)):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
        if t.dim() not in (1, 2):
            raise RuntimeError(f"multi_dot(): the {'first' if i == 0 else 'last'} tensor must be 1D or 2D but got "
                               f"{t.dim()}D")
    r = tensors[0].unsqueeze(0) if first_vec else tensors[0]
    for t in tensors[1:]:
        r = matmul(r, t.unsqueeze(-1) if t.dim() == 1 else t)
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return _finish(r, out)


def cross(input, other, *, dim=-1, out=None):
    """Cross product of 3-vectors along ``dim`` (matches torch.linalg.cross); other dims broadcast. RuntimeError
    unless both have size 3 at ``dim``."""
    check_tensor(input, "linalg_cross")
    check_tensor(other, "linalg_cross", "other")
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = _wrap_dim(dim, input.dim())
    if input._shape[d] != 3 or other._shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input._shape[d]} and "
                           f"{other._shape[d]}")
    shape = broadcast_shapes(input._shape, other._shape)
    a, b = input.expand(shape), other.expand(shape)
    c = [a.narrow(d, i, 1) for i in range(3)]
    e = [b.narrow(d, i, 1) for i in range(3)]
    r = ember.cat([c[1] * e[2] - c[2] * e[1], c[2] * e[0] - c[0] * e[2], c[0] * e[1] - c[1] * e[0]], d)
    return _finish(r, out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal(s) of ``A`` over the last two dims (matches torch.linalg.diagonal; a view)."""
    return ember.diagonal(A, offset, dim1, dim2)


def cond(A, p=None, *, out=None):
    """Condition number of ``A`` (matches torch.linalg.cond): p None / 2 / -2 from the singular values (any
    (*, m, n)); 'fro', 'nuc', inf, -inf, 1, -1 as norm(A) * norm(inv(A)) (square, invertible). Real result."""
    check_matrix("linalg.cond", A)
    if p in (None, 2, -2):
        S = svdvals(A)
        r = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
        return _finish(r, out)
    check_square("linalg.cond", A)
    from .linalg import matrix_norm
    return _finish(matrix_norm(A, p) * matrix_norm(inv(A), p), out)


def tensorinv(A, ind=2, *, out=None):
    """The tensor inverse of ``A`` over its first ``ind`` dims (matches torch.linalg.tensorinv): A reshaped to a
    square matrix (prod(shape[:ind]), prod(shape[ind:])), inverted, reshaped to shape[ind:] + shape[:ind]."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    left, right = A._shape[:ind], A._shape[ind:]
    if math.prod(left) != math.prod(right):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(right)} != {math.prod(left)}")
    r = inv(A.reshape(math.prod(left), math.prod(right)))
    return _finish(r.reshape(right + left), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B (matches torch.linalg.tensorsolve); ``dims`` of A are moved to the end
    first."""
    if dims is not None:
        nd = A.dim()
        ds = [_wrap_dim(d, nd) for d in dims]
        A = A.permute([i for i in range(nd) if i not in ds] + ds)
    rest = A._shape[B.dim():]
    n = math.prod(B._shape)
    if math.prod(rest) != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(result_shape) == prod(other.shape), but "
                           f"got {math.prod(rest)} != {n}")
    x = solve(A.reshape(n, n), B.reshape(n))
    return _finish(x.reshape(rest), out)


def vander(x, *, N=None):
    """The Vandermonde matrix (*, n, N) of ``x`` (*, n), columns x^0, x^1, ..., x^(N-1) (matches
    torch.linalg.vander; N defaults to n)."""
    check_tensor(x, "linalg_vander", "x")
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    n = x._shape[-1] if N is None else N
    if n <= 1:
        if n < 0:
            raise RuntimeError("N must be greater than 1.")
        return ember.ones(x._shape + (n,), dtype=x._dtype, device=x._device)
    cols = [ember.ones_like(x).unsqueeze(-1)] + [x.unsqueeze(-1)] * (n - 1)
    return ember.cat(cols, -1).cumprod(-1)


def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)`` of min ||A X - B|| (matches torch.linalg.lstsq on the cpu):
    A (*, m, n), B (*, m, k). The solution is pinv(A) B (differentiable through the SVD); ``driver`` 'gelsy'
    (default) returns rank and empty residuals / singular values, 'gelsd' / 'gelss' also the singular values and,
    for m > n and full rank, the residuals; 'gels' (QR, full rank) only the solution."""
    check_matrix("torch.linalg.lstsq", A)
    check_tensor(B, "linalg_lstsq", "B")
    check_float("torch.linalg.lstsq", A)
    check_same_dtype("torch.linalg.lstsq", A, B, ("self", "b"))
    drv = driver or "gelsy"
    if drv not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if A._shape[-2] != Bm._shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A._shape[-2:]
    eps = D.finfo(A._dtype.to_real).eps
    rc = eps * max(m, n) if rcond is None or rcond < 0 else rcond
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > rc * S[..., :1]
    inv_s = ember.where(keep, 1 / S, ember.zeros_like(S))
    x = matmul(_mH(Vh) * inv_s.unsqueeze(-2).to(A._dtype), matmul(_mH(U), Bm))
    empty = ember.empty(0, dtype=A._dtype.to_real, device=A._device)
    rank = keep.sum(-1) if drv != "gels" else ember.empty(0, dtype=ember.int64, device=A._device)
    sv = S if drv in ("gelsd", "gelss") else empty
    res = empty
    if drv != "gelsy" and m > n and builtins.bool((rank == n).all()):
        res = (matmul(A, x) - Bm).abs().square().sum(-2)
    return RT.linalg_lstsq(x.squeeze(-1) if vector else x, res, rank, sv)


# ---------------------------------------------------------------- Householder products and LDL^T
def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i below the diagonal of column i of
    ``A`` (*, m, n), m >= n >= k = tau.shape[-1] (matches torch.linalg.householder_product; LAPACK orgqr).
    Differentiable in ``A`` (its entries below the diagonal of the first k columns) and ``tau``."""
    return K.linalg_householder_product(A, tau, out=out)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """``(LD, pivots, info)``: the Bunch-Kaufman factorization of symmetric (``hermitian``: Hermitian) ``A``
    (*, n, n) from its lower triangle (matches torch.linalg.ldl_factor_ex; LAPACK sytrf / hetrf). pivots int32
    as LAPACK's (negative entries mark 2x2 blocks). Not differentiable (as PyTorch's)."""
    r = K.linalg_ldl_factor_ex(A, hermitian=hermitian)
    if check_errors:
        _check_info(r.info, A.dim() > 2, lambda v: f"torch.linalg.ldl_factor_ex: The factorization could not be "
                                                   f"completed because the input is singular (D[{v},{v}] is zero).")
    return _finish_many(r, out, RT.linalg_ldl_factor_ex)


def ldl_factor(A, *, hermitian=False, out=None):
    """``(LD, pivots)`` (matches torch.linalg.ldl_factor)."""
    r = K.linalg_ldl_factor_ex(A, hermitian=hermitian)
    return _finish_many(RT.linalg_ldl_factor(r.LD, r.pivots), out, RT.linalg_ldl_factor)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from ``ldl_factor``'s (LD, pivots) (matches torch.linalg.ldl_solve; LAPACK sytrs / hetrs)."""
    return K.linalg_ldl_solve(LD, pivots, B, hermitian=hermitian, out=out)
