"""The core's sparse COO entry points: ``ember.sparse_coo_tensor`` and the Tensor methods of
strided tensors that concern sparsity (``to_sparse``, ``to_dense``, ``indices``, ...).

The core knows no sparse layout: ember-sparse registers ``ember.sparse_coo``, the ``sparse::``
ops (``ember.ops.sparse``) and a Tensor subclass whose methods replace the strided ones below.
Without the plugin these entry points raise a RuntimeError naming ``pip install ember-sparse``.
"""
from __future__ import annotations

from .. import _dtype as D
from .. import _registry
from .._tensor import Tensor

__all__ = ["sparse_coo_tensor"]


def require_sparse(what: str):
    """The sparse_coo layout; RuntimeError naming the package when ember-sparse is not installed."""
    _registry.ensure_loaded()
    lay = _registry.layouts.get("sparse_coo")
    if lay is None:
        from .. import plugins
        failed = [p for p in plugins.list() if p.name == "sparse" and p.status == "failed"]
        why = f" (plugin 'sparse' did not load: {failed[0].error})" if failed and failed[0].error else ""
        raise RuntimeError(f"{what}: the sparse COO layout (ember.sparse_coo) is not available: "
                           f"{_registry.install_advice('sparse')}{why}")
    return lay


def _ops():
    from .. import ops
    return ops.sparse


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor (matches torch.sparse_coo_tensor; needs ember-sparse).

    :param indices: int64-convertible (sparse_dim, nnz) tensor or nested list: the coordinates of
        the specified elements (integer or floating tensors are converted to int64, as PyTorch does).
    :param values: (nnz, *dense dims) tensor or data: the elements (a hybrid tensor when it has
        trailing dense dims).
    :param size: the shape; inferred as max index + 1 per sparse dim (and the values' dense dims)
        when None.
    :param dtype: / :param device: of the result (default: the values').
    :param requires_grad: make the result a leaf that requires grad.
    :param check_invariants: check the indices against ``size`` now (default
        ``ember.sparse.check_sparse_tensor_invariants.is_enabled()``, False); unchecked tensors are
        checked by ``coalesce`` / ``to_dense`` / ``mm`` instead, never giving a wrong result.
    :param is_coalesced: declare the indices sorted and unique (not verified).
    :raises RuntimeError: PyTorch's messages: "indices must be sparse_dim x nnz, but got: [2]",
        "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 3",
        "'len(size) == sparse_dim + dense_dim' is not satisfied: ...", with check_invariants
        "found negative index -1 for dim 0" / "size is inconsistent with indices: for dim 0, size is
        3 but found index 5"; and "... pip install ember-sparse" without the plugin.
    """
    require_sparse("sparse_coo_tensor")
    from .. import sparse as _sparse_ns
    from ._creation import tensor
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype)
    if indices._dtype is D.bool or indices._dtype.is_complex:
        raise RuntimeError(f"indices must be an int64 tensor, but got {D.torch_name(indices._dtype)}")
    dev = _registry.canonical_device(device) if device is not None else values._device
    if dtype is not None and values._dtype is not dtype or values._device != dev:
        values = values.to(dev, dtype or values._dtype)
    if indices._dtype is not D.int64 or indices._device != dev:
        indices = indices.to(dev, D.int64)
    if size is None:
        if indices.dim() != 2:
            raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices._shape)}")
        k, nnz = indices._shape
        sizes = [int(v) + 1 for v in indices.amax(1).tolist()] if nnz else [0] * k
        size = sizes + list(values._shape[1:])
    else:
        size = [int(s) for s in size]
    r = _ops().coo_tensor(indices, values, size, bool(is_coalesced))
    if check_invariants is None:
        check_invariants = _sparse_ns.check_sparse_tensor_invariants.is_enabled()
    if check_invariants:
        r._check_invariants()
    if requires_grad:
        if r._grad_fn is not None:
            raise RuntimeError("sparse_coo_tensor(): requires_grad=True with values that already require grad "
                               "would make a non-leaf; pass values.detach()")
        r.requires_grad_()
    return r


# ---------------------------------------------------------------- methods of strided tensors
def _layout_error(op, what="sparse coordinate tensor"):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{op} expected {what} layout but got Strided")
    method.__name__ = op
    method.__doc__ = f"Sparse tensors only: RuntimeError on a strided tensor (as torch.Tensor.{op})."
    return method


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """A coalesced sparse COO copy holding the nonzeros (matches torch.Tensor.to_sparse; needs ember-sparse).

    :param sparse_dim: leading dims made sparse (default all); the rest stay dense in the values.
    :raises NotImplementedError: for a layout other than sparse_coo.
    """
    lay = require_sparse("to_sparse")
    if layout is not None and layout is not lay:
        raise NotImplementedError(f"to_sparse(): layout {layout!r} is not supported (ember-sparse provides "
                                  f"sparse_coo)")
    return _ops().to_sparse(self, self.dim() if sparse_dim is None else int(sparse_dim))


def to_dense(self, dtype=None, *, masked_grad=None):
    """Self (a strided tensor is already dense), or ``self.to(dtype)``."""
    return self if dtype is None else self.to(dtype)


def _nnz(self):
    raise NotImplementedError(f"Could not run '_nnz' with arguments from the ({self._device.type}, strided, "
                              f"{self._dtype.name}) key: it is only available for sparse layouts (ember-sparse).")


def _bind():
    T = Tensor
    T.to_sparse = to_sparse
    T.to_sparse_coo = lambda self: to_sparse(self)
    T.to_dense = to_dense
    T.sparse_dim = lambda self: 0
    T.dense_dim = lambda self: self.dim()
    T._nnz = _nnz
    for op in ("indices", "_indices", "coalesce", "is_coalesced"):
        setattr(T, op, _layout_error(op))
    for op in ("values", "_values"):
        setattr(T, op, _layout_error(op, "sparse tensor"))


_bind()
