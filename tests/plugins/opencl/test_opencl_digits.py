"""The main job on opencl: same recipe, same accuracy bar as on cpu (fewer epochs here)."""
import pytest

import ember

from _opencl_helpers import NO_DEVICE, has_device  # noqa: E402

pytestmark = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)


def test_digits_mlp_trains_on_opencl(tmp_path):
    pytest.importorskip("sklearn")
    from ember.examples import digits
    ckpt = tmp_path / "mlp.pt"
    r = digits.main(["--device", "opencl", "--epochs", "4", "--no-progress", "--checkpoint", str(ckpt)])
    assert r["test_accuracy"] >= 0.93                       # as on cpu after 4 epochs; 30 reach >= 0.97
    assert all(p.device.type == "opencl" for p in r["model"].parameters())
    state = ember.load(ckpt, map_location="cpu")            # saved through the host, loadable anywhere
    assert state["model"]["1.weight"].device.type == "cpu"


def test_unsupported_dtype_is_a_clear_error():
    import warnings
    d = ember.opencl.get_device_name(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opencl = next(p for p in ember.plugins.list() if p.name == "opencl")
        if "float16" not in opencl.provides["dtypes"]:
            x = ember.ones(3, dtype=ember.float16, device="opencl")
            with pytest.raises(RuntimeError, match=r"\"add\" not implemented for 'float16' on opencl:0 .*cl_khr_fp16"):
                x + x
        with pytest.raises(RuntimeError, match="not implemented for 'complex64'.*ember-opencl does not implement it"):
            ember.ones(3, dtype=ember.complex64, device="opencl")
    assert d
