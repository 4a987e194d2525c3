"""ember.fft against torch.fft, side by side: values, dtypes, shapes, gradients, errors, out=."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

C2C = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"]
R2C = ["rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"]
C2R = ["irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn"]
NORMS = [None, "backward", "ortho", "forward"]


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return t.detach().numpy()


def _same_dtype(e, t):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)


def _check(e, t, rtol=1e-5, atol=1e-5):
    _same_dtype(e, t)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def _pair(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    return ember.tensor(a), torch.tensor(a)


def _size_kw(name, size):
    """n= for 1-D transforms, s= for 2-D / n-D."""
    return {} if size is None else ({"n": size} if name in ("fft", "ifft", "rfft", "ihfft", "irfft", "hfft")
                                    else {"s": size})


# ---------------------------------------------------------------- values, dtypes, shapes
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", C2C + R2C)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_real_input_matches_torch(name, norm, dtype):
    e, t = _pair((3, 4, 6), dtype if dtype is not np.int64 else np.float64)
    if dtype is np.int64:
        e, t = ember.tensor(_np(t).round().astype(np.int64) * 3), torch.tensor(_np(t).round().astype(np.int64) * 3)
    _check(getattr(ember.fft, name)(e, norm=norm), getattr(torch.fft, name)(t, norm=norm), 1e-4, 1e-4)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", C2C + C2R)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_input_matches_torch(name, norm, dtype):
    e, t = _pair((3, 4, 5), dtype)
    _check(getattr(ember.fft, name)(e, norm=norm), getattr(torch.fft, name)(t, norm=norm), 1e-4, 1e-4)


@pytest.mark.parametrize("name", C2C + R2C + C2R)
@pytest.mark.parametrize("size", [None, 3, 9])
def test_padding_and_trimming(name, size):
    e, t = _pair((4, 7), np.complex128 if name in C2R else np.float64, seed=1)
    sz = size if name in ("fft", "ifft", "rfft", "ihfft", "irfft", "hfft") else (None if size is None else (5, size))
    kw = _size_kw(name, sz)
    _check(getattr(ember.fft, name)(e, **kw), getattr(torch.fft, name)(t, **kw), 1e-9, 1e-9)


@pytest.mark.parametrize("name", ["fftn", "rfftn", "irfftn", "hfftn", "ihfftn", "ifftn"])
@pytest.mark.parametrize("kw", [dict(dim=(0, 2)), dict(dim=(-1, 0)), dict(s=(4, -1)), dict(s=(3, 4), dim=(2, 0)),
                                dict(dim=1), dict(s=(6,))])
def test_nd_dims_and_sizes(name, kw):
    e, t = _pair((3, 4, 5), np.complex128 if name in C2R else np.float64, seed=2)
    _check(getattr(ember.fft, name)(e, **kw), getattr(torch.fft, name)(t, **kw), 1e-9, 1e-9)


def test_noncontiguous_and_transposed_inputs():
    e, t = _pair((6, 8), seed=3)
    _check(ember.fft.fft(e.t()), torch.fft.fft(t.t()), 1e-9, 1e-9)
    _check(ember.fft.rfft2(e[::2, 1::2]), torch.fft.rfft2(t[::2, 1::2]), 1e-9, 1e-9)
    c_e, c_t = _pair((6, 8), np.complex128, seed=4)
    _check(ember.fft.irfft(c_e[:, ::2], dim=0), torch.fft.irfft(c_t[:, ::2], dim=0), 1e-9, 1e-9)


def test_bool_and_integer_inputs_use_the_default_float():
    for a in (np.array([True, False, True, True]), np.arange(6, dtype=np.int16)):
        _check(ember.fft.fft(ember.tensor(a)), torch.fft.fft(torch.tensor(a)))
        _check(ember.fft.irfft(ember.tensor(a)), torch.fft.irfft(torch.tensor(a)))
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        _check(ember.fft.rfft(ember.arange(5)), torch.fft.rfft(torch.arange(5)))
    finally:
        torch.set_default_dtype(torch.float32)


def test_round_trips():
    e, _ = _pair((4, 10), seed=5)
    np.testing.assert_allclose(_np(ember.fft.irfft(ember.fft.rfft(e), n=10)), _np(e), atol=1e-12)
    np.testing.assert_allclose(_np(ember.fft.hfft(ember.fft.ihfft(e), n=10)), _np(e), atol=1e-12)
    np.testing.assert_allclose(_np(ember.fft.irfftn(ember.fft.rfftn(e, norm="ortho"), s=(4, 10), norm="ortho")),
                               _np(e), atol=1e-12)


# ---------------------------------------------------------------- errors
def _raises_like(fn_e, fn_t):
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(type(te.value)) as ee:
        fn_e()
    return str(te.value), str(ee.value)


@pytest.mark.parametrize("case", [
    lambda m, x: m.fft.fft(x, n=0),
    lambda m, x: m.fft.fft(x, dim=2),
    lambda m, x: m.fft.fft(x, norm="bad"),
    lambda m, x: m.fft.fftn(x, s=(2, 2, 2)),
    lambda m, x: m.fft.fftn(x, s=(2, 2), dim=(0,)),
    lambda m, x: m.fft.fftn(x, dim=(0, 0)),
    lambda m, x: m.fft.fft2(x, s=(2, 2, 2)),
    lambda m, x: m.fft.rfft(x.to(m.complex64)),
    lambda m, x: m.fft.ihfftn(x.to(m.complex128)),
    lambda m, x: m.fft.irfft(x[:, :1]),
    lambda m, x: m.fft.fft(x[0, 0]),
    lambda m, x: m.fft.fft(x.to(m.float16)),
    lambda m, x: m.fft.rfft(x.to(m.bfloat16)),
    lambda m, x: m.fft.fft(x[:, :0]),
])
def test_errors_match_torch(case):
    e, t = _pair((3, 4), np.float32)
    msg_t, msg_e = _raises_like(lambda: case(ember, e), lambda: case(torch, t))
    assert msg_e.split(" (")[0] == msg_t.split(" (")[0] or msg_e in msg_t or msg_t in msg_e, (msg_e, msg_t)


# ---------------------------------------------------------------- out=
def test_out():
    e, t = _pair((3, 8), np.float32)
    oe, ot = ember.empty(0, dtype=ember.complex64), torch.empty(0, dtype=torch.complex64)
    r = ember.fft.rfft(e, out=oe)
    torch.fft.rfft(t, out=ot)
    assert r is oe
    _check(oe, ot)
    oe = ember.empty((3, 8))
    ember.fft.hfft(ember.fft.ihfft(e), n=8, out=oe)
    np.testing.assert_allclose(_np(oe), _np(e), atol=1e-5)
    with pytest.raises(RuntimeError):
        ember.fft.fft(e, out=ember.empty((3, 8)))          # a real out for a complex result
    with pytest.raises(RuntimeError):
        torch.fft.fft(t, out=torch.empty((3, 8)))


# ---------------------------------------------------------------- frequencies and shifts
@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_freqs(n, d):
    _check(ember.fft.fftfreq(n, d), torch.fft.fftfreq(n, d), 1e-7, 1e-7)
    _check(ember.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d), 1e-7, 1e-7)
    _check(ember.fft.fftfreq(n, d, dtype=ember.float64), torch.fft.fftfreq(n, d, dtype=torch.float64), 1e-15, 0)
    r = ember.fft.rfftfreq(n, d, requires_grad=True)
    assert r.requires_grad and r.is_leaf


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1), (1,)])
def test_shifts(dim):
    e, t = _pair((5, 6), seed=6)
    _check(ember.fft.fftshift(e, dim), torch.fft.fftshift(t, dim), 0, 0)
    _check(ember.fft.ifftshift(e, dim), torch.fft.ifftshift(t, dim), 0, 0)
    _check(ember.fft.ifftshift(ember.fft.fftshift(e, dim), dim), t, 0, 0)


# ---------------------------------------------------------------- gradients
GRAD_CASES = {
    "rfft-filter-irfft": lambda m, x, h: m.fft.irfft(m.fft.rfft(x) * h, n=x.shape[-1]).pow(2).sum(),
    "rfft-pad-irfft-trim": lambda m, x, h: m.fft.irfft(m.fft.rfft(x, n=10), n=7).pow(3).sum(),
    "fft-abs": lambda m, x, h: m.fft.fft(x).abs().sum(),
    "ifft-ortho-abs": lambda m, x, h: m.fft.ifft(x, norm="ortho").abs().pow(2).sum(),
    "fft2-abs": lambda m, x, h: m.fft.fft2(x, s=(4, 5)).abs().sum(),
    "fftn-forward-abs": lambda m, x, h: m.fft.fftn(x, norm="forward").abs().sum(),
    "rfftn-irfftn": lambda m, x, h: (m.fft.irfftn(m.fft.rfftn(x, norm="ortho"), s=x.shape, norm="ortho") * x).sum(),
    "ihfft-hfft": lambda m, x, h: m.fft.hfft(m.fft.ihfft(x), n=x.shape[-1]).pow(2).sum(),
    "ihfft2-abs": lambda m, x, h: m.fft.ihfft2(x).abs().sum(),
    "fft-to-irfft2": lambda m, x, h: m.fft.irfft2(m.fft.fft2(x)[..., :4]).pow(2).sum(),
    "hfft-of-fft-half": lambda m, x, h: m.fft.hfft(m.fft.fft(x)[..., :3], n=5).pow(2).sum(),
    "irfft-of-real": lambda m, x, h: m.fft.irfft(x, n=9).pow(2).sum(),
    "fftshift-rfft-abs": lambda m, x, h: m.fft.fftshift(m.fft.rfft(x), dim=-1).abs().sum(),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_gradients_match_torch(case):
    f = GRAD_CASES[case]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 6))
    h = rng.standard_normal(4)                               # a real filter on the 4 rfft frequencies
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    f(ember, xe, ember.tensor(h)).backward()
    f(torch, xt, torch.tensor(h)).backward()
    np.testing.assert_allclose(_np(xe.grad), _np(xt.grad), rtol=1e-7, atol=1e-9)


def test_gradient_float32_matches_torch():
    x = np.random.default_rng(8).standard_normal((2, 16)).astype(np.float32)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ember.fft.rfft(xe, norm="ortho").abs().sum().backward()
    torch.fft.rfft(xt, norm="ortho").abs().sum().backward()
    _check(xe.grad, xt.grad, 1e-4, 1e-5)


def test_out_with_grad_is_refused():
    x = ember.randn(8, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.fft.rfft(x, out=ember.empty(5, dtype=ember.complex64))


def test_primitives_pass_gradcheck_through_real_outputs():
    from ember.autograd import gradcheck
    x = ember.randn(3, 6, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda x: ember.fft.irfft(x, n=7, dim=0), (x,))
    assert gradcheck(lambda x: ember.fft.hfft2(x, s=(4, 5)), (x,))
    assert gradcheck(lambda x: ember.fft.rfft2(x, norm="forward").abs(), (x,))
    assert gradcheck(lambda x: ember.fft.ifftn(x, s=(5, 3)).abs(), (x,))


def test_complex_leaves_through_the_transforms_match_torch():
    """Complex leaves (issue 18): the gradient of a real loss through fft / ifft matches torch's .grad."""
    z = np.random.default_rng(9).standard_normal((2, 8)) + 1j * np.random.default_rng(10).standard_normal((2, 8))
    ze, zt = ember.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    ember.fft.ifft(ember.fft.fft(ze) * ze.conj()).abs().sum().backward()
    torch.fft.ifft(torch.fft.fft(zt) * zt.conj()).abs().sum().backward()
    np.testing.assert_allclose(_np(ze.grad), _np(zt.grad), rtol=1e-9, atol=1e-12)


def test_complex_factors_between_the_transforms_match_torch():
    """Between the transforms, a product with a complex tensor and exp of a complex tensor (formulas
    with the conj written out, as derivatives.yaml) give torch's gradients."""
    rng = np.random.default_rng(11)
    xn, hn = rng.standard_normal((2, 8)), rng.standard_normal(5) + 1j * rng.standard_normal(5)
    for f in (lambda m, x, h: m.fft.irfft(m.fft.rfft(x) * h, n=8).pow(2).sum(),
              lambda m, x, h: m.fft.irfft((m.fft.rfft(x) / 4).exp(), n=8).sum(),
              lambda m, x, h: m.fft.irfft(m.fft.rfft(x) * 2.5 + m.fft.rfft(x) / 3.0, n=8).sum()):
        x = ember.tensor(xn, requires_grad=True)
        xt = torch.tensor(xn, requires_grad=True)
        f(ember, x, ember.tensor(hn)).backward()
        f(torch, xt, torch.tensor(hn)).backward()
        np.testing.assert_allclose(_np(x.grad), _np(xt.grad), atol=1e-12)


PROGRAM = """
x = torch.linspace(0, 1, 64, dtype=torch.float64).reshape(2, 32).requires_grad_(True)
h = torch.exp(-torch.fft.rfftfreq(32, d=1 / 32) / 4)           # a real low-pass filter
y = torch.fft.irfft(torch.fft.rfft(x, norm="ortho") * h, n=32, norm="ortho")
spec = torch.stft(y[0], 16, window=torch.hann_window(16, dtype=torch.float64), return_complex=True)
loss = y.pow(2).sum() + spec.abs().sum() + torch.fft.fftshift(torch.fft.fft2(x)).abs().mean()
loss.backward()
result = (loss.item(), x.grad.sum().item(), tuple(spec.shape), str(spec.dtype).split(".")[-1])
"""


def test_program_runs_unchanged_under_both():
    results = []
    for lib in (torch, ember):
        ns = {"torch": lib}
        exec(PROGRAM, ns)
        results.append(ns["result"])
    (lt, gt, st, dt), (le, ge, se, de) = results
    assert st == se and dt == de
    np.testing.assert_allclose([le, ge], [lt, gt], rtol=1e-6)      # h is float32 (the default dtype)
