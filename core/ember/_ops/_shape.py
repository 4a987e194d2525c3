"""Shape manipulation: joining (cat, stack, hstack, ...), reordering (flip, roll, rot90),
repeating (repeat, tile, repeat_interleave), triangles (tril, triu), diff, broadcasting
helpers, meshgrid, atleast_*d, and the module-level forms of the Tensor view methods
(``ember.transpose``, ``ember.reshape``, ...). Matches the torch functions of the same names.

Most ops here are compositions of views and ``copy_``, so they work on every device
with a strided copy: ``cat`` allocates its result and copies each input into a
``narrow`` slice, ``roll`` copies two slices per dim, ``repeat`` copies an expanded
view. ``flip``, ``tril`` / ``triu`` and ``repeat_interleave`` with a tensor of repeats
have kernels per device, and composites over the primitive set (``_shape_composites``).
"""
from __future__ import annotations

import builtins
import numbers

from .. import _dtype as D
from .._dispatch import declare
from .._tensor import Tensor, Size, _wrap_dim, _size_args
from ._meta import same_device, broadcast_shapes as _broadcast_shapes, check_tensor
from . import _shape_composites as _C   # composites over the primitive set

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack",
           "flip", "fliplr", "flipud", "roll", "rot90", "tile", "repeat_interleave", "tril", "triu", "diff",
           "meshgrid", "broadcast_to", "broadcast_tensors", "broadcast_shapes", "atleast_1d", "atleast_2d",
           "atleast_3d", "transpose", "swapaxes", "swapdims", "permute", "reshape", "squeeze", "unsqueeze",
           "flatten", "unflatten", "movedim", "moveaxis", "narrow", "select", "split", "chunk", "unbind", "t",
           "adjoint", "diagonal", "as_strided", "tensor_split", "hsplit", "vsplit", "dsplit", "ravel"]


def _reshape(t, shape):
    """``t.reshape(shape)``, going through shape (1,) for a 0-dim tensor (whose direct
    ``view`` to a multi-dim shape the view code does not resolve)."""
    if not t._shape:
        t = t.unsqueeze(0)
    return t.reshape(shape)


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return list(tensors)


# ---------------------------------------------------------------- cat
def _skipped(t):
    # PyTorch's legacy rule: 1-D empty tensors are left out of cat whatever the other shapes
    return t._shape == (0,)


def _cat_meta(tensors, dim=0):
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("ember.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not t._shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    device = same_device(*tensors)
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not dt:
            dt = D.promote_types(dt, t._dtype)
    ref_i = next((i for i, t in enumerate(tensors) if not _skipped(t)), None)
    if ref_i is None:
        _wrap_dim(dim, 1)
        return device, (device.type, tensors[0]._layout.name, dt), (0,), dt
    ref = tensors[ref_i]._shape
    d = _wrap_dim(dim, len(ref))
    total = 0
    for i, t in enumerate(tensors):
        if _skipped(t):
            continue
        s = t._shape
        if len(s) != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and {len(s)}")
        for j, (x, y) in enumerate(zip(ref, s)):
            if j != d and x != y:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {x} but got "
                                   f"size {y} for tensor number {i} in the list.")
        total += s[d]
    shape = ref[:d] + (total,) + ref[d + 1:]
    return device, (device.type, tensors[0]._layout.name, dt), shape, dt


def _cat_composite(tensors, dim=0, *, out):
    """empty + copy_ of each input into its narrow() slice of the result."""
    parts = [t for t in tensors if not _skipped(t)]
    if not parts:
        return
    d = _wrap_dim(dim, out.dim())
    off = 0
    for t in parts:
        n = t._shape[d]
        if n:
            out.narrow(d, off, n).copy_(t)
        off += n


_cat = declare("cat(Tensor[] tensors, int dim=0) -> Tensor", _cat_meta, composite=_cat_composite,
               doc="Concatenation along dim.")


def cat(tensors, dim=0, *, out=None, axis=None):
    """Concatenate tensors along ``dim`` (matches torch.cat; ``concat`` / ``concatenate`` are aliases).

    All tensors must have the same number of dims and the same sizes except in ``dim``;
    1-D empty tensors (shape (0,)) are skipped, as PyTorch does. The result dtype is
    the promotion of all inputs' dtypes. RuntimeError "Sizes of tensors must match except
    in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.",
    "Tensors must have same number of dimensions: got 2 and 1", "zero-dimensional tensor
    (at position 0) cannot be concatenated"; ValueError for an empty list; IndexError for
    ``dim`` out of range; TypeError when ``out``'s dtype cannot hold the result.
    """
    if axis is not None:
        dim = axis
    if out is not None and isinstance(out, Tensor):
        _, _, _, dt = _cat_meta(tensors, dim)
        if out._dtype is not dt and not D.can_cast(dt, out._dtype):
            raise TypeError(f"ember.cat(): input types can't be cast to the desired output type "
                            f"{D.torch_name(out._dtype)}")
    return _cat(tensors, dim, out=out)


def concat(tensors, dim=0, *, out=None):
    """Alias of :func:`cat` (matches torch.concat)."""
    return cat(tensors, dim, out=out)


def concatenate(tensors, axis=0, out=None):
    """Alias of :func:`cat` with numpy's ``axis`` name (matches torch.concatenate)."""
    return cat(tensors, axis, out=out)


def stack(tensors, dim=0, *, out=None):
    """Join same-shaped tensors along a new dim ``dim`` (in [-ndim-1, ndim]; matches torch.stack).

    dtypes promote as in ``cat``. RuntimeError "stack expects each tensor to be equal size,
    but got [2, 3] at entry 0 and [2, 4] at entry 1" / "stack expects a non-empty TensorList".
    """
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0]._shape
    for i, t in enumerate(tensors[1:], 1):
        if t._shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {_shape_str(s0)} at entry 0 "
                               f"and {_shape_str(t._shape)} at entry {i}")
    d = _wrap_dim(dim, len(s0) + 1)
    return cat([t.unsqueeze(d) for t in tensors], d, out=out)


def _nonempty(tensors, op):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = _tensor_list(tensors, op)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return tensors


def hstack(tensors, *, out=None):
    """Stack horizontally: ``cat`` along dim 0 for 1-D inputs, else dim 1; 0-dim inputs become 1-D
    (matches torch.hstack)."""
    ts = atleast_1d(_nonempty(tensors, "hstack"))
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Stack vertically: inputs made at least 2-D, then ``cat`` along dim 0 (matches torch.vstack)."""
    return cat(atleast_2d(_nonempty(tensors, "vstack")), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Stack depth-wise: inputs made at least 3-D, then ``cat`` along dim 2 (matches torch.dstack)."""
    return cat(atleast_3d(_nonempty(tensors, "dstack")), 2, out=out)


def column_stack(tensors, *, out=None):
    """Stack as columns: 0-dim and 1-D inputs become (n, 1) columns, then ``cat`` along dim 1
    (matches torch.column_stack)."""
    ts = _nonempty(tensors, "column_stack")
    ts = [_reshape(t, (t.numel(), 1)) if t.dim() <= 1 else t for t in ts]
    return cat(ts, 1, out=out)


# ---------------------------------------------------------------- flip, roll, rot90
def _dims_list(dims, n, op, argname="dims", pos=2):
    if isinstance(dims, int) and not isinstance(dims, builtins.bool):
        raise TypeError(f"{op}(): argument '{argname}' (position {pos}) must be tuple of ints, not int")
    out = tuple(_wrap_dim(d, n) for d in dims)
    if len(set(out)) != len(out):
        dup = next(d for d in out if out.count(d) > 1)
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    return out


def _flip_meta(self, dims):
    check_tensor(self, "flip")
    _dims_list(dims, self.dim(), "flip")
    return self._device, (self._device.type, self._layout.name, self._dtype), self._shape, self._dtype


flip = declare("flip(Tensor self, int[] dims) -> Tensor", _flip_meta, composite=_C.flip,
               doc="A copy of ``input`` with the order of elements reversed along each dim in ``dims`` (a "
                   "sequence; matches torch.flip, which copies — ember has no negative strides either). "
                   "IndexError for a dim out of range; RuntimeError \"dim 0 appears multiple times in the list "
                   "of dims\"; TypeError for an int ``dims``.")


def fliplr(input):
    """``flip(input, (1,))``; RuntimeError "Input must be >= 2-d." (matches torch.fliplr)."""
    check_tensor(input, "fliplr")
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """``flip(input, (0,))``; RuntimeError "Input must be >= 1-d." (matches torch.flipud)."""
    check_tensor(input, "flipud")
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _roll_args(self, shifts, dims):
    shifts = (shifts,) if isinstance(shifts, numbers.Integral) else tuple(int(s) for s in shifts)
    dims = () if dims is None else ((dims,) if isinstance(dims, numbers.Integral) else tuple(dims))
    return shifts, dims


def _roll_meta(self, shifts, dims=()):
    check_tensor(self, "roll")
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        pass
    elif len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if dims and self.dim() == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    for d in dims:
        _wrap_dim(d, self.dim())
    return self._device, (self._device.type, self._layout.name, self._dtype), self._shape, self._dtype


def _roll_composite(self, shifts, dims=(), *, out):
    """Two slice copies per rolled dim (through a temporary when rolling several dims)."""
    if not dims:
        if self.numel():
            _roll_composite(_reshape(self, (-1,)), shifts, (0,), out=_reshape(out, (-1,)))
        return
    src = self
    for i, (s, d) in enumerate(zip(shifts, dims)):
        d = _wrap_dim(d, self.dim())
        dst = out if i == len(dims) - 1 else _empty_like(self)
        n = self._shape[d]
        k = s % n if n else 0
        if k == 0:
            dst.copy_(src)
        else:
            dst.narrow(d, k, n - k).copy_(src.narrow(d, 0, n - k))
            dst.narrow(d, 0, k).copy_(src.narrow(d, n - k, k))
        src = dst


def _empty_like(t):
    from .._factory import empty_on
    return empty_on(t._shape, t._dtype, t._device)


_roll = declare("roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor", _roll_meta, composite=_roll_composite,
                doc="Elements rolled along dims.")


def roll(input, shifts, dims=None):
    """Roll elements along ``dims`` by ``shifts`` (ints or matching sequences); with ``dims=None``
    the tensor is flattened, rolled and restored (matches torch.roll). RuntimeError "shifts and
    dimensions must align. shifts: 2, dims:1"; IndexError for a dim out of range."""
    shifts, dims = _roll_args(input, shifts, dims)
    if not dims and len(shifts) == 1 and input.dim() != 1 and input.numel():
        r = _roll(_reshape(input, (-1,)), shifts, (0,))
        return r.view(input._shape) if input._shape else r.squeeze(0)
    return _roll(input, shifts, dims)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first dim toward the
    second (matches torch.rot90). A copy for k % 4 in (1, 2, 3) built from flip + transpose.
    RuntimeError "expected total rotation dims == 2, but got dims = 1", "expected total dims >= 2,
    but got total dims = 1", "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"."""
    check_tensor(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    n = input.dim()
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = _wrap_dim(dims[0], n), _wrap_dim(dims[1], n)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, (d0,)).transpose(d0, d1)
    from ._copy import clone
    return clone(input)


# ---------------------------------------------------------------- repeat, tile, repeat_interleave
def _repeat_meta(self, repeats):
    check_tensor(self, "repeat")
    if len(repeats) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    pad = (1,) * (len(repeats) - self.dim()) + self._shape
    shape = tuple(r * s for r, s in zip(repeats, pad))
    if any(s < 0 for s in shape):
        bad = next(s for s in shape if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {_shape_str(shape)}")
    return self._device, (self._device.type, self._layout.name, self._dtype), shape, self._dtype


def _repeat_composite(self, repeats, *, out):
    """One copy of an expanded view: x viewed as (1, s0, 1, s1, ...) expanded to (r0, s0, r1, s1, ...)."""
    if out.numel() == 0:
        return
    pad = (1,) * (len(repeats) - self.dim()) + self._shape
    src = _reshape(self, tuple(x for s in pad for x in (1, s)))
    src = src.expand(tuple(x for r, s in zip(repeats, pad) for x in (r, s)))
    dst_shape = tuple(x for r, s in zip(repeats, pad) for x in (r, s))
    if out.is_contiguous():
        out.view(dst_shape).copy_(src)
    else:
        out.copy_(_reshape(src, out._shape))


_repeat = declare("repeat(Tensor self, int[] repeats) -> Tensor", _repeat_meta, composite=_repeat_composite,
                  doc="Tensor repeated along each dim.")


def repeat(self, *sizes, **kwargs):
    """The tensor repeated ``sizes[i]`` times along dim i (varargs, one sequence or ``repeats=``);
    leading dims are added when ``sizes`` is longer than ``self.dim()`` (matches
    torch.Tensor.repeat). Always a copy. RuntimeError "Number of dimensions of repeat dims can not
    be smaller than number of dimensions of tensor"."""
    from .._tensor import _sizes_kw
    sizes = _sizes_kw(sizes, kwargs, "repeat", "repeats")
    if len(sizes) == 1 and isinstance(sizes[0], Tensor):
        raise TypeError("repeat(): argument 'repeats' (position 1) must be tuple of ints, not Tensor")
    return _repeat(self, _size_args(sizes, "repeat"))


def tile(input, dims):
    """Like ``repeat``, but ``dims`` shorter than ``input.dim()`` is padded with leading 1s
    (matches torch.tile)."""
    check_tensor(input, "tile")
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    dims = (1,) * (input.dim() - len(dims)) + dims
    return _repeat(input, dims)


def _ri_meta(self, repeats, dim=None, output_size=None):
    check_tensor(self, "repeat_interleave")
    if not isinstance(repeats, Tensor):
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be Tensor, not {type(repeats).__name__}")
    if repeats.dim() > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if repeats._dtype not in (D.int64, D.int32):
        raise NotImplementedError(f"\"repeat_interleave\" not implemented for '{D.torch_name(repeats._dtype)}'")
    device = same_device(self, repeats)
    return device, (device.type, self._layout.name, self._dtype)


_repeat_interleave_tensor = declare(
    "repeat_interleave_tensor(Tensor self, Tensor repeats, int? dim=None, *, int? output_size=None) -> Tensor",
    _ri_meta, structured=False, composite=_C.repeat_interleave_tensor,
    doc="Elements repeated repeats[i] times along dim (data-dependent shape).")


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int, or a tensor with one count per element)
    along ``dim``; with ``dim=None`` the input is flattened first (matches torch.repeat_interleave).
    ``repeat_interleave(counts)`` with a single int64 / int32 tensor gives
    ``arange(len(counts)).repeat_interleave(counts)``. RuntimeError "Repeats must be non-negative",
    "repeats must have the same size as input along dim, ...", "repeats must be 0-dim or 1-dim
    tensor"; ``output_size`` is checked against the true size."""
    check_tensor(input, "repeat_interleave")
    if repeats is None:
        from ._creation import arange
        if input.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        _ri_meta(input, input)
        return _repeat_interleave_tensor(arange(input.numel(), dtype=input._dtype, device=input._device),
                                         _reshape(input, (-1,)), 0, output_size=output_size)
    if isinstance(repeats, Tensor) and repeats.dim() == 0 or isinstance(repeats, Tensor) and \
            repeats.numel() == 1 and repeats.dim() == 1:
        if repeats._dtype not in (D.int64, D.int32):
            _ri_meta(input, repeats)
        repeats = int(repeats.item())
    x = _reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, x.dim())
    if isinstance(repeats, Tensor):
        return _repeat_interleave_tensor(x, repeats, d, output_size=output_size)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    if x.dim() == 0:
        x = x.unsqueeze(0)
    size = x._shape[d] * r
    if output_size is not None and output_size != size:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {size} but got {output_size}")
    # x.unsqueeze(d + 1) expanded to r along the new dim, then merged: one copy
    e = x.unsqueeze(d + 1)
    shape = list(e._shape)
    shape[d + 1] = r
    return e.expand(shape).reshape(x._shape[:d] + (size,) + x._shape[d + 1:])


# ---------------------------------------------------------------- tril, triu
def _make_tri_meta(name):
    def meta(self, diagonal=0):
        check_tensor(self, name)
        if self.dim() < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return self._device, (self._device.type, self._layout.name, self._dtype), self._shape, self._dtype
    return meta


def _make_tri_composite(lower):
    def composite(self, diagonal=0, *, out):
        _C.tri(self, diagonal, lower, out)
    return composite


tril = declare("tril(Tensor self, int diagonal=0) -> Tensor", _make_tri_meta("tril"),
               composite=_make_tri_composite(True), inplace=True,
               doc="The lower triangle of the last two dims (elements with j - i <= diagonal kept, others zero; "
                   "batches supported; matches torch.tril). RuntimeError \"tril: input tensor must have at least 2 "
                   "dimensions\".")
triu = declare("triu(Tensor self, int diagonal=0) -> Tensor", _make_tri_meta("triu"),
               composite=_make_tri_composite(False), inplace=True,
               doc="The upper triangle of the last two dims (elements with j - i >= diagonal kept, others zero; "
                   "batches supported; matches torch.triu). RuntimeError \"triu: input tensor must have at least 2 "
                   "dimensions\".")
tril_, triu_ = tril.inplace, triu.inplace


# ---------------------------------------------------------------- diff
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The n-th forward difference along ``dim`` (matches torch.diff): ``x[1:] - x[:-1]``, bool
    inputs use ``!=`` (logical xor). ``prepend`` / ``append`` are concatenated first (same number
    of dims; dtypes promote). RuntimeError "diff expects input to be at least one-dimensional",
    "order must be non-negative but got -1", "diff expects prepend or append to be the same
    dimension as input"."""
    check_tensor(input, "diff")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.dim())
    extras = [e for e in (prepend, append) if e is not None]
    for e in extras:
        check_tensor(e, "diff")
        if e.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    x = input
    if extras:
        x = cat(([prepend] if prepend is not None else []) + [input] + ([append] if append is not None else []), d)
    from ._elementwise import sub, ne
    for _ in range(n):
        size = x._shape[d]
        if size == 0:
            break
        a, b = x.narrow(d, 1, size - 1), x.narrow(d, 0, size - 1)
        x = ne(a, b) if x._dtype is D.bool else sub(a, b)
    if n == 0:
        from ._copy import clone
        x = clone(input)
    if out is not None:
        from .._factory import check_out
        check_out(_cat._op, out, x._shape, x._dtype, x._device)
        return out.copy_(x)
    return x


# ---------------------------------------------------------------- broadcasting, meshgrid, atleast
def broadcast_shapes(*shapes):
    """The shape all ``shapes`` broadcast to, as ``ember.Size`` (matches torch.broadcast_shapes).
    Each shape is a sequence of ints or an int. RuntimeError when they do not broadcast."""
    norm = []
    for s in shapes:
        if isinstance(s, numbers.Integral):
            s = (int(s),)
        norm.append(tuple(int(x) for x in s))
    ref = ()
    for i, s in enumerate(norm):
        try:
            ref = _broadcast_shapes(ref, s)
        except RuntimeError:
            lead = len(ref) - len(s)
            at = next(j for j in range(len(s)) if s[j] != 1 and ref[max(lead, 0) + j if lead >= 0 else j] != 1
                      and s[j] != ref[max(lead, 0) + j]) - len(s)
            raise RuntimeError(f"Attempting to broadcast a dimension of length {s[at]} at {at}! Mismatching "
                               f"argument at index {i} had {tuple(s)}; but expected shape should be broadcastable "
                               f"to {_shape_str(ref)}") from None
    return Size(ref)


def broadcast_to(input, size):
    """``input.expand(size)``: a view with stride 0 along broadcast dims (matches torch.broadcast_to)."""
    check_tensor(input, "broadcast_to")
    return input.expand(size)


def broadcast_tensors(*tensors):
    """The tensors expanded (views) to their common broadcast shape (matches torch.broadcast_tensors).
    RuntimeError "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _broadcast_shapes(*(t._shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 0-D / 1-D tensors (matches torch.meshgrid). ``indexing='ij'`` (the
    default, no warning) gives shape (len(t0), len(t1), ...); ``'xy'`` swaps the first two dims.
    The results are expanded views. RuntimeError for other indexing values, mixed dtypes or
    devices, tensors of more than 1 dim, or no tensors."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'ember.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        check_tensor(t, "meshgrid")
        if t.dim() > 1:
            raise RuntimeError(f"ember.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D")
    if any(t._dtype is not tensors[0]._dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    same_device(*tensors)
    ts = [t.unsqueeze(0) if t.dim() == 0 else t for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t._shape[0] for t in ts)
    n = len(ts)
    grids = [t.view((1,) * i + (-1,) + (1,) * (n - i - 1)).expand(shape) for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _atleast(args, n, name):
    single = len(args) == 1 and isinstance(args[0], Tensor)
    ts = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    out = []
    for t in ts:
        check_tensor(t, name)
        if t.dim() < n:
            if n == 3 and t.dim() == 1:
                t = t.view(1, -1, 1)
            elif n == 3 and t.dim() == 2:
                t = t.unsqueeze(-1)
            else:
                t = _reshape(t, (1,) * (n - t.dim()) + t._shape)
        out.append(t)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each input viewed with at least 1 dim (a 0-dim tensor becomes shape (1,)); one tensor in,
    one out, else a tuple (matches torch.atleast_1d)."""
    return _atleast(tensors, 1, "atleast_1d")


def atleast_2d(*tensors):
    """Each input viewed with at least 2 dims (1-D (n,) -> (1, n)) (matches torch.atleast_2d)."""
    return _atleast(tensors, 2, "atleast_2d")


def atleast_3d(*tensors):
    """Each input viewed with at least 3 dims: () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)
    (matches torch.atleast_3d)."""
    return _atleast(tensors, 3, "atleast_3d")


# ---------------------------------------------------------------- module-level view functions
def transpose(input, dim0, dim1):
    """``input.transpose(dim0, dim1)``: a view with two dims swapped (matches torch.transpose)."""
    return input.transpose(dim0, dim1)


swapaxes = swapdims = transpose


def permute(input, dims):
    """``input.permute(dims)``: a view with dims reordered (matches torch.permute)."""
    return input.permute(dims)


def reshape(input, shape):
    """``input.reshape(shape)``: a view when strides allow, else a copy (matches torch.reshape)."""
    return input.reshape(shape)


def squeeze(input, dim=None):
    """``input.squeeze(dim)``: size-1 dims removed (all, or those in ``dim``) (matches torch.squeeze)."""
    return input.squeeze(dim)


def unsqueeze(input, dim):
    """``input.unsqueeze(dim)``: a size-1 dim inserted at ``dim`` (matches torch.unsqueeze)."""
    return input.unsqueeze(dim)


def flatten(input, start_dim=0, end_dim=-1):
    """``input.flatten(start_dim, end_dim)`` (matches torch.flatten)."""
    return input.flatten(start_dim, end_dim)


def unflatten(input, dim, sizes):
    """``input.unflatten(dim, sizes)`` (matches torch.unflatten)."""
    return input.unflatten(dim, sizes)


def movedim(input, source, destination):
    """``input.movedim(source, destination)``: a view (matches torch.movedim)."""
    return input.movedim(source, destination)


moveaxis = movedim


def narrow(input, dim, start, length):
    """``input.narrow(dim, start, length)``: a view (matches torch.narrow)."""
    return input.narrow(dim, start, length)


def select(input, dim, index):
    """``input.select(dim, index)``: a view with ``dim`` removed (matches torch.select)."""
    return input.select(dim, index)


def split(tensor, split_size_or_sections, dim=0):
    """``tensor.split(split_size_or_sections, dim)``: a tuple of views (matches torch.split)."""
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    """``input.chunk(chunks, dim)``: a tuple of views (matches torch.chunk)."""
    return input.chunk(chunks, dim)


def unbind(input, dim=0):
    """``input.unbind(dim)``: a tuple of ``select`` views (matches torch.unbind)."""
    return input.unbind(dim)


def t(input):
    """``input.t()``: transpose of a tensor of at most 2 dims (matches torch.t)."""
    return input.t()


def adjoint(input):
    """The conjugate transpose of the last two dims, ``input.mH`` (matches torch.adjoint)."""
    return input.mH


def diagonal(input, offset=0, dim1=0, dim2=1):
    """``input.diagonal(offset, dim1, dim2)``: a view (matches torch.diagonal)."""
    return input.diagonal(offset, dim1, dim2)


def as_strided(input, size, stride, storage_offset=None):
    """``input.as_strided(size, stride, storage_offset)``: a view (matches torch.as_strided)."""
    return input.as_strided(size, stride, storage_offset)


def tensor_split(input, indices_or_sections, dim=0):
    """``input.tensor_split(indices_or_sections, dim)``: a tuple of views (matches torch.tensor_split)."""
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    return input.tensor_split(indices_or_sections, dim)


def _split_along(input, sections, d, name, need):
    check_tensor(input, name)
    if input.dim() < need:
        raise RuntimeError(f"ember.{name} requires a tensor with at least {need} dimension, but got a tensor with "
                           f"{input.dim()} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input._shape[d] % sections):
        raise RuntimeError(f"ember.{name} attempted to split along dimension {d}, but the size of the dimension "
                           f"{input._shape[d]} is not divisible by the split_size {sections}!")
    return input.tensor_split(sections, d)


def hsplit(input, indices_or_sections):
    """Split along dim 1 (dim 0 for 1-D inputs) (matches torch.hsplit)."""
    check_tensor(input, "hsplit")
    return _split_along(input, indices_or_sections, 0 if input.dim() == 1 else 1, "hsplit", 1)


def vsplit(input, indices_or_sections):
    """Split along dim 0 of an at-least-2-D tensor (matches torch.vsplit)."""
    return _split_along(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    """Split along dim 2 of an at-least-3-D tensor (matches torch.dsplit)."""
    return _split_along(input, indices_or_sections, 2, "dsplit", 3)


def ravel(input):
    """The elements as a 1-D tensor, a view when possible (matches torch.ravel)."""
    return _reshape(input, (-1,))


def _method_dims(fn, name):
    """The method form of ``fn(input, dims)``, which takes ``dims`` as varargs too (``x.flip(0, 1)``,
    ``x.tile(2, 1)``, as torch.Tensor.flip / tile do) or as ``dims=``."""
    from .._tensor import _sizes_kw

    def method(self, *dims, **kwargs):
        dims = _sizes_kw(dims, kwargs, name, "dims")
        return fn(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], numbers.Integral) else dims)
    method.__name__ = name
    method.__doc__ = fn.__doc__
    return method


def _bind():
    T = Tensor
    T.repeat = repeat
    T.flip, T.tile = _method_dims(flip, "flip"), _method_dims(tile, "tile")
    for name in ("fliplr", "flipud", "roll", "rot90", "repeat_interleave", "tril", "triu", "tril_",
                 "triu_", "diff", "broadcast_to", "ravel", "adjoint", "hsplit", "vsplit", "dsplit"):
        setattr(T, name, globals()[name])


_bind()
