"""State PyTorch keeps per thread is per thread in ember (grad mode, inference mode, the default device),
and what PyTorch keeps per process stays per process (default dtype, anomaly mode, the plugin registry).
Each rule is checked side by side with PyTorch where it is installed."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:           # the side-by-side checks skip; ember's own still run
    torch = None

LIBS = [ember] + ([torch] if torch is not None else [])


def run_in_thread(fn):
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            out["error"] = e
    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    assert not t.is_alive()
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_no_grad_in_one_thread_does_not_stop_autograd_in_another(lib):
    """The reproduction: thread A enters no_grad(), thread B then records; both exit; grad mode is on."""
    a_inside, b_done = threading.Event(), threading.Event()
    seen = {}

    def thread_a():
        with lib.no_grad():
            a_inside.set()
            b_done.wait(30)
            seen["a"] = lib.is_grad_enabled()

    def thread_b():
        a_inside.wait(30)
        seen["b"] = (lib.ones(2, requires_grad=True) * 2).requires_grad
        seen["b_enabled"] = lib.is_grad_enabled()
        b_done.set()

    ts = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert seen == {"a": False, "b": True, "b_enabled": True}
    assert lib.is_grad_enabled() is True
    assert run_in_thread(lib.is_grad_enabled) is True


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_interleaved_blocks_leave_grad_mode_on_everywhere(lib):
    """Blocks entered and left in crossing order (A in, B in, A out, B out) leave no thread with grad off."""
    steps = [threading.Event() for _ in range(4)]
    after = {}

    def thread(name, enter_at, exit_at):
        steps[enter_at - 1].wait(30) if enter_at else None
        with lib.no_grad():
            steps[enter_at].set()
            steps[exit_at - 1].wait(30)
        steps[exit_at].set()
        after[name] = lib.is_grad_enabled()

    ts = [threading.Thread(target=thread, args=("a", 0, 2)), threading.Thread(target=thread, args=("b", 1, 3))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert after == {"a": True, "b": True}
    assert lib.is_grad_enabled() is True


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_modes_set_in_the_main_thread_do_not_reach_new_threads(lib):
    with lib.no_grad():
        assert run_in_thread(lib.is_grad_enabled) is True
    with lib.inference_mode():
        assert run_in_thread(lib.is_inference_mode_enabled) is False
    lib.set_grad_enabled(False)
    try:
        assert run_in_thread(lambda: (lib.ones(1, requires_grad=True) + 1).requires_grad) is True
    finally:
        lib.set_grad_enabled(True)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_default_device_is_per_thread_default_dtype_and_anomaly_per_process(lib):
    dev = "meta" if lib is torch else "vdev"
    if lib is ember and not hasattr(ember, "vdev"):
        pytest.skip("needs a second device type (the reference plugin vdev is not installed)")

    def in_thread():
        lib.set_default_device(dev)
        inside = lib.empty(1).device.type
        with lib.device("cpu"):
            ctx = lib.empty(1).device.type
        return inside, ctx
    try:
        assert run_in_thread(in_thread) == (dev, "cpu")
        assert lib.empty(1).device.type == "cpu"                 # the main thread's default is untouched
        with lib.device(dev):
            assert run_in_thread(lambda: lib.empty(1).device.type) == "cpu"
        lib.set_default_dtype(lib.float32)
        run_in_thread(lambda: lib.set_default_dtype(lib.float64))
        assert lib.get_default_dtype() == lib.float64            # per process
        run_in_thread(lambda: lib.autograd.set_detect_anomaly(True))
        assert lib.is_anomaly_enabled() is True                  # per process
    finally:
        lib.set_default_dtype(lib.float32)
        lib.autograd.set_detect_anomaly(False)


def test_first_requires_grad_in_another_thread_turns_recording_on_everywhere():
    """ember skips autograd bookkeeping until some tensor first requires grad; when that first happens in
    another thread, threads that already ran ops must record from then on (a fresh process)."""
    code = textwrap.dedent("""
        import threading, ember
        x = ember.ones(3) + 1                                   # the main thread's state exists; nothing requires grad
        made = {}
        t = threading.Thread(target=lambda: made.setdefault("w", ember.ones(3, requires_grad=True)))
        t.start(); t.join()
        y = made["w"] * x
        print(y.requires_grad, y.grad_fn is not None)
        y.sum().backward()
        print(made["w"].grad.tolist())
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["True True", "[2.0, 2.0, 2.0]"]


def test_concurrent_first_use_loads_the_plugins_once_for_every_thread():
    """Threads that all make their first tensor at once: none sees a half-loaded registry (a fresh process)."""
    code = textwrap.dedent("""
        import threading, ember
        barrier = threading.Barrier(6)
        out, errors = [], []
        def work():
            barrier.wait()
            try:
                out.append(ember.zeros(3).tolist())
            except Exception as e:
                errors.append(repr(e))
        ts = [threading.Thread(target=work) for _ in range(6)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print(len(out), errors)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "6 []"


def _train(seed, steps=25):
    """A small MLP trained with Adam (whose step runs under no_grad) on fixed data; returns its parameters."""
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.standard_normal((32, 8), dtype=np.float32))
    y = ember.tensor(rng.integers(0, 3, 32))
    g = ember.Generator().manual_seed(seed)
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.Tanh(), ember.nn.Linear(16, 3))
    with ember.no_grad():
        for p in model.parameters():
            p.copy_(ember.randn(p.shape, generator=g) * 0.3)
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        with ember.no_grad():                  # what an evaluation between steps does
            model(x).argmax(1)
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_four_threads_training_four_models_match_sequential_training():
    sequential = [_train(s) for s in range(4)]
    results = [None] * 4
    start = threading.Barrier(4)

    def worker(i):
        start.wait()
        results[i] = _train(i)
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(300)
    for seq, par in zip(sequential, results):
        assert par is not None
        for a, b in zip(seq, par):
            np.testing.assert_array_equal(a, b)
