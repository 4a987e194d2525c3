"""The rest of torch.jit's Python surface that means something without TorchScript's compiler.

Each follows what PyTorch does for these names in eager mode (outside ``torch.jit.script``): ``fork``
runs the function at once and returns a completed ``Future``; ``Attribute`` and ``isinstance`` are
pass-throughs and plain type checks; the fuser / optimisation switches keep their settings (ember's
graphs are run op by op by ``JitGraph.run``, with no fusion passes of their own: ``fuser("none")`` turns off
``ember.compile``'s fusion, the only fusion ember has). Names that only make sense with TorchScript's IR
(``CompilationUnit``, ``interface``, flatbuffer files, ...) are listed as absent in docs/api-coverage.md.
"""
from __future__ import annotations

import contextlib
import functools
import typing

__all__ = ["Attribute", "ScriptWarning", "Future", "fork", "wait", "isinstance", "script_if_tracing",
           "set_fusion_strategy", "set_module", "strict_fusion", "fuser", "optimized_execution",
           "enable_onednn_fusion", "onednn_fusion_enabled", "export_opnames", "optimize_for_inference"]

_builtin_isinstance = isinstance


class ScriptWarning(Warning):
    """A warning about TorchScript-only constructs (matches torch.jit.ScriptWarning)."""


class Attribute(typing.NamedTuple):
    """``(value, type)``: outside TorchScript, ``torch.jit.Attribute(value, type)`` only annotates a module
    attribute's type; the module then holds the tuple (matches torch.jit.Attribute in eager mode, a NamedTuple)."""
    value: typing.Any
    type: typing.Any


class Future:
    """The result of an asynchronous task (matches torch.jit.Future / torch.futures.Future in eager use):
    ``wait()`` / ``value()`` return the result (or raise the task's error), ``done()``, ``set_result``,
    ``set_exception``, ``then(callback)`` (a new Future of ``callback(self)``) and ``add_done_callback``.

    :raises RuntimeError: ``value()`` before a result was set; setting a result twice."""

    def __init__(self):
        self._done, self._result, self._error, self._callbacks = False, None, None, []

    def done(self) -> bool:
        """Whether a result or an error has been set."""
        return self._done

    def set_result(self, result):
        """Complete the future with ``result`` and run the callbacks."""
        self._finish(result, None)

    def set_exception(self, error):
        """Complete the future with ``error``, raised by ``wait()`` / ``value()``."""
        self._finish(None, error)

    def _finish(self, result, error):
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._done, self._result, self._error = True, result, error
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def value(self):
        """The result (the task's error is raised)."""
        if not self._done:
            raise RuntimeError("Future has not completed yet")
        if self._error is not None:
            raise self._error
        return self._result

    def wait(self):
        """The result: every ember task completes when it is created, so this never blocks."""
        return self.value()

    def then(self, callback):
        """A new Future completed with ``callback(self)`` once this one is done."""
        fut = Future()

        def run(f):
            try:
                fut.set_result(callback(f))
            except Exception as err:  # noqa: BLE001 - the callback's error belongs to the new future
                fut.set_exception(err)
        self.add_done_callback(run)
        return fut

    def add_done_callback(self, callback):
        """Call ``callback(self)`` when done (now, if already done)."""
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` and return a completed ``Future`` of its result (matches torch.jit.fork
    outside TorchScript, where the task runs at once in the calling thread). An error ``func`` raises is
    raised here, as in PyTorch's eager mode."""
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    """The result of ``future`` (a ``Future`` from ``fork``) (matches torch.jit.wait)."""
    return future.wait()


def isinstance(obj, target_type) -> bool:  # noqa: A001 - PyTorch's name
    """``obj`` is an instance of ``target_type``, which may be a typing container (``List[int]``,
    ``Dict[str, Tensor]``, ``Tuple[int, str]``, ``Optional[T]``, ``Union[...]``): elements are checked too
    (matches torch.jit.isinstance in eager mode, which also reads ``Tuple[int, ...]`` as a pair)."""
    origin, args = typing.get_origin(target_type), typing.get_args(target_type)
    if target_type is typing.Any:
        return True
    if origin is None:
        return _builtin_isinstance(obj, target_type)
    if origin is typing.Union or str(origin) == "types.UnionType":
        return any(isinstance(obj, a) for a in args)
    if origin is list:
        return _builtin_isinstance(obj, list) and (not args or all(isinstance(e, args[0]) for e in obj))
    if origin is dict:
        return _builtin_isinstance(obj, dict) and (not args or all(
            isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items()))
    if origin is tuple:
        if not _builtin_isinstance(obj, tuple):
            return False
        return len(args) == len(obj) and all(isinstance(e, a) for e, a in zip(obj, args))
    return _builtin_isinstance(obj, origin)


def script_if_tracing(fn):
    """``fn`` itself (wrapped): PyTorch scripts it when called during tracing; ember traces through it, so
    control flow inside is recorded for the values seen (matches torch.jit.script_if_tracing in use)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper.__original_fn = fn
    return wrapper


_FUSION_STRATEGY = [[("STATIC", 2), ("DYNAMIC", 10)]]


def set_fusion_strategy(strategy):
    """Record the fusion specialisation strategy (``[("STATIC" | "DYNAMIC", depth), ...]``) and return the
    previous one (matches torch.jit.set_fusion_strategy; ember's graph runner has no shape-specialising fuser,
    so the setting is kept but changes nothing).

    :raises RuntimeError: an entry that is not ("STATIC" | "DYNAMIC", int)."""
    for entry in strategy:
        if not (_builtin_isinstance(entry, tuple) and len(entry) == 2 and entry[0] in ("STATIC", "DYNAMIC")
                and _builtin_isinstance(entry[1], int)):
            raise RuntimeError(f"Expected a list of (STATIC|DYNAMIC, int) pairs, got {entry!r}")
    old, _FUSION_STRATEGY[0] = _FUSION_STRATEGY[0], list(strategy)
    return old


def set_module(obj, mod):
    """Set ``obj.__module__`` to ``mod`` (matches torch.jit.set_module).

    :raises TypeError: ``mod`` is not a string."""
    if not _builtin_isinstance(mod, str):
        raise TypeError("The mod argument should be a string")
    obj.__module__ = mod


class strict_fusion:
    """Context manager: in TorchScript, an error if a node is left unfused. ember's graphs are not fused by the
    JIT, so it checks nothing (matches torch.jit.strict_fusion outside scripted code, where it also does
    nothing)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_FUSERS = {"fuser0", "fuser1", "fuser2", "fuser3", "none"}


@contextlib.contextmanager
def fuser(name):
    """Pick the JIT fuser for the block (matches torch.jit.fuser): ``"none"`` turns ``ember.compile``'s
    fusion off in the block; the others ("fuser0" .. "fuser3", PyTorch's legacy / NNC / nvFuser / oneDNN
    fusers) leave ember's own fusion on.

    :raises Exception: an unknown name (PyTorch's class and message)."""
    if name not in _FUSERS:
        raise Exception(f"unrecognized fuser option (name: {name})")  # noqa: TRY002 - PyTorch raises Exception
    from ..compiler import config
    was = config.fusion
    if name == "none":
        config.fusion = False
    try:
        yield
    finally:
        config.fusion = was


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Whether the JIT executor optimises graphs before running them, for the block (matches
    torch.jit.optimized_execution); ember's graph runner has no optimisation passes, so both settings run the
    same recorded ops."""
    yield


_ONEDNN = [False]


def enable_onednn_fusion(enabled: bool):
    """Turn oneDNN JIT fusion on or off (matches torch.jit.enable_onednn_fusion; ember has no oneDNN backend:
    the flag is kept and read back by ``onednn_fusion_enabled``)."""
    _ONEDNN[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """The flag ``enable_onednn_fusion`` set (False by default, as PyTorch)."""
    return _ONEDNN[0]


def export_opnames(m) -> list:
    """The names of the ops a traced module's graph calls, sorted (matches torch.jit.export_opnames' role:
    what a runtime must provide to run ``m``; the names are ember's registry names, ``ember.ops.<name>``).

    :raises TypeError: ``m`` is not a ScriptModule / ScriptFunction."""
    graph = getattr(m, "graph", None)
    if graph is None or not hasattr(graph, "nodes"):
        raise TypeError(f"export_opnames expects a traced module, got {type(m).__name__}")
    return sorted({n["op"] for n in graph.nodes})


def optimize_for_inference(mod, other_methods=None):
    """``ember.jit.freeze`` of ``mod`` in eval mode (matches torch.jit.optimize_for_inference, whose extra passes
    - conv/batch-norm folding, MKLDNN layouts - ember's graph runner does not have).

    :raises RuntimeError: ``mod`` is not a ScriptModule (PyTorch's message)."""
    from . import ScriptModule, freeze
    if not _builtin_isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use torch.jit.script "
                           "or torch.jit.trace to script your 'nn.Module'.")
    return freeze(mod.eval(), preserved_attrs=other_methods)
