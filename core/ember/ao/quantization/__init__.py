"""``ember.ao.quantization``: observers, QConfig, fake quantization and the eager-mode workflows
(matches torch.ao.quantization).

    import ember as torch
    from ember.ao.quantization import quantize_dynamic, get_default_qconfig, prepare, convert

    qmodel = quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)      # dynamic

    model.qconfig = get_default_qconfig("x86")                                 # static
    prepared = prepare(model)            # model wraps its quantized part in QuantStub / DeQuantStub
    for x, _ in calibration_batches: prepared(x)
    qmodel = convert(prepared)
"""
from __future__ import annotations

from .fake_quantize import *  # noqa: F401,F403
from .observer import *  # noqa: F401,F403
from .qconfig import *  # noqa: F401,F403
from .quantize import *  # noqa: F401,F403
from .stubs import *  # noqa: F401,F403
from ember._ops._quantized import fake_quantize_per_tensor_affine, fake_quantize_per_channel_affine  # noqa: F401
