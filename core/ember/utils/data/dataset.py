"""Datasets: map-style and iterable-style, and the ways to combine and split them
(match torch.utils.data.Dataset, IterableDataset, TensorDataset, StackDataset,
ConcatDataset, ChainDataset, Subset, random_split).

A map-style dataset answers ``dataset[i]`` (and usually ``len(dataset)``); an
iterable-style dataset answers ``iter(dataset)``. A map-style dataset may also define
``__getitems__(indices) -> list`` to fetch a whole batch at once; the DataLoader uses it
when present.
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings

import ember

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and, for the default
    samplers, ``__len__`` (matches torch.utils.data.Dataset).

    ``a + b`` is ``ConcatDataset([a, b])``. ``__getitem__`` raises NotImplementedError
    until a subclass defines it.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])

    def __class_getitem__(cls, item):       # Dataset[int] in annotations, as typing.Generic allows
        return cls


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define ``__iter__`` (matches
    torch.utils.data.IterableDataset).

    With ``num_workers > 0`` every worker iterates its own copy; use
    ``get_worker_info()`` inside ``__iter__`` (or in ``worker_init_fn``) to give each
    worker its share, or every sample is loaded once per worker. ``a + b`` is
    ``ChainDataset([a, b])``.
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are ``tuple(t[i] for t in tensors)`` (matches torch.utils.data.TensorDataset).

    All tensors share their first dimension, the dataset's length; AssertionError
    "Size mismatch between tensors" otherwise.
    """

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Zips datasets of equal length: ``StackDataset(a, b)[i] == (a[i], b[i])`` and
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}`` (matches
    torch.utils.data.StackDataset). ValueError "Size mismatch between datasets" for
    unequal lengths, and when given none or both forms."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = args or tuple(kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The map-style datasets one after another (matches torch.utils.data.ConcatDataset).

    ``cumulative_sizes[k]`` is the total length of the first k+1 datasets. Negative
    indices count from the end (ValueError when beyond the length). AssertionError for
    an empty list or an IterableDataset among them.
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        k = bisect.bisect_right(self.cumulative_sizes, idx)     # the dataset holding idx
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][idx - start]

    @property
    def cummulative_sizes(self):
        """Deprecated spelling of ``cumulative_sizes`` (DeprecationWarning), as in PyTorch."""
        warnings.warn("cummulative_sizes attribute is renamed to cumulative_sizes", DeprecationWarning,
                      stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """The iterable datasets one after another, chained lazily (matches
    torch.utils.data.ChainDataset). AssertionError, when iterated or measured, for a
    member that is not an IterableDataset."""

    def __init__(self, datasets):
        self.datasets = datasets

    def _members(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield d

    def __iter__(self):
        for d in self._members():
            yield from d

    def __len__(self):
        return sum(len(d) for d in self._members())


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order (matches
    torch.utils.data.Subset). ``subset[i] == dataset[indices[i]]``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = [self.indices[i] for i in indices]
        fetch_many = getattr(self.dataset, "__getitems__", None)
        if callable(fetch_many):
            return fetch_many(inner)
        return [self.dataset[i] for i in inner]

    def __len__(self):
        return len(self.indices)


def _lengths_from_fractions(fractions, n):
    """Split ``n`` items by ``fractions`` (summing to 1): floor each share, then hand the
    remainder out one by one from the first split on."""
    for i, f in enumerate(fractions):
        if f < 0 or f > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
    lengths = [int(math.floor(n * f)) for f in fractions]
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                          stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` at random into non-overlapping ``Subset``s (matches
    torch.utils.data.random_split).

    :param lengths: the lengths of the splits, or fractions summing to 1 (each split
        then gets ``floor(len(dataset) * frac)`` samples and the remainder is handed
        out one per split, from the first).
    :param generator: the ``ember.Generator`` drawing the permutation (default: the
        global cpu generator); the same seed gives the same split.
    :raises ValueError: "Sum of input lengths does not equal the length of the input
        dataset!", or a fraction outside [0, 1].
    """
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, n)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = ember.randperm(n, generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length:end]) for end, length in zip(ends, lengths)]
