"""parameters_to_vector / vector_to_parameters (matches torch.nn.utils)."""
from __future__ import annotations

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, old):
    if old is not None and param.device != old:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device


def parameters_to_vector(parameters):
    """All ``parameters`` flattened and concatenated into one 1-D tensor (differentiable).
    TypeError when they live on different devices."""
    from ... import cat
    device = None
    vec = []
    for param in parameters:
        device = _check_same_device(param, device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters):
    """Make each parameter's data the matching slice of the 1-D tensor ``vec`` (the
    parameters then share ``vec``'s memory, as in PyTorch). TypeError when ``vec`` is not a
    Tensor or the devices differ."""
    if not isinstance(vec, Tensor):
        from ..modules.module import _typename
        raise TypeError(f"expected ember.Tensor, but got: {_typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
