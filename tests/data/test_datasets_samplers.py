"""Datasets (TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset,
random_split) and samplers (their orders, lengths, errors and statistics)."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import ember
from ember.utils.data import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset, ChainDataset,
                              Subset, random_split, Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,
                              WeightedRandomSampler, BatchSampler)


class _List(Dataset):
    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class _Iter(IterableDataset):
    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


def _gen(seed):
    return ember.Generator().manual_seed(seed)


# ---------------------------------------------------------------- datasets
def test_dataset_base_and_add():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        Dataset()[0]
    both = _List("ab") + _List("cde")
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(len(both))] == list("abcde")
    chained = _Iter([1, 2]) + _Iter([3])
    assert isinstance(chained, ChainDataset) and list(chained) == [1, 2, 3] and len(chained) == 3


def test_tensor_dataset():
    x = ember.arange(12, dtype=ember.float32).reshape(4, 3)
    y = ember.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6.0, 7.0, 8.0] and yi.item() == 0
    assert isinstance(ds[1], tuple) and len(ds[1]) == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.zeros(3))


def test_stack_dataset():
    a, b = _List([1, 2, 3]), _List("xyz")
    assert StackDataset(a, b)[1] == (2, "y")
    assert StackDataset(num=a, ch=b)[2] == {"num": 3, "ch": "z"}
    assert len(StackDataset(a, b)) == 3
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, _List("xy"))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()


def test_concat_dataset():
    ds = ConcatDataset([_List(range(3)), _List(range(10, 12)), _List(range(20, 24))])
    assert len(ds) == 9 and ds.cumulative_sizes == [3, 5, 9]
    assert [ds[i] for i in range(9)] == [0, 1, 2, 10, 11, 20, 21, 22, 23]
    assert ds[-1] == 23 and ds[-9] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-10]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([_List([1]), _Iter([2])])


def test_chain_dataset_rejects_map_style():
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([_Iter([1]), _List([2])]))


def test_subset():
    base = _List("abcdef")
    sub = Subset(base, [5, 0, 2])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == ["f", "a", "c"]
    assert sub.__getitems__([2, 0]) == ["c", "f"]


def test_random_split_lengths_and_fractions():
    ds = _List(range(10))
    parts = random_split(ds, [3, 7], generator=_gen(1))
    assert [len(p) for p in parts] == [3, 7]
    seen = sorted(x for p in parts for x in (p[i] for i in range(len(p))))
    assert seen == list(range(10))                       # a partition: nothing lost, nothing twice
    again = random_split(ds, [3, 7], generator=_gen(1))
    assert [p.indices for p in again] == [p.indices for p in parts]
    assert [p.indices for p in random_split(ds, [3, 7], generator=_gen(2))] != [p.indices for p in parts]
    # fractions: floor each, then the remainder one per split from the first (10 * 0.33 = 3.3 -> 4, 3, 3)
    assert [len(p) for p in random_split(ds, [0.34, 0.33, 0.33], generator=_gen(0))] == [4, 3, 3]
    assert [len(p) for p in random_split(_List(range(11)), [0.5, 0.5], generator=_gen(0))] == [6, 5]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(_List(range(2)), [1.0, 0.0], generator=_gen(0))
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(ds, [0.5, 1.5, -1.0])


def test_random_split_uses_the_global_generator_by_default():
    ember.manual_seed(7)
    a = [p.indices for p in random_split(_List(range(6)), [2, 4])]
    ember.manual_seed(7)
    assert [p.indices for p in random_split(_List(range(6)), [2, 4])] == a


# ---------------------------------------------------------------- samplers
def test_sequential_and_base_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3] and len(SequentialSampler(range(4))) == 4
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_random_sampler_permutation_and_reproducibility():
    s = RandomSampler(range(20), generator=_gen(3))
    first = list(s)
    assert sorted(first) == list(range(20)) and len(s) == 20
    assert first != list(range(20))
    assert list(s) != first                               # a new order each pass from the same generator
    assert list(RandomSampler(range(20), generator=_gen(3))) == first
    ember.manual_seed(11)
    a = list(RandomSampler(range(20)))
    ember.manual_seed(11)
    assert list(RandomSampler(range(20))) == a


def test_random_sampler_num_samples_without_replacement():
    s = RandomSampler(range(5), num_samples=12, generator=_gen(0))
    out = list(s)
    assert len(out) == 12 == len(s)
    assert sorted(out[:5]) == sorted(out[5:10]) == list(range(5))   # whole permutations, then a cut one
    assert len(set(out[10:])) == 2


def test_random_sampler_with_replacement_statistics():
    n, draws = 4, 4000
    out = list(RandomSampler(range(n), replacement=True, num_samples=draws, generator=_gen(5)))
    assert len(out) == draws and set(out) <= set(range(n))
    counts = np.bincount(out, minlength=n)
    assert np.all(np.abs(counts - draws / n) < 5 * np.sqrt(draws / n))    # uniform within 5 sigma
    # with replacement, indices repeat within the first n draws almost surely for a longer run
    assert len(set(list(RandomSampler(range(100), replacement=True, generator=_gen(1))))) < 100


def test_random_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler([])


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    out = list(SubsetRandomSampler(idx, generator=_gen(0)))
    assert sorted(out) == idx and len(SubsetRandomSampler(idx)) == 4
    assert list(SubsetRandomSampler(idx, generator=_gen(0))) == out


def test_weighted_random_sampler_statistics():
    w = [0.1, 0.0, 0.6, 0.3]
    draws = 5000
    s = WeightedRandomSampler(w, draws, generator=_gen(2))
    out = list(s)
    assert len(out) == draws == len(s)
    freq = np.bincount(out, minlength=4) / draws
    assert freq[1] == 0
    np.testing.assert_allclose(freq, w, atol=0.03)
    assert s.weights.dtype == ember.float64
    no_repl = list(WeightedRandomSampler([1, 1, 1, 1, 0], 4, replacement=False, generator=_gen(0)))
    assert sorted(no_repl) == [0, 1, 2, 3]


def test_weighted_random_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=True"):
        WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got replacement=0"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    assert len(BatchSampler(range(6), 3, False)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=True"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=None"):
        BatchSampler(range(3), 2, None)


def test_sampler_messages_match_torch():
    torch = pytest.importorskip("torch")
    from torch.utils import data as td
    cases = [(lambda m: m.RandomSampler(range(3), replacement=1)),
             (lambda m: m.RandomSampler(range(3), num_samples=-1)),
             (lambda m: m.WeightedRandomSampler([[1.0]], 1)),
             (lambda m: m.BatchSampler(range(3), 0, False)),
             (lambda m: m.BatchSampler(range(3), 1, 1)),
             (lambda m: m.TensorDataset(*(m is td and (torch.zeros(2), torch.zeros(3))
                                          or (ember.zeros(2), ember.zeros(3))))),
             (lambda m: m.random_split(range(3), [1, 1]))]
    from ember.utils import data as ed
    for make in cases:
        with pytest.raises(Exception) as te:
            make(td)
        with pytest.raises(Exception) as ee:
            make(ed)
        assert type(ee.value) is type(te.value) and str(ee.value) == str(te.value)
    assert collections.Counter(len(p) for p in td.random_split(range(10), [0.34, 0.33, 0.33])) == \
        collections.Counter(len(p) for p in ed.random_split(range(10), [0.34, 0.33, 0.33]))
