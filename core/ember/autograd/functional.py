"""Higher-level differentiation: jacobian, hessian, vjp, jvp, hvp, vhp
(matches torch.autograd.functional: arguments, output structure, ``strict`` and error
messages; reverse mode only — ``jvp`` and ``hvp`` use the double-backward trick).

A Tensor given where PyTorch accepts "a Tensor or a tuple of Tensors" gives Tensor
results; a tuple gives tuples (nested for several inputs and outputs). Gradients that
do not depend on an input are zeros, or a RuntimeError with ``strict=True``.
"""
from __future__ import annotations

from .._tensor import Tensor
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _pack(x, what, fn):
    """(was a tuple, tuple of Tensors); TypeError in PyTorch's words for anything else."""
    packed = isinstance(x, tuple)
    xs = x if packed else (x,)
    for i, el in enumerate(xs):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if packed else f"the given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but {where} "
                            f"has type {type(el)}.")
    return packed, xs


def _unpack(xs, packed):
    return xs if packed else xs[0]


def _leaves(inputs, create_graph):
    """Tensors to differentiate with respect to: the caller's graph is kept only with create_graph."""
    return tuple(x.view_as(x) if create_graph and x._requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def _finish(xs, create_graph):
    return tuple(x if create_graph else x.detach() for x in xs)


def _check_v(v, refs, packed, fn, none_msg):
    """``v`` as a tuple matching ``refs`` (count and sizes); RuntimeError otherwise."""
    if v is None:
        if len(refs) != 1 or refs[0].numel() != 1:
            raise RuntimeError(none_msg)
        return (refs[0].new_ones(refs[0].shape),)
    _, vs = _pack(v, "v", fn)
    if len(vs) != len(refs):
        if packed:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(refs)} but got {len(vs)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(vs, refs)):
        if a.shape != b.shape:
            pre = f"Entry {i} in " if packed else ""
            raise RuntimeError(f"{pre}v has invalid size: should be {b.size()} but got {a.size()}.")
    return vs


def _strict_outputs(outputs, strict):
    if strict:
        for i, o in enumerate(outputs):
            if not o._requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                                   f"outputs must be computed in a differentiable manner from the input when running "
                                   f"in strict mode.")


def _vjp(outputs, wrt, vs, create_graph, strict, independent_msg):
    """sum_k v_k^T d outputs_k / d wrt, zeros (or a strict error) where independent."""
    from . import grad
    pairs = [(o, v) for o, v in zip(outputs, vs) if o._requires_grad]
    gs = grad([o for o, _ in pairs], wrt, [v for _, v in pairs], create_graph=create_graph, retain_graph=True,
              allow_unused=True) if pairs else (None,) * len(wrt)
    out = []
    for i, (x, g) in enumerate(zip(wrt, gs)):
        if g is None:
            if strict:
                raise RuntimeError(independent_msg.format(i=i))
            from .._ops._creation import zeros_like
            g = zeros_like(x)
        out.append(g)
    return tuple(out)


_INDEPENDENT = "The output of the user-provided function is independent of input {i}. This is not allowed in strict " \
               "mode."


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product (``v`` may be None for a one-element output)."""
    with enable_grad():
        in_packed, ins = _pack(inputs, "inputs", "vjp")
        ins = _leaves(ins, create_graph)
        out_packed, outs = _pack(func(*ins), "outputs of the user-provided function", "vjp")
        _strict_outputs(outs, strict)
        vs = _check_v(v, outs, out_packed, "vjp", "The vector v can only be None if the user-provided function "
                      "returns a single Tensor with a single element.")
        res = _vjp(outs, ins, vs, create_graph, strict, _INDEPENDENT)
    return _unpack(_finish(outs, create_graph), out_packed), _unpack(_finish(res, create_graph), in_packed)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, as the vjp of a vjp (which is linear in its
    vector ``u``, so d(u^T J v)/du = J v)."""
    from .._ops._creation import zeros_like
    with enable_grad():
        in_packed, ins = _pack(inputs, "inputs", "jvp")
        ins = _leaves(ins, create_graph)
        vs = _check_v(v, ins, in_packed, "jvp", "The vector v can only be None if the input to the user-provided "
                      "function is a single Tensor with a single element.")
        out_packed, outs = _pack(func(*ins), "outputs of the user-provided function", "jvp")
        _strict_outputs(outs, strict)
        us = tuple(zeros_like(o).requires_grad_(True) for o in outs)
        ujs = _vjp(outs, ins, us, True, strict, _INDEPENDENT)
        res = _vjp(ujs, us, vs, create_graph, False, "")
    return _unpack(_finish(outs, create_graph), out_packed), _unpack(_finish(res, create_graph), out_packed)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: entry [i][j] has shape outputs[i].shape + inputs[j].shape
    (a single Tensor for one input and one output)."""
    if strategy != "reverse-mode":
        raise NotImplementedError("ember.autograd.functional.jacobian supports strategy='reverse-mode' only")
    from .._ops._shape import stack
    with enable_grad():
        in_packed, ins = _pack(inputs, "inputs", "jacobian")
        ins = _leaves(ins, create_graph)
        out_packed, outs = _pack(func(*ins), "outputs of the user-provided function", "jacobian")
        _strict_outputs(outs, strict)
        rows = []
        for k, o in enumerate(outs):
            msg = f"Output {k} of the user-provided function is independent of input {{i}}. This is not allowed in " \
                  f"strict mode."
            flat = o.reshape(-1)
            per_elem = [_vjp((flat[j],), ins, (None,), create_graph, strict, msg) if o._requires_grad else
                        _vjp((), ins, (), create_graph, strict, msg) for j in range(flat.numel())]
            blocks = []
            for i, x in enumerate(ins):
                if per_elem:
                    b = stack([g[i] for g in per_elem]).reshape(tuple(o.shape) + tuple(x.shape))
                else:
                    b = x.new_zeros(tuple(o.shape) + tuple(x.shape))
                blocks.append(b if create_graph else b.detach())
            rows.append(_unpack(tuple(blocks), in_packed))
    return _unpack(tuple(rows), out_packed)


def _scalar_fn(func, fn_name):
    def checked(*ins):
        out = func(*ins)
        if isinstance(out, tuple) or not isinstance(out, Tensor):
            if isinstance(out, tuple) and len(out) == 1 and isinstance(out[0], Tensor) and fn_name != "hessian":
                out = out[0]
            else:
                raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                               f"element")
        return out
    return checked


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func`` at ``inputs`` (the Jacobian of its gradient)."""
    f = _scalar_fn(func, "hessian")
    in_packed, _ = _pack(inputs, "inputs", "hessian")

    def gradient(*ins):
        out = f(*ins)
        g = _vjp((out,), ins, (None,), True, strict, _INDEPENDENT)
        return g if in_packed else g[0]
    return jacobian(gradient, inputs, create_graph=create_graph, strict=strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for scalar ``func``."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for scalar ``func`` (equal to vhp for the symmetric Hessian of a smooth function)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, name):
    f = _scalar_fn(func, name)
    with enable_grad():
        in_packed, ins = _pack(inputs, "inputs", name)
        ins = _leaves(ins, create_graph)
        vs = _check_v(v, ins, in_packed, name, "The vector v can only be None if the input to the user-provided "
                      "function is a single Tensor with a single element.")
        out = f(*ins)
        _strict_outputs((out,), strict)
        g = _vjp((out,), ins, (None,), True, strict, _INDEPENDENT)
        res = _vjp(g, ins, vs, create_graph, False, "")
    return (out if create_graph else out.detach()), _unpack(_finish(res, create_graph), in_packed)
