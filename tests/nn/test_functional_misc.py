"""ember.nn.functional linear, bilinear, dropout, embedding, one_hot, pad, interpolate and
distances: numpy references, gradcheck, PyTorch's errors, and torch comparisons where installed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

rng = np.random.default_rng(0)
X4 = rng.standard_normal((2, 3, 4, 5))


def _t(a, grad=False):
    return ember.tensor(a, requires_grad=grad)


def test_linear_and_bilinear():
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    np.testing.assert_allclose(F.linear(_t(x), _t(w), _t(b)).numpy(), x @ w.T + b, atol=1e-12)
    np.testing.assert_allclose(F.linear(_t(x), _t(w)).numpy(), x @ w.T, atol=1e-12)
    x1, x2, wb = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 6)), rng.standard_normal((5, 4, 6))
    want = np.einsum("...i,kij,...j->...k", x1, wb, x2) + b
    np.testing.assert_allclose(F.bilinear(_t(x1), _t(x2), _t(wb), _t(b)).numpy(), want, atol=1e-12)
    assert gradcheck(F.bilinear, (_t(x1[0, :2], True), _t(x2[0, :2], True), _t(wb[:2], True), _t(b[:2], True)))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x5\)"):
        F.linear(ember.randn(3, 4), ember.randn(5, 3))
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input batch dimensions do not match at dim 0: got 3 and 2"):
        F.bilinear(ember.randn(3, 4), ember.randn(2, 5), ember.randn(6, 4, 5))


def test_dropout():
    ember.manual_seed(0)
    x = ember.ones(20000)
    y = F.dropout(x, 0.3)
    vals = y.numpy()
    assert abs((vals == 0).mean() - 0.3) < 0.02
    np.testing.assert_allclose(np.unique(vals), [0, 1 / 0.7])
    assert F.dropout(x, 0.3, training=False) is x and F.dropout(x, 0.0) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)
    z = ember.ones(10)
    assert F.dropout(z, 0.5, inplace=True) is z
    # gradient flows through the kept elements only, scaled
    a = ember.ones(1000, requires_grad=True)
    out = F.dropout(a, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), out.detach().numpy())
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    # channel-wise variants: whole channels share one draw
    d = F.dropout2d(ember.ones(8, 16, 3, 3)).numpy().reshape(128, 9)
    assert np.all(d.std(1) == 0) and 0 < (d[:, 0] == 0).mean() < 1
    d = F.dropout1d(ember.ones(16, 5)).numpy()
    assert np.all(d.std(1) == 0)
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d"):
        F.dropout2d(ember.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ember.ones(2, 3, 4, 5))
    ember.manual_seed(0)
    a = F.alpha_dropout(ember.randn(20000), 0.2, training=True).numpy()
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05


def test_embedding():
    w = rng.standard_normal((6, 3))
    idx = np.array([[0, 2, 5], [2, 2, 1]])
    out = F.embedding(_t(idx), _t(w))
    np.testing.assert_array_equal(out.numpy(), w[idx])
    wt = _t(w, True)
    F.embedding(_t(idx), wt, padding_idx=2).sum().backward()
    counts = np.bincount(idx.ravel(), minlength=6).astype(float)
    counts[2] = 0
    np.testing.assert_array_equal(wt.grad.numpy(), np.repeat(counts[:, None], 3, 1))
    wn = _t(w.copy() * 3)
    F.embedding(_t(np.array([1, 3])), wn, max_norm=1.0)
    norms = np.linalg.norm(wn.numpy(), axis=1)
    assert np.all(norms[[1, 3]] <= 1.0 + 1e-6) and np.allclose(norms[[0, 2]], np.linalg.norm(w[[0, 2]] * 3, axis=1))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(_t(idx), _t(w), padding_idx=6)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t(np.array([7])), _t(w))


def test_one_hot():
    got = F.one_hot(_t(np.array([0, 2, 1])))
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), np.eye(3, dtype=np.int64)[[0, 2, 1]])
    np.testing.assert_array_equal(F.one_hot(_t(np.array([[1], [0]])), 4).numpy(), np.eye(4)[[[1], [0]]])
    assert F.one_hot(ember.zeros(0, dtype=ember.int64), 3).shape == (0, 3)
    for arg, n, msg in [(np.array([1, 2], np.int32), -1, "one_hot is only applicable to index tensor of type LongTensor."),
                        (np.zeros(0, np.int64), -1, "Can not infer total number of classes from empty tensor."),
                        (np.array([-1, 2]), -1, "Class values must be non-negative."),
                        (np.array([1, 5]), 3, "Class values must be smaller than num_classes.")]:
        with pytest.raises(RuntimeError) as info:
            F.one_hot(_t(arg), n)
        assert msg in str(info.value)


@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"),
                                          ("replicate", "edge"), ("circular", "wrap")])
def test_pad_matches_numpy(mode, np_mode):
    x = X4
    for pad in [(1, 2), (2, 0, 1, 3)]:
        inp = x[0] if len(pad) == 2 and mode != "constant" else x
        widths = [(0, 0)] * inp.ndim
        for i in range(len(pad) // 2):
            widths[inp.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        got = F.pad(_t(inp), pad, mode)
        np.testing.assert_array_equal(got.numpy(), np.pad(inp, widths, mode=np_mode))
    got = F.pad(_t(x), (1, 1), value=2.5)
    assert np.all(got.numpy()[..., 0] == 2.5)
    # negative constant padding crops
    np.testing.assert_array_equal(F.pad(_t(x), (-1, 2, 0, -2)).numpy(),
                                  np.pad(x[..., :2, 1:], [(0, 0), (0, 0), (0, 0), (0, 2)]))


def test_pad_gradcheck_and_errors():
    x = _t(rng.standard_normal((1, 2, 3)), True)
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert gradcheck(lambda a: F.pad(a, (2, 1), mode), (x,))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(ember.randn(2, 3), (1, 1, 1))
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor."):
        F.pad(ember.randn(1, 2, 3, 4), (1, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(ember.randn(2, 3), (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value argument'):
        F.pad(ember.randn(2, 3), (1, 1), mode="reflect", value=2.0)


def _np_linear_resize(x, axis, n_out, align_corners, scale=None):
    n_in = x.shape[axis]
    j = np.arange(n_out)
    if align_corners:
        src = j * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        step = 1 / scale if scale else n_in / n_out
        src = np.maximum((j + 0.5) * step - 0.5, 0)
    i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = (src - i0).reshape((-1,) + (1,) * (x.ndim - axis - 1))
    return np.take(x, i0, axis) * (1 - lam) + np.take(x, i1, axis) * lam


def test_interpolate_matches_numpy():
    x = X4
    got = F.interpolate(_t(x), scale_factor=2)
    np.testing.assert_array_equal(got.numpy(), x.repeat(2, 2).repeat(2, 3))
    got = F.interpolate(_t(x), size=(3, 7))
    want = x[:, :, np.floor(np.arange(3) * 4 / 3).astype(int)][..., np.floor(np.arange(7) * 5 / 7).astype(int)]
    np.testing.assert_array_equal(got.numpy(), want)
    for ac in (False, True):
        got = F.interpolate(_t(x), size=(7, 3), mode="bilinear", align_corners=ac)
        want = _np_linear_resize(_np_linear_resize(x, 2, 7, ac), 3, 3, ac)
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    got = F.interpolate(_t(x), scale_factor=1.5, mode="bilinear")
    want = _np_linear_resize(_np_linear_resize(x, 2, 6, False, 1.5), 3, 7, False, 1.5)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    got = F.interpolate(_t(x[0]), size=9, mode="linear", align_corners=True)
    np.testing.assert_allclose(got.numpy(), _np_linear_resize(x[0], 2, 9, True), atol=1e-12)
    assert gradcheck(lambda a: F.interpolate(a, scale_factor=1.7, mode="bilinear"),
                     (_t(rng.standard_normal((1, 1, 2, 3)), True),))


def test_interpolate_errors():
    x = ember.randn(1, 2, 3, 4)
    for kw, exc, msg in [
        (dict(size=5, scale_factor=2), ValueError, "only one of size or scale_factor should be defined"),
        (dict(), ValueError, "either size or scale_factor should be defined"),
        (dict(scale_factor=2, align_corners=True), ValueError,
         "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"),
        (dict(scale_factor=2, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
        (dict(size=(3, 4, 5)), ValueError, "Input and output must have the same number of spatial dimensions"),
    ]:
        with pytest.raises(exc) as info:
            F.interpolate(x, **kw)
        assert msg in str(info.value)


def test_distances():
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(F.cosine_similarity(_t(a), _t(b)).numpy(), cos, atol=1e-12)
    np.testing.assert_allclose(F.pairwise_distance(_t(a), _t(b)).numpy(), np.linalg.norm(a - b + 1e-6, axis=1),
                               atol=1e-12)
    i, j = np.triu_indices(4, 1)
    np.testing.assert_allclose(F.pdist(_t(a)).numpy(), np.linalg.norm(a[i] - a[j], axis=1), atol=1e-12)
    assert gradcheck(F.cosine_similarity, (_t(a[:2], True), _t(b[:2], True)))


def test_against_torch():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    x5 = X4[None]
    cases = [("linear", lambda f, x, w, b: f.linear(x, w, b), (X4, rng.standard_normal((3, 5)), rng.standard_normal(3))),
             ("bilinear", lambda f, x, y, w: f.bilinear(x, y, w), (X4[0, 0], X4[1, 0], rng.standard_normal((2, 5, 5)))),
             ("cos", lambda f, x, y: f.cosine_similarity(x, y, -1), (X4, X4[::-1].copy())),
             ("pairwise", lambda f, x, y: f.pairwise_distance(x, y, 3.0), (X4, X4[::-1].copy())),
             ("pdist", lambda f, x: f.pdist(x, 1.5), (X4[0, 0],))]
    for m in ("constant", "reflect", "replicate", "circular"):
        cases.append((f"pad-{m}", lambda f, x, m=m: f.pad(x, (1, 2, 3, 0), m), (X4,)))
        cases.append((f"pad3-{m}", lambda f, x, m=m: f.pad(x, (1, 2, 3, 0, 0, 1), m), (x5,)))
    for mode, ac in [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True)]:
        for kw in [dict(size=(7, 3)), dict(scale_factor=(1.5, 0.7)), dict(scale_factor=2.3, recompute_scale_factor=True),
                   dict(size=(1, 1))]:
            cases.append((f"interp-{mode}-{ac}-{kw}",
                          lambda f, x, mode=mode, ac=ac, kw=kw: f.interpolate(x, mode=mode, align_corners=ac, **kw),
                          (X4,)))
    cases.append(("trilinear", lambda f, x: f.interpolate(x, scale_factor=1.5, mode="trilinear"), (x5,)))
    cases.append(("nearest1d", lambda f, x: f.interpolate(x, scale_factor=2.5), (X4[0],)))
    for name, fn, arrays in cases:
        ea = [ember.tensor(a, requires_grad=True) for a in arrays]
        ta = [torch.tensor(a, requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eo, to = fn(F, *ea), fn(TF, *ta)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-10, err_msg=name)
        g = rng.standard_normal(tuple(to.shape))
        eo.backward(ember.tensor(g))
        to.backward(torch.tensor(g))
        for e, t in zip(ea, ta):
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-9, err_msg=name)
    w = rng.standard_normal((6, 3))
    idx = np.array([[0, 2, 5], [2, 2, 1]])
    we, wt = ember.tensor(w * 3), torch.tensor(w * 3)
    np.testing.assert_allclose(F.embedding(_t(idx), we, max_norm=1.5).numpy(),
                               TF.embedding(torch.tensor(idx), wt, max_norm=1.5).numpy(), atol=1e-12)
    np.testing.assert_allclose(we.numpy(), wt.numpy(), atol=1e-12)
