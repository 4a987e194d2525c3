"""The cpu runtime: host memory as numpy buffers, numpy views of strided tensors, the RNG."""
from __future__ import annotations

import json
import os
import weakref

import numpy as np

from ember.library import DeviceRuntime, geometry, native_view, out_of_descriptors_error

_new = object.__new__


def _build_view(t) -> np.ndarray:
    handle, shape, stride, offset, dtype = geometry(t)
    if 0 in shape:       # numpy refuses some empty views at the end of a buffer; nothing to share
        return np.empty(shape, dtype.numpy_dtype)
    isz = dtype.itemsize
    return np.ndarray(shape, dtype.numpy_dtype, handle, offset * isz, tuple(s * isz for s in stride) if stride else None)


def np_view(t) -> np.ndarray:
    """The numpy view of a cpu tensor (shares memory), cached on the tensor (``ember.library.native_view``)."""
    a = t._native
    return a if a is not None else native_view(t, _build_view)


class _Foreign:
    """Allocator stand-in for storages over memory ember did not allocate (from_numpy)."""

    native = None

    def __init__(self, raw):
        self.raw = raw

    def release(self, storage):
        """Nothing to free: the foreign memory belongs to its owner (numpy)."""
        pass


def _out_of_descriptors(e: OSError, what: str):
    """``e``, or for EMFILE / ENFILE the error that names the open-file limit and the fix."""
    import errno
    if e.errno not in (errno.EMFILE, errno.ENFILE):
        return e
    return out_of_descriptors_error(what)


_libc = None


def _map_shared(fd, nbytes):
    """A writable ctypes byte array over a MAP_SHARED mapping of ``fd`` (libc mmap: no descriptor
    duplicated), unmapped when the array is collected; None where libc's mmap is not reachable.

    :raises OSError: the mmap failure (errno set).
    """
    global _libc
    if _libc is None:
        try:
            import ctypes
            import mmap
            lib = ctypes.CDLL(None, use_errno=True)
            lib.mmap.restype = ctypes.c_void_p
            lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_long]
            lib.munmap.restype = ctypes.c_int
            lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            _libc = (ctypes, lib, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED)
        except (OSError, AttributeError, ImportError):
            _libc = False
    if not _libc:
        return None
    ctypes, lib, prot, flags = _libc
    addr = lib.mmap(None, nbytes, prot, flags, fd, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:          # MAP_FAILED
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    buf = (ctypes.c_ubyte * nbytes).from_address(addr)
    weakref.finalize(buf, lib.munmap, addr, nbytes)
    return buf


class SharedSegment:
    """An anonymous shared-memory file (a memfd, else an unlinked file in /dev/shm) for one storage.

    It has no name, so nothing can leak at exit: the memory goes away with the last process
    that maps it or holds its fd. ``fd`` stays open while the storage lives, so that
    ember.multiprocessing can send it (one fd per shared storage, like PyTorch's
    'file_descriptor' strategy; the mapping itself holds none, see ``array``); ``key``
    identifies the memory in every process.
    """

    __slots__ = ("fd", "nbytes", "key")

    def __init__(self, fd, nbytes):
        self.fd = fd
        self.nbytes = nbytes
        st = os.fstat(fd)
        self.key = (st.st_dev, st.st_ino)

    @classmethod
    def create(cls, nbytes):
        """A new segment of ``nbytes`` zeroed bytes: a memfd (or an unlinked /dev/shm temp file where memfd_create is
        missing) truncated to size.
        """
        try:
            if hasattr(os, "memfd_create"):
                fd = os.memfd_create("ember-shared", os.MFD_CLOEXEC)
            else:
                import tempfile
                fd, path = tempfile.mkstemp(prefix="ember-shared-",
                                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
                os.unlink(path)
        except OSError as e:
            raise _out_of_descriptors(e, "moving a tensor to shared memory") from None
        try:
            os.ftruncate(fd, nbytes)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, nbytes)

    def array(self) -> np.ndarray:
        """A writable uint8 array over the memory (a MAP_SHARED mapping; numpy keeps it alive).

        The mapping is made with libc's mmap, which needs no descriptor of its own, so a shared
        storage holds one descriptor (``fd``), as PyTorch's. Python's ``mmap.mmap`` (the fallback
        where libc cannot be reached) keeps a duplicate of the descriptor until Python 3.13. The
        mapping is unmapped when the ctypes buffer object, the base of every numpy view of it, is
        collected: no view can outlive it.
        """
        if not self.nbytes:
            return np.empty(0, np.uint8)
        try:
            buf = _map_shared(self.fd, self.nbytes)
            if buf is None:
                import mmap
                buf = mmap.mmap(self.fd, self.nbytes)
            return np.frombuffer(buf, np.uint8)
        except OSError as e:
            raise _out_of_descriptors(e, "mapping shared memory") from None

    def __del__(self):
        try:
            os.close(self.fd)
        except (OSError, TypeError):
            pass


class CPUGeneratorState:
    """A numpy PCG64 generator; state round-trips as JSON bytes (never pickle)."""

    def __init__(self, seed):
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def get_state(self) -> bytes:
        """The PCG64 bit generator's state as JSON-encoded bytes."""
        return json.dumps(self.rng.bit_generator.state).encode()

    def set_state(self, raw: bytes):
        """Restore a state from ``get_state``'s bytes; RuntimeError 'set_state: not a cpu generator state (...)' for
        anything else.
        """
        try:
            state = json.loads(bytes(raw).decode())
            self.rng.bit_generator.state = state
        except (ValueError, TypeError, KeyError) as e:
            raise RuntimeError(f"set_state: not a cpu generator state ({e})") from None


def _scipy_dirs():
    """The folders of scipy's own wheel libraries (scipy/ and scipy.libs/), as a tuple; () without scipy."""
    try:
        import scipy
    except ImportError:
        return ()
    root = os.path.dirname(os.path.abspath(scipy.__file__))
    return (root + os.sep, root + ".libs" + os.sep)


def _blas_pools(scipys_own):
    """threadpoolctl's controller of the loaded BLAS pools that are scipy's own wheel library (``scipys_own``) or
    are not (numpy's)."""
    from threadpoolctl import ThreadpoolController
    dirs = _scipy_dirs()
    pools = ThreadpoolController().select(user_api="blas")
    return pools.select(filepath=[p.filepath for p in pools.lib_controllers
                                  if p.filepath.startswith(dirs) == scipys_own])


_SCIPY_BLAS = None


def scipy_blas():
    """``scipy.linalg.blas``, its BLAS pool held to one thread when it is a library of scipy's own (the wheel's
    OpenBLAS), not numpy's.

    ember-cpu calls scipy's gemm (linear's bias through beta) and numba's np.dot (which links scipy's BLAS) for
    small products. Two OpenBLAS pools of several threads each, called in alternation, fight over the cores: a
    pool's workers spin for a while after each call, and the other pool's workers wait for them (the GPT step at
    default threads on 2 cores went from 8.2 to 22.7 ms). These products gain nothing from threads, so scipy's
    pool runs on the calling thread; numpy's pool keeps ember.set_num_threads' count."""
    global _SCIPY_BLAS
    if _SCIPY_BLAS is None:
        from scipy.linalg import blas
        _blas_pools(scipys_own=True).limit(limits=1)
        _SCIPY_BLAS = blas
    return _SCIPY_BLAS


class CPURuntime(DeviceRuntime):
    """Host memory; one device ('cpu', no index)."""

    name = "cpu"
    indexed = False
    host_memory = True

    def __init__(self):
        self._foreign = _Foreign(self)
        self._blas = None

    # -- intra-op threads (ember.set_num_threads): the BLAS pool numpy calls, through threadpoolctl
    def _blas_pools(self):
        if self._blas is None:
            # numpy's pool(s): scipy's own wheel BLAS is held to one thread (scipy_blas), whatever this sets
            self._blas = _blas_pools(scipys_own=False)
        return self._blas

    def set_num_threads(self, n):
        """Limit the BLAS library numpy uses to ``n`` threads (process-wide, as torch's is)."""
        self._blas_pools().limit(limits=n)

    def get_num_threads(self):
        """The BLAS pool's thread count (os.cpu_count() when numpy's BLAS is not found)."""
        info = self._blas_pools().info()
        return max((i["num_threads"] for i in info), default=os.cpu_count() or 1)

    def is_available(self):
        """DeviceRuntime.is_available: the cpu is always available."""
        return True

    def device_count(self):
        """DeviceRuntime.device_count: one cpu device."""
        return 1

    def current_device(self):
        """DeviceRuntime.current_device: always 0."""
        return 0

    def set_device(self, index):
        """DeviceRuntime.set_device: a no-op (one unindexed device)."""
        pass

    def get_device_name(self, index):
        """DeviceRuntime.get_device_name: platform.processor() (else platform.machine(), else 'cpu')."""
        import platform
        return platform.processor() or platform.machine() or "cpu"

    def synchronize(self, index):
        """Host work is synchronous: nothing to wait for."""

    def total_memory(self, index):
        """The host's physical memory in bytes (page size times physical pages)."""
        import os
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    # memory: numpy owns host buffers and frees them with their last reference
    frees_by_gc = True

    def allocate(self, nbytes, device_index):
        """DeviceRuntime.allocate: a fresh uninitialised numpy uint8 array of ``nbytes`` (the handle)."""
        return np.empty(nbytes, np.uint8)

    #: typed allocation: the array is both the storage handle and the tensor's native view
    native_empty = staticmethod(np.empty)

    def free(self, handle):
        """DeviceRuntime.free: a no-op; numpy frees the array with its last reference (``frees_by_gc``)."""
        pass

    def data_ptr(self, handle):
        """DeviceRuntime.data_ptr: the address of the handle array's first byte."""
        return handle.__array_interface__["data"][0]

    # sharing between processes (DeviceRuntime's optional hooks; see SharedSegment)
    def share_memory(self, storage):
        """DeviceRuntime.share_memory: copy the storage's bytes into a new SharedSegment and point the storage at it.
        """
        n = storage._nbytes
        seg = SharedSegment.create(n)
        new = seg.array()
        if n:
            old = storage._handle
            np.copyto(new, old.reshape(-1).view(np.uint8)[:n] if isinstance(old, np.ndarray) else
                      np.frombuffer(old, np.uint8, count=n))
        storage._handle = new
        storage._shared = seg

    def storage_from_shared(self, fd, nbytes, device_index):
        """DeviceRuntime.storage_from_shared: map the shared fd as a SharedSegment; returns (its uint8 array, the
        segment).
        """
        seg = SharedSegment(fd, nbytes)
        return seg.array(), seg

    # host transfers
    def to_numpy(self, tensor):
        """DeviceRuntime.to_numpy: a numpy view of the tensor's memory (no copy)."""
        return np_view(tensor)

    def from_numpy(self, tensor, array):
        """DeviceRuntime.from_numpy: np.copyto into the tensor's strided view (unsafe casting)."""
        np.copyto(np_view(tensor), array, casting="unsafe")

    def wrap_numpy(self, arr, dtype, device):
        """A tensor sharing ``arr``'s memory (torch.from_numpy)."""
        from ember import Tensor, UntypedStorage
        isz = arr.itemsize
        extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) // isz if arr.size else 0
        flat = np.lib.stride_tricks.as_strided(arr, shape=(extent,), strides=(isz,)) if arr.ndim else arr.reshape(1)
        handle = flat.view(np.uint8) if extent else np.empty(0, np.uint8)
        st = _new(UntypedStorage)
        st._handle = handle
        st._nbytes = st._size = extent * isz
        st.device = device
        st._allocator = self._foreign
        st._stream = None
        t = _new(Tensor)
        t._storage = st
        t._shape = tuple(arr.shape)
        t._stride = tuple(s // isz for s in arr.strides)
        t._offset = 0
        t._dtype = dtype
        t._device = device
        t._native = arr
        return t

    def new_generator_state(self, seed, device_index):
        """DeviceRuntime.new_generator_state: a CPUGeneratorState (numpy PCG64) seeded with ``seed``."""
        return CPUGeneratorState(seed)
