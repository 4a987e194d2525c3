"""Memory statistics on the cpu device (the DirectAllocator) and the device modules."""
import gc

import pytest

import ember


def test_cpu_stats_follow_allocations():
    gc.collect()
    base = ember.memory.memory_allocated("cpu")
    t = ember.empty(1000, dtype=ember.float64)
    assert ember.memory.memory_allocated("cpu") == base + 8000
    assert ember.memory.max_memory_allocated("cpu") >= base + 8000
    v = t.view(10, 100)          # a view allocates nothing
    assert ember.memory.memory_allocated("cpu") == base + 8000
    del t, v
    assert ember.memory.memory_allocated("cpu") == base
    ember.memory.empty_cache("cpu")
    assert ember.memory.memory_reserved("cpu") == base


def test_stats_schema_is_fixed():
    from ember._allocator import STAT_KEYS
    s = ember.memory.memory_stats("cpu")
    assert tuple(s) == STAT_KEYS
    assert "allocated_bytes.all.peak" in s and "num_ooms" in s
    assert "ember memory summary" in ember.memory.memory_summary("cpu")


def test_per_process_limit_raises_out_of_memory_and_recovers():
    ember.memory.set_per_process_memory_fraction(0.0, "cpu", total_memory=10_000_000)
    try:
        with pytest.raises(ember.OutOfMemoryError, match="tried to allocate"):
            ember.empty(1000)
        with pytest.raises(RuntimeError):   # OutOfMemoryError is a RuntimeError, as in PyTorch
            ember.zeros(10)
    finally:
        ember.memory.set_per_process_memory_fraction(1.0, "cpu", total_memory=1 << 62)
    assert ember.zeros(10).sum().item() == 0 if hasattr(ember, "sum") else True
    with pytest.raises(ValueError, match="Invalid fraction value"):
        ember.memory.set_per_process_memory_fraction(1.5, "cpu")


def test_reset_peak():
    t = ember.empty(10_000)
    del t
    ember.memory.reset_peak_memory_stats("cpu")
    assert ember.memory.max_memory_allocated("cpu") == ember.memory.memory_allocated("cpu")


def test_cpu_device_module_surface():
    cpu = ember.cpu
    assert cpu.is_available() and cpu.device_count() == 1
    cpu.synchronize()
    assert isinstance(cpu.memory_allocated(), int)
    cpu.manual_seed(3)
    assert cpu.initial_seed() == 3


def test_storage_api():
    t = ember.arange(6, dtype=ember.int32)
    s = t.untyped_storage()
    assert s.nbytes() == 24 and s.device == ember.device("cpu")
    assert t[2:].untyped_storage() is s if hasattr(ember.Tensor, "__getitem__") else True
    assert t.narrow(0, 2, 3).data_ptr() == t.data_ptr() + 8


class _SubAllocatingRaw:
    """A raw allocator over bytearrays that can hand out byte ranges (like OpenCL sub-buffers)."""

    def __init__(self):
        self.allocs, self.frees, self.live = 0, 0, set()

    def allocate(self, nbytes, index):
        self.allocs += 1
        h = ("raw", self.allocs, nbytes)
        self.live.add(h)
        return h

    def sub_allocation(self, handle, offset, nbytes):
        assert handle in self.live and offset % 512 == 0 and offset + nbytes <= handle[2]
        return ("sub", handle, offset, nbytes)

    def free(self, handle):
        if handle[0] == "raw":
            self.live.remove(handle)
            self.frees += 1

    def data_ptr(self, handle):
        return id(handle)


def test_small_pool_carves_blocks_from_segments_and_returns_idle_segments():
    from ember._allocator import CachingAllocator
    raw = _SubAllocatingRaw()
    a = CachingAllocator(raw, ember.device("cpu"), "fake:0")
    blocks = [a.malloc(1000) for _ in range(10)]           # 10 blocks of 1024 bytes: one 2 MiB segment
    assert raw.allocs == 1 and a.stats["reserved_bytes.all.current"] == CachingAllocator.SEGMENT
    assert len({b._handle for b in blocks}) == 10
    assert [b._handle[2] for b in blocks] == [i * 1024 for i in range(10)]     # carved one after another
    big = a.malloc(3 << 20)                                 # large blocks are raw allocations of their own
    assert raw.allocs == 2
    del blocks[:5]
    a.empty_cache()                                         # 5 blocks of the segment still live: it stays
    assert raw.frees == 0
    again = a.malloc(1000)                                  # an idle carved block is reused
    assert raw.allocs == 2
    del blocks, again, big
    a.empty_cache()                                         # everything idle: segment and big block go back
    assert raw.live == set() and a.stats["reserved_bytes.all.current"] == 0
    assert a.stats["allocated_bytes.all.current"] == 0
