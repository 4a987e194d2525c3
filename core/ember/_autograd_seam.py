"""The seam where the autograd layer plugs in (the autograd issue fills it).

Until then tensors cannot require grad, so these are never reached with grad state.
"""


def on_view(base, view):
    """Called when a view is made of a tensor with autograd state.

    Until the engine exists a view only inherits ``requires_grad`` (no graph is recorded).
    """
    view._requires_grad = base._requires_grad
