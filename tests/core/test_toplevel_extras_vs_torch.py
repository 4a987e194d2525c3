"""Top-level names that are forms of existing ember functionality (ember._toplevel_extras), side by side with
PyTorch 2.13."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_predicates_and_deprecated_spellings():
    for lib in (torch, ember):
        x = lib.tensor([1.0 + 1j])
        # (ember's conj is eager - docs/complex.md - so its conj() is not a conjugate view: is_conj follows that)
        assert lib.is_conj(x.conj()) is x.conj().is_conj() and lib.is_conj(x) is False and lib.is_neg(x) is False
        assert lib.get_device(lib.ones(1)) == -1
        with pytest.raises(RuntimeError, match="Please use the `torch.linalg.matrix_rank` function instead"):
            lib.matrix_rank(lib.eye(3))
    a = np.random.default_rng(0).standard_normal((4, 5))
    np.testing.assert_allclose(float(ember.nuclear_norm(ember.tensor(a))), float(torch.nuclear_norm(torch.tensor(a))),
                               rtol=1e-12)
    np.testing.assert_allclose(ember.frobenius_norm(ember.tensor(a), (1,)).numpy(),
                               torch.frobenius_norm(torch.tensor(a), (1,)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ember.norm_except_dim(ember.tensor(a), 2, 0).numpy(),
                               torch.norm_except_dim(torch.tensor(a), 2, 0).numpy(), rtol=1e-12)
    assert ember.hardshrink(ember.tensor([0.2, -0.7]), 0.5).tolist() == \
        torch.hardshrink(torch.tensor([0.2, -0.7]), 0.5).tolist()
    for name in ("eig", "symeig", "solve", "lstsq"):
        if hasattr(torch, name):
            with pytest.raises(RuntimeError):
                getattr(torch, name)(torch.eye(2), torch.eye(2))
        with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
            getattr(ember, name)(ember.eye(2), ember.eye(2))


def test_flags_round_trip_like_torch():
    for lib in (torch, ember):
        assert lib.get_float32_matmul_precision() == "highest"
        lib.set_float32_matmul_precision("high")
        assert lib.get_float32_matmul_precision() == "high"
        lib.set_float32_matmul_precision("highest")
        with pytest.warns(UserWarning, match="has no effect"):
            lib.set_float32_matmul_precision("fastest")
        assert lib.get_float32_matmul_precision() == "highest"
        assert not lib.are_deterministic_algorithms_enabled()
        lib.use_deterministic_algorithms(True, warn_only=True)
        assert lib.are_deterministic_algorithms_enabled() and lib.is_deterministic_algorithms_warn_only_enabled()
        assert lib.get_deterministic_debug_mode() == 1
        lib.set_deterministic_debug_mode("default")
        assert not lib.are_deterministic_algorithms_enabled() and lib.get_deterministic_debug_mode() == 0
        assert not lib.is_warn_always_enabled()
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled()
        lib.set_warn_always(False)
    assert ember.typename(ember.ones(2)) == "ember.FloatTensor" and ember.typename(3) == torch.typename(3) == "int"
    assert ember.is_storage(ember.ones(2).untyped_storage()) and not ember.is_storage(ember.ones(2))


def test_eager_control_flow_ops_match_torch():
    # (torch.cond and torch's while_loop run through torch._dynamo, whose import changes global torch state that
    # later tests see - distributions' argument validation - so ember's are checked against their eager meaning)
    x = ember.ones(2)
    assert ember.cond(ember.tensor(False), lambda a: a + 1, lambda a: a - 1, (x,)).tolist() == [0.0, 0.0]
    assert ember.cond(True, lambda a: a + 1, lambda a: a - 1, (x,)).tolist() == [2.0, 2.0]
    ei, es = ember.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (ember.tensor(0), ember.tensor(0)))
    assert (int(ei), int(es)) == (5, 10)


def test_constructors_and_samplers():
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    e, t = ember.frombuffer(buf, dtype=ember.float32, count=4, offset=4), \
        torch.frombuffer(bytearray(buf), dtype=torch.float32, count=4, offset=4)
    assert e.tolist() == t.tolist()
    buf[4:8] = np.float32(42).tobytes()
    assert e[0].item() == 42.0                                       # shares the buffer's memory
    for layout in [(0, 1, 2), (0, 2, 1), (2, 0, 1)]:
        assert ember.empty_permuted((2, 3, 4), layout).stride() == torch.empty_permuted((2, 3, 4), layout).stride()
    z = np.array([1 + 2j, 3 - 1j])
    np.testing.assert_array_equal(ember.view_as_real_copy(ember.tensor(z)).numpy(),
                                  torch.view_as_real_copy(torch.tensor(z)).numpy())
    ember.manual_seed(0)
    n = ember.binomial(ember.full((20000,), 10.0), ember.full((20000,), 0.3))
    assert n.dtype == ember.float32 and abs(float(n.mean()) - 3.0) < 0.05 and float(n.max()) <= 10
    k = ember.poisson(ember.full((20000,), 4.0))
    assert abs(float(k.mean()) - 4.0) < 0.08 and abs(float(k.var()) - 4.0) < 0.2
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.poisson(ember.tensor([-1.0]))
    A = ember.randn(30, 6, dtype=ember.float64) @ ember.randn(6, 40, dtype=ember.float64)
    U, S, V = ember.svd_lowrank(A, q=6)
    np.testing.assert_allclose((U @ ember.diag(S) @ V.mT).numpy(), A.numpy(), atol=1e-8)
    np.testing.assert_allclose(S.numpy(), torch.linalg.svdvals(torch.tensor(A.numpy())).numpy()[:6], rtol=1e-8)
    assert ember.get_device_module("cpu") is ember.cpu and ember.GradScaler is ember.amp.GradScaler
