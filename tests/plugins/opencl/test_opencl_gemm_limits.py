"""ember-opencl's GEMM (bmm) sized from the device's limits: tile choice, fallback, float16.

The tile sizes of both kernel shapes come from the device's local memory, work-group size and the
built kernel's own limits (``linalg.plan_for``). These tests check the pure tile choosers against
small fake limits, run GEMMs larger than a tile in float64 / int64 against numpy (the dtypes whose
8-byte panels overflowed Intel's 256 KiB local memory), re-plan for a fake small local memory and
work-group limit, and force the OUT_OF_RESOURCES fallback. They run on whatever runtime is selected
(PoCL by default, Intel's with ``EMBER_OPENCL_PLATFORM=intel``) and skip without a device.
"""
from __future__ import annotations

import weakref

import numpy as np
import pytest

import ember

from _opencl_helpers import DEV, NO_DEVICE, dev, has_device, host  # noqa: E402

pytest.importorskip("ember_opencl")
from ember_opencl import _codegen as cg  # noqa: E402
from ember_opencl.kernels import linalg  # noqa: E402

# ---------------------------------------------------------------- tile choice (no device needed)
LOCAL_SIZES = [1 << 20, 262144, 65536, 32768, 16384, 4096, 1024]


@pytest.mark.parametrize("local", LOCAL_SIZES)
@pytest.mark.parametrize("esize,nr", [(4, 16), (8, 8)])
def test_cpu_tiles_fit_local_memory(local, esize, nr):
    tm, tn, tk = linalg.cpu_tiles(local, esize, nr)
    assert esize * tk * (tm + tn) <= local
    assert tm % linalg.RM == 0 and tn % nr == 0 and tk >= 1
    assert (tm, tn, tk) == linalg.cpu_tiles(local, esize, nr)            # deterministic


def test_cpu_tiles_keep_the_preferred_tile_when_it_fits_and_shrink_double_first():
    pref = (linalg.TM_PREF, linalg.TN_PREF, linalg.TK_PREF)
    assert linalg.cpu_tiles(1 << 20, 4, 16) == pref
    tm, tn, tk = linalg.cpu_tiles(pref[2] * (pref[0] + pref[1]) * 8 - 1, 8, 8)   # one byte short for double
    assert tk < pref[2] and 8 * tk * (tm + tn) <= pref[2] * (pref[0] + pref[1]) * 8


def test_cpu_tiles_refuse_a_device_without_room_for_one_micro_tile():
    with pytest.raises(ValueError, match="local memory"):
        linalg.cpu_tiles(8 * (linalg.RM + 8) - 1, 8, 8, start=(linalg.RM, 8, 1))


@pytest.mark.parametrize("local", [65536, 32768, 16384, 4096, 1024])
@pytest.mark.parametrize("max_items", [1024, 256, 64, 16, 1])
@pytest.mark.parametrize("multiple", [1, 32, 128])
@pytest.mark.parametrize("esize,nr", [(4, 16), (8, 8)])
def test_gpu_tiles_fit_the_work_group_limit_and_local_memory(local, max_items, multiple, esize, nr):
    tm, tn, tk = linalg.gpu_tiles(local, esize, nr, max_items, multiple)
    items = (tn // nr) * (tm // linalg.GPU_RM)
    assert 1 <= items <= max_items
    assert esize * tk * (tm + tn) <= local
    assert tm % linalg.GPU_RM == 0 and tn % nr == 0


def test_gpu_tiles_grow_towards_the_preferred_multiple():
    tm, tn, _ = linalg.gpu_tiles(1 << 16, 4, 16, 8192, 128)
    assert (tn // 16) * (tm // linalg.GPU_RM) == 128
    tm, tn, _ = linalg.gpu_tiles(1 << 16, 4, 16, 8192, 1)
    assert (tm, tn) == (linalg.GPU_TM, linalg.GPU_TN)


# ---------------------------------------------------------------- GEMMs on the device
needs_device = pytest.mark.skipif(not has_device(), reason=NO_DEVICE)


def _operands(dtype, shape_a, shape_b, seed=0):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        hi = 1 << 40 if dtype == "int64" else 50           # int64 products wrap, as numpy's
        return (rng.integers(-hi, hi, shape_a).astype(dtype), rng.integers(-hi, hi, shape_b).astype(dtype))
    return rng.standard_normal(shape_a).astype(dtype), rng.standard_normal(shape_b).astype(dtype)


def _check(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype.startswith("float"):
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float64" else 1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.fixture(params=["cpu", "gpu"])
def shape_kind(request, monkeypatch):
    """Force the GEMM's kernel shape (one work item per tile, or a work group per tile)."""
    monkeypatch.setattr(linalg, "FORCE_SHAPE", request.param)
    return request.param


@pytest.fixture
def fresh_plans(monkeypatch):
    """An empty plan cache for the test (restored afterwards), so limits patched in the test are used."""
    monkeypatch.setattr(linalg, "_PLANS", weakref.WeakKeyDictionary())


@needs_device
@pytest.mark.parametrize("dtype", ["float64", "int64", "float32", "int32"])
def test_gemm_larger_than_a_tile_matches_numpy(shape_kind, dtype):
    # several tiles in every direction, K spanning several panels, edges that are not tile multiples
    a, b = _operands(dtype, (2, 2 * linalg.TM_PREF + 13, 2 * linalg.TK_PREF + 37),
                     (2, 2 * linalg.TK_PREF + 37, 2 * linalg.TN_PREF + 5))
    _check(host(ember.bmm(dev(a), dev(b))), np.matmul(a, b), dtype)
    # a transposed (column-major) self: the other packing layout
    at = dev(np.ascontiguousarray(a.transpose(0, 2, 1))).transpose(1, 2)
    _check(host(ember.bmm(at, dev(b))), np.matmul(a, b), dtype)


@needs_device
@pytest.mark.parametrize("local", [16384, 4096])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_small_local_memory_gives_tiles_that_fit_and_right_results(shape_kind, fresh_plans, monkeypatch,
                                                                   local, dtype):
    state = cg.state_of(ember.empty(1, device=DEV))
    monkeypatch.setattr(state, "local_mem_size", local)
    a, b = _operands(dtype, (3, 150, 300), (3, 300, 140), seed=1)
    _check(host(ember.bmm(dev(a), dev(b))), np.matmul(a, b), dtype)
    plan = linalg.plan_for(state, (dtype, dtype, dtype), shape_kind)
    assert 8 * plan.tk * (plan.tm + plan.tn) <= local
    used = linalg._kernel_info(state, plan.kernel, "LOCAL_MEM_SIZE")
    assert used is None or used <= local


@needs_device
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_work_group_follows_the_kernels_reported_limit(fresh_plans, monkeypatch, dtype):
    monkeypatch.setattr(linalg, "FORCE_SHAPE", "gpu")
    real = linalg._kernel_info

    def limited(state, kernel, what):       # a kernel that (say, for its register use) allows 16 work items
        return 16 if what == "WORK_GROUP_SIZE" else real(state, kernel, what)
    monkeypatch.setattr(linalg, "_kernel_info", limited)
    a, b = _operands(dtype, (2, 70, 90), (2, 90, 100), seed=2)
    _check(host(ember.bmm(dev(a), dev(b))), np.matmul(a, b), dtype)
    state = cg.state_of(ember.empty(1, device=DEV))
    plan = linalg.plan_for(state, (dtype, dtype, dtype), "gpu")
    assert plan.local_size[0] * plan.local_size[1] <= 16


class _OutOfResources(Exception):
    code = -5          # CL_OUT_OF_RESOURCES, as pyopencl's cl.RuntimeError carries it


@needs_device
def test_out_of_resources_falls_back_to_smaller_tiles_once(shape_kind, fresh_plans, monkeypatch):
    state = cg.state_of(ember.empty(1, device=DEV))
    real_launch, calls = cg.launch, []

    def refuse_first(state, kernel, *args, **kwargs):
        calls.append(kernel)
        if len(calls) == 1:
            raise _OutOfResources("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
        return real_launch(state, kernel, *args, **kwargs)
    monkeypatch.setattr(cg, "launch", refuse_first)
    a, b = _operands("float64", (1, 100, 300), (1, 300, 90), seed=3)
    x, y = dev(a), dev(b)
    first = linalg.plan_for(state, ("float64",) * 3, shape_kind)
    calls.clear()
    got = ember.bmm(x, y)
    assert len(calls) == 2 and calls[0] is first.kernel     # refused, then relaunched with the smaller plan
    _check(host(got), np.matmul(a, b), "float64")
    second = linalg.plan_for(state, ("float64",) * 3, shape_kind)
    assert calls[1] is second.kernel
    assert second.tk * (second.tm + second.tn) <= first.tk * (first.tm + first.tn) // 2


@needs_device
def test_a_second_refusal_raises(fresh_plans, monkeypatch):
    x = dev(np.ones((1, 8, 8)))
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args[1])
        raise _OutOfResources("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
    monkeypatch.setattr(cg, "launch", refuse)
    with pytest.raises(_OutOfResources):
        ember.bmm(x, x)
    assert len(calls) == 2


@needs_device
def test_float16_bmm_where_the_device_has_cl_khr_fp16(shape_kind):
    import ember_opencl
    if "float16" not in ember_opencl.supported_dtypes():
        pytest.skip("the device does not report cl_khr_fp16: float16 is not declared")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 70, 300)).astype(np.float16)
    b = rng.standard_normal((2, 300, 50)).astype(np.float16)
    got = host(ember.bmm(dev(a), dev(b)))
    want = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)   # float accumulation
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-2)
