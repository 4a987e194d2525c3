"""ember.random and the per-process default seed, side by side with torch.random."""
import os
import subprocess
import sys

import pytest

import ember

torch = pytest.importorskip("torch")

_PROBE = ("import {m}; g = {m}.Generator(); {m}.manual_seed(5); "
          "print({m}.initial_seed(), g.initial_seed(), {m}.rand(1).item())")


def _fresh(module, code):
    out = subprocess.run([sys.executable, "-c", code.format(m=module)], capture_output=True, text=True,
                         env=dict(os.environ), check=True, timeout=120)
    return out.stdout.split()


def _unseeded(module):
    return _fresh(module, "import {m}; print({m}.initial_seed(), {m}.Generator().initial_seed())")


def test_default_seed_is_random_per_process_as_torch():
    for m in ("ember", "torch"):
        (s1, g1), (s2, g2) = _unseeded(m), _unseeded(m)
        assert s1 != s2 and 0 <= int(s1) < 2 ** 64       # the cpu default generator: drawn per process
        assert g1 == g2 == "67280421310721"              # a new Generator(): PyTorch's fixed default seed


def test_manual_seed_is_repeatable_across_processes():
    a, b = _fresh("ember", _PROBE), _fresh("ember", _PROBE)
    assert a == b and a[0] == "5"


def test_module_functions_are_the_top_level_ones():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"):
        assert getattr(ember.random, name) is getattr(ember, name)
        assert hasattr(torch.random, name)
    assert callable(ember.random.fork_rng) and ember.random.default_generator is ember.default_generator


def test_get_set_rng_state_round_trip_as_torch():
    for m in (ember, torch):
        m.random.manual_seed(11)
        state = m.random.get_rng_state()
        assert state.dtype is m.uint8 and state.dim() == 1
        a = m.rand(3)
        m.random.set_rng_state(state)
        assert m.rand(3).tolist() == a.tolist()
        s = m.random.seed()
        assert m.random.initial_seed() == s


def test_fork_rng_restores_cpu_and_device_states():
    for m, kw in ((ember, {"device_type": "vdev", "devices": [0]}), (torch, {"devices": []})):
        m.manual_seed(3)
        with m.random.fork_rng(**kw):
            inside = m.rand(4).tolist()
            if m is ember:
                dev_inside = m.rand(4, device="vdev:0").tolist()
        assert m.rand(4).tolist() == inside
        if m is ember:
            assert m.rand(4, device="vdev:0").tolist() == dev_inside
        m.manual_seed(3)
        with m.random.fork_rng(enabled=False, **kw):
            first = m.rand(4).tolist()
        assert m.rand(4).tolist() != first


def test_fork_rng_defaults_to_the_accelerator_and_warns_for_several_devices(monkeypatch):
    from ember import _registry
    _registry.ensure_loaded()
    for name, dt in _registry.device_types.items():     # vdev (2 devices) as the current accelerator
        if name not in ("cpu", "vdev"):
            monkeypatch.setattr(dt.runtime, "is_available", lambda: False)
    monkeypatch.setattr(ember.random, "_fork_rng_warned_already", False)
    ember.manual_seed(4)
    with pytest.warns(UserWarning, match="VDEV reports that you have 2 available devices"):
        with ember.random.fork_rng():
            a = ember.rand(3, device="vdev:1").tolist()
    assert ember.rand(3, device="vdev:1").tolist() == a
