"""Array backends: the one place where an ember tensor becomes an array a kernel computes on.

ember-cuda's kernels (``kernels.py``) are written once against an *array module* ``xp`` with
numpy's API. Two backends provide it:

- ``CupyBackend`` (the real one): ``xp`` is cupy; ``view(t)`` is a ``cupy.ndarray`` over the
  storage's device memory - ``cupy.ndarray(shape, dtype, memptr=MemoryPointer(UnownedMemory(ptr,
  size, owner), offset), strides=<bytes>)`` - so a view, a transpose or an expanded tensor is
  computed on in place, with no copy, and cupy never allocates the tensor's memory (ember's
  caching allocator did).
- ``HostBackend`` (testing only): ``xp`` is numpy over host buffers. It exists so that the kernel
  code paths - strided views, dtype mapping, bfloat16 bit conversion, the Philox generator,
  the allocator wiring - run and are checked on a machine without a GPU
  (``ember_cuda._emulation``, device type ``cuda_emu``). It proves the logic, not cupy's
  behaviour: what cupy does differently from numpy is only checked on a GPU.

bfloat16: cupy has no portable bfloat16 dtype (support depends on the cupy version and
ml_dtypes), so a bfloat16 tensor is viewed as ``uint16`` and converted with integer ops
(``bf16_to_f32``: a 16-bit shift; ``f32_to_bf16``: round to nearest even, NaN -> 0x7FC0, the
rule PyTorch's c10::BFloat16 uses). Computation happens in float32, as on PyTorch's CUDA.
"""
from __future__ import annotations

import os

import ember
import numpy as np

BF16 = ember.bfloat16
F16 = ember.float16


class ArrayBackend:
    """What the kernels need from an array library; subclasses fill in ``xp`` and ``view``."""

    name = ""
    xp = np
    #: for a multi-device backend: the current device's index, and a context manager making one current
    current_device = None
    device = None
    #: module with erf / erfc / erfinv (scipy.special or cupyx.scipy.special)
    special = None

    def view(self, t):
        """The array over tensor ``t``'s memory (shape, strides, offset; bfloat16 as uint16)."""
        raise NotImplementedError(f"{self.name}: need view")

    #: the array library's own bfloat16 dtype where it has one that cuBLAS runs (cupy >= 14 through
    #: ml_dtypes), else None; matmuls then run in bfloat16 on the tensor cores instead of float32
    matmul_bf16 = None

    def storage_dtype(self, d) -> np.dtype:
        """The array dtype a tensor of ember dtype ``d`` is viewed with."""
        return np.dtype(np.uint16) if d is BF16 else d.numpy_dtype

    # -- bfloat16 as uint16 bits, converted with integer ops (works on numpy and cupy alike)
    def bf16_to_f32(self, bits):
        """bfloat16 bit patterns (uint16) -> float32 values (exact: the bits become the high half)."""
        xp = self.xp
        return (bits.astype(xp.uint32) << xp.uint32(16)).view(xp.float32)

    def f32_to_bf16(self, f):
        """float32 values -> bfloat16 bits (uint16), rounding to nearest even; NaN -> 0x7FC0."""
        xp = self.xp
        f = xp.asarray(f, dtype=xp.float32)
        if not f.flags.c_contiguous:             # (ascontiguousarray would make a 0-dim array 1-dim)
            f = f.copy()
        b = f.view(xp.uint32)
        b = b + (((b >> xp.uint32(16)) & xp.uint32(1)) + xp.uint32(0x7FFF))
        bits = (b >> xp.uint32(16)).astype(xp.uint16)
        return xp.where(xp.isnan(f), xp.uint16(0x7FC0), bits)

    def scalar(self, value, np_dtype):
        """A Python number as a numpy scalar of ``np_dtype`` with a C-style conversion
        (cupy takes numpy scalars as operands of its ufuncs without a host-to-device copy)."""
        return np.asarray(value).astype(np_dtype)[()]

    def asarray(self, value, np_dtype=None):
        """A (0-dim) array on the backend for a scalar, where a routine needs an array."""
        return self.xp.asarray(value, dtype=np_dtype)

    def add_at(self, work, coords, values):
        """``work[coords] += values`` with repeated coordinates accumulating (numpy's ``add.at``)."""
        raise NotImplementedError(f"{self.name}: need add_at")

    def synchronize(self):
        """Wait for the kernels queued on the current stream (a no-op on the host)."""

    def fuse(self, fn, name):
        """``fn`` (a function of array calls, ``fused.py``) compiled into one kernel named ``name``. Here: ``fn``
        itself, run as its calls - what ``cupy.fuse`` does with a fused function given numpy arrays."""
        return fn


class HostBackend(ArrayBackend):
    """numpy over host memory: the emulation that runs the kernel logic without a GPU (tests only)."""

    name = "host-emulation"
    xp = np

    def __init__(self):
        import scipy.special
        self.special = scipy.special

    def add_at(self, work, coords, values):
        """Unbuffered ``work[coords] += values`` (np.add.at: duplicates accumulate)."""
        np.add.at(work, coords, values)

    def view(self, t):
        """A numpy array over the tensor's host memory with its shape and strides, cached on the tensor."""
        a = t._native
        if a is None:
            isz = t.dtype.itemsize
            buf = t.untyped_storage().handle
            buf = getattr(buf, "buf", buf)           # an emulated device block, or a plain buffer
            if 0 in tuple(t.shape):
                a = np.empty(tuple(t.shape), self.storage_dtype(t.dtype))
            else:
                a = np.ndarray(tuple(t.shape), self.storage_dtype(t.dtype), buf, t.storage_offset() * isz,
                               tuple(s * isz for s in t.stride()))
            t._native = a
        return a


def _cupy_bf16(cupy):
    """cupy's bfloat16 dtype when cupy supports it (cupy >= 14 with ml_dtypes; a tiny product is run to check
    that cuBLAS takes it), else None."""
    try:
        import ml_dtypes
        dt = cupy.dtype(ml_dtypes.bfloat16)
        one = cupy.ones((2, 2), dtype=dt)
        if float((one @ one)[0, 0]) != 2.0:
            return None
        return dt
    except Exception:  # noqa: BLE001 - any failure means "no native bfloat16": matmuls run in float32
        return None


class CupyBackend(ArrayBackend):
    """cupy over ember's raw device memory (the handle is a ``_runtime.DeviceBlock``)."""

    name = "cupy"

    def __init__(self):
        import cupy
        import cupyx.scipy.special
        self.xp = cupy
        self.special = cupyx.scipy.special
        self._cupy = cupy
        self.current_device = cupy.cuda.runtime.getDevice     # the kernels' device guard
        self.device = cupy.cuda.Device
        self._devices = {}
        self.matmul_bf16 = _cupy_bf16(cupy)
        if os.environ.get("EMBER_CUDA_CUPY_ALLOCATOR", "ember").strip().lower() != "cupy":
            cupy.cuda.set_allocator(self.cupy_malloc)

    def cupy_malloc(self, nbytes):
        """cupy's allocator while ember-cuda is in use (``cupy.cuda.set_allocator``): the temporaries
        cupy makes inside kernels (and any cupy array the program creates) come from ember's caching
        allocator, so one cache serves everything, ``ember.cuda.memory_stats`` counts it all, and an
        out-of-memory retry frees it all. ``EMBER_CUDA_CUPY_ALLOCATOR=cupy`` keeps cupy's own pool."""
        i = self.current_device()
        alloc = self._devices.get(i)
        if alloc is None:
            from ember._factory import allocator_for
            alloc = self._devices[i] = allocator_for(ember.device("cuda", i))
        st = alloc.malloc(max(int(nbytes), 1))  # straight from the caching allocator: no op dispatch per temporary
        cp = self._cupy
        return cp.cuda.memory.MemoryPointer(cp.cuda.memory.UnownedMemory(st.handle.ptr, int(nbytes), st, i), 0)

    def view(self, t):
        """A cupy array over the tensor's device memory, cached on the tensor."""
        a = t._native
        if a is None:
            a = t._native = self.view_owned(t, owner=None)
        return a

    def view_owned(self, t, owner):
        """A cupy array over ``t``; ``owner`` (e.g. the storage, for DLPack export) is kept alive by it."""
        cp = self._cupy
        shape = tuple(t.shape)
        dt = self.storage_dtype(t.dtype)
        if 0 in shape:
            return cp.empty(shape, dt)
        h = t.untyped_storage().handle
        isz = t.dtype.itemsize
        mem = h.unowned() if owner is None else cp.cuda.memory.UnownedMemory(h.ptr, h.nbytes, owner, h.device)
        ptr = cp.cuda.memory.MemoryPointer(mem, t.storage_offset() * isz)
        return cp.ndarray(shape, dt, memptr=ptr, strides=tuple(s * isz for s in t.stride()))

    def add_at(self, work, coords, values):
        """``cupyx.scatter_add`` (atomicAdd). The kernels accumulate in float32 / float64 / int64 /
        complex; int64 goes through its uint64 view (two's complement addition is the same), complex
        through its real and imaginary parts."""
        import cupyx
        cp = self._cupy
        values = cp.asarray(values, dtype=work.dtype)
        if work.dtype.kind == "c":
            cupyx.scatter_add(work.real, coords, values.real)
            cupyx.scatter_add(work.imag, coords, values.imag)
        elif work.dtype == cp.int64:
            cupyx.scatter_add(work.view(cp.uint64), coords, values.view(cp.uint64))
        else:
            cupyx.scatter_add(work, coords, values)

    def fuse(self, fn, name):
        """``cupy.fuse(kernel_name=name)(fn)``: one CUDA kernel per argument dtypes, compiled on its first call."""
        return self._cupy.fuse(kernel_name=name)(fn)

    def synchronize(self):
        """Wait for cupy's current stream."""
        self._cupy.cuda.get_current_stream().synchronize()
