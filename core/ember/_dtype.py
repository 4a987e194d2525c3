"""dtypes, PyTorch's type promotion, finfo / iinfo.

Matches torch.dtype, torch.promote_types, torch.result_type, torch.can_cast,
torch.finfo, torch.iinfo. The core maps each dtype to a numpy dtype for host-side
conversion only; bfloat16 maps through ml_dtypes, imported on first use.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "int8", "uint8", "int16", "short", "int32", "int", "int64", "long", "bool",
    "complex64", "cfloat", "complex128", "cdouble",
    "promote_types", "result_type", "can_cast", "get_default_dtype", "set_default_dtype",
    "finfo", "iinfo", "ALL_DENSE", "FLOATING", "INTEGRAL", "COMPLEX",
]

# categories, ordered: bool < integral < floating < complex
_BOOL, _INT, _FLOAT, _COMPLEX, _OTHER = 0, 1, 2, 3, 4


class dtype:
    """A tensor element type; a small hashable value object (matches torch.dtype).

    Attributes: ``itemsize`` (bytes), ``is_floating_point``, ``is_complex``, ``is_signed``.
    A plugin may register more (``registry.register_dtype``), e.g. ``qint8``.
    """

    __slots__ = ("name", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "category", "_numpy_name", "_np")

    def __init__(self, name, itemsize, category, is_signed, numpy_name):
        self.name = name
        self.itemsize = itemsize
        self.category = category
        self.is_floating_point = category == _FLOAT
        self.is_complex = category == _COMPLEX
        self.is_signed = is_signed
        self._numpy_name = numpy_name
        # the numpy dtype, resolved now except for bfloat16 (ml_dtypes is imported on first use)
        self._np = np.dtype(numpy_name) if numpy_name not in (None, "bfloat16") else None

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype used for host-side conversion (bfloat16 via ml_dtypes)."""
        if self._np is None:
            if self._numpy_name is None:
                raise TypeError(f"ember.{self.name} has no numpy equivalent")
            if self._numpy_name == "bfloat16":
                try:
                    import ml_dtypes
                except ImportError as e:  # pragma: no cover - ml_dtypes is a cpu-plugin dependency
                    raise TypeError("ember.bfloat16 needs ml_dtypes on the host: pip install ml_dtypes") from e
                self._np = np.dtype(ml_dtypes.bfloat16)
            else:
                self._np = np.dtype(self._numpy_name)
        return self._np

    @property
    def to_real(self):
        """The real counterpart of a complex dtype (complex64 -> float32); other dtypes unchanged."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def to_complex(self):
        """The complex counterpart of a floating dtype (float64 -> complex128)."""
        return complex128 if self.name == "float64" else complex64 if self.category == _FLOAT else self

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


def _dtype_by_name(name):
    """The dtype ``name`` (unpickling), loading the plugin that registers it when it is not loaded yet."""
    if name not in _BY_NAME:
        from . import _registry
        if not _registry.load_for("dtypes", name):
            _registry.ensure_loaded()
    return _BY_NAME[name]


float16 = half = dtype("float16", 2, _FLOAT, True, "float16")
bfloat16 = dtype("bfloat16", 2, _FLOAT, True, "bfloat16")
float32 = float = dtype("float32", 4, _FLOAT, True, "float32")
float64 = double = dtype("float64", 8, _FLOAT, True, "float64")
int8 = dtype("int8", 1, _INT, True, "int8")
uint8 = dtype("uint8", 1, _INT, False, "uint8")
int16 = short = dtype("int16", 2, _INT, True, "int16")
int32 = int = dtype("int32", 4, _INT, True, "int32")
int64 = long = dtype("int64", 8, _INT, True, "int64")
bool = dtype("bool", 1, _BOOL, False, "bool")
complex64 = cfloat = dtype("complex64", 8, _COMPLEX, True, "complex64")
complex128 = cdouble = dtype("complex128", 16, _COMPLEX, True, "complex128")

_BY_NAME = {d.name: d for d in (float16, bfloat16, float32, float64, int8, uint8, int16, int32,
                                  int64, bool, complex64, complex128)}
_BY_NUMPY = {np.dtype(d._numpy_name): d for d in _BY_NAME.values() if d is not bfloat16}

FLOATING = frozenset({float16, bfloat16, float32, float64})
INTEGRAL = frozenset({uint8, int8, int16, int32, int64})
COMPLEX = frozenset({complex64, complex128})
ALL_DENSE = frozenset(_BY_NAME.values())


def new_dtype(name: str, itemsize: int, *, is_signed: bool, storage: str) -> dtype:
    """A plugin's dtype with no promotion rules (ember-quantized's qint8): its storage holds
    ``itemsize``-byte elements that host conversion reads as numpy dtype ``storage`` ("int8").
    Register it with ``registry.register_dtype``. Promotion with any other dtype raises."""
    return dtype(name, itemsize, _OTHER, is_signed, storage)


def _register_dtype(d: dtype) -> None:
    """Add a plugin's dtype (ember-quantized's qint8, ...) to the name table."""
    if d.name in _BY_NAME and _BY_NAME[d.name] is not d:
        raise RuntimeError(f"dtype {d.name!r} is already registered")
    _BY_NAME[d.name] = d


def from_numpy_dtype(npdt) -> dtype:
    """The ember dtype of a numpy dtype; TypeError for one ember lacks (matches torch.from_numpy)."""
    npdt = np.dtype(npdt)
    d = _BY_NUMPY.get(npdt)
    if d is None:
        if npdt.name == "bfloat16":
            return bfloat16
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{npdt.name}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool.")
    return d


# ---------------------------------------------------------------- promotion
_INT_ORDER = [uint8, int8, int16, int32, int64]
_FLOAT_ORDER = {float16: 1, bfloat16: 1, float32: 2, float64: 3}


def _promote_ints(a, b):
    if a is b:
        return a
    if uint8 in (a, b):
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a.itemsize >= b.itemsize else b


def _promote(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    ca, cb = a.category, b.category
    if ca == _OTHER or cb == _OTHER:
        if a.name in _QUANTIZED_NAMES or b.name in _QUANTIZED_NAMES:    # PyTorch's words for q-dtypes
            raise RuntimeError("promoteTypes with quantized numbers is not handled yet; figure out what the correct "
                               f"rules should be, offending types: {torch_name(a)} {torch_name(b)}")
        raise RuntimeError(f"Promotion for {a} and {b} is not supported")
    if ca < cb:
        a, b, ca, cb = b, a, cb, ca
    # now a has the higher (or equal) category
    if ca == _BOOL:
        return bool
    if ca == _INT:
        return _promote_ints(a, b) if cb == _INT else a   # bool promotes to any integer
    if ca == _FLOAT:
        if cb < _FLOAT:
            return a
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if _FLOAT_ORDER[a] >= _FLOAT_ORDER[b] else b
    # complex
    if cb == _COMPLEX:
        return complex128 if complex128 in (a, b) else complex64
    if cb == _FLOAT and b is float64:
        return complex128
    return a


_PROMOTE_CACHE: dict = {}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both can be cast to; matches torch.promote_types.

    Raises TypeError for a non-dtype argument (naming it, as PyTorch does).
    """
    try:
        return _PROMOTE_CACHE[type1, type2]
    except (KeyError, TypeError):
        for pos, t in ((1, type1), (2, type2)):
            if not isinstance(t, dtype):
                raise TypeError(f"promote_types(): argument 'type{pos}' (position {pos}) must be ember.dtype, "
                                f"not {type(t).__name__}") from None
        r = _PROMOTE_CACHE[type1, type2] = _promote(type1, type2)
        return r


_default_dtype = float32


def get_default_dtype() -> dtype:
    """The default floating dtype (float32 unless set; matches torch.get_default_dtype)."""
    return _default_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype; only float32 / float64 (and float16 / bfloat16) are allowed.

    Raises TypeError for a non-floating dtype, as torch.set_default_dtype does.
    """
    global _default_dtype
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if d is not _default_dtype:
        _default_dtype = d
        # memoised meta results depend on it (int / 2, int + 2.5, sqrt(int) ...)
        from . import _dispatch
        for c in _dispatch._META_CACHES:
            c.clear()


def default_complex_dtype() -> dtype:
    """complex128 when the default dtype is float64, else complex64."""
    return complex128 if _default_dtype is float64 else complex64


def scalar_dtype(value) -> dtype:
    """The dtype PyTorch gives a Python scalar when it becomes a tensor on its own."""
    if isinstance(value, builtins_bool):
        return bool
    if isinstance(value, numbers.Integral):
        return int64
    if isinstance(value, numbers.Real):
        return _default_dtype
    if isinstance(value, numbers.Complex):
        return default_complex_dtype()
    raise TypeError(f"expected a number, got {type(value).__name__}")


import builtins as _builtins  # noqa: E402

builtins_bool = _builtins.bool


def _combine_categories(higher, lower):
    """c10's combine_categories: a lower-priority participant wins only with a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> dtype:
    """The dtype an op on ``operands`` (tensors and Python scalars) computes in.

    Matches torch.result_type: dimensioned tensors take priority over 0-dim tensors,
    which take priority over Python scalars, unless the lower group has a higher
    category (bool < integer < floating < complex). Python floats become the default
    dtype, Python ints int64.
    """
    dim_r = zero_r = wrapped_r = None
    for x in operands:
        dt = getattr(x, "_dtype", None)
        if dt is not None:
            if len(x._shape):
                dim_r = dt if dim_r is None else promote_types(dim_r, dt)
            else:
                zero_r = dt if zero_r is None else promote_types(zero_r, dt)
        elif isinstance(x, dtype):
            dim_r = x if dim_r is None else promote_types(dim_r, x)
        else:
            dt = scalar_dtype(x)
            wrapped_r = dt if wrapped_r is None else promote_types(wrapped_r, dt)
    return _combine_categories(dim_r, _combine_categories(zero_r, wrapped_r))


def can_cast(from_: dtype, to: dtype) -> builtins_bool:
    """Whether an in-place op may write ``from_`` results into ``to`` (matches torch.can_cast).

    Casting is refused only when it lowers the category (complex -> float, float -> int,
    non-bool -> bool).
    """
    if from_.category > to.category:
        return False
    return True


# bits, eps, max, smallest normal of each floating dtype (IEEE formats; bfloat16 has float32's range
# with an 8-bit significand), so the core needs neither ml_dtypes nor numpy's finfo for them
_FINFO = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14),
    "bfloat16": (16, 2.0 ** -7, (2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -126),
    "float32": (32, 2.0 ** -23, (2 - 2.0 ** -23) * 2.0 ** 127, 2.0 ** -126),
    "float64": (64, 2.0 ** -52, 1.7976931348623157e+308, 2.0 ** -1022),
}


class finfo:
    """Machine limits for a floating dtype (matches torch.finfo).

    Attributes: bits, eps, max, min, tiny (= smallest_normal), resolution (10 ** -decimal
    digits of precision), dtype (the name, e.g. 'float32'). A complex dtype reports its
    real counterpart's limits, as PyTorch does. ``finfo()`` is the default dtype's.
    Raises TypeError for a non-floating dtype.
    """

    def __init__(self, type: dtype = None):
        type = _default_dtype if type is None else type
        if not isinstance(type, dtype) or not (type.is_floating_point or type.is_complex):
            raise TypeError("ember.finfo() requires a floating point input type. Use ember.iinfo to handle "
                            "'ember.finfo'")
        real = type.to_real
        self.dtype = real.name
        self.bits, self.eps, self.max, self.tiny = _FINFO[real.name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -_builtins.int(-math.log10(self.eps))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits for an integer dtype (matches torch.iinfo): bits, min, max, dtype.

    Raises TypeError for a non-integer dtype (bool included, as PyTorch does).
    """

    def __init__(self, type: dtype):
        if not isinstance(type, dtype) or type.category != _INT:
            raise TypeError(f"{type!r} is not supported by ember.iinfo")
        self.dtype = type.name
        self.bits = type.itemsize * 8
        if type.is_signed:
            self.min, self.max = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        else:
            self.min, self.max = 0, (1 << self.bits) - 1

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

# the names PyTorch's error messages use ("result type Float can't be cast to ... Long")
_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
                "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
                "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
                "qint8": "QInt8", "quint8": "QUInt8", "qint32": "QInt32"}

#: the quantized dtypes' names (the dtypes come from ember-quantized; category _OTHER, no promotion)
_QUANTIZED_NAMES = frozenset({"qint8", "quint8", "qint32"})


def torch_name(d: dtype) -> str:
    """The C++ scalar-type name PyTorch prints in messages (Float, Long, ...)."""
    return _TORCH_NAMES.get(d.name, d.name)
