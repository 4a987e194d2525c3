"""Autograd state read by every generated op entry point (no imports of ember: the dispatcher
loads this before anything else).

Per thread, as in PyTorch: grad mode (``no_grad`` / ``enable_grad`` / ``set_grad_enabled``),
``inference_mode``, and whether the thread is running below autograd (inside a composite or a
recorded op's kernel). ``STATE`` is a ``threading.local``: each thread that touches it starts with
grad mode on, outside any block, whatever other threads are doing.

Process-wide, as in PyTorch: anomaly detection (``STATE.anomaly`` / ``anomaly_check_nan`` are
class attributes, written through ``set_anomaly``), and ``EVER`` (a module attribute): whether some
tensor in this process has ever required grad.

``STATE.check`` is what an entry point tests before looking at its arguments: it is true only
when this thread's grad mode is on, the thread is not below autograd, *and* some tensor has ever
required grad. Until the first ``requires_grad_(True)`` no op can need recording, so programs that
never use autograd pay one attribute load per op and nothing else. When that first happens (in any
thread), ``mark_requires_grad`` recomputes ``check`` in every thread that has a state.
"""
from __future__ import annotations

import threading


class _State(threading.local):
    # process-wide (class attributes: never assigned through an instance)
    anomaly = False            # detect_anomaly
    anomaly_check_nan = True

    def __init__(self):
        # runs once in each thread, on its first access: that thread's own values
        self.enabled = True        # grad mode (no_grad / enable_grad / set_grad_enabled)
        self.inference = False     # inference_mode
        self.grad_layout = True    # enforce_grad_layout_policy: .grad follows the parameter's layout
        self.below = 0             # depth of "below autograd" blocks (composites, recorded kernels)
        self.check = EVER          # enabled and not below and EVER: entry points test this one flag
        _register(self.__dict__)

    def update(self):
        """Recompute ``check`` after ``enabled`` or ``below`` changed (this thread)."""
        self.check = self.enabled and not self.below and EVER


#: some tensor in this process has ever required grad. The generated entry points test ``EVER and STATE.check``,
#: so a process that never uses autograd skips the per-thread lookup (a module attribute is cheaper to read)
EVER = False

_threads: dict = {}            # thread ident -> that thread's state dict (for mark_requires_grad)
_lock = threading.Lock()


def _register(d):
    ident = threading.get_ident()
    with _lock:
        _threads[ident] = d
        if len(_threads) > 2 * threading.active_count() + 8:     # forget threads that have ended
            alive = {t.ident for t in threading.enumerate()}
            for k in [k for k in _threads if k not in alive]:
                del _threads[k]


STATE = _State()


def mark_requires_grad():
    """Called when a tensor first requires grad: from now on entry points look at their inputs, in every
    thread."""
    global EVER
    if not EVER:
        with _lock:
            EVER = True
            for d in list(_threads.values()):
                d["check"] = d["enabled"] and not d["below"]


def set_anomaly(mode: bool, check_nan: bool) -> None:
    """Turn anomaly detection on or off for the whole process (as PyTorch's AnomalyMode)."""
    _State.anomaly, _State.anomaly_check_nan = bool(mode), bool(check_nan)


class below_autograd:
    """``with below_autograd():`` - ops inside are not recorded (this thread), whatever the grad mode: the
    layers below autograd (a composite's body, a recorded op's kernel). Nests."""
    __slots__ = ()

    def __enter__(self):
        s = STATE
        s.below += 1
        s.check = False

    def __exit__(self, *exc):
        s = STATE
        s.below -= 1
        s.update()


BELOW = below_autograd()
