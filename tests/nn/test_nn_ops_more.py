"""3-D convolutions and pooling, adaptive max pooling, max unpooling, lp_pool3d and their modules,
compared with PyTorch side by side (values, shapes, dtypes, float64 gradients, error classes)."""
import re

import numpy as np
import pytest

import ember
import ember.nn as enn
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(7)


def _pair(a):
    return torch.tensor(a), ember.tensor(a)


def _close(t, e, tol=None):
    assert tuple(t.shape) == tuple(e.shape)
    tol = tol if tol is not None else (1e-10 if t.dtype == torch.float64 else 1e-5)
    assert str(t.dtype).split(".")[-1] == str(e.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol, equal_nan=True)


def _both(name, arrays, grad=True, **kw):
    """Runs F.name on torch and ember with the same float64 arrays; compares outputs and gradients."""
    ts = [torch.tensor(a, requires_grad=grad and a.dtype == np.float64) for a in arrays]
    es = [ember.tensor(a, requires_grad=grad and a.dtype == np.float64) for a in arrays]
    t, e = getattr(TF, name)(*ts, **kw), getattr(EF, name)(*es, **kw)
    t = t if isinstance(t, tuple) else (t,)
    e = e if isinstance(e, tuple) else (e,)
    for a, b in zip(t, e):
        _close(a, b)
    if grad:
        w = RNG.standard_normal(tuple(t[0].shape))
        (t[0] * torch.tensor(w)).sum().backward()
        (e[0] * ember.tensor(w)).sum().backward()
        for a, b in zip(ts, es):
            if a.requires_grad:
                _close(a.grad, b.grad)


CONV3D = [((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)),
          ((4, 5, 6, 5), (3, 4, 2, 2, 2), dict(padding="same")),
          ((1, 2, 4, 4, 4), (2, 2, 3, 3, 3), dict(padding="valid")),
          ((1, 3, 3, 4, 5), (3, 1, 1, 2, 2), dict(stride=2, groups=3))]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("xs,ws,kw", CONV3D)
def test_conv3d_matches_torch(xs, ws, kw):
    _both("conv3d", [RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])], **kw)


CONVT3D = [((2, 4, 3, 4, 5), (4, 3, 3, 2, 3),
            dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)),
           ((4, 3, 3, 3), (4, 2, 2, 2, 2), {}),
           ((1, 2, 2, 3, 2), (2, 3, 2, 1, 2), dict(stride=3, padding=1, output_padding=2))]


@pytest.mark.parametrize("xs,ws,kw", CONVT3D)
def test_conv_transpose3d_matches_torch(xs, ws, kw):
    b = RNG.standard_normal(ws[1] * kw.get("groups", 1))
    _both("conv_transpose3d", [RNG.standard_normal(xs), RNG.standard_normal(ws), b], **kw)


def test_conv3d_float32_and_errors():
    x, w = RNG.standard_normal((1, 2, 4, 4, 4)).astype(np.float32), RNG.standard_normal((3, 2, 2, 2, 2))
    _both("conv3d", [x, w.astype(np.float32)], grad=False)
    cases = [((1, 3, 4, 4, 4), (3, 2, 2, 2, 2), {}),               # channel mismatch
             ((1, 2, 4, 4), (3, 2, 2, 2, 2), {}),                  # rank (an unbatched 4-D input has C = 1 != 2)
             ((1, 2, 2, 2, 2), (3, 2, 3, 3, 3), {}),               # kernel larger than the input
             ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), dict(stride=0)),
             ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), dict(padding="same", stride=2)),
             ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2), dict(padding="bad"))]
    for xs, ws, kw in cases:
        tx, ex = _pair(RNG.standard_normal(xs))
        tw, ew = _pair(RNG.standard_normal(ws))
        with pytest.raises(Exception) as te:
            TF.conv3d(tx, tw, **kw)
        with pytest.raises(type(te.value)):
            EF.conv3d(ex, ew, **kw)
    with pytest.raises(RuntimeError):
        EF.conv_transpose3d(ember.zeros(1, 2, 2, 2, 2, dtype=ember.float64), ember.zeros(3, 1, 2, 2, 2,
                                                                                        dtype=ember.float64))
    with pytest.raises(RuntimeError):
        TF.conv_transpose3d(torch.zeros(1, 2, 2, 2, 2, dtype=torch.float64), torch.zeros(3, 1, 2, 2, 2,
                                                                                        dtype=torch.float64))


def _copy(tm, em):
    for (n, p), (n2, q) in zip(tm.named_parameters(), em.named_parameters()):
        assert n == n2 and tuple(p.shape) == tuple(q.shape)
        with ember.no_grad():
            q.copy_(ember.tensor(p.detach().numpy()))


@pytest.mark.parametrize("cls,args,kw,xs", [
    ("Conv3d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (2, 4, 5, 6, 5)),
    ("Conv3d", (2, 3, (1, 2, 3)), dict(padding="same", padding_mode="reflect"), (2, 4, 5, 6)),
    ("ConvTranspose3d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2), (2, 4, 3, 2, 3)),
])
def test_conv3d_modules_match_torch(cls, args, kw, xs):
    tm = getattr(torch.nn, cls)(*args, **kw).double()
    em = getattr(enn, cls)(*args, **kw, dtype=ember.float64)
    _copy(tm, em)
    assert repr(tm) == repr(em)
    tx, ex = _pair(RNG.standard_normal(xs))
    _close(tm(tx), em(ex))


def test_lazy_conv3d_and_convtranspose3d_output_size():
    em = enn.LazyConv3d(5, 2)
    y = em(ember.randn(1, 3, 4, 4, 4))
    assert type(em) is enn.Conv3d and em.in_channels == 3 and tuple(y.shape) == (1, 5, 3, 3, 3)
    lt = enn.LazyConvTranspose3d(2, 3, stride=2)
    assert tuple(lt(ember.randn(1, 3, 2, 2, 2)).shape) == (1, 2, 5, 5, 5)
    tm, em = torch.nn.ConvTranspose3d(2, 2, 3, stride=2).double(), enn.ConvTranspose3d(2, 2, 3, stride=2,
                                                                                        dtype=ember.float64)
    _copy(tm, em)
    tx, ex = _pair(RNG.standard_normal((1, 2, 2, 3, 2)))
    _close(tm(tx, output_size=(6, 8, 6)), em(ex, output_size=(6, 8, 6)))


X5 = RNG.standard_normal((2, 3, 5, 6, 7))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1,
                                                            dilation=(1, 2, 1), ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1)])
def test_max_pool3d_matches_torch(kw):
    _both("max_pool3d", [X5], return_indices=True, **kw)
    _both("max_pool3d", [X5[0]], return_indices=True, **kw)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1,
                                                            ceil_mode=True),
                                dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=1, ceil_mode=True,
                                     count_include_pad=False),
                                dict(kernel_size=3, stride=2, padding=1, divisor_override=5)])
def test_avg_pool3d_matches_torch(kw):
    _both("avg_pool3d", [X5], **kw)


@pytest.mark.parametrize("name,x,out", [("adaptive_avg_pool3d", X5, (2, 4, 3)), ("adaptive_avg_pool3d", X5[0],
                                                                                  (None, 4, 3)),
                                        ("adaptive_max_pool3d", X5, (2, 4, 3)), ("adaptive_max_pool3d", X5, (5, 3, 7)),
                                        ("adaptive_max_pool1d", X5[0, 0], 4), ("adaptive_max_pool1d", X5[0, 0, 0], 3),
                                        ("adaptive_max_pool1d", X5[0, 0], 7)])
def test_adaptive_pools_match_torch(name, x, out):
    kw = dict(return_indices=True) if "max" in name else {}
    _both(name, [x], output_size=out, **kw)


def test_lp_pool3d_matches_torch():
    _both("lp_pool3d", [np.abs(X5) + 0.1], norm_type=2.0, kernel_size=2)
    _both("lp_pool3d", [np.abs(X5) + 0.1], norm_type=3, kernel_size=(2, 2, 3), stride=1)


@pytest.mark.parametrize("nd,x", [(1, X5[0, 0, :, 0]), (2, X5[0, :, 0]), (3, X5[:, :, :4, :6, :6]),
                                  (2, X5[0, 0])])
def test_max_unpool_matches_torch(nd, x):
    pool, unpool = getattr(TF, f"max_pool{nd}d"), f"max_unpool{nd}d"
    v, i = pool(torch.tensor(x), 2, return_indices=True)
    tv = v.detach().numpy()
    ts = torch.tensor(tv, requires_grad=True)
    es = ember.tensor(tv, requires_grad=True)
    size = x.shape[-nd:]
    t = getattr(TF, unpool)(ts, i, 2, output_size=size)
    e = getattr(EF, unpool)(es, ember.tensor(i.numpy()), 2, output_size=size)
    _close(t, e)
    t.sum().backward()
    (e * 1).sum().backward()
    _close(ts.grad, es.grad)


def test_pool3d_errors_match_torch():
    x = RNG.standard_normal((2, 3, 4, 4, 4))
    cases = [("max_pool3d", RNG.standard_normal((3, 4)), dict(kernel_size=2)),
             ("max_pool3d", x, dict(kernel_size=2, padding=2)),
             ("max_pool3d", x, dict(kernel_size=(2, 2))),
             ("max_pool3d", x, dict(kernel_size=5)),
             ("avg_pool3d", x, dict(kernel_size=5)),
             ("avg_pool3d", x, dict(kernel_size=2, stride=0)),
             ("avg_pool3d", x, dict(kernel_size=2, divisor_override=0)),
             ("adaptive_max_pool3d", RNG.standard_normal((3, 4)), dict(output_size=2)),
             ("adaptive_avg_pool3d", RNG.standard_normal((3, 4)), dict(output_size=2)),
             ("adaptive_max_pool1d", RNG.standard_normal(4), dict(output_size=2))]
    for name, a, kw in cases:
        tx, ex = _pair(a)
        with pytest.raises(Exception) as te:
            getattr(TF, name)(tx, **kw)
        with pytest.raises(type(te.value), match=re.escape(str(te.value)[:20])):
            getattr(EF, name)(ex, **kw)
    v, i = torch.randn(1, 1, 2, 2), torch.tensor([[[[0, 1], [2, 100]]]])
    for kw, idx in [({}, i), (dict(output_size=(9, 9)), i.clamp(max=3)), (dict(output_size=(9, 9, 3)), i.clamp(max=3)),
                    ({}, i.clamp(max=3).int())]:
        with pytest.raises(Exception) as te:
            TF.max_unpool2d(v, idx, 2, **kw)
        with pytest.raises(type(te.value), match=re.escape(str(te.value)[:20])):
            EF.max_unpool2d(ember.tensor(v.numpy()), ember.tensor(idx.numpy()), 2, **kw)


@pytest.mark.parametrize("cls,args,xs", [("MaxPool3d", (3, 2, 1), (2, 3, 5, 6, 7)), ("AvgPool3d", (2,), (3, 4, 4, 4)),
                                         ("AdaptiveAvgPool3d", ((2, 3, 2),), (2, 3, 5, 6, 7)),
                                         ("AdaptiveMaxPool3d", ((2, 3, 2),), (2, 3, 5, 6, 7)),
                                         ("AdaptiveMaxPool1d", (3,), (2, 3, 7)),
                                         ("LPPool3d", (2, 2), (2, 3, 4, 4, 4))])
def test_pool_modules_match_torch(cls, args, xs):
    tm, em = getattr(torch.nn, cls)(*args), getattr(enn, cls)(*args)
    assert repr(tm) == repr(em)
    tx, ex = _pair(np.abs(RNG.standard_normal(xs)))
    _close(tm(tx), em(ex))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_modules_match_torch(nd):
    pool, unpool = getattr(torch.nn, f"MaxPool{nd}d")(2, return_indices=True), getattr(torch.nn, f"MaxUnpool{nd}d")(2)
    eun = getattr(enn, f"MaxUnpool{nd}d")(2)
    assert repr(unpool) == repr(eun)
    v, i = pool(torch.randn((2, 3) + (4,) * nd, dtype=torch.float64))
    _close(unpool(v, i), eun(ember.tensor(v.numpy()), ember.tensor(i.numpy())))


VDEV_CASES = [lambda a, b: EF.conv3d(a, b, padding=1, stride=(1, 2, 1)),
              lambda a, b: EF.conv_transpose3d(a, b.transpose(0, 1).contiguous(), stride=2, output_padding=1),
              lambda a, b: EF.max_pool3d(a, 2, 1, 1),
              lambda a, b: EF.avg_pool3d(a, 3, 2, 1, count_include_pad=False),
              lambda a, b: EF.adaptive_max_pool3d(a, (3, 2, 3)),
              lambda a, b: EF.adaptive_avg_pool3d(a, (3, 2, 3)),
              lambda a, b: EF.lp_pool3d(a.abs() + 0.1, 2, 2),
              lambda a, b: EF.max_unpool3d(*EF.max_pool3d(a, 2, return_indices=True), 2, output_size=(4, 5, 4))]


@pytest.mark.parametrize("case", range(len(VDEV_CASES)))
def test_composites_run_on_vdev(case):
    """The reference plugin has only primitives: the 3-D ops run there (forward and backward) as on cpu."""
    pytest.importorskip("ember_vdev")
    x = ember.randn(1, 2, 4, 5, 4, dtype=ember.float64)
    w = ember.randn(3, 2, 2, 3, 2, dtype=ember.float64)
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    xv, wv = x.to("vdev").requires_grad_(), w.to("vdev").requires_grad_()
    a, b = VDEV_CASES[case](xc, wc), VDEV_CASES[case](xv, wv)
    assert b.device.type == "vdev"
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(b.cpu().detach().numpy(), a.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(xv.grad.cpu().numpy(), xc.grad.numpy(), atol=1e-12)
