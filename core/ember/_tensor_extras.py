"""Tensor methods and top-level functions PyTorch has that are thin forms of ember ops already there:
``isreal``, the deprecated ``lu`` / ``lu_solve`` / ``orgqr`` spellings of ``ember.linalg``, ``Tensor.new``,
``dim_order``, ``is_inference``, ``hardshrink`` / ``prelu`` / ``stft`` / ``istft`` methods, and the removed
``eig`` / ``symeig`` / ``solve`` / ``lstsq`` methods, which raise PyTorch's RuntimeError. Each matches the
torch function of the same name.
"""
from __future__ import annotations

from . import _dtype as D
from ._tensor import Tensor

__all__ = ["isreal", "lu", "lu_solve", "orgqr"]


def isreal(input):
    """Bool tensor: True where the element is real, i.e. its imaginary part is 0 (matches torch.isreal;
    all True for a non-complex dtype). Same shape as ``input``."""
    import ember
    if input._dtype.is_complex:
        return input.imag == 0
    return ember.ones_like(input, dtype=ember.bool)


def lu(A, pivot=True, get_infos=False, out=None):
    """``(LU, pivots)`` - with ``get_infos=True`` ``(LU, pivots, infos)`` - of the LU factorisation of the
    (batched) square or rectangular ``A`` (matches the deprecated torch.lu: ``torch.linalg.lu_factor_ex``).
    Without ``get_infos`` a singular matrix raises as ``linalg.lu_factor`` does."""
    from . import linalg
    LU, pivots, infos = linalg.lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    result = (LU, pivots, infos) if get_infos else (LU, pivots)
    if out is not None:
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return out
    return result


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """The solution X of A X = b given ``lu(A)``'s ``(LU_data, LU_pivots)`` (matches the deprecated torch.lu_solve:
    ``torch.linalg.lu_solve(LU_data, LU_pivots, b)``). Shapes (*, n, n), (*, n), (*, n, k) -> (*, n, k)."""
    from . import linalg
    return linalg.lu_solve(LU_data, LU_pivots, b, out=out)


def orgqr(input, tau):
    """The first n columns of the product of Householder matrices given by ``geqrf``'s ``(input, tau)``
    (matches torch.orgqr: ``torch.linalg.householder_product``)."""
    from . import linalg
    return linalg.householder_product(input, tau)


_REMOVED = {   # PyTorch 2.13's messages, word for word
    'eig': (
        'This function was deprecated since version 1.9 and is now removed. `torch.linalg.eig` returns '
        'complex tensors of dtype `cfloat` or `cdouble` rather than real tensors mimicking complex tensors.\n\n'
        'L, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = '
        'torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, V_complex = torch.linalg.eig(A)'
    ),
    'symeig': (
        'This function was deprecated since version 1.9 and is now removed. The default behavior has changed '
        'from using the upper triangular portion of the matrix by default to using the lower triangular '
        'portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, '
        "UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) should be replaced with:"
        "\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"
    ),
    'solve': (
        'This function was deprecated since version 1.9 and is now removed. `torch.solve` is deprecated in '
        'favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments reversed and does not return '
        'the LU factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with '
        '`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\nX = '
        'torch.linalg.solve(A, B)'
    ),
    'lstsq': (
        'This function was deprecated since version 1.9 and is now removed. `torch.lstsq` is deprecated in '
        'favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments and does not return the '
        'QR decomposition in the returned tuple (although it returns other information about the problem).\n\n'
        'To get the QR decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in '
        '`torch.lstsq` stored the residuals of the solution in the last m - n columns of the returned value '
        "whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of the returned "
        'named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n'
        'should be replaced with:\nX = torch.linalg.lstsq(A, B).solution'
    ),
}


def _removed(name):
    """A function (top-level, or a Tensor method: it takes any arguments) that raises PyTorch's RuntimeError for
    the removed ``name``."""
    def fn(*args, **kwargs):
        raise RuntimeError(_REMOVED[name])
    fn.__name__ = name
    fn.__doc__ = f"Removed from PyTorch (raises its RuntimeError): use ``ember.linalg`` (matches torch.{name})."
    return fn


def _new(self, *args, **kwargs):
    """The legacy ``Tensor.new``: a tensor of ``self``'s dtype and device - uninitialised of the given sizes
    (``new(2, 3)``), from data (``new([1, 2])``), or empty (``new()``) (matches torch.Tensor.new)."""
    from ._legacy import legacy_new
    kwargs.setdefault("device", self._device)
    return legacy_new(self._dtype, args, kwargs)


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory: sorted by stride, largest first, ties kept in dim order
    (matches torch.Tensor.dim_order). Returns a tuple of ints."""
    if ambiguity_check:
        strides = [s for s, n in zip(self._stride, self._shape) if n != 1]
        if len(set(strides)) != len(strides):
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to dim order")
    return tuple(sorted(range(len(self._shape)), key=lambda d: -self._stride[d]))


def _is_inference(self):
    """Whether the tensor was created in ``inference_mode`` (or is a view of such a tensor)
    (matches torch.Tensor.is_inference)."""
    base = self._base
    return bool(getattr(self if base is None else base, "_inference", False))


def _hardshrink(self, lambd=0.5):
    """``ember.nn.functional.hardshrink(self, lambd)`` (matches torch.Tensor.hardshrink)."""
    from .nn import functional as F
    return F.hardshrink(self, lambd)


def _prelu(self, weight):
    """``ember.nn.functional.prelu(self, weight)`` (matches torch.Tensor.prelu)."""
    from .nn import functional as F
    return F.prelu(self, weight)


def _stft(self, *args, **kwargs):
    """``ember.stft(self, ...)`` (matches torch.Tensor.stft)."""
    from ._spectral import stft
    return stft(self, *args, **kwargs)


def _istft(self, *args, **kwargs):
    """``ember.istft(self, ...)`` (matches torch.Tensor.istft)."""
    from ._spectral import istft
    return istft(self, *args, **kwargs)


def _const_data_ptr(self):
    """``data_ptr()`` (matches torch.Tensor.const_data_ptr)."""
    return self.data_ptr()


def _to_device_type(kind):
    def method(self, device=None, non_blocking=False, memory_format=None):
        idx = device if isinstance(device, int) else None
        return self.to(f"{kind}:{idx}" if idx is not None else (device or kind), non_blocking=non_blocking)
    method.__name__ = kind
    method.__doc__ = (f"``self.to('{kind}')`` (matches torch.Tensor.{kind}; RuntimeError where no such device is "
                      f"installed).")
    return method


_METHODS = {
    "isreal": isreal, "lu": lambda self, pivot=True, get_infos=False: lu(self, pivot, get_infos),
    "lu_solve": lambda self, LU_data, LU_pivots: lu_solve(self, LU_data, LU_pivots),
    "orgqr": orgqr, "new": _new, "dim_order": _dim_order, "is_inference": _is_inference,
    "hardshrink": _hardshrink, "prelu": _prelu, "stft": _stft, "istft": _istft, "const_data_ptr": _const_data_ptr,
    "xpu": _to_device_type("xpu"), "ipu": _to_device_type("ipu"), "mtia": _to_device_type("mtia"),
    **{name: _removed(name) for name in _REMOVED},
}


def _install():
    for name, fn in _METHODS.items():
        if not hasattr(Tensor, name):
            if fn.__name__ == "<lambda>":
                fn.__name__ = name
                fn.__doc__ = f"``ember.{name}(self, ...)`` (matches torch.Tensor.{name})."
            setattr(Tensor, name, fn)


_install()
del D
