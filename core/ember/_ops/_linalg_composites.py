"""Composites of the linear-algebra ops over the primitive set: ``einsum`` (diagonals, sums and
pairwise ``bmm`` contractions), the vector / matrix norms, and the SVD-based matrix norms.

The products themselves (mm, mv, dot, vdot, matmul and the add-multiply forms) have their
composites in ``_linalg.py``, written with ``bmm`` and views; the helpers they share
(the complex conjugate, scalars cast as the kernels cast them) are here.

Singular values (``ord`` 2 / -2 / 'nuc') come from one-sided Jacobi (Hestenes) rotations of
the columns, a fixed number of sweeps (data-independent, no host round trip): accurate to
the working precision for well-conditioned matrices; columns that are (numerically)
dependent converge more slowly, so results for nearly singular matrices may differ from
LAPACK's in the last digits.
"""
from __future__ import annotations

import builtins
import math

import ember
from .. import _dtype as D
from .._tensor import _wrap_dim
from ._reduction_composites import _acc, _amin, _cast, _full, _real, _sub, _vector_norm

#: one-sided Jacobi sweeps for the singular values (quadratic convergence; ample for n <= ~50)
JACOBI_SWEEPS = 12


# ---------------------------------------------------------------- helpers shared with _linalg.py
def conj(x):
    """The complex conjugate ``2 * re(x) - x`` (exact: re and -im are computed without rounding)."""
    if not x._dtype.is_complex:
        return x
    return ember.add(ember.mul(_cast(_real(x), x._dtype), 2), x, alpha=-1)


def scalar_for(v, dtype):
    """A beta / alpha scalar as the kernels apply it: truncated for integer results, bool for bool."""
    if dtype is D.bool:
        return builtins.bool(v)
    if not (dtype.is_floating_point or dtype.is_complex):
        return int(v.real) if isinstance(v, complex) else int(v)
    return v


# ---------------------------------------------------------------- einsum
def _operand_labels(labels, ndim, nell):
    """Operand labels with '...' expanded to ('.', k) labels, right-aligned in the broadcast ellipsis."""
    if "." not in labels:
        return list(labels)
    k = ndim - (len(labels) - 1)
    i = labels.index(".")
    return labels[:i] + [(".", nell - k + j) for j in range(k)] + labels[i + 1:]


def einsum(equation, tensors, *, out):
    """Composite of ``einsum``: diagonals for repeated labels, labels of one operand only summed out, then left-to-
    right pairwise contractions with ``bmm`` (bool computed in int64).
    """
    from ._linalg import _parse_einsum
    inputs, outl, sizes, ell = _parse_einsum(equation, [t._shape for t in tensors])
    nell = len(ell)
    for k in range(nell):
        sizes[(".", k)] = ell[k]
    cd = D.int64 if out._dtype is D.bool else _acc(out._dtype)
    out_labels = []
    for lab in outl:
        out_labels.extend([(".", k) for k in range(nell)] if lab == "." else [lab])
    ops = []
    for t, labels in zip(tensors, inputs):
        x, labs = _cast(t, cd), _operand_labels(labels, t.dim(), nell)
        while len(set(labs)) != len(labs):               # a repeated label: take the diagonal
            lab = next(l for l in labs if labs.count(l) > 1)
            p = labs.index(lab)
            q = labs.index(lab, p + 1)
            x = x.diagonal(0, p, q)
            labs = [l for i, l in enumerate(labs) if i not in (p, q)] + [lab]
        x = x.expand(tuple(sizes[l] for l in labs))       # labelled size-1 dims broadcast
        ops.append([x, labs])
    # labels of one operand only, not in the output: sum them out first
    for i, (x, labs) in enumerate(ops):
        others = set(out_labels).union(*(set(o[1]) for j, o in enumerate(ops) if j != i))
        drop = [d for d, l in enumerate(labs) if l not in others]
        if drop:
            ops[i] = [ember.sum(x, drop), [l for l in labs if l in others]]
    cur, labs = ops[0]
    for j in range(1, len(ops)):
        nxt, nlabs = ops[j]
        later = set(out_labels).union(*(set(o[1]) for o in ops[j + 1:]))
        batch = [l for l in labs if l in nlabs and l in later]
        contract = [l for l in labs if l in nlabs and l not in later]
        left = [l for l in labs if l not in nlabs]
        right = [l for l in nlabs if l not in labs]
        size = lambda ls: math.prod(sizes[l] for l in ls)
        a = cur.permute([labs.index(l) for l in batch + left + contract])
        b = nxt.permute([nlabs.index(l) for l in batch + contract + right])
        r = ember.bmm(a.reshape(size(batch), size(left), size(contract)),
                      b.reshape(size(batch), size(contract), size(right)))
        cur = r.reshape(tuple(sizes[l] for l in batch + left + right))
        labs = batch + left + right
    out.copy_(cur.permute([labs.index(l) for l in out_labels]) if out_labels else cur.reshape(()))


# ---------------------------------------------------------------- norms
def _norm_dtype(self, out):
    cd = _acc(out._dtype)
    return cd.to_complex if self._dtype.is_complex else cd


def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None, out):
    """Composite of ``linalg.vector_norm``: the p-norm of abs(x) over ``dim`` (all dims when None or empty) in the
    result dtype.
    """
    x = ember.abs(_cast(self, _norm_dtype(self, out)))
    if dim is not None and len(dim) == 0 or x.dim() == 0:
        dim = None
    r = _vector_norm(x, ord, dim, keepdim)
    out.copy_(r.reshape(out._shape))


def singular_values(a):
    """Singular values of the matrices in the last two dims of ``a`` (..., m, n) -> (..., min(m, n)),
    unsorted, by one-sided Jacobi rotations of the columns (JACOBI_SWEEPS sweeps)."""
    if a._shape[-1] > a._shape[-2]:
        a = a.transpose(-2, -1)                         # A^T has A's singular values
    a = a.clone()
    n = a._shape[-1]
    cplx = a._dtype.is_complex
    for _ in range(JACOBI_SWEEPS):
        for p in range(n - 1):
            for q in range(p + 1, n):
                ap, aq = a.select(-1, p), a.select(-1, q)
                alpha = ember.sum(ember.mul(ember.abs(ap), ember.abs(ap)), -1, True)
                beta = ember.sum(ember.mul(ember.abs(aq), ember.abs(aq)), -1, True)
                gamma = ember.sum(ember.mul(conj(ap), aq), -1, True)
                zero = ember.eq(gamma, 0)
                if cplx:                                # rotate aq's phase so that <ap, aq> is real
                    g1 = ember.where(zero, 1, ember.abs(gamma))
                    aq = ember.mul(aq, conj(ember.true_divide(ember.where(zero, 1, gamma), g1)))
                else:
                    g1 = ember.where(zero, 1, gamma)
                zeta = ember.true_divide(_sub(beta, alpha), ember.mul(g1, 2))
                sgn = ember.where(ember.lt(zeta, 0), -1.0, 1.0)
                t = ember.true_divide(sgn, ember.add(ember.abs(zeta), ember.sqrt(ember.add(ember.mul(zeta, zeta),
                                                                                             1))))
                t = ember.where(zero, 0.0, t)
                c = ember.true_divide(1, ember.sqrt(ember.add(ember.mul(t, t), 1)))
                s = ember.mul(c, t)
                new_p = _sub(ember.mul(ap, c), ember.mul(aq, s))
                new_q = ember.add(ember.mul(ap, s), ember.mul(aq, c))
                a.select(-1, p).copy_(new_p)
                a.select(-1, q).copy_(new_q)
    col = ember.abs(a)
    return ember.sqrt(ember.sum(ember.mul(col, col), -2))


def _svd_norm(x, ord):
    sv = singular_values(x)
    if ord == "nuc":
        return ember.sum(sv, -1)
    return ember.amax(sv, -1) if ord == 2 else _amin(sv, -1)


def nuclear_norm(x, dims, keepdim):
    """Sum of the singular values over the two ``dims`` (the reduction ``norm(p='nuc')``)."""
    d0, d1 = dims
    m = x.movedim((d0, d1), (-2, -1))
    if m._shape[-1] == 0 or m._shape[-2] == 0:
        return _full(m._shape[:-2], 0, x._dtype.to_real, x._device)
    r = _svd_norm(m, "nuc")
    return r


def linalg_matrix_norm(self, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out):
    """Composite of ``linalg.matrix_norm``: 'fro' from sums of squares, 'nuc' / 2 / -2 from Jacobi singular values, 1
    / -1 / inf / -inf from absolute row or column sums; 0 for empty matrices.
    """
    x = _cast(self, _norm_dtype(self, out))
    nd = x.dim()
    d0, d1 = _wrap_dim(dim[0], nd), _wrap_dim(dim[1], nd)
    if x._shape[d0] == 0 or x._shape[d1] == 0:
        out.fill_(0)
        return
    if ord == "fro":
        ax = ember.abs(x)
        r = ember.sqrt(ember.sum(ember.mul(ax, ax), [d0, d1]))
    elif ord in ("nuc", 2, -2):
        r = _svd_norm(x.movedim((d0, d1), (-2, -1)), ord)
    else:
        inner, outer = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
        s = ember.sum(ember.abs(x), inner, True)
        r = ember.amax(s, outer, True) if ord > 0 else _amin(s, outer, True)
    out.copy_(r.reshape(out._shape))


COMPOSITES = {"einsum": einsum, "linalg_vector_norm": linalg_vector_norm, "linalg_matrix_norm": linalg_matrix_norm}
