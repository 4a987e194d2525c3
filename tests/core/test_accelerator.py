"""ember.accelerator against the installed vdev reference plugin, and with no accelerator available
(every non-cpu runtime reporting none), side by side with torch.accelerator where torch has none."""
import warnings

import pytest

import ember
import ember.accelerator as A
from ember import _registry

torch = pytest.importorskip("torch")


@pytest.fixture
def vdev_current(monkeypatch):
    """vdev as the accelerator: the other non-cpu types (a GPU, OpenCL) report no device."""
    _registry.ensure_loaded()
    for name, dt in _registry.device_types.items():
        if name not in ("cpu", "vdev"):
            monkeypatch.setattr(dt.runtime, "is_available", lambda: False)
    prev = _registry.device_type("vdev").runtime.current_device()
    yield _registry.device_type("vdev").runtime
    _registry.device_type("vdev").runtime.set_device(prev)


@pytest.fixture
def no_accelerator(monkeypatch):
    _registry.ensure_loaded()
    for name, dt in _registry.device_types.items():
        if name != "cpu":
            monkeypatch.setattr(dt.runtime, "is_available", lambda: False)


def test_importable_as_in_torch():
    import ember.accelerator as mod
    assert ember.accelerator is mod
    assert set(mod.__all__) <= set(dir(mod))


def test_vdev_is_the_current_accelerator(vdev_current):
    assert A.current_accelerator() == ember.device("vdev") and A.current_accelerator().index is None
    assert A.current_accelerator(check_available=True) == ember.device("vdev")
    assert A.is_available() is True
    assert A.device_count() == vdev_current.device_count() == ember.vdev.device_count()


def test_device_index_functions(vdev_current):
    assert A.current_device_index() == vdev_current.current_device()
    A.set_device_index(1)
    assert A.current_device_index() == 1 and ember.ones(1, device="vdev").device == ember.device("vdev:1")
    A.set_device_index("vdev:0")
    assert A.current_device_index() == 0
    A.set_device_index(-1)                       # a no-op, as torch
    assert A.current_device_index() == 0
    with A.device_index(1):
        assert A.current_device_index() == 1
    assert A.current_device_index() == 0
    with A.device_index(None):
        assert A.current_device_index() == 0
    with pytest.warns(FutureWarning, match="Use `current_device_index` instead"):
        assert A.current_device_idx() == 0
    with pytest.warns(FutureWarning, match="Use `set_device_index` instead"):
        A.set_device_idx(1)
    assert A.current_device_index() == 1


def test_device_argument_errors(vdev_current):
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator vdev"):
        A.set_device_index("cpu")
    with pytest.raises(ValueError, match="with a specified index or an integer"):
        A.set_device_index("vdev")
    with pytest.raises(RuntimeError, match="Invalid device ordinal"):
        A.set_device_index(7)


def test_memory_statistics_follow_the_device(vdev_current):
    A.synchronize()
    A.synchronize("vdev:0")
    A.empty_cache()
    A.reset_peak_memory_stats()
    before = A.memory_allocated()
    x = ember.ones(1 << 16, device="vdev:0")
    assert A.memory_allocated() >= before + x.nbytes
    assert A.memory_allocated("vdev:0") == ember.vdev.memory_allocated(0)
    assert A.max_memory_allocated() >= A.memory_allocated()
    assert A.memory_reserved() >= A.memory_allocated() and A.max_memory_reserved() >= A.memory_reserved()
    stats = A.memory_stats()
    assert list(stats) == sorted(stats) and stats["allocated_bytes.all.current"] == A.memory_allocated()
    del x
    A.reset_peak_memory_stats()
    assert A.max_memory_allocated() == A.memory_allocated() == before
    A.empty_host_cache()


def test_unsupported_services_say_so(vdev_current):
    with pytest.raises(NotImplementedError, match="'vdev'.*free memory"):
        A.get_memory_info()
    with pytest.raises(NotImplementedError, match="service 'streams'"):
        A.current_stream()


def _outcomes(mod):
    acc = mod.accelerator
    out = []
    for f in (lambda: acc.current_accelerator(), lambda: acc.current_accelerator(True), lambda: acc.is_available(),
              lambda: acc.device_count(), lambda: acc.current_device_index(), lambda: acc.set_device_index(0),
              lambda: acc.set_device_index(-1), lambda: acc.set_device_index("cpu"), lambda: acc.synchronize(),
              lambda: acc.memory_allocated(), lambda: acc.max_memory_allocated(), lambda: acc.memory_stats(),
              lambda: acc.reset_peak_memory_stats(), lambda: acc.empty_cache(), lambda: acc.empty_host_cache(),
              lambda: acc.device_index(0).__enter__(), lambda: acc.device_index(None).__enter__()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append(("ok", f()))
        except Exception as exc:      # noqa: BLE001 - compared with torch's
            out.append((type(exc).__name__, str(exc)))
    return out


def test_no_accelerator_matches_torch_without_one(no_accelerator):
    got = _outcomes(ember)
    assert got[0] == ("ok", None) and got[2] == ("ok", False) and got[3] == ("ok", 0)
    assert got[4] == ("RuntimeError", "Cannot access accelerator device when none is available.")
    if torch.accelerator.current_accelerator() is not None:
        pytest.skip("torch has an accelerator here: the side-by-side comparison needs a machine without one")
    assert got == _outcomes(torch)
