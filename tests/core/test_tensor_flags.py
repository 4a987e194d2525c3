"""The is_* flags and predicates of Tensor, side by side with PyTorch."""
import pytest

import ember

torch = pytest.importorskip("torch")

FLAGS = ("is_cpu", "is_cuda", "is_xpu", "is_mps", "is_meta", "is_ipu", "is_xla", "is_maia", "is_mtia", "is_vulkan",
         "is_sparse", "is_sparse_csr", "is_mkldnn", "is_nested", "is_quantized", "is_leaf")
PREDICATES = ("is_conj", "is_neg", "is_floating_point", "is_complex", "is_signed", "is_contiguous", "is_distributed")


@pytest.mark.parametrize("make", [lambda m: m.ones(2, 3), lambda m: m.zeros((), dtype=m.int64),
                                  lambda m: m.ones(2, 3).t(), lambda m: m.ones(3, dtype=m.complex64),
                                  lambda m: m.ones(2, requires_grad=True) * 2])
def test_flags_match_torch_on_cpu(make):
    e, t = make(ember), make(torch)
    for name in FLAGS:
        assert isinstance(getattr(e, name), bool) and getattr(e, name) == getattr(t, name), name
    for name in PREDICATES:
        assert getattr(e, name)() == getattr(t, name)(), name


def test_flags_on_a_plugin_device_and_a_sparse_tensor():
    v = ember.ones(2, device="vdev")
    assert not v.is_cpu and not v.is_cuda and not v.is_xpu and not v.is_mps and not v.is_meta
    s = ember.ones(2, 2).to_sparse()
    assert s.is_sparse == torch.ones(2, 2).to_sparse().is_sparse and not s.is_sparse_csr


def test_same_size_set_to_and_nonzero_match_torch():
    for m in (ember, torch):
        x = m.arange(6.0).reshape(2, 3)
        assert x.is_same_size(m.zeros(2, 3)) and not x.is_same_size(m.zeros(3, 2))
        assert x.is_set_to(x.view(2, 3)) and not x.is_set_to(x.t()) and not x.is_set_to(x.clone())
        assert m.tensor([2.0]).is_nonzero() and not m.tensor(0).is_nonzero()
        for bad in (m.zeros(0), m.zeros(2)):
            with pytest.raises(RuntimeError, match="Boolean value of Tensor with"):
                bad.is_nonzero()
