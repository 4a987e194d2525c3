"""Shared pieces of meta functions: device agreement, broadcasting, dtype rules, dims.

Meta functions run on every backend, before any kernel, so the same bad input gets
the same exception class and message everywhere. Hot meta functions memoise their
result per (dtypes, shapes, devices, layouts) in a cache registered with the
dispatcher (cleared when kernels are registered).
"""
from __future__ import annotations

import builtins
import numbers

from .. import _dtype as D
from .._dispatch import _META_CACHES
from .._tensor import Tensor, _wrap_dim

__all__ = ["same_device", "broadcast_shapes", "make_binary_meta", "make_unary_meta", "key_of", "wrap_dim",
           "reduce_dims", "reduced_shape", "meta_cache", "check_tensor", "check_dtype_errors"]

wrap_dim = _wrap_dim
_CACHE_LIMIT = 8192


def meta_cache() -> dict:
    """A dict for a memoising meta function, cleared with the dispatcher's caches."""
    c = {}
    _META_CACHES.append(c)
    return c


def check_tensor(x, op, arg="input"):
    """TypeError in PyTorch's words unless ``x`` is a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position 1) must be Tensor, not {type(x).__name__}")


def same_device(*xs):
    """The common device of the tensors among ``xs``; 0-dim cpu tensors go with any device.

    RuntimeError "Expected all tensors to be on the same device, but found at least two
    devices, cuda:0 and cpu!" otherwise (PyTorch's message).
    """
    dev = None
    cpu_scalar = None
    for x in xs:
        if isinstance(x, Tensor):
            d = x._device
            if dev is None or dev is d:
                dev = d
                continue
            if d.type == "cpu" and not x._shape:
                cpu_scalar = d
                continue
            if dev.type == "cpu" and cpu_scalar is None and _was_scalar(xs, dev):
                dev = d
                continue
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {d}!")
    return dev


def _was_scalar(xs, dev):
    return all(not x._shape for x in xs if isinstance(x, Tensor) and x._device is dev)


def broadcast_shapes(*shapes):
    """The broadcast of the shapes (matches torch.broadcast_shapes); RuntimeError in PyTorch's words."""
    s0 = shapes[0] if shapes else ()
    if all(s == s0 for s in shapes):      # the common case (optimizer steps): nothing to broadcast
        return tuple(s0)
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i in range(1, len(s) + 1):
            a, b = out[-i], s[-i]
            if a == b or b == 1:
                continue
            if a == 1:
                out[-i] = b
            else:
                raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                                   f"non-singleton dimension {ndim - i}")
    return tuple(out)


def _broadcast2(a, b):
    if a == b:
        return a
    la, lb = len(a), len(b)
    n = la if la > lb else lb
    out = [0] * n
    for i in range(n - 1, -1, -1):   # from the last dim, so the message names the one PyTorch names
        x = a[i - n + la] if i - n + la >= 0 else 1
        y = b[i - n + lb] if i - n + lb >= 0 else 1
        if x == y or y == 1:
            out[i] = x
        elif x == 1:
            out[i] = y
        else:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                               f"non-singleton dimension {i}")
    return tuple(out)


def key_of(device, layout, dtype):
    """The dispatch key (device type, layout name, dtype)."""
    return (device.type, layout.name, dtype)


def _dtype_name(d):
    return D.torch_name(d)


# ---------------------------------------------------------------- binary elementwise
def _category(d):
    """'bool' | 'int' | 'float' | 'complex': the row of a dtype in an op's ``errors`` table."""
    return "bool" if d is D.bool else "complex" if d.is_complex else "float" if d.is_floating_point else "int"


def _not_implemented(opname, d):
    # PyTorch raises NotImplementedError (a RuntimeError) when an op has no kernel for a dtype
    return NotImplementedError(f"\"{opname}\" not implemented for '{_dtype_name(d)}'")


def check_dtype_errors(opname, errors, d):
    """Raise the error ``errors`` declares for ``d``'s category, if any.

    ``errors`` maps a category ('bool', 'int', 'float', 'complex') to ``None`` (PyTorch's
    NotImplementedError '"op" not implemented for 'Long'') or an exception instance to raise.
    """
    if errors:
        cat = _category(d)
        if cat in errors:
            e = errors[cat]
            raise _not_implemented(opname, d) if e is None else type(e)(*e.args)


def _binary_dtypes(rule, opname, self, other, errors=None):
    """(compute dtype, output dtype) for a binary elementwise op under ``rule``."""
    compute = D.result_type(self, other)
    check_dtype_errors(opname, errors, compute)
    if rule == "promote":
        return compute, compute
    if rule == "float":          # true division, atan2, ...: integers compute in the default float
        if not (compute.is_floating_point or compute.is_complex):
            compute = D.get_default_dtype()
        return compute, compute
    if rule == "compare":
        return compute, D.bool
    if rule == "logical":
        return compute, D.bool
    if rule == "integral":       # bitwise ops, shifts, gcd
        if compute.is_floating_point or compute.is_complex:
            raise _not_implemented(opname, compute)
        return compute, compute
    if rule == "real":           # maximum, remainder, fmod, floor_divide: not for complex
        if compute.is_complex:
            raise RuntimeError(f"{opname} not implemented for complex tensors.")
        return compute, compute
    raise AssertionError(rule)


def _is_boolish(x):
    return x.__class__ is builtins.bool or (isinstance(x, Tensor) and x._dtype is D.bool)


def make_binary_meta(opname, rule="promote", *, alpha=False, bool_ok=True, errors=None, scalars="both"):
    """A memoising meta function for a broadcasting binary op.

    Returns ``meta(self, other[, alpha]) -> (device, key, shape, out_dtype)`` where
    the key's dtype is the computation dtype. ``scalars`` says which operand may be a Python
    scalar, as PyTorch's signatures do: "both" (add, mul, ...), "other" (eq, lt, fmod, ...: the
    input must be a Tensor) or "none" (atan2, maximum, logical_and, ...); TypeError otherwise.
    ``bool_ok=False`` refuses bool operands with PyTorch's subtraction message;
    ``errors`` (see ``check_dtype_errors``) refuses categories of the promoted dtype.
    """
    cache = meta_cache()

    def slow(self, other):
        if not isinstance(self, Tensor):
            if not isinstance(other, Tensor):
                raise TypeError(f"{opname}(): argument 'input' (position 1) must be Tensor, not "
                                f"{type(self).__name__}")
            if scalars == "none":
                raise TypeError(f"{opname}(): argument 'input' (position 1) must be Tensor, not "
                                f"{type(self).__name__}")
            if scalars == "other":
                raise TypeError(f"{opname}() received an invalid combination of arguments - got "
                                f"({type(self).__name__}, Tensor), but expected one of:\n"
                                f" * (Tensor input, Tensor other, *, Tensor out = None)\n"
                                f" * (Tensor input, Number other, *, Tensor out = None)")
            self, other = other, self   # dtype / shape rules are symmetric
        if scalars == "none" and not isinstance(other, Tensor):
            raise TypeError(f"{opname}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
        if not isinstance(other, (Tensor, numbers.Number)):
            raise TypeError(f"{opname}(): argument 'other' (position 2) must be Tensor or Number, not "
                            f"{type(other).__name__}")
        device = same_device(self, other)
        if not bool_ok and (_is_boolish(self) or _is_boolish(other)):
            if _is_boolish(self) and _is_boolish(other):
                raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use "
                                   "the `^` or `logical_xor()` operator instead.")
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        compute, out = _binary_dtypes(rule, opname, self, other, errors)
        shape = _broadcast2(self._shape, other._shape) if isinstance(other, Tensor) else self._shape
        layout = self._layout
        if layout.name == "strided" and isinstance(other, Tensor) and other._layout is not layout:
            layout = other._layout      # dense op sparse: the sparse layout's kernel decides (memoised)
        return device, (device.type, layout.name, compute), shape, out

    def meta(self, other, alpha=1):
        try:
            cls = other.__class__   # a Tensor subclass (nn.Parameter) must be keyed by its shape too
            if cls is Tensor or (cls is not float and cls is not int and isinstance(other, Tensor)):
                ck = (self._dtype, other._dtype, self._shape, other._shape, self._device, other._device,
                      self._layout, other._layout)
            else:
                ck = (self._dtype, other.__class__, self._shape, self._device, self._layout)
            r = cache[ck]
        except KeyError:
            r = None
        except AttributeError:      # a non-tensor self: slow() raises the user's error (not chained to this)
            ck = r = None
        if r is None:
            r = slow(self, other)
            if ck is not None:
                if len(cache) > _CACHE_LIMIT:
                    cache.clear()
                cache[ck] = r
        if alpha != 1:
            _check_alpha(opname, r[3], alpha)
        return r

    meta.slow = slow
    return meta


def _check_alpha(opname, dtype, alpha):
    if isinstance(alpha, Tensor):
        alpha = alpha.item()
    if dtype is D.bool and not isinstance(alpha, builtins.bool):
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not (dtype.is_floating_point or dtype.is_complex) and isinstance(alpha, float) and alpha != int(alpha):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if isinstance(alpha, complex) and not dtype.is_complex:
        raise RuntimeError(f"For non-complex input tensors, argument alpha must not be a complex number.")


# ---------------------------------------------------------------- unary elementwise
def make_unary_meta(opname, rule="same", errors=None):
    """A memoising meta for a unary elementwise op: ``meta(self, *extra) -> (device, key, shape, dtype)``.

    rule: "same" (dtype kept), "float" (integers and bool compute in the default float),
    "bool" (output bool), "real" (complex -> its real dtype, e.g. abs), "no_bool",
    "no_complex", "integral" (bitwise_not), "square" (bool -> int64, as x ** 2).
    ``errors`` (see ``check_dtype_errors``) refuses categories of the input dtype.
    """
    cache = meta_cache()

    def slow(self):
        check_tensor(self, opname)
        dt = self._dtype
        check_dtype_errors(opname, errors, dt)
        compute = out = dt
        if rule == "float":
            if not (dt.is_floating_point or dt.is_complex):
                compute = out = D.get_default_dtype()
        elif rule == "bool":
            out = D.bool
        elif rule == "real":
            out = dt.to_real
        elif rule == "square":
            if dt is D.bool:
                compute = out = D.int64
        elif rule == "no_bool" and dt is D.bool:
            raise RuntimeError(f"{opname}: bool tensors are not supported" if opname != "neg" else
                               "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        elif rule == "no_complex" and dt.is_complex:
            raise RuntimeError(f"{opname} is not supported for complex inputs")
        elif rule == "integral" and (dt.is_floating_point or dt.is_complex):
            raise _not_implemented(opname, dt)
        return self._device, (self._device.type, self._layout.name, compute), self._shape, out

    def meta(self, *extra):
        try:
            ck = (self._dtype, self._shape, self._device, self._layout)
            return cache[ck]
        except KeyError:
            pass
        except AttributeError:      # a non-tensor: slow() raises the user's error, outside this handler
            ck = None
        r = slow(self)
        if ck is not None:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            cache[ck] = r
        return r

    return meta


# ---------------------------------------------------------------- reductions
def reduce_dims(self, dim):
    """``dim`` (None, int, or sequence) as a sorted tuple of non-negative dims; IndexError when out of range."""
    n = len(self._shape)
    if dim is None:
        return tuple(range(n))
    if isinstance(dim, (tuple, list)):
        dims = tuple(_wrap_dim(d, n) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
        return tuple(sorted(dims)) if dims else tuple(range(n))
    return (_wrap_dim(dim, n),)


def reduced_shape(shape, dims, keepdim):
    """The shape after reducing ``dims`` (kept as size 1 when keepdim)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)
