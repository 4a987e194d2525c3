"""Rounding and clamping of quantize_per_tensor / quantize_per_channel / dequantize.

A table of hand-verified cases always runs; when PyTorch is installed, int_repr() and
dequantize() are compared bit for bit with torch's on many random values, exact .5 ties,
values next to the ties, out-of-range values, infinities and NaN.
"""
import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:   # pragma: no cover - torch is in the dev environment
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (bit-exact comparison with it)")

# (x, scale, zero_point, dtype name, expected integer) - worked out by hand:
# q = clamp(round_half_even(x / scale + zero_point), qmin, qmax)
HAND = [
    (0.05, 0.1, 0, "qint8", 0),       # 0.5 -> 0 (half to even)
    (0.15, 0.1, 0, "qint8", 2),       # 1.5 -> 2
    (0.25, 0.1, 0, "qint8", 2),       # 2.5 -> 2
    (-0.05, 0.1, 0, "qint8", 0),      # -0.5 -> -0
    (-0.15, 0.1, 0, "qint8", -2),     # -1.5 -> -2
    (0.75, 0.1, 0, "qint8", 8),       # 7.5 -> 8
    (0.05, 0.1, 5, "qint8", 6),       # 0.5 + 5 = 5.5 -> 6 (the zero point is added before rounding)
    (-0.15, 0.1, 5, "qint8", 4),      # -1.5 + 5 = 3.5 -> 4
    (100.0, 0.1, 0, "qint8", 127),    # clamped above
    (-100.0, 0.1, 0, "qint8", -128),  # clamped below
    (-1.0, 0.5, 10, "quint8", 8),
    (-10.0, 0.5, 10, "quint8", 0),    # clamped at 0
    (200.0, 1.0, 100, "quint8", 255),
    (1.0, 1 / 3, 0, "qint8", 3),
    (2.5, 1.0, 0, "qint32", 2),
    (3.5, 1.0, -1, "qint32", 2),      # 3.5 - 1 = 2.5 -> 2
    (float("inf"), 0.1, 0, "qint8", 127),
    (float("-inf"), 0.1, 0, "quint8", 0),
    (float("nan"), 0.1, 0, "qint8", 127),   # PyTorch maps NaN to qmax for 8 bits
    (float("nan"), 0.1, 3, "quint8", 255),
    (float("nan"), 0.1, 0, "qint32", -2 ** 31),
]


@pytest.mark.parametrize("x,scale,zp,dt,expected", HAND)
def test_hand_verified_per_tensor(x, scale, zp, dt, expected):
    q = ember.quantize_per_tensor(ember.tensor([x]), scale, zp, getattr(ember, dt))
    assert q.int_repr().tolist() == [expected]
    assert q.q_scale() == scale and q.q_zero_point() == zp


def test_hand_verified_per_channel():
    x = ember.tensor([[0.05, 0.15, 0.25], [0.5, 1.5, -2.5]])
    q = ember.quantize_per_channel(x, ember.tensor([0.1, 1.0]), ember.tensor([0, 1]), 0, ember.qint8)
    assert q.int_repr().tolist() == [[0, 2, 2], [2, 2, -2]]    # 0.5+1 -> 2, 1.5+1 -> 2, -2.5+1 -> -2
    assert q.q_per_channel_axis() == 0
    assert q.q_per_channel_scales().dtype == ember.float64
    assert q.q_per_channel_zero_points().tolist() == [0, 1]
    assert q.dequantize().reshape(-1).tolist() == pytest.approx([0.0, 0.2, 0.2, 1.0, 1.0, -3.0])


def test_dequantize_hand():
    q = ember.quantize_per_tensor(ember.tensor([-1.0, 0.0, 0.3]), 0.1, 10, ember.quint8)
    assert q.int_repr().tolist() == [0, 10, 13]
    assert q.dequantize().tolist() == pytest.approx([-1.0, 0.0, 0.3], abs=1e-6)
    assert q.dequantize().dtype == ember.float32


def _values(rng, scale, n=3000):
    k = rng.integers(-400, 400, n)
    ties = (k + 0.5) * scale
    return np.concatenate([rng.normal(0, 4, n), ties, np.nextafter(ties.astype(np.float32), np.float32(np.inf)),
                           np.nextafter(ties.astype(np.float32), np.float32(-np.inf)), rng.uniform(-300, 300, n) * scale,
                           [0.0, -0.0, np.inf, -np.inf, np.nan, 3e9, -3e9]]).astype(np.float32)


SCALES = [0.1, 0.3, 1 / 3, 0.07, 0.0123, 2.5, 0.5, 1.7e-3]


@needs_torch
@pytest.mark.parametrize("dt", ["qint8", "quint8", "qint32"])
@pytest.mark.parametrize("scale", SCALES)
def test_per_tensor_bit_exact_vs_torch(dt, scale):
    rng = np.random.default_rng(int(scale * 1e4))
    for zp in ([0, 7, -19] if dt != "quint8" else [0, 7, 128, 255]):
        x = _values(rng, scale)
        for n in (len(x), 7):        # a long vector (vectorised path) and a short one (scalar path)
            xs = x[:n]
            ref = torch.quantize_per_tensor(torch.from_numpy(xs), scale, zp, getattr(torch, dt))
            got = ember.quantize_per_tensor(ember.tensor(xs), scale, zp, getattr(ember, dt))
            np.testing.assert_array_equal(got.int_repr().numpy(), ref.int_repr().numpy())
            np.testing.assert_array_equal(got.dequantize().numpy(), ref.dequantize().numpy())


@needs_torch
@pytest.mark.parametrize("dt", ["qint8", "quint8", "qint32"])
@pytest.mark.parametrize("axis", [0, 1])
def test_per_channel_bit_exact_vs_torch(dt, axis):
    rng = np.random.default_rng(3 + axis)
    x = _values(rng, 0.1, 600)
    x = x[: (len(x) // 8) * 8].reshape(8, -1) if axis == 0 else x[: (len(x) // 8) * 8].reshape(-1, 8)
    c = x.shape[axis]
    scales = rng.choice(SCALES, c).astype(np.float64)
    zps = rng.integers(0, 200, c) if dt == "quint8" else rng.integers(-20, 20, c)
    ref = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales), torch.from_numpy(zps), axis,
                                     getattr(torch, dt))
    got = ember.quantize_per_channel(ember.tensor(x), ember.tensor(scales), ember.tensor(zps), axis,
                                     getattr(ember, dt))
    np.testing.assert_array_equal(got.int_repr().numpy(), ref.int_repr().numpy())
    np.testing.assert_array_equal(got.dequantize().numpy(), ref.dequantize().numpy())
    assert got.q_per_channel_scales().tolist() == ref.q_per_channel_scales().tolist()
    assert got.q_per_channel_zero_points().tolist() == ref.q_per_channel_zero_points().tolist()


@needs_torch
def test_fake_quantize_matches_torch():
    rng = np.random.default_rng(11)
    x = _values(rng, 0.1, 500)
    x = x[np.isfinite(x)]
    for scale, zp, lo, hi in ((0.1, 0, -128, 127), (0.3, 10, 0, 255), (1 / 3, -3, -64, 63)):
        ref = torch.fake_quantize_per_tensor_affine(torch.from_numpy(x), scale, zp, lo, hi).numpy()
        got = ember.fake_quantize_per_tensor_affine(ember.tensor(x), scale, zp, lo, hi).numpy()
        # PyTorch's fake-quant kernel computes x * inv_scale in float; ties may differ by one step
        step = np.abs(got - ref)
        assert (step <= np.float32(scale) * 1.0001).all()
        assert (step > 0).mean() < 0.01
