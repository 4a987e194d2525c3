"""Dynamic loss scaling for mixed-precision training (matches torch.amp.GradScaler, PyTorch 2.13).

The scale is a float32 0-dim tensor on the device of the first tensor ``scale()`` sees, the growth
tracker an int32 0-dim tensor beside it. Each iteration: ``scaler.scale(loss).backward()``,
``scaler.step(optimizer)`` (unscales the gradients, checks them for inf/nan and skips
``optimizer.step()`` if any is found), ``scaler.update()`` (halves the scale after a skipped step,
doubles it after ``growth_interval`` clean steps in a row). Written with ember ops, so it works for
every device type.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

from .. import _dtype
from .._tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where an optimizer is in the current iteration (PyTorch's names)."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``: set ``found_inf`` to 1 if a gradient
    holds inf or nan, and multiply every gradient by ``inv_scale`` in place."""
    import ember
    for g in grads:
        if not bool(ember.isfinite(g).all()):
            found_inf.fill_(1.0)
        g.mul_(inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's ``_amp_update_scale_``: back off after an inf, grow after ``growth_interval`` clean
    steps (only to a finite float32 value), and count the clean steps in ``growth_tracker``."""
    import numpy as np
    if float(found_inf.item()):
        scale.fill_(float(np.float32(scale.item() * backoff_factor)))
        growth_tracker.fill_(0)
        return
    successful = int(growth_tracker.item()) + 1
    if successful == growth_interval:
        with np.errstate(over="ignore"):
            new = np.float32(scale.item() * growth_factor)
        if np.isfinite(new):
            scale.fill_(float(new))
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)


class GradScaler:
    """Dynamic loss scaler (matches torch.amp.GradScaler).

    :param device: device type the scaled losses live on ('cuda' by default, as PyTorch; 'cpu' works).
    :param init_scale: the first scale.
    :param growth_factor: the scale is multiplied by this after ``growth_interval`` steps without inf/nan
        (must be > 1).
    :param backoff_factor: the scale is multiplied by this after a step with inf/nan (must be < 1).
    :param growth_interval: clean steps in a row before the scale grows.
    :param enabled: False makes every method a no-op (``scale`` returns its input, ``step`` calls
        ``optimizer.step()``).
    :raises AssertionError: growth_factor <= 1 or backoff_factor >= 1 (PyTorch's class and messages).
    :warns UserWarning: ``device='cuda'`` without cuda: the scaler disables itself, as PyTorch's.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .autocast_mode import _cuda_available
            if not _cuda_available():
                warnings.warn("ember.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        import ember
        self._scale = ember.full((), self._init_scale, dtype=_dtype.float32, device=dev)
        self._growth_tracker = ember.full((), self._init_growth_tracker, dtype=_dtype.int32, device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor or a nested list/tuple/iterable of tensors) times the current scale.
        :raises ValueError: something that is neither a tensor nor an iterable of tensors."""
        if not self._enabled:
            return outputs

        def apply(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(apply(v) for v in val)
            if hasattr(val, "__iter__"):
                return map(apply, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        import ember
        per_device = defaultdict(lambda: defaultdict(list))
        with ember.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device[param.grad.device][param.grad.dtype].append(param.grad)
            found = {}
            for dev, by_dtype in per_device.items():
                f = found.setdefault(dev, found_inf.to(device=dev, copy=True))
                inv = inv_scale.to(device=dev)
                for grads in by_dtype.values():
                    _non_finite_check_and_unscale_(grads, f, inv)
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place and record whether any is inf/nan.
        Call it at most once per optimizer between ``update()`` calls (e.g. before clipping gradients).
        :raises RuntimeError: called twice, or after ``step()``, in one iteration.
        :raises ValueError: a float16 gradient (PyTorch refuses to unscale those)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        import ember
        found_inf = ember.full((), 0.0, dtype=_dtype.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale ``optimizer``'s gradients (unless ``unscale_`` did) and call ``optimizer.step(*args,
        **kwargs)`` only if none holds inf/nan. Returns what ``optimizer.step`` returned, or None when skipped.
        :raises RuntimeError: a ``closure`` keyword, or a second ``step`` before ``update()``."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(float(v.item()) for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Update the scale for the next iteration: ``new_scale`` (a float or a 1-element float32 tensor)
        if given, else back off / grow by the inf checks of this iteration's optimizers.
        :raises AssertionError: no inf checks were recorded, or a bad ``new_scale`` tensor."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found = [f.to(device=scale.device) for st in self._per_optimizer_states.values()
                     for f in st["found_inf_per_device"].values()]
            if len(found) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found[0]
            for f in found[1:]:
                combined = combined + f
            _update_scale_(scale, tracker, combined, self._growth_factor, self._backoff_factor,
                           self._growth_interval)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """Clean steps in a row before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether the scaler is enabled."""
        return self._enabled

    def state_dict(self) -> dict:
        """``{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}``; ``{}``
        when disabled."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()``. :raises RuntimeError: an empty dict (saved from a disabled scaler)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_state)
