"""Modules of ember.ao: ``quantized``, ``quantized.dynamic``, ``intrinsic``, ``qat`` (matches torch.ao.nn)."""
from . import intrinsic, qat, quantized  # noqa: F401
from .quantized import dynamic  # noqa: F401
