"""ember.bincount / Tensor.bincount against torch.bincount (found missing by examples/ programs)."""
import numpy as np
import pytest

import ember


@pytest.mark.parametrize("values, minlength", [([0, 3, 1, 3], 0), ([0, 3, 1, 3], 6), ([5], 2), ([], 0), ([], 3),
                                               ([2, 2, 2], 0)])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int16"])
def test_counts_match_torch(values, minlength, dtype):
    torch = pytest.importorskip("torch")
    ours = ember.bincount(ember.tensor(values, dtype=getattr(ember, dtype)), minlength=minlength)
    theirs = torch.bincount(torch.tensor(values, dtype=getattr(torch, dtype)), minlength=minlength)
    assert ours.dtype == ember.int64 and ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("wdtype, expect", [("float32", "float32"), ("float64", "float64"), ("float16", "float64"),
                                            ("int32", "float64")])
def test_weights_sum_and_result_dtype_match_torch(wdtype, expect):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 7, size=50)
    w = rng.uniform(-2, 2, size=50) if "float" in wdtype else rng.integers(-3, 4, size=50)
    ours = ember.tensor(x).bincount(ember.tensor(w, dtype=getattr(ember, wdtype)), minlength=9)
    theirs = torch.tensor(x).bincount(torch.tensor(w, dtype=getattr(torch, wdtype)), minlength=9)
    assert ours.dtype == getattr(ember, expect) and str(theirs.dtype) == f"torch.{expect}"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


def test_result_never_requires_grad():
    w = ember.ones(3, requires_grad=True)
    assert not ember.bincount(ember.tensor([0, 1, 1]), weights=w).requires_grad


@pytest.mark.parametrize("make, cls, msg", [
    (lambda: ember.bincount(ember.tensor([-1, 2])), RuntimeError, "bincount only supports 1-d non-negative integral"),
    (lambda: ember.bincount(ember.tensor([[1]])), RuntimeError, "bincount only supports 1-d non-negative integral"),
    (lambda: ember.bincount(ember.tensor([1.0])), NotImplementedError, "\"bincount_cpu\" not implemented for 'Float'"),
    (lambda: ember.bincount(ember.tensor([True])), NotImplementedError, "not implemented for 'Bool'"),
    (lambda: ember.bincount(ember.tensor([1]), minlength=-1), RuntimeError, "minlength should be >= 0"),
    (lambda: ember.bincount(ember.tensor([1, 2]), weights=ember.ones(3)), RuntimeError,
     "weights should be 1-d and have the same length as input"),
])
def test_bad_input_raises_pytorch_class(make, cls, msg):
    with pytest.raises(cls, match=msg):
        make()
