"""The decompositions and solvers behind ``ember.linalg``, declared as ops a device may implement.

Each op here (thirteen decompositions / solvers / matrix functions and five LAPACK-level
Householder and LDL^T routines) is a primitive with a kernel per device: the cpu plugin runs LAPACK through
numpy.linalg / scipy.linalg (batched). A device without a kernel for one of them gets the
op's *host path*: a composite that copies the arguments to the cpu device, runs the cpu
kernel and copies the results back. The host path is never silent: the dispatcher reports
it as ``fallback`` (``ember ops``, the ``F`` of ``ember conformance``), each call is counted
by ``ember.profiler.record_fallbacks``, a warning is issued once per op, and
``EMBER_FALLBACK_WARN=error`` turns it into a RuntimeError.

The ops take the matrix forms only (``B`` of shape (*, n, k), ``left=True``); the public
functions of ``ember.linalg`` (``_linalg_api``) handle vectors, ``left=False``, error
checks of the ``info`` outputs and the composites (pinv, matrix_rank, ...). Checks,
shapes and messages follow torch.linalg 2.13. ``info`` and ``pivots`` are int32, as
PyTorch's (LAPACK's convention: pivots are 1-based row swaps, info > 0 names the failing
diagonal element / minor).
"""
from __future__ import annotations


from . import _dtype as D
from . import _dispatch, return_types as RT
from ._dispatch import declare
from ._ops._meta import broadcast_shapes, check_tensor, same_device

__all__ = ["HOST_PATH_OPS"]

_LOWP = (D.float16, D.bfloat16)


def _tn(d):
    return D.torch_name(d)


def _key(A, dtype=None):
    return (A._device.type, A._layout.name, dtype or A._dtype)


# ---------------------------------------------------------------- argument checks (PyTorch's messages)
def check_matrix(op, A, name="A"):
    """RuntimeError unless ``A`` has at least 2 dims."""
    check_tensor(A, op)
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")


def check_square(op, A, name="A"):
    """RuntimeError unless ``A`` is a (batch of) square matrices."""
    check_matrix(op, A, name)
    if A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {A._shape[-2]} by "
                           f"{A._shape[-1]} matrices")


def check_float(op, A, allow_low=False):
    """RuntimeError unless ``A`` is float32 / float64 / complex64 / complex128."""
    dt = A._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {_tn(dt)}")
    if dt in _LOWP and not allow_low:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_tn(dt)}")


def check_same_dtype(op, A, B, names=("A", "B")):
    if A._dtype is not B._dtype:
        raise RuntimeError(f"{op}: Expected {names[0]} and {names[1]} to have the same dtype, but found "
                           f"{names[0]} of type {_tn(A._dtype)} and {names[1]} of type {_tn(B._dtype)} instead")


# ---------------------------------------------------------------- the host path
HOST_PATH_OPS: list = []     # names of the ops declared here (each has the host path, ``OpDef.host``)


def _with_host_path(entry):
    """Give the op behind ``entry`` its host path (``OpDef.host`` = ``ember.library.cpu_fallback``): on a device
    without a kernel, copy to cpu, run the LAPACK kernel, copy back — counted, warned about and reported as a
    fallback by the dispatcher."""
    from .library import cpu_fallback
    entry._op.host = cpu_fallback
    HOST_PATH_OPS.append(entry._op.name)
    return entry


def _declare(schema, meta, result_type=None, doc=None):
    return _with_host_path(declare(schema, meta, multi_output_type=result_type, doc=doc))


# ---------------------------------------------------------------- determinants and inverses
def _det_meta(A):
    check_square("linalg.det", A)
    check_float("linalg.det", A)
    return A._device, _key(A), A._shape[:-2], A._dtype


linalg_det = _declare("linalg_det(Tensor A) -> Tensor", _det_meta, doc="Determinant of (a batch of) square matrices.")


def _slogdet_meta(A):
    check_square("linalg.slogdet", A)
    check_float("linalg.slogdet", A)
    b = A._shape[:-2]
    return A._device, _key(A), ((b, A._dtype), (b, A._dtype.to_real))


linalg_slogdet = _declare("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", _slogdet_meta,
                          RT.linalg_slogdet, "Sign (or phase) and log |det| of square matrices.")


def _inv_ex_meta(A):
    check_square("linalg.inv", A)
    check_float("linalg.inv", A)
    return A._device, _key(A), ((A._shape, A._dtype), (A._shape[:-2], D.int32))


linalg_inv_ex = _declare("linalg_inv_ex(Tensor A) -> (Tensor inverse, Tensor info)", _inv_ex_meta,
                         RT.linalg_inv_ex, "Inverse and LAPACK info (0, or the zero diagonal element of U).")


def _solve_ex_meta(A, B):
    check_square("linalg.solve", A)
    check_float("linalg.solve", A)
    check_same_dtype("linalg.solve", A, B)
    device = same_device(A, B)
    if B.dim() < 2 or B._shape[-2] != A._shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A._shape[-2]}x{A._shape[-1]} and {B._shape[-2] if B.dim() >= 2 else B._shape[-1]}x"
                           f"{B._shape[-1] if B.dim() >= 2 else 1})")
    batch = broadcast_shapes(A._shape[:-2], B._shape[:-2])
    return device, _key(A), ((batch + B._shape[-2:], A._dtype), (batch, D.int32))


linalg_solve_ex = _declare("linalg_solve_ex(Tensor A, Tensor B) -> (Tensor result, Tensor info)", _solve_ex_meta,
                           RT.linalg_solve_ex, "X with A X = B (A (*, n, n), B (*, n, k), batches broadcast) and info.")


# ---------------------------------------------------------------- factorizations
def _cholesky_ex_meta(A, upper=False):
    check_square("linalg.cholesky", A)
    check_float("linalg.cholesky", A)
    return A._device, _key(A), ((A._shape, A._dtype), (A._shape[:-2], D.int32))


linalg_cholesky_ex = _declare("linalg_cholesky_ex(Tensor A, *, bool upper=False) -> (Tensor L, Tensor info)",
                              _cholesky_ex_meta, RT.linalg_cholesky_ex,
                              "Cholesky factor (lower, or upper) of Hermitian positive-definite matrices and info.")


def _qr_meta(A, mode="reduced"):
    check_matrix("linalg.qr", A)
    check_float("linalg.qr", A)
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    *b, m, n = A._shape
    b, k = tuple(b), min(m, n)
    if mode == "r":
        qs, rs = (0,), b + (k, n)
    elif mode == "complete":
        qs, rs = b + (m, m), b + (m, n)
    else:
        qs, rs = b + (m, k), b + (k, n)
    return A._device, _key(A), ((qs, A._dtype), (rs, A._dtype))


linalg_qr = _declare("linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", _qr_meta, RT.linalg_qr,
                     "QR decomposition (mode 'reduced', 'complete' or 'r').")


def _eigh_meta(A, UPLO="L"):
    check_square("linalg.eigh", A)
    check_float("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return A._device, _key(A), ((A._shape[:-1], A._dtype.to_real), (A._shape, A._dtype))


linalg_eigh = _declare("linalg_eigh(Tensor A, str UPLO=\"L\") -> (Tensor eigenvalues, Tensor eigenvectors)",
                       _eigh_meta, RT.linalg_eigh, "Eigenvalues (ascending) and eigenvectors of Hermitian matrices.")


def _eig_meta(A):
    check_square("linalg.eig", A)
    check_float("linalg.eig", A)
    c = A._dtype if A._dtype.is_complex else D.promote_types(A._dtype, D.complex64)
    return A._device, _key(A), ((A._shape[:-1], c), (A._shape, c))


linalg_eig = _declare("linalg_eig(Tensor A) -> (Tensor eigenvalues, Tensor eigenvectors)", _eig_meta, RT.linalg_eig,
                      "Eigenvalues and eigenvectors of general square matrices (complex results).")


def _svd_meta(A, full_matrices=True):
    check_matrix("linalg.svd", A)
    check_float("linalg.svd", A)
    *b, m, n = A._shape
    b, k = tuple(b), min(m, n)
    us, vs = (b + (m, m), b + (n, n)) if full_matrices else (b + (m, k), b + (k, n))
    return A._device, _key(A), ((us, A._dtype), (b + (k,), A._dtype.to_real), (vs, A._dtype))


linalg_svd = _declare("linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor U, Tensor S, Tensor Vh)", _svd_meta,
                      RT.linalg_svd, "Singular value decomposition A = U diag(S) Vh (S descending).")


def _lu_factor_ex_meta(A, pivot=True):
    check_matrix("torch.linalg.lu_factor", A)
    check_float("torch.linalg.lu_factor", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    *b, m, n = A._shape
    return A._device, _key(A), ((A._shape, A._dtype), (tuple(b) + (min(m, n),), D.int32), (tuple(b), D.int32))


linalg_lu_factor_ex = _declare("linalg_lu_factor_ex(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots, "
                               "Tensor info)", _lu_factor_ex_meta, RT.linalg_lu_factor_ex,
                               "Packed LU factorization with partial pivoting (LAPACK getrf) and info.")


# ---------------------------------------------------------------- solvers and functions of matrices
def _lu_solve_meta(LU, pivots, B, adjoint=False):
    check_square("linalg.lu_solve", LU, "LU")
    check_tensor(B, "linalg_lu_solve", "B")
    check_same_dtype("linalg.lu_solve", LU, B, ("LU", "B"))
    if pivots._dtype is not D.int32:
        raise RuntimeError(f"linalg.lu_solve: Expected pivots to be int32. Got {_tn(pivots._dtype)}")
    if B.dim() < 2 or B._shape[-2] != LU._shape[-1]:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({LU._shape[-2]}x{LU._shape[-1]} and {B._shape[-2] if B.dim() >= 2 else '?'}x"
                           f"{B._shape[-1]})")
    if pivots._shape != LU._shape[:-1]:
        raise RuntimeError("linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
                           f"pivots with shape {list(pivots._shape)} instead")
    batch = broadcast_shapes(LU._shape[:-2], B._shape[:-2])
    return same_device(LU, pivots, B), _key(LU), batch + B._shape[-2:], LU._dtype


linalg_lu_solve = _with_host_path(declare(
    "linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool adjoint=False) -> Tensor", _lu_solve_meta,
    doc="X with A X = B (or A^H X = B) from the packed LU factors of A."))


def _solve_triangular_meta(A, B, upper, unitriangular=False):
    check_square("linalg.solve_triangular", A)
    check_tensor(B, "linalg_solve_triangular", "B")
    check_float("linalg.solve_triangular", A)
    check_same_dtype("linalg.solve_triangular", A, B)
    if B.dim() < 2 or B._shape[-2] != A._shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({A._shape[-2]}x{A._shape[-1]} and {B._shape[-2] if B.dim() >= 2 else '?'}x"
                           f"{B._shape[-1]})")
    batch = broadcast_shapes(A._shape[:-2], B._shape[:-2])
    return same_device(A, B), _key(A), batch + B._shape[-2:], A._dtype


linalg_solve_triangular = _with_host_path(declare(
    "linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, bool unitriangular=False) -> Tensor",
    _solve_triangular_meta, doc="X with A X = B for a triangular A (the other triangle is not read)."))


def _matrix_exp_meta(A):
    check_square("linalg.matrix_exp", A)
    check_float("linalg.matrix_exp", A)
    return A._device, _key(A), A._shape, A._dtype


linalg_matrix_exp = _with_host_path(declare("linalg_matrix_exp(Tensor A) -> Tensor", _matrix_exp_meta,
                                            doc="Matrix exponential (Pade, scaling and squaring)."))


# ---------------------------------------------------------------- Householder and LDL^T (LAPACK-level)
def _geqrf_meta(A):
    check_tensor(A, "geqrf")
    if A.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_float("torch.geqrf", A)
    *b, m, n = A._shape
    return A._device, _key(A), ((A._shape, A._dtype), (tuple(b) + (min(m, n),), A._dtype))


geqrf = _declare("geqrf(Tensor self) -> (Tensor a, Tensor tau)", _geqrf_meta, RT.geqrf,
                 "LAPACK geqrf: R above the diagonal, Householder vectors below, and their scalars tau.")


def _householder_meta(A, tau):
    op = "torch.linalg.householder_product"
    check_tensor(A, "linalg_householder_product")
    check_tensor(tau, "linalg_householder_product", "tau")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if A._shape[-2] < A._shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if A._shape[-1] < (tau._shape[-1] if tau.dim() else 0):
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.dim() != A.dim() - 1 or tau._shape[:-1] != A._shape[:-2]:
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau._shape[:-1])}")
    check_float(op, A)
    check_same_dtype(op, A, tau, ("input", "tau"))
    return same_device(A, tau), _key(A), A._shape, A._dtype


linalg_householder_product = _with_host_path(declare(
    "linalg_householder_product(Tensor A, Tensor tau) -> Tensor", _householder_meta,
    doc="The first n columns of the product of Householder matrices (orgqr)."))


def _ormqr_meta(A, tau, other, left=True, transpose=False):
    op = "torch.ormqr"
    for x, n in ((A, "input"), (tau, "tau"), (other, "other")):
        check_tensor(x, "ormqr", n)
    if A.dim() < 2 or other.dim() < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    d = -2 if left else -1
    if other._shape[d] != A._shape[-2]:
        raise RuntimeError(f"{op}: other.shape[{d}] must be equal to input.shape[-2]")
    if tau._shape[-1] > A._shape[-1] or tau._shape[-1] > A._shape[-2]:
        raise RuntimeError(f"{op}: tau.shape[-1] must be less than or equal to input.shape[-1]")
    check_float(op, A)
    check_same_dtype(op, A, other, ("input", "other"))
    check_same_dtype(op, A, tau, ("input", "tau"))
    return same_device(A, tau, other), _key(A), other._shape, A._dtype


ormqr = _with_host_path(declare(
    "ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor", _ormqr_meta,
    doc="Q (from geqrf's Householder vectors) times a matrix, without forming Q (ormqr / unmqr)."))


def _ldl_factor_meta(A, hermitian=False):
    check_square("torch.linalg.ldl_factor_ex", A)
    check_float("torch.linalg.ldl_factor_ex", A)
    b = A._shape[:-2]
    return A._device, _key(A), ((A._shape, A._dtype), (A._shape[:-1], D.int32), (b, D.int32))


linalg_ldl_factor_ex = _declare("linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False) -> (Tensor LD, "
                                "Tensor pivots, Tensor info)", _ldl_factor_meta, RT.linalg_ldl_factor_ex,
                                "Bunch-Kaufman LDL^T (LDL^H) factorization (sytrf / hetrf) of the lower triangle.")


def _ldl_solve_meta(LD, pivots, B, hermitian=False):
    check_square("torch.linalg.ldl_solve", LD, "LD")
    check_tensor(B, "linalg_ldl_solve", "B")
    if B.dim() < 2 or B._shape[-2] != LD._shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is "
                           f"{LD._shape[-2]} by {LD._shape[-1]} but each b matrix is "
                           f"{B._shape[-2] if B.dim() >= 2 else 1} by {B._shape[-1]}")
    if pivots._dtype is not D.int32:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got {_tn(pivots._dtype)}")
    check_float("torch.linalg.ldl_solve", LD)
    check_same_dtype("torch.linalg.ldl_solve", LD, B, ("LD", "B"))
    batch = broadcast_shapes(LD._shape[:-2], B._shape[:-2])
    return same_device(LD, pivots, B), _key(LD), batch + B._shape[-2:], LD._dtype


linalg_ldl_solve = _with_host_path(declare(
    "linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor", _ldl_solve_meta,
    doc="X with A X = B from ldl_factor's (LD, pivots) (sytrs / hetrs)."))
