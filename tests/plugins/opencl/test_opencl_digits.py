"""The main job on opencl: same recipe, same accuracy bar as on cpu (fewer epochs here)."""
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(), reason="no OpenCL platform (pip install ember-opencl[pocl])")


def test_digits_mlp_trains_on_opencl(tmp_path):
    pytest.importorskip("sklearn")
    from ember.examples import digits
    ckpt = tmp_path / "mlp.pt"
    r = digits.main(["--device", "opencl", "--epochs", "4", "--no-progress", "--checkpoint", str(ckpt)])
    assert r["test_accuracy"] >= 0.93                       # as on cpu after 4 epochs; 30 reach >= 0.97
    assert all(p.device.type == "opencl" for p in r["model"].parameters())
    state = ember.load(ckpt, map_location="cpu")            # saved through the host, loadable anywhere
    assert state["model"]["1.weight"].device.type == "cpu"
