"""Op database entries: random sampling (``ember._ops._random``).

No closed-form reference: each entry's ``check(sample, result, cpu_result)`` verifies the
result's shape, dtype and reproducibility (the op run again with a generator seeded alike gives
the same values, a differently seeded one different values), then its values with the entry's
``VALUE_CHECKS`` function: range, and on samples of at least 1000 values the distribution, by
statistical tests (``ember.testing._stats``) that a correct generator fails with probability at
most 1e-6 per check. Results are never compared with the cpu's: every device has its own
generator. Samples carry ``seed=`` (the op builds a ``Generator`` on the sample's device from it).

``VALUE_CHECKS`` maps an entry's id to ``fn(sample, values)``, ``values`` the result as a numpy
array: the tests of the suite feed it draws of numpy's generators to show that it passes a
correct stream and fails a wrong one.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import FLOATING, FLOATING_AND_COMPLEX, REAL, REAL_AND_BOOL
from .._stats import assert_distribution, assert_frequency, normal_cdf, rounding_bound
from ._common import to_numpy

__all__ = ["op_db", "VALUE_CHECKS"]

BIG = 2000     # elements of the samples whose distribution is checked
#: the fewest values whose distribution is tested (smaller samples: range only)
MIN_DISTRIBUTION_SIZE = 1000


def _gen(device, seed):
    return ember.Generator(device).manual_seed(seed)


def _fresh(t):
    """An uninitialised tensor with ``t``'s shape, strides, dtype and device (a new target)."""
    return ember.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=t.device)


def _targets(op, device, dtype):
    """Target tensors for in-place samplers: a big contiguous one (distribution), a transposed
    and a non-contiguous view, 0-dim and empty."""
    mk = lambda shape, **kw: make_tensor(shape, device=device, dtype=dtype, seed=1, **kw)
    yield "contiguous (2000,)", mk((BIG,))
    yield "transposed (40, 50)", mk((50, 40)).t()
    yield "noncontiguous (3, 4)", mk((3, 4), noncontiguous=True)
    yield "0-dim", mk(())
    yield "empty", mk((0, 3))


def _values(result):
    a = to_numpy(result).reshape(-1)
    return a


def _parts(a):
    return [a.real, a.imag] if np.iscomplexobj(a) else [a]


def _distribution(a, cdf, what, dtype_name, **kw):
    """Kolmogorov-Smirnov test of ``a`` against ``cdf`` (false-failure probability <= 1e-6, see
    ``_stats.assert_distribution``), allowing for rounding to ``dtype_name`` (None: the values are
    exact); samples smaller than
    MIN_DISTRIBUTION_SIZE are not tested."""
    if a.size >= MIN_DISTRIBUTION_SIZE:
        assert_distribution(a, cdf, what, resolution=lambda v: rounding_bound(v, dtype_name), **kw)


def _common_check(op_fn, sample, result, *, shape=None, dtype=None, rerun=True, inplace=True, vary=True):
    """Shape / dtype of ``result``, and reproducibility with a seeded generator."""
    x = sample.input
    want_shape = tuple(x.shape) if shape is None else shape
    assert tuple(result.shape) == want_shape, f"shape {tuple(result.shape)} != {want_shape}"
    want_dt = x.dtype if dtype is None else dtype
    assert result.dtype is want_dt, f"dtype {result.dtype} != {want_dt}"
    if not rerun or result.numel() == 0:
        return
    a = _values(result)
    target = (lambda: _refresh(sample.input)) if inplace else (lambda: sample.input)
    again = _values(op_fn(target(), *sample.args, **sample.kwargs))
    np.testing.assert_array_equal(a, again, err_msg="same seed, different values: not reproducible")
    # Two independent draws of >= 100 values, not all equal, coincide with probability < 1e-16 on the
    # samples here: each value repeats with probability <= 0.2**2 + 0.8**2 = 0.68 (bernoulli(0.2), the
    # most concentrated), and 0.68 ** 100 < 1e-16.
    if vary and result.numel() >= 100 and not np.all(a == a[0]):
        kw = dict(sample.kwargs, seed=sample.kwargs.get("seed", 0) + 1)
        other = _values(op_fn(target(), *sample.args, **kw))
        assert not np.array_equal(a, other), "a different seed gave the same values"


def _refresh(x):
    return _fresh(x) if isinstance(x, ember.Tensor) else x


# ---------------------------------------------------------------- uniform
def _uniform_op(t, low=0.0, high=1.0, *, seed=0):
    return t.uniform_(low, high, generator=_gen(t.device, seed))


def _uniform_samples(op, device, dtype, requires_grad=False):
    for i, (name, t) in enumerate(_targets(op, device, dtype)):
        args = (0.0, 1.0) if i % 2 == 0 else (-3.0, 5.0)
        yield SampleInput(t, args, {"seed": 10 + i}, name=name)
    yield SampleInput(make_tensor((BIG,), device=device, dtype=dtype, seed=2), (2.0, 2.0), {"seed": 3},
                      name="low == high")


def uniform_values_check(sample, values):
    """Values in [low, high] (``high`` itself only through rounding) and, per real / imaginary part,
    distributed as U(low, high): Kolmogorov-Smirnov, false-failure probability <= 1e-6 per part."""
    low, high = sample.args
    for p in _parts(values.reshape(-1)):
        if low == high:
            assert np.all(p == low), f"uniform_({low}, {high}) gave values other than {low}"
            continue
        assert np.all((p >= low) & (p <= high)), f"values outside [{low}, {high})"
        _distribution(p, lambda x: np.clip((x - low) / (high - low), 0, 1), f"uniform_({low}, {high})",
                      sample.input.dtype.name)


def _uniform_check(sample, result, cpu_result=None):
    _common_check(_uniform_op, sample, result)
    uniform_values_check(sample, to_numpy(result))


def _uniform_errors(op, device):
    x = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (1.0, 0.0), name="from > to"), RuntimeError,
                     r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=0")
    i = make_tensor((3,), device=device, dtype=ember.int64, seed=1)
    yield ErrorInput(SampleInput(i, (0.0, 1.0), name="int64"), NotImplementedError,
                     r"\"check_uniform_bounds\" not implemented for 'Long'")


# ---------------------------------------------------------------- normal
def _normal_op(t, mean=0.0, std=1.0, *, seed=0):
    return t.normal_(mean, std, generator=_gen(t.device, seed))


def _normal_samples(op, device, dtype, requires_grad=False):
    for i, (name, t) in enumerate(_targets(op, device, dtype)):
        args = (0.0, 1.0) if i % 2 == 0 else (3.0, 0.5)
        yield SampleInput(t, args, {"seed": 20 + i}, name=name)
    yield SampleInput(make_tensor((50,), device=device, dtype=dtype, seed=2), (1.5, 0.0), {"seed": 3},
                      name="std=0")


def normal_values_check(sample, values):
    """Finite values distributed as N(mean, std**2) (complex: real and imaginary parts each
    N(mean, std**2 / 2), as PyTorch): Kolmogorov-Smirnov, false-failure probability <= 1e-6 per part."""
    mean, std = sample.args
    part_std = std / math.sqrt(2) if np.iscomplexobj(values) else std
    for p in _parts(values.reshape(-1)):
        assert np.all(np.isfinite(p)), "normal_ gave non-finite values"
        if std == 0:
            assert np.all(p == mean), f"normal_({mean}, 0) gave values other than {mean}"
            continue
        _distribution(p, lambda x: normal_cdf((x - mean) / part_std), f"normal_({mean}, {std})",
                      sample.input.dtype.name)


def _normal_check(sample, result, cpu_result=None):
    _common_check(_normal_op, sample, result)
    normal_values_check(sample, to_numpy(result))


def _normal_errors(op, device):
    x = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (0.0, -1.0), name="std < 0"), RuntimeError,
                     r"normal expects std >= 0.0, but found std -1")


# ---------------------------------------------------------------- random
def _random_op(t, *args, seed=0):
    return t.random_(*args, generator=_gen(t.device, seed))


def _random_samples(op, device, dtype, requires_grad=False):
    for i, (name, t) in enumerate(_targets(op, device, dtype)):
        if dtype.name == "bool":
            args = (0, 2)
        elif dtype.name == "uint8":
            args = (3, 20) if i % 2 == 0 else (50,)
        else:
            args = (-5, 20) if i % 2 == 0 else (50,)
        yield SampleInput(t, args, {"seed": 30 + i}, name=name)
    yield SampleInput(make_tensor((BIG,), device=device, dtype=dtype, seed=2), (), {"seed": 4},
                      name="random_() full range")


def random_values_check(sample, values):
    """Integral values in [from, to) (``random_()``: [0, 2**mantissa] for floating dtypes, the
    dtype's range from 0 otherwise), distributed uniformly over those integers: Kolmogorov-Smirnov
    against the discrete uniform CDF, false-failure probability <= 1e-6."""
    from ember._ops._random import random_upper
    args = sample.args
    dtype = sample.input.dtype
    low, high = (0, args[0]) if len(args) == 1 else (args if args else (0, random_upper(dtype) + 1))
    a = values.reshape(-1).astype(np.float64)
    assert np.all(a == np.floor(a)), "random_ gave non-integral values"
    assert np.all((a >= low) & (a < high)), f"values outside [{low}, {high})"
    count = float(high - low)
    _distribution(a, lambda x: np.clip((np.floor(x) - low + 1) / count, 0, 1), f"random_ over [{low}, {high})",
                  None, cdf_below=lambda x: np.clip((np.ceil(x) - low) / count, 0, 1))   # None: exact integers


def _random_check(sample, result, cpu_result=None):
    _common_check(_random_op, sample, result)
    random_values_check(sample, to_numpy(result))


def _random_errors(op, device):
    x = make_tensor((3,), device=device, dtype=ember.int64, seed=1)
    yield ErrorInput(SampleInput(x, (5, 3), name="from >= to"), RuntimeError,
                     r"random_ expects 'from' to be less than 'to', but got from=5 >= to=3")
    u = make_tensor((3,), device=device, dtype=ember.uint8, seed=1)
    yield ErrorInput(SampleInput(u, (0, 300), name="to out of bounds"), RuntimeError,
                     r"to - 1 is out of bounds for unsigned char")


# ---------------------------------------------------------------- bernoulli (scalar p, tensor p)
def _bernoulli_scalar_op(t, p=0.5, *, seed=0):
    return t.bernoulli_(p, generator=_gen(t.device, seed))


def _bernoulli_scalar_samples(op, device, dtype, requires_grad=False):
    for i, (name, t) in enumerate(_targets(op, device, dtype)):
        yield SampleInput(t, (0.5 if i % 2 == 0 else 0.2,), {"seed": 40 + i}, name=name)
    yield SampleInput(make_tensor((100,), device=device, dtype=dtype, seed=2), (0.0,), {"seed": 5}, name="p=0")
    yield SampleInput(make_tensor((100,), device=device, dtype=dtype, seed=2), (1.0,), {"seed": 5}, name="p=1")


def bernoulli_scalar_values_check(sample, values):
    """Values 0 and 1 (all 0 for p=0, all 1 for p=1), the frequency of 1 consistent with p:
    Chernoff bound, false-failure probability <= 1e-6."""
    p = float(sample.args[0])
    a = values.reshape(-1).astype(np.float64)
    assert np.all((a == 0) | (a == 1)), "bernoulli gave values other than 0 and 1"
    if a.size >= MIN_DISTRIBUTION_SIZE or p in (0.0, 1.0):
        assert_frequency(int(a.sum()), a.size, p, f"bernoulli_(p={p})")


def _bernoulli_scalar_check(sample, result, cpu_result=None):
    _common_check(_bernoulli_scalar_op, sample, result)
    bernoulli_scalar_values_check(sample, to_numpy(result))


def _bernoulli_scalar_errors(op, device):
    x = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (1.5,), name="p > 1"), RuntimeError,
                     r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5")


def _bernoulli_tensor_op(p, *, seed=0):
    return ember.bernoulli(p, generator=_gen(p.device, seed))


def _bernoulli_tensor_samples(op, device, dtype, requires_grad=False):
    mk = lambda shape, **kw: make_tensor(shape, device=device, dtype=dtype, low=0, high=1, seed=3, **kw)
    yield SampleInput(mk((BIG,)), (), {"seed": 50}, name="contiguous (2000,)")
    yield SampleInput(mk((50, 40)).t(), (), {"seed": 51}, name="transposed (40, 50)")
    yield SampleInput(mk((3, 4), noncontiguous=True), (), {"seed": 52}, name="noncontiguous")
    yield SampleInput(mk(()), (), {"seed": 53}, name="0-dim")
    yield SampleInput(mk((0, 2)), (), {"seed": 54}, name="empty")
    ends = ember.tensor([0.0, 1.0] * 50, dtype=dtype, device=device)
    yield SampleInput(ends, (), {"seed": 55}, name="p in {0, 1}")


def bernoulli_tensor_values_check(sample, values):
    """Values 0 and 1, 0 where p=0 and 1 where p=1, and the number of 1s consistent with the sum of
    the probabilities: Chernoff-Hoeffding bound for unequal trials, false-failure probability <= 1e-6."""
    p = _values(sample.input).astype(np.float64)
    a = values.reshape(-1).astype(np.float64)
    assert np.all((a == 0) | (a == 1)), "bernoulli gave values other than 0 and 1"
    assert np.all(a[p == 0] == 0) and np.all(a[p == 1] == 1), "p=0 / p=1 not respected"
    if a.size >= MIN_DISTRIBUTION_SIZE:
        assert_frequency(int(a.sum()), a.size, float(p.mean()), "bernoulli(p) (frequency of 1 against mean(p))")


def _bernoulli_tensor_check(sample, result, cpu_result=None):
    p = _values(sample.input).astype(np.float64)
    _common_check(_bernoulli_tensor_op, sample, result, inplace=False, vary=not np.all((p == 0) | (p == 1)))
    bernoulli_tensor_values_check(sample, to_numpy(result))


def _bernoulli_tensor_errors(op, device):
    x = ember.tensor([0.5, 1.5], device=device)
    yield ErrorInput(SampleInput(x, name="p > 1"), RuntimeError, r"Expected p_in >= 0 && p_in <= 1 to be true|"
                                                                   r"bernoulli.*\[0, 1\]")


# ---------------------------------------------------------------- exponential
def _exponential_op(t, lambd=1.0, *, seed=0):
    return t.exponential_(lambd, generator=_gen(t.device, seed))


def _exponential_samples(op, device, dtype, requires_grad=False):
    for i, (name, t) in enumerate(_targets(op, device, dtype)):
        yield SampleInput(t, (1.0 if i % 2 == 0 else 2.5,), {"seed": 60 + i}, name=name)


def exponential_values_check(sample, values):
    """Finite values >= 0 distributed as Exp(lambd): Kolmogorov-Smirnov, false-failure probability
    <= 1e-6."""
    lam = sample.args[0]
    a = values.reshape(-1).astype(np.float64)
    assert np.all(a >= 0) and np.all(np.isfinite(a)), "exponential gave negative or non-finite values"
    _distribution(a, lambda x: -np.expm1(-lam * np.maximum(x, 0)), f"exponential_({lam})", sample.input.dtype.name)


def _exponential_check(sample, result, cpu_result=None):
    _common_check(_exponential_op, sample, result)
    exponential_values_check(sample, to_numpy(result))


def _exponential_errors(op, device):
    x = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (-1.0,), name="lambda <= 0"), RuntimeError,
                     r"exponential_ expects lambda > 0.0, but found lambda=-1")
    i = make_tensor((3,), device=device, dtype=ember.int64, seed=1)
    yield ErrorInput(SampleInput(i, (1.0,), name="int64"), RuntimeError,
                     r"Exponential distribution is a continuous probability distribution. dtype must be a "
                     r"floating point but you specified Long")


# ---------------------------------------------------------------- randperm
def _randperm_op(n, *, dtype=None, device=None, seed=0):
    return ember.randperm(n, dtype=dtype, device=device, generator=_gen(device, seed))


def _randperm_samples(op, device, dtype, requires_grad=False):
    kw = {"dtype": dtype, "device": device}
    for i, n in enumerate((0, 1, 7, 100, {"uint8": 250, "int8": 120, "bfloat16": 250}.get(dtype.name, 1000))):
        yield SampleInput(n, (), dict(kw, seed=70 + i), name=f"n={n}")


def randperm_values_check(sample, values):
    """A permutation of 0 .. n-1, not the identity for n >= 100 (a uniform permutation is the
    identity with probability 1 / n! < 1e-157)."""
    n = sample.input
    a = values.reshape(-1).astype(np.float64)
    np.testing.assert_array_equal(np.sort(a), np.arange(n), err_msg="not a permutation of 0 .. n-1")
    if n >= 100:
        assert not np.array_equal(a, np.arange(n)), "randperm returned the identity"


def _randperm_check(sample, result, cpu_result=None):
    n = sample.input
    assert tuple(result.shape) == (n,)
    assert result.dtype is sample.kwargs["dtype"]
    a = to_numpy(result)
    randperm_values_check(sample, a)
    again = _values(_randperm_op(n, **sample.kwargs))
    np.testing.assert_array_equal(a, again, err_msg="same seed, different permutation")
    if n >= 100:     # two independent uniform permutations coincide with probability 1 / n! < 1e-157
        other = _values(_randperm_op(n, **dict(sample.kwargs, seed=sample.kwargs["seed"] + 1)))
        assert not np.array_equal(a, other), "a different seed gave the same permutation"


def _randperm_errors(op, device):
    yield ErrorInput(SampleInput(-1, (), {"dtype": ember.int64, "device": device}, name="n < 0"), RuntimeError,
                     r"Trying to create tensor with negative dimension -1")
    yield ErrorInput(SampleInput(3, (), {"dtype": ember.bool, "device": device}, name="bool"),
                     NotImplementedError, r"\"randperm\" not implemented for 'Bool'")


# ---------------------------------------------------------------- normal with tensor mean / std
def _normal_tensor_op(mean, std, *, seed=0):
    dev = mean.device if isinstance(mean, ember.Tensor) else std.device
    return ember.normal(mean, std, generator=_gen(dev, seed))


def _normal_tensor_samples(op, device, dtype, requires_grad=False):
    mk = lambda shape, lo, hi, s, **kw: make_tensor(shape, device=device, dtype=dtype, low=lo, high=hi, seed=s, **kw)
    yield SampleInput(mk((BIG,), -3, 3, 1), (mk((BIG,), 0.5, 2, 2),), {"seed": 80}, name="tensor mean, tensor std")
    yield SampleInput(mk((40, 50), -3, 3, 3).t(), (0.5,), {"seed": 81}, name="transposed mean, float std")
    yield SampleInput(1.5, (mk((BIG,), 0.5, 2, 4),), {"seed": 82}, name="float mean, tensor std")
    yield SampleInput(mk((3, 1), -3, 3, 5), (mk((1, 4), 0.5, 2, 6),), {"seed": 83}, name="broadcast")
    yield SampleInput(mk((), -3, 3, 7), (mk((), 0.5, 2, 8),), {"seed": 84}, name="0-dim")
    yield SampleInput(mk((0,), -3, 3, 7), (mk((0,), 0.5, 2, 8),), {"seed": 85}, name="empty")
    yield SampleInput(mk((10,), -3, 3, 9), (ember.zeros(10, dtype=dtype, device=device),), {"seed": 86},
                      name="std=0 gives mean")


def _normal_tensor_params(sample):
    """(mean, std, dtype) of a ``normal(mean, std)`` sample: float64 arrays broadcast to the result's shape."""
    mean, std = sample.input, sample.args[0]
    shape = tuple(np.broadcast_shapes(*[tuple(x.shape) for x in (mean, std) if isinstance(x, ember.Tensor)]))
    dt = mean.dtype if isinstance(mean, ember.Tensor) else std.dtype
    m = np.broadcast_to(np.asarray(to_numpy(mean), dtype=np.float64), shape)
    s = np.broadcast_to(np.asarray(to_numpy(std), dtype=np.float64), shape)
    return m, s, dt


def normal_tensor_values_check(sample, values):
    """Values equal to ``mean`` where std=0, elsewhere standardised values ``(x - mean) / std``
    distributed as N(0, 1): Kolmogorov-Smirnov, false-failure probability <= 1e-6 (the rounding
    allowance is the largest rounding bound of a value over its std)."""
    m, s, dt = _normal_tensor_params(sample)
    a = np.asarray(values, dtype=np.float64)
    if np.all(s == 0):
        np.testing.assert_allclose(a, m, rtol=1e-2, atol=1e-2)
        return
    z = ((a - m) / s).reshape(-1)
    if z.size >= MIN_DISTRIBUTION_SIZE:
        allowance = float(np.max(rounding_bound(a, dt.name) / s))
        assert_distribution(z, normal_cdf, "normal(mean, std), standardised", resolution=allowance)


def _normal_tensor_check(sample, result, cpu_result=None):
    m, _, dt = _normal_tensor_params(sample)
    assert tuple(result.shape) == m.shape and result.dtype is dt
    if result.numel() == 0:
        return
    a = to_numpy(result)
    again = to_numpy(_normal_tensor_op(sample.input, sample.args[0], **sample.kwargs))
    np.testing.assert_array_equal(a, again, err_msg="same seed, different values")
    normal_tensor_values_check(sample, a)


def _normal_tensor_errors(op, device):
    m = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(m, (-1.0,), name="std < 0"), RuntimeError,
                     r"normal expects std >= 0.0, but found std -1")
    yield ErrorInput(SampleInput(m, (ember.tensor([1.0, -1.0, 1.0], device=device),), name="a std < 0"),
                     RuntimeError, r"normal expects all elements of std >= 0.0")


# ---------------------------------------------------------------- multinomial
def _multinomial_op(probs, num_samples, replacement=False, *, seed=0):
    return ember.multinomial(probs, num_samples, replacement, generator=_gen(probs.device, seed))


def _multinomial_samples(op, device, dtype, requires_grad=False):
    p = ember.tensor([0.1, 0.0, 0.3, 0.6], dtype=dtype, device=device)
    yield SampleInput(p, (BIG, True), {"seed": 90}, name="1-D, with replacement")
    yield SampleInput(p, (3, False), {"seed": 91}, name="1-D, without replacement (all non-zero ones)")
    rows = ember.tensor([[1.0, 2.0, 3.0, 4.0, 0.0], [0.0, 0.0, 5.0, 1.0, 1.0]], dtype=dtype, device=device)
    yield SampleInput(rows, (2, False), {"seed": 92}, name="2-D, without replacement")
    yield SampleInput(rows.t().contiguous().t(), (BIG, True), {"seed": 93}, name="2-D transposed, replacement")
    yield SampleInput(make_tensor((3, 6), device=device, dtype=dtype, low=0.1, high=1, seed=4), (6, False),
                      {"seed": 94}, name="every category once")


def multinomial_values_check(sample, values):
    """Indices in range, distinct without replacement, never a zero-probability category (while
    others remain); with replacement, each category's frequency consistent with its probability:
    Chernoff bound per category at 1e-6 / (categories x rows), so <= 1e-6 for the sample."""
    probs, (k, repl) = sample.input, sample.args
    p = to_numpy(probs).astype(np.float64)
    p2, a2 = p.reshape(-1, p.shape[-1]), np.asarray(values).reshape(-1, k)
    alpha = 1e-6 / p2.size
    for r, (row_p, row) in enumerate(zip(p2, a2)):
        assert np.all((row >= 0) & (row < len(row_p))), "index out of range"
        nz = int((row_p > 0).sum())
        if not repl:
            assert len(set(row.tolist())) == k, "a category drawn twice without replacement"
        if repl or k <= nz:
            assert np.all(row_p[row] > 0), "a zero-probability category was drawn"
        if repl and k >= MIN_DISTRIBUTION_SIZE:
            counts = np.bincount(row.astype(np.int64), minlength=len(row_p))
            for c, (count, q) in enumerate(zip(counts, row_p / row_p.sum())):
                assert_frequency(int(count), k, float(q), f"multinomial row {r}, category {c}", alpha=alpha)


def _multinomial_check(sample, result, cpu_result=None):
    probs, (k, repl) = sample.input, sample.args
    assert tuple(result.shape) == tuple(probs.shape[:-1]) + (k,) and result.dtype is ember.int64
    a = to_numpy(result)
    again = to_numpy(_multinomial_op(probs, k, repl, **sample.kwargs))
    np.testing.assert_array_equal(a, again, err_msg="same seed, different draws")
    multinomial_values_check(sample, a)


def _multinomial_errors(op, device):
    p = ember.tensor([0.5, 0.5], device=device)
    yield ErrorInput(SampleInput(p, (3, False), name="too many without replacement"), RuntimeError,
                     r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement")
    yield ErrorInput(SampleInput(p, (0, True), name="0 samples"), RuntimeError,
                     r"cannot sample n_sample <= 0 samples")
    yield ErrorInput(SampleInput(ember.ones(2, 2, 2, device=device), (1, True), name="3-D"), RuntimeError,
                     r"prob_dist must be 1 or 2 dim")


#: the value checks of the entries, by OpInfo id: ``fn(sample, values)`` (the result as a numpy array)
VALUE_CHECKS = {
    "uniform": uniform_values_check, "normal": normal_values_check, "random": random_values_check,
    "bernoulli_scalar": bernoulli_scalar_values_check, "bernoulli_tensor": bernoulli_tensor_values_check,
    "exponential": exponential_values_check, "randperm": randperm_values_check,
    "normal_tensor": normal_tensor_values_check, "multinomial": multinomial_values_check,
}

op_db = [
    OpInfo("uniform", op=_uniform_op, dtypes=FLOATING_AND_COMPLEX, sample_inputs=_uniform_samples,
           check=_uniform_check, error_inputs=_uniform_errors),
    OpInfo("normal", op=_normal_op, dtypes=FLOATING_AND_COMPLEX, sample_inputs=_normal_samples,
           check=_normal_check, error_inputs=_normal_errors),
    OpInfo("random", op=_random_op, dtypes=REAL_AND_BOOL, sample_inputs=_random_samples, check=_random_check,
           error_inputs=_random_errors),
    OpInfo("bernoulli_scalar", op=_bernoulli_scalar_op, dtypes=REAL_AND_BOOL,
           sample_inputs=_bernoulli_scalar_samples, check=_bernoulli_scalar_check,
           error_inputs=_bernoulli_scalar_errors),
    OpInfo("bernoulli_tensor", op=_bernoulli_tensor_op, dtypes=FLOATING, sample_inputs=_bernoulli_tensor_samples,
           check=_bernoulli_tensor_check, error_inputs=_bernoulli_tensor_errors),
    OpInfo("exponential", op=_exponential_op, dtypes=FLOATING, sample_inputs=_exponential_samples,
           check=_exponential_check, error_inputs=_exponential_errors),
    OpInfo("randperm", op=_randperm_op, dtypes=REAL, sample_inputs=_randperm_samples, check=_randperm_check,
           error_inputs=_randperm_errors, exact=True),
    OpInfo("normal_tensor", op=_normal_tensor_op, dtypes=FLOATING, sample_inputs=_normal_tensor_samples,
           check=_normal_tensor_check, error_inputs=_normal_tensor_errors),
    OpInfo("multinomial", op=_multinomial_op, dtypes=FLOATING, sample_inputs=_multinomial_samples,
           check=_multinomial_check, error_inputs=_multinomial_errors),
]
