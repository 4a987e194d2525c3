"""ember-quantized: the quantized dtypes qint8, quint8 and qint32 for ember, on every device.

It registers the dtypes, the kernels of the core's quantization ops (``quantize_per_tensor``,
``quantize_per_channel``, ``dequantize``, ``copy_`` into quantized tensors, ``relu`` and
``max_pool2d`` on them) and the ops of ``ember.ops.quantized`` (add, add_relu, mul, relu, linear,
linear_relu, linear_dynamic, conv2d, conv2d_relu, max_pool2d, adaptive_avg_pool2d, cat, flatten),
all at (ANY device, strided, q-dtype) and built from dense ember ops, so quantized models run on
cpu, opencl, cuda and a vendor's device alike. The workflows (observers, QConfig, prepare /
convert, quantize_dynamic, fake quantization) are in ``ember.ao.quantization``; the modules in
``ember.ao.nn.quantized``.
"""
from __future__ import annotations

import ember
from ember.plugins import hookimpl, API_VERSION

__version__ = "0.1.0"

_DTYPES = (("qint8", 1, True, "int8"), ("quint8", 1, False, "uint8"), ("qint32", 4, True, "int32"))


@hookimpl
def ember_plugin_info():
    """The quantized plugin's manifest: dtypes only (it works on every device type)."""
    from . import _qops
    return {
        "name": "quantized",
        "version": __version__,
        "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
        "provides": {"dtypes": [n for n, *_ in _DTYPES],
                     "ops": ["quantize_per_tensor", "quantize_per_channel", "dequantize"] +
                            [f"quantized_{s.split('(')[0]}" for s, *_ in _qops._DEFS]},
    }


def _dtype(name, itemsize, signed, storage):
    # one dtype object per process, so a re-registration (tests, reloads) reuses it
    from ember import _dtype as D
    d = D._BY_NAME.get(name)
    return d if d is not None else ember.library.new_dtype(name, itemsize, is_signed=signed, storage=storage)


@hookimpl
def ember_register(registry):
    """Register qint8 / quint8 / qint32 and their kernels (device-generic)."""
    from . import _kernels, _qops
    qdtypes = [_dtype(*spec) for spec in _DTYPES]
    for d in qdtypes:
        registry.register_dtype(d)
    lib = registry.library("quantized")
    _kernels.register(lib, qdtypes)
    _qops.register(lib, qdtypes)


@hookimpl
def ember_opinfos():
    """The op-database entries of the quantized ops (dtypes qint8 / quint8 / qint32)."""
    from ._opinfos import op_db
    return op_db()
