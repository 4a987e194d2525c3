"""Derivatives of ember.linalg's decompositions and solvers (the ops of ``_linalg_decomp``).

The formulas are PyTorch's (derivatives.yaml and FunctionsManual.cpp: ``linalg_det_backward``,
``slogdet_backward``, ``cholesky_backward``, ``linalg_qr_backward``, ``linalg_eig_backward``,
``svd_backward``, ``linalg_lu_backward``, ``linalg_solve_triangular_backward``, the block-matrix
rule of ``differential_analytic_matrix_function`` for matrix_exp), rewritten with ember ops so
every device gets them and they can be differentiated again. The formulas write the conjugate
(``_c`` / ``_h``) where FunctionsManual does, so every op here is in ``derivatives.COMPLEX_SAFE``
(checked against torch in tests/complex and tests/linalg/test_complex_grads.py). The complex
eigenvectors / singular vectors are defined up to a phase e^{i phi} per column: as in PyTorch, eig /
eigh / svd check that the loss does not depend on it (im diag(V^H gV) ~ 0, with PyTorch's lax
rtol = atol = 1e-2) and raise PyTorch's RuntimeError otherwise. ``householder_product`` follows
``householder_product_backward``'s result (one sweep over the reflectors), written here as rank-1
updates.

Known limits: ``det`` of a singular matrix has an inf / NaN gradient (PyTorch switches to an
SVD-based formula there); ``lu_factor`` is differentiable for square matrices only.
"""
from __future__ import annotations

__all__ = ["LINALG_DERIVATIVES"]


def _e():
    import ember
    return ember


def _c(x):
    """conj(x) for complex ``x``, x itself otherwise."""
    from .._ops._linalg_composites import conj
    return conj(x)


def _h(x):
    """The conjugate transpose (``mH``) written with ember's exact conj, for complex tensors too."""
    return _c(x.mT)


def _mat(x):
    return x.unsqueeze(-1).unsqueeze(-1)


def _diag_embed(v):
    """(*, n) -> (*, n, n) with ``v`` on the diagonal (differentiable)."""
    ember = _e()
    n = v._shape[-1]
    return v.unsqueeze(-1) * ember.eye(n, dtype=v._dtype, device=v._device)


def _eye_like(x):
    ember = _e()
    return ember.eye(x._shape[-1], dtype=x._dtype, device=x._device)


def _solve(A, B):
    from .. import _linalg_decomp as K
    return K.linalg_solve_ex(A, B)[0]


def _inv(A):
    from .. import _linalg_decomp as K
    return K.linalg_inv_ex(A)[0]


def _trsolve(A, B, upper, left=True, unitriangular=False):
    from ..linalg import solve_triangular
    return solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


# ---------------------------------------------------------------- determinants and inverses
def det_grad(grad, A, result):
    """d det(A) = det(A) tr(A^-1 dA)  ->  gA = conj(g det) A^-H."""
    return _mat(grad * _c(result)) * _h(_inv(A))


def slogdet_grad(grads, grads_defined, A, sign):
    """log det A = log|det A| + i angle(sign) is holomorphic with derivative A^-T, so gA = g_L A^-H where g_L,
    the gradient of that complex log, is g_logabsdet + i im(g_sign conj(sign)) (PyTorch's slogdet_backward).
    The sign of a real A is piecewise constant: its gradient alone gives none (None, as PyTorch)."""
    cplx = A._dtype.is_complex
    if not grads_defined[1] and not (cplx and grads_defined[0]):
        return None
    g = grads[1].to(A._dtype)
    if cplx and grads_defined[0]:
        g = g + 1j * (grads[0] * _c(sign)).imag
    return _mat(g) * _h(_inv(A))


def inv_grad(grad, result):
    """d A^-1 = -A^-1 dA A^-1  ->  gA = -A^-H g A^-H."""
    Ainv_h = _h(result)
    return -(Ainv_h @ grad @ Ainv_h)


def solve_grads(grad, A, X, which):
    """X = A^-1 B: gB = A^-H g, gA = -gB X^H."""
    gB = _solve(_h(A), grad)
    return gB if which == "B" else -(gB @ _h(X))


def cholesky_grad(grad, L, upper):
    """A = L L^H: gA = L^-H sym(tril(L^H gL)) L^-1 with the diagonal halved (PyTorch's cholesky_backward)."""
    if upper:
        L, grad = _h(L), _h(grad)
    M = (_h(L) @ grad).tril()
    M = 0.5 * (M + _h(M.tril(-1)))
    gA = _trsolve(_h(L), M, upper=True)
    return _trsolve(L, gA, upper=False, left=False)


def _real(x):
    """re(x) of a complex ``x`` (differentiable), x itself otherwise."""
    return x.real if x._dtype.is_complex else x


def _copyltu(M):
    """The Hermitian matrix whose strict lower triangle is M's and whose diagonal is re(diag M): the adjoint of
    the map onto Q^H dQ (skew-Hermitian, so its diagonal, i im(diag), is not the R side's real diagonal)."""
    low = M.tril(-1)
    return low + _h(low) + _diag_embed(_real(M.diagonal(0, -2, -1))).to(M._dtype)


def _check_gauge(imag_diag, op, what, other=None):
    """PyTorch's check that a loss of complex eigen- / singular vectors does not depend on their phases:
    ``imag_diag`` (the imaginary part of diag(V^H gV), real) must be allclose to ``other`` (0 when None) with
    PyTorch's lax rtol = atol = 1e-2. One host read of a boolean."""
    ember = _e()
    with ember.no_grad():
        if other is None:
            bad = (imag_diag.abs() > 1e-2).any()
        else:
            bad = ((imag_diag - other).abs() > 1e-2 + 1e-2 * other.abs()).any()
        bad = bool(bad.item())
    if bad:
        if what == "svd":
            raise RuntimeError("svd_backward: The singular vectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this phase "
                               "term, making it ill-defined.")
        raise RuntimeError(f"{op}: The eigenvectors in the complex case are specified up to multiplication by "
                           f"e^{{i phi}}. The specified loss function depends on this quantity, so it is "
                           f"ill-defined.")


def _qr_grad_tall(Q, R, gQ, gR):
    """m >= n (reduced): gA = (gQ + Q copyltu(R gR^H - gQ^H Q)) R^-H."""
    M = R @ _h(gR) - _h(gQ) @ Q
    b = gQ + Q @ _copyltu(M)
    return _trsolve(_h(R), b, upper=False, left=False)


def qr_grad(grads, A, Q, R, mode):
    """gA of A = Q R (*, m, n), from grads = (gQ, gR) (PyTorch's linalg_qr_backward), real or complex: tall or
    square A through ``_qr_grad_tall``; wide A as [X | Y] with X = Q R[:, :m], whose gradient takes Y's
    dependence on Q (Y gV^H) into gQ. RuntimeError (PyTorch's messages) for mode='r' (Q not computed) and for
    mode='complete' with m > n (not differentiable)."""
    gQ, gR = grads
    m, n = A._shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
                           "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m >= n:
        return _qr_grad_tall(Q, R, gQ, gR)
    # m < n: A = [X | Y], X = Q U with U = R[:, :m] square; Y = Q V. gY = Q gV and Y's dependence on Q adds Y gV^H
    ember = _e()
    U, V = R[..., :, :m], R[..., :, m:]
    gU, gV = gR[..., :, :m], gR[..., :, m:]
    Y = A[..., :, m:]
    gX = _qr_grad_tall(Q, U, gQ + Y @ _h(gV), gU)
    return ember.cat([gX, Q @ gV], -1)


def _without_diag(X):
    return X - _diag_embed(X.diagonal(0, -2, -1))


def eigh_grad(grads, grads_defined, L, V):
    """A = V diag(L) V^H: gA = V (diag(gL) + skew(V^H gV) / E) V^H, E_ij = L_j - L_i (linalg_eig_backward).
    Complex V: the loss must not depend on the phases of V's columns (else PyTorch's RuntimeError)."""
    gL, gV = grads
    if not grads_defined[1]:
        return V @ _diag_embed(gL.to(V._dtype)) @ _h(V)
    VhgV = _h(V) @ gV
    if V._dtype.is_complex:
        _check_gauge(VhgV.diagonal(0, -2, -1).imag, "linalg_eigh_backward", "eig")
    VhgV = 0.5 * (VhgV - _h(VhgV))
    E = L.unsqueeze(-2) - L.unsqueeze(-1)
    E = E + _eye_like(E)
    inner = VhgV / E.to(V._dtype)
    if grads_defined[0]:            # the diagonal is gL (PyTorch overwrites the i im(diag) left by skew)
        inner = _without_diag(inner) + _diag_embed(gL.to(V._dtype))
    return V @ inner @ _h(V)


def eig_grad(grads, grads_defined, L, V):
    """General A = V diag(L) V^-1: gA = V^-H (diag(gL*) + (V^H gV - V^H V re diag(V^H gV)) / E*) V^H
    (linalg_eig_backward, non-Hermitian case); the gradient of a real A is the real part."""
    gL, gV = grads
    Lc = _c(L)
    ember = _e()
    if grads_defined[1]:
        VhgV = _h(V) @ gV
        diag = VhgV.diagonal(0, -2, -1)
        _check_gauge(diag.imag, "linalg_eig_backward", "eig")
        VhgV = VhgV - _h(V) @ (V * diag.real.unsqueeze(-2).to(V._dtype))
        E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
        E = E + _eye_like(E)
        inner = VhgV / E
        if grads_defined[0]:        # the diagonal is gL (PyTorch overwrites the ~0 i im(diag) term)
            inner = _without_diag(inner)
    else:
        inner = ember.zeros_like(V)
    if grads_defined[0]:
        inner = inner + _diag_embed(gL)
    return _solve(_h(V), inner @ _h(V))


def eig_real_grad(grads, grads_defined, A, L, V):
    """gA of linalg.eig for A of any dtype: ``eig_grad`` (complex, as the eigenpairs are), cast back to A's real
    dtype for a real A (PyTorch's handle_r_to_c)."""
    g = eig_grad(grads, grads_defined, L, V)
    return g if A._dtype.is_complex else g.to(A._dtype)


def svd_grad(grads, grads_defined, A, U, S, Vh, full_matrices):
    """A = U diag(S) Vh (PyTorch's svd_backward): with skew(X) = X - X^H and E_ij = S_j^2 - S_i^2,
    gA = U [(skew(U^H gU) S + S skew(V^H gV)) / E + diag(gS)] Vh plus the terms of U / V outside the span.
    Complex A: the loss must not depend on the common phase of U's and V's columns, im diag(U^H gU) =
    -im diag(V^H gV) (else PyTorch's RuntimeError), and diag(i im(U^H gU) / S) joins the inner matrix."""
    ember = _e()
    gU, gS, gVh = grads
    dU, dS, dV = grads_defined
    m, n = A._shape[-2:]
    k = S._shape[-1]
    if full_matrices and m != n:
        U, gU = U[..., :, :k], gU[..., :, :k]
        Vh, gVh = Vh[..., :k, :], gVh[..., :k, :]
    dt = A._dtype
    if not dU and not dV:
        return (U * gS.unsqueeze(-2).to(dt)) @ Vh
    V, gV = _h(Vh), _h(gVh)
    Sd = S.to(dt)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = (E + _eye_like(E)).to(dt)
    inner = ember.zeros(U._shape[:-2] + (k, k), dtype=dt, device=A._device)
    UhgU = VhgV = None
    if dU:
        UhgU = _h(U) @ gU
        UhgU = UhgU - _h(UhgU)
        inner = inner + UhgU * Sd.unsqueeze(-2)
    if dV:
        VhgV = _h(V) @ gV
        VhgV = VhgV - _h(VhgV)
        inner = inner + Sd.unsqueeze(-1) * VhgV
    # E's diagonal is 1: the diagonal left here is 0 for real A, 2i S (im diag(U^H gU) + im diag(V^H gV)) ~ 0 for
    # complex A (kept, as PyTorch keeps it, so that gradients agree even for a loss within the check's tolerance)
    inner = inner / E
    if dt.is_complex:
        zero = ember.zeros_like(S)
        imU = UhgU.diagonal(0, -2, -1).imag if dU else zero
        imV = VhgV.diagonal(0, -2, -1).imag if dV else zero
        _check_gauge(imU, "svd_backward", "svd", other=-imV)
        if dU and dV:               # i im(diag(U^H gU)) / S (the skew doubled it); PyTorch adds it when both are used
            inner = inner + _diag_embed(UhgU.diagonal(0, -2, -1) / (2 * Sd))
    if dS:
        inner = inner + _diag_embed(gS.to(dt))
    if m > k and dU:
        gA = U @ inner
        gUS = gU / Sd.unsqueeze(-2)
        gA = gA + gUS - U @ (_h(U) @ gUS)
        gA = gA @ Vh
    elif n > k and dV:
        gA = inner @ Vh
        gVS = gV / Sd.unsqueeze(-2)
        gA = gA + _h(gVS - V @ (_h(V) @ gVS))
        gA = U @ gA
    else:
        gA = U @ inner @ Vh
    return gA


def lu_factor_grad(grad, A, LU, pivots):
    """Square A = P L U: gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H (PyTorch's linalg_lu_backward)."""
    from ..linalg import lu_unpack
    m, n = A._shape[-2:]
    if m != n:
        raise NotImplementedError("ember: the derivative of lu_factor is implemented for square matrices only")
    P, L, U = lu_unpack(LU, pivots)
    gL, gU = grad.tril(-1), grad.triu()
    phi = (_h(L) @ gL).tril(-1) + (gU @ _h(U)).triu()
    x = _trsolve(_h(L), phi, upper=True, unitriangular=True)
    x = _trsolve(_h(U), x, upper=False, left=False)
    return P @ x


def lu_solve_grads(grad, LU, pivots, B, result, adjoint, which):
    """X = A^-1 B (A^-H B when ``adjoint``), A = P L U: gB by one more solve; gLU from gA = -gB X^H (or -X gB^H)
    pushed through A = P L U: gL = tril(P^T gA U^H, -1), gU = triu(L^H P^T gA)."""
    from ..linalg import lu_solve, lu_unpack
    gB = lu_solve(LU, pivots, grad, adjoint=not adjoint)
    if which == "B":
        return gB
    gA = -(result @ _h(gB)) if adjoint else -(gB @ _h(result))
    P, L, U = lu_unpack(LU, pivots)
    PtgA = P.mT @ gA
    return (PtgA @ _h(U)).tril(-1) + (_h(L) @ PtgA).triu()


def solve_triangular_grads(grad, A, result, upper, unitriangular, which):
    """X = A^-1 B, A triangular: gB = A^-H g (triangular solve), gA = -gB X^H restricted to A's triangle."""
    gB = _trsolve(_h(A), grad, upper=not upper, unitriangular=unitriangular)
    if which == "B":
        return gB
    gA = -(gB @ _h(result))
    gA = gA.triu() if upper else gA.tril()
    if unitriangular:
        gA = gA - _diag_embed(gA.diagonal(0, -2, -1))
    return gA


def matrix_exp_grad(grad, A):
    """d exp(A)[dA] is the upper-right block of exp([[A, dA], [0, A]]); the adjoint uses A^H:
    gA = exp([[A^H, g], [0, A^H]])[:n, n:]."""
    ember = _e()
    from .. import _linalg_decomp as K
    n = A._shape[-1]
    Ah = _h(A)
    top = ember.cat([Ah, grad], -1)
    bottom = ember.cat([ember.zeros_like(Ah), Ah], -1)
    return K.linalg_matrix_exp(ember.cat([top, bottom], -2))[..., :n, n:]


def householder_grads(grad, A, tau, which):
    """Q = (H_1 ... H_k)[:, :n], H_i = I - tau_i v_i v_i^H, v_i = (0, .., 0, 1, A[i+1:, i]) (PyTorch's
    householder_product_backward, real and complex). With G_i = (H_1..H_{i-1})^H grad (H_{i+1}..H_k E)^H the
    cotangent reaching H_i: g tau_i = -v_i^H G_i v_i and g v_i = -(conj(tau_i) G_i + tau_i G_i^H) v_i, whose
    entries below the diagonal are A[i+1:, i]'s. One sweep builds R_i = H_{i+1}..H_k E backwards (H_i is not
    unitary for an arbitrary tau), one forward sweep carries K_i = (H_1..H_{i-1})^H grad; G_i is never formed."""
    ember = _e()
    m, n = A._shape[-2:]
    k = tau._shape[-1]
    dt = A._dtype
    if k == 0:
        return ember.zeros_like(A) if which == "A" else ember.zeros_like(tau)
    rows = ember.arange(m, device=A._device).unsqueeze(-1)            # (m, 1)

    def v(i):
        below = (rows > i).to(dt)
        at = (rows == i).to(dt)
        return A[..., :, i:i + 1] * below + at                            # (*, m, 1)

    def t(i):
        return tau[..., i:i + 1].unsqueeze(-1)                            # (*, 1, 1)

    vs = [v(i) for i in range(k)]
    R = [None] * k
    Ri = ember.eye(m, n, dtype=dt, device=A._device).expand(A._shape[:-2] + (m, n))
    for i in range(k - 1, -1, -1):
        R[i] = Ri
        Ri = Ri - t(i) * (vs[i] @ (_h(vs[i]) @ Ri))
    K = grad
    gA_cols, gtau = [], []
    for i in range(k):
        vi, ti = vs[i], t(i)
        Gv = K @ (_h(R[i]) @ vi)                                          # G_i v_i
        Ghv = R[i] @ (_h(K) @ vi)                                         # G_i^H v_i
        gtau.append(-(_h(vi) @ Gv)[..., 0, :])
        gv = -(_c(ti) * Gv + ti * Ghv)
        gA_cols.append(gv * (rows > i).to(dt))
        K = K - _c(ti) * (vi @ (_h(vi) @ K))                              # H_i^H K
    if which == "tau":
        return ember.cat(gtau, -1)
    cols = ember.cat(gA_cols, -1)
    if k < n:
        cols = ember.cat([cols, ember.zeros(A._shape[:-1] + (n - k,), dtype=dt, device=A._device)], -1)
    return cols


def ormqr_grads(grad, A, tau, C, left, transpose, which):
    """ormqr(A, tau, C) is op(Q) C (``left``) or C op(Q), op = ^H for ``transpose``, with Q the m x m product of
    tau's k reflectors (PyTorch's ormqr derivative). Q is formed here as ``householder_product`` of A padded to
    m x m columns (the padding columns are never read), so A's and tau's gradients are that product's
    (``householder_grads``) at the gradient reaching Q: G C^H, C G^H, C^H G or G^H C for the four forms."""
    ember = _e()
    m, n = A._shape[-2:]
    A_full = A if n == m else ember.cat([A, ember.zeros(A._shape[:-1] + (m - n,), dtype=A._dtype,
                                                        device=A._device)], -1)
    Q = ember.linalg.householder_product(A_full, tau)
    if which == "input3":
        if left:
            return Q @ grad if transpose else _h(Q) @ grad
        return grad @ Q if transpose else grad @ _h(Q)
    if left:
        gQ = C @ _h(grad) if transpose else grad @ _h(C)
    else:
        gQ = _h(grad) @ C if transpose else _h(C) @ grad
    if which == "input2":
        return householder_grads(gQ, A_full, tau, "tau")
    return householder_grads(gQ, A_full, tau, "A")[..., :n]


HELPERS = {f.__name__: f for f in (det_grad, slogdet_grad, inv_grad, solve_grads, cholesky_grad, qr_grad, eigh_grad,
                                    eig_real_grad, svd_grad, lu_factor_grad, lu_solve_grads, solve_triangular_grads,
                                    matrix_exp_grad, householder_grads, ormqr_grads)}

#: op name -> (formulas, non-differentiable output indices)
LINALG_DERIVATIVES = {
    "linalg_det": ({"A": "det_grad(grad, A, result)"}, ()),
    "linalg_slogdet": ({"A": "slogdet_grad(grads, grads_defined, A, sign)"}, ()),
    "linalg_inv_ex": ({"A": "inv_grad(grad, result)"}, (1,)),
    "linalg_solve_ex": ({"A": "solve_grads(grad, A, result, 'A')", "B": "solve_grads(grad, A, result, 'B')"}, (1,)),
    "linalg_cholesky_ex": ({"A": "cholesky_grad(grad, result, upper)"}, (1,)),
    "linalg_qr": ({"A": "qr_grad(grads, A, Q, R, mode)"}, ()),
    "linalg_eigh": ({"A": "eigh_grad(grads, grads_defined, eigenvalues, eigenvectors)"}, ()),
    "linalg_eig": ({"A": "eig_real_grad(grads, grads_defined, A, eigenvalues, eigenvectors)"}, ()),
    "linalg_svd": ({"A": "svd_grad(grads, grads_defined, A, U, S, Vh, full_matrices)"}, ()),
    "linalg_lu_factor_ex": ({"A": "lu_factor_grad(grad, A, LU, pivots)"}, (1, 2)),
    "linalg_lu_solve": ({"LU": "lu_solve_grads(grad, LU, pivots, B, result, adjoint, 'LU')",
                         "B": "lu_solve_grads(grad, LU, pivots, B, result, adjoint, 'B')"}, ()),
    "linalg_solve_triangular": ({"A": "solve_triangular_grads(grad, A, result, upper, unitriangular, 'A')",
                                 "B": "solve_triangular_grads(grad, A, result, upper, unitriangular, 'B')"}, ()),
    "linalg_matrix_exp": ({"A": "matrix_exp_grad(grad, A)"}, ()),
    "linalg_householder_product": ({"A": "householder_grads(grad, A, tau, 'A')",
                                    "tau": "householder_grads(grad, A, tau, 'tau')"}, ()),
    "ormqr": ({"self": "ormqr_grads(grad, self, input2, input3, left, transpose, 'self')",
               "input2": "ormqr_grads(grad, self, input2, input3, left, transpose, 'input2')",
               "input3": "ormqr_grads(grad, self, input2, input3, left, transpose, 'input3')"}, ()),
}
