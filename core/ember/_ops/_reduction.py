"""Reductions, scans and sorting: sum, mean, max, var, norm, cumsum, sort, topk, unique, searchsorted, ...

Matches the torch functions of the same names: signatures, defaults, result dtypes
(integer and bool sums / products / cumsums give int64; ``mean``/``var`` refuse
integers; index outputs are int64), empty-tensor rules and error messages. Every
check lives in a meta function here, so every backend raises the same exception.

Ops whose PyTorch name has several overloads (``max(input)``, ``max(input, dim)``,
``max(input, other)``) are declared once per overload under distinct op names
(``max``, ``max_dim``) and joined by a thin public wrapper with PyTorch's signature.
Ops returning (values, indices) return the named tuples of ``ember.return_types``.
"""
from __future__ import annotations

import builtins
import math
import numbers
import warnings

from .. import _dtype as D
from .. import return_types as RT
from .._dispatch import declare
from .._tensor import Tensor, _wrap_dim
from ._meta import check_tensor, reduce_dims, reduced_shape, meta_cache, same_device

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "aminmax",
           "var", "std", "var_mean", "std_mean", "norm", "logsumexp", "all", "any", "count_nonzero", "cumsum",
           "cumprod", "cummax", "cummin", "median", "nanmedian", "mode", "sort", "argsort", "msort", "topk",
           "kthvalue", "unique", "unique_consecutive", "searchsorted", "bucketize", "bincount"]

_name = D.torch_name
_CACHE_LIMIT = 4096


def _key(self, dt):
    return self._device, (self._device.type, self._layout.name, dt)


def _memo(meta):
    """Memoise a meta function per (input dtype/shape/device/layout, other arguments); the
    other arguments must be plain values (ints, tuples, dtypes), else the slow path runs."""
    cache = meta_cache()

    def m(self, *args, **kwargs):
        try:
            k = (self._dtype, self._shape, self._device, self._layout,
                 tuple((a.__class__, a) for a in args), tuple((n, v.__class__, v) for n, v in kwargs.items()))
            return cache[k]
        except KeyError:
            pass
        except (TypeError, AttributeError):    # an unhashable argument (a list of dims) or a non-tensor
            k = None
        r = meta(self, *args, **kwargs)        # outside the handlers: its errors are not chained to them
        if k is not None:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            cache[k] = r
        return r
    return m


def _check_dtype_arg(dtype, op):
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be ember.dtype, not {type(dtype).__name__}")


def _check_dim_list(dim, op):
    if dim is None or isinstance(dim, (tuple, list)):
        for d in dim or ():
            if not isinstance(d, numbers.Integral) or isinstance(d, builtins.bool):
                raise TypeError(f"{op}(): argument 'dim' must be tuple of ints, but found element of type "
                                f"{type(d).__name__}")
        return
    if not isinstance(dim, numbers.Integral) or isinstance(dim, builtins.bool):
        raise TypeError(f"{op}(): argument 'dim' must be tuple of ints, not {type(dim).__name__}")


def _check_int_dim(dim, op):
    if not isinstance(dim, numbers.Integral) or isinstance(dim, builtins.bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")


def _reduce(self, dim, keepdim, op):
    """(sorted reduced dims, output shape) for a reduction of ``self`` over ``dim``."""
    check_tensor(self, op)
    _check_dim_list(dim, op)
    dims = reduce_dims(self, dim)
    return dims, reduced_shape(self._shape, dims, keepdim)


def _nonempty(self, dims, explicit, op, sep="(): "):
    """max/amax/argmax...: no identity, so each reduced dim must be non-empty."""
    if explicit and self._shape:
        for d in dims:
            if self._shape[d] == 0:
                raise IndexError(f"{op}{sep}Expected reduction dim {d} to have non-zero size.")
    if self.numel() == 0 and not explicit:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           f"reduction dim with the 'dim' argument.")


def _not_impl(op, dt):
    return NotImplementedError(f"\"{op}\" not implemented for '{_name(dt)}'")


def _int_to_long(dt):
    return D.int64 if dt is D.bool or dt in D.INTEGRAL else dt


# ---------------------------------------------------------------- sum, nansum, prod, mean
def _sum_meta_for(op):
    @_memo
    def meta(self, dim=None, keepdim=False, *, dtype=None):
        dims, shape = _reduce(self, dim, keepdim, op)
        if op == "nansum" and self._dtype.is_complex:
            raise RuntimeError("nansum does not support complex inputs")
        _check_dtype_arg(dtype, op)
        out = dtype or _int_to_long(self._dtype)
        return (*_key(self, out), shape, out)
    return meta


_REDUCE_DOC = ("``dim`` is None (all dims), an int or a tuple of ints; ``keepdim`` keeps reduced dims with size 1. "
               "IndexError for a dim out of range, RuntimeError for a repeated dim.")

sum = declare("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
              _sum_meta_for("sum"), doc="Sum of the elements over ``dim`` (matches torch.sum). " + _REDUCE_DOC +
              " Result dtype: ``dtype`` if given (the input is cast first), int64 for integer and bool inputs, "
              "else the input's. The sum of no elements is 0.")
nansum = declare("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                 _sum_meta_for("nansum"), doc="``sum`` treating NaN as zero (matches torch.nansum). " + _REDUCE_DOC +
                 " RuntimeError for complex inputs.")


@_memo
def _prod_meta(self, dim=None, keepdim=False, *, dtype=None):
    check_tensor(self, "prod")
    if dim is not None:
        _check_int_dim(dim, "prod")
    _check_dtype_arg(dtype, "prod")
    dims = reduce_dims(self, dim)
    out = dtype or _int_to_long(self._dtype)
    return (*_key(self, out), reduced_shape(self._shape, dims, keepdim), out)


prod = declare("prod(Tensor self, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
               _prod_meta, doc="Product of the elements, of all or over one ``dim`` (an int; matches torch.prod). "
               "Result dtype as ``sum``. The product of no elements is 1.")


def _mean_dtype(self, dtype, op="mean"):
    if dtype is not None:
        _check_dtype_arg(dtype, op)
        if not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {_name(dtype)}")
        return dtype
    dt = self._dtype
    if not (dt.is_floating_point or dt.is_complex):
        if op == "nanmean":
            raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                               f"{_name(dt)}")
        raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_name(dt)}")
    return dt


@_memo
def _mean_meta(self, dim=None, keepdim=False, *, dtype=None):
    dims, shape = _reduce(self, dim, keepdim, "mean")
    out = _mean_dtype(self, dtype)
    return (*_key(self, out), shape, out)


@_memo
def _nanmean_meta(self, dim=None, keepdim=False, *, dtype=None):
    dims, shape = _reduce(self, dim, keepdim, "nanmean")
    out = _mean_dtype(self, None, "nanmean") if dtype is None else _mean_dtype(self, dtype, "nanmean")
    return (*_key(self, out), shape, out)


mean = declare("mean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
               _mean_meta, doc="Arithmetic mean over ``dim`` (matches torch.mean). " + _REDUCE_DOC +
               " Floating and complex inputs only (or a floating ``dtype``): RuntimeError \"mean(): could not "
               "infer output dtype...\" for integers and bool. The mean of no elements is NaN.")
nanmean = declare("nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
                  _nanmean_meta, doc="``mean`` of the non-NaN elements (matches torch.nanmean). " + _REDUCE_DOC)


# ---------------------------------------------------------------- max / min family
def _amax_meta_for(op, impl_name):
    @_memo
    def meta(self, dim=(), keepdim=False):
        dims, shape = _reduce(self, dim, keepdim, op)
        if self._dtype.is_complex:
            raise _not_impl(impl_name, self._dtype)
        explicit = dim is not None and (dim != () and dim != [])
        _nonempty(self, dims, explicit, op)
        return (*_key(self, self._dtype), shape, self._dtype)
    return meta


amax = declare("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", _amax_meta_for("amax", "max_values"),
               doc="Maximum over ``dim`` (all dims by default; matches torch.amax). NaN propagates. IndexError when a "
                   "reduced dim is empty, RuntimeError for an empty input with no dim; complex inputs unsupported.")
amin = declare("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", _amax_meta_for("amin", "min_values"),
               doc="Minimum over ``dim`` (all dims by default; matches torch.amin). NaN propagates. Errors as amax.")


def _full_meta_for(op, impl_name):
    @_memo
    def meta(self):
        check_tensor(self, op)
        if self._dtype.is_complex:
            raise _not_impl(impl_name, self._dtype)
        _nonempty(self, (), False, op)
        return (*_key(self, self._dtype), (), self._dtype)
    return meta


_max_all = declare("max(Tensor self) -> Tensor", _full_meta_for("max", "max_all"), doc="Maximum of all elements.")
_min_all = declare("min(Tensor self) -> Tensor", _full_meta_for("min", "min_all"), doc="Minimum of all elements.")


def _dim_meta_for(op, *, bool_ok=True, complex_msg=None, impl_name=None):
    """Meta for ``op(self, dim, keepdim)`` returning (values, indices) reduced over one dim."""
    @_memo
    def meta(self, dim=-1, keepdim=False):
        check_tensor(self, op)
        _check_int_dim(dim, op)
        d = _wrap_dim(dim, len(self._shape))
        dt = self._dtype
        if dt.is_complex or (dt is D.bool and not bool_ok):
            if complex_msg and dt.is_complex:
                raise RuntimeError(complex_msg)
            raise _not_impl(impl_name or op, dt)
        _nonempty(self, (d,), True, op)
        shape = reduced_shape(self._shape, (d,), keepdim) if self._shape else ()
        return (*_key(self, dt), ((shape, dt), (shape, D.int64)))
    return meta


_max_dim = declare("max_dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
                   _dim_meta_for("max", complex_msg="max(): does not support complex input"),
                   multi_output_type=RT.max, doc="(values, indices) of the maximum over ``dim``.")
_min_dim = declare("min_dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
                   _dim_meta_for("min", complex_msg="min(): does not support complex input"),
                   multi_output_type=RT.min, doc="(values, indices) of the minimum over ``dim``.")


def _minmax(op, all_fn, dim_fn, binary, input, dim, keepdim, other, out):
    if other is not None:
        dim = other
    if isinstance(dim, Tensor):
        return binary(input, dim, out=out)
    check_tensor(input, op)
    if dim is None:
        if keepdim:
            raise TypeError(f"{op}() received an invalid combination of arguments - got (Tensor, keepdim=bool)")
        return all_fn(input, out=out)
    if not isinstance(dim, numbers.Integral) or isinstance(dim, builtins.bool):
        raise TypeError(f"{op}() received an invalid combination of arguments - got (Tensor, {type(dim).__name__})")
    return dim_fn(input, dim, keepdim, out=out)


def max(input, dim=None, keepdim=False, *, other=None, out=None):
    """Maximum, with PyTorch's three forms (matches torch.max):

    - ``max(input)``: a 0-dim tensor, the largest element (NaN propagates). RuntimeError for
      an empty input ("Expected reduction dim to be specified for input.numel() == 0...").
    - ``max(input, dim, keepdim=False)``: ``ember.return_types.max(values, indices)``; indices
      are int64, the first occurrence of the maximum. IndexError when dim is out of range
      or has size 0.
    - ``max(input, other)``: the elementwise ``maximum`` of two tensors.
    """
    from ._elementwise import maximum
    return _minmax("max", _max_all, _max_dim, maximum, input, dim, keepdim, other, out)


def min(input, dim=None, keepdim=False, *, other=None, out=None):
    """Minimum; the three forms of ``max`` (matches torch.min)."""
    from ._elementwise import minimum
    return _minmax("min", _min_all, _min_dim, minimum, input, dim, keepdim, other, out)


def _argmax_meta_for(op):
    @_memo
    def meta(self, dim=None, keepdim=False):
        check_tensor(self, op)
        if self._dtype.is_complex:
            raise RuntimeError(f"{op}(): does not support complex input")
        if self._dtype is D.bool:
            raise RuntimeError(f"{op}(): does not support bool input")
        if dim is None:
            if self.numel() == 0:
                raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
            shape = tuple(1 for _ in self._shape) if keepdim else ()
        else:
            _check_int_dim(dim, op)
            d = _wrap_dim(dim, len(self._shape))
            _nonempty(self, (d,), True, op)
            shape = reduced_shape(self._shape, (d,), keepdim) if self._shape else ()
        return (*_key(self, self._dtype), shape, D.int64)
    return meta


argmax = declare("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", _argmax_meta_for("argmax"),
                 doc="int64 index of the maximum over ``dim``, or into the flattened input when dim is None (the "
                     "first occurrence; NaN counts as the maximum). Matches torch.argmax. RuntimeError for bool or "
                     "complex input, IndexError for an empty reduction.")
argmin = declare("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", _argmax_meta_for("argmin"),
                 doc="int64 index of the minimum; as argmax (matches torch.argmin).")


@_memo
def _aminmax_meta(self, *, dim=None, keepdim=False):
    check_tensor(self, "aminmax")
    if self._dtype.is_complex:
        raise _not_impl("aminmax", self._dtype)
    if dim is None:
        if self.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        shape = tuple(1 for _ in self._shape) if keepdim else ()
    else:
        _check_int_dim(dim, "aminmax")
        d = _wrap_dim(dim, len(self._shape))
        _nonempty(self, (d,), True, "aminmax", sep=": ")
        shape = reduced_shape(self._shape, (d,), keepdim) if self._shape else ()
    return (*_key(self, self._dtype), ((shape, self._dtype), (shape, self._dtype)))


aminmax = declare("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
                  _aminmax_meta, multi_output_type=RT.aminmax,
                  doc="``ember.return_types.aminmax(min, max)`` over ``dim`` or all elements (matches torch.aminmax). "
                      "RuntimeError for an empty input with no dim; IndexError for an empty dim.")


# ---------------------------------------------------------------- var / std / norm / logsumexp
def _var_meta_for(op):
    def meta(self, dim=None, *, correction=None, keepdim=False):
        dims, shape = _reduce(self, dim, keepdim, op)
        dt = self._dtype
        if not (dt.is_floating_point or dt.is_complex):
            raise RuntimeError("std and var only support floating point and complex dtypes")
        if correction is not None and not isinstance(correction, numbers.Real):
            raise TypeError(f"{op}(): argument 'correction' must be Number, not {type(correction).__name__}")
        n = math.prod(self._shape[d] for d in dims) if self._shape else 1
        if n - (1 if correction is None else correction) <= 0:
            warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                          f"reduction factor (input numel divided by output numel).", UserWarning, stacklevel=4)
        return (*_key(self, dt), shape, dt.to_real)
    return meta


_var = declare("var(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
               _var_meta_for("var"), doc="Variance.")
_std = declare("std(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
               _var_meta_for("std"), doc="Standard deviation.")


def _var_args(op, dim, unbiased, correction):
    if isinstance(dim, builtins.bool):      # var(input, unbiased): the legacy overload
        if unbiased is not None:
            raise TypeError(f"{op}() received an invalid combination of arguments - got (Tensor, bool, bool)")
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{op}() received an invalid combination of arguments - got (Tensor, correction=int, "
                            f"unbiased=bool)")
        correction = 1 if unbiased else 0
    return dim, correction


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim``: sum(|x - mean|^2) / max(0, N - correction), N the number of reduced
    elements (matches torch.var).

    ``correction`` defaults to 1 (Bessel's correction); the legacy ``unbiased`` flag (also as
    ``var(input, unbiased)``) means correction 1 / 0 and may not be combined with ``correction``.
    Floating and complex inputs only (RuntimeError otherwise); complex inputs give their real
    dtype. UserWarning when N - correction <= 0 (the result is then NaN or inf).
    """
    dim, correction = _var_args("var", dim, unbiased, correction)
    return _var(input, dim, correction=correction, keepdim=keepdim, out=out)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation, ``sqrt(var(...))``; arguments and errors as ``var`` (matches torch.std)."""
    dim, correction = _var_args("std", dim, unbiased, correction)
    return _std(input, dim, correction=correction, keepdim=keepdim, out=out)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over the same dims, a plain tuple (matches torch.var_mean)."""
    dim, correction = _var_args("var_mean", dim, unbiased, correction)
    v = _var(input, dim, correction=correction, keepdim=keepdim)
    return v, mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over the same dims, a plain tuple (matches torch.std_mean)."""
    dim, correction = _var_args("std_mean", dim, unbiased, correction)
    s = _std(input, dim, correction=correction, keepdim=keepdim)
    return s, mean(input, dim, keepdim)


def _fmt_p(p):
    return "inf" if p == math.inf else "-inf" if p == -math.inf else f"{p:g}"


def _norm_meta(self, p=2, dim=None, keepdim=False, *, dtype=None):
    check_tensor(self, "norm")
    dt = self._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {_name(dt)}")
    _check_dtype_arg(dtype, "norm")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got {_name(dtype)}")
    _check_dim_list(dim, "norm")
    dims = reduce_dims(self, dim)
    if p == "nuc":
        if len(dims) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    elif not isinstance(p, numbers.Real) or isinstance(p, builtins.bool):
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    elif p < 0 or p == math.inf:
        if dim is None and self.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_p(p)} norm on an empty tensor because "
                               f"the operation does not have an identity")
        for d in dims:
            if self._shape and self._shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_p(p)} norm on the dimension {d} "
                                   f"because this dimension is empty and the operation does not have an identity")
    out = (dtype or dt).to_real
    return (*_key(self, dtype or dt), reduced_shape(self._shape, dims, keepdim), out)


_norm = declare("norm(Tensor self, Scalar? p=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
                "-> Tensor", _norm_meta, doc="Vector p-norm (or 'nuc' matrix norm) over dims.")


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The p-norm of ``input`` over ``dim`` (all dims when None); matches torch.norm / Tensor.norm.

    ``p``: a number (``inf``: max |x|, ``-inf``: min |x|, ``0``: count of non-zeros, else
    (sum |x|^p)^(1/p)), ``'fro'`` (the 2-norm; dim None, an int or up to 2 dims) or
    ``'nuc'`` (the nuclear norm over 2 dims). Floating and complex inputs only; complex
    inputs give their real dtype; ``dtype`` computes (and returns) in that dtype.
    RuntimeError for integer inputs, an unknown order, or an inf / negative norm over an
    empty dim.
    """
    if isinstance(dim, numbers.Integral) and not isinstance(dim, builtins.bool):
        dim = (dim,)
    if p is None or p == "fro":
        if dim is not None and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
        p = 2
    elif p == "nuc" and dim is None:
        check_tensor(input, "norm")
        if input.dim() != 2:
            raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    elif isinstance(p, str) and p != "nuc":
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return _norm(input, p, dim, keepdim, dtype=dtype, out=out)


@_memo
def _logsumexp_meta(self, dim, keepdim=False):
    dims, shape = _reduce(self, dim, keepdim, "logsumexp")
    dt = self._dtype
    out = dt if dt.is_floating_point or dt.is_complex else D.get_default_dtype()
    return (*_key(self, out), shape, out)


logsumexp = declare("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", _logsumexp_meta,
                    doc="log(sum(exp(x))) over ``dim``, computed stably (matches torch.logsumexp). Integer and bool "
                        "inputs give the default float dtype. The logsumexp of no elements is -inf.")


# ---------------------------------------------------------------- all / any / count_nonzero
def _logical_meta_for(op):
    @_memo
    def meta(self, dim=None, keepdim=False):
        dims, shape = _reduce(self, dim, keepdim, op)
        out = D.uint8 if self._dtype is D.uint8 else D.bool
        return (*_key(self, self._dtype), shape, out)
    return meta


all = declare("all(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", _logical_meta_for("all"),
              doc="Whether every element over ``dim`` is non-zero (matches torch.all). bool result (uint8 for uint8 "
                  "inputs, as PyTorch); True for no elements.")
any = declare("any(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", _logical_meta_for("any"),
              doc="Whether any element over ``dim`` is non-zero (matches torch.any). bool result (uint8 for uint8 "
                  "inputs); False for no elements.")


@_memo
def _count_nonzero_meta(self, dim=None):
    dims, shape = _reduce(self, dim, False, "count_nonzero")
    return (*_key(self, self._dtype), shape, D.int64)


count_nonzero = declare("count_nonzero(Tensor self, int[1]? dim=None) -> Tensor", _count_nonzero_meta,
                        doc="int64 count of the non-zero elements over ``dim`` (an int or tuple; all dims when "
                            "None). Matches torch.count_nonzero.")


# ---------------------------------------------------------------- scans
def _scan_meta_for(op):
    @_memo
    def meta(self, dim, *, dtype=None):
        check_tensor(self, op)
        _check_int_dim(dim, op)
        _wrap_dim(dim, len(self._shape))
        _check_dtype_arg(dtype, op)
        out = dtype or _int_to_long(self._dtype)
        return (*_key(self, out), self._shape, out)
    return meta


cumsum = declare("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", _scan_meta_for("cumsum"),
                 inplace=True, doc="Cumulative sum along ``dim`` (required; matches torch.cumsum). Result dtype as "
                                   "``sum``: ``dtype`` if given, int64 for integer / bool inputs.")
cumprod = declare("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", _scan_meta_for("cumprod"),
                  inplace=True, doc="Cumulative product along ``dim`` (matches torch.cumprod); dtypes as cumsum.")
cumsum_, cumprod_ = cumsum.inplace, cumprod.inplace


def _cumext_meta_for(op):
    @_memo
    def meta(self, dim):
        check_tensor(self, op)
        _check_int_dim(dim, op)
        _wrap_dim(dim, len(self._shape))
        if self._dtype.is_complex:
            raise _not_impl(op, self._dtype)
        return (*_key(self, self._dtype), ((self._shape, self._dtype), (self._shape, D.int64)))
    return meta


cummax = declare("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", _cumext_meta_for("cummax"),
                 multi_output_type=RT.cummax,
                 doc="Running maximum along ``dim`` and the int64 index where it was reached (the last index on ties; "
                     "NaN propagates). Matches torch.cummax; complex unsupported.")
cummin = declare("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", _cumext_meta_for("cummin"),
                 multi_output_type=RT.cummin, doc="Running minimum along ``dim``; as cummax (matches torch.cummin).")


# ---------------------------------------------------------------- order statistics
def _median_all_meta_for(op):
    @_memo
    def meta(self):
        check_tensor(self, op)
        if self._dtype.is_complex or self._dtype is D.bool:
            raise _not_impl(op, self._dtype)
        return (*_key(self, self._dtype), (), self._dtype)
    return meta


_median_all = declare("median(Tensor self) -> Tensor", _median_all_meta_for("median"), doc="Lower median.")
_nanmedian_all = declare("nanmedian(Tensor self) -> Tensor", _median_all_meta_for("nanmedian"),
                         doc="Lower median ignoring NaN.")
_median_dim = declare("median_dim(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
                      _dim_meta_for("median", bool_ok=False), multi_output_type=RT.median, doc="Median over dim.")
_nanmedian_dim = declare("nanmedian_dim(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, "
                         "Tensor indices)", _dim_meta_for("nanmedian", bool_ok=False),
                         multi_output_type=RT.nanmedian, doc="Median over dim ignoring NaN.")


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median (matches torch.median).

    ``median(input)``: a 0-dim tensor, the ((N - 1) // 2)-th smallest element; NaN if any
    element is NaN (and for an empty float input). ``median(input, dim, keepdim=False)``:
    ``ember.return_types.median(values, indices)`` over ``dim``. bool and complex inputs are
    unsupported (NotImplementedError, a RuntimeError); IndexError for an empty dim.
    """
    if dim is None:
        return _median_all(input, out=out)
    return _median_dim(input, dim, keepdim, out=out)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """``median`` ignoring NaN: the lower median of the non-NaN elements (NaN when all are NaN).
    Matches torch.nanmedian."""
    if dim is None:
        return _nanmedian_all(input, out=out)
    return _nanmedian_dim(input, dim, keepdim, out=out)


mode = declare("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
               _dim_meta_for("mode"), multi_output_type=RT.mode,
               doc="The most frequent value over ``dim`` (the smallest on ties) and the index of its last "
                   "occurrence (matches torch.mode). IndexError for an empty dim; complex unsupported.")


_kth_dim_meta = _dim_meta_for("kthvalue", bool_ok=False)


def _kthvalue_meta(self, k, dim=-1, keepdim=False):
    r = _kth_dim_meta(self, dim, keepdim)
    d = _wrap_dim(dim, len(self._shape))
    size = self._shape[d] if self._shape else 1
    if not isinstance(k, numbers.Integral) or isinstance(k, builtins.bool):
        raise TypeError(f"kthvalue(): argument 'k' must be int, not {type(k).__name__}")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return r


kthvalue = declare("kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
                   _kthvalue_meta, multi_output_type=RT.kthvalue,
                   doc="The k-th smallest element over ``dim`` (k from 1) and its int64 index (matches "
                       "torch.kthvalue). RuntimeError when k is not in [1, size].")


def _sort_checks(self, op, dim):
    check_tensor(self, op)
    _check_int_dim(dim, op)
    d = _wrap_dim(dim, len(self._shape))
    if self._dtype.is_complex:
        raise RuntimeError(f"{'Sort' if op == 'sort' else op} does not support complex dtypes")
    return d


@_memo
def _sort_meta(self, dim=-1, descending=False, *, stable=False):
    _sort_checks(self, "sort", dim)
    return (*_key(self, self._dtype), ((self._shape, self._dtype), (self._shape, D.int64)))


sort = declare("sort(Tensor self, int dim=-1, bool descending=False, *, bool? stable=False) -> "
               "(Tensor values, Tensor indices)", _sort_meta, multi_output_type=RT.sort,
               doc="``ember.return_types.sort(values, indices)``: ``input`` sorted along ``dim`` (matches "
                   "torch.sort). NaN sorts as the largest value. ember's sort is always stable (equal elements keep "
                   "their order, also when descending), which ``stable=True`` requires and the default permits. "
                   "RuntimeError for complex inputs.")


def argsort(input, dim=-1, descending=False, stable=False):
    """int64 indices that sort ``input`` along ``dim`` (``sort(...).indices``; matches torch.argsort)."""
    return sort(input, dim, descending, stable=stable).indices


def msort(input, *, out=None):
    """``input`` sorted along dim 0 (matches torch.msort)."""
    r = sort(input, 0).values
    if out is not None:
        from ._copy import copy_
        from .._factory import check_out
        check_out(sort._op, out, r._shape, r._dtype, r._device)
        copy_(out, r)
        return out
    return r


@_memo
def _topk_meta(self, k, dim=-1, largest=True, sorted=True):
    d = _sort_checks(self, "topk", dim)
    if self._dtype is D.bool:
        raise RuntimeError("topk does not support bool dtypes")
    if not isinstance(k, numbers.Integral) or isinstance(k, builtins.bool):
        raise TypeError(f"topk(): argument 'k' must be int, not {type(k).__name__}")
    size = self._shape[d] if self._shape else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    shape = self._shape[:d] + (k,) + self._shape[d + 1:] if self._shape else ()
    return (*_key(self, self._dtype), ((shape, self._dtype), (shape, D.int64)))


topk = declare("topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
               "(Tensor values, Tensor indices)", _topk_meta, multi_output_type=RT.topk,
               doc="The ``k`` largest (or smallest) elements along ``dim`` and their int64 indices (matches "
                   "torch.topk). ember always returns them sorted; NaN counts as the largest. RuntimeError "
                   "\"selected index k out of range\" unless 0 <= k <= size.")


# ---------------------------------------------------------------- unique
def _unique_meta_for(op):
    def meta(self, *args):
        check_tensor(self, op)
        dim = args[-1]
        if self._dtype.is_complex:
            raise _not_impl(op, self._dtype)
        if dim is not None:
            _check_int_dim(dim, op)
            if not self._shape:
                raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
            _wrap_dim(dim, len(self._shape))
        return _key(self, self._dtype)
    return meta


_unique = declare("unique(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False, "
                  "int? dim=None) -> (Tensor, Tensor, Tensor)", _unique_meta_for("unique"), structured=False,
                  doc="(unique values, inverse, counts).")
_unique_consecutive = declare("unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, "
                              "int? dim=None) -> (Tensor, Tensor, Tensor)", _unique_meta_for("unique_consecutive"),
                              structured=False, doc="(values, inverse, counts) of runs.")


def _pick(res, return_inverse, return_counts):
    out, inv, cnt = res
    if return_inverse and return_counts:
        return out, inv, cnt
    if return_inverse:
        return out, inv
    if return_counts:
        return out, cnt
    return out


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The unique elements of ``input`` (``dim=None``: of the flattened input, a 1-D tensor) or
    the unique slices along ``dim``; matches torch.unique.

    Returns the values, plus ``inverse`` (int64, where each element / slice went: input's shape,
    or (size of dim,)) and ``counts`` (int64) when asked for, as a tuple in that order. The
    result is sorted whatever ``sorted`` says (as PyTorch's cpu kernel). NaNs are all distinct.
    """
    return _pick(_unique(input, sorted, return_inverse, return_counts, dim), return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``); outputs as ``unique``
    (matches torch.unique_consecutive)."""
    return _pick(_unique_consecutive(input, return_inverse, return_counts, dim), return_inverse, return_counts)


# ---------------------------------------------------------------- searchsorted / bucketize
def _shape_str(s):
    return "[" + ", ".join(map(str, s)) + "]"


def _searchsorted_meta(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    check_tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    if not isinstance(self, (Tensor, numbers.Number)):
        raise TypeError(f"searchsorted(): argument 'input' (position 2) must be Tensor or Number, not "
                        f"{type(self).__name__}")
    device = same_device(sorted_sequence, self, sorter)
    b = sorted_sequence._shape
    if not b:
        raise RuntimeError("ember.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"ember.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if side == "left" and right:
            raise RuntimeError("ember.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
    v = self._shape if isinstance(self, Tensor) else ()
    if len(b) > 1:
        if not isinstance(self, Tensor) or not v:
            raise RuntimeError(f"ember.searchsorted(): input value can be a scalar only when boundaries tensor "
                               f"dimension is 1, but we got boundaries tensor dim({len(b)}) and input value's "
                               f"dim({len(v)}) numel(1)")
        if len(v) != len(b) or v[:-1] != b[:-1]:
            raise RuntimeError(f"ember.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               f"dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {_shape_str(b)} and input value tensor {_shape_str(v)}")
    if sorter is not None:
        check_tensor(sorter, "searchsorted", "sorter")
        if sorter._dtype is not D.int64:
            raise RuntimeError(f"ember.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{_name(sorter._dtype)}")
        if sorter._shape != b:
            raise RuntimeError(f"ember.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {_shape_str(b)} and got sorter tensor {_shape_str(sorter._shape)}")
    compute = D.result_type(sorted_sequence, self)
    if compute.is_complex:
        raise _not_impl("searchsorted", compute)
    return device, (device.type, sorted_sequence._layout.name, compute), v, D.int32 if out_int32 else D.int64


_searchsorted = declare("searchsorted(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, "
                        "str? side=None, Tensor? sorter=None) -> Tensor", _searchsorted_meta,
                        doc="Insertion indices of ``self`` into ``sorted_sequence``.")


def _check_index_out(out, out_int32, op="ember.searchsorted()"):
    want = D.int32 if out_int32 else D.int64
    if out is not None and isinstance(out, Tensor) and out._dtype is not want:
        raise RuntimeError(f"{op}: output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) "
                           f"depending on whether out_int32 flag is True, but we got output tensor's dtype "
                           f"{_name(out._dtype)} and out_int32 flag is {out_int32}")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices at which to insert ``input`` (a tensor or a number) into ``sorted_sequence`` along its
    last dim to keep it sorted (matches torch.searchsorted).

    ``sorted_sequence`` is 1-D, or has the same leading dims as ``input``. ``right=True`` or
    ``side='right'`` gives the last suitable index. ``sorter`` (int64) sorts an unsorted
    sequence. The result has ``input``'s shape and dtype int64 (int32 with ``out_int32``);
    RuntimeError for mismatched shapes, a bad side, a bad sorter, or an ``out`` of the wrong dtype.
    """
    _check_index_out(out, out_int32)
    return _searchsorted(sorted_sequence, input, out_int32=out_int32, right=right, side=side, sorter=sorter, out=out)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each element of ``input`` among the 1-D ``boundaries``:
    ``searchsorted(boundaries, input, right=right)`` (matches torch.bucketize). RuntimeError when
    ``boundaries`` is not 1-D."""
    check_tensor(boundaries, "bucketize", "boundaries")
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# ---------------------------------------------------------------- bincount
def bincount(input, weights=None, minlength=0):
    """Count the occurrences of each value in a 1-D non-negative integer tensor (matches torch.bincount).

    The result has ``max(input) + 1`` entries (at least ``minlength``; ``minlength`` entries for an
    empty input). Without ``weights`` it is int64; with ``weights`` (1-D, ``input``'s length) entry
    ``i`` is the sum of the weights where ``input == i``, float32 for float32 weights and float64
    otherwise, as PyTorch. Composite of ``index_add_`` with one host sync for the size. Raises
    NotImplementedError for bool / floating / complex input, RuntimeError for input that is not
    1-D or has a negative value, a negative ``minlength`` or mismatched ``weights``. PyTorch has no
    derivative for bincount; ember's result never requires grad.
    """
    check_tensor(input, "bincount", "input")
    dt = input._dtype
    if dt is D.bool or dt.is_floating_point or dt.is_complex:
        raise _not_impl("bincount_cpu", dt)          # PyTorch names its cpu kernel
    if input.dim() != 1 or (input.numel() and int(input.min().item()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None:
        check_tensor(weights, "bincount", "weights")
        if weights.dim() != 1 or weights._shape[0] != input._shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
    import ember        # the public namespace is complete by the time bincount runs
    if not isinstance(minlength, numbers.Integral) or isinstance(minlength, builtins.bool):
        raise TypeError(f"bincount(): argument 'minlength' must be int, not {type(minlength).__name__}")
    size = builtins.max(minlength, int(input.max().item()) + 1 if input.numel() else 0)
    out_dtype = D.int64 if weights is None else (D.float32 if weights._dtype is D.float32 else D.float64)
    with ember.no_grad():
        counts = ember.zeros(size, dtype=out_dtype, device=input.device)
        values = ember.ones(input._shape, dtype=out_dtype, device=input.device) if weights is None \
            else weights.to(out_dtype)
        return counts.index_add_(0, input.to(D.int64), values)


# ---------------------------------------------------------------- Tensor methods
def _bind():
    T = Tensor
    for name in ("sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
                 "aminmax", "var", "std", "norm", "logsumexp", "all", "any", "count_nonzero", "cumsum", "cumsum_",
                 "cumprod", "cumprod_", "cummax", "cummin", "median", "nanmedian", "mode", "sort", "argsort",
                 "msort", "topk", "kthvalue", "unique", "unique_consecutive", "bincount"):
        setattr(T, name, globals()[name])

    def norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
        return norm(self, p, dim, keepdim, dtype=dtype)
    norm_method.__doc__ = norm.__doc__
    T.norm = norm_method


_bind()


def _install_composites():
    """Give every non-primitive op here its composite over the primitive set (``sum`` and ``amax``
    are primitives; the composites live in ``_reduction_composites``)."""
    from .._dispatch import ops
    from ._reduction_composites import COMPOSITES
    for name, fn in COMPOSITES.items():
        ops[name].composite = fn


_install_composites()
