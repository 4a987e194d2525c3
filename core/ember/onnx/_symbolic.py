"""User-registered ONNX translations and the dtype enums of torch.onnx.

``register_custom_op_symbolic("domain::name", fn, opset_version)`` gives the exporter a translation for an
ember op it has no mapping for (or replaces one): ``aten::`` and ``ember::`` names mean ember's own op
``name``; any other domain names an op a plugin defined with ``ember.library.Library("domain").define``.
``fn(g, *args)`` receives a graph builder ``g`` and the node's arguments (tensor arguments as opaque values,
the rest as Python values) and returns the value of the node's (first) output, built with
``g.op("OpType", *inputs, attr_f=1.0, attr_i=2, attr_s="x", attr_is=[1, 2], ...)`` as in PyTorch
(attribute suffixes ``_i`` ``_f`` ``_s`` ``_t`` ``_is`` ``_fs`` ``_ss`` give the type; an op name
``"domain::Op"`` outside the standard ``onnx`` domain adds that domain to the model's opset imports).
"""
from __future__ import annotations

import enum
import re

__all__ = ["register_custom_op_symbolic", "unregister_custom_op_symbolic", "JitScalarType", "TensorProtoDataType",
           "custom_symbolic"]

#: ember op name -> {opset_version: symbolic function}
_CUSTOM: dict = {}
_NAME = re.compile(r"^[a-zA-Z0-9-_]*::[a-zA-Z-_]+[a-zA-Z0-9-_]*$")


def _op_of(symbolic_name):
    from ._export import OnnxExporterError
    if not _NAME.match(symbolic_name):
        raise OnnxExporterError(f"Failed to register operator {symbolic_name}. The symbolic name must match the "
                                f"format domain::name, and should start with a letter and contain only "
                                f"alphanumeric characters")
    domain, name = symbolic_name.split("::", 1)
    return name if domain in ("aten", "ember", "") else symbolic_name


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn, opset_version: int) -> None:
    """Use ``symbolic_fn`` to export op ``symbolic_name`` ("domain::name") from opset ``opset_version`` on
    (matches torch.onnx.register_custom_op_symbolic; see the module doc for ``symbolic_fn``'s arguments).

    :raises OnnxExporterError: a name not of the form domain::name (PyTorch's message)."""
    _CUSTOM.setdefault(_op_of(symbolic_name), {})[int(opset_version)] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    """Forget what ``register_custom_op_symbolic`` registered for ``symbolic_name`` at ``opset_version``
    (matches torch.onnx.unregister_custom_op_symbolic)."""
    op = _op_of(symbolic_name)
    _CUSTOM.get(op, {}).pop(int(opset_version), None)
    if not _CUSTOM.get(op, True):
        del _CUSTOM[op]


def custom_symbolic(op, opset):
    """The registered symbolic of ember op ``op`` for an export at ``opset``: the one registered at the highest
    opset not above it, or None."""
    versions = [v for v in _CUSTOM.get(op, {}) if v <= opset]
    return _CUSTOM[op][max(versions)] if versions else None


class Value:
    """A value of the graph being built, as a symbolic function sees it (``.name``: its ONNX name)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Value({self.name})"


class GraphContext:
    """The ``g`` a symbolic function receives: ``g.op(op_type, *inputs, **attributes)`` adds an ONNX node and
    returns its output (a list of ``outputs`` values when ``outputs=`` > 1)."""

    def __init__(self, ctx, domains):
        self._ctx, self._domains = ctx, domains
        self.opset = ctx.opset

    def op(self, op_type, *inputs, outputs=1, **attributes):
        domain = ""
        if "::" in op_type:
            domain, op_type = op_type.split("::", 1)
            domain = "" if domain == "onnx" else domain
        if domain:
            self._domains.add(domain)
        names = []
        for x in inputs:
            if isinstance(x, Value):
                names.append(x.name)
            elif x is None:
                names.append("")
            else:
                names.append(self._ctx.const(x, _constant_dtype(x), "sym"))
        attrs = {}
        for key, value in attributes.items():
            m = re.match(r"^(.*)_(i|f|s|t|is|fs|ss|ts)$", key)
            attrs[m.group(1) if m else key] = value
        outs = [self._ctx.tmp(op_type.lower()) for _ in range(outputs)]
        self._ctx.nodes.append(self._ctx.h.make_node(op_type, names, outs, name=self._ctx.tmp("n_" + op_type),
                                                     domain=domain or None, **attrs))
        vals = [Value(o) for o in outs]
        return vals[0] if outputs == 1 else vals


def _constant_dtype(x):
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int64"
    return "float32"


def run_symbolic(fn, ctx, n, args, kwargs, outs, domains):
    """Translate node ``n`` with the user's symbolic ``fn`` (tensor arguments are ``Value``s); what it returns is
    bound to the node's outputs."""
    from ._export import OnnxExporterError
    result = fn(GraphContext(ctx, domains), *args, **kwargs)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    if not results or not all(isinstance(r, Value) for r in results):
        raise OnnxExporterError(f"ember.onnx.export: the symbolic function registered for '{n['op']}' must return "
                                f"the value(s) g.op made, got {result!r}")
    for r, o in zip(results, outs):
        if o is not None:
            ctx.node("Identity", [r.name], [o])


class TensorProtoDataType(enum.IntEnum):
    """ONNX's TensorProto element types (matches torch.onnx.TensorProtoDataType's values)."""
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20


class JitScalarType(enum.IntEnum):
    """Scalar types as the TorchScript exporter numbers them, with conversions to ember dtypes and ONNX element
    types (matches torch.onnx.JitScalarType: ``from_dtype``, ``from_onnx_type``, ``dtype()``, ``onnx_type()``,
    ``scalar_name()``, ``torch_name()``).

    :raises OnnxExporterError: an unknown dtype or ONNX type, or a type ember has no dtype for."""
    UINT8 = 0
    INT8 = 1
    INT16 = 2
    INT = 3
    INT64 = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    COMPLEX32 = 8
    COMPLEX64 = 9
    COMPLEX128 = 10
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    FLOAT8E5M2 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E5M2FNUZ = 18
    FLOAT8E4M3FNUZ = 19
    UNDEFINED = 20

    @classmethod
    def from_dtype(cls, dtype):
        """The member for ember dtype ``dtype``."""
        from ._export import OnnxExporterError
        name = str(dtype).replace("ember.", "").replace("torch.", "") if dtype is not None else None
        if name not in _BY_DTYPE:
            raise OnnxExporterError(f"Unknown dtype: {dtype}")
        return cls[_BY_DTYPE[name]]

    @classmethod
    def from_onnx_type(cls, onnx_type):
        """The member for ONNX element type ``onnx_type`` (an int or ``TensorProtoDataType``)."""
        from ._export import OnnxExporterError
        found = [member for member, t in _ONNX.items() if t == int(onnx_type)]
        if not found:
            raise OnnxExporterError(f"Unknown onnx_type: {onnx_type}")
        return cls[found[-1]]     # (PyTorch inverts its table: uint8 reads back as QUINT8, as there)

    def dtype(self):
        """The ember dtype (OnnxExporterError where ember has none, e.g. complex32, float8)."""
        import ember
        from ._export import OnnxExporterError
        name = {v: k for k, v in _BY_DTYPE.items()}.get(self.name)
        if name is None or not hasattr(ember, name):
            raise OnnxExporterError(f"ember has no dtype for {self.name}")
        return getattr(ember, name)

    def onnx_type(self):
        """The ``TensorProtoDataType``."""
        from ._export import OnnxExporterError
        if self.name not in _ONNX:
            raise OnnxExporterError(f"Scalar type {self.name} cannot be converted to ONNX")
        return TensorProtoDataType(_ONNX[self.name])

    def scalar_name(self) -> str:
        """TorchScript's name of the type ("Float", "Long", ...)."""
        return _SCALAR_NAMES[self.name]

    def torch_name(self) -> str:
        """The type's C++ name in PyTorch ("float", "int64_t", ...)."""
        return _TORCH_NAMES[self.name]


_BY_DTYPE = {"uint8": "UINT8", "int8": "INT8", "int16": "INT16", "int32": "INT", "int64": "INT64",
             "float16": "HALF", "float32": "FLOAT", "float64": "DOUBLE", "complex32": "COMPLEX32",
             "complex64": "COMPLEX64", "complex128": "COMPLEX128", "bool": "BOOL", "qint8": "QINT8",
             "quint8": "QUINT8", "qint32": "QINT32", "bfloat16": "BFLOAT16", "float8_e5m2": "FLOAT8E5M2",
             "float8_e4m3fn": "FLOAT8E4M3FN", "float8_e5m2fnuz": "FLOAT8E5M2FNUZ",
             "float8_e4m3fnuz": "FLOAT8E4M3FNUZ"}
_ONNX = {"UINT8": 2, "INT8": 3, "INT16": 5, "INT": 6, "INT64": 7, "HALF": 10, "FLOAT": 1, "DOUBLE": 11,
         "COMPLEX64": 14, "COMPLEX128": 15, "BOOL": 9, "QINT8": 3, "QUINT8": 2, "QINT32": 6, "BFLOAT16": 16,
         "FLOAT8E5M2": 19, "FLOAT8E4M3FN": 17, "FLOAT8E5M2FNUZ": 20, "FLOAT8E4M3FNUZ": 18, "UNDEFINED": 0}
_SCALAR_NAMES = {"UINT8": "Byte", "INT8": "Char", "INT16": "Short", "INT": "Int", "INT64": "Long", "HALF": "Half",
                 "FLOAT": "Float", "DOUBLE": "Double", "COMPLEX32": "ComplexHalf", "COMPLEX64": "ComplexFloat",
                 "COMPLEX128": "ComplexDouble", "BOOL": "Bool", "QINT8": "QInt8", "QUINT8": "QUInt8",
                 "QINT32": "QInt32", "BFLOAT16": "BFloat16", "FLOAT8E5M2": "Float8E5M2",
                 "FLOAT8E4M3FN": "Float8E4M3FN", "FLOAT8E5M2FNUZ": "Float8E5M2FNUZ",
                 "FLOAT8E4M3FNUZ": "Float8E4M3FNUZ", "UNDEFINED": "Undefined"}
_TORCH_NAMES = {"UINT8": "uint8_t", "INT8": "int8_t", "INT16": "int16_t", "INT": "int", "INT64": "int64_t",
                "HALF": "half", "FLOAT": "float", "DOUBLE": "double", "COMPLEX32": "complex32",
                "COMPLEX64": "complex64", "COMPLEX128": "complex128", "BOOL": "bool", "QINT8": "qint8",
                "QUINT8": "quint8", "QINT32": "qint32", "BFLOAT16": "bfloat16", "FLOAT8E5M2": "float8_e5m2",
                "FLOAT8E4M3FN": "float8_e4m3fn", "FLOAT8E5M2FNUZ": "float8_e5m2fnuz",
                "FLOAT8E4M3FNUZ": "float8_e4m3fnuz", "UNDEFINED": "undefined"}
