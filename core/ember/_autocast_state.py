"""Autocast state read by the generated entry points of the ops on autocast's lists (no imports of
ember: the dispatcher loads this before anything else), and those lists.

Per thread, as in PyTorch: whether autocast is enabled for each device type, its lower-precision
dtype, whether the cast cache is on, the nesting depth of ``autocast`` blocks, and the cache itself.
``STATE`` is a ``threading.local``: a thread starts with autocast off for every device type,
whatever other threads are doing.

Only ops named in the lists below get a hook in their generated entry point (``_dispatch.declare``);
every other op (``add``, ``relu``, ...) pays nothing. A hooked op tests ``EVER and STATE.on``:
``EVER`` (a module attribute) says whether autocast was ever enabled in this process, so a program
that never uses autocast pays one attribute load per hooked op; ``STATE.on`` says whether this thread
has autocast enabled for some device type and is not inside an op autocast is already running.

The lists follow PyTorch's "Autocast Op Reference" (docs/architecture.md, "Autocast", says where
ember's differ): ``lower`` ops run in the autocast dtype, ``fp32`` ops in float32, ``promote`` ops in
the widest floating type of their inputs; a ``banned`` op raises (binary_cross_entropy off cpu). CPU
has its own lists; every other device type (cuda and the plugins' devices) uses the CUDA lists.
"""
from __future__ import annotations

import functools
import threading

_FP32_FUNCTIONS = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                   "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss", "poisson_nll_loss",
                   "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "cross_entropy")

#: per device kind ("cpu" or "other"): op name -> policy ("lower" | "fp32" | "promote" | "banned")
POLICIES = {
    "cpu": {
        **dict.fromkeys(("addbmm", "addmm", "baddbmm", "bmm", "conv2d", "linear", "matmul", "mm", "einsum"),
                        "lower"),
        **dict.fromkeys(("nll_loss", "prod"), "fp32"),
        **dict.fromkeys(("cat", "index_copy"), "promote"),
        # nn.functional functions written in Python (``autocast_function``)
        **dict.fromkeys(("conv1d", "conv_transpose1d", "conv_transpose2d", "prelu",
                         "scaled_dot_product_attention"), "lower"),
        **dict.fromkeys(_FP32_FUNCTIONS, "fp32"),
    },
    "other": {
        **dict.fromkeys(("addbmm", "addmm", "addmv", "baddbmm", "bmm", "conv2d", "linear", "matmul", "mm", "mv",
                         "einsum"), "lower"),
        **dict.fromkeys(("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
                         "reciprocal", "rsqrt", "sinh", "tan", "pow", "nll_loss", "prod", "sum", "cumsum",
                         "cumprod", "softmax", "log_softmax", "norm"), "fp32"),
        **dict.fromkeys(("addcdiv", "addcmul", "atan2", "dot", "index_put", "scatter_add", "cat", "index_copy"),
                        "promote"),
        # nn.functional functions written in Python (``autocast_function``)
        **dict.fromkeys(("conv1d", "conv_transpose1d", "conv_transpose2d", "prelu",
                         "scaled_dot_product_attention"), "lower"),
        **dict.fromkeys(tuple(n for n in _FP32_FUNCTIONS if n != "binary_cross_entropy")
                        + ("layer_norm", "group_norm", "softplus", "softmin", "cosine_similarity", "normalize",
                           "pdist"), "fp32"),
        **dict.fromkeys(("bilinear",), "promote"),
        "binary_cross_entropy": "banned",      # PyTorch's CUDA autocast refuses it (RuntimeError)
    },
}

#: every op name some device's list names: the dispatcher generates the hook for these only
HOOKED = frozenset(POLICIES["cpu"]) | frozenset(POLICIES["other"])


class _State(threading.local):
    def __init__(self):
        # runs once in each thread, on its first access: that thread's own values
        self.enabled = {}          # device type -> bool (absent: False)
        self.dtype = {}            # device type -> ember dtype (absent: the device's default)
        self.cache_enabled = True
        self.nesting = 0           # depth of autocast blocks (the cache is dropped when it returns to 0)
        self.cache = {}            # id(float32 leaf parameter) -> (parameter, its cast)
        self.below = 0             # depth of ops autocast is running (their inner ops are not autocast)
        self.on = False            # some device type enabled and not below: what a hooked entry point tests

    def update(self):
        """Recompute ``on`` after ``enabled`` or ``below`` changed (this thread)."""
        self.on = not self.below and any(self.enabled.values())


#: autocast has been enabled in this process at some point (read before the thread-local flag: cheaper)
EVER = False

STATE = _State()


def set_enabled(device_type: str, enabled: bool) -> None:
    """Enable or disable autocast for ``device_type`` in this thread (no argument checks: ember.amp does them)."""
    global EVER
    s = STATE
    s.enabled[device_type] = bool(enabled)
    if enabled:
        EVER = True
    s.update()


def autocast_function(fn):
    """Decorator for a function above the dispatcher (``nn.functional.mse_loss``, ``conv1d``, ...) that
    PyTorch's autocast lists name: under autocast its tensor arguments are cast by the policy the lists
    give its ``__name__``, and it runs with autocast off inside (as a hooked op's entry point). Outside
    autocast the cost is one call and one attribute load."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if EVER and STATE.on:
            from .amp._policy import call_function
            return call_function(name, fn, args, kwargs)
        return fn(*args, **kwargs)
    return wrapper
