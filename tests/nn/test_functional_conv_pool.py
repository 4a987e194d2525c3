"""ember.nn.functional conv and pooling: values against numpy references (and torch where installed),
gradients, and PyTorch's error messages."""
import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(a.detach().numpy() if isinstance(a, ember.Tensor) else a, b, atol=tol, rtol=tol)


def np_conv2d(x, w, b, stride, pad, dil, groups):
    """Direct (loop) cross-correlation reference."""
    N, C, H, W = x.shape
    O, Cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (H + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (W + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((N, O, oh, ow))
    og = O // groups
    for o in range(O):
        g = o // og
        for i, j in itertools.product(range(kh), range(kw)):
            patch = xp[:, g * Cg:(g + 1) * Cg, i * dil[0]:i * dil[0] + (oh - 1) * stride[0] + 1:stride[0],
                       j * dil[1]:j * dil[1] + (ow - 1) * stride[1] + 1:stride[1]]
            out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 4, 7, 6)).astype(np.float32)


@pytest.mark.parametrize("stride,pad,dil,groups", [(1, 0, 1, 1), (2, 1, 1, 2), ((1, 2), (2, 1), (2, 1), 2),
                                                   (1, 1, 2, 1)])
def test_conv2d_matches_reference(stride, pad, dil, groups):
    w = RNG.standard_normal((6, 4 // groups, 3, 2)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    pair = lambda v: (v, v) if isinstance(v, int) else v
    ref = np_conv2d(X, w, b, pair(stride), pair(pad), pair(dil), groups)
    close(F.conv2d(ember.tensor(X), ember.tensor(w), ember.tensor(b), stride, pad, dil, groups), ref)


@pytest.mark.parametrize("k", [(3, 3), (2, 4)])
def test_conv2d_same_and_valid(k):
    w = RNG.standard_normal((3, 4) + k).astype(np.float32)
    out = F.conv2d(ember.tensor(X), ember.tensor(w), padding="same")
    assert out.shape == (2, 3, 7, 6)
    # PyTorch: the extra zero of an even kernel goes on the right / bottom
    total = [kk - 1 for kk in k]
    xp = np.pad(X, ((0, 0), (0, 0), (total[0] // 2, total[0] - total[0] // 2),
                    (total[1] // 2, total[1] - total[1] // 2)))
    close(out, np_conv2d(xp, w, None, (1, 1), (0, 0), (1, 1), 1))
    assert F.conv2d(ember.tensor(X), ember.tensor(w), padding="valid").shape == (2, 3, 8 - k[0], 7 - k[1])


def test_conv2d_unbatched_and_conv1d():
    w = RNG.standard_normal((5, 4, 3, 3)).astype(np.float32)
    close(F.conv2d(ember.tensor(X[0]), ember.tensor(w), padding=1),
          np_conv2d(X[:1], w, None, (1, 1), (1, 1), (1, 1), 1)[0])
    x1 = RNG.standard_normal((2, 4, 9)).astype(np.float32)
    w1 = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    ref = np_conv2d(x1[:, :, None], w1[:, :, None], None, (1, 2), (0, 1), (1, 2), 2)[:, :, 0]
    close(F.conv1d(ember.tensor(x1), ember.tensor(w1), None, 2, 1, 2, 2), ref)
    assert F.conv1d(ember.tensor(x1), ember.tensor(np.tile(w1[:, :1], (1, 4, 2))), padding="same").shape == (2, 4, 9)


def test_conv_transpose2d_is_the_input_gradient_of_conv2d():
    x = ember.tensor(X.astype(np.float64), requires_grad=True)
    # conv2d with weight (6, 4, 3, 2); its input-gradient is conv_transpose2d with that weight
    wc = ember.tensor(RNG.standard_normal((6, 4, 3, 2)))
    y = F.conv2d(x, wc, None, 2, 1)
    g = ember.tensor(RNG.standard_normal(tuple(y.shape)))
    (y * g).sum().backward()
    op = (x.shape[2] + 2 - 3) % 2, (x.shape[3] + 2 - 2) % 2
    close(F.conv_transpose2d(g, wc, None, 2, 1, op), x.grad.numpy(), 1e-8)


def test_unfold_fold():
    u = F.unfold(ember.tensor(X), (2, 3), padding=1, stride=2)
    assert u.shape == (2, 4 * 6, 4 * 3)
    f = F.fold(ember.ones(1, 4, 9), (4, 4), 2)
    # each pixel counts how many 2x2 blocks of a 4x4 image (stride 1) cover it
    assert f[0, 0].tolist() == [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]]


def test_conv_errors():
    x = ember.randn(1, 1, 8, 8)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[16, 3, 3, 3\], expected "
                                           r"input\[1, 1, 8, 8\] to have 3 channels, but got 1 channels instead"):
        F.conv2d(x, ember.randn(16, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to conv2d"):
        F.conv2d(ember.randn(1, 3, 8, 8, 1), ember.randn(16, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(ember.randn(1, 3, 2, 2), ember.randn(16, 3, 3, 3))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(ember.randn(1, 3, 8, 8), ember.randn(16, 3, 3, 3), padding="same", stride=2)
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv2d(ember.randn(1, 3, 8, 8), ember.randn(16, 3, 3, 3), padding="foo")
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 16 elements"):
        F.conv2d(ember.randn(1, 3, 8, 8), ember.randn(16, 3, 3, 3), ember.randn(3))
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 2 at dimension 0"):
        F.conv2d(ember.randn(1, 4, 8, 8), ember.randn(3, 2, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(ember.randn(1, 3, 8, 8), ember.randn(16, 3, 3, 3), stride=0)
    with pytest.raises(RuntimeError, match="Given transposed=1, weight of size"):
        F.conv_transpose2d(ember.randn(1, 3, 8, 8), ember.randn(4, 3, 3, 3))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(ember.randn(1, 3, 8, 8), ember.randn(3, 3, 3, 3), stride=2, output_padding=2)


def test_conv2d_gradcheck():
    g = ember.Generator().manual_seed(1)
    x = ember.randn(1, 4, 5, 4, dtype=ember.float64, generator=g).requires_grad_(True)
    w = ember.randn(2, 2, 3, 2, dtype=ember.float64, generator=g).requires_grad_(True)
    b = ember.randn(2, dtype=ember.float64, generator=g).requires_grad_(True)
    assert ember.autograd.gradcheck(lambda x, w, b: F.conv2d(x, w, b, (2, 1), 1, (1, 2), 2), (x, w, b))
    wt = ember.randn(4, 1, 2, 2, dtype=ember.float64, generator=g).requires_grad_(True)
    assert ember.autograd.gradcheck(lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 1, 2), (x, wt))


# ---------------------------------------------------------------- pooling
def test_max_pool2d_and_1d():
    x = ember.tensor(X)
    v = F.max_pool2d(x, 2)
    close(v, X[:, :, :6, :6].reshape(2, 4, 3, 2, 3, 2).max((3, 5)))
    v, i = F.max_pool2d(x, 2, return_indices=True)
    close(v, X.reshape(2, 4, -1)[np.arange(2)[:, None, None], np.arange(4)[None, :, None],
                                 i.numpy().reshape(2, 4, -1)].reshape(v.shape))
    x1 = ember.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]])
    assert F.max_pool1d(x1, 2).tolist() == [[[3.0, 5.0]]]
    v, i = F.max_pool1d(x1, 3, 1, 1, return_indices=True)
    assert v.tolist() == [[[3.0, 3.0, 5.0, 5.0, 5.0]]] and i.tolist() == [[[1, 1, 3, 3, 3]]]


def test_avg_pool2d():
    x = ember.tensor(X)
    close(F.avg_pool2d(x, 2), X[:, :, :6, :6].reshape(2, 4, 3, 2, 3, 2).mean((3, 5)))
    one = ember.ones(1, 1, 3, 3)
    assert F.avg_pool2d(one, 2, 2, 1).tolist() == [[[[0.25, 0.5], [0.5, 1.0]]]]
    assert F.avg_pool2d(one, 2, 2, 1, count_include_pad=False).tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]
    assert F.avg_pool2d(one, 2, 2, 0, ceil_mode=True).tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]
    assert F.avg_pool2d(one, 2, 2, 1, divisor_override=1).tolist() == [[[[1.0, 2.0], [2.0, 4.0]]]]
    assert F.avg_pool1d(ember.tensor([[[1.0, 3.0, 5.0, 7.0]]]), 2).tolist() == [[[2.0, 6.0]]]


def test_adaptive_pools():
    x = ember.arange(30.0).reshape(1, 1, 5, 6)
    a = F.adaptive_avg_pool2d(x, (2, 3))
    ref = np.array([[np.arange(30.0).reshape(5, 6)[r0:r1, c0:c1].mean() for c0, c1 in ((0, 2), (2, 4), (4, 6))]
                    for r0, r1 in ((0, 3), (2, 5))])
    close(a[0, 0], ref)
    assert F.adaptive_avg_pool2d(x, (None, 2)).shape == (1, 1, 5, 2)
    assert F.adaptive_avg_pool2d(x, 1).reshape(-1).tolist() == [14.5]
    v, i = F.adaptive_max_pool2d(x, (2, 4), return_indices=True)
    assert v.shape == (1, 1, 2, 4)
    assert (x.reshape(-1)[i.reshape(-1)] == v.reshape(-1)).all()
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[8, 8\]"):
        F.adaptive_avg_pool2d(ember.randn(8, 8), 3)


def test_pool_gradients():
    g = ember.Generator().manual_seed(2)
    x = ember.randn(1, 2, 5, 5, dtype=ember.float64, generator=g).requires_grad_(True)
    assert ember.autograd.gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), (x,))
    assert ember.autograd.gradcheck(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (x,))
    assert ember.autograd.gradcheck(lambda x: F.max_pool2d(x, 2, 1), (x,))


def test_against_torch():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    tx, ex = torch.tensor(X), ember.tensor(X)
    for s, p, d, g in itertools.product([1, 2], [0, 1, "same"], [1, 2], [1, 2]):
        if p == "same" and s != 1:
            continue
        w = RNG.standard_normal((6, 4 // g, 3, 2)).astype(np.float32)
        b = RNG.standard_normal(6).astype(np.float32)
        close(F.conv2d(ex, ember.tensor(w), ember.tensor(b), s, p, d, g),
              TF.conv2d(tx, torch.tensor(w), torch.tensor(b), s, p, d, g).numpy())
    wt = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
    for s, p, op, d, g in [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 0, 1, 2, 2), (3, 1, 2, 1, 2)]:
        close(F.conv_transpose2d(ex, ember.tensor(wt), None, s, p, op, g, d),
              TF.conv_transpose2d(tx, torch.tensor(wt), None, s, p, op, g, d).numpy())
    for k, s, p, c, ci in itertools.product([2, 3], [1, 2], [0, 1], [False, True], [False, True]):
        close(F.avg_pool2d(ex, k, s, p, c, ci), TF.avg_pool2d(tx, k, s, p, c, ci).numpy())
    for o in [(3, 4), (2, None), 5, (4, 3)]:
        close(F.adaptive_avg_pool2d(ex, o), TF.adaptive_avg_pool2d(tx, o).numpy())
        ev, ei = F.adaptive_max_pool2d(ex, o, True)
        tv, ti = TF.adaptive_max_pool2d(tx, o, True)
        close(ev, tv.numpy())
        assert (ei.numpy() == ti.numpy()).all()
