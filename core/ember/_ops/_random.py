"""Random sampling: rand, randn, randint, randperm, normal, bernoulli, multinomial, the
``*_like`` forms and the in-place samplers ``uniform_``, ``normal_``, ``random_``,
``bernoulli_``, ``exponential_`` (match the torch functions of the same names).

Every sampler is an op whose kernel receives the ``Generator`` to draw from (never
None: the public function resolves ``generator=None`` to the device's default one
with ``ember._random_state.resolve``), so each device implements sampling with its own
generator state. The factories are ``empty`` followed by the in-place sampler, as in
PyTorch. Checks on arguments live in the meta functions and run on every device;
checks that read data (probabilities in [0, 1], a positive sum) are the kernels'.
Every sampler but ``uniform`` has a composite over ``uniform`` (``_random_composites``):
same shapes, dtypes, ranges and distributions as the kernels, not the same numbers.
"""
from __future__ import annotations

import builtins
import numbers
import operator

from .. import _dtype as D, _registry
from .._dispatch import declare
from .._factory import empty_on
from .._random_state import resolve
from .._tensor import Tensor
from ._creation import _factory_args, _finish, _new_like, size_varargs
from ._meta import broadcast_shapes, check_tensor, same_device
from . import _random_composites as _RC   # composites over the uniform primitive

__all__ = ["rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like", "randn_like",
           "randint_like"]

# C++ type names PyTorch prints in the bound checks of random_ / uniform_
_C_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
            "int64": "long", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
            "float64": "double", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
# mantissa digits: integers up to 2**digits are exact in the floating dtype
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _g(x) -> str:
    """A double as C++'s ostream prints it (PyTorch's messages): 2.0 -> '2', 0.5 -> '0.5'."""
    return format(float(x), "g")


def _key(t):
    return (t._device.type, t._layout.name, t._dtype)


def _not_implemented(kernel, dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{D.torch_name(dtype)}'")


def _check_generator(generator):
    from .._random_state import Generator
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"expected an ember.Generator as 'generator', got {type(generator).__name__}")


def _int_bounds(dtype):
    """(lowest, highest) value an integral / bool dtype holds."""
    if dtype is D.bool:
        return 0, 1
    info = D.iinfo(dtype)
    return info.min, info.max


def random_upper(dtype) -> int:
    """The inclusive upper end of ``random_()``'s default range for ``dtype``: the dtype's max for
    integers, 1 for bool, 2**mantissa_digits for floating dtypes (every such integer is exact)."""
    if dtype.is_floating_point:
        return 1 << _DIGITS.get(dtype.name, 24)
    return _int_bounds(dtype)[1]


# ---------------------------------------------------------------- in-place samplers (kernels per device)
def _uniform_meta(self, low=0.0, high=1.0, *, generator=None):
    check_tensor(self, "uniform_", "self")
    dt = self._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise _not_implemented("check_uniform_bounds", dt)
    real = dt.to_real
    big = D.finfo(real).max
    cname = _C_NAMES.get(real.name, real.name)
    if not -big <= low <= big:
        raise RuntimeError(f"from is out of bounds for {cname}")
    if not -big <= high <= big:
        raise RuntimeError(f"to is out of bounds for {cname}")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(low)} > to={_g(high)}")
    return self._device, _key(self), self._shape, dt


_uniform = declare("uniform(Tensor self, float low=0.0, float high=1.0, *, Generator? generator=None) -> Tensor",
                   _uniform_meta, inplace=True,
                   doc="kernel entry: fill self with U[low, high) (complex: real and imaginary parts each)")


def _normal_meta(self, mean=0.0, std=1.0, *, generator=None):
    check_tensor(self, "normal_", "self")
    dt = self._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise _not_implemented(f"normal_kernel_{self._device.type}", dt)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    return self._device, _key(self), self._shape, dt


_normal = declare("normal(Tensor self, float mean=0.0, float std=1.0, *, Generator? generator=None) -> Tensor",
                  _normal_meta, inplace=True, composite=_RC.normal,
                  doc="kernel entry: fill self with N(mean, std**2) (complex: each part with variance std**2 / 2)")


def _random_meta(self, low, high=None, *, generator=None):
    check_tensor(self, "random_", "self")
    dt = self._dtype
    if dt.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    if high is not None and low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    cname = _C_NAMES.get(dt.name, dt.name)
    if dt.is_floating_point:
        lim = 1 << _DIGITS.get(dt.name, 24)
        if not -lim <= low <= lim:
            _warn_float_range("from", dt, cname)
        if high is not None and not -lim <= high - 1 <= lim:
            _warn_float_range("to - 1", dt, cname)
    else:
        lo, hi = _int_bounds(dt)
        if not lo <= low <= hi:
            raise RuntimeError(f"from is out of bounds for {cname}")
        if high is not None and not lo <= high - 1 <= hi:
            raise RuntimeError(f"to - 1 is out of bounds for {cname}")
    return self._device, _key(self), self._shape, dt


def _warn_float_range(what, dt, cname):
    import warnings
    d = _DIGITS.get(dt.name, 24)
    warnings.warn(f"{what} is out of bounds [-(2^{d}), 2^{d}]. Due to precision limitations {cname} can support "
                  f"discrete uniform distribution only within this range.", UserWarning, stacklevel=4)


_random = declare("random(Tensor self, int low, int? high=None, *, Generator? generator=None) -> Tensor",
                  _random_meta, inplace=True, composite=_RC.random,
                  doc="kernel entry: fill self with integers uniform in [low, high); high=None means up to "
                      "random_upper(dtype) inclusive")


def _bernoulli_scalar_meta(self, p=0.5, *, generator=None):
    check_tensor(self, "bernoulli_", "self")
    if self._dtype.is_complex:
        raise _not_implemented(f"bernoulli_scalar_{self._device.type}_", self._dtype)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    return self._device, _key(self), self._shape, self._dtype


_bernoulli_scalar = declare(
    "bernoulli_scalar(Tensor self, float p=0.5, *, Generator? generator=None) -> Tensor", _bernoulli_scalar_meta,
    inplace=True, composite=_RC.bernoulli_scalar, doc="kernel entry: fill self with 1 with probability p, else 0")


def _bernoulli_tensor_meta(self, p, *, generator=None):
    check_tensor(self, "bernoulli_", "self")
    dev = same_device(self, p)
    if self._dtype.is_complex:
        raise _not_implemented(f"bernoulli_tensor_{dev.type}_self_", self._dtype)
    if not p._dtype.is_floating_point:
        raise _not_implemented(f"bernoulli_tensor_{dev.type}_p_", p._dtype)
    p.expand(self._shape)  # PyTorch's expand error when p does not broadcast to self
    return self._device, _key(self), self._shape, self._dtype


_bernoulli_tensor = declare(
    "bernoulli_tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor", _bernoulli_tensor_meta,
    inplace=True, composite=_RC.bernoulli_tensor, doc="kernel entry: fill self[i] with 1 with probability p[i] (p broadcast to self; the kernel "
                      "raises RuntimeError when a p lies outside [0, 1], before writing)")


def _exponential_meta(self, lambd=1.0, *, generator=None):
    check_tensor(self, "exponential_", "self")
    if not self._dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {D.torch_name(self._dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    return self._device, _key(self), self._shape, self._dtype


_exponential = declare("exponential(Tensor self, float lambd=1.0, *, Generator? generator=None) -> Tensor",
                       _exponential_meta, inplace=True, composite=_RC.exponential,
                       doc="kernel entry: fill self with samples of Exp(lambd) (density lambd * exp(-lambd x))")


def _number(x, name):
    if isinstance(x, Tensor):
        return x.item()
    if not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {type(x).__name__}")
    return x


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill ``self`` in place with samples of U[from, to) (matches torch.Tensor.uniform_;
    ``from`` may be passed as ``from_`` or ``**{'from': x}``).

    Floating and complex dtypes (complex: both parts uniform). NotImplementedError for
    other dtypes; RuntimeError when from > to or a bound exceeds the dtype's range.
    """
    from_, to = kwargs.pop("from", from_), kwargs.pop("to", to)
    _no_extra("uniform_", kwargs)
    return _uniform.inplace(self, float(_number(from_, "from")), float(_number(to, "to")),
                            generator=resolve(_gen(generator), self._device))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill ``self`` in place with samples of N(mean, std**2) (matches torch.Tensor.normal_).

    Floating and complex dtypes; NotImplementedError for others; RuntimeError for std < 0.
    """
    return _normal.inplace(self, float(_number(mean, "mean")), float(_number(std, "std")),
                           generator=resolve(_gen(generator), self._device))


def random_(self, *args, generator=None, **kwargs):
    """Fill ``self`` in place with integers uniform in [from, to) (matches torch.Tensor.random_).

    ``random_()`` draws from [0, max] where max is the dtype's largest value (2**mantissa
    digits for floating dtypes, 1 for bool); ``random_(to)`` from [0, to);
    ``random_(from, to)`` from [from, to), ``to=None`` meaning up to max.
    RuntimeError when from >= to ("random_ expects 'from' to be less than 'to', ...") or
    a bound is outside an integral dtype's range; a UserWarning for floating bounds
    beyond 2**digits.
    """
    if "from" in kwargs:
        args = (kwargs.pop("from"),) + args
    has_to = "to" in kwargs
    to = kwargs.pop("to", None)
    _no_extra("random_", kwargs)
    if len(args) > 2 or (has_to and len(args) > 1):
        raise TypeError("random_() takes at most 2 arguments (from, to)")
    if len(args) == 2:
        low, to = args
    elif len(args) == 1 and not has_to:
        low, to = 0, args[0]
        if to is None:
            raise TypeError("random_(): argument 'to' must be int, not NoneType")
    elif len(args) == 1:
        low = args[0]
    else:
        low = 0
        if not has_to:
            to = None
    low = _int(low, "from", "random_")
    to = None if to is None else _int(to, "to", "random_")
    return _random.inplace(self, low, to, generator=resolve(_gen(generator), self._device))


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill ``self`` in place with 1 with probability ``p`` (a float, or a floating tensor that
    broadcasts to self), else 0 (matches torch.Tensor.bernoulli_). Any non-complex dtype.
    RuntimeError for p outside [0, 1]; NotImplementedError for a non-floating p tensor."""
    gen = resolve(_gen(generator), self._device)
    if isinstance(p, Tensor):
        return _bernoulli_tensor.inplace(self, p, generator=gen)
    return _bernoulli_scalar.inplace(self, float(_number(p, "p")), generator=gen)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill ``self`` in place with samples of the exponential distribution with rate ``lambd``
    (matches torch.Tensor.exponential_). Floating dtypes only (RuntimeError otherwise, and for lambd <= 0)."""
    return _exponential.inplace(self, float(_number(lambd, "lambd")), generator=resolve(_gen(generator),
                                                                                         self._device))


def _gen(generator):
    _check_generator(generator)
    return generator


def _no_extra(name, kwargs):
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _int(x, arg, fn):
    """``x`` as a Python int (an integral 0-dim tensor is accepted); TypeError otherwise."""
    if isinstance(x, Tensor) and not (x._dtype.is_floating_point or x._dtype.is_complex) and x.numel() == 1:
        return builtins.int(x.item())
    if isinstance(x, numbers.Integral) and not isinstance(x, builtins.bool):
        return operator.index(x)
    raise TypeError(f"{fn}(): argument '{arg}' must be int, not {type(x).__name__}")


# ---------------------------------------------------------------- factories
def _new(size, dtype, device, out, name):
    shape, dtype, dev = _factory_args(size, dtype, device, name)
    return _into(shape, dtype, dev, out)


def _into(shape, dtype, dev, out):
    """A new tensor, or ``out`` resized to ``shape`` (PyTorch resizes an ``out=`` of another shape)."""
    if out is None:
        return empty_on(shape, dtype, dev)
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if out._shape != shape:
        out._set_storage_meta(empty_on(shape, out._dtype, out._device))
    return out


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
         requires_grad=False):
    """A tensor of ``size`` with samples of U[0, 1) (matches torch.rand).

    dtype: the default dtype unless given (floating or complex; NotImplementedError
    otherwise). ``size`` as varargs or one sequence; RuntimeError for a negative size.
    """
    t = _new(size_varargs(sizes, size, "rand"), dtype, device, out, "rand")
    return _finish(uniform_(t, 0.0, 1.0, generator=generator), requires_grad)


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
          requires_grad=False):
    """A tensor of ``size`` with standard normal samples (matches torch.randn; complex dtypes get
    real and imaginary parts with variance 1/2 each)."""
    t = _new(size_varargs(sizes, size, "randn"), dtype, device, out, "randn")
    return _finish(normal_(t, 0.0, 1.0, generator=generator), requires_grad)


def _randint_args(args, kwargs, fn, need_size=True):
    low, high, size = kwargs.pop("low", None), kwargs.pop("high", None), kwargs.pop("size", None)
    args = list(args)
    if need_size and size is None and args and not isinstance(args[-1], (numbers.Integral, Tensor)):
        size = args.pop()
    if len(args) == 2 and low is None and high is None:
        low, high = args
    elif len(args) == 1 and high is None:
        high = args[0]
    elif len(args) == 1 and low is None:
        low = args[0]
    elif args:
        raise TypeError(f"{fn}() received an invalid combination of arguments: expected ([int low], int high"
                        f"{', tuple of ints size' if need_size else ''}, *, ...)")
    if high is None or (need_size and size is None):
        if need_size and size is None and args and isinstance(args[-1], numbers.Integral):
            raise TypeError(f"{fn}(): argument 'size' (position {len(args)}) must be tuple of ints, not int")
        raise TypeError(f"{fn}() missing required argument '{'high' if high is None else 'size'}'")
    low = 0 if low is None else _int(low, "low", fn)
    return low, _int(high, "high", fn), size


def randint(*args, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
            requires_grad=False, **kwargs):
    """Integers uniform in [low, high) in a tensor of ``size``: ``randint(high, size)`` or
    ``randint(low, high, size)`` (matches torch.randint).

    dtype: int64 unless given (any non-complex dtype). RuntimeError "random_ expects 'from'
    to be less than 'to', but got from=5 >= to=3" when high <= low, and when a bound does
    not fit the dtype; TypeError when ``size`` is not a sequence of ints.
    """
    low, high, size = _randint_args(args, kwargs, "randint")
    _no_extra("randint", kwargs)
    if isinstance(size, numbers.Integral):
        raise TypeError("randint(): argument 'size' must be tuple of ints, not int")
    t = _new(size, dtype or D.int64, device, out, "randint")
    return _finish(random_(t, low, high, generator=generator), requires_grad)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
              generator=None):
    """``rand`` with ``input``'s shape, and its dtype / device unless given, laid out as empty_like lays it out
    (``memory_format``, default preserve_format; matches torch.rand_like)."""
    check_tensor(input, "rand_like")
    t = _like(input, dtype, device, memory_format)
    return _finish(uniform_(t, 0.0, 1.0, generator=generator), requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
               generator=None):
    """``randn`` with ``input``'s shape, and its dtype / device unless given, laid out as empty_like lays it out
    (``memory_format``, default preserve_format; matches torch.randn_like)."""
    check_tensor(input, "randn_like")
    t = _like(input, dtype, device, memory_format)
    return _finish(normal_(t, 0.0, 1.0, generator=generator), requires_grad)


def randint_like(input, *args, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
                 generator=None, **kwargs):
    """``randint`` with ``input``'s shape: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``; dtype / device default to input's (matches torch.randint_like)."""
    check_tensor(input, "randint_like")
    low, high, _ = _randint_args(args, kwargs, "randint_like", need_size=False)
    _no_extra("randint_like", kwargs)
    t = _like(input, dtype, device, memory_format)
    return _finish(random_(t, low, high, generator=generator), requires_grad)


def _like(input, dtype, device, memory_format):
    """The uninitialised tensor a ``*_like`` sampler fills: input's shape, dtype / device unless given, laid
    out as empty_like lays it out (``memory_format`` None is preserve_format, PyTorch's default)."""
    dev = input._device if device is None else _registry.canonical_device(device)
    return _new_like(input, input._shape, dtype or input._dtype, dev, memory_format)


# ---------------------------------------------------------------- randperm
def _randperm_meta(n, dtype, device, *, generator=None):
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dtype is D.bool or dtype.is_complex:
        raise _not_implemented("randperm", dtype)
    if dtype.is_floating_point:
        lim = (1 << _DIGITS.get(dtype.name, 24)) + 1
        if n > lim:
            raise RuntimeError(f"n cannot be greater than {lim} for {D.torch_name(dtype)} type.")
    elif n > 0 and n - 1 > _int_bounds(dtype)[1]:
        raise RuntimeError(f"value cannot be converted to type {dtype.name}_t without overflow")
    return device, (device.type, "strided", dtype), (n,), dtype


_randperm = declare("randperm(int n, ScalarType dtype, Device device, *, Generator? generator=None) -> Tensor",
                    _randperm_meta, composite=_RC.randperm, doc="kernel entry for ember.randperm")


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    """A random permutation of 0 .. n-1 (matches torch.randperm).

    dtype int64 unless given; NotImplementedError for bool / complex; RuntimeError for
    n < 0 or an n the dtype cannot count to.
    """
    n = _int(n, "n", "randperm")
    dtype = dtype or D.int64
    dev = out._device if out is not None and device is None else _registry.canonical_device(device)
    gen = resolve(_gen(generator), dev)
    return _finish(_randperm(n, dtype, dev, generator=gen, out=out), requires_grad)


# ---------------------------------------------------------------- normal with tensor mean / std
def _normal_tensor_meta(mean, std, *, generator=None):
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        raise TypeError("normal(): mean or std must be a Tensor")
    device = same_device(mean, std)
    dt = mean._dtype if isinstance(mean, Tensor) else std._dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise _not_implemented(f"normal_kernel_{device.type}", dt)
    if not isinstance(std, Tensor) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    shape = broadcast_shapes(*(x._shape for x in (mean, std) if isinstance(x, Tensor)))
    return device, (device.type, "strided", dt), shape, dt


def _normal_tensor_composite(mean, std, *, generator=None, out):
    if isinstance(std, Tensor) and std.numel() and _RC.count(std.lt(0)):   # one scalar read
        raise RuntimeError("normal expects all elements of std >= 0.0")
    normal_(out, 0.0, 1.0, generator=generator)
    out.mul_(std)
    out.add_(mean)


_normal_tensor = declare("normal_tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor",
                         _normal_tensor_meta, composite=_normal_tensor_composite,
                         doc="kernel entry for ember.normal with a tensor mean and/or std")


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    """Samples of N(mean, std**2) (matches torch.normal), in PyTorch's overloads:

    - ``normal(mean: Tensor, std: Tensor)``: shape = broadcast of both; dtype = mean's;
    - ``normal(mean: Tensor, std: float = 1.0)``, ``normal(mean: float, std: Tensor)``:
      shape and dtype of the tensor;
    - ``normal(mean: float, std: float, size, *, dtype, device, requires_grad)``.

    RuntimeError "normal expects std >= 0.0, ..." for a negative std (any element of a
    std tensor); NotImplementedError for an integral result dtype; TypeError when no
    tensor and no size is given.
    """
    _check_generator(generator)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if size is not None:
            raise TypeError("normal(): 'size' is only accepted when mean and std are both numbers")
        dev = same_device(mean, std)
        return _normal_tensor(mean, std, generator=resolve(generator, dev), out=out)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments - got (float, float), but expected "
                        "one of: (Tensor mean, Tensor std), (Tensor mean, float std), (float mean, Tensor std), "
                        "(float mean, float std, tuple of ints size)")
    t = _new((size,) if isinstance(size, numbers.Integral) else size, dtype, device, out, "normal")
    return _finish(normal_(t, mean, std, generator=generator), requires_grad)


# ---------------------------------------------------------------- bernoulli, multinomial
def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples: ``bernoulli(input)`` draws 1 with probability input[i] (floating input in
    [0, 1]); ``bernoulli(input, p)`` draws with the scalar p in ``input``'s shape. The result
    has input's dtype (matches torch.bernoulli). RuntimeError for probabilities outside
    [0, 1]; NotImplementedError for a non-floating input used as probabilities."""
    check_tensor(input, "bernoulli")
    t = _into(input._shape, input._dtype, input._device, out)
    return bernoulli_(t, input if p is None else p, generator=generator)


def _multinomial_meta(self, num_samples, replacement=False, *, generator=None):
    check_tensor(self, "multinomial")
    if self.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self._dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D.torch_name(self._dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > self._shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if self._shape[-1] > (1 << 24):
        raise RuntimeError("number of categories cannot exceed 2^24")
    return self._device, (self._device.type, self._layout.name, self._dtype), self._shape[:-1] + (num_samples,), \
        D.int64


_multinomial = declare("multinomial(Tensor self, int num_samples, bool replacement=False, *, "
                       "Generator? generator=None) -> Tensor", _multinomial_meta, composite=_RC.multinomial,
                       doc="kernel entry for ember.multinomial (the kernel checks the probabilities)")


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Indices of categories drawn from the (unnormalised) probabilities in each row of ``input``
    (1-D: one distribution; 2-D: one per row); int64, shape input.shape[:-1] + (num_samples,).
    Without replacement, a category is drawn at most once (zero-probability ones only after
    all others). Matches torch.multinomial. RuntimeError for a bad dimension, dtype or
    sample count, for negative / inf / nan probabilities and for a row summing to 0."""
    num_samples = _int(num_samples, "num_samples", "multinomial")
    check_tensor(input, "multinomial")
    gen = resolve(_gen(generator), input._device)
    return _multinomial(input, num_samples, builtins.bool(replacement), generator=gen, out=out)


def _bind():
    T = Tensor
    T.uniform_ = uniform_
    T.normal_ = normal_
    T.random_ = random_
    T.bernoulli_ = bernoulli_
    T.exponential_ = exponential_
    T.bernoulli = bernoulli
    T.multinomial = multinomial


_bind()
