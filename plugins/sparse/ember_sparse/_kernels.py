"""The sparse COO kernels: ``sparse::`` ops and kernels of core ops at (ANY, sparse_coo, ANY).

Everything here is written with dense ember ops on the indices (int64) and values, so it runs
on every device whose dense kernels exist. Two kinds of functions:

- the kernels of the ``sparse::`` ops (coo_tensor, values, to_dense, to_sparse, coalesce, mm,
  sum, softmax, log_softmax): they run below autograd and each op has its own derivative
  (``register_autograd``), which gives sparse gradients with the input's pattern (PyTorch's
  masked semantics);
- the kernels of core ops at sparse_coo keys (add, mul, neg, index_select, cat, ...): the
  dispatcher runs them free-form *with autograd on* (see ``_dispatch._layout_call``), so they are
  differentiable through the ``sparse::`` ops and dense ops they are built from.

The code lives in three modules: ``_index`` (constants and int64 index helpers), ``_sparse_ops`` (the
``sparse::`` op kernels, metas and derivatives) and ``_core_ops`` (the core-op kernels and the ``transpose`` /
``narrow`` methods). This module keeps the manifest's op list and ``register_all``, and re-exports the names
other code imports from ``ember_sparse._kernels``.
"""
from __future__ import annotations

import ember
from ember.library import ANY, register_autograd

from ._core_ops import (ZERO_PRESERVING_UNARY, _make_unary, add, cat, index_select, matmul, mm, mul, pow, sub,
                        sum_, true_divide)
from ._core_ops import narrow, transpose  # noqa: F401 - re-exported (SparseCOOTensor methods import them here)
from ._index import LAYOUT
from ._index import I64, check_bounds, gather_at, linear_index, sparse_sizes, unravel  # noqa: F401 - re-exported
from ._sparse_ops import (_coalesce_backward, _coalesce_meta, _coo_backward, _coo_kernel, _coo_meta, _coo_setup,
                          _log_softmax_backward, _log_softmax_kernel, _mask_setup, _mm_backward, _mm_meta,
                          _mm_setup, _softmax_backward, _softmax_kernel, _softmax_meta, _softmax_setup,
                          _sum_backward, _sum_kernel, _sum_meta, _sum_setup, _to_dense_backward, _to_dense_kernel,
                          _to_dense_meta, _to_sparse_backward, _to_sparse_kernel, _to_sparse_meta,
                          _values_backward, _values_kernel, _values_meta, _values_setup, coalesce_raw, mm_generic)


#: ops with a kernel at sparse_coo keys, and the sparse:: ops (the manifest's ``provides.ops``)
OPS_PROVIDED = ("add", "sub", "mul", "true_divide", "pow", "sum", "mm", "matmul", "index_select", "cat", "neg",
                "abs", "sqrt", "sin", "tanh", "sign", "floor", "expm1", "sparse::coo_tensor", "sparse::values",
                "sparse::to_dense", "sparse::to_sparse", "sparse::coalesce", "sparse::mm", "sparse::sum",
                "sparse::softmax", "sparse::log_softmax")


# ================================================================ registration
def register_all(registry, layout):
    """Define the sparse:: ops and register every kernel (called from ``ember_register``)."""
    from ._tensor import SparseCOOTensor
    SparseCOOTensor._layout = layout
    lib = registry.library("sparse")
    lay = LAYOUT

    def define(schema, meta, kernel, backward=None, setup=None, key_layout=lay, doc=None):
        q = lib.define(schema, meta, structured=False, doc=doc)
        lib.impl(q, kernel, device=ANY, layout=key_layout, dtypes=ANY)
        if backward is not None:
            register_autograd(q, backward, setup_context=setup, lib=lib)
        return q

    define("coo_tensor(Tensor indices, Tensor values, int[] size, bool is_coalesced=False) -> Tensor",
           _coo_meta, _coo_kernel, _coo_backward, _coo_setup,
           doc="A sparse COO tensor over int64 ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense) "
               "(no bounds check; ember.sparse_coo_tensor is the checked public form).")
    define("values(Tensor self) -> Tensor", _values_meta, _values_kernel, _values_backward, _values_setup,
           doc="The values of a sparse tensor, differentiable (sparse gradient with the input's pattern).")
    define("to_dense(Tensor self) -> Tensor", _to_dense_meta, _to_dense_kernel, _to_dense_backward, _mask_setup,
           doc="Strided copy of a sparse tensor (duplicates summed); masked gradient.")
    define("to_sparse(Tensor self, int sparse_dim) -> Tensor", _to_sparse_meta, _to_sparse_kernel,
           _to_sparse_backward, None, key_layout="strided",
           doc="A coalesced sparse COO tensor of the nonzeros of a strided tensor.")
    define("coalesce(Tensor self) -> Tensor", _coalesce_meta, coalesce_raw, _coalesce_backward, None,
           doc="Indices sorted row-major, duplicates summed.")
    define("mm(Tensor self, Tensor mat2) -> Tensor", _mm_meta, mm_generic, _mm_backward, _mm_setup,
           doc="sparse (n, k) @ dense (k, m) -> dense (n, m); the gradient of self is sparse with its pattern.")
    define("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
           _sum_meta, _sum_kernel, _sum_backward, _sum_setup,
           doc="Sum over dims: dense when every sparse dim is reduced, else sparse.")
    define("softmax(Tensor self, int dim) -> Tensor", _softmax_meta, _softmax_kernel, _softmax_backward,
           _softmax_setup, doc="Softmax over the specified entries (unspecified ones count as -inf).")
    define("log_softmax(Tensor self, int dim) -> Tensor", _softmax_meta, _log_softmax_kernel,
           _log_softmax_backward, _softmax_setup, doc="log of sparse softmax.")

    core = {"add": add, "sub": sub, "mul": mul, "true_divide": true_divide, "pow": pow, "sum": sum_,
            "mm": mm, "matmul": matmul, "index_select": index_select, "cat": cat}
    for name, linear in ZERO_PRESERVING_UNARY.items():
        if callable(getattr(ember, name, None)):
            core[name] = _make_unary(name, linear)
    for name, fn in core.items():
        try:
            lib.impl(name, fn, device=ANY, layout=lay, dtypes=ANY)
        except ValueError:      # not a dispatcher op in this ember version (a Python-level function)
            continue

    from . import _scipy
    _scipy.register(lib, lay)
