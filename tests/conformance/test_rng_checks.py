"""The random ops' value checks (ember.testing.opdb.random.VALUE_CHECKS) as statistical tests:
fed draws of numpy's generators (MT19937 and PCG64, independent of ember's) for the shapes and
parameters of every sample, they pass over many seeds; fed a wrong generator, they fail."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import _stats
from ember.testing.opdb import random as R
from ember.testing.opdb._common import to_numpy

SEEDS = 200


@pytest.fixture(autouse=True, scope="module")
def _plugins_loaded():
    """The samples are built on cpu: load the plugins first (as the conformance runner does)."""
    ember.plugins.ensure_loaded()


def _as_dtype(a, dtype):
    """``a`` (numpy) rounded to ``dtype`` the way a device stores it, read back as ``to_numpy`` reads a result."""
    return to_numpy(ember.tensor(np.asarray(a)).to(dtype))


def _shape(sample):
    return tuple(sample.input.shape)


def _draw_uniform(sample, rng):
    low, high = sample.args
    x = rng.uniform(low, high, _shape(sample))
    if sample.input.dtype.is_complex:
        x = x + 1j * rng.uniform(low, high, _shape(sample))
    return _as_dtype(x, sample.input.dtype)


def _draw_normal(sample, rng):
    mean, std = sample.args
    if sample.input.dtype.is_complex:
        s = std / np.sqrt(2)
        x = rng.normal(mean, s, _shape(sample)) + 1j * rng.normal(mean, s, _shape(sample))
    else:
        x = rng.normal(mean, std, _shape(sample))
    return _as_dtype(x, sample.input.dtype)


def _draw_random(sample, rng):
    from ember._ops._random import random_upper
    args, dtype = sample.args, sample.input.dtype
    low, high = (0, args[0]) if len(args) == 1 else (args if args else (0, random_upper(dtype) + 1))
    return _as_dtype(rng.integers(low, high, _shape(sample)), dtype)


def _draw_bernoulli_scalar(sample, rng):
    return _as_dtype(rng.random(_shape(sample)) < sample.args[0], sample.input.dtype)


def _draw_bernoulli_tensor(sample, rng):
    p = to_numpy(sample.input).astype(np.float64)
    return _as_dtype(rng.random(p.shape) < p, sample.input.dtype)


def _draw_exponential(sample, rng):
    return _as_dtype(rng.exponential(1 / sample.args[0], _shape(sample)), sample.input.dtype)


def _draw_randperm(sample, rng):
    return rng.permutation(sample.input)


def _draw_normal_tensor(sample, rng):
    m, s, dtype = R._normal_tensor_params(sample)
    return _as_dtype(rng.normal(m, s), dtype)


def _draw_multinomial(sample, rng):
    probs, (k, replacement) = sample.input, sample.args
    p = to_numpy(probs).astype(np.float64)
    rows = [rng.choice(len(q), size=k, replace=replacement, p=q / q.sum()) for q in p.reshape(-1, p.shape[-1])]
    return np.stack(rows).reshape(tuple(probs.shape[:-1]) + (k,))


#: a correct generator for every entry, built on numpy's: draws for a sample's shape and parameters
DRAWS = {"uniform": _draw_uniform, "normal": _draw_normal, "random": _draw_random,
         "bernoulli_scalar": _draw_bernoulli_scalar, "bernoulli_tensor": _draw_bernoulli_tensor,
         "exponential": _draw_exponential, "randperm": _draw_randperm, "normal_tensor": _draw_normal_tensor,
         "multinomial": _draw_multinomial}


def _cases():
    """(entry id, dtype name, sample) for every sample of every random entry on cpu, every dtype."""
    out = []
    for info in R.op_db:
        for dtype_name in info.dtypes:
            for sample in info.samples("cpu", getattr(ember, dtype_name)):
                out.append((info.id, dtype_name, sample))
    return out


def test_every_random_entry_has_a_value_check_and_a_reference_draw():
    ids = {info.id for info in R.op_db}
    assert set(R.VALUE_CHECKS) == ids and set(DRAWS) == ids


@pytest.mark.parametrize("bit_generator", [np.random.MT19937, np.random.PCG64])
def test_a_correct_generator_passes_every_check_over_many_seeds(bit_generator):
    cases = _cases()
    probe = np.random.Generator(bit_generator(12345))
    big = {op_id for op_id, _, s in cases if np.size(DRAWS[op_id](s, probe)) >= R.MIN_DISTRIBUTION_SIZE}
    assert big == set(R.VALUE_CHECKS)       # every entry has samples large enough for its distribution test
    failures = []
    for seed in range(SEEDS):
        rng = np.random.Generator(bit_generator(seed))
        for op_id, dtype_name, sample in cases:
            try:
                R.VALUE_CHECKS[op_id](sample, DRAWS[op_id](sample, rng))
            except AssertionError as e:
                failures.append(f"seed {seed}, {op_id} {dtype_name} {sample.name}: {e}")
    assert not failures, f"{len(failures)} of {SEEDS * len(cases)} checks failed:\n" + "\n".join(failures[:10])


# ---------------------------------------------------------------- wrong generators are caught
def _sample(op_id, dtype_name, name):
    info = next(i for i in R.op_db if i.id == op_id)
    return next(s for s in info.samples("cpu", getattr(ember, dtype_name)) if s.name == name)


WRONG = [
    # (entry, dtype, sample name, a wrong generator, what is wrong)
    ("random", "bool", "random_() full range", lambda s, rng: np.ones(_shape(s), bool), "always True"),
    ("random", "bool", "contiguous (2000,)", lambda s, rng: rng.random(_shape(s)) < 0.4, "P(True) = 0.4"),
    ("random", "int64", "contiguous (2000,)", lambda s, rng: rng.integers(-5, 17, _shape(s)),
     "misses 17, 18 and 19"),
    ("random", "int64", "random_() full range", lambda s, rng: rng.integers(0, 2 ** 62, _shape(s)),
     "half the range"),
    ("uniform", "float32", "contiguous (2000,)", lambda s, rng: rng.random(_shape(s)) ** 1.3, "skewed (u ** 1.3)"),
    ("uniform", "complex64", "contiguous (2000,)",
     lambda s, rng: rng.random(_shape(s)) + 1j * rng.random(_shape(s)) * 0.9, "imaginary part in [0, 0.9)"),
    ("normal", "float32", "contiguous (2000,)", lambda s, rng: rng.normal(0, 1.6, _shape(s)), "std 1.6"),
    ("normal", "bfloat16", "transposed (40, 50)",
     lambda s, rng: _as_dtype(rng.normal(3.25, 0.5, _shape(s)), ember.bfloat16), "mean 3.25"),
    ("exponential", "float32", "contiguous (2000,)", lambda s, rng: rng.exponential(1.5, _shape(s)),
     "rate 1 / 1.5"),
    ("bernoulli_scalar", "float32", "transposed (40, 50)", lambda s, rng: rng.random(_shape(s)) < 0.3,
     "p 0.3 instead of 0.2"),
    ("bernoulli_tensor", "float32", "contiguous (2000,)",
     lambda s, rng: rng.random(_shape(s)) < to_numpy(s.input) * 0.75, "p scaled by 0.75"),
    ("normal_tensor", "float32", "tensor mean, tensor std",
     lambda s, rng: rng.normal(R._normal_tensor_params(s)[0], 2 * R._normal_tensor_params(s)[1]), "std doubled"),
    ("multinomial", "float32", "1-D, with replacement", lambda s, rng: rng.choice(4, 2000, p=[0.2, 0, 0.3, 0.5]),
     "probabilities off by 0.1"),
]


@pytest.mark.parametrize("op_id, dtype_name, name, draw, what", WRONG, ids=[f"{w[0]}-{w[4]}" for w in WRONG])
def test_a_wrong_generator_is_caught(op_id, dtype_name, name, draw, what):
    sample = _sample(op_id, dtype_name, name)
    caught = 0
    for seed in range(20):
        try:
            R.VALUE_CHECKS[op_id](sample, np.asarray(draw(sample, np.random.Generator(np.random.PCG64(seed)))))
        except AssertionError:
            caught += 1
    assert caught == 20, f"{op_id} ({what}) caught for {caught} of 20 seeds"


def test_the_bounds_are_the_stated_probabilities():
    # DKW-Massart at n = 2000: 2 exp(-2 n eps**2) = 1e-6
    eps = _stats.dkw_distance(2000)
    assert 2 * np.exp(-2 * 2000 * eps ** 2) == pytest.approx(1e-6)
    # a fair coin 5 standard errors off passes, 6 off fails (the critical point is ~5.4)
    n, se = 2000, 0.5 / np.sqrt(2000)
    _stats.assert_frequency(int(n * (0.5 + 5 * se)), n, 0.5, "coin")
    with pytest.raises(AssertionError, match=r"frequency 0\.5670 over 2000 draws, expected 0\.5000"):
        _stats.assert_frequency(int(n * (0.5 + 6 * se)), n, 0.5, "coin")
    with pytest.raises(AssertionError, match="Kolmogorov-Smirnov distance"):
        _stats.assert_distribution(np.linspace(0, 0.9, 2000), lambda x: np.clip(x, 0, 1), "u")
