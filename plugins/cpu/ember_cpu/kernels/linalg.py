"""Linear-algebra kernels: BLAS products through ``np.matmul`` on strided numpy views,
``np.einsum``, and the vector / matrix norms.

Fast path for the products: operands and output share a dtype that numpy computes
natively -> one ``np.matmul(a, b, out=o)`` straight into the output's memory (numpy
calls BLAS for float32 / float64 / complex and handles overlap of ``out`` with an
input). float16 / bfloat16 compute in float32, as PyTorch's cpu kernels do; integer
products run in numpy's integer loops and wrap on overflow, as PyTorch's do.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import Tensor

from ._util import ALL, LOWP, compute_np, np_view

_T = Tensor
NO_BOOL = frozenset(d for d in ALL if d is not ember.bool)


def _nv(t):
    a = t._native
    return np_view(t) if a is None else a


def _product(f, a, b, out):
    """out = f(a, b) for a numpy product ``f`` (np.matmul / np.dot / np.vdot)."""
    o = _nv(out)
    x, y = _nv(a), _nv(b)
    if x.dtype == y.dtype == o.dtype and o.dtype not in LOWP:
        if f is np.matmul:
            if x.ndim > 2 and y.ndim == 2 and x.flags.c_contiguous and o.flags.c_contiguous:
                # (*, n, k) @ (k, m) as one (N, k) GEMM instead of one BLAS call per leading index
                np.matmul(x.reshape(-1, x.shape[-1]), y, out=o.reshape(-1, o.shape[-1]))
            else:
                np.matmul(x, y, out=o)
        else:
            o[...] = f(x, y)
        return
    cd = compute_np(out._dtype)
    np.copyto(o, f(x.astype(cd, copy=False), y.astype(cd, copy=False)), casting="unsafe")


def matmul(self, other, *, out):
    """cpu kernel of ``matmul``, all dtypes but bool: write np.matmul(self, other) (broadcast batch dims) into
    ``out``; float16 / bfloat16 in float32, integers wrap on overflow.
    """
    _product(np.matmul, self, other, out)


def mm(self, mat2, *, out):
    """cpu kernel of ``mm`` (also ``bmm``), all dtypes but bool: write self (n, k) @ mat2 (k, m) -> ``out`` (n, m)
    (batched: (b, n, k) @ (b, k, m)); float16 / bfloat16 in float32, integers wrap on overflow.
    """
    _product(np.matmul, self, mat2, out)


bmm = mm


def mv(self, vec, *, out):
    """cpu kernel of ``mv``, all dtypes but bool: write self (n, m) @ vec (m) into ``out`` (n); float16 / bfloat16
    in float32, integers wrap on overflow.
    """
    _product(np.matmul, self, vec, out)


def dot(self, tensor, *, out):
    """cpu kernel of ``dot``, all dtypes but bool: write the inner product of two 1-D tensors (no conjugation) into
    the 0-dim ``out``.
    """
    _product(np.dot, self, tensor, out)


def vdot(self, other, *, out):
    """cpu kernel of ``vdot``, all dtypes but bool: write sum(conj(self) * other) of two 1-D tensors into the 0-dim
    ``out``.
    """
    _product(np.vdot, self, other, out)


def _scal(v, cd):
    return np.asarray(v).astype(cd)


def _fused(prod, input, out, beta, alpha):
    """out = beta * input + alpha * prod, with beta / alpha cast to the computation dtype (so
    integer results truncate them, as PyTorch does); input ignored when beta == 0."""
    cd = prod.dtype
    if alpha != 1:
        prod *= _scal(alpha, cd)
    if beta != 0:
        x = _nv(input).astype(cd, copy=False)
        prod += x if beta == 1 else x * _scal(beta, cd)
    np.copyto(_nv(out), prod, casting="unsafe")


def _operands(out, *ts):
    cd = compute_np(out._dtype)
    return cd, [_nv(t).astype(cd, copy=False) for t in ts]


def addmm(self, mat1, mat2, *, beta=1, alpha=1, out):
    """cpu kernel of ``addmm``, all dtypes but bool: write beta * self + alpha * (mat1 (n, k) @ mat2 (k, m)) into
    ``out`` (n, m); ``self`` is ignored when beta == 0; beta / alpha are cast to the dtype (integers truncate).
    """
    o = _nv(out)
    x, y = _nv(mat1), _nv(mat2)
    if (beta == 0 and alpha == 1 and x.dtype == y.dtype == o.dtype and o.dtype not in LOWP
            and out._storage is not self._storage):
        np.matmul(x, y, out=o)
        return
    cd, (x, y) = _operands(out, mat1, mat2)
    _fused(np.matmul(x, y), self, out, beta, alpha)


def addmv(self, mat, vec, *, beta=1, alpha=1, out):
    """cpu kernel of ``addmv``, all dtypes but bool: write beta * self + alpha * (mat (n, m) @ vec (m)) into
    ``out`` (n).
    """
    cd, (x, y) = _operands(out, mat, vec)
    _fused(np.matmul(x, y), self, out, beta, alpha)


def baddbmm(self, batch1, batch2, *, beta=1, alpha=1, out):
    """cpu kernel of ``baddbmm``, all dtypes but bool: write beta * self + alpha * (batch1 (b, n, k) @ batch2 (b,
    k, m)) into ``out`` (b, n, m).
    """
    cd, (x, y) = _operands(out, batch1, batch2)
    _fused(np.matmul(x, y), self, out, beta, alpha)


def addbmm(self, batch1, batch2, *, beta=1, alpha=1, out):
    """cpu kernel of ``addbmm``, all dtypes but bool: write beta * self + alpha * sum_b batch1[b] @ batch2[b] into
    ``out`` (n, m), as one (n, b*k) @ (b*k, m) product.
    """
    cd, (x, y) = _operands(out, batch1, batch2)
    b, n, k = x.shape
    m = y.shape[2]
    # sum_b x[b] @ y[b] as one (n, b*k) @ (b*k, m) product
    prod = np.matmul(x.transpose(1, 0, 2).reshape(n, b * k), y.reshape(b * k, m))
    _fused(prod, self, out, beta, alpha)


# ---------------------------------------------------------------- einsum
def _split_equation(equation):
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    return lhs.split(","), (rhs if "->" in eq else None)


def _labels(term):
    out, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            out.append("...")
            i += 3
        else:
            out.append(term[i])
            i += 1
    return out


def einsum(equation, tensors, *, out):
    """cpu kernel of ``einsum``, all dtypes: write np.einsum(equation, *tensors) into ``out``, in out's dtype;
    labelled dims of size 1 broadcast as PyTorch's do.
    """
    terms, rhs = _split_equation(equation)
    cd = compute_np(out._dtype)
    arrays = [_nv(t).astype(cd, copy=False) for t in tensors]
    # labelled dims of size 1 broadcast against the other operands (numpy only broadcasts '...')
    sizes = {}
    parsed = [_labels(t) for t in terms]
    for labels, a in zip(parsed, arrays):
        if "..." in labels:
            continue
        for lab, s in zip(labels, a.shape):
            sizes[lab] = max(sizes.get(lab, 1), s)
    for i, (labels, a) in enumerate(zip(parsed, arrays)):
        if "..." in labels:
            continue
        want = tuple(sizes[lab] if s == 1 else s for lab, s in zip(labels, a.shape))
        if want != a.shape:
            arrays[i] = np.broadcast_to(a, want)
    eq = ",".join(terms) + ("" if rhs is None else "->" + rhs)
    r = np.einsum(eq, *arrays, optimize=len(arrays) > 2)
    np.copyto(_nv(out), r, casting="unsafe")


# ---------------------------------------------------------------- norms
def _norm_compute(self, out):
    """The computation dtype: the out dtype (the real form of ``dtype=`` or of the input), made
    complex for complex inputs. (The kernel does not rely on its ``dtype`` argument: the generated
    entry point rebinds that name to the output dtype before calling the kernel.)"""
    cd = compute_np(out._dtype)
    if self._dtype.is_complex:
        cd = np.result_type(self._dtype.numpy_dtype, cd)
    return cd


def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None, out):
    """cpu kernel of ``linalg.vector_norm``, floating / complex dtypes: write (sum |x|^ord)^(1/ord) over ``dim``
    (None = all; ord inf, -inf, 0, 1, 2 special-cased) into the real ``out``.
    """
    cd = _norm_compute(self, out)
    x = np.abs(_nv(self).astype(cd, copy=False))
    axis = None if dim is None or dim == () else tuple(dim)
    if x.ndim == 0:
        axis = None
    if ord == math.inf:
        r = np.max(x, axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        r = np.min(x, axis=axis, keepdims=keepdim)
    elif ord == 0:
        r = np.sum(x != 0, axis=axis, keepdims=keepdim, dtype=x.dtype)
    elif ord == 1:
        r = np.sum(x, axis=axis, keepdims=keepdim)
    elif ord == 2:
        r = np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdim))
    else:
        with np.errstate(divide="ignore", over="ignore"):
            r = np.sum(x ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)
    np.copyto(_nv(out), r, casting="unsafe")


def linalg_matrix_norm(self, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out):
    """cpu kernel of ``linalg.matrix_norm``, floating / complex dtypes: write np.linalg.norm over the two ``dim``
    axes (ord 'fro', 'nuc', +-1, +-2, +-inf) into the real ``out``; 0 for an empty matrix.
    """
    cd = _norm_compute(self, out)
    x = _nv(self).astype(cd, copy=False)
    nd = x.ndim
    d0, d1 = dim[0] % nd, dim[1] % nd
    o = _nv(out)
    if x.shape[d0] == 0 or x.shape[d1] == 0:
        o[...] = 0
        return
    r = np.linalg.norm(x, ord=ord, axis=(d0, d1), keepdims=keepdim)
    np.copyto(o, r, casting="unsafe")


def register(lib):
    """Register the product kernels (all dtypes but bool), einsum (all) and the norms (floating / complex) for
    device 'cpu' on ``lib``.
    """
    for name, k in (("matmul", matmul), ("mm", mm), ("bmm", bmm), ("mv", mv), ("dot", dot), ("vdot", vdot),
                    ("addmm", addmm), ("addmv", addmv), ("baddbmm", baddbmm), ("addbmm", addbmm)):
        lib.impl(name, k, device="cpu", dtypes=NO_BOOL)
    lib.impl("einsum", einsum, device="cpu", dtypes=ALL)
    lib.impl("linalg_vector_norm", linalg_vector_norm, device="cpu", dtypes=ember.library.FLOATING | ember.library.COMPLEX)
    lib.impl("linalg_matrix_norm", linalg_matrix_norm, device="cpu", dtypes=ember.library.FLOATING | ember.library.COMPLEX)
