"""ember.onnx: export a model as ONNX (matches torch.onnx.export's TorchScript-based exporter in role).

``export`` traces the model with ``ember.jit.trace`` (or takes a traced one) and translates each op of
the graph to ONNX ops (``ember.onnx._export.MAPPING``; the table is in docs/jit.md). It needs the
``onnx`` package (``pip install ember[onnx]``). Importing ONNX models is out of scope.
"""
from __future__ import annotations

import contextlib
import enum

from ._export import OnnxExporterError, UnsupportedOperatorError
from ._symbolic import (JitScalarType, TensorProtoDataType, register_custom_op_symbolic,
                        unregister_custom_op_symbolic)

__all__ = ["export", "dynamo_export", "is_in_onnx_export", "OnnxExporterError", "UnsupportedOperatorError",
           "TrainingMode", "OperatorExportTypes", "select_model_mode_for_export", "JitScalarType",
           "TensorProtoDataType", "register_custom_op_symbolic", "unregister_custom_op_symbolic"]


class TrainingMode(enum.IntEnum):
    """The mode a model is exported in (matches torch.onnx.TrainingMode); ember exports EVAL and PRESERVE of a
    model already in eval mode."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """How ops are exported (matches torch.onnx.OperatorExportTypes); ember exports plain ONNX only."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


@contextlib.contextmanager
def select_model_mode_for_export(model, mode):
    """Put ``model`` in eval (``TrainingMode.EVAL``) or training (``TRAINING``) mode for the block and back after;
    ``PRESERVE`` leaves it (matches torch.onnx.select_model_mode_for_export)."""
    if not isinstance(mode, TrainingMode):
        raise TypeError(f"'mode' should be a torch.onnx.TrainingMode enum, but got '{type(mode)}'.")
    was = model.training
    if mode is not TrainingMode.PRESERVE:
        model.train(mode is TrainingMode.TRAINING)
    try:
        yield
    finally:
        model.train(was)

_EXPORTING = [0]


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamo=False, export_params=True, keep_initializers_as_inputs=False,
           dynamic_axes=None, do_constant_folding=True, training=None, operator_export_type=None, **unsupported):
    """Export ``model`` (an ``nn.Module``, a function, or what ``ember.jit.trace`` returned) run on ``args`` (a tensor
    or a tuple of tensors) as an ONNX model, written to ``f`` (a path or a binary file) (matches torch.onnx.export's
    TorchScript exporter).

    - ``opset_version``: 17 by default; 13 to 20 are mapped.
    - ``input_names`` / ``output_names``: the graph's names (default ``input`` / ``output``, numbered when several).
    - ``dynamic_axes``: ``{name: {axis: "dim_name"}}`` or ``{name: [axes]}``: those dims are symbolic (the batch
      dim, typically). The model is traced again with each such input dim grown, and the sizes the trace
      recorded that follow the dims (reshape targets, slice bounds, an LSTM's zero initial state, a count) are
      computed from the inputs' shapes at run time (``ember.onnx._dynamic``). A model given already traced keeps
      the sizes it was traced with (only the named dims are marked symbolic).
    - ``export_params=False``: parameters and buffers become graph inputs after the model's own.
    - ``do_constant_folding``: nodes that read only parameters, buffers and constants are computed at export.
    A module is exported in eval mode (PyTorch's ``training=TrainingMode.EVAL``) and put back as it was.

    :returns: None when ``f`` is given, else the ``onnx.ModelProto``.
    :raises UnsupportedOperatorError: (a RuntimeError) an op of the traced graph has no ONNX mapping at the opset,
        naming the op and the opset.
    :raises ValueError: an opset outside 13..20, more names than inputs / outputs, dynamic_axes naming neither.
    :raises OnnxExporterError: (a RuntimeError) with ``dynamic_axes``, when the traced graph changes with the size
        (control flow on it) or a float or a constant's values follow the size.
    :raises NotImplementedError: ``kwargs``, ``training`` other than eval, or another unsupported option.
    :raises ModuleNotFoundError: the ``onnx`` package is not installed.
    """
    import ember
    from ..nn import Module
    try:
        import onnx  # noqa: F401
    except ModuleNotFoundError:
        raise ModuleNotFoundError("ember.onnx.export needs the 'onnx' package: pip install onnx") from None
    from . import _export
    if kwargs:
        raise NotImplementedError("ember.onnx.export: keyword inputs (kwargs=) are not supported; pass args")
    mode = TrainingMode.EVAL if training is None else TrainingMode(int(training))
    if mode is TrainingMode.TRAINING or (mode is TrainingMode.PRESERVE and getattr(model, "training", False)):
        raise NotImplementedError("ember.onnx.export: exporting in training mode is not supported (training="
                                  "TrainingMode.EVAL, the default, exports the model in eval mode)")
    if operator_export_type not in (None, OperatorExportTypes.ONNX):
        raise NotImplementedError("ember.onnx.export: only operator_export_type=OperatorExportTypes.ONNX is supported")
    bad = [k for k, v in unsupported.items() if v not in (None, False)]
    if bad:
        raise NotImplementedError(f"ember.onnx.export: option(s) {', '.join(sorted(bad))} are not supported")
    if isinstance(args, ember.Tensor):
        args = (args,)
    opset = 17 if opset_version is None else int(opset_version)
    dyn = None
    if isinstance(model, (ember.jit.ScriptModule, ember.jit.ScriptFunction)):
        traced = model
    else:
        def trace(a):
            was = model.training if isinstance(model, Module) else None
            if was:
                model.eval()
            _EXPORTING[0] += 1
            try:
                return ember.jit.trace(model, tuple(a), check_trace=False)
            finally:
                _EXPORTING[0] -= 1
                if was:
                    model.train(was)
        traced = trace(args)
        if dynamic_axes:
            from ._dynamic import analyse
            names = _export.input_names_for(len(traced.graph.inputs), input_names)
            tensors = [a for a in args if isinstance(a, ember.Tensor)]
            if len(tensors) == len(names):
                dyn = analyse(lambda a: trace(a).graph, tuple(tensors), names, dynamic_axes, traced.graph)
    state = {}
    if isinstance(traced, ember.jit.ScriptModule):
        state = dict(traced.named_parameters(remove_duplicate=False))
        state.update(traced.named_buffers(remove_duplicate=False))
    proto = _export.export_graph(traced.graph, state, input_names=input_names, output_names=output_names,
                                 dynamic_axes=dynamic_axes, opset_version=opset, export_params=export_params,
                                 do_constant_folding=do_constant_folding, dyn=dyn)
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is None:
        return proto
    data = proto.SerializeToString()
    ctx = open(f, "wb") if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__") else contextlib.nullcontext(f)
    with ctx as fh:
        fh.write(data)
    return None


def dynamo_export(*args, **kwargs):
    """Not provided: raises NotImplementedError (torch.onnx.dynamo_export needs torch.export; use export)."""
    raise NotImplementedError("ember.onnx.dynamo_export: ember has no torch.export; use ember.onnx.export, which "
                              "traces the model with ember.jit.trace.")


def is_in_onnx_export() -> bool:
    """True while ``ember.onnx.export`` traces a model on this process (matches torch.onnx.is_in_onnx_export)."""
    return _EXPORTING[0] > 0
