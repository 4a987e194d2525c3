"""ember-cuda's logic without a GPU: its kernels, bfloat16 conversion, Philox generator and allocator
wiring, run on numpy through the host emulation (device type ``cuda_emu``, ember_cuda._emulation).

This checks ember-cuda's own code - the same ``kernels.make_kernels`` the cupy backend uses - not
cupy: where cupy behaves differently from numpy, only a GPU run (test_cuda_gpu.py) can tell.
"""
from __future__ import annotations

import gc

import ember
import numpy as np
import pytest
from ember import plugins

pytest.importorskip("ember_cuda", reason="ember-cuda is not installed (pip install -e plugins/cuda)")
from ember_cuda import _emulation as emu
from ember_cuda import _philox
from ember_cuda._backend import HostBackend

DEV = "cuda_emu"


@pytest.fixture(scope="module", autouse=True)
def cuda_emu():
    plugins.register(emu, name=DEV)
    yield emu.RUNTIME
    ember.cuda_emu.empty_cache()
    plugins.unregister(DEV)


# ---------------------------------------------------------------- the conformance suite on the kernels
#: every op ember-cuda has a kernel for, plus composites that lean on them
CONFORMANCE_OPS = ("copy_,fill_,add,sub,mul,true_divide,div,fmod,pow,atan2,eq,ne,lt,le,gt,ge,maximum,minimum,"
                   "bitwise_*,abs,floor,exp,expm1,log,log1p,sin,cos,sqrt,erf,erfc,erfinv,neg,tanh,sigmoid,relu,"
                   "where,sum,amax,amin,bmm,mm,addmm,linear,gather,scatter_add,uniform,softmax,log_softmax,"
                   "mean,normal,matmul,cross_entropy,conv2d,max_pool2d,index,cumsum,sort")


def test_conformance_on_the_kernels():
    from ember.testing.conformance._main import run_conformance
    r = run_conformance(DEV, ops=CONFORMANCE_OPS, device_checks=True)
    failures = [o for o in r.outcomes if o.status == "failed"] if hasattr(r, "outcomes") else []
    from ember.testing.conformance._report import render_text
    text = render_text(r)
    assert "result: PASSED" in text, text[-4000:] + "\n".join(str(f.message)[:500] for f in failures[:5])
    assert " 0 failing" in text
    # the natives really ran natively (not through composites)
    for op in ("mm", "softmax", "relu", "sigmoid", "uniform", "scatter_add"):
        assert ember._dispatch.ops[op].source((DEV, "strided", ember.float32)) == "native"


# ---------------------------------------------------------------- bfloat16 as uint16 bits
def test_bf16_bits_round_trip_every_pattern():
    B = HostBackend()
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    f = B.bf16_to_f32(bits)
    ref = bits.view(ember.bfloat16.numpy_dtype).astype(np.float32)
    np.testing.assert_array_equal(f.view(np.uint32), ref.view(np.uint32))    # exact, NaN payloads included
    back = B.f32_to_bf16(f)
    nan = np.isnan(f)
    np.testing.assert_array_equal(back[~nan], bits[~nan])
    assert (back[nan] == 0x7FC0).all()


def test_f32_to_bf16_rounds_to_nearest_even_like_ml_dtypes():
    B = HostBackend()
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(100_000).astype(np.float32) * 10.0 ** rng.integers(-40, 38, 100_000),
                        np.array([0.0, -0.0, np.inf, -np.inf, 3.3895314e38, -3.4e38, 1e-45, 1.00390625,
                                  1.01171875, 65504.0], np.float32)]).astype(np.float32)
    # ties: exactly halfway between two bfloat16 values
    ties = (np.arange(1, 2000, dtype=np.uint32) << 16 | 0x8000).view(np.float32)
    x = np.concatenate([x, ties, -ties])
    ref = x.astype(ember.bfloat16.numpy_dtype).view(np.uint16)
    np.testing.assert_array_equal(B.f32_to_bf16(x), ref)
    assert B.f32_to_bf16(np.float32(1.5)).shape == ()           # 0-dim stays 0-dim


def test_bfloat16_tensors_on_the_emulated_device():
    x = ember.tensor([[1.0, 2.5, -3.0], [1e30, 0.1, 7.0]], dtype=ember.bfloat16)
    y = x.to(DEV)
    assert y.dtype is ember.bfloat16
    np.testing.assert_array_equal((y * 3 + 1).cpu().numpy(), (x * 3 + 1).numpy())
    np.testing.assert_array_equal(y.t().contiguous().cpu().numpy(), x.t().contiguous().numpy())
    np.testing.assert_array_equal(y.sum(1).cpu().numpy(), x.sum(1).numpy())


# ---------------------------------------------------------------- Philox4x32-10
def test_philox_known_answer_vectors():
    # Random123's kat_vectors for philox4x32 with 10 rounds: (counter, key) -> output
    kat = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
           ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
           ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for ctr, key, want in kat:
        out = _philox.philox4x32_10(np, *(np.array([c], np.uint64) for c in ctr), *key)
        assert tuple(int(w[0]) for w in out) == want


def test_philox_counters_never_reused_and_state_replays():
    s = _philox.PhiloxState(1234)
    a = _philox.random_bits(np, s, 10)            # 3 blocks of 4 words
    assert s.offset == 3
    saved = s.get_state()
    b = _philox.random_bits(np, s, 8)
    s2 = _philox.PhiloxState(0)
    s2.set_state(saved)
    np.testing.assert_array_equal(_philox.random_bits(np, s2, 8), b)
    whole = _philox.random_bits(np, _philox.PhiloxState(1234), 20)
    np.testing.assert_array_equal(whole[:10], a)   # block boundaries: the first 10 words are the same
    np.testing.assert_array_equal(whole[12:20], b)
    with pytest.raises(RuntimeError, match="16 bytes"):
        s.set_state(b"123")


def test_uniform_statistics_and_bounds():
    for kind, bits in (("float16", 11), ("bfloat16", 8), ("float32", 24), ("float64", 53)):
        u = _philox.uniform01(np, _philox.PhiloxState(7), 200_000, kind)
        assert u.min() >= 0 and u.max() < 1
        assert np.all(u * 2.0 ** bits == np.floor(u * 2.0 ** bits))       # exactly representable samples
        assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.003
    g = ember.Generator(DEV).manual_seed(5)
    x = ember.empty(1000, device=DEV, dtype=ember.float16).uniform_(0, 1, generator=g)
    assert float(x.max()) < 1.0
    g.manual_seed(5)
    y = ember.empty(1000, device=DEV, dtype=ember.float16).uniform_(0, 1, generator=g)
    assert ember.equal(x, y)


# ---------------------------------------------------------------- the caching allocator, stream-aware
def _alloc():
    return ember._factory.allocator_for(ember.device(DEV, 0))


def test_blocks_are_reused_per_stream(cuda_emu):
    rt = cuda_emu
    rt.streams.setdefault(1, emu.EmuStream())
    a = ember.empty(1 << 20, device=DEV)           # 4 MiB: a large block of its own
    n0 = rt.raw_allocs
    del a
    gc.collect()
    rt.current[0] = 1                               # another stream is current
    b = ember.empty(1 << 20, device=DEV)
    assert rt.raw_allocs == n0 + 1                  # not reused across streams
    rt.current[0] = 0
    c = ember.empty(1 << 20, device=DEV)
    assert rt.raw_allocs == n0 + 1                  # reused on its own stream
    del b, c


def test_record_stream_delays_reuse_until_the_stream_passes(cuda_emu):
    rt = cuda_emu
    s1 = rt.streams.setdefault(1, emu.EmuStream())
    alloc = _alloc()
    a = ember.empty(1 << 20, device=DEV)
    alloc.record_stream(a.untyped_storage(), 1)     # what Tensor.record_stream(stream 1) does
    n0 = rt.raw_allocs
    del a
    gc.collect()
    assert alloc._pending                           # held back: stream 1 may still read it
    b = ember.empty(1 << 20, device=DEV)
    assert rt.raw_allocs == n0 + 1
    s1.synchronize()                                # stream 1's work up to the free is done
    c = ember.empty(1 << 20, device=DEV)
    assert rt.raw_allocs == n0 + 1 and not alloc._pending
    del b, c
    # empty_cache waits for pending blocks and returns them
    d = ember.empty(1 << 20, device=DEV)
    alloc.record_stream(d.untyped_storage(), 1)
    del d
    gc.collect()
    frees = rt.raw_frees
    ember.cuda_emu.empty_cache()
    assert not alloc._pending and rt.raw_frees > frees


def test_oom_frees_the_cache_retries_then_raises(cuda_emu):
    rt = cuda_emu
    ember.cuda_emu.empty_cache()
    rt.limit_bytes = rt.used + (16 << 20)
    try:
        keep = ember.empty(2 << 20, device=DEV)       # 8 MiB
        tmp = ember.empty(1 << 20, device=DEV)        # 4 MiB, then cached
        del tmp
        gc.collect()
        retries = _alloc().stats["num_alloc_retries"]
        big = ember.empty(2 << 20, device=DEV)        # fits only after the cache is emptied
        assert _alloc().stats["num_alloc_retries"] == retries + 1
        with pytest.raises(ember.OutOfMemoryError, match="emulated cudaMalloc"):
            ember.empty(4 << 20, device=DEV)
        assert keep.numel() and big.numel()
    finally:
        rt.limit_bytes = None


def test_training_makes_no_raw_allocations_after_warmup(cuda_emu):
    """The digits MLP step on the emulated device: after one warm-up iteration the caching allocator
    (with its small-block segments) serves every allocation; the GPU twin is in test_cuda_gpu.py."""
    rt = cuda_emu
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Flatten(), ember.nn.Linear(64, 128), ember.nn.ReLU(),
                                ember.nn.Linear(128, 10)).to(DEV)
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x = ember.rand(64, 1, 8, 8).to(DEV)
    y = ember.randint(0, 10, (64,)).to(DEV)

    def step():
        loss = ember.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    first = step()
    before = rt.raw_allocs
    losses = [step() for _ in range(5)]
    assert rt.raw_allocs == before, f"{rt.raw_allocs - before} raw allocations after warm-up"
    assert losses[-1] < first


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_low_precision_results_bit_identical_to_cpu(dtype):
    """float16 / bfloat16 compute in float32 and round once, as ember-cpu does: the emulated kernels
    must give the very same bits (the conformance tolerances for these dtypes would hide a rounding
    bug such as truncation)."""
    g = ember.Generator().manual_seed(0)
    a = (ember.randn(64, 33, generator=g) * 10).to(dtype)
    b = (ember.rand(64, 33, generator=g) + 0.5).to(dtype)
    da, db = a.to(DEV), b.to(DEV)
    for name, f in (("add", lambda x, y: x + y), ("mul", lambda x, y: x * y), ("div", lambda x, y: x / y),
                    ("exp", lambda x, y: ember.exp(y)), ("sqrt", lambda x, y: ember.sqrt(y)),
                    ("transposed add", lambda x, y: x.t() + y.t()), ("mm", lambda x, y: x @ y.t()),
                    ("float32 -> low", lambda x, y: (x.float() / 3).to(dtype))):
        want = f(a, b).numpy().view(np.uint16)
        got = f(da, db).cpu().numpy().view(np.uint16)
        np.testing.assert_array_equal(got, want, err_msg=name)


# ---------------------------------------------------------------- bugs the first GPU run found (H100, cupy 14.2)
def _devices():
    from ember_cuda._runtime import RUNTIME
    return [DEV] + (["cuda"] if RUNTIME.is_available() else [])


@pytest.mark.parametrize("device", _devices())
def test_frexp_is_exact_on_the_device(device):
    """frexp read its exponent from log2 and its mantissa from pow(2, -e): on CUDA pow is not exact and the
    mantissa was one ulp off. It now reads both off the bits; checked bit for bit against numpy.frexp."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4000) * np.exp2(rng.integers(-1070, 1020, 4000).astype(np.float64))
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2.5e-310, 1.0, 0.5, 2.0 ** 1023]])
    m, e = ember.frexp(ember.tensor(x, device=device))
    nm, ne = np.frexp(x)
    nm = np.where(np.isfinite(x), nm, x)          # PyTorch (and ember) keep inf / NaN as the mantissa
    ne = np.where(np.isfinite(x), ne, 0)
    assert np.array_equal(m.cpu().numpy(), nm, equal_nan=True)
    assert np.array_equal(e.cpu().numpy(), ne) and e.dtype == ember.int32


@pytest.mark.parametrize("device", _devices())
def test_nextafter_from_zero_gives_the_signed_smallest_subnormal(device):
    """nextafter(0, -1) negated the smallest subnormal on the device: CUDA flushes it, giving -0.0."""
    for dt, tiny in ((ember.float32, 2.0 ** -149), (ember.float64, 2.0 ** -1074)):
        x = ember.tensor([0.0, 0.0, -0.0, 1.0], dtype=dt, device=device)
        y = ember.tensor([1.0, -1.0, -1.0, 1.0], dtype=dt, device=device)
        assert ember.nextafter(x, y).cpu().tolist() == [tiny, -tiny, -tiny, 1.0]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("shapes", [((64, 32), (32, 16)), ((1, 64, 32), (1, 32, 16)), ((3, 8, 4), (3, 4, 5)),
                                    ((2, 3, 8, 4), (4, 5)), ((1, 1), (1, 1))])
def test_low_precision_products_match_cpu(device, shapes):
    """float16 / bfloat16 products go to cuBLAS in their own dtype (2-D and single-batch) or widened (batched);
    the first GPU run found bfloat16 batched products raising in cupy ('data type E not understood')."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    for dt in (ember.float16, ember.bfloat16):
        want = ember.matmul(ember.tensor(a).to(dt), ember.tensor(b).to(dt)).float().numpy()
        got = ember.matmul(ember.tensor(a, device=device).to(dt), ember.tensor(b, device=device).to(dt))
        assert got.dtype == dt and got.shape == want.shape
        np.testing.assert_allclose(got.float().cpu().numpy(), want, rtol=2e-2, atol=5e-2)
