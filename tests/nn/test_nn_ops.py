"""The nn ops of ember._ops._nn: cpu kernels and composites against numpy / hand references, errors, and
(optionally) torch."""
import itertools

import numpy as np
import pytest

import ember


def composite(fn, *args, **kw):
    """Run the op's composite (ember ops only) instead of its cpu kernel."""
    op = fn._op
    meta = op.meta(*args, **kw)
    if len(meta) == 3:
        outs = tuple(ember.empty(s, dtype=d) for s, d in meta[2])
        op.composite(*args, **kw, out=outs)
        return outs
    out = ember.empty(meta[2], dtype=meta[3])
    op.composite(*args, **kw, out=out)
    return out


BOTH = [pytest.param(lambda fn, *a, **k: fn(*a, **k), id="kernel"), pytest.param(composite, id="composite")]


def close(a, b, tol=1e-5):
    a = a.numpy() if isinstance(a, ember.Tensor) else np.asarray(a)
    np.testing.assert_allclose(a, b, atol=tol, rtol=tol)


def np_softmax(a, d):
    e = np.exp(a - a.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


def np_im2col(x, k, d, p, s):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((N, C, k[0], k[1], oh, ow), x.dtype)
    for i, j, y, z in itertools.product(range(k[0]), range(k[1]), range(oh), range(ow)):
        out[:, :, i, j, y, z] = xp[:, :, y * s[0] + i * d[0], z * s[1] + j * d[1]]
    return out.reshape(N, C * k[0] * k[1], oh * ow)


def np_maxpool(x, k, s, p, d, oh, ow):
    """Hand reference: scan each window in row-major order, first maximum wins."""
    N, C, H, W = x.shape
    vals = np.zeros((N, C, oh, ow), x.dtype)
    idx = np.zeros((N, C, oh, ow), np.int64)
    for n, c, y, z in itertools.product(range(N), range(C), range(oh), range(ow)):
        best, bi = -np.inf, -1
        for i, j in itertools.product(range(k), range(k)):
            r, q = y * s - p + i * d, z * s - p + j * d
            if 0 <= r < H and 0 <= q < W and x[n, c, r, q] > best:
                best, bi = x[n, c, r, q], r * W + q
        vals[n, c, y, z], idx[n, c, y, z] = best, bi
    return vals, idx


# ---------------------------------------------------------------- relu / softmax
@pytest.mark.parametrize("run", BOTH)
def test_relu(run):
    x = ember.tensor([[-1.5, 0.0, 2.0], [float("nan"), -0.0, 3.0]])
    r = run(ember.relu, x)
    assert np.isnan(r.numpy()[1, 0])
    close(r.numpy()[0], [0, 0, 2])
    assert ember.relu(ember.tensor([-3, 4])).tolist() == [0, 4]
    assert ember.relu(ember.tensor([-3, 4])).dtype == ember.int64


def test_relu_inplace_and_method():
    x = ember.tensor([-1.0, 2.0])
    assert x.relu().tolist() == [0.0, 2.0]
    y = x.relu_()
    assert y is x and x.tolist() == [0.0, 2.0]


def test_relu_errors():
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ember.relu(ember.tensor([True]))


@pytest.mark.parametrize("run", BOTH)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(run, dim):
    a = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32) * 10
    x = ember.tensor(a)
    close(run(ember.softmax, x, dim), np_softmax(a, dim))
    close(run(ember.log_softmax, x, dim), np.log(np_softmax(a.astype(np.float64), dim)), 1e-4)


def test_softmax_stable_dtype_and_scalar():
    x = ember.tensor([1000.0, 1000.0])
    close(ember.softmax(x, 0), [0.5, 0.5])
    close(ember.log_softmax(x, 0), [-np.log(2)] * 2)
    r = ember.softmax(ember.tensor([1, 2]), 0, dtype=ember.float64)
    assert r.dtype == ember.float64
    close(r, np_softmax(np.array([1.0, 2.0]), 0))
    assert ember.softmax(ember.tensor(3.0), 0).item() == 1.0
    assert ember.tensor([[1.0, 1.0]]).softmax(1).tolist() == [[0.5, 0.5]]
    assert ember.tensor([[1.0, 1.0]]).log_softmax(dim=-1).shape == (1, 2)


def test_softmax_errors():
    with pytest.raises(NotImplementedError, match='"softmax_lastdim_kernel_impl" not implemented for \'Long\''):
        ember.softmax(ember.tensor([1, 2]), 0)
    with pytest.raises(NotImplementedError, match='"log_softmax_kernel_impl" not implemented'):
        ember.log_softmax(ember.tensor([[1, 2]]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.softmax(ember.tensor([1.0]), 1)


# ---------------------------------------------------------------- nll_loss
@pytest.mark.parametrize("run", BOTH)
def test_nll_loss_reductions(run):
    lp = np.log(np_softmax(np.random.default_rng(1).standard_normal((4, 5)), 1)).astype(np.float32)
    t = np.array([1, -100, 4, 1])
    w = np.array([0.5, 2.0, 1.0, 1.0, 3.0], np.float32)
    x, tt, ww = ember.tensor(lp), ember.tensor(t), ember.tensor(w)
    keep = t != -100
    per = np.where(keep, -lp[np.arange(4), np.where(keep, t, 0)] * w[np.where(keep, t, 0)], 0)
    close(run(ember.nll_loss, x, tt, ww, 0), per)
    close(run(ember.nll_loss, x, tt, ww, 2), per.sum())
    close(run(ember.nll_loss, x, tt, ww, 1), per.sum() / w[t[keep]].sum())
    close(run(ember.nll_loss, x, tt), (-lp[np.arange(4), np.where(keep, t, 0)] * keep).sum() / 3)


@pytest.mark.parametrize("run", BOTH)
def test_nll_loss_spatial_and_1d(run):
    rng = np.random.default_rng(2)
    lp = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)
    t = rng.integers(0, 3, (2, 4, 2))
    ref = -np.take_along_axis(lp, t[:, None], 1)[:, 0]
    close(run(ember.nll_loss, ember.tensor(lp), ember.tensor(t), None, 0), ref)
    close(run(ember.nll_loss, ember.tensor(lp), ember.tensor(t)), ref.mean())
    v = ember.tensor([0.1, -0.7, 0.3])
    close(run(ember.nll_loss, v, ember.tensor(1)), 0.7)


def test_nll_loss_all_ignored_is_nan():
    r = ember.nll_loss(ember.zeros(2, 3), ember.tensor([-100, -100]))
    assert np.isnan(r.item())
    assert ember.nll_loss(ember.zeros(2, 3), ember.tensor([-100, -100]), None, 2).item() == 0


@pytest.mark.parametrize("run", BOTH)
def test_nll_loss_backward_op(run):
    lp = ember.randn(4, 5)
    t = ember.tensor([1, -100, 4, 1])
    w = ember.tensor([0.5, 2.0, 1.0, 1.0, 3.0])
    g = run(ember.nll_loss_backward, ember.tensor(2.0), lp, t, w, 1, -100)
    ref = np.zeros((4, 5), np.float32)
    total = 2.0 + 3.0 + 2.0
    for i, c in enumerate([1, None, 4, 1]):
        if c is not None:
            ref[i, c] = -2.0 * w.numpy()[c] / total
    close(g, ref)


def test_nll_loss_errors():
    x = ember.randn(3, 5)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)\."):
        ember.nll_loss(x, ember.tensor([1, 2]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        ember.nll_loss(x, ember.tensor([1, 2, 7]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        composite(ember.nll_loss, x, ember.tensor([1, 2, -1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        ember.nll_loss(x, ember.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        ember.nll_loss(x, ember.tensor([1, 2, 3]), ember.ones(4))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3, 2\], got \[3, 3\]"):
        ember.nll_loss(ember.randn(3, 5, 2), ember.zeros(3, 3, dtype=ember.int64))
    with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
        ember.nll_loss(ember.tensor(1.0), ember.tensor(0))


# ---------------------------------------------------------------- im2col / col2im
WINDOWS = [((3, 3), (1, 1), (0, 0), (1, 1)), ((2, 3), (2, 1), (1, 0), (1, 2)), ((1, 1), (1, 1), (0, 0), (2, 2)),
           ((3, 2), (1, 2), (1, 1), (2, 1))]


@pytest.mark.parametrize("run", BOTH)
@pytest.mark.parametrize("win", WINDOWS)
def test_im2col_col2im(run, win):
    a = np.random.default_rng(3).standard_normal((2, 3, 7, 6)).astype(np.float32)
    ref = np_im2col(a, *win)
    cols = run(ember.im2col, ember.tensor(a), *win)
    close(cols, ref)
    # col2im is the adjoint of im2col: <im2col(x), c> == <x, col2im(c)>
    c = np.random.default_rng(4).standard_normal(ref.shape).astype(np.float32)
    back = run(ember.col2im, ember.tensor(c), (7, 6), *win)
    assert back.shape == (2, 3, 7, 6)
    np.testing.assert_allclose((ref * c).sum(), (a * back.numpy()).sum(), rtol=1e-4)


def test_im2col_unbatched_and_strided_input():
    a = np.arange(2 * 5 * 5, dtype=np.float32).reshape(2, 5, 5)
    r = ember.im2col(ember.tensor(a), 2, 1, 0, 1)
    close(r, np_im2col(a[None], (2, 2), (1, 1), (0, 0), (1, 1))[0])
    t = ember.tensor(a.transpose(0, 2, 1).copy()).transpose(1, 2)     # a non-contiguous view
    close(ember.im2col(t, 2, 1, 0, 1), r.numpy())
    close(ember.col2im(r, 5, 2, 1, 0, 1).shape, (2, 5, 5))


def test_im2col_col2im_errors():
    x = ember.randn(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match=r"calculated shape of the array of sliding blocks as \(0, 0\)"):
        ember.im2col(x, 3, 1, 0, 1)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        ember.im2col(x, 0, 1, 0, 1)
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        ember.im2col(x, 1, 1, 0, 0)
    with pytest.raises(RuntimeError, match="padding should be non-negative"):
        ember.im2col(x, 1, 1, -1, 1)
    with pytest.raises(RuntimeError, match="Expected size of input's dimension 1 to be divisible"):
        ember.col2im(ember.randn(1, 8, 16), (6, 6), 3, 1, 0, 1)
    with pytest.raises(RuntimeError, match=r"sliding blocks 4 \* 4 = 16, but got input.size\(2\)=15"):
        ember.col2im(ember.randn(1, 9, 15), (6, 6), 3, 1, 0, 1)


# ---------------------------------------------------------------- max pooling
POOLS = [(2, 2, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (2, 1, 0, 2, False), (3, 3, 1, 1, True),
         (2, 3, 1, 1, True)]


@pytest.mark.parametrize("run", BOTH)
@pytest.mark.parametrize("k,s,p,d,ceil", POOLS)
def test_max_pool2d_with_indices(run, k, s, p, d, ceil):
    a = np.random.default_rng(5).standard_normal((2, 3, 7, 6)).astype(np.float32)
    a[0, 0, :2, :2] = 0.0      # ties: the first maximum in the window wins
    vals, idx = run(ember.max_pool2d_with_indices, ember.tensor(a), k, s, p, d, ceil)
    rv, ri = np_maxpool(a, k, s, p, d, *vals.shape[-2:])
    close(vals, rv)
    assert (idx.numpy() == ri).all()
    assert idx.dtype == ember.int64
    g = np.random.default_rng(6).standard_normal(rv.shape).astype(np.float32)
    gi = run(ember.max_pool2d_with_indices_backward, ember.tensor(g), ember.tensor(a), k, s, p, d, ceil, idx)
    ref = np.zeros(a.shape, np.float32).reshape(6, -1)
    np.add.at(ref, (np.arange(6)[:, None], ri.reshape(6, -1)), g.reshape(6, -1))
    close(gi, ref.reshape(a.shape))


def test_max_pool_output_sizes_and_nan():
    x = ember.randn(1, 1, 5, 5)
    assert ember.max_pool2d_with_indices(x, 2)[0].shape == (1, 1, 2, 2)
    assert ember.max_pool2d_with_indices(x, 2, 2, 0, 1, True)[0].shape == (1, 1, 3, 3)
    assert ember.max_pool2d_with_indices(x, 3, 2, 1, 1, True)[0].shape == (1, 1, 3, 3)
    n = ember.tensor([[[1.0, float("nan")], [3.0, 2.0]]])
    v, i = ember.max_pool2d_with_indices(n, 2)
    assert np.isnan(v.item()) and i.item() == 1
    v, i = composite(ember.max_pool2d_with_indices, n, 2)
    assert np.isnan(v.item()) and i.item() == 1
    iv = ember.max_pool2d_with_indices(ember.tensor([[[1, 5], [7, 2]]]), 2)[0]
    assert iv.tolist() == [[[7]]]


def test_max_pool_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2"):
        ember.max_pool2d_with_indices(x, 2, 1, 2)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        ember.max_pool2d_with_indices(x, 2, 0)
    with pytest.raises(RuntimeError, match=r"Given input size: \(1x1x1\). Calculated output size: \(1x0x0\)"):
        ember.max_pool2d_with_indices(ember.randn(1, 1, 1, 1), 2)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        ember.max_pool2d_with_indices(ember.randn(5, 5), 2)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        ember.max_pool2d_with_indices(x, 2, 1, 0, 0)


# ---------------------------------------------------------------- constant_pad_nd / embedding
@pytest.mark.parametrize("run", BOTH)
def test_constant_pad_nd(run):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    r = run(ember.constant_pad_nd, ember.tensor(a), [1, 2, 0, 1], 9.0)
    close(r, np.pad(a, ((0, 1), (1, 2)), constant_values=9))
    close(run(ember.constant_pad_nd, ember.tensor(a), [-1, 1]), np.pad(a[:, 1:], ((0, 0), (0, 1))))
    assert run(ember.constant_pad_nd, ember.tensor(a), [-3, 0]).shape == (2, 0)
    assert ember.constant_pad_nd(ember.tensor([[1, 2]]), [1, 1], 1.5).tolist() == [[1, 1, 2, 1]]


def test_constant_pad_nd_errors():
    with pytest.raises(RuntimeError, match="Length of pad must be even but instead it equals 3"):
        ember.constant_pad_nd(ember.ones(2, 3), [1, 2, 3])
    with pytest.raises(RuntimeError, match="Length of pad should be no more than twice"):
        ember.constant_pad_nd(ember.ones(2, 3), [1, 2, 3, 4, 5, 6])
    with pytest.raises(RuntimeError, match="narrow"):
        ember.constant_pad_nd(ember.ones(2, 3), [-2, -2])


@pytest.mark.parametrize("run", BOTH)
def test_embedding(run):
    w = np.random.default_rng(7).standard_normal((6, 3)).astype(np.float32)
    i = np.array([[0, 5], [2, 2]])
    close(run(ember.embedding, ember.tensor(w), ember.tensor(i)), w[i])
    close(run(ember.embedding, ember.tensor(w), ember.tensor(i, dtype=ember.int32)), w[i])


def test_embedding_errors():
    w = ember.randn(5, 3)
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.embedding(w, ember.tensor([7]))
    with pytest.raises(IndexError, match="index out of range in self"):
        composite(ember.embedding, w, ember.tensor([-1]))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        ember.embedding(w, ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        ember.embedding(ember.randn(5), ember.tensor([1]))


# ---------------------------------------------------------------- against torch
def test_against_torch():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    ta, ea = torch.tensor(a), ember.tensor(a)
    for k, s, p, d, c in POOLS:
        tv, ti = TF.max_pool2d(ta, k, s, p, d, c, return_indices=True)
        ev, ei = ember.max_pool2d_with_indices(ea, k, s, p, d, c)
        close(ev, tv.numpy())
        assert (ei.numpy() == ti.numpy()).all()
    for win in WINDOWS:
        close(ember.im2col(ea, *win), TF.unfold(ta, *win).numpy())
    lp = rng.standard_normal((4, 5, 3)).astype(np.float32)
    t = rng.integers(0, 5, (4, 3))
    t[0, 0] = 2
    w = rng.random(5).astype(np.float32)
    for red, name in ((0, "none"), (1, "mean"), (2, "sum")):
        ref = TF.nll_loss(torch.tensor(lp), torch.tensor(t), torch.tensor(w), reduction=name, ignore_index=2)
        close(ember.nll_loss(ember.tensor(lp), ember.tensor(t), ember.tensor(w), red, 2), ref.numpy())
    close(ember.log_softmax(ea, 1), torch.log_softmax(ta, 1).numpy())
    close(ember.constant_pad_nd(ea, [1, -2, 2, 0], 3.0), torch.constant_pad_nd(ta, [1, -2, 2, 0], 3.0).numpy())
