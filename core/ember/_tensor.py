"""Tensor: storage + shape + stride + storage offset + dtype (+ autograd metadata), and Size.

Everything here is metadata: the view ops (``view``, ``reshape`` when possible,
``transpose``/``t``/``permute``, ``expand``, ``narrow``, ``select``, basic indexing,
``squeeze``/``unsqueeze``, ``unfold``, ``diagonal``, ``as_strided``, ``flatten``,
``unflatten``, ``movedim``) build a new Tensor over the same storage with no kernel,
so they work on every strided device; ``t_``, ``transpose_``, ``squeeze_`` and
``unsqueeze_`` change a tensor's own geometry the same way. Ops with kernels are
attached as methods by the op modules (``_ops/*``).
"""
from __future__ import annotations

import builtins
import math
import numbers

from . import _dtype as D
from ._device import strided
from ._grad_state import STATE as _AG
from .compiler._capture import ACTIVE as _CAPTURE_ACTIVE
from . import _memory_format as _MF

__all__ = ["Tensor", "Size", "is_tensor"]

_new = object.__new__


class Size(tuple):
    """A tensor's shape: a tuple of ints (matches torch.Size)."""

    __slots__ = ()

    def __repr__(self):
        return f"ember.Size([{', '.join(str(s) for s in self)}])"

    def numel(self) -> int:
        """Product of the sizes (1 for ``Size([])``)."""
        return math.prod(self)

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __reduce__(self):
        return (Size, (tuple(self),))


def _wrap_dim(dim, ndim, name="dim"):
    """A dim in [-ndim, ndim) made non-negative; IndexError in PyTorch's words otherwise."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        if hasattr(dim, "__index__") and not isinstance(dim, bool):
            dim = dim.__index__()
        else:
            raise TypeError(f"{name} must be int, not {type(dim).__name__}")
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _size_args(args, name):
    """``view(2, 3)``, ``view((2, 3))`` and ``view(Size)`` all give (2, 3)."""
    if len(args) == 1 and not isinstance(args[0], int):
        args = args[0]
        if isinstance(args, Tensor):
            args = args.tolist()
    try:
        shape = tuple(int(s.__index__()) for s in args)
    except (AttributeError, TypeError):
        raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found element of type "
                        f"{next(type(s).__name__ for s in args if not hasattr(s, '__index__'))}") from None
    return shape


def _sizes_kw(args, kwargs, name, key):
    """The sizes of a method taking them as varargs or as one keyword (``view(2, 3)``,
    ``view(size=(2, 3))``, as PyTorch's methods); TypeError for none, or for both forms."""
    if kwargs:
        if args or len(kwargs) > 1 or key not in kwargs:
            bad = next((k for k in kwargs if k != key), key)
            raise TypeError(f"{name}() got an unexpected keyword argument '{bad}'" if bad != key else
                            f"{name}() got multiple values for argument '{key}'")
        value = kwargs[key]
        if isinstance(value, numbers.Integral):
            raise TypeError(f"{name}(): argument '{key}' must be tuple of ints, not {type(value).__name__}")
        return (value,)
    if not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "{key}"')
    return args


def _infer_size(shape, numel):
    """Resolve one -1 in ``shape``; RuntimeError (PyTorch's message) when it cannot hold numel."""
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
        shape = shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '[{', '.join(map(str, shape))}]' is invalid for input of size {numel}")
    return shape


def _view_strides(old_shape, old_stride, new_shape):
    """Strides that view ``old`` as ``new_shape`` without a copy, or None (ATen's computeStride)."""
    numel = math.prod(old_shape)
    if numel == 0 or not old_shape:
        # any strides work for an empty or one-element 0-dim tensor; use contiguous ones
        from ._factory import contiguous_strides
        return contiguous_strides(new_shape)[1]
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1] if old_stride else 1
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def _record_view(name, kind, method, self, *args):
    """A view op on a tensor that requires grad, in grad mode: run it and record its backward."""
    from .autograd import _record
    return _record.record_view(name, kind, method, self, args, {})


# (shape, stride, requested sizes) -> (new shape, new stride) for view()
_VIEW_CACHE: dict = {}


class Tensor:
    """A multi-dimensional array on one device (matches torch.Tensor).

    A tensor is a view of an ``UntypedStorage``: ``shape``, ``stride()`` (in elements)
    and ``storage_offset()`` (in elements) say where its elements lie. Tensors made by
    view ops share their base's storage and version counter.
    Construct tensors with ``ember.tensor``, ``ember.zeros``, ...; calling the class itself is
    PyTorch's legacy constructor (``ember.Tensor(data)``, ``ember.Tensor(*sizes)``; see ``_legacy``).
    """

    # the hot attributes are slots, set by every constructor (_factory.empty_on, _view, detach,
    # runtimes' wrap functions); the rest are class-level defaults, stored per instance only when set
    __slots__ = ("_storage", "_shape", "_stride", "_offset", "_dtype", "_device",
                 "_native",            # a backend's cached native view of this tensor (numpy array on cpu)
                 "__dict__", "__weakref__")
    _layout = strided
    _vc = None              # version counter, a one-element list shared with views; None = version 0
    _base = None            # the tensor this one is a view of
    _requires_grad = False
    _grad = None
    _grad_fn = None
    _extra = None           # rarely used per-tensor state (hooks, retain_grad, names)
    _output_nr = 0          # which output of its grad_fn this tensor is
    _accumulator = None     # a leaf's AccumulateGrad node (autograd)
    _quantizer = None       # a quantized tensor's quantizer (ember._ops._quantized); views, clone, .to carry it
    __array_priority__ = 1000

    def __new__(cls, *args, **kwargs):
        # the legacy constructor (matches torch.Tensor(...)); ember's own code builds tensors with
        # object.__new__, which does not come here
        from ._legacy import legacy_new
        t = legacy_new(None, args, kwargs)
        if cls is not Tensor:             # a user's subclass: the same tensor, as an instance of cls
            s = _new(cls)
            s._storage, s._shape, s._stride, s._offset = t._storage, t._shape, t._stride, t._offset
            s._dtype, s._device, s._native, s._vc = t._dtype, t._device, t._native, t._vc
            return s
        return t

    def __init__(self, *args, **kwargs):
        pass                              # everything happens in __new__

    # ------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        """The size of each dimension, as ``ember.Size``."""
        return Size(self._shape)

    def size(self, dim=None):
        """``Size`` of the tensor, or the size of dimension ``dim`` (IndexError if out of range)."""
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap_dim(dim, len(self._shape))] if self._shape else 1

    def stride(self, dim=None):
        """Strides in elements (a tuple), or the stride of dimension ``dim``."""
        if dim is None:
            return self._stride
        return self._stride[_wrap_dim(dim, len(self._shape))] if self._shape else 1

    def storage_offset(self) -> int:
        """Offset of element [0, ..., 0] in the storage, in elements."""
        return self._offset

    @property
    def dtype(self):
        """The element type (ember.dtype)."""
        return self._dtype

    @property
    def device(self):
        """The device the storage lives on (ember.device)."""
        return self._device

    @property
    def layout(self):
        """The memory layout (ember.strided)."""
        return self._layout

    @property
    def ndim(self) -> int:
        """Number of dimensions (alias of dim())."""
        return len(self._shape)

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    ndimension = dim

    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self._shape)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """numel() * itemsize, in bytes."""
        return self.numel() * self._dtype.itemsize

    def untyped_storage(self):
        """The ``UntypedStorage`` this tensor views."""
        return self._storage

    def data_ptr(self) -> int:
        """Address of the first element (storage address + offset * itemsize)."""
        return self._storage.data_ptr() + self._offset * self._dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie in row-major order with no gaps (size-1 dims ignored), or in the order
        of ``memory_format`` (``ember.channels_last``: N, H, W, C; False at another rank). Matches
        torch.Tensor.is_contiguous."""
        if memory_format is not None and memory_format is not _MF.contiguous_format:
            if memory_format is _MF.preserve_format:
                raise RuntimeError("Memory format preserve_format not supported by is_contiguous")
            if not isinstance(memory_format, _MF.memory_format):
                raise TypeError(f"is_contiguous(): argument 'memory_format' must be ember.memory_format, not "
                                f"{type(memory_format).__name__}")
            return _MF.is_contiguous_for(self._shape, self._stride, memory_format)
        expected = 1
        for size, st in zip(reversed(self._shape), reversed(self._stride)):
            if size == 0:
                return True
            if size != 1:
                if st != expected:
                    return False
                expected *= size
        return True

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor is on the cpu device."""
        return self._device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor is on a cuda device."""
        return self._device.type == "cuda"

    # the device-type flags of torch.Tensor: true when a plugin registered that device type and the
    # tensor lives there (ember ships none of these types; a vendor plugin may)
    is_xpu = property(lambda self: self._device.type == "xpu", doc="Whether the tensor is on an xpu device.")
    is_mps = property(lambda self: self._device.type == "mps", doc="Whether the tensor is on an mps device.")
    is_ipu = property(lambda self: self._device.type == "ipu", doc="Whether the tensor is on an ipu device.")
    is_xla = property(lambda self: self._device.type == "xla", doc="Whether the tensor is on an xla device.")
    is_maia = property(lambda self: self._device.type == "maia", doc="Whether the tensor is on a maia device.")
    is_mtia = property(lambda self: self._device.type == "mtia", doc="Whether the tensor is on an mtia device.")
    is_vulkan = property(lambda self: self._device.type == "vulkan", doc="Whether the tensor is on a vulkan device.")

    @property
    def is_sparse(self) -> bool:
        """Whether the layout is sparse_coo."""
        return self._layout.name == "sparse_coo"

    @property
    def is_sparse_csr(self) -> bool:
        """Whether the layout is sparse_csr."""
        return self._layout.name == "sparse_csr"

    @property
    def is_mkldnn(self) -> bool:
        """Always False: ember has no mkldnn layout."""
        return False

    @property
    def is_nested(self) -> bool:
        """Always False: ember has no nested tensors."""
        return False

    def is_conj(self) -> bool:
        """Always False: ember conjugates eagerly, it has no lazy conjugate bit (matches the value
        torch.Tensor.is_conj gives after ``resolve_conj``)."""
        return False

    def is_neg(self) -> bool:
        """Always False: ember has no lazy negative bit (torch.Tensor.is_neg)."""
        return False

    def is_same_size(self, other) -> bool:
        """Whether ``other`` has the same shape (matches torch.Tensor.is_same_size)."""
        return self._shape == other._shape

    def is_set_to(self, tensor) -> bool:
        """Whether both tensors view the same storage with the same offset, sizes and strides
        (matches torch.Tensor.is_set_to)."""
        return (self._storage is tensor._storage and self._offset == tensor._offset
                and self._shape == tensor._shape and self._stride == tensor._stride)

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor (matches torch.Tensor.is_nonzero): RuntimeError "Boolean
        value of Tensor with no values is ambiguous" for none, "... with more than one value ..." for
        several."""
        n = self.numel()
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def is_distributed(self) -> bool:
        """Always False (the torch.Tensor.is_distributed of an ordinary tensor)."""
        return False

    @property
    def is_quantized(self) -> bool:
        """Whether the tensor is quantized: it has a quantizer (dtypes qint8 / quint8 / qint32 of ember-quantized)."""
        return self._quantizer is not None

    @property
    def is_meta(self) -> bool:
        """Always False: ember has no meta device."""
        return False

    def is_floating_point(self) -> bool:
        """Whether the dtype is floating point."""
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        """Whether the dtype is complex."""
        return self._dtype.is_complex

    def is_signed(self) -> bool:
        """Whether the dtype is signed (matches torch.Tensor.is_signed)."""
        return self._dtype.is_signed

    def get_device(self) -> int:
        """The device index (-1 on cpu), as torch.Tensor.get_device."""
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor (or a view sharing its storage) has had."""
        return 0 if self._vc is None else self._vc[0]

    def _is_view(self) -> bool:
        return self._base is not None

    def _set_storage_meta(self, other):
        """Make self look at other's storage / geometry (resize_ and out= resizing)."""
        self._storage, self._shape, self._stride, self._offset = other._storage, other._shape, other._stride, other._offset
        self._native = None

    # ------------------------------------------------------------ views (metadata only)
    def _view(self, shape, stride, offset):
        t = _new(Tensor)
        t._storage = self._storage
        t._shape = shape
        t._stride = stride
        t._offset = offset
        t._dtype = self._dtype
        t._device = self._device
        t._native = None
        base = self._base
        t._base = self if base is None else base
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
            if base is not None:
                base._vc = vc
        t._vc = vc
        if self._requires_grad or self._grad_fn is not None:
            from .autograd import _record      # imported here: autograd imports this module
            _record.on_view(self, t)
        elif self._quantizer is not None:      # a quantized tensor's view keeps its quantizer
            t._quantizer = self._quantizer.view_of(self, t)
        return t

    def as_strided(self, size, stride, storage_offset=None):
        """A view with the given size, stride and offset (elements); RuntimeError if it reaches
        outside the storage. Matches torch.as_strided."""
        if self._requires_grad and _AG.check:
            return _record_view("AsStridedBackward0", "scatter", Tensor.as_strided, self, size, stride, storage_offset)
        size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
        if len(size) != len(stride):
            raise RuntimeError(f"mismatch in length of strides and shape")
        offset = self._offset if storage_offset is None else int(storage_offset)
        if any(s < 0 for s in stride):
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                               f"[{', '.join(map(str, stride))}]")
        if math.prod(size):
            last = offset + builtins.sum((n - 1) * s for n, s in zip(size, stride))
            need = (last + 1) * self._dtype.itemsize
            if need > self._storage._nbytes:
                raise RuntimeError(f"setStorage: sizes [{', '.join(map(str, size))}], strides "
                                   f"[{', '.join(map(str, stride))}], storage offset {offset}, and itemsize "
                                   f"{self._dtype.itemsize} requiring a storage size of {need} are out of bounds "
                                   f"for storage of size {self._storage._nbytes}")
        return self._view(size, stride, offset)

    def view(self, *shape, **kwargs):
        """A view with a new shape (one size may be -1; sizes as varargs, one tuple or ``size=``), or
        a view as another dtype of the same size.

        RuntimeError, in PyTorch's words, when the strides make a view impossible
        ("use .reshape(...) instead"). Matches torch.Tensor.view.
        """
        if kwargs or not shape:
            shape = _sizes_kw(shape, kwargs, "view", "size")
        if self._requires_grad and _AG.check:
            return _record_view("ViewBackward0", "reshape", Tensor.view, self, *shape)
        if len(shape) == 1 and shape[0].__class__ is list:      # view([2, 3]), as view((2, 3))
            shape = tuple(shape[0])
        key = (self._shape, self._stride, shape)
        stride = _VIEW_CACHE.get(key)
        if stride is not None:   # memoised; 2.0 == 2 hashes alike, so the sizes' types are checked
            for s in shape:
                if s.__class__ is not int:
                    break
            else:
                return self._view(stride[0], stride[1], self._offset)
        if len(shape) == 1 and isinstance(shape[0], D.dtype):
            return self._view_dtype(shape[0])
        r = self._view_slow(shape)
        if len(_VIEW_CACHE) > 4096:
            _VIEW_CACHE.clear()
        if builtins.all(type(s) is int for s in shape):
            _VIEW_CACHE[key] = (r._shape, r._stride)
        return r

    def _view_slow(self, shape):
        shape = _size_args(shape, "view")
        cur = self._shape
        if shape == cur:
            return self._view(cur, self._stride, self._offset)
        numel = math.prod(cur)
        if -1 in shape or math.prod(shape) != numel:
            shape = _infer_size(shape, numel)
        stride = _view_strides(cur, self._stride, shape)
        if stride is None:
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return self._view(shape, stride, self._offset)

    def _view_dtype(self, dtype):
        if dtype.itemsize != self._dtype.itemsize:
            raise RuntimeError(f"view(dtype) with a different element size ({self._dtype} -> {dtype}) is not "
                               "supported by ember yet")
        t = self._view(self._shape, self._stride, self._offset)
        t._dtype = dtype
        if t._quantizer is not None and dtype is not self._dtype:   # the raw integers: no longer quantized
            t._quantizer = None
        return t

    def view_as(self, other):
        """``self.view(other.shape)``."""
        return self.view(other._shape)

    def reshape(self, *shape, **kwargs):
        """A view when the strides allow one, else a contiguous copy (sizes as varargs, one tuple or
        ``shape=``; matches torch.reshape)."""
        if kwargs or not shape:
            shape = _sizes_kw(shape, kwargs, "reshape", "shape")
        if self._requires_grad and _AG.check:
            return _record_view("ViewBackward0", "reshape", Tensor.reshape, self, *shape)
        shape = _size_args(shape, "reshape")
        numel = math.prod(self._shape)
        if -1 in shape or math.prod(shape) != numel:
            shape = _infer_size(shape, numel)
        stride = _view_strides(self._shape, self._stride, shape)
        if stride is not None:
            return self._view(shape, stride, self._offset)
        return self.contiguous().view(shape)

    def reshape_as(self, other):
        """``self.reshape(other.shape)`` (matches torch.Tensor.reshape_as)."""
        return self.reshape(other._shape)

    def contiguous(self, memory_format=None):
        """Self when already contiguous (in ``memory_format``, default row-major), else a copy laid out so
        (matches torch.Tensor.contiguous).

        :raises RuntimeError: channels_last(_3d) for a tensor not of rank 4 (5); preserve_format for a
            tensor that is not already contiguous (PyTorch's "preserve memory format is unsupported by the
            contiguous operator").
        """
        if memory_format is not None and memory_format is not _MF.contiguous_format:
            if memory_format is _MF.preserve_format:
                if self.is_contiguous():
                    return self
                raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
            _MF.check(memory_format, self._shape)
            if _MF.is_contiguous_for(self._shape, self._stride, memory_format):
                return self
            return self.clone(memory_format=memory_format)
        if self.is_contiguous():
            return self
        return self.clone(memory_format=_MF.contiguous_format)

    def transpose(self, dim0, dim1):
        """A view with dims ``dim0`` and ``dim1`` swapped."""
        if self._requires_grad and _AG.check:
            return _record_view("TransposeBackward0", "permute", Tensor.transpose, self, dim0, dim1)
        n = len(self._shape)
        d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
        if n == 0 or d0 == d1:
            return self._view(self._shape, self._stride, self._offset)
        shape, stride = list(self._shape), list(self._stride)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        stride[d0], stride[d1] = stride[d1], stride[d0]
        return self._view(tuple(shape), tuple(stride), self._offset)

    swapaxes = swapdims = transpose

    def t(self):
        """Transpose of a tensor of at most 2 dims (RuntimeError otherwise)."""
        if self._requires_grad and _AG.check:
            return _record_view("TBackward0", "permute", Tensor.t, self)
        if len(self._shape) > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {len(self._shape)}D")
        return self.transpose(0, 1) if len(self._shape) == 2 else self._view(self._shape, self._stride, self._offset)

    @property
    def T(self):
        """All dims reversed."""
        return self.permute(tuple(reversed(range(len(self._shape)))))

    @property
    def mT(self):
        """The last two dims swapped (a batch of matrices transposed)."""
        if len(self._shape) < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self):
        """The conjugate transpose of a tensor of at most 2 dims (``t()``, conjugated for complex dtypes)."""
        return self.t().conj() if self._dtype.is_complex else self.t()

    @property
    def mH(self):
        """The conjugate transpose of the last two dims (``mT``, conjugated for complex dtypes)."""
        return self.mT.conj() if self._dtype.is_complex else self.mT

    def permute(self, *dims, **kwargs):
        """A view with dims reordered (varargs, one tuple or ``dims=``); RuntimeError if ``dims`` is
        not a permutation."""
        if kwargs or not dims:
            dims = _sizes_kw(dims, kwargs, "permute", "dims")
        if self._requires_grad and _AG.check:
            return _record_view("PermuteBackward0", "permute", Tensor.permute, self, *dims)
        dims = _size_args(dims, "permute")
        n = len(self._shape)
        if len(dims) != n:
            raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                               f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal "
                               f"to len(dims) = {len(dims)}".replace("(sparse_coo)", ""))
        dims = tuple(_wrap_dim(d, n) for d in dims)
        if len(set(dims)) != n:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        return self._view(tuple(self._shape[d] for d in dims), tuple(self._stride[d] for d in dims), self._offset)

    def expand(self, *sizes, **kwargs):
        """A view broadcasting size-1 dims to ``sizes`` (-1 keeps a size; varargs, one tuple or
        ``size=``) with stride 0; matches torch.expand."""
        if kwargs or not sizes:
            sizes = _sizes_kw(sizes, kwargs, "expand", "size")
        if self._requires_grad and _AG.check:
            return _record_view("ExpandBackward0", "expand", Tensor.expand, self, *sizes)
        sizes = _size_args(sizes, "expand")
        n = len(self._shape)
        if len(sizes) < n:
            raise RuntimeError(f"expand(ember.{self._dtype.name}{{[{', '.join(map(str, self._shape))}]}}, "
                               f"size=[{', '.join(map(str, sizes))}]): the number of sizes provided "
                               f"({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({n})")
        lead = len(sizes) - n
        for i, want in enumerate(sizes):
            if i < lead and want == -1:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                                   f"dimension {i}")
            if want < -1:
                raise RuntimeError(f"Trying to create tensor with negative dimension {want}: "
                                   f"[{', '.join(map(str, sizes))}]")
        shape, stride = list(sizes[:lead]), [0] * lead
        for i, (s, st) in enumerate(zip(self._shape, self._stride)):
            want = sizes[lead + i]
            if want == -1:
                want = s
            if s == want:
                shape.append(s)
                stride.append(st)
            elif s == 1:
                shape.append(want)
                stride.append(0)
            else:
                raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing size ({s}) "
                                   f"at non-singleton dimension {lead + i}.  Target sizes: "
                                   f"[{', '.join(map(str, sizes))}].  Tensor sizes: [{', '.join(map(str, self._shape))}]")
        if any(s < 0 for s in shape[:lead]):
            raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0")
        return self._view(tuple(shape), tuple(stride), self._offset)

    def expand_as(self, other):
        """``self.expand(other.shape)`` (matches torch.Tensor.expand_as)."""
        return self.expand(other._shape)

    def narrow(self, dim, start, length):
        """A view of ``length`` elements of ``dim`` from ``start``; IndexError / RuntimeError as PyTorch."""
        if self._requires_grad and _AG.check:
            return _record_view("SliceBackward0", "scatter", Tensor.narrow, self, dim, start, length)
        if len(self._shape) == 0:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        d = _wrap_dim(dim, len(self._shape))
        size = self._shape[d]
        if isinstance(start, Tensor):
            start = start.item()
        if start < -size or start > size:
            raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
        if start < 0:
            start += size
        if length < 0 or start + length > size:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
        shape = self._shape[:d] + (length,) + self._shape[d + 1:]
        return self._view(shape, self._stride, self._offset + start * self._stride[d])

    def select(self, dim, index):
        """A view of one index of ``dim`` (that dim removed); IndexError when out of range."""
        if self._requires_grad and _AG.check:
            return _record_view("SelectBackward0", "scatter", Tensor.select, self, dim, index)
        n = len(self._shape)
        if n == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        d = _wrap_dim(dim, n)
        size = self._shape[d]
        index = int(index)
        if index < -size or index >= size:
            raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
        if index < 0:
            index += size
        return self._view(self._shape[:d] + self._shape[d + 1:], self._stride[:d] + self._stride[d + 1:],
                          self._offset + index * self._stride[d])

    def unbind(self, dim=0):
        """A tuple of ``select(dim, i)`` views for every i."""
        d = _wrap_dim(dim, len(self._shape))
        return tuple(self.select(d, i) for i in range(self._shape[d]))

    def squeeze(self, dim=None):
        """A view without size-1 dims (all, or those in ``dim``, an int or tuple)."""
        if self._requires_grad and _AG.check:
            return _record_view("SqueezeBackward0", "reshape", Tensor.squeeze, self, dim)
        n = len(self._shape)
        if dim is None:
            dims = {i for i, s in enumerate(self._shape) if s == 1}
        else:
            dims = {_wrap_dim(d, n) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
            dims = {d for d in dims if n and self._shape[d] == 1}
        keep = [i for i in range(n) if i not in dims]
        return self._view(tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep), self._offset)

    def unsqueeze(self, dim):
        """A view with a size-1 dim inserted at ``dim`` (in [-ndim-1, ndim])."""
        if self._requires_grad and _AG.check:
            return _record_view("UnsqueezeBackward0", "reshape", Tensor.unsqueeze, self, dim)
        n = len(self._shape)
        d = _wrap_dim(dim, n + 1)
        st = self._stride[d] * self._shape[d] if d < n else 1
        return self._view(self._shape[:d] + (1,) + self._shape[d:], self._stride[:d] + (st,) + self._stride[d:],
                          self._offset)

    def flatten(self, start_dim=0, end_dim=-1):
        """Dims ``start_dim..end_dim`` merged into one (a view when possible)."""
        if self._requires_grad and _AG.check:
            return _record_view("ViewBackward0", "reshape", Tensor.flatten, self, start_dim, end_dim)
        n = len(self._shape)
        if n == 0:
            return self.reshape(1)
        s, e = _wrap_dim(start_dim, n), _wrap_dim(end_dim, n)
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if s == e:
            return self._view(self._shape, self._stride, self._offset)
        return self.reshape(self._shape[:s] + (math.prod(self._shape[s:e + 1]),) + self._shape[e + 1:])

    def unflatten(self, dim, sizes):
        """Dim ``dim`` split into ``sizes`` (one may be -1)."""
        d = _wrap_dim(dim, len(self._shape))
        sizes = _infer_size(tuple(sizes), self._shape[d])
        return self.view(self._shape[:d] + sizes + self._shape[d + 1:])

    def movedim(self, source, destination):
        """Dims at ``source`` moved to ``destination`` (ints or sequences); a view."""
        n = len(self._shape)
        src = [_wrap_dim(s, n) for s in (source if isinstance(source, (tuple, list)) else (source,))]
        dst = [_wrap_dim(s, n) for s in (destination if isinstance(destination, (tuple, list)) else (destination,))]
        if len(src) != len(dst):
            raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
                               f"the same number of dims as destination ({dst} dims)")
        for what, given, wrapped in (("source", source, src), ("destination", destination, dst)):
            if len(set(wrapped)) != len(wrapped):   # PyTorch's message shows the dims as given
                raise RuntimeError(f"movedim: repeated dim in `{what}` ({list(given)})")
        order = [None] * n
        for s, d in zip(src, dst):
            order[d] = s
        rest = iter(i for i in range(n) if i not in src)
        order = [o if o is not None else next(rest) for o in order]
        return self.permute(order)

    moveaxis = movedim

    def unfold(self, dimension, size, step):
        """A view of all length-``size`` slices of ``dimension`` taken every ``step`` (a new last dim)."""
        if self._requires_grad and _AG.check:
            return _record_view("UnfoldBackward0", "scatter", Tensor.unfold, self, dimension, size, step)
        n = len(self._shape)
        d = _wrap_dim(dimension, max(n, 1))
        dim_size = self._shape[d] if n else 1
        if size < 0:
            raise RuntimeError(f"size is {size} but must be >= 0")
        if size > dim_size:
            raise RuntimeError(f"maximum size for tensor at dimension {d} is {dim_size} but size is {size}")
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if not n:   # as PyTorch: a 0-dim tensor gives just the window dim, (size,)
            return self._view((size,), (1,), self._offset)
        count = (dim_size - size) // step + 1
        dst = self._stride[d]
        shape = self._shape[:d] + (count,) + self._shape[d + 1:] + (size,)
        stride = self._stride[:d] + (dst * step,) + self._stride[d + 1:] + (dst,)
        return self._view(shape, stride, self._offset)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """A view of the diagonal of dims ``dim1``/``dim2`` (a new last dim)."""
        if self._requires_grad and _AG.check:
            return _record_view("DiagonalBackward0", "scatter", Tensor.diagonal, self, offset, dim1, dim2)
        n = len(self._shape)
        d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
        if d1 == d2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        s1, s2 = self._shape[d1], self._shape[d2]
        off = self._offset
        if offset >= 0:
            length = max(min(s1, s2 - offset), 0)
            off += offset * self._stride[d2] if length else 0
        else:
            length = max(min(s1 + offset, s2), 0)
            off -= offset * self._stride[d1] if length else 0
        keep = [i for i in range(n) if i not in (d1, d2)]
        shape = tuple(self._shape[i] for i in keep) + (length,)
        stride = tuple(self._stride[i] for i in keep) + (self._stride[d1] + self._stride[d2],)
        return self._view(shape, stride, off)

    def split(self, split_size, dim=0):
        """Views of ``split_size`` elements of ``dim`` (or a list of sizes); matches torch.split."""
        d = _wrap_dim(dim, len(self._shape))
        size = self._shape[d]
        if isinstance(split_size, int):
            if split_size <= 0 and size:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
            sizes = [split_size] * (size // split_size) + ([size % split_size] if size % split_size else []) \
                if split_size else [0]
        else:
            sizes = list(split_size)
            if builtins.sum(sizes) != size:
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                                   f"size at dimension {d}), but got split_sizes={sizes}")
        out, start = [], 0
        for s in sizes:
            out.append(self.narrow(d, start, s))
            start += s
        return tuple(out)

    def chunk(self, chunks, dim=0):
        """At most ``chunks`` views of equal size (the last may be smaller); matches torch.chunk."""
        if chunks <= 0:
            raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
        d = _wrap_dim(dim, len(self._shape))
        size = self._shape[d]
        step = max(-(-size // chunks), 1) if size else 1
        return self.split(step, d) if size else tuple(self.narrow(d, 0, 0) for _ in range(chunks))

    def tensor_split(self, indices_or_sections, dim=0):
        """A tuple of views along ``dim``: n near-equal parts (the first size % n one longer) for an int, else split
        at the given indices (clamped to the size); matches torch.Tensor.tensor_split.
        """
        d = _wrap_dim(dim, len(self._shape))
        size = self._shape[d]
        if isinstance(indices_or_sections, int):
            n = indices_or_sections
            q, r = divmod(size, n)
            bounds, acc = [], 0
            for i in range(n):
                acc += q + (1 if i < r else 0)
                bounds.append(acc)
            bounds = bounds[:-1]
        else:
            bounds = list(indices_or_sections)
        out, start = [], 0
        for b in bounds + [size]:
            b = min(max(b, start), size)
            out.append(self.narrow(d, start, b - start))
            start = b
        return tuple(out)

    # ------------------------------------------------------------ in-place views (metadata only)
    def _inplace_view(self, node_name, method, *args):
        """Make self the view ``method(self, *args)`` in place and return self (PyTorch's t_, ...).

        The data is unchanged, but the version goes up as in PyTorch: a backward that saved
        this tensor would otherwise see the new shape. When recording, the view's node
        (renamed ``node_name``) becomes self's grad_fn; on a leaf that requires grad (or a view
        of one) this raises PyTorch's in-place error.
        """
        from ._factory import bump_version
        record = _AG.check and self._requires_grad
        if record:
            from .autograd._record import check_inplace
            check_inplace(self)
        out = method(self, *args)
        self._set_storage_meta(out)
        bump_version(self)
        if record and out._grad_fn is not None:
            out._grad_fn._name = node_name
            self._grad_fn, self._output_nr = out._grad_fn, 0
            if self._base is not None:
                self.__dict__["_gf_version"] = self._version
        return self

    def t_(self):
        """In-place :meth:`t` (matches torch.Tensor.t_)."""
        return self._inplace_view("TBackward1", Tensor.t)

    def transpose_(self, dim0, dim1):
        """In-place :meth:`transpose` (matches torch.Tensor.transpose_)."""
        return self._inplace_view("TransposeBackward1", Tensor.transpose, dim0, dim1)

    swapaxes_ = swapdims_ = transpose_

    def squeeze_(self, dim=None):
        """In-place :meth:`squeeze` (matches torch.Tensor.squeeze_)."""
        name = "SqueezeBackward3" if dim is None else \
            "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4"
        return self._inplace_view(name, Tensor.squeeze, dim)

    def unsqueeze_(self, dim):
        """In-place :meth:`unsqueeze` (matches torch.Tensor.unsqueeze_)."""
        return self._inplace_view("UnsqueezeBackward1", Tensor.unsqueeze, dim)

    # ------------------------------------------------------------ autograd metadata (the engine is its own issue)
    @property
    def requires_grad(self) -> builtins.bool:
        """Whether autograd records operations on this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        """Set through ``requires_grad_(value)`` (same checks and errors)."""
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Mark this tensor as needing gradients (floating / complex dtypes only, as PyTorch).

        RuntimeError "only Tensors of floating point and complex dtype can require gradients"
        otherwise. Gradients themselves come with the autograd engine (``backward`` raises
        NotImplementedError until then).
        """
        if requires_grad and not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = builtins.bool(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient accumulated by ``backward()`` (None until one is computed)."""
        return self._grad

    @property
    def grad_fn(self):
        """The autograd node that produced this tensor (None for a leaf)."""
        return self._grad_fn

    @property
    def is_leaf(self) -> builtins.bool:
        """True when the tensor has no ``grad_fn`` (created by the user, or not requiring grad)."""
        return self._grad_fn is None

    def detach(self):
        """A view sharing storage that does not require grad."""
        t = _new(Tensor)
        t._storage, t._shape, t._stride, t._offset = self._storage, self._shape, self._stride, self._offset
        if self._vc is None:        # share the version counter (an in-place write through either is seen)
            self._vc = [0]
        t._dtype, t._device, t._vc = self._dtype, self._device, self._vc
        t._native = self._native
        if self._quantizer is not None:
            t._quantizer = self._quantizer
        return t

    # ------------------------------------------------------------ conversion
    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        return id(self)

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def __int__(self):
        return builtins.int(self.item())

    def __float__(self):
        return builtins.float(self.item())

    def __complex__(self):
        return builtins.complex(self.item())

    def __index__(self):
        if self._dtype.is_floating_point or self._dtype.is_complex or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def _host(self):
        """A numpy array holding this tensor's values (a view on host-memory devices)."""
        from . import _registry
        a = _registry.device_type(self._device.type).runtime.to_numpy(self)
        if _CAPTURE_ACTIVE[0]:
            from .compiler._capture import host_read
            host_read(self, a, "item()")
        return a

    def item(self):
        """The value of a one-element tensor as a Python number (RuntimeError otherwise)."""
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        return self._host().reshape(()).item()

    def tolist(self):
        """Nested Python lists of the values (a number for a 0-dim tensor)."""
        return self._host().tolist()

    def numpy(self, *, force=False):
        """A numpy array sharing this tensor's memory (host devices only; matches torch.Tensor.numpy).

        RuntimeError for a tensor that requires grad ("Use tensor.detach().numpy()")
        and, unless ``force=True``, for a tensor on a device whose memory is not host memory.
        """
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        from . import _registry
        runtime = _registry.device_type(self._device.type).runtime
        if not runtime.host_memory and not force:
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        a = runtime.to_numpy(self)
        if _CAPTURE_ACTIVE[0]:
            from .compiler._capture import host_read
            host_read(self, a, "numpy()")
        return a

    def _pinning_runtime(self, device):
        """The runtime that pins host memory for ``device``'s type (default: the current
        accelerator), or None when there is no accelerator or it has no "pinned_memory" service."""
        from . import _registry
        kind = _registry.default_accelerator_type() if device is None else _registry.canonical_device(device).type
        rt = _registry.device_type(kind).runtime if kind != "cpu" else None
        return rt if rt is not None and "pinned_memory" in rt.services else None

    def pin_memory(self, device=None):
        """A copy of this cpu tensor in page-locked host memory, from which copies to the
        accelerator can run asynchronously; self when already pinned (matches
        torch.Tensor.pin_memory). The memory comes from the accelerator's runtime
        (``DeviceRuntime.pin_memory``, service "pinned_memory"); ``device`` picks the
        device type instead of the current accelerator.

        RuntimeError for a non-cpu tensor, and "Cannot access accelerator device when none
        is available." when no accelerator (or none that pins memory) is installed.
        """
        if self._device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self._device.type}' tensor: only dense CPU tensors can be pinned")
        rt = self._pinning_runtime(device)
        if rt is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return self if rt.is_pinned(self) else rt.pin_memory(self)

    def is_pinned(self, device=None) -> builtins.bool:
        """Whether this tensor is in page-locked host memory (matches torch.Tensor.is_pinned);
        False for non-cpu tensors and when no accelerator pins memory."""
        if self._device.type != "cpu":
            return False
        rt = self._pinning_runtime(device)
        return rt is not None and builtins.bool(rt.is_pinned(self))

    def record_stream(self, stream) -> None:
        """Mark this tensor's memory as used by ``stream`` (matches torch.Tensor.record_stream):
        when the storage is freed, the caching allocator reuses its block only after the work
        queued on ``stream`` by then has finished. NotImplementedError on a device whose runtime
        has no "streams" service."""
        from . import _registry
        rt = _registry.device_type(self._device.type).runtime
        alloc = self._storage._allocator
        if "streams" not in rt.services or not hasattr(rt, "stream_key") or not hasattr(alloc, "record_stream"):
            raise NotImplementedError(f"record_stream: the '{self._device.type}' device (plugin "
                                      f"'{_registry.device_type(self._device.type).plugin}') has no service 'streams'")
        alloc.record_stream(self._storage, rt.stream_key(stream))

    @property
    def __cuda_array_interface__(self):
        """The CUDA Array Interface (version 3) of a tensor whose runtime provides it (ember-cuda),
        for zero-copy exchange with cupy / numba / PyTorch (matches
        torch.Tensor.__cuda_array_interface__). AttributeError for other devices, so that
        ``hasattr`` is False there; RuntimeError for a tensor that requires grad."""
        from . import _registry
        f = getattr(_registry.device_type(self._device.type).runtime, "cuda_array_interface", None)
        if f is None:
            raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {self._device.type} "
                                 f"tensor. If CUDA data is required use tensor.cuda() to copy tensor to device memory.")
        if self._requires_grad:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. If gradients "
                               "aren't required, use var.detach() to get Variable that doesn't require grad.")
        return f(self)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(force=True) if not self._requires_grad else self.detach().numpy(force=True)
        return a.astype(dtype) if dtype is not None else a

    def __repr__(self, *, tensor_contents=None):
        from ._printing import tensor_repr
        return tensor_repr(self)

    def __str__(self):
        return self.__repr__()

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol):
        from . import _serialization_support as S
        return S.reduce_tensor(self)

    def __deepcopy__(self, memo):
        """A leaf copy (storage copied on its device; requires_grad, grad kept); RuntimeError for a
        non-leaf, as torch.Tensor.__deepcopy__."""
        from . import _serialization_support as S
        return S.deepcopy_tensor(self, memo)

    def __init_subclass__(cls, **kwargs):
        # picklers that dispatch on the exact type (multiprocessing's ForkingPickler) learn of subclasses
        super().__init_subclass__(**kwargs)
        from . import _serialization_support as S
        S.on_tensor_subclass(cls)

    def share_memory_(self):
        """Move the storage to shared memory in place (every view of it sees the new memory); no-op
        when already shared. Returns self. Matches torch.Tensor.share_memory_ (see ember.multiprocessing)."""
        from . import _serialization_support as S
        return S.share_memory_(self)

    def is_shared(self) -> builtins.bool:
        """Whether the storage is in shared memory (matches torch.Tensor.is_shared)."""
        return getattr(self._storage, "_shared", None) is not None


def is_tensor(obj) -> builtins.bool:
    """Whether ``obj`` is an ember Tensor (matches torch.is_tensor)."""
    return isinstance(obj, Tensor)
