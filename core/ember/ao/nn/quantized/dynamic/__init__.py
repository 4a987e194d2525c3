"""Dynamically quantized modules (matches torch.ao.nn.quantized.dynamic): float in, float out.

``Linear`` keeps a qint8 weight; each call quantizes its input to quint8 with the input's own
range (fbgemm's choice of qparams, 7 bits as PyTorch's ``reduce_range=True``), multiplies the
integers exactly and returns float32 ``acc * scale_x * scale_w + bias``
(``ember.ops.quantized.linear_dynamic``).
"""
from __future__ import annotations

import ember
import ember.nn as nn

from .. import LinearPackedParams, _PackedWeight, quantize_weight

__all__ = ["Linear"]


class Linear(_PackedWeight):
    """Dynamically quantized linear: float32 (N, *, in_features) -> float32 (N, *, out_features)
    (matches torch.ao.nn.quantized.dynamic.Linear)."""

    def __init__(self, in_features, out_features, bias_=True, dtype=None):
        super().__init__()
        dtype = ember.qint8 if dtype is None else dtype
        if dtype is not ember.qint8:
            raise NotImplementedError(f"dynamic quantized Linear supports qint8 weights, got {dtype!r}")
        self.in_features, self.out_features = in_features, out_features
        w = ember.quantize_per_tensor(ember.zeros(out_features, in_features), 1.0, 0, dtype)
        self._packed_params = LinearPackedParams(w, ember.zeros(out_features) if bias_ else None)
        self.reduce_range = True

    def forward(self, x):
        """ember.ops.quantized.linear_dynamic: float32 x (*, in_features) quantized per call (quint8, 7-bit range)
        times the qint8 weight -> float32 (*, out_features) (matches
        torch.ao.nn.quantized.dynamic.Linear.forward).
        """
        p = self._packed_params
        return ember.ops.quantized.linear_dynamic(x, p.weight, p.bias, self.reduce_range)

    def extra_repr(self):
        """Settings shown inside the repr: ``in_features=..., out_features=..., dtype=..., qscheme=...``."""
        return (f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.weight().dtype}, "
                f"qscheme={self.weight().qscheme()}")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A dynamic quantized Linear from a float nn.Linear (its ``qconfig``'s weight observer, else
        PyTorch's default: per-tensor symmetric qint8)."""
        from ....quantization.qconfig import default_dynamic_qconfig
        qconfig = getattr(mod, "qconfig", None) or default_dynamic_qconfig
        obs = qconfig.weight()
        obs(mod.weight)
        wq = quantize_weight(mod.weight, obs)
        q = cls(mod.in_features, mod.out_features, mod.bias is not None, dtype=obs.dtype)
        q.set_weight_bias(wq, mod.bias)
        return q.to(mod.weight.device)
