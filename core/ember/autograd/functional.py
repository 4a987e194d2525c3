"""Higher-level differentiation: jacobian, hessian, vjp, jvp, hvp, vhp.

Matches torch.autograd.functional (reverse mode only: ``jvp`` and ``hvp`` use the
double-backward trick, as PyTorch's reverse-mode versions do). Arguments, output
structure (a Tensor where a Tensor was given, tuples — nested for several inputs and
outputs — where tuples were given), ``create_graph`` / ``strict`` and the error
messages follow PyTorch.
"""
from __future__ import annotations

from .._tensor import Tensor
from .grad_mode import enable_grad, set_grad_enabled, is_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ---------------------------------------------------------------- helpers (as torch.autograd.functional)
def _as_tuple(inp, arg_name, fn_name):
    """(whether ``inp`` was a tuple, ``inp`` as a tuple of Tensors); TypeError for anything else."""
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple``: ``to_unpack`` is one flag, or (outer, inner) flags for nested results."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh tensor objects for the inputs: differentiable views when the caller's graph must
    be kept (``create_graph`` and the input requires grad), detached copies otherwise."""
    return tuple(x.view_as(x) if create_graph and x._requires_grad else x.detach().requires_grad_(need_graph)
                 for x in inputs)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(x.detach() for x in inputs)
    return tuple(_grad_postprocess(x, create_graph) for x in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, other)):
        if a.size() != b.size():
            prepend = f"Entry {i} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {b.size()} but got {a.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    """In strict mode, refuse results that do not depend on the inputs."""
    if not strict:
        return
    for i, x in enumerate(inputs):
        if x is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               f"not allowed in strict mode.")
        if x._requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(f"The hessian of the user-provided function with respect to input {i} is independent "
                               f"of the input. This is not allowed in strict mode. You should ensure that your "
                               f"function is thrice differentiable and that the hessian depends on the inputs.")
        if input_type == "jacobian":
            raise RuntimeError(f"While computing the hessian, found that the jacobian of the user-provided function "
                               f"with respect to input {i} is independent of the input. This is not allowed in "
                               f"strict mode. You should ensure that your function is twice differentiable and that "
                               f"the jacobian depends on the inputs (this would be violated by a linear function "
                               f"for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                               f"user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs must "
                           f"be computed in a differentiable manner from the input when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad that skips outputs which are None or need no grad (all None when none is left)."""
    from . import grad
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o._requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in strict "
                  "mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros (shaped like ``refs[i]``) for the None gradients; in strict mode, errors instead."""
    from .._ops._creation import zeros_like
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g._requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               f"allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _prepare_v(v, refs, is_refs_tuple, fn_name, create_graph, none_msg):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, refs, is_refs_tuple)
        return v
    if len(refs) != 1 or refs[0].numel() != 1:
        raise RuntimeError(none_msg)
    return None


_V_NONE_OUTPUT = ("The vector v can only be None if the user-provided function returns a single Tensor with a "
                  "single element.")
_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor "
                 "with a single element.")


def _single_scalar_output(outputs, is_outputs_tuple, fn_name):
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")


# ---------------------------------------------------------------- public API
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product (matches torch.autograd.functional.vjp).

    :param func: takes the inputs, returns a Tensor or a tuple of Tensors.
    :param inputs: a Tensor or a tuple of Tensors.
    :param v: shaped like the output(s); may be None for an output with one element.
    :param create_graph: make the results differentiable (with respect to ``inputs``).
    :param strict: raise RuntimeError for an input the outputs do not depend on (else zeros).
    :returns: (outputs, vjp) with vjp shaped like ``inputs``.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, "vjp", create_graph, _V_NONE_OUTPUT)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product (matches torch.autograd.functional.jvp).

    Computed by the double-backward trick: ``u^T J`` is linear in a dummy ``u``, and its
    gradient with respect to ``u`` along ``v`` is ``J v``. ``v`` is shaped like ``inputs``
    (None only for a single one-element input); the result is shaped like the outputs.
    """
    from .._ops._creation import zeros_like
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, "jvp", create_graph, _V_NONE_INPUT)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # the backward is linear in u, so u's value does not matter (zeros: no inf/nan)
        us = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, us, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, us, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs`` (matches torch.autograd.functional.jacobian).

    For one output and one input: a Tensor of shape ``output.shape + input.shape``. With
    tuples: ``result[i][j]`` is d outputs[i] / d inputs[j] (one level dropped where a plain
    Tensor was given). One backward per output element (``vectorize`` is accepted and
    ignored; only ``strategy="reverse-mode"``).
    """
    from .._ops._creation import zeros_like
    from .._ops._shape import stack
    if strategy != "reverse-mode":
        raise NotImplementedError("ember.autograd.functional.jacobian supports strategy='reverse-mode' only")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        result = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(out.numel()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for k, (g, x) in enumerate(zip(vj, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{k}. This is not allowed in strict mode.")
                        g = zeros_like(x)
                    elif strict and create_graph and not g._requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input "
                                           f"{i}. This is not allowed in strict mode when create_graph=True.")
                    rows[k].append(g)
            result.append(tuple(
                stack(rows[k], 0).view(tuple(out.shape) + tuple(x.shape)) if rows[k]
                else x.new_zeros(tuple(out.shape) + tuple(x.shape))
                for k, x in enumerate(inputs)))
        result = _grad_postprocess(tuple(result), create_graph)
    return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs`` (matches torch.autograd.functional.hessian).

    One input: a Tensor of shape ``input.shape + input.shape``; a tuple of n inputs: an
    n-by-n tuple of tuples, ``result[i][j]`` = d^2 f / d inputs[i] d inputs[j].
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy != "reverse-mode":
        raise NotImplementedError("ember.autograd.functional.hessian supports outer_jacobian_strategy='reverse-mode' "
                                  "only")

    def single_output(*inp):
        is_out_tuple, t_out = _as_tuple(func(*inp), "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        _single_scalar_output(t_out, is_out_tuple, "hessian")
        return t_out[0].squeeze()

    def jac_func(*inp):
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar ``func`` (matches torch.autograd.functional.vhp)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, "vhp", create_graph, _V_NONE_INPUT)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vhp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _single_scalar_output(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func`` (matches torch.autograd.functional.hvp).

    By the double-backward trick (``v^T H`` differentiated once more with respect to a
    dummy vector), so it equals ``vhp`` for a symmetric Hessian and costs one more backward.
    """
    from .._ops._creation import zeros_like
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, "hvp", create_graph, _V_NONE_INPUT)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "hvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        _single_scalar_output(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(res, create_graph), is_inputs_tuple))
