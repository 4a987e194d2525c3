"""Random sampling (ember._ops._random + the cpu kernels): reproducibility, distributions
(checked statistically against numpy / closed-form references), dtypes, shapes,
non-contiguous in-place targets, and PyTorch's errors."""
import math
import warnings

import numpy as np
import pytest

import ember

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
N = 20000


def _np(t):
    a = t.numpy()
    return a.astype(np.float64) if t.dtype in (ember.bfloat16, ember.float16) else a


# ---------------------------------------------------------------- reproducibility
SAMPLERS = {
    "rand": lambda g: ember.rand(5, generator=g),
    "randn": lambda g: ember.randn(2, 3, generator=g),
    "randint": lambda g: ember.randint(0, 100, (6,), generator=g),
    "randperm": lambda g: ember.randperm(10, generator=g),
    "normal": lambda g: ember.normal(ember.zeros(4), ember.ones(4), generator=g),
    "normal_sized": lambda g: ember.normal(1., 2., (4,), generator=g),
    "bernoulli": lambda g: ember.bernoulli(ember.full((8,), 0.5), generator=g),
    "multinomial": lambda g: ember.multinomial(ember.ones(10), 4, generator=g),
    "uniform_": lambda g: ember.empty(4).uniform_(-1, 1, generator=g),
    "normal_": lambda g: ember.empty(4).normal_(generator=g),
    "random_": lambda g: ember.empty(4, dtype=ember.int64).random_(generator=g),
    "bernoulli_": lambda g: ember.empty(8).bernoulli_(0.5, generator=g),
    "exponential_": lambda g: ember.empty(4).exponential_(generator=g),
    "rand_like": lambda g: ember.rand_like(ember.zeros(3), generator=g),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_same_seed_same_numbers(name):
    f = SAMPLERS[name]
    a = f(ember.Generator().manual_seed(123)).tolist()
    b = f(ember.Generator().manual_seed(123)).tolist()
    c = f(ember.Generator().manual_seed(124)).tolist()
    assert a == b
    assert a != c


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_global_seed_resets(name):
    f = SAMPLERS[name]
    ember.manual_seed(7)
    a = f(None).tolist()
    a2 = f(None).tolist()
    ember.manual_seed(7)
    assert f(None).tolist() == a
    assert f(None).tolist() == a2


def test_generator_independent_of_global_state():
    g = ember.Generator().manual_seed(5)
    first = ember.rand(3, generator=g).tolist()
    ember.manual_seed(0)
    ember.rand(100)
    g.manual_seed(5)
    assert ember.rand(3, generator=g).tolist() == first
    # consecutive draws differ; the state round-trips
    state = g.get_state()
    x = ember.rand(3, generator=g).tolist()
    assert x != first
    g.set_state(state)
    assert ember.rand(3, generator=g).tolist() == x


def test_rng_state_functions():
    s = ember.get_rng_state()
    a = ember.randn(4).tolist()
    ember.set_rng_state(s)
    assert ember.randn(4).tolist() == a


def test_bad_generator_argument():
    with pytest.raises(TypeError, match="expected an ember.Generator"):
        ember.rand(2, generator=3)


# ---------------------------------------------------------------- rand / randn
@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_dtypes_and_range(dtype):
    t = ember.rand(N, dtype=dtype)
    assert t.dtype is dtype and t.shape == (N,)
    a = _np(t)
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.02 and abs(a.var() - 1 / 12) < 0.01


def test_rand_sizes_and_default_dtype():
    assert ember.rand(2, 3).shape == (2, 3)
    assert ember.rand((2, 3)).shape == (2, 3)
    assert ember.rand([4]).shape == (4,)
    assert ember.rand(()).shape == ()
    assert ember.rand(0, 3).shape == (0, 3)
    assert ember.rand(2).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.rand(2).dtype is ember.float64
        assert ember.randn(2).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        ember.rand(-1)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ember.rand(2, dtype=ember.int64)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        ember.rand(2, dtype=ember.bool)


def test_rand_out():
    out = ember.empty(5)
    r = ember.rand(2, 3, out=out)
    assert r is out and out.shape == (2, 3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_moments(dtype):
    a = _np(ember.randn(N, dtype=dtype))
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ember.randn(2, dtype=ember.int64)


@pytest.mark.parametrize("dtype", [ember.complex64, ember.complex128])
def test_complex_rand_randn(dtype):
    u = ember.rand(N, dtype=dtype).numpy()
    assert u.real.min() >= 0 and u.real.max() < 1 and u.imag.min() >= 0 and u.imag.max() < 1
    z = ember.randn(N, dtype=dtype).numpy()
    # PyTorch: each part has variance 1/2, so E|z|^2 = 1
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.05
    assert abs(z.real.var() - 0.5) < 0.03


# ---------------------------------------------------------------- randint / random_
def test_randint_forms_and_range():
    t = ember.randint(10, (N,))
    assert t.dtype is ember.int64 and t.shape == (N,)
    assert set(np.unique(t.numpy())) == set(range(10))
    t = ember.randint(-3, 4, (2, N // 2))
    assert t.shape == (2, N // 2) and t.numpy().min() == -3 and t.numpy().max() == 3
    assert ember.randint(0, 5, size=(3,)).shape == (3,)
    assert ember.randint(low=2, high=5, size=(3,)).numpy().min() >= 2
    assert ember.randint(5, (0,)).shape == (0,)
    assert ember.randint(5, ()).shape == ()
    f = ember.randint(3, 10, (100,), dtype=ember.float64)
    assert f.dtype is ember.float64 and np.all(f.numpy() == np.floor(f.numpy()))
    u = ember.randint(0, 256, (N,), dtype=ember.uint8)
    assert u.dtype is ember.uint8 and u.numpy().max() > 250
    big = ember.randint(-2 ** 63, 2 ** 63 - 1, (4,))
    assert big.dtype is ember.int64


def test_randint_errors():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        ember.randint(5, 3, (2,))
    with pytest.raises(RuntimeError, match="but got from=3 >= to=3"):
        ember.randint(3, 3, (2,))
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        ember.randint(0, 300, (2,), dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="from is out of bounds for unsigned char"):
        ember.randint(-1, 3, (2,), dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        ember.randint(0, 10, (2,), dtype=ember.bool)
    with pytest.raises(RuntimeError, match="check_random_bounds handles only integral, floating-point and boolean"):
        ember.randint(0, 10, (2,), dtype=ember.complex64)
    with pytest.raises(TypeError, match=r"randint\(\): argument 'size' \(position 2\) must be tuple of ints, not int"):
        ember.randint(3, 10)
    with pytest.raises(TypeError, match="must be int, not float"):
        ember.randint(3.5, 10, (2,))


@pytest.mark.parametrize("dtype, hi", [(ember.int8, 127), (ember.uint8, 255), (ember.int16, 32767), (ember.bool, 1),
                                       (ember.float16, 2 ** 11), (ember.float32, 2 ** 24),
                                       (ember.bfloat16, 2 ** 8)])
def test_random_default_range(dtype, hi):
    a = _np(ember.empty(N, dtype=dtype).random_()).astype(np.float64)
    assert a.min() >= 0 and a.max() <= hi
    assert a.max() > hi * 0.9
    assert np.all(a == np.floor(a))


def test_random_forms():
    t = ember.empty(N, dtype=ember.int64)
    assert t.random_(5) is t
    assert set(np.unique(t.numpy())) == set(range(5))
    t.random_(-2, 2)
    assert set(np.unique(t.numpy())) == {-2, -1, 0, 1}
    t.random_(**{"from": 3, "to": 5})
    assert set(np.unique(t.numpy())) == {3, 4}
    i8 = ember.empty(N, dtype=ember.int8).random_(100, None)
    assert i8.numpy().min() >= 100 and i8.numpy().max() == 127
    big = ember.empty(8, dtype=ember.int64).random_()
    assert big.numpy().min() >= 0 and big.numpy().max() > 2 ** 40


def test_random_errors_write_nothing():
    t = ember.zeros(3, dtype=ember.uint8)
    v0 = t._version
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        t.random_(5, 3)
    with pytest.raises(RuntimeError, match="but got from=0 >= to=-5"):
        t.random_(-5)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        t.random_(0, 300)
    with pytest.raises(RuntimeError, match="from is out of bounds for unsigned char"):
        t.random_(300, None)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for signed char"):
        ember.empty(2, dtype=ember.int8).random_(3, 129)
    assert t.tolist() == [0, 0, 0] and t._version == v0
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        ember.empty(2).random_(2 ** 25)


# ---------------------------------------------------------------- in-place samplers on views
@pytest.mark.parametrize("fill", [lambda v: v.uniform_(2, 3), lambda v: v.normal_(5, 0.1),
                                  lambda v: v.random_(2, 3), lambda v: v.bernoulli_(1.0),
                                  lambda v: v.exponential_(1e6)],
                         ids=["uniform_", "normal_", "random_", "bernoulli_", "exponential_"])
@pytest.mark.parametrize("view", [lambda t: t.t(), lambda t: t[:, 1::2], lambda t: t[1]],
                         ids=["transposed", "sliced", "row"])
def test_inplace_on_views_writes_only_the_view(fill, view):
    base = ember.full((4, 6), -100.)
    v = view(base)
    v0 = base._version
    r = fill(v)
    assert r is v
    a = base.numpy()
    idx = np.zeros(a.shape, bool)               # which elements of base the view covers
    view(ember.from_numpy(idx)).fill_(True)
    assert np.all(a[~idx] == -100)
    assert np.all(a[idx] > 0)
    assert base._version > v0


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_(dtype):
    a = _np(ember.empty(N, dtype=dtype).uniform_(-2, 3))
    assert a.min() >= -2 and a.max() <= 3
    assert abs(a.mean() - 0.5) < 0.1
    assert ember.empty(3).uniform_(1, 1).tolist() == [1, 1, 1]
    t = ember.empty(3).uniform_(**{"from": 4, "to": 5})
    assert t.numpy().min() >= 4


def test_uniform_errors():
    t = ember.zeros(3)
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        t.uniform_(2, 1)
    with pytest.raises(RuntimeError, match="to is out of bounds for float"):
        t.uniform_(0, math.inf)
    with pytest.raises(RuntimeError, match="to is out of bounds for c10::Half"):
        ember.empty(2, dtype=ember.float16).uniform_(0, 1e6)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ember.zeros(2, dtype=ember.int64).uniform_()
    assert t.tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16])
def test_normal_(dtype):
    a = _np(ember.empty(N, dtype=dtype).normal_(3, 2))
    assert abs(a.mean() - 3) < 0.1 and abs(a.std() - 2) < 0.1
    assert ember.empty(3).normal_(1.5, 0).tolist() == [1.5, 1.5, 1.5]
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.empty(2).normal_(0, -1)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16])
def test_exponential_(dtype):
    a = _np(ember.empty(N, dtype=dtype).exponential_(4))
    assert a.min() >= 0 and abs(a.mean() - 0.25) < 0.02
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=-1"):
        ember.empty(2).exponential_(-1)
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=0"):
        ember.empty(2).exponential_(0)
    with pytest.raises(RuntimeError, match="dtype must be a floating point but you specified Long"):
        ember.empty(2, dtype=ember.int64).exponential_()


# ---------------------------------------------------------------- bernoulli
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.bool, ember.uint8])
def test_bernoulli_scalar(dtype):
    t = ember.empty(N, dtype=dtype).bernoulli_(0.3)
    a = t.numpy().astype(np.float64)
    assert set(np.unique(a)) <= {0, 1}
    assert abs(a.mean() - 0.3) < 0.02
    assert ember.bernoulli(ember.zeros(4, dtype=ember.float64), 1.0).tolist() == [1, 1, 1, 1]
    assert ember.bernoulli(ember.zeros(4), p=0.0).dtype is ember.float32


def test_bernoulli_tensor_probabilities():
    p = ember.tensor([0., 1., 0., 1.])
    assert ember.bernoulli(p).tolist() == [0, 1, 0, 1]
    assert p.bernoulli().dtype is ember.float32
    probs = np.linspace(0, 1, 5)
    pt = ember.tensor(probs).reshape(5, 1).expand(5, 4000)       # broadcast, non-contiguous
    draws = ember.bernoulli(pt).numpy()
    np.testing.assert_allclose(draws.mean(axis=1), probs, atol=0.04)
    assert ember.bernoulli(ember.full((3,), 0.5, dtype=ember.float16)).dtype is ember.float16
    out = ember.empty(2, 3).bernoulli_(ember.tensor([0., 1., 0.]))    # p broadcasts to self
    assert out.tolist() == [[0, 1, 0], [0, 1, 0]]
    o = ember.empty(4)
    assert ember.bernoulli(p, out=o) is o and o.tolist() == [0, 1, 0, 1]


def test_bernoulli_errors_write_nothing():
    t = ember.zeros(3)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        t.bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1 to be true, but got false"):
        t.bernoulli_(ember.tensor([0.5, 2, 0.1]))
    with pytest.raises(RuntimeError, match="Expected p_in >= 0"):
        ember.bernoulli(ember.tensor([0.5, -1.]))
    with pytest.raises(NotImplementedError, match="\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"):
        ember.bernoulli(ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the existing size \(3\)"):
        ember.empty(2).bernoulli_(ember.tensor([0.1, 0.2, 0.3]))
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        ember.empty(2, dtype=ember.complex64).bernoulli_()
    assert t.tolist() == [0, 0, 0]


# ---------------------------------------------------------------- normal overloads
def test_normal_overloads_shapes_dtypes():
    m = ember.normal(ember.full((N,), 3.), ember.full((N,), 2.))
    assert m.dtype is ember.float32 and abs(m.numpy().mean() - 3) < 0.1 and abs(m.numpy().std() - 2) < 0.1
    assert ember.normal(ember.zeros(3), ember.ones(4, 3)).shape == (4, 3)
    assert ember.normal(ember.zeros(3), 2.).shape == (3,)
    assert ember.normal(0., ember.ones(3)).shape == (3,)
    assert ember.normal(mean=ember.zeros(2)).shape == (2,)
    assert ember.normal(ember.zeros(3, dtype=ember.float64), ember.ones(3)).dtype is ember.float64
    assert ember.normal(ember.zeros(3), ember.ones(3, dtype=ember.float64)).dtype is ember.float32
    assert ember.normal(0., ember.ones(2, dtype=ember.float64)).dtype is ember.float64
    s = ember.normal(2, 3, size=(2,), dtype=ember.float64)
    assert s.dtype is ember.float64 and s.shape == (2,)
    assert ember.normal(2., 3., (4, 5)).shape == (4, 5)
    z = ember.normal(ember.arange(4.), ember.zeros(4))
    assert z.tolist() == [0, 1, 2, 3]
    # per-element mean / std (transposed, broadcast inputs)
    mean = ember.tensor([[0.], [100.]]).expand(2, N // 2)
    std = ember.tensor([1., 10.]).reshape(2, 1).expand(2, N // 2).t().t()
    a = ember.normal(mean, std).numpy()
    np.testing.assert_allclose(a.mean(axis=1), [0, 100], atol=0.6)
    np.testing.assert_allclose(a.std(axis=1), [1, 10], rtol=0.05)
    out = ember.empty(3)
    assert ember.normal(ember.zeros(3), 1., out=out) is out


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(0., -1., (3,))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(ember.zeros(2), std=-1.)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ember.normal(ember.zeros(3), ember.tensor([1., -1., 1.]))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\)"):
        ember.normal(ember.zeros(3), ember.ones(4))
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ember.normal(ember.zeros(3, dtype=ember.int64), 1.)
    with pytest.raises(TypeError, match="normal"):
        ember.normal(0., 1.)


# ---------------------------------------------------------------- randperm
@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.uint8, ember.float32, ember.float16])
def test_randperm(dtype):
    p = ember.randperm(200, dtype=dtype)
    assert p.dtype is dtype and p.shape == (200,)
    np.testing.assert_array_equal(np.sort(_np(p)), np.arange(200))
    assert not np.array_equal(_np(p), np.arange(200))


def test_randperm_edges_and_errors():
    assert ember.randperm(0).shape == (0,) and ember.randperm(0).dtype is ember.int64
    assert ember.randperm(1).tolist() == [0]
    assert ember.randperm(256, dtype=ember.uint8).numpy().max() == 255
    out = ember.empty(2, dtype=ember.int64)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        assert ember.randperm(5, out=out) is out
    assert sorted(out.tolist()) == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[-1\]"):
        ember.randperm(-1)
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        ember.randperm(2, dtype=ember.bool)
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type."):
        ember.randperm(3000, dtype=ember.float16)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        ember.randperm(257, dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        ember.randperm(129, dtype=ember.int8)


# ---------------------------------------------------------------- multinomial
def test_multinomial_with_replacement_frequencies():
    w = np.array([0.1, 0.0, 0.6, 0.3])
    s = ember.multinomial(ember.tensor(w), N, replacement=True)
    assert s.dtype is ember.int64 and s.shape == (N,)
    freq = np.bincount(s.numpy(), minlength=4) / N
    np.testing.assert_allclose(freq, w, atol=0.02)
    rows = ember.tensor([[1., 0., 0.], [0., 0., 5.]])
    r = ember.multinomial(rows, 7, True)
    assert r.shape == (2, 7) and r.tolist() == [[0] * 7, [2] * 7]


def test_multinomial_without_replacement():
    w = ember.tensor([1., 2., 3., 4., 5.], dtype=ember.float64)
    for _ in range(5):
        s = ember.multinomial(w, 5).tolist()
        assert sorted(s) == [0, 1, 2, 3, 4]
    # zero-probability categories come only after all the others
    assert sorted(ember.multinomial(ember.tensor([0., 1., 0.]), 2).tolist()[:1]) == [1]
    # the first draw follows the probabilities
    first = np.array([ember.multinomial(ember.tensor([0.2, 0.8]), 1).item() for _ in range(400)])
    assert abs(first.mean() - 0.8) < 0.08
    t = ember.tensor([[0.2, 0.8], [1., 1.]])
    assert ember.multinomial(t, 2).shape == (2, 2)
    assert ember.multinomial(ember.ones(0, 3), 2).shape == (0, 2)
    assert ember.tensor([1., 1.]).multinomial(1).shape == (1,)


def test_multinomial_errors():
    w = ember.tensor([0.2, 0.3, 0.5])
    with pytest.raises(RuntimeError, match=r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"):
        ember.multinomial(w, 4)
    with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0 samples"):
        ember.multinomial(w, 0)
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        ember.multinomial(ember.tensor([-1., 2.]), 1)
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
        ember.multinomial(ember.tensor([math.nan, 2.]), 1)
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of probabilities <= 0\)"):
        ember.multinomial(ember.tensor([0., 0.]), 1)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        ember.multinomial(ember.zeros(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="multinomial only supports floating-point dtypes for input, got: Long"):
        ember.multinomial(ember.tensor([1, 2]), 1)


# ---------------------------------------------------------------- *_like
def test_like_functions():
    x = ember.zeros(2, 3, dtype=ember.float64)
    r = ember.rand_like(x)
    assert r.shape == (2, 3) and r.dtype is ember.float64 and r.numpy().max() < 1
    assert ember.randn_like(x, dtype=ember.float32).dtype is ember.float32
    i = ember.randint_like(x, 5)
    assert i.dtype is ember.float64 and i.numpy().max() <= 4 and np.all(i.numpy() == np.floor(i.numpy()))
    j = ember.randint_like(ember.zeros(N, dtype=ember.int32), 3, 5)
    assert j.dtype is ember.int32 and set(np.unique(j.numpy())) == {3, 4}
    assert ember.rand_like(x.t()).shape == (3, 2)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        ember.randint_like(x, 5, 3)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        ember.rand_like(ember.zeros(2, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        ember.randn_like(ember.zeros(2, dtype=ember.int64))


def test_ops_are_declared_with_generator_kernels():
    from ember._dispatch import ops
    for name in ("uniform", "normal", "random", "bernoulli_scalar", "bernoulli_tensor", "exponential", "randperm",
                 "multinomial", "normal_tensor"):
        op = ops[name]
        assert any(a.name == "generator" for a in op.schema.arguments), name
    assert ops["normal_tensor"].composite is not None


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_uniform_never_rounds_up_to_high(dtype):
    # a narrow range: rounding u * (high - low) + low to the dtype would often land on high itself
    t = ember.empty(20000, dtype=getattr(ember, dtype)).uniform_(1.0, 1.01)
    v = t.double()
    assert bool((v < 1.01).all()) and bool((v >= 1.0).all())
