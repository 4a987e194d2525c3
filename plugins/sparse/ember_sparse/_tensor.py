"""The sparse COO tensor: a ``Tensor`` subclass whose layout is ``ember.sparse_coo``.

It has no storage: ``_sp_indices`` (int64, sparse_dim x nnz, strided, on the tensor's device)
and ``_sp_values`` (strided, (nnz,) + the dense dims) hold the data, ``_sp_coalesced`` says
whether the indices are sorted (row-major) and unique. Everything a dense tensor does through
its storage (views, strides, numpy) raises NotImplementedError naming the method and the key;
ops go through the dispatcher to the kernels registered at sparse_coo keys (``_kernels``).

A subclass, not flags on ``Tensor``: the core's dense hot paths (views, ``detach``, ``to``)
stay free of layout tests, and the layout's behaviour lives in the layout's plugin. Like
torch, ``isinstance(s, ember.Tensor)`` holds; unlike torch, ``type(s)`` is this subclass.
"""
from __future__ import annotations

import math

import ember
from ember import Tensor
from ember.library import parse_to_args

__all__ = ["SparseCOOTensor", "is_sparse", "make_sparse"]

_new = object.__new__


class _NoStorage:
    """The ``_storage`` of a sparse tensor: a strided kernel that reaches for it (a sparse tensor in an
    argument position an op does not dispatch on, e.g. ``ember.where(c, sparse, dense)``) gets a
    NotImplementedError naming the layout instead of an AttributeError on None."""

    __slots__ = ()
    _shared = None

    def __getattr__(self, name):
        raise NotImplementedError(
            "a sparse_coo tensor was passed to a kernel for strided tensors: this op does not take sparse COO "
            "arguments in this position (ember-sparse); convert it with .to_dense()")

    def __repr__(self):
        return "<no storage: sparse_coo>"


_NO_STORAGE = _NoStorage()


def make_sparse(indices, values, shape, coalesced=False):
    """A SparseCOOTensor over ``indices`` / ``values`` (no checks, no autograd: the kernels' constructor)."""
    t = _new(SparseCOOTensor)
    t._storage = _NO_STORAGE
    t._shape = tuple(int(s) for s in shape)
    t._stride = ()
    t._offset = 0
    t._dtype = values._dtype
    t._device = values._device
    t._native = None
    t._sp_indices = indices
    t._sp_values = values
    t._sp_coalesced = bool(coalesced)
    return t


def is_sparse(x) -> bool:
    """Whether ``x`` is an ember-sparse SparseCOOTensor."""
    return isinstance(x, SparseCOOTensor)


def _key_str(t):
    return f"({t._device.type}, sparse_coo, {t._dtype.name})"


def _unsupported(name):
    def method(self, *args, **kwargs):
        raise NotImplementedError(
            f"Could not run '{name}' with arguments from the {_key_str(self)} key: a sparse COO tensor has no "
            f"storage or strides (ember-sparse). Use .to_dense() for a strided copy.")
    method.__name__ = name
    method.__doc__ = "Not supported for sparse COO tensors (NotImplementedError), as in PyTorch."
    return method


def _ops():
    return ember.ops.sparse


class SparseCOOTensor(Tensor):
    """A sparse COO tensor (matches a torch.Tensor with ``layout=torch.sparse_coo``).

    Build one with ``ember.sparse_coo_tensor(indices, values, size)`` or ``dense.to_sparse()``.
    """

    __slots__ = ()

    # ------------------------------------------------------------ sparse accessors
    def sparse_dim(self) -> int:
        """Number of sparse dims (rows of ``indices``)."""
        return self._sp_indices._shape[0]

    def dense_dim(self) -> int:
        """Number of dense (trailing) dims: ``values().dim() - 1``."""
        return len(self._sp_values._shape) - 1

    def _nnz(self) -> int:
        """Number of specified elements (including duplicates when uncoalesced)."""
        return self._sp_indices._shape[1]

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and unique (``coalesce()`` makes them so)."""
        return self._sp_coalesced

    def _coalesced_(self, coalesced):
        self._sp_coalesced = bool(coalesced)
        return self

    def _indices(self):
        """The indices, int64 (sparse_dim, nnz), uncoalesced or not (an alias, not a copy)."""
        return self._sp_indices

    def _values(self):
        """The values ((nnz,) + dense dims), not differentiable (an alias, not a copy)."""
        return self._sp_values.detach() if self._requires_grad or self._grad_fn is not None else self._sp_values

    def indices(self):
        """The indices of a coalesced tensor; RuntimeError "Cannot get indices on an uncoalesced tensor,
        please call .coalesce() first" otherwise (matches torch.Tensor.indices)."""
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_indices

    def values(self):
        """The values of a coalesced tensor, differentiable (the gradient is a sparse tensor with this
        tensor's pattern); RuntimeError on an uncoalesced tensor (matches torch.Tensor.values)."""
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return _ops().values(self)

    def coalesce(self):
        """Indices sorted row-major and duplicates summed (self when already coalesced); RuntimeError
        for an out-of-bounds or negative index (matches torch.Tensor.coalesce)."""
        if self._sp_coalesced:
            return self
        return _ops().coalesce(self)

    def to_dense(self, dtype=None, *, masked_grad=True):
        """A strided tensor with the same values (duplicates summed); differentiable, the gradient
        being sparse with this tensor's pattern (PyTorch's masked semantics). Matches torch.Tensor.to_dense."""
        r = _ops().to_dense(self)
        return r if dtype is None else r.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """Self when ``sparse_dim`` is None or already this tensor's sparse_dim; else re-sparsified."""
        if layout is not None and layout is not self._layout:
            raise NotImplementedError(f"to_sparse(): conversion from sparse_coo to layout {layout!r} is not "
                                      f"supported by ember-sparse")
        if sparse_dim is None or sparse_dim == self.sparse_dim():
            return self
        return self.to_dense().to_sparse(sparse_dim)

    def to_sparse_coo(self):
        """This tensor itself (already sparse COO)."""
        return self

    # ------------------------------------------------------------ copies, devices, dtypes
    @property
    def data(self):
        """The tensor without autograd tracking (shares indices and values)."""
        return self.detach()

    @data.setter
    def data(self, other):
        """Replace indices, values and dtype with those of the sparse tensor ``other``; RuntimeError unless it is
        sparse with the same shape.
        """
        if not isinstance(other, SparseCOOTensor) or other._shape != self._shape:
            raise RuntimeError("data set to a tensor that requires a different layout or size")
        self._sp_indices, self._sp_values, self._sp_coalesced = other._sp_indices, other._sp_values, \
            other._sp_coalesced
        self._dtype = other._dtype

    def detach(self):
        """A sparse tensor sharing indices and values that does not require grad."""
        return make_sparse(self._sp_indices, self._sp_values.detach(), self._shape, self._sp_coalesced)

    def clone(self, *, memory_format=None):
        """A copy with its own indices and values (differentiable)."""
        return _ops().coo_tensor(self._sp_indices.clone(), _ops().values(self).clone(), self._shape,
                                 self._sp_coalesced)

    def to(self, *args, **kwargs):
        """This sparse tensor on another device and/or dtype (matches torch.Tensor.to); differentiable."""
        dev, dtype, copy, _ = parse_to_args(args, dict(kwargs))     # parsed as Tensor.to parses them
        dtype = dtype or self._dtype
        idx = self._sp_indices if dev is None else self._sp_indices.to(dev, copy=copy)
        if idx._device == self._device and dtype is self._dtype and not copy:
            return self
        return _ops().coo_tensor(idx, _ops().values(self).to(idx._device, dtype, copy=copy), self._shape,
                                 self._sp_coalesced)

    def cpu(self):
        """This sparse tensor on the cpu (``to('cpu')``)."""
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        """This sparse tensor on a cuda device (``to``; ``non_blocking`` is ignored)."""
        return self.to(ember.device("cuda", device) if isinstance(device, int) else (device or "cuda"))

    def type_as(self, other):
        """This sparse tensor converted to ``other``'s dtype."""
        return self.to(other._dtype)

    def __deepcopy__(self, memo):
        r = make_sparse(self._sp_indices.clone(), self._sp_values.detach().clone(), self._shape, self._sp_coalesced)
        if self._requires_grad:
            r.requires_grad_()
        memo[id(self)] = r
        return r

    def __reduce_ex__(self, protocol):
        from ember.sparse import _rebuild_sparse_coo
        return (_rebuild_sparse_coo, (self._sp_indices, self._sp_values.detach(), tuple(self._shape),
                                      self._sp_coalesced, self._requires_grad))

    # ------------------------------------------------------------ geometry (new sparse tensors)
    def transpose(self, dim0, dim1):
        """Dims ``dim0`` and ``dim1`` swapped (both sparse or both dense); a new, uncoalesced tensor
        (PyTorch returns a view; ember's sparse tensors have no views). Differentiable."""
        from ._kernels import transpose
        return transpose(self, dim0, dim1)

    swapaxes = swapdims = transpose

    def t(self):
        """Transpose of a sparse tensor of at most 2 dims (RuntimeError otherwise)."""
        if len(self._shape) > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {len(self._shape)}D")
        if len(self._shape) < 2:
            return self
        return self.transpose(0, 1)

    @property
    def T(self):
        """Transpose of a tensor of at most 2 dims (see ``t()``); RuntimeError for more dims."""
        if len(self._shape) > 2:
            raise RuntimeError("ember-sparse: .T of a sparse tensor is supported up to 2 dims")
        return self.t()

    @property
    def mT(self):
        """The last two dims swapped, as a new sparse tensor (see ``transpose``)."""
        return self.transpose(-2, -1)

    def narrow(self, dim, start, length):
        """Elements ``start .. start+length-1`` of ``dim``, as a new sparse tensor (PyTorch only has
        ``narrow_copy`` for sparse tensors; ember's narrow returns that copy). Differentiable."""
        from ._kernels import narrow
        return narrow(self, dim, start, length)

    narrow_copy = narrow

    # ------------------------------------------------------------ ops routed to the sparse ops
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        """Sum over ``dim`` (all dims when None): dense when every sparse dim is reduced, else sparse
        (matches torch.Tensor.sum on sparse tensors / torch.sparse.sum)."""
        return _ops().sum(self, dim, keepdim, dtype=dtype)

    def mm(self, mat2):
        """Sparse (n, k) @ dense (k, m) -> dense (n, m); see ember.sparse.mm."""
        return _ops().mm(self, mat2)

    def matmul(self, other):
        """``ember.matmul(self, other)`` (also the ``@`` operator)."""
        return ember.matmul(self, other)

    __matmul__ = matmul

    # ------------------------------------------------------------ in-place arithmetic
    def _replace_(self, r):
        if not isinstance(r, SparseCOOTensor):
            raise RuntimeError("ember-sparse: the in-place result is strided, it cannot be written into a sparse "  # noqa: TRY004
                               "tensor (use the out-of-place op)")
        if r._shape != self._shape or r._dtype is not self._dtype:
            raise RuntimeError(f"result type {r._dtype.name} with shape {list(r._shape)} can't be cast to the "
                               f"desired output type {self._dtype.name} with shape {list(self._shape)}")
        if self._requires_grad and self._grad_fn is None and ember.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        self._sp_indices, self._sp_values, self._sp_coalesced = r._sp_indices, r._sp_values, r._sp_coalesced
        if r._grad_fn is not None:
            self._grad_fn, self._output_nr = r._grad_fn, r._output_nr
        return self

    def add_(self, other, *, alpha=1):
        """In-place ``self + alpha * other`` (other sparse, or a scalar-free dense is refused)."""
        return self._replace_(ember.add(self, other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        """In-place ``self - alpha * other``; RuntimeError when the result is strided or of another shape / dtype."""
        return self._replace_(ember.sub(self, other, alpha=alpha))

    def mul_(self, other):
        """In-place ``self * other``; RuntimeError when the result is strided or of another shape / dtype."""
        return self._replace_(ember.mul(self, other))

    def div_(self, other, *, rounding_mode=None):
        """In-place ``self / other`` (optional rounding_mode); RuntimeError when the result is strided or of another
        shape / dtype.
        """
        return self._replace_(ember.div(self, other, rounding_mode=rounding_mode))

    def neg_(self):
        """In-place negation of the values."""
        return self._replace_(ember.neg(self))

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def zero_(self):
        """All elements zero: nnz becomes 0."""
        idx = ember.zeros((self.sparse_dim(), 0), dtype=ember.int64, device=self._device)
        val = ember.zeros((0,) + tuple(self._sp_values._shape[1:]), dtype=self._dtype, device=self._device)
        self._sp_indices, self._sp_values, self._sp_coalesced = idx, val, True
        return self

    # ------------------------------------------------------------ printing
    def __repr__(self, *, tensor_contents=None):
        """PyTorch's format: ``tensor(indices=tensor(...), values=tensor(...), size=(3, 3), nnz=2,
        layout=ember.sparse_coo)`` (the core's number formatting and line wrapping)."""
        from ember._printing import (  # the core's formatter, as torch's repr
            _add_suffixes,
            _tensor_str,
        )
        indent = len("tensor(")

        def part(name, t):
            pre = f"{name}=tensor("
            if t.numel() == 0:
                return f"{pre}[], size={tuple(t._shape)})"
            return pre + _tensor_str(t, indent + len(pre)) + ")"
        text = "tensor(" + part("indices", self._sp_indices) + ",\n" + " " * indent + \
            part("values", self._sp_values.detach())
        tail = []
        if self._device.type != "cpu":
            tail.append(f"device='{self._device}'")
        tail += [f"size={tuple(self._shape)}", f"nnz={self._nnz()}"]
        if self._dtype not in (ember.get_default_dtype(), ember.int64, ember.bool):
            tail.append(f"dtype={self._dtype!r}")
        tail.append(f"layout={self._layout!r}")
        if self._grad_fn is not None:
            gf = self._grad_fn
            tail.append(f"grad_fn=<{gf.name() if callable(getattr(gf, 'name', None)) else type(gf).__name__}>")
        elif self._requires_grad:
            tail.append("requires_grad=True")
        # as torch: the suffixes of a sparse tensor start on a new line
        return _add_suffixes(text + ",\n" + " " * indent + tail[0], tail[1:], indent)

    __str__ = __repr__

    def stride(self, dim=None):
        """RuntimeError: sparse tensors have no strides (as PyTorch)."""
        raise RuntimeError(f"Sparse {self._device.type.upper()} tensors do not have strides")

    def is_contiguous(self, memory_format=None):
        """Always RuntimeError: sparse tensors do not have is_contiguous (as PyTorch)."""
        raise RuntimeError("is_contiguous(): sparse tensors do not have is_contiguous")

    @property
    def nbytes(self):
        """Bytes held by the indices and the values tensors together."""
        return self._sp_indices.nbytes + self._sp_values.nbytes

    def numel(self):
        """The number of elements of the dense shape (zeros included)."""
        return math.prod(self._shape)


for _name in ("view", "view_as", "reshape", "reshape_as", "as_strided", "expand", "expand_as", "select",
              "unfold", "diagonal", "squeeze", "unsqueeze", "flatten", "unflatten", "movedim", "permute",
              "contiguous", "numpy", "tolist", "item", "data_ptr", "untyped_storage", "storage_offset",
              "__getitem__", "__setitem__", "share_memory_", "pin_memory", "copy_", "fill_", "t_",
              "transpose_", "squeeze_", "unsqueeze_", "split", "chunk", "unbind", "_view"):
    setattr(SparseCOOTensor, _name, _unsupported(_name))
del _name

for _name, _dt in (("float", "float32"), ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"),
                   ("long", "int64"), ("int", "int32"), ("short", "int16"), ("char", "int8"), ("byte", "uint8"),
                   ("bool", "bool"), ("cfloat", "complex64"), ("cdouble", "complex128")):
    def _conv(self, memory_format=None, _dt=_dt):
        return self.to(getattr(ember, _dt))
    _conv.__name__ = _name
    _conv.__doc__ = f"``self.to(ember.{_dt})`` (a sparse tensor)."
    setattr(SparseCOOTensor, _name, _conv)
del _name, _dt, _conv


def _check_invariants(self):
    """RuntimeError (PyTorch's message) for a negative or out-of-bounds index."""
    from ._kernels import check_bounds, linear_index, sparse_sizes
    sizes = sparse_sizes(self)
    check_bounds(self._sp_indices, sizes)
    if self._sp_coalesced and self._sp_indices._shape[1] > 1:
        lin = linear_index(self._sp_indices, sizes)
        if not bool((lin[1:] > lin[:-1]).all()):
            raise RuntimeError("ember-sparse: is_coalesced=True but the indices are not sorted and unique")
    return self


SparseCOOTensor._check_invariants = _check_invariants


def _make_inplace_unary(name):
    def method(self, *args, **kwargs):
        return self._replace_(getattr(ember, name)(self, *args, **kwargs))
    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}`` of a sparse tensor (its data replaced by the result's)."
    return method


for _name in ("abs", "sqrt", "sin", "tan", "tanh", "asin", "atan", "sinh", "asinh", "atanh", "expm1", "log1p",
              "trunc", "floor", "ceil", "round", "sign", "sgn", "square", "erf", "erfinv", "frac", "relu",
              "nan_to_num", "rad2deg", "deg2rad", "pow"):
    setattr(SparseCOOTensor, _name + "_", _make_inplace_unary(_name))
del _name
