"""dtypes and PyTorch's type promotion: promote_types, result_type, can_cast,
set_default_dtype, finfo / iinfo.

The reference tables below were generated ONCE with the system Python and PyTorch 2.13
(``torch.promote_types``, ``torch.result_type``, ``torch.can_cast`` over every pair of the
dtypes in ``_NAMES``) and are embedded as data, so these tests need no torch. Generator:

    import torch
    T = lambda n: getattr(torch, n)
    _PROMOTE = [[str(torch.promote_types(T(a), T(b)))[6:] for b in _NAMES] for a in _NAMES]
    _DIM_ZERO = [[str(torch.result_type(torch.ones(2, dtype=T(a)), torch.ones((), dtype=T(b))))[6:]
                  for b in _NAMES] for a in _NAMES]
    _DIM_SCALAR / _ZERO_SCALAR: torch.result_type(torch.ones(2 | (), dtype=T(a)), s) for s in _SCALARS
    _CAN_CAST = ["".join("1" if torch.can_cast(T(a), T(b)) else "0" for b in _NAMES) for a in _NAMES]

PyTorch gives "complex32" (ComplexHalf) for float16 with a complex operand; ember has
no complex32 and uses complex64 there (checked separately below).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]
_SCALARS = [True, 2, 2.5, 1j]

_PROMOTE = [
    ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # bool
    ["uint8", "uint8", "int16", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # uint8
    ["int8", "int16", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int8
    ["int16", "int16", "int16", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int16
    ["int32", "int32", "int32", "int32", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int32
    ["int64", "int64", "int64", "int64", "int64", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int64
    ["float16", "float16", "float16", "float16", "float16", "float16", "float16", "float32", "float32", "float64", "complex64", "complex128"],  # float16
    ["bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "float32", "bfloat16", "float32", "float64", "complex64", "complex128"],  # bfloat16
    ["float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float64", "complex64", "complex128"],  # float32
    ["float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "complex128", "complex128"],  # float64
    ["complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex128", "complex64", "complex128"],  # complex64
    ["complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128"],  # complex128
]
# result_type(dimensioned tensor of row dtype, 0-dim tensor of column dtype)
_DIM_ZERO = [
    ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # bool
    ["uint8", "uint8", "uint8", "uint8", "uint8", "uint8", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # uint8
    ["int8", "int8", "int8", "int8", "int8", "int8", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int8
    ["int16", "int16", "int16", "int16", "int16", "int16", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int16
    ["int32", "int32", "int32", "int32", "int32", "int32", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int32
    ["int64", "int64", "int64", "int64", "int64", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128"],  # int64
    ["float16", "float16", "float16", "float16", "float16", "float16", "float16", "float16", "float16", "float16", "complex32", "complex32"],  # float16
    ["bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "complex64", "complex64"],  # bfloat16
    ["float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "complex64", "complex64"],  # float32
    ["float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "complex128", "complex128"],  # float64
    ["complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64", "complex64"],  # complex64
    ["complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128", "complex128"],  # complex128
]
# result_type(tensor of row dtype, Python scalar of column) for scalars True, 2, 2.5, 1j; dimensioned, then 0-dim
_DIM_SCALAR = [
    ["bool", "int64", "float32", "complex64"],  # bool
    ["uint8", "uint8", "float32", "complex64"],  # uint8
    ["int8", "int8", "float32", "complex64"],  # int8
    ["int16", "int16", "float32", "complex64"],  # int16
    ["int32", "int32", "float32", "complex64"],  # int32
    ["int64", "int64", "float32", "complex64"],  # int64
    ["float16", "float16", "float16", "complex32"],  # float16
    ["bfloat16", "bfloat16", "bfloat16", "complex64"],  # bfloat16
    ["float32", "float32", "float32", "complex64"],  # float32
    ["float64", "float64", "float64", "complex128"],  # float64
    ["complex64", "complex64", "complex64", "complex64"],  # complex64
    ["complex128", "complex128", "complex128", "complex128"],  # complex128
]
_ZERO_SCALAR = [
    ["bool", "int64", "float32", "complex64"],  # bool
    ["uint8", "uint8", "float32", "complex64"],  # uint8
    ["int8", "int8", "float32", "complex64"],  # int8
    ["int16", "int16", "float32", "complex64"],  # int16
    ["int32", "int32", "float32", "complex64"],  # int32
    ["int64", "int64", "float32", "complex64"],  # int64
    ["float16", "float16", "float16", "complex32"],  # float16
    ["bfloat16", "bfloat16", "bfloat16", "complex64"],  # bfloat16
    ["float32", "float32", "float32", "complex64"],  # float32
    ["float64", "float64", "float64", "complex128"],  # float64
    ["complex64", "complex64", "complex64", "complex64"],  # complex64
    ["complex128", "complex128", "complex128", "complex128"],  # complex128
]
_CAN_CAST = [
    '111111111111',  # bool
    '011111111111',  # uint8
    '011111111111',  # int8
    '011111111111',  # int16
    '011111111111',  # int32
    '011111111111',  # int64
    '000000111111',  # float16
    '000000111111',  # bfloat16
    '000000111111',  # float32
    '000000111111',  # float64
    '000000000011',  # complex64
    '000000000011',  # complex128
]


def _dt(name):
    return getattr(ember, name)


def _t(name, dim=True):
    return ember.ones((2,) if dim else (), dtype=_dt(name))


def _expected(name):
    """The reference name, with complex32 (which ember lacks) mapped to complex64."""
    return "complex64" if name == "complex32" else name


@pytest.mark.parametrize("a", _NAMES)
def test_promote_types_matches_torch_table(a):
    i = _NAMES.index(a)
    for j, b in enumerate(_NAMES):
        assert ember.promote_types(_dt(a), _dt(b)) is _dt(_PROMOTE[i][j]), (a, b)
        # symmetric
        assert ember.promote_types(_dt(b), _dt(a)) is _dt(_PROMOTE[i][j]), (b, a)


def test_promote_types_rejects_non_dtypes():
    with pytest.raises(TypeError, match=r"promote_types\(\): argument 'type2' \(position 2\) must be ember.dtype, "
                                        r"not int"):
        ember.promote_types(ember.float32, 3)
    with pytest.raises(TypeError, match="argument 'type1'"):
        ember.promote_types("float32", ember.float32)
    with pytest.raises(TypeError, match="argument 'type1'"):
        ember.promote_types([1], ember.float32)      # unhashable


@pytest.mark.parametrize("a", _NAMES)
def test_result_type_dimensioned_vs_zero_dim_matches_torch(a):
    i = _NAMES.index(a)
    for j, b in enumerate(_NAMES):
        assert ember.result_type(_t(a), _t(b, dim=False)) is _dt(_expected(_DIM_ZERO[i][j])), (a, b)
        # order does not matter
        assert ember.result_type(_t(b, dim=False), _t(a)) is _dt(_expected(_DIM_ZERO[i][j])), (b, a)


@pytest.mark.parametrize("a", _NAMES)
def test_result_type_with_python_scalars_matches_torch(a):
    i = _NAMES.index(a)
    for j, s in enumerate(_SCALARS):
        assert ember.result_type(_t(a), s) is _dt(_expected(_DIM_SCALAR[i][j])), (a, s)
        assert ember.result_type(s, _t(a)) is _dt(_expected(_DIM_SCALAR[i][j])), (s, a)
        assert ember.result_type(_t(a, dim=False), s) is _dt(_expected(_ZERO_SCALAR[i][j])), (a, s)


def test_result_type_two_dimensioned_tensors_is_promote_types():
    for i, a in enumerate(_NAMES):
        for j, b in enumerate(_NAMES):
            assert ember.result_type(_t(a), _t(b)) is _dt(_PROMOTE[i][j])
            assert ember.result_type(_t(a, False), _t(b, False)) is _dt(_PROMOTE[i][j])


@pytest.mark.parametrize("operands, expected", [
    # examples from PyTorch's documentation and behaviour, each verified with torch 2.13
    ((("int32", 1), 5), "int32"),
    ((("int32", 1), 2.5), "float32"),
    ((("uint8", 1), 1000), "uint8"),          # the scalar does not widen the tensor
    ((("bool", 1), 1), "int64"),
    ((("float16", 1), ("float64", 0)), "float16"),
    ((("int8", 1), ("int64", 0)), "int8"),
    ((("int8", 1), ("float64", 0)), "float64"),  # a 0-dim of a higher category wins, at its own dtype
    ((("int64", 1), 1j), "complex64"),
    ((("float64", 1), 1j), "complex128"),
    ((("uint8", 0), ("int8", 0)), "int16"),
    ((("uint8", 1), ("int8", 0)), "uint8"),
    ((("float32", 1), ("complex128", 0)), "complex64"),
    ((("complex64", 0), ("float64", 1)), "complex128"),
    ((2, 3.5), "float32"),
    ((2, True), "int64"),
    ((True, False), "bool"),
    ((1j, 2), "complex64"),
])
def test_result_type_examples(operands, expected):
    ops = [_t(o[0], bool(o[1])) if isinstance(o, tuple) else o for o in operands]
    assert ember.result_type(*ops) is _dt(expected)


def test_result_type_float16_with_complex_uses_complex64():
    # PyTorch: complex32 (ComplexHalf, experimental); ember has no complex32
    assert ember.result_type(_t("float16"), 1j) is ember.complex64
    assert ember.promote_types(ember.float16, ember.complex64) is ember.complex64


def test_result_type_follows_default_dtype():
    ember.set_default_dtype(ember.float64)
    assert ember.result_type(_t("int32"), 2.5) is ember.float64
    assert ember.result_type(2, 2.5) is ember.float64
    assert ember.result_type(_t("int32"), 1j) is ember.complex128
    assert ember.result_type(_t("float32"), 2.5) is ember.float32     # a float tensor keeps its dtype


def test_set_default_dtype():
    assert ember.get_default_dtype() is ember.float32
    ember.set_default_dtype(ember.float64)
    assert ember.get_default_dtype() is ember.float64
    assert ember.tensor([1.5]).dtype is ember.float64
    assert ember.zeros(2).dtype is ember.float64
    assert ember.tensor([1]).dtype is ember.int64
    assert ember.tensor([1j]).dtype is ember.complex128
    assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
    ember.set_default_dtype(ember.float32)
    assert ember.tensor([1j]).dtype is ember.complex64
    assert ember.zeros(2).dtype is ember.float32


@pytest.mark.parametrize("bad", [ember.int32, ember.int64, ember.bool, ember.complex64, "float32", None])
def test_set_default_dtype_refuses_non_floating(bad):
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        ember.set_default_dtype(bad)
    assert ember.get_default_dtype() is ember.float32


# torch.finfo values (verified with torch 2.13): bits, eps, max, tiny, resolution
_FINFO = {
    "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
    "bfloat16": (16, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.01),
    "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 1e-06),
    "float64": (64, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 1e-15),
}


@pytest.mark.parametrize("name", sorted(_FINFO))
def test_finfo(name):
    bits, eps, mx, tiny, resolution = _FINFO[name]
    f = ember.finfo(_dt(name))
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.dtype) == \
        (bits, eps, mx, -mx, tiny, tiny, name)
    assert math.isclose(f.resolution, resolution)
    if name != "bfloat16":   # numpy agrees on the IEEE formats
        ni = np.finfo(np.dtype(name))
        assert (f.eps, f.max, f.tiny) == (float(ni.eps), float(ni.max), float(ni.smallest_normal))
    assert "finfo(" in repr(f)


def test_finfo_default_and_complex():
    assert ember.finfo().dtype == "float32"
    ember.set_default_dtype(ember.float64)
    assert ember.finfo().dtype == "float64"
    assert ember.finfo(ember.complex64).dtype == "float32"
    assert ember.finfo(ember.complex128).eps == np.finfo(np.float64).eps


@pytest.mark.parametrize("bad", [ember.int32, ember.bool, ember.uint8])
def test_finfo_refuses_non_floating(bad):
    with pytest.raises(TypeError, match="requires a floating point input type"):
        ember.finfo(bad)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    i = ember.iinfo(_dt(name))
    ni = np.iinfo(np.dtype(name))
    assert (i.bits, i.min, i.max, i.dtype) == (ni.bits, int(ni.min), int(ni.max), name)
    assert isinstance(i.min, int) and isinstance(i.max, int)


@pytest.mark.parametrize("bad", [ember.bool, ember.float32, ember.complex64])
def test_iinfo_refuses_non_integer(bad):
    # torch: "torch.bool is not supported by torch.iinfo" (TypeError)
    with pytest.raises(TypeError, match=r"is not supported by ember.iinfo"):
        ember.iinfo(bad)


@pytest.mark.parametrize("a", _NAMES)
def test_can_cast_matches_torch_table(a):
    i = _NAMES.index(a)
    for j, b in enumerate(_NAMES):
        assert ember.can_cast(_dt(a), _dt(b)) is (_CAN_CAST[i][j] == "1"), (a, b)


def test_dtype_attributes():
    for name in _NAMES:
        d = _dt(name)
        assert repr(d) == f"ember.{name}"
        assert d.itemsize == (1 if name == "bool" else np.dtype(name).itemsize if name != "bfloat16" else 2)
        assert d.is_floating_point == (name.startswith("float") or name == "bfloat16")
        assert d.is_complex == name.startswith("complex")
    assert ember.float is ember.float32 and ember.double is ember.float64 and ember.half is ember.float16
    assert ember.long is ember.int64 and ember.int is ember.int32 and ember.short is ember.int16
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert ember.complex64.to_real is ember.float32 and ember.float64.to_complex is ember.complex128
    import pickle
    assert pickle.loads(pickle.dumps(ember.bfloat16)) is ember.bfloat16
    assert {ember.float32: 1}[ember.float32] == 1
