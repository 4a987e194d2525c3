"""The reference vendor plugin (examples/vendor_plugin, device "vdev"): runtime, primitive kernels,
custom op. Installs nothing: when ember-vdev is not installed, the plugin is registered by hand."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import scipy.special as sp

import ember
from ember import _dispatch

PLUGIN_DIR = pathlib.Path(__file__).resolve().parents[2] / "examples" / "vendor_plugin"

PRIMITIVES = {"copy_", "fill_", "add", "mul", "true_divide", "div_trunc", "fmod", "pow", "atan2", "abs", "eq", "lt",
              "where", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
              "floor", "exp", "expm1", "log", "log1p", "sin", "cos", "sqrt", "erf", "erfc", "erfinv", "sum", "amax",
              "bmm", "gather", "scatter_add", "uniform"}


@pytest.fixture(scope="module", autouse=True)
def vdev():
    """The vdev runtime (the installed plugin, or the example registered by hand for this module)."""
    ember.plugins.ensure_loaded()
    registered = False
    if "vdev" not in ember._registry.device_types:
        sys.path.insert(0, str(PLUGIN_DIR))
        import ember_vdev
        ember.plugins.register(ember_vdev, name="vdev")
        registered = True
    from ember_vdev.runtime import RUNTIME
    yield RUNTIME
    if registered:
        ember.plugins.unregister("vdev")
        sys.path.remove(str(PLUGIN_DIR))


def on_vdev(a, dtype=None, device="vdev:0"):
    return ember.tensor(a, dtype=dtype).to(device)


def host(t):
    return t.cpu().numpy()


# ---------------------------------------------------------------- registration, device module
def test_plugin_registers_device_type_and_device_module():
    info = next(p for p in ember.plugins.list() if p.name == "vdev")
    assert info.status == "loaded" and info.provides["device_types"] == ["vdev"]
    assert ember.vdev.is_available() and ember.vdev.device_count() == 2
    assert ember.vdev.current_device() == 0
    assert "virtual device 1" in ember.vdev.get_device_name(1)
    ember.vdev.synchronize()                          # synchronous device: returns at once
    with ember.vdev.device(1):
        assert ember.vdev.current_device() == 1 and ember.empty(2).device == ember.device("vdev", 1)
    assert ember.vdev.current_device() == 0
    with pytest.raises(RuntimeError, match="Invalid device ordinal vdev:5"):
        ember.vdev.set_device(5)


def test_only_primitives_have_vdev_kernels_and_no_fallback_by_default(vdev):
    native = {name for name, op in _dispatch.ops.items() if any(k[0] == "vdev" for k in op.kernels)}
    assert native == PRIMITIVES | {"vdev_fused_scale_shift"}
    assert ember._registry.device_type("vdev").fallback is None
    key = ("vdev", "strided", ember.float32)
    assert _dispatch.ops["add"].source(key) == "native"
    assert _dispatch.ops["sub"].source(key) in ("composite", "missing")   # never a vdev kernel


# ---------------------------------------------------------------- memory
def test_tensors_live_in_the_arena_under_the_caching_allocator(vdev):
    ember.vdev.empty_cache()
    arena = vdev.arena(0)
    before_alloc, before_used = ember.vdev.memory_allocated(), arena.used
    t = ember.empty(1000, device="vdev")              # 4000 bytes -> one 4096-byte block
    assert ember.vdev.memory_allocated() == before_alloc + 4096
    assert arena.used == before_used + 4096
    base = arena.buf.ctypes.data
    assert base <= t.data_ptr() < base + arena.size
    t.fill_(3.0)
    block = t.untyped_storage().handle
    assert np.frombuffer(arena.buf, np.float32, 1000, block.offset).tolist() == [3.0] * 1000
    del t
    assert ember.vdev.memory_allocated() == before_alloc and arena.used == before_used + 4096   # cached
    ember.vdev.empty_cache()
    assert arena.used == before_used                  # back to the arena's free list
    assert ember.vdev.memory_reserved() == ember.vdev.memory_allocated() == before_alloc


def test_arena_first_fit_reuses_and_coalesces_holes():
    from ember_vdev.runtime import Arena
    a = Arena(0, 1024)
    x, y, z = a.allocate(100), a.allocate(64), a.allocate(200)      # 64-byte aligned blocks
    assert (x.offset, y.offset, z.offset) == (0, 128, 192) and a.used == 128 + 64 + 256
    a.free(y)
    w = a.allocate(10)
    assert w.offset == 128                            # first fit: the hole y left
    for b in (x, z, w):
        a.free(b)
    assert a.free_list == [(0, 1024)] and a.used == 0                # neighbours merged back into one hole
    with pytest.raises(MemoryError, match="arena exhausted: 2048 bytes requested"):
        a.allocate(2048)


def test_out_of_memory_raises_and_the_device_still_works(vdev):
    ember.vdev.empty_cache()
    keep = ember.ones(10, device="vdev")
    ooms = ember.vdev.memory_stats()["num_ooms"]
    with pytest.raises(ember.OutOfMemoryError, match=r"VDEV:0: tried to allocate 512\.00 MiB.*arena exhausted"):
        ember.empty(128 << 20, device="vdev")         # 512 MiB > the 256 MiB arena
    assert ember.vdev.memory_stats()["num_ooms"] == ooms + 1
    big = ember.empty(32 << 20, device="vdev")        # 128 MiB still fits
    assert (keep + 1).cpu().tolist() == [2.0] * 10
    del big


# ---------------------------------------------------------------- host transfers
ALL_DTYPES = [d for d in ember.library.ALL_DENSE]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_host_round_trip_every_dtype(vdev, dtype):
    src = np.array([[0, 1, -2], [3, 7, 100]]) % (2 if dtype is ember.bool else 128)
    c = ember.tensor(src, dtype=dtype)
    vdev.transfers.update(dict.fromkeys(vdev.transfers, 0))
    d = c.to("vdev")
    assert d.device == ember.device("vdev", 0) and d.dtype is dtype
    back = d.t().cpu()                                # a strided (transposed) device tensor to the host
    assert back.tolist() == c.t().tolist()
    stats = ember.vdev.transfer_stats()
    assert stats["host_to_device"] == 1 and stats["device_to_host"] == 1
    assert stats["host_to_device_bytes"] == stats["device_to_host_bytes"] == 6 * dtype.itemsize
    with pytest.raises(TypeError, match="can't convert vdev:0 device type tensor to numpy"):
        d.numpy()


def test_cross_device_copy_with_cast(vdev):
    a = on_vdev([[1.5, -2.0], [3.25, 4.0]])
    b = a.to("vdev:1", ember.float64)
    assert b.device == ember.device("vdev", 1) and b.dtype is ember.float64
    assert b.untyped_storage().handle.index == 1
    assert host(b).tolist() == [[1.5, -2.0], [3.25, 4.0]]
    dst = ember.zeros(2, 2, dtype=ember.int32, device="vdev:1")
    dst.copy_(a.t())                                  # strided source, cast, across devices
    assert host(dst).tolist() == [[1, 3], [-2, 4]]
    same = ember.zeros(2, 2, dtype=ember.int8, device="vdev:0").copy_(a)   # within the device: the copy_ kernel
    assert host(same).tolist() == [[1, -2], [3, 4]]


# ---------------------------------------------------------------- primitive kernels against numpy
R = np.random.default_rng(0)
XF = R.uniform(-3, 3, (3, 4)).astype(np.float32)
YF = R.uniform(0.5, 3, (4, 3)).astype(np.float32).T        # used transposed: a strided operand
XI = R.integers(-20, 20, (3, 4)).astype(np.int64)
YI = R.integers(1, 6, (4, 3)).astype(np.int64).T


def _c_div(a, b):
    return np.trunc(a / b).astype(a.dtype)


UNARY = {"abs": np.abs, "floor": np.floor, "exp": np.exp, "expm1": np.expm1, "sin": np.sin, "cos": np.cos,
         "erf": sp.erf, "erfc": sp.erfc}
POSITIVE = {"log": np.log, "log1p": np.log1p, "sqrt": np.sqrt}
BINARY_F = {"add": np.add, "mul": np.multiply, "true_divide": np.true_divide, "div_trunc": lambda a, b: np.trunc(a / b),
            "fmod": np.fmod, "atan2": np.arctan2, "eq": np.equal, "lt": np.less}
BINARY_I = {"add": np.add, "mul": np.multiply, "div_trunc": _c_div, "fmod": np.fmod, "pow": np.power,
            "eq": np.equal, "lt": np.less, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
            "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
            "bitwise_right_shift": np.right_shift}


def call(name, *args, **kwargs):
    """The user-facing call of a primitive (div_trunc is div(rounding_mode="trunc"))."""
    if name == "div_trunc":
        return ember.div(*args, rounding_mode="trunc", **kwargs)
    return getattr(ember, name)(*args, **kwargs)


def _check(got, want, exact=False):
    got = host(got)
    assert got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(POSITIVE) + ["erfinv"])
def test_unary_primitives(name, strided):
    x = XF if name in UNARY else (np.abs(XF) + 0.1 if name in POSITIVE else XF / 3.5)
    t = on_vdev(x.T.copy()).t() if strided else on_vdev(x)
    assert t.is_contiguous() is not strided
    ref = {**UNARY, **POSITIVE, "erfinv": sp.erfinv}[name]
    _check(call(name, t), ref(x).astype(np.float32))


@pytest.mark.parametrize("name", sorted(BINARY_F))
def test_float_binary_primitives_strided_and_broadcast(name):
    f = BINARY_F[name]
    x, y = on_vdev(XF), on_vdev(YF.T.copy()).t()     # y is a transposed view
    _check(call(name, x, y), f(XF, YF), exact=name in ("eq", "lt"))
    row = on_vdev(YF[0])                               # broadcast (4,) against (3, 4)
    _check(call(name, x, row), f(XF, YF[0]), exact=name in ("eq", "lt"))
    # a Python number as the second operand (a 0-dim tensor for atan2, which, as PyTorch's, takes tensors only)
    two = ember.tensor(2.0) if name == "atan2" else 2.0
    _check(call(name, x, two), f(XF, np.float32(2.0)), exact=name in ("eq", "lt"))


@pytest.mark.parametrize("name", sorted(BINARY_I))
def test_integer_binary_primitives_are_exact(name):
    f = BINARY_I[name]
    x, y = on_vdev(XI), on_vdev(YI.T.copy()).t()
    _check(call(name, x, y), f(XI, YI), exact=True)


def test_pow_alpha_promotion_and_integer_division_errors():
    x = on_vdev(np.abs(XF) + 0.5)
    _check(ember.pow(x, on_vdev(YF)), np.power(np.abs(XF) + 0.5, YF))
    _check(ember.add(x, on_vdev(YF), alpha=-2), np.abs(XF) + 0.5 - 2 * YF)
    i = on_vdev([2, -3, 1, -1], ember.int32)
    assert host(ember.pow(i, on_vdev([-1, -1, -2, -3], ember.int32))).tolist() == [0, 0, 1, -1]
    r = ember.true_divide(i, 2)                        # integer / number -> the default float dtype
    assert r.dtype is ember.float32 and host(r).tolist() == [1.0, -1.5, 0.5, -0.5]
    assert host(ember.exp(on_vdev([0, 1], ember.int64))).dtype == np.float32
    h = on_vdev([1.0, 2.0, 3.0], ember.float16)
    assert host(h * 3 + 0.5).tolist() == [3.5, 6.5, 9.5] and (h * 3).dtype is ember.float16
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call("div_trunc", i, on_vdev([1, 0, 1, 1], ember.int32))
    nan = on_vdev([float("nan"), 1.0])
    assert host(ember.eq(nan, nan)).tolist() == [False, True]
    assert np.isnan(host(ember.amax(nan, 0)))          # NaN propagates through amax


def test_where_fill_and_sum_amax_reductions():
    c = on_vdev(XF > 0)
    _check(ember.where(c, on_vdev(XF), on_vdev(YF.T.copy()).t()), np.where(XF > 0, XF, YF))
    _check(ember.where(c, on_vdev(XI), 0), np.where(XF > 0, XI, 0), exact=True)
    t = ember.empty(2, 3, dtype=ember.uint8, device="vdev").fill_(-1)
    assert host(t).tolist() == [[255] * 3] * 2
    assert host(ember.empty(2, device="vdev", dtype=ember.int16).fill_(2.7)).tolist() == [2, 2]
    s = on_vdev(XF.T.copy()).t()
    _check(s.sum(), np.sum(XF, dtype=np.float32))
    _check(s.sum(dim=1, keepdim=True), XF.sum(1, keepdims=True))
    _check(s.sum(dim=(0, 1)), np.sum(XF))
    b = on_vdev(XF > 0)
    r = b.sum(0)
    assert r.dtype is ember.int64 and host(r).tolist() == (XF > 0).sum(0).tolist()
    _check(ember.amax(s, 0), XF.max(0), exact=True)
    _check(ember.amax(on_vdev(XI), (0, 1)), XI.max(), exact=True)


def test_bmm_gather_scatter_add():
    a = R.standard_normal((2, 3, 4)).astype(np.float32)
    b = R.standard_normal((2, 5, 4)).astype(np.float32)
    out = ember.bmm(on_vdev(a), on_vdev(b).transpose(1, 2))        # a strided right operand
    np.testing.assert_allclose(host(out), a @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    ai = R.integers(-5, 5, (2, 3, 4))
    _check(ember.bmm(on_vdev(ai), on_vdev(ai).transpose(1, 2)), ai @ ai.transpose(0, 2, 1), exact=True)
    idx = np.array([[0, 2], [1, 0], [3, 3]])
    _check(ember.gather(on_vdev(XF), 1, on_vdev(idx)), np.take_along_axis(XF, idx, 1), exact=True)
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        ember.gather(on_vdev(XF), 1, on_vdev([[4]]))
    base = np.zeros((3, 4), np.float32)
    src = np.arange(6, dtype=np.float32).reshape(3, 2)
    want = base.copy()
    np.add.at(want, (np.arange(3)[:, None], idx), src)
    _check(ember.scatter_add(on_vdev(base), 1, on_vdev(idx), on_vdev(src)), want, exact=True)
    t = on_vdev(base)
    t.scatter_add_(1, on_vdev(idx), on_vdev(src))      # in place: out is self
    _check(t, want, exact=True)


# ---------------------------------------------------------------- random
def test_uniform_is_reproducible_per_device():
    ember.vdev.manual_seed(1234)
    a = ember.empty(1000, device="vdev").uniform_(-2, 3)
    ember.vdev.manual_seed(1234)
    b = ember.empty(1000, device="vdev").uniform_(-2, 3)
    assert host(a).tolist() == host(b).tolist()
    h = host(a)
    assert h.min() >= -2 and h.max() < 3 and abs(h.mean() - 0.5) < 0.2
    g = ember.Generator("vdev:1").manual_seed(7)
    state = g.get_state()
    c = ember.empty(8, device="vdev:1", dtype=ember.float64).uniform_(generator=g)
    g.set_state(state)
    d = ember.empty(8, device="vdev:1", dtype=ember.float64).uniform_(generator=g)
    assert host(c).tolist() == host(d).tolist()
    lowp = host(ember.empty(4096, device="vdev", dtype=ember.float16).uniform_().float())
    assert lowp.max() < 1.0


# ---------------------------------------------------------------- the custom op
def test_custom_op_forward_on_vdev_and_cpu():
    op = ember.ops.vdev.fused_scale_shift
    x, s, b = XF, YF[0], np.float32([0.5])
    _check(op(on_vdev(x), on_vdev(s), on_vdev(b)), x * s + b)
    cpu = op(ember.tensor(x), ember.tensor(s), ember.tensor(b))
    np.testing.assert_allclose(cpu.numpy(), x * s + b, rtol=1e-6)
    with pytest.raises(RuntimeError, match="must broadcast to self's shape"):
        op(on_vdev(x), on_vdev(np.ones(5, np.float32)), on_vdev(b))


def test_custom_op_gradcheck_on_vdev():
    op = ember.ops.vdev.fused_scale_shift
    f64 = ember.float64
    x = ember.tensor(R.standard_normal((2, 3)), dtype=f64).to("vdev").requires_grad_()
    s = ember.tensor(R.standard_normal(3), dtype=f64).to("vdev").requires_grad_()
    b = ember.tensor(R.standard_normal((2, 1)), dtype=f64).to("vdev").requires_grad_()
    y = op(x, s, b)
    y.sum().backward()
    assert x.grad.device == x.device
    np.testing.assert_allclose(host(x.grad), np.broadcast_to(host(s.detach()), (2, 3)))
    np.testing.assert_allclose(host(b.grad), [[3.0], [3.0]])
    assert ember.autograd.gradcheck(op, (x, s, b))


# ---------------------------------------------------------------- the opt-in cpu fallback
# An op with a cpu kernel only (no vdev kernel, no composite): it shows what vdev does without one.
_CPU_ONLY_OP = """
import numpy as np, ember
lib = ember.library.Library("hdprobe")
name = lib.define("twice(Tensor self) -> Tensor", lambda self: (self.device, (self.device.type, "strided", self.dtype),
                                                                   tuple(self.shape), self.dtype))
lib.impl(name, lambda self, *, out: np.multiply(self.numpy(), 2, out=out.numpy()), device="cpu")
twice = ember.ops.hdprobe.twice
"""


def test_without_fallback_a_missing_op_raises_naming_the_key():
    ns = {}
    exec(_CPU_ONLY_OP, ns)
    try:
        with pytest.raises(NotImplementedError, match=r"Could not run 'hdprobe_twice' with arguments from the "
                                                      r"\(vdev, strided, float32\) key"):
            ns["twice"](ember.ones(2, device="vdev"))
        assert ns["twice"](ember.ones(2)).tolist() == [2.0, 2.0]
    finally:
        ns["lib"]._destroy()


def test_fallback_is_opt_in_and_counts_transfers():
    code = _CPU_ONLY_OP + (
        "import warnings\n"
        "x = ember.tensor([1.0, -2.0]).to('vdev')\n"
        "ember.vdev.reset_transfer_stats()\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    y = twice(x)\n"
        "st = ember.vdev.transfer_stats()\n"
        "print(ember._dispatch.ops['hdprobe_twice'].source(('vdev', 'strided', ember.float32)))\n"
        "print(y.device, y.cpu().tolist())\n"
        "print(st['device_to_host'] >= 1, st['host_to_device'] >= 1, ember.profiler.fallback_counts().get('hdprobe_twice'))\n"
        "print(any(\"running it through the 'vdev' device's fallback\" in str(m.message) for m in w))\n")
    boot = ("import ember\n"
            "if 'vdev' not in [p.name for p in ember.plugins.list() if p.status == 'loaded']:\n"
            "    import ember_vdev; ember.plugins.register(ember_vdev, name='vdev')\n")
    env = dict(os.environ, EMBER_VDEV_FALLBACK="1",
               PYTHONPATH=os.pathsep.join([str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", boot + code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["fallback", "vdev:0 [2.0, -4.0]", "True True 1", "True"]
