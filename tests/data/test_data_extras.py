"""The smaller pieces of ember.utils.data (WeightedRandomSampler, BatchSampler, ChainDataset, StackDataset,
default_convert, get_worker_info), side by side with torch.utils.data."""
import numpy as np
import pytest

import ember
import ember.utils.data as ed

torch = pytest.importorskip("torch")
import torch.utils.data as td  # noqa: E402


def test_batch_sampler_matches_torch():
    for n, bs, drop in ((10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False)):
        e = list(ed.BatchSampler(ed.SequentialSampler(range(n)), bs, drop))
        t = list(td.BatchSampler(td.SequentialSampler(range(n)), bs, drop))
        assert e == t and len(ed.BatchSampler(range(n), bs, drop)) == len(td.BatchSampler(range(n), bs, drop))
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            td.BatchSampler(range(4), bad, False)
        with pytest.raises(ValueError):
            ed.BatchSampler(range(4), bad, False)


def test_weighted_random_sampler_semantics_match_torch():
    w = [0.0, 1.0, 3.0, 0.0]
    for mod, lib in ((ember, ed), (torch, td)):
        g = mod.Generator().manual_seed(0)
        draws = list(lib.WeightedRandomSampler(w, 4000, replacement=True, generator=g))
        assert len(draws) == 4000 and set(draws) <= {1, 2}
        assert 0.70 < draws.count(2) / 4000 < 0.80                  # 3:1 weights
        once = list(lib.WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False, generator=g))
        assert sorted(once) == [0, 1, 2, 3]
        with pytest.raises(ValueError):
            lib.WeightedRandomSampler(w, 0)
        with pytest.raises(RuntimeError):
            list(lib.WeightedRandomSampler([1.0, 1.0], 3, replacement=False))


def _stream(lib, items):
    class Stream(lib.IterableDataset):
        def __iter__(self):
            return iter(items)
    return Stream()


def test_chain_and_stack_datasets_match_torch():
    for lib, mod in ((ed, ember), (td, torch)):
        assert list(lib.ChainDataset([_stream(lib, [1, 2]), _stream(lib, [3])])) == [1, 2, 3]
        s = lib.StackDataset(a=mod.arange(3.0), b=[10, 20, 30])
        assert len(s) == 3 and s[1]["b"] == 20 and float(s[1]["a"]) == 1.0
        t = lib.StackDataset(mod.arange(3.0), [7, 8, 9])
        assert t[2][1] == 9 and float(t[2][0]) == 2.0
        with pytest.raises(ValueError):
            lib.StackDataset(mod.arange(3.0), [1, 2])
        with pytest.raises(ValueError):
            lib.StackDataset(mod.arange(3.0), b=[1, 2, 3])


def test_default_convert_matches_torch():
    data = {"x": np.arange(3, dtype=np.float32), "y": [np.int64(4), "s"], "z": (np.float64(1.5),)}
    e, t = ed.default_convert(data), td.default_convert(data)
    assert e["x"].tolist() == t["x"].tolist() and str(e["x"].dtype)[6:] == str(t["x"].dtype)[6:]
    assert type(e["y"]) is type(t["y"]) and e["y"][1] == t["y"][1] == "s"
    assert float(e["y"][0]) == float(t["y"][0]) and type(e["z"]) is type(t["z"])
    s = np.array(["a", "b"])                        # arrays of strings stay numpy arrays
    assert isinstance(ed.default_convert(s), np.ndarray) and isinstance(td.default_convert(s), np.ndarray)


def test_get_worker_info_is_none_in_the_main_process():
    assert ed.get_worker_info() is None and td.get_worker_info() is None
