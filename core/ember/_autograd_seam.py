"""Where the tensor core calls into autograd without importing it at module load."""


def on_view(base, view):
    """Called by ``Tensor._view`` when ``base`` takes part in autograd (see autograd._record.on_view)."""
    from .autograd import _record
    _record.on_view(base, view)
