"""ember: a PyTorch-style tensor framework whose core knows no device.

The core defines Tensor, Storage with strides and views, the device / layout / dtype
dispatch keys, the dispatcher and the plugin system. Backends (ember-cpu, ember-cuda,
ember-opencl, ...) are separate distributions that register through pluggy hooks;
``ember info`` shows what is installed. Names, signatures, defaults and errors
follow PyTorch, so ``import ember as torch`` runs PyTorch code wherever ember has the
feature.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import _dtype
from ._dtype import (dtype, float16, half, bfloat16, float32, float64, double, int8, uint8, int16, short, int32,
                     int64, long, complex64, cfloat, complex128, cdouble, promote_types, result_type, can_cast,
                     get_default_dtype, set_default_dtype, finfo, iinfo)
from ._dtype import bool, float, int  # noqa: A004 - PyTorch's names (ember.float is float32)
from ._device import device, layout, strided
from ._tensor import Tensor, Size, is_tensor
from ._legacy import LEGACY_TYPES as _LEGACY_TYPES
globals().update(_LEGACY_TYPES)       # FloatTensor, DoubleTensor, ... LongTensor, BoolTensor (legacy constructors)
from ._allocator import UntypedStorage, OutOfMemoryError
from ._random_state import Generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state, \
    default_generator
from . import _ops
from ._ops import MODULES as _OP_MODULES
from . import library, plugins, memory, ops, linalg, special, return_types, _registry
from . import _interop
from ._interop import from_dlpack
from ._linalg_toplevel import *  # noqa: F401,F403,E402 - torch.det, torch.svd, torch.trace, ... (over ember.linalg)
from ._parallel import set_num_threads, get_num_threads  # noqa: F401
from ._printing import set_printoptions, get_printoptions, printoptions
from ._memory_format import memory_format, contiguous_format, channels_last, channels_last_3d, preserve_format  # noqa: F401,E402

for _m in _OP_MODULES:
    for _name in getattr(_m, "__all__", ()):
        globals()[_name] = getattr(_m, _name)
del _m, _name

from ._dtype import torch_name as _torch_name  # noqa: E402,F401


def set_default_device(device) -> None:
    """The device factories use when none is given (matches torch.set_default_device)."""
    _registry.set_default_device(device)


def get_default_device():
    """The device factories use when none is given."""
    return _registry.default_device()


def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating dtype."""
    return input._dtype.is_floating_point


def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex."""
    return input._dtype.is_complex


def numel(input) -> int:
    """Number of elements of ``input``."""
    return input.numel()


# submodules that are not device modules (``from . import nn`` asks __getattr__ before importing)
_SUBPACKAGES = frozenset({"nn", "optim", "utils", "multiprocessing", "serialization", "examples", "testing",
                          "sparse", "distributed", "profiler", "amp", "accelerator", "backends", "random", "hub",
                          "onnx", "fft", "signal", "distributions", "jit"})


def _lookup_device_module(name):
    """The device module of device type ``name``, loading the plugin that declares it (or every plugin, for a
    name no lazy-load manifest lists: it may be a dtype or a device type of a plugin without one)."""
    from . import _registry as R
    if not (R.load_for("device_types", name) or R.load_for("dtypes", name) or R.load_for("layouts", name)):
        R.ensure_loaded()
    dt = R.device_types.get(name)
    if dt is not None:
        return dt.module
    return None


def __getattr__(name):
    # ember.cuda, ember.opencl, ember.<vendor type>: the device module of a registered device type,
    # or (for a known type whose plugin is missing) a module answering is_available() -> False.
    if name.startswith("_") or name in _SUBPACKAGES:   # a submodule not imported yet: no plugin lookup
        raise AttributeError(name)
    if name in ("ao", "func"):      # imported on first use, as torch.ao / torch.func are always there
        import importlib
        return importlib.import_module("ember." + name)
    mod = _lookup_device_module(name)
    if mod is not None:
        return mod
    if name in globals():            # a dtype or layout its plugin registered while it loaded just now
        return globals()[name]
    if name in _dtype._QUANTIZED_NAMES:
        if name in globals():        # registered by ember-quantized while the plugins loaded just now
            return globals()[name]
        raise AttributeError(f"module 'ember' has no attribute '{name}': the quantized dtypes come from the "
                             f"ember-quantized plugin, which is not loaded: {_registry.install_advice('quantized')}")
    if name in _registry.KNOWN_PACKAGES:
        return _registry.missing_device_module(name)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, \
    is_inference_mode_enabled  # noqa: E402  (importing ember.autograd installs the autograd layer)
from .autograd.anomaly_mode import is_anomaly_enabled, is_anomaly_check_nan_enabled  # noqa: E402
# The PyTorch-shaped library above the core (DESIGN section 8), imported like torch's.
from . import nn, optim, utils, multiprocessing, distributed  # noqa: E402,F401
from ._nn_toplevel import *  # noqa: E402,F401,F403  (torch.conv3d, torch.layer_norm, torch.dropout, ...)
from .serialization import save, load  # noqa: E402,F401
from . import sparse  # noqa: E402,F401  (ember.sparse: mm, addmm, sum, softmax; kernels from ember-sparse)
from . import profiler  # noqa: E402,F401  (ember.profiler.record_fallbacks() without an import, as torch.profiler)
from . import amp  # noqa: E402,F401  (ember.amp: autocast, GradScaler)
from .amp.autocast_mode import (autocast, is_autocast_enabled, set_autocast_enabled, get_autocast_dtype,  # noqa: E402,F401
                                set_autocast_dtype, is_autocast_cache_enabled, set_autocast_cache_enabled,
                                clear_autocast_cache, autocast_increment_nesting, autocast_decrement_nesting,
                                is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype,
                                set_autocast_cpu_dtype, get_autocast_gpu_dtype, set_autocast_gpu_dtype)
# the top-level conveniences PyTorch programs reach for without an import (torch.accelerator, torch.backends, ...)
from . import accelerator, backends, random, hub, onnx  # noqa: E402,F401
from . import compiler  # noqa: E402,F401  (ember.compiler: reset, is_compiling, config)
from . import jit  # noqa: E402,F401  (ember.jit: trace / save / load on the compile capture)
from .compiler import compile  # noqa: E402,F401  (ember.compile: capture and replay at the dispatcher)
from ._tensor_extras import isreal, lu, lu_solve, orgqr  # noqa: E402,F401  (and Tensor.new, dim_order, ...)
from . import _toplevel_extras  # noqa: E402  (flags, predicates, deprecated spellings: never replacing a name)
for _n in _toplevel_extras.__all__:
    if _n not in globals():
        globals()[_n] = getattr(_toplevel_extras, _n)
del _n
from . import fft  # noqa: E402,F401  (ember.fft: torch.fft's transforms over ember._ops._fft's primitives)
from . import signal  # noqa: E402,F401  (ember.signal.windows)
from . import distributions  # noqa: E402,F401  (ember.distributions: torch.distributions over ember's ops)
from ._spectral import stft, istft, hann_window, hamming_window, blackman_window, bartlett_window, \
    kaiser_window  # noqa: E402,F401
from ._more_ops import *  # noqa: F401,F403,E402 - bincount, quantile, isin, gcd, *_copy, aliases, ... (composites)
