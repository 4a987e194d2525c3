"""``ember.autocast`` and the autocast state functions (matches torch.amp.autocast_mode and the
``torch.*autocast*`` state functions of PyTorch 2.13).

The state is per thread (``ember._autocast_state.STATE``): enabling autocast in one thread leaves
every other thread as it was. Which ops autocast casts, and to what, is in
``ember._autocast_state.POLICIES``; docs/architecture.md ("Autocast") lists where ember differs from
PyTorch's op reference.
"""
from __future__ import annotations

import collections.abc
import functools
import warnings

from .. import _autocast_state as _S
from .. import _dtype
from .._tensor import Tensor
from ._policy import default_dtype as _default_dtype

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "is_autocast_enabled",
           "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting"]

#: device type names PyTorch's device parser accepts (a name outside these and ember's device types is an error)
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                       "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _ember_device_types():
    from .. import _registry
    _registry.discover()
    return set(_registry.device_types) | set(_registry.KNOWN_PACKAGES)


def _check_device_type(device_type: str) -> None:
    if device_type in ("cpu", "cuda"):
        return
    if device_type not in _ember_device_types() and device_type not in _TORCH_DEVICE_TYPES:
        known = ", ".join(dict.fromkeys(_TORCH_DEVICE_TYPES + tuple(sorted(_ember_device_types()))))
        raise RuntimeError(f"Expected one of {known} device type at start of device string: {device_type}")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used on ``device_type`` (matches torch.amp.is_autocast_available).

    True for cpu, cuda and every device type an ember plugin declares (autocast's casts are ember ops,
    so they run everywhere); False for a name PyTorch knows but ember has no device type for.
    :raises RuntimeError: ``device_type`` is not a device type name at all.
    """
    _check_device_type(device_type)
    return device_type in ("cpu", "cuda") or device_type in _ember_device_types()


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is enabled for ``device_type`` in this thread (None: cuda, as PyTorch)."""
    device_type = "cuda" if device_type is None else device_type
    _check_device_type(device_type)
    return bool(_S.STATE.enabled.get(device_type, False))


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Enable or disable autocast for ``device_type`` in this thread (matches torch.set_autocast_enabled;
    the one-argument form sets cuda, as PyTorch's legacy form)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _check_device_type(device_type)
    _S.set_enabled(device_type, enabled)


def get_autocast_dtype(device_type: str):
    """The lower-precision dtype autocast uses on ``device_type`` in this thread (default: bfloat16 on
    cpu, float16 elsewhere). :raises RuntimeError: ``device_type`` is not a device type name."""
    _check_device_type(device_type)
    return _S.STATE.dtype.get(device_type) or _default_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the lower-precision dtype of ``device_type`` for this thread.
    :raises TypeError: ``dtype`` is not an ember dtype (as PyTorch)."""
    if not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be ember.dtype, not "
                        f"{type(dtype).__name__}")
    _check_device_type(device_type)
    _S.STATE.dtype[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the casts of float32 parameters in this thread."""
    return _S.STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the cast cache on or off for this thread."""
    _S.STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop this thread's cached casts."""
    _S.STATE.cache.clear()


def autocast_increment_nesting() -> int:
    """One autocast block deeper in this thread; returns the new depth."""
    s = _S.STATE
    s.nesting += 1
    return s.nesting


def autocast_decrement_nesting() -> int:
    """One autocast block shallower in this thread; returns the new depth."""
    s = _S.STATE
    s.nesting -= 1
    return s.nesting


# ---------------------------------------------------------------- deprecated per-device forms (PyTorch's)
def _deprecated(old, new):
    warnings.warn(f"ember.{old}() is deprecated. Please use ember.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: ``is_autocast_enabled('cpu')``."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated: ``set_autocast_enabled('cpu', enabled)``."""
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """Deprecated: ``get_autocast_dtype('cpu')``."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    """Deprecated: ``set_autocast_dtype('cpu', dtype)``."""
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """Deprecated: ``get_autocast_dtype('cuda')``."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    """Deprecated: ``set_autocast_dtype('cuda', dtype)``."""
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def _cuda_available() -> bool:
    import ember
    try:
        return bool(ember.cuda.is_available())
    except Exception:        # noqa: BLE001 - no cuda plugin, or its runtime failed: not available
        return False


class autocast:
    """Context manager and decorator running its region in mixed precision (matches torch.amp.autocast).

    Inside, ops on autocast's lists run in an op-specific dtype: matmul-like ops and convolutions in
    ``dtype`` (the "lower" list), numerically sensitive ops in float32, ops with several inputs
    (``cat``, ``index_copy``, ...) in the widest floating type of their inputs. Only tensors on
    ``device_type`` are cast; float64 tensors never are. The state is this thread's; blocks nest, and
    ``autocast(..., enabled=False)`` turns it off inside an enabled block.

    :param device_type: 'cpu', 'cuda' or another ember device type (``tensor.device.type``).
    :param dtype: the lower-precision dtype (None: ``get_autocast_dtype(device_type)``, bfloat16 on
        cpu, float16 elsewhere). Only bfloat16 and float16 are supported.
    :param enabled: whether autocast is on in the region.
    :param cache_enabled: cache casts of float32 parameters until the outermost block exits (None: the
        current ``is_autocast_cache_enabled()``).
    :raises ValueError: ``device_type`` is not a str.
    :raises RuntimeError: ``device_type`` is not a device type name, or has no autocast.
    :warns UserWarning: ``dtype`` is not bfloat16/float16, or cuda is not available: autocast is disabled.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        supported = (_dtype.bfloat16, _dtype.float16)
        name = device_type.upper()
        if enabled:
            if device_type == "cuda":
                if not _cuda_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in supported:
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of " + ", ".join(map(str, supported))
                              + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_dtype(self.device, self.fast_dtype)     # first: a bad dtype raises before anything changed
        set_autocast_enabled(self.device, self._enabled)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:    # the outermost block: drop the cast cache
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to "
                            f"use autocast as a context manager? For example:\n"
                            f"    with ember.autocast(device_type=...):\n"
                            f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value, device_type, dtype):
    """Cast the floating tensors (not float64) on ``device_type`` inside ``value`` (containers kept)."""
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and value.dtype is not _dtype.float64
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for ``forward`` of a custom ``ember.autograd.Function`` (matches torch.amp.custom_fwd).

    With ``cast_inputs`` set and autocast enabled for ``device_type``, the floating tensors among the
    arguments are cast to ``cast_inputs`` and ``forward`` runs with autocast disabled; otherwise forward
    runs under the current autocast state, which ``custom_bwd`` then restores for ``backward``.
    :raises ValueError: ``device_type`` is not a str.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for ``backward`` of a custom ``ember.autograd.Function``: runs it under the autocast
    state ``forward`` ran under (matches torch.amp.custom_bwd). :raises ValueError: ``device_type`` is
    not a str."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
