"""The main job (ember.examples.digits) end to end on cpu, with fewer epochs than its defaults."""
import os
import subprocess
import sys

import pytest

import ember
from ember.examples import digits


def test_mlp_trains_saves_and_reloads(tmp_path):
    ckpt = tmp_path / "mlp.pt"
    r = digits.main(["--epochs", "4", "--no-progress", "--checkpoint", str(ckpt)])
    assert r["test_accuracy"] >= 0.93            # 30 epochs (the default) reach >= 0.97
    losses = [h["train_loss"] for h in r["history"]]
    assert losses[-1] < losses[0] / 2            # it learned, not just guessed
    state = ember.load(ckpt)
    assert set(state) == {"model", "optimizer", "args"}
    assert state["model"]["1.weight"].shape == (128, 64)
    assert state["optimizer"]["state"][0]["exp_avg"].shape == (128, 64)


def test_cnn_trains_with_augmentation():
    r = digits.main(["--model", "cnn", "--epochs", "12", "--no-progress"])
    assert r["test_accuracy"] >= 0.93            # 30 epochs (the default) reach >= 0.98
    assert len(r["history"]) == 12


def test_same_seed_same_training():
    a = digits.main(["--epochs", "1", "--no-progress", "--seed", "3"])
    b = digits.main(["--epochs", "1", "--no-progress", "--seed", "3"])
    assert a["history"] == b["history"]
    for (na, pa), (nb, pb) in zip(a["model"].named_parameters(), b["model"].named_parameters()):
        assert na == nb and ember.equal(pa, pb)


def test_plot_written(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "curve.png"
    digits.main(["--epochs", "1", "--no-progress", "--plot", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_arguments_exit_with_usage():
    with pytest.raises(SystemExit) as e:
        digits.main(["--epochs", "0"])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        digits.main(["--model", "resnet"])


def test_unknown_device_is_a_clear_error():
    with pytest.raises(SystemExit, match="digits: --device nosuchdevice: device type 'nosuchdevice' is not "
                                         "available: pip install ember-nosuchdevice"):
        digits.main(["--device", "nosuchdevice", "--epochs", "1", "--no-progress"])


def test_runs_as_a_module():
    env = dict(os.environ, PYTHONWARNINGS="error::RuntimeWarning")
    p = subprocess.run([sys.executable, "-m", "ember.examples.digits", "--epochs", "1"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "test accuracy:" in p.stdout


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_compile_trains_bit_for_bit_as_eager(model):
    """--compile: the training step replays through ember.compile; the loss history, the accuracy and the
    trained parameters are the eager run's exactly (Adam with a cosine schedule, dropout and augmentation)."""
    ember.compiler.reset()
    a = digits.main(["--model", model, "--epochs", "3", "--no-progress", "--seed", "2"])
    b = digits.main(["--model", model, "--epochs", "3", "--no-progress", "--seed", "2", "--compile"])
    assert a["history"] == b["history"]
    for p, q in zip(a["model"].parameters(), b["model"].parameters()):
        assert ember.equal(p, q)
    rows = b["compiled"]
    # signatures: the first step (no .grad, no Adam state yet), full batches, the last (smaller) batch of an epoch
    assert len(rows) == 3 and not any(r["eager_reason"] for r in rows), rows
    assert sum(r["replays"] for r in rows) == sum(r["calls"] for r in rows) - 5     # 3 warm-ups + 2 captures
