"""Quantized tensors: the PyTorch API, views, copies across devices, printing, save/load, errors."""
import copy
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:   # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (compares with its messages/output)")


def _devices():
    out = ["cpu"]
    for d in ("opencl", "vdev"):
        try:
            if getattr(ember, d).is_available():
                out.append(d)
        except Exception:   # noqa: BLE001 - plugin not installed
            pass
    return out


DEVICES = _devices()


@pytest.fixture
def x():
    return ember.tensor(np.random.default_rng(0).normal(0, 2, (4, 3)).astype(np.float32))


def test_dtypes_and_qschemes_exist():
    assert ember.qint8.itemsize == 1 and ember.quint8.itemsize == 1 and ember.qint32.itemsize == 4
    assert repr(ember.qint8) == "ember.qint8"
    assert repr(ember.per_tensor_affine) == "ember.per_tensor_affine"
    assert not ember.qint8.is_floating_point and ember.qint8.is_signed and not ember.quint8.is_signed


def test_accessors_per_tensor(x):
    q = ember.quantize_per_tensor(x, 0.05, 7, ember.quint8)
    assert q.is_quantized and not x.is_quantized
    assert q.dtype == ember.quint8 and q.shape == (4, 3)
    assert q.q_scale() == 0.05 and q.q_zero_point() == 7
    assert q.qscheme() is ember.per_tensor_affine
    r = q.int_repr()
    assert r.dtype == ember.uint8 and not r.is_quantized
    d = q.dequantize()
    assert d.dtype == ember.float32
    np.testing.assert_allclose(d.numpy(), (r.numpy().astype(np.float32) - 7) * np.float32(0.05))
    assert ember.dequantize(q).tolist() == d.tolist()
    assert x.dequantize() is x            # a float tensor dequantizes to itself, as PyTorch
    with pytest.raises(RuntimeError, match="kPerChannelAffine"):
        q.q_per_channel_scales()
    with pytest.raises(RuntimeError, match="expected a quantized tensor"):
        x.q_scale()


def test_accessors_per_channel(x):
    q = ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3, 0.4]), ember.tensor([0, 1, 2, 3]), 0, ember.qint8)
    assert q.qscheme() is ember.per_channel_affine
    assert q.q_per_channel_axis() == 0
    assert q.q_per_channel_scales().dtype == ember.float64
    assert q.q_per_channel_zero_points().tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="kPerTensorAffine"):
        q.q_scale()


def test_views_keep_the_quantizer(x):
    q = ember.quantize_per_tensor(x, 0.1, 3, ember.qint8)
    for v in (q.t(), q[1:], q[:, 1], q.reshape(12), q.view(3, 4), q.unsqueeze(0), q.flatten(), q.narrow(1, 0, 2),
              q.permute(1, 0), q.expand(2, 4, 3)):
        assert v.is_quantized and v.q_scale() == 0.1 and v.q_zero_point() == 3
        assert v.untyped_storage() is q.untyped_storage()
    np.testing.assert_array_equal(q.t().int_repr().numpy(), q.int_repr().numpy().T)
    np.testing.assert_array_equal(q[1:, ::2].dequantize().numpy(), q.dequantize().numpy()[1:, ::2])
    raw = q.view(ember.int8)            # a dtype view is the raw integers, not quantized
    assert not raw.is_quantized and raw.tolist() == q.int_repr().tolist()
    with pytest.raises(RuntimeError, match="has dtype ember.qint8 but no quantizer"):
        ember.empty(3, dtype=ember.qint8).dequantize()


def test_per_channel_views(x):
    q = ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3, 0.4]), ember.tensor([0, 0, 0, 0]), 0, ember.qint8)
    v = q[:, 1:]                      # the channel dim survives: same quantizer
    assert v.q_per_channel_axis() == 0
    np.testing.assert_array_equal(v.dequantize().numpy(), q.dequantize().numpy()[:, 1:])
    u = q.unsqueeze(0)                # the channel dim moves to 1
    assert u.q_per_channel_axis() == 1
    np.testing.assert_array_equal(u.dequantize().numpy()[0], q.dequantize().numpy())
    with pytest.raises(RuntimeError, match="Setting strides is possible only on uniformly quantized tensor"):
        q[1:3].t()[0]


def test_clone_contiguous_detach_deepcopy_pickle(x):
    q = ember.quantize_per_tensor(x, 0.1, 3, ember.qint8)
    for c in (q.clone(), q.t().contiguous(), q.detach(), copy.deepcopy(q), pickle.loads(pickle.dumps(q))):
        assert c.is_quantized and c.q_scale() == 0.1 and c.q_zero_point() == 3
    c = q.t().contiguous()
    assert c.is_contiguous() and c.untyped_storage() is not q.untyped_storage()
    np.testing.assert_array_equal(c.int_repr().numpy(), q.int_repr().numpy().T)
    pc = ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3, 0.4]), ember.tensor([1, 0, 0, 0]), 0, ember.qint8)
    d = pickle.loads(pickle.dumps(pc))
    assert d.q_per_channel_zero_points().tolist() == [1, 0, 0, 0]
    np.testing.assert_array_equal(d.dequantize().numpy(), pc.dequantize().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_to_device_and_back(x, device):
    for q in (ember.quantize_per_tensor(x, 0.1, 3, ember.qint8),
              ember.quantize_per_tensor(x, 0.02, 100, ember.quint8),
              ember.quantize_per_tensor(x, 0.001, -4, ember.qint32),
              ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3, 0.4]), ember.tensor([0, 1, 0, 1]), 0,
                                         ember.qint8)):
        qd = q.to(device)
        assert qd.is_quantized and qd.device.type == device and qd.dtype == q.dtype
        np.testing.assert_array_equal(qd.dequantize().cpu().numpy(), q.dequantize().numpy())
        np.testing.assert_array_equal(qd.t().clone().to("cpu").int_repr().numpy(), q.int_repr().numpy().T)
        # quantizing on the device gives the same integers
        qq = ember.quantize_per_tensor(x.to(device), 0.1, 3, ember.qint8)
        np.testing.assert_array_equal(qq.int_repr().cpu().numpy(),
                                      ember.quantize_per_tensor(x, 0.1, 3, ember.qint8).int_repr().numpy())


@needs_torch
def test_repr_matches_torch(x):
    xt = torch.from_numpy(x.numpy())
    cases = [
        (ember.quantize_per_tensor(x, 0.1, 3, ember.qint8), torch.quantize_per_tensor(xt, 0.1, 3, torch.qint8)),
        (ember.quantize_per_tensor(x[0], 0.25, 10, ember.quint8), torch.quantize_per_tensor(xt[0], 0.25, 10,
                                                                                            torch.quint8)),
        (ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3, 0.4], dtype=ember.float64),
                                    ember.tensor([0, 0, 0, 1]), 0, ember.qint8),
         torch.quantize_per_channel(xt, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64),
                                    torch.tensor([0, 0, 0, 1]), 0, torch.qint8)),
        (ember.quantize_per_tensor(ember.tensor([]), 0.1, 0, ember.qint8),
         torch.quantize_per_tensor(torch.tensor([]), 0.1, 0, torch.qint8)),
    ]
    for e, t in cases:
        assert repr(e) == repr(t).replace("torch.", "ember.")


def test_save_load_roundtrip(x, tmp_path):
    q = ember.quantize_per_tensor(x, 0.1, 3, ember.quint8)
    pc = ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3, 0.4]), ember.tensor([0, 1, 0, 1]), 0, ember.qint8)
    path = tmp_path / "q.pt"
    ember.save({"q": q, "view": q[1:], "pc": pc}, path)
    d = ember.load(path)                 # weights_only by default: the rebuild function is allow-listed
    assert d["q"].q_scale() == 0.1 and d["q"].q_zero_point() == 3 and d["q"].dtype == ember.quint8
    np.testing.assert_array_equal(d["q"].int_repr().numpy(), q.int_repr().numpy())
    np.testing.assert_array_equal(d["view"].int_repr().numpy(), q[1:].int_repr().numpy())
    assert d["view"].untyped_storage() is d["q"].untyped_storage()      # storage sharing kept
    assert d["pc"].q_per_channel_scales().tolist() == pc.q_per_channel_scales().tolist()
    np.testing.assert_array_equal(d["pc"].dequantize().numpy(), pc.dequantize().numpy())


def test_load_rejects_malformed_quantizer():
    from ember._ops._quantized import _rebuild_qtensor
    st = ember.zeros(4, dtype=ember.int8).untyped_storage()
    with pytest.raises(pickle.UnpicklingError, match="malformed per-tensor"):
        _rebuild_qtensor(st, 0, (4,), (1,), "qint8", (-1.0, 0))
    with pytest.raises(pickle.UnpicklingError, match="out of bounds|need a storage"):
        _rebuild_qtensor(st, 0, (8,), (1,), "qint8", (0.1, 0))
    with pytest.raises(pickle.UnpicklingError, match="malformed quantizer parameters"):
        _rebuild_qtensor(st, 0, (4,), (1,), "qint8", (0.1,))
    with pytest.raises(pickle.UnpicklingError, match="malformed record"):
        _rebuild_qtensor(st, 0, (4,), (1,), "int8", (0.1, 0))


@needs_torch
def test_errors_match_torch(x):
    xt = torch.from_numpy(x.numpy())
    cases = [
        (lambda m, a: m.quantize_per_tensor(a, 0.1, 200, m.qint8), RuntimeError),
        (lambda m, a: m.quantize_per_tensor(a, 0.1, -1, m.quint8), RuntimeError),
        (lambda m, a: m.quantize_per_tensor(a.int(), 0.1, 0, m.qint8), RuntimeError),
        (lambda m, a: m.quantize_per_tensor(a.double(), 0.1, 0, m.qint8), RuntimeError),
        (lambda m, a: m.quantize_per_tensor(a, 0.1, 0, m.float32), RuntimeError),
        (lambda m, a: m.quantize_per_channel(a, m.tensor([.1, .2]), m.tensor([0, 0]), 0, m.qint8), RuntimeError),
        (lambda m, a: m.quantize_per_channel(a, m.tensor([.1, .2, .3, .4]), m.tensor([0, 0]), 0, m.qint8), RuntimeError),
        (lambda m, a: m.quantize_per_channel(a, m.tensor([.1, .2, .3, .4]), m.tensor([0, 0, 0, 300]), 0, m.qint8),
         RuntimeError),
        (lambda m, a: m.quantize_per_channel(a, m.tensor([.1, .2, .3, .4]), m.tensor([0, 0, 0, 0]), 2, m.qint8),
         RuntimeError),
        (lambda m, a: m.quantize_per_channel(a, m.tensor([[.1, .2, .3, .4]]), m.tensor([0, 0, 0, 0]), 0, m.qint8),
         RuntimeError),
        (lambda m, a: m.quantize_per_tensor(a, 0.1, 0, m.qint8) + a, RuntimeError),
        (lambda m, a: m.quantize_per_tensor(a, 0.1, 0, m.qint8) * 2.5, RuntimeError),
        (lambda m, a: m.promote_types(m.qint8, m.float32), RuntimeError),
    ]
    import warnings
    for fn, cls in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(cls) as te:
                fn(torch, xt)
        with pytest.raises(cls) as ee:
            fn(ember, x)
        assert str(ee.value) == str(te.value).split("\n")[0].replace("torch.", "ember."), fn


def test_nonpositive_scale_is_refused(x):
    # PyTorch 2.13 accepts scale <= 0 and produces garbage; ember refuses (documented departure)
    for s in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(RuntimeError, match=r"scale must be a positive finite number, got"):
            ember.quantize_per_tensor(x, s, 0, ember.qint8)
    with pytest.raises(RuntimeError, match=r"scales must be positive finite numbers, got -0.3"):
        ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, -0.3, 0.4]), ember.tensor([0, 0, 0, 0]), 0, ember.qint8)


def test_generic_ops_fail_clearly_never_garbage(x):
    q = ember.quantize_per_tensor(x, 0.1, 0, ember.qint8)
    with pytest.raises(NotImplementedError, match=r"Could not run 'add' with arguments from the \(cpu, strided, "
                                                  r"qint8\) key"):
        q + q
    with pytest.raises(NotImplementedError, match=r"'matmul'|'mm'|\(cpu, strided, qint8\)"):
        q @ q.t()
    with pytest.raises(RuntimeError, match="Copying from quantized Tensor to non-quantized Tensor is not allowed"):
        ember.empty(4, 3).copy_(q)
    with pytest.raises(RuntimeError, match="promoteTypes with quantized numbers"):
        ember.result_type(q, 1.5)


def test_copy_into_quantized_quantizes_and_takes_qparams(x):
    q = ember.quantize_per_tensor(x, 0.1, 0, ember.qint8)
    dst = ember.quantize_per_tensor(ember.zeros(4, 3), 0.5, 2, ember.qint8)
    dst.copy_(x)            # float source: quantized with dst's qparams, as PyTorch
    np.testing.assert_array_equal(dst.int_repr().numpy(),
                                  ember.quantize_per_tensor(x, 0.5, 2, ember.qint8).int_repr().numpy())
    dst.copy_(q)            # quantized source: its integers and its qparams
    assert dst.q_scale() == 0.1 and dst.q_zero_point() == 0
    np.testing.assert_array_equal(dst.int_repr().numpy(), q.int_repr().numpy())


def test_relu_and_max_pool_on_quantized_tensors(x):
    q = ember.quantize_per_tensor(x, 0.1, 5, ember.quint8)
    r = ember.relu(q)
    assert r.q_zero_point() == 5
    np.testing.assert_array_equal(r.int_repr().numpy(), np.maximum(q.int_repr().numpy(), 5))
    q4 = ember.quantize_per_tensor(ember.randn(1, 2, 4, 4), 0.1, 5, ember.quint8)
    p = ember.nn.functional.max_pool2d(q4, 2)
    ref = q4.int_repr().numpy().reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(p.int_repr().numpy(), ref)
    assert p.q_scale() == 0.1


def test_fake_quantize_straight_through_gradient():
    x = ember.tensor([-20.0, -1.04, 0.0, 0.26, 3.0, 20.0], requires_grad=True)
    y = ember.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)
    assert y.tolist() == pytest.approx([-12.8, -1.0, 0.0, 0.3, 3.0, 12.7], abs=1e-6)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]        # clamped elements get no gradient
    with pytest.raises(RuntimeError, match="`zero_point` must be between `quant_min` and `quant_max`."):
        ember.fake_quantize_per_tensor_affine(x, 0.1, 300, -128, 127)
    xc = ember.randn(3, 4, requires_grad=True)
    yc = ember.fake_quantize_per_channel_affine(xc, ember.tensor([0.1, 0.2, 0.3]), ember.tensor([0, 1, 2]), 0, -128, 127)
    yc.sum().backward()
    assert xc.grad.shape == (3, 4)


_MISSING = textwrap.dedent("""
    import ember
    try:
        ember.quantize_per_tensor(ember.ones(3), 0.1, 0, None)
    except NotImplementedError as e:
        print("ERR", e)
    try:
        ember.qint8
    except AttributeError as e:
        print("ATTR", e)
""")


def test_without_the_plugin_the_ops_name_the_package():
    import os
    env = dict(os.environ, EMBER_DISABLE_PLUGINS="quantized")
    r = subprocess.run([sys.executable, "-c", _MISSING], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    excluded = "the plugin 'quantized' is installed but excluded by EMBER_DISABLE_PLUGINS=quantized"
    assert "ERR quantize_per_tensor:" in r.stdout and "ember-quantized plugin" in r.stdout
    assert "ATTR module 'ember' has no attribute 'qint8'" in r.stdout and r.stdout.count(excluded) == 2


def test_composites_that_copy_keep_the_quantizer_or_fail(x):
    q = ember.quantize_per_tensor(x, 0.1, 2, ember.qint8)
    for r in (q.repeat(2, 1), ember.roll(q, 1, 0), ember.tile(q, (2,)), ember.stack([q, q]), ember.cat([q, q])):
        assert r.is_quantized and (r.q_scale(), r.q_zero_point()) == (0.1, 2)
    np.testing.assert_array_equal(q.repeat(2, 1).int_repr().numpy(), np.tile(q.int_repr().numpy(), (2, 1)))
    np.testing.assert_array_equal(ember.roll(q, 1, 0).int_repr().numpy(), np.roll(q.int_repr().numpy(), 1, 0))
    # ops with no quantized kernel say so (never compute on the raw integers)
    for fn in (lambda: ember.index_select(q, 0, ember.tensor([0])), lambda: q.sum(), lambda: q == q,
               lambda: ember.where(x > 0, q, q), lambda: q.clone().fill_(1)):
        with pytest.raises(NotImplementedError, match=r"\(cpu, strided, qint8\) key"):
            fn()


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])
def test_cross_device_copy_takes_qparams_or_quantizes(x, device):
    q = ember.quantize_per_tensor(x, 0.1, 2, ember.qint8)
    d = ember.quantize_per_tensor(ember.zeros(4, 3, device=device), 0.5, 0, ember.qint8)
    d.copy_(q)                           # quantized source on another device: integers and qparams
    assert d.device.type == device and (d.q_scale(), d.q_zero_point()) == (0.1, 2)
    np.testing.assert_array_equal(d.int_repr().cpu().numpy(), q.int_repr().numpy())
    e = ember.quantize_per_tensor(ember.zeros(4, 3, device=device), 0.5, 1, ember.qint8)
    e.copy_(x)                           # float source on another device: quantized with e's qparams
    np.testing.assert_array_equal(e.int_repr().cpu().numpy(),
                                  ember.quantize_per_tensor(x, 0.5, 1, ember.qint8).int_repr().numpy())
