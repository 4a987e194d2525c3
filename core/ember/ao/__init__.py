"""``ember.ao``: quantization (matches torch.ao).

- ``ember.ao.quantization``: observers, QConfig, fake quantization, eager-mode workflows
  (``quantize_dynamic``, ``prepare`` / ``convert``, ``prepare_qat``, ``fuse_modules``).
- ``ember.ao.nn.quantized`` (and ``.dynamic``), ``ember.ao.nn.intrinsic`` (fused modules and
  their quantized / QAT forms), ``ember.ao.nn.qat``: the modules those workflows swap in.

Quantized tensors and kernels come from the ember-quantized plugin; the float-only parts
(observers, fake quantization, fusion) work without it.
"""
from . import nn, quantization  # noqa: F401
