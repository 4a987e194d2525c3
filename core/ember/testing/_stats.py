"""Statistical tests for the random ops' checks, each with a bounded false-failure probability.

A correct generator must pass every check of the op database except with probability at most
``FALSE_FAILURE`` per check (1e-6), so a vendor's correct plugin does not fail by chance. The
bounds are rigorous finite-sample inequalities, not asymptotic approximations:

- ``assert_distribution``: the Kolmogorov-Smirnov distance between the sample and the expected
  distribution, against the Dvoretzky-Kiefer-Wolfowitz bound with Massart's constant,
  ``P(sup |F_n - F| > eps) <= 2 exp(-2 n eps**2)`` (Massart 1990), which holds for every n and,
  conservatively, for discrete distributions too. For n = 2000 at 1e-6 the critical distance is
  0.060 (a fair coin's frequency off by 5.4 standard errors).
- ``assert_frequency``: the count of successes among independent [0, 1] trials with mean ``p``,
  against the Chernoff-Hoeffding bound ``P(p_hat >= p + t) <= exp(-n KL(p + t || p))`` on each
  side (Hoeffding 1963, theorem 1), so it also covers Bernoulli trials of different ``p``.

Results of reduced precision (float16, bfloat16) are rounded draws of the continuous
distribution: ``assert_distribution`` takes the rounding error's bound (``resolution``), and
compares the sample with the distribution shifted by it on each side, which keeps the bound.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["FALSE_FAILURE", "dkw_distance", "assert_distribution", "assert_frequency", "normal_cdf",
           "rounding_bound"]

#: the false-failure probability of one check on a correct generator
FALSE_FAILURE = 1e-6

#: stored mantissa bits per floating dtype (the unit in the last place of a value follows from them)
_MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52,
                  "complex64": 23, "complex128": 52}


def dkw_distance(n: int, alpha: float = FALSE_FAILURE) -> float:
    """The Kolmogorov-Smirnov distance a sample of ``n`` draws of a correct generator exceeds with
    probability at most ``alpha``: ``sqrt(log(2 / alpha) / (2 n))`` (Dvoretzky-Kiefer-Wolfowitz-Massart)."""
    return math.sqrt(math.log(2 / alpha) / (2 * n))


def rounding_bound(values, dtype_name):
    """Per value, twice its unit in the last place in ``dtype_name``: a bound on the error of a
    kernel that draws in higher precision and rounds (or truncates) to the result dtype. Zero for
    non-floating dtypes and for None (exact values)."""
    bits = _MANTISSA_BITS.get(dtype_name)
    if bits is None:
        return np.zeros_like(np.asarray(values, dtype=np.float64))
    _, exp = np.frexp(np.abs(np.asarray(values, dtype=np.float64)))
    return 2.0 * np.ldexp(1.0, np.maximum(exp, -1022 + bits) - 1 - bits)


def normal_cdf(x):
    """The standard normal CDF, element-wise (float64)."""
    return 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(-np.asarray(x, dtype=np.float64) / math.sqrt(2))


def assert_distribution(values, cdf, what: str, *, cdf_below=None, resolution=0.0, alpha: float = FALSE_FAILURE):
    """Kolmogorov-Smirnov test of ``values`` (1-D) against the distribution ``cdf(x) = P(X <= x)``.

    Fails with probability at most ``alpha`` on independent draws of that distribution, each
    perturbed by at most ``resolution`` (rounding to the result dtype: a number, or a function of
    the values such as ``lambda v: rounding_bound(v, "bfloat16")``). The statistic is the largest of
    ``F_n(x) - cdf(x + h)`` and ``cdf_below(x - h) - F_n(x-)`` over the sample points (``F_n`` the
    empirical CDF); ``cdf_below(x) = P(X < x)`` differs from ``cdf`` for discrete distributions
    (default: ``cdf``, continuous).

    :raises AssertionError: naming ``what``, the distance, the critical value and the sample size.
    """
    x = np.sort(np.asarray(values, dtype=np.float64).reshape(-1))
    n = x.size
    if n == 0:
        return
    cdf_below = cdf if cdf_below is None else cdf_below
    h = resolution(x) if callable(resolution) else resolution
    at_or_below = np.searchsorted(x, x, side="right") / n       # F_n(x)
    below = np.searchsorted(x, x, side="left") / n              # F_n(x-)
    distance = max(float(np.max(at_or_below - cdf(x + h))), float(np.max(cdf_below(x - h) - below)))
    eps = dkw_distance(n, alpha)
    assert distance <= eps, (f"{what}: the sample's distribution is {distance:.4f} away from the expected one "
                             f"(Kolmogorov-Smirnov distance; a correct generator exceeds {eps:.4f} for {n} values "
                             f"with probability <= {alpha:g})")


def _kl_bernoulli(q: float, p: float) -> float:
    """KL(Bernoulli(q) || Bernoulli(p)), with 0 log 0 = 0 (inf when q is impossible under p)."""
    def term(a, b):
        if a == 0:
            return 0.0
        return math.inf if b == 0 else a * math.log(a / b)
    return term(q, p) + term(1 - q, 1 - p)


def assert_frequency(successes: int, trials: int, p: float, what: str, *, alpha: float = FALSE_FAILURE):
    """``successes`` of ``trials`` independent trials in [0, 1] whose mean is ``p`` (Bernoulli
    draws, equal or not): fails when ``trials * KL(p_hat || p) > log(2 / alpha)``, which a correct
    generator does with probability at most ``alpha`` (the Chernoff-Hoeffding bound, each side
    ``alpha / 2``). With ``p`` 0 or 1 any other frequency fails.

    :raises AssertionError: naming ``what``, the frequency, ``p`` and the accepted range's reason.
    """
    if trials == 0:
        return
    p_hat = successes / trials
    divergence = trials * _kl_bernoulli(p_hat, p)
    limit = math.log(2 / alpha)
    assert divergence <= limit, (f"{what}: frequency {p_hat:.4f} over {trials} draws, expected {p:.4f} "
                                 f"(Chernoff bound: a correct generator is this far off with probability "
                                 f"<= {alpha:g})")
