"""ember.backends: the flags PyTorch code sets (types checked, values read back, context managers) and
the truthful availability answers, side by side with torch.backends where they must agree."""
import pytest

import ember
import ember.backends.cudnn as cudnn          # the import form PyTorch programs use

torch = pytest.importorskip("torch")

CUDNN_FLAGS = ("enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit")


@pytest.fixture
def restore_flags():
    saved = {k: getattr(cudnn, k) for k in CUDNN_FLAGS}
    saved_m = {k: getattr(ember.backends.cuda.matmul, k) for k in ("allow_tf32",
                                                                     "allow_fp16_reduced_precision_reduction")}
    yield
    for k, v in saved.items():
        setattr(cudnn, k, v)
    for k, v in saved_m.items():
        setattr(ember.backends.cuda.matmul, k, v)


def test_cudnn_defaults_match_torch():
    assert cudnn is ember.backends.cudnn
    for k in CUDNN_FLAGS:
        assert getattr(cudnn, k) == getattr(torch.backends.cudnn, k), k


def test_cudnn_flags_set_read_and_type_checked(restore_flags):
    cudnn.benchmark = True
    cudnn.deterministic = True
    assert cudnn.benchmark is True and cudnn.deterministic is True
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="set_enabled_cudnn expects a bool"):
            m.backends.cudnn.enabled = "yes"
    with cudnn.flags(enabled=False, benchmark=False):
        assert cudnn.enabled is False and cudnn.benchmark is False
    assert cudnn.enabled is True and cudnn.benchmark is True


def test_cudnn_is_not_used_by_ember():
    assert ember.backends.cudnn.is_available() is False and ember.backends.cudnn.version() is None
    assert ember.backends.cudnn.is_acceptable(ember.ones(1)) is False


def test_cuda_matmul_flags(restore_flags):
    em, tm = ember.backends.cuda.matmul, torch.backends.cuda.matmul
    for k in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(em, k) == getattr(tm, k), k
    em.allow_tf32 = True
    assert em.allow_tf32 is True
    em.allow_fp16_reduced_precision_reduction = (False, True)
    assert em.allow_fp16_reduced_precision_reduction is False
    for bad, cls in ((("x",), TypeError), ((True, True, True), TypeError), (3, TypeError)):
        with pytest.raises(cls):
            em.allow_fp16_reduced_precision_reduction = bad
        with pytest.raises(cls):
            tm.allow_fp16_reduced_precision_reduction = bad
    with pytest.raises(AttributeError, match="Unknown attribute"):
        em.no_such_flag


def test_cuda_is_built_follows_the_plugin():
    from ember import _registry
    _registry.ensure_loaded()
    assert ember.backends.cuda.is_built() is ("cuda" in _registry.device_types)


def test_mps_mkldnn_openmp_opt_einsum():
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False
    assert ember.backends.mkldnn.is_available() is False and ember.backends.mkldnn.enabled is True
    with ember.backends.mkldnn.flags(enabled=False):
        assert ember.backends.mkldnn.enabled is False
    assert ember.backends.mkldnn.enabled is True
    assert ember.backends.openmp.is_available() is False
    oe = ember.backends.opt_einsum
    assert oe.is_available() is False and oe.get_opt_einsum() is None
    if not torch.backends.opt_einsum.is_available():        # then torch's defaults are ember's
        assert (oe.enabled, oe.strategy) == (torch.backends.opt_einsum.enabled, torch.backends.opt_einsum.strategy)
    with oe.flags(enabled=True, strategy="greedy"):
        assert oe.enabled is True and oe.strategy == "greedy"
    assert oe.enabled is False and oe.strategy is None
    with pytest.raises(ValueError, match="must be one of the following"):
        oe.strategy = "fastest"


def test_cpu_capability_matches_torch_on_this_machine():
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
