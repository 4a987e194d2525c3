"""``native_layer_norm`` / ``_layer_norm_backward`` (ember.nn._layer_norm): F.layer_norm and nn.LayerNorm run as
one op each way. Against PyTorch: values, mean / rstd shapes and dtypes, gradients (float32, float64), errors;
bfloat16 against a float64 reference (ember's weight and bias gradients accumulate in float32); second
derivatives through the create_graph path."""
import numpy as np
import pytest
import torch

import ember


def _both(shape, ns, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape) * 2 + 0.5, rng.standard_normal(ns), rng.standard_normal(ns),
              rng.standard_normal(shape)]
    e = [ember.tensor(a, dtype=getattr(ember, dtype)) for a in arrays]
    t = [torch.tensor(a, dtype=getattr(torch, dtype)) for a in arrays]
    return e, t


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("shape,ns", [((16, 32, 64), [64]), ((4, 5, 6), [5, 6]), ((7,), [7])])
@pytest.mark.parametrize("affine", ["weight and bias", "weight", "none"])
def test_layer_norm_matches_torch(dtype, tol, shape, ns, affine):
    (x, w, b, g), (tx, tw, tb, tg) = _both(shape, ns, dtype)
    w, tw = (w, tw) if affine != "none" else (None, None)
    b, tb = (b, tb) if affine == "weight and bias" else (None, None)
    leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
    tleaves = [t.requires_grad_() for t in (tx, tw, tb) if t is not None]
    y = ember.nn.functional.layer_norm(x, ns, w, b)
    ty = torch.nn.functional.layer_norm(tx, ns, tw, tb)
    y.backward(g)
    ty.backward(tg)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    for a, ta in zip(leaves, tleaves):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_native_layer_norm_outputs_as_torch():
    (x, w, b, _), (tx, tw, tb, _) = _both((2, 3, 4), [3, 4], "float32")
    got, want = ember.native_layer_norm(x, [3, 4], w, b, 1e-5), torch.native_layer_norm(tx, [3, 4], tw, tb, 1e-5)
    for a, ta in zip(got, want):
        assert tuple(a.shape) == tuple(ta.shape) and a.dtype == ember.float32
        np.testing.assert_allclose(a.numpy(), ta.numpy(), rtol=1e-5, atol=1e-6)
    empty, tempty = ember.native_layer_norm(ember.ones(3, 0), [0], None, None, 1e-5), \
        torch.native_layer_norm(torch.ones(3, 0), [0], None, None, 1e-5)
    for a, ta in zip(empty, tempty):
        np.testing.assert_array_equal(a.numpy(), ta.numpy())     # mean 0, rstd NaN, as PyTorch


def test_bfloat16_gradients_against_a_float64_reference():
    (x, w, b, g), _ = _both((16, 32, 64), [64], "bfloat16", seed=3)
    ref = [torch.tensor(t.float().numpy(), dtype=torch.float64, requires_grad=True) for t in (x, w, b)]
    torch.nn.functional.layer_norm(ref[0], [64], ref[1], ref[2]).backward(torch.tensor(g.float().numpy(),
                                                                                       dtype=torch.float64))
    for t in (x, w, b):
        t.requires_grad_()
    ember.nn.functional.layer_norm(x, [64], w, b).backward(g)
    for a, r in zip((x, w, b), ref):
        scale = float(r.grad.abs().max())
        assert float(np.abs(a.grad.float().numpy() - r.grad.numpy()).max()) < 0.01 * scale


def test_errors_as_torch():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
            lib.nn.functional.layer_norm(lib.ones(2, 3), [4])
        with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
            lib.nn.functional.layer_norm(lib.ones(2, 3), [3], lib.ones(2))
        with pytest.raises(NotImplementedError, match="\"LayerNormKernelImpl\" not implemented for 'Long'"):
            lib.native_layer_norm(lib.ones(2, 3, dtype=lib.int64), [3], None, None, 1e-5)


def test_second_derivatives():
    x = ember.randn(3, 5, dtype=ember.float64, requires_grad=True)
    w = ember.randn(5, dtype=ember.float64, requires_grad=True)
    b = ember.randn(5, dtype=ember.float64, requires_grad=True)
    fn = lambda x, w, b: ember.nn.functional.layer_norm(x, [5], w, b, 1e-3)  # noqa: E731
    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))


def test_compiled_step_matches_eager_with_layer_norm():
    def run(compile_it):
        ember.manual_seed(0)
        m = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.LayerNorm(16), ember.nn.ReLU(), ember.nn.Linear(16, 3))
        opt = ember.optim.AdamW(m.parameters(), lr=1e-2)
        x, y = ember.randn(10, 8), ember.randint(0, 3, (10,))

        def step():
            opt.zero_grad()
            loss = ember.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        f = ember.compile(step) if compile_it else step
        losses = [float(f()) for _ in range(5)]
        return losses, [p.detach().numpy().copy() for p in m.parameters()]
    (le, pe), (lc, pc) = run(False), run(True)
    np.testing.assert_allclose(lc, le, rtol=1e-6)
    for a, b in zip(pc, pe):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
