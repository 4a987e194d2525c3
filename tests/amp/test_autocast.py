"""ember.autocast on cpu compared with torch.autocast side by side: the output dtype of every op on
autocast's lists that ember has (and a few that are on no list), nesting, disabling, decorators,
thread-locality, gradients through the casts, and the errors/warnings of bad arguments."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# op name -> (function path under the library, args(lib, dtype))
# Each builder makes its arguments from fixed numpy data, so the two libraries see the same values.
_rng = np.random.default_rng(0)


def _data(*shape, positive=False, unit=False):
    a = _rng.standard_normal(shape).astype(np.float32)
    if positive:
        a = np.abs(a) + 0.1
    if unit:
        a = np.clip(a, -0.9, 0.9)
    return a


def _t(lib, a, dtype):
    return lib.tensor(a).to(getattr(lib, dtype))


def _mk(*specs):
    """specs: numpy arrays (become tensors of the case's dtype) or other values (passed through)."""
    def build(lib, dtypes):
        out, i = [], 0
        for s in specs:
            if isinstance(s, np.ndarray):
                out.append(_t(lib, s, dtypes[min(i, len(dtypes) - 1)]))
                i += 1
            elif isinstance(s, tuple) and s and s[0] == "index":
                out.append(lib.tensor(s[1]))
            else:
                out.append(s)
        return out
    return build


CASES = {
    # the cpu "lower precision" list
    "mm": ("mm", _mk(_data(3, 4), _data(4, 5))),
    "bmm": ("bmm", _mk(_data(2, 3, 4), _data(2, 4, 5))),
    "matmul": ("matmul", _mk(_data(3, 4), _data(4, 5))),
    "addmm": ("addmm", _mk(_data(3, 5), _data(3, 4), _data(4, 5))),
    "addbmm": ("addbmm", _mk(_data(3, 5), _data(2, 3, 4), _data(2, 4, 5))),
    "baddbmm": ("baddbmm", _mk(_data(2, 3, 5), _data(2, 3, 4), _data(2, 4, 5))),
    "linear": ("nn.functional.linear", _mk(_data(3, 4), _data(5, 4), _data(5))),
    "conv2d": ("nn.functional.conv2d", _mk(_data(1, 2, 5, 5), _data(3, 2, 3, 3), _data(3))),
    "einsum": ("einsum", lambda lib, d: ["ij,jk->ik", _t(lib, _data(2, 3), d[0]), _t(lib, _data(3, 2), d[-1])]),
    # the cpu float32 list
    "prod": ("prod", _mk(_data(3, 4))),
    "nll_loss": ("nn.functional.nll_loss", _mk(_data(3, 4), ("index", [0, 1, 2]))),
    # the cpu promote list
    "cat": ("cat", lambda lib, d: [[_t(lib, _data(2), d[0]), _t(lib, _data(3), d[-1])]]),
    "stack": ("stack", lambda lib, d: [[_t(lib, _data(2), d[0]), _t(lib, _data(2), d[-1])]]),
    "index_copy": ("index_copy", _mk(_data(3), 0, ("index", [0, 1]), _data(2))),
    # on the CUDA lists only: on cpu they run in their inputs' types
    "mv": ("mv", _mk(_data(3, 4), _data(4))),
    "addmv": ("addmv", _mk(_data(3), _data(3, 4), _data(4))),
    "dot": ("dot", _mk(_data(4), _data(4))),
    "softmax": ("softmax", _mk(_data(3, 4), 1)),
    "log_softmax": ("log_softmax", _mk(_data(3, 4), 1)),
    "sum": ("sum", _mk(_data(3, 4))),
    "cumsum": ("cumsum", _mk(_data(3, 4), 1)),
    "exp": ("exp", _mk(_data(3))),
    "log": ("log", _mk(_data(3, positive=True))),
    "pow": ("pow", _mk(_data(3, positive=True), _data(3))),
    "rsqrt": ("rsqrt", _mk(_data(3, positive=True))),
    "erfinv": ("erfinv", _mk(_data(3, unit=True))),
    "norm": ("norm", _mk(_data(3, 4))),
    "addcmul": ("addcmul", _mk(_data(3), _data(3), _data(3))),
    "atan2": ("atan2", _mk(_data(3), _data(3))),
    # nn.functional functions written in Python in ember (``_autocast_state.autocast_function``)
    "conv1d": ("nn.functional.conv1d", _mk(_data(1, 2, 7), _data(3, 2, 3), _data(3))),
    "conv_transpose2d": ("nn.functional.conv_transpose2d", _mk(_data(1, 2, 4, 4), _data(2, 3, 3, 3))),
    "prelu": ("nn.functional.prelu", _mk(_data(2, 3), _data(1))),
    "sdpa": ("nn.functional.scaled_dot_product_attention",
             _mk(_data(1, 2, 4, 8), _data(1, 2, 4, 8), _data(1, 2, 4, 8))),
    "mse_loss": ("nn.functional.mse_loss", _mk(_data(3), _data(3))),
    "l1_loss": ("nn.functional.l1_loss", _mk(_data(3), _data(3))),
    "smooth_l1_loss": ("nn.functional.smooth_l1_loss", _mk(_data(3), _data(3))),
    "huber_loss": ("nn.functional.huber_loss", _mk(_data(3), _data(3))),
    "bce_with_logits": ("nn.functional.binary_cross_entropy_with_logits", _mk(_data(3), _data(3, unit=True) ** 2)),
    "bce": ("nn.functional.binary_cross_entropy", _mk(_data(3, unit=True) ** 2, _data(3, unit=True) ** 2)),
    "kl_div": ("nn.functional.kl_div", _mk(_data(3), _data(3, positive=True))),
    "poisson_nll_loss": ("nn.functional.poisson_nll_loss", _mk(_data(3), _data(3, positive=True))),
    "margin_ranking_loss": ("nn.functional.margin_ranking_loss",
                            _mk(_data(3), _data(3), np.array([1.0, -1.0, 1.0], np.float32))),
    "hinge_embedding_loss": ("nn.functional.hinge_embedding_loss",
                             _mk(_data(3), np.array([1.0, -1.0, 1.0], np.float32))),
    "cosine_embedding_loss": ("nn.functional.cosine_embedding_loss",
                              _mk(_data(2, 3), _data(2, 3), np.array([1.0, -1.0], np.float32))),
    "group_norm": ("nn.functional.group_norm", _mk(_data(2, 4, 3), 2)),
    "cosine_similarity": ("nn.functional.cosine_similarity", _mk(_data(2, 3), _data(2, 3))),
    "bilinear": ("nn.functional.bilinear", _mk(_data(2, 3), _data(2, 4), _data(5, 3, 4))),
    "soft_margin_loss": ("nn.functional.soft_margin_loss", _mk(_data(3), _data(3))),
    "layer_norm": ("nn.functional.layer_norm", _mk(_data(3, 4), (4,))),
    "softplus": ("nn.functional.softplus", _mk(_data(3))),
    # on no list
    "add": ("add", _mk(_data(3), _data(3))),
    "relu": ("relu", _mk(_data(3))),
    "cross_entropy": ("nn.functional.cross_entropy", _mk(_data(3, 4), ("index", [0, 1, 2]))),
}

#: the input dtypes each op is tried with: all float32, all bfloat16, all float64, first bfloat16 + rest float32
INPUTS = {"f32": ("float32",), "bf16": ("bfloat16",), "f64": ("float64",), "mixed": ("bfloat16", "float32")}


def _fn(lib, path):
    obj = lib
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _run(lib, name, inputs, **autocast_kw):
    path, build = CASES[name]
    args = build(lib, INPUTS[inputs])
    with lib.autocast("cpu", **autocast_kw), warnings.catch_warnings():
        warnings.simplefilter("ignore")    # kl_div's reduction='mean' warning
        try:
            return str(_fn(lib, path)(*args).dtype).split(".")[-1]
        except RuntimeError:
            return "RuntimeError"


@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_output_dtype_matches_torch(name, inputs):
    """Under autocast('cpu') (bfloat16), each op's output dtype is torch's (or both raise RuntimeError)."""
    assert _run(ember, name, inputs) == _run(torch, name, inputs)


@pytest.mark.parametrize("name", ["mm", "linear", "conv2d", "cat", "prod"])
def test_float16_on_cpu_matches_torch(name):
    for inputs in ("f32", "bf16", "mixed"):
        assert _run(ember, name, inputs, dtype=ember.float16) == _run(torch, name, inputs, dtype=torch.float16)


def test_lower_precision_values_match_torch():
    """mm under autocast computes on bfloat16-rounded inputs: the same values as torch's (to bf16 rounding)."""
    a, b = _data(8, 16), _data(16, 4)
    with ember.autocast("cpu"):
        e = ember.mm(ember.tensor(a), ember.tensor(b))
    with torch.autocast("cpu"):
        t = torch.mm(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2)


def test_promote_float16_with_bfloat16_raises_like_torch():
    for lib in (ember, torch):
        a, b = lib.ones(2, dtype=lib.float16), lib.ones(2, dtype=lib.bfloat16)
        with lib.autocast("cpu"), pytest.raises(RuntimeError, match="Unexpected floating ScalarType"):
            lib.cat([a, b])


def test_out_and_inplace_variants_are_not_autocast():
    for lib in (ember, torch):
        a, b = lib.ones(2, 2), lib.ones(2, 2)
        with lib.autocast("cpu"):
            assert lib.mm(a, b, out=lib.empty(2, 2)).dtype == lib.float32
            assert lib.ones(2, 2).addmm_(a, b).dtype == lib.float32
            assert lib.mm(lib.ones(2, 2, dtype=lib.int64), lib.ones(2, 2, dtype=lib.int64)).dtype == lib.int64


def test_nesting_and_disable():
    a = ember.ones(2, 2)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.mm(a, a).dtype == ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(a, a).dtype == ember.float32
            with ember.autocast("cpu", dtype=ember.float16):
                assert ember.get_autocast_dtype("cpu") == ember.float16
                assert ember.mm(a, a).dtype == ember.float16
            assert ember.get_autocast_dtype("cpu") == ember.bfloat16
        assert ember.is_autocast_enabled("cpu")
        assert ember.mm(a, a).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(a, a).dtype == ember.float32


def test_state_restored_after_exception():
    with pytest.raises(ValueError):
        with ember.autocast("cpu"):
            raise ValueError("boom")
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32


def test_decorator():
    @ember.autocast("cpu")
    def f(x):
        """doc"""
        return ember.mm(x, x), ember.is_autocast_enabled("cpu")

    y, on = f(ember.ones(2, 2))
    assert on and y.dtype == ember.bfloat16 and f.__doc__ == "doc"
    assert not ember.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        ember.autocast("cpu")(3)


def test_autocast_on_other_device_type_leaves_cpu_ops_alone():
    """Autocast for cuda (or a plugin's device) does not touch cpu tensors, as in PyTorch."""
    ember.set_autocast_enabled("cuda", True)
    try:
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32
    finally:
        ember.set_autocast_enabled("cuda", False)


def test_thread_local():
    """Another thread is not in this thread's autocast block, and its own block does not leak here."""
    seen = {}
    start, done = threading.Event(), threading.Event()

    def other():
        seen["enabled"] = ember.is_autocast_enabled("cpu")
        seen["dtype"] = ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype
        with ember.autocast("cpu"):
            start.set()
            done.wait(10)
            seen["inside"] = ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype

    with ember.autocast("cpu"):
        th = threading.Thread(target=other)
        th.start()
        assert start.wait(10)
    # the other thread is still inside its block: this thread is not
    assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32
    done.set()
    th.join()
    assert seen == {"enabled": False, "dtype": ember.float32, "inside": ember.bfloat16}


def test_state_functions_match_torch():
    for lib in (ember, torch):
        assert lib.get_autocast_dtype("cpu") == lib.bfloat16
        assert lib.get_autocast_dtype("cuda") == lib.float16
        assert lib.is_autocast_cache_enabled()
        assert lib.autocast_increment_nesting() == 1
        assert lib.autocast_decrement_nesting() == 0
        lib.set_autocast_enabled("cpu", True)
        assert lib.is_autocast_enabled("cpu")
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.float16)
        assert lib.get_autocast_dtype("cpu") == lib.float16
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        assert lib.amp.is_autocast_available("cpu") and lib.amp.is_autocast_available("cuda")
        with pytest.raises(TypeError):
            lib.set_autocast_dtype("cpu", "bfloat16")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert lib.get_autocast_cpu_dtype() == lib.bfloat16
            assert lib.is_autocast_cpu_enabled() is False


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_unsupported_dtype_warns_and_disables_like_torch(dtype):
    for lib in (ember, torch):
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported. Disabling "
                                             "autocast.\nCPU Autocast only supports dtypes of .*bfloat16, .*float16"):
            ac = lib.autocast("cpu", dtype=getattr(lib, dtype))
        with ac:
            assert not lib.is_autocast_enabled("cpu")
            assert lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype == lib.float32


def test_errors_match_torch():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(3)
        with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
            lib.autocast("foo")
        with pytest.raises(RuntimeError, match="device string: foo"):
            lib.amp.is_autocast_available("foo")
        with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
            ac = lib.autocast("cuda")
        with ac:
            assert not lib.is_autocast_enabled("cuda")


def test_deprecated_aliases_warn_like_torch():
    for lib in (ember, torch):
        with pytest.warns(FutureWarning, match=r"cpu.amp.autocast\(args...\)` is deprecated"):
            ac = lib.cpu.amp.autocast()
        with ac:
            assert lib.mm(lib.ones(2, 2), lib.ones(2, 2)).dtype == lib.bfloat16
        with pytest.warns(FutureWarning, match=r"cuda.amp.autocast\(args...\)` is deprecated"), \
                pytest.warns(UserWarning, match="CUDA is not available"):
            lib.cuda.amp.autocast()
        with pytest.warns(FutureWarning, match=r"cuda.amp.GradScaler\(args...\)` is deprecated"), \
                pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
            assert not lib.cuda.amp.GradScaler().is_enabled()
        with pytest.warns(DeprecationWarning, match=r"is_autocast_cpu_enabled\(\) is deprecated"):
            lib.is_autocast_cpu_enabled()


def _mlp_grads(lib, cache_enabled):
    w1 = lib.tensor(_W1, requires_grad=True)
    b1 = lib.tensor(_B1, requires_grad=True)
    w2 = lib.tensor(_W2, requires_grad=True)
    x = lib.tensor(_X)
    with lib.autocast("cpu", cache_enabled=cache_enabled):
        h = lib.nn.functional.linear(x, w1, b1).relu()
        y = h @ w2            # reuses nothing; w1 is used twice below to exercise the cast cache
        z = lib.nn.functional.linear(x, w1)
        loss = lib.nn.functional.cross_entropy(y + z.sum(1, keepdim=True), lib.tensor([0, 1, 2, 1]))
    assert y.dtype == lib.bfloat16 and loss.dtype == lib.float32
    loss.backward()
    return loss, [p.grad for p in (w1, b1, w2)]


_W1, _B1, _W2, _X = _data(6, 5), _data(6), _data(6, 3), _data(4, 5)


@pytest.mark.parametrize("cache_enabled", [True, False])
def test_gradients_reach_float32_params_like_torch(cache_enabled):
    el, eg = _mlp_grads(ember, cache_enabled)
    tl, tg = _mlp_grads(torch, cache_enabled)
    np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-2)
    for e, t in zip(eg, tg):
        assert e.dtype == ember.float32 and t.dtype == torch.float32
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=3e-2, atol=3e-2)


def test_cast_cache_is_dropped_when_the_outermost_block_exits():
    from ember._autocast_state import STATE
    w = ember.ones(3, 3, requires_grad=True)
    with ember.autocast("cpu"):
        ember.mm(w, w)
        with ember.autocast("cpu"):
            ember.mm(w, w)
        assert len(STATE.cache) == 1
    assert len(STATE.cache) == 0
    with ember.autocast("cpu", cache_enabled=False):
        ember.mm(w, w)
        assert len(STATE.cache) == 0


def test_custom_fwd_bwd():
    seen = {}

    class F(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        def forward(ctx, a, b):
            seen["fwd_enabled"] = ember.is_autocast_enabled("cpu")
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd_enabled"] = ember.is_autocast_enabled("cpu")
            a, b = ctx.saved_tensors
            return g.mm(b.t()), a.t().mm(g)

    a = ember.ones(2, 2, dtype=ember.bfloat16, requires_grad=True)
    with ember.autocast("cpu"):
        out = F.apply(a, ember.ones(2, 2))
    assert out.dtype == ember.float32 and seen["fwd_enabled"] is False
    out.sum().backward()
    assert seen["bwd_enabled"] is False and a.grad.dtype == ember.bfloat16
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ember.amp.custom_fwd(device_type=None)


def test_other_device_types_use_the_cuda_lists():
    """A plugin's device (the reference vendor plugin's 'vdev') gets the CUDA lists and float16 by default;
    cpu tensors in the same block are left alone. (No CUDA PyTorch here to compare with: the expected
    dtypes are those PyTorch's op reference gives for CUDA.)"""
    try:
        x = ember.randn(3, 4, device="vdev")
    except (RuntimeError, NotImplementedError):
        pytest.skip("the vendor example plugin (vdev) is not installed")
    w = ember.randn(4, 5, device="vdev")
    with ember.autocast("vdev"):
        assert ember.get_autocast_dtype("vdev") == ember.float16
        assert ember.mm(x, w).dtype == ember.float16
        assert ember.softmax(x.half(), 1).dtype == ember.float32
        assert ember.exp(x.half()).dtype == ember.float32
        assert ember.cat([x.half(), x]).dtype == ember.float32
        assert ember.mm(ember.ones(2, 2), ember.ones(2, 2)).dtype == ember.float32     # a cpu op
        with pytest.raises(RuntimeError, match="binary_cross_entropy and ember.nn.BCELoss are unsafe to autocast"):
            ember.nn.functional.binary_cross_entropy(x.sigmoid(), x.sigmoid())
