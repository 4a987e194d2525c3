"""The dispatcher: operators, their kernel tables, resolution, and the generated entry points.

An operator is declared once (``declare``) with a schema, a meta function and,
optionally, a composite. Calling it runs

    argument binding (a Python function generated from the schema)
    -> argument normalisation, generated only for ops that have such arguments: an ``int[N]``
       given as an int or a list reaches meta, composite, fallback, autograd and every kernel
       as a tuple of N ints (``_schema.normaliser``; docs/vendor-guide.md, "Calling conventions")
    -> meta: shape / dtype / device inference and every argument check, on every backend
    -> autograd layer: when grad mode is on and a tensor argument requires grad, the call
       is handed to ``ember.autograd._record``, which runs the op below autograd and
       records a graph node (``OpDef.autograd`` holds the op's derivative)
    -> kernel resolution for the dispatch key (device type, layout, dtype), cached
    -> output allocation through the device's allocator (structured ops)
    -> the kernel.

Resolution order for a key, cached per (op, key):
exact key -> (device, layout, ANY dtype) -> (ANY device, layout, dtype) ->
(ANY device, layout, ANY dtype) -> the op's composite -> the op's host path (``OpDef.host``,
ops with no formula over primitives) -> the device type's fallback -> NotImplementedError naming
the op, the key, the installed plugins and the keys that do have kernels.
"""
from __future__ import annotations

import builtins
import dataclasses
import warnings

from . import _grad_state
from ._grad_state import BELOW as _BELOW, STATE as _AG_STATE
from . import _autocast_state

from ._schema import normaliser, parse_schema

__all__ = ["ANY", "OpDef", "declare", "ops", "KernelEntry"]


class _Any:
    """Wildcard for a kernel registered for every device type or every dtype."""

    def __repr__(self):
        return "ANY"

    def __reduce__(self):
        return "ANY"


ANY = _Any()

#: op name -> OpDef
ops: dict = {}


@dataclasses.dataclass
class KernelEntry:
    """A registered kernel with its owner and priority."""
    fn: object       # the kernel
    owner: str       # the library / plugin that registered it
    priority: int    # a higher priority may override an existing registration


class OpDef:
    """One operator: schema, meta function, kernels per dispatch key, composite.

    ``structured`` ops have a meta function that returns the outputs' shapes and
    dtypes; the dispatcher allocates them and the kernel writes into ``out``.
    The same kernel serves ``op``, ``op_`` (out is self) and ``op(out=)``.
    Free-form ops (data-dependent shapes) return their outputs from the kernel.
    """

    def __init__(self, schema, meta, structured, composite, inplace, doc, multi_output_type=None):
        self.schema = parse_schema(schema) if isinstance(schema, str) else schema
        self.name = self.schema.name
        self.meta = meta
        self.structured = structured
        self.composite = composite
        self.inplace = inplace
        self.doc = doc
        self.kernels = {}      # (device type | ANY, layout name | ANY, dtype | ANY) -> KernelEntry
        self.shadowed = {}     # key -> [KernelEntry] of lower priority than kernels[key], kept for when it goes
        self.cache = {}        # resolved key -> kernel
        self.sources = {}      # resolved key -> "native" | "composite" | "fallback"
        self.host = None       # the op's own host path (fn(op, args, kwargs)), tried before the device fallback
        self.multi_output_type = multi_output_type
        self.autograd = None   # the op's derivative (ember.autograd.derivatives), None = not differentiable
        self.qualname = None   # "<namespace>::<name>" of an op ember.library.Library.define declared
        self.plugin = None     # the plugin whose ember_register defined it (None: core, or user code)
        self.rec = _generic_rec(self)   # records the node after a structured op ran (autograd._fastpath)
        self.entry = None      # the generated functional entry point (set by declare)

    def __repr__(self):
        return f"<ember op {self.schema.text}>"

    # ------------------------------------------------------------ registration
    def register(self, device_type, layout, dtypes, fn, owner, priority=0):
        """Register ``fn`` for each key; RuntimeError naming both owners when a kernel of the same priority is
        there. The highest priority wins; a lower one is kept, shadowed, and takes over when the higher one is
        unregistered (so an override that loads before the plugin it overrides does not break that plugin)."""
        dtypes = [ANY] if dtypes is None or dtypes is ANY else list(dtypes)
        keys = [(device_type, layout, d) for d in dtypes]
        for key in keys:
            for old in [self.kernels.get(key)] + self.shadowed.get(key, []):
                if old is not None and old.priority == priority and old.fn is not fn:
                    raise RuntimeError(
                        f"kernel for op '{self.name}' at key {_fmt_key(key)} is registered twice: by "
                        f"'{old.owner}' and by '{owner}'. Declare a higher priority in one of them to override.")
        added = []
        for key in keys:
            entry = KernelEntry(fn, owner, priority)
            old = self.kernels.get(key)
            if old is not None and old.priority > priority:
                self.shadowed.setdefault(key, []).append(entry)
            else:
                if old is not None:
                    self.shadowed.setdefault(key, []).append(old)
                self.kernels[key] = entry
            added.append((key, entry))
        invalidate_caches()

        def rollback():
            for key, entry in reversed(added):
                if self.kernels.get(key) is entry:
                    rest = self.shadowed.get(key, [])
                    if rest:
                        best = max(rest, key=lambda e: e.priority)
                        rest[:] = [e for e in rest if e is not best]
                        self.kernels[key] = best
                    else:
                        self.kernels.pop(key, None)
                else:
                    rest = self.shadowed.get(key, [])
                    rest[:] = [e for e in rest if e is not entry]
                if not self.shadowed.get(key, True):
                    del self.shadowed[key]
            invalidate_caches()
        return rollback

    # ------------------------------------------------------------ resolution
    def resolve(self, key):
        """The kernel for ``key`` = (device type, layout name, dtype), by the documented order."""
        fn = self._resolve(key)
        if _CAPTURE_ACTIVE[0] and self.sources.get(key) != "composite":
            # a thread is capturing (ember.compile): kernels record their calls; composites are not
            # recorded, the ops they call are
            from .compiler._capture import recording
            fn = recording(self, fn)
            if key in self.cache:
                self.cache[key] = fn
        if self.structured and key[1] != "strided":
            self.cache.pop(key, None)   # a non-strided layout's kernel is free-form: entry points must not find it cached
        return fn

    def _resolve(self, key):
        from . import _registry
        _registry.discover()        # first use of ember: find the plugins before looking
        dev, lay, dt = key
        k = self.kernels
        for probe in ((dev, lay, dt), (dev, lay, ANY), (ANY, lay, dt), (ANY, lay, ANY)):
            e = k.get(probe)
            if e is not None:
                self.cache[key] = e.fn
                self.sources[key] = "native"
                return e.fn
        if self.composite is not None:
            fn = self.cache[key] = _below_autograd(self.composite)
            self.sources[key] = "composite"
            return fn
        dtype_ = _registry.device_types.get(dev)
        if self.host is not None and dtype_ is not None and dev != "cpu":
            # an op with no formula over primitives (ember.special's digamma, ember.linalg's decompositions, the
            # fft primitives): the cpu kernel through copies; counted, warned about and reported as a fallback
            fn = _below_autograd(_make_fallback(self, key, self.host, HOST_PATH))
            self.cache[key] = fn
            self.sources[key] = "fallback"
            return fn
        if dtype_ is not None and dtype_.fallback is not None:
            fn = _below_autograd(_make_fallback(self, key, dtype_.fallback))
            self.cache[key] = fn
            self.sources[key] = "fallback"
            return fn
        if not _registry._loaded:   # a plugin not imported yet (lazy-load manifest) may have it: load them, look again
            _registry.ensure_loaded()
            return self._resolve(key)
        if dtype_ is None and dev is not ANY:
            raise _registry.not_available(dev)
        raise NotImplementedError(self._missing_message(key))

    def source(self, key) -> str:
        """Where ``key`` resolves: 'native', 'composite', 'fallback' or 'missing'."""
        try:
            self.resolve(key)
        except (NotImplementedError, RuntimeError):
            return "missing"
        if self.structured and key[1] != "strided" and self.sources[key] != "native":
            return "missing"     # entry points use only native kernels at non-strided layouts (_structured_resolver)
        return self.sources[key]

    def _missing_message(self, key):
        from . import plugins
        have = sorted(_fmt_key(k) for k in self.kernels) or ["none"]
        loaded = ", ".join(p.name for p in plugins.list() if p.status == "loaded") or "none"
        return (f"Could not run '{self.name}' with arguments from the {_fmt_key(key)} key: no kernel is "
                f"registered for it, and it has no composite or fallback. Installed plugins: [{loaded}]. "
                f"Keys with kernels for '{self.name}': [{', '.join(have)}].")


def _fmt_key(key):
    dev, lay, dt = key
    name = lambda x: "ANY" if x is ANY else getattr(x, "name", x)
    return f"({name(dev)}, {name(lay)}, {name(dt)})"


_fallback_warned = set()

from .compiler._capture import ACTIVE as _CAPTURE_ACTIVE   # noqa: E402 - (a list: ember.compile's capture count)

#: how the warnings and errors name an op's host path (``OpDef.host``)
HOST_PATH = "its host path (copy to cpu, the cpu kernel, copy back)"


def _make_fallback(op, key, fallback, via=None):
    def run_fallback(*args, **kwargs):
        from . import profiler
        mode = profiler.fallback_warn_mode()     # EMBER_FALLBACK_WARN: once (default) | always | error
        through = via or f"the '{key[0]}' device's fallback"
        if mode == "error":
            raise RuntimeError(f"ember: '{op.name}' has no kernel for {_fmt_key(key)}, and EMBER_FALLBACK_WARN=error "
                               f"forbids running it through {through}.")
        if mode == "always" or op.name not in _fallback_warned:
            _fallback_warned.add(op.name)
            tail = "This warning is shown once per op." if mode == "once" else "(EMBER_FALLBACK_WARN=always)"
            warnings.warn(f"ember: '{op.name}' has no kernel for {_fmt_key(key)}; running it through "
                          f"{through} (slow). {tail}", stacklevel=3)
        profiler._count_fallback(op.name, key)
        return fallback(op, args, kwargs)
    return run_fallback


def invalidate_caches():
    """Drop every resolved-kernel cache (after any registration or removal)."""
    for op in ops.values():
        op.cache.clear()
        op.sources.clear()
    for c in _META_CACHES:
        c.clear()


#: meta functions that memoise results (they hold kernels) register their caches here
_META_CACHES: list = []


# ---------------------------------------------------------------- code generation
def _signature(schema, out_param):
    parts, star = [], False
    for a in schema.arguments:
        if a.kwarg_only and not star:
            parts.append("*")
            star = True
        parts.append(f"{a.name}={a.name}_default" if a.has_default else a.name)
    if out_param:
        if not star:
            parts.append("*")
        parts.append("out=None")
    return ", ".join(parts)


def _requires_grad_expr(schema):
    """The generated test 'does a tensor argument require grad' (Python scalars pass through)."""
    parts = []
    for a in schema.arguments:
        if a.type.startswith("Tensor") and a.type.endswith("[]"):
            parts.append(f"_rg_list({a.name})")
        elif a.type.startswith("Tensor"):
            parts.append(f"getattr({a.name}, '_requires_grad', False)")
    return " or ".join(parts) or "False"


def _kwargs_dict(schema):
    return ", ".join(f"'{a.name}': {a.name}" for a in schema.arguments)


def _rg_list(xs):
    return builtins.any(getattr(x, "_requires_grad", False) for x in xs) if xs is not None else False


def _normalise(op, ns):
    """The generated entry point's first lines: each argument whose type has a normaliser is rebound
    to the form kernels receive (an optional one only when not None); its default is stored
    normalised. Ops without such arguments get no lines, so they pay nothing."""
    lines = []
    for a in op.schema.arguments:
        fn = normaliser(a, op.name)
        if fn is None:
            continue
        ns[f"__norm_{a.name}"] = fn
        if a.has_default and a.default is not None:
            ns[f"{a.name}_default"] = fn(a.default)
        test = f"if {a.name} is not None: " if a.type.endswith("?") else ""
        lines.append(f"    {test}{a.name} = __norm_{a.name}({a.name})\n")
    return "".join(lines)


def _call_args(schema):
    return ", ".join(a.name if not a.kwarg_only else f"{a.name}={a.name}" for a in schema.arguments)


# The generated entry points use names starting with "__" for their own variables, so no op
# argument (an op may well have one called "dtype" or "device") is shadowed.
_TEMPLATE_STRUCTURED = """
def {name}({sig}):
{norm}{ac}    __device, __key, __shape, __dtype = _meta({args})
    try:
        __kernel = _cache[__key]
    except KeyError:                  # (zero-cost try; resolved outside the handler, so errors are not chained)
        __kernel = None
    if __kernel is None:
        try:
            __kernel = _resolve(__key)
        except _LayoutKernel as __e:  # a non-strided layout's kernel: free-form
            return _layout_call(_op, __e.fn, out, {{{kw}}})
    if out is None:
        out = _empty(__shape, __dtype, __device)
        __kernel({args}, out=out)
        if _GS.EVER and _AG.check and ({rg}):
            _op.rec(out, {args})
        return out
    if _GS.EVER and _AG.check and ({rg}):
        _no_out(_op)
    __dst = _check_out(_op, out, __shape, __dtype, __device, ({ins}), True)
    __kernel({args}, out=__dst)
    return _commit_out(out, __dst)
"""

_TEMPLATE_STRUCTURED_MULTI = """
def {name}({sig}):
{norm}{ac}    if _GS.EVER and _AG.check and ({rg}):
        return _record(_op, {name}, out, {{{kw}}})
    __device, __key, __specs = _meta({args})
    __kernel = _cache.get(__key) or _resolve(__key)
    if out is None:
        out = tuple(_empty(s, d, __device) for s, d in __specs)
        __kernel({args}, out=out)
        return _result(*out)
    __dst = _check_outs(_op, out, __specs, __device, ({ins}), True)
    __kernel({args}, out=__dst)
    return _result(*(_commit_out(o, d) for o, d in zip(out, __dst)))
"""

_TEMPLATE_INPLACE = """
def {name}_({sig}):
{norm}    if _GS.EVER and _AG.check and ({rg}):
        return _record_inplace(_op, {name}_, {{{kw}}})
    __device, __key, __shape, __dtype = _meta({args})
    _check_inplace(_op, {first}, __shape, __dtype, __device, ({ins}))
    __kernel = _cache.get(__key) or _resolve(__key)
    __kernel({args}, out={first})
    _bump({first})
    return {first}
"""

_TEMPLATE_FREEFORM = """
def {name}({sig}):
{norm}{ac}    if _GS.EVER and _AG.check and ({rg}):
        return _record(_op, {name}, None, {{{kw}}})
    __device, __key = _meta({args})
    __kernel = _cache.get(__key) or _resolve(__key)
    return __kernel({args})
"""


def declare(schema: str, meta, *, structured=True, composite=None, inplace=False, doc=None,
            multi_output_type=None):
    """Declare an operator and return its generated functional entry point.

    :param schema: the op's schema text.
    :param meta: ``meta(*args) -> (device, key, shape, dtype)`` for single-output
        structured ops, ``(device, key, ((shape, dtype), ...))`` for multi-output ones,
        ``(device, key)`` for free-form ones. It performs every argument check.
    :param structured: kernels write into preallocated ``out`` tensors.
    :param composite: a kernel written with other ember ops, used when a key has no
        native kernel (same signature as the kernel).
    :param inplace: also generate ``name_`` (the in-place method variant).
    :returns: the functional entry point; ``OpDef`` is reachable as ``fn._op``.
    """
    op = OpDef(schema, meta, structured, composite, inplace, doc, multi_output_type)
    if op.name in ops:
        raise RuntimeError(f"op '{op.name}' is declared twice")
    ops[op.name] = op
    from . import _factory
    ns = {
        "_meta": meta, "_cache": op.cache, "_resolve": _structured_resolver(op) if structured else op.resolve, "_op": op,
        "_LayoutKernel": _LayoutKernel, "_layout_call": _layout_call,
        "_empty": _factory.empty_on, "_check_out": _factory.check_out, "_check_outs": _factory.check_outs,
        "_commit_out": _factory.commit_out,
        "_check_inplace": _factory.check_inplace, "_bump": _factory.bump_version,
        "_result": multi_output_type, "_AG": _AG_STATE, "_GS": _grad_state, "_rg_list": _rg_list,
        "_record": _autograd_record, "_record_inplace": _autograd_record_inplace, "_no_out": _no_out,
        "_AC": _autocast_state, "_ACS": _autocast_state.STATE, "_autocast": _autocast_call,
    }
    for a in op.schema.arguments:
        if a.has_default:
            ns[f"{a.name}_default"] = a.default
    norm = _normalise(op, ns)
    args = _call_args(op.schema)
    rg, kw = _requires_grad_expr(op.schema), _kwargs_dict(op.schema)
    # the arguments that may be tensors an out= / in-place write (of the first argument) must not partly overlap
    ins = "".join(f"{a.name}, " for a in op.schema.arguments if a.name != "out")
    ins_rest = "".join(f"{a.name}, " for a in op.schema.arguments[1:] if a.name != "out")
    multi = len(op.schema.returns) > 1
    ac = _autocast_hook(op, kw, structured)
    if structured:
        template = _TEMPLATE_STRUCTURED_MULTI if multi else _TEMPLATE_STRUCTURED
        src = template.format(name=op.name, sig=_signature(op.schema, True), args=args, rg=rg, kw=kw, ins=ins,
                              norm=norm, ac=ac)
    else:
        src = _TEMPLATE_FREEFORM.format(name=op.name, sig=_signature(op.schema, False), args=args, rg=rg, kw=kw,
                                        norm=norm, ac=ac)
    exec(compile(src, f"<ember op {op.name}>", "exec"), ns)
    fn = ns[op.name]
    fn._op = op
    op.entry = fn       # the public entry point by op name (ember.jit runs traced graphs through it)
    fn.__doc__ = doc
    fn.__qualname__ = op.name
    fn.__module__ = "ember"
    if inplace:
        src = _TEMPLATE_INPLACE.format(name=op.name, sig=_signature(op.schema, False), args=args,
                                       first=op.schema.arguments[0].name, rg=rg, kw=kw, ins=ins_rest, norm=norm)
        exec(compile(src, f"<ember op {op.name}_>", "exec"), ns)
        fn_ = ns[op.name + "_"]
        fn_._op = op
        fn_.__qualname__ = op.name + "_"
        fn_.__doc__ = f"In-place version of :func:`{op.name}`."
        fn.inplace = fn_
    return fn


class _LayoutKernel(NotImplementedError):
    """Raised by a structured op's resolver for a key whose layout is not strided: the kernel
    (``fn``) is free-form. The single-output entry point catches it and calls ``_layout_call``;
    elsewhere (in-place, multi-output) it surfaces as a NotImplementedError naming the op and layout."""

    def __init__(self, op, key, fn):
        super().__init__(f"'{op.name}' at key {_fmt_key(key)}: in-place, out= and multi-output variants are "
                         f"not supported for the '{key[1]}' layout")
        self.fn = fn


def _structured_resolver(op):
    """``op.resolve`` for structured ops' entry points: a key of a non-strided layout (sparse_coo, ...)
    resolves only to a kernel registered for that layout, never cached, and is handed back through
    ``_LayoutKernel`` (its kernel allocates its own result); strided keys are unchanged."""
    def resolve(key):
        fn = op.resolve(key)
        if key[1] != "strided":
            if op.sources.get(key) != "native":
                raise NotImplementedError(op._missing_message(key).replace(
                    "it has no composite or fallback", f"composites and fallbacks do not apply to the '{key[1]}' "
                    f"layout"))
            raise _LayoutKernel(op, key, fn)
        return fn
    return resolve


def _layout_call(op, fn, out, kwargs):
    """Run a non-strided layout's kernel for a structured op, with autograd left on: the layout
    plugin builds its kernels from differentiable ops, so the graph is recorded by those ops."""
    if out is not None:
        raise NotImplementedError(f"{op.name}(): out= is not supported for the layout of its arguments "
                                  f"(a non-strided layout's kernel allocates its own result)")
    return fn(**kwargs)


def _no_out(op):
    raise RuntimeError(f"{op.name}(): functions with out=... arguments don't support automatic "
                       f"differentiation, but one of the arguments requires grad.")


def _generic_rec(op):
    def rec(result, *args, **kwargs):
        from .autograd._fastpath import generic_recorder
        op.rec = generic_recorder(op)
        return op.rec(result, *args, **kwargs)
    return rec


def _below_autograd(fn):
    """``fn`` (a composite or fallback, which calls other ops) run with autograd recording off."""
    def below(*args, **kwargs):
        with _BELOW:
            return fn(*args, **kwargs)
    return below


def _autocast_hook(op, kw, structured):
    """The generated entry point's autocast lines: only for ops on an autocast list
    (``_autocast_state.HOOKED``), and only for the functional form (PyTorch's autocast does not
    touch ``out=`` or in-place variants). Other ops get no line, so they pay nothing."""
    if op.name not in _autocast_state.HOOKED:
        return ""
    out = " and out is None" if structured else ""
    return f"    if _AC.EVER and _ACS.on{out}:\n        return _autocast(_op, {op.name}, {{{kw}}})\n"


def _autocast_call(op, fn, kwargs):
    from .amp import _policy
    return _policy.call(op, fn, kwargs)


def _autograd_record(op, fn, out, kwargs):
    from .autograd import _record
    return _record.record_call(op, fn, out, kwargs)


def _autograd_record_inplace(op, fn, kwargs):
    from .autograd import _record
    return _record.record_inplace(op, fn, kwargs)


def lookup(name: str) -> OpDef:
    """The OpDef for ``name`` (an overload suffix such as ``add.out`` is accepted)."""
    base = name.split(".")[0]
    try:
        return ops[base]
    except KeyError:
        raise ValueError(f"unknown op '{name}': no op of that name is declared "
                         f"(ember.library.Library.define declares new ones)") from None
