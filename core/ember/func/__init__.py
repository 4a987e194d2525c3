"""ember.func: composable function transforms (matches torch.func).

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap`` and
``functional_call``, with PyTorch's arguments (``argnums``, ``has_aux``, ``in_dims`` / ``out_dims``,
``randomness``), output structures (nested tuples / lists / dicts of tensors) and errors.

How (ember has no functorch levels or batching rules; everything is built on its reverse-mode
autograd and on plain loops, so every ember op works inside every transform):

- Reverse mode (``grad``, ``vjp``, ``jacrev``): the differentiated arguments are replaced by
  tensors that track gradients (a fresh leaf, or a view that stays connected when the argument
  already requires grad), ``function`` runs with grad on and ``autograd.grad`` differentiates it.
  With grad mode on at the call, the graph of the result is kept (``create_graph``), so transforms
  nest (``grad(grad(f))``, ``jacfwd(jacrev(f))``) and compose with ordinary autograd; a result that
  depends on no outside tensor requiring grad is returned detached, as PyTorch's is.
- Forward mode (``jvp``, ``jacfwd``) uses the double-vjp trick: ``u -> vjp(u) = u^T J`` is linear in
  ``u``, so the vjp of that with respect to ``u`` in direction ``v`` is ``J v``. Two backward passes
  per product instead of one forward pass; the values are the same.
- ``vmap`` runs ``function`` once per index of the mapped dimension (``select``) and stacks the
  results at ``out_dims``; closures, in-place updates of the per-sample slices and nested ``vmap`` /
  ``grad`` inside work because every iteration is ordinary eager code. ``randomness="error"``
  raises when a random op runs inside, ``"same"`` replays one random state for every sample,
  ``"different"`` draws on.
"""
from __future__ import annotations

import contextlib
import functools
import threading

from .._tensor import Tensor
from ..autograd import graph as _graph
from ..autograd.grad_mode import enable_grad, is_grad_enabled

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call"]


# ----------------------------------------------------------------------------- pytrees

def _flatten(obj):
    """(leaves, spec): the leaves of nested tuples / lists / dicts, and a spec to rebuild them."""
    leaves = []

    def walk(o):
        if isinstance(o, (tuple, list)):
            return (type(o), [walk(x) for x in o])
        if isinstance(o, dict):
            return (type(o), [(k, walk(v)) for k, v in o.items()])
        leaves.append(o)
        return None
    return leaves, walk(obj)


def _unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, items = s
        if issubclass(kind, dict):
            return kind((k, build(v)) for k, v in items)
        vals = [build(x) for x in items]
        return kind(*vals) if hasattr(kind, "_fields") else kind(vals)
    return build(spec)


def _count(spec):
    """The number of leaves of ``spec``."""
    if spec is None:
        return 1
    kind, items = spec
    return sum(_count(v[1] if issubclass(kind, dict) else v) for v in items)


def _spec_str(spec):
    if spec is None:
        return "*"
    kind, items = spec
    if issubclass(kind, dict):
        return "{" + ", ".join(f"{k!r}: {_spec_str(v)}" for k, v in items) + "}"
    inner = ", ".join(_spec_str(x) for x in items)
    return f"[{inner}]" if kind is list else f"({inner}{',' if len(items) == 1 else ''})"


def _name(f):
    return getattr(f, "__name__", type(f).__name__)


# ----------------------------------------------------------------------------- tracking and results

class _Tracker:
    """Stands differentiated tensors in for the arguments and decides, at the end, what to detach."""

    def __init__(self):
        self.create_graph = is_grad_enabled()
        self.inner = set()                 # the AccumulateGrad nodes of the fresh leaves made here

    def track(self, t):
        if not isinstance(t, Tensor):
            return t
        if t.requires_grad and self.create_graph:
            return t.view_as(t)            # stays connected to the caller's graph
        leaf = t.detach().requires_grad_(True)
        self.inner.add(_graph.accumulator(leaf))
        return leaf

    def _reaches_outside(self, t):
        stack, seen = [t.grad_fn], set()
        while stack:
            n = stack.pop()
            if n is None or n in seen:
                continue
            seen.add(n)
            if isinstance(n, _graph.AccumulateGrad):
                if n not in self.inner:
                    return True
                continue
            stack.extend(e[0] for e in n.next_edges if e is not None)
        return False

    def result(self, t):
        """``t`` as the transform returns it: detached unless it depends on a tensor from outside that
        requires grad (then the caller can differentiate it further)."""
        if not isinstance(t, Tensor) or not t.requires_grad:
            return t
        if t.grad_fn is None:
            return t.detach() if _graph.accumulator(t) in self.inner else t
        return t if self.create_graph and self._reaches_outside(t) else t.detach()


def _aux_leaves(aux):
    """The leaves of ``aux`` (tensors only, as PyTorch) and its spec."""
    leaves, spec = _flatten(aux)
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    return leaves, spec


def _argnums(argnums, nargs):
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) for a in argnums):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return out


def _grads(outputs, inputs, cotangents, create_graph):
    """sum_k cot_k^T d out_k / d inputs (zeros where an input is unused); ``outputs`` may not require grad."""
    from ..autograd import grad as _agrad
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if pairs:
        gs = _agrad([o for o, _ in pairs], inputs, [c for _, c in pairs], retain_graph=True,
                    create_graph=create_graph, allow_unused=True)
    else:
        gs = (None,) * len(inputs)
    return [g if g is not None else x.new_zeros(x.shape) for g, x in zip(gs, inputs)]


# ----------------------------------------------------------------------------- reverse mode

def _split_aux(out, has_aux, who):
    """``(output, aux)`` of ``func``'s result: with ``has_aux`` it must be a pair (RuntimeError otherwise, PyTorch's
    message naming the transform ``who``), else ``(out, None)``."""
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{who}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


def _tensor_leaves(out, who, call):
    """``(leaves, spec)`` of ``out``; RuntimeError (PyTorch's message) when a leaf is not a Tensor."""
    leaves, spec = _flatten(out)
    for o in leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{who}: expected {call} to return only tensors, got unsupported type {type(o)}")
    return leaves, spec


def _run_tracked(func, args, kwargs, argnums, has_aux, who):
    """Call ``func`` with the arguments ``argnums`` replaced by tracked copies (call it with grad on):
    ``(output, aux, {argnum: (tracked leaves, spec)}, tracker)``; ``who`` names the transform in the
    has_aux error (PyTorch's message)."""
    nums = _argnums(argnums, len(args))
    tr = _Tracker()
    args = list(args)
    specs = {}
    for a in nums:
        leaves, spec = _flatten(args[a])
        tracked = [tr.track(x) for x in leaves]
        specs[a] = (tracked, spec)
        args[a] = _unflatten(tracked, spec)
    out, aux = _split_aux(func(*args, **kwargs), has_aux, who)
    return out, aux, specs, tr


def grad_and_value(func, argnums=0, has_aux=False):
    """``func`` -> a function returning ``(gradient, value)`` (or ``((gradient, (value, aux))``): the gradient
    of scalar ``func`` with respect to the arguments at ``argnums`` (matches torch.func.grad_and_value).

    :param argnums: an int or a tuple of ints; the gradient has the structure of that argument (a pytree
        of tensors) or a tuple of them.
    :param has_aux: ``func`` returns ``(output, aux)``; ``aux`` is returned as is (detached).
    :raises RuntimeError: a non-tensor or non-scalar output, a bad ``has_aux`` output, bad ``argnums``
        (PyTorch's messages).
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with enable_grad():
            out, aux, specs, tr = _run_tracked(func, args, kwargs, argnums, has_aux, "grad_and_value(f)(*args)")
            nums = tuple(specs)                # the argnums, in order
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   f"instead?")
            flat = [x for a in nums for x in specs[a][0] if isinstance(x, Tensor)]
            gs = iter(_grads([out], flat, [None], tr.create_graph)) if flat else iter(())
            per_arg = []
            for a in nums:
                tracked, spec = specs[a]
                per_arg.append(_unflatten([tr.result(next(gs)) if isinstance(x, Tensor) else None
                                           for x in tracked], spec))
        g = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        value = tr.result(out)
        if has_aux:
            aux_leaves, aux_spec = _aux_leaves(aux)
            return g, (value, _unflatten([tr.result(x) for x in aux_leaves], aux_spec))
        return g, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``func`` -> its gradient function (matches torch.func.grad): ``grad(f)(x)`` is df/dx for a scalar
    ``f``; with ``has_aux`` it returns ``(gradient, aux)``. Arguments and errors as ``grad_and_value``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        return (g, v[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)`` (plus ``aux`` with ``has_aux``); ``vjp_fn(cotangents)`` returns one
    gradient per primal, ``cotangents`` having the structure of the output (matches torch.func.vjp).
    ``vjp_fn`` may be called several times.

    :raises RuntimeError: an output that is not a (pytree of) tensors; cotangents of another structure or
        shape (PyTorch's messages).
    """
    tr = _Tracker()
    with enable_grad():
        leaves_specs = [_flatten(p) for p in primals]
        tracked = [[tr.track(x) for x in leaves] for leaves, _ in leaves_specs]
        args = [_unflatten(t, spec) for t, (_, spec) in zip(tracked, leaves_specs)]
        out, aux = _split_aux(func(*args), has_aux, "vjp(f, *primals)")
        out_leaves, out_spec = _tensor_leaves(out, "vjp(f, *primals)", "f(*primals)")
    flat_in = [x for t in tracked for x in t if isinstance(x, Tensor)]

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        cot_leaves, cot_spec = _flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {_spec_str(cot_spec)}, primal output: "
                               f"{_spec_str(out_spec)}")
        for i, (c, o) in enumerate(zip(cot_leaves, out_leaves)):
            if not isinstance(c, Tensor) or c.shape != o.shape:
                got = c.shape if isinstance(c, Tensor) else type(c)
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {got} and output[{i}] has a "
                                   f"shape of {o.shape}.")
        cg = tr.create_graph or is_grad_enabled() if create_graph is None else create_graph
        with enable_grad():
            gs = iter(_grads(out_leaves, flat_in, cot_leaves, cg)) if flat_in else iter(())
            res = [_unflatten([tr.result(next(gs)) if isinstance(x, Tensor) else None for x in t], spec)
                   for t, (_, spec) in zip(tracked, leaves_specs)]
        return tuple(res)

    value = _unflatten([tr.result(o) for o in out_leaves], out_spec)
    if has_aux:
        aux_leaves, aux_spec = _aux_leaves(aux)
        return value, vjp_fn, _unflatten([tr.result(x) for x in aux_leaves], aux_spec)
    return value, vjp_fn


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """``func`` -> its Jacobian function by reverse mode, one vjp per output element (matches
    torch.func.jacrev). Each output leaf of shape ``O`` gives, per differentiated argument leaf of shape
    ``I``, a tensor of shape ``O + I`` (a tuple over ``argnums`` when it is a tuple). ``chunk_size`` is
    accepted; the rows are computed one at a time whatever it is.

    :raises RuntimeError: bad ``argnums``, non-tensor outputs, bad ``has_aux`` output.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with enable_grad():
            out, aux, specs, tr = _run_tracked(func, args, kwargs, argnums, has_aux, "jacrev(f, ...)(*args)")
            nums = tuple(specs)                # the argnums, in order
            out_leaves, out_spec = _tensor_leaves(out, "vjp(f, *primals)", "f(*primals)")
            flat_in = [x for a in nums for x in specs[a][0]]
            from .._ops._shape import stack
            jac_leaves = []
            for o in out_leaves:
                flat_o = o.reshape(-1)
                rows = []
                for j in range(flat_o.numel()):
                    rows.append(_grads([flat_o[j]], flat_in, [None], tr.create_graph) if flat_in else [])
                per_in = []
                for k, x in enumerate(flat_in):
                    if rows:
                        block = stack([r[k] for r in rows]).reshape(tuple(o.shape) + tuple(x.shape))
                    else:
                        block = x.new_zeros(tuple(o.shape) + tuple(x.shape))
                    per_in.append(tr.result(block))
                it = iter(per_in)
                per_arg = [_unflatten([next(it) for _ in specs[a][0]], specs[a][1]) for a in nums]
                jac_leaves.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = _unflatten(jac_leaves, out_spec)
        if has_aux:
            aux_leaves, aux_spec = _aux_leaves(aux)
            return jac, _unflatten([tr.result(x) for x in aux_leaves], aux_spec)
        return jac
    return wrapper


# ----------------------------------------------------------------------------- forward mode (double vjp)

def _jvp_flat(outs, ins, tangents, create_graph):
    """J v for flat lists: the vjp of ``u -> u^T J`` (linear in ``u``) with respect to ``u`` in direction v."""
    us = [o.new_zeros(o.shape).requires_grad_(True) for o in outs]
    with enable_grad():
        ujs = _grads(outs, ins, us, True)
        pairs = [(g, t) for g, t in zip(ujs, tangents) if g.requires_grad]
        if not pairs:
            return [o.new_zeros(o.shape) for o in outs]
        return _grads_wrt([g for g, _ in pairs], us, [t for _, t in pairs], create_graph)


def _grads_wrt(outputs, inputs, cotangents, create_graph):
    from ..autograd import grad as _agrad
    gs = _agrad(outputs, inputs, cotangents, retain_graph=True, create_graph=create_graph, allow_unused=True)
    return [g if g is not None else x.new_zeros(x.shape) for g, x in zip(gs, inputs)]


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)`` (plus ``aux`` with ``has_aux``) (matches torch.func.jvp).

    Computed with the double-vjp trick (ember has no forward-mode formulas): two reverse passes, the same
    values as forward mode. ``strict`` is accepted (PyTorch raises NotImplementedError for True).

    :raises RuntimeError: ``primals`` / ``tangents`` not tuples of the same structure, a tangent of another
        shape, non-tensor outputs (PyTorch's messages).
    """
    if strict:
        raise RuntimeError("jvp(f, primals, tangents, strict=True): strict=True is not implemented")
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, tuple):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected {what} to be a tuple. E.g. it should be valid "
                               f"to call f(*primals).")
    p_leaves, p_spec = _flatten(primals)
    t_leaves, t_spec = _flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {_spec_str(p_spec)} and tangents with structure "
                           f"{_spec_str(t_spec)}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to only contain Tensors")
        if p.shape != t.shape:
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while the "
                               f"given forward gradient is of size {list(t.shape)}.")
    tr = _Tracker()
    with enable_grad():
        tracked = [tr.track(p) for p in p_leaves]
        out, aux = _split_aux(func(*_unflatten(tracked, p_spec)), has_aux, "jvp(f, primals, tangents)")
        out_leaves, out_spec = _tensor_leaves(out, "jvp(f, primals, tangents)", "f(*primals)")
        tang = _jvp_flat(out_leaves, tracked, t_leaves, tr.create_graph)
    res = (_unflatten([tr.result(o) for o in out_leaves], out_spec),
           _unflatten([tr.result(t) for t in tang], out_spec))
    if has_aux:
        aux_leaves, aux_spec = _aux_leaves(aux)
        return res + (_unflatten([tr.result(x) for x in aux_leaves], aux_spec),)
    return res


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``func`` -> its Jacobian function by forward mode: one jvp (double vjp) per input element (matches
    torch.func.jacfwd; same output structure as ``jacrev``). ``randomness`` as for ``vmap``.

    :raises RuntimeError: bad ``argnums``, non-tensor outputs, bad ``has_aux`` output, bad ``randomness``.
    """
    _check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        tr = _Tracker()
        with enable_grad():
            args = list(args)
            specs = {}
            for a in nums:
                leaves, spec = _flatten(args[a])
                tracked = [tr.track(x) for x in leaves]
                specs[a] = (tracked, spec)
                args[a] = _unflatten(tracked, spec)
            with _randomness(randomness):
                out, aux = _split_aux(func(*args, **kwargs), has_aux, "jacfwd(f, ...)(*args)")
            out_leaves, out_spec = _tensor_leaves(out, "jvp(f, primals, tangents)", "f(*primals)")
            flat_in = [x for a in nums for x in specs[a][0]]
            from .._ops._shape import stack
            # columns[k][i]: d out_i / d (input k, flattened) as a list of per-element jvps
            blocks = [[None] * len(flat_in) for _ in out_leaves]
            for k, x in enumerate(flat_in):
                cols = []
                for j in range(x.numel()):
                    e = x.new_zeros(x.numel())
                    e[j] = 1
                    tangents = [e.reshape(x.shape) if m == k else y.new_zeros(y.shape) for m, y in enumerate(flat_in)]
                    cols.append(_jvp_flat(out_leaves, flat_in, tangents, tr.create_graph))
                for i, o in enumerate(out_leaves):
                    if cols:
                        b = stack([c[i].reshape(-1) for c in cols], dim=-1)
                    else:
                        b = o.new_zeros((o.numel(), 0))
                    blocks[i][k] = tr.result(b.reshape(tuple(o.shape) + tuple(x.shape)))
            jac_leaves = []
            for i in range(len(out_leaves)):
                it = iter(blocks[i])
                per_arg = [_unflatten([next(it) for _ in specs[a][0]], specs[a][1]) for a in nums]
                jac_leaves.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = _unflatten(jac_leaves, out_spec)
        if has_aux:
            aux_leaves, aux_spec = _aux_leaves(aux)
            return jac, _unflatten([tr.result(x) for x in aux_leaves], aux_spec)
        return jac
    return wrapper


def hessian(func, argnums=0):
    """``func`` -> its Hessian function, ``jacfwd(jacrev(func, argnums), argnums)`` (matches
    torch.func.hessian): shape ``O + I + I`` for an output of shape ``O`` and an input of shape ``I``."""
    return jacfwd(jacrev(func, argnums), argnums)


# ----------------------------------------------------------------------------- vmap

_RANDOMNESS = ("error", "different", "same")


def _check_randomness(randomness):
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")


def _random_error():
    raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the 'same' "
                       "or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


@contextlib.contextmanager
def _randomness(mode):
    """Random ops inside raise (``"error"``) or draw (otherwise)."""
    from .. import _random_state
    prev = _random_state.on_draw
    owner = threading.get_ident()

    def on_draw():
        if threading.get_ident() == owner:
            if mode == "error":
                _random_error()
        elif prev is not None:          # another thread's vmap
            prev()
    _random_state.on_draw = on_draw
    try:
        yield
    finally:
        _random_state.on_draw = prev


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` -> a function mapped over a dimension of its inputs (matches torch.func.vmap).

    :param in_dims: an int / None, or a (nested) tuple with the structure of the positional arguments:
        the dimension of each tensor mapped over (None: passed whole to every call). Keyword arguments
        are never mapped.
    :param out_dims: an int / None or a tuple per output: where the mapped dimension goes.
    :param randomness: ``"error"`` (random ops inside raise RuntimeError), ``"different"`` (each sample
        draws its own numbers), ``"same"`` (every sample draws the same numbers).
    :param chunk_size: accepted; samples run one at a time whatever it is.
    :returns: the outputs of ``func`` stacked along ``out_dims``.
    :raises ValueError: no inputs / no tensor to map, in_dims or out_dims of the wrong structure or out of
        range, mapped sizes that differ, a non-tensor output with an out_dim (PyTorch's messages).
    :raises RuntimeError: an unknown ``randomness``; a random op with ``randomness="error"``.
    """
    _check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0) and chunk_size != -1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = _name(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not isinstance(in_dims, (int, tuple)):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                             f"trying to vmap over a function with no inputs. The latter is unsupported.")
        leaves, spec = _flatten(args)
        dims = _broadcast_dims(in_dims, args, spec, name)
        sizes, norm = [], []
        for x, d in zip(leaves, dims):
            if d is None:
                norm.append(None)
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                                 f"in_dim must be either an integer dimension or None.")
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                                 f"the input is of type {type(x)}. We cannot vmap over non-Tensor arguments, please "
                                 f"use None as the respective in_dim")
            n = x.dim()
            if not -n <= d < n:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                                 f"but that input is a Tensor of dimensionality {n} so expected in_dim to satisfy "
                                 f"-{n} <= in_dim < {n}.")
            norm.append(d % n)
            sizes.append(x.shape[d % n])
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        from .. import _random_state
        start_state = _random_state.get_rng_state() if randomness == "same" else None
        results = []
        with _randomness(randomness):
            for b in range(sizes[0]):
                if start_state is not None:
                    _random_state.set_rng_state(start_state)
                sample = [x if d is None else x.select(d, b) for x, d in zip(leaves, norm)]
                results.append(func(*_unflatten(sample, spec), **kwargs))
        return _stack_outputs(results, out_dims, name)
    return wrapper


def _broadcast_dims(in_dims, args, spec, name):
    """One in_dim per leaf of ``args``; ValueError when a tuple in_dims does not fit the structure."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(_flatten(args)[0])
    if len(in_dims) != len(args):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {_spec_str(_flatten(in_dims)[1])} but inputs "
                         f"has structure {_spec_str(spec)}.")
    out = []
    for d, a in zip(in_dims, args):
        n = len(_flatten(a)[0])
        if isinstance(d, (tuple, list, dict)):
            d_leaves, d_spec = _flatten(d)
            if d_spec != _flatten(a)[1]:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                                 f"structure of `inputs`. in_dims has structure {_spec_str(_flatten(in_dims)[1])} but "
                                 f"inputs has structure {_spec_str(spec)}.")
            out.extend(d_leaves)
        else:
            out.extend([d] * n)
    return out


def _stack_outputs(results, out_dims, name):
    from .._ops._shape import stack
    leaves0, spec = _flatten(results[0])
    per_sample = [_flatten(r)[0] for r in results]
    if isinstance(out_dims, int) or out_dims is None:
        dims = [out_dims] * len(leaves0)
    elif isinstance(out_dims, tuple):
        if spec is None or len(out_dims) != len(spec[1]):
            if len(out_dims) == 1 and spec is None:
                dims = [out_dims[0]]
            else:
                raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                                 f"the structure of `outputs`. out_dims has structure "
                                 f"{_spec_str(_flatten(out_dims)[1])} but outputs has structure {_spec_str(spec)}.")
        else:
            dims = []
            for d, sub in zip(out_dims, spec[1]):
                dims.extend([d] * _count(sub[1] if issubclass(spec[0], dict) else sub))
    else:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         f"collection of ints representing where in the outputs the vmapped dimension should appear.")
    out = []
    for k, d in enumerate(dims):
        vals = [p[k] for p in per_sample]
        if d is None:
            out.append(vals[0])
            continue
        if not isinstance(vals[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(vals[0])}. "
                             f"Did you mean to set out_dims= to None for output?")
        n = vals[0].dim() + 1
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        out.append(stack(vals, dim=d))
    return _unflatten(out, spec)


# ----------------------------------------------------------------------------- functional_call

def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call ``module`` with its parameters and buffers replaced by the tensors of
    ``parameter_and_buffer_dicts`` (a dict, or a tuple of dicts, keyed by ``named_parameters`` /
    ``named_buffers`` names) for this call only (matches torch.func.functional_call).

    :param args: the positional argument(s) (a non-tuple is one argument).
    :param tie_weights: a tensor tied under several names (the same Parameter) is replaced under all of them.
    :param strict: every parameter and buffer must be given, and no other name (RuntimeError otherwise).
    :raises ValueError: a name given in two dicts.
    :raises RuntimeError: missing / unexpected keys with ``strict=True``.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = dict(parameter_and_buffer_dicts)
    else:
        values = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in values:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is "
                                     f"ambiguous")
                values[k] = v
    originals = {}
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for kind in ("_parameters", "_buffers"):
            for n, t in getattr(mod, kind).items():
                originals[(prefix + "." if prefix else "") + n] = (mod, kind, n, t)
    if strict:
        missing = [k for k in originals if k not in values]
        unexpected = [k for k in values if k not in originals]
        if missing or unexpected:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:"
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(repr(k) for k in missing) + "."
            raise RuntimeError(msg)
    if tie_weights:
        by_id = {}
        for k, (_, _, _, t) in originals.items():
            if t is not None:
                by_id.setdefault(id(t), []).append(k)
        for k in list(values):
            if k in originals and originals[k][3] is not None:
                for other in by_id.get(id(originals[k][3]), ()):
                    values.setdefault(other, values[k])
    swapped = []
    try:
        for k, v in values.items():
            if k in originals:
                mod, kind, n, old = originals[k]
                getattr(mod, kind)[n] = v
                swapped.append((mod, kind, n, old))
            else:
                *path, n = k.split(".")
                mod = module.get_submodule(".".join(path)) if path else module
                had = n in mod.__dict__
                old = mod.__dict__.get(n)
                object.__setattr__(mod, n, v)
                swapped.append((mod, None, n, (had, old)))
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for mod, kind, n, old in reversed(swapped):
            if kind is None:
                had, prev = old
                if had:
                    object.__setattr__(mod, n, prev)
                else:
                    object.__delattr__(mod, n)
            else:
                getattr(mod, kind)[n] = old


# ---------------------------------------------------------------- linearize, ensembling helpers, debug_unwrap
def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector product of ``func`` at
    ``primals`` (matches torch.func.linearize). ``jvp_fn`` re-derives the product with ``jvp`` (the double-vjp
    trick) at each call rather than keeping a linearised graph: the same values, more compute.

    :raises RuntimeError: as ``jvp`` for tangents of the wrong structure or shape."""
    output = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def stack_module_state(models):
    """``(params, buffers)``: for ``M`` modules of one class, each parameter and buffer stacked along a new
    leading dim of size ``M``, keyed by name (matches torch.func.stack_module_state). Stacked parameters are
    new leaves that require grad when the originals do.

    :raises RuntimeError: no models, models of different classes, or in different training modes."""
    import ember
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        out = {}
        for name, t in named(models[0]):
            s = ember.stack([dict(named(m))[name].detach() for m in models])
            out[name] = s.requires_grad_(t.requires_grad) if t.is_floating_point() or t.is_complex() else s
        return out
    return (stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers()))


def replace_all_batch_norm_modules_(root):
    """Make every BatchNorm of ``root`` use batch statistics only: ``running_mean`` / ``running_var`` None and
    ``track_running_stats`` False, in place; returns ``root`` (matches
    torch.func.replace_all_batch_norm_modules_)."""
    from ..nn.modules.batchnorm import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse=True):
    """``tensor`` itself: ember's transforms (vmap is a loop, grad is the autograd engine) never wrap tensors
    (matches torch.func.debug_unwrap on an unwrapped tensor)."""
    return tensor


__all__ += ["linearize", "stack_module_state", "replace_all_batch_norm_modules_", "debug_unwrap", "rearrange"]

from ._rearrange import rearrange  # noqa: E402
