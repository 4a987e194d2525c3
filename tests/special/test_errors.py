"""Bad input to ember.special raises the exception class PyTorch raises (messages close to PyTorch's)."""
from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [
    ("polygamma negative n", lambda T: T.special.polygamma(-1, T.ones(3)), r"does not support negative n"),
    ("polygamma float n", lambda T: T.polygamma(1.5, T.ones(3)), r"must be int"),
    ("polygamma complex", lambda T: T.polygamma(1, T.ones(3, dtype=T.complex64)), r"not implemented for"),
    ("Tensor.polygamma_ negative n", lambda T: T.ones(3).polygamma_(-2), r"does not support negative n"),
    ("mvlgamma p < 1", lambda T: T.mvlgamma(T.ones(3) * 2, 0), r"p has to be greater than or equal to 1"),
    ("multigammaln bool", lambda T: T.special.multigammaln(T.ones(3, dtype=T.bool), 1),
     r"The input tensor may not be a boolean tensor"),
    ("mvlgamma complex", lambda T: T.mvlgamma(T.ones(3, dtype=T.complex64), 1), r"not implemented for"),
    ("digamma complex", lambda T: T.digamma(T.ones(3, dtype=T.complex64)), r"not implemented for 'ComplexFloat'"),
    ("lgamma complex", lambda T: T.lgamma(T.ones(3, dtype=T.complex128)), r"not implemented for 'ComplexDouble'"),
    ("i0e complex", lambda T: T.special.i0e(T.ones(3, dtype=T.complex64)), r"not implemented for"),
    ("logit complex", lambda T: T.logit(T.ones(3, dtype=T.complex64)), r"not implemented for"),
    ("xlogy complex", lambda T: T.xlogy(T.ones(3, dtype=T.complex64), T.ones(3)), r"not implemented for"),
    ("zeta half", lambda T: T.special.zeta(T.ones(3, dtype=T.float16), T.ones(3, dtype=T.float16)),
     r"not implemented for 'Half'"),
    ("bessel_j0 bfloat16", lambda T: T.special.bessel_j0(T.ones(3, dtype=T.bfloat16)),
     r"not implemented for 'BFloat16'"),
    ("erfcx half", lambda T: T.special.erfcx(T.ones(3, dtype=T.float16)), r"not implemented for 'Half'"),
    ("chebyshev half", lambda T: T.special.chebyshev_polynomial_t(T.ones(3, dtype=T.float16), 2),
     r"not implemented for 'Half'"),
    ("igamma integer", lambda T: T.igamma(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64)),
     r"not implemented for 'Long'"),
    ("igamma bool", lambda T: T.special.gammainc(T.ones(3, dtype=T.bool), T.ones(3, dtype=T.bool)),
     r"not implemented for 'Bool'"),
    ("gammainc number", lambda T: T.special.gammainc(T.ones(2), 2.0),
     r"argument 'other' \(position 2\) must be Tensor"),
    ("igamma number", lambda T: T.igamma(2.0, T.ones(2)), r"argument 'input' \(position 1\) must be Tensor"),
    ("not broadcastable", lambda T: T.special.zeta(T.ones(3), T.ones(4)), r"must match the size"),
    ("digamma of a list", lambda T: T.digamma([1.0]), r"must be Tensor"),
    ("in-place integer result", lambda T: T.arange(3).lgamma_(), None),
    ("out= of an integer dtype", lambda T: T.special.i0(T.ones(3), out=T.empty(3, dtype=T.int64)), None),
    ("in-place broadcast", lambda T: T.ones(3).xlogy_(T.ones(2, 3)), None),
]


@pytest.mark.parametrize("label,call,regex", CASES, ids=[c[0] for c in CASES])
def test_error_class_matches_torch(label, call, regex):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value), match=regex):
        call(ember)


def test_no_partial_write_on_error():
    x = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError):
        x.polygamma_(-1)
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_mvlgamma_domain_is_not_checked_as_in_torch_2_13():
    # PyTorch 2.13 no longer refuses elements <= (p - 1) / 2: lgamma's values (inf at its poles)
    x = [0.0, 0.5, 1.0, -1.0]
    assert ember.mvlgamma(ember.tensor(x), 2).tolist() == torch.mvlgamma(torch.tensor(x), 2).tolist()
