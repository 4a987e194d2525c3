"""ember.ops.quantized against PyTorch's quantized kernels (fbgemm) and across devices.

The conformance suite (``ember conformance cpu --dtype qint8``) checks every op against numpy
references; here the same ops run beside torch.ops.quantized / torch.ao.nn.quantized on identical
integers and qparams: integer results must agree within one unit (most agree exactly), and the
results on every other installed device must equal cpu's.
"""
import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:   # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (comparison with its kernels)")

OTHER_DEVICES = [d for d in ("opencl", "vdev") if hasattr(ember, d) and getattr(ember, d).is_available()]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if torch is not None:
            torch.backends.quantized.engine = "fbgemm" if "fbgemm" in torch.backends.quantized.supported_engines \
                else torch.backends.quantized.engine
        yield


def _pair(a, scale, zp, edt, tdt):
    a = np.asarray(a, np.float32)
    return ember.quantize_per_tensor(ember.tensor(a), scale, zp, edt), \
        torch.quantize_per_tensor(torch.from_numpy(a), scale, zp, tdt)


def _ints(q):
    return (q.int_repr().cpu().numpy() if isinstance(q, ember.Tensor) else q.int_repr().numpy()).astype(np.int64)


def _close(e, t, tol=1):
    d = np.abs(_ints(e) - _ints(t))
    assert d.max(initial=0) <= tol, f"max difference {d.max()}"
    return d


RNG = np.random.default_rng(1234)


@needs_torch
@pytest.mark.parametrize("name", ["add", "add_relu", "mul"])
def test_binary_vs_torch(name):
    a, b = RNG.normal(0, 2, (16, 33)), RNG.normal(0, 2, (16, 33))
    ea, ta = _pair(a, 0.03, 120, ember.quint8, torch.quint8)
    eb, tb = _pair(b, 0.05, 100, ember.quint8, torch.quint8)
    e = getattr(ember.ops.quantized, name)(ea, eb, 0.07, 90)
    t = getattr(torch.ops.quantized, name)(ta, tb, 0.07, 90)
    d = _close(e, t)
    assert (d > 0).mean() < 0.02
    assert (e.q_scale(), e.q_zero_point()) == (0.07, 90)


@needs_torch
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("relu", [False, True])
def test_linear_vs_torch(per_channel, relu):
    x, w, b = RNG.normal(0, 1, (64, 96)), RNG.normal(0, 0.1, (40, 96)), RNG.normal(0, 0.5, 40).astype(np.float32)
    ex, tx = _pair(x, 0.02, 128, ember.quint8, torch.quint8)
    if per_channel:
        s = np.linspace(0.001, 0.004, 40)
        ew = ember.quantize_per_channel(ember.tensor(w.astype(np.float32)), ember.tensor(s), ember.zeros(40, dtype=ember.int64),
                                        0, ember.qint8)
        tw = torch.quantize_per_channel(torch.from_numpy(w.astype(np.float32)), torch.from_numpy(s),
                                        torch.zeros(40, dtype=torch.int64), 0, torch.qint8)
    else:
        ew, tw = _pair(w, 0.003, 0, ember.qint8, torch.qint8)
    cls = torch.ao.nn.intrinsic.quantized.LinearReLU if relu else torch.ao.nn.quantized.Linear
    tl = cls(96, 40)
    tl.set_weight_bias(tw, torch.from_numpy(b))
    tl.scale, tl.zero_point = 0.05, 30
    op = ember.ops.quantized.linear_relu if relu else ember.ops.quantized.linear
    e = op(ex, ew, ember.tensor(b), 0.05, 30)
    d = _close(e, tl(tx))
    assert (d > 0).mean() < 0.01


@needs_torch
def test_dynamic_linear_vs_torch():
    x, w, b = RNG.normal(0, 1, (32, 64)).astype(np.float32), RNG.normal(0, 0.1, (16, 64)), RNG.normal(0, 1, 16)
    lin = torch.nn.Linear(64, 16)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
        lin.bias.copy_(torch.from_numpy(b))
    tq = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)
    el = ember.nn.Linear(64, 16)
    with ember.no_grad():
        el.weight.copy_(ember.tensor(w.astype(np.float32)))
        el.bias.copy_(ember.tensor(b.astype(np.float32)))
    eq = ember.ao.quantization.quantize_dynamic(ember.nn.Sequential(el), {ember.nn.Linear}, dtype=ember.qint8)
    np.testing.assert_array_equal(eq[0].weight().int_repr().numpy(), tq[0].weight().int_repr().numpy())
    assert eq[0].weight().q_scale() == pytest.approx(tq[0].weight().q_scale(), rel=1e-6)
    te = tq(torch.from_numpy(x)).detach().numpy()
    ee = eq(ember.tensor(x)).numpy()
    np.testing.assert_allclose(ee, te, rtol=1e-4, atol=2e-4)


@needs_torch
@pytest.mark.parametrize("groups,stride,padding,per_channel", [(1, 1, 1, False), (2, 2, 0, True), (1, 1, 2, True)])
def test_conv2d_vs_torch(groups, stride, padding, per_channel):
    x, w, b = RNG.normal(0, 1, (2, 4, 9, 9)), RNG.normal(0, 0.2, (6, 4 // groups, 3, 3)), RNG.normal(0, 0.3, 6)
    ex, tx = _pair(x, 0.03, 110, ember.quint8, torch.quint8)
    if per_channel:
        s = np.linspace(0.002, 0.006, 6)
        ew = ember.quantize_per_channel(ember.tensor(w.astype(np.float32)), ember.tensor(s), ember.zeros(6, dtype=ember.int64),
                                        0, ember.qint8)
        tw = torch.quantize_per_channel(torch.from_numpy(w.astype(np.float32)), torch.from_numpy(s),
                                        torch.zeros(6, dtype=torch.int64), 0, torch.qint8)
    else:
        ew, tw = _pair(w, 0.004, 0, ember.qint8, torch.qint8)
    tc = torch.ao.nn.quantized.Conv2d(4, 6, 3, stride=stride, padding=padding, groups=groups)
    tc.set_weight_bias(tw, torch.from_numpy(b.astype(np.float32)))
    tc.scale, tc.zero_point = 0.1, 60
    e = ember.ops.quantized.conv2d(ex, ew, ember.tensor(b.astype(np.float32)), (stride, stride), (padding, padding),
                                   (1, 1), groups, 0.1, 60)
    d = _close(e, tc(tx))
    assert (d > 0).mean() < 0.01


@needs_torch
def test_pooling_cat_relu_vs_torch():
    x = RNG.normal(0, 1, (2, 3, 9, 8))
    ex, tx = _pair(x, 0.02, 128, ember.quint8, torch.quint8)
    np.testing.assert_array_equal(_ints(ember.ops.quantized.max_pool2d(ex, (3, 3), (2, 2), (1, 1), (1, 1), False)),
                                  _ints(torch.nn.functional.max_pool2d(tx, 3, 2, 1)))
    np.testing.assert_array_equal(_ints(ember.nn.functional.max_pool2d(ex, 2)),
                                  _ints(torch.nn.functional.max_pool2d(tx, 2)))
    _close(ember.ops.quantized.adaptive_avg_pool2d(ex, (3, 2)), torch.nn.functional.adaptive_avg_pool2d(tx, (3, 2)))
    np.testing.assert_array_equal(_ints(ember.relu(ex)), _ints(torch.relu(tx)))
    ey, ty = _pair(RNG.normal(0, 3, (2, 3, 9, 8)), 0.05, 100, ember.quint8, torch.quint8)
    _close(ember.ops.quantized.cat([ex, ey], 1, 0.04, 120), torch.ops.quantized.cat([tx, ty], 1, 0.04, 120))
    f = ember.ops.quantized.flatten(ex, 1)
    assert f.shape == (2, 216) and f.q_scale() == 0.02


def test_mixing_float_and_quantized_raises():
    q = ember.quantize_per_tensor(ember.randn(3, 4), 0.1, 0, ember.quint8)
    w = ember.quantize_per_tensor(ember.randn(2, 4), 0.1, 0, ember.qint8)
    with pytest.raises(NotImplementedError, match="argument 'qb' must be a quantized tensor"):
        ember.ops.quantized.add(q, ember.randn(3, 4), 0.1, 0)
    with pytest.raises(NotImplementedError, match="argument 'X' must be a quantized tensor"):
        ember.ops.quantized.linear(ember.randn(3, 4), w, None, 0.1, 0)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x2\)"):
        ember.ops.quantized.linear(q, ember.quantize_per_tensor(ember.randn(2, 5), 0.1, 0, ember.qint8), None, 0.1, 0)


def test_packed_weight_cache_follows_writes():
    q = ember.quantize_per_tensor(ember.randn(3, 8), 0.05, 128, ember.quint8)
    w = ember.quantize_per_tensor(ember.randn(4, 8), 0.05, 0, ember.qint8)
    a = ember.ops.quantized.linear(q, w, None, 0.1, 0).int_repr()
    w.copy_(ember.quantize_per_tensor(ember.zeros(4, 8), 0.05, 0, ember.qint8))     # a write bumps the version
    b = ember.ops.quantized.linear(q, w, None, 0.1, 0).int_repr()
    assert b.abs().sum().item() == 0 and a.abs().sum().item() > 0


@pytest.mark.parametrize("device", OTHER_DEVICES)
def test_other_devices_equal_cpu(device):
    x = ember.tensor(RNG.normal(0, 1, (2, 3, 8, 8)).astype(np.float32))
    q = ember.quantize_per_tensor(x, 0.03, 128, ember.quint8)
    w = ember.quantize_per_channel(ember.randn(5, 3, 3, 3) * 0.2, ember.linspace(0.002, 0.004, 5, dtype=ember.float64),
                                   ember.zeros(5, dtype=ember.int64), 0, ember.qint8)
    b = ember.randn(5)
    lw = ember.quantize_per_tensor(ember.randn(7, 80) * 0.1, 0.003, 0, ember.qint8)
    Q = ember.ops.quantized

    def run(dev):
        qd, wd, bd, lwd = q.to(dev), w.to(dev), b.to(dev), lw.to(dev)
        c = Q.conv2d_relu(qd, wd, bd, (1, 1), (1, 1), (1, 1), 1, 0.05, 0)
        p = Q.max_pool2d(c, (2, 2), (2, 2), (0, 0), (1, 1), False)
        f = Q.flatten(p, 1)
        l = Q.linear(f, lwd, None, 0.2, 60)
        a = Q.add(l, l, 0.3, 60)
        return [t.int_repr().cpu().numpy() for t in (c, p, l, a)] + [Q.linear_dynamic(f.dequantize(), lwd, None).cpu().numpy()]
    for got, exp in zip(run(device), run("cpu")):
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=1e-5, atol=1)


@needs_torch
def test_core_cat_and_stack_on_quantized_vs_torch():
    x, y = RNG.normal(0, 1, (2, 3)), RNG.normal(0, 2, (2, 3))
    ea, ta = _pair(x, 0.1, 0, ember.qint8, torch.qint8)
    eb, tb = _pair(y, 0.2, 3, ember.qint8, torch.qint8)
    for dim in (0, 1):
        e, t = ember.cat([ea, eb], dim), torch.cat([ta, tb], dim)
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point()) == (0.1, 0)
        _close(e, t)
    s = ember.stack([ea, ea])
    np.testing.assert_array_equal(_ints(s), _ints(torch.stack([ta, ta])))
    with pytest.raises(RuntimeError, match="promoteTypes with quantized numbers"):
        ember.cat([ea, ember.randn(2, 3)])
