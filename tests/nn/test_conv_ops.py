"""The conv2d op and its two backward ops: cpu kernels and composites against a direct numpy
reference, gradients (gradcheck / gradgradcheck) and PyTorch's errors."""
import numpy as np
import pytest

import ember
import ember._ops._conv as C
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

# (input shape, weight shape, stride, padding, dilation, groups)
CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 2), 1, 0, 1, 1),
    ((2, 4, 8, 8), (6, 2, 3, 3), 2, 1, 1, 2),
    ((1, 2, 9, 7), (2, 2, 2, 3), (2, 1), (1, 2), (2, 1), 1),
    ((2, 6, 5, 5), (6, 1, 3, 3), 1, 1, 1, 6),
    ((3, 1, 8, 8), (16, 1, 3, 3), 1, 1, 1, 1),
]


def _pair(v):
    return (v, v) if isinstance(v, int) else v


def ref_conv(x, w, b, stride, padding, dilation, groups):
    """Direct loops over output positions (numpy), the definition of cross-correlation."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    N, Cin, H, W = x.shape
    O, Cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((N, O, oh, ow))
    Og = O // groups
    for o in range(O):
        g = o // Og
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * Cg:(g + 1) * Cg, i * sh:i * sh + dh * (kh - 1) + 1:dh, j * sw:j * sw + dw * (kw - 1) + 1:dw]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3)) + (b[o] if b is not None else 0)
    return out


def _ref_grads(x, w, go, args):
    """Input and weight gradients of sum(conv * go) by finite differences of the linear map (exact)."""
    gi = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = 1
        gi[idx] = (ref_conv(e, w, None, *args) * go).sum()
    gw = np.zeros_like(w)
    for idx in np.ndindex(w.shape):
        e = np.zeros_like(w)
        e[idx] = 1
        gw[idx] = (ref_conv(x, e, None, *args) * go).sum()
    return gi, gw


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CASES)
def test_forward_kernel_and_composite_match_reference(xs, ws, stride, padding, dilation, groups):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    expected = ref_conv(x, w, b, stride, padding, dilation, groups)
    ex, ew, eb = ember.tensor(x), ember.tensor(w), ember.tensor(b)
    got = ember.conv2d(ex, ew, eb, stride, padding, dilation, groups)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)
    out = ember.empty(expected.shape, dtype=ember.float64)
    C._conv2d_composite(ex, ew, eb, stride, padding, dilation, groups, out=out)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-10)
    f32 = ember.conv2d(ex.float(), ew.float(), eb.float(), stride, padding, dilation, groups)
    assert f32.dtype == ember.float32
    np.testing.assert_allclose(f32.numpy(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CASES[:4])
def test_backward_ops_kernel_and_composite(xs, ws, stride, padding, dilation, groups):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    args = (stride, padding, dilation, groups)
    go = rng.standard_normal(ref_conv(x, w, None, *args).shape)
    gi, gw = _ref_grads(x, w, go, args)
    eg, ex, ew = ember.tensor(go), ember.tensor(x), ember.tensor(w)
    np.testing.assert_allclose(C.conv2d_backward_input(eg, ew, list(xs), *args).numpy(), gi, atol=1e-10)
    np.testing.assert_allclose(C.conv2d_backward_weight(eg, ex, list(ws), *args).numpy(), gw, atol=1e-10)
    o1, o2 = ember.empty(xs, dtype=ember.float64), ember.empty(ws, dtype=ember.float64)
    C._backward_input_composite(eg, ew, list(xs), *args, out=o1)
    C._backward_weight_composite(eg, ex, list(ws), *args, out=o2)
    np.testing.assert_allclose(o1.numpy(), gi, atol=1e-10)
    np.testing.assert_allclose(o2.numpy(), gw, atol=1e-10)


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CASES[:4])
def test_gradcheck_and_gradgradcheck(xs, ws, stride, padding, dilation, groups):
    rng = np.random.default_rng(2)
    ts = [ember.tensor(rng.standard_normal(s), requires_grad=True) for s in (xs, ws, (ws[0],))]

    def f(x, w, b):
        return F.conv2d(x, w, b, stride, padding, dilation, groups)
    assert gradcheck(f, ts)
    assert gradgradcheck(f, ts)
    assert f(*ts).grad_fn.name() == "ConvolutionBackward0"


def test_errors_in_pytorchs_words():
    x, w = ember.ones(1, 1, 8, 8), ember.ones(16, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[16, 3, 3, 3\], expected input\[1, 1, 8, 8\] "
                                           r"to have 3 channels, but got 1 channels instead"):
        ember.conv2d(x, w)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        ember.conv2d(ember.ones(1, 1, 2, 2), ember.ones(1, 1, 3, 3))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 1 elements"):
        ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), ember.ones(2))
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), stride=0)
    # as PyTorch's cpu kernel: every dtype but bool (int64 and complex included; see test_torch_parity_fixes)
    with pytest.raises(NotImplementedError, match="\"slow_conv2d_cpu\" not implemented for 'Bool'"):
        ember.conv2d(ember.ones(1, 1, 4, 4, dtype=ember.bool), ember.ones(1, 1, 3, 3, dtype=ember.bool))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3, dtype=ember.float64))


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for xs, ws, s, p, d, g in CASES:
        x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
        ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
        r, tr = F.conv2d(ex, ew, eb, s, p, d, g), torch.nn.functional.conv2d(tx, tw, tb, s, p, d, g)
        np.testing.assert_allclose(r.detach().numpy(), tr.detach().numpy(), atol=1e-10)
        go = rng.standard_normal(tuple(r.shape))
        r.backward(ember.tensor(go))
        tr.backward(torch.tensor(go))
        for e, t in ((ex, tx), (ew, tw), (eb, tb)):
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_backward_weight_into_non_contiguous_out(groups):
    from ember._ops._conv import conv2d_backward_weight
    g, x = ember.randn(2, 4, 5, 5), ember.randn(2, 6, 7, 7)
    ws = [4, 6 // groups, 3, 3]
    ref = conv2d_backward_weight(g, x, ws, [1, 1], [0, 0], [1, 1], groups)
    out = ember.empty(3, 3, 6 // groups, 4).permute(3, 2, 0, 1)       # weight-shaped, not contiguous
    conv2d_backward_weight(g, x, ws, [1, 1], [0, 0], [1, 1], groups, out=out)
    assert not out.is_contiguous() and ember.allclose(out, ref)
