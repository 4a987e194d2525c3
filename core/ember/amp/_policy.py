"""What a hooked op does under autocast: cast its floating-point tensor arguments by the op's policy
for the device type of its arguments, then run it with autocast off for the ops it calls inside.

Follows PyTorch's autocast kernels (aten/src/ATen/autocast_mode.h): a tensor is *eligible* when it is
floating point and on the autocast device type; ``float64`` tensors are never cast. ``lower`` casts
eligible tensors to the autocast dtype, ``fp32`` to float32, ``promote`` to the widest eligible
floating type (float64 ignored, float32 over the lower dtype, float16 with bfloat16 an error, as
PyTorch's ``prioritize``). A float32 leaf that requires grad (a parameter) cast to the lower dtype is
cached until the outermost autocast block exits, when ``cache_enabled``.

The casts are ordinary ``Tensor.to`` calls made with autograd on, so the graph goes through them:
gradients reach float32 parameters in float32.
"""
from __future__ import annotations

from .. import _dtype
from .._autocast_state import POLICIES, STATE
from .._tensor import Tensor


def default_dtype(device_type: str):
    """PyTorch's defaults: bfloat16 on cpu, float16 on every other device type."""
    return _dtype.bfloat16 if device_type == "cpu" else _dtype.float16


def call(op, fn, kwargs):
    """Run ``fn(**kwargs)`` (the op's own entry point) with its arguments cast for autocast."""
    s = STATE
    dev = _device_type(kwargs)
    if dev is not None and s.enabled.get(dev):
        policy = POLICIES["cpu" if dev == "cpu" else "other"].get(op.name)
        if policy is not None:
            kwargs = _cast_arguments(policy, kwargs, dev, s)
    s.below += 1
    s.on = False
    try:
        return fn(**kwargs)
    finally:
        s.below -= 1
        s.update()


def call_function(name, fn, args, kwargs):
    """``fn(*args, **kwargs)`` for a Python-level function on the lists (``_autocast_state.autocast_function``)."""
    s = STATE
    merged = dict(enumerate(args))
    merged.update(kwargs)
    dev = _device_type(merged)
    if dev is not None and s.enabled.get(dev):
        policy = POLICIES["cpu" if dev == "cpu" else "other"].get(name)
        if policy is not None:
            merged = _cast_arguments(policy, merged, dev, s)
            args = tuple(merged[i] for i in range(len(args)))
            kwargs = {k: merged[k] for k in kwargs}
    s.below += 1
    s.on = False
    try:
        return fn(*args, **kwargs)
    finally:
        s.below -= 1
        s.update()


def _device_type(kwargs):
    for v in kwargs.values():
        if isinstance(v, Tensor):
            return v._device.type
        if isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Tensor):
                    return x._device.type
    return None


def _tensors(kwargs):
    for v in kwargs.values():
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, Tensor):
                    yield x


def _eligible(t, dev):
    return t._dtype.is_floating_point and t._device.type == dev


_BANNED = ("ember.nn.functional.binary_cross_entropy and ember.nn.BCELoss are unsafe to autocast.\n"
           "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
           "In this case, combine the two layers using ember.nn.functional.binary_cross_entropy_with_logits\n"
           "or ember.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
           "safe to autocast.")


def _cast_arguments(policy, kwargs, dev, s):
    if policy == "banned":
        raise RuntimeError(_BANNED)
    lower = s.dtype.get(dev) or default_dtype(dev)
    if policy == "lower":
        to = lower
    elif policy == "fp32":
        to = _dtype.float32
    else:
        to = _promote_type(lower, kwargs, dev)
    cache = s.cache if (to is lower and s.cache_enabled) else None
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, Tensor):
            v = _cast(v, to, dev, cache)
        elif isinstance(v, (list, tuple)) and any(isinstance(x, Tensor) for x in v):
            v = type(v)(_cast(x, to, dev, cache) if isinstance(x, Tensor) else x for x in v)
        out[k] = v
    return out


def _promote_type(lower, kwargs, dev):
    """PyTorch's ``promote_type`` / ``prioritize``: start at the lower dtype; float64 arguments are
    ignored, float32 wins over the lower dtype; any other floating mix is an error."""
    current = lower
    for t in _tensors(kwargs):
        if not _eligible(t, dev):
            continue
        nxt = t._dtype
        if nxt is _dtype.float64:
            continue
        if current is _dtype.float32 or nxt is _dtype.float32:
            current = _dtype.float32
        elif current is lower and nxt is lower:
            current = lower
        else:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _cast(t, to, dev, cache):
    if not _eligible(t, dev) or t._dtype is _dtype.float64 or t._dtype is to:
        return t
    if (cache is not None and t._dtype is _dtype.float32 and t._requires_grad and t._grad_fn is None
            and t._base is None):
        hit = cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        c = t.to(to)
        cache[id(t)] = (t, c)
        return c
    return t.to(to)
