"""Second batch of nn modules against torch: PixelShuffle / PixelUnshuffle, ChannelShuffle, Upsample,
Fold / Unfold, LocalResponseNorm, InstanceNorm1d/2d/3d, the padding and distance layers, and the lazy
layers (LazyLinear, LazyConv1d/2d, UninitializedParameter). Values and float64 gradients side by side,
reprs, running statistics, shapes, dtypes and exception classes."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def _both(a, grad=True):
    return ember.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _compare(fe, ft, x, rtol=1e-10, atol=1e-12):
    """Run fe / ft on copies of the array ``x``; compare outputs, then input gradients for a random
    upstream gradient."""
    xe, xt = _both(x)
    ye, yt = fe(xe), ft(xt)
    assert tuple(ye.shape) == tuple(yt.shape) and ye.dtype == ember.float64
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    w = rng.standard_normal(tuple(yt.shape))
    (ye * ember.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=atol)
    return ye, yt


def _raises_like(fn_e, fn_t, match=None):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(type(et.value), match=match):
        fn_e()


# ----------------------------------------------------------------------------- shuffles
@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((18, 2, 3), 3), ((2, 3, 4, 1, 1), 2)])
def test_pixel_shuffle_roundtrip_matches_torch(shape, r):
    x = rng.standard_normal(shape)
    _compare(lambda t: nn.PixelShuffle(r)(t), lambda t: torch.nn.PixelShuffle(r)(t), x)
    y = rng.standard_normal(shape[:-3] + (shape[-3] // (r * r), shape[-2] * r, shape[-1] * r))
    _compare(lambda t: F.pixel_unshuffle(t, r), lambda t: torch.nn.functional.pixel_unshuffle(t, r), y)
    ye = ember.tensor(y)
    np.testing.assert_array_equal(F.pixel_shuffle(F.pixel_unshuffle(ye, r), r).numpy(), y)
    assert repr(nn.PixelShuffle(r)) == repr(torch.nn.PixelShuffle(r))
    assert repr(nn.PixelUnshuffle(r)) == repr(torch.nn.PixelUnshuffle(r))


@pytest.mark.parametrize("fn,shape,r", [("pixel_shuffle", (2, 5, 3, 3), 2), ("pixel_shuffle", (3, 3), 2),
                                        ("pixel_shuffle", (1, 4, 3, 3), 0), ("pixel_unshuffle", (1, 1, 3, 4), 2),
                                        ("pixel_unshuffle", (1, 1, 4, 3), 2), ("pixel_unshuffle", (4, 4), 2)])
def test_pixel_shuffle_errors(fn, shape, r):
    with pytest.raises(RuntimeError) as et:
        getattr(torch.nn.functional, fn)(torch.zeros(shape), r)
    with pytest.raises(RuntimeError) as ee:
        getattr(F, fn)(ember.zeros(shape), r)
    assert str(ee.value) == str(et.value)


def test_channel_shuffle():
    x = rng.standard_normal((2, 6, 3, 2))
    _compare(lambda t: nn.ChannelShuffle(3)(t), lambda t: torch.nn.ChannelShuffle(3)(t), x)
    np.testing.assert_array_equal(F.native_channel_shuffle(ember.tensor(x), 2).numpy(),
                                  torch.nn.functional.native_channel_shuffle(torch.tensor(x), 2).numpy())
    assert repr(nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
    for shape, g in [((1, 5, 3), 2), ((1, 4, 3), 0), ((4,), 2)]:
        with pytest.raises(RuntimeError) as et:
            torch.nn.functional.channel_shuffle(torch.zeros(shape), g)
        with pytest.raises(RuntimeError) as ee:
            F.channel_shuffle(ember.zeros(shape), g)
        assert str(ee.value) == str(et.value)


# ----------------------------------------------------------------------------- upsampling, fold
@pytest.mark.parametrize("kw,shape", [(dict(scale_factor=2), (1, 2, 3, 4)), (dict(size=(5, 7), mode="bilinear"),
                                                                            (2, 1, 3, 4)),
                                      (dict(scale_factor=1.5, mode="bilinear", align_corners=True), (1, 2, 4, 4)),
                                      (dict(size=7, mode="linear"), (2, 3, 4)),
                                      (dict(scale_factor=(2, 3), mode="nearest-exact"), (1, 1, 3, 3))])
def test_upsample_matches_torch(kw, shape):
    em, tm = nn.Upsample(**kw), torch.nn.Upsample(**kw)
    assert repr(em) == repr(tm)
    _compare(em, tm, rng.standard_normal(shape))


def test_upsampling_2d_aliases():
    x = rng.standard_normal((1, 2, 3, 3))
    for name in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
        em, tm = getattr(nn, name)(scale_factor=2), getattr(torch.nn, name)(scale_factor=2)
        assert repr(em) == repr(tm)
        _compare(em, tm, x)


def test_fold_unfold_modules():
    x = rng.standard_normal((2, 3, 5, 6))
    ue, ut = nn.Unfold(2, padding=1, stride=2), torch.nn.Unfold(2, padding=1, stride=2)
    assert repr(ue) == repr(ut)
    ye, yt = _compare(ue, ut, x)
    fe, ft = nn.Fold((5, 6), 2, padding=1, stride=2), torch.nn.Fold((5, 6), 2, padding=1, stride=2)
    assert repr(fe) == repr(ft)
    _compare(fe, ft, yt.detach().numpy())


# ----------------------------------------------------------------------------- normalisation
@pytest.mark.parametrize("size,shape", [(2, (2, 5, 4)), (3, (1, 6, 3, 3)), (4, (2, 3, 2, 2, 2))])
def test_local_response_norm(size, shape):
    em, tm = nn.LocalResponseNorm(size, alpha=0.3, k=2.0), torch.nn.LocalResponseNorm(size, alpha=0.3, k=2.0)
    assert repr(em) == repr(tm)
    _compare(em, tm, rng.standard_normal(shape))
    _raises_like(lambda: em(ember.zeros(2, 3)), lambda: tm(torch.zeros(2, 3)), "Expected 3D or higher")


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (3, 4, 6)), ("InstanceNorm2d", (2, 4, 3, 5)),
                                       ("InstanceNorm3d", (2, 4, 2, 3, 2)), ("InstanceNorm1d", (4, 6)),
                                       ("InstanceNorm2d", (4, 3, 5))])
@pytest.mark.parametrize("affine,track", [(False, False), (True, False), (True, True), (False, True)])
def test_instance_norm_matches_torch(cls, shape, affine, track):
    em = getattr(nn, cls)(4, affine=affine, track_running_stats=track, momentum=0.3).double()
    tm = getattr(torch.nn, cls)(4, affine=affine, track_running_stats=track, momentum=0.3).double()
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    if affine:
        w = rng.standard_normal(4)
        with ember.no_grad():
            em.weight.copy_(ember.tensor(w))
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(w))
    x = rng.standard_normal(shape) * 2 + 1
    for _ in range(2):                      # two training steps update the running statistics
        _compare(em, tm, x)
    if track:
        np.testing.assert_allclose(em.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-12)
        np.testing.assert_allclose(em.running_var.numpy(), tm.running_var.numpy(), rtol=1e-12)
    em.eval(), tm.eval()
    _compare(em, tm, x + 0.5)               # eval: the running statistics when tracked
    if affine:
        for (n, pe), (_, pt) in zip(em.named_parameters(), tm.named_parameters()):
            assert pe.grad is not None and pe.grad.shape == pt.grad.shape, n


def test_instance_norm_errors_and_warnings():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
            lib.nn.InstanceNorm1d(3)(lib.zeros(1, 3, 4, 4))
        with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
            lib.nn.InstanceNorm2d(3)(lib.zeros(3, 4))
        with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but "
                                             r"got: 4\."):
            lib.nn.InstanceNorm1d(3, affine=True)(lib.zeros(2, 4, 5))
        with pytest.warns(UserWarning, match="does not match num_features"):
            lib.nn.InstanceNorm1d(3)(lib.randn(2, 4, 5))
        with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
            lib.nn.InstanceNorm1d(3)(lib.zeros(2, 3, 1))


# ----------------------------------------------------------------------------- padding, distance
PADS = [("ZeroPad1d", (2,), (2, 3, 4)), ("ZeroPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)),
        ("ZeroPad3d", (1,), (1, 1, 2, 2, 2)), ("ConstantPad1d", ((1, 2), 3.5), (2, 3, 4)),
        ("ConstantPad2d", (1, -1.0), (2, 3, 4)), ("ConstantPad3d", ((1, 0, 0, 1, 1, 0), 2.0), (1, 2, 2, 2)),
        ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad2d", ((1, 2, 0, 1),), (1, 2, 3, 4)),
        ("ReflectionPad3d", (1,), (1, 1, 2, 3, 3)), ("ReplicationPad1d", ((3, 1),), (2, 3, 4)),
        ("ReplicationPad2d", (2,), (1, 2, 3, 4)), ("ReplicationPad3d", (1,), (1, 1, 2, 2, 2)),
        ("CircularPad1d", (2,), (2, 3, 4)), ("CircularPad2d", ((1, 1, 2, 0),), (1, 2, 3, 4)),
        ("CircularPad3d", (1,), (1, 1, 2, 2, 2))]


@pytest.mark.parametrize("name,args,shape", PADS, ids=[p[0] for p in PADS])
def test_padding_modules(name, args, shape):
    em, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(em) == repr(tm) and em.padding == tm.padding
    _compare(em, tm, rng.standard_normal(shape))


def test_distance_modules():
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    for em, tm in [(nn.PairwiseDistance(), torch.nn.PairwiseDistance()),
                   (nn.PairwiseDistance(1.0, keepdim=True), torch.nn.PairwiseDistance(1.0, keepdim=True)),
                   (nn.CosineSimilarity(), torch.nn.CosineSimilarity()),
                   (nn.CosineSimilarity(0, 1e-6), torch.nn.CosineSimilarity(0, 1e-6))]:
        assert repr(em) == repr(tm)
        _compare(lambda t: em(t, ember.tensor(b)), lambda t: tm(t, torch.tensor(b)), a)


# ----------------------------------------------------------------------------- lazy layers
def test_lazy_linear_materializes_in_place():
    m = nn.LazyLinear(3, dtype=ember.float64)
    assert repr(m) == repr(torch.nn.LazyLinear(3))
    assert isinstance(m.weight, nn.UninitializedParameter) and nn.parameter.is_lazy(m.weight)
    assert repr(m.weight) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        m.weight.shape
    params = list(m.parameters())
    opt = ember.optim.SGD(params, lr=0.1)
    x = ember.tensor(rng.standard_normal((2, 5)))
    y = m(x)
    assert type(m) is nn.Linear and m.in_features == 5 and tuple(m.weight.shape) == (3, 5)
    assert params[0] is m.weight and params[1] is m.bias and type(m.weight) is nn.Parameter
    assert m.weight.dtype == ember.float64 and not m._forward_pre_hooks
    bound = 1 / np.sqrt(5)
    assert np.abs(m.weight.detach().numpy()).max() <= bound and np.abs(m.bias.detach().numpy()).max() <= bound
    np.testing.assert_allclose(y.detach().numpy(), x.numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy())
    y.sum().backward()
    before = m.weight.detach().numpy().copy()
    opt.step()
    assert not np.allclose(before, m.weight.detach().numpy())


def test_lazy_linear_no_bias_and_state_dict_load():
    src = nn.Linear(4, 2, bias=False)
    m = nn.LazyLinear(2, bias=False)
    assert m.bias is None
    m.load_state_dict(src.state_dict())
    assert type(m) is nn.Linear and tuple(m.weight.shape) == (2, 4)
    np.testing.assert_array_equal(m.weight.detach().numpy(), src.weight.detach().numpy())


@pytest.mark.parametrize("cls,shape,kw", [("LazyConv1d", (2, 4, 7), dict(kernel_size=3, padding=1)),
                                          ("LazyConv2d", (2, 6, 5, 5), dict(kernel_size=3, stride=2, groups=3)),
                                          ("LazyConv2d", (6, 5, 5), dict(kernel_size=(2, 3), bias=False))])
def test_lazy_conv_matches_eager_conv(cls, shape, kw):
    em, tm = getattr(nn, cls)(6, **kw), getattr(torch.nn, cls)(6, **kw)
    assert repr(em) == repr(tm)
    x = rng.standard_normal(shape)
    em(ember.tensor(x, dtype=ember.float32)), tm(torch.tensor(x, dtype=torch.float32))
    assert repr(em) == repr(tm) and type(em).__name__ == type(tm).__name__
    assert tuple(em.weight.shape) == tuple(tm.weight.shape)
    em.double(), tm.double()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    _compare(em, tm, x)


def test_lazy_conv_errors():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv2d(4, 3, groups=2)(lib.zeros(1, 3, 5, 5))
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
            lib.nn.LazyConv2d(4, 3)(lib.zeros(3, 5))


def test_uninitialized_parameter_copy_pickle_and_dtype_moves():
    m = nn.LazyLinear(2)
    c = copy.deepcopy(m)
    assert isinstance(c.weight, nn.UninitializedParameter) and c.weight is not m.weight
    p = pickle.loads(pickle.dumps(nn.UninitializedParameter()))
    assert isinstance(p, nn.UninitializedParameter) and p.requires_grad
    m.double()
    m(ember.zeros(1, 3, dtype=ember.float64))
    assert m.weight.dtype == ember.float64
    b = nn.UninitializedBuffer()
    b.materialize((2, 2))
    assert type(b) is ember.Tensor and tuple(b.shape) == (2, 2)


@pytest.mark.parametrize("cls,shape", [("LazyBatchNorm1d", (4, 3)), ("LazyBatchNorm2d", (2, 3, 4, 4)),
                                       ("LazyBatchNorm3d", (2, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (2, 3, 5)),
                                       ("LazyInstanceNorm2d", (2, 3, 4, 4)),
                                       ("LazyInstanceNorm3d", (2, 3, 2, 2, 3))])
@pytest.mark.parametrize("kw", [{}, dict(affine=False, track_running_stats=False)])
def test_lazy_norms_match_torch(cls, shape, kw):
    em, tm = getattr(nn, cls)(momentum=0.2, **kw), getattr(torch.nn, cls)(momentum=0.2, **kw)
    assert repr(em) == repr(tm) and list(em.state_dict()) == list(tm.state_dict())
    em.double(), tm.double()                 # before the first forward: stays uninitialized, with the dtype
    x = rng.standard_normal(shape)
    _compare(em, tm, x)
    assert type(em).__name__ == type(tm).__name__ and repr(em) == repr(tm)
    for (n, be), (_, bt) in zip(em.state_dict().items(), tm.state_dict().items()):
        assert be.dtype == getattr(ember, str(bt.dtype).split(".")[1]), n
        np.testing.assert_allclose(be.numpy(), bt.numpy(), rtol=1e-12, err_msg=n)


@pytest.mark.parametrize("cls,shape", [("LazyConvTranspose1d", (2, 4, 5)), ("LazyConvTranspose2d", (1, 6, 3, 4))])
def test_lazy_conv_transpose(cls, shape):
    kw = dict(kernel_size=3, stride=2, groups=2, output_padding=1)
    em, tm = getattr(nn, cls)(4, **kw), getattr(torch.nn, cls)(4, **kw)
    assert repr(em) == repr(tm)
    x = rng.standard_normal(shape)
    em(ember.tensor(x, dtype=ember.float32)), tm(torch.tensor(x, dtype=torch.float32))
    assert repr(em) == repr(tm) and tuple(em.weight.shape) == tuple(tm.weight.shape)
    em.double(), tm.double()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    _compare(em, tm, x)


@pytest.mark.parametrize("cls,args,shape", [("LPPool1d", (2, 3), (2, 3, 8)), ("LPPool1d", (1.5, 2, 1), (3, 7)),
                                            ("LPPool2d", (2, 2), (1, 2, 4, 6)),
                                            ("LPPool2d", (3, (2, 3), (1, 2), True), (2, 1, 5, 7))])
def test_lp_pool(cls, args, shape):
    em, tm = getattr(nn, cls)(*args), getattr(torch.nn, cls)(*args)
    assert repr(em) == repr(tm)
    x = np.abs(rng.standard_normal(shape)) + 0.1 if args[0] == 1.5 else rng.standard_normal(shape)
    _compare(em, tm, x, rtol=1e-9)
