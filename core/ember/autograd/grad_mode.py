"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``,
``is_grad_enabled`` (matches torch.autograd.grad_mode). Each works as a context manager
and as a decorator (of functions and generator functions).

Grad mode and inference mode are per thread, as in PyTorch: a ``no_grad()`` in one thread (including the
one inside ``optimizer.step()``) does not affect another, and a new thread starts with grad mode on.
"""
from __future__ import annotations

import functools
import inspect

from .._grad_state import STATE

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "enforce_grad_layout_policy"]


def is_grad_enabled() -> bool:
    """Whether operations are being recorded for autograd."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active."""
    return STATE.inference


def _set(enabled, inference=None):
    STATE.enabled = bool(enabled)
    if inference is not None:
        STATE.inference = inference
    STATE.update()


class _ModeContext:
    """A context manager that is also a decorator (a fresh instance per call)."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                try:
                    with self.clone():
                        request = gen.send(None)
                    while True:
                        try:
                            response = yield request
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as e:
                            with self.clone():
                                request = gen.throw(e)
                        else:
                            with self.clone():
                                request = gen.send(response)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        """A fresh context manager of the same kind (one per decorated call)."""
        return self.__class__()


class _BareDecoratorMode(_ModeContext):
    """Also usable as a bare decorator (``@no_grad`` as well as ``@no_grad()``), as in PyTorch."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_BareDecoratorMode):
    """Disable gradient recording inside the block (outputs do not require grad)."""

    def __enter__(self):
        self.prev = STATE.enabled
        _set(False)

    def __exit__(self, *exc):
        _set(self.prev)


class enable_grad(_BareDecoratorMode):
    """Enable gradient recording inside the block (e.g. inside a ``no_grad`` region)."""

    def __enter__(self):
        self.prev = STATE.enabled
        _set(True)

    def __exit__(self, *exc):
        _set(self.prev)


class set_grad_enabled(_ModeContext):
    """Set grad mode to ``mode``: takes effect at once (as a function call), and is undone
    at the end of a ``with`` block or a decorated call."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.prev = STATE.enabled
        self.mode = mode
        _set(mode)

    def __call__(self, fn):
        _set(self.prev)        # used as a decorator: the mode applies only inside calls
        return super().__call__(fn)

    def __enter__(self):
        _set(self.mode)

    def __exit__(self, *exc):
        _set(self.prev)

    def clone(self):
        """A new context manager with the same mode (as torch's, for decorators reused across calls)."""
        return self.__class__(self.mode)


class inference_mode(_ModeContext):
    """Like ``no_grad`` (``mode=True``), for code that will never be differentiated."""

    def __new__(cls, mode_or_fn=True):
        if mode_or_fn is None or isinstance(mode_or_fn, bool):
            return super().__new__(cls)
        return cls()(mode_or_fn)            # bare @inference_mode

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        self.prev = (STATE.enabled, STATE.inference)
        if self.mode:
            _set(False, True)
        else:
            _set(STATE.enabled, False)

    def __exit__(self, *exc):
        _set(*self.prev)

    def clone(self):
        """A new context manager with the same mode (as torch's, for decorators reused across calls)."""
        return self.__class__(self.mode)


class enforce_grad_layout_policy(_ModeContext):
    """Whether accumulated gradients must follow their parameter's layout (matches
    torch.autograd.enforce_grad_layout_policy; per thread; a context manager, a decorator, or a plain call that
    takes effect at once). With ``enable=False`` a gradient nobody else holds becomes ``.grad`` as it is, even
    when its strides differ from the parameter's (no copy); a gradient that must be copied is still laid out
    like the parameter."""

    def __init__(self, enable: bool = True):
        if not isinstance(enable, bool):
            raise TypeError(f"enforce_grad_layout_policy(): argument 'enable' must be bool, not "
                            f"{type(enable).__name__}")
        self.prev = STATE.grad_layout
        self.enable = enable
        STATE.grad_layout = enable

    def __call__(self, fn):
        STATE.grad_layout = self.prev    # used as a decorator: the policy applies only inside calls
        return super().__call__(fn)

    def __enter__(self):
        STATE.grad_layout = self.enable

    def __exit__(self, *exc):
        STATE.grad_layout = self.prev

    def clone(self):
        """A new context manager with the same setting."""
        return self.__class__(self.enable)
