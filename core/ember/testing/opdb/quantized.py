"""Op database entries of the core's quantization ops: ``quantize_per_tensor``,
``quantize_per_channel``, ``dequantize`` (dtypes qint8 / quint8 / qint32, which ember-quantized
registers; without it these entries have no dtype to run, and their error inputs, which name the
quantized dtypes through ``plugin_dtype``, are reported as not applicable). The quantized ops of
``ember.ops.quantized`` ship their entries from the plugin (``ember_opinfos``), built with the
helpers here.

The numpy references reproduce PyTorch's arithmetic exactly (see ember_quantized._kernels):
results must match them bit for bit on devices with float64, and within one unit (one step of
the scale) elsewhere. Quantized results are compared through ``int_repr()`` and the qparams.
"""
from __future__ import annotations

import numpy as np

from .._opinfo import ErrorInput, OpInfo, SampleInput, make_tensor, plugin_dtype

__all__ = ["op_db", "QDTYPES", "np_quantize", "np_quantize_per_channel", "np_dequantize", "q_numpy",
           "assert_quantized", "sample_qtensors"]

QDTYPES = ("qint8", "quint8", "qint32")
_RANGE = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-2 ** 31, 2 ** 31 - 1)}
_STORAGE = {"qint8": np.int8, "quint8": np.uint8, "qint32": np.int32}


def np_quantize(x, scale, zero_point, dtype_name, fused=True):
    """PyTorch's per-tensor quantization in numpy: 8-bit dtypes round fma(x, 1/scale, zp) (one
    float32 rounding) half to even; qint32 rounds float32(x * inv) + zp; clamp; NaN -> qmax (8-bit)
    or qmin (qint32). ``fused=False``: the float32-only form (devices without float64)."""
    lo, hi = _RANGE[dtype_name]
    x = np.asarray(x, np.float32)
    inv = np.float32(1.0) / np.float32(scale)
    with np.errstate(all="ignore"):
        if dtype_name != "qint32" and fused:
            y = (x.astype(np.float64) * np.float64(inv) + zero_point).astype(np.float32)
        else:
            y = x * inv + np.float32(zero_point)
        y = np.atleast_1d(np.rint(y).astype(np.float64))
    nan = np.isnan(y)
    y = np.clip(np.nan_to_num(y, nan=0.0), lo, hi)
    y[nan] = hi if dtype_name != "qint32" else lo
    return y.astype(_STORAGE[dtype_name]).reshape(x.shape)


def np_quantize_per_channel(x, scales, zero_points, axis, dtype_name):
    """PyTorch's per-channel quantization: round(float32(x * float32(1 / float32(scale))) + zp)."""
    lo, hi = _RANGE[dtype_name]
    x = np.asarray(x, np.float32)
    shape = [1] * x.ndim
    shape[axis] = -1
    inv = (np.float32(1.0) / np.asarray(scales, np.float64).astype(np.float32)).reshape(shape)
    z = np.asarray(zero_points).astype(np.float32).reshape(shape)
    with np.errstate(all="ignore"):
        y = np.rint(x * inv + z).astype(np.float64)
    nan = np.isnan(y)
    y = np.clip(np.nan_to_num(y, nan=0.0), lo, hi)
    y[nan] = hi if dtype_name != "qint32" else lo
    return y.astype(_STORAGE[dtype_name])


def q_numpy(q):
    """(integers, scale array broadcasting against them, zero-point array) of a quantized tensor."""
    ints = q.int_repr().cpu().numpy()
    if q.qscheme().name == "per_tensor_affine":
        return ints, np.float64(q.q_scale()), np.int64(q.q_zero_point())
    shape = [1] * ints.ndim
    shape[q.q_per_channel_axis()] = -1
    return ints, q.q_per_channel_scales().numpy().reshape(shape), q.q_per_channel_zero_points().numpy().reshape(shape)


def np_dequantize(q):
    """PyTorch's dequantize of quantized ``q`` in numpy (float32)."""
    ints, s, z = q_numpy(q)
    if q.qscheme().name == "per_tensor_affine":
        if q.dtype.name == "qint32":
            d = (ints.astype(np.int32) - np.int32(z)).astype(np.float32)   # int32 wraps, as PyTorch
        else:
            d = ints.astype(np.float32) - np.float32(z)
        return d * np.float32(s)
    return ((ints.astype(np.int64) - z) * s).astype(np.float32)


def _has_f64(device):
    from ember_quantized._kernels import has_f64   # noqa: F401 - only when the plugin is installed
    return has_f64(device)


def assert_quantized(result, expected_ints, *, dtype_name, qparams=None, tol=0, what="result"):
    """``result`` is a quantized tensor of ``dtype_name`` whose integers equal ``expected_ints``
    (within ``tol`` units) and, when given, whose (scale, zero_point) are ``qparams``."""
    import ember
    assert isinstance(result, ember.Tensor) and result.is_quantized, f"{what} is not a quantized tensor"
    assert result.dtype.name == dtype_name, f"{what} has dtype {result.dtype}, expected {dtype_name}"
    got = result.int_repr().cpu().numpy().astype(np.int64)
    exp = np.asarray(expected_ints).astype(np.int64)
    assert got.shape == exp.shape, f"{what} has shape {got.shape}, expected {exp.shape}"
    if got.size:
        diff = np.abs(got - exp)
        worst = int(diff.max())
        if worst > tol:
            i = np.unravel_index(int(diff.argmax()), diff.shape)
            raise AssertionError(f"{what}: integer {got[i]} at index {tuple(int(v) for v in i)}, expected {exp[i]} "
                                 f"(allowed difference {tol}, {int((diff > tol).sum())} of {diff.size} differ)")
    if qparams is not None:
        assert (result.q_scale(), result.q_zero_point()) == qparams, \
            f"{what} has qparams {(result.q_scale(), result.q_zero_point())}, expected {qparams}"


def _qparams_for(dtype_name):
    return {"qint8": [(0.1, 0), (0.07, -5)], "quint8": [(0.1, 128), (0.3, 3)], "qint32": [(0.001, 0), (0.3, 7)]}[
        dtype_name]


def _float_inputs(device, seed):
    """Float32 inputs: 0-dim, empty, 1-D with exact ties, 2-D, non-contiguous, transposed."""
    import ember
    ties = ember.tensor([0.05, 0.15, 0.25, -0.05, -0.15, 0.35, 12.75, -30.0, 1e9, -1e9], device=device)
    yield "0-dim", make_tensor((), device=device, seed=seed)
    yield "empty", make_tensor((0,), device=device, seed=seed)
    yield "ties", ties
    yield "2-D", make_tensor((5, 6), device=device, seed=seed + 1, low=-20, high=20)
    yield "non-contiguous", make_tensor((4, 3), device=device, seed=seed + 2, noncontiguous=True)
    yield "transposed", make_tensor((6, 4), device=device, seed=seed + 3).t()


def _qpt_samples(op, device, dtype, requires_grad=False):
    for k, (scale, zp) in enumerate(_qparams_for(dtype.name)):
        for name, x in _float_inputs(device, 10 * k):
            yield SampleInput(x, (scale, zp, dtype), name=f"{name}, scale={scale}, zero_point={zp}")


def _check_fused(sample, result, cpu_result, fn):
    x = sample.input.detach().cpu().numpy()
    fused = _has_f64(sample.input.device)
    expected = fn(x, fused)
    assert_quantized(result, expected, dtype_name=sample.args[-1].name, tol=0 if fused else 1)
    if cpu_result is not result:
        assert_quantized(result, cpu_result.int_repr().numpy(), dtype_name=sample.args[-1].name,
                         tol=0 if fused else 1, what="result (against the cpu result)")


def _qpt_check(sample, result, cpu_result):
    scale, zp, dt = sample.args
    _check_fused(sample, result, cpu_result, lambda x, fused: np_quantize(x, scale, zp, dt.name, fused))
    assert (result.q_scale(), result.q_zero_point()) == (scale, zp)
    assert result.device == sample.input.device


def _qpt_errors(op, device):
    import ember
    qint8, quint8 = plugin_dtype("qint8"), plugin_dtype("quint8")     # the op's kernels need the plugin too
    x = make_tensor((3,), device=device)
    yield ErrorInput(SampleInput(x, (0.1, 200, qint8)), RuntimeError,
                     r"quantize_tensor_per_tensor_affine zero_point 200 is above upper bound\.")
    yield ErrorInput(SampleInput(x, (0.1, -1, quint8)), RuntimeError,
                     r"quantize_tensor_per_tensor_affine zero_point -1 is below lower bound\.")
    yield ErrorInput(SampleInput(x, (0.0, 0, qint8)), RuntimeError, r"scale must be a positive finite number, "
                                                                    r"got 0\.0")
    yield ErrorInput(SampleInput(x.to(ember.int32), (0.1, 0, qint8)), RuntimeError,
                     r"Quantize only works on Float Tensor, got Int")
    yield ErrorInput(SampleInput(x, (0.1, 0, ember.float32)), RuntimeError,
                     r"ScalarType Float is not supported in new_qtensor\.")


def _qpc_samples(op, device, dtype, requires_grad=False):
    import ember
    lo = 0 if dtype.name == "quint8" else -10
    for name, x in _float_inputs(device, 40):
        if x.dim() == 0 or x.numel() == 0:
            continue
        for axis in range(x.dim()):
            c = x.shape[axis]
            scales = ember.tensor([0.05 + 0.07 * i for i in range(c)], dtype=ember.float64)
            zps = ember.tensor([lo + 3 * i for i in range(c)])
            yield SampleInput(x, (scales, zps, axis, dtype), name=f"{name}, axis={axis}")


def _qpc_check(sample, result, cpu_result):
    scales, zps, axis, dt = sample.args
    x = sample.input.detach().cpu().numpy()
    assert_quantized(result, np_quantize_per_channel(x, scales.cpu().numpy(), zps.cpu().numpy(), axis, dt.name),
                     dtype_name=dt.name)
    assert result.q_per_channel_axis() == axis
    assert result.q_per_channel_scales().tolist() == scales.cpu().tolist()
    assert result.q_per_channel_zero_points().tolist() == zps.cpu().tolist()


def _qpc_errors(op, device):
    import ember
    qint8 = plugin_dtype("qint8")
    x = make_tensor((4, 3), device=device)
    s4, z4 = ember.tensor([0.1, 0.2, 0.3, 0.4]), ember.tensor([0, 0, 0, 0])
    yield ErrorInput(SampleInput(x, (ember.tensor([0.1, 0.2]), ember.tensor([0, 0]), 0, qint8)), RuntimeError,
                     r"length of scales must equal to channel, expected 4 got, 2")
    yield ErrorInput(SampleInput(x, (s4, ember.tensor([0, 0]), 0, qint8)), RuntimeError,
                     r"number of elements in scales and zero_points must match")
    yield ErrorInput(SampleInput(x, (s4, z4, 2, qint8)), RuntimeError,
                     r"Channel axis out of range in per channel affine quantization\. Got: 2Expected: \[0, 2\)")
    yield ErrorInput(SampleInput(x, (s4, ember.tensor([0, 0, 0, 300]), 0, qint8)), RuntimeError,
                     r"quantize_tensor_per_channel_affine zero_point 300 is above upper bound\.")
    yield ErrorInput(SampleInput(x, (ember.tensor([0.1, 0.2, -0.3, 0.4]), z4, 0, qint8)), RuntimeError,
                     r"scales must be positive finite numbers, got -0\.3")


def sample_qtensors(device, dtype, seed=0):
    """(name, quantized tensor) samples: 0-dim, empty, 2-D, non-contiguous, transposed, per-channel."""
    import ember
    yield "0-dim", make_tensor((), device=device, dtype=dtype, seed=seed)
    yield "empty", make_tensor((0, 3), device=device, dtype=dtype, seed=seed)
    yield "2-D", make_tensor((5, 4), device=device, dtype=dtype, seed=seed + 1)
    yield "non-contiguous", make_tensor((3, 4), device=device, dtype=dtype, seed=seed + 2, noncontiguous=True)
    yield "transposed", make_tensor((4, 5), device=device, dtype=dtype, seed=seed + 3).t()
    x = make_tensor((3, 5), device=device, seed=seed + 4)
    lo = 0 if dtype.name == "quint8" else -4
    yield "per-channel", ember.quantize_per_channel(x, ember.tensor([0.05, 0.1, 0.2], dtype=ember.float64),
                                                    ember.tensor([lo + 4, lo + 6, lo + 8]), 0, dtype)


def _deq_samples(op, device, dtype, requires_grad=False):
    for name, q in sample_qtensors(device, dtype, seed=70):
        yield SampleInput(q, name=name)


def _deq_check(sample, result, cpu_result):
    import ember
    assert result.dtype == ember.float32 and result.device == sample.input.device
    got = result.cpu().numpy()
    exp = np_dequantize(sample.input)
    assert got.shape == exp.shape
    if _has_f64(sample.input.device) or sample.input.qscheme().name == "per_tensor_affine":
        np.testing.assert_array_equal(got, exp)
    else:
        np.testing.assert_allclose(got, exp, rtol=1e-6, atol=0)


op_db = [
    OpInfo("quantize_per_tensor", dtypes=QDTYPES, sample_inputs=_qpt_samples, check=_qpt_check,
           error_inputs=_qpt_errors),
    OpInfo("quantize_per_channel", dtypes=QDTYPES, sample_inputs=_qpc_samples, check=_qpc_check,
           error_inputs=_qpc_errors),
    OpInfo("dequantize", dtypes=QDTYPES, sample_inputs=_deq_samples, check=_deq_check),
]
