"""``_safe_softmax`` (PyTorch's op for attention weights: a row of all -inf gives zeros, not NaN) against
torch._safe_softmax, and scaled_dot_product_attention with fully masked query rows against PyTorch's: values and
gradients, no NaN anywhere."""
import numpy as np
import pytest
import torch

import ember


def _scores(dtype):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6)).astype(dtype)
    x[0, 1, 2, :] = -np.inf                 # a fully masked row
    x[1, 0, :, 4] = -np.inf                 # a masked column
    x[1, 2, 3, :5] = -np.inf                # one position left
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [-1, 2])
def test_safe_softmax_matches_torch_values_and_gradients(dtype, dim):
    x = _scores(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = ember._safe_softmax(e, dim), torch._safe_softmax(t, dim)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=tol * 10, atol=tol)
    assert not np.isnan(ye.detach().numpy()).any() and not np.isnan(e.grad.numpy()).any()
    assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__ == "SafeSoftmaxBackward0"


def test_integer_input_raises_torch_error():
    for lib in (ember, torch):
        with pytest.raises(NotImplementedError, match='"softmax_lastdim_kernel_impl" not implemented for \'Long\''):
            lib._safe_softmax(lib.ones(3, 4, dtype=lib.int64), 1)


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_with_fully_masked_rows_matches_torch(mask_kind):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 5, 8)).astype(np.float32) for _ in range(3))
    keep = rng.random((5, 5)) > 0.3
    keep[1] = False                           # query row 1 attends to nothing
    keep[np.arange(5) != 1, 0] = True
    mask = keep if mask_kind == "bool" else np.where(keep, 0.0, -np.inf).astype(np.float32)
    out = {}
    for lib in (ember, torch):
        args = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        y = lib.nn.functional.scaled_dot_product_attention(*args, attn_mask=lib.tensor(mask))
        (y * y).sum().backward()
        out[lib.__name__] = [y.detach().numpy()] + [a.grad.numpy() for a in args]
    for a, b in zip(out["ember"], out["torch"]):
        assert not np.isnan(a).any()
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert (out["ember"][0][:, :, 1] == 0).all()
