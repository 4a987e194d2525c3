"""Splitting a compiled function at the statement that broke its capture (docs/compile.md, "Host reads").

ember captures at the dispatcher, not the bytecode, so it cannot stop a function's frame at a host read and
resume it later. It can cut the function's *source* instead: when a capture breaks inside top-level
statement ``i`` of a plain function's body (``i > 0``), three functions are generated from its AST:

- ``prefix(<the original parameters>)``: statements ``0..i-1``, then ``return locals()``; compiled (a
  ``CompiledFunction`` with the original's settings), so it is captured and replayed like any compiled function;
- ``brk(env)``: restores the names it uses from ``env``, runs statement ``i`` eagerly (its ``return X`` rewritten
  to ``return (True, X)``) and returns ``(False, locals())``;
- ``rest(env)``: restores the names it uses, runs statements ``i+1..`` with their own ``return``s; compiled too,
  so a break in it splits again (up to ``MAX_SEGMENTS`` segments). A rest that calls nothing (``return v``) runs
  as it is; one whose final ``return`` alone uses a name the break statement bound (``v = loss.item(); ...;
  return v``: a new number each call, which would make every call a new signature of the rest) is cut before
  that ``return`` at once.

Each segment gets only the names it mentions; a segment called with tensors that require grad and have a
``grad_fn`` (a break between forward and backward) runs eagerly, as their identity would be a new signature
each call.

The generated functions are compiled in the original's file, with its line numbers, and built with
``types.FunctionType`` on the original's globals and its closure *cells* (not their values), so they see rebound
globals and closure variables live. A function that cannot be split (no source, a lambda, ``global`` /
``nonlocal`` / ``yield`` / ``await``, a ``return`` before the break, a nested function closing over its locals,
a break in its first statement or outside its own code) keeps the old behaviour: that signature runs eagerly,
and the reason says why it was not split.
"""
from __future__ import annotations

import ast
import copy
import inspect
import types

from ._capture import _EMBER_DIR
from . import _compiled      # (imports this module: its names are read at call time)

#: the most segments one compiled function is cut into (later breaks run their segment eagerly)
MAX_SEGMENTS = 8
_ENV = "_ember_env_"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_NOT_GENERATOR = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | \
    inspect.CO_ASYNC_GENERATOR


class _Source:
    """A function as the splitter sees it: the function (whose code object a break's stack shows), its
    definition's AST (original line numbers), the statements a split may cut, and the original function it
    comes from (globals, closure cells, local names)."""
    __slots__ = ("func", "owner", "args", "body", "root", "local_names", "depth")

    def __init__(self, func, owner, args, body, root, local_names, depth):
        self.func, self.owner, self.args, self.body = func, owner, args, body
        self.root, self.local_names, self.depth = root, local_names, depth


def _own_nodes(stmts):
    """Every AST node of ``stmts`` in the function's own scope (not inside nested defs, lambdas, classes)."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        stack.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _SCOPES))


def _bound_names(stmts):
    """The names ``stmts`` mention or bind (a superset of what they read or write)."""
    out = set()
    for n in (m for s in stmts for m in ast.walk(s)):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
    return out


def describe(fn):
    """``(_Source, None)`` for a plain function that could be split, else ``(None, why not)``."""
    owner, func = (fn.__self__, fn.__func__) if inspect.ismethod(fn) else (None, fn)
    if not isinstance(func, types.FunctionType):
        return None, "not a plain Python function"
    code = func.__code__
    if func.__name__ == "<lambda>":
        return None, "a lambda has no statements to split between"
    if code.co_flags & _NOT_GENERATOR:
        return None, "a generator or coroutine"
    if code.co_filename.startswith(_EMBER_DIR):
        return None, "ember's own code"
    if code.co_cellvars:
        return None, (f"a nested function closes over its local {code.co_cellvars[0]!r} (the segments would "
                      f"not share it)")
    if "__class__" in code.co_freevars:
        return None, "it uses zero-argument super()"
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return None, "its source is not available (defined by exec or in an interactive session)"
    src = "".join(lines)
    shift = first - 1
    if src[:1] in (" ", "\t"):             # an indented def (a method, a nested function): keep its columns
        src, shift = "if 1:\n" + src, first - 2
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return None, "its source could not be parsed on its own"
    node = tree.body[0]
    if isinstance(node, ast.If):
        node = node.body[0]
    if not isinstance(node, ast.FunctionDef) or node.name != func.__name__:
        return None, "its source is not a def statement"
    ast.increment_lineno(node, shift)
    if node.lineno > code.co_firstlineno + len(lines) or node.end_lineno < code.co_firstlineno:
        return None, "its source does not match its code"
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
            isinstance(body[0].value.value, str):
        body = body[1:]                     # the docstring
    for n in _own_nodes(body):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            return None, f"it declares {'global' if isinstance(n, ast.Global) else 'nonlocal'} names (line {n.lineno})"
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return None, f"a generator or coroutine (line {n.lineno})"
        if isinstance(n, ast.Name) and n.id in ("locals", "vars", "eval", "exec"):
            return None, f"it calls {n.id}() (line {n.lineno}), which would see the segments' own locals"
    local_names = frozenset(code.co_varnames[:code.co_nlocals])
    return _Source(func, owner, node.args, body, func, local_names, 1), None


def _restore(names, lineno):
    """``if 'n' in _ember_env_: n = _ember_env_['n']`` for each name, at ``lineno``."""
    text = "".join(f"if {n!r} in {_ENV}: {n} = {_ENV}[{n!r}]\n" for n in sorted(names))
    stmts = ast.parse(text).body
    for s in stmts:
        _place(s, lineno)
    return stmts


def _place(tree, lineno):
    for n in ast.walk(tree):
        if "lineno" in n._attributes:
            n.lineno = n.end_lineno = lineno
            n.col_offset = n.end_col_offset = 0


class _ReturnDone(ast.NodeTransformer):
    """``return X`` -> ``return (True, X)`` in the function's own scope."""

    def visit_Return(self, node):
        """``return X`` (or a bare ``return``) as ``return (True, X)``: the resume function ended the call."""
        value = node.value if node.value is not None else ast.Constant(None)
        new = ast.Return(ast.Tuple([ast.Constant(True), value], ast.Load()))
        return ast.copy_location(new, node)

    def _skip(self, node):
        return node
    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _skip


def _def(name, args, body, lineno):
    """``def name(args): body`` placed at ``lineno`` (the statements in ``body`` keep their own lines)."""
    fd = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, type_comment=None)
    fd.lineno = fd.end_lineno = lineno
    fd.col_offset = fd.end_col_offset = 0
    return fd


def _env_args():
    return ast.arguments(posonlyargs=[], args=[ast.arg(_ENV)], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


def _lines(stmts):
    """"a-b", the lines of ``stmts`` ("a" for one line; "" for none)."""
    if not stmts:
        return ""
    a, b = stmts[0].lineno, stmts[-1].end_lineno
    return f"{a}-{b}" if b != a else f"{a}"


def _build(src, i):
    """The (prefix, brk, rest) functions of ``src`` cut at body statement ``i`` (rest is None when ``i`` is the
    last statement), each a ``types.FunctionType`` on the root function's globals and closure cells."""
    root = src.root
    top = src.body[0].lineno
    body = [copy.deepcopy(s) for s in src.body]
    ret = ast.parse("return locals()").body[0]
    _place(ret, body[i - 1].end_lineno)
    prefix_names = _bound_names(body[:i]) & src.local_names
    preamble = _restore(prefix_names, top) if src.depth > 1 else []     # a segment's names come in its env
    prefix = _def(root.__name__, copy.deepcopy(src.args), preamble + body[:i] + [ret], top)
    brk_names = _bound_names(body[i:i + 1]) & src.local_names
    tail = ast.parse("return (False, locals())").body[0]
    _place(tail, body[i].end_lineno)
    stmt = _ReturnDone().visit(body[i])
    brk = _def(root.__name__, _env_args(), _restore(brk_names, body[i].lineno) + [stmt, tail], body[i].lineno)
    defs = [prefix, brk]
    rest_names = ()
    if i + 1 < len(body):
        rest_names = _bound_names(body[i + 1:]) & src.local_names
        preamble = _restore(rest_names, body[i + 1].lineno)
        defs.append(_def(root.__name__, _env_args(), preamble + body[i + 1:], body[i + 1].lineno))
    free = root.__code__.co_freevars
    head = []
    if free:                                 # declared as the wrapper's locals: the segments get them as free vars
        head = ast.parse(" = ".join(free) + " = None").body
        for s in head:
            _place(s, top)
    wrap = _def("__ember_wrap__", _env_args(), head + defs + [ast.Return(ast.Constant(None))], top)
    _place(wrap.body[-1], top)
    mod = ast.Module(body=[wrap], type_ignores=[])
    ast.fix_missing_locations(mod)
    code = compile(mod, root.__code__.co_filename, "exec")
    wrap_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = [c for c in wrap_code.co_consts if isinstance(c, types.CodeType)]
    cells = dict(zip(free, root.__closure__ or ()))
    seg_lines = {"prefix": src.body[:i], "break": src.body[i:i + 1], "rest": src.body[i + 1:]}
    fns = []
    for kind, c in zip(("prefix", "break", "rest"), inner):
        f = types.FunctionType(c, root.__globals__, root.__name__,
                               root.__defaults__ if kind == "prefix" and src.depth == 1 else None,
                               tuple(cells[n] for n in c.co_freevars))
        if kind == "prefix" and src.depth == 1:
            f.__kwdefaults__ = root.__kwdefaults__
        f.__qualname__ = f"{root.__qualname__}[{kind} {_lines(seg_lines[kind])}]"
        f.__module__ = root.__module__
        fns.append(f)
    if len(fns) == 2:
        fns.append(None)
    return fns, prefix_names, brk_names, frozenset(rest_names)


class Split:
    """One signature's call cut at a break: ``prefix`` (compiled) -> the break's statement (eager) -> ``rest``
    (compiled; a ``Split`` cut before its final ``return``; a plain function when it has nothing to capture; None
    when the break is in the last statement)."""

    def __init__(self, where, index, prefix, brk, rest, lines, env_in, prefix_names, brk_names, rest_names):
        self.where = where                   # "file:line" of the host read that broke the capture (None: pre-cut)
        self.index = index                   # the statement's index in the body
        self.prefix, self.brk, self.rest = prefix, brk, rest
        self.lines = lines                   # {"prefix": "a-b", "break": "c-d", "rest": "e-f"}
        self.env_in = env_in                 # the function cut is itself a rest segment: called with its env
        self.prefix_names, self.brk_names, self.rest_names = prefix_names, brk_names, rest_names
        self.calls = 0
        self.eager_calls = {"prefix": 0, "rest": 0}   # segment calls run eagerly: they got tensors requiring grad

    def __call__(self, args, kwargs):
        self.calls += 1
        if self.env_in:                      # a rest segment: its prefix gets the names it uses, nothing more
            env = dict(args[0])
            _merge(env, self._run("prefix", {n: env[n] for n in self.prefix_names if n in env}), self.prefix_names)
        else:
            env = {}
            _merge(env, self.prefix(*args, **kwargs), None)
        done, out = self.brk(env)
        if done:
            return out
        _merge(env, out, self.brk_names)
        if self.rest is None:
            return None
        renv = {n: env[n] for n in self.rest_names if n in env}
        if isinstance(self.rest, Split):
            return self.rest((renv,), {})
        if not isinstance(self.rest, _compiled.CompiledFunction):      # nothing in it to capture
            return self.rest(renv)
        return self._run("rest", renv)

    def _run(self, kind, env):
        """The compiled segment ``kind`` called with ``env``; eagerly when ``env`` holds tensors that require grad
        (a break between forward and backward): guarded by identity, they would make every call a new signature."""
        seg = getattr(self, kind)
        if _needs_autograd(env):
            self.eager_calls[kind] += 1
            return seg.fn(env)
        return seg(env)

    def info(self):
        """The segments and their own graphs (``CompiledFunction.info()`` rows)."""
        segs = [{"segment": "prefix", "lines": self.lines["prefix"], "graphs": self.prefix.info(),
                 "eager_calls": self.eager_calls["prefix"]},
                {"segment": "break", "lines": self.lines["break"], "at": self.where, "calls": self.calls,
                 "runs": "eagerly"}]
        rest = {"segment": "rest", "lines": self.lines["rest"]}
        if isinstance(self.rest, Split):
            segs.append(dict(rest, graphs=[], split=self.rest.info(),
                             runs="cut before its final return, which reads values read on the host"))
        elif isinstance(self.rest, _compiled.CompiledFunction):
            segs.append(dict(rest, graphs=self.rest.info(), eager_calls=self.eager_calls["rest"]))
        elif self.rest is not None:
            segs.append(dict(rest, graphs=[], eager_calls=self.calls,
                             runs="eagerly (no call or operator in it: nothing to capture)"))
        return {"at": self.where, "statement": self.index, "segments": segs}


def _merge(env, seg_locals, names):
    """``env`` updated with a segment's locals: what it bound or rebound, without what it deleted (``names``
    None: all of them - the original function's prefix, whose locals are its whole environment)."""
    if names is None:
        env.update(seg_locals)
        env.pop(_ENV, None)
        return
    for n in names:
        if n in seg_locals:
            env[n] = seg_locals[n]
        else:
            env.pop(n, None)


def _trivial(stmts):
    """True when ``stmts`` call nothing and apply no operator (``return value, loss``): no kernel to capture."""
    busy = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Subscript, ast.Attribute, ast.AugAssign,
            ast.For, ast.While, ast.With, ast.Try, ast.If, ast.IfExp, ast.comprehension, ast.FormattedValue,
            ast.Raise, ast.Assert, ast.Delete, ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Lambda)
    return not any(isinstance(n, busy) for s in stmts for n in ast.walk(s))


def _needs_autograd(env):
    from .._tensor import Tensor
    leaves = []
    _compiled._flatten(env, leaves)
    return any(isinstance(t, Tensor) and t._requires_grad and t._grad_fn is not None for t in leaves)


def split_at_break(cf, graph):
    """``(Split, None)``: ``cf``'s function cut at the statement holding ``graph``'s first break (built once per
    statement and compiled function), or ``(None, why it cannot be)``."""
    src = getattr(cf, "_split_source", None)
    if src is None:
        src, why = describe(cf.fn)
        if src is None:
            return None, why
    if src.depth + 1 > MAX_SEGMENTS:
        return None, f"the function is already cut into {MAX_SEGMENTS} segments"
    where = graph.breaks[0][1]
    code = src.func.__code__
    lines = [ln for c, ln in graph.break_stack if c is code]
    if not lines:
        return None, f"the break at {where} is outside {src.root.__qualname__}'s own code"
    line = lines[-1]                         # the outermost call of the function (it may recurse)
    i = next((k for k, s in enumerate(src.body) if s.lineno <= line <= s.end_lineno), None)
    if i is None:
        return None, f"the break at line {line} is outside the function's statements"
    if i == 0:
        return None, (f"the break is in the {'function' if src.depth == 1 else 'segment'}'s first statement "
                      f"(lines {_lines(src.body[:1])}; a loop or a block is not cut inside): nothing before it to "
                      f"replay")
    for n in _own_nodes(src.body[:i]):
        if isinstance(n, ast.Return):
            return None, f"a return statement (line {n.lineno}) comes before the break"
    splits = cf.__dict__.setdefault("_splits", {})
    if i not in splits:
        settings = dict(fullgraph=cf.fullgraph, dynamic=cf.dynamic, mode=cf.mode, backend=cf.backend)
        try:
            splits[i] = _make(src, i, where, settings)
        except (SyntaxError, ValueError, TypeError, KeyError) as err:
            return None, f"the segments could not be generated ({err})"
    return splits[i], None


def _make(src, i, where, settings):
    """The ``Split`` of ``src`` at body statement ``i``: its segments generated and compiled."""
    (prefix, brk, rest), prefix_names, brk_names, rest_names = _build(src, i)
    p_cf = _compiled.CompiledFunction(types.MethodType(prefix, src.owner) if src.owner is not None else prefix,
                                      **settings)
    body = src.body[i + 1:]
    r_seg = rest
    if rest is not None and not _trivial(body):
        r_src = _Source(rest, None, _env_args(), body, src.root, src.local_names, src.depth + 1)
        late = brk_names & _bound_names(body[-1:]) - _bound_names(body[:-1])
        if len(body) > 1 and isinstance(body[-1], ast.Return) and late and r_src.depth + 1 <= MAX_SEGMENTS:
            # `v = loss.item(); ...; return v`: a value read on the host that only the final return uses would
            # make the compiled rest a new signature on every call; cut the rest before that return instead
            r_seg = _make(r_src, len(body) - 1, None, settings)
        else:
            r_seg = _compiled.CompiledFunction(rest, **settings)
            r_seg._split_source = r_src
    for seg in (p_cf, r_seg):
        if isinstance(seg, _compiled.CompiledFunction):
            seg.name = seg.fn.__qualname__
            _compiled._REGISTRY.discard(seg)           # reported inside the split function's rows
    lines = {"prefix": _lines(src.body[:i]), "break": _lines(src.body[i:i + 1]), "rest": _lines(body)}
    return Split(where, i, p_cf, brk, r_seg, lines, src.depth > 1, prefix_names, brk_names, rest_names)
