"""``ember.compile`` and ``ember.compiler``: capture a function's kernel calls at the dispatcher and
replay them without ember's per-op Python work (matches torch.compile / torch.compiler in API).

How it works, what it guards on and its limits: docs/compile.md; the design: DESIGN §12.
This package is imported by the core's tensor module, so it imports nothing heavy at load time.
"""
from __future__ import annotations

from ._capture import GraphBreakError

__all__ = ["compile", "reset", "is_compiling", "is_dynamo_compiling", "config", "OptimizedModule",
           "GraphBreakError", "InvalidBackend"]

#: the backends ember.compile accepts: all but "eager" capture and replay (PyTorch's names are kept so
#: code written for torch.compile runs; ember has one way to compile)
_BACKENDS = (None, "inductor", "ember", "cudagraphs", "aot_eager", "eager")


class InvalidBackend(RuntimeError):
    """An unknown ``backend=`` (matches torch._dynamo.exc.InvalidBackend in role)."""


def __getattr__(name):
    if name == "config":
        from ._compiled import config
        return config
    if name == "OptimizedModule":
        return _optimized_module_class()
    raise AttributeError(f"module 'ember.compiler' has no attribute '{name}'")


def is_compiling() -> bool:
    """True while ember.compile warms up or captures a function on this thread (matches
    torch.compiler.is_compiling). Optimizers then keep their step counts in tensors."""
    from ._compiled import is_compiling as f
    return f()


is_dynamo_compiling = is_compiling


def reset() -> None:
    """Forget every captured graph of every compiled function (matches torch.compiler.reset)."""
    from ._compiled import _REGISTRY
    for cf in _REGISTRY:
        cf.reset()


_OM = None


def _optimized_module_class():
    global _OM
    if _OM is None:
        from ..nn import Module

        class OptimizedModule(Module):
            """A module compiled by ``ember.compile`` (matches torch._dynamo.eval_frame.OptimizedModule): calls
            run through the captured graphs; ``_orig_mod`` is the module itself (so ``state_dict`` keys start
            with ``_orig_mod.``, as PyTorch's); other attributes are the original module's."""

            def __init__(self, mod, compiled):
                super().__init__()
                self._orig_mod = mod
                object.__setattr__(self, "_compiled", compiled)

            def __call__(self, *args, **kwargs):
                return self._compiled(*args, **kwargs)

            def forward(self, *args, **kwargs):
                return self._compiled(*args, **kwargs)

            def __getattr__(self, name):
                try:
                    return super().__getattr__(name)
                except AttributeError:
                    return getattr(self._modules["_orig_mod"], name)

            def train(self, mode=True):
                self._orig_mod.train(mode)
                return self

        _OM = OptimizedModule
    return _OM


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """Compile a function or module (matches torch.compile's signature; works as ``@ember.compile`` and
    ``@ember.compile(...)``).

    The first call of each signature runs eagerly (warm-up), the second runs eagerly while its kernel calls
    are captured, later calls replay them: no argument binding, meta functions, autograd recording or
    allocation per op. Compile a whole training step (zero_grad, forward, loss, backward, optimizer.step) to
    replay it all; return tensors from it and read them (``loss.item()``) outside. A module compiled on its own
    replays in ``no_grad`` / inference use; in grad mode its calls run eagerly (ember has no AOT autograd).

    :param fullgraph: raise ``GraphBreakError`` (naming the read and your source line) where a host read
        (``item``, ``tolist``, ``bool``, ``numpy``) in your code would break the graph, instead of splitting
        the function at that statement (the statements before and after it compiled, the statement eager;
        docs/compile.md) or, where it cannot be split, running that signature eagerly.
    :param dynamic: accepted; every new shape is captured as its own signature (up to
        ``ember.compiler.config.cache_size_limit``).
    :param backend: ``"inductor"`` (default), ``"ember"``, ``"cudagraphs"``, ``"aot_eager"``: capture and
        replay; ``"eager"``: run eagerly. Other values raise ``InvalidBackend``.
    :param mode, options: accepted for PyTorch compatibility; ignored.
    :param disable: return a callable that runs eagerly (so does the environment variable ``EMBER_COMPILE=0``).
    :returns: a callable (an ``OptimizedModule`` for a module).
    """
    if backend not in _BACKENDS and not callable(backend):
        raise InvalidBackend(f"Invalid backend: {backend!r}, see `ember.compiler.list_backends()` for available "
                             f"backends.")
    if model is None:
        def decorate(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return decorate
    if not callable(model):
        raise RuntimeError("ember.compile: the argument must be a function or a module (it is not callable)")
    from ..nn import Module
    from ._compiled import CompiledFunction
    be = "eager" if disable or callable(backend) else backend
    if isinstance(model, Module):
        cf = CompiledFunction(model.__call__, fullgraph=fullgraph, dynamic=bool(dynamic), mode=mode, backend=be,
                              module=model)
        return _optimized_module_class()(model, cf)
    import functools
    cf = CompiledFunction(model, fullgraph=fullgraph, dynamic=bool(dynamic), mode=mode, backend=be)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return cf(*args, **kwargs)
    compiled._compiled = cf
    compiled._torchdynamo_orig_callable = model
    return compiled


def list_backends(exclude_tags=None):
    """The backend names ``ember.compile`` accepts (matches torch.compiler.list_backends)."""
    return sorted(b for b in _BACKENDS if b is not None)
