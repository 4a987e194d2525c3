"""Tensor methods and top-level functions PyTorch has that are thin forms of ember ops already there:
``isreal``, the deprecated ``lu`` / ``lu_solve`` / ``orgqr`` spellings of ``ember.linalg``, ``Tensor.new``,
``dim_order``, ``is_inference``, ``hardshrink`` / ``prelu`` / ``stft`` / ``istft`` methods, and the removed
``eig`` / ``symeig`` / ``solve`` / ``lstsq`` / ``reinforce`` methods, which raise PyTorch's RuntimeError,
and ``as_strided_``, ``slice_inverse``, ``as_subclass``, ``module_load``, the deprecated ``resize`` /
``resize_as``, ``set_`` and ``sparse_mask``. Each matches the torch function of the same name.
"""
from __future__ import annotations

from . import _dtype as D
from ._tensor import Tensor

__all__ = ["isreal", "lu", "lu_solve", "orgqr"]


def isreal(input):
    """Bool tensor: True where the element is real, i.e. its imaginary part is 0 (matches torch.isreal;
    all True for a non-complex dtype). Same shape as ``input``."""
    import ember
    if input._dtype.is_complex:
        return input.imag == 0
    return ember.ones_like(input, dtype=ember.bool)


def lu(A, pivot=True, get_infos=False, out=None):
    """``(LU, pivots)`` - with ``get_infos=True`` ``(LU, pivots, infos)`` - of the LU factorisation of the
    (batched) square or rectangular ``A`` (matches the deprecated torch.lu: ``torch.linalg.lu_factor_ex``).
    Without ``get_infos`` a singular matrix raises as ``linalg.lu_factor`` does."""
    from . import linalg
    LU, pivots, infos = linalg.lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    result = (LU, pivots, infos) if get_infos else (LU, pivots)
    if out is not None:
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return out
    return result


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """The solution X of A X = b given ``lu(A)``'s ``(LU_data, LU_pivots)`` (matches the deprecated torch.lu_solve:
    ``torch.linalg.lu_solve(LU_data, LU_pivots, b)``). Shapes (*, n, n), (*, n), (*, n, k) -> (*, n, k)."""
    from . import linalg
    return linalg.lu_solve(LU_data, LU_pivots, b, out=out)


def orgqr(input, tau):
    """The first n columns of the product of Householder matrices given by ``geqrf``'s ``(input, tau)``
    (matches torch.orgqr: ``torch.linalg.householder_product``)."""
    from . import linalg
    return linalg.householder_product(input, tau)


_REMOVED = {   # PyTorch 2.13's messages, word for word
    'eig': (
        'This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` returns '
        'complex tensors of dtype `cfloat` or `cdouble` rather than real tensors mimicking complex tensors.\n\n'
        'L, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = '
        'torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)'
    ),
    'symeig': (
        'This function was deprecated since version 1.9 and is now removed. The default behavior has changed '
        'from using the upper triangular portion of the matrix by default to using the lower triangular '
        'portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, '
        "UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced with:"
        "\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"
    ),
    'solve': (
        'This function was deprecated since version 1.9 and is now removed. `torch.solve` is deprecated in '
        'favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments reversed and does not return '
        'the LU factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with '
        '`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = '
        'torch.linalg.solve(A, B)'
    ),
    'lstsq': (
        'This function was deprecated since version 1.9 and is now removed. `torch.lstsq` is deprecated in '
        'favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments and does not return the '
        'QR decomposition in the returned tuple (although it returns other information about the problem).\n\n'
        'To get the QR decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in '
        '`torch.lstsq` stored the residuals of the solution in the last m - n columns of the returned value '
        "whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of the returned "
        'named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n'
        'should be replaced with:\nX = torch.linalg.lstsq(A, B).solution'
    ),
}


def _removed(name):
    """A function (top-level, or a Tensor method: it takes any arguments) that raises PyTorch's RuntimeError for
    the removed ``name``."""
    def fn(*args, **kwargs):
        raise RuntimeError(_REMOVED[name])
    fn.__name__ = name
    fn.__doc__ = f"Removed from PyTorch (raises its RuntimeError): use ``ember.linalg`` (matches torch.{name})."
    return fn


def _new(self, *args, **kwargs):
    """The legacy ``Tensor.new``: a tensor of ``self``'s dtype and device - uninitialised of the given sizes
    (``new(2, 3)``), from data (``new([1, 2])``), or empty (``new()``) (matches torch.Tensor.new)."""
    from ._legacy import legacy_new
    kwargs.setdefault("device", self._device)
    return legacy_new(self._dtype, args, kwargs)


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory: sorted by stride, largest first, ties kept in dim order
    (matches torch.Tensor.dim_order). Returns a tuple of ints."""
    if ambiguity_check:
        strides = [s for s, n in zip(self._stride, self._shape) if n != 1]
        if len(set(strides)) != len(strides):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to dim order")
    return tuple(sorted(range(len(self._shape)), key=lambda d: -self._stride[d]))


def _is_inference(self):
    """Whether the tensor was created in ``inference_mode`` (or is a view of such a tensor)
    (matches torch.Tensor.is_inference)."""
    base = self._base
    return bool(getattr(self if base is None else base, "_inference", False))


def _hardshrink(self, lambd=0.5):
    """``ember.nn.functional.hardshrink(self, lambd)`` (matches torch.Tensor.hardshrink)."""
    from .nn import functional as F
    return F.hardshrink(self, lambd)


def _prelu(self, weight):
    """``ember.nn.functional.prelu(self, weight)`` (matches torch.Tensor.prelu)."""
    from .nn import functional as F
    return F.prelu(self, weight)


def _stft(self, *args, **kwargs):
    """``ember.stft(self, ...)`` (matches torch.Tensor.stft)."""
    from ._spectral import stft
    return stft(self, *args, **kwargs)


def _istft(self, *args, **kwargs):
    """``ember.istft(self, ...)`` (matches torch.Tensor.istft)."""
    from ._spectral import istft
    return istft(self, *args, **kwargs)


def _const_data_ptr(self):
    """``data_ptr()`` (matches torch.Tensor.const_data_ptr)."""
    return self.data_ptr()


def _to_device_type(kind):
    def method(self, device=None, non_blocking=False, memory_format=None):
        idx = device if isinstance(device, int) else None
        return self.to(f"{kind}:{idx}" if idx is not None else (device or kind), non_blocking=non_blocking)
    method.__name__ = kind
    method.__doc__ = (f"``self.to('{kind}')`` (matches torch.Tensor.{kind}; RuntimeError where no such device is "
                      f"installed).")
    return method


# ---------------------------------------------------------------- the remaining Tensor methods (issue 18)
_REINFORCE = ("reinforce() was removed.\nUse torch.distributions instead.\nSee "
              "https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\nprobs = policy_network(state)\n"
              "action = probs.multinomial()\nnext_state, reward = env.step(action)\naction.reinforce(reward)\n"
              "action.backward()\n\nUse:\n\nprobs = policy_network(state)\n# NOTE: categorical is equivalent to "
              "what used to be called multinomial\nm = torch.distributions.Categorical(probs)\naction = m.sample()\n"
              "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\nloss.backward()\n")


def _reinforce(self, reward):
    """Removed from PyTorch: raises its RuntimeError pointing to ``ember.distributions`` (matches
    torch.Tensor.reinforce)."""
    raise RuntimeError(_REINFORCE)


def _as_strided_(self, size, stride, storage_offset=None):
    """``ember.as_strided_(self, ...)``: this tensor itself takes the new geometry (matches
    torch.Tensor.as_strided_)."""
    from ._toplevel_extras import as_strided_
    return as_strided_(self, size, stride, storage_offset)


def _slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """``ember.slice_inverse(self, src, ...)`` (matches torch.Tensor.slice_inverse)."""
    from ._toplevel_extras import slice_inverse
    return slice_inverse(self, src, dim, start, end, step)


def _as_subclass(self, cls):
    """This tensor's data as an instance of the Tensor subclass ``cls``, sharing storage and autograd
    history (an alias) (matches torch.Tensor.as_subclass). TypeError when ``cls`` is not a Tensor subclass."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    alias = self.view_as(self)
    alias.__class__ = cls
    return alias


def _module_load(self, other, assign=False):
    """What ``nn.Module.load_state_dict`` does with the state-dict value ``other`` for this parameter or
    buffer when swapping tensors: ``self.copy_(other).detach()``, or ``other.detach()`` with ``assign``
    (matches torch.Tensor.module_load). RuntimeError when the shapes do not broadcast, as ``copy_``."""
    if assign:
        return other.detach()
    import ember
    with ember.no_grad():
        return self.copy_(other).detach()


def _resize(self, *sizes):
    """The deprecated out-of-place resize: a view of ``self`` with shape ``sizes``, which must hold the same
    number of elements (matches torch.Tensor.resize; it warns "non-inplace resize is deprecated").
    RuntimeError, in PyTorch's words, for another element count."""
    import math
    import warnings
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    n = math.prod(sizes)
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in total), but the given "
                           f"tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the "
                           "number of elements. ")
    return self.reshape(sizes)


def _resize_as(self, tensor):
    """``self.resize(tensor.shape)`` (matches the deprecated torch.Tensor.resize_as; it warns
    "non-inplace resize_as is deprecated")."""
    import warnings
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _resize(self, tuple(tensor.shape))


def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make ``self`` look at other memory (matches torch.Tensor.set_): ``set_()`` an empty storage;
    ``set_(tensor)`` the storage and geometry of ``tensor``; ``set_(storage, storage_offset=0, size=None,
    stride=None)`` that ``UntypedStorage`` (all of it as 1-D by default; contiguous strides by default).
    RuntimeError for a source tensor of another dtype ("Could not set tensor of type ..."), a geometry outside
    the storage, or a leaf that requires grad."""
    import ember
    from ._allocator import UntypedStorage
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if source is None:
        self._set_storage_meta(ember.empty(0, dtype=self._dtype, device=self._device))
        return self
    if isinstance(source, Tensor):
        if source._dtype != self._dtype:
            raise RuntimeError(f"Could not set tensor of type {_C_NAMES.get(source._dtype.name, source._dtype.name)} "
                               f"to a tensor of type {_C_NAMES.get(self._dtype.name, self._dtype.name)}")
        self._set_storage_meta(source)
        return self
    if not isinstance(source, UntypedStorage):
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
    if size is None:
        size = (source.nbytes() // self._dtype.itemsize - int(storage_offset),)
    size = tuple(int(s) for s in size)
    if stride is None:
        stride, acc = [], 1
        for n in reversed(size):
            stride.insert(0, acc)
            acc *= max(n, 1)
    holder = self.detach()
    holder._storage, holder._shape, holder._stride, holder._offset = source, (0,), (1,), 0
    holder._native = None
    with ember.no_grad():
        view = holder.as_strided(size, tuple(stride), int(storage_offset))
    self._set_storage_meta(view)
    return self


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _sparse_mask(self, mask):
    """A sparse COO tensor with ``mask``'s indices (in ``mask``'s order) and ``self``'s values there (matches
    torch.Tensor.sparse_mask for a dense ``self``). RuntimeError "sparse_mask(): operands have incompatible
    sizes" when the sizes differ; NotImplementedError when ``mask`` is not sparse. Differentiable with respect
    to ``self``."""
    import ember
    if not getattr(mask, "is_sparse", False):
        raise NotImplementedError("Could not run 'aten::sparse_mask' with arguments from the "
                                  f"'{self.device.type.upper()}' backend: the mask must be a sparse COO tensor")
    if tuple(self.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} but "
                           f"mask has size {list(mask.shape)}")
    idx = mask._indices()
    values = self[tuple(idx[d] for d in range(idx.shape[0]))]
    return ember.sparse_coo_tensor(idx, values, tuple(self.shape))


_METHODS = {
    "isreal": isreal, "lu": lambda self, pivot=True, get_infos=False: lu(self, pivot, get_infos),
    "lu_solve": lambda self, LU_data, LU_pivots: lu_solve(self, LU_data, LU_pivots),
    "orgqr": orgqr, "new": _new, "dim_order": _dim_order, "is_inference": _is_inference,
    "hardshrink": _hardshrink, "prelu": _prelu, "stft": _stft, "istft": _istft, "const_data_ptr": _const_data_ptr,
    "xpu": _to_device_type("xpu"), "ipu": _to_device_type("ipu"), "mtia": _to_device_type("mtia"),
    **{name: _removed(name) for name in _REMOVED},
    "reinforce": _reinforce, "as_strided_": _as_strided_, "slice_inverse": _slice_inverse,
    "as_subclass": _as_subclass, "module_load": _module_load, "resize": _resize, "resize_as": _resize_as,
    "set_": _set_, "sparse_mask": _sparse_mask,
}


def _install():
    for name, fn in _METHODS.items():
        if not hasattr(Tensor, name):
            if fn.__name__ == "<lambda>":
                fn.__name__ = name
                fn.__doc__ = f"``ember.{name}(self, ...)`` (matches torch.Tensor.{name})."
            setattr(Tensor, name, fn)


_install()
del D
