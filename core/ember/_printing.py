"""Tensor repr in PyTorch's format, and the print options (matches torch._tensor_str).

``tensor_repr(t)`` gives what ``repr(torch_tensor)`` gives for the same values:
``tensor([1., 2., 3.])``, ``tensor([[1, 2],\\n        [3, 4]])``, ``tensor(3.5000)``,
fixed or scientific notation chosen from the values, ``...`` summaries of tensors with
more than ``threshold`` elements, and the suffixes ``dtype=`` (when not implied by the
values), ``device=`` (when not cpu), ``size=`` (empty tensors), ``requires_grad=True`` /
``grad_fn=<...>``.

Printing reads the values on the host (the elements it shows, only: a summarised
tensor on a device transfers its edges, not all of it) and formats them with Python's
float formatting, as PyTorch does; numpy here is host-side conversion only.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

# re-exported as ember.set_printoptions; get_printoptions / printoptions stay here, as in torch._tensor_str
__all__ = ["set_printoptions"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4          # digits after the point (fixed) or of the mantissa (scientific)
    threshold: float = 1000     # more elements than this are summarised with "..."
    edgeitems: int = 3          # items shown at each end of a summarised dimension
    linewidth: int = 80         # characters per line before wrapping
    sci_mode: bool | None = None  # force (True) / forbid (False) scientific notation; None chooses


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set the options tensor printing uses (matches torch.set_printoptions).

    :param precision: digits of precision for floating values (default 4).
    :param threshold: element count above which a tensor is summarised (default 1000).
    :param edgeitems: items shown at the start and end of each summarised dimension (default 3).
    :param linewidth: characters per line before wrapping (default 80).
    :param profile: ``'default'``, ``'short'`` or ``'full'``, applied before the other arguments.
    :param sci_mode: True / False forces / forbids scientific notation; None (the default,
        and what every call without it sets) lets the values decide.
    ValueError for an unknown profile.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"unknown print profile {profile!r}: expected one of 'default', 'short', 'full'")
        for k, v in _PROFILES[profile].items():
            setattr(PRINT_OPTS, k, v)
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            setattr(PRINT_OPTS, k, v)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options as a dict that ``set_printoptions(**d)`` accepts (matches
    torch.get_printoptions)."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Context manager: ``set_printoptions(**kwargs)`` inside the block, the old options after."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ---------------------------------------------------------------- formatting the values
class _Formatter:
    """Chooses integer / fixed / scientific notation and the column width for a set of values
    (a numpy array on the host), by PyTorch's rules."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        if not floating:
            for v in values.ravel().tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        flat = values.ravel().astype(np.float64)
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return  # nothing but zeros / non-finite values: integer notation, width 1
        mags = np.abs(vals)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool((vals == np.ceil(vals)).all())
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        vals = vals.tolist()
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{p}e}") for v in vals)
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in vals)   # + 1 for the trailing "."
        else:
            self.max_width = max(len(f"{v:.{p}f}") for v in vals)
        self.max_width = max(self.max_width, 1)

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                s = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                s = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    s += "."
            else:
                s = f"{value:.{p}f}"
        else:
            s = f"{value}"
        return (self.max_width - len(s)) * " " + s


def _python_values(a: np.ndarray):
    """Python scalars for the host array ``a`` (low-precision floats widened exactly)."""
    if a.dtype.kind == "f" and a.dtype.itemsize < 4 or a.dtype.kind == "V" or a.dtype.name == "bfloat16":
        a = a.astype(np.float64)
    return a.tolist()


def _element(value, f1, f2):
    if f2 is None:
        return f1.format(value)
    real = f1.format(value.real)
    imag = (f2.format(value.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector(h, size, indent, summarize, f1, f2):
    element_length = f1.width() + 2 + (f2.width() + 1 if f2 is not None else 0)
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    edge = PRINT_OPTS.edgeitems
    vals = _python_values(h)
    if summarize and not edge:
        data = ["..."]
    elif summarize and size > 2 * edge:
        data = [_element(v, f1, f2) for v in vals[:edge]] + [" ..."] + [_element(v, f1, f2) for v in vals[edge:]]
    else:
        data = [_element(v, f1, f2) for v in vals]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(h, shape, indent, summarize, f1, f2):
    """The bracketed text of the host array ``h``; ``shape`` holds the tensor's real sizes (``h``
    is cut to the edge items along the summarised dimensions)."""
    dim = len(shape)
    if dim == 0:
        return _element(_python_values(h), f1, f2)
    if dim == 1:
        return _vector(h, shape[0], indent, summarize, f1, f2)
    edge = PRINT_OPTS.edgeitems
    sub = lambda i: _nested(h[i], shape[1:], indent + 1, summarize, f1, f2)  # noqa: E731
    if summarize and shape[0] > 2 * edge:
        slices = [sub(i) for i in range(edge)] + ["..."] + [sub(i) for i in range(edge, 2 * edge)]
    else:
        slices = [sub(i) for i in range(shape[0])]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _edges_host(t, d, edge):
    """A host array of ``t`` with every dimension from ``d`` on longer than 2 * edge cut to its
    first and last ``edge`` items (what a summary shows); only those elements leave the device."""
    if t.numel() == 0:  # nothing to transfer (and no view of an empty slice at a buffer's end needed)
        return np.empty(t._shape, dtype=t._dtype.numpy_dtype)
    if d == t.ndim:
        return np.array(t._host())
    n = t._shape[d]
    if n > 2 * edge:
        parts = [_edges_host(t.narrow(d, 0, edge), d + 1, edge), _edges_host(t.narrow(d, n - edge, edge), d + 1, edge)]
        return np.concatenate(parts, axis=d)
    return _edges_host(t, d + 1, edge)


def _tensor_str(t, indent):
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    h = _edges_host(t, 0, PRINT_OPTS.edgeitems) if summarize else t._host()
    dt = t._dtype
    if dt.is_complex:
        f1, f2 = _Formatter(h.real, True), _Formatter(h.imag, True)
    else:
        f1, f2 = _Formatter(h, dt.is_floating_point), None
    return _nested(h, tuple(t._shape), indent, summarize, f1, f2)


def _add_suffixes(text, suffixes, indent):
    out = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_line_len + len(s) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
        else:
            out.append(", " + s)
            last_line_len += len(s) + 2
    out.append(")")
    return "".join(out)


def _grad_fn_name(fn) -> str:
    name = getattr(fn, "name", None)
    return name() if callable(name) else type(fn).__name__


def tensor_repr(t, tensor_contents=None) -> str:
    """``repr`` of a tensor in PyTorch's format (see the module docstring); ``tensor_contents``
    replaces the bracketed values when given (as torch's ``Tensor.__repr__`` allows)."""
    from . import _dtype as D
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    dt = t._dtype
    if t._quantizer is not None:      # as torch: dequantized values, then size, dtype and the qparams
        from ._ops._quantized import repr_suffixes
        body = _tensor_str(t.dequantize(), indent) if t.numel() else "[]"
        return _add_suffixes(prefix + (body if tensor_contents is None else tensor_contents),
                             suffixes + repr_suffixes(t), indent)
    default = D.get_default_dtype()
    has_default_dtype = dt in (default, D.complex128 if default is D.float64 else D.complex64, D.int64, D.bool)
    shown = t
    if t._layout.name != "strided" and callable(getattr(t, "to_dense", None)):
        shown = t.to_dense()
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t._shape)}")
        if dt is not default:
            suffixes.append(f"dtype={dt!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t._shape)}")
        if not has_default_dtype:
            suffixes.append(f"dtype={dt!r}")
        body = _tensor_str(shown, indent)
    if tensor_contents is not None:
        body = tensor_contents
    if t._layout.name != "strided":
        suffixes.append(f"layout={t._layout!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(t._grad_fn)}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
