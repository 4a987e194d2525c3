"""DataLoader in the main process (num_workers=0): batching, shuffling with a generator,
drop_last, len, samplers, IterableDataset, collate_fn, option errors, pin_memory (no
accelerator: a warning; a fake accelerator plugin that pins: pinned batches)."""
from __future__ import annotations

import itertools
import os
import sys
import warnings

import numpy as np
import pytest

import ember
from ember import library as L
from ember.plugins import hookimpl
from ember.utils.data import (DataLoader, Dataset, IterableDataset, TensorDataset, SequentialSampler,
                              BatchSampler, RandomSampler, default_convert)

sys.path.insert(0, os.path.dirname(__file__))
import _data_helpers as H  # noqa: E402


def _ds(n=10):
    return TensorDataset(ember.arange(n, dtype=ember.float32).reshape(n, 1), ember.arange(n))


def _labels(loader):
    return [y.tolist() for _, y in loader]


def test_defaults_batch_size_1_in_order():
    dl = DataLoader(_ds(3))
    assert dl.batch_size == 1 and dl.num_workers == 0 and dl.prefetch_factor is None and not dl.drop_last
    batches = list(dl)
    assert len(batches) == 3 == len(dl)
    x, y = batches[1]
    assert x.shape == (1, 1) and y.tolist() == [1]
    assert isinstance(dl.sampler, SequentialSampler) and isinstance(dl.batch_sampler, BatchSampler)


def test_batches_drop_last_and_len():
    assert _labels(DataLoader(_ds(10), batch_size=4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert _labels(DataLoader(_ds(10), batch_size=4, drop_last=True)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(DataLoader(_ds(10), batch_size=4)) == 3
    assert len(DataLoader(_ds(10), batch_size=4, drop_last=True)) == 2
    assert len(DataLoader(_ds(8), batch_size=4, drop_last=True)) == 2 == len(DataLoader(_ds(8), batch_size=4))
    x, _ = next(iter(DataLoader(_ds(10), batch_size=4)))
    assert x.shape == (4, 1) and x.dtype == ember.float32


def test_shuffle_with_generator_is_reproducible():
    def epoch(seed, epochs=1):
        dl = DataLoader(_ds(20), batch_size=5, shuffle=True, generator=ember.Generator().manual_seed(seed))
        return [_labels(dl) for _ in range(epochs)]
    a = epoch(0, 2)
    assert a == epoch(0, 2)                                   # same seed -> same batches, epoch after epoch
    assert a[0] != a[1]                                       # a new order each epoch
    assert a[0] != epoch(1)[0]
    flat = sorted(i for b in a[0] for i in b)
    assert flat == list(range(20)) and a[0] != [list(range(i, i + 5)) for i in range(0, 20, 5)]
    assert isinstance(DataLoader(_ds(), shuffle=True).sampler, RandomSampler)


def test_shuffle_without_generator_follows_manual_seed():
    ember.manual_seed(123)
    a = _labels(DataLoader(_ds(12), batch_size=4, shuffle=True))
    ember.manual_seed(123)
    assert _labels(DataLoader(_ds(12), batch_size=4, shuffle=True)) == a


def test_custom_sampler_batch_sampler_and_no_batching():
    dl = DataLoader(_ds(6), batch_size=2, sampler=[5, 3, 1])
    assert _labels(dl) == [[5, 3], [1]] and len(dl) == 2
    bs = DataLoader(_ds(6), batch_sampler=[[0, 5], [2]])
    assert _labels(bs) == [[0, 5], [2]] and bs.batch_size is None and len(bs) == 2
    raw = DataLoader(_ds(3), batch_size=None)
    items = list(raw)
    assert len(items) == 3 and items[2][1].dim() == 0 and raw.collate_fn is default_convert

    class NumpyData(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return np.full(3, i, dtype=np.float32)
    converted = list(DataLoader(NumpyData(), batch_size=None))
    assert isinstance(converted[1], ember.Tensor) and converted[1].tolist() == [1.0, 1.0, 1.0]


def test_collate_fn_and_getitems():
    dl = DataLoader(_ds(5), batch_size=2, collate_fn=lambda batch: [int(y) for _, y in batch])
    assert list(dl) == [[0, 1], [2, 3], [4]]

    class Batched(Dataset):
        calls = []

        def __len__(self):
            return 4

        def __getitem__(self, i):
            raise AssertionError("__getitems__ should be used")

        def __getitems__(self, idx):
            self.calls.append(list(idx))
            return [i * 10 for i in idx]
    assert [b.tolist() for b in DataLoader(Batched(), batch_size=3)] == [[0, 10, 20], [30]]
    assert Batched.calls == [[0, 1, 2], [3]]


def test_dict_samples():
    class D(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": ember.full((2,), float(i)), "name": f"s{i}"}
    b = next(iter(DataLoader(D(), batch_size=3)))
    assert b["x"].shape == (3, 2) and b["name"] == ["s0", "s1", "s2"]


def test_iterable_dataset_in_main_process():
    assert [b.tolist() for b in DataLoader(H.Range(0, 7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(H.Range(0, 7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(H.Range(0, 7), batch_size=3)) == 3
    assert len(DataLoader(H.Range(0, 7), batch_size=3, drop_last=True)) == 2
    assert [int(v) for v in DataLoader(H.Range(0, 3), batch_size=None)] == [0, 1, 2]

    class NoLen(IterableDataset):
        def __iter__(self):
            return iter([1])
    with pytest.raises(TypeError):
        len(DataLoader(NoLen()))


def test_iterable_dataset_longer_than_reported_warns():
    class Liar(IterableDataset):
        def __len__(self):
            return 2

        def __iter__(self):
            return iter(range(4))
    dl = DataLoader(Liar(), batch_size=None)
    assert len(dl) == 2
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert len(list(dl)) == 4
    msgs = [str(x.message) for x in w]
    assert len(msgs) == 2 and "was reported to be 2(when accessing len(dataloader)), but 3 samples have been " \
        "fetched" in msgs[0]


def test_option_errors_match_pytorch_messages():
    ds = _ds(4)
    cases = [
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative; use num_workers=0 to "
                                           "disable multiprocessing."),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified in multiprocessing."
                                              "let num_workers > 0 to enable multiprocessing, otherwise set "
                                              "prefetch_factor to None."),
        (dict(num_workers=1, prefetch_factor=-1), ValueError, "prefetch_factor option should be non-negative"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0], shuffle=True), ValueError, "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), ValueError,
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (dict(batch_sampler=[[0]], drop_last=True), ValueError,
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (dict(batch_size=None, drop_last=True), ValueError,
         "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
        (dict(multiprocessing_context="fork"), ValueError,
         "multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got "
         "num_workers=0"),
        (dict(num_workers=1, multiprocessing_context="nope"), ValueError,
         "multiprocessing_context option should specify a valid start method in"),
        (dict(num_workers=1, multiprocessing_context=3), TypeError,
         "multiprocessing_context option should be a valid context object or a string specifying the start method"),
    ]
    for kwargs, exc, msg in cases:
        with pytest.raises(exc) as info:
            DataLoader(ds, **kwargs)
        assert str(info.value).startswith(msg), (kwargs, str(info.value))
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle option, but "
                                         "got shuffle=True"):
        DataLoader(H.Range(0, 2), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(H.Range(0, 2), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(H.Range(0, 2), batch_sampler=[[0]])
    dl = DataLoader(ds)
    for name in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{name} attribute should not be set after DataLoader is initialized"):
            setattr(dl, name, None)
    dl.num_workers = 0                                   # other attributes may change
    with pytest.raises(AssertionError, match="_SingleProcessDataLoaderIter requires timeout == 0"):
        iter(DataLoader(ds, timeout=1))


def test_option_errors_agree_with_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TDL, TensorDataset as TTD
    tds = TTD(torch.zeros(4))
    for kwargs in (dict(num_workers=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
                   dict(sampler=[0], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
                   dict(batch_size=None, drop_last=True), dict(multiprocessing_context="fork"),
                   dict(num_workers=1, multiprocessing_context=3)):
        with pytest.raises(Exception) as te:
            TDL(tds, **kwargs)
        with pytest.raises(Exception) as ee:
            DataLoader(_ds(4), **kwargs)
        assert type(ee.value) is type(te.value) and str(ee.value) == str(te.value)


def test_pin_memory_without_accelerator_warns_and_loads(monkeypatch):
    from ember import _registry
    monkeypatch.setattr(_registry, "default_accelerator_type", lambda: "cpu")
    dl = DataLoader(_ds(4), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found, then "
                                         "device pinned memory won't be used."):
        batches = _labels(dl)
    assert batches == [[0, 1], [2, 3]]
    assert not ember.zeros(2).is_pinned()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
        ember.zeros(2).pin_memory()


# ---------------------------------------------------------------- a fake accelerator that pins host memory
class _PinningRuntime(L.DeviceRuntime):
    """An accelerator whose only service here is pinned memory: 'pinned' tensors are cpu
    tensors over numpy buffers this runtime allocated (it remembers their addresses)."""

    name = "pinacc"
    services = frozenset({"pinned_memory"})

    def __init__(self):
        self.pinned = {}
        self.calls = 0

    def device_count(self):
        return 1

    def pin_memory(self, tensor):
        self.calls += 1
        buf = np.array(tensor.numpy(), copy=True)              # stands in for page-locked memory
        out = ember.from_numpy(buf)
        self.pinned[out.data_ptr()] = buf
        return out

    def is_pinned(self, tensor):
        return tensor.data_ptr() in self.pinned


_names = itertools.count()


@pytest.fixture
def pinacc(monkeypatch):
    rt = _PinningRuntime()
    # the current accelerator is the first available non-cpu device type; other installed device
    # plugins (e.g. the reference vdev plugin) would come first, so make this one current
    monkeypatch.setattr(ember._registry, "default_accelerator_type", lambda: "pinacc")
    name = f"pinacc-plugin-{next(_names)}"

    class Plugin:
        @hookimpl
        def ember_plugin_info(self):
            return {"name": name, "version": "0.1", "api_version": "1.0", "provides": {"device_types": ["pinacc"]}}

        @hookimpl
        def ember_register(self, registry):
            registry.register_device_type("pinacc", rt)
    ember.plugins.register(Plugin(), name=name)
    try:
        yield rt
    finally:
        ember.plugins.unregister(name)


def test_pin_memory_through_the_device_plugin(pinacc):
    t = ember.arange(4, dtype=ember.float32)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu" and p.tolist() == t.tolist() and p.data_ptr() != t.data_ptr()
    assert p.pin_memory() is p                                   # already pinned: itself
    dl = DataLoader(_ds(5), batch_size=2, pin_memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                           # an accelerator pins: no warning
        batches = list(dl)
    assert all(x.is_pinned() and y.is_pinned() for x, y in batches)
    assert [y.tolist() for _, y in batches] == [[0, 1], [2, 3], [4]]
    assert not next(iter(DataLoader(_ds(2), batch_size=2)))[0].is_pinned()
    if sys.platform == "linux":                                  # with workers the main process pins
        batches = list(DataLoader(_ds(5), batch_size=2, pin_memory=True, num_workers=2,
                                  multiprocessing_context="fork"))
        assert all(x.is_pinned() for x, _ in batches) and [y.tolist() for _, y in batches][-1] == [4]
    with pytest.warns(UserWarning, match="pin_memory_device is deprecated, the current accelerator will be used"):
        iter(DataLoader(_ds(2), pin_memory=True, pin_memory_device="pinacc"))


def test_pin_memory_with_an_accelerator_that_cannot_pin(pinacc, monkeypatch):
    monkeypatch.setattr(pinacc, "services", frozenset())
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but not supported on pinacc now"):
        assert _labels(DataLoader(_ds(2), batch_size=2, pin_memory=True)) == [[0, 1]]


def test_running_out_of_file_descriptors_names_the_limit_and_the_fix():
    """Issue 17 part 6: sharing tensors until the open-file limit is reached ends in a RuntimeError that
    names the limit and how to raise it (a fresh process with a low limit)."""
    import subprocess
    import sys
    import textwrap
    pytest.importorskip("resource")
    code = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        import ember
        kept = []
        try:
            for _ in range(1000):
                kept.append(ember.ones(4).share_memory_())
        except RuntimeError as e:
            print("ERR", len(kept), e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ERR "), r.stdout
    msg = r.stdout
    assert "too many open files" in msg and "the limit is 64 open files" in msg and "ulimit -n" in msg


def test_a_shared_batch_holds_one_file_descriptor():
    """Issue 17 part 6: a batch a worker sends holds one descriptor (PyTorch's figure), not two: under
    a limit of 256 open files, about 256 - (descriptors already open) kept batches fit, where 121 did
    before (Python's mmap kept a duplicate of each descriptor). Reaching the limit names it."""
    import subprocess
    import sys
    import textwrap
    pytest.importorskip("resource")
    code = textwrap.dedent("""
        import os, resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        import ember
        from ember.utils.data import DataLoader, Dataset

        class DS(Dataset):
            def __len__(self):
                return 2000

            def __getitem__(self, i):
                return ember.full((8,), float(i))

        kept = []
        try:
            for b in DataLoader(DS(), batch_size=2, num_workers=2):
                kept.append(b)
        except RuntimeError as e:
            print("ERR", len(kept), e)
        assert kept[100].tolist() == [[200.0] * 8, [201.0] * 8]
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ERR "), r.stdout
    n = int(r.stdout.split()[1])
    assert n >= 200, r.stdout          # 256 minus the interpreter's, the workers' pipes' and numpy's own
    assert "too many open files" in r.stdout and "the limit is 256 open files" in r.stdout
