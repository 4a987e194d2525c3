"""The legacy tensor constructors: ``ember.Tensor(...)`` and the typed ``ember.FloatTensor(...)``,
``DoubleTensor``, ... ``BoolTensor`` (match torch.Tensor's constructor and torch.FloatTensor & co).

Each accepts the forms PyTorch's legacy constructor accepts, on the cpu device only:

* ``T()`` -- an empty 1-dim tensor (shape ``(0,)``);
* ``T(*sizes)`` / ``T(size)`` / ``T(ember.Size)`` / ``T(size=...)`` -- uninitialised, that shape;
* ``T(data)`` / ``T(data=...)`` -- a copy of nested sequences or a numpy array, converted to T's dtype;
* ``T(tensor)`` -- an alias of ``tensor`` (shares its memory; for a typed T its dtype must be T's);
* ``T(storage)`` -- a 1-dim tensor viewing an ``UntypedStorage``;
* an optional keyword ``device=`` (a cpu device; RuntimeError for another type, as PyTorch).

``ember.Tensor`` makes the default dtype (float32 unless ``set_default_dtype`` changed it);
the typed classes make their own dtype. Any other keyword (``dtype=``, ``requires_grad=``)
is PyTorch's TypeError "new() received an invalid combination of arguments". The typed
classes are not subclasses of ``ember.Tensor`` (as in PyTorch); ``isinstance(t, ember.FloatTensor)``
is true for a strided cpu tensor of dtype float32 (their metaclass answers it).
"""
from __future__ import annotations

import numbers

from . import _dtype as D
from ._device import strided

__all__ = ["legacy_new", "LEGACY_TYPES"]

_SIGNATURES = ("\n * (*, ember.device device = None)\n * (ember.Storage storage)\n * (Tensor other)\n"
               " * (tuple of ints size, *, ember.device device = None)\n"
               " * (object data, *, ember.device device = None)\n")


def _type_name(v):
    """'int', 'list', 'ember.dtype': how PyTorch's argument parser names a value's type."""
    mod = type(v).__module__
    return type(v).__name__ if mod == "builtins" else f"{mod.split('.')[0]}.{type(v).__name__}"


def _describe(args, kwargs):
    return ", ".join([type(a).__name__ for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()])


def _invalid(args, kwargs):
    return TypeError(f"new() received an invalid combination of arguments - got ({_describe(args, kwargs)}), but "
                     f"expected one of:{_SIGNATURES}")


def _cpu_device(device):
    from . import _registry
    dev = _registry.canonical_device("cpu" if device is None else device)
    if dev.type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {dev.type} was passed")
    return dev


def _is_size_int(a):
    return isinstance(a, numbers.Integral) and not isinstance(a, D.dtype)


def legacy_new(dtype, args, kwargs):
    """The tensor ``ember.Tensor(*args, **kwargs)`` (``dtype`` None: the default dtype) or a typed
    class's constructor (``dtype`` given) makes; see the module docstring for the forms and errors."""
    from ._tensor import Tensor, Size
    from ._allocator import UntypedStorage
    from ._ops._creation import tensor, empty

    kwargs = dict(kwargs)
    if set(kwargs) - {"device", "size", "data"}:
        raise _invalid(args, kwargs)
    if "size" in kwargs or "data" in kwargs:          # the keyword forms: exactly one positional-or-keyword value
        if args or ("size" in kwargs and "data" in kwargs):
            raise _invalid(args, kwargs)
        if "size" in kwargs:
            size = kwargs.pop("size")
            args = (Size((size,) if _is_size_int(size) else size),)
        else:
            args = (kwargs.pop("data"),)
    device = kwargs.get("device")
    want = dtype or D.get_default_dtype()
    if not args:
        return empty(0, dtype=want, device=_cpu_device(device))
    if len(args) == 1:
        a = args[0]
        if isinstance(a, Tensor):
            if device is not None:
                raise RuntimeError("Legacy tensor constructor of the form ember.Tensor(tensor, device=device) is not "
                                   "supported.  Use ember.tensor(...) or ember.as_tensor(...) instead.")
            if dtype is not None and (a._dtype is not dtype or a._device.type != "cpu"):
                raise TypeError(f"expected {D.torch_name(dtype)} tensor on cpu (got {D.torch_name(a._dtype)} "
                                f"tensor on {a._device.type})")
            return a.view(a._shape)                  # an alias sharing memory (autograd sees a view)
        if isinstance(a, UntypedStorage):
            return _from_storage(a, want, _cpu_device(device))
        if isinstance(a, Size) or (_is_size_int(a) and not isinstance(a, bool)):
            size = tuple(a) if isinstance(a, Size) else (a,)
            return empty(size, dtype=want, device=_cpu_device(device))
        if isinstance(a, (str, bytes)) or not (hasattr(a, "__len__") or hasattr(a, "__array__")):
            what = type(a).__name__
            raise TypeError(f"new(): invalid data type '{what}'" if isinstance(a, (str, bytes)) else
                            f"new(): data must be a sequence (got {what})")
        return tensor(a, dtype=want, device=_cpu_device(device))
    for pos, s in enumerate(args, 1):
        if not _is_size_int(s):
            if isinstance(s, (list, tuple, Tensor)):
                raise _invalid(args, kwargs)
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos} with error "
                            f"\"type must be tuple of ints,but got {type(s).__name__}\"")
    return empty(tuple(int(s) for s in args), dtype=want, device=_cpu_device(device))


def _from_storage(storage, dtype, device):
    """A 1-dim tensor of ``dtype`` over all of ``storage`` (torch.Tensor(storage))."""
    from ._tensor import Tensor
    if storage.device.type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {storage.device.type} "
                           f"was passed")
    n = storage.nbytes() // dtype.itemsize
    t = object.__new__(Tensor)
    t._storage, t._shape, t._stride, t._offset = storage, (n,), (1,), 0
    t._dtype, t._device, t._native = dtype, storage.device, None
    return t


class _LegacyTensorType(type):
    """The metaclass of ``ember.FloatTensor`` and its kin (torch's ``tensortype``): calling the class
    builds a plain ``ember.Tensor`` of its dtype; ``isinstance`` checks dtype, layout and the cpu device."""

    def __call__(cls, *args, **kwargs):
        return legacy_new(cls.dtype, args, kwargs)

    def __instancecheck__(cls, obj):
        from ._tensor import Tensor
        return (isinstance(obj, Tensor) and obj._dtype is cls.dtype and obj._layout is strided
                and obj._device.type == "cpu")

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


_NAMES = (("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
          ("BFloat16Tensor", "bfloat16"), ("LongTensor", "int64"), ("IntTensor", "int32"),
          ("ShortTensor", "int16"), ("CharTensor", "int8"), ("ByteTensor", "uint8"), ("BoolTensor", "bool"))


def _make(name, dtype):
    doc = (f"The legacy constructor of cpu {dtype.name} tensors (matches torch.{name}): ``{name}()``, "
           f"``{name}(*sizes)``, ``{name}(data)``, ``{name}(tensor)`` (same dtype, else TypeError). "
           f"Returns a plain ember.Tensor; ``isinstance(t, ember.{name})`` tests dtype {dtype.name} on cpu.")
    return _LegacyTensorType(name, (), {"__slots__": (), "__doc__": doc, "__module__": "ember", "dtype": dtype,
                                        "layout": strided, "is_cuda": False, "is_sparse": False})


#: name -> class, for ember/__init__ to export
LEGACY_TYPES = {name: _make(name, getattr(D, dt)) for name, dt in _NAMES}
