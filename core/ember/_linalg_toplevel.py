"""The top-level linear-algebra functions of torch (``torch.det``, ``torch.svd``, ``torch.trace``, ...) and their
Tensor methods, written over ``ember.linalg`` and ember ops (all differentiable through them).

The legacy conventions are PyTorch's: ``svd`` returns V (not Vh) and takes ``some`` /
``compute_uv``; ``qr`` takes ``some``; ``triangular_solve(b, A)`` takes the right-hand side
first and returns ``(solution, cloned_coefficient)``; ``logdet`` is NaN for a negative
determinant; ``cross`` without ``dim`` uses the first dim of size 3 (with PyTorch's warning).
``geqrf`` and ``ormqr`` are LAPACK-level ops (``_linalg_decomp``), not differentiable yet.
"""
from __future__ import annotations

import builtins
import math
import warnings

import ember
from . import _dtype as D
from . import linalg as LA
from . import return_types as RT
from ._linalg_api import _mH
from ._ops._linalg import _finish, matmul
from ._ops._meta import check_tensor
from ._tensor import Tensor, _wrap_dim

__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "cholesky_solve", "cholesky_inverse",
           "lu_unpack", "qr", "svd", "triangular_solve", "matrix_exp", "matrix_power", "trace", "diag", "diag_embed",
           "diagflat", "block_diag", "cross", "cdist", "dist", "cov", "corrcoef", "renorm", "geqrf", "ormqr"]


def det(input):
    """Determinant (matches torch.det = torch.linalg.det)."""
    return LA.det(input)


def logdet(input):
    """log(det(input)) (matches torch.logdet): -inf for a singular matrix, NaN for a negative determinant (real
    input)."""
    sign, lad = LA.slogdet(input)
    if input._dtype.is_complex:
        raise NotImplementedError("ember: logdet of complex matrices needs a complex log (not available yet)")
    return ember.where(sign < 0, ember.full((), math.nan, dtype=lad._dtype, device=lad._device), lad)


def slogdet(input):
    """``(sign, logabsdet)`` (matches torch.slogdet)."""
    r = LA.slogdet(input)
    return RT.slogdet(r.sign, r.logabsdet)


def inverse(input, *, out=None):
    """Inverse (matches torch.inverse = torch.linalg.inv)."""
    return LA.inv(input, out=out)


def pinverse(input, rcond=1e-15, hermitian=False):
    """Pseudo-inverse with singular values below ``rcond`` * largest dropped (matches torch.pinverse)."""
    return LA.pinv(input, rtol=rcond, hermitian=hermitian)


def cholesky(input, upper=False, *, out=None):
    """Cholesky factor (matches torch.cholesky; prefer ember.linalg.cholesky)."""
    return LA.cholesky(input, upper=upper, out=out)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B from the Cholesky factor of A (matches torch.cholesky_solve): ``L`` lower (A = L L^H) or
    upper (A = U^H U); B (*, n, k), batch dims broadcast. Two triangular solves."""
    if upper:
        y = LA.solve_triangular(_mH(L), B, upper=False)
        return _finish(LA.solve_triangular(L, y, upper=True), out)
    y = LA.solve_triangular(L, B, upper=False)
    return _finish(LA.solve_triangular(_mH(L), y, upper=True), out)


def cholesky_inverse(L, upper=False, *, out=None):
    """A^-1 from the Cholesky factor of A (matches torch.cholesky_inverse)."""
    eye = ember.eye(L._shape[-1], dtype=L._dtype, device=L._device)
    return _finish(cholesky_solve(eye.expand(L._shape), L, upper), out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from ``lu_factor``'s packed result (matches torch.lu_unpack)."""
    return LA.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots, out=out)


def qr(input, some=True, *, out=None):
    """``(Q, R)`` (matches torch.qr): reduced when ``some``, complete otherwise."""
    r = LA.qr(input, "reduced" if some else "complete")
    return _finish_tuple(RT.qr(r.Q, r.R), out, RT.qr)


def svd(input, some=True, compute_uv=True, *, out=None):
    """``(U, S, V)`` with input = U diag(S) V^H (matches torch.svd): V, not Vh; reduced when ``some``; with
    ``compute_uv=False`` U (*, m, m) and V (*, n, n) are zero-filled."""
    if not compute_uv:
        S = LA.svdvals(input)
        *b, m, n = input._shape
        z = lambda k: ember.zeros(tuple(b) + (k, k), dtype=input._dtype, device=input._device)   # noqa: E731
        return _finish_tuple(RT.svd(z(m), S, z(n)), out, RT.svd)
    U, S, Vh = LA.svd(input, full_matrices=not some)
    return _finish_tuple(RT.svd(U, S, _mH(Vh)), out, RT.svd)


def _finish_tuple(r, out, cls):
    if out is None:
        return r
    return cls(*(_finish(a, o) for a, o in zip(r, out)))


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """``(solution, cloned_coefficient)`` of A X = b (A^T X = b for ``transpose``) with triangular ``A``
    (matches torch.triangular_solve; prefer ember.linalg.solve_triangular)."""
    M, up = (A.mT, not upper) if transpose else (A, upper)
    x = LA.solve_triangular(M, b, upper=up, unitriangular=unitriangular)
    return _finish_tuple(RT.triangular_solve(x, A.clone()), out, RT.triangular_solve)


def matrix_exp(input):
    """Matrix exponential (matches torch.matrix_exp)."""
    return LA.matrix_exp(input)


def matrix_power(input, n):
    """input^n (matches torch.matrix_power = torch.linalg.matrix_power)."""
    return LA.matrix_power(input, n)


def trace(input):
    """Sum of the main diagonal of a 2-D tensor (matches torch.trace): integer inputs sum to int64. RuntimeError
    "trace: expected a matrix, but got tensor with dim N" otherwise."""
    check_tensor(input, "trace")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal(0, 0, 1).sum()


def diag(input, diagonal=0, *, out=None):
    """1-D input: the square matrix with ``input`` on diagonal ``diagonal``; 2-D input: that diagonal (a copy)
    (matches torch.diag). RuntimeError for other ranks."""
    check_tensor(input, "diag")
    if input.dim() == 1:
        return _finish(diag_embed(input, diagonal), out)
    if input.dim() == 2:
        return _finish(input.diagonal(diagonal, 0, 1).clone(), out)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals (``offset``, over dims ``dim1``, ``dim2`` of the result) are the last dim of
    ``input`` (matches torch.diag_embed): result dims = input.dim() + 1, the two new dims of size n + |offset|.
    Built as input * a shifted identity (differentiable)."""
    check_tensor(input, "diag_embed")
    nd = input.dim() + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input._shape[-1] if input.dim() else 1
    k = abs(offset)
    m = n + k
    v = input.reshape(1) if input.dim() == 0 else input
    if k:
        v = ember.cat([v, ember.zeros(v._shape[:-1] + (k,), dtype=v._dtype, device=v._device)], -1)
    eye = ember.eye(m + k, dtype=input._dtype if input._dtype is not D.bool else D.uint8, device=input._device)
    if offset >= 0:
        r = v.unsqueeze(-1) * eye[k:, :m]            # r[i, i + k] = v[i]
    else:
        r = v.unsqueeze(-2) * eye[:m, k:]            # r[j + k, j] = v[j]
    if input._dtype is D.bool:
        r = r.to(D.bool)
    return ember.movedim(r, (-2, -1), (d1, d2))


def diagflat(input, offset=0):
    """The 2-D matrix with the flattened ``input`` on diagonal ``offset`` (matches torch.diagflat)."""
    return diag_embed(input.reshape(-1), offset)


def block_diag(*tensors):
    """The block-diagonal matrix of 0-, 1- or 2-D ``tensors`` (matches torch.block_diag); a 0-D tensor is a 1x1
    block, a 1-D tensor of size n a 1 x n block; the dtype is their promoted type."""
    if not tensors:
        return ember.empty(1, 0)
    blocks = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    dtype = blocks[0]._dtype
    for b in blocks[1:]:
        dtype = D.promote_types(dtype, b._dtype)
    cols = builtins.sum(b._shape[1] for b in blocks)
    rows, c0 = [], 0
    device = blocks[0]._device
    for b in blocks:
        h, w = b._shape
        parts = [ember.zeros(h, c0, dtype=dtype, device=device), b.to(dtype),
                 ember.zeros(h, cols - c0 - w, dtype=dtype, device=device)]
        rows.append(ember.cat(parts, 1))
        c0 += w
    return ember.cat(rows, 0)


def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors (matches torch.cross): ``dim`` None means the first dim of size 3 (deprecated in
    PyTorch, which warns; ember warns the same)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        shape = ember.broadcast_shapes(input.shape, other.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return LA.cross(input, other, dim=dim, out=out)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise p-norm distances (*, P, R) between the rows of ``x1`` (*, P, M) and ``x2`` (*, R, M) (matches
    torch.cdist; computed directly, not through the matmul expansion)."""
    check_tensor(x1, "cdist", "x1")
    check_tensor(x2, "cdist", "x2")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1._shape[-1] != x2._shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1._shape[-1]} X2: "
                           f"{x2._shape[-1]}")
    if not (x1._dtype.is_floating_point and x2._dtype.is_floating_point):
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {D.torch_name(x1._dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return LA.vector_norm(diff, p, dim=-1)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast) (matches torch.dist)."""
    return LA.vector_norm(input - other, p)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables (rows) of ``input`` (matches torch.cov): observations are columns;
    ``correction`` 1 is Bessel's; integer frequency weights ``fweights`` and observation weights ``aweights``."""
    check_tensor(input, "cov")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        x = x.to(ember.get_default_dtype())
    n = x._shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        mean = x.mean(1, keepdim=True)
        wsum = ember.full((), float(n), dtype=x._dtype.to_real, device=x._device)
        norm = wsum - correction
    else:
        w = w.to(x._dtype.to_real)
        wsum = w.sum()
        mean = (x * w).sum(1, keepdim=True) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(w._dtype)).sum() / wsum
    xm = x - mean
    xw = xm if w is None else xm * w
    c = matmul(xw, _mH(xm)) / ember.clamp(norm, min=0)
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (matches torch.corrcoef), clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal(0, 0, 1)
    s = d.sqrt()
    c = c / s.unsqueeze(1) / s.unsqueeze(0)
    return c.clamp(-1, 1)


def renorm(input, p, dim, maxnorm):
    """Each sub-tensor along ``dim`` rescaled to p-norm at most ``maxnorm`` (matches torch.renorm)."""
    check_tensor(input, "renorm")
    d = _wrap_dim(dim, input.dim())
    others = tuple(i for i in range(input.dim()) if i != d)
    norms = LA.vector_norm(input, p, dim=others, keepdim=True)
    factor = ember.where(norms > maxnorm, maxnorm / (norms + 1e-7), ember.ones_like(norms))
    return input * factor


def geqrf(input, *, out=None):
    """``(a, tau)``: LAPACK geqrf's packed QR of ``input`` (*, m, n) (matches torch.geqrf): R on and above the
    diagonal, the Householder vectors below it, tau (*, min(m, n)). Not differentiable (as PyTorch's)."""
    from . import _linalg_decomp as K
    return K.geqrf(input, out=out)


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """Q @ other (``left``) or other @ Q, with Q^H for ``transpose``, where Q is given by geqrf's (input, tau)
    (matches torch.ormqr; LAPACK ormqr / unmqr, Q never formed)."""
    from . import _linalg_decomp as K
    return K.ormqr(input, tau, other, left, transpose, out=out)


_METHODS = {"det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse, "pinverse": pinverse,
            "cholesky": cholesky, "cholesky_inverse": cholesky_inverse, "qr": qr, "svd": svd,
            "triangular_solve": triangular_solve, "matrix_exp": matrix_exp, "matrix_power": matrix_power,
            "trace": trace, "diag": diag, "diag_embed": diag_embed, "cross": cross, "dist": dist, "cov": cov,
            "corrcoef": corrcoef, "renorm": renorm,
            "geqrf": geqrf, "ormqr": ormqr}


def _cholesky_solve_method(self, input2, upper=False):
    return cholesky_solve(self, input2, upper)


def _install_methods():
    """Tensor methods where torch has them (x.det(), x.inverse(), x.trace(), ...), unless already defined."""
    for name, fn in _METHODS.items():
        if fn is not None and not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    if not hasattr(Tensor, "cholesky_solve"):
        Tensor.cholesky_solve = _cholesky_solve_method
    if not hasattr(Tensor, "diagflat"):
        Tensor.diagflat = diagflat


_install_methods()
