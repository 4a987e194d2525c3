"""Issue 20: the fast kernel API (``ember.library.native_view`` / ``geometry``) and smaller points
of the vendor guide that were untrue (``ember.profiler`` without an import, ``total_memory`` in
the runtime's base class)."""
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.library import DeviceRuntime, geometry, native_view


@pytest.mark.parametrize("make", [
    lambda: ember.arange(24.).reshape(4, 6),
    lambda: ember.arange(24.).reshape(4, 6)[1:, ::2],
    lambda: ember.arange(24.).reshape(4, 6).t(),
    lambda: ember.zeros(0, 3),
    lambda: ember.tensor(3.5),
])
def test_geometry_is_the_public_accessors_in_one_call(make):
    t = make()
    handle, shape, stride, offset, dtype = geometry(t)
    assert handle is t.untyped_storage().handle
    assert (shape, stride, offset, dtype) == (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)


def test_native_view_builds_once_per_tensor():
    calls = []

    def build(t):
        calls.append(t)
        return object()
    t = ember.ones(3)
    t._native = None                    # (ember-cpu may have filled it at allocation)
    v = native_view(t, build)
    assert native_view(t, build) is v and calls == [t]
    u = t[1:]                           # a view is a new tensor: its own cache
    assert native_view(u, build) is not v and len(calls) == 2


def test_the_cache_is_dropped_when_out_resizes_the_tensor():
    out = ember.empty(2)
    np.testing.assert_array_equal(native_view(out, lambda t: t.numpy()).shape, (2,))
    with pytest.warns(UserWarning, match="was resized"):
        ember.add(ember.ones(5), 1, out=out)      # resized: its storage and shape changed
    assert out.tolist() == [2.0] * 5
    assert native_view(out, lambda t: t.numpy()).shape == (5,)


def test_total_memory_is_part_of_the_runtime_contract():
    class R(DeviceRuntime):
        name = "nomem"
    with pytest.raises(NotImplementedError, match="nomem: does not report its total memory"):
        R().total_memory(0)


def test_profiler_needs_no_import():
    code = "import ember\nwith ember.profiler.record_fallbacks() as rec:\n    ember.ones(2) + 1\nprint(rec.counts)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "{}"
