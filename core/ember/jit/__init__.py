"""ember.jit: tracing to an op-level graph, saving and loading it without the model's code (docs/jit.md).

Matches torch.jit's tracing half: ``trace`` runs the function or module once on example inputs under
``ember.compile``'s dispatcher capture (in ``no_grad``) and returns a ``ScriptFunction`` /
``ScriptModule`` that runs the recorded graph by calling each op's public entry point, so the traced
forward is differentiable. ``save`` / ``load`` write and read a zip holding the graph as versioned JSON
and the tensors in ``ember.save``'s format; loading runs no code from the file and refuses any op
outside ember's registry. ``script`` (TorchScript's compiler of Python source) is not provided.
"""
from __future__ import annotations

import contextlib
import io
import json
import warnings
import zipfile

from ._graph import JitGraph, FORMAT, VERSION
from ._trace import TracerWarning, TRACING
from ._extras import (Attribute, ScriptWarning, Future, fork, wait, isinstance as _jit_isinstance, script_if_tracing,
                      set_fusion_strategy, set_module, strict_fusion, fuser, optimized_execution,
                      enable_onednn_fusion, onednn_fusion_enabled, export_opnames, optimize_for_inference)

__all__ = ["trace", "trace_module", "script", "ScriptModule", "ScriptFunction", "TracedModule", "TopLevelTracedModule",
           "RecursiveScriptModule", "annotate", "TracerWarning", "TracingCheckError",
           "save", "load", "ignore", "unused", "is_scripting", "is_tracing", "export", "freeze", "Error",
           "Attribute", "ScriptWarning", "Future", "fork", "wait", "isinstance", "script_if_tracing",
           "set_fusion_strategy", "set_module", "strict_fusion", "fuser", "optimized_execution",
           "enable_onednn_fusion", "onednn_fusion_enabled", "export_opnames", "optimize_for_inference"]


class TracingCheckError(Exception):
    """``check_trace`` found the graph does not reproduce the traced code (matches torch.jit.TracingCheckError)."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n" + (extra_msg or "") + (graph_diff_error or "") + \
            (tensor_compare_error or "")
        super().__init__(self.message)


Error = RuntimeError   # torch.jit.Error is the error TorchScript raises; ember's graphs raise RuntimeError


def is_scripting() -> bool:
    """False: ember never compiles Python source to TorchScript (matches torch.jit.is_scripting outside script)."""
    return False


def is_tracing() -> bool:
    """True while ``ember.jit.trace`` runs the traced code on this thread (matches torch.jit.is_tracing)."""
    return TRACING.depth > 0


def ignore(drop=False, **kwargs):
    """Mark a function to be left as Python by the script compiler (matches torch.jit.ignore). Tracing does not look
    at decorators, so the function is returned unchanged (usable as ``@ignore`` and ``@ignore(drop=True)``)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """Mark a function the script compiler should replace by a raise (matches torch.jit.unused). Returned unchanged:
    tracing runs what the code runs."""
    return fn


def export(fn):
    """Mark a method for the script compiler (matches torch.jit.export); returned unchanged."""
    return fn


def annotate(the_type, the_value):
    """``the_value`` (matches torch.jit.annotate outside TorchScript, where it only tells the compiler a type)."""
    return the_value


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Not provided: raises NotImplementedError (torch.jit.script compiles Python source to TorchScript, which ember
    does not have). Use ``ember.jit.trace(obj, example_inputs)``, or ``ember.compile`` for speed."""
    raise NotImplementedError("ember.jit.script: ember does not compile Python source (TorchScript). Trace the model "
                              "instead: ember.jit.trace(model, example_inputs) records the ops it runs, and "
                              "ember.jit.save / ember.onnx.export take the result.")


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """The traced module itself (matches torch.jit.freeze's role; an ember graph already reads its state by name)."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use torch.jit.script or "
                           "torch.jit.trace to script your 'nn.Module'.")
    return mod


# ---------------------------------------------------------------- traced callables
class ScriptFunction:
    """A traced function: calling it runs the graph (matches torch.jit.ScriptFunction's role).

    ``graph`` prints one line per node (op, input and output shapes and dtypes); ``code`` is Python-like text.
    """

    def __init__(self, graph, name="forward"):
        self._graph = graph
        self.__name__ = self.name = name

    @property
    def graph(self):
        return self._graph

    @property
    def code(self):
        return self._graph.code()

    def __call__(self, *args):
        return self._graph.run(list(args), {})

    def save(self, f):
        save(self, f)


def _module_base():
    from ..nn import Module
    return Module


class ScriptModule(_module_base()):
    """A traced module (matches torch.jit.ScriptModule's role): an ``nn.Module`` whose submodules are plain containers
    holding the original parameters and buffers under the same names, so ``parameters()``, ``state_dict()``,
    ``load_state_dict()``, ``to()``, ``eval()`` / ``train()`` work as usual. ``forward`` runs the traced graph (the
    graph is fixed: changing ``training`` after tracing does not change what it computes)."""

    def __init__(self, graph, params, buffers, non_persistent=(), training=True, name="Module"):
        super().__init__()
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "original_name", name)
        for qual, t in params.items():
            mod, leaf = self._owner_of(qual)
            mod.register_parameter(leaf, t)
        for qual, t in buffers.items():
            mod, leaf = self._owner_of(qual)
            mod.register_buffer(leaf, t, persistent=qual not in non_persistent)
        self.train(training)

    def _owner_of(self, qual):
        from ..nn import Module
        parts = qual.split(".")
        mod = self
        for p in parts[:-1]:
            sub = mod._modules.get(p)
            if sub is None:
                sub = Module()
                mod.add_module(p, sub)
            mod = sub
        return mod, parts[-1]

    @property
    def graph(self):
        return self._graph

    @property
    def inlined_graph(self):
        return self._graph

    @property
    def code(self):
        return self._graph.code()

    def forward(self, *args):
        state = dict(self.named_parameters(remove_duplicate=False))
        state.update(self.named_buffers(remove_duplicate=False))
        return self._graph.run(list(args), state)

    def _apply(self, fn, recurse=True):
        """``to()`` / ``float()`` / ...: the parameters and buffers as usual, and the graph's constant tensors."""
        r = super()._apply(fn, recurse)
        from ..autograd.grad_mode import no_grad
        with no_grad():
            self._graph.constants = {k: fn(v) for k, v in self._graph.constants.items()}
        return r

    def save(self, f, _extra_files=None):
        """``ember.jit.save(self, f)``."""
        save(self, f)

    def _get_name(self):
        return self.original_name


class TracedModule(ScriptModule):
    """A module made by ``trace`` (matches torch.jit.TracedModule's place in the hierarchy)."""


class TopLevelTracedModule(TracedModule):
    """What ``trace`` returns for a module (matches torch.jit.TopLevelTracedModule)."""


class RecursiveScriptModule(ScriptModule):
    """What ``load`` returns for a module (matches torch.jit.RecursiveScriptModule)."""

    def _get_name(self):
        return f"RecursiveScriptModule(original_name={self.original_name})"


# ---------------------------------------------------------------- tracing
def _as_tuple(example_inputs):
    import ember
    if isinstance(example_inputs, ember.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)):
        for x in example_inputs:
            if not isinstance(x, ember.Tensor):
                raise TypeError(f"ember.jit.trace: example inputs must be tensors, got {type(x).__name__}")
        return tuple(example_inputs)
    raise TypeError(f"ember.jit.trace: example_inputs must be a tensor or a tuple of tensors, got "
                    f"{type(example_inputs).__name__}")


def _capture(fn, inputs, state, strict, names):
    import ember
    from ..compiler._capture import Graph, capturing
    from . import _trace
    cap = Graph()
    cap.returns = {}
    TRACING.depth += 1
    try:
        with ember.no_grad(), capturing(cap):
            result = fn(*inputs)
    finally:
        TRACING.depth -= 1
    _trace.host_read_warnings(cap)
    return _trace.build(cap, inputs, names, state, result, strict), result


def _compare(expected, got, where=""):
    import ember
    if isinstance(expected, ember.Tensor):
        if not isinstance(got, ember.Tensor) or expected.shape != got.shape or expected.dtype != got.dtype:
            raise TracingCheckError(None, f"output{where} differs in type, shape or dtype between the traced graph "
                                          f"and the Python function")
        if not ember.allclose(expected.detach(), got.detach(), rtol=1e-5, atol=1e-5, equal_nan=True):
            warnings.warn(f"Output{where} of the traced function does not match the corresponding output of the "
                          f"Python function: the trace may depend on data, randomness or a Python value.",
                          TracerWarning, stacklevel=4)
        return
    if isinstance(expected, dict):
        for k in expected:
            _compare(expected[k], got[k], f"{where}[{k!r}]")
        return
    for i, (e, g) in enumerate(zip(expected, got)):
        _compare(e, g, f"{where}[{i}]")


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):
    """Trace ``func`` (a function or an ``nn.Module``) on ``example_inputs`` (a tensor or a tuple of tensors) into a
    ``ScriptFunction`` / ``ScriptModule`` (matches torch.jit.trace).

    The code runs once in ``no_grad`` while ``ember.compile``'s capture records every op; the graph is what ran on
    these inputs: Python control flow is fixed, values read on the host (``item``, ``bool``, ...) become constants
    (each read gives a ``TracerWarning``), a reshape keeps a leading batch dim free. With ``check_trace`` the graph
    is run again and compared with the Python code (a ``TracerWarning`` when values differ; ``TracingCheckError``
    when shapes or dtypes do). ``strict=False`` allows list and dict outputs.

    :raises RuntimeError: the code ran something a graph cannot hold (a write into a view of another tensor, an
        op outside the registry, a non-tensor output).
    :raises NotImplementedError: ``example_kwarg_inputs``.
    """
    from ..nn import Module
    if example_kwarg_inputs is not None:
        raise NotImplementedError("ember.jit.trace: example_kwarg_inputs is not supported; pass example_inputs")
    if isinstance(func, ScriptModule) or isinstance(func, ScriptFunction):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. Returning the object as is.")
        return func
    inputs = _as_tuple(example_inputs)
    names = [f"x{i}" for i in range(len(inputs))]
    if isinstance(func, Module):
        params = dict(func.named_parameters())
        buffers = dict(func.named_buffers())
        persistent = set(func.state_dict(keep_vars=True))
        state = {**params, **buffers}
        graph, result = _capture(func, inputs, state, strict, names)
        traced = TopLevelTracedModule(graph, params, buffers, non_persistent={n for n in buffers if n not in persistent},
                              training=func.training, name=type(func).__name__)
    else:
        graph, result = _capture(func, inputs, {}, strict, names)
        traced = ScriptFunction(graph, getattr(func, "__name__", "forward"))
    if check_trace:
        import ember
        with ember.no_grad():
            for check in (check_inputs or [inputs]):
                check = _as_tuple(check)
                _compare(func(*check), traced(*check))
    return traced


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5, strict=True,
                 **kwargs):
    """``trace`` for ``{"forward": example_inputs}`` (matches torch.jit.trace_module for the forward method only)."""
    if set(inputs) != {"forward"}:
        raise NotImplementedError("ember.jit.trace_module: only the 'forward' method can be traced")
    return trace(mod, inputs["forward"], check_trace=check_trace, check_inputs=check_inputs, strict=strict)


# ---------------------------------------------------------------- files
def _tensor_bytes(d):
    import ember
    buf = io.BytesIO()
    ember.save(d, buf)
    return buf.getvalue()


def save(m, f, _extra_files=None):
    """Write a traced module or function to ``f`` (a path or a binary file): a zip with ``graph.json`` (the graph,
    format ``ember.jit.graph`` version 1), ``module.json`` (parameter / buffer names) and the tensors in
    ``ember.save``'s format (matches torch.jit.save's role; the file holds no code).

    :raises RuntimeError: ``m`` is not traced, or the graph holds an argument JSON cannot express.
    """
    if isinstance(m, ScriptModule):
        params = dict(m.named_parameters())
        buffers = dict(m.named_buffers())
        persistent = set(m.state_dict(keep_vars=True))
        info = {"kind": "module", "name": m.original_name, "training": m.training,
                "parameters": [[n, bool(p.requires_grad)] for n, p in params.items()],
                "buffers": list(buffers), "non_persistent": sorted(n for n in buffers if n not in persistent)}
        state = {**{n: p.detach() for n, p in params.items()}, **buffers}
    elif isinstance(m, ScriptFunction):
        info = {"kind": "function", "name": m.name}
        state = {}
    else:
        raise RuntimeError(f"ember.jit.save: expected a ScriptModule or ScriptFunction (from ember.jit.trace), got "
                           f"{type(m).__name__}")
    graph = m._graph
    gjson = json.dumps(graph.to_json(), indent=1)
    consts = {str(k): v for k, v in graph.constants.items()}
    ctx = open(f, "wb") if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__") else contextlib.nullcontext(f)
    with ctx as fh, zipfile.ZipFile(fh, "w") as z:
        z.writestr("archive/graph.json", gjson)
        z.writestr("archive/module.json", json.dumps(info))
        z.writestr("archive/state.ember", _tensor_bytes(state))
        z.writestr("archive/constants.ember", _tensor_bytes(consts))
        if _extra_files:
            for name, data in _extra_files.items():
                z.writestr(f"archive/extra/{name}", data)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Read what ``save`` wrote (matches torch.jit.load's role): a ``ScriptModule`` or ``ScriptFunction``, its tensors
    on ``map_location`` (as ``ember.load``'s). No code is run from the file: tensors load with ``weights_only=True``
    and every node must name an op of ember's registry with the schema it was saved with.

    :raises RuntimeError: not an ember.jit archive, an unsupported format version, an unknown op, a schema mismatch,
        a malformed graph.
    """
    import ember
    ctx = open(f, "rb") if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__") else contextlib.nullcontext(f)
    with ctx as fh:
        try:
            z = zipfile.ZipFile(fh)
            names = set(z.namelist())
        except zipfile.BadZipFile:
            raise RuntimeError("ember.jit.load: the file is not an ember.jit archive (not a zip file)") from None
        need = {"archive/graph.json", "archive/module.json", "archive/state.ember", "archive/constants.ember"}
        if not need <= names:
            raise RuntimeError(f"ember.jit.load: the file is not an ember.jit archive (missing "
                               f"{', '.join(sorted(need - names))})")
        try:
            gjson = json.loads(z.read("archive/graph.json"))
            info = json.loads(z.read("archive/module.json"))
        except ValueError as e:
            raise RuntimeError(f"ember.jit.load: the archive's JSON is malformed ({e})") from None
        state = ember.load(io.BytesIO(z.read("archive/state.ember")), map_location=map_location, weights_only=True)
        consts = ember.load(io.BytesIO(z.read("archive/constants.ember")), map_location=map_location,
                            weights_only=True)
        if _extra_files is not None:
            for name in list(_extra_files):
                if f"archive/extra/{name}" in names:
                    _extra_files[name] = z.read(f"archive/extra/{name}")
    graph = JitGraph.from_json(gjson, consts)
    if info.get("kind") == "function":
        return ScriptFunction(graph, info.get("name", "forward"))
    if info.get("kind") != "module":
        raise RuntimeError("ember.jit.load: the archive's module.json is malformed")
    from ..nn import Parameter
    params = {n: Parameter(state[n], requires_grad=rg) for n, rg in info["parameters"]}
    buffers = {n: state[n] for n in info["buffers"]}
    return RecursiveScriptModule(graph, params, buffers, non_persistent=set(info["non_persistent"]),
                        training=info["training"], name=info["name"])


__all__ += ["FORMAT", "VERSION"]



def __getattr__(name):
    # ``ember.jit.isinstance`` (torch.jit.isinstance) without shadowing the builtin for this module's own code
    if name == "isinstance":
        return _jit_isinstance
    raise AttributeError(f"module 'ember.jit' has no attribute '{name}'")
