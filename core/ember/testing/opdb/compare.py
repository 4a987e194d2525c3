"""Op database entries: whole-tensor comparisons (``ember._ops._compare``): isclose."""
from __future__ import annotations

import numpy as np

import ember
from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import ALL_DTYPES, seed_for

__all__ = ["op_db"]


def _isclose_ref(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.bool_:
        return np.equal(a, b) if (rtol == 0 and atol == 0) else np.isclose(a.astype(float), b.astype(float),
                                                                            rtol, atol, equal_nan)
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _near(a_np, rng, dtype):
    """A copy of ``a_np`` with some elements nudged within / beyond the default tolerances."""
    b = a_np.copy()
    if b.size == 0 or dtype.name == "bool":
        return b
    flat = b.reshape(-1)
    k = rng.integers(0, 4, flat.shape)
    if dtype.is_floating_point or dtype.is_complex:
        eps = {"float16": 1e-3, "bfloat16": 1e-2}.get(dtype.name, 1e-6)
        flat[k == 1] *= (1 + eps)          # close with the default rtol for float32 / float64
        flat[k == 2] += 1                  # not close
    else:
        flat[k == 2] += 1
    return b


def _isclose_samples(op, device, dtype, requires_grad=False):
    rng = np.random.default_rng(seed_for(op, dtype, 0))
    npd = np.float32 if dtype.name == "bfloat16" else dtype.numpy_dtype
    lo, hi = (0, 10) if dtype.name == "uint8" else (-9, 10)
    for i, (name, shape, kw) in enumerate([("same shapes", (3, 4), {}), ("0-dim", (), {}), ("empty", (0, 3), {}),
                                           ("rtol=0, atol=0", (3, 4), {"rtol": 0.0, "atol": 0.0}),
                                           ("atol=0.5", (5,), {"atol": 0.5}),
                                           ("rtol=0.1", (5,), {"rtol": 0.1})]):
        a = make_tensor(shape, device=device, dtype=dtype, low=None if dtype.is_floating_point else lo, high=hi,
                        seed=seed_for(op, dtype, i + 1))
        host = a.cpu()
        b_np = _near(np.asarray(host.float().numpy() if dtype.name == "bfloat16" else host.numpy()), rng, dtype)
        b = ember.tensor(b_np.astype(npd), dtype=dtype, device=device)
        yield SampleInput(a, (b,), kw, name=name)
    a = make_tensor((3, 4), device=device, dtype=dtype, seed=seed_for(op, dtype, 10))
    b = make_tensor((4,), device=device, dtype=dtype, seed=seed_for(op, dtype, 11))
    yield SampleInput(a, (b,), name="broadcast")
    yield SampleInput(make_tensor((4, 3), device=device, dtype=dtype, seed=seed_for(op, dtype, 12)).t(),
                      (make_tensor((3, 4), device=device, dtype=dtype, noncontiguous=True,
                                   seed=seed_for(op, dtype, 13)),), name="transposed, noncontiguous")
    if dtype.is_floating_point:
        sp = [float("nan"), float("nan"), float("inf"), float("inf"), float("-inf"), 1.0, 0.0]
        so = [float("nan"), 1.0, float("inf"), float("-inf"), float("-inf"), float("inf"), -0.0]
        a = ember.tensor(sp, dtype=dtype, device=device)
        b = ember.tensor(so, dtype=dtype, device=device)
        yield SampleInput(a, (b,), name="special values")
        yield SampleInput(a, (b,), {"equal_nan": True}, name="special values, equal_nan")


def _isclose_errors(op, device):
    x = make_tensor((3,), device=device, dtype=ember.float32, seed=1)
    d = make_tensor((3,), device=device, dtype=ember.float64, seed=1)
    yield ErrorInput(SampleInput(x, (d,), name="dtypes differ"), RuntimeError, r"Float did not match Double")
    yield ErrorInput(SampleInput(x, (x,), {"rtol": -1.0}, name="negative rtol"), RuntimeError,
                     r"rtol must be greater than or equal to zero, but got -1")
    yield ErrorInput(SampleInput(x, (x,), {"atol": -1.0}, name="negative atol"), RuntimeError,
                     r"atol must be greater than or equal to zero, but got -1")
    y = make_tensor((3, 4), device=device, dtype=ember.float32, seed=2)
    yield ErrorInput(SampleInput(y, (x,), name="shapes do not broadcast"), RuntimeError,
                     r"The size of tensor a \(4\) must match the size of tensor b \(3\) at non-singleton dimension 1")


op_db = [
    OpInfo("isclose", ref=_isclose_ref, dtypes=ALL_DTYPES, sample_inputs=_isclose_samples,
           error_inputs=_isclose_errors, exact=True),
]
