"""ember.autograd: reverse-mode automatic differentiation (matches torch.autograd).

The engine lives in the core and knows no device: derivative formulas (``derivatives``)
are written with ember ops, so gradients — and gradients of gradients — work on every
device a plugin provides. See docs/architecture.md ("Autograd") for the design.
"""
from __future__ import annotations

from .._grad_state import STATE
from .._tensor import Tensor
from . import graph, grad_mode, function, engine, derivatives
from .grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled, \
    enforce_grad_layout_policy, \
    is_inference_mode_enabled
from .function import Function, FunctionCtx, once_differentiable
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled
from .gradcheck import gradcheck, gradgradcheck, GradcheckError
from . import functional, forward_ad, _complex
from ._compat import (Variable, variable, SavedTensor, is_tensor_like, has_torch_function,  # noqa: F401
                      set_multithreading_enabled, is_multithreading_enabled, is_view_replay_enabled,
                      kineto_available)

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "enforce_grad_layout_policy",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "functional",
           "forward_ad", "graph"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, create_graph):
    """The root gradients: ones for scalar outputs given none (RuntimeError for non-scalars)."""
    from .._ops._creation import ones_like
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not (out._dtype.is_floating_point or out._dtype.is_complex):
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{out._dtype}")
            g = ones_like(out)
        elif not isinstance(g, Tensor):
            from .._ops._creation import full_like
            g = full_like(out, g)
        elif g._shape != out._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"ember.Size([{', '.join(map(str, g._shape))}]) and output[{i}] has a shape of "
                               f"ember.Size([{', '.join(map(str, out._shape))}]).")
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves (matches torch.autograd.backward).

    :param tensors: tensor(s) to differentiate; a non-scalar needs a matching gradient.
    :param grad_tensors: the gradient of each tensor (None for a scalar: ones).
    :param retain_graph: keep saved tensors for another backward (default: ``create_graph``).
    :param create_graph: record the backward pass, so the gradients are differentiable.
    :param inputs: accumulate only into these tensors' ``.grad``.
    :raises RuntimeError: for a non-scalar output without a gradient, an output that does
        not require grad, a freed graph, or a saved tensor modified in place.
    """
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors) or (None,) * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grad_tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    grads = _make_grads(tensors, grad_tensors, create_graph)
    engine.run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (matches torch.autograd.grad); ``.grad`` is untouched.

    :returns: a tuple with one gradient per input (None for an unused input when
        ``allow_unused=True``; zeros when ``materialize_grads=True``).
    :raises RuntimeError: "The differentiated Tensor at index i appears to not have been
        used in the graph. Set allow_unused=True if this is the desired behavior." and the
        errors of ``backward``.
    """
    if is_grads_batched:
        raise NotImplementedError("ember.autograd.grad: is_grads_batched=True is not supported")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if retain_graph is None:
        retain_graph = create_graph
    for x in inputs:
        if not x._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _make_grads(outputs, grad_outputs, create_graph)
    result = engine.run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs, accumulate=False)
    out = []
    for i, (x, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads:
                from .._ops._creation import zeros_like
                g = zeros_like(x)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   f"graph. Set allow_unused=True if this is the desired behavior.")
        out.append(g)
    return tuple(out)


from . import _tensor_methods  # noqa: E402  (binds backward, register_hook, ... to Tensor)

derivatives.install()
_complex.install()    # the backward of view_as_real / view_as_complex (real, imag, conj, ...)
