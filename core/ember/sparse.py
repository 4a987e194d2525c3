"""``ember.sparse``: functions on sparse COO tensors (matches torch.sparse; needs ember-sparse).

The kernels come from the ember-sparse plugin (``ember.ops.sparse``); without it every function
here raises RuntimeError naming ``pip install ember-sparse``. Gradients follow PyTorch's masked
semantics: the gradient of a sparse input is a sparse tensor with the input's pattern.
"""
from __future__ import annotations

from . import ops as _ops_mod
from ._ops._sparse import require_sparse, sparse_coo_tensor

__all__ = ["addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax", "sum"]


def _ops(what):
    require_sparse(what)
    return _ops_mod.sparse


def mm(mat1, mat2):
    """``mat1 @ mat2`` for a sparse COO (n, k) ``mat1`` (2 sparse dims, no dense dims) and a strided
    (k, m) ``mat2``, giving a strided (n, m) tensor (matches torch.sparse.mm). Same dtype required.

    Autograd: the gradient of ``mat2`` is dense; that of ``mat1`` is sparse with mat1's pattern.
    :raises RuntimeError: "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", dtype mismatch,
        "mat2 must be a matrix"; out-of-bounds indices (PyTorch's message).
    """
    return _ops("ember.sparse.mm").mm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` and strided ``mat`` / ``mat2``
    (matches torch.sparse.addmm). Differentiable in all three (mat1's gradient is sparse)."""
    r = mm(mat1, mat2)
    if alpha != 1:
        r = r * alpha
    if beta == 0:
        return r
    return (mat * beta if beta != 1 else mat) + r


def sum(input, dim=None, dtype=None):
    """Sum of a sparse tensor over ``dim`` (all dims when None): a strided tensor when every sparse
    dim is reduced, else a sparse one (matches torch.sparse.sum). Integer sums accumulate in int64.
    The gradient is sparse with the input's pattern. IndexError for a dim out of range."""
    return _ops("ember.sparse.sum").sum(input, dim, False, dtype=dtype)


def softmax(input, dim, *, dtype=None):
    """Softmax of a sparse tensor along ``dim`` where unspecified elements count as -inf (they stay
    unspecified); the result has the coalesced input's pattern (matches torch.sparse.softmax)."""
    if dtype is not None:
        input = input.to(dtype)
    return _ops("ember.sparse.softmax").softmax(input, dim)


def log_softmax(input, dim, *, dtype=None):
    """log of ``ember.sparse.softmax`` (matches torch.sparse.log_softmax)."""
    if dtype is not None:
        input = input.to(dtype)
    return _ops("ember.sparse.log_softmax").log_softmax(input, dim)


class check_sparse_tensor_invariants:
    """Context manager / global switch for checking sparse tensor invariants at construction
    (matches torch.sparse.check_sparse_tensor_invariants). Off by default."""

    _enabled = False

    def __init__(self, enable=True):
        self.enable = enable
        self._saved = None

    @staticmethod
    def is_enabled():
        """Whether sparse_coo_tensor checks invariants by default (matches torch.sparse.check_sparse_tensor_invariants)."""
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        """Check invariants by default from now on."""
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        """Stop checking invariants by default."""
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self):
        self._saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = bool(self.enable)
        return self

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self._saved
        return False


def _rebuild_sparse_coo(indices, values, size, coalesced=False, requires_grad=False):
    """Unpickling a sparse COO tensor (ember.load's allow-list): checks the indices against the size
    (a crafted file cannot make an out-of-bounds tensor)."""
    import pickle

    from ._tensor import Tensor
    if not isinstance(indices, Tensor) or not isinstance(values, Tensor):
        raise pickle.UnpicklingError("_rebuild_sparse_coo: indices and values must be tensors")
    if not isinstance(size, tuple) or not all(type(s) is int for s in size):
        raise pickle.UnpicklingError(f"_rebuild_sparse_coo: size must be a tuple of ints, got {size!r}")
    return sparse_coo_tensor(indices, values, size, check_invariants=True, is_coalesced=bool(coalesced),
                             requires_grad=bool(requires_grad))
