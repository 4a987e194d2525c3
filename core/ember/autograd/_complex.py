"""The backward of the real <-> complex views (``view_as_real`` / ``view_as_complex``, and through
them ``real``, ``imag``, ``conj``, ``angle``, ``complex``, ``polar``), installed into the seam
``ember._ops._complex.RECORD_DTYPE_VIEW``.

PyTorch's convention for complex gradients (the conjugate Wirtinger derivative, so that a real loss
L of z = x + iy has ``z.grad == dL/dx + i dL/dy``) makes both views' gradients the inverse view:
``view_as_real``'s is ``view_as_complex(grad)`` and ``view_as_complex``'s is ``view_as_real(grad)``
(as derivatives.yaml). Both are written with the public functions, so double backward records them.
"""
from __future__ import annotations

from .graph import Node, grad_edge

__all__ = ["DtypeViewNode", "install"]


class DtypeViewNode(Node):
    """The backward of ``view_as_real`` (ViewAsRealBackward0) or ``view_as_complex`` (ViewAsComplexBackward0)."""

    def __init__(self, kind, edge):
        super().__init__([edge])
        self.kind = kind
        self._name = "ViewAsRealBackward0" if kind == "view_as_real" else "ViewAsComplexBackward0"

    def apply(self, grads):
        """Node.apply: the inverse view of the (made contiguous) gradient."""
        from .._ops._complex import view_as_complex, view_as_real
        g = grads[0]
        if g is None:
            return [None]
        if self.kind == "view_as_real":
            return [view_as_complex(g.contiguous())]
        return [view_as_real(g.contiguous())]


def record(kind, src, out):
    """Seam filler: make ``out`` (a dtype view of ``src``) a non-leaf whose history is ``DtypeViewNode``."""
    out._grad_fn = DtypeViewNode(kind, grad_edge(src))
    out._output_nr = 0
    out._requires_grad = True
    out.__dict__["_gf_version"] = out._version


def install():
    """Fill ``ember._ops._complex.RECORD_DTYPE_VIEW``."""
    from .._ops import _complex
    _complex.RECORD_DTYPE_VIEW[0] = record
