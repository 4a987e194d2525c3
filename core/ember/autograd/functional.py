"""Higher-level differentiation: jacobian, hessian, vjp, jvp, hvp, vhp
(matches torch.autograd.functional; reverse mode only, jvp by the double-backward trick)."""
from __future__ import annotations

from .._tensor import Tensor
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prepare(inputs, create_graph):
    return tuple(x.detach().requires_grad_(True) if not create_graph or not x._requires_grad else
                 x.view_as(x) for x in inputs)


def _grads(outputs, inputs, grad_outputs, create_graph):
    from . import grad
    from .._ops._creation import zeros_like
    outs = [o for o in outputs]
    gs = grad(outs, inputs, grad_outputs, create_graph=create_graph, retain_graph=True, allow_unused=True)
    return tuple(zeros_like(x) if g is None else g for x, g in zip(inputs, gs))


def _check_strict(outputs, strict):
    if strict:
        for i, o in enumerate(outputs):
            if not o._requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                                   f"outputs must be computed in a differentiable manner from the input when running "
                                   f"in strict mode.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product. ``v`` may be None for a scalar output."""
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(_tuple(inputs), create_graph)
        out = func(*ins)
        outs = _tuple(out)
        _check_strict(outs, strict)
        vs = _tuple(v) if v is not None else (None,) * len(outs)
        res = _grads(outs, ins, vs, create_graph)
    out = out if create_graph else (out.detach() if isinstance(out, Tensor) else tuple(o.detach() for o in out))
    res = res if create_graph else tuple(r.detach() for r in res)
    return out, (res[0] if single_in else res)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, computed by double backward
    (the vjp of the vjp, as PyTorch's reverse-mode jvp)."""
    from .._ops._creation import zeros_like
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(_tuple(inputs), create_graph)
        out = func(*ins)
        outs = _tuple(out)
        _check_strict(outs, strict)
        us = tuple(zeros_like(o).requires_grad_(True) for o in outs)
        g = _grads(outs, ins, us, True)                   # u^T J, linear in u
        vs = _tuple(v) if v is not None else tuple(x.new_ones(x.shape) for x in ins)
        res = _grads(g, us, vs, create_graph)             # d(u^T J v)/du = J v
    del single_in
    out = out if create_graph else (out.detach() if isinstance(out, Tensor) else tuple(o.detach() for o in out))
    res = res if create_graph else tuple(r.detach() for r in res)
    return out, (res[0] if isinstance(out, Tensor) else res)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: shape output.shape + input.shape (nested tuples
    for several inputs / outputs, as PyTorch)."""
    if strategy != "reverse-mode":
        raise NotImplementedError("ember.autograd.functional.jacobian supports strategy='reverse-mode' only")
    from .._ops._shape import stack
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(_tuple(inputs), create_graph)
        out = func(*ins)
        outs = _tuple(out)
        _check_strict(outs, strict)
        result = []
        for o in outs:
            rows = [[] for _ in ins]
            flat = o.reshape(-1)
            for j in range(flat.numel()):
                gs = _grads((flat[j],), ins, None, create_graph)
                for k, g in enumerate(gs):
                    rows[k].append(g if create_graph else g.detach())
            per_in = []
            for k, x in enumerate(ins):
                if rows[k]:
                    per_in.append(stack(rows[k]).reshape(tuple(o.shape) + tuple(x.shape)))
                else:
                    per_in.append(x.new_zeros(tuple(o.shape) + tuple(x.shape)))
            result.append(per_in[0] if single_in else tuple(per_in))
    return result[0] if isinstance(out, Tensor) else tuple(result)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func`` at ``inputs`` (the Jacobian of its gradient)."""
    single_in = isinstance(inputs, Tensor)

    def grad_func(*ins):
        out = func(*ins)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with one element")
        gs = _grads((out,), ins, None, True)
        return gs[0] if single_in else gs
    return jacobian(grad_func, inputs, create_graph=create_graph, strict=strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for scalar ``func``."""
    single_in = isinstance(inputs, Tensor)
    with enable_grad():
        ins = _prepare(_tuple(inputs), create_graph)
        out = func(*ins)
        if out.numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with one element")
        g = _grads((out,), ins, None, True)
        vs = _tuple(v) if v is not None else tuple(x.new_ones(x.shape) for x in ins)
        res = _grads(g, ins, vs, create_graph)
    res = res if create_graph else tuple(r.detach() for r in res)
    return (out if create_graph else out.detach()), (res[0] if single_in else res)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for scalar ``func`` (equal to vhp: the Hessian is symmetric)."""
    return vhp(func, inputs, v, create_graph, strict)
