"""ember.stft / istft, the window functions and ember.signal.windows against torch; the fft host path
on a device without fft kernels (vdev)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


# ---------------------------------------------------------------- windows
@pytest.mark.parametrize("name", ["hann", "hamming", "blackman", "bartlett", "kaiser"])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("length", [0, 1, 2, 7, 8])
def test_top_level_windows(name, periodic, length):
    e = getattr(ember, f"{name}_window")(length, periodic, dtype=ember.float64)
    t = getattr(torch, f"{name}_window")(length, periodic, dtype=torch.float64)
    assert e.dtype == ember.float64 and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), _np(t), atol=1e-12)


def test_window_arguments_and_errors():
    np.testing.assert_allclose(_np(ember.hamming_window(9, False, alpha=0.6, beta=0.4)),
                               _np(torch.hamming_window(9, False, alpha=0.6, beta=0.4)), atol=1e-6)
    np.testing.assert_allclose(_np(ember.kaiser_window(9, True, 5.0)), _np(torch.kaiser_window(9, True, 5.0)),
                               atol=1e-6)
    assert ember.hann_window(4).dtype == ember.float32
    assert ember.hann_window(4, dtype=ember.float16).dtype == ember.float16
    assert ember.hann_window(4, requires_grad=True).requires_grad
    for bad in (lambda m: m.hann_window(-1), lambda m: m.kaiser_window(4, dtype=m.int64)):
        with pytest.raises(RuntimeError) as te:
            bad(torch)
        with pytest.raises(RuntimeError) as ee:
            bad(ember)
        assert str(te.value).split(",")[0].split(":")[0] == str(ee.value).split(",")[0].split(":")[0]


SIGNAL_WINDOWS = {
    "bartlett": {}, "blackman": {}, "cosine": {}, "exponential": {"tau": 2.0}, "gaussian": {"std": 1.7},
    "general_cosine": {"a": [0.46, 0.23, 0.31]}, "general_hamming": {"alpha": 0.6}, "hamming": {}, "hann": {},
    "kaiser": {"beta": 3.0}, "nuttall": {},
}


@pytest.mark.parametrize("name", sorted(SIGNAL_WINDOWS))
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("M", [0, 1, 2, 9, 10])
def test_signal_windows(name, sym, M):
    import torch.signal.windows as tw
    kw = SIGNAL_WINDOWS[name]
    e = getattr(ember.signal.windows, name)(M, sym=sym, dtype=ember.float64, **kw)
    t = getattr(tw, name)(M, sym=sym, dtype=torch.float64, **kw)
    np.testing.assert_allclose(_np(e), _np(t), atol=1e-12)
    assert getattr(ember.signal.windows, name)(M, sym=sym, **kw).dtype == ember.float32


@pytest.mark.parametrize("case", [
    lambda w: w.hann(-1),
    lambda w: w.gaussian(4, std=0.0),
    lambda w: w.exponential(4, tau=-1.0),
    lambda w: w.exponential(4, center=1.0),
    lambda w: w.kaiser(4, beta=-1.0),
    lambda w: w.general_cosine(4, a=[]),
    lambda w: w.general_cosine(4, a=3),
    lambda w: w.bartlett(4, dtype="int64"),
])
def test_signal_window_errors(case):
    import torch.signal.windows as tw

    with pytest.raises(Exception) as te:
        case(_Adapt(tw, torch))
    with pytest.raises(type(te.value)) as ee:
        case(_Adapt(ember.signal.windows, ember))
    assert str(ee.value).split(",")[0] == str(te.value).split(",")[0]


class _Adapt:
    """Calls a windows module, turning dtype="int64" into the library's int64."""

    def __init__(self, mod, lib):
        self.mod, self.lib = mod, lib

    def __getattr__(self, name):
        fn = getattr(self.mod, name)

        def call(*a, **k):
            if isinstance(k.get("dtype"), str):
                k["dtype"] = getattr(self.lib, k["dtype"])
            return fn(*a, **k)
        return call


# ---------------------------------------------------------------- stft / istft
STFT_CASES = [
    dict(n_fft=16),
    dict(n_fft=16, hop_length=5, win_length=10, normalized=True),
    dict(n_fft=15, center=False),
    dict(n_fft=16, pad_mode="constant"),
    dict(n_fft=12, onesided=False),
]


@pytest.mark.parametrize("kw", STFT_CASES)
@pytest.mark.parametrize("window", [None, "hann"])
@pytest.mark.parametrize("batched", [False, True])
def test_stft_and_istft_match_torch(kw, window, batched):
    x = np.random.default_rng(0).standard_normal((2, 50) if batched else (50,))
    win = kw.get("win_length", kw["n_fft"])
    we = ember.hann_window(win, dtype=ember.float64) if window else None
    wt = torch.hann_window(win, dtype=torch.float64) if window else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se = ember.stft(ember.tensor(x), window=we, return_complex=True, **kw)
        st = torch.stft(torch.tensor(x), window=wt, return_complex=True, **kw)
    assert se.dtype == ember.complex128 and tuple(se.shape) == tuple(st.shape)
    np.testing.assert_allclose(_np(se), _np(st), atol=1e-10)
    if window and kw.get("center", True):
        ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
        for length in (None, 50, 44):
            ye = ember.istft(se, window=we, length=length, **ikw)
            yt = torch.istft(st, window=wt, length=length, **ikw)
            assert tuple(ye.shape) == tuple(yt.shape)
            np.testing.assert_allclose(_np(ye), _np(yt), atol=1e-10)


def test_stft_return_complex_rules():
    x = ember.randn(40)
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter be given for real inputs"):
        ember.stft(x, 8, window=ember.hann_window(8))
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        r = ember.stft(x, 8, window=ember.hann_window(8), return_complex=False)
    t = torch.stft(torch.tensor(x.numpy()), 8, window=torch.hann_window(8), return_complex=True)
    assert tuple(r.shape) == tuple(t.shape) + (2,)
    np.testing.assert_allclose(_np(r), _np(torch.view_as_real(t)), atol=1e-5)
    c = ember.stft(x.to(ember.complex64), 8, window=ember.hann_window(8))      # complex input: complex, two-sided
    assert c.dtype == ember.complex64 and c.shape[0] == 8


@pytest.mark.parametrize("case", [
    lambda m, x, w: m.stft(x, 8, hop_length=0, window=w, return_complex=True),
    lambda m, x, w: m.stft(x, 8, win_length=9, return_complex=True),
    lambda m, x, w: m.stft(x, 8, window=w[:5], return_complex=True),
    lambda m, x, w: m.stft(x.reshape(1, 1, 40), 8, window=w, return_complex=True),
    lambda m, x, w: m.istft(x.reshape(5, 8), 8, window=w),
    lambda m, x, w: m.istft(m.stft(x, 8, window=w, return_complex=True), 8, window=m.zeros(8)),
])
def test_stft_errors(case):
    x = np.random.default_rng(1).standard_normal(40).astype(np.float32)
    with pytest.raises(RuntimeError):
        case(torch, torch.tensor(x), torch.hann_window(8))
    with pytest.raises(RuntimeError):
        case(ember, ember.tensor(x), ember.hann_window(8))


def test_stft_gradient_matches_torch():
    x = np.random.default_rng(2).standard_normal((2, 40))
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ember.stft(xe, 16, window=ember.hann_window(16, dtype=ember.float64), return_complex=True).abs().sum().backward()
    torch.stft(xt, 16, window=torch.hann_window(16, dtype=torch.float64), return_complex=True).abs().sum().backward()
    np.testing.assert_allclose(_np(xe.grad), _np(xt.grad), atol=1e-9)


# ---------------------------------------------------------------- a device without fft kernels
def test_vdev_runs_through_the_declared_host_path(monkeypatch):
    pytest.importorskip("ember_vdev")
    from ember import profiler
    x = np.random.default_rng(3).standard_normal((3, 8)).astype(np.float32)
    xv = ember.tensor(x, device="vdev")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profiler.record_fallbacks() as rec:
            r = ember.fft.rfft(xv)
            back = ember.fft.irfft(r, n=8)
            c = ember.fft.fft2(xv)
    assert r.device.type == "vdev" and back.device.type == "vdev" and r.dtype == ember.complex64
    np.testing.assert_allclose(_np(r.to("cpu")), _np(torch.fft.rfft(torch.tensor(x))), atol=1e-5)
    np.testing.assert_allclose(_np(back.to("cpu")), x, atol=1e-5)
    np.testing.assert_allclose(_np(c.to("cpu")), _np(torch.fft.fft2(torch.tensor(x))), atol=1e-4)
    assert rec.counts == {"fft_r2c": 2, "fft_c2r": 1}
    shifted = ember.fft.fftshift(xv)                 # shifts and frequencies are native composites
    assert shifted.device.type == "vdev"
    assert ember.fft.fftfreq(4, device="vdev").device.type == "vdev"
    monkeypatch.setenv("EMBER_FALLBACK_WARN", "error")
    with pytest.raises(RuntimeError, match="forbids running it through its host path"):
        ember.fft.ifft(xv)


def test_vdev_gradients_through_the_host_path():
    pytest.importorskip("ember_vdev")
    x = np.random.default_rng(4).standard_normal((2, 8))
    xv = ember.tensor(x, device="vdev", requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.fft.irfft(ember.fft.rfft(xv) * 2.0, n=8).pow(2).sum().backward()
    torch.fft.irfft(torch.fft.rfft(xt) * 2.0, n=8).pow(2).sum().backward()
    assert xv.grad.device.type == "vdev"
    np.testing.assert_allclose(_np(xv.grad.to("cpu")), _np(xt.grad), atol=1e-9)
