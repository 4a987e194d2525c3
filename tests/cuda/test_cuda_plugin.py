"""ember-cuda without a GPU: the plugin installs, loads and registers; ember.cuda says why no device
can be used; every way of reaching a device fails with that reason (issue 7, item 5).

These run everywhere. On a machine with a usable GPU the "no device" tests skip (the GPU tests in
test_cuda_gpu.py run instead).
"""
from __future__ import annotations

import io

import ember
import pytest
from ember import _dispatch, _registry, plugins

ember_cuda = pytest.importorskip("ember_cuda", reason="ember-cuda is not installed (pip install -e plugins/cuda)")
from ember_cuda._runtime import RUNTIME

no_gpu = pytest.mark.skipif(RUNTIME.is_available(), reason="a CUDA device is available: the no-GPU behaviour "
                                                            "does not apply")


def test_plugin_loaded_with_manifest():
    info = {p.name: p for p in plugins.list()}
    assert "cuda" in info and info["cuda"].status == "loaded", info.get("cuda")
    m = ember_cuda.ember_plugin_info()
    assert m["name"] == "cuda" and m["provides"]["device_types"] == ["cuda"]
    assert m["api_version"] == f"{plugins.API_VERSION[0]}.{plugins.API_VERSION[1]}"
    assert set(m["provides"]["dtypes"]) == {d.name for d in ember.library.ALL_DENSE}
    assert _registry.device_type("cuda").runtime is RUNTIME
    assert _registry.device_type("cuda").caching_allocator


def test_kernels_registered_for_cuda():
    f32 = ember.float32
    for op in ("copy_", "fill_", "add", "mul", "sum", "amax", "where", "bmm", "gather", "scatter_add", "uniform",
               "mm", "addmm", "linear", "relu", "softmax", "log_softmax", "erfinv"):
        assert _dispatch.ops[op].source(("cuda", "strided", f32)) == "native", op
    assert _dispatch.ops["sum"].source(("cuda", "strided", ember.bfloat16)) == "native"
    assert _dispatch.ops["mm"].source(("cuda", "strided", ember.bool)) != "native"     # no bool matmul kernel
    # everything else through the core's composites, no fallback
    assert _dispatch.ops["mean"].source(("cuda", "strided", f32)) == "composite"
    assert _registry.device_type("cuda").fallback is None


def test_device_module_surface():
    names = ["is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
             "get_device_properties", "synchronize", "manual_seed", "manual_seed_all", "Stream", "Event",
             "current_stream", "default_stream", "stream", "memory_allocated", "max_memory_allocated",
             "memory_reserved", "empty_cache", "memory_stats", "memory_summary", "set_per_process_memory_fraction",
             "reset_peak_memory_stats", "OutOfMemoryError", "unavailable_reason"]
    missing = [n for n in names if not hasattr(ember.cuda, n)]
    assert not missing
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError


@no_gpu
def test_not_available_and_why():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    why = ember.cuda.unavailable_reason()
    assert isinstance(why, str) and why
    out = io.StringIO()
    from ember._cli import info
    info(out)
    text = out.getvalue()
    assert "cuda" in text and f"not available: {why}" in text


@no_gpu
@pytest.mark.parametrize("make", [
    lambda: ember.zeros(3, device="cuda"),
    lambda: ember.zeros(3, device="cuda:0"),
    lambda: ember.ones(2).cuda(),
    lambda: ember.ones(2).to("cuda"),
    lambda: ember.cuda.Stream(),
    lambda: ember.cuda.Event(),
    lambda: ember.cuda.current_stream(),
    lambda: ember.ones(2).pin_memory(device="cuda"),
], ids=["zeros-cuda", "zeros-cuda0", "Tensor.cuda", "to-cuda", "Stream", "Event", "current_stream", "pin_memory"])
def test_using_cuda_raises_with_the_reason(make):
    with pytest.raises(RuntimeError) as e:
        make()
    assert ember.cuda.unavailable_reason() in str(e.value)


@no_gpu
def test_is_pinned_without_device():
    # the current accelerator (whatever else is installed) answers is_pinned(); naming cuda explicitly
    # asks a runtime that has no device, which says why
    assert ember.ones(3).is_pinned() is False
    with pytest.raises(RuntimeError, match="device type 'cuda' is not available"):
        ember.ones(3).is_pinned(device="cuda")


@no_gpu
def test_manual_seed_is_ignored_without_device():
    ember.cuda.manual_seed(1)          # as torch.cuda.manual_seed: silently ignored without CUDA
    ember.cuda.manual_seed_all(1)
    ember.manual_seed(1)
    with pytest.raises(RuntimeError, match="device type 'cuda' is not available"):
        ember.cuda.current_device()
    with pytest.raises(RuntimeError, match="device type 'cuda' is not available"):
        ember.cuda.memory_allocated()


def test_cpu_tensor_has_no_cuda_array_interface():
    t = ember.ones(3)
    assert not hasattr(t, "__cuda_array_interface__")
    with pytest.raises(NotImplementedError, match="no service 'streams'"):
        t.record_stream(None)


def test_every_cupy_name_the_plugin_uses_exists():
    """Without a GPU nothing cupy-specific runs, but every cupy attribute the plugin names (``cupy.x.y``,
    ``cp.x``, and the array-module functions ``xp.f`` the kernels call) must exist in the installed
    cupy: this catches a misspelt or missing routine before a GPU run does."""
    import pathlib
    import re
    cupy = pytest.importorskip("cupy", reason="cupy is not installed (pip install 'ember-cuda[cuda12]')")
    pkg = pathlib.Path(ember_cuda.__file__).parent
    missing = []
    for f in sorted(pkg.glob("*.py")):
        if f.name == "_emulation.py":
            continue
        src = f.read_text()
        for root, chain in re.findall(r"\b(cupy|cp|xp)\.([A-Za-z_][\w.]*[A-Za-z_0-9])", src):
            obj = cupy
            for part in chain.split("."):
                if not hasattr(obj, part):
                    if root == "xp" and part in ("errstate",):      # only reached on numpy (host emulation)
                        break
                    missing.append(f"{f.name}: {root}.{chain}")
                    break
                obj = getattr(obj, part)
    assert not missing, missing
