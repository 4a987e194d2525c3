"""The digits main job with ``--quantize dynamic|static|qat``: int8 accuracy within 1 percentage
point of the float model, and a saved state dict about 3.5x smaller (see docs/benchmarks.md)."""
import pytest

from ember.examples import digits

pytest.importorskip("sklearn", reason="the digits data ships with scikit-learn")


def _run(model, mode, *extra):
    return digits.main(["--model", model, "--quantize", mode, "--no-progress", *extra])


@pytest.mark.parametrize("mode", ["dynamic", "static", "qat"])
def test_mlp_quantized_accuracy_and_size(mode):
    r = _run("mlp", mode, "--qat-epochs", "2")          # the default qconfig (qnnpack: per-tensor weights)
    q = r["quantized"]
    assert q["float_accuracy"] == r["test_accuracy"] and q["float_accuracy"] > 0.95
    assert q["accuracy_drop_pp"] <= 1.0
    # int8 weights: the tensors shrink ~3.8x; the saved file (zip and pickle records included) >= 3.5x
    assert q["size_ratio"] >= 3.5
    assert q["int8_images_per_s"] > 0 and q["float_images_per_s"] > 0
    layers = [m for m in q["quantized_model"].modules() if callable(getattr(m, "weight", None))]
    assert len(layers) == 2 and all(m.weight().dtype.name == "qint8" for m in layers)


def test_cnn_static_quantized_accuracy_x86():
    r = _run("cnn", "static", "--epochs", "8", "--qengine", "x86")
    q = r["quantized"]
    assert q["accuracy_drop_pp"] <= 1.0
    convs = [m for m in q["quantized_model"].modules() if callable(getattr(m, "weight", None))]
    assert len(convs) == 3 and all(m.weight().qscheme().name == "per_channel_affine" for m in convs)


def test_cnn_static_quantized_size_qnnpack():
    r = _run("cnn", "static", "--epochs", "4", "--qengine", "qnnpack")
    assert r["quantized"]["size_ratio"] >= 3.4
    assert r["quantized"]["accuracy_drop_pp"] <= 1.0
