"""ember.onnx: importable, as torch.onnx, but without an exporter yet.

``export`` (and ``dynamo_export``) raise NotImplementedError saying so: the ONNX exporter is a
separate piece of work, not faked here. ``is_in_onnx_export()`` is False (no export ever runs),
which model code that asks it may rely on.
"""
from __future__ import annotations

__all__ = ["export", "dynamo_export", "is_in_onnx_export"]

_MISSING = ("ember.onnx.{name}: ember has no ONNX exporter yet, so the model was not exported. Run the model "
            "under PyTorch to export it, or save ember's weights with ember.save and load them there.")


def export(*args, **kwargs):
    """Not implemented yet: raises NotImplementedError (torch.onnx.export's place)."""
    raise NotImplementedError(_MISSING.format(name="export"))


def dynamo_export(*args, **kwargs):
    """Not implemented yet: raises NotImplementedError (torch.onnx.dynamo_export's place)."""
    raise NotImplementedError(_MISSING.format(name="dynamo_export"))


def is_in_onnx_export() -> bool:
    """False: no ONNX export is ever running in ember (matches torch.onnx.is_in_onnx_export)."""
    return False
