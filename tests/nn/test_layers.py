"""ember.nn layers: default initialisation, outputs (numpy / hand-computed references),
running statistics, errors and reprs; PyTorch comparisons (copied weights) when installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def needs(*names):
    missing = [n for n in names if not hasattr(F, n)]
    return pytest.mark.skipif(bool(missing), reason=f"ember.nn.functional lacks {missing} (not written yet)")


def t(a, dtype=np.float32, requires_grad=False):
    x = ember.tensor(np.asarray(a, dtype=dtype))
    return x.requires_grad_() if requires_grad else x


def close(x, ref, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(x.detach().numpy() if isinstance(x, ember.Tensor) else x), ref,
                               rtol=rtol, atol=atol)


RNG = np.random.default_rng(0)


# ---------------------------------------------------------------- Linear, Bilinear, Identity
@needs("linear")
def test_linear_forward_backward_and_init():
    ember.manual_seed(0)
    m = nn.Linear(64, 128)
    assert m.weight.shape == (128, 64) and m.bias.shape == (128,)
    bound = 1 / math.sqrt(64)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound     # kaiming_uniform_(a=sqrt(5))
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    x = RNG.standard_normal((5, 64)).astype(np.float32)
    y = m(t(x))
    close(y, x @ w.T + m.bias.detach().numpy(), rtol=1e-4, atol=1e-5)
    y.sum().backward()
    close(m.weight.grad, np.ones((128, 5), np.float32) @ x, rtol=1e-4, atol=1e-4)
    close(m.bias.grad, np.full(128, 5.0))
    # (*, in) inputs
    assert m(t(RNG.standard_normal((2, 3, 64)))).shape == (2, 3, 128)
    assert repr(m) == "Linear(in_features=64, out_features=128, bias=True)"
    nb = nn.Linear(2, 3, bias=False)
    assert nb.bias is None and repr(nb) == "Linear(in_features=2, out_features=3, bias=False)"
    assert nb(t([[1.0, 2.0]])).shape == (1, 3)


@needs("linear")
def test_linear_shape_error():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        nn.Linear(4, 5)(ember.ones(2, 3))


def test_linear_dtype_device_kwargs():
    m = nn.Linear(2, 3, dtype=ember.float64, device="cpu")
    assert m.weight.dtype == ember.float64 and m.bias.dtype == ember.float64


@needs("bilinear")
def test_bilinear():
    m = nn.Bilinear(2, 3, 4)
    x1 = RNG.standard_normal((5, 2)).astype(np.float32)
    x2 = RNG.standard_normal((5, 3)).astype(np.float32)
    ref = np.einsum("bi,kij,bj->bk", x1, m.weight.detach().numpy(), x2) + m.bias.detach().numpy()
    close(m(t(x1), t(x2)), ref, rtol=1e-4, atol=1e-5)
    assert repr(m) == "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"


def test_identity():
    x = ember.ones(2)
    assert nn.Identity(3, foo=4)(x) is x
    assert repr(nn.Identity()) == "Identity()"


# ---------------------------------------------------------------- activations
X = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 25.0], np.float32)


def _sig(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = [
    (nn.ReLU(), np.maximum(X, 0), "ReLU()"),
    (nn.ReLU(inplace=True), np.maximum(X, 0), "ReLU(inplace=True)"),
    (nn.LeakyReLU(), np.where(X > 0, X, 0.01 * X), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2, True), np.where(X > 0, X, 0.2 * X), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (nn.GELU(), X * 0.5 * (1 + np.vectorize(math.erf)(X / math.sqrt(2))), "GELU(approximate='none')"),
    (nn.GELU(approximate="tanh"),
     0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X ** 3))), "GELU(approximate='tanh')"),
    (nn.SiLU(), X * _sig(X), "SiLU()"),
    (nn.Sigmoid(), _sig(X), "Sigmoid()"),
    (nn.Tanh(), np.tanh(X), "Tanh()"),
    (nn.Softplus(), np.where(X > 20, X, np.log1p(np.exp(X))), "Softplus(beta=1.0, threshold=20.0)"),
    (nn.Softplus(2, 10), np.where(2 * X > 10, X, np.log1p(np.exp(2 * X)) / 2), "Softplus(beta=2, threshold=10)"),
    (nn.ELU(), np.where(X > 0, X, np.expm1(X)), "ELU(alpha=1.0)"),
    (nn.ELU(0.5, True), np.where(X > 0, X, 0.5 * np.expm1(X)), "ELU(alpha=0.5, inplace=True)"),
    (nn.Hardtanh(), np.clip(X, -1, 1), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (nn.Hardtanh(-2, 2, True), np.clip(X, -2, 2), "Hardtanh(min_val=-2, max_val=2, inplace=True)"),
    (nn.ReLU6(), np.clip(X, 0, 6), "ReLU6()"),
    (nn.Softsign(), X / (1 + np.abs(X)), "Softsign()"),
    (nn.Threshold(0.1, 20), np.where(X > 0.1, X, 20), "Threshold(threshold=0.1, value=20)"),
    (nn.Hardshrink(), np.where(np.abs(X) > 0.5, X, 0), "Hardshrink(0.5)"),
]


@pytest.mark.parametrize("module, ref, text", ACTIVATIONS, ids=[a[2] for a in ACTIVATIONS])
def test_activation(module, ref, text):
    assert repr(module) == text
    x = t(X)
    y = module(x)
    close(y, ref, rtol=1e-5, atol=1e-6)
    if getattr(module, "inplace", False):
        assert y is x


def test_hardtanh_bad_range():
    with pytest.raises(ValueError, match=r"max_val \(0\) must be greater than min_val \(1\)"):
        nn.Hardtanh(1, 0)


def test_softmax_modules():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    close(nn.Softmax(dim=1)(t(x)), sm)
    close(nn.LogSoftmax(dim=-1)(t(x)), np.log(sm), atol=1e-5)
    assert repr(nn.Softmax(1)) == "Softmax(dim=1)" and repr(nn.LogSoftmax(dim=-1)) == "LogSoftmax(dim=-1)"
    assert repr(nn.Softmax()) == "Softmax(dim=None)"


def test_activation_gradient():
    x = t(X, requires_grad=True)
    nn.ReLU()(x).sum().backward()
    close(x.grad, (X > 0).astype(np.float32))


# ---------------------------------------------------------------- convolutions
def _conv2d_ref(x, w, b, stride=1, padding=0, dilation=1, groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    eh, ew = dilation * (kh - 1) + 1, dilation * (kw - 1) + 1
    ho = (xp.shape[2] - eh) // stride + 1
    wo = (xp.shape[3] - ew) // stride + 1
    out = np.zeros((n, o, ho, wo), np.float64)
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(ho):
            for j in range(wo):
                rows = slice(i * stride, i * stride + eh, dilation)
                cols = slice(j * stride, j * stride + ew, dilation)
                patch = xp[:, g * cg:(g + 1) * cg, rows, cols]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    if b is not None:
        out += b[None, :, None, None]
    return out


@needs("conv2d")
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, groups=2)])
def test_conv2d_against_numpy(kw):
    ember.manual_seed(0)
    m = nn.Conv2d(4, 6, 3, bias=True, **kw)
    x = RNG.standard_normal((2, 4, 7, 7)).astype(np.float32)
    ref = _conv2d_ref(x.astype(np.float64), m.weight.detach().numpy().astype(np.float64),
                      m.bias.detach().numpy().astype(np.float64), **kw)
    close(m(t(x)), ref, rtol=1e-4, atol=1e-4)


def test_conv_default_init_and_repr():
    ember.manual_seed(0)
    m = nn.Conv2d(4, 8, 3)
    fan_in = 4 * 9
    bound = 1 / math.sqrt(fan_in)
    assert m.weight.shape == (8, 4, 3, 3) and m.bias.shape == (8,)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert repr(nn.Conv2d(1, 16, 3)) == "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.Conv2d(1, 16, 3, padding="same", padding_mode="reflect", bias=False, dilation=2)) == (
        "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=same, dilation=(2, 2), bias=False, "
        "padding_mode=reflect)")
    assert repr(nn.Conv1d(2, 4, 3, stride=2, padding=1)) == \
        "Conv1d(2, 4, kernel_size=(3,), stride=(2,), padding=(1,))"
    assert repr(nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1)) == \
        "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"
    assert nn.ConvTranspose2d(4, 2, 3, groups=2).weight.shape == (4, 1, 3, 3)
    assert nn.Conv2d(4, 6, 3, groups=2).weight.shape == (6, 2, 3, 3)


@pytest.mark.parametrize("fn, msg", [
    (lambda: nn.Conv2d(3, 4, 2, groups=2), "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 2, groups=2), "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 4, 2, padding="foo"), "Invalid padding string 'foo', should be one of"),
    (lambda: nn.Conv2d(4, 4, 2, stride=2, padding="same"), "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(4, 4, 2, padding_mode="x"), "padding_mode must be one of"),
    (lambda: nn.Conv2d(4, 4, 2, groups=0), "groups must be a positive integer"),
    (lambda: nn.ConvTranspose2d(4, 4, 2, padding_mode="reflect"),
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
])
def test_conv_construction_errors(fn, msg):
    with pytest.raises(ValueError) as info:
        fn()
    assert str(info.value).startswith(msg)


@needs("conv2d", "pad")
def test_conv2d_same_padding_and_modes():
    x = RNG.standard_normal((1, 2, 5, 6)).astype(np.float32)
    for k, d in [(3, 1), (4, 1), (3, 2)]:
        m = nn.Conv2d(2, 3, k, padding="same", dilation=d)
        assert m(t(x)).shape == (1, 3, 5, 6)
    m = nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")
    ref = _conv2d_ref(xp.astype(np.float64), m.weight.detach().numpy().astype(np.float64),
                      m.bias.detach().numpy().astype(np.float64))
    close(m(t(x)), ref, rtol=1e-4, atol=1e-4)
    assert nn.Conv2d(2, 3, 3, padding="valid")(t(x)).shape == (1, 3, 3, 4)


@needs("conv2d")
def test_conv2d_channel_error():
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[2, 2, 3, 3\], expected "
                                           r"input\[1, 3, 5, 5\] to have 2 channels, but got 3 channels instead"):
        nn.Conv2d(2, 2, 3)(ember.ones(1, 3, 5, 5))


@needs("conv1d")
def test_conv1d_against_numpy():
    m = nn.Conv1d(2, 3, 3, padding=1)
    x = RNG.standard_normal((2, 2, 6)).astype(np.float32)
    # padding=1 along the length only: a 2-D reference with height 1
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    ref = _conv2d_ref(xp[:, :, None, :].astype(np.float64), m.weight.detach().numpy()[:, :, None, :].astype(
        np.float64), m.bias.detach().numpy().astype(np.float64))[:, :, 0, :]
    close(m(t(x)), ref, rtol=1e-4, atol=1e-4)


@needs("conv_transpose2d")
def test_conv_transpose2d_shape_and_output_size():
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = ember.ones(1, 2, 4, 4)
    assert m(x).shape == (1, 3, 7, 7)
    assert m(x, output_size=(8, 8)).shape == (1, 3, 8, 8)
    with pytest.raises(ValueError, match=r"requested an output size of \(20, 20\), but valid sizes range from "
                                         r"\[7, 7\] to \[8, 8\]"):
        m(x, output_size=(20, 20))


@needs("conv_transpose2d")
def test_conv_transpose2d_is_adjoint_of_conv2d():
    # <conv(x), y> == <x, conv_transpose(y)> for the same weight, no bias
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1, bias=False)
    tconv = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, bias=False)
    with ember.no_grad():
        tconv.weight.copy_(conv.weight)
    x = t(RNG.standard_normal((1, 2, 7, 7)))
    y = t(RNG.standard_normal((1, 3, 4, 4)))
    lhs = (conv(x) * y).sum().item()
    rhs = (x * tconv(y)).sum().item()
    assert abs(lhs - rhs) < 1e-3 * max(1.0, abs(lhs))


# ---------------------------------------------------------------- pooling
@needs("max_pool2d")
def test_max_pool2d():
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    m = nn.MaxPool2d(2)
    assert repr(m) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    close(m(t(x)), x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    vals, idx = nn.MaxPool2d(2, return_indices=True)(t(x))
    assert idx.tolist()[0][0] == [[5, 7], [13, 15]]


@needs("max_pool1d")
def test_max_pool1d():
    x = np.array([[[1.0, 3.0, 2.0, 5.0, 4.0]]], np.float32)
    close(nn.MaxPool1d(2)(t(x)), [[[3.0, 5.0]]])
    close(nn.MaxPool1d(3, 1)(t(x)), [[[3.0, 5.0, 5.0]]])
    assert repr(nn.MaxPool1d(3, 2)) == "MaxPool1d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)"


@needs("avg_pool2d")
def test_avg_pool2d():
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    m = nn.AvgPool2d(2)
    assert repr(m) == "AvgPool2d(kernel_size=2, stride=2, padding=0)"
    close(m(t(x)), x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)))


@needs("adaptive_avg_pool2d")
def test_adaptive_avg_pool2d():
    x = RNG.standard_normal((2, 3, 6, 4)).astype(np.float32)
    close(nn.AdaptiveAvgPool2d(1)(t(x)), x.mean(axis=(2, 3), keepdims=True), atol=1e-5)
    close(nn.AdaptiveAvgPool2d((3, 2))(t(x)), x.reshape(2, 3, 3, 2, 2, 2).mean(axis=(3, 5)), atol=1e-5)
    assert repr(nn.AdaptiveAvgPool2d((1, 1))) == "AdaptiveAvgPool2d(output_size=(1, 1))"


# ---------------------------------------------------------------- batch norm
@needs("batch_norm")
def test_batchnorm1d_training_and_running_stats():
    m = nn.BatchNorm1d(3)
    assert repr(m) == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert m.weight.tolist() == [1.0] * 3 and m.bias.tolist() == [0.0] * 3
    assert [n for n, _ in m.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert m.num_batches_tracked.dtype == ember.int64
    x = RNG.standard_normal((8, 3)).astype(np.float32) * 2 + 1
    y = m(t(x))
    mean, var = x.mean(0), x.var(0)
    close(y, (x - mean) / np.sqrt(var + 1e-5), atol=1e-5)
    close(m.running_mean, 0.1 * mean, atol=1e-6)
    close(m.running_var, 0.9 + 0.1 * x.var(0, ddof=1), atol=1e-6)       # unbiased variance
    assert m.num_batches_tracked.item() == 1
    m.eval()
    close(m(t(x)), (x - m.running_mean.numpy()) / np.sqrt(m.running_var.numpy() + 1e-5), atol=1e-5)
    assert m.num_batches_tracked.item() == 1                             # eval does not count


@needs("batch_norm")
def test_batchnorm_cumulative_average_and_no_tracking():
    m = nn.BatchNorm1d(2, momentum=None)
    xs = [RNG.standard_normal((4, 2)).astype(np.float32) for _ in range(3)]
    for x in xs:
        m(t(x))
    close(m.running_mean, np.mean([x.mean(0) for x in xs], axis=0), atol=1e-6)
    close(m.running_var, np.mean([x.var(0, ddof=1) for x in xs], axis=0), atol=1e-5)
    assert m.num_batches_tracked.item() == 3
    n = nn.BatchNorm2d(2, affine=False, track_running_stats=False)
    assert n.weight is None and n.running_mean is None and list(n.state_dict()) == []
    x = RNG.standard_normal((2, 2, 3, 3)).astype(np.float32)
    n.eval()                                       # no running stats: batch statistics even in eval
    ref = (x - x.mean((0, 2, 3), keepdims=True)) / np.sqrt(x.var((0, 2, 3), keepdims=True) + 1e-5)
    close(n(t(x)), ref, atol=1e-5)


def test_batchnorm_input_dim_errors():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(ember.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.BatchNorm2d(3)(ember.ones(2, 3))


@needs("batch_norm")
def test_batchnorm2d_affine_gradient():
    m = nn.BatchNorm2d(2)
    x = t(RNG.standard_normal((3, 2, 2, 2)), requires_grad=True)
    m(x).sum().backward()
    close(m.bias.grad, [12.0, 12.0])
    close(m.weight.grad, [0.0, 0.0], atol=1e-4)          # sum of a normalised batch is 0
    close(x.grad, np.zeros((3, 2, 2, 2)), atol=1e-4)


# ---------------------------------------------------------------- layer / group norm
@needs("layer_norm")
def test_layer_norm():
    m = nn.LayerNorm(4)
    assert repr(m) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    close(m(t(x)), (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5), atol=1e-5)
    m2 = nn.LayerNorm([2, 3], elementwise_affine=False)
    assert m2.weight is None and repr(m2) == "LayerNorm((2, 3), eps=1e-05, elementwise_affine=False, bias=False)"
    x = RNG.standard_normal((5, 2, 3)).astype(np.float32)
    close(m2(t(x)), (x - x.mean((1, 2), keepdims=True)) / np.sqrt(x.var((1, 2), keepdims=True) + 1e-5), atol=1e-5)


@needs("group_norm")
def test_group_norm():
    m = nn.GroupNorm(2, 4)
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    g = x.reshape(2, 2, 6)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(2, 4, 3)
    close(m(t(x)), ref, atol=1e-5)
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"):
        nn.GroupNorm(3, 4)


# ---------------------------------------------------------------- dropout
@needs("dropout")
def test_dropout():
    m = nn.Dropout(0.25)
    assert repr(m) == "Dropout(p=0.25, inplace=False)"
    x = ember.ones(100, 100)
    ember.manual_seed(0)
    y = m(x).numpy()
    zero_frac = (y == 0).mean()
    assert abs(zero_frac - 0.25) < 0.03
    assert np.allclose(y[y != 0], 1 / 0.75)
    m.eval()
    assert m(x).tolist() == x.tolist()
    assert nn.Dropout(0.0)(x).tolist() == x.tolist()
    assert (nn.Dropout(1.0)(x).numpy() == 0).all()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 2"):
        nn.Dropout(2)


# ---------------------------------------------------------------- embedding
@needs("embedding")
def test_embedding():
    ember.manual_seed(0)
    m = nn.Embedding(10, 3, padding_idx=0)
    assert repr(m) == "Embedding(10, 3, padding_idx=0)"
    w = m.weight.detach().numpy()
    assert (w[0] == 0).all() and w[1:].std() > 0.3                      # N(0, 1), padding row zero
    idx = ember.tensor([[0, 2], [4, 2]])
    out = m(idx)
    assert out.shape == (2, 2, 3)
    close(out, w[[[0, 2], [4, 2]]])
    out.sum().backward()
    g = m.weight.grad.numpy()
    assert (g[0] == 0).all() and (g[2] == 2).all() and (g[4] == 1).all() and (g[1] == 0).all()
    assert nn.Embedding(10, 3, padding_idx=-1).padding_idx == 9
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=5)


@needs("embedding")
def test_embedding_from_pretrained():
    w = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    m = nn.Embedding.from_pretrained(w)
    assert not m.weight.requires_grad
    assert m(ember.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(ember.ones(3))
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings and embedding_dim"):
        nn.Embedding(3, 2, _weight=ember.ones(2, 2))


# ---------------------------------------------------------------- flatten
def test_flatten_unflatten():
    x = ember.ones(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    u = nn.Unflatten(1, (2, 30))
    assert u(nn.Flatten()(x)).shape == (2, 2, 30)
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(2, 30))"
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 3)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type str at "
                                        "pos 1"):
        nn.Unflatten(1, (2, "a"))


# ---------------------------------------------------------------- a small CNN end to end
@needs("conv2d", "max_pool2d", "linear", "cross_entropy")
def test_small_cnn_trains_one_step():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 3 * 3, 3))
    x = t(RNG.standard_normal((8, 1, 8, 8)))
    y = ember.tensor(RNG.integers(0, 3, 8))
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())
    with ember.no_grad():
        for p in model.parameters():
            p.sub_(0.1 * p.grad)
    assert F.cross_entropy(model(x), y).item() < loss.item()


# ---------------------------------------------------------------- against PyTorch
def _copy_from_torch(em, tm):
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


TORCH_CASES = [
    ("Linear", lambda nn_: nn_.Linear(5, 4), (3, 5)),
    ("Bilinear", None, None),
    ("Conv1d", lambda nn_: nn_.Conv1d(2, 4, 3, stride=2, padding=1), (2, 2, 9)),
    ("Conv2d", lambda nn_: nn_.Conv2d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2), (2, 4, 7, 7)),
    ("Conv2d-same", lambda nn_: nn_.Conv2d(2, 3, 4, padding="same", dilation=2), (1, 2, 6, 6)),
    ("Conv2d-circular", lambda nn_: nn_.Conv2d(2, 3, 3, padding=1, padding_mode="circular"), (1, 2, 5, 5)),
    ("ConvTranspose2d", lambda nn_: nn_.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
     (2, 4, 4, 4)),
    ("MaxPool1d", lambda nn_: nn_.MaxPool1d(3, 2, padding=1), (2, 3, 9)),
    ("MaxPool2d", lambda nn_: nn_.MaxPool2d(3, 2, padding=1, ceil_mode=True), (2, 3, 8, 8)),
    ("AvgPool2d", lambda nn_: nn_.AvgPool2d(3, 2, padding=1, count_include_pad=False), (2, 3, 8, 8)),
    ("AdaptiveAvgPool2d", lambda nn_: nn_.AdaptiveAvgPool2d((3, 5)), (2, 3, 7, 9)),
    ("BatchNorm1d", lambda nn_: nn_.BatchNorm1d(4), (6, 4, 3)),
    ("BatchNorm2d", lambda nn_: nn_.BatchNorm2d(3, momentum=None), (4, 3, 2, 2)),
    ("LayerNorm", lambda nn_: nn_.LayerNorm([3, 4]), (2, 3, 4)),
    ("GroupNorm", lambda nn_: nn_.GroupNorm(2, 4), (2, 4, 5)),
    ("GELU-tanh", lambda nn_: nn_.GELU(approximate="tanh"), (3, 4)),
    ("Softplus", lambda nn_: nn_.Softplus(2.0, 3.0), (3, 4)),
    ("ELU", lambda nn_: nn_.ELU(0.7), (3, 4)),
    ("LeakyReLU", lambda nn_: nn_.LeakyReLU(0.1), (3, 4)),
    ("LogSoftmax", lambda nn_: nn_.LogSoftmax(dim=1), (3, 4)),
]


@pytest.mark.parametrize("name, build, shape", [c for c in TORCH_CASES if c[1] is not None],
                         ids=[c[0] for c in TORCH_CASES if c[1] is not None])
def test_against_torch(name, build, shape):
    torch = pytest.importorskip("torch")
    em, tm = build(nn), build(torch.nn)
    assert repr(em) == repr(tm)
    _copy_from_torch(em, tm)
    x = RNG.standard_normal(shape).astype(np.float32)
    ex, tx = t(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    try:
        ey = em(ex)
    except AttributeError as e:
        if "ember.nn.functional" in str(e) or "has no attribute" in str(e):
            pytest.skip(f"functional form missing: {e}")
        raise
    ty = tm(tx)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = RNG.standard_normal(ty.shape).astype(np.float32)
    ey.backward(t(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    for (n, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=n)
    for (n, b), (_, c) in zip(em.named_buffers(), tm.named_buffers()):
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)


def test_embedding_and_bilinear_against_torch():
    torch = pytest.importorskip("torch")
    if not (hasattr(F, "embedding") and hasattr(F, "bilinear")):
        pytest.skip("functional forms missing")
    em, tm = nn.Embedding(7, 3, padding_idx=2), torch.nn.Embedding(7, 3, padding_idx=2)
    assert repr(em) == repr(tm)
    _copy_from_torch(em, tm)
    idx = RNG.integers(0, 7, (4, 5))
    ey, ty = em(ember.tensor(idx)), tm(torch.tensor(idx))
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy())
    ey.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy())
    eb, tb = nn.Bilinear(2, 3, 4), torch.nn.Bilinear(2, 3, 4)
    _copy_from_torch(eb, tb)
    a, b = RNG.standard_normal((5, 2)).astype(np.float32), RNG.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(eb(t(a), t(b)).detach().numpy(), tb(torch.tensor(a), torch.tensor(b)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
